// SPDX-License-Identifier: MIT
//
// Built-in op checks, modelled on ggml's test-backend-ops: every op runs
// with the same random inputs on the device under test and on the CPU
// plugin's device (the reference, when the device under test is not
// itself the CPU plugin), and both results are compared with a
// double-precision host computation (dtype.c). Each check is one op and
// dtype over many shapes: counts 1, odd, 4095 and over a million, at
// element offsets; GEMM with every transpose pair, padded leading
// dimensions, k = 0, and beta = 0 over a C full of NaN.
//
// The error is normalised: max |got - want| / max(1, max |want|), or for
// sum over the sum of |x| (the order of summation is unspecified), with a
// tolerance per dtype. I32 must match exactly, and so must fills and
// casts of every dtype: each rounds once, to nearest even, by contract
// (plugin.h), so any other value is a bug, however small (a flushed f16
// subnormal is 6e-5 off, far inside a tolerance normalised by 3e9).
// Elements outside the output range (a guarded prefix, 256 bytes past the
// end of elementwise outputs, GEMM's padding columns) must be untouched.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

typedef enum conform_op {
  CONFORM_OP_FILL,
  CONFORM_OP_CAST,
  CONFORM_OP_SCALE,
  CONFORM_OP_AXPY,
  CONFORM_OP_ADD,
  CONFORM_OP_MUL,
  CONFORM_OP_SUM,
  CONFORM_OP_GEMM,
} conform_op_t;

static const char* const conform_op_names[] = {"fill", "cast", "scale", "axpy",
                                               "add",  "mul",  "sum",   "gemm"};

// The argument of one op check: `dtype` is the output (and, but for cast
// and mixed GEMM, input) type; `in_dtype` the input type of cast and GEMM.
typedef struct conform_op_spec {
  conform_op_t op;
  accel_dtype_t dtype;
  accel_dtype_t in_dtype;
} conform_op_spec_t;

// One elementwise case: `count` elements at element offset `off`.
typedef struct conform_case {
  const conform_op_spec_t* spec;
  size_t count, off;
  double scalar;
  unsigned char* x;     // first input (in_dtype for cast), off + count elems
  unsigned char* y;     // second input, or the in-out operand's initial data
  unsigned char* want;  // expected output region, off + out_count elements
  double x_abs_sum;     // for sum's tolerance
} conform_case_t;

static const struct {
  size_t count, off;
} conform_shapes[] = {{1, 0},    {3, 1},     {17, 0},
                      {4095, 3}, {65537, 0}, {(1u << 20) + 7, 5}};
#define CONFORM_NSHAPES (sizeof(conform_shapes) / sizeof(conform_shapes[0]))

// Byte pattern the output of an op starts as (past its guarded prefix):
// -2.9e-16 in f32 and bf16, -0.022 in f16, -1515870811 in i32, none of
// them a value the cases expect.
#define CONFORM_OP_POISON 0xa5

static double conform_tolerance(accel_dtype_t dtype, conform_op_t op) {
  if (op == CONFORM_OP_FILL || op == CONFORM_OP_CAST) return 0.0;  // exact
  bool reduce = op == CONFORM_OP_SUM || op == CONFORM_OP_GEMM;
  switch (dtype) {
    case ACCEL_DTYPE_F32:
      return reduce ? 1e-4 : 1e-6;
    case ACCEL_DTYPE_F16:
      return reduce ? 4e-3 : 2e-3;
    case ACCEL_DTYPE_BF16:
      return reduce ? 3e-2 : 1.6e-2;
    default:
      return 0.0;
  }
}

// Random input values of `dtype`, stored in its format.
static void conform_random_input(uint64_t* rng, accel_dtype_t dtype,
                                 conform_op_t op, unsigned char* p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    double v;
    if (dtype == ACCEL_DTYPE_I32) {
      // Full range for sum too, so that its 64-bit total wraps when
      // stored: a sum kept in 32 bits (saturating) or in float fails.
      v = op == CONFORM_OP_CAST
              ? floor(conform_rand_range(rng, -1048576.0, 1048576.0))
              : (double)(int32_t)(uint32_t)conform_rand(rng);
    } else {
      v = conform_rand_range(rng, -1.0, 1.0);
    }
    conform_store(p, dtype, i, v);
  }
}

