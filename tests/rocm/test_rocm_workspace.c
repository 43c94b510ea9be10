// SPDX-License-Identifier: MIT
//
// The rocBLAS workspace lent by the core (plugin ABI 1.2), on the test-only
// HIP runtime and its rocBLAS (libfakehip, named by ACCEL_ROCM_RUNTIME and
// ACCEL_ROCM_BLAS in CMakeLists.txt): a GEMM on rocBLAS grows the reserved
// memory by exactly the workspace (32 MiB on gfx90a, 4 MiB on gfx1030),
// the next GEMM on the stream is a cache hit on the same block, rocBLAS
// got it (fakehip_rocblas_last_workspace), and k == 0 asks for none. With
// ACCEL_ROCM_BLAS=none the tiled kernel runs and nothing is lent. A
// strided-batched GEMM is one rocBLAS call with one workspace.
#include <accel/accel.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "test_gemm_workspace.h"

// fakehip_rocblas_last_workspace from the libfakehip the plugin loads.
static last_workspace_fn_t last_workspace(void** out_lib) {
  return last_workspace_from("ACCEL_ROCM_RUNTIME",
                             "fakehip_rocblas_last_workspace", out_lib);
}

// The workspace the plugin asks for on the fake device (FAKEHIP_ARCH,
// default gfx90a): 32 MiB on gfx90a and gfx94x, 4 MiB elsewhere.
static uint64_t expected_workspace(void) {
  const char* arch = getenv("FAKEHIP_ARCH");
  return arch == NULL || strncmp(arch, "gfx90a", 6) == 0 ||
                 strncmp(arch, "gfx94", 5) == 0
             ? 32 * MIB
             : 4 * MIB;
}

static accel_status_t setup(accel_device_t** device, accel_buffer_t** ab,
                            accel_buffer_t** c, accel_stream_t** stream) {
  accel_status_t st = accel_device_open("rocm:0", device);
  if (!st) st = accel_buffer_create(*device, 64, ab);
  if (!st) st = accel_buffer_write(*ab, 0, kAB, sizeof(kAB));
  if (!st) st = accel_buffer_create(*device, 64, c);
  if (!st) st = accel_buffer_fill(*c, 0, 0, 64);
  if (!st) st = accel_stream_create(*device, 0, stream);
  if (st) printf("  %s\n", accel_last_error());
  return st;
}

static bool blas_off(void) {
  const char* blas = getenv("ACCEL_ROCM_BLAS");
  return blas == NULL || blas[0] == '\0' || strcmp(blas, "none") == 0;
}

TEST(rocblas_workspace_from_core) {
  if (blas_off()) SKIP("ACCEL_ROCM_BLAS names no rocBLAS");
  void* lib = NULL;
  last_workspace_fn_t last = last_workspace(&lib);
  ASSERT_NOT_NULL(last);
  uint64_t ws = expected_workspace();
  accel_device_t* device = NULL;
  accel_buffer_t *ab = NULL, *c = NULL;
  accel_stream_t* s = NULL;
  ASSERT_OK(setup(&device, &ab, &c, &s));
  accel_memory_stats_t m0 = stats_of(device);
  unsigned long gemms0 = 0;
  last(NULL, NULL, &gemms0);

  // The first GEMM: a new segment of exactly the workspace, given to
  // rocBLAS, back in the cache (not allocated) once the GEMM is enqueued.
  accel_gemm_t g = small_gemm(ab, c, 0, 3);
  ASSERT_OK(accel_op_gemm(s, &g));
  accel_memory_stats_t m1 = stats_of(device);
  uintptr_t ptr1 = 0, ptr = 0;
  size_t size = 0;
  unsigned long gemms = 0;
  last(&ptr1, &size, &gemms);
  ASSERT_EQ(gemms, gemms0 + 1);
  ASSERT_EQ(size, ws);
  ASSERT_NE(ptr1, 0);
  ASSERT_EQ(m1.reserved_bytes, m0.reserved_bytes + ws);
  ASSERT_EQ(m1.raw_allocs, m0.raw_allocs + 1);
  ASSERT_EQ(m1.cache_misses, m0.cache_misses + 1);
  ASSERT_EQ(m1.allocated_bytes, m0.allocated_bytes);

  // The next GEMM on the stream: a cache hit on the same block.
  g = small_gemm(ab, c, 16, 3);
  ASSERT_OK(accel_op_gemm(s, &g));
  accel_memory_stats_t m2 = stats_of(device);
  last(&ptr, &size, &gemms);
  ASSERT_EQ(gemms, gemms0 + 2);
  ASSERT_EQ(ptr, ptr1);
  ASSERT_EQ(size, ws);
  ASSERT_EQ(m2.cache_hits, m1.cache_hits + 1);
  ASSERT_EQ(m2.cache_misses, m1.cache_misses);
  ASSERT_EQ(m2.reserved_bytes, m1.reserved_bytes);

  // k == 0 runs the kernel (C = beta C): no rocBLAS, no workspace.
  g = small_gemm(ab, c, 32, 0);
  ASSERT_OK(accel_op_gemm(s, &g));
  accel_memory_stats_t m3 = stats_of(device);
  last(NULL, NULL, &gemms);
  ASSERT_EQ(gemms, gemms0 + 2);
  ASSERT_EQ(m3.cache_hits, m2.cache_hits);
  ASSERT_EQ(m3.cache_misses, m2.cache_misses);

  ASSERT_OK(accel_stream_synchronize(s));
  ASSERT(product_at(c, 0));
  ASSERT(product_at(c, 16));
  accel_stream_release(s);
  ASSERT_OK(accel_device_empty_cache(device));
  ASSERT_EQ(stats_of(device).reserved_bytes, m0.reserved_bytes);
  accel_buffer_release(c);
  accel_buffer_release(ab);
  accel_device_release(device);
  dlclose(lib);
}

