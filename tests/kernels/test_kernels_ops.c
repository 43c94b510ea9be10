// SPDX-License-Identifier: MIT
//
// Built-in elementwise ops and the sum reduction on cpu:0 against
// references written here: every dtype each op supports, counts 0, 1, odd
// and large, zero and non-zero offsets. Bytes around each operand are
// checked to be untouched. Tolerances: see kernels_test.h.
#include <stdio.h>
#include <stdlib.h>

#include "kernels_test.h"
#include "test.h"

#define GUARD 64
#define CANARY 0xA5

typedef enum kt_op {
  KT_FILL,
  KT_CAST,
  KT_SCALE,
  KT_AXPY,
  KT_ADD,
  KT_MUL,
  KT_SUM
} kt_op_t;

static const char* const kt_op_names[] = {"fill", "cast", "scale", "axpy",
                                          "add",  "mul",  "sum"};

static const size_t kt_counts[] = {0, 1, 2, 7, 33, 1000, 4097, 65537};

// One device operand: `count` elements at `offset`, canaries around.
typedef struct operand {
  accel_buffer_t* buffer;
  unsigned char* host;  // the whole buffer's contents
  size_t offset, bytes, size;
} operand_t;

static accel_status_t operand_create(accel_device_t* device, size_t offset,
                                     size_t bytes, operand_t* o) {
  o->offset = offset;
  o->bytes = bytes;
  o->size = offset + bytes + GUARD;
  o->host = malloc(o->size);
  if (o->host == NULL) return ACCEL_ERROR_OUT_OF_MEMORY;
  memset(o->host, CANARY, o->size);
  return accel_buffer_create(device, o->size, &o->buffer);
}

static void operand_destroy(operand_t* o) {
  accel_buffer_release(o->buffer);
  free(o->host);
}

static accel_status_t operand_upload(operand_t* o) {
  return accel_buffer_write(o->buffer, 0, o->host, o->size);
}

// Reads the buffer back into `out` (o->size bytes) and checks the guard
// bytes around the payload.
static bool operand_download(operand_t* o, unsigned char* out) {
  if (accel_buffer_read(o->buffer, 0, out, o->size) != ACCEL_OK) {
    fprintf(stderr, "  read back failed: %s\n", accel_last_error());
    return false;
  }
  for (size_t i = 0; i < o->size; i++) {
    bool payload = i >= o->offset && i < o->offset + o->bytes;
    if (!payload && out[i] != o->host[i]) {
      fprintf(stderr, "  byte %zu outside the operand [%zu, %zu) changed\n", i,
              o->offset, o->offset + o->bytes);
      return false;
    }
  }
  return true;
}

// Fills `count` elements of `dtype` at `p` with values suited to `op`.
static void fill_random(kt_rng_t* rng, void* p, accel_dtype_t dtype,
                        size_t count, double lo, double hi) {
  for (size_t i = 0; i < count; i++) {
    double v = kt_uniform(rng, lo, hi);
    if (dtype == ACCEL_DTYPE_I32) v = floor(v);
    kt_set(p, dtype, i, v);
  }
}

typedef struct kt_case {
  kt_op_t op;
  accel_dtype_t dtype;      // output dtype
  accel_dtype_t src_dtype;  // cast only
  size_t count;
  size_t offset;  // bytes, applied to every operand (plus a per-operand skew)
  double scalar;  // fill value, scale/axpy alpha
} kt_case_t;

static size_t elem(accel_dtype_t d) { return accel_dtype_size(d); }

