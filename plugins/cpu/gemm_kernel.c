// SPDX-License-Identifier: MIT
//
// The plugin's own GEMM engine, "accel": packed panels and a register-
// blocked micro-kernel, the way BLIS and OpenBLAS are built, with one
// difference that is the reason it exists: f16 and bf16 operands are
// converted to f32 while they are packed, so a half GEMM reads 2 bytes per
// element once and never writes an f32 copy of A or B to memory. The other
// engines need that copy (none of the Debian libraries multiplies f16 on a
// CPU without AMX), and on a 2-vCPU Emerald Rapids guest it cost 11% at
// 1024^3: the conversion runs at memory speed while the product runs from
// cache (docs/performance.md). Accumulation is f32 throughout, as on the
// other engines; C is rounded once.
//
// Micro-kernels (the first this CPU runs, from CPUID, at most the one
// ACCEL_CPU_GEMM_ISA names):
//   AVX-512    12 rows x 32 columns: 24 zmm accumulators, k blocks of 512
//              (F, and BW and VL for the 16-bit masked loads of packing)
//   AVX2+FMA    6 rows x 16 columns: 12 ymm accumulators, k blocks of 256
// Each step of k broadcasts one element of each of the tile's rows of op(A)
// and multiplies two vectors of a row of op(B). Without either ISA (or off
// x86-64) the engine is not available and the timing never sees it.
//
// Blocking (per task): op(B) in blocks of kc rows x nq columns, converted
// into slivers of NR columns, k-major (the block stays in L2: 512 KiB with
// AVX-512, 256 KiB with AVX2); op(A) in slivers of MR rows x kc with a
// fixed row stride, packed eight at a time (192 KiB, L2), each used
// against every sliver of the B block. An operand stored across that
// layout (a transposed A or B) goes through a W x W tile transposed in
// registers. C is written once per k block: f32 C accumulates
// in place (the first block applies beta); an f16/bf16 C with one k block
// (k <= kc) is rounded straight from the registers' tile; with more, the
// block's rows accumulate in an f32 tile of at most ACCEL_CPU_GK_MC rows
// and are rounded after the last block.
//
// Threads: the product is split into one task per pool thread, by
// columns of C (whole slivers) when there are enough of them, else by
// rows; each task packs its own B block and its own A slivers, so tasks
// share nothing but the inputs. Below ACCEL_CPU_GEMM_SPLIT_FLOPS
// multiply-adds the product runs on the calling thread.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define ACCEL_CPU_GK_X86 1
#endif

// Rows of C per f32 accumulation tile when an f16/bf16 C takes several k
// blocks (the tile is ACCEL_CPU_GK_MC x nq floats: 1 MiB with AVX-512).
#define ACCEL_CPU_GK_MC 1024u
// A slivers packed at a time (a transposed A is read across them).
#define ACCEL_CPU_GK_SLIVERS 8u
// Largest micro-tile of any kernel (for the stack buffers).
#define ACCEL_CPU_GK_TILE_MAX (12u * 32u)

// acc[MR * NR] = op(A) sliver x op(B) sliver over `kc` steps: `ap` holds
// MR rows of the A sliver at the ISA's row stride (its kc), `bp` holds kc
// rows of NR floats.
typedef void (*accel_cpu_gk_fn_t)(uint64_t kc, const float* restrict ap,
                                  const float* restrict bp,
                                  float* restrict acc);

// Transposes while converting, for the operands stored across the packed
// layout (a transposed A, a transposed B): reads `rows` (<= W) rows of
// `cols` (<= W) elements of `dtype`, `stride` bytes apart from `src`, as a
// W x W tile of f32 (zeros outside), and stores its first `dst_rows`
// columns as rows `dst_stride` floats apart at `dst`, `len` floats each.
// W is the ISA's vector width in floats (16 or 8).
typedef void (*accel_cpu_gk_tile_fn_t)(const unsigned char* src,
                                       size_t stride, uint32_t dtype,
                                       uint32_t rows, uint32_t cols,
                                       float* dst, size_t dst_stride,
                                       uint32_t dst_rows, uint32_t len);

