#!/bin/sh
# SPDX-License-Identifier: MIT
# accel-comm-bench refuses a bad command line with exit status 2 and a
# message naming the option, before it opens a device: sizes are digits
# with a K, M or G suffix up to the int count MPI takes, seconds a number
# in (0, 86400]. It checks the command line before MPI_Init, so no MPI
# starts here (no mpirun needed).
# usage: bench_options.sh ACCEL-COMM-BENCH
bench=$1
fail=0
# expect STATUS TEXT ARGS...: the exit status and a piece of stderr.
expect() {
  want_rc=$1 want_text=$2
  shift 2
  err=$("$bench" "$@" 2>&1 >/dev/null)
  rc=$?
  case $err in
    *"$want_text"*) found=1 ;;
    *) found=0 ;;
  esac
  if [ "$rc" -ne "$want_rc" ] || [ $found -eq 0 ]; then
    echo "FAIL: accel-comm-bench $*: exit $rc (want $want_rc), stderr:"
    echo "$err" | sed 's/^/  /'
    fail=1
  else
    echo "ok: accel-comm-bench $*: exit $rc"
  fi
}
expect 2 "--min wants 4 to 8589934588 bytes" --min x
expect 2 "--min wants" --min -4K
expect 2 "--min wants" --min 2
expect 2 "--max wants" --max 1.5M
expect 2 "--max wants" --max 8G
expect 2 "--max wants" --max 99999999999999999999G
expect 2 "--seconds wants" --seconds 1x
expect 2 "--seconds wants" --seconds 0
expect 2 "--seconds wants" --seconds 1e9
expect 2 "--max (4096 bytes) is below --min (65536 bytes)" --min 64K --max 4K
expect 2 "unknown option: --bogus" --bogus
expect 2 "option needs a value: --min" --min
expect 2 "unexpected argument 'extra'" extra
expect 0 "" --help
exit $fail
