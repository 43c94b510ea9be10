// SPDX-License-Identifier: MIT
//
// The BLAS workspace lent by the core (plugin ABI 1.2) on a GPU stand-in
// (cuda_fake_workspace* with libfakecublas, rocm_fake_workspace* with
// libfakehip's rocBLAS; the adapter is stand_in.h): a GEMM's workspace is
// a block of the core's caching allocator on the GEMM's stream, so it
// shows in the memory statistics, is reused by the stream's next GEMM, is
// not taken by another stream, goes with empty-cache and reaches the BLAS
// (the stand-in's last-workspace record); k == 0 asks for none; an
// out-of-memory says it was the GEMM's workspace; a strided-batched GEMM
// is one BLAS call with one workspace. Without a BLAS (ROCm's
// ACCEL_ROCM_BLAS=none) the plugin's tiled kernel runs and nothing is lent;
// with a workspace the BLAS finds too small (FAKEHIP_ROCBLAS_NEED) the
// plugin hands it back to BLAS-managed memory. The CUDA plugin is also
// driven directly, as a core of ABI 1.1 would (a 144-byte GEMM struct, no
// workspace): it then allocates its own. Tests that need a setting skip
// without it (or where the stand-in has no such knob); the backends'
// CMakeLists.txt run each with it.
#include <accel/accel.h>
#include <accel/plugin.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "stand_in/stand_in.h"
#include "test.h"
#include "test_gemm_workspace.h"
#include "test_host.h"

// The stand-in into `fake` and its BLAS's record into `last`, from the
// library `blas_env` names (the one the plugin loads, so the same object;
// the test dlclose()s `lib`), or skips.
#define OPEN_BLAS(fake, last, lib)                                        \
  do {                                                                    \
    (fake) = stand_in_open();                                             \
    if ((fake) == NULL) {                                                 \
      SKIP("%s does not name the stand-in", stand_in_backend.driver_env); \
    }                                                                     \
    (last) = last_workspace_from((fake)->blas_env,                        \
                                 (fake)->last_workspace_symbol, &(lib));  \
    ASSERT_NOT_NULL(last);                                                \
  } while (0)

// The device memory cap the stand-in runs with (its `memory_env`), or 0.
static uint64_t memory_cap(const stand_in_t* fake) {
  const char* v = fake->memory_env != NULL ? getenv(fake->memory_env) : NULL;
  return v != NULL ? strtoull(v, NULL, 10) : 0;
}

// Free device memory as the driver counts it.
static uint64_t driver_free(accel_device_t* device) {
  accel_device_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  return accel_device_query_info(device, &info) == ACCEL_OK ? info.free_memory
                                                            : 0;
}

static accel_status_t setup(const stand_in_t* fake, accel_device_t** device,
                            accel_buffer_t** ab, accel_buffer_t** c,
                            size_t c_size) {
  accel_status_t st = accel_device_open(stand_in_uri(fake, 0), device);
  if (!st) st = accel_buffer_create(*device, 64, ab);
  if (!st) st = accel_buffer_write(*ab, 0, kAB, sizeof(kAB));
  if (!st) st = accel_buffer_create(*device, c_size, c);
  if (!st) st = accel_buffer_fill(*c, 0, 0, c_size);
  if (st) printf("  %s: %s\n", stand_in_uri(fake, 0), accel_last_error());
  return st;
}

