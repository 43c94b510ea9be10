#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Tests for accel-info, one case per CTest test:
#   sh info_test.sh CASE ACCEL_INFO PYTHON CHECKER [ARGS...]
# ACCEL_INFO is the binary, PYTHON a python3 interpreter (for JSON checks;
# missing -> exit 77), CHECKER info_check_json.py. CTest clears
# ACCEL_PLUGIN_PATH, ACCEL_BACKEND and ACCEL_LOG; cases set what they need.
# Exits 0 on success, 1 on failure (printing what was seen), 77 to skip.
set -u
CASE=$1 INFO=$2 PY=$3 CHECK=$4
shift 4

T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT

# The last command and its exit status, for fail().
LAST="(none)"
RC="(not run)"

fail() {
  echo "FAIL [$CASE]: $*"
  echo "--- last command: accel-info $LAST (exit $RC)"
  echo "--- stdout"; cat "$T/out"
  echo "--- stderr"; cat "$T/err"
  exit 1
}

# run ARGS...: runs accel-info, keeping stdout, stderr and the exit status.
run() {
  LAST="$*"
  "$INFO" "$@" >"$T/out" 2>"$T/err"
  RC=$?
}

expect_rc() { [ "$RC" = "$1" ] || fail "exit status $RC, want $1"; }
has() { grep -E -q -- "$1" "$T/out" || fail "stdout lacks /$1/"; }
lacks() { if grep -E -q -- "$1" "$T/out"; then fail "stdout has /$1/"; fi; }
err_has() { grep -E -q -- "$1" "$T/err" || fail "stderr lacks /$1/"; }

# line REGEX: number of the first stdout line matching REGEX (0 if none).
line() { grep -n -E -- "$1" "$T/out" | head -n 1 | cut -d: -f1 | grep . ||
         echo 0; }

# in_order REGEX...: each REGEX matches a line after the previous one.
in_order() {
  prev=0
  for re in "$@"; do
    n=$(line "$re")
    [ "$n" -gt "$prev" ] || fail "/$re/ missing or out of order"
    prev=$n
  done
}

need_python() {
  "$PY" -c 'import json' 2>/dev/null || { echo "SKIP: no python3"; exit 77; }
}

# json CHECK...: stdout is valid JSON (json.tool), matches the schema and
# every CHECK (see info_check_json.py).
json() {
  "$PY" -m json.tool <"$T/out" >/dev/null 2>"$T/jsonerr" ||
      fail "json.tool rejects stdout: $(cat "$T/jsonerr")"
  "$PY" "$CHECK" "$T/out" "$@" >"$T/check" 2>&1 ||
      fail "$(cat "$T/check")"
}

# text_plugin FILE STATE STAGE STATUS MESSAGE_RE: the plugin row ends with
# /FILE and shows STATE; the line below gives status, stage and reason.
# A leading '^' in MESSAGE_RE anchors at the start of the reason.
text_plugin() {
  has " $2 .*/$1\$"
  grep -A1 -E -- "/$1\$" "$T/out" | tail -n 1 |
      grep -E -q -- "$4 at stage $3: ${5#^}" ||
      fail "no reason line '$4 at stage $3: $5' under $1"
}

