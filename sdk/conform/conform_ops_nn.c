// SPDX-License-Identifier: MIT
//
// Checks of the neural-network ops (<accel/ops_nn.h>, plugin ABI 1.4):
// ReLU, GELU and SiLU in every float dtype, bias-add in every dtype, and
// strided-batched GEMM in every GEMM dtype combination. As in
// conform_ops.c, each op runs on the device under test and on the CPU
// plugin's device (the reference) with the same random inputs, and both
// are compared with a double-precision host computation (dtype.c) that
// rounds once to the output type.
//
// Errors and tolerances (stated in each check's detail line):
// - ReLU is exact: every element must equal the reference bit for bit
//   (-0 stays -0; a NaN must stay a NaN, payload free).
// - GELU and SiLU: per element |got - want| / max(1, |want|), at most
//   8e-6 for f32 (the backends' f32 erfc and exp, OpenCL's allow 16 and 3
//   ulp), 2e-3 for f16 and 1.6e-2 for bf16 (one rounding of the f32
//   result, which may differ by one ulp from rounding the exact value).
//   NaN must give NaN and +inf +inf.
// - Bias-add: as add in conform_ops.c (1e-6, 2e-3, 1.6e-2 of the largest
//   |want|; I32 exact, wrapping).
// - Strided-batched GEMM: as GEMM (1e-4, 4e-3, 3e-2 of the largest
//   |want|, f32 output for mixed inputs 1e-4), over batches with B or A
//   shared (stride 0), odd sizes, transposes, padded leading dimensions,
//   gaps between members, interleaved C matrices, k = 0 and beta = 0 over
//   a C full of NaN.
// Elements outside the outputs (a guarded prefix, 256 bytes past the end
// of an activation's output, padding, gaps between batch members) must be
// untouched.
#include <accel/accel.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

typedef enum conform_nn_op {
  CONFORM_NN_RELU = ACCEL_ACTIVATION_RELU,
  CONFORM_NN_GELU = ACCEL_ACTIVATION_GELU,
  CONFORM_NN_SILU = ACCEL_ACTIVATION_SILU,
  CONFORM_NN_BIAS_ADD,
  CONFORM_NN_GEMM_BATCHED,
} conform_nn_op_t;

typedef struct conform_nn_spec {
  conform_nn_op_t op;
  accel_dtype_t dtype;     // output dtype
  accel_dtype_t in_dtype;  // GEMM inputs
} conform_nn_spec_t;

// Creates a tracked buffer of `bytes` on `device` holding `init`.
static accel_status_t conform_nn_buffer(conform_ctx_t* ctx,
                                        accel_device_t* device,
                                        const void* init, size_t bytes,
                                        accel_buffer_t** out) {
  accel_status_t status = conform_buffer(ctx, device, bytes, out);
  if (status == ACCEL_OK) status = accel_buffer_write(*out, 0, init, bytes);
  return status;
}

// The result of a failed enqueue or wait on `device`.
static conform_result_t conform_nn_failed(conform_ctx_t* ctx,
                                          accel_device_t* device,
                                          accel_status_t status,
                                          const char* what) {
  char where[160];
  snprintf(where, sizeof(where), "%.64s: %.90s", accel_device_uri(device),
           what);
  if (status == ACCEL_ERROR_UNSUPPORTED) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "%s: %s", where,
                          accel_last_error());
  }
  return conform_fail_wait(ctx, status, where);
}

// Runs `fn` on the device under test and on the reference; a failure of
// the reference is reported as such.
typedef conform_result_t (*conform_nn_run_fn)(conform_ctx_t* ctx,
                                              accel_device_t* device,
                                              const void* arg, double* worst);

static conform_result_t conform_nn_both(conform_ctx_t* ctx,
                                        conform_nn_run_fn fn, const void* arg,
                                        double* worst) {
  conform_result_t r = fn(ctx, ctx->device, arg, worst);
  if (r != CONFORM_PASS || ctx->reference == NULL) return r;
  double ignored = 0;
  r = fn(ctx, ctx->reference, arg, &ignored);
  if (r == CONFORM_FAIL) {
    char detail[sizeof(ctx->detail)];
    snprintf(detail, sizeof(detail), "%s", ctx->detail);
    return conform_report(ctx, CONFORM_FAIL, "reference broken: %s", detail);
  }
  if (r != CONFORM_PASS) ctx->detail[0] = '\0';  // host reference only
  return CONFORM_PASS;
}

