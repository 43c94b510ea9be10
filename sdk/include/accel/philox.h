// SPDX-License-Identifier: MIT
//
// accel's counter-based random numbers: the reference definition of what
// the `op_rng` entry of <accel/plugin.h> (ABI 1.3) writes, as code that
// compiles unchanged as C11, OpenCL C 1.2, CUDA C++ and HIP C++ (hipcc and
// hiprtc). Every backend runs exactly this code, so the results are
// bit-identical on every device; a third-party plugin includes this header
// (or reproduces it bit for bit) and is checked by accel-conform.
//
// Generator: Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As
// Easy as 1, 2, 3", SC11), multipliers 0xD2511F53, 0xCD9E8D57, Weyl key
// increments 0x9E3779B9, 0xBB67AE85, ten rounds, the key bumped before
// rounds 2 to 10. It maps a 128-bit counter and a 64-bit key to four
// 32-bit words.
//
// Element `i` of a fill with (`seed`, `offset`) takes word `i % 4` of the
// block with
//   counter = offset + floor(i / 4), as a 128-bit integer: word 0 holds
//             bits 0-31, word 1 bits 32-63, word 2 the carry, word 3 zero;
//   key     = {seed & 0xffffffff, seed >> 32}.
// So `offset` counts blocks of four elements, and a fill of `count`
// elements uses ceil(count / 4) blocks: the next independent fill starts
// at `offset + ceil(count / 4)`. Distributions, for word w of the block
// (w[0..3]), computed in binary32 with every operation rounded to nearest
// even, no contraction into fused multiply-add, no flush to zero (the code
// never produces a subnormal), and no library function:
//   bits:    the word itself, stored as i32 (two's complement bits).
//   uniform: u = (w[i%4] >> 8) * 2^-24 in [0, 1); v = a + (b - a) * u with
//            a and b the f32 values of the bounds, one rounding for the
//            subtraction, the product and the sum each; v >= b (possible
//            only through rounding) gives a. So f32 results lie in [a, b).
//   normal:  j = i % 4 uses the pair p = j / 2: u1 = (w[2p] >> 8) + 1 in
//            [1, 2^24] (scaled by 2^-24 into (0, 1]) and the angle
//            2*pi*(w[2p+1] >> 8) * 2^-24; n = sqrt(-2 ln u1) * cos(angle)
//            for even j, * sin(angle) for odd j, with ln, sqrt, cos and
//            sin the fixed polynomial and Newton evaluations below; then
//            v = mean + std * n.
// f16 and bf16 results round the f32 value v once, to nearest even, with
// the integer conversions below (overflow gives infinity). After that
// rounding a uniform f16/bf16 value may equal b.
//
// Accuracy of the normal transform: ln has a relative error below about
// 1e-6, sqrt a few ulp, sin and cos an absolute error below about 1e-6;
// the tail is cut at sqrt(2 * 24 * ln 2) ~= 5.77 standard deviations.
#ifndef ACCEL_PHILOX_H_
#define ACCEL_PHILOX_H_

// Distribution codes of `op_rng` (the `distribution` argument).
#define ACCEL_PHILOX_BITS 0u
#define ACCEL_PHILOX_UNIFORM 1u
#define ACCEL_PHILOX_NORMAL 2u

// Dtype codes (accel_dtype_t; tests/abi checks they agree).
#define ACCEL_PHILOX_F32 0u
#define ACCEL_PHILOX_F16 1u
#define ACCEL_PHILOX_BF16 2u
#define ACCEL_PHILOX_I32 3u

