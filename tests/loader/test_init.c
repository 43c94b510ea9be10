// SPDX-License-Identifier: MIT
//
// accel_init / accel_shutdown life cycle: lazy initialisation, shutdown and
// re-initialisation, options validation and the "already initialised with
// other options" rule.
#include <accel/accel.h>

#include "loader_util.h"
#include "test.h"

TEST(options_init_defaults) {
  accel_options_t options;
  memset(&options, 0xA5, sizeof(options));
  accel_options_init(&options);
  ASSERT_EQ(options.struct_size, sizeof(accel_options_t));
  ASSERT_NULL(options.plugin_path);
  ASSERT(!options.ignore_env_path);
  ASSERT(!options.ignore_install_dir);
  ASSERT_NULL(options.exclude);
  ASSERT_EQ(options.exclude_count, 0);
  ASSERT(options.probe == NULL);
  ASSERT_NULL(options.probe_user_data);
  accel_options_init(NULL);  // no-op, no crash
}

TEST(shutdown_then_reinit) {
  accel_shutdown();
  accel_shutdown();  // twice in a row, and before any init: harmless
  ASSERT(lu_roundtrip("cpu:0"));  // lazy init
  accel_shutdown();
  ASSERT(lu_roundtrip("cpu:0"));
  accel_shutdown();
  ASSERT_OK(accel_init(NULL));
  ASSERT(lu_roundtrip("cpu:0"));
  size_t count = 0;
  ASSERT_OK(accel_plugin_report_count(&count));
  ASSERT_GE(count, 1);
}

// accel_init(NULL) after an implicit init asks for the same (default)
// options, so it succeeds.
TEST(init_null_after_lazy_init) {
  lu_restart("");
  uint32_t devices = 0;
  ASSERT_OK(accel_device_count(&devices));
  ASSERT_OK(accel_init(NULL));
  ASSERT(lu_roundtrip("cpu:0"));
}

TEST(init_twice_with_other_options) {
  const char* good = lu_env_path("ACCEL_TEST_FX_GOOD");
  const char* unavail = lu_env_path("ACCEL_TEST_FX_UNAVAIL");
  ASSERT_NOT_NULL(good);
  ASSERT_NOT_NULL(unavail);
  lu_restart("");
  accel_options_t first, second;
  accel_options_init(&first);
  accel_options_init(&second);
  first.plugin_path = good;
  second.plugin_path = unavail;
  ASSERT_OK(accel_init(&first));
  ASSERT_STATUS(accel_init(&second), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT(accel_last_error()[0] != '\0');
  // The refused call changed nothing.
  ASSERT_EQ(lu_report_find(good, NULL), 1);
  ASSERT_EQ(lu_report_find(unavail, NULL), 0);
  ASSERT(lu_roundtrip("fxgood:0"));
  // After a shutdown the other options are accepted.
  accel_shutdown();
  ASSERT_OK(accel_init(&second));
  ASSERT_EQ(lu_report_find(good, NULL), 0);
  ASSERT_EQ(lu_report_find(unavail, NULL), 1);
}

// Calls after an explicit accel_init use its options, not the defaults.
TEST(explicit_init_is_kept) {
  const char* good = lu_env_path("ACCEL_TEST_FX_GOOD");
  ASSERT_NOT_NULL(good);
  lu_restart("");
  accel_options_t options;
  accel_options_init(&options);
  options.plugin_path = good;
  options.ignore_install_dir = true;
  ASSERT_OK(accel_init(&options));
  accel_device_t* device = NULL;
  ASSERT(accel_device_open("cpu:0", &device) != ACCEL_OK);
  ASSERT_NULL(device);
  ASSERT(lu_roundtrip("fxgood:0"));
  uint32_t devices = 0;
  ASSERT_OK(accel_device_count(&devices));
  ASSERT_EQ(devices, 1);
}

TEST(malformed_options) {
  accel_shutdown();
  accel_options_t options;
  accel_options_init(&options);
  options.struct_size = 0;
  ASSERT_STATUS(accel_init(&options), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT(accel_last_error()[0] != '\0');
  accel_options_init(&options);
  options.exclude_count = 2;  // with exclude NULL
  ASSERT_STATUS(accel_init(&options), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT(accel_last_error()[0] != '\0');
  // A refused init leaves the library uninitialised: proper options work.
  accel_options_init(&options);
  ASSERT_OK(accel_init(&options));
  ASSERT(lu_roundtrip("cpu:0"));
}

TEST(version_string) {
  char expected[32];
  snprintf(expected, sizeof(expected), "%d.%d.%d", ACCEL_VERSION_MAJOR,
           ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH);
  ASSERT_STR_EQ(accel_version_string(), expected);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
