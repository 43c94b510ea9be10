// SPDX-License-Identifier: MIT
//
// gemm: square row-major products C = A * B (m = n = k) through
// accel_op_gemm + accel_stream_synchronize, per dtype, in GFLOP/s (2 n^3
// flops per product), against the backend's vendor call with the same
// settings (architecture "Budgets": >= 90% on the CPU, >= 98% on CUDA).
//
// On the CPU the baseline is the best of the engines the plugin chooses
// from (plugins/cpu/engine.c), each called directly (cpu_gemm.c) and
// measured in the same interleaved trials as accel: cblas_sgemm of
// OpenBLAS and of BLIS (f32 data whatever the dtype: they have no half
// types, so for f16/bf16 the ratio is the conversion's cost), oneDNN's
// matmul in the case's dtype (left out where it has only a reference
// kernel, as for bf16 without AVX-512 BF16 or AMX) and, for f16/bf16,
// oneDNN's f32 matmul on f32 data ("onednn-f32", the plugin's other
// oneDNN route). The note gives each
// engine's median and the engine the device features name. A warm-up
// GEMM per dtype first lets the plugin time and choose its engine outside
// the trials.
//
// On CUDA the baseline is cublasGemmEx called directly (cuda_raw.c) on
// raw cuMemAlloc buffers holding the same values in the same dtype, with
// the plugin's arguments (swapped operands for row-major, CUBLAS_COMPUTE_
// 32F or 32F_FAST_TF32, a workspace of the plugin's size, its math mode
// with f32 split-K reductions), one product and one cuStreamSynchronize
// per iteration as on the accel side. Sizes on a GPU: 1024 and 4096
// (quick), 4096 and 8192 (--full).
//
// On OpenCL the baseline is CLBlastSgemm called directly (opencl_raw.c)
// on raw cl_mem buffers of the same f32 values, row-major, one product
// and one clFinish per iteration (budget >= 95%); f16, bf16 have no raw
// side. A CPU OpenCL device (PoCL) takes the CPU sizes.
#if !defined(_GNU_SOURCE)
#define _GNU_SOURCE 1
#endif
#include <dlfcn.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cuda_raw.h"
#include "opencl_raw.h"

#define BENCH_GEMM_BUDGET_CPU 0.90
#define BENCH_GEMM_BUDGET_GPU 0.98
#define BENCH_GEMM_BUDGET_OPENCL 0.95  // of direct CLBlast, CPU or GPU

typedef struct bench_gemm_case {
  const char* name;
  accel_dtype_t dtype;
  bool tf32;
} bench_gemm_case_t;

static const bench_gemm_case_t bench_gemm_cases[] = {
    {"f32", ACCEL_DTYPE_F32, false},
    {"f16", ACCEL_DTYPE_F16, false},
    {"bf16", ACCEL_DTYPE_BF16, false},
    {"f32_tf32", ACCEL_DTYPE_F32, true},
};
#define BENCH_GEMM_CASE_COUNT \
  (sizeof(bench_gemm_cases) / sizeof(bench_gemm_cases[0]))

static const char* const bench_gemm_case_names[] = {"f32", "f16", "bf16",
                                                    "f32_tf32", NULL};

// One product of one size, accel and baseline sides.
typedef struct bench_gemm {
  size_t n;
  accel_stream_t* stream;
  accel_gemm_t gemm;
  accel_status_t status;  // of the last accel call
  float* a;               // the baseline's f32 copies
  float* b;
  float* c;
  bench_cuda_gemm_t* raw;  // CUDA: the cuBLAS side
  bench_ocl_gemm_t* ocl;   // OpenCL: the CLBlast side
} bench_gemm_t;

static bool bench_accel_gemm(void* user, uint64_t iters) {
  bench_gemm_t* g = user;
  for (uint64_t i = 0; i < iters; ++i) {
    g->status = accel_op_gemm(g->stream, &g->gemm);
    if (g->status == ACCEL_OK) g->status = accel_stream_synchronize(g->stream);
    if (g->status != ACCEL_OK) {
      return bench_fail("gemm %zu: %s", g->n, accel_last_error());
    }
  }
  return true;
}

