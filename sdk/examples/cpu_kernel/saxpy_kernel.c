// SPDX-License-Identifier: MIT
//
// A CPU kernel module: y = a * x + y over n floats, CUDA style. Each block
// of the grid covers block_dim[0] consecutive elements and loops over them
// (a CPU block is one task; see <accel/cpu_kernel.h>).
//
// Arguments, in launch order: float a, float* x, float* y, uint32_t n.
#include <accel/cpu_kernel.h>
#include <stdint.h>

ACCEL_CPU_KERNEL(saxpy) {
  float a = *(const float*)args[0];
  const float* x = *(float* const*)args[1];
  float* y = *(float* const*)args[2];
  uint32_t n = *(const uint32_t*)args[3];
  uint32_t begin = ctx->block_idx[0] * ctx->block_dim[0];
  uint32_t end = begin + ctx->block_dim[0];
  if (end > n || end < begin) end = n;
  // A plain counted loop: the compiler vectorises it.
  for (uint32_t i = begin; i < end; i++) y[i] = a * x[i] + y[i];
}
