// SPDX-License-Identifier: MIT
//
// The ROCm plugin's built-in kernels. hipcc compiles this file offline
// into one code object per target the build's HIP supports
// (plugins/rocm/CMakeLists.txt); the plugin also embeds it as source, after
// ops_impl.h, for hiprtc to compile at run time on other GPUs (builtin.c).
// Every kernel takes one struct by value, so the launch code (ops.c,
// gemm.c) and the test runtime's host versions read parameters alike.
// The element code is in ops_impl.h; this file is only the GPU loops.
#ifndef __HIPCC_RTC__
#include <hip/hip_runtime.h>

#include "ops_impl.h"
#endif

// Grid-stride loop over the elements of an op.
#define ACCEL_ROCM_FOR_EACH(i, count)                               \
  for (accel_rocm_u64_t i =                                         \
           (accel_rocm_u64_t)blockIdx.x * blockDim.x + threadIdx.x; \
       i < (count); i += (accel_rocm_u64_t)gridDim.x * blockDim.x)

extern "C" __global__ void accel_rocm_fill(accel_rocm_op_args_t a) {
  ACCEL_ROCM_FOR_EACH(i, a.count) { accel_rocm_fill_at(&a, i); }
}

extern "C" __global__ void accel_rocm_cast(accel_rocm_op_args_t a) {
  ACCEL_ROCM_FOR_EACH(i, a.count) { accel_rocm_cast_at(&a, i); }
}

extern "C" __global__ void accel_rocm_ewise(accel_rocm_op_args_t a) {
  ACCEL_ROCM_FOR_EACH(i, a.count) { accel_rocm_ewise_at(&a, i); }
}

// First sum pass: block b adds its chunk of x in f64 (i64 for i32) and
// writes one partial result; launched with ACCEL_ROCM_SUM_THREADS threads.
extern "C" __global__ void accel_rocm_sum_partial(accel_rocm_op_args_t a) {
  __shared__ double fs[ACCEL_ROCM_SUM_THREADS];
  __shared__ accel_rocm_i64_t is[ACCEL_ROCM_SUM_THREADS];
  accel_rocm_u64_t chunk = accel_rocm_sum_chunk(&a);
  accel_rocm_u64_t lo = (accel_rocm_u64_t)blockIdx.x * chunk;
  accel_rocm_u64_t hi = lo + chunk < a.count ? lo + chunk : a.count;
  double f = 0;
  accel_rocm_i64_t s = 0;
  for (accel_rocm_u64_t i = lo + threadIdx.x; i < hi; i += blockDim.x) {
    if (a.dtype == ACCEL_ROCM_I32) {
      s += ((const accel_rocm_i32_t*)a.x)[i];
    } else {
      f += accel_rocm_load(a.x, a.dtype, i);
    }
  }
  fs[threadIdx.x] = f;
  is[threadIdx.x] = s;
  __syncthreads();
  for (unsigned w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      fs[threadIdx.x] += fs[threadIdx.x + w];
      is[threadIdx.x] += is[threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    if (a.dtype == ACCEL_ROCM_I32) {
      ((accel_rocm_i64_t*)a.partial)[blockIdx.x] = is[0];
    } else {
      ((double*)a.partial)[blockIdx.x] = fs[0];
    }
  }
}

// Second sum pass: one thread adds the partial results in block order.
extern "C" __global__ void accel_rocm_sum_final(accel_rocm_op_args_t a) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  double f = 0;
  accel_rocm_i64_t s = 0;
  for (accel_rocm_u32_t b = 0; b < a.blocks; b++) {
    if (a.dtype == ACCEL_ROCM_I32) {
      s += ((const accel_rocm_i64_t*)a.partial)[b];
    } else {
      f += ((const double*)a.partial)[b];
    }
  }
  accel_rocm_sum_store(&a, f, s);
}

// Tiled GEMM: a TILE x TILE block computes one tile of C, staging TILE x
// TILE tiles of op(A) and op(B) in shared memory, accumulating in f32.
// Grid x covers columns of C; grid y covers rows and may be smaller than
// the row tiles (it is capped at 65535), so blocks loop over row tiles.
// The body of accel_rocm_gemm and of each member of accel_rocm_gemm_batched.
static __device__ void accel_rocm_gemm_tiles(const accel_rocm_gemm_args_t& g) {
  const unsigned T = ACCEL_ROCM_GEMM_TILE;
  __shared__ float as[ACCEL_ROCM_GEMM_TILE][ACCEL_ROCM_GEMM_TILE + 1];
  __shared__ float bs[ACCEL_ROCM_GEMM_TILE][ACCEL_ROCM_GEMM_TILE + 1];
  accel_rocm_u64_t col = (accel_rocm_u64_t)blockIdx.x * T + threadIdx.x;
  accel_rocm_u64_t row_tiles = (g.m + T - 1) / T;
  for (accel_rocm_u64_t rt = blockIdx.y; rt < row_tiles; rt += gridDim.y) {
    accel_rocm_u64_t row = rt * T + threadIdx.y;
    float acc = 0.0f;
    for (accel_rocm_u64_t k0 = 0; k0 < g.k; k0 += T) {
      as[threadIdx.y][threadIdx.x] =
          accel_rocm_gemm_a(&g, row, k0 + threadIdx.x);
      bs[threadIdx.y][threadIdx.x] =
          accel_rocm_gemm_b(&g, k0 + threadIdx.y, col);
      __syncthreads();
      for (unsigned t = 0; t < T; t++) {
        acc += as[threadIdx.y][t] * bs[t][threadIdx.x];
      }
      __syncthreads();
    }
    if (row < g.m && col < g.n) accel_rocm_gemm_store(&g, row, col, acc);
  }
}

extern "C" __global__ void accel_rocm_gemm(accel_rocm_gemm_args_t g) {
  accel_rocm_gemm_tiles(g);
}

// Strided-batched GEMM (ABI 1.4): grid z covers the members (capped at
// 65535, so blocks loop over the rest), each as accel_rocm_gemm.
extern "C" __global__ void accel_rocm_gemm_batched(
    accel_rocm_gemm_batch_args_t b) {
  for (accel_rocm_u64_t i = blockIdx.z; i < b.count; i += gridDim.z) {
    accel_rocm_gemm_tiles(accel_rocm_gemm_member(&b, i));
  }
}

// Activations and bias-add (ABI 1.4; ops_impl.h).
extern "C" __global__ void accel_rocm_unary(accel_rocm_nn_args_t a) {
  ACCEL_ROCM_FOR_EACH(i, a.count) { accel_rocm_unary_at(&a, i); }
}

extern "C" __global__ void accel_rocm_bias_add(accel_rocm_nn_args_t a) {
  ACCEL_ROCM_FOR_EACH(i, a.count) { accel_rocm_bias_add_at(&a, i); }
}

// op_rng: one thread per Philox block of four elements (ops_impl.h).
extern "C" __global__ void accel_rocm_rng(accel_rocm_rng_args_t r) {
  ACCEL_ROCM_FOR_EACH(k, (r.count + 3u) / 4u) { accel_rocm_rng_block(&r, k); }
}
