// SPDX-License-Identifier: MIT
//
// Rounding on exact ties: fill and i32 casts must round ONCE, from the
// double (or integer) value, to nearest even. The fill values are built to
// sit just off the midpoint of two f16 (bf16) neighbours, so close that
// rounding them to f32 first lands exactly on the midpoint and a second
// rounding then goes the wrong way (to even). The i32 values include ties
// of the target format and integers above 2^24, where i32 -> f32 -> bf16
// rounds twice. f32 casts must round to nearest even from f32 values on
// and next to the midpoints (not truncate). Results are compared bit for
// bit with the SDK's conversions (<accel/plugin_dtype.h>). And a sum of
// f16 (bf16) values must not accumulate in f16 (bf16), nor a long f32
// sum in one running f32 total. scale and axpy must use alpha as given,
// in f32, not rounded to f16 (bf16) first.
#include <accel/plugin_dtype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

enum { CONFORM_TIES = 48 };

// Values just above and below the midpoints after the f16 (bf16) pattern
// of each base, with both signs. Returns how many it wrote.
static size_t conform_tie_values(bool bf16, double* out) {
  static const uint16_t f16_bases[] = {0x3c00, 0x3c01, 0x4000, 0x5640, 0x0001,
                                       0x0200, 0x7bfe, 0x1234};
  static const uint16_t bf16_bases[] = {0x3f80, 0x3f81, 0x4000, 0x4b40,
                                        0x0080, 0x7f7e, 0x2345, 0x3a01};
  const uint16_t* bases = bf16 ? bf16_bases : f16_bases;
  size_t n = 0;
  for (size_t i = 0; i < 8; i++) {
    double lo = bf16 ? accel_plugin_bf16_to_f32(bases[i])
                     : accel_plugin_f16_to_f32(bases[i]);
    double hi = bf16 ? accel_plugin_bf16_to_f32((uint16_t)(bases[i] + 1))
                     : accel_plugin_f16_to_f32((uint16_t)(bases[i] + 1));
    double mid = (lo + hi) / 2;          // exact in double
    double delta = (hi - lo) * 0x1p-30;  // lost when rounding to f32
    const double v[3] = {mid + delta, mid - delta, mid};
    for (int k = 0; k < 3; k++) {
      out[n++] = v[k];
      out[n++] = -v[k];
    }
  }
  return n;
}

// Reads `count` 16-bit results and compares with `want`.
static bool conform_round_compare(conform_ctx_t* ctx, accel_buffer_t* buffer,
                                  const uint16_t* want, const double* inputs,
                                  const int32_t* ints, size_t count,
                                  const char* what) {
  uint16_t got[CONFORM_TIES];
  accel_status_t status = accel_buffer_read(buffer, 0, got, count * 2);
  if (status != ACCEL_OK) {
    conform_fail_status(ctx, status, "read");
    return false;
  }
  for (size_t i = 0; i < count; i++) {
    if (got[i] != want[i]) {
      if (inputs != NULL) {
        conform_report(ctx, CONFORM_FAIL,
                       "%s of %.17g gave 0x%04x, expected 0x%04x (rounded "
                       "once, to nearest even)",
                       what, inputs[i], got[i], want[i]);
      } else {
        conform_report(ctx, CONFORM_FAIL,
                       "%s of %d gave 0x%04x, expected 0x%04x (rounded "
                       "once, to nearest even)",
                       what, ints[i], got[i], want[i]);
      }
      return false;
    }
  }
  return true;
}

// Whether the device claims the dtype; writes the UNSUPPORTED detail if not.
static bool conform_round_claimed(conform_ctx_t* ctx, bool bf16) {
  accel_device_caps_t cap = bf16 ? ACCEL_DEVICE_CAP_BF16 : ACCEL_DEVICE_CAP_F16;
  if ((ctx->info.caps & cap) != 0) return true;
  conform_report(ctx, CONFORM_UNSUPPORTED, "no %s", bf16 ? "bf16" : "f16");
  return false;
}

