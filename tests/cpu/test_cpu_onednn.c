// SPDX-License-Identifier: MIT
//
// The oneDNN engine's primitive cache (plugins/cpu/onednn.c), through the
// public API with the engine forced (ACCEL_CPU_GEMM=onednn). Every product
// is checked whole against a reference loop, padding columns of C
// included; the operands are small multiples of 1/8, so every sum is
// exact in f32 and the results must match exactly:
// - the same shape again on other buffers and offsets: a cached primitive
//   must compute on the new pointers;
// - one shape with another alpha, beta, transpose or leading dimension,
//   interleaved: each is a key of its own;
// - more shapes than the cache holds, cycled and mixed with a hot one:
//   evictions;
// - four threads, each with a stream of its own, on one shape at once: an
//   entry serves one call at a time;
// - oneDNN's OpenMP threads, left spinning by a matmul, end before the
//   same stream's next pool work (kept when the user set
//   OMP_WAIT_POLICY).
// f32 throughout, and bf16 with an f32 C where noted: oneDNN's own bf16
// primitive where it has a native kernel (AVX-512 BF16, AMX), else bf16
// converted to f32 and its f32 primitive (then the bf16 parts add little).
// Exits 77 when oneDNN (libdnnl.so.2) cannot be loaded.
#include <accel/accel.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cpu_test.h"
#include "test.h"

// One product C = alpha * op(A) op(B) + beta * C, row-major.
typedef struct gemm_case {
  accel_dtype_t dtype;  // of A and B; C is f32
  size_t m, n, k;
  bool ta, tb;
  size_t lda, ldb, ldc;  // 0: packed
  double alpha, beta;
} gemm_case_t;

// The buffers one product runs on, at a byte offset into each.
typedef struct gemm_bufs {
  accel_buffer_t *a, *b, *c;
  size_t offset;
} gemm_bufs_t;

#define BUF_BYTES ((size_t)1 << 20)

static void case_fill_lds(gemm_case_t* g) {
  size_t ac = g->ta ? g->m : g->k, bc = g->tb ? g->k : g->n;
  if (g->lda < ac) g->lda = ac;
  if (g->ldb < bc) g->ldb = bc;
  if (g->ldc < g->n) g->ldc = g->n;
}

// A value in {-1, -7/8, ..., 1}.
static float eighth(uint32_t* seed) {
  *seed = *seed * 1664525u + 1013904223u;
  return (float)((int)(*seed >> 16) % 17 - 8) / 8.0f;
}

// Writes `count` floats to `buf` at `offset` as `dtype` (f32 or bf16;
// the values are exact in both).
static accel_status_t put(accel_buffer_t* buf, size_t offset,
                          accel_dtype_t dtype, const float* v, size_t count) {
  if (dtype == ACCEL_DTYPE_F32) {
    return accel_buffer_write(buf, offset, v, count * 4);
  }
  uint16_t* h = malloc(count * 2);
  if (h == NULL) return ACCEL_ERROR_OUT_OF_MEMORY;
  for (size_t i = 0; i < count; i++) {
    uint32_t u;
    memcpy(&u, &v[i], 4);
    h[i] = (uint16_t)(u >> 16);
  }
  accel_status_t s = accel_buffer_write(buf, offset, h, count * 2);
  free(h);
  return s;
}

// One product in flight: its case (leading dimensions filled in), where
// it runs, and the host copies of its operands.
typedef struct product {
  gemm_case_t g;
  gemm_bufs_t bufs;
  float *a, *b, *c0;
} product_t;

static void product_free(product_t* p) {
  free(p->c0);
  free(p->b);
  free(p->a);
  p->a = p->b = p->c0 = NULL;
}

