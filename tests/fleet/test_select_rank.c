// SPDX-License-Identifier: MIT
//
// "auto" ranks devices by type (GPU > OTHER > CPU, the native cpu backend
// first among CPU devices), then plugin priority. fx_probe has priority
// 500, above every first-party backend, and takes its type from
// ACCEL_FX_PROBE_TYPE.
#include <accel/accel.h>
#include <stdlib.h>
#include <string.h>

#include "loader_util.h"
#include "test.h"

static void expect_auto(test_result_t* test_result_, const char* type, const char* count,
                        const char* want) {
  setenv("ACCEL_FX_PROBE_TYPE", type, 1);
  setenv("ACCEL_FX_PROBE_COUNT", count, 1);
  lu_restart(lu_env_path("ACCEL_TEST_FX_PROBE"));
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_select("auto", &device));
  ASSERT_STR_EQ(accel_device_uri(device), want);
  accel_device_release(device);
}

// A CPU-type device of a high-priority plugin (PoCL on a machine without
// GPUs) does not displace the native CPU backend.
TEST(cpu_type_device_loses_to_cpu0) { expect_auto(test_result_, "cpu", "1", "cpu:0"); }

TEST(gpu_device_wins) { expect_auto(test_result_, "gpu", "1", "fxprobe:0"); }

TEST(other_device_beats_cpu) { expect_auto(test_result_, "other", "1", "fxprobe:0"); }

// A plugin with no device is skipped whatever its priority.
TEST(no_device_no_pick) { expect_auto(test_result_, "gpu", "0", "cpu:0"); }

// Type outranks priority: fxgood (priority 50, OTHER) loses to a GPU of
// fxprobe and beats cpu:0; fxprobe with CPU devices loses to fxgood.
TEST(type_before_priority) {
  char path[8192];
  snprintf(path, sizeof(path), "%s:%s", lu_env_path("ACCEL_TEST_FX_PROBE"),
           lu_env_path("ACCEL_TEST_FX_GOOD"));
  setenv("ACCEL_FX_PROBE_TYPE", "cpu", 1);
  setenv("ACCEL_FX_PROBE_COUNT", "2", 1);
  lu_restart(path);
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_select("auto", &device));
  ASSERT_STR_EQ(accel_device_uri(device), "fxgood:0");
  accel_device_release(device);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
