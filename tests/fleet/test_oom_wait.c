// SPDX-License-Identifier: MIT
//
// Out of device memory while a released buffer is still used by queued
// work: the allocator waits for that work, empties its cache and retries,
// so the allocation succeeds (ACCEL_CPU_MEMORY_LIMIT=64M from CTest).
#include <accel/accel.h>
#include <stdlib.h>

#include "test.h"

#define MiB ((size_t)1 << 20)

// Queues a few hundred milliseconds of fills of all of `b` on `s`.
static accel_status_t keep_busy(accel_stream_t* s, accel_buffer_t* b) {
  size_t count = accel_buffer_size(b) / sizeof(float);
  accel_status_t status = ACCEL_OK;
  for (int i = 0; i < 40 && status == ACCEL_OK; i++) {
    status = accel_op_fill(s, b, 0, ACCEL_DTYPE_F32, count, (double)i);
  }
  return status;
}

TEST(retry_waits_for_work_on_freed_memory) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  uint64_t free_bytes = 0, total = 0;
  ASSERT_OK(accel_device_query_memory(d, &free_bytes, &total));
  if (total != 64 * MiB) {
    accel_device_release(d);
    SKIP("needs ACCEL_CPU_MEMORY_LIMIT=64M");
  }
  accel_stream_t* s = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  accel_buffer_t* a = NULL;
  ASSERT_OK(accel_buffer_create(d, 48 * MiB, &a));
  ASSERT_OK(keep_busy(s, a));
  accel_buffer_release(a);  // still in use by `s`: pending, not free

  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(d, 48 * MiB, &b));
  float last = 0;
  ASSERT_OK(accel_stream_synchronize(s));
  ASSERT_OK(accel_buffer_read(b, 0, &last, sizeof(last)));
  accel_buffer_release(b);
  accel_stream_release(s);
  accel_device_release(d);
}

// The same with a buffer allocated on the stream itself: freed, it goes
// back to the stream's own pool at once, and the retry waits for the
// stream before giving that pool's memory back.
TEST(retry_waits_for_stream_pool) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  accel_stream_t* s = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  accel_buffer_t* a = NULL;
  ASSERT_OK(accel_stream_alloc_buffer(s, 48 * MiB, &a));
  ASSERT_OK(keep_busy(s, a));
  accel_buffer_release(a);
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(d, 48 * MiB, &b));
  accel_buffer_release(b);
  accel_stream_release(s);
  accel_device_release(d);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