// Runs one small GEMM of `dtype` so that the CPU plugin loads and times
// its engines before the trials.
static bool bench_gemm_warm_up(bench_ctx_t* ctx, accel_dtype_t dtype) {
  enum { N = 64 };
  accel_buffer_t* buf = NULL;
  accel_stream_t* stream = NULL;
  size_t bytes = N * N * sizeof(float);
  accel_status_t s = accel_buffer_create(ctx->device, 3 * bytes, &buf);
  if (s == ACCEL_OK) s = accel_stream_create(ctx->device, 0, &stream);
  if (s == ACCEL_OK) s = accel_op_fill(stream, buf, 0, dtype, 3 * N * N, 1.0);
  accel_gemm_t g;
  accel_gemm_init(&g);
  g.a_dtype = g.b_dtype = g.c_dtype = dtype;
  g.m = g.n = g.k = N;
  g.a = g.b = g.c = buf;
  g.b_offset = bytes;
  g.c_offset = 2 * bytes;
  if (s == ACCEL_OK) s = accel_op_gemm(stream, &g);
  if (s == ACCEL_OK) s = accel_stream_synchronize(stream);
  if (s != ACCEL_OK) bench_fail("warm-up gemm: %s", accel_last_error());
  accel_stream_release(stream);
  accel_buffer_release(buf);
  return s == ACCEL_OK;
}

static void bench_gemm_free(bench_gemm_t* g) {
  bench_cuda_gemm_close(g->raw);
  bench_ocl_gemm_close(g->ocl);
  accel_stream_release(g->stream);
  accel_buffer_release(g->gemm.a);
  accel_buffer_release(g->gemm.b);
  accel_buffer_release(g->gemm.c);
  free(g->a);
  free(g->b);
  free(g->c);
  memset(g, 0, sizeof(*g));
}

// Creates an n x n matrix of `dtype` on the device holding `values` (f32,
// exactly representable in every dtype), converted by accel_op_cast.
static accel_status_t bench_gemm_matrix(bench_ctx_t* ctx, accel_stream_t* st,
                                        accel_dtype_t dtype, size_t n,
                                        const float* values,
                                        accel_buffer_t** out) {
  size_t count = n * n;
  accel_buffer_t* f32 = NULL;
  accel_status_t s =
      accel_buffer_create(ctx->device, count * sizeof(float), &f32);
  if (s == ACCEL_OK) s = accel_buffer_write(f32, 0, values, count * 4);
  if (s == ACCEL_OK && dtype == ACCEL_DTYPE_F32) {
    *out = f32;
    return ACCEL_OK;
  }
  if (s == ACCEL_OK) {
    s = accel_buffer_create(ctx->device, count * accel_dtype_size(dtype), out);
  }
  if (s == ACCEL_OK) {
    s = accel_op_cast(st, *out, 0, dtype, f32, 0, ACCEL_DTYPE_F32, count);
  }
  if (s == ACCEL_OK) s = accel_stream_synchronize(st);
  accel_buffer_release(f32);
  return s;
}

