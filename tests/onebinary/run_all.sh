#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs one_binary, built once, with ACCEL_BACKEND set to each backend and
# checks every backend prints the CPU's digest. A backend whose plugin or
# runtime is missing here is skipped and said so; cpu and at least one
# other backend must run.
#   run_all.sh PROGRAM BUNDLE [NAME=ENV;ENV...]...
# Each NAME=K=V|K=V... argument is a backend and the environment it runs
# with (the stand-in drivers for cuda and rocm).
set -u
program=$1 bundle=$2
shift 2
ran=0 bad=0 want=
for spec in "cpu=" "$@"; do
  name=${spec%%=*}
  env_list=${spec#*=}
  envs=()
  IFS='|' read -r -a envs <<<"$env_list"
  out=$(env "${envs[@]}" ACCEL_BACKEND="$name" "$program" "$bundle" 2>&1)
  rc=$?
  if [ $rc -ne 0 ]; then
    if grep -q -E 'ACCEL_ERROR_(UNAVAILABLE|NOT_FOUND)' <<<"$out" &&
        grep -q 'accel_device_default' <<<"$out"; then
      echo "$name: skipped, not usable here: $(head -n 1 <<<"$out")"
      continue
    fi
    echo "$name: FAILED (exit $rc)"
    echo "$out"
    bad=1
    continue
  fi
  digest=$(sed -n 's/^digest //p' <<<"$out")
  echo "$name: $(head -n 1 <<<"$out") [digest $digest]"
  ran=$((ran + 1))
  if [ -z "$want" ]; then
    want=$digest
  elif [ "$digest" != "$want" ]; then
    echo "$name: digest $digest differs from cpu's $want"
    bad=1
  fi
done
if [ "$ran" -lt 2 ]; then
  echo "only $ran backend(s) ran; the test needs cpu and one more"
  bad=1
fi
exit $bad
