// SPDX-License-Identifier: MIT
//
// ACCEL_PLUGIN_PATH handling and search order: directories, files, missing
// and empty items, de-duplication by real path, the API > env > install dir
// order, and that the current directory is never searched.
#include <accel/accel.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include "loader_util.h"
#include "test.h"

// "a:b" (or "a:b:c" when `c` is non-NULL), malloc'd.
static char* path_list(const char* a, const char* b, const char* c) {
  size_t n = strlen(a) + strlen(b) + (c ? strlen(c) : 0) + 3;
  char* list = malloc(n);
  if (c != NULL) {
    snprintf(list, n, "%s:%s:%s", a, b, c);
  } else {
    snprintf(list, n, "%s:%s", a, b);
  }
  return list;
}

static void write_text(const char* path, const char* text) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    ssize_t n = write(fd, text, strlen(text));
    (void)n;
    close(fd);
  }
}

// Every report entry came from the install dir (nothing else was searched).
static size_t count_not_install_dir(void) {
  size_t count = 0, odd = 0;
  if (accel_plugin_report_count(&count) != ACCEL_OK) return SIZE_MAX;
  for (size_t i = 0; i < count; i++) {
    accel_plugin_report_t r;
    r.struct_size = sizeof(r);
    if (accel_plugin_report_get(i, &r) != ACCEL_OK ||
        r.origin != ACCEL_ORIGIN_INSTALL_DIR) {
      odd++;
    }
  }
  return odd;
}

// A directory item: its plugin files are found (through a copy here), and
// files that are not plugins are not candidates.
TEST(env_directory) {
  const char* good = lu_env_path("ACCEL_TEST_FX_GOOD");
  ASSERT_NOT_NULL(good);
  char* dir = lu_tempdir();
  ASSERT_NOT_NULL(dir);
  char* copy = lu_join(dir, "libaccel-fx_good.so");
  char* readme = lu_join(dir, "README.txt");
  ASSERT(lu_copy(good, copy));
  write_text(readme, "not a plugin\n");
  lu_restart(dir);

  accel_plugin_report_t r;
  size_t matches = lu_report_find(copy, &r);
  size_t under = lu_report_count_under(dir);
  bool works = lu_roundtrip("fxgood:0");
  lu_rmtree(dir);
  free(copy);
  free(readme);
  ASSERT_EQ(matches, 1);
  ASSERT_EQ(under, 1);  // README.txt is not a candidate
  ASSERT_EQ(r.status, ACCEL_OK);
  ASSERT_EQ(r.origin, ACCEL_ORIGIN_ENV);
  ASSERT_STR_EQ(r.source, dir);
  free(dir);
  ASSERT(works);
  ASSERT(lu_roundtrip("cpu:0"));
}

// A file item is loaded whatever its directory holds.
TEST(env_file) {
  const char* good = lu_env_path("ACCEL_TEST_FX_GOOD");
  ASSERT_NOT_NULL(good);
  lu_restart(good);
  accel_plugin_report_t r;
  ASSERT_EQ(lu_report_find(good, &r), 1);
  ASSERT_EQ(r.status, ACCEL_OK);
  ASSERT_EQ(r.origin, ACCEL_ORIGIN_ENV);
  ASSERT_STR_EQ(r.source, good);
  // Only the named file: its siblings (the broken fixtures) are not loaded.
  char* dir = lu_dirname(good);
  size_t under = lu_report_count_under(dir);
  free(dir);
  ASSERT_EQ(under, 1);
  ASSERT(lu_roundtrip("fxgood:0"));
}

