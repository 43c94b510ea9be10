// SPDX-License-Identifier: MIT
//
// The CPU GEMM baselines (see bench.h): every engine the CPU plugin can
// choose from, called directly, each product C = A * B (n x n x n,
// row-major) in one call:
// - the BLAS libraries: OpenBLAS and BLIS (or exactly ACCEL_CPU_BLAS, as
//   the plugin does), cblas_sgemm on f32 data whatever the dtype, since
//   they have no half types; a threaded library gets the product whole, a
//   single-threaded one C in row tiles on a pool as wide as the device
//   (as the plugin gives it);
// - oneDNN: one matmul primitive in the case's dtype, created once per
//   case and executed per product, on its own (OpenMP) threads. Where
//   oneDNN has only its reference kernel for the dtype (bf16 or f16
//   without AVX-512 BF16/FP16 or AMX), or none, it is left out with that
//   reason: a reference kernel is no baseline.
// oneDNN's declarations come from <oneapi/dnnl/dnnl.h> (libdnnl-dev) at
// build time when present; the library itself is opened at run time, so
// accel-bench runs where it is missing.
#if !defined(_GNU_SOURCE)
#define _GNU_SOURCE 1
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <accel/plugin_dtype.h>

#include "bench.h"

#if defined(__has_include)
#if __has_include(<oneapi/dnnl/dnnl.h>)
#include <oneapi/dnnl/dnnl.h>
#define BENCH_HAVE_DNNL 1
#endif
#endif

// cblas enum values (cblas.h), spelled out so the build needs no BLAS.
enum { BENCH_CBLAS_ROW_MAJOR = 101, BENCH_CBLAS_NO_TRANS = 111 };

typedef void (*bench_sgemm_fn_t)(int order, int trans_a, int trans_b, int m,
                                 int n, int k, float alpha, const float* a,
                                 int lda, const float* b, int ldb, float beta,
                                 float* c, int ldc);

#if BENCH_HAVE_DNNL
// The oneDNN entry points used, resolved from libdnnl.so.2.
typedef struct bench_dnnl {
  void* handle;
  dnnl_engine_t engine;
  dnnl_stream_t stream;
  const dnnl_version_t* (*version)(void);
  dnnl_status_t (*engine_create)(dnnl_engine_t*, dnnl_engine_kind_t, size_t);
  dnnl_status_t (*engine_destroy)(dnnl_engine_t);
  dnnl_status_t (*stream_create)(dnnl_stream_t*, dnnl_engine_t, unsigned);
  dnnl_status_t (*stream_wait)(dnnl_stream_t);
  dnnl_status_t (*stream_destroy)(dnnl_stream_t);
  dnnl_status_t (*md_init)(dnnl_memory_desc_t*, int, const dnnl_dims_t,
                           dnnl_data_type_t, dnnl_format_tag_t);
  dnnl_status_t (*matmul_init)(dnnl_matmul_desc_t*, const dnnl_memory_desc_t*,
                               const dnnl_memory_desc_t*,
                               const dnnl_memory_desc_t*,
                               const dnnl_memory_desc_t*);
  dnnl_status_t (*pd_create)(dnnl_primitive_desc_t*, const_dnnl_op_desc_t,
                             const_dnnl_primitive_attr_t, dnnl_engine_t,
                             const_dnnl_primitive_desc_t);
  dnnl_status_t (*pd_query)(const_dnnl_primitive_desc_t, dnnl_query_t, int,
                            void*);
  dnnl_status_t (*pd_destroy)(dnnl_primitive_desc_t);
  dnnl_status_t (*primitive_create)(dnnl_primitive_t*,
                                    const_dnnl_primitive_desc_t);
  dnnl_status_t (*primitive_execute)(const_dnnl_primitive_t, dnnl_stream_t,
                                     int, const dnnl_exec_arg_t*);
  dnnl_status_t (*primitive_destroy)(dnnl_primitive_t);
  dnnl_status_t (*memory_create)(dnnl_memory_t*, const dnnl_memory_desc_t*,
                                 dnnl_engine_t, void*);
  dnnl_status_t (*memory_destroy)(dnnl_memory_t);
} bench_dnnl_t;
#endif

typedef struct bench_cpu_engine {
  char name[16];  // "openblas", "blis", "blas", "onednn", "onednn-f32"
  char description[96];  // library, version, kernel
  void* handle;          // a BLAS
  bench_sgemm_fn_t sgemm;
  bool threaded;
} bench_cpu_engine_t;

struct bench_cpu_gemm {
  bench_cpu_engine_t engines[BENCH_CPU_GEMM_MAX];
  size_t count;
  bench_pool_t* pool;  // row tiles for single-threaded BLAS libraries
#if BENCH_HAVE_DNNL
  bench_dnnl_t dnnl;
#endif
  char missing[160];  // engines that could not be opened, and why
};

