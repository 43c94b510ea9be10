// SPDX-License-Identifier: MIT
//
// CPU kernels for the Python package's launch test (test_package.py).
#include <accel/cpu_kernel.h>
#include <stdint.h>
#include <string.h>

// args: [0] float* x, [1] float a, [2] uint32_t n. Block b of the grid
// computes x[i] = a * x[i] + 1 for the i with i % grid == b.
ACCEL_CPU_KERNEL(py_axpb) {
  float* x = *(float* const*)args[0];
  float a;
  uint32_t n;
  memcpy(&a, args[1], sizeof(a));
  memcpy(&n, args[2], sizeof(n));
  for (uint32_t i = ctx->block_idx[0]; i < n; i += ctx->grid_dim[0]) {
    x[i] = a * x[i] + 1.0f;
  }
}
