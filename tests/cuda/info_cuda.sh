#!/bin/sh
# SPDX-License-Identifier: MIT
# accel-info lists the cuda plugin as unavailable with its reason:
#   sh info_cuda.sh ACCEL_INFO PLUGIN REASON_REGEX
# Skips (77) where a CUDA driver is installed and the plugin is usable.
set -u
INFO=$1 PLUGIN=$2 REASON=$3
out=$(ACCEL_PLUGIN_PATH="$PLUGIN" "$INFO" 2>&1)
rc=$?
printf '%s\n' "$out"
[ "$rc" -eq 0 ] || { echo "FAIL: accel-info exited $rc"; exit 1; }
if printf '%s\n' "$out" | grep -E -q "^  cuda .* ok "; then
  echo "SKIP: the cuda plugin is usable here"
  exit 77
fi
printf '%s\n' "$out" | grep -E -q "^  cuda .* unavailable +0 .*libaccel-cuda" ||
  { echo "FAIL: no 'cuda ... unavailable' row"; exit 1; }
printf '%s\n' "$out" |
  grep -E -q "ACCEL_ERROR_UNAVAILABLE at stage initialised: .*$REASON" ||
  { echo "FAIL: reason does not match /$REASON/"; exit 1; }
printf '%s\n' "$out" | grep -E -q "^Selected device: cpu:0" ||
  { echo "FAIL: cpu:0 not selected"; exit 1; }