// Writes operands made from `seed` to `bufs` and enqueues `g` on `stream`.
// product_finish() frees `p` whatever this returns.
static accel_status_t product_start(accel_stream_t* stream, gemm_case_t g,
                                    const gemm_bufs_t* bufs, uint32_t seed,
                                    product_t* p) {
  case_fill_lds(&g);
  p->g = g, p->bufs = *bufs;
  size_t ar = g.ta ? g.k : g.m, br = g.tb ? g.n : g.k;
  size_t na = ar * g.lda, nb = br * g.ldb, nc = g.m * g.ldc;
  p->a = malloc(na * 4);
  p->b = malloc(nb * 4);
  p->c0 = malloc(nc * 4);
  if (p->a == NULL || p->b == NULL || p->c0 == NULL) {
    return ACCEL_ERROR_OUT_OF_MEMORY;
  }
  for (size_t i = 0; i < na; i++) p->a[i] = eighth(&seed);
  for (size_t i = 0; i < nb; i++) p->b[i] = eighth(&seed);
  for (size_t i = 0; i < nc; i++) {  // beta 0 ignores NaN
    p->c0[i] = g.beta == 0 && i % g.ldc < g.n ? NAN : eighth(&seed);
  }
  accel_status_t s = put(bufs->a, bufs->offset, g.dtype, p->a, na);
  if (s == ACCEL_OK) s = put(bufs->b, bufs->offset, g.dtype, p->b, nb);
  if (s == ACCEL_OK) {
    s = put(bufs->c, bufs->offset, ACCEL_DTYPE_F32, p->c0, nc);
  }
  accel_gemm_t desc;
  accel_gemm_init(&desc);
  desc.a_dtype = desc.b_dtype = g.dtype, desc.c_dtype = ACCEL_DTYPE_F32;
  desc.trans_a = g.ta, desc.trans_b = g.tb;
  desc.m = g.m, desc.n = g.n, desc.k = g.k;
  desc.alpha = g.alpha, desc.beta = g.beta;
  desc.a = bufs->a, desc.lda = g.lda, desc.a_offset = bufs->offset;
  desc.b = bufs->b, desc.ldb = g.ldb, desc.b_offset = bufs->offset;
  desc.c = bufs->c, desc.ldc = g.ldc, desc.c_offset = bufs->offset;
  if (s == ACCEL_OK) s = accel_op_gemm(stream, &desc);
  return s;
}

// After the stream has run `p`: compares all of C with the reference and
// frees `p`. ACCEL_OK with `*out_ok` false, and the first difference in
// `why`, when they differ.
static accel_status_t product_finish(product_t* p, bool* out_ok, char* why,
                                     size_t why_size) {
  const gemm_case_t g = p->g;
  *out_ok = false;
  size_t nc = g.m * g.ldc;
  float* c = malloc(nc * 4);
  accel_status_t s = ACCEL_ERROR_OUT_OF_MEMORY;
  if (c != NULL) s = accel_buffer_read(p->bufs.c, p->bufs.offset, c, nc * 4);
  *out_ok = s == ACCEL_OK;
  for (size_t i = 0; i < g.m && *out_ok; i++) {
    for (size_t j = 0; j < g.ldc && *out_ok; j++) {
      double want = p->c0[i * g.ldc + j];  // padding columns stay as they were
      if (j < g.n) {
        double sum = 0;
        for (size_t q = 0; q < g.k; q++) {
          sum += (double)(g.ta ? p->a[q * g.lda + i] : p->a[i * g.lda + q]) *
                 (g.tb ? p->b[j * g.ldb + q] : p->b[q * g.ldb + j]);
        }
        want = g.alpha * sum + (g.beta == 0 ? 0.0 : g.beta * want);
      }
      if (!((double)c[i * g.ldc + j] == want)) {
        snprintf(why, why_size,
                 "%s %zux%zux%zu ta=%d tb=%d ld=%zu,%zu,%zu alpha=%g "
                 "beta=%g offset=%zu: C[%zu][%zu] = %g, want %g",
                 accel_dtype_name(g.dtype), g.m, g.n, g.k, g.ta, g.tb, g.lda,
                 g.ldb, g.ldc, g.alpha, g.beta, p->bufs.offset, i, j,
                 c[i * g.ldc + j], want);
        *out_ok = false;
      }
    }
  }
  free(c);
  product_free(p);
  return s;
}

// Runs `g` on `bufs` with data from `seed` and checks it (product_finish).
static accel_status_t run_check(accel_stream_t* stream, gemm_case_t g,
                                const gemm_bufs_t* bufs, uint32_t seed,
                                bool* out_ok, char* why, size_t why_size) {
  product_t p = {0};
  *out_ok = false;
  accel_status_t s = product_start(stream, g, bufs, seed, &p);
  if (s == ACCEL_OK) s = accel_stream_synchronize(stream);
  if (s != ACCEL_OK) {
    product_free(&p);
    return s;
  }
  return product_finish(&p, out_ok, why, why_size);
}

