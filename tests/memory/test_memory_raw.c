// SPDX-License-Identifier: MIT
//
// ACCEL_ALLOCATOR. MEMORY_TEST_EXPECT says which mode the environment of
// this run selects (tests/memory/CMakeLists.txt): "raw" (every buffer its
// own plugin allocation of exactly its size) or "caching" (the default, and
// what a bad value falls back to).
#include <stdlib.h>
#include <string.h>

#include "memory_test.h"
#include "test.h"

static bool expect_raw(void) {
  const char* expect = getenv("MEMORY_TEST_EXPECT");
  return expect != NULL && strcmp(expect, "raw") == 0;
}

TEST(mode_from_environment) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  accel_buffer_t* bufs[4] = {NULL};
  for (int i = 0; i < 4; i++) {
    ASSERT_OK(accel_buffer_create(d, 1000, &bufs[i]));
  }
  accel_memory_stats_t s = memory_stats(d);
  size_t length = 0;
  char text[4096];
  ASSERT_OK(accel_device_memory_summary(d, text, sizeof(text), &length));
  if (expect_raw()) {
    ASSERT_EQ(s.raw_allocs, 4);  // one plugin allocation per buffer
    ASSERT_EQ(s.cache_misses, 4);
    ASSERT_EQ(s.cache_hits, 0);
    ASSERT_EQ(s.allocated_bytes, 4000);  // exact sizes, no rounding
    ASSERT_EQ(s.reserved_bytes, 4000);
    ASSERT_STR_CONTAINS(text, "raw (ACCEL_ALLOCATOR=raw)");
  } else {
    ASSERT_EQ(s.raw_allocs, 1);
    ASSERT_EQ(s.cache_hits, 3);
    ASSERT_EQ(s.allocated_bytes, 4 * 1024);
    ASSERT_STR_CONTAINS(text, "caching allocator");
  }
  for (int i = 0; i < 4; i++) accel_buffer_release(bufs[i]);
  s = memory_stats(d);
  if (expect_raw()) {
    ASSERT_EQ(s.raw_frees, 4);  // given back at once
    ASSERT_EQ(s.reserved_bytes, 0);
  } else {
    ASSERT_EQ(s.raw_frees, 0);
    ASSERT_EQ(s.reserved_bytes, 2 * MiB);
  }
  // Every create is counted the same way again.
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(d, 1000, &b));
  s = memory_stats(d);
  ASSERT_EQ(s.raw_allocs, expect_raw() ? 5 : 1);
  ASSERT_EQ(s.allocated_bytes_peak, expect_raw() ? 4000 : 4096);
  accel_buffer_release(b);
  accel_device_release(d);
}

// Raw mode keeps the stream-ordered guarantee: a buffer freed while a
// stream still reads it goes back to the plugin only after that read.
TEST(raw_free_waits_for_streams) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &stream));
  accel_buffer_t *busy = NULL, *x = NULL;
  ASSERT_OK(accel_buffer_create(d, MEMORY_TEST_BUSY, &busy));
  ASSERT_OK(accel_stream_alloc_buffer(stream, 1 * MiB, &x));
  ASSERT_OK(accel_stream_fill_buffer(stream, x, 0, 0x42, 1 * MiB));
  ASSERT_OK(memory_busy(stream, busy, 4));
  uint8_t* host = malloc(1 * MiB);
  ASSERT_NOT_NULL(host);
  ASSERT_OK(accel_stream_read_buffer(stream, x, 0, host, 1 * MiB));
  accel_memory_stats_t before = memory_stats(d);
  accel_buffer_release(x);
  accel_memory_stats_t s = memory_stats(d);
  if (expect_raw()) {
    ASSERT_EQ(s.raw_frees, before.raw_frees);  // not yet: the read is queued
    ASSERT_EQ(s.active_blocks, 2);
  }
  ASSERT_OK(accel_stream_synchronize(stream));
  ASSERT(memory_all(host, 1 * MiB, 0x42));
  ASSERT_OK(accel_device_empty_cache(d));
  s = memory_stats(d);
  ASSERT_EQ(s.active_blocks, 1);
  ASSERT_EQ(s.reserved_bytes, expect_raw() ? MEMORY_TEST_BUSY : 64 * MiB);
  free(host);
  accel_buffer_release(busy);
  accel_stream_release(stream);
  accel_device_release(d);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