// Items that do not exist are skipped without a report entry.
TEST(env_missing_items_ignored) {
  const char* good = lu_env_path("ACCEL_TEST_FX_GOOD");
  ASSERT_NOT_NULL(good);
  char* list = path_list("/nonexistent-accel-dir", good,
                         "/nonexistent-accel-dir2/libaccel-none.so");
  lu_restart(list);
  free(list);
  size_t count = 0;
  ASSERT_OK(accel_plugin_report_count(&count));
  for (size_t i = 0; i < count; i++) {
    accel_plugin_report_t r;
    r.struct_size = sizeof(r);
    ASSERT_OK(accel_plugin_report_get(i, &r));
    ASSERT(strstr(r.path, "nonexistent-accel") == NULL);
  }
  accel_plugin_report_t r;
  ASSERT_EQ(lu_report_find(good, &r), 1);
  ASSERT_EQ(r.status, ACCEL_OK);
  ASSERT(lu_roundtrip("cpu:0"));
}

// Empty items (leading, trailing, doubled colons) are skipped; they do not
// mean "the current directory" as they would in $PATH.
TEST(env_empty_items) {
  const char* good = lu_env_path("ACCEL_TEST_FX_GOOD");
  ASSERT_NOT_NULL(good);
  char* fixtures = lu_dirname(good);
  char cwd[PATH_MAX];
  ASSERT_NOT_NULL(getcwd(cwd, sizeof(cwd)));
  // If an empty item meant ".", fx_crash (in this directory) would crash.
  ASSERT_EQ(chdir(fixtures), 0);

  size_t n = strlen(good) + 8;
  char* list = malloc(n);
  snprintf(list, n, "::%s::", good);
  lu_restart(list);
  free(list);
  accel_plugin_report_t r;
  size_t matches = lu_report_find(good, &r);
  size_t under = lu_report_count_under(fixtures);

  lu_restart(":");
  size_t odd = count_not_install_dir();
  lu_restart("");
  size_t odd_empty = count_not_install_dir();
  int back = chdir(cwd);
  free(fixtures);
  ASSERT_EQ(back, 0);
  ASSERT_EQ(matches, 1);
  ASSERT_EQ(r.status, ACCEL_OK);
  ASSERT_EQ(under, 1);
  ASSERT_EQ(odd, 0);
  ASSERT_EQ(odd_empty, 0);
}

// The same file reached twice (through a symlinked directory and directly,
// and listed twice) is one candidate, reported once, with the first source.
TEST(dedupe_by_real_path) {
  const char* good = lu_env_path("ACCEL_TEST_FX_GOOD");
  ASSERT_NOT_NULL(good);
  char* dir = lu_tempdir();
  ASSERT_NOT_NULL(dir);
  char* link = lu_join(dir, "libaccel-fx_good.so");
  char* real = lu_realpath(good);
  ASSERT_EQ(symlink(real, link), 0);
  char* list = path_list(dir, good, good);
  lu_restart(list);
  free(list);

  accel_plugin_report_t r;
  size_t by_path = lu_report_find(good, &r);
  size_t by_name = lu_report_find_name("fxgood", NULL);
  bool works = lu_roundtrip("fxgood:0");
  lu_rmtree(dir);
  free(link);
  free(real);
  ASSERT_EQ(by_path, 1);
  ASSERT_EQ(by_name, 1);  // no "already loaded" duplicate entry either
  ASSERT_EQ(r.status, ACCEL_OK);
  ASSERT_STR_EQ(r.source, dir);
  free(dir);
  ASSERT(works);
}

