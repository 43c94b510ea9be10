// SPDX-License-Identifier: MIT
//
// Special values through fill, cast and add, compared bit for bit where
// the rules fix the bits: the ops.* checks draw random inputs in [-1, 1]
// (casts add a quiet NaN, infinities and a few more) and compare as
// doubles, where -0 equals +0 and any NaN is as good as another, so these
// cases never reach them:
// - NaNs whose payload sits in the low bits (0x7fffffff, 0xffffffff,
//   0x7f800001: what a memset of 0xff or a signalling NaN leaves) must
//   stay NaNs in every float type and give 0 as I32 (<accel/plugin_dtype.h>:
//   "NaN stays NaN"; plugin.h: "NaN gives 0"). Rounding to bf16 by adding
//   0x7fff carries such a NaN into -0 or +0, and moving an f32 payload
//   into f16 by a shift alone turns 0x7f800001 into infinity;
// - zeros keep their sign (plugin_dtype.h: "zeros keep their sign",
//   values too small for f16 "round to a zero of the same sign"): a fill
//   of -0.0 is 0x8000 / 0x80000000, not a memset of zero bytes, and casts
//   of -0 and of tiny negatives give -0;
// - float to I32 saturates at exactly 2^31 (which f32 and bf16 hold:
//   converting it as if it were in range gives INT32_MIN on x86) and just
//   inside the range converts exactly; I32 to F32 rounds integers past
//   2^24 to nearest even, not toward zero (the random casts of ops.cast.*
//   stay within 2^20, where every conversion is exact).
// Casts, each type to itself included (a copy that must not touch more
// than its elements), run with both operands one element into their
// buffers and a guard element either side that must stay untouched. As in
// the ops.* checks, a dtype or op the device refuses (UNSUPPORTED) is left
// out; whatever it accepts must be right.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

enum { CONFORM_SPECIAL_MAX = 40 };

// What an output element must be: these exact bits, or any NaN.
typedef struct conform_special_want {
  uint32_t bits;
  bool any_nan;
} conform_special_want_t;

static uint32_t conform_special_get(const unsigned char* p, size_t es,
                                    size_t i) {
  uint32_t v = 0;
  if (es == 2) {
    uint16_t h;
    memcpy(&h, p + i * 2, 2);
    v = h;
  } else {
    memcpy(&v, p + i * 4, 4);
  }
  return v;
}

static void conform_special_put(unsigned char* p, size_t es, size_t i,
                                uint32_t v) {
  if (es == 2) {
    uint16_t h = (uint16_t)v;
    memcpy(p + i * 2, &h, 2);
  } else {
    memcpy(p + i * 4, &v, 4);
  }
}

static bool conform_special_is_nan(accel_dtype_t dtype, uint32_t bits) {
  switch (dtype) {
    case ACCEL_DTYPE_F32:
      return (bits & 0x7fffffffu) > 0x7f800000u;
    case ACCEL_DTYPE_F16:
      return (bits & 0x7fffu) > 0x7c00u;
    case ACCEL_DTYPE_BF16:
      return (bits & 0x7fffu) > 0x7f80u;
    default:
      return false;
  }
}

// The value of `bits` in `dtype`, for messages.
static double conform_special_value(accel_dtype_t dtype, uint32_t bits) {
  unsigned char b[4];
  conform_special_put(b, accel_dtype_size(dtype), 0, bits);
  return conform_load(b, dtype, 0);
}

// The bits of `v` stored as `dtype` by the SDK's rounding
// (<accel/plugin_dtype.h>, through conform_store).
static uint32_t conform_special_bits(accel_dtype_t dtype, double v) {
  unsigned char b[4];
  conform_store(b, dtype, 0, v);
  return conform_special_get(b, accel_dtype_size(dtype), 0);
}

