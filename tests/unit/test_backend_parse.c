// SPDX-License-Identifier: MIT
//
// Device selection strings (accel_device_select, ACCEL_BACKEND through
// accel_device_default) and device URIs (accel_device_open): well-formed and
// malformed values, unknown and unusable backends, fall-through and
// priority order. The fxgood (priority 50) and fxunavail fixtures stand in
// for third-party plugins.
#include <accel/accel.h>

#include "loader_util.h"
#include "test.h"

// Restarts with ACCEL_CPU_DEVICES=`cpu_devices` and, when `with_fixtures`,
// ACCEL_PLUGIN_PATH listing fxgood and fxunavail.
static bool restart(int cpu_devices, bool with_fixtures) {
  char count[16];
  snprintf(count, sizeof(count), "%d", cpu_devices);
  setenv("ACCEL_CPU_DEVICES", count, 1);
  unsetenv("ACCEL_BACKEND");
  if (!with_fixtures) {
    lu_restart("");
    return true;
  }
  const char* good = lu_env_path("ACCEL_TEST_FX_GOOD");
  const char* unavail = lu_env_path("ACCEL_TEST_FX_UNAVAIL");
  if (good == NULL || unavail == NULL) return false;
  char list[8192];
  snprintf(list, sizeof(list), "%s:%s", good, unavail);
  lu_restart(list);
  return true;
}

// The usable backend with the highest priority: what "auto" must pick.
static const char* best_backend(char* name, size_t size) {
  // The selection rule (docs/user-guide.md): device type first (GPU, then
  // other, then CPU), the native cpu plugin first among CPU devices, then
  // priority, then discovery order.
  size_t count = 0;
  int64_t best = INT64_MIN;
  name[0] = '\0';
  if (accel_plugin_report_count(&count) != ACCEL_OK) return name;
  for (size_t i = 0; i < count; i++) {
    accel_plugin_report_t r;
    r.struct_size = sizeof(r);
    if (accel_plugin_report_get(i, &r) != ACCEL_OK) continue;
    if (r.status != ACCEL_OK || r.device_count == 0) continue;
    char uri[64];
    snprintf(uri, sizeof(uri), "%s:0", r.name);
    accel_device_t* d = NULL;
    if (accel_device_open(uri, &d) != ACCEL_OK) continue;
    accel_device_info_t info;
    info.struct_size = sizeof(info);
    accel_status_t s = accel_device_query_info(d, &info);
    accel_device_release(d);
    if (s != ACCEL_OK) continue;
    int64_t type = info.type == ACCEL_DEVICE_TYPE_GPU     ? 3
                   : info.type == ACCEL_DEVICE_TYPE_OTHER ? 2
                                                          : 1;
    int64_t native = type == 1 && strcmp(r.name, "cpu") == 0;
    int64_t key =
        (type << 40) + (native << 36) + ((int64_t)r.priority + (1 << 30));
    if (key > best) {
      best = key;
      snprintf(name, size, "%s", uri);
    }
  }
  return name;
}

// Selects `spec` and checks the device's URI is `uri`.
#define EXPECT_SELECT(spec, uri)                              \
  do {                                                        \
    const char* spec_ = (spec);                               \
    accel_device_t* d_ = NULL;                                \
    ASSERT_OK(accel_device_select(spec_, &d_));               \
    const char* got_ = accel_device_uri(d_);                  \
    bool same_ = strcmp(got_, (uri)) == 0;                    \
    if (!same_)                                               \
      fprintf(stderr, "  spec \"%s\": got %s, expected %s\n", \
              spec_ ? spec_ : "(null)", got_, (uri));         \
    accel_device_release(d_);                                 \
    ASSERT(same_);                                            \
  } while (0)

// Selects `spec` and checks it fails with `status`, `*out` NULL, and a
// message containing `needle`.
#define EXPECT_SELECT_FAIL(spec, status, needle)               \
  do {                                                         \
    accel_device_t* d_ = (accel_device_t*)&d_;                 \
    ASSERT_STATUS(accel_device_select((spec), &d_), (status)); \
    ASSERT_NULL(d_);                                           \
    ASSERT_STR_CONTAINS(accel_last_error(), (needle));         \
  } while (0)