TEST(gemm_workspace_from_core) {
  const stand_in_t* fake = NULL;
  last_workspace_fn_t last = NULL;
  void* lib = NULL;
  OPEN_BLAS(fake, last, lib);
  if (memory_cap(fake) != 0) SKIP("%s is set", fake->memory_env);
  if (!fake->blas_on()) SKIP("GEMMs do not go to the BLAS");
  uint64_t ws = fake->expected_workspace();
  accel_device_t* device = NULL;
  accel_buffer_t *ab = NULL, *c = NULL;
  ASSERT_OK(setup(fake, &device, &ab, &c, 64));
  accel_stream_t *s1 = NULL, *s2 = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &s1));
  ASSERT_OK(accel_stream_create(device, 0, &s2));
  accel_memory_stats_t m0 = stats_of(device);
  uint64_t free0 = driver_free(device);
  unsigned long gemms0 = 0;
  last(NULL, NULL, &gemms0);

  // The first GEMM on s1: a new segment of exactly the workspace, handed
  // back (no longer allocated) but cached, and given to the BLAS.
  accel_gemm_t g = small_gemm(ab, c, 0, 3);
  ASSERT_OK(accel_op_gemm(s1, &g));
  accel_memory_stats_t m1 = stats_of(device);
  uintptr_t ptr1 = 0, ptr = 0;
  size_t size = 0;
  unsigned long gemms = 0;
  last(&ptr1, &size, &gemms);
  ASSERT_EQ(gemms, gemms0 + 1);
  ASSERT_EQ(size, ws);
  ASSERT_NE(ptr1, 0);
  ASSERT_EQ(ptr1 % 256, 0);
  ASSERT_EQ(m1.reserved_bytes, m0.reserved_bytes + ws);
  ASSERT_EQ(m1.raw_allocs, m0.raw_allocs + 1);
  ASSERT_EQ(m1.cache_misses, m0.cache_misses + 1);
  ASSERT_EQ(m1.allocated_bytes, m0.allocated_bytes);
  ASSERT_EQ(m1.active_blocks, m0.active_blocks);
  ASSERT_GE(m1.allocated_bytes_peak, m0.allocated_bytes + ws);
  // The device memory the BLAS got is that segment: the plugin allocated
  // nothing of its own (it does only for a core that lends none).
  ASSERT_EQ(free0 - driver_free(device), ws);

  // The next GEMM on s1, before s1 has run the first: a cache hit on the
  // same block (stream order makes that safe), no new segment.
  g = small_gemm(ab, c, 16, 3);
  ASSERT_OK(accel_op_gemm(s1, &g));
  accel_memory_stats_t m2 = stats_of(device);
  last(&ptr, &size, &gemms);
  ASSERT_EQ(gemms, gemms0 + 2);
  ASSERT_EQ(ptr, ptr1);
  ASSERT_EQ(size, ws);
  ASSERT_EQ(m2.cache_hits, m1.cache_hits + 1);
  ASSERT_EQ(m2.cache_misses, m1.cache_misses);
  ASSERT_EQ(m2.raw_allocs, m1.raw_allocs);
  ASSERT_EQ(m2.reserved_bytes, m1.reserved_bytes);

  // Another stream must not take s1's block while s1 may still use it.
  g = small_gemm(ab, c, 32, 3);
  ASSERT_OK(accel_op_gemm(s2, &g));
  accel_memory_stats_t m3 = stats_of(device);
  last(&ptr, &size, &gemms);
  ASSERT_EQ(gemms, gemms0 + 3);
  ASSERT_NE(ptr, ptr1);
  ASSERT_EQ(m3.raw_allocs, m2.raw_allocs + 1);
  ASSERT_EQ(m3.reserved_bytes, m2.reserved_bytes + ws);

  // k == 0 is the plugin's scale kernel (C = beta C): no BLAS, no
  // workspace.
  g = small_gemm(ab, c, 48, 0);
  ASSERT_OK(accel_op_gemm(s2, &g));
  accel_memory_stats_t m4 = stats_of(device);
  last(NULL, NULL, &gemms);
  ASSERT_EQ(gemms, gemms0 + 3);
  ASSERT_EQ(m4.cache_hits, m3.cache_hits);
  ASSERT_EQ(m4.cache_misses, m3.cache_misses);

  ASSERT_OK(accel_stream_synchronize(s1));
  ASSERT_OK(accel_stream_synchronize(s2));
  ASSERT(product_at(c, 0));
  ASSERT(product_at(c, 16));
  ASSERT(product_at(c, 32));
  // The workspaces are the core's cache: empty-cache gives both back.
  accel_stream_release(s1);
  accel_stream_release(s2);
  ASSERT_OK(accel_device_empty_cache(device));
  accel_memory_stats_t m5 = stats_of(device);
  ASSERT_EQ(m5.reserved_bytes, m0.reserved_bytes);
  ASSERT_EQ(m5.raw_frees, m0.raw_frees + 2);
  accel_buffer_release(c);
  accel_buffer_release(ab);
  accel_device_release(device);
  dlclose(lib);
}

// Threads enqueueing GEMMs on one stream at once: the plugin must not let
// one thread's set-workspace land between another's and its GEMM (TSan
// saw libfakecublas's handle fields raced otherwise: 200 GEMMs a thread
// made it report every time when the CUDA plugin's lock was left out), and
// each result must be right.
#define THREADS 4
#define GEMMS_PER_THREAD 200

