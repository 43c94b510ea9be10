// SPDX-License-Identifier: MIT
//
// op_gemm on the engine engine.c chose for the dtype: a BLAS library's
// cblas_sgemm (row-major) or oneDNN's matmul.
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
// Below this many multiply-adds a GEMM is not split across the pool.
#define ACCEL_CPU_GEMM_SPLIT_FLOPS ((uint64_t)1 << 21)

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

static accel_status_t accel_cpu_sgemm_run(accel_cpu_pool_t* pool,
                                          accel_cpu_sgemm_t* s, char* message,
                                          size_t size) {
  const accel_cpu_matmul_t* mm = &s->mm;
  if (s->engine->blas == NULL) {  // oneDNN: one f32 matmul, its threads
    return accel_cpu_onednn_gemm(s->engine->onednn, mm, message, size);
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
    for (uint64_t i = 0; i < tiles; i++) accel_cpu_sgemm_tile(s, i, 0);
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

// C = beta * C for k == 0 (BLAS libraries disagree on k == 0).
static void accel_cpu_gemm_scale_c(const accel_plugin_gemm_t* g) {
  size_t es = accel_cpu_dtype_size(g->c_dtype);
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

struct accel_cpu_scratch {
  size_t size;  // usable bytes after the header
  _Alignas(ACCEL_CPU_ALIGNMENT) unsigned char data[];
};

// Takes the kept block if it holds `size` bytes, else allocates one. NULL
// when out of host memory.
static accel_cpu_scratch_t* accel_cpu_scratch_take(accel_cpu_plugin_t* plugin,
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

// Keeps `s` for the next GEMM (freeing a block kept meanwhile), or frees it
// when it is too large to keep.
static void accel_cpu_scratch_give(accel_cpu_plugin_t* plugin,
                                   accel_cpu_scratch_t* s) {
  if (s->size > ACCEL_CPU_GEMM_SCRATCH_KEEP) {
    free(s);
    return;
  }
  free(atomic_exchange(&plugin->gemm_scratch, s));
}

void accel_cpu_scratch_destroy(accel_cpu_scratch_t* scratch) { free(scratch); }

// Bytes of f32 scratch for `elems` elements, rounded to whole cache lines.
static size_t accel_cpu_f32_bytes(uint64_t elems) {
  return ((size_t)elems * sizeof(float) + ACCEL_CPU_ALIGNMENT - 1) &
         ~(size_t)(ACCEL_CPU_ALIGNMENT - 1);
}

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
    status = accel_cpu_sgemm_run(pool, &s, message, size);
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
  if (g->k == 0) {
    accel_cpu_gemm_scale_c(g);
    return ACCEL_OK;
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
          accel_cpu_onednn_gemm(e->onednn, &mm, message, size);
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
    status = accel_cpu_sgemm_run(pool, &s, message, size);
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

accel_status_t accel_cpu_op_gemm(void* device_ptr, void* stream,
                                 const accel_plugin_gemm_t* gemm) {
  accel_cpu_device_t* device = device_ptr;
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
  accel_cpu_pool_t* pool = NULL;
  accel_status_t status = accel_cpu_pool_get(device->plugin, &pool);
  if (status != ACCEL_OK) return status;
  accel_cpu_gemm_engine_t engine = {0};
  if (gemm->k != 0) {
    status = accel_cpu_gemm_engine_get(device->plugin, pool, gemm->a_dtype,
                                       &engine);
    if (status != ACCEL_OK) return status;
  }
  accel_cpu_task_t* task = accel_cpu_task_create_call(
      accel_cpu_gemm_call, sizeof(accel_cpu_gemm_task_t));
  if (task == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      "cpu:%u: cannot queue a gemm", device->index);
  }
  accel_cpu_gemm_task_t* t = task->u.call.arg;
  // Copy only the fields this plugin knows and the core sent.
  size_t n =
      gemm->struct_size < sizeof(t->g) ? gemm->struct_size : sizeof(t->g);
  memcpy(&t->g, gemm, n);
  t->g.a = (unsigned char*)gemm->a + gemm->a_offset;
  t->g.b = (unsigned char*)gemm->b + gemm->b_offset;
  t->g.c = (unsigned char*)gemm->c + gemm->c_offset;
  t->g.a_offset = t->g.b_offset = t->g.c_offset = 0;
  t->engine = engine;
  accel_cpu_stream_submit(stream, task);
  return ACCEL_OK;
}
