#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs accel-conform on a deliberately broken plugin and checks that it
# fails (exit 1) and that its output names the failing check:
#   expect_failure.sh <accel-conform> <plugin> <regex>... [-- <args>...]
# Every <regex> (grep -E) must match a line of the output. The failed
# checks must be listed again before the counts ("Failed checks (N):"),
# N the counts line's failures, each FAIL line once more.
conform=$1 plugin=$2
shift 2
regexes=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  regexes="$regexes
$1"
  shift
done
[ "${1:-}" = "--" ] && shift
out=$("$conform" --plugin "$plugin" "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne 1 ]; then
  echo "expect_failure: accel-conform exited $rc, expected 1" >&2
  exit 1
fi
printf '%s\n' "$regexes" | while IFS= read -r re; do
  [ -z "$re" ] && continue
  if ! printf '%s\n' "$out" | grep -Eq -- "$re"; then
    echo "expect_failure: no output line matches: $re" >&2
    exit 1
  fi
done || exit 1
last=$(printf '%s\n' "$out" | tail -n 1)
if ! printf '%s\n' "$last" | grep -Eq '^[0-9]+ passed, [1-9][0-9]* failed, [0-9]+ skipped$'; then
  echo "expect_failure: bad summary line: $last" >&2
  exit 1
fi
failed=$(printf '%s\n' "$last" | sed -E 's/^[0-9]+ passed, ([0-9]+) failed.*/\1/')
recap=$(printf '%s\n' "$out" | sed -n '/^Failed checks (/,$p')
if ! printf '%s\n' "$recap" | head -n 1 | grep -q "^Failed checks ($failed):$"; then
  echo "expect_failure: no 'Failed checks ($failed):' recap before the counts" >&2
  exit 1
fi
# The recap repeats the first 8 FAIL lines of the run, in order.
if [ "$(printf '%s\n' "$out" | sed '/^Failed checks (/,$d' | grep -E "^(FAIL|XPASS) " | head -n 8 | cut -c1-318)" != \
     "$(printf '%s\n' "$recap" | grep -E "^(FAIL|XPASS) " | cut -c1-318)" ]; then
  echo "expect_failure: the recap does not repeat the failed checks" >&2
  exit 1
fi
echo "expect_failure: ok"
