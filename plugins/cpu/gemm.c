// SPDX-License-Identifier: MIT
//
// op_gemm on the engine engine.c chose for the dtype: a BLAS library's
// cblas_sgemm (row-major), oneDNN's matmul, or the plugin's own packed
// kernel (gemm_kernel.c, every dtype, nothing converted ahead).
//
// f32 goes straight to the engine. f16 and bf16 run on oneDNN's own
// kernel where engine.c chose it (`native`); otherwise (the Debian BLAS
// builds have no half types: OpenBLAS 0.3.21 is built without sbgemm,
// BLIS has none) A and B are converted to f32 on the pool and multiplied
// by the engine's f32 GEMM. When the scratch for op(A) and op(B) whole
// fits in ACCEL_CPU_GEMM_PANEL_ELEMS, that is one product and C is
// written once; otherwise in panels of `kc` columns of op(A) (rows of
// op(B)), the first with the caller's beta and the rest accumulating with
// beta 1. An f16/bf16 C is converted to f32 first (unless beta is 0), and
// rounded back once at the end, so accumulation is f32 throughout.
//
// Threading (blas.c): a threaded BLAS gets each sgemm whole while the pool
// idles; a single-threaded one gets C split into one tile per pool thread.
// cblas takes int sizes, so tiles also keep m, n <= INT_MAX and panels
// keep k <= INT_MAX; leading dimensions above INT_MAX are refused.
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "cpu.h"

// cblas enum values (cblas.h), spelled out so the build needs no BLAS.
enum {
  ACCEL_CPU_ROW_MAJOR = 101,
  ACCEL_CPU_NO_TRANS = 111,
  ACCEL_CPU_TRANS = 112
};

// Elements of f32 scratch for one A plus one B panel: op(A) and op(B)
// whole up to m = n = k = 4096 (128 MiB), so up to there C is written
// once. At 4096^3 four panels cost 5% against sgemm on f32 data on the
// development VM (C read and written four times), one panel 1-2%.
#define ACCEL_CPU_GEMM_PANEL_ELEMS ((uint64_t)1 << 25)

typedef struct accel_cpu_gemm_task {
  accel_plugin_gemm_t g;  // with a, b, c already offset (offsets zeroed)
  accel_cpu_gemm_engine_t engine;
} accel_cpu_gemm_task_t;

// One f32 product (A, B and C all f32), as cblas row-major sees it, that
// gemm.c may split in tiles for a single-threaded BLAS.
typedef struct accel_cpu_sgemm {
  const accel_cpu_gemm_engine_t* engine;
  accel_cpu_matmul_t mm;
  uint64_t tiles;
  bool split_rows;
} accel_cpu_sgemm_t;

static void accel_cpu_sgemm_tile(void* ctx, uint64_t index, uint32_t worker) {
  (void)worker;
  const accel_cpu_sgemm_t* s = ctx;
  const accel_cpu_matmul_t* mm = &s->mm;
  uint64_t extent = s->split_rows ? mm->m : mm->n;
  uint64_t lo = extent * index / s->tiles, hi = extent * (index + 1) / s->tiles;
  const float* a = mm->a;
  const float* b = mm->b;
  float* c = mm->c;
  uint64_t m = mm->m, n = mm->n;
  if (s->split_rows) {
    a += mm->trans_a ? lo : lo * mm->lda;  // rows of op(A)
    c += lo * mm->ldc;
    m = hi - lo;
  } else {
    b += mm->trans_b ? lo * mm->ldb : lo;  // columns of op(B)
    c += lo;
    n = hi - lo;
  }
  if (m == 0 || n == 0) return;
  s->engine->blas->sgemm(ACCEL_CPU_ROW_MAJOR,
                         mm->trans_a ? ACCEL_CPU_TRANS : ACCEL_CPU_NO_TRANS,
                         mm->trans_b ? ACCEL_CPU_TRANS : ACCEL_CPU_NO_TRANS,
                         (int)m, (int)n, (int)mm->k, mm->alpha, a,
                         (int)mm->lda, b, (int)mm->ldb, mm->beta, c,
                         (int)mm->ldc);
}

