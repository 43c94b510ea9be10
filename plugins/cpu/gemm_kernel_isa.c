// SPDX-License-Identifier: MIT
//
// The own GEMM engine's micro-kernels, transposing tiles, row packing and
// tile stores, one set per ISA, and the choice of the set this CPU runs
// (gemm_kernel.c has the rest of the engine). Each function is compiled
// for its ISA with a target attribute, so the plugin still loads on any
// x86-64 (and builds off x86-64, where the engine is never available).
#include <stdio.h>
#include <string.h>

#include "gemm_kernel.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define ACCEL_CPU_GK_X86 1
#endif

#if ACCEL_CPU_GK_X86
// One element of `dtype` at `p` as f32.
static inline float accel_cpu_gk_elem(const unsigned char* p, uint32_t dtype) {
  uint16_t h;
  switch (dtype) {
    case ACCEL_DTYPE_F16:
      memcpy(&h, p, 2);
      return accel_cpu_f16_to_f32(h);
    case ACCEL_DTYPE_BF16:
      memcpy(&h, p, 2);
      return accel_cpu_bf16_to_f32(h);
    default: {
      float f;
      memcpy(&f, p, 4);
      return f;
    }
  }
}

// One row of the AVX-512 tile: broadcast A[i][k], two FMAs.
#define ACCEL_CPU_GK_ROW16(i)                                      \
  do {                                                             \
    __m512 a_ = _mm512_set1_ps(ap[(i) * 512u + k]);                \
    c##i##_0 = _mm512_fmadd_ps(a_, b0, c##i##_0);                  \
    c##i##_1 = _mm512_fmadd_ps(a_, b1, c##i##_1);                  \
  } while (0)