// Runs one case; returns false (after printing why) on a mismatch.
static bool run_case(accel_device_t* device, accel_stream_t* stream,
                     const kt_case_t* c, uint64_t seed) {
  kt_rng_t rng = {seed * 0x9E3779B97F4A7C15ULL + 1};
  accel_dtype_t dt = c->dtype;
  accel_dtype_t xt = c->op == KT_CAST ? c->src_dtype : dt;
  size_t out_count = c->op == KT_SUM ? 1 : c->count;
  // Inputs get their own offsets, skewed, so no two operands line up.
  operand_t out = {0}, x = {0}, y = {0};
  bool ok = false;
  unsigned char* got = NULL;
  if (operand_create(device, c->offset, out_count * elem(dt), &out) !=
          ACCEL_OK ||
      operand_create(device, c->offset + 4 * elem(xt), c->count * elem(xt),
                     &x) != ACCEL_OK ||
      operand_create(device, c->offset + 8 * elem(dt), c->count * elem(dt),
                     &y) != ACCEL_OK) {
    fprintf(stderr, "  setup: %s\n", accel_last_error());
    goto done;
  }
  // Value ranges: i32 add/mul include values that wrap; floats stay where
  // f16 cannot overflow, except cast, which covers specials below.
  double lo = -100.0, hi = 100.0;
  if (dt == ACCEL_DTYPE_I32 && (c->op == KT_ADD || c->op == KT_MUL)) {
    lo = -2147483648.0;
    hi = 2147483647.0;
  }
  if (c->op == KT_SUM && dt != ACCEL_DTYPE_I32) {
    lo = c->count > 4096 ? 0.0 : -1.0;
    hi = 1.0;
  }
  if (c->op == KT_SUM && dt == ACCEL_DTYPE_I32) {
    lo = -2147483648.0;  // the 64-bit sum's low 32 bits must come back
    hi = 2147483647.0;
  }
  fill_random(&rng, x.host + x.offset, xt, c->count, lo, hi);
  fill_random(&rng, y.host + y.offset, dt, c->count, lo, hi);
  fill_random(&rng, out.host + out.offset, dt, out_count, lo, hi);
  if (c->op == KT_CAST && c->count >= 8) {
    // Specials: zero, negative zero, halfway cases, limits, NaN, infinity.
    const double specials[] = {0.0,  -0.0,     0.5,       -2.5,
                               1e10, -1e10,    65504.0,   1e-6,
                               NAN,  INFINITY, -INFINITY, 2147483647.0};
    size_t n = sizeof(specials) / sizeof(specials[0]);
    for (size_t i = 0; i < n && i < c->count; i++) {
      if (xt == ACCEL_DTYPE_I32 && !isfinite(specials[i])) continue;
      kt_set(x.host + x.offset, xt, i, specials[i]);
    }
  }
  if (operand_upload(&out) != ACCEL_OK || operand_upload(&x) != ACCEL_OK ||
      operand_upload(&y) != ACCEL_OK) {
    fprintf(stderr, "  upload: %s\n", accel_last_error());
    goto done;
  }

  accel_status_t status = ACCEL_OK;
  switch (c->op) {
    case KT_FILL:
      status = accel_op_fill(stream, out.buffer, out.offset, dt, c->count,
                             c->scalar);
      break;
    case KT_CAST:
      status = accel_op_cast(stream, out.buffer, out.offset, dt, x.buffer,
                             x.offset, xt, c->count);
      break;
    case KT_SCALE:
      status = accel_op_scale(stream, out.buffer, out.offset, dt, c->count,
                              c->scalar);
      break;
    case KT_AXPY:
      status = accel_op_axpy(stream, out.buffer, out.offset, x.buffer, x.offset,
                             dt, c->count, c->scalar);
      break;
    case KT_ADD:
      status = accel_op_add(stream, out.buffer, out.offset, x.buffer, x.offset,
                            y.buffer, y.offset, dt, c->count);
      break;
    case KT_MUL:
      status = accel_op_mul(stream, out.buffer, out.offset, x.buffer, x.offset,
                            y.buffer, y.offset, dt, c->count);
      break;
    case KT_SUM:
      status = accel_op_sum(stream, out.buffer, out.offset, x.buffer, x.offset,
                            dt, c->count);
      break;
  }
  if (status == ACCEL_OK) status = accel_stream_synchronize(stream);
  if (status != ACCEL_OK) {
    fprintf(stderr, "  %s returned %s: %s\n", kt_op_names[c->op],
            accel_status_string(status), accel_last_error());
    goto done;
  }
  got = malloc(out.size);
  if (got == NULL || !operand_download(&out, got)) goto done;

  const void* xs = x.host + x.offset;
  const void* ys = y.host + y.offset;
  const void* before = out.host + out.offset;
  const void* after = got + out.offset;
  double rel = kt_rel_tol(dt);
  if (c->op == KT_SUM) {
    double want = 0.0, mag = 0.0;
    uint32_t isum = 0;
    for (size_t i = 0; i < c->count; i++) {
      double v = kt_get(xs, dt, i);
      want += v;
      mag += fabs(v);
      isum += (uint32_t)(int32_t)v;
    }
    double v = kt_get(after, dt, 0);
    if (dt == ACCEL_DTYPE_I32) {
      if ((int32_t)v != (int32_t)isum) {
        fprintf(stderr, "  sum: got %d, want %d\n", (int32_t)v, (int32_t)isum);
        goto done;
      }
    } else {
      double tol = rel * fabs(want) + KT_ACC_EPS * sqrt((double)c->count) * mag;
      if (!kt_close(v, want, tol)) {
        fprintf(stderr, "  sum: got %.9g, want %.9g (tol %.3g)\n", v, want,
                tol);
        goto done;
      }
    }
    ok = true;
    goto done;
  }
  for (size_t i = 0; i < c->count; i++) {
    double want = 0.0, scale = 0.0;
    double xv = kt_get(xs, xt, i), yv = kt_get(ys, dt, i);
    double ov = kt_get(before, dt, i);
    switch (c->op) {
      case KT_FILL:
        want = dt == ACCEL_DTYPE_I32 ? kt_f32_to_i32(c->scalar) : c->scalar;
        scale = fabs(want);
        break;
      case KT_CAST:
        want = xv;
        scale = fabs(want);
        break;
      case KT_SCALE:
        want = c->scalar * ov;
        scale = fabs(want);
        break;
      case KT_AXPY:
        want = c->scalar * xv + ov;
        scale = fabs(c->scalar * xv) + fabs(ov);
        break;
      case KT_ADD:
        if (dt == ACCEL_DTYPE_I32) {
          want = (int32_t)((uint32_t)(int32_t)xv + (uint32_t)(int32_t)yv);
        } else {
          want = xv + yv;
          scale = fabs(xv) + fabs(yv);
        }
        break;
      case KT_MUL:
        if (dt == ACCEL_DTYPE_I32) {
          want = (int32_t)((uint32_t)(int32_t)xv * (uint32_t)(int32_t)yv);
        } else {
          want = xv * yv;
          scale = fabs(want);
        }
        break;
      case KT_SUM:
        break;
    }
    double v = kt_get(after, dt, i);
    bool match;
    if (dt == ACCEL_DTYPE_I32) {
      int32_t w = c->op == KT_CAST || c->op == KT_FILL ? kt_f32_to_i32(want)
                                                       : (int32_t)want;
      match = (int32_t)v == w;
      want = w;
    } else if (c->op == KT_CAST || c->op == KT_FILL) {
      // Conversions are exact: round to nearest even, once.
      double w = kt_round(dt, want);
      match = kt_close(v, w, 0.0) && (isnan(w) || signbit(v) == signbit(w));
      want = w;
    } else {
      match = kt_close(v, want, rel * scale + 1e-30);
    }
    if (!match) {
      fprintf(stderr,
              "  %s %s<-%s count %zu offset %zu: element %zu is %.9g, want "
              "%.9g (x %.9g, y %.9g, old %.9g)\n",
              kt_op_names[c->op], accel_dtype_name(dt), accel_dtype_name(xt),
              c->count, c->offset, i, v, want, xv, yv, ov);
      goto done;
    }
  }
  ok = true;
done:
  free(got);
  operand_destroy(&out);
  operand_destroy(&x);
  operand_destroy(&y);
  return ok;
}