// Compares `n` outputs (`got`, with a guard element either side that must
// still hold `guard`) with `want`. FAIL with the detail written, or PASS.
static conform_result_t conform_special_compare(
    conform_ctx_t* ctx, const char* what, accel_dtype_t in_dtype,
    const uint32_t* in, accel_dtype_t dtype, const unsigned char* got,
    uint32_t guard, const conform_special_want_t* want, size_t n) {
  size_t es = accel_dtype_size(dtype);
  uint32_t g0 = conform_special_get(got, es, 0);
  uint32_t g1 = conform_special_get(got, es, n + 1);
  if (g0 != guard || g1 != guard) {
    return conform_report(ctx, CONFORM_FAIL,
                          "%s: the element %s the output range changed "
                          "(0x%x, was 0x%x)",
                          what, g0 != guard ? "before" : "after",
                          g0 != guard ? g0 : g1, guard);
  }
  for (size_t i = 0; i < n; i++) {
    uint32_t v = conform_special_get(got, es, i + 1);
    bool ok =
        want[i].any_nan ? conform_special_is_nan(dtype, v) : v == want[i].bits;
    if (ok) continue;
    char input[64] = "";
    if (in != NULL) {
      snprintf(input, sizeof(input), " of %s 0x%x (%g)",
               accel_dtype_name(in_dtype), in[i],
               conform_special_value(in_dtype, in[i]));
    }
    if (want[i].any_nan) {
      return conform_report(ctx, CONFORM_FAIL,
                            "%s%s gave 0x%x (%g), expected a NaN (NaN "
                            "stays NaN, whatever its payload)",
                            what, input, v, conform_special_value(dtype, v));
    }
    return conform_report(
        ctx, CONFORM_FAIL, "%s%s gave 0x%x (%.10g), expected 0x%x (%.10g)%s",
        what, input, v, conform_special_value(dtype, v), want[i].bits,
        conform_special_value(dtype, want[i].bits),
        want[i].bits == 0x8000u || want[i].bits == 0x80000000u
            ? ": zeros keep their sign"
            : "");
  }
  return CONFORM_PASS;
}

// Output buffer of n + 2 elements of `dtype`, each `guard`.
static accel_status_t conform_special_out(conform_ctx_t* ctx,
                                          accel_dtype_t dtype, size_t n,
                                          uint32_t guard,
                                          accel_buffer_t** out) {
  size_t es = accel_dtype_size(dtype);
  unsigned char init[(CONFORM_SPECIAL_MAX + 2) * 4];
  for (size_t i = 0; i < n + 2; i++) conform_special_put(init, es, i, guard);
  accel_status_t status = conform_buffer(ctx, ctx->device, (n + 2) * es, out);
  if (status == ACCEL_OK)
    status = accel_buffer_write(*out, 0, init, (n + 2) * es);
  return status;
}

// An input buffer of n + 1 elements: one junk element, then `in`.
static accel_status_t conform_special_in(conform_ctx_t* ctx,
                                         accel_dtype_t dtype,
                                         const uint32_t* in, size_t n,
                                         accel_buffer_t** out) {
  size_t es = accel_dtype_size(dtype);
  unsigned char init[(CONFORM_SPECIAL_MAX + 1) * 4];
  conform_special_put(init, es, 0, 0x3c003c00u);  // 1.0 in f16, 0 junk
  for (size_t i = 0; i < n; i++) conform_special_put(init, es, i + 1, in[i]);
  accel_status_t status = conform_buffer(ctx, ctx->device, (n + 1) * es, out);
  if (status == ACCEL_OK)
    status = accel_buffer_write(*out, 0, init, (n + 1) * es);
  return status;
}

// Waits for `stream` and reads the n + 2 output elements into `got`.
static conform_result_t conform_special_finish(
    conform_ctx_t* ctx, accel_stream_t* stream, accel_buffer_t* out,
    accel_dtype_t dtype, size_t n, const char* what, unsigned char* got) {
  accel_status_t status = conform_stream_wait(ctx, stream);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, what);
  status = accel_buffer_read(out, 0, got, (n + 2) * accel_dtype_size(dtype));
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, what);
  return CONFORM_PASS;
}

