// SPDX-License-Identifier: MIT
//
// accel-conform's test kernel for the ROCm backend (see conform_kernel.c):
// adds 1 to data[i] for every global index i < n. Built by
// plugins/rocm/CMakeLists.txt with hipcc into an offload bundle.
#include <hip/hip_runtime.h>
#include <stdint.h>

extern "C" __global__ void accel_conform_add_one(int32_t* data, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
}