typedef struct env {
  accel_device_t* device;
  accel_stream_t* stream;
} env_t;

static accel_status_t env_open(env_t* e) {
  accel_status_t s = accel_device_open("cpu:0", &e->device);
  if (s == ACCEL_OK) s = accel_stream_create(e->device, 0, &e->stream);
  return s;
}

static void env_close(env_t* e) {
  accel_stream_release(e->stream);
  accel_device_release(e->device);
}

// Runs `op` over every count and two offsets for every dtype in `dtypes`.
static bool sweep(env_t* e, kt_op_t op, const accel_dtype_t* dtypes,
                  size_t ndtypes, double scalar) {
  uint64_t seed = 1;
  for (size_t d = 0; d < ndtypes; d++) {
    for (size_t ci = 0; ci < sizeof(kt_counts) / sizeof(kt_counts[0]); ci++) {
      for (size_t off = 0; off < 2; off++) {
        kt_case_t c = {op,
                       dtypes[d],
                       dtypes[d],
                       kt_counts[ci],
                       off ? 12 * elem(dtypes[d]) : 0,
                       scalar};
        if (!run_case(e->device, e->stream, &c, seed++)) return false;
      }
    }
  }
  return true;
}

TEST(fill) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  bool ok = sweep(&e, KT_FILL, kt_all_dtypes, 4, 1.5) &&
            sweep(&e, KT_FILL, kt_all_dtypes, 4, -3.25) &&
            sweep(&e, KT_FILL, kt_float_dtypes, 3, 0.0);
  // I32 truncates toward zero and saturates.
  const double ints[] = {3.9, -3.9, 1e10, -1e10, 2147483647.0};
  for (size_t i = 0; ok && i < 5; i++) {
    kt_case_t c = {KT_FILL, ACCEL_DTYPE_I32, ACCEL_DTYPE_I32, 33, 8, ints[i]};
    ok = run_case(e.device, e.stream, &c, 99);
  }
  // Float fills round to nearest even (0.1 is not representable).
  for (size_t d = 0; ok && d < 3; d++) {
    kt_case_t c = {KT_FILL, kt_float_dtypes[d], kt_float_dtypes[d], 17, 0,
                   0.1f};
    ok = run_case(e.device, e.stream, &c, 98);
  }
  env_close(&e);
  ASSERT(ok);
}

