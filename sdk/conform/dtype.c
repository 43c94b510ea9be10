// SPDX-License-Identifier: MIT
//
// Element types for the op checks: sizes, names, and exact conversions
// between the stored formats and double. These are accel-conform's own
// (the host reference must not depend on the plugin under test).
#include <math.h>
#include <string.h>

#include "conform.h"

static float conform_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    float f = (float)mant * (1.0f / 16777216.0f);  // subnormal: mant * 2^-24
    memcpy(&bits, &f, sizeof(bits));
    bits |= sign;
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  float f;
  memcpy(&f, &bits, sizeof(f));
  return f;
}

static uint16_t conform_f32_to_f16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof(x));
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xffu;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return (uint16_t)(sign | 0x7c00u | (mant ? 0x200u : 0));
  int32_t e = (int32_t)exp - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00u);
  if (e <= 0) {  // subnormal or zero in f16
    if (e < -10) return (uint16_t)sign;
    mant |= 0x800000u;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t half = sign | ((uint32_t)e << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  // A carry out of the mantissa correctly bumps the exponent (to inf).
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) half++;
  return (uint16_t)half;
}

static float conform_bf16_to_f32(uint16_t b) {
  uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, sizeof(f));
  return f;
}

static uint16_t conform_f32_to_bf16(float f) {
  uint32_t x;
  memcpy(&x, &f, sizeof(x));
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (uint16_t)(x >> 16);
}

static int32_t conform_to_i32(double v) {
  if (isnan(v)) return 0;
  if (v >= 2147483647.0) return INT32_MAX;
  if (v <= -2147483648.0) return INT32_MIN;
  return (int32_t)v;  // truncates toward zero
}

double conform_load(const void* p, accel_dtype_t dtype, size_t i) {
  switch (dtype) {
    case ACCEL_DTYPE_F32:
      return ((const float*)p)[i];
    case ACCEL_DTYPE_F16:
      return conform_f16_to_f32(((const uint16_t*)p)[i]);
    case ACCEL_DTYPE_BF16:
      return conform_bf16_to_f32(((const uint16_t*)p)[i]);
    default:
      return ((const int32_t*)p)[i];
  }
}

void conform_store(void* p, accel_dtype_t dtype, size_t i, double v) {
  switch (dtype) {
    case ACCEL_DTYPE_F32:
      ((float*)p)[i] = (float)v;
      break;
    case ACCEL_DTYPE_F16:
      ((uint16_t*)p)[i] = conform_f32_to_f16((float)v);
      break;
    case ACCEL_DTYPE_BF16:
      ((uint16_t*)p)[i] = conform_f32_to_bf16((float)v);
      break;
    default:
      ((int32_t*)p)[i] = conform_to_i32(v);
      break;
  }
}