// One oneDNN matmul, on oneDNN's threads.
static accel_status_t accel_cpu_onednn_run(accel_cpu_plugin_t* plugin,
                                           const accel_cpu_onednn_t* onednn,
                                           const accel_cpu_matmul_t* mm,
                                           char* message, size_t size) {
  accel_cpu_engine_enter(plugin);
  accel_status_t status = accel_cpu_onednn_gemm(onednn, mm, message, size);
  accel_cpu_engine_leave(plugin);
  return status;
}

static accel_status_t accel_cpu_sgemm_run(accel_cpu_plugin_t* plugin,
                                          accel_cpu_pool_t* pool,
                                          accel_cpu_sgemm_t* s, char* message,
                                          size_t size) {
  const accel_cpu_matmul_t* mm = &s->mm;
  if (s->engine->blas == NULL) {  // oneDNN: one f32 matmul, its threads
    return accel_cpu_onednn_run(plugin, s->engine->onednn, mm, message, size);
  }
  const accel_cpu_blas_t* blas = s->engine->blas;
  uint64_t width = accel_cpu_pool_width(pool);
  s->split_rows = mm->m >= mm->n;
  uint64_t extent = s->split_rows ? mm->m : mm->n;
  // Tiles of at most INT_MAX rows or columns, one per pool thread when
  // the BLAS is single-threaded and the product is worth splitting.
  uint64_t tiles = (extent + INT_MAX - 1) / INT_MAX;
  if (!blas->threaded &&
      (double)mm->m * (double)mm->n * (double)mm->k >=
          (double)ACCEL_CPU_GEMM_SPLIT_FLOPS &&
      tiles < width) {
    tiles = extent < width ? extent : width;
  }
  s->tiles = tiles;
  if (blas->threaded) {
    accel_cpu_omp_quiet();
    accel_cpu_engine_enter(plugin);
    for (uint64_t i = 0; i < tiles; i++) accel_cpu_sgemm_tile(s, i, 0);
    accel_cpu_engine_leave(plugin);
  } else {
    accel_cpu_pool_run(pool, tiles, accel_cpu_sgemm_tile, s);
  }
  return ACCEL_OK;
}

// Converts `rows` x `cols` elements of `dtype` at `src` (leading dimension
// `lds`) to f32 at `dst` (`ldd`), or back when `to_f32` is false, on the
// pool, in groups of rows.
typedef struct accel_cpu_rows {
  bool to_f32;
  uint32_t dtype;
  unsigned char* half;  // the f16/bf16 side
  uint64_t ldh;
  float* f32;
  uint64_t ldf;
  uint64_t rows, cols, rows_per_chunk;
} accel_cpu_rows_t;

static void accel_cpu_rows_chunk(void* ctx, uint64_t index, uint32_t worker) {
  (void)worker;
  const accel_cpu_rows_t* r = ctx;
  uint64_t lo = index * r->rows_per_chunk;
  uint64_t hi =
      lo + r->rows_per_chunk < r->rows ? lo + r->rows_per_chunk : r->rows;
  for (uint64_t i = lo; i < hi; i++) {
    unsigned char* h = r->half + i * r->ldh * 2;
    float* f = r->f32 + i * r->ldf;
    if (r->to_f32) {
      accel_cpu_to_f32_block(f, h, r->dtype, r->cols);
    } else {
      accel_cpu_from_f32_block(h, f, r->dtype, r->cols);
    }
  }
}

static void accel_cpu_rows_convert(accel_cpu_pool_t* pool,
                                   accel_cpu_rows_t* r) {
  if (r->rows == 0 || r->cols == 0) return;
  uint64_t per = ((uint64_t)1 << 16) / r->cols;
  r->rows_per_chunk = per == 0 ? 1 : per;
  accel_cpu_pool_run(pool,
                     (r->rows + r->rows_per_chunk - 1) / r->rows_per_chunk,
                     accel_cpu_rows_chunk, r);
}