#if defined(__OPENCL_VERSION__)
// Contraction off for this header and what follows it in the program.
#pragma OPENCL FP_CONTRACT OFF
#define ACCEL_PHILOX_FN static inline
typedef uint accel_philox_u32_t;
typedef ulong accel_philox_u64_t;
#define ACCEL_PHILOX_AS_U32(f) as_uint(f)
#define ACCEL_PHILOX_AS_F32(u) as_float(u)
#elif defined(__CUDACC__)
#define ACCEL_PHILOX_FN static __device__ inline
typedef unsigned int accel_philox_u32_t;
typedef unsigned long long accel_philox_u64_t;
#define ACCEL_PHILOX_AS_U32(f) __float_as_uint(f)
#define ACCEL_PHILOX_AS_F32(u) __uint_as_float(u)
#elif defined(__HIPCC__) || defined(__HIPCC_RTC__)
// hiprtc has no headers: bit casts through the compiler's memcpy.
#define ACCEL_PHILOX_FN static __device__ inline
typedef unsigned int accel_philox_u32_t;
typedef unsigned long long accel_philox_u64_t;
ACCEL_PHILOX_FN accel_philox_u32_t accel_philox_as_u32(float f) {
  accel_philox_u32_t u;
  __builtin_memcpy(&u, &f, sizeof(u));
  return u;
}
ACCEL_PHILOX_FN float accel_philox_as_f32(accel_philox_u32_t u) {
  float f;
  __builtin_memcpy(&f, &u, sizeof(f));
  return f;
}
#define ACCEL_PHILOX_AS_U32(f) accel_philox_as_u32(f)
#define ACCEL_PHILOX_AS_F32(u) accel_philox_as_f32(u)
#else
#define ACCEL_PHILOX_FN static inline
typedef unsigned int accel_philox_u32_t;
typedef unsigned long long accel_philox_u64_t;
_Static_assert(sizeof(accel_philox_u32_t) == 4, "32-bit unsigned int");
typedef union accel_philox_pun {
  float f;
  accel_philox_u32_t u;
} accel_philox_pun_t;
ACCEL_PHILOX_FN accel_philox_u32_t accel_philox_as_u32(float f) {
  accel_philox_pun_t p;
  p.f = f;
  return p.u;
}
ACCEL_PHILOX_FN float accel_philox_as_f32(accel_philox_u32_t u) {
  accel_philox_pun_t p;
  p.u = u;
  return p.f;
}
#define ACCEL_PHILOX_AS_U32(f) accel_philox_as_u32(f)
#define ACCEL_PHILOX_AS_F32(u) accel_philox_as_f32(u)
#endif

// One rounding per operation and nothing fused: CUDA's intrinsics are
// never contracted; OpenCL C has the pragma above; in C and HIP each
// operation is its own function (contraction stays within one expression)
// and the builds add -ffp-contract=off.
#if defined(__CUDACC__)
#define ACCEL_PHILOX_MUL(a, b) __fmul_rn((a), (b))
#define ACCEL_PHILOX_ADD(a, b) __fadd_rn((a), (b))
#define ACCEL_PHILOX_SUB(a, b) __fsub_rn((a), (b))
#else
ACCEL_PHILOX_FN float accel_philox_mul(float a, float b) { return a * b; }
ACCEL_PHILOX_FN float accel_philox_add(float a, float b) { return a + b; }
ACCEL_PHILOX_FN float accel_philox_sub(float a, float b) { return a - b; }
#define ACCEL_PHILOX_MUL(a, b) accel_philox_mul((a), (b))
#define ACCEL_PHILOX_ADD(a, b) accel_philox_add((a), (b))
#define ACCEL_PHILOX_SUB(a, b) accel_philox_sub((a), (b))
#endif

// Four output words of one Philox4x32-10 block.
typedef struct accel_philox_block {
  accel_philox_u32_t w[4];
} accel_philox_block_t;