// Allocates both sides of an n^3 product of `c`'s dtype.
static bool bench_gemm_alloc(bench_ctx_t* ctx, bench_gemm_t* g,
                             const bench_gemm_case_t* c, size_t n) {
  memset(g, 0, sizeof(*g));
  g->n = n;
  size_t bytes = n * n * sizeof(float);
  g->a = aligned_alloc(64, bytes);
  g->b = aligned_alloc(64, bytes);
  g->c = aligned_alloc(64, bytes);
  if (g->a == NULL || g->b == NULL || g->c == NULL) {
    return bench_fail("cannot allocate 3 x %zu bytes", bytes);
  }
  // Multiples of 1/16 in [-0.5, 0.5): exact in f16 and bf16.
  for (size_t i = 0; i < n * n; ++i) {
    g->a[i] = (float)(i % 17) / 16.0f - 0.5f;
    g->b[i] = (float)(i % 13) / 16.0f - 0.375f;
  }
  memset(g->c, 0, bytes);
  accel_gemm_t* m = &g->gemm;
  accel_gemm_init(m);
  m->a_dtype = m->b_dtype = m->c_dtype = c->dtype;
  m->flags = c->tf32 ? ACCEL_GEMM_ALLOW_TF32 : 0;
  m->m = m->n = m->k = n;
  accel_status_t s = accel_stream_create(ctx->device, 0, &g->stream);
  if (s == ACCEL_OK) {
    s = bench_gemm_matrix(ctx, g->stream, c->dtype, n, g->a, &m->a);
  }
  if (s == ACCEL_OK) {
    s = bench_gemm_matrix(ctx, g->stream, c->dtype, n, g->b, &m->b);
  }
  if (s == ACCEL_OK) {
    s = bench_gemm_matrix(ctx, g->stream, c->dtype, n, g->c, &m->c);
  }
  if (s != ACCEL_OK) {
    return bench_fail("gemm %zu buffers: %s", n, accel_last_error());
  }
  return true;
}

// ns per product to GFLOP/s; the slowest trial gives the minimum.
static void bench_gemm_to_gflops(bench_timing_t* t, size_t n) {
  double flops = 2.0 * (double)n * (double)n * (double)n;
  double median = t->median, min = t->min, max = t->max;
  t->median = flops / median;
  t->min = flops / max;
  t->max = flops / min;
}

typedef struct bench_gemm_suite {
  bench_ctx_t* ctx;
  const bench_baselines_t* baselines;
  bench_cpu_gemm_t* cpu;  // CPU: opened at the first case that needs it
  bool cpu_tried;
  char cpu_error[160];
  bool warmed[3];  // CPU: a warm-up GEMM ran for f32, f16, bf16
  bench_cuda_t* cuda;  // CUDA: the raw driver and cuBLAS
  bench_ocl_t* ocl;    // OpenCL: the raw context and queue
} bench_gemm_suite_t;

static bool bench_gemm_is_cuda(const bench_gemm_suite_t* s) {
  return strcmp(s->baselines->backend, "cuda") == 0;
}

static bool bench_gemm_is_opencl(const bench_gemm_suite_t* s) {
  return strcmp(s->baselines->backend, "opencl") == 0;
}

// The OpenCL side of bench_gemm_baseline(): CLBlastSgemm, f32 only.
static bool bench_gemm_baseline_opencl(bench_gemm_suite_t* s,
                                       const bench_gemm_case_t* c,
                                       bench_result_t* r) {
  if (c->dtype != ACCEL_DTYPE_F32 || c->tf32) {
    snprintf(r->note, sizeof(r->note),
             "baseline not available: only CLBlastSgemm (f32) is measured "
             "raw");
    return false;
  }
  s->ocl = bench_ocl_get(s->ctx);
  if (s->ocl == NULL) {
    snprintf(r->note, sizeof(r->note), "baseline not available: %.160s",
             s->ctx->ocl_error);
    return false;
  }
  snprintf(r->baseline_name, sizeof(r->baseline_name), "%s",
           s->baselines->gemm);
  return true;
}

// The CUDA side of bench_gemm_baseline().
static bool bench_gemm_baseline_cuda(bench_gemm_suite_t* s, bench_result_t* r) {
  char why[256];
  const char* blas = NULL;
  s->cuda = bench_cuda_get(s->ctx);
  if (s->cuda == NULL) {
    snprintf(why, sizeof(why), "%s", s->ctx->cuda_error);
  } else {
    blas = bench_cuda_blas_name(s->cuda, why, sizeof(why));
  }
  if (blas == NULL) {
    snprintf(r->note, sizeof(r->note), "baseline not available: %.160s", why);
    return false;
  }
  snprintf(r->baseline_name, sizeof(r->baseline_name), "%s",
           s->baselines->gemm);
  snprintf(r->note, sizeof(r->note), "%s", blas);
  return true;
}