static accel_status_t bufs_create(accel_device_t* device, gemm_bufs_t* b) {
  memset(b, 0, sizeof(*b));
  accel_status_t s = accel_buffer_create(device, BUF_BYTES, &b->a);
  if (s == ACCEL_OK) s = accel_buffer_create(device, BUF_BYTES, &b->b);
  if (s == ACCEL_OK) s = accel_buffer_create(device, BUF_BYTES, &b->c);
  return s;
}

static void bufs_release(gemm_bufs_t* b) {
  accel_buffer_release(b->c);
  accel_buffer_release(b->b);
  accel_buffer_release(b->a);
}

typedef struct ctx {
  accel_device_t* device;
  accel_stream_t* stream;
  gemm_bufs_t bufs;
} ctx_t;

// Opens cpu:0 with a stream and buffers. Sets `skip` to the reason when
// GEMM does not run on oneDNN (not forced, or libdnnl.so.2 missing).
static accel_status_t ctx_open(ctx_t* c, char* skip, size_t skip_size) {
  memset(c, 0, sizeof(*c));
  accel_status_t s = accel_device_open("cpu:0", &c->device);
  if (s == ACCEL_OK) s = accel_stream_create(c->device, 0, &c->stream);
  if (s == ACCEL_OK) s = bufs_create(c->device, &c->bufs);
  if (s != ACCEL_OK) return s;
  accel_device_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  s = accel_device_query_info(c->device, &info);
  if (s != ACCEL_OK) return s;
  if (strstr(info.features, "gemm-f32=onednn") == NULL) {
    snprintf(skip, skip_size, "GEMM engine is not oneDNN: %s", info.features);
    return ACCEL_OK;
  }
  // The first GEMM loads the engine; its result is checked by the tests.
  gemm_case_t g = {ACCEL_DTYPE_F32, 3, 2, 2, false, false, 0, 0, 0, 1, 0};
  bool ok;
  char why[512];
  s = run_check(c->stream, g, &c->bufs, 1, &ok, why, sizeof(why));
  if (s == ACCEL_ERROR_UNSUPPORTED) {
    snprintf(skip, skip_size, "%s", accel_last_error());
    return ACCEL_OK;
  }
  return s;
}

static void ctx_close(ctx_t* c) {
  bufs_release(&c->bufs);
  accel_stream_release(c->stream);
  accel_device_release(c->device);
}

#define CTX_OPEN(c)                                  \
  do {                                               \
    char skip_[512] = "";                            \
    ASSERT_OK(ctx_open(&(c), skip_, sizeof(skip_))); \
    if (skip_[0] != '\0') {                          \
      ctx_close(&(c));                               \
      SKIP("%s", skip_);                             \
    }                                                \
  } while (0)

#define CHECK(stream, g, bufs, seed)                                         \
  do {                                                                       \
    bool ok_;                                                                \
    char why_[512] = "";                                                     \
    ASSERT_OK(                                                               \
        run_check((stream), (g), (bufs), (seed), &ok_, why_, sizeof(why_))); \
    if (!ok_) TEST_FAIL_AT_("%s", why_);                                     \
  } while (0)

TEST(same_shape_new_pointers) {
  ctx_t c;
  CTX_OPEN(c);
  gemm_bufs_t other[2];
  ASSERT_OK(bufs_create(c.device, &other[0]));
  ASSERT_OK(bufs_create(c.device, &other[1]));
  static const accel_dtype_t dtypes[] = {ACCEL_DTYPE_F32, ACCEL_DTYPE_BF16};
  for (int d = 0; d < 2; d++) {
    gemm_case_t g = {dtypes[d], 37, 29, 23, false, false, 0, 0, 0, 1.25, 0.5};
    for (uint32_t r = 0; r < 9; r++) {
      gemm_bufs_t bufs = r % 3 == 0 ? c.bufs : other[r % 3 - 1];
      bufs.offset = (r / 3) * 4096 + (r % 2) * 64;
      CHECK(c.stream, g, &bufs, 100 + r);
    }
  }
  bufs_release(&other[1]);
  bufs_release(&other[0]);
  ctx_close(&c);
}

