#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what building and testing accel needs on Debian/Ubuntu.
# Idempotent: does nothing when every tool is already present.
set -euo pipefail

packages=(build-essential cmake pkg-config python3 file)
tools=(cc make cmake pkg-config python3 file readelf)
# GEMM on the CPU plugin dlopen()s a BLAS at run time (plugins/cpu/blas.c,
# docs/cpu-backend.md), so only the shared libraries are needed, not the
# -dev packages: OpenBLAS (pthread build, the fastest measured) and BLIS
# (used where OpenBLAS does not know the CPU model). Without them
# everything builds and GEMM tests skip.
blas_packages=(libopenblas0-pthread libblis4)
# The ROCm plugin builds against the HIP headers and compiles its kernels
# with hipcc (docs/rocm-backend.md); at run time it dlopen()s libamdhip64,
# which finds no GPU in CI and is then reported unavailable (a tested
# path). About 63 MiB to download, 337 MiB installed (LLVM 15, ROCm device
# libraries). Without them the plugin is skipped at configure time.
rocm_packages=(libamdhip64-dev hipcc)
# The OpenCL plugin builds against the Khronos headers and opens the ICD
# loader at run time; PoCL is the real OpenCL runtime CI runs it on (a CPU
# device), CLBlast its GEMM engine (docs/opencl-backend.md). oneDNN is a
# GEMM engine of the CPU plugin, opened at run time. clang and its
# sanitizer runtime build the fuzz targets and the clang UBSan stage.
opencl_packages=(opencl-headers ocl-icd-opencl-dev ocl-icd-libopencl1
  pocl-opencl-icd libclblast1)
extra_packages=(libdnnl2 libdnnl-dev clang libclang-rt-14-dev)
# Open MPI runs the collectives engine's tests (docs/collectives.md); the
# Python package's tests use Debian's NumPy and PyTorch through DLPack
# (docs/interop.md; PyTorch is about 1 GB installed).
extra_packages+=(openmpi-bin libopenmpi-dev python3-numpy python3-torch)

missing=()
optional=()  # installed when the distribution has them (rocm_packages)
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if command -v dpkg-query >/dev/null 2>&1; then
  for pkg in "${blas_packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
        grep -q 'install ok installed'; then
      missing+=("$pkg")
      packages+=("$pkg")
    fi
  done
  for pkg in "${rocm_packages[@]}" "${opencl_packages[@]}" \
      "${extra_packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null |
        grep -q 'install ok installed'; then
      missing+=("$pkg")
      optional+=("$pkg")
    fi
  done
fi
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

echo "setup: missing ${missing[*]}; installing ${packages[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "setup: not root and no sudo; install ${packages[*]} first" >&2
    exit 1
  fi
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${packages[@]}"
if [ "${#optional[@]}" -ne 0 ] &&
    ! "${sudo[@]}" apt-get install -y --no-install-recommends "${optional[@]}"; then
  echo "setup: could not install ${optional[*]}; the plugins and stages" \
    "that need them will be skipped" >&2
fi
