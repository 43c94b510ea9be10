// SPDX-License-Identifier: MIT
//
// ABI 1.3 checks on cpu:0: a grid of (2^32-1)^3 blocks (once accepted and
// never finished) is refused by the CPU plugin's max_grid; a module file
// that is not a regular file (/dev/zero, a FIFO, a directory) is refused
// before anything is read; a kernel bundle holding the CPU module
// (KERNELS_CPU_MODULE) beside images for other devices loads and runs the
// CPU one; the load report gives the CPU plugin's ABI minor.
#include <accel/plugin.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "loader_util.h"
#include "test.h"

// Reads the whole file at `path` (malloc'd), or NULL.
static void* read_all(const char* path, size_t* out_size) {
  FILE* f = path != NULL ? fopen(path, "rb") : NULL;
  if (f == NULL) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  void* data = n > 0 ? malloc((size_t)n) : NULL;
  if (data != NULL && fread(data, 1, (size_t)n, f) != (size_t)n) {
    free(data);
    data = NULL;
  }
  fclose(f);
  *out_size = (size_t)n;
  return data;
}

// Opens cpu:0 and, when `out_info` is not NULL, reads its properties.
static accel_device_t* cpu(accel_device_info_t* out_info) {
  accel_device_t* device = NULL;
  if (accel_device_open("cpu:0", &device) != ACCEL_OK) {
    fprintf(stderr, "cpu:0: %s\n", accel_last_error());
    return NULL;
  }
  if (out_info != NULL) {
    out_info->struct_size = sizeof(*out_info);
    if (accel_device_query_info(device, out_info) != ACCEL_OK) {
      fprintf(stderr, "cpu:0: %s\n", accel_last_error());
      accel_device_release(device);
      return NULL;
    }
  }
  return device;
}

TEST(huge_grid_is_refused) {
  size_t size = 0;
  void* image = read_all(getenv("KERNELS_CPU_MODULE"), &size);
  ASSERT_NOT_NULL(image);
  accel_device_info_t info;
  accel_device_t* device = cpu(&info);
  ASSERT_NOT_NULL(device);
  ASSERT_EQ(info.max_grid[0], 0x7fffffffu);
  ASSERT_EQ(info.max_grid[1], 65535u);
  accel_module_t* module = NULL;
  accel_kernel_t* kernel = NULL;
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_module_create(device, image, size, &module));
  ASSERT_OK(accel_kernel_create(module, "kt_add_one", &kernel));
  ASSERT_OK(accel_stream_create(device, 0, &stream));
  accel_launch_config_t c;
  accel_launch_config_init(&c);
  c.grid[0] = c.grid[1] = c.grid[2] = UINT32_MAX;
  ASSERT_STATUS(accel_kernel_launch(kernel, stream, &c, 0, NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "cpu:0 allows at most 2147483647");
  ASSERT_OK(accel_stream_synchronize(stream));
  accel_stream_release(stream);
  accel_kernel_release(kernel);
  accel_module_release(module);
  accel_device_release(device);
  free(image);
}

TEST(non_regular_module_files_are_refused) {
  accel_device_t* device = cpu(NULL);
  ASSERT_NOT_NULL(device);
  accel_module_t* module = NULL;
  ASSERT_STATUS(accel_module_create_from_file(device, "/dev/zero", &module),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(),
                      "'/dev/zero' is a character device");
  char* dir = lu_tempdir();
  ASSERT_NOT_NULL(dir);
  ASSERT_STATUS(accel_module_create_from_file(device, dir, &module),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "is a directory");
  // A FIFO with no writer: opening it must not block.
  char* fifo = lu_join(dir, "fifo");
  ASSERT_EQ(mkfifo(fifo, 0600), 0);
  ASSERT_STATUS(accel_module_create_from_file(device, fifo, &module),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "is a FIFO");
  ASSERT_NULL(module);
  unlink(fifo);
  free(fifo);
  // An empty regular file is still refused as empty.
  char* empty = lu_join(dir, "empty.so");
  FILE* f = fopen(empty, "wb");
  ASSERT_NOT_NULL(f);
  fclose(f);
  ASSERT_STATUS(accel_module_create_from_file(device, empty, &module),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "is empty");
  unlink(empty);
  free(empty);
  lu_rmtree(dir);
  free(dir);
  accel_device_release(device);
}

