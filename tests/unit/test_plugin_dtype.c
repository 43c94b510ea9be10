// SPDX-License-Identifier: MIT
//
// The SDK's one-rounding conversions from double (<accel/plugin_dtype.h>):
// accel_plugin_f64_to_f32_odd_bits, in integer code, against the
// floating-point formulation the CPU plugin used before (round to f32,
// step back toward zero if that rounded away, set the last bit), over
// special values and random doubles, most of them near the f32 range; and
// accel_plugin_f64_to_f16/_bf16 on values just above an f16 or bf16 tie,
// where rounding through the nearest f32 would round to even instead.
#include <accel/plugin_dtype.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "test.h"

// The element sizes, by accel_dtype_t value; unknown values give 0.
TEST(dtype_size) {
  ASSERT_EQ(accel_plugin_dtype_size(0), 4);  // f32
  ASSERT_EQ(accel_plugin_dtype_size(1), 2);  // f16
  ASSERT_EQ(accel_plugin_dtype_size(2), 2);  // bf16
  ASSERT_EQ(accel_plugin_dtype_size(3), 4);  // i32
  ASSERT_EQ(accel_plugin_dtype_size(4), 0);
  ASSERT_EQ(accel_plugin_dtype_size(0xffffffffu), 0);
}

// The reference, valid in the default floating-point environment.
static uint32_t reference_odd_bits(double d) {
  float f = (float)d;
  uint32_t u;
  memcpy(&u, &f, sizeof(u));
  if (f != f || (double)f == d) return u;
  if (fabs((double)f) > fabs(d)) u -= 1;  // rounded away from zero
  return u | 1u;
}

TEST(f32_odd_matches_reference) {
  static const double specials[] = {
      0.0, -0.0, 1.0, -1.0, 1.0 + 0x1p-11 + 0x1p-40, 65519.0, 65520.0,
      3e9, -1e-9, 1e300, -1e300, 0x1p-126, 0x1p-130, 0x1.fffffffffffffp-127,
      0x1p-149, 0x1p-150, 0x1.8p-150, 0x1p-1074, 0x1.fffffep127,
      0x1.fffffefffffffp127, 0x1.ffffffp127, 0x1p128, INFINITY, -INFINITY,
      NAN};
  for (size_t i = 0; i < sizeof(specials) / sizeof(specials[0]); i++) {
    ASSERT_EQ(accel_plugin_f64_to_f32_odd_bits(specials[i]),
              reference_odd_bits(specials[i]));
  }
  uint64_t s = 88172645463325252ull;
  for (long i = 0; i < 4000000; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    uint64_t x = s;
    if (i % 4 != 0) {  // an exponent within 2^-160 .. 2^170
      x = (x & 0x800fffffffffffffull) |
          ((uint64_t)(1023 - 160 + (s >> 40) % 330) << 52);
    }
    double d;
    memcpy(&d, &x, sizeof(d));
    uint32_t got = accel_plugin_f64_to_f32_odd_bits(d);
    uint32_t want = reference_odd_bits(d);
    if (got != want) {
      printf("  %a: got %08x, want %08x\n", d, (unsigned)got, (unsigned)want);
    }
    ASSERT_EQ(got, want);
  }
}

TEST(one_rounding_above_ties) {
  // 1 + 2^-11 is an f16 tie (to even: 1.0); a hair above, nearest is up.
  // Through the nearest f32 the hair is lost and the tie goes to 1.0.
  ASSERT_EQ(accel_plugin_f64_to_f16(1.0 + 0x1p-11 + 0x1p-40), 0x3c01);
  ASSERT_EQ(accel_plugin_f32_to_f16((float)(1.0 + 0x1p-11 + 0x1p-40)),
            0x3c00);
  ASSERT_EQ(accel_plugin_f64_to_f16(1.0 + 0x1p-11), 0x3c00);  // the tie
  // bf16: 1 + 2^-8 is a tie; a hair above rounds up to 1 + 2^-7.
  ASSERT_EQ(accel_plugin_f64_to_bf16(1.0 + 0x1p-8 + 0x1p-40), 0x3f81);
  ASSERT_EQ(accel_plugin_f64_to_bf16(1.0 + 0x1p-8), 0x3f80);
  // Signs, overflow and NaN as the f32 conversions give them.
  ASSERT_EQ(accel_plugin_f64_to_f16(-0.0), 0x8000);
  ASSERT_EQ(accel_plugin_f64_to_f16(1e300), 0x7c00);
  ASSERT_EQ(accel_plugin_f64_to_bf16(-1e300), 0xff80);
  ASSERT_EQ(accel_plugin_f64_to_f16(NAN) & 0x7e00, 0x7e00);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