static conform_result_t conform_round_fill(conform_ctx_t* ctx,
                                           const void* arg) {
  bool bf16 = arg != NULL;
  accel_dtype_t dtype = bf16 ? ACCEL_DTYPE_BF16 : ACCEL_DTYPE_F16;
  if (!conform_round_claimed(ctx, bf16)) return CONFORM_UNSUPPORTED;
  double values[CONFORM_TIES];
  uint16_t want[CONFORM_TIES];
  size_t n = conform_tie_values(bf16, values);
  size_t sensitive = 0;
  for (size_t i = 0; i < n; i++) {
    want[i] = bf16 ? accel_plugin_f64_to_bf16(values[i])
                   : accel_plugin_f64_to_f16(values[i]);
    uint16_t twice = bf16 ? accel_plugin_f32_to_bf16((float)values[i])
                          : accel_plugin_f32_to_f16((float)values[i]);
    sensitive += twice != want[i];
  }
  accel_stream_t* stream = NULL;
  accel_buffer_t* buffer = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status == ACCEL_OK) status = conform_buffer(ctx, ctx->device, n * 2, &buffer);
  for (size_t i = 0; status == ACCEL_OK && i < n; i++) {
    status = accel_op_fill(stream, buffer, i * 2, dtype, 1, values[i]);
  }
  if (status == ACCEL_ERROR_UNSUPPORTED) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "op_fill: %s",
                          accel_last_error());
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "op_fill");
  status = conform_stream_wait(ctx, stream);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "op_fill");
  if (!conform_round_compare(ctx, buffer, want, values, NULL, n,
                             bf16 ? "bf16 fill" : "f16 fill")) {
    return CONFORM_FAIL;
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%zu values at ties, %zu of them wrong if rounded "
                        "through f32",
                        n, sensitive);
}

static conform_result_t conform_round_cast(conform_ctx_t* ctx,
                                           const void* arg) {
  bool bf16 = arg != NULL;
  accel_dtype_t dtype = bf16 ? ACCEL_DTYPE_BF16 : ACCEL_DTYPE_F16;
  if (!conform_round_claimed(ctx, bf16)) return CONFORM_UNSUPPORTED;
  // f16 ties between integers (2049 between 2048 and 2050, ...); bf16
  // ties, and integers above 2^24 that f32 rounds onto a bf16 tie.
  static const int32_t f16_ints[] = {2049,  2051,  -2049, 4098, 4102,  32785,
                                     65519, 65520, -65520, 3,   1025,  1027};
  static const int32_t bf16_ints[] = {
      257,        259,         -257,       16777216 + 65537,
      16777216 + 65535,        -(16777216 + 65537),
      33554432 + 131073,       0x7fffffff, (int32_t)0x80000001,
      16777216 + 196609,       513,        515};
  const int32_t* ints = bf16 ? bf16_ints : f16_ints;
  size_t n = 12;
  uint16_t want[CONFORM_TIES];
  for (size_t i = 0; i < n; i++) {
    want[i] = bf16 ? accel_plugin_f64_to_bf16(ints[i])
                   : accel_plugin_f64_to_f16(ints[i]);
  }
  accel_stream_t* stream = NULL;
  accel_buffer_t *src = NULL, *dst = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status == ACCEL_OK) status = conform_buffer(ctx, ctx->device, n * 4, &src);
  if (status == ACCEL_OK) status = conform_buffer(ctx, ctx->device, n * 2, &dst);
  if (status == ACCEL_OK) status = accel_buffer_write(src, 0, ints, n * 4);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  status = accel_op_cast(stream, dst, 0, dtype, src, 0, ACCEL_DTYPE_I32, n);
  if (status == ACCEL_ERROR_UNSUPPORTED) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "op_cast: %s",
                          accel_last_error());
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "op_cast");
  status = conform_stream_wait(ctx, stream);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "op_cast");
  if (!conform_round_compare(ctx, dst, want, NULL, ints, n,
                             bf16 ? "i32 -> bf16 cast" : "i32 -> f16 cast")) {
    return CONFORM_FAIL;
  }
  return conform_report(ctx, CONFORM_PASS, "%zu integers at ties", n);
}