// Fills in the baseline side of `r` for `c`; returns whether it runs.
static bool bench_gemm_baseline(bench_gemm_suite_t* s,
                                const bench_gemm_case_t* c, bench_result_t* r) {
  if (s->baselines->gemm == NULL) {
    snprintf(r->note, sizeof(r->note), "baseline %s",
             s->baselines->gemm_missing);
    return false;
  }
  if (bench_gemm_is_cuda(s)) return bench_gemm_baseline_cuda(s, r);
  if (bench_gemm_is_opencl(s)) return bench_gemm_baseline_opencl(s, c, r);
  if (!s->cpu_tried) {
    s->cpu_tried = true;
    s->cpu = bench_cpu_gemm_open(s->ctx->info.compute_units);
    if (s->cpu == NULL) {
      snprintf(s->cpu_error, sizeof(s->cpu_error), "%s", bench_failure());
    } else if (bench_cpu_gemm_count(s->cpu) == 0) {
      snprintf(s->cpu_error, sizeof(s->cpu_error), "%.150s",
               bench_cpu_gemm_missing(s->cpu));
    }
  }
  if (s->cpu == NULL || bench_cpu_gemm_count(s->cpu) == 0) {
    snprintf(r->note, sizeof(r->note), "baseline not available: %s",
             s->cpu_error);
    return false;
  }
  int dt = c->dtype == ACCEL_DTYPE_F32 ? 0 : c->dtype == ACCEL_DTYPE_F16 ? 1
                                                                         : 2;
  if (!s->warmed[dt] && !bench_gemm_warm_up(s->ctx, c->dtype)) {
    snprintf(r->note, sizeof(r->note), "%.180s", bench_failure());
  }
  s->warmed[dt] = true;
  snprintf(r->baseline_name, sizeof(r->baseline_name), "best engine");
  return true;
}

// The engine the device features name for `dtype` ("gemm-bf16=blis").
static void bench_gemm_feature(bench_ctx_t* ctx, accel_dtype_t dtype,
                               char* out, size_t size) {
  accel_device_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  char tag[32];
  snprintf(tag, sizeof(tag), "gemm-%s=", accel_dtype_name(dtype));
  const char* p = accel_device_query_info(ctx->device, &info) == ACCEL_OK
                      ? strstr(info.features, tag)
                      : NULL;
  snprintf(out, size, "%.*s", p != NULL ? (int)strcspn(p, " ") : 1,
           p != NULL ? p : "?");
}

// CPU: accel and every engine in interleaved trials; the fastest engine
// is the baseline, and the note lists them all.
static bool bench_gemm_measure_cpu(bench_gemm_suite_t* s,
                                   const bench_gemm_case_t* c, bench_gemm_t* g,
                                   const bench_plan_t* plan,
                                   bench_result_t* r) {
  bench_variant_t v[1 + BENCH_CPU_GEMM_MAX] = {{bench_accel_gemm, g}};
  bench_cpu_op_t* ops[BENCH_CPU_GEMM_MAX] = {NULL};
  char why[BENCH_CPU_GEMM_MAX][96];
  size_t count = bench_cpu_gemm_count(s->cpu);
  for (size_t i = 0; i < count; i++) {
    why[i][0] = '\0';
    ops[i] = bench_cpu_gemm_prepare(s->cpu, i, c->dtype, g->n, g->a, g->b,
                                    why[i], sizeof(why[i]));
    v[1 + i].run = ops[i] != NULL ? bench_cpu_op_run : NULL;
    v[1 + i].user = ops[i];
  }
  bench_timing_t t[1 + BENCH_CPU_GEMM_MAX];
  memset(t, 0, sizeof(t));
  bool ok = bench_measure_n(plan, 1 + count, v, t);
  r->accel = t[0];
  char note[sizeof(r->note)];
  bench_gemm_feature(s->ctx, c->dtype, note, sizeof(note));
  size_t best = 0;
  for (size_t i = 0; ok && i < count; i++) {
    size_t used = strlen(note);
    if (ops[i] == NULL) {
      if (why[i][0] != '\0') {  // empty: the row does not apply to dtype
        snprintf(note + used, sizeof(note) - used, "; %s n/a",
                 bench_cpu_gemm_name(s->cpu, i));
      }
      continue;
    }
    bench_gemm_to_gflops(&t[1 + i], g->n);
    snprintf(note + used, sizeof(note) - used, "; %s %.1f",
             bench_cpu_gemm_name(s->cpu, i), t[1 + i].median);
    if (best == 0 || t[1 + i].median > t[best].median) best = 1 + i;
  }
  if (ok && best != 0) {
    r->baseline = t[best];
    r->has_baseline = true;
    snprintf(r->baseline_name, sizeof(r->baseline_name), "%s",
             bench_cpu_gemm_name(s->cpu, best - 1));
    size_t used = strlen(note);
    snprintf(note + used, sizeof(note) - used, " GFLOP/s%s",
             c->dtype == ACCEL_DTYPE_F32
                 ? ""
                 : "; BLAS and onednn-f32 on f32 data");
  }
  for (size_t i = 0; i < count; i++) {
    if (ops[i] == NULL && why[i][0] != '\0' && strstr(why[i], "oneDNN")) {
      size_t used = strlen(note);
      snprintf(note + used, sizeof(note) - used, " (%.90s)", why[i]);
    }
    bench_cpu_op_close(ops[i]);
  }
  snprintf(r->note, sizeof(r->note), "%s", note);
  return ok;
}

