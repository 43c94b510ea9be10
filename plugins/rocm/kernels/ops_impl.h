// SPDX-License-Identifier: MIT
//
// Element code of the ROCm plugin's built-in kernels, shared by three
// compilers so that all of them compute bit-identical results:
//   - hipcc, offline, for the embedded code objects (ops.hip);
//   - hiprtc, at run time, for a GPU with no embedded code object (the
//     build embeds this file and ops.hip as source text, in that order);
//   - the C compiler, for the host versions of the kernels in the
//     test-only HIP runtime (tests/rocm/fakehip), which read the kernel
//     parameters exactly as the GPU kernels do.
// So it uses no headers (but the C compile's <math.h>): hiprtc has no C
// library, and the fixed-width types below are spelled with builtin types.
//
// Semantics (sdk/include/accel/plugin.h): float results round to nearest
// even, overflow gives infinity, NaN stays NaN; float to i32 truncates
// toward zero and saturates, NaN gives 0; i32 add and mul wrap. The f16
// conversions are the same exact formulations as the CPU plugin's
// (plugins/cpu/convert.h, after Maratyszcza's FP16 library, MIT); they
// rely on f32 arithmetic without flush-to-zero and without contraction
// (every compiler runs with -ffp-contract=off).
#ifndef ACCEL_PLUGINS_ROCM_KERNELS_OPS_IMPL_H_
#define ACCEL_PLUGINS_ROCM_KERNELS_OPS_IMPL_H_

#if defined(__HIPCC__) || defined(__HIPCC_RTC__)
#define ACCEL_ROCM_FN static __host__ __device__ inline
#else
#define ACCEL_ROCM_FN static inline
// erfcf and expf of the activations: HIP's device library under hipcc and
// hiprtc, the C library here.
#include <math.h>
#endif

typedef unsigned short accel_rocm_u16_t;
typedef unsigned int accel_rocm_u32_t;
typedef int accel_rocm_i32_t;
typedef unsigned long long accel_rocm_u64_t;
typedef long long accel_rocm_i64_t;

// accel_dtype_t values (plugin.h); plugins/rocm/ops.c checks they agree.
#define ACCEL_ROCM_F32 0u
#define ACCEL_ROCM_F16 1u
#define ACCEL_ROCM_BF16 2u
#define ACCEL_ROCM_I32 3u

// Elementwise operations of accel_rocm_ewise.
#define ACCEL_ROCM_OP_SCALE 0u
#define ACCEL_ROCM_OP_AXPY 1u
#define ACCEL_ROCM_OP_ADD 2u
#define ACCEL_ROCM_OP_MUL 3u

// Blocks of the first sum pass, and the size in bytes of the per-stream
// scratch holding their partial results (f64 or i64 each).
#define ACCEL_ROCM_SUM_BLOCKS 256u
#define ACCEL_ROCM_SUM_THREADS 256u
#define ACCEL_ROCM_SUM_SCRATCH (ACCEL_ROCM_SUM_BLOCKS * 8u)

// GEMM tile edge (threads per block are its square).
#define ACCEL_ROCM_GEMM_TILE 16u

// The one parameter of every elementwise kernel and the sum kernels,
// passed by value (kernelParams[0] points at it).
typedef struct accel_rocm_op_args {
  void* z;        // destination (x for scale, y for axpy, out for sum)
  const void* x;  // source (cast, axpy, add, mul, sum)
  const void* y;  // second source (add, mul)
  void* partial;  // sum: ACCEL_ROCM_SUM_BLOCKS partial results
  accel_rocm_u64_t count;
  double value;  // fill value, or alpha
  accel_rocm_u32_t op;
  accel_rocm_u32_t dtype;  // of z
  accel_rocm_u32_t src_dtype;
  accel_rocm_u32_t blocks;  // sum: blocks of the first pass
} accel_rocm_op_args_t;

// The one parameter of accel_rocm_gemm: row-major C = alpha op(A) op(B) +
// beta C with pointers already offset (see accel_plugin_gemm_t).
typedef struct accel_rocm_gemm_args {
  const void* a;
  const void* b;
  void* c;
  accel_rocm_u64_t m, n, k;
  accel_rocm_u64_t lda, ldb, ldc;
  float alpha, beta;
  accel_rocm_u32_t ab_dtype, c_dtype;
  accel_rocm_u32_t trans_a, trans_b;
} accel_rocm_gemm_args_t;

