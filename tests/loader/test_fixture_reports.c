// SPDX-License-Identifier: MIT
//
// Every broken fixture yields its documented load-report diagnostic (stage,
// status, message) while the cpu plugin still loads and cpu:0 still works.
// CTest points ACCEL_PLUGIN_PATH at every fixture that is safe to load
// in-process (not fx_crash or fx_hang) and passes each fixture's path as
// ACCEL_TEST_FX_<NAME>.
#include <accel/accel.h>
#include <accel/plugin.h>
#include <fcntl.h>
#include <unistd.h>

#include "loader_util.h"
#include "test.h"

typedef struct fx_expect {
  const char* var;  // environment variable holding the fixture's path
  accel_plugin_stage_t stage;
  accel_status_t status;
  const char* message;   // required substring of the report's message
  const char* name;      // expected plugin name, or NULL when not checked
  uint32_t abi_version;  // expected ABI in the report, 0 when not checked
} fx_expect_t;

enum { kFixtureCount = 9 };

// The messages that embed sizes are formatted at run time from the header.
static char fx_short_message[128];
static char fx_shortplugin_message[128];

static const fx_expect_t* fx_expectations(void) {
  static fx_expect_t table[kFixtureCount];
  snprintf(fx_short_message, sizeof(fx_short_message),
           "device_ops is %zu bytes, below the ABI 1.0 minimum of %zu",
           ACCEL_DEVICE_OPS_MIN_SIZE - sizeof(void*),
           ACCEL_DEVICE_OPS_MIN_SIZE);
  snprintf(fx_shortplugin_message, sizeof(fx_shortplugin_message),
           "accel_plugin_t is %zu bytes, below the ABI 1.0 minimum of %zu",
           ACCEL_PLUGIN_MIN_SIZE - sizeof(void*), ACCEL_PLUGIN_MIN_SIZE);
  const fx_expect_t init[kFixtureCount] = {
      {"ACCEL_TEST_FX_NOENTRY", ACCEL_PLUGIN_STAGE_OPENED,
       ACCEL_ERROR_INCOMPATIBLE,
       "not an accel plugin: no accel_plugin_entry symbol", NULL, 0},
      {"ACCEL_TEST_FX_NULLENTRY", ACCEL_PLUGIN_STAGE_ENTRY,
       ACCEL_ERROR_INCOMPATIBLE, "accel_plugin_entry(1) returned NULL", NULL,
       0},
      {"ACCEL_TEST_FX_WRONGABI", ACCEL_PLUGIN_STAGE_ENTRY,
       ACCEL_ERROR_INCOMPATIBLE, "plugin ABI 2, core ABI 1", NULL, 2},
      {"ACCEL_TEST_FX_SHORT", ACCEL_PLUGIN_STAGE_ENTRY,
       ACCEL_ERROR_INCOMPATIBLE, fx_short_message, NULL, 0},
      {"ACCEL_TEST_FX_SHORTPLUGIN", ACCEL_PLUGIN_STAGE_ENTRY,
       ACCEL_ERROR_INCOMPATIBLE, fx_shortplugin_message, NULL, 0},
      {"ACCEL_TEST_FX_NULLREQ", ACCEL_PLUGIN_STAGE_ENTRY,
       ACCEL_ERROR_INCOMPATIBLE, "required entry device_ops.mem_alloc is NULL",
       NULL, 0},
      {"ACCEL_TEST_FX_INITFAIL", ACCEL_PLUGIN_STAGE_NEGOTIATED,
       ACCEL_ERROR_BACKEND, "load failed: fixture: init failed on purpose",
       "fxinitfail", 1},
      {"ACCEL_TEST_FX_UNAVAIL", ACCEL_PLUGIN_STAGE_INITIALISED,
       ACCEL_ERROR_UNAVAILABLE, "fixture: driver not installed", "fxunavail",
       1},
      {"ACCEL_TEST_FX_GOOD", ACCEL_PLUGIN_STAGE_INITIALISED, ACCEL_OK, "",
       "fxgood", 1},
  };
  memcpy(table, init, sizeof(table));
  return table;
}