// C = beta * C for k == 0 (BLAS libraries disagree on k == 0) and for
// alpha == 0, where reference BLAS and cuBLAS skip the product (so NaN or
// inf in A or B does not reach C) and oneDNN 2.6's bf16 matmul with an
// output scale of 0 and a sum post-op wrote NaN (accel-conform's
// ops.gemm.bf16, alpha 0 beta 0.5).
static void accel_cpu_gemm_scale_c(const accel_plugin_gemm_t* g) {
  size_t es = accel_plugin_dtype_size(g->c_dtype);
  float row[512];
  for (uint64_t i = 0; i < g->m; i++) {
    unsigned char* c = (unsigned char*)g->c + i * g->ldc * es;
    for (uint64_t j = 0; j < g->n; j += 512) {
      size_t len = g->n - j < 512 ? (size_t)(g->n - j) : 512;
      if (g->beta == 0) {
        memset(row, 0, sizeof(row));
      } else {
        accel_cpu_to_f32_block(row, c + j * es, g->c_dtype, len);
        for (size_t t = 0; t < len; t++) row[t] = (float)g->beta * row[t];
      }
      accel_cpu_from_f32_block(c + j * es, row, g->c_dtype, len);
    }
  }
}

// The f32 scratch of the f16/bf16 path: the A and B panels, and C when it
// is f16/bf16. Fresh memory costs a page fault per 4 KiB on first touch
// (with the kernel zeroing each page): at 4096^3 that was 96 MiB, about
// 60 ms of a 750 ms product on the development VM, more than the
// conversions themselves. So the plugin keeps the last scratch block (one,
// whichever GEMM gave it back last) for the next GEMM, up to
// ACCEL_CPU_GEMM_SCRATCH_KEEP bytes; larger blocks are freed after use.
// Concurrent GEMMs (other streams) that find the slot empty allocate
// their own. unload frees the kept block.
#define ACCEL_CPU_GEMM_SCRATCH_KEEP ((size_t)256 << 20)

accel_cpu_scratch_t* accel_cpu_scratch_take(accel_cpu_plugin_t* plugin,
                                            size_t size) {
  accel_cpu_scratch_t* s = atomic_exchange(&plugin->gemm_scratch, NULL);
  if (s != NULL && s->size >= size) return s;
  free(s);
  size_t rounded =
      (size + ACCEL_CPU_ALIGNMENT - 1) & ~(size_t)(ACCEL_CPU_ALIGNMENT - 1);
  if (rounded < size || rounded > SIZE_MAX - sizeof(*s)) return NULL;
  s = aligned_alloc(ACCEL_CPU_ALIGNMENT, sizeof(*s) + rounded);
  if (s != NULL) s->size = rounded;
  return s;
}

void accel_cpu_scratch_give(accel_cpu_plugin_t* plugin,
                            accel_cpu_scratch_t* s) {
  if (s->size > ACCEL_CPU_GEMM_SCRATCH_KEEP) {
    free(s);
    return;
  }
  free(atomic_exchange(&plugin->gemm_scratch, s));
}

void accel_cpu_scratch_destroy(accel_cpu_scratch_t* scratch) { free(scratch); }

