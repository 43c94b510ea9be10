// SPDX-License-Identifier: MIT
//
// accel_plugin_load(): loading one more plugin by explicit path after
// initialisation.
#include <accel/accel.h>
#include <unistd.h>

#include "loader_util.h"
#include "test.h"

static size_t report_count(void) {
  size_t count = 0;
  if (accel_plugin_report_count(&count) != ACCEL_OK) return SIZE_MAX;
  return count;
}

TEST(explicit_path) {
  const char* good = lu_env_path("ACCEL_TEST_FX_GOOD");
  ASSERT_NOT_NULL(good);
  lu_restart("");
  size_t before = report_count();
  ASSERT(before != SIZE_MAX);
  ASSERT_EQ(lu_report_find(good, NULL), 0);
  accel_device_t* device = NULL;
  ASSERT(accel_device_open("fxgood", &device) != ACCEL_OK);

  ASSERT_OK(accel_plugin_load(good));
  ASSERT_EQ(report_count(), before + 1);
  accel_plugin_report_t r;
  ASSERT_EQ(lu_report_find(good, &r), 1);
  ASSERT_EQ(r.status, ACCEL_OK);
  ASSERT_EQ(r.stage, ACCEL_PLUGIN_STAGE_INITIALISED);
  ASSERT_EQ(r.origin, ACCEL_ORIGIN_API);
  ASSERT_EQ(r.device_count, 1);
  ASSERT(lu_roundtrip("fxgood:0"));
  uint32_t devices = 0;
  ASSERT_OK(accel_device_count(&devices));
  ASSERT_GE(devices, 2);

  // Already loaded, by the same path or another spelling of it: OK, and
  // nothing new in the report.
  ASSERT_OK(accel_plugin_load(good));
  ASSERT_EQ(report_count(), before + 1);
  char* dir = lu_tempdir();
  ASSERT_NOT_NULL(dir);
  char* link = lu_join(dir, "libaccel-link.so");
  char* real = lu_realpath(good);
  ASSERT_EQ(symlink(real, link), 0);
  accel_status_t via_link = accel_plugin_load(link);
  lu_rmtree(dir);
  free(dir);
  free(link);
  free(real);
  ASSERT_OK(via_link);
  ASSERT_EQ(report_count(), before + 1);
  ASSERT_EQ(lu_report_find_name("fxgood", NULL), 1);
  ASSERT(lu_roundtrip("cpu:0"));
}

TEST(explicit_path_failures) {
  lu_restart("");
  ASSERT_STATUS(accel_plugin_load(NULL), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT(accel_last_error()[0] != '\0');
  ASSERT_STATUS(accel_plugin_load("/nonexistent-accel/libaccel-none.so"),
                ACCEL_ERROR_NOT_FOUND);
  ASSERT(accel_last_error()[0] != '\0');

  const char* nullreq = lu_env_path("ACCEL_TEST_FX_NULLREQ");
  ASSERT_NOT_NULL(nullreq);
  ASSERT_STATUS(accel_plugin_load(nullreq), ACCEL_ERROR_INCOMPATIBLE);
  accel_plugin_report_t r;
  ASSERT_EQ(lu_report_find(nullreq, &r), 1);
  ASSERT_EQ(r.status, ACCEL_ERROR_INCOMPATIBLE);
  ASSERT_EQ(r.origin, ACCEL_ORIGIN_API);
  ASSERT_STR_CONTAINS(r.message, "required entry device_ops.mem_alloc");

  const char* unavail = lu_env_path("ACCEL_TEST_FX_UNAVAIL");
  ASSERT_NOT_NULL(unavail);
  ASSERT_STATUS(accel_plugin_load(unavail), ACCEL_ERROR_UNAVAILABLE);
  ASSERT_STR_CONTAINS(accel_last_error(), "fixture: driver not installed");
  ASSERT(lu_roundtrip("cpu:0"));
}

// An explicitly loaded plugin is part of the state accel_shutdown() resets.
TEST(explicit_load_gone_after_shutdown) {
  const char* good = lu_env_path("ACCEL_TEST_FX_GOOD");
  ASSERT_NOT_NULL(good);
  lu_restart("");
  ASSERT_OK(accel_plugin_load(good));
  ASSERT_EQ(lu_report_find(good, NULL), 1);
  lu_restart("");
  ASSERT_EQ(lu_report_find(good, NULL), 0);
  accel_device_t* device = NULL;
  ASSERT(accel_device_open("fxgood", &device) != ACCEL_OK);
  ASSERT_NULL(device);
  // And it can be loaded again.
  ASSERT_OK(accel_plugin_load(good));
  ASSERT(lu_roundtrip("fxgood:0"));
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
