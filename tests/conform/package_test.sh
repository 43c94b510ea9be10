#!/bin/sh
# SPDX-License-Identifier: MIT
#
# The Debian packages of a build (cmake/AccelPackage.cmake), end to end:
# `cpack -G DEB` in BUILD_DIR, then accel, accel-dev and accel-plugin-cpu
# unpacked (dpkg-deb -x, no root needed) into a scratch root; from those
# files alone accel-info must list cpu:0 and no other backend, and
# accel-conform --backend cpu must pass; the SDK template and the man
# pages must be there and render.
#   package_test.sh BUILD_DIR WORK_DIR CPACK
set -eu
build=$1 work=$2 cpack=$3
rm -rf "$work"
mkdir -p "$work/debs" "$work/root"
"$cpack" -G DEB -B "$work/debs" --config "$build/CPackConfig.cmake" \
  > "$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; exit 1; }
ls "$work/debs"/*.deb
for name in accel accel-dev accel-plugin-cpu; do
  deb=$(ls "$work/debs/${name}_"*.deb)
  dpkg-deb -I "$deb" | grep -E '^ (Package|Depends):'
  dpkg-deb -x "$deb" "$work/root"
done
for name in accel-plugin-cuda accel-plugin-rocm; do
  deb=$(ls "$work/debs/${name}_"*.deb 2>/dev/null || true)
  if [ -n "$deb" ]; then
    dpkg-deb -I "$deb" | grep -q "Depends: accel (=" || {
      echo "$name does not depend on accel"; exit 1; }
  fi
done
usr="$work/root/usr"
for f in bin/accel-info bin/accel-conform share/man/man1/accel-conform.1 \
         share/man/man1/accel-info.1 share/man/man1/accel-bench.1 \
         bin/accel-memviz share/man/man1/accel-memviz.1 \
         include/accel/controls.h \
         share/accel/sdk/template/plugin.c share/accel/sdk/plugin-guide.md \
         share/accel/sdk/conformance.md share/accel/sdk/CHANGES.md \
         share/accel/conform/src/README.md include/accel/plugin.h; do
  test -e "$usr/$f" || { echo "missing from the packages: /usr/$f"; exit 1; }
done
ls "$usr"/lib*/accel/ | grep -q '^libaccel-cpu.so$' || { echo "no cpu plugin"; exit 1; }
if ls "$usr"/lib*/accel/ | grep -q 'libaccel-cuda'; then
  echo "the cuda plugin came without its package"; exit 1
fi
if command -v man > /dev/null; then
  MANWIDTH=80 man -l "$usr/share/man/man1/accel-conform.1" | grep -q 'known-failures'
fi
unset ACCEL_PLUGIN_PATH ACCEL_BACKEND ACCEL_LOG LD_LIBRARY_PATH
"$usr/bin/accel-info" > "$work/info.txt" || true
cat "$work/info.txt"
grep -q 'cpu:0' "$work/info.txt" || { echo "accel-info does not list cpu:0"; exit 1; }
if grep -Eq '(cuda|rocm):0' "$work/info.txt"; then
  echo "accel-info lists a backend that was not installed"; exit 1
fi
ACCEL_CPU_MEMORY_LIMIT=8G "$usr/bin/accel-conform" --backend cpu \
  --require-ops > "$work/conform.txt" 2>&1 || {
  grep -v '^PASS' "$work/conform.txt"; exit 1; }
tail -1 "$work/conform.txt"
echo "packages: OK"