// Specials for casts: saturation, rounding, overflow to inf, NaN,
// infinities, and the smallest and largest f16 subnormals (2^-24 and
// 1023 * 2^-24: normal in f32 and bf16, so no device may flush them).
static void conform_cast_specials(accel_dtype_t dtype, unsigned char* p,
                                  size_t n) {
  static const double specials[] = {
      NAN,      3e9,       -3e9,  2.5,   -2.5,      1e5,
      65519.0,  -1e-8,     1e-30, 0.5,   INFINITY,  -INFINITY,
      0x1p-24,  -0x1p-24,  0x3ffp-24};
  if (dtype == ACCEL_DTYPE_I32) return;
  for (size_t i = 0; i < n && i < sizeof(specials) / sizeof(specials[0]); i++) {
    conform_store(p, dtype, i, specials[i]);
  }
}

// The host reference for elementwise ops, into c->want (after `off`).
static void conform_expect(conform_case_t* c) {
  const conform_op_spec_t* s = c->spec;
  accel_dtype_t dt = s->dtype;
  unsigned char* out = c->want + c->off * accel_dtype_size(dt);
  const unsigned char* x = c->x + c->off * accel_dtype_size(s->in_dtype);
  const unsigned char* y = c->y + c->off * accel_dtype_size(dt);
  if (s->op == CONFORM_OP_SUM) {
    double sum = 0, abs_sum = 0;
    int64_t isum = 0;
    for (size_t i = 0; i < c->count; i++) {
      double v = conform_load(x, dt, i);
      sum += v;
      abs_sum += fabs(v);
      isum += (int64_t)v;
    }
    c->x_abs_sum = abs_sum;
    if (dt == ACCEL_DTYPE_I32) {
      uint32_t low = (uint32_t)(uint64_t)isum;
      memcpy(out, &low, sizeof(low));
    } else {
      conform_store(out, dt, 0, sum);
    }
    return;
  }
  for (size_t i = 0; i < c->count; i++) {
    if (dt == ACCEL_DTYPE_I32 &&
        (s->op == CONFORM_OP_ADD || s->op == CONFORM_OP_MUL)) {
      uint32_t a = (uint32_t)(int32_t)conform_load(x, dt, i);
      uint32_t b = (uint32_t)(int32_t)conform_load(y, dt, i);
      uint32_t z = s->op == CONFORM_OP_ADD ? a + b : a * b;
      memcpy(out + 4 * i, &z, sizeof(z));
      continue;
    }
    double v = 0;
    switch (s->op) {
      case CONFORM_OP_FILL:
        v = c->scalar;
        break;
      case CONFORM_OP_CAST:
        v = conform_load(x, s->in_dtype, i);
        break;
      case CONFORM_OP_SCALE:
        v = (float)c->scalar * (float)conform_load(y, dt, i);
        break;
      case CONFORM_OP_AXPY:
        v = (double)(float)c->scalar * conform_load(x, dt, i) +
            conform_load(y, dt, i);
        break;
      case CONFORM_OP_ADD:
        v = conform_load(x, dt, i) + conform_load(y, dt, i);
        break;
      default:
        v = conform_load(x, dt, i) * conform_load(y, dt, i);
        break;
    }
    // F16/BF16 ops compute in f32: round there first, as the device does.
    if (dt != ACCEL_DTYPE_F32 && dt != ACCEL_DTYPE_I32 &&
        s->op != CONFORM_OP_FILL) {
      v = (float)v;
    }
    conform_store(out, dt, i, v);
  }
}

// Creates a buffer of `bytes` on `device` holding `init`.
static accel_status_t conform_op_buffer(conform_ctx_t* ctx,
                                        accel_device_t* device,
                                        const void* init, size_t bytes,
                                        accel_buffer_t** out) {
  accel_status_t status = conform_buffer(ctx, device, bytes, out);
  if (status == ACCEL_OK) status = accel_buffer_write(*out, 0, init, bytes);
  return status;
}

