// SPDX-License-Identifier: MIT
//
// The CUDA plugin held to contracts of the driver and cuBLAS that the fake
// (libfakecuda, libfakecublas) enforces as NVIDIA documents them:
//  - f16 GEMM accumulates in f32 (cuBLAS may otherwise reduce split-K
//    partial sums in the output type: the handle's math mode must forbid
//    it);
//  - a kernel's static shared memory counts against the 48 KiB a launch
//    gets without opting in, and against the device's opt-in limit
//    (FAKECUDA_STATIC_SHARED gives vadd 16 KiB);
//  - elapsed time of a never-recorded event is INVALID_ARGUMENT, as in the
//    CPU plugin (checked on the plugin itself, since the core refuses it
//    first: CUDA_TEST_PLUGIN names the plugin);
//  - "now" copies do not use the legacy default stream, and a stream's
//    cuBLAS handle is not destroyed with the stream (cublasDestroy waits
//    for the whole device);
//  - kernel arguments are checked against cuFuncGetParamInfo.
// This checks the plugin's use of the API, not NVIDIA hardware.
#include <accel/accel.h>
#include <accel/plugin.h>
#include <accel/plugin_dtype.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"
#include "test_host.h"

extern const unsigned char test_vadd_ptx[];
extern const size_t test_vadd_ptx_size;

static accel_device_t* open_gpu(void) {
  accel_device_t* device = NULL;
  if (accel_device_open("cuda:0", &device) != ACCEL_OK) {
    printf("  cuda:0: %s\n", accel_last_error());
  }
  return device;
}

// `symbol` of the library the environment variable `env` names (the same
// object the plugin loaded), or NULL.
static void* fake_symbol(const char* env, const char* symbol) {
  const char* path = getenv(env);
  void* lib = path != NULL ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  return lib != NULL ? dlsym(lib, symbol) : NULL;
}

// 1 x 1 x 2048 in f16 with f16 output: 2048 products of 1 and 1 + 2^-8,
// 2056 exactly in f32 (and in f16). Summing slices of 32 in f16 loses the
// small parts once the sum grows (2050).
TEST(fake_gemm_f16_accumulates_in_f32) {
  accel_device_t* device = open_gpu();
  ASSERT_NOT_NULL(device);
  enum { K = 2048 };
  uint16_t a[K], b[K];
  for (int i = 0; i < K; i++) {
    a[i] = accel_plugin_f32_to_f16(1.0f);
    b[i] = accel_plugin_f32_to_f16(1.0f + 1.0f / 256.0f);
  }
  accel_buffer_t *ba = NULL, *bb = NULL, *bc = NULL;
  ASSERT_OK(accel_buffer_create(device, sizeof(a), &ba));
  ASSERT_OK(accel_buffer_create(device, sizeof(b), &bb));
  ASSERT_OK(accel_buffer_create(device, 2, &bc));
  ASSERT_OK(accel_buffer_write(ba, 0, a, sizeof(a)));
  ASSERT_OK(accel_buffer_write(bb, 0, b, sizeof(b)));
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &stream));
  accel_gemm_t g;
  accel_gemm_init(&g);
  g.a_dtype = g.b_dtype = g.c_dtype = ACCEL_DTYPE_F16;
  g.m = 1, g.n = 1, g.k = K;
  g.a = ba, g.b = bb, g.c = bc;
  ASSERT_OK(accel_op_gemm(stream, &g));
  ASSERT_OK(accel_stream_synchronize(stream));
  uint16_t c = 0;
  ASSERT_OK(accel_buffer_read(bc, 0, &c, sizeof(c)));
  ASSERT(accel_plugin_f16_to_f32(c) == 2056.0f);
  accel_stream_release(stream);
  accel_buffer_release(ba);
  accel_buffer_release(bb);
  accel_buffer_release(bc);
  accel_device_release(device);
}