// A GEMM that needs more than the lent workspace (FAKEHIP_ROCBLAS_NEED):
// rocBLAS refuses it with memory_error, the plugin hands the handle back to
// rocBLAS-managed memory and runs it again, and the result is right.
TEST(rocblas_workspace_too_small) {
  if (blas_off() || getenv("FAKEHIP_ROCBLAS_NEED") == NULL) {
    SKIP("needs a rocBLAS and FAKEHIP_ROCBLAS_NEED");
  }
  void* lib = NULL;
  last_workspace_fn_t last = last_workspace(&lib);
  ASSERT_NOT_NULL(last);
  accel_device_t* device = NULL;
  accel_buffer_t *ab = NULL, *c = NULL;
  accel_stream_t* s = NULL;
  ASSERT_OK(setup(&device, &ab, &c, &s));
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

TEST(tiled_kernel_no_workspace) {
  if (!blas_off()) SKIP("ACCEL_ROCM_BLAS names a rocBLAS");
  void* lib = NULL;
  last_workspace_fn_t last = last_workspace(&lib);
  ASSERT_NOT_NULL(last);
  accel_device_t* device = NULL;
  accel_buffer_t *ab = NULL, *c = NULL;
  accel_stream_t* s = NULL;
  ASSERT_OK(setup(&device, &ab, &c, &s));
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

// Strided-batched GEMM (ABI 1.4): one rocblas_gemm_strided_batched_ex
// with one lent workspace for the batch, or the batched tiled kernel and
// no workspace without rocBLAS.
TEST(rocblas_gemm_batched_workspace) {
  void* lib = NULL;
  last_workspace_fn_t last = last_workspace(&lib);
  ASSERT_NOT_NULL(last);
  unsigned long (*batched_count)(void) = NULL;
  void* sym = dlsym(lib, "fakehip_rocblas_strided_batched_count");
  memcpy(&batched_count, &sym, sizeof(batched_count));
  ASSERT_NOT_NULL(batched_count);
  accel_device_t* device = NULL;
  accel_buffer_t *ab = NULL, *c = NULL;
  accel_stream_t* s = NULL;
  ASSERT_OK(setup(&device, &ab, &c, &s));
  accel_memory_stats_t m0 = stats_of(device);
  unsigned long batched0 = batched_count();
  // Four products of the one A and B (strides 0) into C at 16-byte steps.
  accel_gemm_t g = small_gemm(ab, c, 0, 3);
  ASSERT_OK(accel_op_gemm_strided_batched(s, &g, 4, 0, 0, 4));
  accel_memory_stats_t m1 = stats_of(device);
  uint64_t lent = blas_off() ? 0 : expected_workspace();
  ASSERT_EQ(batched_count(), batched0 + (blas_off() ? 0 : 1));
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
