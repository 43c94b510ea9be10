// SPDX-License-Identifier: MIT
//
// oneDNN (libdnnl.so.2) as a GEMM engine: matmul primitives kept per
// shape, opened at run time like the BLAS, so the plugin builds and loads
// where oneDNN is absent.
//
// The oneDNN 2.x C API is declared here rather than included: the build
// must not need libdnnl-dev. Only pointers to its descriptor structs cross
// the interface, so they live in buffers larger than the 2.x structs (696
// bytes for a memory descriptor, 2800 for a matmul descriptor in 2.6);
// enum values are those of dnnl_types.h, stable across 2.x. oneDNN 3.x
// removed dnnl_matmul_desc_init, so a 3.x library fails the symbol check
// and is reported as missing it.
//
// C = alpha * op(A) op(B) + beta * C maps onto the primitive as: op() by
// strides of the memory descriptors (a transposed operand is the same
// bytes with swapped strides), alpha as the output scale, beta as a sum
// post-op.
//
// The primitive cache: building every call's objects (descriptors,
// attributes, the implementation dispatch of dnnl_primitive_desc_create, a
// lookup in oneDNN's own primitive cache, memory objects, a stream) cost
// 4-8 us a call on a 2-vCPU VM, and bf16 GEMM on a 16-core AMX Xeon ran at
// 82-104% of oneDNN called with a primitive created once
// (docs/performance.md). So the last ACCEL_CPU_DNNL_CACHED shapes keep
// their objects, keyed by everything the primitive depends on (dtypes,
// sizes, leading dimensions, transposes, the bits of alpha and beta); a
// repeated shape only points the three memory objects at the call's data
// and executes. A call takes its entry out of the cache under the mutex
// and puts it back after executing, so an entry (its memory objects and
// stream) serves one thread at a time; a concurrent call of the same shape
// finds nothing and builds its own (builds take turns), which it then
// offers back (a duplicate is dropped). The least recently returned entry
// is evicted when the cache is full. A call that fails at any step frees
// its objects and never enters the cache.
//
// Threads: Debian's build runs on OpenMP. The caller's thread (a stream
// worker) starts the parallel region; its OpenMP thread count is set to
// the pool's width before each call (before the primitive is created too,
// since oneDNN fixes a primitive's thread count there), so
// ACCEL_CPU_THREADS bounds oneDNN as it bounds the pool and OpenBLAS.
// The pool and the BLAS are idle while a matmul runs: one engine is busy
// at a time. Across streams it is not: each stream worker that calls
// oneDNN starts an OpenMP team of its own, and two streams' matmuls run at
// once. A process-wide gate making them take turns was tried and measured
// slower on 2 vCPUs (two streams of 40 products each, 256^3: 32-63
// GFLOP/s gated against 77-112 overlapping; 512^3: 80-101 against
// 102-107; the waiter's wake-up costs more than the overlap), so there is
// none. Many-core machines, where overlapping teams may hurt, are untested.
//
// Idle OpenMP threads: after a matmul returns, libgomp's threads spin
// (OMP_WAIT_POLICY unset: GOMP_SPINCOUNT rounds, milliseconds) before they
// sleep. Work the plugin runs next on its own threads shares the CPUs
// with them: on 2 vCPUs an f16 GEMM on the pool right after an f32 matmul
// took 1.5-1.85x as long as alone (docs/cpu-backend.md). So the thread
// that ran a matmul remembers it, and before that thread starts other
// threaded work (a pool job, a threaded BLAS) it ends its OpenMP team's
// threads with omp_pause_resource_all (OpenMP 5.0; libgomp creates them
// again at the next matmul). Matmuls back to back keep their team. That
// thread is always a stream worker of the plugin (GEMM never runs inline
// on an application thread), and a pause ends only the calling thread's
// team, so an application's own OpenMP teams are never touched. Not
// done when the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT (their choice
// of spinning stands) or the runtime lacks the call.
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