// ---------------------------------------------------------------------------
// Activations
// ---------------------------------------------------------------------------

static double conform_act_tolerance(conform_nn_op_t op, accel_dtype_t dtype) {
  if (op == CONFORM_NN_RELU) return 0.0;
  return dtype == ACCEL_DTYPE_F32   ? 8e-6
         : dtype == ACCEL_DTYPE_F16 ? 2e-3
                                    : 1.6e-2;
}

static double conform_act_ref(conform_nn_op_t op, double x) {
  switch (op) {
    case CONFORM_NN_GELU:
      return 0.5 * x * erfc(-x / sqrt(2.0));
    case CONFORM_NN_SILU:
      return x / (1.0 + exp(-x));
    default:
      return x < 0 ? 0.0 : x;  // keeps -0 and NaN
  }
}

// One activation case: `count` elements at element offset `off`, in place
// or from a second buffer.
typedef struct conform_act_case {
  const conform_nn_spec_t* spec;
  size_t count, off;
  bool in_place;
  const unsigned char* x;     // off + count elements (the prefix: guard)
  const unsigned char* init;  // the output before: a 0xa5 pattern
  const unsigned char* want;  // off + count elements, the prefix as before
} conform_act_case_t;

static const struct {
  size_t count, off;
  bool in_place;
} conform_act_shapes[] = {{1, 0, false},    {3, 1, false},
                          {17, 0, true},    {4095, 3, false},
                          {65537, 0, true}, {(1u << 20) + 7, 5, false}};
#define CONFORM_NACT \
  (sizeof(conform_act_shapes) / sizeof(conform_act_shapes[0]))

// Compares element `i`; returns its error (INFINITY for a mismatch that
// no tolerance covers).
static double conform_act_error(const conform_nn_spec_t* s,
                                const unsigned char* got,
                                const unsigned char* want, size_t i) {
  size_t es = accel_dtype_size(s->dtype);
  double w = conform_load(want, s->dtype, i),
         g = conform_load(got, s->dtype, i);
  if (isnan(w)) return isnan(g) ? 0 : INFINITY;
  if (s->op == CONFORM_NN_RELU || isinf(w)) {
    return memcmp(got + i * es, want + i * es, es) == 0 ? 0 : INFINITY;
  }
  if (!isfinite(g)) return INFINITY;
  return fabs(g - w) / (fabs(w) > 1 ? fabs(w) : 1);
}

static conform_result_t conform_act_on(conform_ctx_t* ctx,
                                       accel_device_t* device, const void* arg,
                                       double* worst) {
  const conform_act_case_t* c = arg;
  const conform_nn_spec_t* s = c->spec;
  size_t es = accel_dtype_size(s->dtype), n = c->off + c->count;
  accel_stream_t* stream = NULL;
  accel_buffer_t *out = NULL, *in = NULL;
  // The output starts as the input (in place) or as a guard pattern.
  accel_status_t status = conform_stream(ctx, device, &stream);
  if (status == ACCEL_OK) {
    status = conform_buffer_tailed(ctx, device, c->in_place ? c->x : c->init,
                                   n * es, &out);
  }
  if (status == ACCEL_OK && !c->in_place) {
    status = conform_nn_buffer(ctx, device, c->x, n * es, &in);
  }
  if (status == ACCEL_OK) {
    status = accel_op_activation(stream, out, c->off * es,
                                 c->in_place ? out : in, c->off * es, s->dtype,
                                 c->count, (accel_activation_t)s->op);
  }
  if (status == ACCEL_OK) status = conform_stream_wait(ctx, stream);
  unsigned char* got = conform_alloc(ctx, n * es);
  if (got == NULL) return conform_report(ctx, CONFORM_FAIL, "host OOM");
  if (status == ACCEL_OK) status = accel_buffer_read(out, 0, got, n * es);
  char what[96];
  snprintf(what, sizeof(what), "count %zu at offset %zu%s", c->count, c->off,
           c->in_place ? " in place" : "");
  if (status != ACCEL_OK) return conform_nn_failed(ctx, device, status, what);
  if (memcmp(got, c->want, c->off * es) != 0) {
    return conform_report(ctx, CONFORM_FAIL,
                          "%s, %s: an element before the output changed",
                          accel_device_uri(device), what);
  }
  char where[160];
  snprintf(where, sizeof(where), "%s, %s", accel_device_uri(device), what);
  if (!conform_tail_intact(ctx, out, n * es, where)) return CONFORM_FAIL;
  double tol = conform_act_tolerance(s->op, s->dtype);
  for (size_t i = c->off; i < n; i++) {
    double err = conform_act_error(s, got, c->want, i);
    if (!(err <= tol)) {
      return conform_report(
          ctx, CONFORM_FAIL,
          "%s, %s: %s(%.9g) is %.9g, expected %.9g (error %.3g > %.3g)",
          accel_device_uri(device), what,
          accel_activation_name((accel_activation_t)s->op),
          conform_load(c->x, s->dtype, i), conform_load(got, s->dtype, i),
          conform_load(c->want, s->dtype, i), err, tol);
    }
    if (err > *worst) *worst = err;
  }
  return CONFORM_PASS;
}

