// SPDX-License-Identifier: MIT
//
// The elementwise suite's baselines: what a user would write instead of
// calling accel, a counted loop per op, built with -O3 for the default
// target (CMakeLists.txt) like the CPU plugin's own loops, so that the
// compiler vectorises them. Nothing here is tuned by hand.
#include <accel/philox.h>
#include <string.h>

#include "bench.h"

void bench_loop_add(float* restrict z, const float* restrict x,
                    const float* restrict y, size_t n) {
  for (size_t i = 0; i < n; ++i) z[i] = x[i] + y[i];
}

void bench_loop_mul(float* restrict z, const float* restrict x,
                    const float* restrict y, size_t n) {
  for (size_t i = 0; i < n; ++i) z[i] = x[i] * y[i];
}

void bench_loop_axpy(float* restrict y, const float* restrict x, float alpha,
                     size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = alpha * x[i] + y[i];
}

void bench_loop_scale(float* x, float alpha, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = alpha * x[i];
}

void bench_loop_fill(float* x, float value, size_t n) {
  for (size_t i = 0; i < n; ++i) x[i] = value;
}

// Round to nearest even; overflow to infinity, NaN stays NaN (quiet).
// Every case is computed and one selected by masks, so the loop has no
// branches and vectorises.
static inline uint16_t bench_f32_to_f16(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t abs = u & 0x7fffffffu;
  // Normal f16: rebias the exponent (127 -> 15) and round the mantissa.
  uint32_t m = abs - 0x38000000u;
  uint32_t normal = (m + 0xfffu + ((m >> 13) & 1u)) >> 13;
  // Subnormal f16 or zero: adding 0.5 lines the bits up, rounding in the
  // FPU (the usual magic-number trick).
  float a;
  memcpy(&a, &abs, sizeof(a));
  a += 0.5f;
  uint32_t r;
  memcpy(&r, &a, sizeof(r));
  uint32_t subnormal = r - 0x3f000000u;
  // NaN (quiet) or infinity, from 65520 up.
  uint32_t special = 0x7c00u | (uint32_t)(abs > 0x7f800000u) << 9;
  // Masks rather than ?: so that the compiler sees no control flow.
  uint32_t big = 0u - (uint32_t)(abs >= 0x477ff000u);
  uint32_t norm = 0u - (uint32_t)(abs >= 0x38800000u);
  uint32_t out =
      (special & big) | (normal & ~big & norm) | (subnormal & ~big & ~norm);
  return (uint16_t)(sign | out);
}

void bench_loop_cast_f16(uint16_t* restrict dst, const float* restrict src,
                         size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = bench_f32_to_f16(src[i]);
}

void bench_loop_rng(float* x, size_t n, uint64_t seed, uint64_t offset,
                    bool normal) {
  for (size_t i = 0; i < n; i += 4) {
    accel_philox_block_t block = accel_philox_at(seed, offset, i / 4);
    for (uint32_t j = 0; j < 4 && i + j < n; ++j) {
      x[i + j] = normal ? accel_philox_normal01(block, j)
                        : accel_philox_uniform(block.w[j], 0.0f, 1.0f);
    }
  }
}

double bench_loop_sum(const float* x, size_t n) {
  float lanes[16] = {0};
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    for (size_t l = 0; l < 16; ++l) lanes[l] += x[i + l];
  }
  double total = 0;
  for (size_t l = 0; l < 16; ++l) total += lanes[l];
  for (; i < n; ++i) total += x[i];
  return total;
}