// Runs case `c` on `device` and reads the output region into `got`; the
// output buffer, whose tail (conform_buffer_tailed) the caller checks, in
// `*out_tail`. Returns the first failing status; the message is in
// accel_last_error() or, for a timeout, reported by the caller.
static accel_status_t conform_op_run(conform_ctx_t* ctx, accel_device_t* device,
                                     const conform_case_t* c,
                                     unsigned char* got,
                                     accel_buffer_t** out_tail) {
  const conform_op_spec_t* s = c->spec;
  size_t es = accel_dtype_size(s->dtype);
  size_t in_es = accel_dtype_size(s->in_dtype);
  size_t n = c->off + c->count;
  size_t out_n = s->op == CONFORM_OP_SUM ? c->off + 1 : n;
  accel_stream_t* stream = NULL;
  accel_buffer_t *bo = NULL, *bx = NULL, *by = NULL;
  // The output starts as `y` for in-out ops; otherwise as the guarded
  // prefix of the expected image followed by a poison pattern, so an op
  // that writes nothing (or too little) fails.
  bool in_out = s->op == CONFORM_OP_SCALE || s->op == CONFORM_OP_AXPY;
  unsigned char* out_init = conform_alloc(ctx, out_n * es);
  if (out_init == NULL) return ACCEL_ERROR_OUT_OF_MEMORY;
  memcpy(out_init, in_out ? c->y : c->want, out_n * es);
  if (!in_out) {
    memset(out_init + c->off * es, CONFORM_OP_POISON, (out_n - c->off) * es);
  }
  accel_status_t status = conform_stream(ctx, device, &stream);
  if (status == ACCEL_OK) {
    status = conform_buffer_tailed(ctx, device, out_init, out_n * es, &bo);
  }
  if (status == ACCEL_OK && s->op != CONFORM_OP_FILL &&
      s->op != CONFORM_OP_SCALE) {
    status = conform_op_buffer(ctx, device, c->x, n * in_es, &bx);
  }
  if (status == ACCEL_OK &&
      (s->op == CONFORM_OP_ADD || s->op == CONFORM_OP_MUL)) {
    status = conform_op_buffer(ctx, device, c->y, n * es, &by);
  }
  if (status != ACCEL_OK) return status;
  size_t o = c->off * es, io = c->off * in_es;
  switch (s->op) {
    case CONFORM_OP_FILL:
      status = accel_op_fill(stream, bo, o, s->dtype, c->count, c->scalar);
      break;
    case CONFORM_OP_CAST:
      status =
          accel_op_cast(stream, bo, o, s->dtype, bx, io, s->in_dtype, c->count);
      break;
    case CONFORM_OP_SCALE:
      status = accel_op_scale(stream, bo, o, s->dtype, c->count, c->scalar);
      break;
    case CONFORM_OP_AXPY:
      status =
          accel_op_axpy(stream, bo, o, bx, o, s->dtype, c->count, c->scalar);
      break;
    case CONFORM_OP_ADD:
      status = accel_op_add(stream, bo, o, bx, o, by, o, s->dtype, c->count);
      break;
    case CONFORM_OP_MUL:
      status = accel_op_mul(stream, bo, o, bx, o, by, o, s->dtype, c->count);
      break;
    default:
      status = accel_op_sum(stream, bo, o, bx, o, s->dtype, c->count);
      break;
  }
  if (status != ACCEL_OK) return status;
  status = conform_stream_wait(ctx, stream);
  if (status != ACCEL_OK) return status;
  *out_tail = bo;
  return accel_buffer_read(bo, 0, got, out_n * es);
}

