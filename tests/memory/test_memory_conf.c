// SPDX-License-Identifier: MIT
//
// ACCEL_ALLOC_CONF on cpu:0, one CTest case per setting (MEMORY_CONF_CASE):
// - "fraction": memory_fraction:0.25 of a 64 MiB device caps reserved
//   memory at 16 MiB: a second 10 MiB buffer is out of device memory with
//   a message naming the setting, and fits again once the first is gone;
// - "gc": garbage_collection_threshold:0.5 gives cached segments back
//   before reserving past half the device;
// - "bad": a malformed setting is ignored with a warning naming the item;
// - "split": max_split_size_mb:8 keeps blocks of 8 MiB and more whole
//   (PyTorch's rules: a smaller request never splits a cached oversize
//   block, an oversize request reuses a cached block only if it wastes
//   less than 20 MiB) and counts them (accel_device_query_allocator_info);
// - "roundup": roundup_power2_divisions:4 rounds requests up to the next
//   quarter between two powers of two.
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

static accel_memory_stats_t stats(accel_device_t* d) {
  accel_memory_stats_t s;
  memset(&s, 0, sizeof(s));
  s.struct_size = sizeof(s);
  if (accel_device_query_memory_stats(d, &s) != ACCEL_OK) {
    memset(&s, 0, sizeof(s));
  }
  return s;
}

static uint64_t reserved(accel_device_t* d) { return stats(d).reserved_bytes; }

static accel_allocator_info_t info(accel_device_t* d) {
  accel_allocator_info_t i;
  memset(&i, 0, sizeof(i));
  i.struct_size = sizeof(i);
  if (accel_device_query_allocator_info(d, &i) != ACCEL_OK) {
    memset(&i, 0, sizeof(i));
  }
  return i;
}

// Whether MEMORY_CONF_CASE is `name`.
static bool conf_case(const char* name) {
  const char* which = getenv("MEMORY_CONF_CASE");
  return which != NULL && strcmp(which, name) == 0;
}

TEST(alloc_conf) {
  const char* which = getenv("MEMORY_CONF_CASE");
  if (which == NULL) SKIP("MEMORY_CONF_CASE is not set");
  if (!conf_case("fraction") && !conf_case("gc") && !conf_case("bad")) {
    SKIP("MEMORY_CONF_CASE is another case");
  }
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

#define MIB ((size_t)1 << 20)

TEST(max_split_size) {
  if (!conf_case("split")) SKIP("MEMORY_CONF_CASE is not split");
  accel_device_t* d = NULL;
  accel_buffer_t *a = NULL, *b = NULL, *c = NULL, *e = NULL, *f = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  accel_allocator_info_t i = info(d);
  ASSERT(i.caching);
  ASSERT_EQ(i.max_split_size, 8 * MIB);
  ASSERT_EQ(i.oversize_allocations, 0);
  // An oversize buffer: a segment of its own, counted.
  ASSERT_OK(accel_buffer_create(d, 16 * MIB, &a));
  i = info(d);
  ASSERT_EQ(i.oversize_allocations, 1);
  ASSERT_EQ(i.oversize_segments, 1);
  accel_buffer_release(a);  // 16 MiB cached
  ASSERT_EQ(info(d).oversize_allocations, 0);
  ASSERT_EQ(info(d).oversize_segments, 1);
  // A 2 MiB request does not split the cached 16 MiB block.
  accel_memory_stats_t before = stats(d);
  ASSERT_OK(accel_buffer_create(d, 2 * MIB, &b));
  accel_memory_stats_t after = stats(d);
  ASSERT_EQ(after.cache_misses, before.cache_misses + 1);
  ASSERT_EQ(after.reserved_bytes, 18 * MIB);
  accel_buffer_release(b);
  // 12.5 MiB takes the cached 16 MiB block whole: no split.
  before = stats(d);
  ASSERT_OK(accel_buffer_create(d, 12 * MIB + MIB / 2, &c));
  after = stats(d);
  ASSERT_EQ(after.cache_hits, before.cache_hits + 1);
  ASSERT_EQ(after.allocated_bytes, 16 * MIB);
  ASSERT_EQ(after.reserved_bytes, 18 * MIB);
  ASSERT_EQ(info(d).oversize_allocations, 1);
  // A cached 40 MiB block wastes too much (20 MiB or more) on 10 MiB.
  ASSERT_OK(accel_buffer_create(d, 40 * MIB, &e));
  accel_buffer_release(e);
  before = stats(d);
  ASSERT_OK(accel_buffer_create(d, 10 * MIB, &f));
  after = stats(d);
  ASSERT_EQ(after.cache_misses, before.cache_misses + 1);
  ASSERT_EQ(after.reserved_bytes, (18 + 40 + 10) * MIB);
  i = info(d);
  ASSERT_EQ(i.oversize_allocations, 2);
  ASSERT_EQ(i.oversize_allocations_peak, 2);
  ASSERT_EQ(i.oversize_segments, 3);
  ASSERT_EQ(i.oversize_segments_peak, 3);
  // The summary shows the counters.
  char text[4096];
  size_t length = 0;
  ASSERT_OK(accel_device_memory_summary(d, text, sizeof(text), &length));
  ASSERT_STR_CONTAINS(text, "oversize allocations");
  accel_buffer_release(c);
  accel_buffer_release(f);
  ASSERT_OK(accel_device_empty_cache(d));
  i = info(d);
  ASSERT_EQ(i.oversize_allocations, 0);
  ASSERT_EQ(i.oversize_segments, 0);
  ASSERT_EQ(i.oversize_segments_peak, 3);
  ASSERT_OK(accel_device_reset_peak_memory_stats(d));
  ASSERT_EQ(info(d).oversize_segments_peak, 0);
  accel_device_release(d);
}

TEST(roundup_power2_divisions) {
  if (!conf_case("roundup")) SKIP("MEMORY_CONF_CASE is not roundup");
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  ASSERT_EQ(info(d).roundup_power2_divisions, 4);
  ASSERT_EQ(info(d).max_split_size, 0);
  // request -> block: quarters between powers of two above 4 * 512 bytes,
  // 512-byte steps below, powers of two themselves unchanged.
  static const size_t cases[][2] = {
      {1500, 1536},
      {700 * 1000, 768 * 1024},
      {MIB, MIB},
      {17 * MIB + 1, 20 * MIB},
      // Cut from the cached 20 MiB block: 3.5 MiB, not 3 MiB + 512.
      {3 * MIB + 1, 3 * MIB + MIB / 2},
  };
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
    accel_buffer_t* buf = NULL;
    uint64_t was = stats(d).allocated_bytes;
    ASSERT_OK(accel_buffer_create(d, cases[k][0], &buf));
    ASSERT_EQ(accel_buffer_size(buf), cases[k][0]);
    ASSERT_EQ(stats(d).allocated_bytes - was, cases[k][1]);
    accel_buffer_release(buf);
  }
  accel_device_release(d);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