// f32 -> f16 (bf16) casts from f32 values ON a midpoint (to even) and one
// f32 ulp either side of it (to the nearer neighbour): a conversion that
// truncates the mantissa, or rounds ties away from zero, gets them wrong
// by one unit in the last place, within the ops' tolerance.
static conform_result_t conform_round_cast_f32(conform_ctx_t* ctx,
                                               const void* arg) {
  bool bf16 = arg != NULL;
  accel_dtype_t dtype = bf16 ? ACCEL_DTYPE_BF16 : ACCEL_DTYPE_F16;
  if (!conform_round_claimed(ctx, bf16)) return CONFORM_UNSUPPORTED;
  double values[CONFORM_TIES];
  float in[CONFORM_TIES];
  uint16_t want[CONFORM_TIES];
  size_t n = conform_tie_values(bf16, values);
  for (size_t i = 0; i < n; i++) {
    float mid = (float)values[i];  // the delta is below an f32 ulp
    int k = (int)(i / 2) % 3;      // above, below, on the midpoint
    in[i] = k == 0   ? nextafterf(mid, mid > 0 ? INFINITY : -INFINITY)
            : k == 1 ? nextafterf(mid, 0.0f)
                     : mid;
    want[i] =
        bf16 ? accel_plugin_f32_to_bf16(in[i]) : accel_plugin_f32_to_f16(in[i]);
    values[i] = in[i];
  }
  accel_stream_t* stream = NULL;
  accel_buffer_t *src = NULL, *dst = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status == ACCEL_OK)
    status = conform_buffer(ctx, ctx->device, n * 4, &src);
  if (status == ACCEL_OK)
    status = conform_buffer(ctx, ctx->device, n * 2, &dst);
  if (status == ACCEL_OK) status = accel_buffer_write(src, 0, in, n * 4);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  status = accel_op_cast(stream, dst, 0, dtype, src, 0, ACCEL_DTYPE_F32, n);
  if (status == ACCEL_ERROR_UNSUPPORTED) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "op_cast: %s",
                          accel_last_error());
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "op_cast");
  status = conform_stream_wait(ctx, stream);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "op_cast");
  if (!conform_round_compare(ctx, dst, want, values, NULL, n,
                             bf16 ? "f32 -> bf16 cast" : "f32 -> f16 cast")) {
    return CONFORM_FAIL;
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%zu values on and one f32 ulp off midpoints", n);
}

enum {
  CONFORM_SUM_COUNT = 65537,
  // Past 64 chunks of 64 Ki elements (the CPU plugin keeps more partial
  // sums than that on the heap) and past a power of two.
  CONFORM_SUM_COUNT_F32 = (1 << 22) + (1 << 16) + 3,
};

// f16 and bf16 (arg NULL or &conform_bf16): a sum of 65537 values in
// [0, 1), about 32768. Accumulated in f16 (bf16) itself, the partial sum
// stops growing near 2048 (256), where a value below 1 is less than half
// its last place; the tolerance is the ops' one for sum (docs/ops.md).
//
// f32 (arg &conform_f32): 2^22 + 2^16 + 3 copies of 0.015f, about 63898.
// One running f32 sum rounds every add the same way once the total passes
// 2^14 and ends several % off; per-thread or per-block partials (blocks of 16
// or more), pairwise or wider accumulators stay within 0.1%. plugin.h asks
// for pairwise or blocked summation; the tolerance is 3e-3.
static conform_result_t conform_round_sum(conform_ctx_t* ctx, const void* arg) {
  accel_dtype_t dtype = arg == NULL ? ACCEL_DTYPE_F16 : *(const int*)arg;
  bool bf16 = dtype == ACCEL_DTYPE_BF16;
  if (dtype != ACCEL_DTYPE_F32 && !conform_round_claimed(ctx, bf16)) {
    return CONFORM_UNSUPPORTED;
  }
  size_t count = dtype == ACCEL_DTYPE_F32 ? CONFORM_SUM_COUNT_F32
                                          : CONFORM_SUM_COUNT;
  size_t es = accel_dtype_size(dtype);
  unsigned char* x = conform_alloc(ctx, count * es);
  if (x == NULL) return conform_report(ctx, CONFORM_FAIL, "host OOM");
  uint64_t rng = ctx->seed + 30;
  double want = 0;
  for (size_t i = 0; i < count; i++) {
    double v = dtype == ACCEL_DTYPE_F32 ? 0.015
                                        : conform_rand_range(&rng, 0.0, 1.0);
    conform_store(x, dtype, i, v);
    want += conform_load(x, dtype, i);
  }
  accel_stream_t* stream = NULL;
  accel_buffer_t *src = NULL, *dst = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status == ACCEL_OK) {
    status = conform_buffer(ctx, ctx->device, count * es, &src);
  }
  if (status == ACCEL_OK) status = conform_buffer(ctx, ctx->device, es, &dst);
  if (status == ACCEL_OK) status = accel_buffer_write(src, 0, x, count * es);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  status = accel_op_sum(stream, dst, 0, src, 0, dtype, count);
  if (status == ACCEL_ERROR_UNSUPPORTED) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "op_sum: %s",
                          accel_last_error());
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "op_sum");
  status = conform_stream_wait(ctx, stream);
  unsigned char got[4] = {0};
  if (status == ACCEL_OK) status = accel_buffer_read(dst, 0, got, es);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "op_sum");
  double g = conform_load(got, dtype, 0);
  double tol = dtype == ACCEL_DTYPE_F32 ? 3e-3 : bf16 ? 3e-2 : 4e-3;
  const char* name = accel_dtype_name(dtype);
  if (!(fabs(g - want) <= tol * want)) {
    return conform_report(
        ctx, CONFORM_FAIL,
        "%s sum of %zu %s gave %.9g, expected %.9g (error %.3g > %.3g; %s)",
        name, count,
        dtype == ACCEL_DTYPE_F32 ? "copies of 0.015" : "values in [0, 1)", g,
        want, fabs(g - want) / want, tol,
        dtype == ACCEL_DTYPE_F32
            ? "one running f32 sum? plugin.h expects pairwise or blocked "
              "summation"
            : bf16 ? "accumulated in bf16?" : "accumulated in f16?");
  }
  return conform_report(ctx, CONFORM_PASS, "%zu values: %.9g, expected %.9g",
                        count, g, want);
}