// With no ACCEL_PLUGIN_PATH, a plugin in the current directory is never
// found, whether it is a copy named like a plugin or the fixture directory.
TEST(current_directory_never_searched) {
  const char* good = lu_env_path("ACCEL_TEST_FX_GOOD");
  ASSERT_NOT_NULL(good);
  char cwd[PATH_MAX];
  ASSERT_NOT_NULL(getcwd(cwd, sizeof(cwd)));
  char* dir = lu_tempdir();
  ASSERT_NOT_NULL(dir);
  char* copy = lu_join(dir, "libaccel-x.so");
  char* copy2 = lu_join(dir, "libaccel-fx_good.so");
  ASSERT(lu_copy(good, copy));
  ASSERT(lu_copy(good, copy2));
  ASSERT_EQ(chdir(dir), 0);

  lu_restart(NULL);
  size_t under_unset = lu_report_count_under(dir);
  size_t named_unset = lu_report_find_name("fxgood", NULL);
  accel_device_t* device = NULL;
  accel_status_t open_status = accel_device_open("fxgood", &device);
  accel_device_release(device);
  lu_restart("");
  size_t under_empty = lu_report_count_under(dir);
  bool cpu_works = lu_roundtrip("cpu:0");

  // The fixture directory holds fx_crash: searching it would crash.
  char* fixtures = lu_dirname(good);
  int moved = chdir(fixtures);
  lu_restart(NULL);
  size_t under_fixtures = lu_report_count_under(fixtures);

  int back = chdir(cwd);
  lu_rmtree(dir);
  free(copy);
  free(copy2);
  free(dir);
  free(fixtures);
  ASSERT_EQ(back, 0);
  ASSERT_EQ(moved, 0);
  ASSERT_EQ(under_unset, 0);
  ASSERT_EQ(named_unset, 0);
  ASSERT(open_status != ACCEL_OK);
  ASSERT_EQ(under_empty, 0);
  ASSERT_EQ(under_fixtures, 0);
  ASSERT(cpu_works);
}

// Checks search-path entry `index` against `path` and `origin`.
static void check_entry(test_result_t* test_result_, size_t index,
                        const char* path, accel_origin_t origin) {
  const char* got = NULL;
  accel_origin_t got_origin = ACCEL_ORIGIN_MAX_ENUM;
  ASSERT_OK(accel_search_path_get(index, &got, &got_origin));
  ASSERT_STR_EQ(got, path);
  ASSERT_EQ(got_origin, origin);
}

