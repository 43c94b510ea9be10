// SPDX-License-Identifier: MIT
//
// Scalar element conversions with the numeric rules of the plugin ABI
// (<accel/plugin.h>): float results round to nearest even, overflow gives
// infinity, NaN stays NaN; float to i32 truncates toward zero and
// saturates, NaN gives 0. The template plugin, accel-conform's host
// reference and the CPU plugin use these, so a plugin that uses them too
// rounds exactly as the conformance checks expect.
//
// This header is standalone: it needs only standard headers, defines no
// exported symbols (every function is `static inline`) and is part of no
// ABI table, so using it changes nothing in a plugin's binary interface.
// It compiles as C11 and as C++.
//
// Every function is pure integer code: the results do not depend on the
// floating-point environment (rounding mode, flush-to-zero, denormals-are-
// zero) and are the same on every compiler and target. Bit casts go
// through memcpy, which compilers turn into register moves. All functions
// are safe to call from any thread.
#ifndef ACCEL_PLUGIN_DTYPE_H_
#define ACCEL_PLUGIN_DTYPE_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

// ---------------------------------------------------------------------------
// Element sizes
// ---------------------------------------------------------------------------

// Bytes of one element of `dtype` (an accel_dtype_t value: 4 for F32 and
// I32, 2 for F16 and BF16), or 0 for a value this header does not know.
static inline size_t accel_plugin_dtype_size(uint32_t dtype) {
  switch (dtype) {
    case 0:  // ACCEL_DTYPE_F32
    case 3:  // ACCEL_DTYPE_I32
      return 4;
    case 1:  // ACCEL_DTYPE_F16
    case 2:  // ACCEL_DTYPE_BF16
      return 2;
    default:
      return 0;
  }
}

// ---------------------------------------------------------------------------
// f16 (IEEE binary16)
// ---------------------------------------------------------------------------

// Returns the binary16 value with bit pattern `h` as a float. Exact for
// every input: zeros keep their sign, subnormals become normal floats,
// infinities stay infinite, and a NaN keeps its sign and payload (shifted
// into the top of the f32 mantissa; a signalling NaN stays signalling).
static inline float accel_plugin_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = ((uint32_t)h >> 10) & 0x1fu;
  uint32_t mant = (uint32_t)h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in f32 (at most 10 bits).
    float f = (float)mant * (1.0f / 16777216.0f);
    memcpy(&bits, &f, sizeof(bits));
    bits |= sign;
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);  // infinity or NaN
  } else {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);  // rebias 15 -> 127
  }
  float f;
  memcpy(&f, &bits, sizeof(f));
  return f;
}

// Returns `f` rounded to binary16, as a bit pattern. Rounds to nearest,
// ties to even, including into the subnormal range; values too small for
// the smallest subnormal round to a zero of the same sign, values that
// round above 65504 give an infinity of the same sign. Any NaN gives the
// quiet NaN 0x7e00 with the input's sign (the payload is not kept).
static inline uint16_t accel_plugin_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof(x));
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) {  // infinity or NaN
    return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0u));
  }
  int32_t e = (int32_t)exp - 127 + 15;  // the f16 biased exponent
  if (e >= 31) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {
    // Subnormal or zero in f16. Below half the smallest subnormal
    // (2^-25) everything rounds to zero, f32 subnormals included.
    if (e < -10) return (uint16_t)sign;
    mant |= 0x800000u;  // the implicit bit
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1u);
    uint32_t mid = 1u << (shift - 1u);
    // A carry into bit 10 correctly gives the smallest normal.
    if (rem > mid || (rem == mid && (half & 1u))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t half = sign | ((uint32_t)e << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  // A carry out of the mantissa correctly bumps the exponent (to inf).
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++;
  return (uint16_t)half;
}

// ---------------------------------------------------------------------------
// bf16 (bfloat16: the top 16 bits of a binary32)
// ---------------------------------------------------------------------------

// Returns the bfloat16 value with bit pattern `b` as a float. Exact for
// every input, NaN payloads included.
static inline float accel_plugin_bf16_to_f32(uint16_t b) {
  uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, sizeof(f));
  return f;
}