static void bench_gemm_case(bench_gemm_suite_t* s, const bench_gemm_case_t* c,
                            size_t n, bool skip_big) {
  bench_ctx_t* ctx = s->ctx;
  char name[64];
  snprintf(name, sizeof(name), "%s/%zu", c->name, n);
  if (!bench_wanted(ctx, "gemm", name)) return;
  bench_result_t* r = bench_add(ctx, "gemm", "%s", c->name);
  if (r == NULL) return;
  r->size = n;
  r->unit = "GFLOP/s";
  r->higher_is_better = true;
  r->budget = BENCH_BUDGET_MIN_RATIO;
  bool cpu = ctx->info.type == ACCEL_DEVICE_TYPE_CPU;
  r->budget_value = cpu ? BENCH_GEMM_BUDGET_CPU : BENCH_GEMM_BUDGET_GPU;
  if (bench_gemm_is_opencl(s)) r->budget_value = BENCH_GEMM_BUDGET_OPENCL;
  // Room for A, B, C on both sides plus the f32 staging and panels.
  long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  double need = 8.0 * (double)n * (double)n * sizeof(float);
  if (skip_big || (pages > 0 && need > 0.75 * (double)pages * (double)page)) {
    r->outcome = BENCH_OUTCOME_SKIPPED;
    snprintf(r->note, sizeof(r->note), "%s",
             skip_big ? "skipped on the CPU to keep --full short (about "
                        "10 s a product); select it with --filter "
                        "'gemm/f32/8192'"
                      : "skipped: not enough free host memory");
    return;
  }
  char what[64];
  snprintf(what, sizeof(what), "%s %zu^3", c->name, n);
  bench_progress(ctx, "gemm", what);
  bool has_base = bench_gemm_baseline(s, c, r);
  bench_gemm_t g;
  if (!bench_gemm_alloc(ctx, &g, c, n)) {
    bench_result_fail(ctx, r, NULL);
    bench_gemm_free(&g);
    return;
  }
  bench_variant_t a = {bench_accel_gemm, &g};
  bench_variant_t b = {NULL, NULL};  // CUDA, OpenCL: the raw side (below)
  bool raw = bench_gemm_is_cuda(s) || bench_gemm_is_opencl(s);
  if (has_base && bench_gemm_is_cuda(s)) {
    g.raw = bench_cuda_gemm_open(s->cuda, c->dtype, c->tf32, n, g.a, g.b);
    b = (bench_variant_t){bench_cuda_gemm_run, g.raw};
  } else if (has_base && bench_gemm_is_opencl(s)) {
    g.ocl = bench_ocl_gemm_open(s->ocl, n, g.a, g.b);
    b = (bench_variant_t){bench_ocl_gemm_run, g.ocl};
  }
  if (has_base && raw && b.user == NULL) {
    snprintf(r->note, sizeof(r->note), "baseline not available: %.160s",
             bench_failure());
    has_base = false;
    b.run = NULL;
  }
  // A product of 2048^3 and up lasts longer than a trial: a few suffice.
  bench_plan_t plan = ctx->plan;
  if (plan.min_trials > 3) plan.min_trials = 3;
  bool measured = has_base && !raw
                      ? bench_gemm_measure_cpu(s, c, &g, &plan, r)
                      : bench_measure(&plan, a, b, &r->accel, &r->baseline);
  if (!measured) {
    if (g.status == ACCEL_ERROR_UNSUPPORTED) {
      // A valid request this device cannot run (the CPU without a BLAS).
      r->outcome = BENCH_OUTCOME_SKIPPED;
      snprintf(r->note, sizeof(r->note), "skipped: %s", bench_failure());
    } else {
      bench_result_fail(ctx, r, NULL);
    }
  } else {
    bench_gemm_to_gflops(&r->accel, n);
    if (has_base && raw) {
      bench_gemm_to_gflops(&r->baseline, n);
      r->has_baseline = true;
    }
  }
  bench_gemm_free(&g);
}

