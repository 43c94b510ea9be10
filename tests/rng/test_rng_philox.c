// SPDX-License-Identifier: MIT
//
// <accel/philox.h> on its own: the Philox4x32-10 known-answer vectors of
// Random123 (kat_vectors), the 128-bit counter carry, the f16 and bf16
// rounding, and the accuracy of the fixed ln, sqrt, sin and cos against
// libm, so a mistyped coefficient cannot hide behind bit-identity (every
// backend would then agree on wrong numbers).
#include <math.h>
#include <string.h>

#include "accel/philox.h"
#include "accel/plugin_dtype.h"
#include "test.h"

static void expect_block(accel_philox_block_t b, uint32_t w0, uint32_t w1,
                         uint32_t w2, uint32_t w3, int* failed) {
  uint32_t want[4] = {w0, w1, w2, w3};
  for (int i = 0; i < 4; i++) {
    if (b.w[i] != want[i]) {
      fprintf(stderr, "word %d: got 0x%08x, want 0x%08x\n", i, b.w[i], want[i]);
      *failed = 1;
    }
  }
}

TEST(known_answers) {
  int failed = 0;
  expect_block(accel_philox4x32_10(0, 0, 0, 0, 0, 0), 0x6627e8d5u, 0xe169c58du,
               0xbc57ac4cu, 0x9b00dbd8u, &failed);
  expect_block(accel_philox4x32_10(0xffffffffu, 0xffffffffu, 0xffffffffu,
                                   0xffffffffu, 0xffffffffu, 0xffffffffu),
               0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu, &failed);
  // Counter and key from the digits of pi (Random123's third vector).
  expect_block(accel_philox4x32_10(0x243f6a88u, 0x85a308d3u, 0x13198a2eu,
                                   0x03707344u, 0xa4093822u, 0x299f31d0u),
               0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u, &failed);
  ASSERT_EQ(failed, 0);
}

TEST(counter_layout) {
  // Block `b` of (seed, offset) is the counter offset + b over 128 bits.
  accel_philox_block_t a = accel_philox_at(0x0123456789abcdefull, 5, 2);
  accel_philox_block_t b =
      accel_philox4x32_10(7, 0, 0, 0, 0x89abcdefu, 0x01234567u);
  ASSERT_MEM_EQ(&a, &b, sizeof(a));
  // Past 2^64 - 1 the carry goes into word 2.
  a = accel_philox_at(1, UINT64_MAX, 3);
  b = accel_philox4x32_10(2, 0, 1, 0, 1, 0);
  ASSERT_MEM_EQ(&a, &b, sizeof(a));
}

static float f16_value(uint32_t h) {
  uint32_t e = (h >> 10) & 31, m = h & 1023;
  float v = e == 0    ? ldexpf((float)m, -24)
            : e == 31 ? (m ? NAN : INFINITY)
                      : ldexpf((float)(m | 1024), (int)e - 25);
  return (h & 0x8000) ? -v : v;
}

TEST(f16_and_bf16_round_to_nearest_even) {
  // Every f16: exact round trip; midpoints between neighbours go to even.
  for (uint32_t h = 0; h < 0x7c00; h++) {
    float v = f16_value(h);
    ASSERT_EQ(accel_philox_f32_to_f16(v), h);
    ASSERT_EQ(accel_philox_f32_to_f16(-v), h | 0x8000);
    float next = f16_value(h + 1);
    float mid = (v + next) / 2;  // exact in f32
    uint32_t even = (h & 1) ? h + 1 : h;
    ASSERT_EQ(accel_philox_f32_to_f16(mid), even);
  }
  ASSERT_EQ(accel_philox_f32_to_f16(65520.0f), 0x7c00u);
  ASSERT_EQ(accel_philox_f32_to_f16(65519.996f), 0x7bffu);
  ASSERT_EQ(accel_philox_f32_to_f16(INFINITY), 0x7c00u);
  ASSERT_EQ(accel_philox_f32_to_bf16(1.0f), 0x3f80u);
  ASSERT_EQ(accel_philox_f32_to_bf16(accel_philox_as_f32(0x3f808000u)),
            0x3f80u);  // tie to even
  ASSERT_EQ(accel_philox_f32_to_bf16(accel_philox_as_f32(0x3f818000u)),
            0x3f82u);  // tie to even, upwards
  ASSERT_EQ(accel_philox_f32_to_bf16(accel_philox_as_f32(0x3f808001u)),
            0x3f81u);
}