// oneDNN 2.x values (dnnl_types.h).
enum {
  ACCEL_DNNL_SUCCESS = 0,
  ACCEL_DNNL_F16 = 1,
  ACCEL_DNNL_BF16 = 2,
  ACCEL_DNNL_F32 = 3,
  ACCEL_DNNL_CPU = 1,           // dnnl_cpu
  ACCEL_DNNL_IN_ORDER = 1,      // dnnl_stream_in_order
  ACCEL_DNNL_IMPL_INFO = 8,     // dnnl_query_impl_info_str
  ACCEL_DNNL_ARG_SRC = 1,
  ACCEL_DNNL_ARG_DST = 17,
  ACCEL_DNNL_ARG_WEIGHTS = 33,
  ACCEL_DNNL_MAX_NDIMS = 12,
};

// Room for one descriptor of the 2.x API (see the file comment).
#define ACCEL_DNNL_MD_BYTES 2048
#define ACCEL_DNNL_DESC_BYTES 8192

typedef int64_t accel_dnnl_dims_t[ACCEL_DNNL_MAX_NDIMS];
typedef struct accel_dnnl_arg {
  int arg;
  void* memory;
} accel_dnnl_arg_t;
typedef struct accel_dnnl_version {
  int major, minor, patch;
  const char* hash;
  unsigned cpu_runtime, gpu_runtime;
} accel_dnnl_version_t;

// The oneDNN entry points this file calls, resolved at load.
#define ACCEL_DNNL_FUNCTIONS(X)                                              \
  X(engine_create, int, (void**, int, size_t))                               \
  X(engine_destroy, int, (void*))                                            \
  X(stream_create, int, (void**, void*, unsigned))                           \
  X(stream_wait, int, (void*))                                               \
  X(stream_destroy, int, (void*))                                            \
  X(memory_desc_init_by_strides, int,                                        \
    (void*, int, const int64_t*, int, const int64_t*))                       \
  X(matmul_desc_init, int, (void*, const void*, const void*, const void*,    \
                            const void*))                                    \
  X(primitive_attr_create, int, (void**))                                    \
  X(primitive_attr_destroy, int, (void*))                                    \
  X(primitive_attr_set_output_scales, int, (void*, int64_t, int,             \
                                            const float*))                   \
  X(primitive_attr_set_post_ops, int, (void*, const void*))                  \
  X(post_ops_create, int, (void**))                                          \
  X(post_ops_destroy, int, (void*))                                          \
  X(post_ops_append_sum, int, (void*, float))                                \
  X(primitive_desc_create, int, (void**, const void*, const void*, void*,    \
                                 const void*))                               \
  X(primitive_desc_query, int, (const void*, int, int, void*))               \
  X(primitive_desc_destroy, int, (void*))                                    \
  X(primitive_create, int, (void**, const void*))                            \
  X(primitive_execute, int, (const void*, void*, int,                        \
                             const accel_dnnl_arg_t*))                       \
  X(primitive_destroy, int, (void*))                                         \
  X(memory_create, int, (void**, const void*, void*, void*))                 \
  X(memory_destroy, int, (void*))                                            \
  X(memory_set_data_handle, int, (void*, void*))                             \
  X(version, const accel_dnnl_version_t*, (void))

// Shapes whose primitives are kept (see the file comment).
#define ACCEL_CPU_DNNL_CACHED 16

// Everything a matmul primitive depends on; alpha and beta by their bits
// (alpha 1 and beta 0 are attributes left out, so distinct keys).
typedef struct accel_cpu_dnnl_key {
  uint32_t ab_dtype, c_dtype;
  uint64_t m, n, k, lda, ldb, ldc;
  uint32_t alpha, beta;
  bool trans_a, trans_b;
} accel_cpu_dnnl_key_t;

// Objects of one call, destroyed together (NULL ones skipped).
typedef struct accel_cpu_dnnl_call {
  void* attr;
  void* post_ops;
  void* pd;
  void* primitive;
  void* stream;
  void* mem[3];
} accel_cpu_dnnl_call_t;

