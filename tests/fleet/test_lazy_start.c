// SPDX-License-Identifier: MIT
//
// Lazy start: discovery loads every plugin but counts a plugin's devices
// (which starts its driver) only when selection or the caller needs them.
// The fx_probe fixture logs each device_count() call to a file.
#include <accel/accel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader_util.h"
#include "test.h"

static char* log_path;

// Lines the fixture wrote since the last reset.
static int probe_calls(void) {
  FILE* f = fopen(log_path, "r");
  if (f == NULL) return 0;
  int lines = 0;
  for (int c; (c = fgetc(f)) != EOF;) lines += c == '\n';
  fclose(f);
  return lines;
}

static void restart(void) {
  remove(log_path);
  lu_restart(lu_env_path("ACCEL_TEST_FX_PROBE"));
}

TEST(backend_cpu_does_not_start_other_plugins) {
  restart();
  setenv("ACCEL_BACKEND", "cpu", 1);
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_default(&device));
  ASSERT_STR_EQ(accel_device_uri(device), "cpu:0");
  ASSERT_EQ(probe_calls(), 0);
  accel_device_release(device);

  setenv("ACCEL_BACKEND", "cpu:0", 1);
  ASSERT_OK(accel_device_default(&device));
  accel_device_release(device);
  ASSERT_OK(accel_device_open("cpu", &device));
  accel_device_release(device);
  ASSERT_EQ(probe_calls(), 0);
  unsetenv("ACCEL_BACKEND");
}

TEST(auto_starts_every_plugin) {
  restart();
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_select("auto", &device));
  ASSERT_STR_EQ(accel_device_uri(device), "fxprobe:0");
  ASSERT_EQ(probe_calls(), 1);
  accel_device_release(device);
  ASSERT_OK(accel_device_select("", &device));  // counted once only
  accel_device_release(device);
  ASSERT_EQ(probe_calls(), 1);
}

TEST(named_backend_starts_only_itself) {
  restart();
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("fxprobe:0", &device));
  accel_device_release(device);
  ASSERT_EQ(probe_calls(), 1);
}

// Every call that reports device counts counts them first, so the report
// never shows an unstarted plugin as having 0 devices.
TEST(reports_count_first) {
  restart();
  accel_plugin_report_t r = {.struct_size = sizeof(r)};
  ASSERT_EQ(lu_report_find_name("fxprobe", &r), 1);
  ASSERT_EQ(r.status, ACCEL_OK);
  ASSERT_EQ(r.stage, ACCEL_PLUGIN_STAGE_INITIALISED);
  ASSERT_EQ(r.device_count, 1);
  ASSERT_EQ(probe_calls(), 1);

  restart();
  uint32_t count = 0;
  ASSERT_OK(accel_device_count(&count));
  ASSERT_GE(count, 2);  // fxprobe:0 and cpu:0
  ASSERT_EQ(probe_calls(), 1);
}

int main(int argc, char** argv) {
  char* dir = lu_tempdir();
  if (dir == NULL) return 1;
  log_path = lu_join(dir, "probe.log");
  setenv("ACCEL_FX_PROBE_LOG", log_path, 1);
  int rc = test_main(argc, argv);
  accel_shutdown();
  remove(log_path);
  free(log_path);
  free(dir);
  return rc;
}
