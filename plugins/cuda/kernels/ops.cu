// SPDX-License-Identifier: MIT
//
// Built-in ops of the CUDA plugin (plugin.h, ABI 1.1 and 1.4), compiled by nvcc
// into one fatbin that the plugin embeds and loads per device at the first
// op (ops.c). Every kernel is extern "C" so ops.c finds it by name; the
// names and parameter lists must match the table in ops.c.
//
// Numerics follow plugin.h and the CPU reference plugin exactly:
// - f16/bf16 compute in f32 and round to nearest even on store
//   (__float2half_rn, __float2bfloat16_rn);
// - a*x + y is a rounded multiply then a rounded add (__fmul_rn and
//   __fadd_rn), never a fused multiply-add, as the CPU plugin computes it;
// - float to i32 truncates toward zero and saturates, NaN gives 0;
// - fill converts the double value once, straight to the dtype (one
//   rounding: __double2half, __double2bfloat16);
// - i32 to bf16 rounds once, from the exact double; i32 to f16 via f32
//   (exact for |i| < 2^24, and f16 overflows long before that matters);
// - sums accumulate f32 per thread, f64 across threads and blocks (at least
//   f32, as plugin.h asks), i32 in 64 bits; two passes, so the result does
//   not depend on timing.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

// Random fills: the element code every backend runs (found through -I).
#include "accel/philox.h"

