// SPDX-License-Identifier: MIT
//
// accel-conform's test kernels for host targets (the CPU backend, and the
// template plugin, which loads the same CPU-ABI modules). What each kernel
// computes is specified in README.md in this directory; conform_kernel.c
// and conform_launch.c check it.
#include <accel/cpu_kernel.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "conform_cpu_words.h"

// args: int32_t* data, uint32_t n
ACCEL_CPU_KERNEL(accel_conform_add_one) {
  int32_t* data = *(int32_t* const*)args[0];
  uint32_t n = *(const uint32_t*)args[1];
  uint32_t base = ctx->block_idx[0] * ctx->block_dim[0];
  for (uint32_t t = 0; t < ctx->block_dim[0]; t++) {
    uint32_t i = base + t;
    if (i < n) data[i] += 1;
  }
}

// args: int32_t* out, uint32_t nx, uint32_t ny, uint32_t nz
// out[(z * ny + y) * nx + x] = x + (y << 10) + (z << 20) for every global
// thread (x, y, z) inside nx * ny * nz.
ACCEL_CPU_KERNEL(accel_conform_index) {
  int32_t* out = *(int32_t* const*)args[0];
  uint32_t nx = *(const uint32_t*)args[1];
  uint32_t ny = *(const uint32_t*)args[2];
  uint32_t nz = *(const uint32_t*)args[3];
  for (uint32_t tz = 0; tz < ctx->block_dim[2]; tz++) {
    uint32_t z = ctx->block_idx[2] * ctx->block_dim[2] + tz;
    for (uint32_t ty = 0; ty < ctx->block_dim[1]; ty++) {
      uint32_t y = ctx->block_idx[1] * ctx->block_dim[1] + ty;
      for (uint32_t tx = 0; tx < ctx->block_dim[0]; tx++) {
        uint32_t x = ctx->block_idx[0] * ctx->block_dim[0] + tx;
        if (x < nx && y < ny && z < nz) {
          out[((size_t)z * ny + y) * nx + x] =
              (int32_t)(x + (y << 10) + (z << 20));
        }
      }
    }
  }
}

// Value arguments of 1, 2, 4, 8, 16 and 24 bytes.
typedef struct conform_pair {
  uint64_t lo, hi;
} conform_pair_t;
typedef struct conform_triple {
  uint64_t a, b, c;
} conform_triple_t;

// args: uint64_t* out, uint8_t a, uint16_t b, uint32_t c, uint64_t d,
//       conform_pair_t e, conform_triple_t f
// out[0..8] = a, b, c, d, e.lo, e.hi, f.a, f.b, f.c (block 0 only).
ACCEL_CPU_KERNEL(accel_conform_args) {
  if (ctx->block_idx[0] != 0) return;
  uint64_t* out = *(uint64_t* const*)args[0];
  conform_pair_t e;
  conform_triple_t f;
  memcpy(&e, args[5], sizeof(e));
  memcpy(&f, args[6], sizeof(f));
  out[0] = *(const uint8_t*)args[1];
  out[1] = *(const uint16_t*)args[2];
  out[2] = *(const uint32_t*)args[3];
  out[3] = *(const uint64_t*)args[4];
  out[4] = e.lo;
  out[5] = e.hi;
  out[6] = f.a;
  out[7] = f.b;
  out[8] = f.c;
}

// args: int32_t* out, uint32_t n (dynamic shared memory: n int32)
// Each block writes b * 1000 + t into shared[t] for t < n, then
// out[b * n + t] = shared[n - 1 - t]; -1 everywhere if it got no shared
// memory.
ACCEL_CPU_KERNEL(accel_conform_shared) {
  int32_t* out = *(int32_t* const*)args[0];
  uint32_t n = *(const uint32_t*)args[1];
  uint32_t b = ctx->block_idx[0];
  int32_t* shared = ctx->shared_mem;
  if (shared == NULL || ctx->shared_mem_bytes < n * sizeof(int32_t)) {
    for (uint32_t t = 0; t < n; t++) out[(size_t)b * n + t] = -1;
    return;
  }
  for (uint32_t t = 0; t < n; t++) shared[t] = (int32_t)(b * 1000 + t);
  for (uint32_t t = 0; t < n; t++) out[(size_t)b * n + t] = shared[n - 1 - t];
}

