// SPDX-License-Identifier: MIT
//
// Scalar conversions between f32, f16, bf16, i32 and double for the CPU
// plugin's kernels. Everything is static inline so the loops in kernels.c
// and convert.c vectorise; bit casts go through memcpy, which compilers
// turn into register moves.
//
// Semantics (plugin.h): float results round to nearest even, overflow
// gives infinity, NaN stays NaN; float to i32 truncates toward zero and
// saturates, NaN gives 0. Rounding to f16 and bf16 and the i32
// conversions are the SDK's (<accel/plugin_dtype.h>), so the plugin
// rounds exactly as the core's rules and accel-conform do.
//
// f16 to f32 stays this plugin's own exact formulation, from Maratyszcza's
// FP16 library (MIT): it uses f32 arithmetic (no FTZ/DAZ, which this
// plugin never sets) and so, like the F16C and AVX-512 conversions in
// convert.c, it returns a signalling f16 NaN as a quiet f32 NaN, where
// accel_plugin_f16_to_f32 keeps it signalling. Every other input gives
// the same bits.
#ifndef ACCEL_PLUGINS_CPU_CONVERT_H_
#define ACCEL_PLUGINS_CPU_CONVERT_H_

#include <accel/plugin_dtype.h>
#include <stdint.h>
#include <string.h>

static inline uint32_t accel_cpu_f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  return u;
}

static inline float accel_cpu_f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

static inline float accel_cpu_f16_to_f32(uint16_t h) {
  uint32_t w = (uint32_t)h << 16;
  uint32_t sign = w & 0x80000000u;
  uint32_t two_w = w + w;
  // Normal (and inf/NaN) inputs: move the exponent into f32 position and
  // rebias with one exact multiplication.
  float normalized =
      accel_cpu_f32_from_bits((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  // Subnormal inputs: build 0.5 + m * 2^-24 and subtract 0.5 exactly.
  float denormalized =
      accel_cpu_f32_from_bits((two_w >> 17) | (126u << 23)) - 0.5f;
  uint32_t bits = two_w < (1u << 27) ? accel_cpu_f32_bits(denormalized)
                                     : accel_cpu_f32_bits(normalized);
  return accel_cpu_f32_from_bits(sign | bits);
}

static inline uint16_t accel_cpu_f32_to_f16(float f) {
  return accel_plugin_f32_to_f16(f);
}

static inline float accel_cpu_bf16_to_f32(uint16_t h) {
  return accel_plugin_bf16_to_f32(h);
}

static inline uint16_t accel_cpu_f32_to_bf16(float f) {
  return accel_plugin_f32_to_bf16(f);
}

// Truncates toward zero and saturates; NaN gives 0. Every f32 is exact as
// a double.
static inline int32_t accel_cpu_f32_to_i32(float f) {
  return accel_plugin_f64_to_i32_sat((double)f);
}

static inline int32_t accel_cpu_f64_to_i32(double d) {
  return accel_plugin_f64_to_i32_sat(d);
}

// One rounding from the exact double (the SDK's rule for fill and sums).
static inline uint16_t accel_cpu_f64_to_f16(double d) {
  return accel_plugin_f64_to_f16(d);
}

static inline uint16_t accel_cpu_f64_to_bf16(double d) {
  return accel_plugin_f64_to_bf16(d);
}

// i32 to bf16 in one rounding (i32 to f32 alone may already round).
static inline uint16_t accel_cpu_i32_to_bf16(int32_t i) {
  return accel_cpu_f64_to_bf16((double)i);
}

// i32 to f16: every i32 that rounds to a finite f16 (|i| < 65520) is exact
// in f32, so one rounding happens.
static inline uint16_t accel_cpu_i32_to_f16(int32_t i) {
  return accel_cpu_f32_to_f16((float)i);
}

// Blocked conversions (convert.c). The f16 ones use F16C or AVX-512 when
// the CPU has them, chosen once at first use; the portable loops above are
// the baseline (and what aarch64 builds run). `n` may be any size.
void accel_cpu_f16_to_f32_block(float* restrict dst,
                                const uint16_t* restrict src, size_t n);
void accel_cpu_f32_to_f16_block(uint16_t* restrict dst,
                                const float* restrict src, size_t n);
void accel_cpu_bf16_to_f32_block(float* restrict dst,
                                 const uint16_t* restrict src, size_t n);
void accel_cpu_f32_to_bf16_block(uint16_t* restrict dst,
                                 const float* restrict src, size_t n);

// Converts `n` elements of `dtype` at `src` to f32, or back, in blocks.
void accel_cpu_to_f32_block(float* restrict dst, const void* restrict src,
                            uint32_t dtype, size_t n);
void accel_cpu_from_f32_block(void* restrict dst, const float* restrict src,
                              uint32_t dtype, size_t n);

#endif  // ACCEL_PLUGINS_CPU_CONVERT_H_