// Values every activation must get right, at the start of each input.
static const double conform_act_specials[] = {
    0.0,  -0.0,  NAN,  INFINITY, -1e-30, 1e-30, 3.0,  -3.0,     0.5,
    -0.5, -12.0, 12.0, -40,      40,     1e4,   -1e4, -INFINITY};

static conform_result_t conform_ops_activation(conform_ctx_t* ctx,
                                               const void* arg) {
  const conform_nn_spec_t* s = arg;
  uint64_t rng = ctx->seed * 1000 + 800 + (uint64_t)s->op * 4 + s->dtype;
  size_t es = accel_dtype_size(s->dtype);
  // -inf gives NaN for GELU and SiLU by their formulas (-inf * 0); only
  // ReLU has a defined value for it.
  size_t nspecial = sizeof(conform_act_specials) / sizeof(double) -
                    (s->op == CONFORM_NN_RELU ? 0 : 1);
  double worst = 0;
  for (size_t k = 0; k < CONFORM_NACT; k++) {
    conform_act_case_t c = {.spec = s,
                            .count = conform_act_shapes[k].count,
                            .off = conform_act_shapes[k].off,
                            .in_place = conform_act_shapes[k].in_place};
    size_t n = c.off + c.count;
    unsigned char* x = conform_alloc(ctx, n * es);
    unsigned char* init = conform_alloc(ctx, n * es);
    unsigned char* want = conform_alloc(ctx, n * es);
    if (x == NULL || init == NULL || want == NULL) {
      return conform_report(ctx, CONFORM_FAIL, "host OOM");
    }
    for (size_t i = 0; i < n; i++) {
      double v = i >= c.off && i - c.off < nspecial
                     ? conform_act_specials[i - c.off]
                     : conform_rand_range(&rng, -8.0, 8.0);
      conform_store(x, s->dtype, i, v);
    }
    memset(init, 0xa5, n * es);
    memcpy(want, c.in_place ? x : init, c.off * es);  // the untouched guard
    for (size_t i = c.off; i < n; i++) {
      conform_store(want, s->dtype, i,
                    conform_act_ref(s->op, conform_load(x, s->dtype, i)));
    }
    c.x = x;
    c.init = init;
    c.want = want;
    conform_result_t r = conform_nn_both(ctx, conform_act_on, &c, &worst);
    if (r != CONFORM_PASS) return r;
  }
  return conform_report(ctx, CONFORM_PASS,
                        "6 shapes up to 1M+7, in place too, specials (0, -0, "
                        "NaN, inf); max error %.2g (tol %.2g%s)%s",
                        worst, conform_act_tolerance(s->op, s->dtype),
                        s->op == CONFORM_NN_RELU ? ", bit-exact" : "",
                        ctx->reference ? ", reference cpu agrees" : "");
}

// ---------------------------------------------------------------------------
// Bias-add
// ---------------------------------------------------------------------------

