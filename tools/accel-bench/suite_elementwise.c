// SPDX-License-Identifier: MIT
//
// elementwise: the built-in ops on f32 vectors (cast: f32 to f16) as
// bandwidth, bytes read plus bytes written per second (10^9 B/s), against
// the loop a user would write instead (loops.c, -O3). The CPU plugin runs
// each op on its pool of `compute_units` threads, so the judged baseline
// is the same loop split over as many threads of a persistent pool
// (pool.c); the one-thread loop is reported beside it ("<op>_1thread"),
// with the same accel figure, to show what the pool buys. Architecture.md sets
// no budget here: 90% of the threaded loop is shown for information.
//
// The accel side enqueues `iters` ops on one stream and synchronises once
// (the stream's natural use); the loops run `iters` times. rng_uniform and
// rng_normal fill f32 from the device generator's Philox stream (a new
// offset per iteration) against the same <accel/philox.h> code in a loop,
// one block of four values at a time, so their ratio is what accel adds to
// the generator itself, and their GB/s the bytes written. The size is
// the bytes of one f32 operand; the three sides measured in one rotation
// (accel, threaded loop, one-thread loop) use their own memory.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define BENCH_ELEMENTWISE_BUDGET_RATIO 0.90

typedef enum bench_ew_kind {
  BENCH_EW_ADD = 0,
  BENCH_EW_MUL,
  BENCH_EW_AXPY,
  BENCH_EW_SCALE,
  BENCH_EW_FILL,
  BENCH_EW_CAST,
  BENCH_EW_SUM,
  BENCH_EW_RNG_UNIFORM,
  BENCH_EW_RNG_NORMAL,
} bench_ew_kind_t;

typedef struct bench_ew_case {
  const char* name;
  bench_ew_kind_t kind;
  // Bytes moved per element, read plus written (f32 4, f16 2).
  uint32_t bytes_per_elem;
} bench_ew_case_t;

static const bench_ew_case_t bench_ew_cases[] = {
    {"add", BENCH_EW_ADD, 12},   {"mul", BENCH_EW_MUL, 12},
    {"axpy", BENCH_EW_AXPY, 12}, {"scale", BENCH_EW_SCALE, 8},
    {"fill", BENCH_EW_FILL, 4},  {"cast_f32_f16", BENCH_EW_CAST, 6},
    {"sum", BENCH_EW_SUM, 4},    {"rng_uniform", BENCH_EW_RNG_UNIFORM, 4},
    {"rng_normal", BENCH_EW_RNG_NORMAL, 4},
};
#define BENCH_EW_CASE_COUNT (sizeof(bench_ew_cases) / sizeof(bench_ew_cases[0]))

static const char* const bench_ew_case_names[] = {
    "add",
    "mul",
    "axpy",
    "scale",
    "fill",
    "cast_f32_f16",
    "sum",
    "rng_uniform",
    "rng_normal",
    "add_1thread",
    "mul_1thread",
    "axpy_1thread",
    "scale_1thread",
    "fill_1thread",
    "cast_f32_f16_1thread",
    "sum_1thread",
    "rng_uniform_1thread",
    "rng_normal_1thread",
    NULL,
};

// Everything one size needs; `c` is the case being measured.
typedef struct bench_ew {
  const bench_ew_case_t* c;
  size_t n;  // elements per operand
  accel_stream_t* stream;
  accel_buffer_t* x;
  accel_buffer_t* y;
  accel_buffer_t* z;
  accel_buffer_t* h;    // f16 output of the cast
  accel_buffer_t* out;  // the sum
  float* hx;            // the loops' memory
  float* hy;
  float* hz;
  uint16_t* hh;
  bench_pool_t* pool;
  double partial[64 * 8];  // per-thread sums, a cache line apart
  uint64_t iter;           // the loops' current iteration (alternating alpha)
} bench_ew_t;

