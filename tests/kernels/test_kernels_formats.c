// SPDX-License-Identifier: MIT
//
// ABI 1.3 in the core, on the "fxformats" fixture (tests/kernels/
// fx_formats.c, path in FX_FORMATS): module formats reach a plugin that
// declares them while a binary for another target is still refused;
// buffer argument offsets honour buffer_offset_alignment (FX_ALIGN, run
// with 128 and 4096, and with ACCEL_ALLOCATOR=raw); the largest
// allocation, grid, shared memory and value-size limits; kernel bundles.
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader_util.h"
#include "test.h"

typedef void (*fx_last_fn)(const void**, size_t*, const uint64_t**,
                           uint32_t*);

typedef struct env {
  accel_device_t* device;
  accel_stream_t* stream;
  fx_last_fn last;
} env_t;

static const char kOpenclC[] =
    "// vector add\n__kernel void vadd(__global float* x) { x[0] += 1; }\n";

// A minimal SPIR-V module: header, OpCapability Addresses, OpMemoryModel
// Physical64 OpenCL.
static const uint32_t kSpirv[] = {0x07230203u, 0x00010200u, 0, 1, 0,
                                  (2u << 16) | 17u, 4u,
                                  (3u << 16) | 14u, 2u, 2u};

// The first 64 bytes of an ELF64 CUDA cubin for sm_90.
static void make_cubin(unsigned char* out) {
  memset(out, 0, 64);
  memcpy(out, "\177ELF", 4);
  out[4] = 2;     // ELFCLASS64
  out[5] = 1;     // little-endian
  out[6] = 1;     // EV_CURRENT
  out[8] = 7;     // ELFABIVERSION_CUDA_V1
  out[18] = 190;  // EM_CUDA
  out[48] = 0x5a;
}

static bool env_open(env_t* e) {
  memset(e, 0, sizeof(*e));
  const char* path = lu_env_path("FX_FORMATS");
  if (path == NULL) return false;
  lu_restart(path);
  if (accel_device_open("fxformats:0", &e->device) != ACCEL_OK ||
      accel_stream_create(e->device, 0, &e->stream) != ACCEL_OK) {
    fprintf(stderr, "open: %s\n", accel_last_error());
    return false;
  }
  void* dl = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (dl != NULL) {
    *(void**)&e->last = dlsym(dl, "fx_formats_last");
    dlclose(dl);
  }
  return e->last != NULL;
}

static void env_close(env_t* e) {
  accel_stream_release(e->stream);
  accel_device_release(e->device);
  accel_shutdown();
}

// True when the fixture's last loaded image is `size` bytes equal to
// `image`.
static bool last_image_is(env_t* e, const void* image, size_t size) {
  const void* got = NULL;
  size_t got_size = 0;
  const uint64_t* offsets = NULL;
  uint32_t n = 0;
  e->last(&got, &got_size, &offsets, &n);
  return got != NULL && got_size == size && memcmp(got, image, size) == 0;
}

static uint64_t last_offset(env_t* e, uint32_t i) {
  const void* got = NULL;
  size_t got_size = 0;
  const uint64_t* offsets = NULL;
  uint32_t n = 0;
  e->last(&got, &got_size, &offsets, &n);
  return i < n ? offsets[i] : UINT64_MAX;
}

TEST(device_info_reports_abi13_props) {
  env_t e;
  ASSERT(env_open(&e));
  accel_device_info_t info;
  info.struct_size = sizeof(info);
  ASSERT_OK(accel_device_query_info(e.device, &info));
  ASSERT_STR_EQ(info.module_target, "fxcl-test");
  ASSERT_STR_EQ(info.module_formats, "opencl-c spirv");
  ASSERT_STR_EQ(info.platform, "accel fixture platform");
  ASSERT_EQ(info.max_alloc_size, 64ull << 20);
  ASSERT_EQ(info.max_shared_mem_bytes, 32768u);
  ASSERT_EQ(info.max_grid[0], 1024u);
  ASSERT_EQ(info.max_grid[1], 0u);
  ASSERT_GE(info.buffer_offset_alignment, 128u);
  // A caller built before the ABI 1.3 fields (944-byte struct) gets the
  // fields that fit and nothing written past them.
  accel_device_info_t old;
  memset(&old, 0x5a, sizeof(old));
  old.struct_size = (uint32_t)offsetof(accel_device_info_t, max_alloc_size);
  ASSERT_OK(accel_device_query_info(e.device, &old));
  ASSERT_STR_EQ(old.module_target, "fxcl-test");
  ASSERT_EQ(old.max_alloc_size, 0x5a5a5a5a5a5a5a5aull);
  ASSERT_EQ((unsigned char)old.platform[0], 0x5au);
  env_close(&e);
}

