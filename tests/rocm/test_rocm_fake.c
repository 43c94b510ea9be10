// SPDX-License-Identifier: MIT
//
// The ROCm plugin on the test-only HIP runtime (libfakehip, loaded through
// ACCEL_ROCM_RUNTIME by CMakeLists.txt), through the public API: device
// properties from hipDeviceGetAttribute and gcnArchName, the mapping of
// an asynchronous kernel fault and of device OOM to accel statuses. This
// checks the plugin's plumbing, not AMD hardware (docs/rocm-backend.md).
#include <accel/accel.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

TEST(rocm_props) {
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("rocm:0", &device));
  accel_device_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  ASSERT_OK(accel_device_query_info(device, &info));
  ASSERT_STR_EQ(info.backend, "rocm");
  ASSERT_STR_EQ(info.vendor, "AMD");
  ASSERT_STR_EQ(info.name, "Fake AMD GPU (fakehip)");
  // gcnArchName "gfx90a:sramecc+:xnack-": features stripped for the arch.
  ASSERT_STR_EQ(info.arch, "gfx90a");
  ASSERT_STR_EQ(info.module_target, "amdgcn-gfx90a");
  ASSERT_STR_CONTAINS(info.features, "gcnArchName=gfx90a:sramecc+:xnack-");
  ASSERT_STR_CONTAINS(info.driver_version, "HIP 5.2.21153");
  ASSERT_EQ(info.compute_units, 4);
  ASSERT_EQ(info.max_threads_per_block, 1024);
  ASSERT_EQ(info.simd_width, 64);
  ASSERT_EQ(info.total_memory, (uint64_t)8 << 30);
  // ABI 1.3 properties.
  ASSERT_EQ(info.max_alloc_size, (uint64_t)8 << 30);
  ASSERT_EQ(info.max_shared_mem_bytes, 65536);
  ASSERT_EQ(info.buffer_offset_alignment, 0);
  ASSERT_EQ(info.max_grid[0], 0x7fffffff);
  ASSERT_EQ(info.max_grid[1], 65535);
  ASSERT_STR_EQ(info.platform, "AMD ROCm/HIP 5.2.21153");
  accel_device_caps_t want = ACCEL_DEVICE_CAP_F16 | ACCEL_DEVICE_CAP_BF16 |
                             ACCEL_DEVICE_CAP_PINNED_MEMORY |
                             ACCEL_DEVICE_CAP_EVENT_TIMING |
                             ACCEL_DEVICE_CAP_KERNELS;
  ASSERT_EQ(info.caps & want, want);
  accel_device_release(device);
}

TEST(rocm_async_fault_is_device_lost) {
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("rocm:0", &device));
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &stream));
  accel_buffer_t* buffer = NULL;
  ASSERT_OK(accel_buffer_create(device, 4096, &buffer));
  // The fake reads FAKEHIP_FAULT at each launch; the fill is enqueued
  // fine and its fault surfaces at the synchronisation.
  setenv("FAKEHIP_FAULT", "accel_rocm_fill", 1);
  ASSERT_OK(accel_op_fill(stream, buffer, 0, ACCEL_DTYPE_F32, 1024, 1.0));
  accel_status_t status = accel_stream_synchronize(stream);
  unsetenv("FAKEHIP_FAULT");
  ASSERT_EQ(status, ACCEL_ERROR_DEVICE_LOST);
  ASSERT_STR_CONTAINS(accel_last_error(), "hipErrorIllegalAddress");
  accel_buffer_release(buffer);
  accel_stream_release(stream);
  accel_device_release(device);
}

TEST(rocm_out_of_device_memory) {
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("rocm:0", &device));
  accel_buffer_t* buffer = NULL;
  // The fake device has 8 GiB; hipErrorOutOfMemory maps to this status.
  ASSERT_EQ(accel_buffer_create(device, (size_t)16 << 30, &buffer),
            ACCEL_ERROR_OUT_OF_DEVICE_MEMORY);
  ASSERT_NULL(buffer);
  accel_device_release(device);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