// Alternating factors keep repeated scale and axpy exact and bounded.
static double bench_ew_alpha(const bench_ew_t* e, uint64_t i) {
  if (e->c->kind == BENCH_EW_SCALE) return i % 2 == 0 ? 2.0 : 0.5;
  return i % 2 == 0 ? 1.0 : -1.0;
}

// The RNG cases' seed, and the Philox block offset of iteration `i`: each
// iteration draws new numbers, as a training loop's dropout masks do.
#define BENCH_EW_SEED 0x5eedu
static uint64_t bench_ew_rng_offset(const bench_ew_t* e, uint64_t i) {
  return i * ((e->n + 3) / 4);
}

static accel_status_t bench_ew_enqueue(bench_ew_t* e, uint64_t i) {
  accel_stream_t* st = e->stream;
  size_t n = e->n;
  const accel_dtype_t f32 = ACCEL_DTYPE_F32;
  switch (e->c->kind) {
    case BENCH_EW_ADD:
      return accel_op_add(st, e->z, 0, e->x, 0, e->y, 0, f32, n);
    case BENCH_EW_MUL:
      return accel_op_mul(st, e->z, 0, e->x, 0, e->y, 0, f32, n);
    case BENCH_EW_AXPY:
      return accel_op_axpy(st, e->y, 0, e->x, 0, f32, n, bench_ew_alpha(e, i));
    case BENCH_EW_SCALE:
      return accel_op_scale(st, e->x, 0, f32, n, bench_ew_alpha(e, i));
    case BENCH_EW_FILL:
      return accel_op_fill(st, e->z, 0, f32, n, 1.0);
    case BENCH_EW_CAST:
      return accel_op_cast(st, e->h, 0, ACCEL_DTYPE_F16, e->x, 0, f32, n);
    case BENCH_EW_RNG_UNIFORM:
      return accel_op_rng_uniform(st, e->z, 0, f32, n, BENCH_EW_SEED,
                                  bench_ew_rng_offset(e, i), 0.0, 1.0);
    case BENCH_EW_RNG_NORMAL:
      return accel_op_rng_normal(st, e->z, 0, f32, n, BENCH_EW_SEED,
                                 bench_ew_rng_offset(e, i), 0.0, 1.0);
    case BENCH_EW_SUM:
      break;
  }
  return accel_op_sum(st, e->out, 0, e->x, 0, f32, n);
}

static bool bench_accel_ew(void* user, uint64_t iters) {
  bench_ew_t* e = user;
  for (uint64_t i = 0; i < iters; ++i) {
    if (bench_ew_enqueue(e, i) != ACCEL_OK) {
      return bench_fail("%s: %s", e->c->name, accel_last_error());
    }
  }
  if (accel_stream_synchronize(e->stream) != ACCEL_OK) {
    return bench_fail("accel_stream_synchronize: %s", accel_last_error());
  }
  return true;
}

// The loop over part `index` of `count` (16-element aligned bounds).
static void bench_ew_part(void* arg, uint32_t index, uint32_t count) {
  bench_ew_t* e = arg;
  size_t blocks = (e->n + 15) / 16;
  size_t lo = blocks * index / count * 16;
  size_t hi = blocks * (index + 1) / count * 16;
  if (hi > e->n) hi = e->n;
  if (lo >= hi) {
    e->partial[index * 8] = 0;
    return;
  }
  size_t len = hi - lo;
  float alpha = (float)bench_ew_alpha(e, e->iter);
  switch (e->c->kind) {
    case BENCH_EW_ADD:
      bench_loop_add(e->hz + lo, e->hx + lo, e->hy + lo, len);
      break;
    case BENCH_EW_MUL:
      bench_loop_mul(e->hz + lo, e->hx + lo, e->hy + lo, len);
      break;
    case BENCH_EW_AXPY:
      bench_loop_axpy(e->hy + lo, e->hx + lo, alpha, len);
      break;
    case BENCH_EW_SCALE:
      bench_loop_scale(e->hx + lo, alpha, len);
      break;
    case BENCH_EW_FILL:
      bench_loop_fill(e->hz + lo, 1.0f, len);
      break;
    case BENCH_EW_CAST:
      bench_loop_cast_f16(e->hh + lo, e->hx + lo, len);
      break;
    case BENCH_EW_SUM:
      e->partial[index * 8] = bench_loop_sum(e->hx + lo, len);
      break;
    case BENCH_EW_RNG_UNIFORM:
    case BENCH_EW_RNG_NORMAL:
      // lo is a multiple of 16, so the part starts on a Philox block.
      bench_loop_rng(e->hz + lo, len, BENCH_EW_SEED,
                     bench_ew_rng_offset(e, e->iter) + lo / 4,
                     e->c->kind == BENCH_EW_RNG_NORMAL);
      break;
  }
}