typedef struct worker {
  accel_stream_t* stream;
  accel_buffer_t* ab;
  accel_buffer_t* c;
  size_t c_offset;
  accel_status_t status;
} worker_t;

static void* worker_run(void* arg) {
  worker_t* w = arg;
  for (int i = 0; i < GEMMS_PER_THREAD && w->status == ACCEL_OK; i++) {
    accel_gemm_t g = small_gemm(w->ab, w->c, w->c_offset, 3);
    w->status = accel_op_gemm(w->stream, &g);
  }
  return NULL;
}

TEST(gemm_workspace_threads_one_stream) {
  const stand_in_t* fake = NULL;
  last_workspace_fn_t last = NULL;
  void* lib = NULL;
  OPEN_BLAS(fake, last, lib);
  if (memory_cap(fake) != 0) SKIP("%s is set", fake->memory_env);
  if (!fake->blas_on()) SKIP("GEMMs do not go to the BLAS");
  accel_device_t* device = NULL;
  accel_buffer_t *ab = NULL, *c = NULL;
  ASSERT_OK(setup(fake, &device, &ab, &c, 16 * THREADS));
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &stream));
  accel_memory_stats_t m0 = stats_of(device);
  worker_t workers[THREADS];
  pthread_t threads[THREADS];
  for (int t = 0; t < THREADS; t++) {
    workers[t] = (worker_t){stream, ab, c, 16 * (size_t)t, ACCEL_OK};
    ASSERT_EQ(pthread_create(&threads[t], NULL, worker_run, &workers[t]), 0);
  }
  for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
  for (int t = 0; t < THREADS; t++) ASSERT_OK(workers[t].status);
  ASSERT_OK(accel_stream_synchronize(stream));
  for (int t = 0; t < THREADS; t++) ASSERT(product_at(c, 16 * (size_t)t));
  // At most one workspace per thread in flight at once, all cached.
  accel_memory_stats_t m1 = stats_of(device);
  ASSERT_GT(m1.reserved_bytes, m0.reserved_bytes);
  ASSERT_LE(m1.reserved_bytes,
            m0.reserved_bytes + THREADS * fake->expected_workspace());
  ASSERT_EQ(m1.allocated_bytes, m0.allocated_bytes);
  accel_stream_release(stream);
  accel_buffer_release(c);
  accel_buffer_release(ab);
  accel_device_release(device);
  dlclose(lib);
}

// A device of 16 MiB (FAKECUDA_MEMORY=16777216): the 32 MiB workspace can
// never fit. The GEMM fails before anything is enqueued, and the message
// says what for.
TEST(gemm_workspace_oom) {
  const stand_in_t* fake = NULL;
  last_workspace_fn_t last = NULL;
  void* lib = NULL;
  OPEN_BLAS(fake, last, lib);
  if (memory_cap(fake) != 16 * MIB) SKIP("needs a 16 MiB device");
  accel_device_t* device = NULL;
  accel_buffer_t *ab = NULL, *c = NULL;
  ASSERT_OK(setup(fake, &device, &ab, &c, 64));
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &stream));
  accel_memory_stats_t m0 = stats_of(device);
  unsigned long gemms0 = 0, gemms = 0;
  last(NULL, NULL, &gemms0);
  accel_gemm_t g = small_gemm(ab, c, 0, 3);
  ASSERT_EQ(accel_op_gemm(stream, &g), ACCEL_ERROR_OUT_OF_DEVICE_MEMORY);
  printf("  %s\n", accel_last_error());
  ASSERT_STR_CONTAINS(accel_last_error(),
                      "accel_op_gemm: the GEMM workspace of 33554432 bytes "
                      "(32.00 MiB)");
  // The plugin reports the whole memory as the largest allocation (ABI
  // 1.3 max_alloc_size), so the core refuses without trying.
  ASSERT_STR_CONTAINS(accel_last_error(),
                      "the device's largest single allocation is 16.00 MiB");
  accel_memory_stats_t m1 = stats_of(device);
  ASSERT_EQ(m1.reserved_bytes, m0.reserved_bytes);
  last(NULL, NULL, &gemms);
  ASSERT_EQ(gemms, gemms0);  // the BLAS never saw it
  // Nothing else is harmed: k == 0 needs no workspace.
  g = small_gemm(ab, c, 0, 0);
  ASSERT_OK(accel_op_gemm(stream, &g));
  ASSERT_OK(accel_stream_synchronize(stream));
  accel_stream_release(stream);
  accel_buffer_release(c);
  accel_buffer_release(ab);
  accel_device_release(device);
  dlclose(lib);
}