static double conform_bias_tolerance(accel_dtype_t dtype) {
  return dtype == ACCEL_DTYPE_F32    ? 1e-6
         : dtype == ACCEL_DTYPE_F16  ? 2e-3
         : dtype == ACCEL_DTYPE_BF16 ? 1.6e-2
                                     : 0.0;
}

typedef struct conform_bias_case {
  const conform_nn_spec_t* spec;
  size_t rows, cols, y_off, b_off;  // offsets in elements
  const unsigned char* y;           // y_off + rows * cols elements
  const unsigned char* bias;        // b_off + cols elements
  const unsigned char* want;        // like y
} conform_bias_case_t;

static const struct {
  size_t rows, cols, y_off, b_off;
} conform_bias_shapes[] = {
    {1, 1, 0, 0},   {3, 5, 1, 2},     {7, 1, 0, 1},      {1, 129, 2, 0},
    {64, 33, 0, 3}, {1000, 17, 5, 1}, {257, 1031, 0, 0}, {4096, 300, 1, 7}};
#define CONFORM_NBIAS \
  (sizeof(conform_bias_shapes) / sizeof(conform_bias_shapes[0]))

static conform_result_t conform_bias_on(conform_ctx_t* ctx,
                                        accel_device_t* device, const void* arg,
                                        double* worst) {
  const conform_bias_case_t* c = arg;
  accel_dtype_t dt = c->spec->dtype;
  size_t es = accel_dtype_size(dt), n = c->y_off + c->rows * c->cols;
  accel_stream_t* stream = NULL;
  accel_buffer_t *y = NULL, *bias = NULL;
  accel_status_t status = conform_stream(ctx, device, &stream);
  if (status == ACCEL_OK)
    status = conform_nn_buffer(ctx, device, c->y, n * es, &y);
  if (status == ACCEL_OK) {
    status = conform_nn_buffer(ctx, device, c->bias, (c->b_off + c->cols) * es,
                               &bias);
  }
  if (status == ACCEL_OK) {
    status = accel_op_bias_add(stream, y, c->y_off * es, bias, c->b_off * es,
                               dt, c->rows, c->cols);
  }
  if (status == ACCEL_OK) status = conform_stream_wait(ctx, stream);
  unsigned char* got = conform_alloc(ctx, n * es);
  if (got == NULL) return conform_report(ctx, CONFORM_FAIL, "host OOM");
  if (status == ACCEL_OK) status = accel_buffer_read(y, 0, got, n * es);
  char what[96];
  snprintf(what, sizeof(what), "%zu x %zu, y at %zu, bias at %zu", c->rows,
           c->cols, c->y_off, c->b_off);
  if (status != ACCEL_OK) return conform_nn_failed(ctx, device, status, what);
  if (memcmp(got, c->want, c->y_off * es) != 0) {
    return conform_report(ctx, CONFORM_FAIL,
                          "%s, %s: an element before y changed",
                          accel_device_uri(device), what);
  }
  double max_want = 1;
  for (size_t i = c->y_off; i < n; i++) {
    double w = fabs(conform_load(c->want, dt, i));
    if (w > max_want) max_want = w;
  }
  double tol = conform_bias_tolerance(dt);
  for (size_t i = c->y_off; i < n; i++) {
    double w = conform_load(c->want, dt, i), g = conform_load(got, dt, i);
    double err = dt == ACCEL_DTYPE_I32
                     ? (memcmp(got + i * es, c->want + i * es, es) ? 1 : 0)
                     : (isfinite(g) ? fabs(g - w) / max_want : INFINITY);
    if (!(err <= tol)) {
      size_t e = i - c->y_off;
      return conform_report(ctx, CONFORM_FAIL,
                            "%s, %s: y[%zu][%zu] is %.9g, expected %.9g "
                            "(error %.3g > %.3g)",
                            accel_device_uri(device), what, e / c->cols,
                            e % c->cols, g, w, err, tol);
    }
    if (err > *worst) *worst = err;
  }
  return CONFORM_PASS;
}