enum { CONFORM_ALPHA_COUNT = 1024 };

// scale and axpy on f16 (bf16): accel.h says "F16/BF16 arithmetic is done
// in f32 and rounded to nearest even on store", so alpha enters the f32
// product as it is and only the product is rounded, once. alpha sits just
// below the midpoint between 1 and the next f16 (bf16) value: 1 + 2^-11 -
// 2^-22 (1 + 2^-8 - 2^-20), exact in f32. Rounded to f16 (bf16) first it
// becomes 1 and the result is x itself; the f32 product x * alpha is x
// plus s/2048 (s/256) of x's last place, s its significand (1024..2047;
// 128..255), less about 2^-22 (2^-20) of x, which rounds up to x's next
// neighbour for every s above 1024 (128): e.g. bf16 3 * alpha is 3 +
// 0.75 * 2^-6 - tiny, which rounds to 3 + 2^-6 where 3 * 1 = 3. The
// distance to the midpoint (at least 2^-22 of x) is more than an f32
// rounding error (2^-24 of x), so computing the product in double or with
// an fma gives the same bits. The suite's other scalars (-1.5, 0.75) are
// exact in f16 and bf16 and cannot see the difference.
typedef struct conform_alpha_arg {
  bool bf16, axpy;
} conform_alpha_arg_t;