// A device of 48 MiB (FAKECUDA_MEMORY=50331648): the workspace fits only
// once the cache is emptied (the allocator's OOM retry does it), and not
// at all while a live 24 MiB buffer holds the memory.
TEST(gemm_workspace_oom_retry) {
  const stand_in_t* fake = NULL;
  last_workspace_fn_t last = NULL;
  void* lib = NULL;
  OPEN_BLAS(fake, last, lib);
  if (memory_cap(fake) != 48 * MIB) SKIP("needs a 48 MiB device");
  accel_device_t* device = NULL;
  accel_buffer_t *ab = NULL, *c = NULL, *big = NULL;
  ASSERT_OK(setup(fake, &device, &ab, &c, 64));  // one 2 MiB small segment
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &stream));
  // A freed 24 MiB buffer stays cached: 2 + 24 + 32 MiB do not fit.
  ASSERT_OK(accel_buffer_create(device, 24 * MIB, &big));
  accel_buffer_release(big);
  accel_memory_stats_t m0 = stats_of(device);
  ASSERT_EQ(m0.reserved_bytes, 26 * MIB);
  accel_gemm_t g = small_gemm(ab, c, 0, 3);
  ASSERT_OK(accel_op_gemm(stream, &g));
  accel_memory_stats_t m1 = stats_of(device);
  ASSERT_EQ(m1.oom_retries, m0.oom_retries + 1);
  ASSERT_EQ(m1.ooms, m0.ooms);
  ASSERT_EQ(m1.reserved_bytes, 34 * MIB);
  ASSERT_OK(accel_stream_synchronize(stream));
  ASSERT(product_at(c, 0));
  // A live 24 MiB buffer: its allocation empties the (idle) stream's
  // cached workspace; then the workspace cannot fit, even after a retry.
  ASSERT_OK(accel_buffer_create(device, 24 * MIB, &big));
  g = small_gemm(ab, c, 16, 3);
  ASSERT_EQ(accel_op_gemm(stream, &g), ACCEL_ERROR_OUT_OF_DEVICE_MEMORY);
  printf("  %s\n", accel_last_error());
  ASSERT_STR_CONTAINS(accel_last_error(),
                      "the GEMM workspace of 33554432 bytes (32.00 MiB)");
  ASSERT_STR_CONTAINS(accel_last_error(), fake->alloc_call);
  accel_memory_stats_t m2 = stats_of(device);
  ASSERT_EQ(m2.ooms, m1.ooms + 1);
  // Freed again, the memory serves the workspace.
  accel_buffer_release(big);
  ASSERT_OK(accel_op_gemm(stream, &g));
  ASSERT_OK(accel_stream_synchronize(stream));
  ASSERT(product_at(c, 16));
  accel_stream_release(stream);
  accel_buffer_release(c);
  accel_buffer_release(ab);
  accel_device_release(device);
  dlclose(lib);
}

// A GEMM that needs more than the lent workspace (FAKEHIP_ROCBLAS_NEED):
// the BLAS refuses it with a memory error, the plugin hands the handle
// back to BLAS-managed memory and runs it again, and the result is right.
TEST(gemm_workspace_too_small) {
  const stand_in_t* fake = NULL;
  last_workspace_fn_t last = NULL;
  void* lib = NULL;
  OPEN_BLAS(fake, last, lib);
  if (!fake->blas_on() || fake->blas_need_env == NULL ||
      getenv(fake->blas_need_env) == NULL) {
    SKIP("needs a BLAS and a stand-in whose BLAS needs more (%s)",
         fake->blas_need_env != NULL ? fake->blas_need_env : "no such knob");
  }
  accel_device_t* device = NULL;
  accel_buffer_t *ab = NULL, *c = NULL;
  ASSERT_OK(setup(fake, &device, &ab, &c, 64));
  accel_stream_t* s = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &s));
  unsigned long gemms0 = 0, gemms = 0;
  last(NULL, NULL, &gemms0);
  accel_gemm_t g = small_gemm(ab, c, 0, 3);
  ASSERT_OK(accel_op_gemm(s, &g));
  g = small_gemm(ab, c, 16, 3);
  ASSERT_OK(accel_op_gemm(s, &g));
  ASSERT_OK(accel_stream_synchronize(s));
  last(NULL, NULL, &gemms);
  ASSERT_EQ(gemms, gemms0 + 2);  // each ran once, on managed memory
  ASSERT(product_at(c, 0));
  ASSERT(product_at(c, 16));
  accel_stream_release(s);
  accel_buffer_release(c);
  accel_buffer_release(ab);
  accel_device_release(device);
  dlclose(lib);
}