static bool bench_ew_loops(bench_ew_t* e, uint64_t iters, bool threaded) {
  volatile double sink = 0;
  uint32_t width = threaded ? bench_pool_width(e->pool) : 1;
  for (uint64_t i = 0; i < iters; ++i) {
    e->iter = i;
    if (threaded) {
      bench_pool_run(e->pool, bench_ew_part, e);
    } else {
      bench_ew_part(e, 0, 1);
    }
    if (e->c->kind == BENCH_EW_SUM) {
      double total = 0;
      for (uint32_t t = 0; t < width; ++t) total += e->partial[t * 8];
      sink = total;
    }
  }
  (void)sink;
  return true;
}

static bool bench_ew_threaded(void* user, uint64_t iters) {
  return bench_ew_loops(user, iters, true);
}

static bool bench_ew_single(void* user, uint64_t iters) {
  return bench_ew_loops(user, iters, false);
}

static void bench_ew_free(bench_ew_t* e) {
  bench_pool_destroy(e->pool);
  accel_stream_release(e->stream);
  accel_buffer_release(e->x);
  accel_buffer_release(e->y);
  accel_buffer_release(e->z);
  accel_buffer_release(e->h);
  accel_buffer_release(e->out);
  free(e->hx);
  free(e->hy);
  free(e->hz);
  free(e->hh);
  memset(e, 0, sizeof(*e));
}

// Allocates and touches both sides for operands of `size` bytes.
static bool bench_ew_alloc(bench_ctx_t* ctx, bench_ew_t* e, size_t size,
                           bool with_loops) {
  memset(e, 0, sizeof(*e));
  e->n = size / sizeof(float);
  accel_device_t* d = ctx->device;
  accel_status_t s = accel_stream_create(d, 0, &e->stream);
  if (s == ACCEL_OK) s = accel_buffer_create(d, size, &e->x);
  if (s == ACCEL_OK) s = accel_buffer_create(d, size, &e->y);
  if (s == ACCEL_OK) s = accel_buffer_create(d, size, &e->z);
  if (s == ACCEL_OK) s = accel_buffer_create(d, size / 2, &e->h);
  if (s == ACCEL_OK) s = accel_buffer_create(d, sizeof(float), &e->out);
  const accel_dtype_t f32 = ACCEL_DTYPE_F32;
  if (s == ACCEL_OK) s = accel_op_fill(e->stream, e->x, 0, f32, e->n, 1.5);
  if (s == ACCEL_OK) s = accel_op_fill(e->stream, e->y, 0, f32, e->n, 0.25);
  if (s == ACCEL_OK) s = accel_op_fill(e->stream, e->z, 0, f32, e->n, 0.0);
  if (s == ACCEL_OK) {
    s = accel_op_fill(e->stream, e->h, 0, ACCEL_DTYPE_F16, e->n, 0.0);
  }
  if (s == ACCEL_OK) s = accel_stream_synchronize(e->stream);
  if (s != ACCEL_OK) {
    return bench_fail("elementwise buffers of %zu bytes: %s", size,
                      accel_last_error());
  }
  if (!with_loops) return true;
  size_t rounded = (size + 63) & ~(size_t)63;
  e->hx = aligned_alloc(64, rounded);
  e->hy = aligned_alloc(64, rounded);
  e->hz = aligned_alloc(64, rounded);
  e->hh = aligned_alloc(64, rounded / 2 + 64);
  if (e->hx == NULL || e->hy == NULL || e->hz == NULL || e->hh == NULL) {
    return bench_fail("loop baseline: cannot allocate 3.5 x %zu bytes", size);
  }
  for (size_t i = 0; i < e->n; ++i) {
    e->hx[i] = 1.5f;
    e->hy[i] = 0.25f;
    e->hz[i] = 0.0f;
  }
  memset(e->hh, 0, rounded / 2 + 64);
  uint32_t width = ctx->info.compute_units > 0 ? ctx->info.compute_units : 1;
  if (width > 64) width = 64;  // e->partial holds 64 cache lines
  e->pool = bench_pool_create(width);
  return e->pool != NULL;
}

