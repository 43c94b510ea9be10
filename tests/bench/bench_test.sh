#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Smoke tests for accel-bench, one case per CTest test:
#   sh bench_test.sh CASE ACCEL_BENCH PYTHON CHECKER
# PYTHON is a python3 interpreter (missing -> exit 77 where needed),
# CHECKER bench_check.py. Exit status and output shape only: no timing is
# ever asserted, since this runs on shared, noisy machines.
set -u
CASE=$1 BENCH=$2 PY=$3 CHECK=$4

T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT

LAST="(none)"
RC="(not run)"

fail() {
  echo "FAIL [$CASE]: $*"
  echo "--- last command: accel-bench $LAST (exit $RC)"
  echo "--- stdout"; cat "$T/out"
  echo "--- stderr"; cat "$T/err"
  exit 1
}

run() {
  LAST="$*"
  "$BENCH" "$@" >"$T/out" 2>"$T/err"
  RC=$?
}

expect_rc() { [ "$RC" = "$1" ] || fail "exit status $RC, want $1"; }
has() { grep -E -q -- "$1" "$T/out" || fail "stdout lacks /$1/"; }
err_has() { grep -E -q -- "$1" "$T/err" || fail "stderr lacks /$1/"; }

need_python() {
  "$PY" -c 'import json, xml.dom.minidom' 2>/dev/null ||
      { echo "SKIP: no python3"; exit 77; }
}

# check ARGS...: bench_check.py on the JSON in stdout (see that file).
check() {
  "$PY" "$CHECK" "$T/out" "$@" >"$T/check" 2>&1 || fail "$(cat "$T/check")"
}

case $CASE in
  smoke)
    run --smoke --filter dispatch,alloc,copy
    expect_rc 0
    has '^accel-bench [0-9]+\.[0-9]+\.[0-9]+, smoke suite'
    has '^dispatch: ' ; has '^alloc: ' ; has '^copy: '
    has '^  stream_query '
    has '^  h2d_pinned +4 KiB +GB/s '
    need_python
    run --smoke --filter dispatch,alloc,copy --json --plot "$T/plot.svg"
    expect_rc 0
    check --svg "$T/plot.svg" --suites dispatch,alloc,copy \
        --only dispatch,alloc,copy
    # The suites of the ops and kernels, in their tiny configuration.
    run --smoke --filter gemm,elementwise,launch
    expect_rc 0
    has '^gemm: ' ; has '^elementwise: ' ; has '^launch: '
    has '^  f32 +128 +GFLOP/s ' ; has '^  f32_tf32 '
    has '^  add +1 MiB +GB/s ' ; has '^  add_1thread +1 MiB +GB/s '
    has '^  latency +- +us '
    run --smoke --filter gemm,elementwise,launch --json --plot "$T/ops.svg"
    expect_rc 0
    # GEMM may be skipped (no BLAS installed); the others always run.
    check --svg "$T/ops.svg" --suites gemm,elementwise,launch \
        --only gemm,elementwise,launch \
        --ok elementwise/add,elementwise/cast_f32_f16_1thread,launch/latency
    grep -q 'GEMM (GFLOP/s)' "$T/ops.svg" || fail "SVG lacks the GEMM panel"
    # A regex filter selects cases within a suite.
    run --smoke --json --filter 'copy/d2d_async'
    expect_rc 0
    check --suites copy --cases d2d_async
    ;;
  startup)
    need_python
    run --smoke --json --filter startup
    expect_rc 0
    check --suites startup --only startup
    ;;
  opencl)
    # The raw OpenCL baselines (opencl_raw.c) run once on opencl:0 in the
    # smoke sizes: copies, the empty kernel and CLBlastSgemm. No timing is
    # looked at. Skips without an OpenCL device (or plugin).
    run --smoke --device opencl:0 --filter no-such-case
    [ "$RC" = 0 ] || { echo "SKIP: no opencl:0: $(cat "$T/err")"; exit 77; }
    need_python
    run --smoke --json --device opencl:0 --filter 'copy/(h2d|d2d),launch,gemm/f32/'
    expect_rc 0
    check --suites copy,launch,gemm --only copy,launch,gemm \
        --ok copy/h2d_pinned,copy/d2d_async,launch/latency,gemm/f32 \
        --raw "copy/h2d_pageable:clEnqueue,copy/h2d_pinned_async:clEnqueue,\
copy/d2d:clEnqueue,launch/latency:clEnqueueNDRangeKernel,\
launch/throughput:clEnqueueNDRangeKernel,gemm/f32:CLBlastSgemm"
    ;;
  usage)
    run --help
    expect_rc 0
    has '^Usage: accel-bench'
    has '--filter' ; has '--plot' ; has '--json' ; has '--full'
    run --version
    expect_rc 0
    has '^accel-bench [0-9]+\.[0-9]+\.[0-9]+'
    run --list
    expect_rc 0
    has '^  dispatch ' ; has '^  copy ' ; has '^  startup '
    has '^  gemm ' ; has '^  elementwise ' ; has '^  launch '
    run --bogus
    expect_rc 2
    err_has 'unknown option: --bogus'
    run --filter
    expect_rc 2
    run --full --smoke
    expect_rc 2
    run --device 'not a uri' --smoke --filter dispatch
    expect_rc 2
    run --device cpu:63 --smoke --filter dispatch
    expect_rc 1
    err_has 'ACCEL_ERROR_NOT_FOUND'
    run --smoke --filter 'no-such-case'
    expect_rc 0
    has 'No case matched --filter'
    run --smoke --filter dispatch --plot /nonexistent-dir/p.svg
    expect_rc 1
    err_has 'cannot write /nonexistent-dir/p.svg'
    ;;
  options)
    # getopt_long: a value after '=' or a space, repeated --filter,
    # unambiguous abbreviations; each refusal names the option (and the
    # value) and exits 2.
    run --smo --fil dispatch --dev cpu:0
    expect_rc 0
    has '^dispatch: '
    run --device
    expect_rc 2
    err_has 'option needs a value: --device$'
    run --smoke --filter
    expect_rc 2
    err_has 'option needs a value: --filter$'
    run --device= --smoke
    expect_rc 2
    err_has 'empty value for: --device$'
    run --smoke --plot ''
    expect_rc 2
    err_has 'empty value for: --plot$'
    run --json=1
    expect_rc 2
    err_has 'option takes no value: --json=1$'
    run --f
    expect_rc 2
    err_has 'ambiguous option: --f$'
    run -hx
    expect_rc 2
    err_has 'unknown option: -x$'
    run --smoke extra
    expect_rc 2
    err_has 'unexpected argument: extra$'
    # The start-up helper's flag counts only as the first argument.
    run --smoke --internal-spawn-helper
    expect_rc 2
    err_has 'unknown option: --internal-spawn-helper$'
    need_python
    run --smoke --json --filter=dispatch --filter alloc --device=cpu:0
    expect_rc 0
    check --suites dispatch,alloc --only dispatch,alloc
    ;;
  *)
    echo "unknown case $CASE"
    exit 1
    ;;
esac
echo "PASS [$CASE]"
exit 0