// f16/bf16 inputs: panels of op(A) columns / op(B) rows converted to f32.
static accel_status_t accel_cpu_gemm_half(accel_cpu_plugin_t* plugin,
                                          accel_cpu_pool_t* pool,
                                          const accel_cpu_gemm_engine_t* e,
                                          const accel_plugin_gemm_t* g,
                                          char* message, size_t size) {
  accel_status_t status = ACCEL_OK;
  uint64_t kc = ACCEL_CPU_GEMM_PANEL_ELEMS / (g->m + g->n);
  if (kc < 64) kc = 64;
  if (kc > g->k) kc = g->k;
  if (kc > INT_MAX) kc = INT_MAX;
  bool c_half = g->c_dtype != ACCEL_DTYPE_F32;
  size_t a_bytes = accel_cpu_f32_bytes(g->m * kc);
  size_t b_bytes = accel_cpu_f32_bytes(kc * g->n);
  size_t c_bytes = c_half ? accel_cpu_f32_bytes(g->m * g->n) : 0;
  accel_cpu_scratch_t* scratch =
      accel_cpu_scratch_take(plugin, a_bytes + b_bytes + c_bytes);
  if (scratch == NULL) {
    snprintf(message, size, "gemm: out of host memory for f32 panels");
    return ACCEL_ERROR_OUT_OF_MEMORY;
  }
  float* a32 = (float*)scratch->data;
  float* b32 = (float*)(scratch->data + a_bytes);
  float* c32 =
      c_half ? (float*)(scratch->data + a_bytes + b_bytes) : (float*)g->c;
  uint64_t ldc32 = c_half ? g->n : g->ldc;
  if (c_half && g->beta != 0) {
    accel_cpu_rows_t r = {true, g->c_dtype, g->c, g->ldc, c32,
                          g->n, g->m,       g->n, 0};
    accel_cpu_rows_convert(pool, &r);
  }
  for (uint64_t k0 = 0; status == ACCEL_OK && k0 < g->k; k0 += kc) {
    uint64_t kb = g->k - k0 < kc ? g->k - k0 : kc;
    unsigned char* a = g->a;
    unsigned char* b = g->b;
    // Panels keep the stored orientation, so conversion reads rows.
    accel_cpu_rows_t ra = {true, g->a_dtype, NULL, g->lda, a32, 0, 0, 0, 0};
    if (g->trans_a) {  // stored k x m: rows k0 .. k0 + kb
      ra.half = a + k0 * g->lda * 2, ra.ldf = g->m, ra.rows = kb;
      ra.cols = g->m;
    } else {  // stored m x k: columns k0 .. k0 + kb
      ra.half = a + k0 * 2, ra.ldf = kb, ra.rows = g->m, ra.cols = kb;
    }
    accel_cpu_rows_t rb = {true, g->b_dtype, NULL, g->ldb, b32, 0, 0, 0, 0};
    if (g->trans_b) {  // stored n x k
      rb.half = b + k0 * 2, rb.ldf = kb, rb.rows = g->n, rb.cols = kb;
    } else {  // stored k x n
      rb.half = b + k0 * g->ldb * 2, rb.ldf = g->n, rb.rows = kb;
      rb.cols = g->n;
    }
    accel_cpu_rows_convert(pool, &ra);
    accel_cpu_rows_convert(pool, &rb);
    accel_cpu_sgemm_t s = {.engine = e,
                           .mm = {.ab_dtype = ACCEL_DTYPE_F32,
                                  .c_dtype = ACCEL_DTYPE_F32,
                                  .trans_a = g->trans_a,
                                  .trans_b = g->trans_b,
                                  .m = g->m,
                                  .n = g->n,
                                  .k = kb,
                                  .alpha = (float)g->alpha,
                                  .beta = k0 == 0 ? (float)g->beta : 1.0f,
                                  .a = a32,
                                  .lda = ra.ldf,
                                  .b = b32,
                                  .ldb = rb.ldf,
                                  .c = c32,
                                  .ldc = ldc32}};
    status = accel_cpu_sgemm_run(plugin, pool, &s, message, size);
  }
  if (c_half && status == ACCEL_OK) {
    accel_cpu_rows_t r = {false, g->c_dtype, g->c, g->ldc, c32,
                          g->n,  g->m,       g->n, 0};
    accel_cpu_rows_convert(pool, &r);
  }
  accel_cpu_scratch_give(plugin, scratch);
  return status;
}