// A cached call: its objects, built for `key`. `used` orders evictions.
typedef struct accel_cpu_dnnl_entry {
  bool valid;
  accel_cpu_dnnl_key_t key;
  accel_cpu_dnnl_call_t call;
  uint64_t used;
} accel_cpu_dnnl_entry_t;

// The entries not taken out by a running call, under `mutex`. `create` is
// held while a call's objects are built or destroyed: see
// accel_cpu_onednn_build_one.
typedef struct accel_cpu_dnnl_cache {
  pthread_mutex_t mutex;
  pthread_mutex_t create;
  uint64_t clock;
  accel_cpu_dnnl_entry_t entries[ACCEL_CPU_DNNL_CACHED];
} accel_cpu_dnnl_cache_t;

struct accel_cpu_onednn {
  void* handle;
  void* engine;  // one CPU engine; each cached call has its own stream
  accel_cpu_dnnl_cache_t* cache;  // mutable behind a const engine
#define ACCEL_DNNL_FIELD(name, ret, args) ret(*name) args;
  ACCEL_DNNL_FUNCTIONS(ACCEL_DNNL_FIELD)
#undef ACCEL_DNNL_FIELD
  void (*omp_set_num_threads)(int);  // NULL for a non-OpenMP build
  int (*omp_pause)(int);  // omp_pause_resource_all; NULL: leave the team
  int threads;
  bool native[3];  // f16 / bf16 matmul by an optimised (not "ref") kernel
  char description[64];  // "onednn-2.6.3:omp"
};

// oneDNN data type of an accel dtype; 0 for none.
static int accel_cpu_onednn_dtype(uint32_t dtype) {
  switch (dtype) {
    case ACCEL_DTYPE_F32:
      return ACCEL_DNNL_F32;
    case ACCEL_DTYPE_F16:
      return ACCEL_DNNL_F16;
    case ACCEL_DTYPE_BF16:
      return ACCEL_DNNL_BF16;
    default:
      return 0;
  }
}

static void accel_cpu_onednn_call_free(const accel_cpu_onednn_t* d,
                                       accel_cpu_dnnl_call_t* c) {
  for (int i = 0; i < 3; i++) {
    if (c->mem[i] != NULL) d->memory_destroy(c->mem[i]);
  }
  if (c->stream != NULL) d->stream_destroy(c->stream);
  if (c->primitive != NULL) d->primitive_destroy(c->primitive);
  if (c->pd != NULL) d->primitive_desc_destroy(c->pd);
  if (c->post_ops != NULL) d->post_ops_destroy(c->post_ops);
  if (c->attr != NULL) d->primitive_attr_destroy(c->attr);
}

// Builds the primitive descriptor of `mm` into `c` (and `mds`); returns
// the failing step's name, or NULL.
static const char* accel_cpu_onednn_describe(const accel_cpu_onednn_t* d,
                                             const accel_cpu_matmul_t* mm,
                                             unsigned char (*mds)[3]
                                                          [ACCEL_DNNL_MD_BYTES],
                                             accel_cpu_dnnl_call_t* c) {
  int ab = accel_cpu_onednn_dtype(mm->ab_dtype);
  int cd = accel_cpu_onednn_dtype(mm->c_dtype);
  int64_t m = (int64_t)mm->m, n = (int64_t)mm->n, k = (int64_t)mm->k;
  accel_dnnl_dims_t da = {m, k}, db = {k, n}, dc = {m, n};
  accel_dnnl_dims_t sa = {(int64_t)mm->lda, 1}, sb = {(int64_t)mm->ldb, 1};
  accel_dnnl_dims_t sc = {(int64_t)mm->ldc, 1};
  if (mm->trans_a) sa[0] = 1, sa[1] = (int64_t)mm->lda;
  if (mm->trans_b) sb[0] = 1, sb[1] = (int64_t)mm->ldb;
  if (d->memory_desc_init_by_strides((*mds)[0], 2, da, ab, sa) != 0 ||
      d->memory_desc_init_by_strides((*mds)[1], 2, db, ab, sb) != 0 ||
      d->memory_desc_init_by_strides((*mds)[2], 2, dc, cd, sc) != 0) {
    return "dnnl_memory_desc_init_by_strides";
  }
  _Alignas(64) unsigned char desc[ACCEL_DNNL_DESC_BYTES];
  if (d->matmul_desc_init(desc, (*mds)[0], (*mds)[1], NULL, (*mds)[2]) != 0) {
    return "dnnl_matmul_desc_init";
  }
  if (d->primitive_attr_create(&c->attr) != 0) return "dnnl_primitive_attr";
  if (mm->alpha != 1.0f &&
      d->primitive_attr_set_output_scales(c->attr, 1, 0, &mm->alpha) != 0) {
    return "dnnl_primitive_attr_set_output_scales";
  }
  if (mm->beta != 0.0f) {
    if (d->post_ops_create(&c->post_ops) != 0 ||
        d->post_ops_append_sum(c->post_ops, mm->beta) != 0 ||
        d->primitive_attr_set_post_ops(c->attr, c->post_ops) != 0) {
      return "dnnl sum post-op";
    }
  }
  if (d->primitive_desc_create(&c->pd, desc, c->attr, d->engine, NULL) != 0) {
    c->pd = NULL;
    return "dnnl_primitive_desc_create (no implementation)";
  }
  return NULL;
}