// One prepared product (bench_cpu_gemm_prepare).
struct bench_cpu_op {
  bench_cpu_gemm_t* owner;
  const bench_cpu_engine_t* engine;
  size_t n;
  float* c;  // BLAS: C; a and b are the caller's
  const float* a;
  const float* b;
#if BENCH_HAVE_DNNL
  dnnl_primitive_t primitive;
  dnnl_memory_t mem[3];
  void* data[3];
#endif
};

static void bench_cpu_missing(bench_cpu_gemm_t* g, const char* name,
                              const char* why) {
  size_t used = strlen(g->missing);
  snprintf(g->missing + used, sizeof(g->missing) - used, "%s%s: %.60s",
           used ? "; " : "", name, why);
}

// Opens the BLAS `lib` as engine `name`.
static void bench_cpu_open_blas(bench_cpu_gemm_t* g, const char* name,
                                const char* lib) {
  void* handle = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  void* sym = handle != NULL ? dlsym(handle, "cblas_sgemm") : NULL;
  if (sym == NULL) {
    bench_cpu_missing(g, name, handle == NULL ? dlerror() : "no cblas_sgemm");
    if (handle != NULL) dlclose(handle);
    return;
  }
  bench_cpu_engine_t* e = &g->engines[g->count++];
  snprintf(e->name, sizeof(e->name), "%s", name);
  e->handle = handle;
  memcpy(&e->sgemm, &sym, sizeof(e->sgemm));
  snprintf(e->description, sizeof(e->description), "%s", lib);
  // OpenBLAS threads itself unless it is a serial build; BLIS only when
  // told to through its environment variables, as in the plugin.
  int (*parallel)(void) = NULL;
  sym = dlsym(handle, "openblas_get_parallel");
  memcpy(&parallel, &sym, sizeof(parallel));
  e->threaded = parallel != NULL && parallel() != 0;
  const char* (*corename)(void) = NULL;
  sym = dlsym(handle, "openblas_get_corename");
  memcpy(&corename, &sym, sizeof(corename));
  if (corename != NULL) {
    snprintf(e->description, sizeof(e->description), "%s (%s)", lib,
             corename());
  }
}

#if BENCH_HAVE_DNNL
static void bench_cpu_open_dnnl(bench_cpu_gemm_t* g) {
  bench_dnnl_t* d = &g->dnnl;
  d->handle = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (d->handle == NULL) {
    bench_cpu_missing(g, "onednn", dlerror());
    return;
  }
  struct {
    const char* name;
    void* slot;
    size_t size;
  } syms[] = {
#define BENCH_DNNL_SYM(field, name) {name, &d->field, sizeof(d->field)}
      BENCH_DNNL_SYM(version, "dnnl_version"),
      BENCH_DNNL_SYM(engine_create, "dnnl_engine_create"),
      BENCH_DNNL_SYM(engine_destroy, "dnnl_engine_destroy"),
      BENCH_DNNL_SYM(stream_create, "dnnl_stream_create"),
      BENCH_DNNL_SYM(stream_wait, "dnnl_stream_wait"),
      BENCH_DNNL_SYM(stream_destroy, "dnnl_stream_destroy"),
      BENCH_DNNL_SYM(md_init, "dnnl_memory_desc_init_by_tag"),
      BENCH_DNNL_SYM(matmul_init, "dnnl_matmul_desc_init"),
      BENCH_DNNL_SYM(pd_create, "dnnl_primitive_desc_create"),
      BENCH_DNNL_SYM(pd_query, "dnnl_primitive_desc_query"),
      BENCH_DNNL_SYM(pd_destroy, "dnnl_primitive_desc_destroy"),
      BENCH_DNNL_SYM(primitive_create, "dnnl_primitive_create"),
      BENCH_DNNL_SYM(primitive_execute, "dnnl_primitive_execute"),
      BENCH_DNNL_SYM(primitive_destroy, "dnnl_primitive_destroy"),
      BENCH_DNNL_SYM(memory_create, "dnnl_memory_create"),
      BENCH_DNNL_SYM(memory_destroy, "dnnl_memory_destroy"),
#undef BENCH_DNNL_SYM
  };
  for (size_t i = 0; i < sizeof(syms) / sizeof(syms[0]); i++) {
    void* sym = dlsym(d->handle, syms[i].name);
    if (sym == NULL) {
      bench_cpu_missing(g, "onednn", "not oneDNN 2.x");
      dlclose(d->handle);
      d->handle = NULL;
      return;
    }
    memcpy(syms[i].slot, &sym, syms[i].size);
  }
  if (d->engine_create(&d->engine, dnnl_cpu, 0) != dnnl_success ||
      d->stream_create(&d->stream, d->engine, dnnl_stream_default_flags) !=
          dnnl_success) {
    bench_cpu_missing(g, "onednn", "no CPU engine");
    dlclose(d->handle);
    d->handle = NULL;
    return;
  }
  // "onednn" multiplies in the case's dtype; "onednn-f32" in f32 on f32
  // copies of the data, as the BLAS rows do for f16 and bf16 (the plugin
  // times that route too where oneDNN has its own half kernel).
  const dnnl_version_t* v = d->version();
  for (int i = 0; i < 2; i++) {
    bench_cpu_engine_t* e = &g->engines[g->count++];
    snprintf(e->name, sizeof(e->name), "%s", i == 0 ? "onednn" : "onednn-f32");
    snprintf(e->description, sizeof(e->description),
             "libdnnl.so.2 (%d.%d.%d)", v->major, v->minor, v->patch);
  }
}
#endif