// Compares `got` with `want` over `n` elements of `dtype`; elements below
// `first` must match bit for bit (untouched guard). Returns the normalised
// error (INFINITY for a guard or NaN/inf mismatch) and the worst index.
static double conform_compare(const unsigned char* got,
                              const unsigned char* want, accel_dtype_t dtype,
                              size_t first, size_t n, double norm,
                              size_t* out_index) {
  size_t es = accel_dtype_size(dtype);
  *out_index = 0;
  if (memcmp(got, want, first * es) != 0) {
    for (size_t i = 0; i < first; i++) {
      if (memcmp(got + i * es, want + i * es, es) != 0) *out_index = i;
    }
    return INFINITY;
  }
  double max_want = 0, max_err = 0;
  for (size_t i = first; i < n; i++) {
    double w = conform_load(want, dtype, i);
    if (isfinite(w) && fabs(w) > max_want) max_want = fabs(w);
  }
  if (norm <= 0) norm = max_want > 1 ? max_want : 1;
  for (size_t i = first; i < n; i++) {
    double w = conform_load(want, dtype, i), g = conform_load(got, dtype, i);
    double err;
    if (isnan(w) || isinf(w)) {
      err = (isnan(w) && isnan(g)) || w == g ? 0 : INFINITY;
    } else {
      err = isfinite(g) ? fabs(g - w) / norm : INFINITY;
    }
    if (err > max_err || (isnan(err) && !isnan(max_err))) {
      max_err = isnan(err) ? INFINITY : err;
      *out_index = i;
    }
  }
  return max_err;
}

// Runs one case on `device` and compares with `want`. Returns PASS, FAIL
// (detail written), or UNSUPPORTED when the device refuses the op.
static conform_result_t conform_case_on(conform_ctx_t* ctx,
                                        accel_device_t* device,
                                        conform_case_t* c, double* worst) {
  const conform_op_spec_t* s = c->spec;
  size_t es = accel_dtype_size(s->dtype);
  size_t out_n = s->op == CONFORM_OP_SUM ? c->off + 1 : c->off + c->count;
  unsigned char* got = conform_alloc(ctx, out_n * es);
  if (got == NULL) return conform_report(ctx, CONFORM_FAIL, "host OOM");
  accel_buffer_t* out = NULL;
  accel_status_t status = conform_op_run(ctx, device, c, got, &out);
  if (status == ACCEL_ERROR_UNSUPPORTED) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "%s: %s",
                          accel_device_uri(device), accel_last_error());
  }
  if (status != ACCEL_OK) {
    char what[96];
    snprintf(what, sizeof(what), "%s, count %zu", accel_device_uri(device),
             c->count);
    return conform_fail_wait(ctx, status, what);
  }
  char what[96];
  snprintf(what, sizeof(what), "%s, count %zu at offset %zu",
           accel_device_uri(device), c->count, c->off);
  if (!conform_tail_intact(ctx, out, out_n * es, what)) return CONFORM_FAIL;
  double norm =
      s->op == CONFORM_OP_SUM ? (c->x_abs_sum > 1 ? c->x_abs_sum : 1) : 0;
  size_t at = 0;
  double err =
      conform_compare(got, c->want, s->dtype, c->off, out_n, norm, &at);
  double tol = conform_tolerance(s->dtype, s->op);
  if (!(err <= tol)) {
    return conform_report(
        ctx, CONFORM_FAIL,
        "%s, count %zu at offset %zu: element %zu is %.9g, expected %.9g "
        "(error %.3g > %.3g)%s",
        accel_device_uri(device), c->count, c->off, at,
        conform_load(got, s->dtype, at), conform_load(c->want, s->dtype, at),
        err, tol, at < c->off ? " (outside the output range)" : "");
  }
  if (err > *worst) *worst = err;
  return CONFORM_PASS;
}

static const double conform_fill_values[] = {0.1,   -2.75,   3e9,
                                             -1e-9, 65519.0, 7.0};

