// SPDX-License-Identifier: MIT
//
// The OpenCL plugin's built-in kernels (ops.c): cast, the elementwise ops
// and the two passes of the sum. Embedded into the plugin at build time
// (cmake/AccelEmbed.cmake, together with gemm.cl) and built once per
// device. Fill needs no kernel (clEnqueueFillBuffer with the element's bit
// pattern, computed on the host).
//
// Numerics are those of the CPU plugin, bit for bit: f16 and bf16 are
// converted by integer code (no cl_khr_fp16 needed, and no dependence on
// the device's rounding of vstore_half or its denormal handling), floats
// round to nearest even, i32 results saturate and NaN gives 0, f16/bf16
// arithmetic runs in f32 and rounds on store, and no multiply-add is
// contracted into an FMA (the CPU plugin's ISO C build does not contract
// either).
//
// Buffers arrive as the whole cl_mem plus an offset in elements, so no
// sub-buffer (and its alignment rule) is needed. Each kernel walks its
// elements with a grid-stride loop, so any count fits any global size.
#pragma OPENCL FP_CONTRACT OFF

#define ACCEL_F32 0u
#define ACCEL_F16 1u
#define ACCEL_BF16 2u
#define ACCEL_I32 3u

#define ACCEL_OP_SCALE 0u
#define ACCEL_OP_AXPY 1u
#define ACCEL_OP_ADD 2u
#define ACCEL_OP_MUL 3u

// Work-group size of the sum kernels (ops.c launches them with it).
#define ACCEL_SUM_WG 64

// f16 bits to f32: exact; a signalling NaN comes back quiet, as the CPU
// plugin's conversion (F16C) gives it.
float accel_f16_to_f32(uint h) {
  uint sign = (h & 0x8000u) << 16;
  uint exp = (h >> 10) & 0x1fu;
  uint mant = h & 0x3ffu;
  uint bits;
  if (exp == 0u) {
    if (mant == 0u) {
      bits = sign;
    } else {  // subnormal: mant * 2^-24, normalised
      uint e = 113u;
      while ((mant & 0x400u) == 0u) {
        mant <<= 1;
        e--;
      }
      bits = sign | (e << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 31u) {
    bits = sign | 0x7f800000u | (mant << 13) | (mant != 0u ? 0x400000u : 0u);
  } else {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  }
  return as_float(bits);
}

// f32 to f16 bits, nearest even (accel_plugin_f32_to_f16).
ushort accel_f32_to_f16(float f) {
  uint x = as_uint(f);
  uint sign = (x >> 16) & 0x8000u;
  uint exp = (x >> 23) & 0xffu;
  uint mant = x & 0x7fffffu;
  if (exp == 0xffu) {
    return (ushort)(sign | 0x7c00u | (mant != 0u ? 0x200u : 0u));
  }
  int e = (int)exp - 127 + 15;
  if (e >= 31) return (ushort)(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return (ushort)sign;
    mant |= 0x800000u;
    uint shift = (uint)(14 - e);
    uint h16 = mant >> shift;
    uint rem = mant & ((1u << shift) - 1u);
    uint mid = 1u << (shift - 1u);
    if (rem > mid || (rem == mid && (h16 & 1u) != 0u)) h16++;
    return (ushort)(sign | h16);
  }
  uint h16 = sign | ((uint)e << 10) | (mant >> 13);
  uint rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h16 & 1u) != 0u)) h16++;
  return (ushort)h16;
}