bench_cpu_gemm_t* bench_cpu_gemm_open(uint32_t width) {
  bench_cpu_gemm_t* g = calloc(1, sizeof(*g));
  if (g == NULL) {
    bench_fail("out of memory");
    return NULL;
  }
  const char* forced = getenv("ACCEL_CPU_BLAS");
  if (forced != NULL && forced[0] != '\0') {
    bench_cpu_open_blas(g, "blas", forced);
  } else {
    bench_cpu_open_blas(g, "openblas", "libopenblas.so.0");
    bench_cpu_open_blas(g, "blis", "libblis.so.4");
  }
#if BENCH_HAVE_DNNL
  bench_cpu_open_dnnl(g);
#else
  bench_cpu_missing(g, "onednn", "built without <oneapi/dnnl/dnnl.h>");
#endif
  g->pool = bench_pool_create(width);
  if (g->pool == NULL) {
    bench_cpu_gemm_close(g);
    return NULL;
  }
  return g;
}

size_t bench_cpu_gemm_count(const bench_cpu_gemm_t* g) { return g->count; }

const char* bench_cpu_gemm_name(const bench_cpu_gemm_t* g, size_t i) {
  return g->engines[i].name;
}

const char* bench_cpu_gemm_missing(const bench_cpu_gemm_t* g) {
  return g->missing;
}

void bench_cpu_gemm_close(bench_cpu_gemm_t* g) {
  if (g == NULL) return;
  for (size_t i = 0; i < g->count; i++) {
    if (g->engines[i].handle != NULL) dlclose(g->engines[i].handle);
  }
#if BENCH_HAVE_DNNL
  if (g->dnnl.handle != NULL) {
    g->dnnl.stream_destroy(g->dnnl.stream);
    g->dnnl.engine_destroy(g->dnnl.engine);
    dlclose(g->dnnl.handle);
  }
#endif
  bench_pool_destroy(g->pool);
  free(g);
}

static void bench_cpu_sgemm_tile(void* arg, uint32_t index, uint32_t count) {
  const bench_cpu_op_t* op = arg;
  size_t n = op->n, lo = n * index / count, hi = n * (index + 1) / count;
  if (hi == lo) return;
  op->engine->sgemm(BENCH_CBLAS_ROW_MAJOR, BENCH_CBLAS_NO_TRANS,
                    BENCH_CBLAS_NO_TRANS, (int)(hi - lo), (int)n, (int)n, 1.0f,
                    op->a + lo * n, (int)n, op->b, (int)n, 0.0f, op->c + lo * n,
                    (int)n);
}