// Launches vadd over 256 floats with `shared` bytes of dynamic shared
// memory and the first `num_args` of its arguments, `n` passed in
// `n_size` bytes (4 is right; little-endian, so 8 holds the same 256);
// returns the status.
static accel_status_t launch_vadd(accel_device_t* device, uint32_t shared,
                                  uint32_t n_size, size_t num_args) {
  accel_module_t* module = NULL;
  accel_kernel_t* kernel = NULL;
  accel_stream_t* stream = NULL;
  accel_buffer_t* buf = NULL;
  accel_status_t st =
      accel_module_create(device, test_vadd_ptx, test_vadd_ptx_size, &module);
  if (!st) st = accel_kernel_create(module, "vadd", &kernel);
  if (!st) st = accel_stream_create(device, 0, &stream);
  if (!st) st = accel_buffer_create(device, 1024, &buf);
  uint64_t n = 256;
  accel_kernel_arg_t args[4] = {
      {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = buf},
      {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = buf},
      {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = buf},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = n_size, .value = &n}};
  accel_launch_config_t config;
  accel_launch_config_init(&config);
  config.block[0] = 256;
  config.shared_mem_bytes = shared;
  if (!st) st = accel_kernel_launch(kernel, stream, &config, num_args, args);
  if (!st) st = accel_stream_synchronize(stream);
  if (st) printf("  %s\n", accel_last_error());
  accel_buffer_release(buf);
  accel_stream_release(stream);
  accel_kernel_release(kernel);
  accel_module_release(module);
  return st;
}

TEST(fake_static_shared_memory_counts) {
  if (getenv("FAKECUDA_STATIC_SHARED") == NULL) {
    SKIP("needs FAKECUDA_STATIC_SHARED=vadd:16384");
  }
  accel_device_t* device = open_gpu();
  ASSERT_NOT_NULL(device);
  // 16 KiB static + 40 KiB dynamic: above 48 KiB, so only with the opt-in.
  ASSERT_OK(launch_vadd(device, 40 << 10, 4, 4));
  // 16 KiB + 8 KiB: no opt-in needed.
  ASSERT_OK(launch_vadd(device, 8 << 10, 4, 4));
  // 16 KiB + 220 KiB is more than sm_90's 227 KiB: refused, naming both.
  ASSERT_EQ(launch_vadd(device, 220 << 10, 4, 4), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "16384 bytes of static shared");
  accel_device_release(device);
}

// With cuFuncGetParamInfo (CUDA 12.4+ drivers) the plugin checks each
// argument's size: vadd's `unsigned n` passed as 8 bytes, or an argument
// missing, is INVALID_ARGUMENT naming it, not a kernel reading garbage.
TEST(fake_kernel_argument_sizes_checked) {
  accel_device_t* device = open_gpu();
  ASSERT_NOT_NULL(device);
  ASSERT_EQ(launch_vadd(device, 0, 8, 4), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "argument 3 is a value of 8 bytes");
  ASSERT_EQ(launch_vadd(device, 0, 4, 3), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "3 arguments; the kernel takes 4");
  ASSERT_OK(launch_vadd(device, 0, 4, 4));
  accel_device_release(device);
}

// The plugin itself, as a foreign core would drive it.
typedef struct direct {
  void* lib;
  const accel_plugin_t* plugin;
  const accel_device_ops_t* ops;
  void* state;
  void* dev;
} direct_t;

static accel_status_t direct_open(direct_t* d) {
  memset(d, 0, sizeof(*d));
  const char* path = getenv("CUDA_TEST_PLUGIN");
  d->lib = path != NULL ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (d->lib == NULL) return ACCEL_ERROR_NOT_FOUND;
  accel_plugin_entry_fn_t entry = NULL;
  void* sym = dlsym(d->lib, ACCEL_PLUGIN_ENTRY_NAME);
  memcpy(&entry, &sym, sizeof(entry));
  d->plugin = entry != NULL ? entry(ACCEL_PLUGIN_ABI_VERSION) : NULL;
  if (d->plugin == NULL) return ACCEL_ERROR_INCOMPATIBLE;
  d->ops = d->plugin->device_ops;
  uint32_t count = 0;
  accel_status_t st = d->plugin->load(&test_host, &d->state);
  if (!st) st = d->plugin->device_count(d->state, &count);
  if (!st) st = d->plugin->device_open(d->state, 0, &d->dev);
  return st;
}

static void direct_close(direct_t* d) {
  if (d->dev != NULL) d->plugin->device_close(d->dev);
  if (d->state != NULL) d->plugin->unload(d->state);
  if (d->lib != NULL) dlclose(d->lib);
}

