// SPDX-License-Identifier: MIT
//
// accel_range_push / accel_range_pop: bad input, nesting limits, and (when
// the core forwards to NVTX and NVTX_INJECTION64_PATH names the test's
// injection library) that NVTX saw the pushed names in order.
#include <accel/accel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

// Reads the file at `path` into `text` (NUL-terminated, truncated).
static void slurp(const char* path, char* text, size_t size) {
  text[0] = '\0';
  FILE* f = fopen(path, "r");
  if (f == NULL) return;
  size_t n = fread(text, 1, size - 1, f);
  fclose(f);
  text[n] = '\0';
}

TEST(bad_input_is_refused) {
  ASSERT_STATUS(accel_range_push(NULL), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_range_pop(), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "no range is open");
}

TEST(nesting_is_bounded) {
  int pushed = 0;
  while (accel_range_push("deep") == ACCEL_OK && pushed < 1000) pushed++;
  ASSERT_EQ(pushed, 64);
  ASSERT_STR_CONTAINS(accel_last_error(), "deeper than 64");
  for (int i = 0; i < pushed; i++) ASSERT_OK(accel_range_pop());
  ASSERT_STATUS(accel_range_pop(), ACCEL_ERROR_INVALID_ARGUMENT);
}

TEST(nvtx_sees_the_ranges_in_order) {
  const char* log = getenv("ACCEL_TEST_NVTX_LOG");
  if (log == NULL || getenv("NVTX_INJECTION64_PATH") == NULL) {
    SKIP("no NVTX injection configured");
  }
  remove(log);
  ASSERT_OK(accel_range_push("outer"));
  ASSERT_OK(accel_range_push("inner"));
  ASSERT_OK(accel_range_pop());
  ASSERT_OK(accel_range_pop());
  ASSERT_OK(accel_range_push("second"));
  ASSERT_OK(accel_range_pop());
  char text[512];
  slurp(log, text, sizeof(text));
  ASSERT_STR_EQ(text, "push outer\npush inner\npop\npop\npush second\npop\n");
}

// ACCEL_TRACE_RANGES=1: stream operations become NVTX ranges too.
TEST(builtin_ranges_around_stream_operations) {
  const char* log = getenv("ACCEL_TEST_NVTX_LOG");
  if (log == NULL || getenv("NVTX_INJECTION64_PATH") == NULL) {
    SKIP("no NVTX injection configured");
  }
  accel_device_t* dev = NULL;
  accel_buffer_t* buf = NULL;
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &dev));
  ASSERT_OK(accel_buffer_create(dev, 256, &buf));
  ASSERT_OK(accel_stream_create(dev, 0, &stream));
  remove(log);
  ASSERT_OK(accel_stream_fill_buffer(stream, buf, 0, 7, 256));
  ASSERT_OK(accel_stream_synchronize(stream));
  accel_stream_release(stream);
  accel_buffer_release(buf);
  accel_device_release(dev);
  char text[512];
  slurp(log, text, sizeof(text));
  ASSERT_STR_EQ(text, "push accel_stream_fill_buffer\npop\n");
}

// With ACCEL_TRACE set a range is a span in the file, written at shutdown.
TEST(ranges_are_spans_in_the_trace_file) {
  const char* path = getenv("ACCEL_TRACE");
  if (path == NULL) SKIP("ACCEL_TRACE is not set");
  ASSERT_OK(accel_range_push("phase \"one\""));
  ASSERT_OK(accel_range_pop());
  // A name that is not UTF-8, with a control character: the file stays
  // valid JSON in valid UTF-8 (U+FFFD for the stray byte, \u0001).
  ASSERT_OK(accel_range_push("bad\xff\x01name"));
  ASSERT_OK(accel_range_pop());
  accel_shutdown();  // flushes the file
  static char text[1 << 16];
  slurp(path, text, sizeof(text));
  ASSERT_STR_CONTAINS(text, "{\"name\":\"phase \\\"one\\\"\",\"ph\":\"X\"");
  ASSERT_STR_CONTAINS(text, "{\"name\":\"bad\\ufffd\\u0001name\",\"ph\":\"X\"");
}

int main(int argc, char** argv) { return test_main(argc, argv); }