// Converts ns per op to GB/s for `bytes` per op.
static void bench_ew_to_gbps(bench_timing_t* t, double bytes) {
  double median = t->median, min = t->min, max = t->max;
  t->median = bytes / median;
  t->min = bytes / max;
  t->max = bytes / min;
}

// Starts a result row for case `c` at `size` ("<op>" or "<op>_1thread").
static bench_result_t* bench_ew_result(bench_ctx_t* ctx,
                                       const bench_ew_case_t* c, size_t size,
                                       bool single) {
  bench_result_t* r =
      bench_add(ctx, "elementwise", "%s%s", c->name, single ? "_1thread" : "");
  if (r == NULL) return NULL;
  r->size = size;
  r->unit = "GB/s";
  r->higher_is_better = true;
  if (!single) {
    r->budget = BENCH_BUDGET_MIN_RATIO;
    r->budget_value = BENCH_ELEMENTWISE_BUDGET_RATIO;
    r->informational = true;
  }
  return r;
}

// Measures case `c` (both rows, as wanted) on the allocated `e`.
static void bench_ew_case(bench_ctx_t* ctx, bench_ew_t* e,
                          const bench_ew_case_t* c, size_t size,
                          const bool want[2], const bench_baselines_t* bl,
                          const char* problem) {
  // Indices, not pointers: bench_add() may move the results.
  size_t row[2] = {SIZE_MAX, SIZE_MAX};
  for (int k = 0; k < 2; ++k) {
    if (!want[k]) continue;
    if (bench_ew_result(ctx, c, size, k == 1) == NULL) return;
    row[k] = ctx->result_count - 1;
  }
  bench_result_t* rows[2] = {NULL, NULL};
  for (int k = 0; k < 2; ++k) {
    if (row[k] != SIZE_MAX) rows[k] = &ctx->results[row[k]];
  }
  bool loops = bl->elementwise != NULL;
  for (int k = 0; k < 2; ++k) {
    if (rows[k] == NULL) continue;
    if (problem != NULL) {
      bench_result_fail(ctx, rows[k], problem);
    } else if (!loops) {
      snprintf(rows[k]->note, sizeof(rows[k]->note), "baseline %s",
               bl->elementwise_missing);
    }
  }
  if (problem != NULL) return;
  e->c = c;
  char label[32], what[96];
  snprintf(what, sizeof(what), "%s %s", c->name,
           bench_format_size(size, label, sizeof(label)));
  bench_progress(ctx, "elementwise", what);
  bench_variant_t v[3] = {{bench_accel_ew, e}, {NULL, e}, {NULL, e}};
  if (loops && want[0]) v[1].run = bench_ew_threaded;
  if (loops && want[1]) v[2].run = bench_ew_single;
  bench_timing_t t[3];
  bench_plan_t plan = ctx->plan;
  plan.case_ns *= 0.6;  // three sides, 14 rows per size
  if (!bench_measure_n(&plan, 3, v, t)) {
    for (int k = 0; k < 2; ++k) {
      if (rows[k] != NULL) bench_result_fail(ctx, rows[k], NULL);
    }
    return;
  }
  double bytes = (double)c->bytes_per_elem * (double)e->n;
  for (int k = 0; k < 3; ++k) {
    if (v[k].run != NULL) bench_ew_to_gbps(&t[k], bytes);
  }
  for (int k = 0; k < 2; ++k) {
    bench_result_t* r = rows[k];
    if (r == NULL) continue;
    r->accel = t[0];
    if (v[k + 1].run == NULL) continue;
    r->baseline = t[k + 1];
    r->has_baseline = true;
    uint32_t width = k == 0 ? bench_pool_width(e->pool) : 1;
    snprintf(r->baseline_name, sizeof(r->baseline_name), "%s, %u thread%s",
             bl->elementwise, width, width == 1 ? "" : "s");
  }
}