// Casts `n` elements `in` of `src` to `dst` and compares with `want`.
// UNSUPPORTED (detail written) when the device refuses the cast.
static conform_result_t conform_special_cast(
    conform_ctx_t* ctx, accel_stream_t* stream, accel_dtype_t dst,
    accel_dtype_t src, const uint32_t* in, const conform_special_want_t* want,
    size_t n) {
  char what[48];
  snprintf(what, sizeof(what), "cast %s to %s", accel_dtype_name(src),
           accel_dtype_name(dst));
  const uint32_t guard =
      0xa5a5a5a5u & (accel_dtype_size(dst) == 2 ? 0xffffu : ~0u);
  accel_buffer_t *bi = NULL, *bo = NULL;
  accel_status_t status = conform_special_in(ctx, src, in, n, &bi);
  if (status == ACCEL_OK) status = conform_special_out(ctx, dst, n, guard, &bo);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  status = accel_op_cast(stream, bo, accel_dtype_size(dst), dst, bi,
                         accel_dtype_size(src), src, n);
  if (status == ACCEL_ERROR_UNSUPPORTED) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "%s: %s", what,
                          accel_last_error());
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, what);
  unsigned char got[(CONFORM_SPECIAL_MAX + 2) * 4];
  conform_result_t r =
      conform_special_finish(ctx, stream, bo, dst, n, what, got);
  if (r != CONFORM_PASS) return r;
  return conform_special_compare(ctx, what, src, in, dst, got, guard, want, n);
}

static const accel_dtype_t conform_special_types[] = {
    ACCEL_DTYPE_F32, ACCEL_DTYPE_F16, ACCEL_DTYPE_BF16, ACCEL_DTYPE_I32};

// Tallies one sub-case: PASS and UNSUPPORTED go on, FAIL stops.
typedef struct conform_special_tally {
  size_t ran, refused;
} conform_special_tally_t;

static bool conform_special_count(conform_special_tally_t* t,
                                  conform_result_t r) {
  if (r == CONFORM_PASS) t->ran++;
  if (r == CONFORM_UNSUPPORTED) t->refused++;
  return r == CONFORM_PASS || r == CONFORM_UNSUPPORTED;
}

static conform_result_t conform_special_done(conform_ctx_t* ctx,
                                             const conform_special_tally_t* t,
                                             const char* what) {
  if (t->ran == 0) {
    if (t->refused == 0) {
      return conform_report(ctx, CONFORM_UNSUPPORTED, "nothing ran: %s", what);
    }
    return CONFORM_UNSUPPORTED;  // the last refusal's detail stands
  }
  return conform_report(ctx, CONFORM_PASS, "%zu %s bit for bit%s", t->ran, what,
                        t->refused ? " (some refused)" : "");
}

// ---------------------------------------------------------------------------
// ops.specials.nan
// ---------------------------------------------------------------------------

// NaNs of each float type, low payload bits included, then +inf, -inf and
// 1.0, which must convert exactly beside them.
static size_t conform_special_nans(accel_dtype_t dtype, uint32_t* out) {
  static const uint32_t f32[] = {
      0x7fc00000u, 0xffc00000u, 0x7fffffffu, 0xffffffffu, 0x7f800001u,
      0xff800001u, 0x7fbfffffu, 0x7fff8000u, 0x7f80ffffu, 0xffff7fffu,
      0x7f800000u, 0xff800000u, 0x3f800000u};
  static const uint32_t f16[] = {0x7e00u, 0xfe00u, 0x7fffu, 0xffffu, 0x7c01u,
                                 0xfc01u, 0x7dffu, 0x7c00u, 0xfc00u, 0x3c00u};
  static const uint32_t bf16[] = {0x7fc0u, 0xffc0u, 0x7fffu, 0xffffu, 0x7f81u,
                                  0xff81u, 0x7fbfu, 0x7f80u, 0xff80u, 0x3f80u};
  const uint32_t* src = dtype == ACCEL_DTYPE_F32   ? f32
                        : dtype == ACCEL_DTYPE_F16 ? f16
                                                   : bf16;
  size_t n = dtype == ACCEL_DTYPE_F32   ? sizeof(f32) / sizeof(f32[0])
             : dtype == ACCEL_DTYPE_F16 ? sizeof(f16) / sizeof(f16[0])
                                        : sizeof(bf16) / sizeof(bf16[0]);
  memcpy(out, src, n * sizeof(*out));
  return n;
}