// Checks the one report entry of fixture `e`, found through `source`, the
// ACCEL_PLUGIN_PATH item it was listed under.
static void check_fixture(test_result_t* test_result_, const fx_expect_t* e,
                          const char* source) {
  const char* path = lu_env_path(e->var);
  ASSERT_NOT_NULL(path);
  accel_plugin_report_t r;
  size_t matches = lu_report_find(path, &r);
  if (matches != 1) {
    TEST_FAIL_AT_("%s: %zu report entries for %s", e->var, matches, path);
  }
  ASSERT_NOT_NULL(r.message);
  ASSERT_NOT_NULL(r.source);
  if (r.stage != e->stage || r.status != e->status ||
      strstr(r.message, e->message) == NULL) {
    TEST_FAIL_AT_(
        "%s: got stage %d, %s, \"%s\"; expected stage %d, %s, "
        "\"%s\"",
        e->var, (int)r.stage, accel_status_string(r.status), r.message,
        (int)e->stage, accel_status_string(e->status), e->message);
  }
  if (e->status == ACCEL_OK) ASSERT_STR_EQ(r.message, "");
  ASSERT_EQ(r.origin, ACCEL_ORIGIN_ENV);
  ASSERT_STR_EQ(r.source, source);
  if (e->name != NULL) ASSERT_STR_EQ(r.name, e->name);
  if (e->abi_version != 0) ASSERT_EQ(r.abi_version, e->abi_version);
  if (e->status != ACCEL_OK) ASSERT_EQ(r.device_count, 0);
}

// The cpu plugin from the build tree's plugin dir loaded and cpu:0 works.
static void check_cpu(test_result_t* test_result_) {
  accel_plugin_report_t r;
  ASSERT_EQ(lu_report_find_name("cpu", &r), 1);
  ASSERT_EQ(r.status, ACCEL_OK);
  ASSERT_EQ(r.stage, ACCEL_PLUGIN_STAGE_INITIALISED);
  ASSERT_STR_EQ(r.message, "");
  ASSERT_EQ(r.origin, ACCEL_ORIGIN_INSTALL_DIR);
  ASSERT_GE(r.device_count, 1);
  ASSERT(lu_roundtrip("cpu:0"));
}

// ACCEL_PLUGIN_PATH as CTest set it: every safe fixture at once.
TEST(all_fixtures_at_once) {
  accel_shutdown();
  const fx_expect_t* table = fx_expectations();
  for (int i = 0; i < kFixtureCount; i++) {
    check_fixture(test_result_, &table[i], lu_env_path(table[i].var));
    if (*test_result_ == TEST_FAIL) return;
  }
  check_cpu(test_result_);
  if (*test_result_ == TEST_FAIL) return;
  ASSERT(lu_roundtrip("fxgood:0"));
}

TEST(each_fixture_alone) {
  const fx_expect_t* table = fx_expectations();
  for (int i = 0; i < kFixtureCount; i++) {
    const char* path = lu_env_path(table[i].var);
    ASSERT_NOT_NULL(path);
    lu_restart(path);
    printf("  %s\n", table[i].var);
    check_fixture(test_result_, &table[i], path);
    if (*test_result_ == TEST_FAIL) return;
    check_cpu(test_result_);
    if (*test_result_ == TEST_FAIL) return;
  }
}

// Report strings are never NULL, and the good fixture's details are right.
TEST(report_fields) {
  lu_restart(getenv("ACCEL_TEST_ALL_SAFE_FIXTURES"));
  size_t count = 0;
  ASSERT_OK(accel_plugin_report_count(&count));
  ASSERT_GE(count, kFixtureCount + 1);
  for (size_t i = 0; i < count; i++) {
    accel_plugin_report_t r;
    memset(&r, 0, sizeof(r));
    r.struct_size = sizeof(r);
    ASSERT_OK(accel_plugin_report_get(i, &r));
    ASSERT_NOT_NULL(r.path);
    ASSERT_NOT_NULL(r.source);
    ASSERT_NOT_NULL(r.message);
    ASSERT_NOT_NULL(r.name);
    ASSERT_NOT_NULL(r.version);
    ASSERT(r.path[0] == '/');
  }
  accel_plugin_report_t good;
  ASSERT_EQ(lu_report_find_name("fxgood", &good), 1);
  ASSERT_STR_EQ(good.version, "0.0.1");
  ASSERT_EQ(good.priority, 50);
  ASSERT_EQ(good.device_count, 1);
  ASSERT_EQ(good.abi_version, ACCEL_PLUGIN_ABI_VERSION);
}

// accel_device_count counts exactly the devices of usable plugins, so
// broken fixtures add none and fxgood adds one.
TEST(device_count_sums_usable_plugins) {
  lu_restart(getenv("ACCEL_TEST_ALL_SAFE_FIXTURES"));
  size_t count = 0;
  ASSERT_OK(accel_plugin_report_count(&count));
  uint32_t expected = 0;
  for (size_t i = 0; i < count; i++) {
    accel_plugin_report_t r;
    r.struct_size = sizeof(r);
    ASSERT_OK(accel_plugin_report_get(i, &r));
    if (r.status == ACCEL_OK) expected += r.device_count;
  }
  uint32_t devices = 0;
  ASSERT_OK(accel_device_count(&devices));
  ASSERT_EQ(devices, expected);
  ASSERT_GE(devices, 2);  // cpu:0 and fxgood:0 at least
}

