// SPDX-License-Identifier: MIT
//
// ACCEL_VISIBLE_DEVICES: the pure parser (compiled in from
// core/src/visible_parse.c) and the library's filtering and renumbering,
// with four CPU devices (ACCEL_CPU_DEVICES=4 from CTest) and the fx_probe
// fixture for UUIDs and PCI bus ids.
#include <accel/accel.h>
#include <stdlib.h>
#include <string.h>

#include "loader_util.h"
#include "test.h"
#include "visible.h"

static accel__visible_t parsed;
static char err[256];

static bool parse(const char* text) {
  return accel__visible_parse(text, &parsed, err, sizeof(err));
}

TEST(parse_empty) {
  ASSERT(parse(NULL));
  ASSERT_EQ(parsed.count, 0);
  ASSERT(parse("  "));
  ASSERT_EQ(parsed.count, 0);
}

TEST(parse_entries) {
  ASSERT(parse(" cuda:1 ,cpu, -rocm:0,GPU-0123abcd-0000-1111-2222-"
               "333344445555,0000:3B:00.0,3b:00.1,"
               "00112233445566778899aabbccddeeff"));
  ASSERT_EQ(parsed.count, 7);
  ASSERT_EQ(parsed.entries[0].kind, ACCEL__VISIBLE_INDEX);
  ASSERT_STR_EQ(parsed.entries[0].backend, "cuda");
  ASSERT_EQ(parsed.entries[0].index, 1);
  ASSERT_EQ(parsed.entries[1].kind, ACCEL__VISIBLE_BACKEND);
  ASSERT(parsed.entries[2].exclude);
  ASSERT_STR_EQ(parsed.entries[2].backend, "rocm");
  ASSERT_EQ(parsed.entries[3].kind, ACCEL__VISIBLE_UUID);
  ASSERT_EQ(parsed.entries[3].uuid[0], 0x01);
  ASSERT_EQ(parsed.entries[3].uuid[15], 0x55);
  ASSERT_EQ(parsed.entries[4].kind, ACCEL__VISIBLE_PCI);
  ASSERT_EQ(parsed.entries[4].pci[1], 0x3b);
  ASSERT_EQ(parsed.entries[5].kind, ACCEL__VISIBLE_PCI);
  ASSERT_EQ(parsed.entries[5].pci[3], 1);
  ASSERT_EQ(parsed.entries[6].kind, ACCEL__VISIBLE_UUID);
  ASSERT_EQ(parsed.entries[6].uuid[15], 0xff);
}

TEST(parse_errors_name_the_entry) {
  const char* bad[] = {"cpu:x",  "cuda,,cpu", "CUDA:0",   "-",
                       "cpu:0:1", "GPU-12",   "3b:0x",    "cpu:99999999999",
                       ",",      "cuda:",     "!cuda:1",  "0000:3b:20.0"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    ASSERT(!parse(bad[i]));
    ASSERT_STR_CONTAINS(err, "malformed entry");
    ASSERT_EQ(parsed.count, 0);
  }
  ASSERT(!parse("cuda,cpu:x"));
  ASSERT_STR_CONTAINS(err, "'cpu:x' (entry 2)");
  char many[64 * 4 + 8] = "";
  for (int i = 0; i < 65; i++) strcat(many, i ? ",cpu" : "cpu");
  ASSERT(!parse(many));
  ASSERT_STR_CONTAINS(err, "more than 64");
}

static void restart_with(const char* value, const char* path) {
  setenv("ACCEL_VISIBLE_DEVICES", value, 1);
  lu_restart(path);
}

static uint32_t count_of(const char* backend) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < 64; i++) {
    char uri[48];
    snprintf(uri, sizeof(uri), "%s:%u", backend, i);
    accel_device_t* d = NULL;
    if (accel_device_open(uri, &d) != ACCEL_OK) break;
    accel_device_release(d);
    n++;
  }
  return n;
}

static bool hidden(const char* backend, uint32_t index, const char* why) {
  size_t n = 0;
  if (accel_device_hidden_count(&n) != ACCEL_OK) return false;
  for (size_t i = 0; i < n; i++) {
    const char* b = NULL;
    const char* reason = NULL;
    uint32_t at = 0;
    if (accel_device_hidden_get(i, &b, &at, &reason) != ACCEL_OK) continue;
    if (strcmp(b, backend) == 0 && at == index && strstr(reason, why)) {
      return true;
    }
  }
  return false;
}

TEST(unset_shows_all) {
  restart_with("", "");
  ASSERT_EQ(count_of("cpu"), 4);
  size_t n = 1;
  ASSERT_OK(accel_device_hidden_count(&n));
  ASSERT_EQ(n, 0);
}

TEST(list_renumbers) {
  restart_with("cpu:2,cpu:0", "");
  ASSERT_EQ(count_of("cpu"), 2);
  ASSERT(hidden("cpu", 1, "not listed"));
  ASSERT(hidden("cpu", 3, "not listed"));
  ASSERT(!hidden("cpu", 2, ""));
}

TEST(exclusion) {
  restart_with("-cpu:1", "");
  ASSERT_EQ(count_of("cpu"), 3);
  ASSERT(hidden("cpu", 1, "excluded by entry '-cpu:1'"));
  restart_with("-cpu", "");
  ASSERT_EQ(count_of("cpu"), 0);
  accel_device_t* d = NULL;
  ASSERT(accel_device_select("cpu", &d) != ACCEL_OK);
}

TEST(malformed_value_fails_init) {
  restart_with("cpu:0,cpu:zero", "");
  uint32_t n = 0;
  ASSERT_STATUS(accel_device_count(&n), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "'cpu:zero'");
  ASSERT_STR_CONTAINS(accel_last_error(), "ACCEL_VISIBLE_DEVICES");
}

// The fixture's device i has UUID f0..i and PCI bus id 0000:<i+1>:00.0.
static void expect_fx_uuid_last_byte(test_result_t* test_result_,
                                     uint32_t visible, uint8_t physical) {
  char uri[32];
  snprintf(uri, sizeof(uri), "fxprobe:%u", visible);
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open(uri, &d));
  accel_device_info_t info = {.struct_size = sizeof(info)};
  ASSERT_OK(accel_device_query_info(d, &info));
  ASSERT_EQ(info.uuid[15], physical);
  accel_device_release(d);
}

TEST(uuid_and_pci) {
  setenv("ACCEL_FX_PROBE_COUNT", "4", 1);
  const char* fx = lu_env_path("ACCEL_TEST_FX_PROBE");
  restart_with("GPU-f0000000-0000-0000-0000-000000000003,0000:02:00.0", fx);
  ASSERT_EQ(count_of("fxprobe"), 2);
  expect_fx_uuid_last_byte(test_result_, 0, 3);
  expect_fx_uuid_last_byte(test_result_, 1, 1);
  ASSERT_EQ(count_of("cpu"), 4);  // not named: untouched
  restart_with("-f0000000000000000000000000000000", fx);
  ASSERT_EQ(count_of("fxprobe"), 3);
  expect_fx_uuid_last_byte(test_result_, 0, 1);
  unsetenv("ACCEL_FX_PROBE_COUNT");
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