// What `in` of `src` must become as `dst`: any NaN for a NaN (0 as I32),
// else the bits of its value. Every input of these checks that is not a
// NaN (infinities, 1.0, signed zeros, the values that round to a zero) is
// exact as a double, so the SDK's rounding of it (conform_store,
// <accel/plugin_dtype.h>) fixes the bits.
static conform_special_want_t conform_special_want(accel_dtype_t src,
                                                   uint32_t in,
                                                   accel_dtype_t dst) {
  conform_special_want_t w = {0, false};
  if (conform_special_is_nan(src, in)) {
    w.any_nan = dst != ACCEL_DTYPE_I32;  // I32: 0
    return w;
  }
  w.bits = conform_special_bits(dst, conform_special_value(src, in));
  return w;
}

// Casts the `n` values `in` of `src` to each type, comparing bit for bit
// (conform_special_want); PASS when every cast passed or was refused.
static conform_result_t conform_special_casts(conform_ctx_t* ctx,
                                              accel_stream_t* stream,
                                              accel_dtype_t src,
                                              const uint32_t* in, size_t n,
                                              conform_special_tally_t* tally) {
  for (size_t d = 0; d < 4; d++) {
    accel_dtype_t dst = conform_special_types[d];
    conform_special_want_t want[CONFORM_SPECIAL_MAX];
    for (size_t i = 0; i < n; i++) {
      want[i] = conform_special_want(src, in[i], dst);
    }
    conform_result_t r =
        conform_special_cast(ctx, stream, dst, src, in, want, n);
    if (!conform_special_count(tally, r)) return r;
  }
  return CONFORM_PASS;
}

static conform_result_t conform_specials_nan(conform_ctx_t* ctx,
                                             const void* arg) {
  (void)arg;
  accel_stream_t* stream = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "stream");
  conform_special_tally_t tally = {0, 0};
  for (size_t s = 0; s < 3; s++) {
    accel_dtype_t src = conform_special_types[s];
    uint32_t in[CONFORM_SPECIAL_MAX];
    size_t n = conform_special_nans(src, in);
    conform_result_t r = conform_special_casts(ctx, stream, src, in, n, &tally);
    if (r != CONFORM_PASS) return r;
    // x + 1 with x one of the NaNs: computed in f32 and rounded on store,
    // so the NaN reaches the store with its payload.
    uint32_t ones[CONFORM_SPECIAL_MAX];
    conform_special_want_t want[CONFORM_SPECIAL_MAX];
    uint32_t one = in[n - 1];  // 1.0
    for (size_t i = 0; i < n; i++) {
      ones[i] = one;
      want[i] = conform_special_want(src, in[i], src);
      if (!want[i].any_nan) {
        double v = conform_special_value(src, in[i]) + 1.0;
        want[i].bits = conform_special_bits(src, v);
      }
    }
    char what[32];
    snprintf(what, sizeof(what), "add %s", accel_dtype_name(src));
    size_t es = accel_dtype_size(src);
    const uint32_t guard = es == 2 ? 0xa5a5u : 0xa5a5a5a5u;
    accel_buffer_t *bx = NULL, *by = NULL, *bz = NULL;
    status = conform_special_in(ctx, src, in, n, &bx);
    if (status == ACCEL_OK) status = conform_special_in(ctx, src, ones, n, &by);
    if (status == ACCEL_OK)
      status = conform_special_out(ctx, src, n, guard, &bz);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
    status = accel_op_add(stream, bz, es, bx, es, by, es, src, n);
    if (status == ACCEL_ERROR_UNSUPPORTED) {
      r = conform_report(ctx, CONFORM_UNSUPPORTED, "%s: %s", what,
                         accel_last_error());
    } else if (status != ACCEL_OK) {
      r = conform_fail_status(ctx, status, what);
    } else {
      unsigned char got[(CONFORM_SPECIAL_MAX + 2) * 4];
      r = conform_special_finish(ctx, stream, bz, src, n, what, got);
      if (r == CONFORM_PASS) {
        r = conform_special_compare(ctx, what, src, in, src, got, guard, want,
                                    n);
      }
    }
    if (!conform_special_count(&tally, r)) return r;
  }
  return conform_special_done(ctx, &tally, "casts and adds of NaN payloads");
}

// ---------------------------------------------------------------------------
// ops.specials.signed_zero
// ---------------------------------------------------------------------------