// A backend that exists but cannot be used is refused with its reason.
TEST(open_unusable_fixture_gives_reason) {
  lu_restart(getenv("ACCEL_TEST_ALL_SAFE_FIXTURES"));
  accel_device_t* device = (accel_device_t*)&device;
  ASSERT_STATUS(accel_device_open("fxunavail", &device),
                ACCEL_ERROR_UNAVAILABLE);
  ASSERT_NULL(device);
  ASSERT_STR_CONTAINS(accel_last_error(), "fixture: driver not installed");
  device = (accel_device_t*)&device;
  ASSERT_STATUS(accel_device_open("fxinitfail:0", &device),
                ACCEL_ERROR_BACKEND);
  ASSERT_NULL(device);
  ASSERT_STR_CONTAINS(accel_last_error(), "init failed on purpose");
}

// With ACCEL_LOG empty the library prints nothing, even about broken
// plugins.
TEST(silent_without_accel_log) {
  accel_shutdown();
  setenv("ACCEL_PLUGIN_PATH", getenv("ACCEL_TEST_ALL_SAFE_FIXTURES"), 1);
  int token = lu_stderr_begin();
  uint32_t devices = 0;
  accel_status_t status = accel_device_count(&devices);
  char* text = lu_stderr_end(token);
  ASSERT_OK(status);
  size_t len = strlen(text);
  if (len != 0) fprintf(stderr, "  unexpected output: %s\n", text);
  free(text);
  ASSERT_EQ(len, 0);
}

// A file that is not a shared object fails at dlopen with dlerror's text.
TEST(garbage_file_fails_dlopen) {
  char* dir = lu_tempdir();
  ASSERT_NOT_NULL(dir);
  char* path = lu_join(dir, "libaccel-garbage.so");
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0755);
  ASSERT(fd >= 0);
  ASSERT_EQ(write(fd, "not an ELF file\n", 16), 16);
  close(fd);
  lu_restart(path);
  accel_plugin_report_t r;
  size_t matches = lu_report_find(path, &r);
  lu_rmtree(dir);
  free(path);
  free(dir);
  ASSERT_EQ(matches, 1);
  ASSERT_EQ(r.stage, ACCEL_PLUGIN_STAGE_FOUND);
  ASSERT_EQ(r.status, ACCEL_ERROR_INCOMPATIBLE);
  ASSERT_STR_CONTAINS(r.message, "dlopen failed: ");
  check_cpu(test_result_);
}

// A second plugin with a name already taken is shadowed, naming the first:
// not a failure (overriding an installed plugin through ACCEL_PLUGIN_PATH is
// deliberate), but never loaded.
TEST(duplicate_name_shadowed) {
  const char* good = lu_env_path("ACCEL_TEST_FX_GOOD");
  ASSERT_NOT_NULL(good);
  char* dir = lu_tempdir();
  ASSERT_NOT_NULL(dir);
  char* copy = lu_join(dir, "libaccel-fx_good.so");
  ASSERT(lu_copy(good, copy));
  size_t n = strlen(good) + strlen(copy) + 2;
  char* list = malloc(n);
  snprintf(list, n, "%s:%s", good, copy);
  lu_restart(list);
  free(list);

  accel_plugin_report_t first, second;
  size_t first_matches = lu_report_find(good, &first);
  size_t second_matches = lu_report_find(copy, &second);
  char* good_real = lu_realpath(good);
  char expected[4096];
  snprintf(expected, sizeof(expected),
           "a plugin named 'fxgood' is already loaded from %s", good_real);
  free(good_real);
  lu_rmtree(dir);
  free(copy);
  free(dir);
  ASSERT_EQ(first_matches, 1);
  ASSERT_EQ(second_matches, 1);
  ASSERT_EQ(first.status, ACCEL_OK);
  ASSERT_EQ(second.stage, ACCEL_PLUGIN_STAGE_ENTRY);
  ASSERT_EQ(second.status, ACCEL_ERROR_NOT_FOUND);
  ASSERT_STR_CONTAINS(second.message, "shadowed: ");
  ASSERT_STR_CONTAINS(second.message, expected);
  ASSERT(lu_roundtrip("fxgood:0"));
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