static void bench_gemm_run(bench_ctx_t* ctx) {
  bench_gemm_suite_t s = {
      .ctx = ctx,
      .baselines = bench_baselines_find(accel_device_backend(ctx->device)),
  };
  bool cpu = ctx->info.type == ACCEL_DEVICE_TYPE_CPU;
  bool tf32 = (ctx->info.caps & ACCEL_DEVICE_CAP_TF32) != 0;
  for (size_t i = 0; i < BENCH_GEMM_CASE_COUNT; ++i) {
    const bench_gemm_case_t* c = &bench_gemm_cases[i];
    if (c->tf32 && !tf32) {
      if (!bench_wanted(ctx, "gemm", c->name)) continue;
      bench_result_t* r = bench_add(ctx, "gemm", "%s", c->name);
      if (r == NULL) return;
      r->unit = "GFLOP/s";
      r->higher_is_better = true;
      r->outcome = BENCH_OUTCOME_SKIPPED;
      snprintf(r->note, sizeof(r->note), "skipped: %s has no TF32 capability",
               ctx->info.uri);
      continue;
    }
    size_t lo = 512, hi = 2048;
    size_t step = 2;
    if (ctx->mode == BENCH_MODE_SMOKE) {
      lo = hi = 128;
    } else if (!cpu) {
      // A GPU: where the vendor library reaches its peak.
      lo = ctx->mode == BENCH_MODE_FULL ? 4096 : 1024;
      hi = ctx->mode == BENCH_MODE_FULL ? 8192 : 4096;
      step = hi / lo;
    } else if (ctx->mode == BENCH_MODE_FULL) {
      hi = 8192;
    } else if (c->dtype != ACCEL_DTYPE_F32) {
      lo = hi = 1024;  // quick: one size per half dtype
    }
    for (size_t n = lo; n <= hi; n *= step) {
      // 8192^3 takes ~10 s per product on a small CPU: only when asked.
      bool skip_big = cpu && n > 4096 && ctx->filter_count == 0;
      bench_gemm_case(&s, c, n, skip_big);
    }
  }
  bench_cpu_gemm_close(s.cpu);
}

const bench_suite_t bench_suite_gemm = {
    .name = "gemm",
    .summary =
        "accel_op_gemm + sync vs the best engine called directly (CPU: "
        "OpenBLAS, BLIS, oneDNN; CUDA: cuBLAS; OpenCL: CLBlast) (GFLOP/s; "
        "budget >= 90% CPU, >= 98% CUDA, >= 95% OpenCL)",
    .cases = bench_gemm_case_names,
    .sizes_quick =
        "CPU: f32 512, 1024, 2048; f16, bf16 1024; GPU: 1024, "
        "4096",
    .sizes_full =
        "CPU: 512 .. 8192 (8192 only with --filter); GPU: 4096, "
        "8192",
    .run = bench_gemm_run,
};