// Fills `n` elements with `value` and compares every one with `bits`.
static conform_result_t conform_special_fill(conform_ctx_t* ctx,
                                             accel_stream_t* stream,
                                             accel_dtype_t dtype, double value,
                                             uint32_t bits, size_t n) {
  char what[48];
  snprintf(what, sizeof(what), "fill %s with %g", accel_dtype_name(dtype),
           value);
  size_t es = accel_dtype_size(dtype);
  const uint32_t guard = es == 2 ? 0xa5a5u : 0xa5a5a5a5u;
  accel_buffer_t* bo = NULL;
  accel_status_t status = conform_special_out(ctx, dtype, n, guard, &bo);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  status = accel_op_fill(stream, bo, es, dtype, n, value);
  if (status == ACCEL_ERROR_UNSUPPORTED) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "%s: %s", what,
                          accel_last_error());
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, what);
  unsigned char got[(CONFORM_SPECIAL_MAX + 2) * 4];
  conform_result_t r =
      conform_special_finish(ctx, stream, bo, dtype, n, what, got);
  if (r != CONFORM_PASS) return r;
  conform_special_want_t want[CONFORM_SPECIAL_MAX];
  for (size_t i = 0; i < n; i++)
    want[i] = (conform_special_want_t){bits, false};
  return conform_special_compare(ctx, what, dtype, NULL, dtype, got, guard,
                                 want, n);
}

// Zeros of both signs and values that round to a zero in f16 (-2^-26,
// -2^-24 in f16, the smallest negative f32 subnormal, which flushes to -0
// as well) or to 0 as I32 (-0.5). No input is a subnormal whose exact
// value a device that flushes f32 subnormals would lose.
static size_t conform_special_zeros(accel_dtype_t dtype, uint32_t* out) {
  static const uint32_t f32[] = {
      0x80000000u, 0x00000000u,
      0xb2800000u,  // -2^-26: below half the smallest f16 subnormal
      0x32800000u,  // +2^-26
      0x80000001u,  // the smallest negative f32 subnormal
      0xbf000000u,  // -0.5: 0 as I32
  };
  static const uint32_t h16[] = {0x8000u, 0x0000u, 0x8001u, 0x0001u};
  static const uint32_t b16[] = {0x8000u, 0x0000u, 0xb280u, 0xbf00u};
  const uint32_t* src = dtype == ACCEL_DTYPE_F32   ? f32
                        : dtype == ACCEL_DTYPE_F16 ? h16
                                                   : b16;
  size_t n = dtype == ACCEL_DTYPE_F32 ? 6 : 4;
  memcpy(out, src, n * sizeof(*out));
  return n;
}

static conform_result_t conform_specials_signed_zero(conform_ctx_t* ctx,
                                                     const void* arg) {
  (void)arg;
  accel_stream_t* stream = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "stream");
  conform_special_tally_t tally = {0, 0};
  // 37 elements: past the vector widths and unrolled loops of a fill.
  static const uint32_t neg_zero[] = {0x80000000u, 0x8000u, 0x8000u, 0u};
  for (size_t t = 0; t < 4; t++) {
    accel_dtype_t dtype = conform_special_types[t];
    conform_result_t r =
        conform_special_fill(ctx, stream, dtype, -0.0, neg_zero[t], 37);
    if (!conform_special_count(&tally, r)) return r;
  }
  for (size_t s = 0; s < 3; s++) {
    accel_dtype_t src = conform_special_types[s];
    uint32_t in[CONFORM_SPECIAL_MAX];
    size_t n = conform_special_zeros(src, in);
    conform_result_t r = conform_special_casts(ctx, stream, src, in, n, &tally);
    if (r != CONFORM_PASS) return r;
  }
  return conform_special_done(ctx, &tally, "fills and casts of signed zeros");
}

// ---------------------------------------------------------------------------
// ops.specials.i32_limits
// ---------------------------------------------------------------------------