TEST(auto_and_empty) {
  ASSERT(restart(1, false));
  char best[64];
  best_backend(best, sizeof(best));
  ASSERT(best[0] != '\0');
  EXPECT_SELECT(NULL, best);
  EXPECT_SELECT("", best);
  EXPECT_SELECT("auto", best);
  EXPECT_SELECT(" auto ", best);
}

TEST(named_backends) {
  ASSERT(restart(2, false));
  EXPECT_SELECT("cpu", "cpu:0");
  EXPECT_SELECT("cpu:0", "cpu:0");
  EXPECT_SELECT("cpu:1", "cpu:1");
  EXPECT_SELECT(" cpu , auto ", "cpu:0");
  EXPECT_SELECT("cpu:1,cpu:0", "cpu:1");
}

// An unusable item is skipped and the next usable one wins.
TEST(fall_through) {
  ASSERT(restart(2, true));
  accel_plugin_report_t cuda;
  bool cuda_usable = lu_report_find_name("cuda", &cuda) == 1 &&
                     cuda.status == ACCEL_OK && cuda.device_count > 0;
  if (!cuda_usable) EXPECT_SELECT("cuda,cpu", "cpu:0");
  EXPECT_SELECT("cpu:5,cpu:1", "cpu:1");
  EXPECT_SELECT("fxunavail,cpu:1", "cpu:1");
  char best[64];
  best_backend(best, sizeof(best));  // fxgood:0, or a GPU on a GPU node
  EXPECT_SELECT("fxunavail, auto", best);
  EXPECT_SELECT("fxgood,cpu", "fxgood:0");
  EXPECT_SELECT("cpu,fxgood", "cpu:0");
}

// "auto" takes the best device: fxgood's (type "other", priority 50)
// over cpu:0 and over a CPU-type OpenCL device, unless a GPU is usable.
TEST(auto_follows_priority) {
  ASSERT(restart(1, true));
  char best[64];
  best_backend(best, sizeof(best));
  accel_plugin_report_t good;
  ASSERT_EQ(lu_report_find_name("fxgood", &good), 1);
  ASSERT_EQ(good.priority, 50);
  ASSERT_EQ(good.status, ACCEL_OK);
  accel_plugin_report_t cpu;
  ASSERT_EQ(lu_report_find_name("cpu", &cpu), 1);
  ASSERT_LT(cpu.priority, good.priority);
  ASSERT(strcmp(best, "cpu:0") != 0);
  EXPECT_SELECT("auto", best);
  EXPECT_SELECT(NULL, best);
  EXPECT_SELECT("", best);
}

// Every malformed item makes the whole value invalid, whatever its
// position, and the message lists the known backends.
TEST(malformed) {
  ASSERT(restart(2, false));
  static const char* const bad[] = {
      ",",
      "cpu,",
      ",cpu",
      "cpu,,cpu",
      " , ",
      "cpu:",
      "cpu:x",
      "cpu:-1",
      "cpu:+1",
      "cpu:1x",
      ":0",
      ":",
      "cpu:0:1",
      "CPU",
      "Cpu:0",
      "cpu-x",
      "c pu",
      "cpu:99999999999999999999",
      "abcdefghijabcdefghijabcdefghijab",          // 32 characters
      "abcdefghijabcdefghijabcdefghijabcdefghij",  // 40 characters
      "cpu,abcdefghijabcdefghijabcdefghijabcdefghij",
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    printf("  \"%s\"\n", bad[i]);
    EXPECT_SELECT_FAIL(bad[i], ACCEL_ERROR_INVALID_ARGUMENT, "known backends:");
    ASSERT_STR_CONTAINS(accel_last_error(), "cpu");
  }
}