// Without a BLAS the plugin's tiled kernel runs: nothing is lent.
TEST(gemm_tiled_no_workspace) {
  const stand_in_t* fake = NULL;
  last_workspace_fn_t last = NULL;
  void* lib = NULL;
  OPEN_BLAS(fake, last, lib);
  if (fake->blas_on()) SKIP("GEMMs go to the BLAS");
  accel_device_t* device = NULL;
  accel_buffer_t *ab = NULL, *c = NULL;
  ASSERT_OK(setup(fake, &device, &ab, &c, 64));
  accel_stream_t* s = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &s));
  accel_memory_stats_t m0 = stats_of(device);
  unsigned long gemms0 = 0, gemms = 0;
  last(NULL, NULL, &gemms0);
  accel_gemm_t g = small_gemm(ab, c, 0, 3);
  ASSERT_OK(accel_op_gemm(s, &g));
  accel_memory_stats_t m1 = stats_of(device);
  last(NULL, NULL, &gemms);
  ASSERT_EQ(gemms, gemms0);
  ASSERT_EQ(m1.reserved_bytes, m0.reserved_bytes);
  ASSERT_EQ(m1.cache_hits, m0.cache_hits);
  ASSERT_EQ(m1.cache_misses, m0.cache_misses);
  ASSERT_OK(accel_stream_synchronize(s));
  ASSERT(product_at(c, 0));
  accel_stream_release(s);
  accel_buffer_release(c);
  accel_buffer_release(ab);
  accel_device_release(device);
  dlclose(lib);
}

// ---------------------------------------------------------------------------
// The plugin under an ABI 1.1 core: loaded through its entry with a host
// table of our own (the adapter's `plugin_env` names it), handed a GEMM
// struct that ends before the workspace fields.
// ---------------------------------------------------------------------------

TEST(gemm_workspace_abi_1_1_core) {
  const stand_in_t* fake = NULL;
  last_workspace_fn_t last = NULL;
  void* blas_lib = NULL;
  OPEN_BLAS(fake, last, blas_lib);
  if (memory_cap(fake) != 0) SKIP("%s is set", fake->memory_env);
  const char* path = fake->plugin_env != NULL ? getenv(fake->plugin_env) : NULL;
  if (path == NULL) SKIP("no plugin named for an ABI 1.1 core");
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NOT_NULL(lib);
  accel_plugin_entry_fn_t entry = NULL;
  void* sym = dlsym(lib, ACCEL_PLUGIN_ENTRY_NAME);
  memcpy(&entry, &sym, sizeof(entry));
  ASSERT_NOT_NULL(entry);
  const accel_plugin_t* d = entry(ACCEL_PLUGIN_ABI_VERSION);
  ASSERT_NOT_NULL(d);
  const accel_device_ops_t* ops = d->device_ops;
  void *state = NULL, *dev = NULL, *stream = NULL, *ab = NULL, *c = NULL;
  uint32_t count = 0;
  uint64_t free0 = 0, free1 = 0, free2 = 0, total = 0;
  accel_status_t st = d->load(&test_host, &state);
  if (!st) st = d->device_count(state, &count);
  if (!st) st = d->device_open(state, 0, &dev);
  if (!st) st = ops->stream_create(dev, 0, &stream);
  if (!st) st = ops->mem_alloc(dev, 64, &ab);
  if (!st) st = ops->mem_alloc(dev, 64, &c);
  if (!st) st = ops->copy_h2d(dev, NULL, ab, 0, kAB, sizeof(kAB));
  if (!st) st = ops->mem_info(dev, &free0, &total);
  unsigned long gemms0 = 0, gemms = 0;
  last(NULL, NULL, &gemms0);
  accel_plugin_gemm_t g;
  memset(&g, 0, sizeof(g));
  g.struct_size = (uint32_t)offsetof(accel_plugin_gemm_t, workspace);
  g.a_dtype = g.b_dtype = g.c_dtype = ACCEL_DTYPE_F32;
  g.m = 2, g.n = 2, g.k = 3;
  g.alpha = 1.0;
  g.a = ab, g.a_offset = 0, g.lda = 3;
  g.b = ab, g.b_offset = 24, g.ldb = 2;
  g.c = c, g.c_offset = 0, g.ldc = 2;
  if (!st) st = ops->op_gemm(dev, stream, &g);
  if (!st) st = ops->op_gemm(dev, stream, &g);  // the same workspace
  if (!st) st = ops->stream_synchronize(stream);
  if (!st) st = ops->mem_info(dev, &free1, &total);
  float got[4] = {0};
  if (!st) st = ops->copy_d2h(dev, NULL, got, c, 0, sizeof(got));
  if (st != ACCEL_OK) printf("  %s\n", test_host_message);
  uintptr_t ptr = 0;
  size_t size = 0;
  last(&ptr, &size, &gemms);
  if (c != NULL) ops->mem_free(dev, c);
  if (ab != NULL) ops->mem_free(dev, ab);
  if (stream != NULL) ops->stream_destroy(stream);
  if (st == ACCEL_OK) st = ops->mem_info(dev, &free2, &total);
  if (dev != NULL) d->device_close(dev);
  if (state != NULL) d->unload(state);
  dlclose(lib);
  dlclose(blas_lib);
  ASSERT_OK(st);
  ASSERT_MEM_EQ(got, kProduct, sizeof(got));
  // The BLAS ran both GEMMs on one workspace of the plugin's own, which
  // the stream gave back when it went.
  ASSERT_EQ(gemms, gemms0 + 2);
  ASSERT_EQ(size, fake->expected_workspace());
  ASSERT_NE(ptr, 0);
  ASSERT_EQ(free0 - free1, fake->expected_workspace());
  ASSERT_EQ(free2, free0 + 128);
}