static conform_result_t conform_ops_elementwise(conform_ctx_t* ctx,
                                                const void* arg) {
  const conform_op_spec_t* s = arg;
  uint64_t rng =
      ctx->seed * 1000 + (uint64_t)s->op * 16 + s->dtype * 4 + s->in_dtype;
  size_t es = accel_dtype_size(s->dtype), in_es = accel_dtype_size(s->in_dtype);
  double worst = 0, worst_ref = 0;
  for (size_t k = 0; k < CONFORM_NSHAPES; k++) {
    conform_case_t c = {.spec = s,
                        .count = conform_shapes[k].count,
                        .off = conform_shapes[k].off};
    size_t n = c.off + c.count;
    c.scalar = s->op == CONFORM_OP_FILL    ? conform_fill_values[k]
               : s->op == CONFORM_OP_SCALE ? -1.5
                                           : 0.75;
    c.x = conform_alloc(ctx, n * in_es);
    c.y = conform_alloc(ctx, n * es);
    c.want = conform_alloc(ctx, n * es);
    if (c.x == NULL || c.y == NULL || c.want == NULL) {
      return conform_report(ctx, CONFORM_FAIL, "host OOM");
    }
    conform_random_input(&rng, s->in_dtype, s->op, c.x, n);
    conform_random_input(&rng, s->dtype, s->op, c.y, n);
    if (s->op == CONFORM_OP_CAST) {
      conform_cast_specials(s->in_dtype, c.x + c.off * in_es, c.count);
    }
    // Guard prefix and initial output: the in-out operand's data for
    // scale and axpy, a recognisable pattern otherwise.
    if (s->op == CONFORM_OP_SCALE || s->op == CONFORM_OP_AXPY) {
      memcpy(c.want, c.y, n * es);
    } else {
      memset(c.want, CONFORM_OP_SUM == s->op ? 0x5a : 0xa5, n * es);
    }
    conform_expect(&c);
    conform_result_t r = conform_case_on(ctx, ctx->device, &c, &worst);
    if (r != CONFORM_PASS) return r;
    if (ctx->reference != NULL) {
      r = conform_case_on(ctx, ctx->reference, &c, &worst_ref);
      if (r == CONFORM_FAIL) {
        char detail[sizeof(ctx->detail)];
        snprintf(detail, sizeof(detail), "%s", ctx->detail);
        return conform_report(ctx, CONFORM_FAIL, "reference broken: %s",
                              detail);
      }
      if (r != CONFORM_PASS) ctx->detail[0] = '\0';  // host reference only
    }
  }
  return conform_report(ctx, CONFORM_PASS,
                        "6 shapes up to 1M+7, max error %.2g (tol %.2g)%s",
                        worst, conform_tolerance(s->dtype, s->op),
                        ctx->reference ? ", reference cpu agrees" : "");
}

// ---------------------------------------------------------------------------
// GEMM
// ---------------------------------------------------------------------------

typedef struct conform_gemm_shape {
  size_t m, n, k;
  bool ta, tb;
  size_t pad;  // extra elements per row of every matrix
  double alpha, beta;
} conform_gemm_shape_t;

static const conform_gemm_shape_t conform_gemm_shapes[] = {
    {1, 1, 1, 0, 0, 0, 1, 0},       {3, 5, 7, 0, 0, 0, 1, 0},
    {3, 5, 7, 1, 0, 2, 1.5, 0.5},   {3, 5, 7, 0, 1, 1, 1, 1},
    {3, 5, 7, 1, 1, 3, -1, 0.25},   {16, 16, 16, 0, 0, 0, 1, 0},
    {33, 17, 65, 1, 1, 5, 0.5, -1}, {64, 1, 128, 0, 1, 0, 1, 0},
    {1, 64, 31, 1, 0, 0, 1, 0},     {8, 8, 0, 0, 0, 0, 1, 0.5},
    {5, 9, 0, 0, 0, 2, 1, 0},
    {128, 96, 80, 0, 0, 4, 1, 0},   {7, 300, 3, 1, 1, 1, 2, 0},
    // k past the blocks real GEMMs cut k into (256-512), beta on the
    // partial sums of a half C, and 2^21 multiply-adds: enough for a
    // threaded kernel to split it.
    {48, 40, 1100, 1, 0, 3, 1, 0.5},
    // k past one block with B narrow enough (77 KiB of f32) that a
    // kernel keeps all of it in a core's cache and writes C once; and k
    // deep enough (3 MiB of f32 B over 256 columns) that it cannot: then
    // the partial sums go through C or a scratch tile in steps.
    {20, 30, 600, 0, 0, 2, 1, 0.5},
    {12, 260, 3000, 0, 1, 1, 1, 0.5},
    // n wide enough that a blocked kernel's threads each take several
    // panels of columns, and may pack A (here transposed, over two k
    // blocks) once for all of them.
    {30, 1100, 520, 1, 0, 1, 1, 0.5},
    // alpha 0 still scales C by beta (and with beta 0 writes 0 over a C
    // of NaN): a kernel that returns early on alpha 0 leaves C as it was.
    {9, 11, 5, 1, 0, 1, 0, 0.5},
    {4, 4, 4, 0, 0, 0, 0, 0},
};
#define CONFORM_NGEMM \
  (sizeof(conform_gemm_shapes) / sizeof(conform_gemm_shapes[0]))