#if BENCH_HAVE_DNNL
// Creates the oneDNN matmul of `op` in `dtype` with A, B holding `a`, `b`
// converted; false with the reason in `why`.
static bool bench_cpu_prepare_dnnl(bench_cpu_op_t* op, accel_dtype_t dtype,
                                   const float* a, const float* b, char* why,
                                   size_t why_size) {
  bench_dnnl_t* d = &op->owner->dnnl;
  dnnl_data_type_t dt = dtype == ACCEL_DTYPE_F32   ? dnnl_f32
                        : dtype == ACCEL_DTYPE_F16 ? dnnl_f16
                                                   : dnnl_bf16;
  size_t n = op->n, es = dtype == ACCEL_DTYPE_F32 ? 4 : 2;
  dnnl_dims_t dims = {(dnnl_dim_t)n, (dnnl_dim_t)n};
  dnnl_memory_desc_t md;
  dnnl_matmul_desc_t desc;
  dnnl_primitive_desc_t pd = NULL;
  if (d->md_init(&md, 2, dims, dt, dnnl_ab) != dnnl_success ||
      d->matmul_init(&desc, &md, &md, NULL, &md) != dnnl_success ||
      d->pd_create(&pd, &desc, NULL, d->engine, NULL) != dnnl_success) {
    snprintf(why, why_size, "oneDNN has no %s matmul here",
             accel_dtype_name(dtype));
    return false;
  }
  const char* impl = "";
  d->pd_query(pd, dnnl_query_impl_info_str, 0, &impl);
  if (impl == NULL || strstr(impl, "ref") != NULL) {
    snprintf(why, why_size, "oneDNN has only its reference %s kernel here",
             accel_dtype_name(dtype));
    d->pd_destroy(pd);
    return false;
  }
  bool ok = d->primitive_create(&op->primitive, pd) == dnnl_success;
  d->pd_destroy(pd);
  for (int i = 0; ok && i < 3; i++) {
    op->data[i] = aligned_alloc(64, (n * n * es + 63) & ~(size_t)63);
    ok = op->data[i] != NULL &&
         d->memory_create(&op->mem[i], &md, d->engine, op->data[i]) ==
             dnnl_success;
  }
  if (!ok) {
    snprintf(why, why_size, "oneDNN matmul setup failed");
    return false;
  }
  for (size_t i = 0; i < n * n; i++) {
    const float v[2] = {a[i], b[i]};
    for (int s = 0; s < 2; s++) {
      if (dtype == ACCEL_DTYPE_F32) {
        ((float*)op->data[s])[i] = v[s];
      } else if (dtype == ACCEL_DTYPE_F16) {
        ((uint16_t*)op->data[s])[i] = accel_plugin_f32_to_f16(v[s]);
      } else {
        ((uint16_t*)op->data[s])[i] = accel_plugin_f32_to_bf16(v[s]);
      }
    }
  }
  return true;
}
#endif

bench_cpu_op_t* bench_cpu_gemm_prepare(bench_cpu_gemm_t* g, size_t i,
                                       accel_dtype_t dtype, size_t n,
                                       const float* a, const float* b,
                                       char* why, size_t why_size) {
  bench_cpu_op_t* op = calloc(1, sizeof(*op));
  if (op == NULL) {
    snprintf(why, why_size, "out of memory");
    return NULL;
  }
  op->owner = g;
  op->engine = &g->engines[i];
  op->n = n;
  op->a = a;
  op->b = b;
  bool ok = true;
  if (op->engine->sgemm != NULL) {
    op->c = aligned_alloc(64, (n * n * sizeof(float) + 63) & ~(size_t)63);
    ok = op->c != NULL;
    if (ok) memset(op->c, 0, n * n * sizeof(float));
    if (!ok) snprintf(why, why_size, "out of memory");
  } else if (strcmp(op->engine->name, "onednn-f32") == 0 &&
             dtype == ACCEL_DTYPE_F32) {
    why[0] = '\0';  // the "onednn" row already multiplies in f32
    ok = false;
  } else {
#if BENCH_HAVE_DNNL
    bool f32 = strcmp(op->engine->name, "onednn-f32") == 0;
    ok = bench_cpu_prepare_dnnl(op, f32 ? ACCEL_DTYPE_F32 : dtype, a, b, why,
                                why_size);
#else
    (void)dtype;
    ok = false;
#endif
  }
  if (!ok) {
    bench_cpu_op_close(op);
    return NULL;
  }
  return op;
}

bool bench_cpu_op_run(void* user, uint64_t iters) {
  bench_cpu_op_t* op = user;
  for (uint64_t it = 0; it < iters; ++it) {
    if (op->engine->sgemm != NULL) {
      if (op->engine->threaded) {
        bench_cpu_sgemm_tile(op, 0, 1);
      } else {
        bench_pool_run(op->owner->pool, bench_cpu_sgemm_tile, op);
      }
      continue;
    }
#if BENCH_HAVE_DNNL
    bench_dnnl_t* d = &op->owner->dnnl;
    dnnl_exec_arg_t args[3] = {{DNNL_ARG_SRC, op->mem[0]},
                               {DNNL_ARG_WEIGHTS, op->mem[1]},
                               {DNNL_ARG_DST, op->mem[2]}};
    if (d->primitive_execute(op->primitive, d->stream, 3, args) !=
            dnnl_success ||
        d->stream_wait(d->stream) != dnnl_success) {
      return bench_fail("oneDNN matmul %zu failed", op->n);
    }
#endif
  }
  return true;
}

void bench_cpu_op_close(bench_cpu_op_t* op) {
  if (op == NULL) return;
#if BENCH_HAVE_DNNL
  bench_dnnl_t* d = &op->owner->dnnl;
  for (int i = 0; i < 3; i++) {
    if (op->mem[i] != NULL) d->memory_destroy(op->mem[i]);
    free(op->data[i]);
  }
  if (op->primitive != NULL) d->primitive_destroy(op->primitive);
#endif
  free(op->c);
  free(op);
}