// ---------------------------------------------------------------------------
// Strided-batched GEMM (ABI 1.4): one cublasGemmStridedBatchedEx or
// rocblas_gemm_strided_batched_ex for the whole batch, with one workspace
// lent by the core; or the batched tiled kernel and no workspace without a
// BLAS.
// ---------------------------------------------------------------------------

TEST(gemm_batched_workspace_from_core) {
  const stand_in_t* fake = NULL;
  last_workspace_fn_t last = NULL;
  void* lib = NULL;
  OPEN_BLAS(fake, last, lib);
  if (memory_cap(fake) != 0) SKIP("%s is set", fake->memory_env);
  unsigned long (*batched_count)(void) = NULL;
  void* sym = dlsym(lib, fake->batched_symbol);
  memcpy(&batched_count, &sym, sizeof(batched_count));
  ASSERT_NOT_NULL(batched_count);
  const bool blas = fake->blas_on();
  const uint64_t lent = blas ? fake->expected_workspace() : 0;
  accel_device_t* device = NULL;
  accel_buffer_t *ab = NULL, *c = NULL;
  ASSERT_OK(setup(fake, &device, &ab, &c, 64));
  accel_stream_t* s = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &s));
  accel_memory_stats_t m0 = stats_of(device);
  unsigned long gemms0 = 0, gemms = 0;
  unsigned long batched0 = batched_count();
  last(NULL, NULL, &gemms0);
  // Four products of the one A and B (strides 0) into C at 16-byte steps.
  accel_gemm_t g = small_gemm(ab, c, 0, 3);
  ASSERT_OK(accel_op_gemm_strided_batched(s, &g, 4, 0, 0, 4));
  accel_memory_stats_t m1 = stats_of(device);
  uintptr_t ptr = 0;
  size_t size = 0;
  last(&ptr, &size, &gemms);
  ASSERT_EQ(batched_count(), batched0 + (blas ? 1 : 0));
  ASSERT_EQ(gemms, gemms0 + (blas ? fake->batch_gemms : 0));
  if (blas) {
    ASSERT_EQ(size, lent);
    ASSERT_NE(ptr, 0);
  }
  ASSERT_EQ(m1.reserved_bytes, m0.reserved_bytes + lent);
  ASSERT_EQ(m1.allocated_bytes, m0.allocated_bytes);
  ASSERT_OK(accel_stream_synchronize(s));
  for (size_t i = 0; i < 4; i++) ASSERT(product_at(c, 16 * i));
  accel_stream_release(s);
  accel_buffer_release(c);
  accel_buffer_release(ab);
  accel_device_release(device);
  dlclose(lib);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