namespace {

typedef unsigned long long u64;

// Element types: T is the storage type, load/store convert to f32.
struct f32 {
  typedef float T;
  static __device__ float load(T v) { return v; }
  static __device__ T store(float f) { return f; }
  static __device__ T from_double(double d) { return (float)d; }
};
struct f16 {
  typedef uint16_t T;
  static __device__ float load(T v) {
    return __half2float(__ushort_as_half(v));
  }
  static __device__ T store(float f) {
    return __half_as_ushort(__float2half_rn(f));
  }
  static __device__ T from_double(double d) {
    return __half_as_ushort(__double2half(d));
  }
};
struct bf16 {
  typedef uint16_t T;
  static __device__ float load(T v) {
    return __bfloat162float(__ushort_as_bfloat16(v));
  }
  static __device__ T store(float f) {
    return __bfloat16_as_ushort(__float2bfloat16_rn(f));
  }
  static __device__ T from_double(double d) {
    return __bfloat16_as_ushort(__double2bfloat16(d));
  }
};
struct i32 {
  typedef int32_t T;
  static __device__ float load(T v) { return (float)v; }  // nearest even
  static __device__ T store(float f) {
    if (f != f) return 0;
    if (f >= 2147483648.0f) return INT32_MAX;
    if (f <= -2147483648.0f) return INT32_MIN;
    return (int32_t)f;
  }
  static __device__ T from_double(double d) {
    if (d != d) return 0;
    if (d >= 2147483647.0) return INT32_MAX;
    if (d <= -2147483648.0) return INT32_MIN;
    return (int32_t)d;
  }
};

// Conversion of one element from S to D (cast).
template <typename D, typename S>
__device__ typename D::T convert(typename S::T v) {
  return D::store(S::load(v));
}
template <>
__device__ bf16::T convert<bf16, i32>(i32::T v) {
  return bf16::from_double((double)v);
}

__device__ u64 first_index() {
  return (u64)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ u64 grid_stride() { return (u64)gridDim.x * blockDim.x; }

template <typename E>
__device__ void fill(typename E::T* z, u64 n, double value) {
  typename E::T v = E::from_double(value);
  for (u64 i = first_index(); i < n; i += grid_stride()) z[i] = v;
}

template <typename D, typename S>
__device__ void cast(typename D::T* z, const typename S::T* x, u64 n) {
  for (u64 i = first_index(); i < n; i += grid_stride()) {
    z[i] = convert<D, S>(x[i]);
  }
}

template <typename E>
__device__ void scale(typename E::T* z, u64 n, float a) {
  for (u64 i = first_index(); i < n; i += grid_stride()) {
    z[i] = E::store(__fmul_rn(a, E::load(z[i])));
  }
}

template <typename E>
__device__ void axpy(typename E::T* y, const typename E::T* x, u64 n, float a) {
  for (u64 i = first_index(); i < n; i += grid_stride()) {
    y[i] = E::store(__fadd_rn(__fmul_rn(a, E::load(x[i])), E::load(y[i])));
  }
}

template <typename E>
__device__ void add(typename E::T* z, const typename E::T* x,
                    const typename E::T* y, u64 n) {
  for (u64 i = first_index(); i < n; i += grid_stride()) {
    z[i] = E::store(__fadd_rn(E::load(x[i]), E::load(y[i])));
  }
}

template <typename E>
__device__ void mul(typename E::T* z, const typename E::T* x,
                    const typename E::T* y, u64 n) {
  for (u64 i = first_index(); i < n; i += grid_stride()) {
    z[i] = E::store(__fmul_rn(E::load(x[i]), E::load(y[i])));
  }
}

// i32 add/mul wrap modulo 2^32: unsigned arithmetic.
template <>
__device__ void add<i32>(int32_t* z, const int32_t* x, const int32_t* y,
                         u64 n) {
  for (u64 i = first_index(); i < n; i += grid_stride()) {
    z[i] = (int32_t)((uint32_t)x[i] + (uint32_t)y[i]);
  }
}
template <>
__device__ void mul<i32>(int32_t* z, const int32_t* x, const int32_t* y,
                         u64 n) {
  for (u64 i = first_index(); i < n; i += grid_stride()) {
    z[i] = (int32_t)((uint32_t)x[i] * (uint32_t)y[i]);
  }
}

// Threads per block of the sum kernels; ops.c launches with exactly this.
constexpr unsigned kSumThreads = 256;

// Block-wide sum of one value per thread, in a fixed order. Returns the
// total in thread 0.
template <typename A>
__device__ A block_sum(A v) {
  __shared__ A shared[kSumThreads];
  shared[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = kSumThreads / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  return shared[0];
}

// Pass 1: block b writes the sum of its grid-stride elements to
// partial[b]. Floats: f32 per thread, f64 in the block.
template <typename E>
__device__ void sum_partial(double* partial, const typename E::T* x, u64 n) {
  float acc = 0.0f;
  for (u64 i = first_index(); i < n; i += grid_stride()) {
    acc = __fadd_rn(acc, E::load(x[i]));
  }
  double total = block_sum<double>((double)acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = total;
}

// Pass 2 (one block): combines `blocks` partials and stores the result.
template <typename E>
__device__ void sum_final(typename E::T* out, const double* partial,
                          unsigned blocks) {
  double acc = 0.0;
  for (unsigned i = threadIdx.x; i < blocks; i += kSumThreads) {
    acc += partial[i];
  }
  double total = block_sum<double>(acc);
  if (threadIdx.x == 0) *out = E::from_double(total);
}

__device__ void sum_partial_i32(long long* partial, const int32_t* x, u64 n) {
  u64 acc = 0;  // wraps like the low bits of an exact sum
  for (u64 i = first_index(); i < n; i += grid_stride()) {
    acc += (u64)(long long)x[i];
  }
  u64 total = block_sum<u64>(acc);
  if (threadIdx.x == 0) partial[blockIdx.x] = (long long)total;
}

__device__ void sum_final_i32(int32_t* out, const long long* partial,
                              unsigned blocks) {
  u64 acc = 0;
  for (unsigned i = threadIdx.x; i < blocks; i += kSumThreads) {
    acc += (u64)partial[i];
  }
  u64 total = block_sum<u64>(acc);
  if (threadIdx.x == 0) *out = (int32_t)(uint32_t)total;
}

// Activations (ABI 1.4, accel_plugin_unary_op_t): computed in f32, rounded
// once on store. GELU as x * erfc(-x / sqrt(2)) / 2 (the exact form,
// without the cancellation of 1 + erf for negative x), SiLU as
// x / (1 + exp(-x)); ReLU passes -0 and NaN through. z may be x.
// accel_plugin_unary_op_t values (plugin.h).
constexpr unsigned kGelu = 1, kSilu = 2;

template <typename E>
__device__ void unary(typename E::T* z, const typename E::T* x, u64 n,
                      unsigned op) {
  for (u64 i = first_index(); i < n; i += grid_stride()) {
    float v = E::load(x[i]), r;
    if (op == kGelu) {
      r = __fmul_rn(__fmul_rn(0.5f, v), erfcf(__fmul_rn(-v, 0.70710678f)));
    } else if (op == kSilu) {
      r = __fdiv_rn(v, __fadd_rn(1.0f, expf(-v)));
    } else {
      r = v < 0.0f ? 0.0f : v;
    }
    z[i] = E::store(r);
  }
}

// y[r * cols + c] += bias[c] over the n = rows * cols elements of y.
template <typename E>
__device__ void bias_add(typename E::T* y, const typename E::T* bias, u64 cols,
                         u64 n) {
  for (u64 i = first_index(); i < n; i += grid_stride()) {
    y[i] = E::store(__fadd_rn(E::load(y[i]), E::load(bias[i % cols])));
  }
}
template <>
__device__ void bias_add<i32>(int32_t* y, const int32_t* bias, u64 cols,
                              u64 n) {
  for (u64 i = first_index(); i < n; i += grid_stride()) {
    y[i] = (int32_t)((uint32_t)y[i] + (uint32_t)bias[i % cols]);  // wraps
  }
}

// C = beta * C for a GEMM with k == 0 (beta == 0 writes zeros without
// reading C, as BLAS does). One thread per element of the m x n matrix.
template <typename E>
__device__ void gemm_scale(typename E::T* c, u64 m, u64 n, u64 ldc,
                           float beta) {
  for (u64 i = first_index(); i < m * n; i += grid_stride()) {
    typename E::T* p = c + (i / n) * ldc + i % n;
    *p = beta == 0.0f ? E::store(0.0f) : E::store(__fmul_rn(beta, E::load(*p)));
  }
}

}  // namespace

#define ACCEL_CUDA_OPS_FOR_FLOATS(X) X(f32) X(f16) X(bf16)
#define ACCEL_CUDA_OPS_FOR_ALL(X) X(f32) X(f16) X(bf16) X(i32)

#define ACCEL_CUDA_FILL(E)                                       \
  extern "C" __global__ void accel_cuda_fill_##E(E::T* z, u64 n, \
                                                 double value) { \
    fill<E>(z, n, value);                                        \
  }
ACCEL_CUDA_OPS_FOR_ALL(ACCEL_CUDA_FILL)

#define ACCEL_CUDA_CAST(D, S)                                                  \
  extern "C" __global__ void accel_cuda_cast_##D##_##S(D::T* z, const S::T* x, \
                                                       u64 n) {                \
    cast<D, S>(z, x, n);                                                       \
  }
#define ACCEL_CUDA_CAST_FROM(S) \
  ACCEL_CUDA_CAST(f32, S)       \
  ACCEL_CUDA_CAST(f16, S) ACCEL_CUDA_CAST(bf16, S) ACCEL_CUDA_CAST(i32, S)
ACCEL_CUDA_OPS_FOR_ALL(ACCEL_CUDA_CAST_FROM)

#define ACCEL_CUDA_FLOAT_OPS(E)                                               \
  extern "C" __global__ void accel_cuda_scale_##E(E::T* z, u64 n, float a) {  \
    scale<E>(z, n, a);                                                        \
  }                                                                           \
  extern "C" __global__ void accel_cuda_axpy_##E(E::T* y, const E::T* x,      \
                                                 u64 n, float a) {            \
    axpy<E>(y, x, n, a);                                                      \
  }                                                                           \
  extern "C" __global__ void accel_cuda_sum_partial_##E(                      \
      double* partial, const E::T* x, u64 n) {                                \
    sum_partial<E>(partial, x, n);                                            \
  }                                                                           \
  extern "C" __global__ void accel_cuda_sum_final_##E(                        \
      E::T* out, const double* partial, unsigned blocks) {                    \
    sum_final<E>(out, partial, blocks);                                       \
  }                                                                           \
  extern "C" __global__ void accel_cuda_gemm_scale_##E(E::T* c, u64 m, u64 n, \
                                                       u64 ldc, float beta) { \
    gemm_scale<E>(c, m, n, ldc, beta);                                        \
  }