// Philox4x32-10 of counter {c0, c1, c2, c3} under key {k0, k1}.
ACCEL_PHILOX_FN accel_philox_block_t accel_philox4x32_10(
    accel_philox_u32_t c0, accel_philox_u32_t c1, accel_philox_u32_t c2,
    accel_philox_u32_t c3, accel_philox_u32_t k0, accel_philox_u32_t k1) {
  for (int round = 0; round < 10; round++) {
    if (round != 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    accel_philox_u64_t p0 = (accel_philox_u64_t)0xD2511F53u * c0;
    accel_philox_u64_t p1 = (accel_philox_u64_t)0xCD9E8D57u * c2;
    accel_philox_u32_t n0 = (accel_philox_u32_t)(p1 >> 32) ^ c1 ^ k0;
    accel_philox_u32_t n2 = (accel_philox_u32_t)(p0 >> 32) ^ c3 ^ k1;
    c1 = (accel_philox_u32_t)p1;
    c3 = (accel_philox_u32_t)p0;
    c0 = n0;
    c2 = n2;
  }
  accel_philox_block_t out;
  out.w[0] = c0;
  out.w[1] = c1;
  out.w[2] = c2;
  out.w[3] = c3;
  return out;
}

// The block that element `4 * block` of a fill with (`seed`, `offset`)
// starts: counter offset + block as a 128-bit integer, key seed.
ACCEL_PHILOX_FN accel_philox_block_t accel_philox_at(accel_philox_u64_t seed,
                                                     accel_philox_u64_t offset,
                                                     accel_philox_u64_t block) {
  accel_philox_u64_t lo = offset + block;
  accel_philox_u32_t carry = lo < offset ? 1u : 0u;
  return accel_philox4x32_10(
      (accel_philox_u32_t)lo, (accel_philox_u32_t)(lo >> 32), carry, 0u,
      (accel_philox_u32_t)seed, (accel_philox_u32_t)(seed >> 32));
}

// f32 bits to f16 bits, rounding to nearest even; NaN gives a quiet NaN.
// Every case is computed and the result chosen with all-ones masks, with
// no branch, so that a compiler can run it on vector lanes; the shift of
// the subnormal case is held to 14..24 so that it is defined in every
// lane. (Checked equal, for all 2^32 inputs, to the branching form it
// replaced.)
ACCEL_PHILOX_FN accel_philox_u32_t accel_philox_f32_to_f16(float value) {
  accel_philox_u32_t x = ACCEL_PHILOX_AS_U32(value);
  accel_philox_u32_t sign = (x >> 16) & 0x8000u;
  accel_philox_u32_t ax = x & 0x7fffffffu;
  // Normal f16: round the 13 bits dropped to nearest even.
  accel_philox_u32_t m = ax + 0xfffu + ((ax >> 13) & 1u);
  accel_philox_u32_t normal = (m - 0x38000000u) >> 13;
  // Subnormal f16 (2^-25 < |v| < 2^-14): the mantissa shifted right by
  // 126 - exponent (14 to 24), rounded to nearest even.
  accel_philox_u32_t e = ax >> 23;
  accel_philox_u32_t high = 0u - (accel_philox_u32_t)(e >= 112u);
  accel_philox_u32_t low = 0u - (accel_philox_u32_t)(e <= 102u);
  accel_philox_u32_t shift =
      (14u & high) | (24u & low) | ((126u - e) & ~high & ~low);
  accel_philox_u32_t mant = (ax & 0x7fffffu) | 0x800000u;
  accel_philox_u32_t q = mant >> shift;
  accel_philox_u32_t rem = mant & ((1u << shift) - 1u);
  accel_philox_u32_t tie = 1u << (shift - 1u);
  accel_philox_u32_t up =
      ((accel_philox_u32_t)(rem > tie) | ((accel_philox_u32_t)(rem == tie) & q)) &
      1u;
  accel_philox_u32_t zero = 0u - (accel_philox_u32_t)(ax <= 0x33000000u);
  accel_philox_u32_t norm = 0u - (accel_philox_u32_t)(ax >= 0x38800000u);
  accel_philox_u32_t inf = 0u - (accel_philox_u32_t)(ax >= 0x477ff000u);
  accel_philox_u32_t nan = 0u - (accel_philox_u32_t)(ax > 0x7f800000u);
  accel_philox_u32_t mag = (q + up) & ~zero;         // <= 2^-25: zero
  mag = (normal & norm) | (mag & ~norm);             // normal f16
  mag = (0x7c00u & inf) | (mag & ~inf);              // >= 65520: infinity
  mag = (0x7e00u & nan) | (mag & ~nan);              // NaN
  return sign | mag;
}

// f32 bits to bf16 bits, rounding to nearest even; NaN stays a NaN
// (quiet). Branch-free as above.
ACCEL_PHILOX_FN accel_philox_u32_t accel_philox_f32_to_bf16(float value) {
  accel_philox_u32_t x = ACCEL_PHILOX_AS_U32(value);
  accel_philox_u32_t nan =
      0u - (accel_philox_u32_t)((x & 0x7fffffffu) > 0x7f800000u);
  accel_philox_u32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return (((x >> 16) | 0x40u) & nan) | (rounded & ~nan);
}

// Uniform value of word `w` in [a, b) (see the top of the file).
ACCEL_PHILOX_FN float accel_philox_uniform(accel_philox_u32_t w, float a,
                                           float b) {
  float u = ACCEL_PHILOX_MUL((float)(w >> 8), 5.960464478e-08f);  // 2^-24
  float v = ACCEL_PHILOX_ADD(a, ACCEL_PHILOX_MUL(ACCEL_PHILOX_SUB(b, a), u));
  return v < b ? v : a;
}

// ln(k * 2^-24) for k in [1, 2^24]: k = m * 2^e with m in [sqrt(1/2),
// sqrt(2)), ln = (e - 24) ln 2 + ln(1 + t), t = m - 1 (exact), the series
// of ln(1 + t) to t^18 by Horner's rule.
ACCEL_PHILOX_FN float accel_philox_log(accel_philox_u32_t k) {
  accel_philox_u32_t bits = ACCEL_PHILOX_AS_U32((float)k);  // exact
  int e = (int)(bits >> 23) - 127;
  float m = ACCEL_PHILOX_AS_F32((bits & 0x7fffffu) | 0x3f800000u);
  if (m > 1.41421353816986083984375f) {
    m = ACCEL_PHILOX_MUL(m, 0.5f);
    e += 1;
  }
  float t = ACCEL_PHILOX_SUB(m, 1.0f);
  float p = -5.555555597e-02f;
  p = ACCEL_PHILOX_ADD(5.882352963e-02f, ACCEL_PHILOX_MUL(t, p));
  p = ACCEL_PHILOX_ADD(-6.250000000e-02f, ACCEL_PHILOX_MUL(t, p));
  p = ACCEL_PHILOX_ADD(6.666667014e-02f, ACCEL_PHILOX_MUL(t, p));
  p = ACCEL_PHILOX_ADD(-7.142857462e-02f, ACCEL_PHILOX_MUL(t, p));
  p = ACCEL_PHILOX_ADD(7.692307979e-02f, ACCEL_PHILOX_MUL(t, p));
  p = ACCEL_PHILOX_ADD(-8.333333582e-02f, ACCEL_PHILOX_MUL(t, p));
  p = ACCEL_PHILOX_ADD(9.090909362e-02f, ACCEL_PHILOX_MUL(t, p));
  p = ACCEL_PHILOX_ADD(-1.000000015e-01f, ACCEL_PHILOX_MUL(t, p));
  p = ACCEL_PHILOX_ADD(1.111111119e-01f, ACCEL_PHILOX_MUL(t, p));
  p = ACCEL_PHILOX_ADD(-1.250000000e-01f, ACCEL_PHILOX_MUL(t, p));
  p = ACCEL_PHILOX_ADD(1.428571492e-01f, ACCEL_PHILOX_MUL(t, p));
  p = ACCEL_PHILOX_ADD(-1.666666716e-01f, ACCEL_PHILOX_MUL(t, p));
  p = ACCEL_PHILOX_ADD(2.000000030e-01f, ACCEL_PHILOX_MUL(t, p));
  p = ACCEL_PHILOX_ADD(-2.500000000e-01f, ACCEL_PHILOX_MUL(t, p));
  p = ACCEL_PHILOX_ADD(3.333333433e-01f, ACCEL_PHILOX_MUL(t, p));
  p = ACCEL_PHILOX_ADD(-5.000000000e-01f, ACCEL_PHILOX_MUL(t, p));
  p = ACCEL_PHILOX_ADD(1.0f, ACCEL_PHILOX_MUL(t, p));
  p = ACCEL_PHILOX_MUL(t, p);
  float ef = (float)(e - 24);
  // ln 2 = 0.693145751953125 (exact times any |e - 24| <= 24) + lo.
  return ACCEL_PHILOX_ADD(
      ACCEL_PHILOX_MUL(ef, 0.693145751953125f),
      ACCEL_PHILOX_ADD(ACCEL_PHILOX_MUL(ef, 1.428606765e-06f), p));
}

// sqrt(x) for x >= 0: 1/sqrt(x) from the classic integer estimate and
// three Newton steps, times x.
ACCEL_PHILOX_FN float accel_philox_sqrt(float x) {
  if (!(x > 0.0f)) return 0.0f;
  float y = ACCEL_PHILOX_AS_F32(0x5f3759dfu - (ACCEL_PHILOX_AS_U32(x) >> 1));
  float hx = ACCEL_PHILOX_MUL(0.5f, x);
  for (int step = 0; step < 3; step++) {
    float yy = ACCEL_PHILOX_MUL(y, y);
    y = ACCEL_PHILOX_MUL(y, ACCEL_PHILOX_SUB(1.5f, ACCEL_PHILOX_MUL(hx, yy)));
  }
  return ACCEL_PHILOX_MUL(x, y);
}

// sin (odd `j`) or cos (even `j`) of 2*pi*a*2^-24, a < 2^24: the quadrant
// from the top two bits, the series of sin and cos on [0, pi/2) in x^2.
ACCEL_PHILOX_FN float accel_philox_trig(accel_philox_u32_t a,
                                        accel_philox_u32_t j) {
  accel_philox_u32_t q = a >> 22;
  // (a mod 2^22) * pi * 2^-23; the scaling by 2^-23 is exact.
  float x = ACCEL_PHILOX_MUL(
      ACCEL_PHILOX_MUL((float)(a & 0x3fffffu), 1.1920928955078125e-07f),
      3.14159274101257324f);
  float x2 = ACCEL_PHILOX_MUL(x, x);
  float s = 1.605904437e-10f;
  s = ACCEL_PHILOX_ADD(-2.505210794e-08f, ACCEL_PHILOX_MUL(x2, s));
  s = ACCEL_PHILOX_ADD(2.755731884e-06f, ACCEL_PHILOX_MUL(x2, s));
  s = ACCEL_PHILOX_ADD(-1.984127011e-04f, ACCEL_PHILOX_MUL(x2, s));
  s = ACCEL_PHILOX_ADD(8.333333768e-03f, ACCEL_PHILOX_MUL(x2, s));
  s = ACCEL_PHILOX_ADD(-1.666666716e-01f, ACCEL_PHILOX_MUL(x2, s));
  s = ACCEL_PHILOX_ADD(1.0f, ACCEL_PHILOX_MUL(x2, s));
  s = ACCEL_PHILOX_MUL(x, s);
  float c = -1.147074536e-11f;
  c = ACCEL_PHILOX_ADD(2.087675588e-09f, ACCEL_PHILOX_MUL(x2, c));
  c = ACCEL_PHILOX_ADD(-2.755731998e-07f, ACCEL_PHILOX_MUL(x2, c));
  c = ACCEL_PHILOX_ADD(2.480158764e-05f, ACCEL_PHILOX_MUL(x2, c));
  c = ACCEL_PHILOX_ADD(-1.388888923e-03f, ACCEL_PHILOX_MUL(x2, c));
  c = ACCEL_PHILOX_ADD(4.166666791e-02f, ACCEL_PHILOX_MUL(x2, c));
  c = ACCEL_PHILOX_ADD(-5.000000000e-01f, ACCEL_PHILOX_MUL(x2, c));
  c = ACCEL_PHILOX_ADD(1.0f, ACCEL_PHILOX_MUL(x2, c));
  // sin and cos of q * pi/2 + x.
  float sin_v = (q == 0u) ? s : (q == 1u) ? c : (q == 2u) ? -s : -c;
  float cos_v = (q == 0u) ? c : (q == 1u) ? -s : (q == 2u) ? -c : s;
  return (j & 1u) != 0u ? sin_v : cos_v;
}

// Standard normal value of element j (0..3) of `block`.
ACCEL_PHILOX_FN float accel_philox_normal01(accel_philox_block_t block,
                                            accel_philox_u32_t j) {
  accel_philox_u32_t p = j >> 1;
  accel_philox_u32_t w1 = p != 0u ? block.w[2] : block.w[0];
  accel_philox_u32_t w2 = p != 0u ? block.w[3] : block.w[1];
  float ln = accel_philox_log((w1 >> 8) + 1u);
  float r = accel_philox_sqrt(ACCEL_PHILOX_MUL(-2.0f, ln));
  return ACCEL_PHILOX_MUL(r, accel_philox_trig(w2 >> 8, j));
}

// Element j (0..3) of `block` as 32 bits of `dtype` (the low 16 for f16
// and bf16): the value of `distribution` with parameters `a`, `b` (low
// and high, or mean and std), already converted to f32.
ACCEL_PHILOX_FN accel_philox_u32_t
accel_philox_element(accel_philox_block_t block, accel_philox_u32_t j,
                     accel_philox_u32_t distribution, accel_philox_u32_t dtype,
                     float a, float b) {
  accel_philox_u32_t w = block.w[j];
  float v;
  if (distribution == ACCEL_PHILOX_BITS) return w;
  if (distribution == ACCEL_PHILOX_UNIFORM) {
    v = accel_philox_uniform(w, a, b);
  } else {
    v = ACCEL_PHILOX_ADD(a,
                         ACCEL_PHILOX_MUL(b, accel_philox_normal01(block, j)));
  }
  if (dtype == ACCEL_PHILOX_F16) return accel_philox_f32_to_f16(v);
  if (dtype == ACCEL_PHILOX_BF16) return accel_philox_f32_to_bf16(v);
  return ACCEL_PHILOX_AS_U32(v);
}

#endif  // ACCEL_PHILOX_H_