TEST(opencl_c_and_spirv_reach_the_plugin) {
  env_t e;
  ASSERT(env_open(&e));
  accel_module_t* module = NULL;
  ASSERT_OK(accel_module_create(e.device, kOpenclC, sizeof(kOpenclC) - 1,
                                &module));
  ASSERT(last_image_is(&e, kOpenclC, sizeof(kOpenclC) - 1));
  accel_module_release(module);
  ASSERT_OK(accel_module_create(e.device, kSpirv, sizeof(kSpirv), &module));
  ASSERT(last_image_is(&e, kSpirv, sizeof(kSpirv)));
  accel_module_release(module);
  // The plugin's build failure comes back as it said it.
  static const char bad[] = "__kernel void f() { BUILD_FAILS }";
  ASSERT_STATUS(accel_module_create(e.device, bad, sizeof(bad) - 1, &module),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "build failed");
  env_close(&e);
}

TEST(cubin_still_rejected_with_todays_message) {
  env_t e;
  ASSERT(env_open(&e));
  unsigned char cubin[64];
  make_cubin(cubin);
  accel_module_t* module = NULL;
  ASSERT_STATUS(accel_module_create(e.device, cubin, sizeof(cubin), &module),
                ACCEL_ERROR_INCOMPATIBLE);
  ASSERT_STR_CONTAINS(accel_last_error(),
                      "accel_module_create: module holds a CUDA cubin for "
                      "sm_90 (cuda-sm_90); fxformats:0 loads fxcl-test, "
                      "opencl-c, spirv");
  ASSERT_NULL(module);
  env_close(&e);
}

// Launches with one buffer argument at `offset`.
static accel_status_t launch_at(env_t* e, accel_buffer_t* buffer,
                                size_t offset) {
  accel_module_t* module = NULL;
  accel_kernel_t* kernel = NULL;
  accel_status_t status = accel_module_create(e->device, kOpenclC,
                                              sizeof(kOpenclC) - 1, &module);
  if (status == ACCEL_OK) status = accel_kernel_create(module, "vadd", &kernel);
  accel_launch_config_t config;
  accel_launch_config_init(&config);
  accel_kernel_arg_t arg = {.kind = ACCEL_KERNEL_ARG_BUFFER,
                            .buffer = buffer,
                            .offset = offset};
  if (status == ACCEL_OK) {
    status = accel_kernel_launch(kernel, e->stream, &config, 1, &arg);
  }
  accel_kernel_release(kernel);
  accel_module_release(module);
  return status;
}

// The device's buffer_offset_alignment, or 0 if it cannot be read.
static uint32_t alignment(env_t* e) {
  accel_device_info_t info;
  info.struct_size = sizeof(info);
  if (accel_device_query_info(e->device, &info) != ACCEL_OK) return 0;
  return info.buffer_offset_alignment;
}

TEST(misaligned_buffer_offset_is_unsupported) {
  env_t e;
  ASSERT(env_open(&e));
  uint32_t align = alignment(&e);
  ASSERT_GT(align, 1u);
  accel_buffer_t* buffer = NULL;
  ASSERT_OK(accel_buffer_create(e.device, 3 * align, &buffer));
  ASSERT_STATUS(launch_at(&e, buffer, 64), ACCEL_ERROR_UNSUPPORTED);
  char want[96];
  snprintf(want, sizeof(want), "buffer_offset_alignment of %u bytes", align);
  ASSERT_STR_CONTAINS(accel_last_error(), want);
  ASSERT_STR_CONTAINS(accel_last_error(), "(buffer offset 64)");
  ASSERT_OK(launch_at(&e, buffer, align));
  ASSERT_EQ(last_offset(&e, 0) % align, 0u);
  accel_buffer_release(buffer);
  env_close(&e);
}

