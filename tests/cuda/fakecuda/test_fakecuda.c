// SPDX-License-Identifier: MIT
//
// The CUDA plugin on the test-only driver (libfakecuda and libfakecublas,
// named by ACCEL_CUDA_DRIVER and ACCEL_CUDA_CUBLAS in tests/cuda/
// CMakeLists.txt), through the public API: properties and an asynchronous
// fault (tests/stand_in/stand_in_device_tests.h, shared with ROCm),
// rounding and sums as the GPU's kernels do them, device OOM, a module
// without code for the device, PTX too new for the driver, a JIT error with
// its log, and GEMM without cuBLAS. This
// checks the plugin's plumbing, not NVIDIA hardware. Tests that need a
// FAKECUDA_* setting skip without it; CMakeLists.txt runs each with it.
#include <accel/accel.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "stand_in/stand_in_device_tests.h"
#include "test.h"

extern const unsigned char test_vadd_ptx[];
extern const size_t test_vadd_ptx_size;

// Whether the environment variable `name` is set to `value` (NULL: set).
static bool env_is(const char* name, const char* value) {
  const char* v = getenv(name);
  return v != NULL && (value == NULL || strcmp(v, value) == 0);
}

static accel_device_t* open_gpu(void) {
  accel_device_t* device = NULL;
  if (accel_device_open("cuda:0", &device) != ACCEL_OK) {
    printf("  cuda:0: %s\n", accel_last_error());
  }
  return device;
}

// Reads `count` elements of `bytes` bytes from `b` after `run` (an op on
// `s`) into `out`; returns the first failure.
static accel_status_t read_after(accel_stream_t* s, accel_status_t run,
                                 accel_buffer_t* b, void* out, size_t bytes) {
  if (run == ACCEL_OK) run = accel_stream_synchronize(s);
  if (run == ACCEL_OK) run = accel_buffer_read(b, 0, out, bytes);
  return run;
}

// fill and i32->bf16 round once from the exact value, as __double2half and
// __double2bfloat16 do; through f32 these inputs would land on a tie and
// round (to even) the other way.
TEST(fake_rounds_once_from_double) {
  if (env_is("FAKECUDA_ARCH", NULL)) SKIP("FAKECUDA_ARCH is set");
  const char* uris[2] = {"cuda:0", "cpu:0"};
  for (int d = 0; d < 2; d++) {
    accel_device_t* device = NULL;
    accel_stream_t* s = NULL;
    accel_buffer_t *b = NULL, *x = NULL;
    ASSERT_OK(accel_device_open(uris[d], &device));
    ASSERT_OK(accel_stream_create(device, 0, &s));
    ASSERT_OK(accel_buffer_create(device, 64, &b));
    ASSERT_OK(accel_buffer_create(device, 64, &x));
    uint16_t h = 0;
    double f16_value = 1.0 + 0x1p-11 + 0x1p-40;  // above an f16 tie
    double bf16_value = 1.0 + 0x1p-8 + 0x1p-40;  // above a bf16 tie
    ASSERT_OK(read_after(
        s, accel_op_fill(s, b, 0, ACCEL_DTYPE_F16, 1, f16_value), b, &h, 2));
    ASSERT_EQ(h, 0x3c01);
    ASSERT_OK(read_after(
        s, accel_op_fill(s, b, 0, ACCEL_DTYPE_BF16, 1, bf16_value), b, &h, 2));
    ASSERT_EQ(h, 0x3f81);
    int32_t i = (1 << 24) + (1 << 16) + 1;  // f32 rounds it to a bf16 tie
    ASSERT_OK(accel_buffer_write(x, 0, &i, sizeof(i)));
    ASSERT_OK(read_after(
        s, accel_op_cast(s, b, 0, ACCEL_DTYPE_BF16, x, 0, ACCEL_DTYPE_I32, 1),
        b, &h, 2));
    ASSERT_EQ(h, 0x4b81);
    accel_buffer_release(x);
    accel_buffer_release(b);
    accel_stream_release(s);
    accel_device_release(device);
  }
}