// f32 bits to bf16 bits, nearest even; a NaN stays a quiet NaN.
ushort accel_bits_to_bf16(uint x) {
  if ((x & 0x7fffffffu) > 0x7f800000u) return (ushort)((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return (ushort)(x >> 16);
}

// i32 to bf16 in one rounding from the exact integer: the integer rounded
// to f32 "to odd" (truncated, last bit set when inexact), then to bf16.
// Rounding to nearest f32 first could land on a bf16 tie it was not on.
ushort accel_i32_to_bf16(int i) {
  float t = convert_float_rtz(i);
  uint bits = as_uint(t);
  if ((long)t != (long)i) bits |= 1u;
  return accel_bits_to_bf16(bits);
}

// f32 to i32: truncates toward zero, saturates, NaN gives 0.
int accel_f32_to_i32(float f) {
  if (isnan(f)) return 0;
  if (f >= 2147483648.0f) return INT_MAX;
  if (f <= -2147483648.0f) return INT_MIN;
  return (int)f;
}

float accel_load(global const uchar* p, uint dtype, ulong i) {
  if (dtype == ACCEL_F32) return ((global const float*)p)[i];
  if (dtype == ACCEL_F16) return accel_f16_to_f32(((global const ushort*)p)[i]);
  if (dtype == ACCEL_BF16) {
    return as_float((uint)((global const ushort*)p)[i] << 16);
  }
  return (float)((global const int*)p)[i];  // i32: nearest even
}

void accel_store(global uchar* p, uint dtype, ulong i, float v) {
  if (dtype == ACCEL_F32) {
    ((global float*)p)[i] = v;
  } else if (dtype == ACCEL_F16) {
    ((global ushort*)p)[i] = accel_f32_to_f16(v);
  } else if (dtype == ACCEL_BF16) {
    ((global ushort*)p)[i] = accel_bits_to_bf16(as_uint(v));
  } else {
    ((global int*)p)[i] = accel_f32_to_i32(v);
  }
}

// dst[i] = (dst_dtype)src[i]. Offsets in elements.
kernel void accel_cast(global uchar* dst, ulong dst_off, uint dst_dtype,
                       global const uchar* src, ulong src_off, uint src_dtype,
                       ulong n) {
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    if (src_dtype == ACCEL_I32) {
      int v = ((global const int*)src)[src_off + i];
      if (dst_dtype == ACCEL_I32) {
        ((global int*)dst)[dst_off + i] = v;
      } else if (dst_dtype == ACCEL_BF16) {
        ((global ushort*)dst)[dst_off + i] = accel_i32_to_bf16(v);
      } else {
        // f32: one rounding. f16: every i32 that rounds to a finite f16
        // (|v| < 65520) is exact in f32, so this is one rounding too.
        accel_store(dst, dst_dtype, dst_off + i, (float)v);
      }
    } else if (src_dtype == dst_dtype) {
      if (src_dtype == ACCEL_F32) {
        ((global uint*)dst)[dst_off + i] =
            ((global const uint*)src)[src_off + i];
      } else {
        ((global ushort*)dst)[dst_off + i] =
            ((global const ushort*)src)[src_off + i];
      }
    } else {
      accel_store(dst, dst_dtype, dst_off + i,
                  accel_load(src, src_dtype, src_off + i));
    }
  }
}

// SCALE: z = alpha * z; AXPY: z = alpha * x + z; ADD: z = x + y;
// MUL: z = x * y. I32 (ADD and MUL only) wraps modulo 2^32.
kernel void accel_elementwise(global uchar* z, ulong z_off,
                              global const uchar* x, ulong x_off,
                              global const uchar* y, ulong y_off, uint dtype,
                              uint op, float alpha, ulong n) {
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    if (dtype == ACCEL_I32) {
      uint a = ((global const uint*)x)[x_off + i];
      uint b = ((global const uint*)y)[y_off + i];
      ((global uint*)z)[z_off + i] = op == ACCEL_OP_ADD ? a + b : a * b;
      continue;
    }
    float r;
    if (op == ACCEL_OP_SCALE) {
      r = alpha * accel_load(z, dtype, z_off + i);
    } else if (op == ACCEL_OP_AXPY) {
      float p = alpha * accel_load(x, dtype, x_off + i);
      r = p + accel_load(z, dtype, z_off + i);
    } else {
      float a = accel_load(x, dtype, x_off + i);
      float b = accel_load(y, dtype, y_off + i);
      r = op == ACCEL_OP_ADD ? a + b : a * b;
    }
    accel_store(z, dtype, z_off + i, r);
  }
}

// Activations of accel_unary (accel_plugin_unary_op_t).
#define ACCEL_UNARY_RELU 0u
#define ACCEL_UNARY_GELU 1u
#define ACCEL_UNARY_SILU 2u