accel_status_t accel_cpu_gemm_execute(accel_cpu_plugin_t* plugin,
                                      accel_cpu_pool_t* pool,
                                      const accel_cpu_gemm_engine_t* e,
                                      const accel_plugin_gemm_t* g,
                                      char* message, size_t size) {
  if (g->k == 0 || g->alpha == 0) {
    accel_cpu_gemm_scale_c(g);
    return ACCEL_OK;
  }
  if (e->id == ACCEL_CPU_ENGINE_ACCEL) {
    return accel_cpu_gk_gemm(plugin, pool, e->own, g, message, size);
  }
  if (g->a_dtype != ACCEL_DTYPE_F32) {
    if (e->native) {
      accel_cpu_matmul_t mm = {
          .ab_dtype = g->a_dtype, .c_dtype = g->c_dtype,
          .trans_a = g->trans_a, .trans_b = g->trans_b, .m = g->m,
          .n = g->n, .k = g->k, .alpha = (float)g->alpha,
          .beta = (float)g->beta, .a = g->a, .lda = g->lda, .b = g->b,
          .ldb = g->ldb, .c = g->c, .ldc = g->ldc};
      accel_status_t status =
          accel_cpu_onednn_run(plugin, e->onednn, &mm, message, size);
      // No kernel for this mix (an f32 C): convert, as for a BLAS.
      if (status != ACCEL_ERROR_UNSUPPORTED) return status;
    }
    return accel_cpu_gemm_half(plugin, pool, e, g, message, size);
  }
  // f32: k in panels of at most INT_MAX, accumulating after the first.
  accel_status_t status = ACCEL_OK;
  for (uint64_t k0 = 0; status == ACCEL_OK && k0 < g->k; k0 += INT_MAX) {
    uint64_t kb = g->k - k0 < INT_MAX ? g->k - k0 : INT_MAX;
    const float* a = g->a;
    const float* b = g->b;
    accel_cpu_sgemm_t s = {.engine = e,
                           .mm = {.ab_dtype = ACCEL_DTYPE_F32,
                                  .c_dtype = ACCEL_DTYPE_F32,
                                  .trans_a = g->trans_a,
                                  .trans_b = g->trans_b,
                                  .m = g->m,
                                  .n = g->n,
                                  .k = kb,
                                  .alpha = (float)g->alpha,
                                  .beta = k0 == 0 ? (float)g->beta : 1.0f,
                                  .a = g->trans_a ? a + k0 * g->lda : a + k0,
                                  .lda = g->lda,
                                  .b = g->trans_b ? b + k0 : b + k0 * g->ldb,
                                  .ldb = g->ldb,
                                  .c = g->c,
                                  .ldc = g->ldc}};
    status = accel_cpu_sgemm_run(plugin, pool, &s, message, size);
  }
  return status;
}

static accel_status_t accel_cpu_gemm_call(accel_cpu_device_t* device, void* arg,
                                          char* message, size_t size) {
  const accel_cpu_gemm_task_t* t = arg;
  accel_cpu_pool_t* pool = atomic_load(&device->plugin->pool);
  return accel_cpu_gemm_execute(device->plugin, pool, &t->engine, &t->g,
                                message, size);
}