ACCEL_CUDA_OPS_FOR_FLOATS(ACCEL_CUDA_FLOAT_OPS)

#define ACCEL_CUDA_BINARY_OPS(E)                                        \
  extern "C" __global__ void accel_cuda_add_##E(E::T* z, const E::T* x, \
                                                const E::T* y, u64 n) { \
    add<E>(z, x, y, n);                                                 \
  }                                                                     \
  extern "C" __global__ void accel_cuda_mul_##E(E::T* z, const E::T* x, \
                                                const E::T* y, u64 n) { \
    mul<E>(z, x, y, n);                                                 \
  }
ACCEL_CUDA_OPS_FOR_ALL(ACCEL_CUDA_BINARY_OPS)

extern "C" __global__ void accel_cuda_sum_partial_i32(long long* partial,
                                                      const int32_t* x, u64 n) {
  sum_partial_i32(partial, x, n);
}
extern "C" __global__ void accel_cuda_sum_final_i32(int32_t* out,
                                                    const long long* partial,
                                                    unsigned blocks) {
  sum_final_i32(out, partial, blocks);
}

#define ACCEL_CUDA_UNARY(E)                                              \
  extern "C" __global__ void accel_cuda_unary_##E(E::T* z, const E::T* x, \
                                                  u64 n, unsigned op) {   \
    unary<E>(z, x, n, op);                                                \
  }
