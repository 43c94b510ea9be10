// SPDX-License-Identifier: MIT
//
// Host versions of accel-conform's test kernels (add_one.cu, specified in
// sdk/conform/kernels/README.md) for libfakecuda, so that accel-conform
// runs launch.grids, launch.value_args, launch.shared_mem,
// sync.elapsed_vs_host (with the spin kernel) and error.sticky on the
// stand-in. Each reads its kernelParams as add_one.cu's parameter list and
// writes what every thread of the grid would, after checking that the
// memory it writes belongs to the context. accel_conform_add_one lives
// with the other kernels in fakecuda_kernels.c.
#define _POSIX_C_SOURCE 200809L  // clock_gettime
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "fakecuda.h"

#define K(name, op, n, ...)                \
  {                                        \
    name, op, 0, 0, n, { __VA_ARGS__ }     \
  }

static const fakecuda_kernel_t fakecuda_conform_kernels[] = {
    K("accel_conform_index", FAKECUDA_OP_CONFORM_INDEX, 4, 8, 4, 4, 4),
    K("accel_conform_args", FAKECUDA_OP_CONFORM_ARGS, 7, 8, 1, 2, 4, 8, 16,
      24),
    K("accel_conform_shared", FAKECUDA_OP_CONFORM_SHARED, 2, 8, 4),
    K("accel_conform_spin", FAKECUDA_OP_CONFORM_SPIN, 1, 4),
    K("accel_conform_fail", FAKECUDA_OP_CONFORM_FAIL, 1, 8),
};

const fakecuda_kernel_t* fakecuda_conform_find(const char* name) {
  size_t n = sizeof(fakecuda_conform_kernels) /
             sizeof(fakecuda_conform_kernels[0]);
  for (size_t i = 0; i < n; i++) {
    if (strcmp(fakecuda_conform_kernels[i].name, name) == 0) {
      return &fakecuda_conform_kernels[i];
    }
  }
  return NULL;
}

static uint64_t param(void* const* p, int k, size_t size) {
  uint64_t v = 0;
  memcpy(&v, p[k], size);  // little-endian, as the GPU
  return v;
}

// accel_conform_index: every global (x, y, z) of the grid inside nx*ny*nz.
static bool run_index(CUcontext c, void* const* p, const unsigned grid[3],
                      const unsigned block[3]) {
  uintptr_t out = (uintptr_t)param(p, 0, 8);
  uint64_t n[3] = {param(p, 1, 4), param(p, 2, 4), param(p, 3, 4)};
  uint64_t reach[3];
  for (int d = 0; d < 3; d++) {
    uint64_t threads = (uint64_t)grid[d] * block[d];
    reach[d] = threads < n[d] ? threads : n[d];
  }
  if (reach[0] == 0 || reach[1] == 0 || reach[2] == 0) return true;
  // The last element written, (reach - 1) in each dimension.
  uint64_t last = ((reach[2] - 1) * n[1] + reach[1] - 1) * n[0] + reach[0];
  if (!fakecuda_range_ok(c, out, last * 4)) return false;
  for (uint64_t z = 0; z < reach[2]; z++) {
    for (uint64_t y = 0; y < reach[1]; y++) {
      for (uint64_t x = 0; x < reach[0]; x++) {
        int32_t v = (int32_t)(uint32_t)(x + (y << 10) + (z << 20));
        memcpy((char*)out + 4 * ((z * n[1] + y) * n[0] + x), &v, 4);
      }
    }
  }
  return true;
}

// accel_conform_args: block 0 writes its seven arguments as nine u64.
static bool run_args(CUcontext c, void* const* p) {
  uintptr_t out = (uintptr_t)param(p, 0, 8);
  if (!fakecuda_range_ok(c, out, 9 * 8)) return false;
  uint64_t v[9] = {param(p, 1, 1), param(p, 2, 2), param(p, 3, 4),
                   param(p, 4, 8)};
  memcpy(&v[4], p[5], 16);
  memcpy(&v[6], p[6], 24);
  memcpy((void*)out, v, sizeof(v));
  return true;
}

// accel_conform_shared: per block of the grid's x dimension.
static bool run_shared(CUcontext c, void* const* p, const unsigned grid[3],
                       unsigned shared) {
  uintptr_t out = (uintptr_t)param(p, 0, 8);
  uint64_t n = param(p, 1, 4);
  if (!fakecuda_range_ok(c, out, (uint64_t)grid[0] * n * 4)) return false;
  for (uint64_t b = 0; b < grid[0]; b++) {
    for (uint64_t t = 0; t < n; t++) {
      // shared[n - 1 - t] holds b * 1000 + (n - 1 - t).
      int32_t v = shared < n * 4 ? -1 : (int32_t)(b * 1000 + (n - 1 - t));
      memcpy((char*)out + 4 * (b * n + t), &v, 4);
    }
  }
  return true;
}

// accel_conform_spin: `ms` milliseconds of the stream's time.
static void run_spin(void* const* p) {
  uint64_t ms = param(p, 0, 4);
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  do {
    clock_gettime(CLOCK_MONOTONIC, &now);
  } while ((uint64_t)(now.tv_sec - start.tv_sec) * 1000000000u +
               (uint64_t)now.tv_nsec - (uint64_t)start.tv_nsec <
           ms * 1000000u);
}

bool fakecuda_conform_run(const fakecuda_kernel_t* k, CUcontext c,
                          void* const* p, const unsigned grid[3],
                          const unsigned block[3], unsigned shared) {
  switch (k->op) {
    case FAKECUDA_OP_CONFORM_INDEX:
      return run_index(c, p, grid, block);
    case FAKECUDA_OP_CONFORM_ARGS:
      return run_args(c, p);
    case FAKECUDA_OP_CONFORM_SHARED:
      return run_shared(c, p, grid, shared);
    case FAKECUDA_OP_CONFORM_SPIN:
      run_spin(p);
      return true;
    default:  // accel_conform_fail: __trap() faults the launch
      return false;
  }
}
