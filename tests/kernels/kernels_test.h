// SPDX-License-Identifier: MIT
//
// Helpers for the kernel tests (tests/kernels): reference f16/bf16
// conversions written independently of any plugin, a deterministic random
// generator, typed element access and per-dtype tolerances.
#ifndef ACCEL_TESTS_KERNELS_KERNELS_TEST_H_
#define ACCEL_TESTS_KERNELS_KERNELS_TEST_H_

#include <accel/accel.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

// Tolerances, relative to the magnitude of the result (or of the terms
// that produced it, where cancellation is possible):
// - f32: 1e-5 (the result is rounded once to a 24-bit mantissa, 6e-8;
//   plugins may compute in f32 rather than double);
// - f16: 2e-3 (one rounding to an 11-bit mantissa is 4.9e-4; we allow a
//   plugin that rounds twice, or computes alpha in f16, twice that and a
//   margin);
// - bf16: 1.6e-2 (8-bit mantissa: 3.9e-3 per rounding, likewise doubled);
// - i32: exact.
// Reductions (sum, GEMM) add accumulation error: KT_ACC_EPS * sqrt(terms)
// times the sum of the magnitudes of the terms.
#define KT_ACC_EPS 2e-6

static inline double kt_rel_tol(accel_dtype_t dtype) {
  switch (dtype) {
    case ACCEL_DTYPE_F32:
      return 1e-5;
    case ACCEL_DTYPE_F16:
      return 2e-3;
    case ACCEL_DTYPE_BF16:
      return 1.6e-2;
    default:
      return 0.0;
  }
}

static inline uint32_t kt_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}

static inline float kt_bits_f32(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

// binary16 -> binary32, exact.
static inline float kt_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h >> 15) << 31;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  if (exp == 0x1f) return kt_bits_f32(sign | 0x7f800000u | (man << 13));
  if (exp == 0) {
    // Zero or subnormal: man * 2^-24.
    float v = (float)man * 0x1p-24f;
    return sign ? -v : v;
  }
  return kt_bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

// binary32 -> binary16, round to nearest even, overflow to infinity, NaN
// stays NaN.
static inline uint16_t kt_f32_to_f16(float f) {
  uint32_t u = kt_f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
  uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return (uint16_t)(sign | 0x7e00);   // NaN
  if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00);  // rounds to inf
  if (abs < 0x38800000u) {
    // Subnormal or zero in f16: round abs * 2^24 to an integer, RNE.
    float a = kt_bits_f32(abs) * 0x1p24f;
    float r = nearbyintf(a);  // default rounding mode: to nearest even
    return (uint16_t)(sign | (uint16_t)r);
  }
  uint32_t exp = (abs >> 23) - 112;
  uint32_t man = abs & 0x7fffff;
  uint32_t h = (exp << 10) | (man >> 13);
  uint32_t rest = man & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) h++;
  return (uint16_t)(sign | h);
}

static inline float kt_bf16_to_f32(uint16_t b) {
  return kt_bits_f32((uint32_t)b << 16);
}

// binary32 -> bfloat16, round to nearest even, NaN stays NaN.
static inline uint16_t kt_f32_to_bf16(float f) {
  uint32_t u = kt_f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

// float -> int32: truncate toward zero, saturate, NaN gives 0.
static inline int32_t kt_f32_to_i32(double f) {
  if (isnan(f)) return 0;
  if (f >= 2147483647.0) return INT32_MAX;
  if (f <= -2147483648.0) return INT32_MIN;
  return (int32_t)f;
}

// Element `i` of `p` (of `dtype`) as a double.
static inline double kt_get(const void* p, accel_dtype_t dtype, size_t i) {
  switch (dtype) {
    case ACCEL_DTYPE_F32: {
      float v;
      memcpy(&v, (const char*)p + 4 * i, 4);
      return v;
    }
    case ACCEL_DTYPE_F16: {
      uint16_t v;
      memcpy(&v, (const char*)p + 2 * i, 2);
      return kt_f16_to_f32(v);
    }
    case ACCEL_DTYPE_BF16: {
      uint16_t v;
      memcpy(&v, (const char*)p + 2 * i, 2);
      return kt_bf16_to_f32(v);
    }
    default: {
      int32_t v;
      memcpy(&v, (const char*)p + 4 * i, 4);
      return v;
    }
  }
}

// Stores `v` (already representable, or rounded here RNE via f32) as
// element `i` of `p`.
static inline void kt_set(void* p, accel_dtype_t dtype, size_t i, double v) {
  switch (dtype) {
    case ACCEL_DTYPE_F32: {
      float f = (float)v;
      memcpy((char*)p + 4 * i, &f, 4);
      break;
    }
    case ACCEL_DTYPE_F16: {
      uint16_t h = kt_f32_to_f16((float)v);
      memcpy((char*)p + 2 * i, &h, 2);
      break;
    }
    case ACCEL_DTYPE_BF16: {
      uint16_t h = kt_f32_to_bf16((float)v);
      memcpy((char*)p + 2 * i, &h, 2);
      break;
    }
    default: {
      int32_t x = kt_f32_to_i32(v);
      memcpy((char*)p + 4 * i, &x, 4);
      break;
    }
  }
}

// Rounds `v` to `dtype` and back, as the reference for a stored result.
static inline double kt_round(accel_dtype_t dtype, double v) {
  unsigned char tmp[4];
  kt_set(tmp, dtype, 0, v);
  return kt_get(tmp, dtype, 0);
}

// xorshift64*: deterministic, seeded per test.
typedef struct kt_rng {
  uint64_t s;
} kt_rng_t;

static inline uint64_t kt_next(kt_rng_t* r) {
  r->s ^= r->s >> 12;
  r->s ^= r->s << 25;
  r->s ^= r->s >> 27;
  return r->s * 0x2545F4914F6CDD1DULL;
}

// Uniform in [lo, hi).
static inline double kt_uniform(kt_rng_t* r, double lo, double hi) {
  return lo + (hi - lo) * (double)(kt_next(r) >> 11) * 0x1p-53;
}

static const accel_dtype_t kt_all_dtypes[] = {
    ACCEL_DTYPE_F32, ACCEL_DTYPE_F16, ACCEL_DTYPE_BF16, ACCEL_DTYPE_I32};
static const accel_dtype_t kt_float_dtypes[] = {
    ACCEL_DTYPE_F32, ACCEL_DTYPE_F16, ACCEL_DTYPE_BF16};

// True when `got` is within `tol` of `want`, treating NaN as equal to NaN
// and infinities as equal to themselves.
static inline bool kt_close(double got, double want, double tol) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  return fabs(got - want) <= tol;
}

#endif  // ACCEL_TESTS_KERNELS_KERNELS_TEST_H_
