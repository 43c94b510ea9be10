// SPDX-License-Identifier: MIT
//
// ACCEL_CPU_DEVICES and ACCEL_CPU_MEMORY_LIMIT handling. The same program
// runs under several environments (tests/cpu/CMakeLists.txt); the
// variable CPU_TEST_EXPECT says what to expect:
// - a number N: the cpu backend has N devices;
// - a variable name (ACCEL_CPU_DEVICES or ACCEL_CPU_MEMORY_LIMIT): that
//   variable holds a bad value, so the cpu backend is unusable with
//   ACCEL_ERROR_INVALID_ARGUMENT and a message quoting the value.
// Unset means the default of one device. CPU_TEST_EXPECT_TOTAL, when set,
// is the total memory each device must report.
#include <stdlib.h>
#include <string.h>

#include "cpu_test.h"
#include "test.h"

// Finds the load report entry of the cpu plugin.
static bool find_cpu_report(accel_plugin_report_t* out) {
  size_t count = 0;
  if (accel_plugin_report_count(&count) != ACCEL_OK) return false;
  for (size_t i = 0; i < count; i++) {
    memset(out, 0, sizeof(*out));
    out->struct_size = sizeof(*out);
    if (accel_plugin_report_get(i, out) == ACCEL_OK &&
        strcmp(out->name, "cpu") == 0) {
      return true;
    }
  }
  return false;
}

TEST(environment) {
  const char* expect = getenv("CPU_TEST_EXPECT");
  if (expect == NULL || expect[0] == '\0') expect = "1";
  accel_plugin_report_t report;
  ASSERT(find_cpu_report(&report));
  printf("  CPU_TEST_EXPECT=%s: stage %d, %s, %u device(s), \"%s\"\n", expect,
         (int)report.stage, accel_status_string(report.status),
         report.device_count, report.message);
  accel_device_t* device = NULL;

  if (expect[0] < '0' || expect[0] > '9') {
    // `expect` names the variable holding a bad value.
    const char* value = getenv(expect);
    ASSERT_NOT_NULL(value);
    char quoted[256];
    snprintf(quoted, sizeof(quoted), "%s='%s'", expect, value);
    ASSERT_EQ(report.stage, ACCEL_PLUGIN_STAGE_INITIALISED);
    ASSERT_EQ(report.status, ACCEL_ERROR_INVALID_ARGUMENT);
    ASSERT_STR_CONTAINS(report.message, quoted);
    ASSERT_STATUS(accel_device_open("cpu:0", &device),
                  ACCEL_ERROR_INVALID_ARGUMENT);
    ASSERT_STR_CONTAINS(accel_last_error(), quoted);
    ASSERT_NULL(device);
    return;
  }

  uint32_t n = (uint32_t)strtoul(expect, NULL, 10);
  ASSERT_EQ(report.status, ACCEL_OK);
  ASSERT_EQ(report.device_count, n);
  const char* total_text = getenv("CPU_TEST_EXPECT_TOTAL");
  for (uint32_t i = 0; i < n; i++) {
    char uri[16];
    snprintf(uri, sizeof(uri), "cpu:%u", i);
    ASSERT_OK(accel_device_open(uri, &device));
    if (total_text != NULL) {
      uint64_t free_bytes = 0, total = 0;
      ASSERT_OK(accel_device_query_memory(device, &free_bytes, &total));
      ASSERT_EQ(total, strtoull(total_text, NULL, 10));
    }
    accel_device_release(device);
    device = NULL;
  }
  char uri[16];
  snprintf(uri, sizeof(uri), "cpu:%u", n);
  ASSERT_STATUS(accel_device_open(uri, &device), ACCEL_ERROR_NOT_FOUND);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