TEST(bundle_runs_the_cpu_image) {
  size_t size = 0;
  void* so = read_all(getenv("KERNELS_CPU_MODULE"), &size);
  ASSERT_NOT_NULL(so);
  accel_device_info_t info;
  accel_device_t* device = cpu(&info);
  ASSERT_NOT_NULL(device);
  static const uint32_t spirv[] = {0x07230203u, 0x00010000u, 0, 1, 0};
  static const char text[] = "__kernel void kt_add_one() {}";
  const char* tags[] = {"spirv", "opencl-c", info.module_target};
  const void* images[] = {spirv, text, so};
  size_t sizes[] = {sizeof(spirv), sizeof(text) - 1, size};
  size_t bundle_size = 0;
  ASSERT_OK(accel_bundle_write(3, tags, images, sizes, NULL, 0, &bundle_size));
  unsigned char* bundle = malloc(bundle_size);
  ASSERT_NOT_NULL(bundle);
  ASSERT_OK(accel_bundle_write(3, tags, images, sizes, bundle, bundle_size,
                               &bundle_size));
  accel_module_t* module = NULL;
  accel_kernel_t* kernel = NULL;
  accel_stream_t* stream = NULL;
  accel_buffer_t* x = NULL;
  ASSERT_OK(accel_module_create(device, bundle, bundle_size, &module));
  ASSERT_OK(accel_kernel_create(module, "kt_add_one", &kernel));
  ASSERT_OK(accel_stream_create(device, 0, &stream));
  float host[4] = {1, 2, 3, 4};
  ASSERT_OK(accel_buffer_create(device, sizeof(host), &x));
  ASSERT_OK(accel_buffer_write(x, 0, host, sizeof(host)));
  uint32_t n = 4;
  accel_kernel_arg_t args[2] = {
      {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = x},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = sizeof(n), .value = &n}};
  accel_launch_config_t c;
  accel_launch_config_init(&c);
  c.grid[0] = 4;
  ASSERT_OK(accel_kernel_launch(kernel, stream, &c, 2, args));
  ASSERT_OK(accel_stream_synchronize(stream));
  ASSERT_OK(accel_buffer_read(x, 0, host, sizeof(host)));
  ASSERT(host[0] == 2.0f && host[3] == 5.0f);
  // Without the CPU image nothing fits.
  ASSERT_OK(accel_bundle_write(2, tags, images, sizes, bundle, bundle_size,
                               &bundle_size));
  accel_module_t* none = NULL;
  ASSERT_STATUS(accel_module_create(device, bundle, bundle_size, &none),
                ACCEL_ERROR_INCOMPATIBLE);
  ASSERT_STR_CONTAINS(accel_last_error(), "the kernel bundle holds spirv, "
                                          "opencl-c; cpu:0 loads elf-");
  accel_buffer_release(x);
  accel_stream_release(stream);
  accel_kernel_release(kernel);
  accel_module_release(module);
  accel_device_release(device);
  free(bundle);
  free(so);
}

TEST(report_gives_abi_minor) {
  accel_plugin_report_t r;
  r.struct_size = sizeof(r);
  ASSERT_EQ(lu_report_find_name("cpu", &r), 1u);
  // The CPU plugin is built with this header: a device_ops table larger
  // than ABI 1.2's reads as this header's minor, an equal one as 1.2.
  size_t size_1_2 = offsetof(accel_device_ops_t, op_gemm_workspace) +
                    sizeof(((accel_device_ops_t*)0)->op_gemm_workspace);
  uint32_t want = sizeof(accel_device_ops_t) > size_1_2
                      ? ACCEL_PLUGIN_ABI_MINOR
                      : 2u;
  ASSERT_EQ(r.abi_minor, want);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