TEST(cast_every_pair) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  bool ok = true;
  uint64_t seed = 100;
  for (size_t d = 0; ok && d < 4; d++) {
    for (size_t s = 0; ok && s < 4; s++) {
      for (size_t ci = 0; ok && ci < sizeof(kt_counts) / sizeof(kt_counts[0]);
           ci++) {
        kt_case_t c = {KT_CAST,       kt_all_dtypes[d], kt_all_dtypes[s],
                       kt_counts[ci], ci % 2 ? 16 : 0,  0.0};
        ok = run_case(e.device, e.stream, &c, seed++);
      }
    }
  }
  env_close(&e);
  ASSERT(ok);
}

TEST(scale) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  bool ok = sweep(&e, KT_SCALE, kt_float_dtypes, 3, 0.75) &&
            sweep(&e, KT_SCALE, kt_float_dtypes, 3, -2.0) &&
            sweep(&e, KT_SCALE, kt_float_dtypes, 3, 0.0);
  env_close(&e);
  ASSERT(ok);
}

TEST(axpy) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  bool ok = sweep(&e, KT_AXPY, kt_float_dtypes, 3, 0.5) &&
            sweep(&e, KT_AXPY, kt_float_dtypes, 3, -1.25);
  env_close(&e);
  ASSERT(ok);
}

TEST(add) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  bool ok = sweep(&e, KT_ADD, kt_all_dtypes, 4, 0.0);
  env_close(&e);
  ASSERT(ok);
}

TEST(mul) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  bool ok = sweep(&e, KT_MUL, kt_all_dtypes, 4, 0.0);
  env_close(&e);
  ASSERT(ok);
}

TEST(sum) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  bool ok = sweep(&e, KT_SUM, kt_all_dtypes, 4, 0.0);
  env_close(&e);
  ASSERT(ok);
}

// 1 << 22 elements: large enough to be split across the plugin's threads.
TEST(large_counts) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  size_t n = (size_t)1 << 22;
  bool ok = true;
  for (size_t d = 0; ok && d < 4; d++) {
    accel_dtype_t dt = kt_all_dtypes[d];
    kt_case_t cases[] = {
        {KT_FILL, dt, dt, n, 4 * elem(dt), 2.0},
        {KT_CAST, dt,
         dt == ACCEL_DTYPE_F32 ? ACCEL_DTYPE_BF16 : ACCEL_DTYPE_F32, n, 0, 0.0},
        {KT_ADD, dt, dt, n, 0, 0.0},
        {KT_MUL, dt, dt, n + 3, 8 * elem(dt), 0.0},
        {KT_SUM, dt, dt, n, 0, 0.0},
        {KT_SCALE, dt, dt, n, 0, 3.0},
        {KT_AXPY, dt, dt, n - 1, elem(dt), 0.25},
    };
    for (size_t i = 0; ok && i < sizeof(cases) / sizeof(cases[0]); i++) {
      bool float_only = cases[i].op == KT_SCALE || cases[i].op == KT_AXPY;
      if (float_only && dt == ACCEL_DTYPE_I32) continue;
      // f16 cannot hold a sum of millions of values in [0, 1).
      if (cases[i].op == KT_SUM && dt == ACCEL_DTYPE_F16) continue;
      ok = run_case(e.device, e.stream, &cases[i], 1000 + i);
    }
  }
  env_close(&e);
  ASSERT(ok);
}

// In-place elementwise ops (identical ranges) are allowed.
TEST(in_place) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(e.device, 4 * 64, &b));
  float host[64];
  for (int i = 0; i < 64; i++) host[i] = (float)i;
  ASSERT_OK(accel_buffer_write(b, 0, host, sizeof(host)));
  ASSERT_OK(accel_op_add(e.stream, b, 0, b, 0, b, 0, ACCEL_DTYPE_F32, 64));
  ASSERT_OK(accel_op_axpy(e.stream, b, 0, b, 0, ACCEL_DTYPE_F32, 64, 1.0));
  ASSERT_OK(accel_op_cast(e.stream, b, 0, ACCEL_DTYPE_I32, b, 0,
                          ACCEL_DTYPE_F32, 64));
  ASSERT_OK(accel_stream_synchronize(e.stream));
  int32_t out[64];
  ASSERT_OK(accel_buffer_read(b, 0, out, sizeof(out)));
  for (int i = 0; i < 64; i++) ASSERT_EQ(out[i], 4 * i);
  accel_buffer_release(b);
  env_close(&e);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
