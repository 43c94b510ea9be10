// SPDX-License-Identifier: MIT
//
// Blocked f16/bf16 <-> f32 conversions. The portable loops over the inline
// conversions of convert.h are the baseline and vectorise well for bf16
// (integer operations only). For f16, x86-64 CPUs with F16C (every AVX2
// CPU) or AVX-512 convert 8 or 16 values per instruction with exactly the
// same rounding; those versions are compiled with target attributes, so
// the plugin still runs on any x86-64, and picked once, at first use.
#include "convert.h"

#include <stdatomic.h>
#include <stddef.h>

#include "cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define ACCEL_CPU_HAVE_X86 1
#endif

static void accel_cpu_f16_to_f32_portable(float* restrict dst,
                                          const uint16_t* restrict src,
                                          size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = accel_cpu_f16_to_f32(src[i]);
}

static void accel_cpu_f32_to_f16_portable(uint16_t* restrict dst,
                                          const float* restrict src, size_t n) {
  for (size_t i = 0; i < n; i++) dst[i] = accel_cpu_f32_to_f16(src[i]);
}

#if ACCEL_CPU_HAVE_X86
__attribute__((target("avx,f16c"))) static void accel_cpu_f16_to_f32_f16c(
    float* restrict dst, const uint16_t* restrict src, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm_loadu_si128((const __m128i*)(src + i));
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; i++) dst[i] = accel_cpu_f16_to_f32(src[i]);
}

__attribute__((target("avx,f16c"))) static void accel_cpu_f32_to_f16_f16c(
    uint16_t* restrict dst, const float* restrict src, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(src + i),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128((__m128i*)(dst + i), h);
  }
  for (; i < n; i++) dst[i] = accel_cpu_f32_to_f16(src[i]);
}

__attribute__((target("avx512f"))) static void accel_cpu_f16_to_f32_avx512(
    float* restrict dst, const uint16_t* restrict src, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i h = _mm256_loadu_si256((const __m256i*)(src + i));
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(h));
  }
  for (; i < n; i++) dst[i] = accel_cpu_f16_to_f32(src[i]);
}

__attribute__((target("avx512f"))) static void accel_cpu_f32_to_f16_avx512(
    uint16_t* restrict dst, const float* restrict src, size_t n) {
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(src + i),
                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_si256((__m256i*)(dst + i), h);
  }
  for (; i < n; i++) dst[i] = accel_cpu_f32_to_f16(src[i]);
}
#endif  // ACCEL_CPU_HAVE_X86

typedef void (*accel_cpu_h2f_fn_t)(float* restrict, const uint16_t* restrict,
                                   size_t);
typedef void (*accel_cpu_f2h_fn_t)(uint16_t* restrict, const float* restrict,
                                   size_t);

// Chosen at the first conversion. Racing first calls pick the same
// functions, so relaxed atomics are enough.
static _Atomic(accel_cpu_h2f_fn_t) accel_cpu_h2f;
static _Atomic(accel_cpu_f2h_fn_t) accel_cpu_f2h;

#if ACCEL_CPU_HAVE_X86
// F16C from CPUID leaf 1 (ECX bit 29): clang 14's __builtin_cpu_supports
// does not know "f16c".
static bool accel_cpu_has_f16c(void) {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}
#endif

static void accel_cpu_convert_select(void) {
  accel_cpu_h2f_fn_t h2f = accel_cpu_f16_to_f32_portable;
  accel_cpu_f2h_fn_t f2h = accel_cpu_f32_to_f16_portable;
#if ACCEL_CPU_HAVE_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    h2f = accel_cpu_f16_to_f32_avx512;
    f2h = accel_cpu_f32_to_f16_avx512;
  } else if (__builtin_cpu_supports("avx") && accel_cpu_has_f16c()) {
    h2f = accel_cpu_f16_to_f32_f16c;
    f2h = accel_cpu_f32_to_f16_f16c;
  }
#endif
  atomic_store_explicit(&accel_cpu_f2h, f2h, memory_order_relaxed);
  atomic_store_explicit(&accel_cpu_h2f, h2f, memory_order_relaxed);
}

void accel_cpu_f16_to_f32_block(float* restrict dst,
                                const uint16_t* restrict src, size_t n) {
  accel_cpu_h2f_fn_t fn =
      atomic_load_explicit(&accel_cpu_h2f, memory_order_relaxed);
  if (fn == NULL) {
    accel_cpu_convert_select();
    fn = atomic_load_explicit(&accel_cpu_h2f, memory_order_relaxed);
  }
  fn(dst, src, n);
}

