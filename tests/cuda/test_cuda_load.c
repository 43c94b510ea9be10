// SPDX-License-Identifier: MIT
//
// The CUDA plugin on a machine where it cannot run (CI): it loads, and the
// load report says UNAVAILABLE with the reason given in CUDA_TEST_EXPECT
// (a substring). Asking for it explicitly fails with the same reason, and
// cpu:0 still works. Where a usable driver is present the test skips.
#include <accel/accel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

// Finds the report entry of the plugin named "cuda".
static bool find_cuda(accel_plugin_report_t* out) {
  size_t count = 0;
  if (accel_plugin_report_count(&count) != ACCEL_OK) return false;
  for (size_t i = 0; i < count; i++) {
    accel_plugin_report_t r = {.struct_size = sizeof(r)};
    if (accel_plugin_report_get(i, &r) == ACCEL_OK &&
        strcmp(r.name, "cuda") == 0) {
      *out = r;
      return true;
    }
  }
  return false;
}

TEST(report_unavailable) {
  const char* expect = getenv("CUDA_TEST_EXPECT");
  ASSERT_NOT_NULL(expect);
  accel_plugin_report_t r;
  ASSERT(find_cuda(&r));
  if (r.status == ACCEL_OK) SKIP("a CUDA driver is installed here");
  printf("  report: %s at stage %d: %s\n", accel_status_string(r.status),
         (int)r.stage, r.message);
  ASSERT_EQ(r.status, ACCEL_ERROR_UNAVAILABLE);
  ASSERT_EQ(r.stage, ACCEL_PLUGIN_STAGE_INITIALISED);
  ASSERT_EQ(r.device_count, 0);
  ASSERT_EQ(r.priority, 300);
  ASSERT_STR_CONTAINS(r.message, expect);
}

TEST(explicit_request_names_reason) {
  accel_plugin_report_t r;
  ASSERT(find_cuda(&r));
  if (r.status == ACCEL_OK) SKIP("a CUDA driver is installed here");
  accel_device_t* device = NULL;
  ASSERT_STATUS(accel_device_open("cuda:0", &device), ACCEL_ERROR_UNAVAILABLE);
  ASSERT_NULL(device);
  ASSERT_STR_CONTAINS(accel_last_error(), getenv("CUDA_TEST_EXPECT"));
}

// cpu:0 opens whatever CUDA's state, and `auto` never picks an unusable
// CUDA (on a GPU node it may pick a usable one, or another GPU).
TEST(cpu_still_works) {
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &device));
  ASSERT_STR_EQ(accel_device_backend(device), "cpu");
  accel_device_release(device);
  accel_plugin_report_t r;
  ASSERT(find_cuda(&r));
  ASSERT_OK(accel_device_default(&device));
  if (r.status != ACCEL_OK) {
    ASSERT(strcmp(accel_device_backend(device), "cuda") != 0);
  }
  accel_device_release(device);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