// The sum's first pass accumulates each thread's elements in f32 (ops.cu):
// with 9 elements per thread, 1.0 then eight values below half its ulp,
// each thread's sum stays 1.0, so the total is exactly 2^18 where a sum in
// double would give 2^18 + 0.1125 (f32 2^18 + 0.125).
TEST(fake_sum_is_the_gpus) {
  if (env_is("FAKECUDA_ARCH", NULL)) SKIP("FAKECUDA_ARCH is set");
  const size_t threads = 1024 * 256, n = 9 * threads;
  float* x = malloc(n * sizeof(float));
  ASSERT_NOT_NULL(x);
  for (size_t i = 0; i < n; i++) x[i] = i < threads ? 1.0f : 0.9f * 0x1p-24f;
  accel_device_t* device = open_gpu();
  ASSERT_NOT_NULL(device);
  accel_stream_t* s = NULL;
  accel_buffer_t *b = NULL, *out = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &s));
  ASSERT_OK(accel_buffer_create(device, n * sizeof(float), &b));
  ASSERT_OK(accel_buffer_create(device, sizeof(float), &out));
  ASSERT_OK(accel_buffer_write(b, 0, x, n * sizeof(float)));
  free(x);
  float sum = 0;
  ASSERT_OK(read_after(s, accel_op_sum(s, out, 0, b, 0, ACCEL_DTYPE_F32, n),
                       out, &sum, sizeof(sum)));
  ASSERT(sum == 262144.0f);
  accel_buffer_release(out);
  accel_buffer_release(b);
  accel_stream_release(s);
  accel_device_release(device);
}

TEST(fake_out_of_device_memory) {
  if (!env_is("FAKECUDA_MEMORY", NULL)) SKIP("needs FAKECUDA_MEMORY");
  size_t total = (size_t)strtoull(getenv("FAKECUDA_MEMORY"), NULL, 10);
  accel_device_t* device = open_gpu();
  ASSERT_NOT_NULL(device);
  accel_buffer_t* a = NULL;
  accel_buffer_t* b = NULL;
  // Each fits the device; both do not, so the driver's OOM is reached.
  ASSERT_OK(accel_buffer_create(device, total / 8 * 5, &a));
  ASSERT_EQ(accel_buffer_create(device, total / 8 * 5, &b),
            ACCEL_ERROR_OUT_OF_DEVICE_MEMORY);
  ASSERT_NULL(b);
  printf("  %s\n", accel_last_error());
  ASSERT_STR_CONTAINS(accel_last_error(), "out of device memory");
  ASSERT_STR_CONTAINS(accel_last_error(), "cuMemAlloc of");
  accel_buffer_release(a);
  accel_device_release(device);
}

TEST(fake_no_binary_for_gpu) {
  if (!env_is("FAKECUDA_ARCH", "70")) SKIP("needs FAKECUDA_ARCH=70");
  accel_device_t* device = open_gpu();
  ASSERT_NOT_NULL(device);
  accel_device_info_t info = {.struct_size = sizeof(info)};
  ASSERT_OK(accel_device_query_info(device, &info));
  ASSERT_STR_EQ(info.arch, "sm_70");
  ASSERT_EQ(info.caps & ACCEL_DEVICE_CAP_BF16, 0);
  // The fatbin has SASS for sm_75 and newer and PTX for sm_120 only.
  ASSERT_EQ(stand_in_fill_once(device), ACCEL_ERROR_UNSUPPORTED);
  printf("  %s\n", accel_last_error());
  ASSERT_STR_CONTAINS(accel_last_error(), "module has no code for sm_70");
  ASSERT_EQ(stand_in_fill_once(device), ACCEL_ERROR_UNSUPPORTED);  // remembered
  ASSERT_STR_CONTAINS(accel_last_error(), "see the first op's error");
  accel_device_release(device);
}

TEST(fake_ptx_newer_than_driver) {
  if (!env_is("FAKECUDA_PTX_MAX", NULL)) SKIP("needs FAKECUDA_PTX_MAX");
  accel_device_t* device = open_gpu();
  ASSERT_NOT_NULL(device);
  accel_module_t* module = NULL;
  ASSERT_EQ(
      accel_module_create(device, test_vadd_ptx, test_vadd_ptx_size, &module),
      ACCEL_ERROR_INCOMPATIBLE);
  printf("  %s\n", accel_last_error());
  ASSERT_STR_CONTAINS(accel_last_error(), "PTX ISA 9.0");
  ASSERT_STR_CONTAINS(accel_last_error(), "driver CUDA 13.0");
  ASSERT_OK(stand_in_fill_once(device));  // the ops run from SASS
  accel_device_release(device);
}