static conform_result_t conform_ops_bias_add(conform_ctx_t* ctx,
                                             const void* arg) {
  const conform_nn_spec_t* s = arg;
  uint64_t rng = ctx->seed * 1000 + 850 + s->dtype;
  size_t es = accel_dtype_size(s->dtype);
  double worst = 0;
  for (size_t k = 0; k < CONFORM_NBIAS; k++) {
    conform_bias_case_t c = {.spec = s,
                             .rows = conform_bias_shapes[k].rows,
                             .cols = conform_bias_shapes[k].cols,
                             .y_off = conform_bias_shapes[k].y_off,
                             .b_off = conform_bias_shapes[k].b_off};
    size_t n = c.y_off + c.rows * c.cols, nb = c.b_off + c.cols;
    unsigned char* y = conform_alloc(ctx, n * es);
    unsigned char* bias = conform_alloc(ctx, nb * es);
    unsigned char* want = conform_alloc(ctx, n * es);
    if (y == NULL || bias == NULL || want == NULL) {
      return conform_report(ctx, CONFORM_FAIL, "host OOM");
    }
    for (size_t i = 0; i < n + nb; i++) {
      double v = s->dtype == ACCEL_DTYPE_I32
                     ? (double)(int32_t)(uint32_t)conform_rand(&rng)
                     : conform_rand_range(&rng, -1.0, 1.0);
      conform_store(i < n ? y : bias, s->dtype, i < n ? i : i - n, v);
    }
    memcpy(want, y, n * es);
    for (size_t i = c.y_off; i < n; i++) {
      double b = conform_load(bias, s->dtype, c.b_off + (i - c.y_off) % c.cols);
      double v = conform_load(y, s->dtype, i);
      if (s->dtype == ACCEL_DTYPE_I32) {
        uint32_t z = (uint32_t)(int32_t)v + (uint32_t)(int32_t)b;  // wraps
        memcpy(want + 4 * i, &z, sizeof(z));
      } else {
        // Added in f32 and rounded once to the dtype, as the device does.
        conform_store(want, s->dtype, i, (float)(v + b));
      }
    }
    c.y = y;
    c.bias = bias;
    c.want = want;
    conform_result_t r = conform_nn_both(ctx, conform_bias_on, &c, &worst);
    if (r != CONFORM_PASS) return r;
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%zu shapes up to 4096 x 300 at offsets; max error "
                        "%.2g (tol %.2g%s)%s",
                        CONFORM_NBIAS, worst, conform_bias_tolerance(s->dtype),
                        s->dtype == ACCEL_DTYPE_I32 ? ", exact" : "",
                        ctx->reference ? ", reference cpu agrees" : "");
}

// ---------------------------------------------------------------------------
// Strided-batched GEMM
// ---------------------------------------------------------------------------

// One batch: `count` GEMMs of m x n x k. Strides are the packed member
// size plus `gap` elements, or 0 for a shared A or B. `interleave`: the C
// matrices sit side by side in one wide matrix (ldc = count * n + pad,
// stride_c = n), as attention heads do.
typedef struct conform_batch_shape {
  size_t count, m, n, k;
  bool ta, tb;
  size_t pad, gap;
  bool shared_a, shared_b, interleave;
  double alpha, beta;
} conform_batch_shape_t;

static const conform_batch_shape_t conform_batch_shapes[] = {
    {1, 3, 5, 7, 0, 0, 0, 0, 0, 0, 0, 1, 0},
    {3, 3, 5, 7, 0, 0, 0, 0, 0, 0, 0, 1, 0},
    {4, 5, 3, 9, 1, 0, 1, 0, 0, 1, 0, 1, 0.5},
    {5, 17, 13, 33, 1, 1, 2, 3, 0, 0, 0, 1.5, -1},
    {7, 1, 1, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0},
    {2, 8, 8, 0, 0, 0, 0, 2, 0, 0, 0, 1, 0.5},
    {6, 9, 4, 11, 0, 1, 1, 0, 0, 0, 1, 1, 0},
    {3, 33, 65, 17, 0, 0, 0, 5, 1, 0, 0, 1, 0.25},
    {16, 16, 16, 16, 0, 0, 0, 0, 0, 1, 0, 2, 0},
    {9, 2, 31, 6, 1, 1, 0, 4, 0, 0, 1, -1, 1},
    // alpha 0 with beta 0 still writes 0 over a C of NaN, as plugin.h's
    // C = alpha * op(A) * op(B) + beta * C says.
    {2, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0},
};
#define CONFORM_NBATCH \
  (sizeof(conform_batch_shapes) / sizeof(conform_batch_shapes[0]))

