// SPDX-License-Identifier: MIT
//
// Large copies of the CPU plugin (plugins/cpu/pool.c): split across the
// pool, and from 3/4 of the last-level cache (glibc's threshold) written
// with non-temporal stores. A copy larger than that (208 MiB + 13 bytes,
// above the 192 MiB of a 256 MiB L3), at offsets that misalign both ends,
// must arrive exactly: every byte, and none past either end. Synchronous
// (accel_buffer_copy) and on a stream alike.
#include <stdlib.h>
#include <string.h>

#include "cpu_test.h"
#include "test.h"

#define COPY_SIZE (((size_t)208 << 20) + 13)
#define SRC_OFFSET 5
#define DST_OFFSET 3
#define PAD 64

// Byte `i` of the source pattern: not periodic in any power of two.
static uint8_t pattern(size_t i) { return (uint8_t)((i * 2654435761u) >> 13); }

// Checks that `dst` holds the pattern over the copy and 0xEE around it;
// prints the first wrong index.
static bool check(const uint8_t* dst) {
  for (size_t i = 0; i < DST_OFFSET; i++) {
    if (dst[i] != 0xEE) {
      printf("  byte %zu before the copy changed\n", i);
      return false;
    }
  }
  for (size_t i = 0; i < COPY_SIZE; i++) {
    if (dst[DST_OFFSET + i] != pattern(i)) {
      printf("  byte %zu of the copy is wrong\n", i);
      return false;
    }
  }
  for (size_t i = DST_OFFSET + COPY_SIZE; i < COPY_SIZE + PAD; i++) {
    if (dst[i] != 0xEE) {
      printf("  byte %zu after the copy changed\n", i);
      return false;
    }
  }
  return true;
}

TEST(large_misaligned_copies_are_exact) {
  accel_device_t* device = NULL;
  accel_stream_t* stream = NULL;
  accel_buffer_t *src = NULL, *dst = NULL;
  size_t total = COPY_SIZE + PAD;
  uint8_t* host = malloc(total);
  ASSERT(host != NULL);
  ASSERT_OK(accel_device_open("cpu:0", &device));
  ASSERT_OK(accel_stream_create(device, 0, &stream));
  ASSERT_OK(accel_buffer_create(device, total, &src));
  ASSERT_OK(accel_buffer_create(device, total, &dst));
  for (size_t i = 0; i < COPY_SIZE; i++) host[SRC_OFFSET + i] = pattern(i);
  ASSERT_OK(accel_buffer_write(src, 0, host, total));
  for (int pass = 0; pass < 2; pass++) {
    ASSERT_OK(accel_buffer_fill(dst, 0, 0xEE, total));
    if (pass == 0) {
      ASSERT_OK(accel_buffer_copy(dst, DST_OFFSET, src, SRC_OFFSET,
                                  COPY_SIZE));
    } else {
      ASSERT_OK(accel_stream_copy_buffer(stream, dst, DST_OFFSET, src,
                                         SRC_OFFSET, COPY_SIZE));
      ASSERT_OK(accel_stream_synchronize(stream));
    }
    ASSERT_OK(accel_buffer_read(dst, 0, host, total));
    printf("  %s copy of %zu bytes\n", pass == 0 ? "synchronous" : "stream",
           (size_t)COPY_SIZE);
    ASSERT(check(host));
  }
  accel_buffer_release(dst);
  accel_buffer_release(src);
  accel_stream_release(stream);
  accel_device_release(device);
  free(host);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