// ---------------------------------------------------------------------------
// Scalar conversions
// ---------------------------------------------------------------------------

ACCEL_ROCM_FN accel_rocm_u32_t accel_rocm_f32_bits(float f) {
  accel_rocm_u32_t u;
  __builtin_memcpy(&u, &f, sizeof(u));
  return u;
}

ACCEL_ROCM_FN float accel_rocm_f32_from_bits(accel_rocm_u32_t u) {
  float f;
  __builtin_memcpy(&f, &u, sizeof(f));
  return f;
}

ACCEL_ROCM_FN float accel_rocm_f16_to_f32(accel_rocm_u16_t h) {
  accel_rocm_u32_t w = (accel_rocm_u32_t)h << 16;
  accel_rocm_u32_t sign = w & 0x80000000u;
  accel_rocm_u32_t two_w = w + w;
  float normalized =
      accel_rocm_f32_from_bits((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  float denormalized =
      accel_rocm_f32_from_bits((two_w >> 17) | (126u << 23)) - 0.5f;
  accel_rocm_u32_t bits = two_w < (1u << 27) ? accel_rocm_f32_bits(denormalized)
                                             : accel_rocm_f32_bits(normalized);
  return accel_rocm_f32_from_bits(sign | bits);
}

ACCEL_ROCM_FN accel_rocm_u16_t accel_rocm_f32_to_f16(float f) {
  float a = f < 0 ? -f : f;
  float base = (a * 0x1.0p+112f) * 0x1.0p-110f;
  accel_rocm_u32_t w = accel_rocm_f32_bits(f);
  accel_rocm_u32_t shl1_w = w + w;
  accel_rocm_u32_t sign = w & 0x80000000u;
  accel_rocm_u32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  base = accel_rocm_f32_from_bits((bias >> 1) + 0x07800000u) + base;
  accel_rocm_u32_t bits = accel_rocm_f32_bits(base);
  accel_rocm_u32_t exp_bits = (bits >> 13) & 0x00007C00u;
  accel_rocm_u32_t mantissa_bits = bits & 0x00000FFFu;
  accel_rocm_u32_t nonsign = exp_bits + mantissa_bits;
  return (accel_rocm_u16_t)((sign >> 16) |
                            (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

ACCEL_ROCM_FN float accel_rocm_bf16_to_f32(accel_rocm_u16_t h) {
  return accel_rocm_f32_from_bits((accel_rocm_u32_t)h << 16);
}

ACCEL_ROCM_FN accel_rocm_u16_t accel_rocm_f32_to_bf16(float f) {
  accel_rocm_u32_t u = accel_rocm_f32_bits(f);
  accel_rocm_u32_t nan = (u >> 16) | 0x0040u;
  accel_rocm_u32_t rounded = (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
  return (accel_rocm_u16_t)((u & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
}

ACCEL_ROCM_FN accel_rocm_i32_t accel_rocm_f32_to_i32(float f) {
  if (f != f) return 0;
  if (f >= 2147483648.0f) return 2147483647;
  if (f <= -2147483648.0f) return -2147483647 - 1;
  return (accel_rocm_i32_t)f;
}

ACCEL_ROCM_FN accel_rocm_i32_t accel_rocm_f64_to_i32(double d) {
  if (d != d) return 0;
  if (d >= 2147483647.0) return 2147483647;
  if (d <= -2147483648.0) return -2147483647 - 1;
  return (accel_rocm_i32_t)d;
}

// Rounds `d` to f32 "to odd", so a second rounding to f16 or bf16 gives
// the correctly rounded value of `d` (no double-rounding error).
ACCEL_ROCM_FN float accel_rocm_f64_to_f32_odd(double d) {
  float f = (float)d;
  if (f != f || (double)f == d) return f;
  accel_rocm_u32_t u = accel_rocm_f32_bits(f);
  double ad = d < 0 ? -d : d;
  float af = f < 0 ? -f : f;
  if ((double)af > ad) u -= 1;
  return accel_rocm_f32_from_bits(u | 1u);
}

// Reads element `i` of `p` (of `dtype`) as f32; i32 rounds to nearest.
ACCEL_ROCM_FN float accel_rocm_load(const void* p, accel_rocm_u32_t dtype,
                                    accel_rocm_u64_t i) {
  switch (dtype) {
    case ACCEL_ROCM_F16:
      return accel_rocm_f16_to_f32(((const accel_rocm_u16_t*)p)[i]);
    case ACCEL_ROCM_BF16:
      return accel_rocm_bf16_to_f32(((const accel_rocm_u16_t*)p)[i]);
    case ACCEL_ROCM_I32:
      return (float)((const accel_rocm_i32_t*)p)[i];
    default:
      return ((const float*)p)[i];
  }
}

// Writes `v` as element `i` of `p` (of `dtype`), rounding as plugin.h says.
ACCEL_ROCM_FN void accel_rocm_store(void* p, accel_rocm_u32_t dtype,
                                    accel_rocm_u64_t i, float v) {
  switch (dtype) {
    case ACCEL_ROCM_F16:
      ((accel_rocm_u16_t*)p)[i] = accel_rocm_f32_to_f16(v);
      break;
    case ACCEL_ROCM_BF16:
      ((accel_rocm_u16_t*)p)[i] = accel_rocm_f32_to_bf16(v);
      break;
    case ACCEL_ROCM_I32:
      ((accel_rocm_i32_t*)p)[i] = accel_rocm_f32_to_i32(v);
      break;
    default:
      ((float*)p)[i] = v;
      break;
  }
}

// Writes `d` as element `i` of `p` with a single rounding.
ACCEL_ROCM_FN void accel_rocm_store_f64(void* p, accel_rocm_u32_t dtype,
                                        accel_rocm_u64_t i, double d) {
  switch (dtype) {
    case ACCEL_ROCM_F16:
      ((accel_rocm_u16_t*)p)[i] =
          accel_rocm_f32_to_f16(accel_rocm_f64_to_f32_odd(d));
      break;
    case ACCEL_ROCM_BF16:
      ((accel_rocm_u16_t*)p)[i] =
          accel_rocm_f32_to_bf16(accel_rocm_f64_to_f32_odd(d));
      break;
    case ACCEL_ROCM_I32:
      ((accel_rocm_i32_t*)p)[i] = accel_rocm_f64_to_i32(d);
      break;
    default:
      ((float*)p)[i] = (float)d;
      break;
  }
}

// ---------------------------------------------------------------------------
// One element of each op
// ---------------------------------------------------------------------------

ACCEL_ROCM_FN void accel_rocm_fill_at(const accel_rocm_op_args_t* a,
                                      accel_rocm_u64_t i) {
  accel_rocm_store_f64(a->z, a->dtype, i, a->value);
}

ACCEL_ROCM_FN void accel_rocm_cast_at(const accel_rocm_op_args_t* a,
                                      accel_rocm_u64_t i) {
  if (a->dtype == a->src_dtype) {
    if (a->dtype == ACCEL_ROCM_F16 || a->dtype == ACCEL_ROCM_BF16) {
      ((accel_rocm_u16_t*)a->z)[i] = ((const accel_rocm_u16_t*)a->x)[i];
    } else {
      ((accel_rocm_u32_t*)a->z)[i] = ((const accel_rocm_u32_t*)a->x)[i];
    }
  } else if (a->src_dtype == ACCEL_ROCM_I32) {
    // One rounding straight from the integer (via f32 it could be two).
    accel_rocm_store_f64(a->z, a->dtype, i,
                         (double)((const accel_rocm_i32_t*)a->x)[i]);
  } else {
    // f16, bf16 to f32 are exact; f32 to the destination is one rounding.
    accel_rocm_store(a->z, a->dtype, i, accel_rocm_load(a->x, a->src_dtype, i));
  }
}

ACCEL_ROCM_FN void accel_rocm_ewise_at(const accel_rocm_op_args_t* a,
                                       accel_rocm_u64_t i) {
  if (a->dtype == ACCEL_ROCM_I32) {
    // Unsigned arithmetic wraps modulo 2^32 without undefined behaviour.
    const accel_rocm_u32_t* x = (const accel_rocm_u32_t*)a->x;
    const accel_rocm_u32_t* y = (const accel_rocm_u32_t*)a->y;
    accel_rocm_u32_t* z = (accel_rocm_u32_t*)a->z;
    z[i] = a->op == ACCEL_ROCM_OP_ADD ? x[i] + y[i] : x[i] * y[i];
    return;
  }
  float alpha = (float)a->value;
  float r;
  switch (a->op) {
    case ACCEL_ROCM_OP_SCALE:
      r = alpha * accel_rocm_load(a->z, a->dtype, i);
      break;
    case ACCEL_ROCM_OP_AXPY:
      r = alpha * accel_rocm_load(a->x, a->dtype, i) +
          accel_rocm_load(a->z, a->dtype, i);
      break;
    case ACCEL_ROCM_OP_ADD:
      r = accel_rocm_load(a->x, a->dtype, i) +
          accel_rocm_load(a->y, a->dtype, i);
      break;
    default:  // MUL
      r = accel_rocm_load(a->x, a->dtype, i) *
          accel_rocm_load(a->y, a->dtype, i);
      break;
  }
  accel_rocm_store(a->z, a->dtype, i, r);
}

// Elements the sum's first pass gives each of its `blocks` blocks.
ACCEL_ROCM_FN accel_rocm_u64_t
accel_rocm_sum_chunk(const accel_rocm_op_args_t* a) {
  return (a->count + a->blocks - 1) / a->blocks;
}

// Stores the second pass's total (`f` for floats, `s` for i32).
ACCEL_ROCM_FN void accel_rocm_sum_store(const accel_rocm_op_args_t* a, double f,
                                        accel_rocm_i64_t s) {
  if (a->dtype == ACCEL_ROCM_I32) {
    ((accel_rocm_u32_t*)a->z)[0] = (accel_rocm_u32_t)(accel_rocm_u64_t)s;
  } else {
    accel_rocm_store_f64(a->z, a->dtype, 0, f);
  }
}

// ---------------------------------------------------------------------------
// GEMM elements
// ---------------------------------------------------------------------------

// op(A)[row][col] as f32 (0 outside the matrix).
ACCEL_ROCM_FN float accel_rocm_gemm_a(const accel_rocm_gemm_args_t* g,
                                      accel_rocm_u64_t row,
                                      accel_rocm_u64_t col) {
  if (row >= g->m || col >= g->k) return 0.0f;
  accel_rocm_u64_t at = g->trans_a ? col * g->lda + row : row * g->lda + col;
  return accel_rocm_load(g->a, g->ab_dtype, at);
}

// op(B)[row][col] as f32 (0 outside the matrix).
ACCEL_ROCM_FN float accel_rocm_gemm_b(const accel_rocm_gemm_args_t* g,
                                      accel_rocm_u64_t row,
                                      accel_rocm_u64_t col) {
  if (row >= g->k || col >= g->n) return 0.0f;
  accel_rocm_u64_t at = g->trans_b ? col * g->ldb + row : row * g->ldb + col;
  return accel_rocm_load(g->b, g->ab_dtype, at);
}

// Writes C[row][col] = alpha * acc + beta * C[row][col]; with beta 0 the
// old C is not read, so NaN there does not propagate.
ACCEL_ROCM_FN void accel_rocm_gemm_store(const accel_rocm_gemm_args_t* g,
                                         accel_rocm_u64_t row,
                                         accel_rocm_u64_t col, float acc) {
  accel_rocm_u64_t at = row * g->ldc + col;
  float r = g->alpha * acc;
  if (g->beta != 0.0f) r += g->beta * accel_rocm_load(g->c, g->c_dtype, at);
  accel_rocm_store(g->c, g->c_dtype, at, r);
}

// ---------------------------------------------------------------------------
// Activations, bias-add and batched GEMM (ABI 1.4)
// ---------------------------------------------------------------------------

// Activations of accel_rocm_unary (accel_plugin_unary_op_t).
#define ACCEL_ROCM_UNARY_RELU 0u
#define ACCEL_ROCM_UNARY_GELU 1u
#define ACCEL_ROCM_UNARY_SILU 2u

// The one parameter of accel_rocm_unary and accel_rocm_bias_add.
typedef struct accel_rocm_nn_args {
  void* z;        // output (y for bias-add)
  const void* x;  // input (the bias row for bias-add)
  accel_rocm_u64_t count;  // elements of z (rows * cols for bias-add)
  accel_rocm_u64_t cols;   // bias-add: elements per row
  accel_rocm_u32_t dtype;
  accel_rocm_u32_t op;  // unary: the activation
} accel_rocm_nn_args_t;

// z[i] = act(x[i]) in f32, rounded once on store. GELU as
// x * erfc(-x / sqrt(2)) / 2 (the exact form, without the cancellation of
// 1 + erf for negative x), SiLU as x / (1 + exp(-x)); ReLU passes -0 and
// NaN through.
ACCEL_ROCM_FN void accel_rocm_unary_at(const accel_rocm_nn_args_t* a,
                                       accel_rocm_u64_t i) {
  float v = accel_rocm_load(a->x, a->dtype, i), r;
  if (a->op == ACCEL_ROCM_UNARY_GELU) {
    r = 0.5f * v * erfcf(-v * 0.70710678f);
  } else if (a->op == ACCEL_ROCM_UNARY_SILU) {
    r = v / (1.0f + expf(-v));
  } else {
    r = v < 0.0f ? 0.0f : v;
  }
  accel_rocm_store(a->z, a->dtype, i, r);
}

// y[i] += bias[i % cols]: f32 add rounded once, I32 wrapping.
ACCEL_ROCM_FN void accel_rocm_bias_add_at(const accel_rocm_nn_args_t* a,
                                          accel_rocm_u64_t i) {
  accel_rocm_u64_t c = i % a->cols;
  if (a->dtype == ACCEL_ROCM_I32) {
    ((accel_rocm_u32_t*)a->z)[i] += ((const accel_rocm_u32_t*)a->x)[c];
    return;
  }
  accel_rocm_store(a->z, a->dtype, i,
                   accel_rocm_load(a->z, a->dtype, i) +
                       accel_rocm_load(a->x, a->dtype, c));
}

// The one parameter of accel_rocm_gemm_batched: `count` GEMMs of `g`,
// member i's A, B and C `stride_*` bytes after member i - 1's.
typedef struct accel_rocm_gemm_batch_args {
  accel_rocm_gemm_args_t g;
  accel_rocm_u64_t count;
  accel_rocm_u64_t stride_a, stride_b, stride_c;  // bytes
} accel_rocm_gemm_batch_args_t;

// The GEMM of member `i` of `b`.
ACCEL_ROCM_FN accel_rocm_gemm_args_t
accel_rocm_gemm_member(const accel_rocm_gemm_batch_args_t* b,
                       accel_rocm_u64_t i) {
  accel_rocm_gemm_args_t g = b->g;
  g.a = (const unsigned char*)g.a + i * b->stride_a;
  g.b = (const unsigned char*)g.b + i * b->stride_b;
  g.c = (unsigned char*)g.c + i * b->stride_c;
  return g;
}

// ---------------------------------------------------------------------------
// Random fills (op_rng, ABI 1.3)
// ---------------------------------------------------------------------------

// The element code is <accel/philox.h>, the same for every backend. The
// hiprtc source has it in front of this file, so it is included only when
// not already there.
#ifndef ACCEL_PHILOX_H_
#include "accel/philox.h"
#endif

// The one parameter of accel_rocm_rng.
typedef struct accel_rocm_rng_args {
  void* z;
  accel_rocm_u64_t count;
  accel_rocm_u64_t seed;
  accel_rocm_u64_t offset;
  accel_rocm_u32_t distribution;
  accel_rocm_u32_t dtype;
  float a, b;
} accel_rocm_rng_args_t;

// Writes the (up to) four elements of Philox block `k`.
ACCEL_ROCM_FN void accel_rocm_rng_block(const accel_rocm_rng_args_t* r,
                                        accel_rocm_u64_t k) {
  accel_philox_block_t block = accel_philox_at(r->seed, r->offset, k);
  for (accel_rocm_u32_t j = 0; j < 4u && k * 4u + j < r->count; j++) {
    accel_rocm_u32_t v =
        accel_philox_element(block, j, r->distribution, r->dtype, r->a, r->b);
    if (r->dtype == ACCEL_ROCM_F16 || r->dtype == ACCEL_ROCM_BF16) {
      ((accel_rocm_u16_t*)r->z)[k * 4u + j] = (accel_rocm_u16_t)v;
    } else {
      ((accel_rocm_u32_t*)r->z)[k * 4u + j] = v;
    }
  }
}

#endif  // ACCEL_PLUGINS_ROCM_KERNELS_OPS_IMPL_H_