// A prepared batch: host images of A, B, C before and the expected C,
// and which C elements the GEMMs write.
typedef struct conform_batch_case {
  const conform_nn_spec_t* spec;
  const conform_batch_shape_t* g;
  size_t lda, ldb, ldc, sa, sb, sc;  // elements
  size_t a_n, b_n, c_n;              // elements of each buffer
  unsigned char *a, *b, *c0, *want, *inside;
} conform_batch_case_t;

static double conform_batch_tolerance(accel_dtype_t dtype) {
  return dtype == ACCEL_DTYPE_F32   ? 1e-4
         : dtype == ACCEL_DTYPE_F16 ? 4e-3
                                    : 3e-2;
}

// C element (i, r, col) of the batch, as an index into the C buffer (two
// elements of prefix).
static size_t conform_batch_at(const conform_batch_case_t* b, size_t i,
                               size_t r, size_t col) {
  return 2 + i * b->sc + r * b->ldc + col;
}

static conform_result_t conform_batch_on(conform_ctx_t* ctx,
                                         accel_device_t* device,
                                         const void* arg, double* worst) {
  const conform_batch_case_t* b = arg;
  const conform_nn_spec_t* s = b->spec;
  const conform_batch_shape_t* g = b->g;
  size_t ies = accel_dtype_size(s->in_dtype), oes = accel_dtype_size(s->dtype);
  accel_stream_t* stream = NULL;
  accel_buffer_t *ba = NULL, *bb = NULL, *bc = NULL;
  accel_status_t status = conform_stream(ctx, device, &stream);
  if (status == ACCEL_OK) {
    status = conform_nn_buffer(ctx, device, b->a, b->a_n * ies, &ba);
  }
  if (status == ACCEL_OK) {
    status = conform_nn_buffer(ctx, device, b->b, b->b_n * ies, &bb);
  }
  if (status == ACCEL_OK) {
    status = conform_nn_buffer(ctx, device, b->c0, b->c_n * oes, &bc);
  }
  accel_gemm_t gemm;
  accel_gemm_init(&gemm);
  gemm.a_dtype = gemm.b_dtype = s->in_dtype;
  gemm.c_dtype = s->dtype;
  gemm.trans_a = g->ta;
  gemm.trans_b = g->tb;
  gemm.m = g->m, gemm.n = g->n, gemm.k = g->k;
  gemm.alpha = g->alpha, gemm.beta = g->beta;
  gemm.a = ba, gemm.a_offset = ies, gemm.lda = b->lda;
  gemm.b = bb, gemm.b_offset = 0, gemm.ldb = b->ldb;
  gemm.c = bc, gemm.c_offset = 2 * oes, gemm.ldc = b->ldc;
  if (status == ACCEL_OK) {
    status = accel_op_gemm_strided_batched(stream, &gemm, g->count, b->sa,
                                           b->sb, b->sc);
  }
  if (status == ACCEL_OK) status = conform_stream_wait(ctx, stream);
  unsigned char* got = conform_alloc(ctx, b->c_n * oes);
  if (got == NULL) return conform_report(ctx, CONFORM_FAIL, "host OOM");
  if (status == ACCEL_OK) status = accel_buffer_read(bc, 0, got, b->c_n * oes);
  char what[160];
  snprintf(what, sizeof(what),
           "%zu x %zux%zux%zu%s%s, strides %zu/%zu/%zu, ld %zu/%zu/%zu",
           g->count, g->m, g->n, g->k, g->ta ? " A^T" : "", g->tb ? " B^T" : "",
           b->sa, b->sb, b->sc, b->lda, b->ldb, b->ldc);
  if (status != ACCEL_OK) return conform_nn_failed(ctx, device, status, what);
  double max_want = 1;
  for (size_t i = 0; i < b->c_n; i++) {
    double w = conform_load(b->want, s->dtype, i);
    if (b->inside[i] && isfinite(w) && fabs(w) > max_want) max_want = fabs(w);
  }
  double tol = conform_batch_tolerance(s->dtype);
  for (size_t i = 0; i < b->c_n; i++) {
    double w = conform_load(b->want, s->dtype, i),
           v = conform_load(got, s->dtype, i);
    double err =
        b->inside[i]
            ? (isfinite(v) ? fabs(v - w) / max_want : INFINITY)
            : (memcmp(got + i * oes, b->want + i * oes, oes) ? INFINITY : 0);
    if (!(err <= tol)) {
      return conform_report(ctx, CONFORM_FAIL,
                            "%s, %s alpha %g beta %g: C element %zu is %.9g, "
                            "expected %.9g (error %.3g > %.3g)%s",
                            accel_device_uri(device), what, g->alpha, g->beta,
                            i, v, w, err, tol,
                            b->inside[i] ? ""
                                         : " (outside every C: must be "
                                           "untouched)");
    }
    if (err > *worst) *worst = err;
  }
  return CONFORM_PASS;
}