// z = act(x), float dtypes, computed in f32 and rounded once on store.
// ReLU passes -0 and NaN through (x < 0 is false for both). GELU is
// x * erfc(-x / sqrt(2)) / 2, equal to x * (1 + erf(x / sqrt(2))) / 2
// but without the cancellation of 1 + erf for negative x; SiLU is
// x / (1 + exp(-x)). z may be x (in place).
kernel void accel_unary(global uchar* z, ulong z_off, global const uchar* x,
                        ulong x_off, uint dtype, uint op, ulong n) {
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    float v = accel_load(x, dtype, x_off + i);
    float r;
    if (op == ACCEL_UNARY_GELU) {
      r = 0.5f * v * erfc(-v * 0.70710678118654752f);
    } else if (op == ACCEL_UNARY_SILU) {
      r = v / (1.0f + exp(-v));
    } else {
      r = v < 0.0f ? 0.0f : v;
    }
    accel_store(z, dtype, z_off + i, r);
  }
}

// y[r * cols + c] += bias[c]: floats added in f32 and rounded once, I32
// wrapping modulo 2^32. Offsets in elements.
kernel void accel_bias_add(global uchar* y, ulong y_off,
                           global const uchar* bias, ulong bias_off,
                           uint dtype, ulong cols, ulong n) {
  for (ulong i = get_global_id(0); i < n; i += get_global_size(0)) {
    ulong c = i % cols;
    if (dtype == ACCEL_I32) {
      global uint* yi = (global uint*)y + y_off + i;
      *yi += ((global const uint*)bias)[bias_off + c];
    } else {
      float r = accel_load(y, dtype, y_off + i) +
                accel_load(bias, dtype, bias_off + c);
      accel_store(y, dtype, y_off + i, r);
    }
  }
}

// Adds the work-group's per-item sums `sf` and `si` in a fixed tree in
// local memory; lf[0] and li[0] hold the totals afterwards. Every item of
// the group must call it.
void accel_sum_tree(local float* lf, local long* li, uint lid, float sf,
                    long si) {
  lf[lid] = sf;
  li[lid] = si;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint w = ACCEL_SUM_WG / 2; w > 0; w /= 2) {
    if (lid < w) {
      lf[lid] += lf[lid + w];
      li[lid] += li[lid + w];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
}

// First pass of the sum: work-group g sums elements [g * chunk, (g + 1) *
// chunk) into partial[g] (float, or long for I32). Each work-item adds a
// strided slice in order, then the group adds the items' sums in a fixed
// tree, so the result does not depend on scheduling.
kernel __attribute__((reqd_work_group_size(ACCEL_SUM_WG, 1, 1))) void
accel_sum_partial(global const uchar* x, ulong x_off, uint dtype, ulong n,
                  ulong chunk, global uchar* partial) {
  local float lf[ACCEL_SUM_WG];
  local long li[ACCEL_SUM_WG];
  uint lid = (uint)get_local_id(0);
  ulong g = get_group_id(0);
  ulong begin = g * chunk;
  ulong end = min(begin + chunk, n);
  float sf = 0.0f;
  long si = 0;
  for (ulong i = begin + lid; i < end; i += ACCEL_SUM_WG) {
    if (dtype == ACCEL_I32) {
      si += ((global const int*)x)[x_off + i];
    } else {
      sf += accel_load(x, dtype, x_off + i);
    }
  }
  accel_sum_tree(lf, li, lid, sf, si);
  if (lid == 0) {
    if (dtype == ACCEL_I32) {
      ((global long*)partial)[g] = li[0];
    } else {
      ((global float*)partial)[g] = lf[0];
    }
  }
}

// Second pass: one work-group adds the `groups` partial sums in a fixed
// order and stores the total as `dtype` (I32: the low 32 bits of the
// 64-bit sum).
kernel __attribute__((reqd_work_group_size(ACCEL_SUM_WG, 1, 1))) void
accel_sum_final(global const uchar* partial, uint groups, uint dtype,
                global uchar* out, ulong out_off) {
  local float lf[ACCEL_SUM_WG];
  local long li[ACCEL_SUM_WG];
  uint lid = (uint)get_local_id(0);
  float sf = 0.0f;
  long si = 0;
  for (uint i = lid; i < groups; i += ACCEL_SUM_WG) {
    if (dtype == ACCEL_I32) {
      si += ((global const long*)partial)[i];
    } else {
      sf += ((global const float*)partial)[i];
    }
  }
  accel_sum_tree(lf, li, lid, sf, si);
  if (lid == 0) {
    if (dtype == ACCEL_I32) {
      ((global uint*)out)[out_off] = (uint)li[0];
    } else {
      accel_store(out, dtype, out_off, lf[0]);
    }
  }
}