static conform_result_t conform_gemm_on(
    conform_ctx_t* ctx, accel_device_t* device, const conform_op_spec_t* s,
    const conform_gemm_shape_t* g, const unsigned char* a, size_t a_n,
    const unsigned char* b, size_t b_n, const unsigned char* c0,
    const unsigned char* want, size_t c_n, double* worst) {
  size_t ies = accel_dtype_size(s->in_dtype), oes = accel_dtype_size(s->dtype);
  accel_stream_t* stream = NULL;
  accel_buffer_t *ba = NULL, *bb = NULL, *bc = NULL;
  accel_status_t status = conform_stream(ctx, device, &stream);
  if (status == ACCEL_OK)
    status = conform_op_buffer(ctx, device, a, a_n * ies, &ba);
  if (status == ACCEL_OK)
    status = conform_op_buffer(ctx, device, b, b_n * ies, &bb);
  if (status == ACCEL_OK)
    status = conform_op_buffer(ctx, device, c0, c_n * oes, &bc);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  accel_gemm_t gemm;
  accel_gemm_init(&gemm);
  gemm.a_dtype = gemm.b_dtype = s->in_dtype;
  gemm.c_dtype = s->dtype;
  gemm.trans_a = g->ta;
  gemm.trans_b = g->tb;
  gemm.m = g->m;
  gemm.n = g->n;
  gemm.k = g->k;
  gemm.alpha = g->alpha;
  gemm.beta = g->beta;
  gemm.a = ba;
  gemm.a_offset = ies;  // one element in: offsets are exercised too
  gemm.lda = (g->ta ? g->m : g->k) + g->pad;
  gemm.b = bb;
  gemm.b_offset = 0;
  gemm.ldb = (g->tb ? g->k : g->n) + g->pad;
  gemm.c = bc;
  gemm.c_offset = 2 * oes;
  gemm.ldc = g->n + g->pad;
  status = accel_op_gemm(stream, &gemm);
  char what[128];
  snprintf(what, sizeof(what), "%s, %zux%zux%zu%s%s ld+%zu",
           accel_device_uri(device), g->m, g->n, g->k, g->ta ? " A^T" : "",
           g->tb ? " B^T" : "", g->pad);
  if (status == ACCEL_ERROR_UNSUPPORTED) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "%s: %s", what,
                          accel_last_error());
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, what);
  status = conform_stream_wait(ctx, stream);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, what);
  unsigned char* got = conform_alloc(ctx, c_n * oes);
  if (got == NULL) return conform_report(ctx, CONFORM_FAIL, "host OOM");
  status = accel_buffer_read(bc, 0, got, c_n * oes);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "read C");
  // Padding columns and the prefix must be untouched; compare the rest.
  double max_want = 1;
  for (size_t i = 0; i < c_n; i++) {
    double w = conform_load(want, s->dtype, i);
    if (isfinite(w) && fabs(w) > max_want) max_want = fabs(w);
  }
  double tol = conform_tolerance(s->dtype, CONFORM_OP_GEMM);
  for (size_t i = 0; i < c_n; i++) {
    size_t row = i < 2 ? SIZE_MAX : (i - 2) / gemm.ldc;
    size_t col = i < 2 ? SIZE_MAX : (i - 2) % gemm.ldc;
    bool inside = row < g->m && col < g->n;
    double w = conform_load(want, s->dtype, i),
           v = conform_load(got, s->dtype, i);
    double err =
        inside ? (isfinite(v) ? fabs(v - w) / max_want : INFINITY)
               : (memcmp(got + i * oes, want + i * oes, oes) ? INFINITY : 0);
    if (!(err <= tol)) {
      return conform_report(ctx, CONFORM_FAIL,
                            "%s alpha %g beta %g: C[%zu][%zu] is %.9g, "
                            "expected %.9g (error %.3g > %.3g)%s",
                            what, g->alpha, g->beta, row, col, v, w, err, tol,
                            inside ? "" : " (outside C: must be untouched)");
    }
    if (err > *worst) *worst = err;
  }
  return CONFORM_PASS;
}