// Lays out and fills batch `g`, and computes the expected C in double.
static bool conform_batch_prepare(conform_ctx_t* ctx, uint64_t* rng,
                                  conform_batch_case_t* b) {
  const conform_nn_spec_t* s = b->spec;
  const conform_batch_shape_t* g = b->g;
  size_t a_rows = g->ta ? g->k : g->m, b_rows = g->tb ? g->n : g->k;
  b->lda = (g->ta ? g->m : g->k) + g->pad;
  b->ldb = (g->tb ? g->k : g->n) + g->pad;
  b->ldc = (g->interleave ? g->count * g->n : g->n) + g->pad;
  size_t a_size = a_rows * b->lda, b_size = b_rows * b->ldb;
  b->sa = g->shared_a ? 0 : a_size + g->gap;
  b->sb = g->shared_b ? 0 : b_size + g->gap;
  b->sc = g->interleave ? g->n : g->m * b->ldc + g->gap;
  b->a_n = 1 + (g->count - 1) * b->sa + a_size + 1;
  b->b_n = (g->count - 1) * b->sb + b_size + 1;
  b->c_n = 2 + (g->count - 1) * b->sc + g->m * b->ldc + 1;
  b->a = conform_alloc(ctx, b->a_n * 4);
  b->b = conform_alloc(ctx, b->b_n * 4);
  b->c0 = conform_alloc(ctx, b->c_n * 4);
  b->want = conform_alloc(ctx, b->c_n * 4);
  b->inside = conform_alloc(ctx, b->c_n);
  if (!b->a || !b->b || !b->c0 || !b->want || !b->inside) return false;
  for (size_t i = 0; i < b->a_n; i++) {
    conform_store(b->a, s->in_dtype, i, conform_rand_range(rng, -1, 1));
  }
  for (size_t i = 0; i < b->b_n; i++) {
    conform_store(b->b, s->in_dtype, i, conform_rand_range(rng, -1, 1));
  }
  for (size_t i = 0; i < b->c_n; i++) {
    conform_store(b->c0, s->dtype, i, conform_rand_range(rng, -1, 1));
  }
  for (size_t i = 0; i < g->count; i++) {
    for (size_t r = 0; r < g->m; r++) {
      for (size_t col = 0; col < g->n; col++) {
        size_t at = conform_batch_at(b, i, r, col);
        b->inside[at] = 1;
        if (g->beta == 0) conform_store(b->c0, s->dtype, at, NAN);
      }
    }
  }
  memcpy(b->want, b->c0, b->c_n * accel_dtype_size(s->dtype));
  for (size_t i = 0; i < g->count; i++) {
    for (size_t r = 0; r < g->m; r++) {
      for (size_t col = 0; col < g->n; col++) {
        double acc = 0;
        for (size_t p = 0; p < g->k; p++) {
          size_t ia = 1 + i * b->sa + (g->ta ? p * b->lda + r : r * b->lda + p);
          size_t ib = i * b->sb + (g->tb ? col * b->ldb + p : p * b->ldb + col);
          acc += conform_load(b->a, s->in_dtype, ia) *
                 conform_load(b->b, s->in_dtype, ib);
        }
        size_t at = conform_batch_at(b, i, r, col);
        double v = g->alpha * acc;
        if (g->beta != 0) v += g->beta * conform_load(b->c0, s->dtype, at);
        conform_store(b->want, s->dtype, at, v);
      }
    }
  }
  return true;
}

