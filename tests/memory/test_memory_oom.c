// SPDX-License-Identifier: MIT
//
// Out of device memory, with ACCEL_CPU_MEMORY_LIMIT=64M (tests/memory/
// CMakeLists.txt): the allocator gives its cache back and retries once,
// then fails with a PyTorch-style message. `tiny_device` runs again with a
// limit below one 2 MiB segment.
#include <stdlib.h>
#include <string.h>

#include "memory_test.h"
#include "test.h"

TEST(retry_after_emptying_the_cache) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  uint64_t free_bytes = 0, total = 0;
  ASSERT_OK(accel_device_query_memory(d, &free_bytes, &total));
  if (total != 64 * MiB) {
    accel_device_release(d);
    SKIP("needs ACCEL_CPU_MEMORY_LIMIT=64M");
  }

  accel_buffer_t *a = NULL, *b = NULL, *c = NULL;
  ASSERT_OK(accel_buffer_create(d, 40 * MiB, &a));
  accel_buffer_release(a);  // 40 MiB stay cached
  accel_memory_stats_t s = memory_stats(d);
  ASSERT_EQ(s.reserved_bytes, 40 * MiB);
  ASSERT_EQ(s.oom_retries, 0);

  // 48 MiB does not fit next to the cached 40 MiB: the plugin says OOM,
  // the allocator frees its cache and the retry succeeds.
  ASSERT_OK(accel_buffer_create(d, 48 * MiB, &b));
  s = memory_stats(d);
  ASSERT_EQ(s.oom_retries, 1);
  ASSERT_EQ(s.ooms, 0);
  ASSERT_EQ(s.raw_frees, 1);
  ASSERT_EQ(s.reserved_bytes, 48 * MiB);
  ASSERT_EQ(s.reserved_bytes_peak, 48 * MiB);

  // 32 MiB more cannot fit at all: one more retry, then the final error.
  ASSERT_STATUS(accel_buffer_create(d, 32 * MiB, &c),
                ACCEL_ERROR_OUT_OF_DEVICE_MEMORY);
  ASSERT_NULL(c);
  const char* message = accel_last_error();
  printf("  message: %s\n", message);
  ASSERT_STR_CONTAINS(message,
                      "cpu:0: out of device memory: tried to allocate "
                      "32.00 MiB; 48.00 MiB allocated; 48.00 MiB reserved; "
                      "16.00 MiB free of 64.00 MiB total (");
  // The plugin's own reason follows in parentheses.
  ASSERT_STR_CONTAINS(message, "ACCEL_CPU_MEMORY_LIMIT");
  s = memory_stats(d);
  ASSERT_EQ(s.oom_retries, 2);
  ASSERT_EQ(s.ooms, 1);
  ASSERT_EQ(s.allocated_bytes, 48 * MiB);
  ASSERT_EQ(s.active_blocks, 1);

  // The device still works, and the failure left nothing behind.
  ASSERT_OK(accel_buffer_create(d, 8 * MiB, &c));
  ASSERT_OK(accel_buffer_fill(c, 0, 1, 8 * MiB));
  accel_buffer_release(c);
  accel_buffer_release(b);
  s = memory_stats(d);
  ASSERT_EQ(s.allocated_bytes, 0);
  accel_device_release(d);
}

// Cached blocks of a busy stream are not freed by the OOM path (that would
// pull memory from under queued work); the allocation fails instead.
TEST(busy_stream_cache_is_not_freed) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  uint64_t free_bytes = 0, total = 0;
  ASSERT_OK(accel_device_query_memory(d, &free_bytes, &total));
  if (total != 64 * MiB) {
    accel_device_release(d);
    SKIP("needs ACCEL_CPU_MEMORY_LIMIT=64M");
  }
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &stream));
  accel_buffer_t *x = NULL, *y = NULL;
  ASSERT_OK(accel_stream_alloc_buffer(stream, 40 * MiB, &x));
  ASSERT_OK(memory_busy(stream, x, 8));
  accel_buffer_release(x);  // cached for the stream, which is busy
  accel_status_t status = accel_buffer_create(d, 40 * MiB, &y);
  bool done = false;
  ASSERT_OK(accel_stream_query(stream, &done));
  if (!done) {
    // Busy through the whole attempt: the stream's block stayed.
    ASSERT_EQ(status, ACCEL_ERROR_OUT_OF_DEVICE_MEMORY);
  }
  accel_buffer_release(y);
  ASSERT_OK(accel_stream_synchronize(stream));
  // Idle now: the retry may take the stream's cached segment back.
  ASSERT_OK(accel_buffer_create(d, 40 * MiB, &y));
  accel_buffer_release(y);
  accel_stream_release(stream);
  accel_device_release(d);
}

// A device smaller than a 2 MiB segment: small requests fall back to a
// segment of exactly their rounded size.
TEST(tiny_device) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  uint64_t free_bytes = 0, total = 0;
  ASSERT_OK(accel_device_query_memory(d, &free_bytes, &total));
  if (total >= 2 * MiB) {
    accel_device_release(d);
    SKIP("needs ACCEL_CPU_MEMORY_LIMIT below 2 MiB");
  }
  accel_buffer_t *a = NULL, *b = NULL;
  ASSERT_OK(accel_buffer_create(d, 100 * KiB, &a));
  accel_memory_stats_t s = memory_stats(d);
  ASSERT_EQ(s.reserved_bytes, 100 * KiB);
  ASSERT_EQ(s.oom_retries, 0);
  accel_buffer_release(a);
  ASSERT_OK(accel_buffer_create(d, 50 * KiB, &a));  // reuses the segment
  ASSERT_OK(accel_buffer_create(d, 500 * KiB, &b));
  s = memory_stats(d);
  ASSERT_EQ(s.raw_allocs, 2);
  ASSERT_EQ(s.cache_hits, 1);
  accel_buffer_release(a);
  accel_buffer_release(b);
  // 900 KiB fits the device only once the 600 KiB cache is given back.
  ASSERT_OK(accel_buffer_create(d, 900 * KiB, &a));
  s = memory_stats(d);
  ASSERT_EQ(s.oom_retries, 1);
  ASSERT_EQ(s.reserved_bytes, 900 * KiB);
  accel_buffer_release(a);
  // More than the whole device fails at once, without asking the plugin.
  ASSERT_STATUS(accel_buffer_create(d, 2 * MiB, &a),
                ACCEL_ERROR_OUT_OF_DEVICE_MEMORY);
  ASSERT_STR_CONTAINS(accel_last_error(), "tried to allocate 2.00 MiB");
  ASSERT_STR_CONTAINS(accel_last_error(), "(more than the device's");
  s = memory_stats(d);
  ASSERT_EQ(s.ooms, 1);
  ASSERT_EQ(s.oom_retries, 1);
  ASSERT_EQ(s.reserved_bytes, 900 * KiB);  // the cache was left alone
  accel_device_release(d);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