// Builds every object of a call of `mm` (on `ptr`: A, B, C) into `c`;
// returns the failing step's name, or NULL. `*status` becomes
// ACCEL_ERROR_UNSUPPORTED when oneDNN has no implementation.
static const char* accel_cpu_onednn_build(const accel_cpu_onednn_t* d,
                                          const accel_cpu_matmul_t* mm,
                                          void* const ptr[3],
                                          accel_cpu_dnnl_call_t* c,
                                          accel_status_t* status) {
  _Alignas(64) unsigned char mds[3][ACCEL_DNNL_MD_BYTES];
  const char* failed = accel_cpu_onednn_describe(d, mm, &mds, c);
  if (failed != NULL && c->pd == NULL && c->attr != NULL &&
      strncmp(failed, "dnnl_primitive_desc_create", 26) == 0) {
    *status = ACCEL_ERROR_UNSUPPORTED;
  }
  for (int i = 0; failed == NULL && i < 3; i++) {
    if (d->memory_create(&c->mem[i], mds[i], d->engine, ptr[i]) != 0) {
      c->mem[i] = NULL;
      failed = "dnnl_memory_create";
    }
  }
  if (failed == NULL && d->primitive_create(&c->primitive, c->pd) != 0) {
    c->primitive = NULL;
    failed = "dnnl_primitive_create";
  }
  if (failed == NULL &&
      d->stream_create(&c->stream, d->engine, ACCEL_DNNL_IN_ORDER) != 0) {
    c->stream = NULL;
    failed = "dnnl_stream_create";
  }
  return failed;
}

// accel_cpu_onednn_build and accel_cpu_onednn_call_free one thread at a
// time. Two stream workers building the same shape at once meet in
// oneDNN's own primitive cache, and ThreadSanitizer saw one of them read a
// cache key's descriptor that the other had just allocated, with no
// ordering between them that it could see (cpu_onednn's
// concurrent_streams_one_shape, about one run in twenty on 2 vCPUs with
// the other core busy). Whether oneDNN 2.6 orders them in a way TSan
// cannot follow was not settled; taking turns removes the question and
// costs nothing measurable, since building happens only when our own
// cache misses. Executing cached calls still runs concurrently.
static const char* accel_cpu_onednn_build_one(const accel_cpu_onednn_t* d,
                                              const accel_cpu_matmul_t* mm,
                                              void* const ptr[3],
                                              accel_cpu_dnnl_call_t* c,
                                              accel_status_t* status) {
  pthread_mutex_lock(&d->cache->create);
  const char* failed = accel_cpu_onednn_build(d, mm, ptr, c, status);
  pthread_mutex_unlock(&d->cache->create);
  return failed;
}

static void accel_cpu_onednn_free_one(const accel_cpu_onednn_t* d,
                                      accel_cpu_dnnl_call_t* c) {
  pthread_mutex_lock(&d->cache->create);
  accel_cpu_onednn_call_free(d, c);
  pthread_mutex_unlock(&d->cache->create);
}