# The device `auto` must select here, as a regex: one of the GPU devices
# accel-info lists (a GPU node, or CI's gpu-present stage with the
# stand-in drivers), else cpu:0. Which GPU wins is the unit tests' concern.
# Asked without the case's fixtures, which do not change the GPUs.
auto_device() {
  local json gpus
  json=$(env -u ACCEL_PLUGIN_PATH -u ACCEL_BACKEND "$INFO" --json 2>/dev/null)
  if "$PY" -c '' 2>/dev/null; then
    gpus=$(printf '%s\n' "$json" | "$PY" -c '
import json, sys
print("|".join(d["id"] for d in json.load(sys.stdin)["devices"]
               if d["type"] == "gpu"))' 2>/dev/null)
  else
    # No Python here: each device object of accel-info's own JSON writer
    # has its "id" line before its "type" line.
    gpus=$(printf '%s\n' "$json" | awk '/"devices": \[/ { d = 1 }
        /"hidden_devices"/ { d = 0 }
        d && /"id":/ { gsub(/[",]/, "", $2); id = $2 }
        d && /"type": "gpu"/ { printf "%s%s", sep, id; sep = "|" }')
  fi
  if [ -n "$gpus" ]; then echo "($gpus)"; else echo "cpu:0"; fi
}

# Under AddressSanitizer, let a crashing fixture die by its signal (as it
# does in a normal build) instead of ASan turning it into exit(1).
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}handle_segv=0"

case $CASE in
  text)
    run
    expect_rc 0
    in_order '^Plugins \([0-9]+\)' ' ok .*/libaccel-cpu\.so$' \
        '^Devices \([0-9]+\)' '^  cpu:0  ' \
        'memory [0-9.]+ [KMGTP]?i?B total, [0-9.]+ [KMGTP]?i?B free' \
        "^Selected device: $(auto_device) "
    has '^  NAME +VERSION +ABI +STATE +DEVICES +PATH$'
    lacks '^Search path'
    lacks "$(printf '\033')"  # no colour when not a terminal
    ;;
  json)
    need_python
    run --json
    expect_rc 0
    cpu=plugin:libaccel-cpu.so
    json device=cpu:0 no_device=cpu:1 selected=auto errors=0 \
        $cpu:state=ok $cpu:stage=initialised $cpu:status=ACCEL_OK \
        $cpu:name=cpu $cpu:origin=install_dir $cpu:device_count=1 \
        $cpu:message= search_origin=install_dir backend_env=
    # Byte counts are plain JSON numbers, not strings.
    has '"total_memory_bytes": [0-9]+,'
    has '"schema_version": 1,'
    ;;
  help)
    run --help
    expect_rc 0
    has '^Usage: accel-info'
    has '--json' ; has '--no-isolate'; has '--timeout'
    has '^  2  usage error'
    has '^  3  devices found'
    run -h
    expect_rc 0
    has '^Usage: accel-info'
    run --version
    expect_rc 0
    has '^accel-info [0-9]+\.[0-9]+\.[0-9]+'
    ;;
  usage)
    run --bogus
    expect_rc 2
    err_has 'unknown option: --bogus'
    [ -s "$T/out" ] && fail "usage error wrote to stdout"
    run extra
    expect_rc 2
    run --timeout
    expect_rc 2
    run --timeout 0
    expect_rc 2
    run --timeout=abc
    expect_rc 2
    run --help --bogus
    expect_rc 2
    need_python
    run --json --bogus
    expect_rc 2
    json 'error~unknown option: --bogus' devices=0
    ;;
  options)
    # getopt_long: a value after '=' or a space, clustered short options
    # and unambiguous abbreviations; each refusal names the option (and
    # the value), exits 2, and keeps stdout empty (valid JSON with --json).
    run --timeout=2
    expect_rc 0
    has '^Plugins \([0-9]+\)'
    run --timeout 2 --verb
    expect_rc 0
    has '^Search path'
    run -vh
    expect_rc 0
    has '^Usage: accel-info'
    run --timeout
    expect_rc 2
    err_has 'option needs a value: --timeout$'
    [ -s "$T/out" ] && fail "usage error wrote to stdout"
    run --timeout=5x
    expect_rc 2
    err_has 'invalid --timeout .*: 5x$'
    run --timeout -1
    expect_rc 2
    err_has 'invalid --timeout .*: -1$'
    run --timeout 1e999
    expect_rc 2
    err_has 'invalid --timeout .*: 1e999$'
    run -vx
    expect_rc 2
    err_has 'unknown option: -x$'
    run -xv
    expect_rc 2
    err_has 'unknown option: -x$'
    run --json=1
    expect_rc 2
    err_has 'option takes no value: --json=1$'
    [ -s "$T/out" ] && fail "usage error wrote to stdout"
    run --ver
    expect_rc 2
    err_has 'ambiguous option: --ver$'
    run --version extra
    expect_rc 2
    err_has 'unexpected argument: extra$'
    need_python
    # --json after the error still makes stdout JSON.
    run --bogus --json
    expect_rc 2
    err_has 'unknown option: --bogus$'
    json 'error~unknown option: --bogus' devices=0
    run --json --timeout
    expect_rc 2
    json 'error~option needs a value: --timeout' devices=0
    run --timeout=abc --json
    expect_rc 2
    json 'error~invalid --timeout (want seconds, > 0, <= 86400): abc' \
        devices=0
    ;;
  verbose)
    run -v
    expect_rc 0
    in_order '^Plugins' '^  cpu:0 ' "^Selected device: $(auto_device)" \
        '^Search path \([0-9]+\)' '^  install_dir +/.*'
    has '^      from .* \(install_dir\)$'
    run --verbose
    expect_rc 0
    has '^Search path'
    ;;
  backend_bogus)
    export ACCEL_BACKEND=bogus
    run
    # Selection problems do not change the exit status (docs/accel-info.md).
    expect_rc 0
    has '^  cpu:0 '
    has '^Selected device: none \(ACCEL_BACKEND=bogus\): '
    has "ACCEL_ERROR_INVALID_ARGUMENT: .*unknown backend 'bogus'"
    need_python
    run --json
    expect_rc 0
    json device=cpu:0 selected=null backend_env=bogus \
        "selected_error~unknown backend 'bogus'" errors=0
    export ACCEL_BACKEND='cpu:x'
    run --json
    expect_rc 0
    json selected=null 'selected_error~known backends:'
    ;;
  cpu_devices)
    export ACCEL_CPU_DEVICES=2
    run
    expect_rc 0
    in_order '^  cpu:0  ' '^  cpu:1  ' "^Selected device: $(auto_device) "
    need_python
    run --json
    expect_rc 0
    json device=cpu:0 device=cpu:1 selected=auto \
        plugin:libaccel-cpu.so:device_count=2
    export ACCEL_BACKEND=cpu:1
    run --json
    expect_rc 0
    json selected=cpu:1
    ;;
  no_device)
    # A cpu plugin whose device_count fails leaves no device: exit 1 wins
    # over exit 3 (the plugin failed too). On a GPU node the GPU plugins,
    # and with an OpenCL runtime installed the OpenCL plugin, are pointed
    # at libraries that do not exist, so no device is left.
    export ACCEL_CPU_DEVICES=bogus
    export ACCEL_CUDA_DRIVER=/nonexistent/libcuda.so.1
    export ACCEL_ROCM_RUNTIME=/nonexistent/libamdhip64.so
    export ACCEL_OPENCL_ICD=/nonexistent/libOpenCL.so.1
    run
    expect_rc 1
    has '^Devices \(0\)'
    has ' failed .*/libaccel-cpu\.so$'
    has '^Selected device: none'
    need_python
    run --json
    expect_rc 1
    json devices=0 selected=null plugin:libaccel-cpu.so:state=failed \
        plugin:libaccel-cpu.so:stage=initialised \
        plugin:libaccel-cpu.so:status=ACCEL_ERROR_INVALID_ARGUMENT
    ;;
  no_isolate)
    run --no-isolate
    expect_rc 0
    in_order '^Plugins' '^  cpu:0  ' "^Selected device: $(auto_device) "
    need_python
    run --no-isolate --json
    expect_rc 0
    json device=cpu:0 selected=auto errors=0
    ;;
  fixture)
    # ARGS: FILE STATE STAGE STATUS MESSAGE_RE [accel-info options...]
    fx=$1 state=$2 stage=$3 status=$4 msg=$5
    shift 5
    [ -f "$fx" ] || fail "fixture $fx not built"
    base=${fx##*/}
    export ACCEL_PLUGIN_PATH="$fx"
    run "$@"
    expect_rc 3
    text_plugin "$base" "$state" "$stage" "$status" "$msg"
    has ' ok .*/libaccel-cpu\.so$'
    has '^  cpu:0  '
    has "^Selected device: $(auto_device) "
    if [ "$state" = failed ]; then
      # In-process probing gives the same answer for a non-crashing plugin.
      run --no-isolate "$@"
      expect_rc 3
      text_plugin "$base" "$state" "$stage" "$status" "$msg"
    fi
    need_python
    run --json "$@"
    expect_rc 3
    json device=cpu:0 selected=auto "plugin:$base:state=$state" \
        "plugin:$base:stage=$stage" "plugin:$base:status=$status" \
        "plugin:$base:message/$msg" "plugin:$base:origin=env" \
        "error:$base~" errors=1
    ;;
  unavail)
    # A missing driver is not a failure: exit 0.
    export ACCEL_PLUGIN_PATH="$1"
    run
    expect_rc 0
    text_plugin "${1##*/}" unavailable initialised ACCEL_ERROR_UNAVAILABLE \
        'fixture: driver not installed'
    need_python
    run --json
    expect_rc 0
    json errors=0 selected=auto "plugin:${1##*/}:state=unavailable"
    ;;
  fx_all)
    # ARGS: FILE:FILE:... then pairs of FILE-basename STATE
    export ACCEL_PLUGIN_PATH="$1"
    shift
    run --timeout 1
    expect_rc 3
    has '^  cpu:0  '
    has "^Selected device: $(auto_device) "
    need_python
    run --json --timeout 1
    expect_rc 3
    checks="device=cpu:0 selected=auto"
    while [ $# -ge 2 ]; do
      checks="$checks plugin:$1:state=$2"
      shift 2
    done
    # shellcheck disable=SC2086  # word splitting wanted
    json $checks
    ;;
  *)
    echo "unknown case $CASE"
    exit 1
    ;;
esac
echo "PASS [$CASE]"
exit 0