static conform_result_t conform_ops_gemm_batched(conform_ctx_t* ctx,
                                                 const void* arg) {
  const conform_nn_spec_t* s = arg;
  uint64_t rng = ctx->seed * 1000 + 900 + s->dtype * 4 + s->in_dtype;
  double worst = 0;
  for (size_t t = 0; t < CONFORM_NBATCH; t++) {
    conform_batch_case_t b = {.spec = s, .g = &conform_batch_shapes[t]};
    if (!conform_batch_prepare(ctx, &rng, &b)) {
      return conform_report(ctx, CONFORM_FAIL, "host OOM");
    }
    conform_result_t r = conform_nn_both(ctx, conform_batch_on, &b, &worst);
    if (r != CONFORM_PASS) return r;
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%zu batches up to 16: shared A or B (stride 0), odd "
                        "sizes, transposes, padded ld, gaps, interleaved C, "
                        "k=0, beta=0 over NaN; max error %.2g (tol %.2g)%s",
                        CONFORM_NBATCH, worst,
                        conform_batch_tolerance(s->dtype),
                        ctx->reference ? ", reference cpu agrees" : "");
}

// ---------------------------------------------------------------------------
// Registry
// ---------------------------------------------------------------------------

#define F32 ACCEL_DTYPE_F32
#define F16 ACCEL_DTYPE_F16
#define BF16 ACCEL_DTYPE_BF16
#define I32 ACCEL_DTYPE_I32

static const conform_nn_spec_t conform_nn_specs[] = {
    {CONFORM_NN_RELU, F32, F32},         {CONFORM_NN_RELU, F16, F16},
    {CONFORM_NN_RELU, BF16, BF16},       {CONFORM_NN_GELU, F32, F32},
    {CONFORM_NN_GELU, F16, F16},         {CONFORM_NN_GELU, BF16, BF16},
    {CONFORM_NN_SILU, F32, F32},         {CONFORM_NN_SILU, F16, F16},
    {CONFORM_NN_SILU, BF16, BF16},       {CONFORM_NN_BIAS_ADD, F32, F32},
    {CONFORM_NN_BIAS_ADD, F16, F16},     {CONFORM_NN_BIAS_ADD, BF16, BF16},
    {CONFORM_NN_BIAS_ADD, I32, I32},     {CONFORM_NN_GEMM_BATCHED, F32, F32},
    {CONFORM_NN_GEMM_BATCHED, F16, F16}, {CONFORM_NN_GEMM_BATCHED, BF16, BF16},
    {CONFORM_NN_GEMM_BATCHED, F32, F16}, {CONFORM_NN_GEMM_BATCHED, F32, BF16},
};
#define CONFORM_NNN (sizeof(conform_nn_specs) / sizeof(conform_nn_specs[0]))

static conform_check_t conform_nn[CONFORM_NNN];
static char conform_nn_names[CONFORM_NNN][40];

const conform_check_t* conform_ops_nn_checks(size_t* out_count) {
  static const char* const ops[] = {"relu", "gelu", "silu", "bias_add",
                                    "gemm_batched"};
  if (conform_nn[0].name == NULL) {  // built once, from one thread
    for (size_t i = 0; i < CONFORM_NNN; i++) {
      const conform_nn_spec_t* s = &conform_nn_specs[i];
      char* name = conform_nn_names[i];
      if (s->in_dtype != s->dtype) {
        snprintf(name, 40, "ops.%s.%s_%s", ops[s->op],
                 accel_dtype_name(s->in_dtype), accel_dtype_name(s->dtype));
      } else {
        snprintf(name, 40, "ops.%s.%s", ops[s->op], accel_dtype_name(s->dtype));
      }
      conform_nn[i].name = name;
      conform_nn[i].fn = s->op == CONFORM_NN_BIAS_ADD ? conform_ops_bias_add
                         : s->op == CONFORM_NN_GEMM_BATCHED
                             ? conform_ops_gemm_batched
                             : conform_ops_activation;
      conform_nn[i].arg = s;
    }
  }
  *out_count = CONFORM_NNN;
  return conform_nn;
}
