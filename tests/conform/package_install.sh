#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The Debian packages of a build, installed for real: `cpack -G DEB` in
# BUILD_DIR, then `dpkg -i` of every package built (accel, accel-dev,
# accel-plugin-*, accel-tools, accel-python), `ldconfig`, and from /usr
# alone (no build tree, no LD_LIBRARY_PATH or ACCEL_PLUGIN_PATH):
# accel-info must list cpu:0 and report every installed plugin;
# accel-conform must pass on cpu:0, and on opencl:0 where the OpenCL
# plugin finds a device (PoCL in CI); a program built with
# `pkg-config accel` against accel-dev must run, and so must
# `import accel` in /usr/bin/python3. Every accel
# package is removed again (dpkg --purge, then ldconfig) however it ends,
# so the machine is left as it was. Needs root (or sudo without a
# password), dpkg and no accel package installed beforehand (it refuses to
# touch an existing install).
#   package_install.sh BUILD_DIR WORK_DIR
# .ci/run runs it as its last stage, `packages`, on the main build.
set -uo pipefail
export PATH="/usr/local/sbin:/usr/sbin:/sbin:$PATH"  # dpkg, ldconfig
build=${1:?usage: package_install.sh BUILD_DIR WORK_DIR}
work=${2:?usage: package_install.sh BUILD_DIR WORK_DIR}
build=$(cd "$build" && pwd)

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo > /dev/null || ! sudo -n true 2> /dev/null; then
    echo "packages: needs root, or sudo without a password (dpkg -i)"
    exit 1
  fi
  sudo=(sudo -n)
fi
if ! command -v dpkg > /dev/null || ! command -v cpack > /dev/null; then
  echo "packages: needs dpkg and cpack"
  exit 1
fi
installed=$(dpkg-query -W -f '${Package} ${Status}\n' 'accel' 'accel-*' \
  2> /dev/null | grep ' installed$' || true)
if [ -n "$installed" ]; then
  echo "packages: accel packages are installed already; not touching them:"
  echo "$installed"
  exit 1
fi

rm -rf "$work"
mkdir -p "$work/debs"
work=$(cd "$work" && pwd)  # the checks below run from inside it
start=$SECONDS
if ! cpack -G DEB -B "$work/debs" --config "$build/CPackConfig.cmake" \
    > "$work/cpack.log" 2>&1; then
  cat "$work/cpack.log"
  exit 1
fi
debs=()
names=()
for deb in "$work/debs"/*.deb; do
  name=$(dpkg-deb -f "$deb" Package)
  case $name in
    accel | accel-*) ;;
    *) continue ;;
  esac
  # The template plugin is an example to copy, not a backend to install.
  [ "$name" = accel-plugin-template ] && continue
  debs+=("$deb")
  names+=("$name")
done
echo "packages: built in $((SECONDS - start))s: ${names[*]}"

# From here on the machine is changed: undo it however the script ends.
remove() {
  local rc=$?
  "${sudo[@]}" dpkg --purge "${names[@]}" > "$work/purge.log" 2>&1 ||
    { cat "$work/purge.log"; rc=1; }
  "${sudo[@]}" ldconfig
  local left
  left=$(dpkg-query -W -f '${Package} ${Status}\n' 'accel' 'accel-*' \
    2> /dev/null | grep -v 'not-installed' || true)
  if [ -n "$left" ] || [ -e /usr/bin/accel-info ]; then
    echo "packages: left behind after dpkg --purge:"
    echo "$left"
    rc=1
  else
    echo "packages: removed ${names[*]}"
  fi
  exit "$rc"
}
trap remove EXIT

"${sudo[@]}" dpkg -i "${debs[@]}" > "$work/install.log" 2>&1 ||
  { cat "$work/install.log"; exit 1; }
"${sudo[@]}" ldconfig
echo "packages: installed"
dpkg-query -W -f '  ${Package} ${Version} ${Installed-Size} KiB\n' "${names[@]}"

# Only what the packages installed: no build tree on any search path.
unset LD_LIBRARY_PATH ACCEL_PLUGIN_PATH ACCEL_BACKEND ACCEL_LOG \
  ACCEL_VISIBLE_DEVICES ACCEL_CUDA_DRIVER ACCEL_ROCM_RUNTIME ACCEL_OPENCL_ICD
cd "$work"
lib=$(ldd /usr/bin/accel-info | awk '/libaccel\.so/ {print $3}')
echo "packages: /usr/bin/accel-info uses $lib"
case $lib in
  /usr/*) ;;
  *) echo "packages: libaccel is not the installed one"; exit 1 ;;
esac

/usr/bin/accel-info > info.txt 2>&1
cat info.txt
grep -Eq '^ +cpu:0 ' info.txt || { echo "packages: no cpu:0"; exit 1; }
for name in "${names[@]}"; do
  case $name in
    accel-plugin-*)
      plugin=${name#accel-plugin-}
      grep -q "libaccel-$plugin\.so" info.txt ||
        { echo "packages: accel-info does not report $name"; exit 1; }
      ;;
  esac
done

# accel-conform on device 0 of the installed backend $1.
conform() {
  local backend=$1 t=$SECONDS
  if ACCEL_CPU_MEMORY_LIMIT=8G /usr/bin/accel-conform --backend "$backend" \
      --device 0 --require-ops > "conform-$backend.txt" 2>&1; then
    echo "packages: accel-conform on $backend:0: $(tail -n 1 \
      "conform-$backend.txt") ($((SECONDS - t))s)"
  else
    grep -v '^PASS' "conform-$backend.txt"
    echo "packages: accel-conform on $backend:0 FAILED"
    return 1
  fi
}
rc=0
conform cpu || rc=1
if grep -Eq '^ +opencl:0 ' info.txt; then
  conform opencl || rc=1
else
  echo "packages: no opencl:0 (no OpenCL device); its conformance not run"
fi

# accel-dev: a program built from the installed headers and pkg-config.
cat > hello.c << 'EOF'
#include <accel/accel.h>
#include <stdio.h>
int main(void) {
  accel_device_t* d = NULL;
  if (accel_device_open("cpu:0", &d) != ACCEL_OK) {
    printf("%s\n", accel_last_error());
    return 1;
  }
  printf("hello from %s\n", accel_device_uri(d));
  accel_device_release(d);
  return 0;
}
EOF
if cc hello.c $(pkg-config --cflags --libs accel) -o hello && ./hello; then
  echo "packages: built and ran a program with pkg-config accel"
else
  echo "packages: a program against accel-dev failed"
  rc=1
fi
# Debian's python3, whose dist-packages the package installs into.
if printf '%s\n' "${names[@]}" | grep -qx accel-python &&
    [ -x /usr/bin/python3 ]; then
  if /usr/bin/python3 -c 'import accel; print("python:", accel.__file__,
    accel.library_path, accel.device("cpu:0").uri)'; then
    echo "packages: import accel works"
  else
    echo "packages: import accel failed"
    rc=1
  fi
fi
exit "$rc"
