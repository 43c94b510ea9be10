#!/bin/sh
# SPDX-License-Identifier: MIT
# Runs accel-conform on a plugin that crashes or hangs and checks that the
# run did not succeed and that a line of its output (stdout and stderr)
# matches <regex> (grep -E): the line naming where it crashed or hung.
#   expect_named.sh <accel-conform> <plugin> <status> <regex> [<args>...]
# <status> is the exit status wanted, or "crash" for any but 0 (the
# process dies of the signal; a sanitizer's handler may exit 1 instead).
conform=$1 plugin=$2 want=$3 re=$4
shift 4
out=$("$conform" --plugin "$plugin" "$@" 2>&1)
rc=$?
printf '%s\n' "$out"
echo "exit status $rc"
if [ "$want" = crash ]; then
  if [ "$rc" -eq 0 ]; then
    echo "expect_named: accel-conform exited 0, expected a crash" >&2
    exit 1
  fi
elif [ "$rc" -ne "$want" ]; then
  echo "expect_named: accel-conform exited $rc, expected $want" >&2
  exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq -- "$re"; then
  echo "expect_named: no output line matches: $re" >&2
  exit 1
fi
echo "expect_named: ok"