// Every buffer, whatever its size and however many precede it in a
// segment, starts on a multiple of the device's alignment.
TEST(allocator_aligns_every_buffer) {
  env_t e;
  ASSERT(env_open(&e));
  uint32_t align = alignment(&e);
  ASSERT_GT(align, 1u);
  static const size_t sizes[] = {1,    100,       513,         3000,
                                 4097, 1u << 20,  (1u << 20) + 1,
                                 7,    3u << 20,  (5u << 20) + 3};
  enum { N = sizeof(sizes) / sizeof(sizes[0]) };
  accel_buffer_t* buffers[2 * N] = {NULL};
  for (size_t round = 0; round < 2; round++) {
    for (size_t i = 0; i < N; i++) {
      accel_buffer_t** b = &buffers[round * N + i];
      ASSERT_OK(accel_buffer_create(e.device, sizes[i], b));
      ASSERT_OK(launch_at(&e, *b, 0));
      ASSERT_EQ(last_offset(&e, 0) % align, 0u);
    }
    // Free every other one so the second round reuses split blocks.
    for (size_t i = 0; i < N; i += 2) {
      accel_buffer_release(buffers[round * N + i]);
      buffers[round * N + i] = NULL;
    }
  }
  for (size_t i = 0; i < 2 * N; i++) accel_buffer_release(buffers[i]);
  env_close(&e);
}

TEST(larger_than_max_alloc_size_is_refused) {
  env_t e;
  ASSERT(env_open(&e));
  accel_buffer_t* buffer = NULL;
  ASSERT_STATUS(accel_buffer_create(e.device, (64u << 20) + 1, &buffer),
                ACCEL_ERROR_OUT_OF_DEVICE_MEMORY);
  ASSERT_STR_CONTAINS(accel_last_error(),
                      "largest single allocation is 64.00 MiB");
  ASSERT_NULL(buffer);
  ASSERT_OK(accel_buffer_create(e.device, 64u << 20, &buffer));
  accel_buffer_release(buffer);
  env_close(&e);
}