static void accel_cpu_onednn_key(const accel_cpu_matmul_t* mm,
                                 accel_cpu_dnnl_key_t* key) {
  memset(key, 0, sizeof(*key));
  key->ab_dtype = mm->ab_dtype, key->c_dtype = mm->c_dtype;
  key->m = mm->m, key->n = mm->n, key->k = mm->k;
  key->lda = mm->lda, key->ldb = mm->ldb, key->ldc = mm->ldc;
  memcpy(&key->alpha, &mm->alpha, sizeof(key->alpha));
  memcpy(&key->beta, &mm->beta, sizeof(key->beta));
  key->trans_a = mm->trans_a, key->trans_b = mm->trans_b;
}

static bool accel_cpu_onednn_key_eq(const accel_cpu_dnnl_key_t* x,
                                    const accel_cpu_dnnl_key_t* y) {
  return x->ab_dtype == y->ab_dtype && x->c_dtype == y->c_dtype &&
         x->m == y->m && x->n == y->n && x->k == y->k && x->lda == y->lda &&
         x->ldb == y->ldb && x->ldc == y->ldc && x->alpha == y->alpha &&
         x->beta == y->beta && x->trans_a == y->trans_a &&
         x->trans_b == y->trans_b;
}

// Moves the cached call of `key` into `out`, out of the cache; false when
// there is none (never built, evicted, or taken by a running call).
static bool accel_cpu_onednn_take(const accel_cpu_onednn_t* d,
                                  const accel_cpu_dnnl_key_t* key,
                                  accel_cpu_dnnl_call_t* out) {
  accel_cpu_dnnl_cache_t* cache = d->cache;
  bool found = false;
  pthread_mutex_lock(&cache->mutex);
  for (int i = 0; i < ACCEL_CPU_DNNL_CACHED && !found; i++) {
    accel_cpu_dnnl_entry_t* e = &cache->entries[i];
    if (e->valid && accel_cpu_onednn_key_eq(&e->key, key)) {
      *out = e->call;
      e->valid = false;
      found = true;
    }
  }
  pthread_mutex_unlock(&cache->mutex);
  return found;
}

// Gives `call`, built for `key` and just executed, to the cache: into a
// free entry, else in place of the least recently returned one (freed).
// When `key` is there already (a concurrent call of the same shape put
// its own back first), `call` is freed instead.
static void accel_cpu_onednn_put(const accel_cpu_onednn_t* d,
                                 const accel_cpu_dnnl_key_t* key,
                                 accel_cpu_dnnl_call_t* call) {
  accel_cpu_dnnl_cache_t* cache = d->cache;
  accel_cpu_dnnl_call_t drop = *call;
  accel_cpu_dnnl_entry_t* slot = NULL;
  pthread_mutex_lock(&cache->mutex);
  for (int i = 0; i < ACCEL_CPU_DNNL_CACHED; i++) {
    accel_cpu_dnnl_entry_t* e = &cache->entries[i];
    if (e->valid && accel_cpu_onednn_key_eq(&e->key, key)) {
      slot = NULL;
      break;
    }
    if (slot == NULL || (slot->valid && (!e->valid || e->used < slot->used))) {
      slot = e;
    }
  }
  if (slot != NULL) {
    drop = slot->valid ? slot->call : (accel_cpu_dnnl_call_t){0};
    slot->valid = true;
    slot->key = *key;
    slot->call = *call;
    slot->used = ++cache->clock;
  }
  pthread_mutex_unlock(&cache->mutex);
  accel_cpu_onednn_free_one(d, &drop);
}

// The pause of the OpenMP runtime whose team this thread last started
// and has not paused since (NULL: none). The runtime stays loaded
// (RTLD_NODELETE on oneDNN), so the pointer stays valid.
static _Thread_local int (*accel_cpu_omp_spinning)(int);