static conform_result_t conform_ops_gemm(conform_ctx_t* ctx, const void* arg) {
  const conform_op_spec_t* s = arg;
  uint64_t rng = ctx->seed * 1000 + 700 + s->dtype * 4 + s->in_dtype;
  double worst = 0, worst_ref = 0;
  for (size_t t = 0; t < CONFORM_NGEMM; t++) {
    const conform_gemm_shape_t* g = &conform_gemm_shapes[t];
    size_t a_rows = g->ta ? g->k : g->m, a_ld = (g->ta ? g->m : g->k) + g->pad;
    size_t b_rows = g->tb ? g->n : g->k, b_ld = (g->tb ? g->k : g->n) + g->pad;
    size_t c_ld = g->n + g->pad;
    size_t a_n = 1 + a_rows * a_ld + 1, b_n = b_rows * b_ld + 1;
    size_t c_n = 2 + g->m * c_ld;
    unsigned char* a = conform_alloc(ctx, a_n * 4);
    unsigned char* b = conform_alloc(ctx, b_n * 4);
    unsigned char* c0 = conform_alloc(ctx, c_n * 4);
    unsigned char* want = conform_alloc(ctx, c_n * 4);
    if (!a || !b || !c0 || !want) {
      return conform_report(ctx, CONFORM_FAIL, "host OOM");
    }
    conform_random_input(&rng, s->in_dtype, CONFORM_OP_GEMM, a, a_n);
    conform_random_input(&rng, s->in_dtype, CONFORM_OP_GEMM, b, b_n);
    conform_random_input(&rng, s->dtype, CONFORM_OP_GEMM, c0, c_n);
    if (g->beta == 0) {  // beta 0 must ignore C, even NaN
      for (size_t i = 0; i < g->m; i++) {
        for (size_t j = 0; j < g->n; j++) {
          conform_store(c0, s->dtype, 2 + i * c_ld + j, NAN);
        }
      }
    }
    memcpy(want, c0, c_n * accel_dtype_size(s->dtype));
    for (size_t i = 0; i < g->m; i++) {
      for (size_t j = 0; j < g->n; j++) {
        double acc = 0;
        for (size_t p = 0; p < g->k; p++) {
          size_t ia = 1 + (g->ta ? p * a_ld + i : i * a_ld + p);
          size_t ib = g->tb ? j * b_ld + p : p * b_ld + j;
          acc += conform_load(a, s->in_dtype, ia) *
                 conform_load(b, s->in_dtype, ib);
        }
        size_t ic = 2 + i * c_ld + j;
        double v = g->alpha * acc;
        if (g->beta != 0) v += g->beta * conform_load(c0, s->dtype, ic);
        conform_store(want, s->dtype, ic, v);
      }
    }
    conform_result_t r = conform_gemm_on(ctx, ctx->device, s, g, a, a_n, b, b_n,
                                         c0, want, c_n, &worst);
    if (r != CONFORM_PASS) return r;
    if (ctx->reference != NULL) {
      r = conform_gemm_on(ctx, ctx->reference, s, g, a, a_n, b, b_n, c0, want,
                          c_n, &worst_ref);
      if (r == CONFORM_FAIL) {
        char detail[sizeof(ctx->detail)];
        snprintf(detail, sizeof(detail), "%s", ctx->detail);
        return conform_report(ctx, CONFORM_FAIL, "reference broken: %s",
                              detail);
      }
    }
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%zu shapes, all transposes, padded ld, k=0, beta=0 "
                        "over NaN; max error %.2g (tol %.2g)",
                        CONFORM_NGEMM, worst,
                        conform_tolerance(s->dtype, CONFORM_OP_GEMM));
}

