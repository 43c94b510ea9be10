// SPDX-License-Identifier: MIT
//
// A CPU kernel module built twice, with KT_TAG 1 and 2, for
// test_kernels_module_fds.c: the same kernel name in two different
// objects, so a load that got the other object back shows.
#include <accel/cpu_kernel.h>
#include <stdint.h>

// args: [0] uint32_t* out; block 0 writes KT_TAG there.
ACCEL_CPU_KERNEL(kt_tag) {
  if (ctx->block_idx[0] == 0) **(uint32_t* const*)args[0] = KT_TAG;
}