#define ACCEL_CPU_GK_STORE16(i)                          \
  do {                                                   \
    _mm512_store_ps(acc + (i) * 32u, c##i##_0);          \
    _mm512_store_ps(acc + (i) * 32u + 16u, c##i##_1);    \
  } while (0)

__attribute__((target("avx512f"))) static void accel_cpu_gk_avx512(
    uint64_t kc, const float* restrict ap, const float* restrict bp,
    float* restrict acc) {
  __m512 c0_0 = _mm512_setzero_ps(), c0_1 = c0_0, c1_0 = c0_0, c1_1 = c0_0;
  __m512 c2_0 = c0_0, c2_1 = c0_0, c3_0 = c0_0, c3_1 = c0_0, c4_0 = c0_0;
  __m512 c4_1 = c0_0, c5_0 = c0_0, c5_1 = c0_0, c6_0 = c0_0, c6_1 = c0_0;
  __m512 c7_0 = c0_0, c7_1 = c0_0, c8_0 = c0_0, c8_1 = c0_0, c9_0 = c0_0;
  __m512 c9_1 = c0_0, c10_0 = c0_0, c10_1 = c0_0, c11_0 = c0_0;
  __m512 c11_1 = c0_0;
  for (uint64_t k = 0; k < kc; k++) {
    __m512 b0 = _mm512_load_ps(bp + k * 32u);
    __m512 b1 = _mm512_load_ps(bp + k * 32u + 16u);
    ACCEL_CPU_GK_ROW16(0);
    ACCEL_CPU_GK_ROW16(1);
    ACCEL_CPU_GK_ROW16(2);
    ACCEL_CPU_GK_ROW16(3);
    ACCEL_CPU_GK_ROW16(4);
    ACCEL_CPU_GK_ROW16(5);
    ACCEL_CPU_GK_ROW16(6);
    ACCEL_CPU_GK_ROW16(7);
    ACCEL_CPU_GK_ROW16(8);
    ACCEL_CPU_GK_ROW16(9);
    ACCEL_CPU_GK_ROW16(10);
    ACCEL_CPU_GK_ROW16(11);
  }
  ACCEL_CPU_GK_STORE16(0);
  ACCEL_CPU_GK_STORE16(1);
  ACCEL_CPU_GK_STORE16(2);
  ACCEL_CPU_GK_STORE16(3);
  ACCEL_CPU_GK_STORE16(4);
  ACCEL_CPU_GK_STORE16(5);
  ACCEL_CPU_GK_STORE16(6);
  ACCEL_CPU_GK_STORE16(7);
  ACCEL_CPU_GK_STORE16(8);
  ACCEL_CPU_GK_STORE16(9);
  ACCEL_CPU_GK_STORE16(10);
  ACCEL_CPU_GK_STORE16(11);
}

// One row of the AVX2 tile.
#define ACCEL_CPU_GK_ROW8(i)                                   \
  do {                                                         \
    __m256 a_ = _mm256_broadcast_ss(ap + (i) * stride + k);    \
    c##i##_0 = _mm256_fmadd_ps(a_, b0, c##i##_0);              \
    c##i##_1 = _mm256_fmadd_ps(a_, b1, c##i##_1);              \
  } while (0)
#define ACCEL_CPU_GK_STORE8(i)                          \
  do {                                                  \
    _mm256_store_ps(acc + (i) * 16u, c##i##_0);         \
    _mm256_store_ps(acc + (i) * 16u + 8u, c##i##_1);    \
  } while (0)

// The AVX2 kernel for A slivers whose rows are `stride` floats apart (the
// entry's kc); each entry below passes a constant.
__attribute__((target("avx2,fma"), always_inline)) static inline void
accel_cpu_gk_avx2_at(uint64_t kc, const float* restrict ap,
                     const float* restrict bp, float* restrict acc,
                     uint32_t stride) {
  __m256 c0_0 = _mm256_setzero_ps(), c0_1 = c0_0, c1_0 = c0_0, c1_1 = c0_0;
  __m256 c2_0 = c0_0, c2_1 = c0_0, c3_0 = c0_0, c3_1 = c0_0, c4_0 = c0_0;
  __m256 c4_1 = c0_0, c5_0 = c0_0, c5_1 = c0_0;
  for (uint64_t k = 0; k < kc; k++) {
    __m256 b0 = _mm256_load_ps(bp + k * 16u);
    __m256 b1 = _mm256_load_ps(bp + k * 16u + 8u);
    ACCEL_CPU_GK_ROW8(0);
    ACCEL_CPU_GK_ROW8(1);
    ACCEL_CPU_GK_ROW8(2);
    ACCEL_CPU_GK_ROW8(3);
    ACCEL_CPU_GK_ROW8(4);
    ACCEL_CPU_GK_ROW8(5);
  }
  ACCEL_CPU_GK_STORE8(0);
  ACCEL_CPU_GK_STORE8(1);
  ACCEL_CPU_GK_STORE8(2);
  ACCEL_CPU_GK_STORE8(3);
  ACCEL_CPU_GK_STORE8(4);
  ACCEL_CPU_GK_STORE8(5);
}

__attribute__((target("avx2,fma"))) static void accel_cpu_gk_avx2(
    uint64_t kc, const float* restrict ap, const float* restrict bp,
    float* restrict acc) {
  accel_cpu_gk_avx2_at(kc, ap, bp, acc, 256u);
}

__attribute__((target("avx2,fma"))) static void accel_cpu_gk_avx2_k512(
    uint64_t kc, const float* restrict ap, const float* restrict bp,
    float* restrict acc) {
  accel_cpu_gk_avx2_at(kc, ap, bp, acc, 512u);
}

#define ACCEL_CPU_GK_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))

// `cols` (<= 16) elements of `dtype` at `p` as 16 floats, zeros after.
ACCEL_CPU_GK_AVX512 static inline __m512 accel_cpu_gk_load16(
    const unsigned char* p, uint32_t dtype, uint32_t cols) {
  __mmask16 m = (__mmask16)((1u << cols) - 1u);
  if (dtype == ACCEL_DTYPE_F16) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  }
  if (dtype == ACCEL_DTYPE_BF16) {
    __m512i w = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
  return _mm512_maskz_loadu_ps(m, p);
}

// The 16 x 16 transpose in four rounds: round b swaps the off-diagonal
// b x b blocks of every 2b x 2b block (rows x and x + b, lanes by b).
ACCEL_CPU_GK_AVX512 static void accel_cpu_gk_tile16(
    const unsigned char* src, size_t stride, uint32_t dtype, uint32_t rows,
    uint32_t cols, float* dst, size_t dst_stride, uint32_t dst_rows,
    uint32_t len) {
  __m512 r[16];
  for (uint32_t x = 0; x < 16; x++) {
    r[x] = x < rows ? accel_cpu_gk_load16(src + x * stride, dtype, cols)
                    : _mm512_setzero_ps();
  }
  // Lane l of round b's first output: row x's lane l where l's b-block is
  // even, else row x + b's lane l - b (index 16 + ...); the second: row
  // x's lane l + b, or row x + b's lane l.
  static const int32_t lo[4][16] = {
      {0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23},
      {0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27},
      {0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29},
      {0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30}};
  static const int32_t hi[4][16] = {
      {8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31},
      {4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31},
      {2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31},
      {1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31}};
  for (uint32_t round = 0, b = 8; round < 4; round++, b /= 2) {
    __m512i ilo = _mm512_loadu_si512(lo[round]);
    __m512i ihi = _mm512_loadu_si512(hi[round]);
    for (uint32_t base = 0; base < 16; base += 2 * b) {
      for (uint32_t y = base; y < base + b; y++) {
        __m512 a = r[y], c = r[(y + b) & 15u];
        r[y] = _mm512_permutex2var_ps(a, ilo, c);
        r[(y + b) & 15u] = _mm512_permutex2var_ps(a, ihi, c);
      }
    }
  }
  __mmask16 m = (__mmask16)((1u << len) - 1u);
  for (uint32_t x = 0; x < dst_rows; x++) {
    _mm512_mask_storeu_ps(dst + x * dst_stride, m, r[x]);
  }
}

// Row by row, each row's slivers in turn: memory is read in order, and
// the conversion runs in registers (a call per sliver's row through
// accel_cpu_to_f32_block cost 10% of an f16 product at 1024^3).
ACCEL_CPU_GK_AVX512 static void accel_cpu_gk_rows16(
    const unsigned char* src, size_t stride, uint32_t dtype, uint32_t kc,
    uint32_t nq, float* dst) {
  const size_t es = dtype == ACCEL_DTYPE_F32 ? 4 : 2;
  const uint32_t end = (nq + 31u) / 32u * 32u;  // the last sliver's end
  for (uint32_t k = 0; k < kc; k++) {
    const unsigned char* row = src + k * stride;
    float* d = dst + (size_t)k * 32u;
    for (uint32_t x = 0; x < end; x += 16) {
      float* o = d + (size_t)(x / 32u) * kc * 32u + x % 32u;
      if (x + 16 <= nq) {
        _mm512_store_ps(o, accel_cpu_gk_load16(row + x * es, dtype, 16));
      } else {
        _mm512_store_ps(o, x < nq ? accel_cpu_gk_load16(row + x * es, dtype,
                                                        nq - x)
                                  : _mm512_setzero_ps());
      }
    }
  }
}

// The tile's rows a vector at a time (loops per row in the SSE2 baseline,
// and a call per row to round into f16: the store took 11% of an f16
// product at 1024^3, with its waits for the f32 tile).
ACCEL_CPU_GK_AVX512 static void accel_cpu_gk_store16(
    const float* acc, uint32_t mv, uint32_t nv, const accel_cpu_gk_out_t* o) {
  const __m512 alpha = _mm512_set1_ps(o->alpha);
  const __m512 beta = _mm512_set1_ps(o->beta);
  const bool f32 = o->dtype == ACCEL_DTYPE_F32;
  const bool scale_c = o->first && o->beta != 0.0f;
  const size_t es = f32 ? 4 : 2;
  for (uint32_t i = 0; i < mv; i++) {
    unsigned char* c = o->c + i * o->ldc;
    float* r32 = o->c32 != NULL ? o->c32 + i * o->ld32 : NULL;
    for (uint32_t x = 0; x < nv; x += 16) {
      const uint32_t n = nv - x < 16 ? nv - x : 16;
      const __mmask16 m = (__mmask16)((1u << n) - 1u);
      const __m512 t = _mm512_load_ps(acc + (size_t)i * 32u + x);
      unsigned char* cx = c + x * es;
      __m512 v;
      if (!o->first) {  // f32: C itself holds the partial sums
        const float* p = f32 ? (const float*)cx : r32 + x;
        v = _mm512_fmadd_ps(alpha, t,
                            n == 16 ? _mm512_loadu_ps(p)
                                    : _mm512_maskz_loadu_ps(m, p));
      } else if (scale_c) {
        v = _mm512_fmadd_ps(beta, accel_cpu_gk_load16(cx, o->dtype, n),
                            _mm512_mul_ps(alpha, t));
      } else {
        v = _mm512_mul_ps(alpha, t);
      }
      if (f32 || !o->last) {  // into C, or into the f32 partial sums
        float* d = f32 ? (float*)cx : r32 + x;
        if (n == 16) {
          _mm512_storeu_ps(d, v);
        } else {
          _mm512_mask_storeu_ps(d, m, v);
        }
      } else if (o->dtype == ACCEL_DTYPE_F16) {
        _mm256_mask_storeu_epi16(
            cx, m,
            _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      } else {
        float row[16];
        _mm512_storeu_ps(row, v);
        accel_cpu_from_f32_block(cx, row, o->dtype, n);
      }
    }
  }
}

#define ACCEL_CPU_GK_AVX2 __attribute__((target("avx2,fma,f16c")))

// `cols` (<= 8) elements of `dtype` at `p` as 8 floats, zeros after (AVX2
// has no 16-bit masked load: a short row goes through the stack).
ACCEL_CPU_GK_AVX2 static inline __m256 accel_cpu_gk_load8(
    const unsigned char* p, uint32_t dtype, uint32_t cols) {
  if (cols < 8) {
    float t[8] = {0};
    size_t es = dtype == ACCEL_DTYPE_F32 ? 4 : 2;
    for (uint32_t i = 0; i < cols; i++) t[i] = accel_cpu_gk_elem(p + i * es, dtype);
    return _mm256_loadu_ps(t);
  }
  if (dtype == ACCEL_DTYPE_F16) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i*)p));
  }
  if (dtype == ACCEL_DTYPE_BF16) {
    __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i*)p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  return _mm256_loadu_ps((const float*)p);
}

// The classic 8 x 8 transpose: unpack pairs, shuffle quads, swap halves.
ACCEL_CPU_GK_AVX2 static void accel_cpu_gk_tile8(
    const unsigned char* src, size_t stride, uint32_t dtype, uint32_t rows,
    uint32_t cols, float* dst, size_t dst_stride, uint32_t dst_rows,
    uint32_t len) {
  __m256 r[8], t[8], q[8];
  for (uint32_t x = 0; x < 8; x++) {
    r[x] = x < rows ? accel_cpu_gk_load8(src + x * stride, dtype, cols)
                    : _mm256_setzero_ps();
  }
  for (uint32_t x = 0; x < 8; x += 2) {
    t[x] = _mm256_unpacklo_ps(r[x], r[x + 1]);
    t[x + 1] = _mm256_unpackhi_ps(r[x], r[x + 1]);
  }
  for (uint32_t x = 0; x < 8; x += 4) {
    q[x] = _mm256_shuffle_ps(t[x], t[x + 2], _MM_SHUFFLE(1, 0, 1, 0));
    q[x + 1] = _mm256_shuffle_ps(t[x], t[x + 2], _MM_SHUFFLE(3, 2, 3, 2));
    q[x + 2] = _mm256_shuffle_ps(t[x + 1], t[x + 3], _MM_SHUFFLE(1, 0, 1, 0));
    q[x + 3] = _mm256_shuffle_ps(t[x + 1], t[x + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (uint32_t x = 0; x < 4; x++) {
    r[x] = _mm256_permute2f128_ps(q[x], q[x + 4], 0x20);
    r[x + 4] = _mm256_permute2f128_ps(q[x], q[x + 4], 0x31);
  }
  __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)len),
                                 _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  for (uint32_t x = 0; x < dst_rows; x++) {
    _mm256_maskstore_ps(dst + x * dst_stride, m, r[x]);
  }
}

// accel_cpu_gk_rows16's AVX2 twin, slivers of 16 columns.
ACCEL_CPU_GK_AVX2 static void accel_cpu_gk_rows8(const unsigned char* src,
                                                 size_t stride, uint32_t dtype,
                                                 uint32_t kc, uint32_t nq,
                                                 float* dst) {
  const size_t es = dtype == ACCEL_DTYPE_F32 ? 4 : 2;
  const uint32_t end = (nq + 15u) / 16u * 16u;
  for (uint32_t k = 0; k < kc; k++) {
    const unsigned char* row = src + k * stride;
    float* d = dst + (size_t)k * 16u;
    for (uint32_t x = 0; x < end; x += 8) {
      float* o = d + (size_t)(x / 16u) * kc * 16u + x % 16u;
      _mm256_store_ps(o, x < nq ? accel_cpu_gk_load8(row + x * es, dtype,
                                                     nq - x < 8 ? nq - x : 8)
                                : _mm256_setzero_ps());
    }
  }
}

// accel_cpu_gk_store16's AVX2 twin (a short row of 16-bit values goes
// through the stack: AVX2 has no 16-bit masked load or store; whole
// vectors are stored unmasked, VMASKMOVPS to memory being slow on AMD).
ACCEL_CPU_GK_AVX2 static void accel_cpu_gk_store8(const float* acc,
                                                  uint32_t mv, uint32_t nv,
                                                  const accel_cpu_gk_out_t* o) {
  const __m256 alpha = _mm256_set1_ps(o->alpha);
  const __m256 beta = _mm256_set1_ps(o->beta);
  const bool f32 = o->dtype == ACCEL_DTYPE_F32;
  const bool scale_c = o->first && o->beta != 0.0f;
  const size_t es = f32 ? 4 : 2;
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (uint32_t i = 0; i < mv; i++) {
    unsigned char* c = o->c + i * o->ldc;
    float* r32 = o->c32 != NULL ? o->c32 + i * o->ld32 : NULL;
    for (uint32_t x = 0; x < nv; x += 8) {
      const uint32_t n = nv - x < 8 ? nv - x : 8;
      const __m256i m = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), lane);
      const __m256 t = _mm256_load_ps(acc + (size_t)i * 16u + x);
      unsigned char* cx = c + x * es;
      __m256 v;
      if (!o->first) {
        const float* p = f32 ? (const float*)cx : r32 + x;
        v = _mm256_fmadd_ps(alpha, t,
                            n == 8 ? _mm256_loadu_ps(p)
                                   : _mm256_maskload_ps(p, m));
      } else if (scale_c) {
        v = _mm256_fmadd_ps(beta, accel_cpu_gk_load8(cx, o->dtype, n),
                            _mm256_mul_ps(alpha, t));
      } else {
        v = _mm256_mul_ps(alpha, t);
      }
      if (f32 || !o->last) {  // into C, or into the f32 partial sums
        float* d = f32 ? (float*)cx : r32 + x;
        if (n == 8) {
          _mm256_storeu_ps(d, v);
        } else {
          _mm256_maskstore_ps(d, m, v);
        }
      } else if (o->dtype == ACCEL_DTYPE_F16 && n == 8) {
        _mm_storeu_si128(
            (__m128i*)cx,
            _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
      } else {
        float row[8];
        _mm256_storeu_ps(row, v);
        accel_cpu_from_f32_block(cx, row, o->dtype, n);
      }
    }
  }
}

static const accel_cpu_gk_isa_t accel_cpu_gk_isas[] = {
    {"avx512-12x32", 12, 32, 512, 256, 16, accel_cpu_gk_avx512,
     accel_cpu_gk_tile16, accel_cpu_gk_rows16, accel_cpu_gk_store16},
    {"avx2-6x16", 6, 16, 256, 256, 8, accel_cpu_gk_avx2, accel_cpu_gk_tile8,
     accel_cpu_gk_rows8, accel_cpu_gk_store8},
    {"avx2-6x16-k512", 6, 16, 512, 256, 8, accel_cpu_gk_avx2_k512,
     accel_cpu_gk_tile8, accel_cpu_gk_rows8, accel_cpu_gk_store8},
};

// The AVX2 entry for this CPU's L2: k blocks of 512 where half the L2
// holds the 512 KiB B block they make (512 x 256 floats), else of 256.
// With 512, C is added to and A's slivers are packed half as often: on
// the Zen 5 guest with AVX2 code only (1 MiB L2), f32 and f16 products
// at 1024^3 and 2048^3 ran 5-12% faster than with 256, alternating
// product by product (docs/performance.md). A CPU with a smaller L2 (256-512 KiB) keeps 256;
// 512 was never measured there.
static int accel_cpu_gk_avx2_entry(void) {
  return accel_cpu_gk_half_l2() >= (size_t)512 * 256 * sizeof(float) ? 2 : 1;
}
#endif  // ACCEL_CPU_GK_X86

// Kernels in the order they are preferred, each with what it needs.
static bool accel_cpu_gk_runs(int index) {
#if ACCEL_CPU_GK_X86
  __builtin_cpu_init();
  if (index == 0) {
    return __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
  }
  // F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports
  // does not know "f16c". Every AVX2 CPU has it.
  unsigned a, b, c, d;
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
#else
  (void)index;
  return false;
#endif
}

const accel_cpu_gk_isa_t* accel_cpu_gk_choose(const char* limit, char* why,
                                              size_t size) {
#if ACCEL_CPU_GK_X86
  int first = 0;
  bool k256 = false;  // the AVX2 kernel's k blocks of 256 whatever the L2
  if (limit != NULL && limit[0] != '\0') {
    if (strcmp(limit, "avx512") == 0) {
      first = 0;
    } else if (strcmp(limit, "avx2") == 0) {
      first = 1;
    } else if (strcmp(limit, "avx2-k256") == 0) {
      first = 1;
      k256 = true;
    } else {
      snprintf(why, size,
               "ACCEL_CPU_GEMM_ISA='%.40s' is not avx512, avx2 or avx2-k256",
               limit);
      return NULL;
    }
  }
  for (int i = first; i < 2; i++) {
    if (accel_cpu_gk_runs(i)) {
      int entry = i == 0 ? 0 : k256 ? 1 : accel_cpu_gk_avx2_entry();
      return &accel_cpu_gk_isas[entry];
    }
  }
  snprintf(why, size, "the own kernel needs %s",
           first == 0 ? "AVX-512F/BW/VL, or AVX2, FMA and F16C"
                      : "AVX2, FMA and F16C");
#else
  (void)limit;
  snprintf(why, size, "the own kernel needs an x86-64 CPU with AVX2");
#endif
  return NULL;
}

const char* accel_cpu_gk_name(const accel_cpu_gk_isa_t* isa) {
  return isa->name;
}

