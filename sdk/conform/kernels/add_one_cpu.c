// SPDX-License-Identifier: MIT
//
// accel-conform's test kernel for the CPU backend (see conform_kernel.c):
// adds 1 to data[i] for every global index i < n.
// args: int32_t* data, uint32_t n
#include <accel/cpu_kernel.h>

ACCEL_CPU_KERNEL(accel_conform_add_one) {
  int32_t* data = *(int32_t* const*)args[0];
  uint32_t n = *(const uint32_t*)args[1];
  uint32_t base = ctx->block_idx[0] * ctx->block_dim[0];
  for (uint32_t t = 0; t < ctx->block_dim[0]; t++) {
    uint32_t i = base + t;
    if (i < n) data[i] += 1;
  }
}