TEST(each_parameter_is_a_key) {
  ctx_t c;
  CTX_OPEN(c);
  const gemm_case_t base = {
      ACCEL_DTYPE_F32, 24, 20, 16, false, false, 0, 0, 0, 1.0, 0.0};
  gemm_case_t v[12];
  for (int i = 0; i < 12; i++) v[i] = base;
  v[1].alpha = 1.25;
  v[2].beta = 1.0;
  v[3].beta = 0.5;
  v[4].alpha = 0.5, v[4].beta = 0.5;
  v[5].ta = true;
  v[6].tb = true;
  v[7].ta = v[7].tb = true;
  v[8].lda = 19;
  v[9].ldb = 23;
  v[10].ldc = 27;
  v[11].dtype = ACCEL_DTYPE_BF16;
  // Twice in order (then every one is cached), then in reverse.
  for (uint32_t r = 0; r < 36; r++) {
    uint32_t i = r < 24 ? r % 12 : 35 - r;
    CHECK(c.stream, v[i], &c.bufs, 200 + r);
  }
  ctx_close(&c);
}

TEST(more_shapes_than_cached) {
  ctx_t c;
  CTX_OPEN(c);
  enum { kShapes = 40 };  // the cache holds 16
  uint32_t seed = 300;
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < kShapes; i++) {
      gemm_case_t g = {.dtype = ACCEL_DTYPE_F32,
                       .m = 8 + i,
                       .n = 12 + (i * 7) % 13,
                       .k = 5 + (i * 3) % 11,
                       .tb = (i & 1) != 0,
                       .alpha = 1.0,
                       .beta = pass ? 0.5 : 0.0};
      CHECK(c.stream, g, &c.bufs, seed++);
      // A shape that recurs between the others: hits among evictions.
      gemm_case_t hot = {
          ACCEL_DTYPE_F32, 33, 31, 29, false, false, 0, 0, 0, 1.0, 0.0};
      if (i % 3 == 0) CHECK(c.stream, hot, &c.bufs, seed++);
    }
  }
  ctx_close(&c);
}

// One thread's share of concurrent_streams_one_shape.
typedef struct worker {
  accel_device_t* device;
  accel_dtype_t dtype;
  uint32_t index;
  accel_status_t status;
  bool ok;
  char why[512];
} worker_t;

static void* worker_main(void* arg) {
  worker_t* w = arg;
  accel_stream_t* stream = NULL;
  gemm_bufs_t bufs = {0};
  w->ok = true;
  w->status = accel_stream_create(w->device, 0, &stream);
  if (w->status == ACCEL_OK) w->status = bufs_create(w->device, &bufs);
  gemm_case_t g = {w->dtype, 96, 80, 64, false, true, 0, 0, 0, 1.25, 0.5};
  // Rounds of kQueued products queued back to back, so that the stream
  // workers run their GEMMs at the same time as the other threads'.
  enum { kRounds = 16, kQueued = 6 };
  for (uint32_t r = 0; r < kRounds && w->status == ACCEL_OK && w->ok; r++) {
    product_t p[kQueued] = {0};
    for (uint32_t i = 0; i < kQueued && w->status == ACCEL_OK; i++) {
      bufs.offset = i * 32768;
      w->status =
          product_start(stream, g, &bufs, 1000 * w->index + 10 * r + i, &p[i]);
    }
    if (w->status == ACCEL_OK) w->status = accel_stream_synchronize(stream);
    for (uint32_t i = 0; i < kQueued; i++) {
      if (w->status != ACCEL_OK || !w->ok) {
        product_free(&p[i]);
        continue;
      }
      w->status = product_finish(&p[i], &w->ok, w->why, sizeof(w->why));
    }
  }
  if (w->status != ACCEL_OK) {
    snprintf(w->why, sizeof(w->why), "%s: %s", accel_status_string(w->status),
             accel_last_error());
  }
  bufs_release(&bufs);
  accel_stream_release(stream);
  return NULL;
}