TEST(launch_limits) {
  env_t e;
  ASSERT(env_open(&e));
  accel_module_t* module = NULL;
  accel_kernel_t* kernel = NULL;
  ASSERT_OK(accel_module_create(e.device, kOpenclC, sizeof(kOpenclC) - 1,
                                &module));
  ASSERT_OK(accel_kernel_create(module, "vadd", &kernel));
  accel_launch_config_t c;
  accel_launch_config_init(&c);
  c.grid[0] = 1025;
  ASSERT_STATUS(accel_kernel_launch(kernel, e.stream, &c, 0, NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "at most 1024 blocks in x");
  c.grid[0] = 1024;
  ASSERT_OK(accel_kernel_launch(kernel, e.stream, &c, 0, NULL));
  // y and z are unlimited, but not the total.
  c.grid[1] = UINT32_MAX;
  c.grid[2] = UINT32_MAX;
  ASSERT_STATUS(accel_kernel_launch(kernel, e.stream, &c, 0, NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "more than 2^63 blocks");
  // Just above 2^63 (below 2^64) is refused; just below runs.
  c.grid[2] = (1u << 21) + 1;
  ASSERT_STATUS(accel_kernel_launch(kernel, e.stream, &c, 0, NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  c.grid[2] = 1u << 21;
  ASSERT_OK(accel_kernel_launch(kernel, e.stream, &c, 0, NULL));
  accel_launch_config_init(&c);
  c.shared_mem_bytes = 32769;
  ASSERT_STATUS(accel_kernel_launch(kernel, e.stream, &c, 0, NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "allows at most 32768 bytes");
  c.shared_mem_bytes = 32768;
  ASSERT_OK(accel_kernel_launch(kernel, e.stream, &c, 0, NULL));
  static unsigned char big[ACCEL_KERNEL_ARG_VALUE_MAX + 1];
  accel_kernel_arg_t arg = {.kind = ACCEL_KERNEL_ARG_VALUE,
                            .size = sizeof(big),
                            .value = big};
  accel_launch_config_init(&c);
  ASSERT_STATUS(accel_kernel_launch(kernel, e.stream, &c, 1, &arg),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "the limit is 4096 bytes");
  arg.size = ACCEL_KERNEL_ARG_VALUE_MAX;
  ASSERT_OK(accel_kernel_launch(kernel, e.stream, &c, 1, &arg));
  accel_kernel_release(kernel);
  accel_module_release(module);
  env_close(&e);
}

// Builds a bundle of `n` images into a malloc'd block.
static void* bundle(size_t n, const char* const* tags,
                    const void* const* images, const size_t* sizes,
                    size_t* out_size) {
  if (accel_bundle_write(n, tags, images, sizes, NULL, 0, out_size) !=
      ACCEL_OK) {
    return NULL;
  }
  void* out = malloc(*out_size);
  if (out != NULL && accel_bundle_write(n, tags, images, sizes, out,
                                        *out_size, out_size) != ACCEL_OK) {
    free(out);
    out = NULL;
  }
  return out;
}

TEST(bundle_picks_by_device_formats) {
  env_t e;
  ASSERT(env_open(&e));
  unsigned char cubin[64];
  make_cubin(cubin);
  static const char bad[] = "__kernel void f() { BUILD_FAILS }";
  // The device lists opencl-c before spirv: the text is tried first.
  const char* tags[] = {"cuda-sm_90", "spirv", "opencl-c"};
  const void* images[] = {cubin, kSpirv, kOpenclC};
  size_t sizes[] = {sizeof(cubin), sizeof(kSpirv), sizeof(kOpenclC) - 1};
  size_t size = 0;
  void* b = bundle(3, tags, images, sizes, &size);
  ASSERT_NOT_NULL(b);
  accel_module_t* module = NULL;
  ASSERT_OK(accel_module_create(e.device, b, size, &module));
  ASSERT(last_image_is(&e, kOpenclC, sizeof(kOpenclC) - 1));
  accel_module_release(module);
  free(b);
  // When the text fails to build, the SPIR-V is next.
  images[2] = bad;
  sizes[2] = sizeof(bad) - 1;
  b = bundle(3, tags, images, sizes, &size);
  ASSERT_NOT_NULL(b);
  ASSERT_OK(accel_module_create(e.device, b, size, &module));
  ASSERT(last_image_is(&e, kSpirv, sizeof(kSpirv)));
  accel_module_release(module);
  free(b);
  // Only the failing text fits: its error, naming the entry.
  const char* tags1[] = {"cuda-sm_90", "opencl-c"};
  const void* images1[] = {cubin, bad};
  size_t sizes1[] = {sizeof(cubin), sizeof(bad) - 1};
  b = bundle(2, tags1, images1, sizes1, &size);
  ASSERT_NOT_NULL(b);
  ASSERT_STATUS(accel_module_create(e.device, b, size, &module),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "[opencl-c: fixture: build failed");
  free(b);
  // Nothing fits.
  const char* tags2[] = {"cuda-sm_90", "elf-aarch64"};
  b = bundle(2, tags2, images1, sizes1, &size);
  ASSERT_NOT_NULL(b);
  ASSERT_STATUS(accel_module_create(e.device, b, size, &module),
                ACCEL_ERROR_INCOMPATIBLE);
  ASSERT_STR_CONTAINS(accel_last_error(),
                      "the kernel bundle holds cuda-sm_90, elf-aarch64; "
                      "fxformats:0 loads fxcl-test, opencl-c, spirv");
  ASSERT_NULL(module);
  // A corrupt bundle is refused, not loaded.
  ((unsigned char*)b)[12] = 0xff;  // entry count
  ASSERT_STATUS(accel_module_create(e.device, b, size, &module),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "kernel bundle");
  free(b);
  env_close(&e);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
