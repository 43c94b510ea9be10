// SPDX-License-Identifier: MIT
//
// accel_device_reset_accumulated_memory_stats on cpu:0: the accumulated
// counters go back to zero and count again from there; current and peak
// values stay.
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

int main(int argc, char** argv) { return test_main(argc, argv); }