// Returns `f` rounded to bfloat16, as a bit pattern. Rounds to nearest,
// ties to even (f32 subnormals included); values that round above the
// largest finite bf16 give an infinity of the same sign. A NaN keeps its
// sign and the top 7 payload bits and is made quiet, so it stays a NaN.
static inline uint16_t accel_plugin_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof(x));
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

// ---------------------------------------------------------------------------
// double to f16 and bf16 in one rounding
// ---------------------------------------------------------------------------

// Returns the bits of `d` rounded to f32 "to odd": truncated toward zero,
// with the last bit set when anything was lost (values beyond the f32
// range truncate to the largest finite f32, which is odd; a NaN keeps its
// sign and top payload bits and is quiet). Rounding that f32 to a format
// at least two bits narrower (f16, bf16) gives the correctly rounded value
// of `d` itself, with no double-rounding error.
static inline uint32_t accel_plugin_f64_to_f32_odd_bits(double d) {
  uint64_t b;
  memcpy(&b, &d, sizeof(b));
  uint32_t sign = (uint32_t)(b >> 32) & 0x80000000u;
  int e = (int)((b >> 52) & 0x7ffu);
  uint64_t m = b & 0xfffffffffffffull;
  uint32_t u;
  if (e == 0x7ff) {  // infinity or NaN
    u = m != 0 ? 0x7fc00000u | (uint32_t)(m >> 29) : 0x7f800000u;
  } else if (e == 0) {  // zero, or a double subnormal: far below f32's
    u = m != 0 ? 1u : 0u;
  } else if (e - 1023 > 127) {  // beyond FLT_MAX
    u = 0x7f7fffffu;
  } else {
    // Drop 29 bits for a normal f32, more for a subnormal one.
    int drop = e - 1023 >= -126 ? 29 : 29 + (-126 - (e - 1023));
    uint64_t full = e - 1023 >= -126 ? m : m | (1ull << 52);
    uint32_t head = drop < 64 ? (uint32_t)(full >> drop) : 0u;
    int lost = drop < 64 ? (full & ((1ull << drop) - 1u)) != 0 : full != 0;
    if (e - 1023 >= -126) head |= (uint32_t)(e - 1023 + 127) << 23;
    u = head | (uint32_t)lost;
  }
  return sign | u;
}

// Returns `d` rounded once to binary16, as a bit pattern: nearest, ties to
// even, as accel_plugin_f32_to_f16 rounds, but from the exact double (a
// double rounded to f32 first could land on an f16 tie it was not on).
// The rule for op_fill and for f16 sums accumulated in double.
static inline uint16_t accel_plugin_f64_to_f16(double d) {
  uint32_t u = accel_plugin_f64_to_f32_odd_bits(d);
  float f;
  memcpy(&f, &u, sizeof(f));
  return accel_plugin_f32_to_f16(f);
}

// Returns `d` rounded once to bfloat16, as a bit pattern (see
// accel_plugin_f64_to_f16); i32 to bf16 goes through here too, since an
// i32 is exact as a double but not always as an f32.
static inline uint16_t accel_plugin_f64_to_bf16(double d) {
  uint32_t u = accel_plugin_f64_to_f32_odd_bits(d);
  float f;
  memcpy(&f, &u, sizeof(f));
  return accel_plugin_f32_to_bf16(f);
}

// ---------------------------------------------------------------------------
// i32
// ---------------------------------------------------------------------------

// Returns `d` converted to int32_t: truncates toward zero, saturates to
// INT32_MIN and INT32_MAX (infinities included), and gives 0 for NaN.
// Every f32 and f16/bf16 value is exact as a double, so this is also the
// conversion for those types.
static inline int32_t accel_plugin_f64_to_i32_sat(double d) {
  if (d != d) return 0;  // NaN
  if (d >= 2147483647.0) return INT32_MAX;
  if (d <= -2147483648.0) return INT32_MIN;
  return (int32_t)d;  // in range: truncates toward zero
}

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ACCEL_PLUGIN_DTYPE_H_