TEST(fake_elapsed_of_never_recorded_event) {
  if (getenv("CUDA_TEST_PLUGIN") == NULL) SKIP("needs CUDA_TEST_PLUGIN");
  direct_t d;
  accel_status_t st = direct_open(&d);
  void *start = NULL, *end = NULL, *plain = NULL, *stream = NULL;
  if (!st) st = d.ops->event_create(d.dev, ACCEL_EVENT_TIMING, &start);
  if (!st) st = d.ops->event_create(d.dev, ACCEL_EVENT_TIMING, &end);
  if (!st) st = d.ops->event_create(d.dev, 0, &plain);
  if (!st) st = d.ops->stream_create(d.dev, 0, &stream);
  ASSERT_OK(st);
  float ms = -1.0f;
  ASSERT_EQ(d.ops->event_elapsed_ms(start, end, &ms),
            ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(test_host_message, "never recorded");
  ASSERT_OK(d.ops->event_record(start, stream));
  ASSERT_EQ(d.ops->event_elapsed_ms(start, end, &ms),
            ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(test_host_message, "end event");
  ASSERT_OK(d.ops->event_record(end, stream));
  ASSERT_OK(d.ops->stream_synchronize(stream));
  ASSERT_OK(d.ops->event_elapsed_ms(start, end, &ms));
  ASSERT(ms >= 0.0f);
  // An event without timing is misuse too (the CPU plugin's answer).
  ASSERT_OK(d.ops->event_record(plain, stream));
  ASSERT_OK(d.ops->stream_synchronize(stream));
  ASSERT_EQ(d.ops->event_elapsed_ms(start, plain, &ms),
            ACCEL_ERROR_INVALID_ARGUMENT);
  d.ops->event_destroy(start);
  d.ops->event_destroy(end);
  d.ops->event_destroy(plain);
  d.ops->stream_destroy(stream);
  direct_close(&d);
}

typedef unsigned long (*count_fn_t)(void);

static count_fn_t count_fn(const char* env, const char* symbol) {
  void* sym = fake_symbol(env, symbol);
  count_fn_t fn = NULL;
  memcpy(&fn, &sym, sizeof(fn));
  return fn;
}

// Copies without a stream, a launch without a stream, and streams with
// GEMMs coming and going: none of it touches the legacy default stream or
// calls cublasDestroy (which would wait for the whole device) before the
// device closes.
TEST(fake_no_legacy_stream_no_device_sync) {
  count_fn_t legacy =
      count_fn("ACCEL_CUDA_DRIVER", "fakecuda_legacy_stream_uses");
  count_fn_t destroys =
      count_fn("ACCEL_CUDA_CUBLAS", "fakecublas_destroy_count");
  ASSERT_NOT_NULL(legacy);
  ASSERT_NOT_NULL(destroys);
  accel_device_t* device = open_gpu();
  ASSERT_NOT_NULL(device);
  unsigned long legacy0 = legacy(), destroys0 = destroys();
  printf("  legacy stream uses so far: %lu\n", legacy0);
  float host[64] = {1.0f};
  accel_buffer_t *a = NULL, *b = NULL;
  ASSERT_OK(accel_buffer_create(device, sizeof(host), &a));
  ASSERT_OK(accel_buffer_create(device, sizeof(host), &b));
  ASSERT_OK(accel_buffer_write(a, 0, host, sizeof(host)));
  ASSERT_OK(accel_buffer_copy(b, 0, a, 0, sizeof(host)));
  ASSERT_OK(accel_buffer_copy(a, 4, a, 0, sizeof(host) - 4));  // a move
  ASSERT_OK(accel_buffer_fill(b, 0, 0, sizeof(host)));
  ASSERT_OK(accel_buffer_read(a, 0, host, sizeof(host)));
  for (int round = 0; round < 3; round++) {
    accel_stream_t* stream = NULL;
    ASSERT_OK(accel_stream_create(device, 0, &stream));
    accel_gemm_t g;
    accel_gemm_init(&g);
    g.m = g.n = g.k = 4;
    g.a = g.b = a;
    g.c = b;
    ASSERT_OK(accel_op_gemm(stream, &g));
    ASSERT_OK(accel_stream_synchronize(stream));
    accel_stream_release(stream);
  }
  ASSERT_EQ(legacy(), legacy0);
  ASSERT_EQ(destroys(), destroys0);
  accel_buffer_release(a);
  accel_buffer_release(b);
  accel_device_release(device);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
