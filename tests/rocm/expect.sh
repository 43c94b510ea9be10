#!/bin/sh
# SPDX-License-Identifier: MIT
# expect.sh <exit code> <extended regex> -- <command...>
# Runs the command and passes when it exits with <exit code> and its
# output (stdout and stderr) matches <regex>. Prints the output.
want=$1
pattern=$2
shift 3
out=$("$@" 2>&1)
rc=$?
printf '%s\n' "$out"
if [ "$rc" -ne "$want" ]; then
  echo "expect.sh: exit $rc, wanted $want" >&2
  exit 1
fi
if ! printf '%s\n' "$out" | grep -Eq "$pattern"; then
  echo "expect.sh: output does not match: $pattern" >&2
  exit 1
fi
echo "expect.sh: exit $rc and output matched"
