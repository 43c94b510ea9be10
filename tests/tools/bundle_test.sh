#!/bin/sh
# SPDX-License-Identifier: MIT
# accel-bundle round trip: build a bundle from the test CPU kernel library
# and an OpenCL C file, list it, refuse what it must, and load the bundle
# on cpu:0 through the library (bundle_load).
# Usage: bundle_test.sh ACCEL_BUNDLE CPU_KERNEL_LIBRARY BUNDLE_LOAD
set -u
tool=$1
so=$2
loader=$3
dir=$(mktemp -d "${TMPDIR:-/tmp}/accel-bundle.XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

"$tool" --help >"$dir/help" || fail "--help exited $?"
grep -q -- "--target TAG=FILE" "$dir/help" || fail "--help lacks --target"
"$tool" >/dev/null 2>&1
[ $? -eq 2 ] || fail "no arguments is not a usage error"

printf '__kernel void kt_add_one(__global float* x) { x[0] += 1; }\n' \
  >"$dir/k.cl"
"$tool" -o "$dir/x.accelbundle" "$dir/k.cl" 2>"$dir/err"
[ $? -eq 1 ] || fail "OpenCL C without --target was accepted"
grep -q "looks like OpenCL C source" "$dir/err" || fail "no description"
grep -q -- "name it with --target TAG=" "$dir/err" || fail "no hint"
[ -e "$dir/x.accelbundle" ] && fail "a refused bundle was written"

"$tool" -o "$dir/k.accelbundle" --target "opencl-c=$dir/k.cl" "$so" ||
  fail "build"
"$tool" --list "$dir/k.accelbundle" >"$dir/list" || fail "--list"
cat "$dir/list"
grep -q "kernel bundle, 2 images" "$dir/list" || fail "image count"
grep -q "^  opencl-c .*OpenCL C source" "$dir/list" || fail "opencl-c entry"
grep -q "^  elf-.*ELF object" "$dir/list" || fail "CPU entry"

# Two images of one target, and a bundle inside a bundle, are refused.
"$tool" -o "$dir/y" "$so" "$so" 2>/dev/null && fail "duplicate target"
"$tool" -o "$dir/y" "$dir/k.accelbundle" 2>/dev/null && fail "nested bundle"

# A truncated bundle is refused cleanly by --list and by the library.
head -c 100 "$dir/k.accelbundle" >"$dir/cut.accelbundle"
"$tool" --list "$dir/cut.accelbundle" 2>"$dir/err"
[ $? -eq 1 ] || fail "truncated bundle listed"
grep -q "truncated" "$dir/err" || fail "truncation not named"

"$loader" "$dir/k.accelbundle" || fail "the library did not load the bundle"
"$loader" "$dir/cut.accelbundle" 2>/dev/null && fail "truncated bundle loaded"
echo "bundle round trip: ok"
