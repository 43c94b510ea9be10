// SPDX-License-Identifier: MIT
//
// A plugin that fills only the ABI 1.2 device properties ("fxformats12",
// tests/kernels/fx_formats.c built with FX_PROPS_1_2, path in
// FX_FORMATS12) behaves as before ABI 1.3: it gets only images of its
// target, no OpenCL C or SPIR-V; no offset alignment, allocation, grid or
// shared-memory limit applies.
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "loader_util.h"
#include "test.h"

#if defined(__aarch64__)
#define HOST_MACHINE 183
#else
#define HOST_MACHINE 62
#endif

static const char kOpenclC[] =
    "__kernel void vadd(__global float* x) { x[0] += 1; }\n";
static const uint32_t kSpirv[] = {0x07230203u, 0x00010000u, 0, 1, 0};

static accel_device_t* open_device(void) {
  const char* path = lu_env_path("FX_FORMATS12");
  if (path == NULL) return NULL;
  lu_restart(path);
  accel_device_t* device = NULL;
  if (accel_device_open("fxformats12:0", &device) != ACCEL_OK) {
    fprintf(stderr, "open: %s\n", accel_last_error());
  }
  return device;
}

TEST(formats_are_refused_as_before) {
  accel_device_t* device = open_device();
  ASSERT_NOT_NULL(device);
  accel_device_info_t info;
  info.struct_size = sizeof(info);
  ASSERT_OK(accel_device_query_info(device, &info));
  ASSERT_STR_EQ(info.module_formats, "");
  ASSERT_EQ(info.max_alloc_size, 0u);
  ASSERT_EQ(info.buffer_offset_alignment, 0u);
  accel_module_t* module = NULL;
  ASSERT_STATUS(
      accel_module_create(device, kOpenclC, sizeof(kOpenclC) - 1, &module),
      ACCEL_ERROR_INCOMPATIBLE);
  ASSERT_STR_CONTAINS(accel_last_error(), "OpenCL C source");
  ASSERT_STR_CONTAINS(accel_last_error(), "; fxformats12:0 loads elf-");
  ASSERT_STATUS(accel_module_create(device, kSpirv, sizeof(kSpirv), &module),
                ACCEL_ERROR_INCOMPATIBLE);
  ASSERT_STR_CONTAINS(accel_last_error(),
                      "module holds a SPIR-V 1.0 module (little-endian) "
                      "(spirv); fxformats12:0 loads elf-");
  accel_device_release(device);
  accel_shutdown();
}

TEST(report_says_abi_1_2) {
  accel_device_t* device = open_device();
  ASSERT_NOT_NULL(device);
  accel_plugin_report_t r;
  r.struct_size = sizeof(r);
  ASSERT_EQ(lu_report_find_name("fxformats12", &r), 1u);
  ASSERT_EQ(r.abi_version, 1u);
  ASSERT_EQ(r.abi_minor, 2u);
  // A caller built before `abi_minor` still gets its fields.
  accel_plugin_report_t old;
  memset(&old, 0xab, sizeof(old));
  old.struct_size = (uint32_t)offsetof(accel_plugin_report_t, abi_minor);
  size_t count = 0;
  ASSERT_OK(accel_plugin_report_count(&count));
  ASSERT_OK(accel_plugin_report_get(0, &old));
  ASSERT_EQ(old.abi_minor, 0xababababu);  // not written
  accel_device_release(device);
  accel_shutdown();
}

TEST(no_abi13_limits_apply) {
  accel_device_t* device = open_device();
  ASSERT_NOT_NULL(device);
  unsigned char elf[64] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
  elf[18] = HOST_MACHINE;
  accel_module_t* module = NULL;
  accel_kernel_t* kernel = NULL;
  accel_stream_t* stream = NULL;
  accel_buffer_t* buffer = NULL;
  ASSERT_OK(accel_module_create(device, elf, sizeof(elf), &module));
  ASSERT_OK(accel_kernel_create(module, "k", &kernel));
  ASSERT_OK(accel_stream_create(device, 0, &stream));
  ASSERT_OK(accel_buffer_create(device, (64u << 20) + 1, &buffer));
  accel_launch_config_t c;
  accel_launch_config_init(&c);
  c.grid[0] = 100000;
  c.shared_mem_bytes = 1u << 20;
  accel_kernel_arg_t arg = {.kind = ACCEL_KERNEL_ARG_BUFFER,
                            .buffer = buffer,
                            .offset = 4};
  ASSERT_OK(accel_kernel_launch(kernel, stream, &c, 1, &arg));
  accel_buffer_release(buffer);
  accel_stream_release(stream);
  accel_kernel_release(kernel);
  accel_module_release(module);
  accel_device_release(device);
  accel_shutdown();
}

int main(int argc, char** argv) { return test_main(argc, argv); }