// What op_gemm and op_gemm_batched check before queuing `gemm`: the dtype
// combination and leading dimensions the engines take; then the pool and
// (unless k or alpha is 0) the engine for the dtype, into `*out_pool`,
// `*engine`.
static accel_status_t accel_cpu_gemm_prepare(accel_cpu_device_t* device,
                                             const accel_plugin_gemm_t* gemm,
                                             accel_cpu_pool_t** out_pool,
                                             accel_cpu_gemm_engine_t* engine) {
  const accel_host_t* host = device->host;
  bool half_in =
      gemm->a_dtype == ACCEL_DTYPE_F16 || gemm->a_dtype == ACCEL_DTYPE_BF16;
  if ((gemm->a_dtype != ACCEL_DTYPE_F32 && !half_in) ||
      gemm->b_dtype != gemm->a_dtype ||
      (gemm->c_dtype != gemm->a_dtype &&
       !(half_in && gemm->c_dtype == ACCEL_DTYPE_F32))) {
    return host->fail(host, ACCEL_ERROR_UNSUPPORTED,
                      "cpu:%u: gemm: unsupported dtypes a=%u b=%u c=%u",
                      device->index, (unsigned)gemm->a_dtype,
                      (unsigned)gemm->b_dtype, (unsigned)gemm->c_dtype);
  }
  if (gemm->lda > INT_MAX || gemm->ldb > INT_MAX || gemm->ldc > INT_MAX) {
    return host->fail(host, ACCEL_ERROR_UNSUPPORTED,
                      "cpu:%u: gemm: leading dimensions above %d are not "
                      "supported by the BLAS interface",
                      device->index, INT_MAX);
  }
  accel_status_t status = accel_cpu_pool_get(device->plugin, out_pool);
  if (status != ACCEL_OK || gemm->k == 0 || gemm->alpha == 0) return status;
  return accel_cpu_gemm_engine_get(device->plugin, *out_pool, gemm, engine);
}

// `g` with the offsets applied to the pointers (offsets zeroed): copies
// only the fields this plugin knows and the core sent.
static void accel_cpu_gemm_flatten(const accel_plugin_gemm_t* gemm,
                                   accel_plugin_gemm_t* g) {
  size_t n = gemm->struct_size < sizeof(*g) ? gemm->struct_size : sizeof(*g);
  memset(g, 0, sizeof(*g));
  memcpy(g, gemm, n);
  g->a = (unsigned char*)gemm->a + gemm->a_offset;
  g->b = (unsigned char*)gemm->b + gemm->b_offset;
  g->c = (unsigned char*)gemm->c + gemm->c_offset;
  g->a_offset = g->b_offset = g->c_offset = 0;
}

accel_status_t accel_cpu_op_gemm(void* device_ptr, void* stream,
                                 const accel_plugin_gemm_t* gemm) {
  accel_cpu_device_t* device = device_ptr;
  accel_cpu_pool_t* pool = NULL;
  accel_cpu_gemm_engine_t engine = {0};
  accel_status_t status = accel_cpu_gemm_prepare(device, gemm, &pool, &engine);
  if (status != ACCEL_OK) return status;
  accel_cpu_task_t* task = accel_cpu_task_create_call(
      accel_cpu_gemm_call, sizeof(accel_cpu_gemm_task_t));
  if (task == NULL) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              "cpu:%u: cannot queue a gemm", device->index);
  }
  accel_cpu_gemm_task_t* t = task->u.call.arg;
  accel_cpu_gemm_flatten(gemm, &t->g);
  t->engine = engine;
  accel_cpu_stream_submit(stream, task);
  return ACCEL_OK;
}

// ---------------------------------------------------------------------------
// Strided-batched GEMM (ABI 1.4): the members on the same engine. Members
// too small to be split across the pool on their own run side by side,
// one per pool thread, when the engine is a single-threaded BLAS or the
// own kernel (the pool is otherwise idle during each of them); on a
// threaded BLAS or
// oneDNN, which thread each call themselves, members run one after the
// other. Every member computes exactly what op_gemm would.
// ---------------------------------------------------------------------------

typedef struct accel_cpu_gemm_batch_task {
  accel_cpu_gemm_task_t first;  // member 0, pointers offset
  uint64_t count;
  uint64_t stride_a, stride_b, stride_c;  // bytes
  accel_cpu_plugin_t* plugin;             // for the parallel members
  _Atomic int status;  // the first failure of a parallel member
  char message[ACCEL_CPU_MESSAGE_SIZE];  // its reason (under `status`)
} accel_cpu_gemm_batch_task_t;