void accel_cpu_omp_quiet(void) {
  int (*pause)(int) = accel_cpu_omp_spinning;
  if (pause == NULL) return;
  accel_cpu_omp_spinning = NULL;
  (void)pause(1);  // omp_pause_soft: the threads end, state is kept
}

accel_status_t accel_cpu_onednn_gemm(const accel_cpu_onednn_t* d,
                                     const accel_cpu_matmul_t* mm,
                                     char* message, size_t size) {
  if (accel_cpu_onednn_dtype(mm->ab_dtype) == 0 ||
      accel_cpu_onednn_dtype(mm->c_dtype) == 0) {
    snprintf(message, size, "gemm: oneDNN has no dtype %u/%u",
             (unsigned)mm->ab_dtype, (unsigned)mm->c_dtype);
    return ACCEL_ERROR_UNSUPPORTED;
  }
  if (d->omp_set_num_threads != NULL) d->omp_set_num_threads(d->threads);
  accel_cpu_dnnl_key_t key;
  accel_cpu_onednn_key(mm, &key);
  void* const ptr[3] = {(void*)mm->a, (void*)mm->b, mm->c};
  accel_cpu_dnnl_call_t c = {0};
  accel_status_t status = ACCEL_ERROR_BACKEND;
  const char* failed = NULL;
  if (accel_cpu_onednn_take(d, &key, &c)) {
    for (int i = 0; failed == NULL && i < 3; i++) {
      if (d->memory_set_data_handle(c.mem[i], ptr[i]) != 0) {
        failed = "dnnl_memory_set_data_handle";
      }
    }
  } else {
    failed = accel_cpu_onednn_build_one(d, mm, ptr, &c, &status);
  }
  if (failed == NULL) {
    accel_dnnl_arg_t args[3] = {{ACCEL_DNNL_ARG_SRC, c.mem[0]},
                                {ACCEL_DNNL_ARG_WEIGHTS, c.mem[1]},
                                {ACCEL_DNNL_ARG_DST, c.mem[2]}};
    if (d->primitive_execute(c.primitive, c.stream, 3, args) != 0 ||
        d->stream_wait(c.stream) != 0) {
      failed = "dnnl_primitive_execute";
    }
  }
  // This thread's OpenMP team (if the call got as far as starting one)
  // may now spin: paused before other threaded work (accel_cpu_omp_quiet).
  if (d->omp_pause != NULL) accel_cpu_omp_spinning = d->omp_pause;
  if (failed == NULL) {
    accel_cpu_onednn_put(d, &key, &c);
    return ACCEL_OK;
  }
  accel_cpu_onednn_free_one(d, &c);  // a failed call is never cached
  snprintf(message, size, "gemm: oneDNN matmul %llux%llux%llu: %s failed",
           (unsigned long long)mm->m, (unsigned long long)mm->n,
           (unsigned long long)mm->k, failed);
  return status;
}

// Whether oneDNN multiplies `dtype` with an optimised kernel: its
// reference kernels run at a small fraction of a BLAS and never win.
static bool accel_cpu_onednn_probe(const accel_cpu_onednn_t* d,
                                   uint32_t dtype) {
  accel_cpu_matmul_t mm = {.ab_dtype = dtype, .c_dtype = dtype, .m = 64,
                           .n = 64, .k = 64, .alpha = 1.0f, .lda = 64,
                           .ldb = 64, .ldc = 64};
  _Alignas(64) unsigned char mds[3][ACCEL_DNNL_MD_BYTES];
  accel_cpu_dnnl_call_t c = {0};
  bool native = false;
  if (accel_cpu_onednn_describe(d, &mm, &mds, &c) == NULL) {
    const char* impl = NULL;
    if (d->primitive_desc_query(c.pd, ACCEL_DNNL_IMPL_INFO, 0, &impl) == 0 &&
        impl != NULL && strstr(impl, "ref") == NULL) {
      native = true;
    }
  }
  accel_cpu_onednn_call_free(d, &c);
  return native;
}

bool accel_cpu_onednn_native(const accel_cpu_onednn_t* d, uint32_t dtype) {
  if (dtype == ACCEL_DTYPE_F16) return d->native[1];
  if (dtype == ACCEL_DTYPE_BF16) return d->native[2];
  return dtype == ACCEL_DTYPE_F32;
}