TEST(fake_jit_error_log) {
  if (env_is("FAKECUDA_ARCH", NULL)) SKIP("FAKECUDA_ARCH is set");
  static const char ptx[] =
      ".version 9.0\n.target sm_100\n.address_size 64\n"
      ".visible .entry vadd()\n{\n\tret;\n}\n";
  accel_device_t* device = open_gpu();
  ASSERT_NOT_NULL(device);
  accel_module_t* module = NULL;
  ASSERT_EQ(accel_module_create(device, ptx, sizeof(ptx) - 1, &module),
            ACCEL_ERROR_BACKEND);
  printf("  %s\n", accel_last_error());
  ASSERT_STR_CONTAINS(accel_last_error(), "CUDA_ERROR_INVALID_PTX");
  ASSERT_STR_CONTAINS(accel_last_error(), "PTX ISA 9.0");
  ASSERT_STR_CONTAINS(accel_last_error(), "JIT log: ptxas");
  // A module holds only its own kernels, even ones the fake could run.
  ASSERT_OK(
      accel_module_create(device, test_vadd_ptx, test_vadd_ptx_size, &module));
  accel_kernel_t* kernel = NULL;
  ASSERT_EQ(accel_kernel_create(module, "accel_cuda_fill_f32", &kernel),
            ACCEL_ERROR_NOT_FOUND);
  ASSERT_OK(accel_kernel_create(module, "vadd", &kernel));
  accel_kernel_release(kernel);
  accel_module_release(module);
  accel_device_release(device);
}

TEST(fake_gemm_without_cublas) {
  if (!env_is("ACCEL_CUDA_CUBLAS", "/nonexistent/libcublas.so.13")) {
    SKIP("needs ACCEL_CUDA_CUBLAS=/nonexistent/libcublas.so.13");
  }
  accel_device_t* device = open_gpu();
  ASSERT_NOT_NULL(device);
  accel_stream_t* stream = NULL;
  accel_buffer_t* buffer = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &stream));
  ASSERT_OK(accel_buffer_create(device, 64, &buffer));
  accel_gemm_t g;
  accel_gemm_init(&g);
  g.m = g.n = g.k = 2;
  g.a = g.b = g.c = buffer;
  g.lda = g.ldb = g.ldc = 2;
  g.b_offset = 16, g.c_offset = 32;
  ASSERT_EQ(accel_op_gemm(stream, &g), ACCEL_ERROR_UNSUPPORTED);
  printf("  %s\n", accel_last_error());
  ASSERT_STR_CONTAINS(accel_last_error(), "named by ACCEL_CUDA_CUBLAS");
  ASSERT_STR_CONTAINS(accel_last_error(), "/nonexistent/libcublas.so.13");
  ASSERT_STR_CONTAINS(accel_last_error(), "No such file");
  accel_buffer_release(buffer);
  accel_stream_release(stream);
  ASSERT_OK(stand_in_fill_once(device));  // everything else works
  accel_device_release(device);
}

// The fake itself: cuGetProcAddress_v2 honours the version asked for.
TEST(fake_get_proc_address_versions) {
  const char* path = getenv("ACCEL_CUDA_DRIVER");
  if (path == NULL) SKIP("needs ACCEL_CUDA_DRIVER");
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NOT_NULL(lib);
  PFN_cuGetProcAddress_v12000 get = NULL;
  void* sym = dlsym(lib, "cuGetProcAddress_v2");
  ASSERT_NOT_NULL(sym);
  memcpy(&get, &sym, sizeof(sym));
  void *fn = NULL, *v1 = NULL, *v2 = NULL;
  CUdriverProcAddressQueryResult found;
  ASSERT_EQ(get("cuMemAlloc", &fn, 13000, 0, &found), CUDA_SUCCESS);
  ASSERT_EQ(found, CU_GET_PROC_ADDRESS_SUCCESS);
  ASSERT_EQ((uintptr_t)fn, (uintptr_t)dlsym(lib, "cuMemAlloc_v2"));
  // Not found: CUDA_SUCCESS, a NULL pointer and the reason.
  ASSERT_EQ(get("cuMemAlloc", &fn, 3000, 0, &found), CUDA_SUCCESS);
  ASSERT_EQ(found, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  ASSERT_NULL(fn);
  ASSERT_EQ(get("cuNoSuchEntry", &fn, 13000, 0, &found), CUDA_SUCCESS);
  ASSERT_EQ(found, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  ASSERT_NULL(fn);
  ASSERT_EQ(get("cuMemAlloc", &fn, 13010, 0, &found),
            CUDA_ERROR_INVALID_VALUE);  // newer than the driver
  ASSERT_EQ(get("cuEventElapsedTime", &v1, 12000, 0, &found), CUDA_SUCCESS);
  ASSERT_EQ(get("cuEventElapsedTime", &v2, 12080, 0, &found), CUDA_SUCCESS);
  ASSERT_EQ((uintptr_t)v1, (uintptr_t)dlsym(lib, "cuEventElapsedTime"));
  ASSERT_EQ((uintptr_t)v2, (uintptr_t)dlsym(lib, "cuEventElapsedTime_v2"));
  dlclose(lib);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
