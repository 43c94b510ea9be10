// SPDX-License-Identifier: MIT
//
// accel_device_reset_accumulated_memory_stats on cpu:0: the accumulated
// counters go back to zero and count again from there; current and peak
// values stay. accel_device_memory_snapshot: the JSON names every live
// buffer with its requested size, is balanced, and truncates snprintf
// style.
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"
#include "test.h"

static accel_memory_stats_t stats_of(accel_device_t* d) {
  accel_memory_stats_t s;
  memset(&s, 0, sizeof(s));
  s.struct_size = sizeof(s);
  if (accel_device_query_memory_stats(d, &s) != ACCEL_OK) s.struct_size = 0;
  return s;
}

TEST(reset_accumulated_counters) {
  accel_device_t* d = NULL;
  accel_buffer_t *a = NULL, *b = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  ASSERT_OK(accel_buffer_create(d, 1 << 20, &a));
  accel_buffer_release(a);
  ASSERT_OK(accel_buffer_create(d, 1 << 20, &a));  // from the cache
  accel_memory_stats_t before = stats_of(d);
  ASSERT(before.struct_size != 0);
  ASSERT(before.raw_allocs > 0);
  ASSERT(before.cache_hits + before.cache_misses > 0);

  ASSERT_OK(accel_device_reset_accumulated_memory_stats(d));
  accel_memory_stats_t after = stats_of(d);
  ASSERT_EQ(after.raw_allocs, 0);
  ASSERT_EQ(after.raw_frees, 0);
  ASSERT_EQ(after.cache_hits, 0);
  ASSERT_EQ(after.cache_misses, 0);
  ASSERT_EQ(after.oom_retries, 0);
  ASSERT_EQ(after.ooms, 0);
  ASSERT_EQ(after.allocated_bytes, before.allocated_bytes);
  ASSERT_EQ(after.allocated_bytes_peak, before.allocated_bytes_peak);
  ASSERT_EQ(after.reserved_bytes, before.reserved_bytes);

  ASSERT_OK(accel_buffer_create(d, 1 << 20, &b));  // counts again
  accel_memory_stats_t again = stats_of(d);
  ASSERT_EQ(again.cache_hits + again.cache_misses, 1);
  ASSERT_STATUS(accel_device_reset_accumulated_memory_stats(NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  accel_buffer_release(a);
  accel_buffer_release(b);
  accel_device_release(d);
}

// True when brackets and braces outside strings balance and end at zero.
static bool balanced(const char* json) {
  int depth = 0;
  bool in_string = false;
  for (const char* p = json; *p != '\0'; p++) {
    if (*p == '"') in_string = !in_string;
    if (in_string) continue;
    if (*p == '{' || *p == '[') depth++;
    if (*p == '}' || *p == ']') depth--;
    if (depth < 0) return false;
  }
  return depth == 0 && !in_string;
}

TEST(snapshot_is_json_of_segments_and_blocks) {
  accel_device_t* d = NULL;
  accel_buffer_t *a = NULL, *b = NULL, *c = NULL;
  accel_stream_t* s = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  size_t n = 0;
  ASSERT_OK(accel_device_memory_snapshot(d, NULL, 0, &n));
  ASSERT(n > 0);
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_buffer_create(d, 1000, &a));
  ASSERT_OK(accel_buffer_create(d, 3 << 20, &b));
  ASSERT_OK(accel_stream_alloc_buffer(s, 4096, &c));
  ASSERT_OK(accel_device_memory_snapshot(d, NULL, 0, &n));
  char* json = malloc(n + 1);
  ASSERT_NOT_NULL(json);
  size_t again = 0;
  ASSERT_OK(accel_device_memory_snapshot(d, json, n + 1, &again));
  ASSERT_EQ(again, n);
  fprintf(stderr, "%s", json);
  ASSERT(balanced(json));
  ASSERT_STR_CONTAINS(json, "{\"device\": \"cpu:0\", \"segments\": [");
  ASSERT_STR_CONTAINS(json, "\"requested\": 1000, \"state\": \"active\"");
  ASSERT_STR_CONTAINS(json, "\"requested\": 3145728, \"state\": \"active\"");
  ASSERT_STR_CONTAINS(json,
                      "\"requested\": 4096, \"state\": \"active\", "
                      "\"stream\": \"0x");
  ASSERT_STR_CONTAINS(json, "\"kind\": \"small\"");
  ASSERT_STR_CONTAINS(json, "\"kind\": \"large\"");
  // Truncated: NUL-terminated prefix, full length reported.
  char small[16];
  ASSERT_OK(accel_device_memory_snapshot(d, small, sizeof(small), &again));
  ASSERT_EQ(again, n);
  ASSERT_EQ(strlen(small), sizeof(small) - 1);
  ASSERT(memcmp(small, json, sizeof(small) - 1) == 0);
  ASSERT_STATUS(accel_device_memory_snapshot(NULL, NULL, 0, &again),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_device_memory_snapshot(d, NULL, 4, &again),
                ACCEL_ERROR_INVALID_ARGUMENT);
  free(json);
  accel_buffer_release(a);
  accel_buffer_release(b);
  accel_buffer_release(c);
  accel_stream_release(s);
  accel_device_release(d);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