// args: uint32_t* out, uint32_t gx, uint32_t gy, uint32_t blocks
// CPU ABI only: what the block's context says. Block (x, y, z) of a grid
// the caller describes as gx * gy * (blocks / (gx * gy)) writes 13 words
// at out[13 * (x + gx * (y + gy * z))]: the number of calls for that block
// so far plus one, block_idx, grid_dim, block_dim, struct_size,
// shared_mem % 64 (0xffffffff for NULL) and shared_mem_bytes. Blocks
// outside the described grid write nothing.
ACCEL_CPU_KERNEL(accel_conform_ctx) {
  uint32_t* out = *(uint32_t* const*)args[0];
  uint32_t gx = *(const uint32_t*)args[1];
  uint32_t gy = *(const uint32_t*)args[2];
  uint32_t blocks = *(const uint32_t*)args[3];
  if (ctx->block_idx[0] >= gx || ctx->block_idx[1] >= gy) return;
  uint64_t b =
      ctx->block_idx[0] +
      (uint64_t)gx * (ctx->block_idx[1] + (uint64_t)gy * ctx->block_idx[2]);
  if (b >= blocks) return;
  uint32_t* rec = out + 13 * b;
  rec[0] += 1;
  for (int d = 0; d < 3; d++) {
    rec[1 + d] = ctx->block_idx[d];
    rec[4 + d] = ctx->grid_dim[d];
    rec[7 + d] = ctx->block_dim[d];
  }
  rec[10] = ctx->struct_size;
  rec[11] = ctx->shared_mem == NULL
                ? 0xffffffffu
                : (uint32_t)((uintptr_t)ctx->shared_mem % 64u);
  rec[12] = ctx->shared_mem_bytes;
}

// args: uint32_t ms. Block 0 busy-waits `ms` milliseconds of host time.
ACCEL_CPU_KERNEL(accel_conform_spin) {
  if (ctx->block_idx[0] != 0) return;
  uint32_t ms = *(const uint32_t*)args[0];
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((now.tv_sec - start.tv_sec) * 1000.0 +
               (now.tv_nsec - start.tv_nsec) / 1e6 <
           ms);
}

// args: int32_t* flag. Fails the launch through ctx->fail with
// ACCEL_ERROR_DEVICE_LOST (8), which the stream must report as it is, and
// sets *flag to 3 (the GPU versions set 1 and trap); sets it to 2 when the
// plugin's kernel context has no fail entry (a plugin built before it was
// appended).
ACCEL_CPU_KERNEL(accel_conform_fail) {
  int32_t* flag = *(int32_t* const*)args[0];
  if (ctx->block_idx[0] != 0) return;
  if (ctx->struct_size >= offsetof(accel_cpu_kernel_ctx_t, fail_state) +
                             sizeof(void*) &&
      ctx->fail != NULL) {
    *flag = 3;
    ctx->fail(ctx, 8, "accel_conform_fail was asked to fail");
  } else {
    *flag = 2;
  }
}


// Spins for about a microsecond's fraction without a system call: the
// waiting block must not slow down the one it waits for (on its
// hyper-thread sibling) nor sleep past it.
static void conform_workers_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

// Spins until `*running` (blocks between their start and end marks, this
// one included) reaches 2 or `wait_us` pass; counts the block in
// `*overlapped` or in `*lonely`. Once `max_lonely` blocks waited in vain
// the others no longer wait: a device that runs one block at a time
// would otherwise take wait_us per block.
static void conform_workers_company(uint32_t* running, uint32_t* overlapped,
                                    uint32_t* lonely, uint32_t wait_us,
                                    uint32_t max_lonely) {
  if (__atomic_load_n(lonely, __ATOMIC_RELAXED) >= max_lonely) return;
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (;;) {
    for (int i = 0; i < 64; i++) {
      if (__atomic_load_n(running, __ATOMIC_ACQUIRE) >= 2) {
        __atomic_fetch_add(overlapped, 1, __ATOMIC_RELAXED);
        return;
      }
      conform_workers_pause();
    }
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((now.tv_sec - start.tv_sec) * 1000000.0 +
            (now.tv_nsec - start.tv_nsec) / 1e3 >=
        wait_us) {
      __atomic_fetch_add(lonely, 1, __ATOMIC_RELAXED);
      return;
    }
  }
}

// Counts a collision of `kind` seen by block `b` on `worker`; the first
// one's details are kept for the report.
static void conform_workers_collide(uint32_t* state, uint32_t worker,
                                    uint32_t b, uint32_t kind) {
  if (__atomic_fetch_add(&state[CONFORM_WORKERS_COLLISIONS], 1,
                         __ATOMIC_RELAXED) == 0) {
    state[CONFORM_WORKERS_WORKER] = worker;
    state[CONFORM_WORKERS_BLOCK] = b;
    state[CONFORM_WORKERS_KIND] = kind;
  }
}

