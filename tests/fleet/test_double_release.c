// SPDX-License-Identifier: MIT
//
// A released buffer handle: releasing or retaining it again is ignored
// with a message, and buffer calls on it fail with INVALID_ARGUMENT instead
// of touching freed memory.
#include <accel/accel.h>

#include "test.h"

TEST(released_handle_is_refused) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  accel_buffer_t* a = NULL;
  ASSERT_OK(accel_buffer_create(d, 4096, &a));
  accel_buffer_release(a);

  accel_buffer_release(a);  // double release: ignored
  ASSERT_STR_CONTAINS(accel_last_error(), "already released");
  accel_buffer_retain(a);  // retain after release: ignored
  ASSERT_STR_CONTAINS(accel_last_error(), "already released");
  accel_buffer_release(a);  // would drop the reference the retain "took"

  char byte = 1;
  ASSERT_STATUS(accel_buffer_write(a, 0, &byte, 1),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "already released");
  ASSERT_STATUS(accel_buffer_read(a, 0, &byte, 1),
                ACCEL_ERROR_INVALID_ARGUMENT);

  // The allocator's books are intact: one new buffer, one active block.
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(d, 4096, &b));
  accel_memory_stats_t s = {.struct_size = sizeof(s)};
  ASSERT_OK(accel_device_query_memory_stats(d, &s));
  ASSERT_EQ(s.active_blocks, 1);
  ASSERT_OK(accel_buffer_write(b, 0, &byte, 1));
  accel_buffer_release(b);
  accel_device_release(d);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