struct accel_cpu_gk_isa {
  const char* name;  // for the engine cache key and the log
  uint32_t mr, nr;   // micro-tile: rows (broadcast), columns (vectors)
  uint32_t kc;       // k per block, and the row stride of a packed A sliver
  uint32_t nq;       // columns of op(B) per packed block
  uint32_t width;    // floats per vector: the transposing tile's W
  accel_cpu_gk_fn_t kernel;
  accel_cpu_gk_tile_fn_t tile;
};

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

#if ACCEL_CPU_GK_X86
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
    __m256 a_ = _mm256_broadcast_ss(ap + (i) * 256u + k);      \
    c##i##_0 = _mm256_fmadd_ps(a_, b0, c##i##_0);              \
    c##i##_1 = _mm256_fmadd_ps(a_, b1, c##i##_1);              \
  } while (0)
#define ACCEL_CPU_GK_STORE8(i)                          \
  do {                                                  \
    _mm256_store_ps(acc + (i) * 16u, c##i##_0);         \
    _mm256_store_ps(acc + (i) * 16u + 8u, c##i##_1);    \
  } while (0)

__attribute__((target("avx2,fma"))) static void accel_cpu_gk_avx2(
    uint64_t kc, const float* restrict ap, const float* restrict bp,
    float* restrict acc) {
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

static const accel_cpu_gk_isa_t accel_cpu_gk_isas[] = {
    {"avx512-12x32", 12, 32, 512, 256, 16, accel_cpu_gk_avx512,
     accel_cpu_gk_tile16},
    {"avx2-6x16", 6, 16, 256, 256, 8, accel_cpu_gk_avx2, accel_cpu_gk_tile8},
};
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
  if (limit != NULL && limit[0] != '\0') {
    if (strcmp(limit, "avx512") == 0) {
      first = 0;
    } else if (strcmp(limit, "avx2") == 0) {
      first = 1;
    } else {
      snprintf(why, size,
               "ACCEL_CPU_GEMM_ISA='%.40s' is not avx512 or avx2", limit);
      return NULL;
    }
  }
  for (int i = first; i < 2; i++) {
    if (accel_cpu_gk_runs(i)) return &accel_cpu_gk_isas[i];
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

// One GEMM, split into tasks.
typedef struct accel_cpu_gk_job {
  const accel_cpu_gk_isa_t* isa;
  const accel_plugin_gemm_t* g;
  float alpha, beta;
  size_t es;          // bytes per element of A and B
  size_t es_c;        // of C
  uint32_t kc;        // k per block (every block but the last)
  uint64_t kblocks;   // number of k blocks
  bool c32;           // an f16/bf16 C over several k blocks
  bool split_n;       // tasks take columns of C, else rows
  uint64_t units;     // column slivers (NR) or row slivers (MR) in all
  uint64_t tasks;
  unsigned char* scratch;
  size_t b_bytes;     // of a task's scratch, for its packed B block
  size_t task_bytes;  // scratch per task
} accel_cpu_gk_job_t;

static size_t accel_cpu_gk_round(size_t bytes) {
  return (bytes + ACCEL_CPU_ALIGNMENT - 1) & ~(size_t)(ACCEL_CPU_ALIGNMENT - 1);
}

// Packs rows [i0, i0 + rows) of op(A), columns [p0, p0 + kc), as slivers
// of MR rows, each row isa->kc floats after the last (sliver s at
// ap + s * MR * isa->kc); rows from `rows` up to the last sliver's end are
// zero. A transposed A is read a group of W rows of k at a time across
// every sliver, so that each of those rows is read in order.
static void accel_cpu_gk_pack_a(const accel_cpu_gk_job_t* j, uint64_t i0,
                                uint32_t rows, uint64_t p0, uint32_t kc,
                                float* ap) {
  const accel_plugin_gemm_t* g = j->g;
  const accel_cpu_gk_isa_t* isa = j->isa;
  const unsigned char* a = g->a;
  const uint32_t mr = isa->mr;
  const uint32_t padded = (rows + mr - 1) / mr * mr;
  if (!g->trans_a) {  // stored m x k: row i is contiguous in k
    for (uint32_t i = 0; i < rows; i++) {
      accel_cpu_to_f32_block(ap + (size_t)i * isa->kc,
                             a + ((i0 + i) * g->lda + p0) * j->es, g->a_dtype,
                             kc);
    }
    for (uint32_t i = rows; i < padded; i++) {
      memset(ap + (size_t)i * isa->kc, 0, kc * sizeof(float));
    }
    return;
  }
  // Stored k x m: W rows of k by one sliver's MR values, transposed (the
  // zero rows from `rows` up come with the tile).
  const size_t stride = g->lda * j->es;
  for (uint32_t k = 0; k < kc; k += isa->width) {
    uint32_t kk = kc - k < isa->width ? kc - k : isa->width;
    const unsigned char* src = a + ((p0 + k) * g->lda + i0) * j->es;
    for (uint32_t i = 0; i < rows; i += mr) {
      uint32_t mv = rows - i < mr ? rows - i : mr;
      isa->tile(src + i * j->es, stride, g->a_dtype, kk, mv,
                ap + (size_t)i * isa->kc + k, isa->kc, mr, kk);
    }
  }
}

// Packs rows [p0, p0 + kc) of op(B), columns [j0, j0 + nq), as slivers of
// NR columns (sliver s at bp + s * kc * NR, k-major); columns from nq up to
// the last sliver's end are zero.
static void accel_cpu_gk_pack_b(const accel_cpu_gk_job_t* j, uint64_t p0,
                                uint32_t kc, uint64_t j0, uint32_t nq,
                                float* bp) {
  const accel_plugin_gemm_t* g = j->g;
  const uint32_t nr = j->isa->nr;
  const unsigned char* b = g->b;
  if (!g->trans_b) {  // stored k x n: a row of op(B) is contiguous
    // Row by row, so that memory is read in order (a sliver at a time
    // would read one line of every row, then the next).
    for (uint32_t k = 0; k < kc; k++) {
      const unsigned char* src = b + ((p0 + k) * g->ldb + j0) * j->es;
      for (uint32_t x = 0; x < nq; x += nr) {
        uint32_t nv = nq - x < nr ? nq - x : nr;
        float* d = bp + (size_t)x * kc + (size_t)k * nr;
        accel_cpu_to_f32_block(d, src + x * j->es, g->b_dtype, nv);
        if (nv < nr) memset(d + nv, 0, (nr - nv) * 4u);
      }
    }
    return;
  }
  // Stored n x k: a column of op(B) is contiguous in k. W columns by W
  // values of k at a time, transposed into the sliver's rows (columns
  // from nq up are zero: their tile rows are not read).
  const uint32_t w = j->isa->width;
  const size_t stride = g->ldb * j->es;
  for (uint32_t x = 0; x < nq || x % nr != 0; x += w) {
    uint32_t cols = x < nq ? (nq - x < w ? nq - x : w) : 0;
    const unsigned char* src =
        cols > 0 ? b + ((j0 + x) * g->ldb + p0) * j->es : b;
    float* d = bp + (size_t)(x / nr) * kc * nr + x % nr;
    for (uint32_t k = 0; k < kc; k += w) {
      uint32_t kk = kc - k < w ? kc - k : w;
      j->isa->tile(cols > 0 ? src + k * j->es : src, stride, g->b_dtype, cols,
                   kk, d + (size_t)k * nr, nr, kk, w);
    }
  }
}

enum { ACCEL_CPU_GK_FIRST = 1, ACCEL_CPU_GK_LAST = 2 };

// Adds the tile `acc` (rows [i0, i0 + mv), columns [j0, j0 + nv) of C, the
// k block's part) into C or into the f32 tile `c32` (row stride `ld32`,
// positioned at the tile): `phase` says whether this is the first and/or
// the last k block.
static void accel_cpu_gk_store(const accel_cpu_gk_job_t* j, const float* acc,
                               uint64_t i0, uint32_t mv, uint64_t j0,
                               uint32_t nv, int phase, float* c32,
                               uint64_t ld32) {
  const accel_plugin_gemm_t* g = j->g;
  const uint32_t nr = j->isa->nr;
  const float alpha = j->alpha, beta = j->beta;
  const bool first = (phase & ACCEL_CPU_GK_FIRST) != 0;
  const bool last = (phase & ACCEL_CPU_GK_LAST) != 0;
  float row[32];
  for (uint32_t i = 0; i < mv; i++) {
    const float* t = acc + (size_t)i * nr;
    unsigned char* c = (unsigned char*)g->c + ((i0 + i) * g->ldc + j0) * j->es_c;
    if (g->c_dtype == ACCEL_DTYPE_F32) {  // in place, every k block
      float* cf = (float*)c;
      if (!first) {
        for (uint32_t x = 0; x < nv; x++) cf[x] += alpha * t[x];
      } else if (beta == 0.0f) {
        for (uint32_t x = 0; x < nv; x++) cf[x] = alpha * t[x];
      } else {
        for (uint32_t x = 0; x < nv; x++) cf[x] = alpha * t[x] + beta * cf[x];
      }
      continue;
    }
    float* r32 = j->c32 ? c32 + (size_t)i * ld32 : row;
    if (first) {
      if (beta == 0.0f) {
        for (uint32_t x = 0; x < nv; x++) r32[x] = alpha * t[x];
      } else {
        accel_cpu_to_f32_block(row, c, g->c_dtype, nv);
        for (uint32_t x = 0; x < nv; x++) r32[x] = alpha * t[x] + beta * row[x];
      }
    } else {
      for (uint32_t x = 0; x < nv; x++) r32[x] += alpha * t[x];
    }
    if (last) accel_cpu_from_f32_block(c, r32, g->c_dtype, nv);
  }
}

static void accel_cpu_gk_task(void* ctx, uint64_t t, uint32_t worker) {
  (void)worker;
  const accel_cpu_gk_job_t* j = ctx;
  const accel_plugin_gemm_t* g = j->g;
  const accel_cpu_gk_isa_t* isa = j->isa;
  const uint32_t mr = isa->mr, nr = isa->nr;
  uint64_t lo = j->units * t / j->tasks, hi = j->units * (t + 1) / j->tasks;
  uint64_t m0 = 0, m1 = g->m, n0 = 0, n1 = g->n;
  if (j->split_n) {
    n0 = lo * nr;
    n1 = hi * nr < g->n ? hi * nr : g->n;
  } else {
    m0 = lo * mr;
    m1 = hi * mr < g->m ? hi * mr : g->m;
  }
  if (m0 >= m1 || n0 >= n1) return;
  unsigned char* s = j->scratch + j->task_bytes * t;
  float* bp = (float*)s;
  float* ap = (float*)(s + j->b_bytes);
  const uint32_t group = ACCEL_CPU_GK_SLIVERS * mr;  // rows of A packed
  float* acc = ap + (size_t)group * isa->kc;
  float* c32 = acc + ACCEL_CPU_GK_TILE_MAX;
  uint64_t mc = j->c32 ? ACCEL_CPU_GK_MC / mr * mr : m1 - m0;
  for (uint64_t jq = n0; jq < n1; jq += isa->nq) {
    uint32_t nq = (uint32_t)(n1 - jq < isa->nq ? n1 - jq : isa->nq);
    for (uint64_t ic = m0; ic < m1; ic += mc) {
      uint64_t ie = m1 - ic < mc ? m1 : ic + mc;
      for (uint64_t blk = 0; blk < j->kblocks; blk++) {
        uint64_t p0 = blk * j->kc;
        uint32_t kc = (uint32_t)(g->k - p0 < j->kc ? g->k - p0 : j->kc);
        int phase = (blk == 0 ? ACCEL_CPU_GK_FIRST : 0) |
                    (blk + 1 == j->kblocks ? ACCEL_CPU_GK_LAST : 0);
        accel_cpu_gk_pack_b(j, p0, kc, jq, nq, bp);
        for (uint64_t ig = ic; ig < ie; ig += group) {
          uint32_t rows = (uint32_t)(ie - ig < group ? ie - ig : group);
          accel_cpu_gk_pack_a(j, ig, rows, p0, kc, ap);
          for (uint32_t i = 0; i < rows; i += mr) {
            uint32_t mv = rows - i < mr ? rows - i : mr;
            const float* as = ap + (size_t)i * isa->kc;
            for (uint32_t x = 0; x < nq; x += nr) {
              uint32_t nv = nq - x < nr ? nq - x : nr;
              isa->kernel(kc, as, bp + (size_t)x * kc, acc);
              accel_cpu_gk_store(j, acc, ig + i, mv, jq + x, nv, phase,
                                 c32 + (ig + i - ic) * isa->nq + x, isa->nq);
            }
          }
        }
      }
    }
  }
}

accel_status_t accel_cpu_gk_gemm(accel_cpu_plugin_t* plugin,
                                 accel_cpu_pool_t* pool,
                                 const accel_cpu_gk_isa_t* isa,
                                 const accel_plugin_gemm_t* g, char* message,
                                 size_t size) {
  accel_cpu_gk_job_t j = {
      .isa = isa,
      .g = g,
      .alpha = (float)g->alpha,
      .beta = (float)g->beta,
      .es = accel_plugin_dtype_size(g->a_dtype),
      .es_c = accel_plugin_dtype_size(g->c_dtype),
  };
  j.kblocks = (g->k + isa->kc - 1) / isa->kc;
  j.kc = (uint32_t)((g->k + j.kblocks - 1) / j.kblocks);  // balanced blocks
  j.c32 = g->c_dtype != ACCEL_DTYPE_F32 && j.kblocks > 1;
  uint64_t width = accel_cpu_pool_width(pool);
  bool split = (double)g->m * (double)g->n * (double)g->k >=
               (double)ACCEL_CPU_GEMM_SPLIT_FLOPS;
  uint64_t tasks = split && width > 1 ? width : 1;
  uint64_t cols = (g->n + isa->nr - 1) / isa->nr;
  uint64_t rows = (g->m + isa->mr - 1) / isa->mr;
  j.split_n = cols >= tasks || cols >= rows;
  j.units = j.split_n ? cols : rows;
  j.tasks = tasks < j.units ? tasks : j.units;
  // Scratch per task, sized by the product (a small GEMM takes little):
  // the B block, the A sliver (rows isa->kc apart), the tile, the f32 rows.
  uint64_t cols_b = (g->n + isa->nr - 1) / isa->nr * isa->nr;
  if (cols_b > isa->nq) cols_b = isa->nq;
  uint64_t rows_c32 = j.c32 ? ACCEL_CPU_GK_MC : 0;
  if (rows_c32 > g->m) rows_c32 = g->m;
  j.b_bytes = accel_cpu_gk_round((size_t)j.kc * cols_b * 4u);
  j.task_bytes = j.b_bytes + accel_cpu_gk_round(
                                 ((size_t)ACCEL_CPU_GK_SLIVERS * isa->mr *
                                      isa->kc +
                                  ACCEL_CPU_GK_TILE_MAX +
                                  (size_t)rows_c32 * isa->nq) *
                                 4u);
  accel_cpu_scratch_t* scratch =
      accel_cpu_scratch_take(plugin, j.task_bytes * j.tasks);
  if (scratch == NULL) {
    snprintf(message, size, "gemm: out of host memory for packed panels");
    return ACCEL_ERROR_OUT_OF_MEMORY;
  }
  j.scratch = scratch->data;
  accel_cpu_pool_run(j.tasks > 1 ? pool : NULL, j.tasks, accel_cpu_gk_task,
                     &j);
  accel_cpu_scratch_give(plugin, scratch);
  return ACCEL_OK;
}