// args: uint32_t* state, uint32_t bound, uint32_t wait_us,
//       uint32_t max_lonely
// CPU ABI only: checks that blocks running at the same time have distinct
// `worker` values and distinct shared memory. `state` holds the words
// above then `bound` busy counters, all zero. Each block (1D grid) marks
// busy[worker] (kind 1: worker >= bound; kind 2: it was already marked),
// fills its shared memory with its block_idx[0], counts itself running,
// then spins until another block runs too or `wait_us` pass (after
// `max_lonely` blocks waited in vain, the others no longer wait: a device
// that runs blocks one at a time pays little). It then checks its shared
// memory still holds its index (kind 3) and busy[worker] is still 1
// (kind 4), and unmarks both. Counting itself running only after the
// fill is what makes a block that sees another running see that block's
// fill too (release / acquire), so a shared slot given to both is caught.
// The atomics are the GCC / Clang builtins: the buffer is plain memory.
ACCEL_CPU_KERNEL(accel_conform_workers) {
  uint32_t* state = *(uint32_t* const*)args[0];
  uint32_t bound = *(const uint32_t*)args[1];
  uint32_t wait_us = *(const uint32_t*)args[2];
  uint32_t max_lonely = *(const uint32_t*)args[3];
  uint32_t b = ctx->block_idx[0];
  uint32_t worker = ctx->worker;
  uint32_t* busy = state + CONFORM_WORKERS_BUSY;
  __atomic_fetch_add(&state[CONFORM_WORKERS_CALLS], 1, __ATOMIC_RELAXED);
  if (worker >= bound) {
    conform_workers_collide(state, worker, b, 1);
    return;
  }
  if (__atomic_fetch_add(&busy[worker], 1, __ATOMIC_ACQ_REL) != 0) {
    conform_workers_collide(state, worker, b, 2);
  }
  // volatile: another block writing here is the bug looked for, so the
  // compiler must not assume the bytes are still the ones written.
  volatile uint32_t* shared = ctx->shared_mem;
  size_t words = shared != NULL ? ctx->shared_mem_bytes / sizeof(uint32_t) : 0;
  for (size_t i = 0; i < words; i++) shared[i] = b;
  __atomic_fetch_add(&state[CONFORM_WORKERS_RUNNING], 1, __ATOMIC_ACQ_REL);
  conform_workers_company(&state[CONFORM_WORKERS_RUNNING],
                          &state[CONFORM_WORKERS_OVERLAPPED],
                          &state[CONFORM_WORKERS_LONELY], wait_us, max_lonely);
  for (size_t i = 0; i < words; i++) {
    if (shared[i] != b) {
      conform_workers_collide(state, worker, b, 3);
      break;
    }
  }
  if (__atomic_load_n(&busy[worker], __ATOMIC_ACQUIRE) != 1) {
    conform_workers_collide(state, worker, b, 4);
  }
  __atomic_fetch_sub(&state[CONFORM_WORKERS_RUNNING], 1, __ATOMIC_ACQ_REL);
  __atomic_fetch_sub(&busy[worker], 1, __ATOMIC_ACQ_REL);
}


// args: uint32_t* state, uint32_t tag, uint32_t wait_us, uint32_t max_lonely
// CPU ABI only: shared memory must be private to its block while it runs,
// also against blocks of other launches running at the same time (other
// streams). Each block fills its shared_mem_bytes with (tag << 16) |
// block_idx[0] (whole words, then the tag's low byte), counts itself
// running in `state` (CONFORM_TAG_* above, one state for all the
// launches), waits as accel_conform_workers does for another block to
// run too, then checks every byte it wrote.
ACCEL_CPU_KERNEL(accel_conform_shared_tag) {
  uint32_t* state = *(uint32_t* const*)args[0];
  uint32_t tag = *(const uint32_t*)args[1];
  uint32_t wait_us = *(const uint32_t*)args[2];
  uint32_t max_lonely = *(const uint32_t*)args[3];
  uint32_t mark = (tag << 16) | (ctx->block_idx[0] & 0xffffu);
  __atomic_fetch_add(&state[CONFORM_TAG_CALLS], 1, __ATOMIC_RELAXED);
  volatile uint32_t* words = ctx->shared_mem;
  volatile unsigned char* bytes = ctx->shared_mem;
  size_t n = ctx->shared_mem != NULL ? ctx->shared_mem_bytes : 0;
  for (size_t i = 0; i < n / 4; i++) words[i] = mark;
  for (size_t i = n / 4 * 4; i < n; i++) bytes[i] = (unsigned char)tag;
  __atomic_fetch_add(&state[CONFORM_TAG_RUNNING], 1, __ATOMIC_ACQ_REL);
  conform_workers_company(&state[CONFORM_TAG_RUNNING],
                          &state[CONFORM_TAG_OVERLAPPED],
                          &state[CONFORM_TAG_LONELY], wait_us, max_lonely);
  size_t bad = n;
  uint32_t found = 0;
  for (size_t i = 0; i < n / 4 && bad == n; i++) {
    if (words[i] != mark) bad = i * 4, found = words[i];
  }
  for (size_t i = n / 4 * 4; i < n && bad == n; i++) {
    if (bytes[i] != (unsigned char)tag) bad = i, found = bytes[i];
  }
  if (bad != n &&
      __atomic_fetch_add(&state[CONFORM_TAG_COLLISIONS], 1,
                         __ATOMIC_RELAXED) == 0) {
    state[CONFORM_TAG_FIRST] = mark;
    state[CONFORM_TAG_WORD] = (uint32_t)bad;
    state[CONFORM_TAG_FOUND] = found;
  }
  __atomic_fetch_sub(&state[CONFORM_TAG_RUNNING], 1, __ATOMIC_ACQ_REL);
}