TEST(unknown_backend) {
  ASSERT(restart(1, false));
  EXPECT_SELECT_FAIL("bogus", ACCEL_ERROR_INVALID_ARGUMENT,
                     "unknown backend 'bogus'");
  ASSERT_STR_CONTAINS(accel_last_error(), "cpu");
  // 31 characters is the longest valid name: well-formed, but unknown.
  EXPECT_SELECT_FAIL("abcdefghijabcdefghijabcdefghija",
                     ACCEL_ERROR_INVALID_ARGUMENT,
                     "unknown backend 'abcdefghijabcdefghijabcdefghija'");
  // A fixture's name is unknown unless the fixture is loaded.
  EXPECT_SELECT_FAIL("fxgood", ACCEL_ERROR_INVALID_ARGUMENT,
                     "unknown backend 'fxgood'");
}

// A first-party backend that is not installed (or cannot run here) is
// UNAVAILABLE with the reason, never a silent fallback.
TEST(cuda_alone) {
  ASSERT(restart(1, false));
  accel_plugin_report_t cuda;
  size_t found = lu_report_find_name("cuda", &cuda);
  if (found == 1 && cuda.status == ACCEL_OK && cuda.device_count > 0) {
    SKIP("a usable CUDA device is present");
  }
  accel_device_t* device = (accel_device_t*)&device;
  ASSERT_STATUS(accel_device_select("cuda", &device), ACCEL_ERROR_UNAVAILABLE);
  ASSERT_NULL(device);
  if (found == 0) {
    ASSERT_STR_CONTAINS(accel_last_error(), "no plugin named 'cuda' was found");
  } else if (cuda.status != ACCEL_OK) {
    ASSERT_STR_CONTAINS(accel_last_error(), cuda.message);
  }
  EXPECT_SELECT_FAIL("rocm:0", ACCEL_ERROR_UNAVAILABLE, "rocm");
}

TEST(index_out_of_range) {
  ASSERT(restart(2, false));
  EXPECT_SELECT_FAIL("cpu:5", ACCEL_ERROR_NOT_FOUND,
                     "cpu:5: backend cpu has 2 device(s)");
  EXPECT_SELECT_FAIL("cpu:2", ACCEL_ERROR_NOT_FOUND, "cpu:2");
}

TEST(unavailable_plugin) {
  ASSERT(restart(1, true));
  EXPECT_SELECT_FAIL("fxunavail", ACCEL_ERROR_UNAVAILABLE,
                     "fixture: driver not installed");
  EXPECT_SELECT_FAIL("fxunavail:0", ACCEL_ERROR_UNAVAILABLE,
                     "fixture: driver not installed");
}

// When nothing is usable the last item's status wins and the message
// gives every item's reason.
TEST(nothing_usable) {
  ASSERT(restart(2, true));
  EXPECT_SELECT_FAIL("cpu:5,fxunavail", ACCEL_ERROR_UNAVAILABLE,
                     "fixture: driver not installed");
  ASSERT_STR_CONTAINS(accel_last_error(), "cpu:5");
  EXPECT_SELECT_FAIL("fxunavail,cpu:5", ACCEL_ERROR_NOT_FOUND,
                     "fixture: driver not installed");
  ASSERT_STR_CONTAINS(accel_last_error(), "cpu:5: backend cpu has 2 device(s)");
}

