// SPDX-License-Identifier: MIT
//
// accel_options_t.exclude: an excluded candidate is reported as "excluded"
// and never opened. The excluded path is fx_crash, whose load() segfaults,
// so if exclusion did not work this test would crash (and fail).
#include <accel/accel.h>

#include "loader_util.h"
#include "test.h"

// Records every path the core is about to open.
typedef struct probe_log {
  char* paths[64];
  int count;
} probe_log_t;

static void probe_record(const char* path, void* user_data) {
  probe_log_t* log = user_data;
  // Compare real paths, whichever spelling the core passes.
  char* real = lu_realpath(path);
  if (log->count < 64) log->paths[log->count++] = real ? real : strdup(path);
}

static int probe_seen(const probe_log_t* log, const char* path) {
  int seen = 0;
  for (int i = 0; i < log->count; i++) {
    if (strcmp(log->paths[i], path) == 0) seen++;
  }
  return seen;
}

static void probe_clear(probe_log_t* log) {
  for (int i = 0; i < log->count; i++) free(log->paths[i]);
  log->count = 0;
}

// Checks the excluded entry for `crash` and that the probe never saw it
// while it did see the cpu plugin and `good`.
static void check_excluded(test_result_t* test_result_, const char* crash,
                           const char* good, const probe_log_t* log,
                           accel_origin_t origin) {
  char* crash_real = lu_realpath(crash);
  char* good_real = lu_realpath(good);
  accel_plugin_report_t r, cpu, fx;
  size_t matches = lu_report_find(crash, &r);
  size_t cpu_matches = lu_report_find_name("cpu", &cpu);
  size_t good_matches = lu_report_find(good, &fx);
  int crash_probed = probe_seen(log, crash_real);
  int good_probed = probe_seen(log, good_real);
  int cpu_probed = cpu_matches == 1 ? probe_seen(log, cpu.path) : 0;
  free(crash_real);
  free(good_real);

  ASSERT_EQ(matches, 1);
  ASSERT_EQ(r.stage, ACCEL_PLUGIN_STAGE_FOUND);
  ASSERT_EQ(r.status, ACCEL_ERROR_NOT_FOUND);
  ASSERT_STR_CONTAINS(r.message, "excluded");
  ASSERT_EQ(r.origin, origin);
  ASSERT_EQ(r.device_count, 0);
  ASSERT_EQ(crash_probed, 0);
  // The probe works, so not seeing fx_crash means it was never opened.
  ASSERT_EQ(cpu_matches, 1);
  ASSERT_EQ(cpu_probed, 1);
  ASSERT_EQ(good_matches, 1);
  ASSERT_EQ(fx.status, ACCEL_OK);
  ASSERT_EQ(good_probed, 1);
  ASSERT(lu_roundtrip("cpu:0"));
  ASSERT(lu_roundtrip("fxgood:0"));
}

// Excluded paths given through options.plugin_path.
TEST(exclude_api_path) {
  const char* crash = lu_env_path("ACCEL_TEST_FX_CRASH");
  const char* good = lu_env_path("ACCEL_TEST_FX_GOOD");
  ASSERT_NOT_NULL(crash);
  ASSERT_NOT_NULL(good);
  char* crash_real = lu_realpath(crash);
  char list[8192];
  snprintf(list, sizeof(list), "%s:%s", crash, good);
  const char* exclude[1] = {crash_real};
  probe_log_t log = {{NULL}, 0};
  accel_options_t options;
  accel_options_init(&options);
  options.plugin_path = list;
  options.exclude = exclude;
  options.exclude_count = 1;
  options.probe = probe_record;
  options.probe_user_data = &log;
  lu_restart("");
  accel_status_t status = accel_init(&options);
  free(crash_real);
  ASSERT_OK(status);
  check_excluded(test_result_, crash, good, &log, ACCEL_ORIGIN_API);
  probe_clear(&log);
}

// Excluded paths found through ACCEL_PLUGIN_PATH; the exclude array is
// overwritten after accel_init to show the core copied it.
TEST(exclude_env_path) {
  const char* crash = lu_env_path("ACCEL_TEST_FX_CRASH");
  const char* good = lu_env_path("ACCEL_TEST_FX_GOOD");
  ASSERT_NOT_NULL(crash);
  ASSERT_NOT_NULL(good);
  char list[8192];
  snprintf(list, sizeof(list), "%s:%s", good, crash);
  char* crash_real = lu_realpath(crash);
  const char* exclude[2] = {"/nonexistent/libaccel-other.so", crash_real};
  probe_log_t log = {{NULL}, 0};
  accel_options_t options;
  accel_options_init(&options);
  options.exclude = exclude;
  options.exclude_count = 2;
  options.probe = probe_record;
  options.probe_user_data = &log;
  lu_restart(list);
  accel_status_t status = accel_init(&options);
  memset(crash_real, 'x', strlen(crash_real));
  exclude[1] = NULL;
  free(crash_real);
  ASSERT_OK(status);
  check_excluded(test_result_, crash, good, &log, ACCEL_ORIGIN_ENV);
  probe_clear(&log);
}

// Excluding the cpu plugin leaves cpu unusable: exclusion is not cosmetic.
TEST(exclude_cpu_plugin) {
  lu_restart("");
  accel_plugin_report_t cpu;
  ASSERT_EQ(lu_report_find_name("cpu", &cpu), 1);
  char* cpu_path = strdup(cpu.path);
  const char* exclude[1] = {cpu_path};
  accel_options_t options;
  accel_options_init(&options);
  options.exclude = exclude;
  options.exclude_count = 1;
  accel_shutdown();
  accel_status_t status = accel_init(&options);
  accel_plugin_report_t r;
  size_t matches = lu_report_find(cpu_path, &r);
  free(cpu_path);
  ASSERT_OK(status);
  ASSERT_EQ(matches, 1);
  ASSERT_EQ(r.status, ACCEL_ERROR_NOT_FOUND);
  ASSERT_EQ(r.stage, ACCEL_PLUGIN_STAGE_FOUND);
  ASSERT_STR_CONTAINS(r.message, "excluded");
  accel_device_t* device = NULL;
  ASSERT(accel_device_open("cpu:0", &device) != ACCEL_OK);
  ASSERT_NULL(device);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
