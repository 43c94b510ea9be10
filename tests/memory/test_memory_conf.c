// SPDX-License-Identifier: MIT
//
// ACCEL_ALLOC_CONF on cpu:0, one CTest case per setting (MEMORY_CONF_CASE):
// - "fraction": memory_fraction:0.25 of a 64 MiB device caps reserved
//   memory at 16 MiB: a second 10 MiB buffer is out of device memory with
//   a message naming the setting, and fits again once the first is gone;
// - "gc": garbage_collection_threshold:0.5 gives cached segments back
//   before reserving past half the device;
// - "bad": a malformed setting is ignored with a warning naming the item.
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"
#include "test.h"

static char warning[1024];

static void on_log(accel_log_level_t level, const char* tag,
                   const char* message, void* user_data) {
  (void)tag, (void)user_data;
  if (level == ACCEL_LOG_WARN && strstr(message, "ACCEL_ALLOC_CONF")) {
    snprintf(warning, sizeof(warning), "%s", message);
  }
}

static uint64_t reserved(accel_device_t* d) {
  accel_memory_stats_t s;
  memset(&s, 0, sizeof(s));
  s.struct_size = sizeof(s);
  return accel_device_query_memory_stats(d, &s) == ACCEL_OK ? s.reserved_bytes
                                                            : 0;
}

TEST(alloc_conf) {
  const char* which = getenv("MEMORY_CONF_CASE");
  if (which == NULL) SKIP("MEMORY_CONF_CASE is not set");
  accel_log_set_callback(on_log, NULL);
  accel_log_set_level(ACCEL_LOG_WARN);
  accel_device_t* d = NULL;
  accel_buffer_t *a = NULL, *b = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  const size_t ten = (size_t)10 << 20;
  if (strcmp(which, "fraction") == 0) {
    ASSERT_OK(accel_buffer_create(d, ten, &a));
    ASSERT_STATUS(accel_buffer_create(d, ten, &b),
                  ACCEL_ERROR_OUT_OF_DEVICE_MEMORY);
    ASSERT_STR_CONTAINS(accel_last_error(), "memory_fraction 0.25");
    accel_buffer_release(a);
    a = NULL;
    ASSERT_OK(accel_buffer_create(d, ten, &b));
  } else if (strcmp(which, "gc") == 0) {
    ASSERT_OK(accel_buffer_create(d, ten, &a));
    accel_buffer_release(a);  // 10 MiB stays cached
    a = NULL;
    ASSERT(reserved(d) >= ten);
    ASSERT_OK(accel_buffer_create(d, (size_t)30 << 20, &b));
    // 10 + 30 MiB is past half of 64 MiB: the cached 10 MiB went first.
    ASSERT(reserved(d) < (size_t)40 << 20);
  } else {
    ASSERT_STR_CONTAINS(warning, "memory_fraction 2 is not in (0, 1]");
    ASSERT_OK(accel_buffer_create(d, (size_t)40 << 20, &a));  // no cap
  }
  accel_buffer_release(a);
  accel_buffer_release(b);
  accel_device_release(d);
  accel_log_set_callback(NULL, NULL);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