static conform_result_t conform_specials_i32_limits(conform_ctx_t* ctx,
                                                    const void* arg) {
  (void)arg;
  accel_stream_t* stream = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "stream");
  conform_special_tally_t tally = {0, 0};
  // 2^31, -2^31, the largest f32 below 2^31 and its negative, the f32
  // neighbours outside the range, 2^31 + 2^24, and small ones.
  static const uint32_t f32[] = {
      0x4f000000u, 0xcf000000u, 0x4effffffu, 0xceffffffu, 0x4f000001u,
      0xcf000001u, 0x4f010000u, 0xbf7fffffu, 0x3f7fffffu, 0xbfc00000u};
  static const int32_t f32_want[] = {
      INT32_MAX, INT32_MIN, 2147483520, -2147483520, INT32_MAX,
      INT32_MIN, INT32_MAX, 0,          0,           -1};
  // bf16: 2^31, -2^31, the largest bf16 below 2^31 and its negative.
  static const uint32_t bf16[] = {0x4f00u, 0xcf00u, 0x4effu, 0xceffu};
  static const int32_t bf16_want[] = {INT32_MAX, INT32_MIN, 2139095040,
                                      -2139095040};
  for (int b = 0; b < 2; b++) {
    accel_dtype_t src = b ? ACCEL_DTYPE_BF16 : ACCEL_DTYPE_F32;
    const uint32_t* in = b ? bf16 : f32;
    const int32_t* w = b ? bf16_want : f32_want;
    size_t n = b ? 4 : 10;
    conform_special_want_t want[CONFORM_SPECIAL_MAX];
    for (size_t i = 0; i < n; i++) {
      want[i] = (conform_special_want_t){(uint32_t)w[i], false};
    }
    conform_result_t r =
        conform_special_cast(ctx, stream, ACCEL_DTYPE_I32, src, in, want, n);
    if (!conform_special_count(&tally, r)) return r;
  }
  // I32 to F32 past 2^24 rounds to nearest even (plugin.h), not toward
  // zero: ties both ways, the values either side of one, and the limits.
  static const int32_t ints[] = {
      16777217,   16777219,   -16777219,       33554435,    2147483583,
      2147483584, 2147483647, -2147483647 - 1, -2147483584, 1234567891};
  size_t n_ints = sizeof(ints) / sizeof(ints[0]);
  uint32_t int_bits[CONFORM_SPECIAL_MAX];
  conform_special_want_t int_want[CONFORM_SPECIAL_MAX];
  for (size_t i = 0; i < n_ints; i++) {
    float f = (float)(double)ints[i];  // one rounding, to nearest even
    int_bits[i] = (uint32_t)ints[i];
    memcpy(&int_want[i].bits, &f, sizeof(f));
    int_want[i].any_nan = false;
  }
  conform_result_t ri =
      conform_special_cast(ctx, stream, ACCEL_DTYPE_F32, ACCEL_DTYPE_I32,
                           int_bits, int_want, n_ints);
  if (!conform_special_count(&tally, ri)) return ri;
  for (size_t i = 0; i < n_ints; i++) int_want[i].bits = int_bits[i];
  ri = conform_special_cast(ctx, stream, ACCEL_DTYPE_I32, ACCEL_DTYPE_I32,
                            int_bits, int_want, n_ints);  // a plain copy
  if (!conform_special_count(&tally, ri)) return ri;
  // I32 fills of the double values at and around the limits.
  static const double fills[] = {2147483648.0, 2147483647.5, -2147483648.5,
                                 -2147483649.0, 2147483646.75};
  static const int32_t fill_want[] = {INT32_MAX, INT32_MAX, INT32_MIN,
                                      INT32_MIN, 2147483646};
  for (size_t i = 0; i < sizeof(fills) / sizeof(fills[0]); i++) {
    conform_result_t r = conform_special_fill(
        ctx, stream, ACCEL_DTYPE_I32, fills[i], (uint32_t)fill_want[i], 5);
    if (!conform_special_count(&tally, r)) return r;
  }
  return conform_special_done(ctx, &tally, "i32 casts and fills at the limits");
}

static const conform_check_t conform_specials[] = {
    {"ops.specials.nan", conform_specials_nan, NULL},
    {"ops.specials.signed_zero", conform_specials_signed_zero, NULL},
    {"ops.specials.i32_limits", conform_specials_i32_limits, NULL},
};

const conform_check_t* conform_specials_checks(size_t* out_count) {
  *out_count = sizeof(conform_specials) / sizeof(conform_specials[0]);
  return conform_specials;
}