// ---------------------------------------------------------------------------
// Registry
// ---------------------------------------------------------------------------

#define F32 ACCEL_DTYPE_F32
#define F16 ACCEL_DTYPE_F16
#define BF16 ACCEL_DTYPE_BF16
#define I32 ACCEL_DTYPE_I32
#define SPEC(op, dt, in) \
  { CONFORM_OP_##op, dt, in }

static const conform_op_spec_t conform_specs[] = {
    SPEC(FILL, F32, F32),  SPEC(FILL, F16, F16),    SPEC(FILL, BF16, BF16),
    SPEC(FILL, I32, I32),  SPEC(CAST, F32, F16),    SPEC(CAST, F32, BF16),
    SPEC(CAST, F32, I32),  SPEC(CAST, F16, F32),    SPEC(CAST, F16, BF16),
    SPEC(CAST, F16, I32),  SPEC(CAST, BF16, F32),   SPEC(CAST, BF16, F16),
    SPEC(CAST, BF16, I32), SPEC(CAST, I32, F32),    SPEC(CAST, I32, F16),
    SPEC(CAST, I32, BF16), SPEC(CAST, F32, F32),    SPEC(SCALE, F32, F32),
    SPEC(SCALE, F16, F16), SPEC(SCALE, BF16, BF16), SPEC(AXPY, F32, F32),
    SPEC(AXPY, F16, F16),  SPEC(AXPY, BF16, BF16),  SPEC(ADD, F32, F32),
    SPEC(ADD, F16, F16),   SPEC(ADD, BF16, BF16),   SPEC(ADD, I32, I32),
    SPEC(MUL, F32, F32),   SPEC(MUL, F16, F16),     SPEC(MUL, BF16, BF16),
    SPEC(MUL, I32, I32),   SPEC(SUM, F32, F32),     SPEC(SUM, F16, F16),
    SPEC(SUM, BF16, BF16), SPEC(SUM, I32, I32),     SPEC(GEMM, F32, F32),
    SPEC(GEMM, F16, F16),  SPEC(GEMM, BF16, BF16),  SPEC(GEMM, F32, F16),
    SPEC(GEMM, F32, BF16),
};
#define CONFORM_NSPECS (sizeof(conform_specs) / sizeof(conform_specs[0]))

static conform_check_t conform_ops[CONFORM_NSPECS];
static char conform_op_check_names[CONFORM_NSPECS][32];

const conform_check_t* conform_ops_checks(size_t* out_count) {
  if (conform_ops[0].name == NULL) {  // built once, from one thread
    for (size_t i = 0; i < CONFORM_NSPECS; i++) {
      const conform_op_spec_t* s = &conform_specs[i];
      char* name = conform_op_check_names[i];
      if (s->op == CONFORM_OP_CAST ||
          (s->op == CONFORM_OP_GEMM && s->in_dtype != s->dtype)) {
        snprintf(name, 32, "ops.%s.%s_%s", conform_op_names[s->op],
                 accel_dtype_name(s->in_dtype), accel_dtype_name(s->dtype));
      } else {
        snprintf(name, 32, "ops.%s.%s", conform_op_names[s->op],
                 accel_dtype_name(s->dtype));
      }
      conform_ops[i].name = name;
      conform_ops[i].fn =
          s->op == CONFORM_OP_GEMM ? conform_ops_gemm : conform_ops_elementwise;
      conform_ops[i].arg = s;
    }
  }
  *out_count = CONFORM_NSPECS;
  return conform_ops;
}