// The search path lists options.plugin_path items, then ACCEL_PLUGIN_PATH
// items, then the install dir, honouring the ignore_* options; and loading
// follows that order (a plugin name found earlier wins).
TEST(search_order) {
  lu_restart("");
  accel_plugin_report_t cpu;
  ASSERT_EQ(lu_report_find_name("cpu", &cpu), 1);
  char* install_dir = lu_dirname(cpu.path);
  char* cpu_plugin = strdup(cpu.path);

  char* a = lu_tempdir();
  char* b = lu_tempdir();
  char* c = lu_tempdir();
  ASSERT(a && b && c);
  const char* good = lu_env_path("ACCEL_TEST_FX_GOOD");
  ASSERT_NOT_NULL(good);
  char* good_in_a = lu_join(a, "libaccel-fx_good.so");
  char* good_in_c = lu_join(c, "libaccel-fx_good.so");
  char* cpu_in_c = lu_join(c, "libaccel-cpu.so");
  ASSERT(lu_copy(good, good_in_a));
  ASSERT(lu_copy(good, good_in_c));
  ASSERT(lu_copy(cpu_plugin, cpu_in_c));

  char* api_list = path_list(a, b, NULL);
  accel_options_t options;
  accel_options_init(&options);
  options.plugin_path = api_list;
  lu_restart(c);
  ASSERT_OK(accel_init(&options));
  // options.plugin_path was copied.
  memset(api_list, 'x', strlen(api_list));

  size_t count = 0;
  ASSERT_OK(accel_search_path_count(&count));
  ASSERT_EQ(count, 4);
  check_entry(test_result_, 0, a, ACCEL_ORIGIN_API);
  if (*test_result_ == TEST_FAIL) return;
  check_entry(test_result_, 1, b, ACCEL_ORIGIN_API);
  if (*test_result_ == TEST_FAIL) return;
  check_entry(test_result_, 2, c, ACCEL_ORIGIN_ENV);
  if (*test_result_ == TEST_FAIL) return;
  check_entry(test_result_, 3, install_dir, ACCEL_ORIGIN_INSTALL_DIR);
  if (*test_result_ == TEST_FAIL) return;
  const char* path = NULL;
  accel_origin_t origin;
  ASSERT_STATUS(accel_search_path_get(4, &path, &origin),
                ACCEL_ERROR_NOT_FOUND);

  // API before env: fxgood from A wins over the copy in C. (The exact
  // status of the loser is loader_fixture_reports' duplicate_name_shadowed.)
  accel_plugin_report_t r;
  ASSERT_EQ(lu_report_find(good_in_a, &r), 1);
  ASSERT_EQ(r.status, ACCEL_OK);
  ASSERT_EQ(r.origin, ACCEL_ORIGIN_API);
  ASSERT_EQ(lu_report_find(good_in_c, &r), 1);
  ASSERT(r.status != ACCEL_OK);
  ASSERT_STR_CONTAINS(r.message, "already loaded");
  // Env before install dir: cpu from C wins over the build tree's.
  ASSERT_EQ(lu_report_find(cpu_in_c, &r), 1);
  ASSERT_EQ(r.status, ACCEL_OK);
  ASSERT_EQ(r.origin, ACCEL_ORIGIN_ENV);
  ASSERT_EQ(lu_report_find(cpu_plugin, &r), 1);
  ASSERT(r.status != ACCEL_OK);
  ASSERT_STR_CONTAINS(r.message, "already loaded");
  ASSERT_EQ(r.origin, ACCEL_ORIGIN_INSTALL_DIR);
  ASSERT(lu_roundtrip("cpu:0"));

  // ignore_env_path drops C; ignore_install_dir drops the install dir.
  snprintf(api_list, strlen(a) + strlen(b) + 2, "%s:%s", a, b);
  options.ignore_env_path = true;
  accel_shutdown();
  ASSERT_OK(accel_init(&options));
  ASSERT_OK(accel_search_path_count(&count));
  ASSERT_EQ(count, 3);
  check_entry(test_result_, 2, install_dir, ACCEL_ORIGIN_INSTALL_DIR);
  if (*test_result_ == TEST_FAIL) return;
  options.ignore_env_path = false;
  options.ignore_install_dir = true;
  accel_shutdown();
  ASSERT_OK(accel_init(&options));
  ASSERT_OK(accel_search_path_count(&count));
  ASSERT_EQ(count, 3);
  check_entry(test_result_, 2, c, ACCEL_ORIGIN_ENV);
  if (*test_result_ == TEST_FAIL) return;
  ASSERT_EQ(lu_report_find(cpu_plugin, NULL), 0);
  options.ignore_env_path = true;
  accel_shutdown();
  ASSERT_OK(accel_init(&options));
  ASSERT_OK(accel_search_path_count(&count));
  ASSERT_EQ(count, 2);
  ASSERT_EQ(lu_report_find_name("cpu", NULL), 0);
  accel_device_t* device = NULL;
  ASSERT(accel_device_open("cpu:0", &device) != ACCEL_OK);
  accel_shutdown();

  lu_rmtree(a);
  lu_rmtree(b);
  lu_rmtree(c);
  free(a);
  free(b);
  free(c);
  free(good_in_a);
  free(good_in_c);
  free(cpu_in_c);
  free(api_list);
  free(install_dir);
  free(cpu_plugin);
}

TEST(search_path_misuse) {
  lu_restart("");
  ASSERT_STATUS(accel_search_path_count(NULL), ACCEL_ERROR_INVALID_ARGUMENT);
  size_t count = 0;
  ASSERT_OK(accel_search_path_count(&count));
  ASSERT_EQ(count, 1);  // the install dir only
  const char* path = (const char*)&count;
  accel_origin_t origin;
  ASSERT_STATUS(accel_search_path_get(count, &path, &origin),
                ACCEL_ERROR_NOT_FOUND);
  ASSERT_NULL(path);
  ASSERT_STATUS(accel_search_path_get(0, NULL, &origin),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_search_path_get(0, &path, NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
