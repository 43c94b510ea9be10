// SPDX-License-Identifier: MIT
//
// Device counts from plugins are capped (4096 per plugin) and summed in 64
// bits: plugins reporting 2^31 devices neither wrap the total nor make the
// core allocate gigabytes, and cpu:0 stays reachable.
#include <accel/accel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader_util.h"
#include "test.h"

static void restart_two(const char* count) {
  char path[8192];
  snprintf(path, sizeof(path), "%s:%s", lu_env_path("ACCEL_TEST_FX_PROBE"),
           lu_env_path("ACCEL_TEST_FX_PROBE2"));
  setenv("ACCEL_FX_PROBE_COUNT", count, 1);
  lu_restart(path);
}

TEST(huge_counts_are_capped_and_summed) {
  restart_two("2147483648");
  uint32_t count = 0;
  ASSERT_OK(accel_device_count(&count));
  // 4096 + 4096 + cpu:0 (other first-party plugins have no device here).
  ASSERT_GE(count, 2 * 4096 + 1);
  ASSERT_LT(count, 2 * 4096 + 64);
  accel_plugin_report_t r = {.struct_size = sizeof(r)};
  ASSERT_EQ(lu_report_find_name("fxprobe", &r), 1);
  ASSERT_EQ(r.status, ACCEL_OK);
  ASSERT_EQ(r.device_count, 4096);
  ASSERT_STR_CONTAINS(r.message, "reports 2147483648 devices");
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("fxprobe2:4095", &device));
  accel_device_release(device);
  ASSERT_STATUS(accel_device_open("fxprobe2:4096", &device),
                ACCEL_ERROR_NOT_FOUND);
  ASSERT_OK(accel_device_open("cpu:0", &device));
  accel_device_release(device);
}

TEST(max_uint32_count) {
  restart_two("4294967295");
  uint32_t count = 0;
  ASSERT_OK(accel_device_count(&count));
  ASSERT_GE(count, 2 * 4096 + 1);
  ASSERT_LT(count, 2 * 4096 + 64);
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_get(count - 1, &device));  // the last is reachable
  accel_device_release(device);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