static void bench_ew_size(bench_ctx_t* ctx, size_t size,
                          const bench_baselines_t* bl) {
  bool want[BENCH_EW_CASE_COUNT][2];
  bool any = false;
  for (size_t i = 0; i < BENCH_EW_CASE_COUNT; ++i) {
    char name[64];
    for (int k = 0; k < 2; ++k) {
      snprintf(name, sizeof(name), "%s%s/%zu", bench_ew_cases[i].name,
               k == 1 ? "_1thread" : "", size);
      want[i][k] = bench_wanted(ctx, "elementwise", name);
      any = any || want[i][k];
    }
  }
  if (!any) return;
  // accel: 3.5 operands; loops: 3.5 more.
  long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const char* problem = NULL;
  char why[192];
  bench_ew_t e;
  memset(&e, 0, sizeof(e));
  if (pages > 0 && 7.0 * (double)size > 0.75 * (double)pages * page) {
    problem = "skipped: needs 7 x the size in free host memory";
  } else if (!bench_ew_alloc(ctx, &e, size, bl->elementwise != NULL)) {
    snprintf(why, sizeof(why), "%s", bench_failure());
    problem = why;
  }
  for (size_t i = 0; i < BENCH_EW_CASE_COUNT; ++i) {
    if (!want[i][0] && !want[i][1]) continue;
    if (problem != NULL && strncmp(problem, "skipped", 7) == 0) {
      for (int k = 0; k < 2; ++k) {
        bench_result_t* r =
            want[i][k] ? bench_ew_result(ctx, &bench_ew_cases[i], size, k)
                       : NULL;
        if (r == NULL) continue;
        r->outcome = BENCH_OUTCOME_SKIPPED;
        snprintf(r->note, sizeof(r->note), "%s", problem);
      }
      continue;
    }
    bench_ew_case(ctx, &e, &bench_ew_cases[i], size, want[i], bl, problem);
  }
  bench_ew_free(&e);
}

static void bench_ew_run(bench_ctx_t* ctx) {
  const bench_baselines_t* bl =
      bench_baselines_find(accel_device_backend(ctx->device));
  uint64_t lo = UINT64_C(1) << 20, hi = UINT64_C(256) << 20, step = 4;
  if (ctx->mode == BENCH_MODE_QUICK) {
    lo = UINT64_C(4) << 20, hi = UINT64_C(64) << 20, step = 16;
  } else if (ctx->mode == BENCH_MODE_SMOKE) {
    hi = lo;
  }
  for (uint64_t size = lo; size <= hi && size <= SIZE_MAX; size *= step) {
    bench_ew_size(ctx, (size_t)size, bl);
  }
}

const bench_suite_t bench_suite_elementwise = {
    .name = "elementwise",
    .summary =
        "f32 ops vs a plain -O3 C loop on as many threads as the pool, "
        "and on one (GB/s read + written)",
    .cases = bench_ew_case_names,
    .sizes_quick = "4 MiB, 64 MiB (bytes per f32 operand)",
    .sizes_full = "1 MiB .. 256 MiB (x4)",
    .run = bench_ew_run,
};