TEST(concurrent_streams_one_shape) {
  ctx_t c;
  CTX_OPEN(c);
  static const accel_dtype_t dtypes[] = {ACCEL_DTYPE_F32, ACCEL_DTYPE_BF16};
  for (int d = 0; d < 2; d++) {
    enum { kThreads = 4 };
    worker_t w[kThreads];
    pthread_t t[kThreads];
    for (uint32_t i = 0; i < kThreads; i++) {
      memset(&w[i], 0, sizeof(w[i]));
      w[i].device = c.device, w[i].dtype = dtypes[d], w[i].index = i;
      ASSERT_EQ(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
    }
    for (uint32_t i = 0; i < kThreads; i++) pthread_join(t[i], NULL);
    for (uint32_t i = 0; i < kThreads; i++) {
      if (w[i].status != ACCEL_OK || !w[i].ok) {
        TEST_FAIL_AT_("thread %u: %s", i, w[i].why);
      }
    }
  }
  ctx_close(&c);
}

// Waits up to a second for the thread count to become `want` (a thread
// leaves /proc/self/task a moment after it exits); returns the last count.
static int thread_count_settles(int want) {
  int n = cpu_test_threads();
  for (int i = 0; i < 1000 && n != want; i++) {
    nanosleep(&(struct timespec){0, 1000000}, NULL);
    n = cpu_test_threads();
  }
  return n;
}

// A GEMM, then a fill the pool splits (32 MiB, so queued to the stream
// worker, the thread that ran the matmul), each synchronized.
static accel_status_t matmul_then_fill(ctx_t* c, accel_buffer_t* big,
                                       int* after_matmul, int* after_fill) {
  gemm_case_t g = {ACCEL_DTYPE_F32, 256, 256, 256, false, false, 0, 0, 0, 1, 0};
  bool ok;
  char why[512];
  accel_status_t s =
      run_check(c->stream, g, &c->bufs, 7, &ok, why, sizeof(why));
  if (s == ACCEL_OK && !ok) s = ACCEL_ERROR_BACKEND;
  *after_matmul = cpu_test_threads();
  if (s == ACCEL_OK) {
    s = accel_op_fill(c->stream, big, 0, ACCEL_DTYPE_F32, 8u << 20, 1.0);
  }
  if (s == ACCEL_OK) s = accel_stream_synchronize(c->stream);
  *after_fill = cpu_test_threads();
  return s;
}

// After a matmul, oneDNN's OpenMP threads spin before they sleep; the
// plugin ends them before the same thread starts pool work, so that they
// do not take CPUs from the pool's threads. Unless the user chose how
// OpenMP's idle threads behave (CTest's cpu_onednn_omp_policy sets
// OMP_WAIT_POLICY and CPU_TEST_OMP_KEPT): then the team stays.
TEST(openmp_threads_end_before_pool_work) {
  const char* width = getenv("ACCEL_CPU_THREADS");
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2 || (width && atoi(width) == 1)) {
    SKIP("one CPU thread: oneDNN starts no OpenMP thread of its own");
  }
  ctx_t c;
  CTX_OPEN(c);
  accel_buffer_t* big = NULL;
  ASSERT_OK(accel_buffer_create(c.device, (size_t)32 << 20, &big));
  int matmul, fill;
  for (int round = 0; round < 2; round++) {  // the first starts the pool
    ASSERT_OK(matmul_then_fill(&c, big, &matmul, &fill));
  }
  if (matmul == 0) {  // /proc/self/task unreadable
    accel_buffer_release(big);
    ctx_close(&c);
    SKIP("cannot count this process's threads");
  }
  // A thread leaves /proc/self/task a moment after it ends.
  int settled = thread_count_settles(matmul - 1);
  printf("  threads: %d after the matmul, %d after the fill (%d settled)\n",
         matmul, fill, settled);
  if (getenv("CPU_TEST_OMP_KEPT") != NULL) {
    ASSERT_EQ(settled, matmul);  // the user's policy: the team stays
  } else {
    ASSERT(settled > 0 && settled < matmul);
  }
  accel_buffer_release(big);
  ctx_close(&c);
}

#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TEST_TSAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define TEST_TSAN 1
#endif

int main(int argc, char** argv) {
  setenv("ACCEL_CPU_GEMM", "onednn", 0);  // CTest sets it too
#if defined(TEST_TSAN)
  // oneDNN on one OpenMP thread: with two, ThreadSanitizer reports races
  // in glibc's dynamic TLS (malloc in __tls_get_addr by a libgomp thread,
  // free in _dl_deallocate_tls by another at its exit), whose ordering is
  // libgomp's own, uninstrumented; the same with the uncached engine. The
  // cache's locking is between stream workers and stays checked.
  setenv("ACCEL_CPU_THREADS", "1", 0);
#endif
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