// ACCEL_BACKEND is read at every accel_device_default call.
TEST(device_default_reads_env_each_call) {
  ASSERT(restart(2, true));
  char best[64];
  best_backend(best, sizeof(best));
  static const struct {
    const char* value;  // NULL: unset
    const char* uri;    // NULL: use `best`
  } cases[] = {
      {NULL, NULL},           {"", NULL},
      {"auto", NULL},         {"cpu", "cpu:0"},
      {"cpu:1", "cpu:1"},     {" cpu:1 , auto", "cpu:1"},
      {"fxgood", "fxgood:0"}, {"fxunavail,cpu:1", "cpu:1"},
      {"cpu", "cpu:0"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    if (cases[i].value == NULL) {
      unsetenv("ACCEL_BACKEND");
    } else {
      setenv("ACCEL_BACKEND", cases[i].value, 1);
    }
    const char* want = cases[i].uri ? cases[i].uri : best;
    accel_device_t* device = NULL;
    ASSERT_OK(accel_device_default(&device));
    bool same = strcmp(accel_device_uri(device), want) == 0;
    if (!same) {
      fprintf(stderr, "  ACCEL_BACKEND=\"%s\": got %s, expected %s\n",
              cases[i].value ? cases[i].value : "(unset)",
              accel_device_uri(device), want);
    }
    accel_device_release(device);
    ASSERT(same);
  }
  accel_device_t* device = (accel_device_t*)&device;
  setenv("ACCEL_BACKEND", "cpu:", 1);
  ASSERT_STATUS(accel_device_default(&device), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_NULL(device);
  ASSERT_STR_CONTAINS(accel_last_error(), "known backends:");
  setenv("ACCEL_BACKEND", "fxunavail", 1);
  ASSERT_STATUS(accel_device_default(&device), ACCEL_ERROR_UNAVAILABLE);
  ASSERT_STR_CONTAINS(accel_last_error(), "fixture: driver not installed");
  setenv("ACCEL_BACKEND", "cpu:7", 1);
  ASSERT_STATUS(accel_device_default(&device), ACCEL_ERROR_NOT_FOUND);
  unsetenv("ACCEL_BACKEND");
  ASSERT_STATUS(accel_device_default(NULL), ACCEL_ERROR_INVALID_ARGUMENT);
}

TEST(open_uris) {
  ASSERT(restart(2, true));
  accel_device_t* a = NULL;
  accel_device_t* b = NULL;
  ASSERT_OK(accel_device_open("cpu", &a));
  ASSERT_STR_EQ(accel_device_uri(a), "cpu:0");
  ASSERT_OK(accel_device_open("cpu:1", &b));
  ASSERT_STR_EQ(accel_device_uri(b), "cpu:1");
  ASSERT_EQ(accel_device_index(b), 1);
  ASSERT(a != b);
  accel_device_release(a);
  accel_device_release(b);
  ASSERT_OK(accel_device_open("fxgood:0", &a));
  ASSERT_STR_EQ(accel_device_backend(a), "fxgood");
  accel_device_release(a);

  static const char* const malformed[] = {
      "",
      "cpu:",
      "cpu:x",
      "cpu:-1",
      ":0",
      "cpu:0:1",
      "CPU",
      "cpu,cpu",
      "cpu:99999999999999999999",
      "abcdefghijabcdefghijabcdefghijabcdefghij"};
  for (size_t i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++) {
    printf("  \"%s\"\n", malformed[i]);
    a = (accel_device_t*)&a;
    ASSERT_STATUS(accel_device_open(malformed[i], &a),
                  ACCEL_ERROR_INVALID_ARGUMENT);
    ASSERT_NULL(a);
    ASSERT(accel_last_error()[0] != '\0');
  }
  ASSERT_STATUS(accel_device_open(NULL, &a), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_device_open("cpu", NULL), ACCEL_ERROR_INVALID_ARGUMENT);
  a = (accel_device_t*)&a;
  ASSERT_STATUS(accel_device_open("cpu:2", &a), ACCEL_ERROR_NOT_FOUND);
  ASSERT_NULL(a);
  ASSERT_STATUS(accel_device_open("bogus", &a), ACCEL_ERROR_NOT_FOUND);
  ASSERT_STATUS(accel_device_open("fxunavail", &a), ACCEL_ERROR_UNAVAILABLE);
  ASSERT_STR_CONTAINS(accel_last_error(), "fixture: driver not installed");
}

// A bad ACCEL_CPU_DEVICES makes the cpu plugin's device_count fail; cpu is
// then unusable with the plugin's reason, and nothing crashes.
TEST(bad_cpu_device_count) {
  setenv("ACCEL_CPU_DEVICES", "0", 1);
  lu_restart("");
  accel_plugin_report_t cpu;
  ASSERT_EQ(lu_report_find_name("cpu", &cpu), 1);
  ASSERT_EQ(cpu.status, ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT(cpu.message[0] != '\0');
  accel_device_t* device = (accel_device_t*)&device;
  ASSERT_STATUS(accel_device_select("cpu", &device),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_NULL(device);
  ASSERT_STR_CONTAINS(accel_last_error(), cpu.message);
  setenv("ACCEL_CPU_DEVICES", "1", 1);
  lu_restart("");
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