// Member `i` of the batch `t`.
static void accel_cpu_gemm_member(const accel_cpu_gemm_batch_task_t* t,
                                  uint64_t i, accel_plugin_gemm_t* g) {
  *g = t->first.g;
  g->a = (unsigned char*)g->a + i * t->stride_a;
  g->b = (unsigned char*)g->b + i * t->stride_b;
  g->c = (unsigned char*)g->c + i * t->stride_c;
}

static void accel_cpu_gemm_member_chunk(void* ctx, uint64_t index,
                                        uint32_t worker) {
  (void)worker;
  accel_cpu_gemm_batch_task_t* t = ctx;
  if (atomic_load(&t->status) != ACCEL_OK) return;
  accel_plugin_gemm_t g;
  accel_cpu_gemm_member(t, index, &g);
  char message[ACCEL_CPU_MESSAGE_SIZE] = "";
  accel_status_t status = accel_cpu_gemm_execute(
      t->plugin, NULL, &t->first.engine, &g, message, sizeof(message));
  int expected = ACCEL_OK;
  if (status != ACCEL_OK &&
      atomic_compare_exchange_strong(&t->status, &expected, (int)status)) {
    snprintf(t->message, sizeof(t->message), "%s", message);
  }
}

static accel_status_t accel_cpu_gemm_batch_call(accel_cpu_device_t* device,
                                                void* arg, char* message,
                                                size_t size) {
  accel_cpu_gemm_batch_task_t* t = arg;
  accel_cpu_pool_t* pool = atomic_load(&device->plugin->pool);
  const accel_plugin_gemm_t* g = &t->first.g;
  const accel_cpu_gemm_engine_t* e = &t->first.engine;
  bool small = (double)g->m * (double)g->n * (double)g->k <
               (double)ACCEL_CPU_GEMM_SPLIT_FLOPS;
  bool on_pool = e->id == ACCEL_CPU_ENGINE_ACCEL ||
                 (e->blas != NULL && !e->blas->threaded);
  if (small && g->k != 0 && on_pool && t->count > 1 &&
      accel_cpu_pool_width(pool) > 1) {
    t->plugin = device->plugin;
    atomic_store(&t->status, ACCEL_OK);
    accel_cpu_pool_run(pool, t->count, accel_cpu_gemm_member_chunk, t);
    accel_status_t status = (accel_status_t)atomic_load(&t->status);
    if (status != ACCEL_OK) snprintf(message, size, "%s", t->message);
    return status;
  }
  accel_status_t status = ACCEL_OK;
  for (uint64_t i = 0; i < t->count && status == ACCEL_OK; i++) {
    accel_plugin_gemm_t member;
    accel_cpu_gemm_member(t, i, &member);
    status =
        accel_cpu_gemm_execute(device->plugin, pool, e, &member, message, size);
  }
  return status;
}

accel_status_t accel_cpu_op_gemm_batched(
    void* device_ptr, void* stream, const accel_plugin_gemm_t* gemm,
    const accel_plugin_gemm_batch_t* batch) {
  accel_cpu_device_t* device = device_ptr;
  accel_cpu_pool_t* pool = NULL;
  accel_cpu_gemm_engine_t engine = {0};
  accel_status_t status = accel_cpu_gemm_prepare(device, gemm, &pool, &engine);
  if (status != ACCEL_OK) return status;
  accel_cpu_task_t* task = accel_cpu_task_create_call(
      accel_cpu_gemm_batch_call, sizeof(accel_cpu_gemm_batch_task_t));
  if (task == NULL) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              "cpu:%u: cannot queue a batched gemm",
                              device->index);
  }
  accel_cpu_gemm_batch_task_t* t = task->u.call.arg;
  accel_cpu_gemm_flatten(gemm, &t->first.g);
  t->first.engine = engine;
  t->count = batch->count;
  t->stride_a = batch->stride_a;
  t->stride_b = batch->stride_b;
  t->stride_c = batch->stride_c;
  accel_cpu_stream_submit(stream, task);
  return ACCEL_OK;
}