const char* accel_cpu_onednn_description(const accel_cpu_onednn_t* d) {
  return d->description;
}

accel_cpu_onednn_t* accel_cpu_onednn_load(uint32_t width, bool pause_idle,
                                          char* tried, size_t tried_size) {
  const char* soname = "libdnnl.so.2";
  // RTLD_NODELETE: oneDNN keeps process-wide state (its primitive cache,
  // OpenMP runtime threads) and stays mapped after unload, like a BLAS
  // (blas.c); a later load reuses it.
  const int flags = RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE;
  const char* why = NULL;
  accel_cpu_onednn_t* d = calloc(1, sizeof(*d));
  if (d == NULL || (d->cache = calloc(1, sizeof(*d->cache))) == NULL) {
    why = "out of memory";
  } else if (pthread_mutex_init(&d->cache->mutex, NULL) != 0) {
    free(d->cache);
    d->cache = NULL;
    why = "pthread_mutex_init failed";
  } else if (pthread_mutex_init(&d->cache->create, NULL) != 0) {
    pthread_mutex_destroy(&d->cache->mutex);
    free(d->cache);
    d->cache = NULL;
    why = "pthread_mutex_init failed";
  } else if ((d->handle = dlopen(soname, flags)) == NULL) {
    why = dlerror();
  }
#define ACCEL_DNNL_RESOLVE(name, ret, args)                 \
  if (why == NULL) {                                        \
    void* sym_ = dlsym(d->handle, "dnnl_" #name);           \
    memcpy(&d->name, &sym_, sizeof(d->name));               \
    if (d->name == NULL) why = "no dnnl_" #name " (not 2.x)"; \
  }
  ACCEL_DNNL_FUNCTIONS(ACCEL_DNNL_RESOLVE)
#undef ACCEL_DNNL_RESOLVE
  if (why == NULL && d->engine_create(&d->engine, ACCEL_DNNL_CPU, 0) != 0) {
    d->engine = NULL;
    why = "dnnl_engine_create failed";
  }
  if (why != NULL) {
    size_t used = strlen(tried);
    snprintf(tried + used, tried_size - used, "%s%s (%.80s)", used ? "; " : "",
             soname, why);
    accel_cpu_onednn_destroy(d);
    return NULL;
  }
  void* sym = dlsym(d->handle, "omp_set_num_threads");
  memcpy(&d->omp_set_num_threads, &sym, sizeof(d->omp_set_num_threads));
  sym = pause_idle && d->omp_set_num_threads != NULL
            ? dlsym(d->handle, "omp_pause_resource_all")
            : NULL;
  memcpy(&d->omp_pause, &sym, sizeof(d->omp_pause));
  d->threads = (int)width;
  const accel_dnnl_version_t* v = d->version();
  snprintf(d->description, sizeof(d->description), "onednn-%d.%d.%d:%s",
           v->major, v->minor, v->patch,
           d->omp_set_num_threads != NULL ? "omp" : "threads");
  d->native[1] = accel_cpu_onednn_probe(d, ACCEL_DTYPE_F16);
  d->native[2] = accel_cpu_onednn_probe(d, ACCEL_DTYPE_BF16);
  return d;
}

void accel_cpu_onednn_destroy(accel_cpu_onednn_t* d) {
  if (d == NULL) return;
  if (d->cache != NULL) {  // entries exist only once oneDNN is resolved
    for (int i = 0; i < ACCEL_CPU_DNNL_CACHED; i++) {
      accel_cpu_dnnl_entry_t* e = &d->cache->entries[i];
      if (e->valid) accel_cpu_onednn_call_free(d, &e->call);
    }
    pthread_mutex_destroy(&d->cache->mutex);
    pthread_mutex_destroy(&d->cache->create);
    free(d->cache);
  }
  if (d->engine != NULL) d->engine_destroy(d->engine);
  if (d->handle != NULL) dlclose(d->handle);
  free(d);
}
