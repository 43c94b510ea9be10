// SPDX-License-Identifier: MIT
//
// CPU kernels for test_kernels_module.c, built as a shared object and
// loaded as an accel module on cpu:0. Written against <accel/cpu_kernel.h>
// only: each kernel runs once per block of the grid.
#include <accel/cpu_kernel.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

// Values the test passes, to check they arrive intact.
#define KT_MAGIC32 0xC0FFEE01u
#define KT_MAGIC64 0x0123456789ABCDEFull
#define KT_MAGIC_DOUBLE (-1234.5)

// Result bits per block.
#define KT_SHARED_OK 1u
#define KT_VALUES_OK 2u
#define KT_DIMS_OK 4u

// args: [0] uint32_t* counters, one per block (linear block index);
// [1] uint32_t* results, one per block; [2] uint32_t magic; [3] uint64_t
// magic; [4] double magic; [5] uint32_t expected shared bytes; [6] uint32_t
// expected block_dim[0] * block_dim[1] * block_dim[2].
ACCEL_CPU_KERNEL(kt_count_blocks) {
  uint32_t* counters = *(uint32_t* const*)args[0];
  uint32_t* results = *(uint32_t* const*)args[1];
  uint32_t m32;
  uint64_t m64;
  double md;
  uint32_t shared_want, threads_want;
  memcpy(&m32, args[2], sizeof(m32));
  memcpy(&m64, args[3], sizeof(m64));
  memcpy(&md, args[4], sizeof(md));
  memcpy(&shared_want, args[5], sizeof(shared_want));
  memcpy(&threads_want, args[6], sizeof(threads_want));

  uint64_t linear =
      ctx->block_idx[0] +
      (uint64_t)ctx->grid_dim[0] *
          (ctx->block_idx[1] + (uint64_t)ctx->grid_dim[1] * ctx->block_idx[2]);
  uint32_t bits = 0;
  if (m32 == KT_MAGIC32 && m64 == KT_MAGIC64 && md == KT_MAGIC_DOUBLE) {
    bits |= KT_VALUES_OK;
  }
  uint64_t threads =
      (uint64_t)ctx->block_dim[0] * ctx->block_dim[1] * ctx->block_dim[2];
  if (threads == threads_want && ctx->block_idx[0] < ctx->grid_dim[0] &&
      ctx->block_idx[1] < ctx->grid_dim[1] &&
      ctx->block_idx[2] < ctx->grid_dim[2]) {
    bits |= KT_DIMS_OK;
  }
  // The scratch is usable over all its bytes and private to this block.
  if (ctx->shared_mem_bytes == shared_want &&
      (shared_want == 0 || ctx->shared_mem != NULL)) {
    unsigned char* s = (unsigned char*)ctx->shared_mem;
    for (uint32_t i = 0; i < shared_want; i++) {
      s[i] = (unsigned char)(linear + i);
    }
    bool same = true;
    for (uint32_t i = 0; i < shared_want; i++) {
      if (s[i] != (unsigned char)(linear + i)) same = false;
    }
    if (same) bits |= KT_SHARED_OK;
  }
  __atomic_fetch_add(&counters[linear], 1u, __ATOMIC_RELAXED);
  __atomic_fetch_or(&results[linear], bits, __ATOMIC_RELAXED);
}

// args: [0] float* x, [1] uint32_t n. Adds 1 to x[i] for the block's i.
ACCEL_CPU_KERNEL(kt_add_one) {
  float* x = *(float* const*)args[0];
  uint32_t n;
  memcpy(&n, args[1], sizeof(n));
  uint32_t i = ctx->block_idx[0];
  if (i < n) x[i] += 1.0f;
}