ACCEL_CUDA_OPS_FOR_FLOATS(ACCEL_CUDA_UNARY)

#define ACCEL_CUDA_BIAS_ADD(E)                                     \
  extern "C" __global__ void accel_cuda_bias_add_##E(              \
      E::T* y, const E::T* bias, u64 cols, u64 n) {                \
    bias_add<E>(y, bias, cols, n);                                 \
  }
ACCEL_CUDA_OPS_FOR_ALL(ACCEL_CUDA_BIAS_ADD)

// op_rng (ABI 1.3): one thread per Philox block of four elements,
// grid-stride; <accel/philox.h> computes each element with __fmul_rn and
// __fadd_rn, so the bytes equal every other backend's.
extern "C" __global__ void accel_cuda_rng(unsigned char* z, u64 n,
                                          unsigned distribution,
                                          unsigned dtype, u64 seed, u64 offset,
                                          float a, float b) {
  u64 blocks = (n + 3) / 4;
  for (u64 k = blockIdx.x * (u64)blockDim.x + threadIdx.x; k < blocks;
       k += (u64)gridDim.x * blockDim.x) {
    accel_philox_block_t block = accel_philox_at(seed, offset, k);
    for (unsigned j = 0; j < 4u && k * 4 + j < n; j++) {
      unsigned v = accel_philox_element(block, j, distribution, dtype, a, b);
      if (dtype == ACCEL_PHILOX_F16 || dtype == ACCEL_PHILOX_BF16) {
        ((uint16_t*)z)[k * 4 + j] = (uint16_t)v;
      } else {
        ((uint32_t*)z)[k * 4 + j] = v;
      }
    }
  }
}