// The header's f16 and bf16 conversions (written without branches, so
// that they vectorise) against the SDK's branching ones of
// <accel/plugin_dtype.h>: both signs, every exponent, mantissas spread
// over the range and, for every right shift a subnormal f16 takes (13 to
// 24 bits dropped), the patterns on, just below and just above the
// rounding midpoint with an odd and an even kept part. NaN included.
TEST(f16_and_bf16_agree_with_the_sdk_conversions) {
  for (uint32_t sign = 0; sign < 2; sign++) {
    for (uint32_t e = 0; e < 256; e++) {
      // 2048 spread; per shift, odd/even kept part x 3 near the midpoint
      // x with and without the top mantissa bit.
      uint32_t mants[2048 + 12 * 2 * 3 * 2];
      size_t n = 0;
      for (uint32_t k = 0; k < 2048; k++) mants[n++] = (k * 4099u) & 0x7fffffu;
      for (uint32_t drop = 13; drop <= 24; drop++) {
        uint32_t mid = 1u << (drop - 1);
        for (uint32_t odd = 0; odd < 2; odd++) {
          uint32_t kept = odd << drop;
          uint32_t near[3] = {mid - 1, mid, mid + 1};
          for (int j = 0; j < 3; j++) {
            mants[n++] = (kept | near[j]) & 0x7fffffu;
            mants[n++] = (kept | near[j] | 0x400000u) & 0x7fffffu;
          }
        }
      }
      for (size_t i = 0; i < n; i++) {
        uint32_t bits = sign << 31 | e << 23 | mants[i];
        float v = accel_philox_as_f32(bits);
        if (accel_philox_f32_to_f16(v) != accel_plugin_f32_to_f16(v) ||
            accel_philox_f32_to_bf16(v) != accel_plugin_f32_to_bf16(v)) {
          fprintf(stderr, "f32 0x%08x: f16 0x%04x / 0x%04x, bf16 0x%04x / "
                  "0x%04x (header / SDK)\n", bits,
                  (unsigned)accel_philox_f32_to_f16(v),
                  (unsigned)accel_plugin_f32_to_f16(v),
                  (unsigned)accel_philox_f32_to_bf16(v),
                  (unsigned)accel_plugin_f32_to_bf16(v));
          ASSERT(0);
        }
      }
    }
  }
}

TEST(transcendentals_are_accurate) {
  double worst_ln = 0, worst_trig = 0, worst_sqrt = 0;
  for (uint32_t k = 1; k <= (1u << 24); k += (k < 4096 ? 1 : 4099)) {
    double want = log(ldexp(k, -24));
    double got = accel_philox_log(k);
    double err = fabs(got - want) / (want == 0 ? 1 : fabs(want));
    if (want != 0 && err > worst_ln) worst_ln = err;
    if (want == 0) ASSERT(got == 0);
  }
  ASSERT_EQ(accel_philox_log(1u << 24), 0);
  for (uint32_t a = 0; a < (1u << 24); a += 997) {
    double angle = 2 * 3.14159265358979323846 * ldexp(a, -24);
    double es = fabs(accel_philox_trig(a, 1) - sin(angle));
    double ec = fabs(accel_philox_trig(a, 0) - cos(angle));
    if (es > worst_trig) worst_trig = es;
    if (ec > worst_trig) worst_trig = ec;
  }
  for (float x = 1e-6f; x < 40.0f; x *= 1.01f) {
    double err = fabs(accel_philox_sqrt(x) - sqrt(x)) / sqrt(x);
    if (err > worst_sqrt) worst_sqrt = err;
  }
  ASSERT(accel_philox_sqrt(0.0f) == 0.0f);
  fprintf(stderr, "worst: ln %.3g (relative), sin/cos %.3g, sqrt %.3g\n",
          worst_ln, worst_trig, worst_sqrt);
  ASSERT(worst_ln < 2e-6);
  ASSERT(worst_trig < 1e-6);
  ASSERT(worst_sqrt < 1e-6);
}

TEST(distributions_have_their_moments) {
  const int n = 1 << 20;
  double us = 0, uss = 0, ns = 0, nss = 0, umin = 1, umax = 0;
  for (int i = 0; i < n; i += 4) {
    accel_philox_block_t b = accel_philox_at(42, 0, (uint64_t)i / 4);
    for (uint32_t j = 0; j < 4; j++) {
      float u = accel_philox_as_f32(accel_philox_element(
          b, j, ACCEL_PHILOX_UNIFORM, ACCEL_PHILOX_F32, 0.0f, 1.0f));
      float z = accel_philox_as_f32(accel_philox_element(
          b, j, ACCEL_PHILOX_NORMAL, ACCEL_PHILOX_F32, 0.0f, 1.0f));
      us += u, uss += (double)u * u, ns += z, nss += (double)z * z;
      if (u < umin) umin = u;
      if (u > umax) umax = u;
    }
  }
  double um = us / n, uv = uss / n - um * um;
  double nm = ns / n, nv = nss / n - nm * nm;
  fprintf(stderr, "uniform mean %.5f var %.5f; normal mean %.5f var %.5f\n", um,
          uv, nm, nv);
  ASSERT(fabs(um - 0.5) < 0.002 && fabs(uv - 1.0 / 12) < 0.002);
  ASSERT(fabs(nm) < 0.005 && fabs(nv - 1) < 0.005);
  ASSERT(umin >= 0 && umax < 1);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
