#!/bin/sh
# SPDX-License-Identifier: MIT
# accel-info and fleet behaviour: plugin-supplied bytes are escaped in text
# output, and devices hidden by ACCEL_VISIBLE_DEVICES are listed with why.
# Usage: info_fleet.sh <accel-info> <fx_probe plugin>
info=$1
fx=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL: $*"; cat "$out"; exit 1; }

esc=$(printf '\033')
ACCEL_PLUGIN_PATH=$fx ACCEL_FX_PROBE_VERSION="$(printf '1\033[31m\nFORGED')" \
  "$info" > "$out" 2>&1
grep -q "$esc" "$out" && fail "raw escape byte in text output"
grep -q '^FORGED' "$out" && fail "plugin text started a line of its own"
grep -F -q '1\x1b[31m\nFORGED' "$out" || fail "escaped version missing"

ACCEL_CPU_DEVICES=3 ACCEL_VISIBLE_DEVICES=-cpu:1 "$info" > "$out" 2>&1
grep -q '^Hidden devices (1)' "$out" || fail "no hidden-devices section"
grep -F -q "cpu device 1: excluded by entry '-cpu:1'" "$out" ||
  fail "hidden device reason missing"
grep -q '^  cpu:1 ' "$out" || fail "cpu:2 was not renumbered to cpu:1"
grep -q '^  cpu:2 ' "$out" && fail "three cpu devices shown"

ACCEL_CPU_DEVICES=3 ACCEL_VISIBLE_DEVICES=-cpu:1 "$info" --json > "$out" 2>&1
grep -F -q '"hidden_devices": [' "$out" || fail "no hidden_devices in JSON"
grep -F -q "excluded by entry '-cpu:1'" "$out" || fail "JSON reason missing"
echo "ok"