void accel_cpu_f32_to_f16_block(uint16_t* restrict dst,
                                const float* restrict src, size_t n) {
  accel_cpu_f2h_fn_t fn =
      atomic_load_explicit(&accel_cpu_f2h, memory_order_relaxed);
  if (fn == NULL) {
    accel_cpu_convert_select();
    fn = atomic_load_explicit(&accel_cpu_f2h, memory_order_relaxed);
  }
  fn(dst, src, n);
}

// bf16 is integer work the compiler vectorises from the portable loops;
// AVX2 and AVX-512 builds of the same loops (target attributes) are about
// twice as fast as the SSE2 baseline, whose 32-to-16-bit packing is slow.
#define ACCEL_CPU_BF16_LOOPS(suffix, attr)                                 \
  attr static void accel_cpu_bf16_to_f32_##suffix(                         \
      float* restrict dst, const uint16_t* restrict src, size_t n) {       \
    for (size_t i = 0; i < n; i++) dst[i] = accel_cpu_bf16_to_f32(src[i]); \
  }                                                                        \
  attr static void accel_cpu_f32_to_bf16_##suffix(                         \
      uint16_t* restrict dst, const float* restrict src, size_t n) {       \
    for (size_t i = 0; i < n; i++) dst[i] = accel_cpu_f32_to_bf16(src[i]); \
  }
ACCEL_CPU_BF16_LOOPS(portable, )
#if ACCEL_CPU_HAVE_X86
ACCEL_CPU_BF16_LOOPS(avx2, __attribute__((target("avx2"))))
ACCEL_CPU_BF16_LOOPS(avx512, __attribute__((target("avx512f,avx512bw"))))
#endif

static _Atomic(accel_cpu_h2f_fn_t) accel_cpu_b2f;
static _Atomic(accel_cpu_f2h_fn_t) accel_cpu_f2b;

static void accel_cpu_bf16_select(void) {
  accel_cpu_h2f_fn_t b2f = accel_cpu_bf16_to_f32_portable;
  accel_cpu_f2h_fn_t f2b = accel_cpu_f32_to_bf16_portable;
#if ACCEL_CPU_HAVE_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
    b2f = accel_cpu_bf16_to_f32_avx512;
    f2b = accel_cpu_f32_to_bf16_avx512;
  } else if (__builtin_cpu_supports("avx2")) {
    b2f = accel_cpu_bf16_to_f32_avx2;
    f2b = accel_cpu_f32_to_bf16_avx2;
  }
#endif
  atomic_store_explicit(&accel_cpu_f2b, f2b, memory_order_relaxed);
  atomic_store_explicit(&accel_cpu_b2f, b2f, memory_order_relaxed);
}

void accel_cpu_bf16_to_f32_block(float* restrict dst,
                                 const uint16_t* restrict src, size_t n) {
  accel_cpu_h2f_fn_t fn =
      atomic_load_explicit(&accel_cpu_b2f, memory_order_relaxed);
  if (fn == NULL) {
    accel_cpu_bf16_select();
    fn = atomic_load_explicit(&accel_cpu_b2f, memory_order_relaxed);
  }
  fn(dst, src, n);
}

void accel_cpu_f32_to_bf16_block(uint16_t* restrict dst,
                                 const float* restrict src, size_t n) {
  accel_cpu_f2h_fn_t fn =
      atomic_load_explicit(&accel_cpu_f2b, memory_order_relaxed);
  if (fn == NULL) {
    accel_cpu_bf16_select();
    fn = atomic_load_explicit(&accel_cpu_f2b, memory_order_relaxed);
  }
  fn(dst, src, n);
}

void accel_cpu_to_f32_block(float* restrict dst, const void* restrict src,
                            uint32_t dtype, size_t n) {
  switch (dtype) {
    case ACCEL_DTYPE_F16:
      accel_cpu_f16_to_f32_block(dst, src, n);
      break;
    case ACCEL_DTYPE_BF16:
      accel_cpu_bf16_to_f32_block(dst, src, n);
      break;
    case ACCEL_DTYPE_I32: {
      const int32_t* s = src;
      for (size_t i = 0; i < n; i++) dst[i] = (float)s[i];
      break;
    }
    default:
      memcpy(dst, src, n * sizeof(float));
      break;
  }
}

void accel_cpu_from_f32_block(void* restrict dst, const float* restrict src,
                              uint32_t dtype, size_t n) {
  switch (dtype) {
    case ACCEL_DTYPE_F16:
      accel_cpu_f32_to_f16_block(dst, src, n);
      break;
    case ACCEL_DTYPE_BF16:
      accel_cpu_f32_to_bf16_block(dst, src, n);
      break;
    case ACCEL_DTYPE_I32: {
      int32_t* d = dst;
      for (size_t i = 0; i < n; i++) d[i] = accel_cpu_f32_to_i32(src[i]);
      break;
    }
    default:
      memcpy(dst, src, n * sizeof(float));
      break;
  }
}