static conform_result_t conform_round_alpha(conform_ctx_t* ctx,
                                            const void* arg) {
  const conform_alpha_arg_t* a = arg;
  bool bf16 = a->bf16;
  accel_dtype_t dtype = bf16 ? ACCEL_DTYPE_BF16 : ACCEL_DTYPE_F16;
  if (!conform_round_claimed(ctx, bf16)) return CONFORM_UNSUPPORTED;
  const double alpha = bf16 ? 1 + 0x1p-8 - 0x1p-20 : 1 + 0x1p-11 - 0x1p-22;
  const float alpha_f = (float)alpha;  // exact
  const float alpha_rounded = bf16 ? accel_plugin_bf16_to_f32(
                                         accel_plugin_f32_to_bf16(alpha_f))
                                   : accel_plugin_f16_to_f32(
                                         accel_plugin_f32_to_f16(alpha_f));
  size_t n = CONFORM_ALPHA_COUNT;
  uint16_t* x = conform_alloc(ctx, n * 2);
  uint16_t* want = conform_alloc(ctx, n * 2);
  uint16_t* got = conform_alloc(ctx, n * 2);
  uint16_t* zero = conform_alloc(ctx, n * 2);
  if (!x || !want || !got || !zero) {
    return conform_report(ctx, CONFORM_FAIL, "host OOM");
  }
  // Both signs, exponents 2^-6..2^6 (normal, far from overflow: x * alpha
  // near the largest f16 would round to inf), significands that are not a
  // power of two (those round to x either way). x[0] is 3.
  uint64_t rng = ctx->seed + 31;
  size_t sensitive = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned bits = bf16 ? 7 : 10;
    uint64_t r = conform_rand(&rng);
    double sig = (double)((1u << bits) + 1 + r % ((1u << bits) - 1));
    double v = ldexp(sig, (int)((r >> 16) % 13) - 6 - (int)bits);
    if ((r >> 32) & 1) v = -v;
    if (i == 0) v = 3;
    x[i] = bf16 ? accel_plugin_f64_to_bf16(v) : accel_plugin_f64_to_f16(v);
    float xf = bf16 ? accel_plugin_bf16_to_f32(x[i])
                    : accel_plugin_f16_to_f32(x[i]);
    // One f32 product, rounded once; axpy adds y = +0, which changes
    // nothing (x is never 0).
    volatile float p = alpha_f * xf;
    volatile float q = alpha_rounded * xf;
    want[i] = bf16 ? accel_plugin_f32_to_bf16(p) : accel_plugin_f32_to_f16(p);
    uint16_t wrong =
        bf16 ? accel_plugin_f32_to_bf16(q) : accel_plugin_f32_to_f16(q);
    sensitive += wrong != want[i];
  }
  accel_stream_t* stream = NULL;
  accel_buffer_t *xb = NULL, *yb = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status == ACCEL_OK) status = conform_buffer(ctx, ctx->device, n * 2, &xb);
  if (status == ACCEL_OK) status = accel_buffer_write(xb, 0, x, n * 2);
  if (status == ACCEL_OK && a->axpy) {
    status = conform_buffer(ctx, ctx->device, n * 2, &yb);
    if (status == ACCEL_OK) status = accel_buffer_write(yb, 0, zero, n * 2);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  const char* op = a->axpy ? "op_axpy" : "op_scale";
  status = a->axpy ? accel_op_axpy(stream, yb, 0, xb, 0, dtype, n, alpha)
                   : accel_op_scale(stream, xb, 0, dtype, n, alpha);
  if (status == ACCEL_ERROR_UNSUPPORTED) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "%s: %s", op,
                          accel_last_error());
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, op);
  status = conform_stream_wait(ctx, stream);
  if (status == ACCEL_OK) {
    status = accel_buffer_read(a->axpy ? yb : xb, 0, got, n * 2);
  }
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, op);
  for (size_t i = 0; i < n; i++) {
    if (got[i] != want[i]) {
      return conform_report(
          ctx, CONFORM_FAIL,
          "%s %s, alpha %.17g: element %zu, x 0x%04x, gave 0x%04x, expected "
          "0x%04x (the f32 product rounded once; alpha rounded to %s "
          "first gives 0x%04x)",
          accel_dtype_name(dtype), a->axpy ? "axpy (y = +0)" : "scale", alpha,
          i, x[i], got[i], want[i], accel_dtype_name(dtype),
          bf16 ? accel_plugin_f32_to_bf16(alpha_rounded *
                                          accel_plugin_bf16_to_f32(x[i]))
               : accel_plugin_f32_to_f16(alpha_rounded *
                                         accel_plugin_f16_to_f32(x[i])));
    }
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%zu values, alpha %.17g: %zu of them wrong if alpha "
                        "is rounded to %s first",
                        n, alpha, sensitive, accel_dtype_name(dtype));
}

static const conform_alpha_arg_t conform_alpha_args[] = {
    {false, false}, {true, false}, {false, true}, {true, true}};

static const int conform_bf16 = ACCEL_DTYPE_BF16;
static const int conform_f32 = ACCEL_DTYPE_F32;

static const conform_check_t conform_rounds[] = {
    {"round.fill.f16", conform_round_fill, NULL},
    {"round.fill.bf16", conform_round_fill, &conform_bf16},
    {"round.cast_i32.f16", conform_round_cast, NULL},
    {"round.cast_i32.bf16", conform_round_cast, &conform_bf16},
    {"round.cast_f32.f16", conform_round_cast_f32, NULL},
    {"round.cast_f32.bf16", conform_round_cast_f32, &conform_bf16},
    {"round.sum.f16", conform_round_sum, NULL},
    {"round.sum.bf16", conform_round_sum, &conform_bf16},
    {"round.sum.f32", conform_round_sum, &conform_f32},
    {"round.scale.f16", conform_round_alpha, &conform_alpha_args[0]},
    {"round.scale.bf16", conform_round_alpha, &conform_alpha_args[1]},
    {"round.axpy.f16", conform_round_alpha, &conform_alpha_args[2]},
    {"round.axpy.bf16", conform_round_alpha, &conform_alpha_args[3]},
};

const conform_check_t* conform_round_checks(size_t* out_count) {
  *out_count = sizeof(conform_rounds) / sizeof(conform_rounds[0]);
  return conform_rounds;
}
