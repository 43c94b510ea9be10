// SPDX-License-Identifier: MIT
//
// The ROCm plugin on the test-only HIP runtime (libfakehip, loaded through
// ACCEL_ROCM_RUNTIME by CMakeLists.txt), through the public API: device
// properties from hipDeviceGetAttribute and gcnArchName and the mapping of
// an asynchronous kernel fault to DEVICE_LOST
// (tests/stand_in/stand_in_device_tests.h, shared with CUDA), and of
// device OOM to its status. This checks the plugin's plumbing, not AMD
// hardware (docs/rocm-backend.md).
#include <accel/accel.h>
#include <stdlib.h>
#include <string.h>

#include "stand_in/stand_in_device_tests.h"
#include "test.h"

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
