// SPDX-License-Identifier: MIT
//
// accel_buffer_query_address: the device address of a buffer byte. On the
// CPU plugin it is a host pointer (ACCEL_DEVICE_CAP_HOST_ACCESSIBLE) that
// sees what the buffer holds, at the requested offset, in a buffer the
// caching allocator placed inside a larger segment.
#include <stdint.h>
#include <accel/accel.h>
#include <string.h>

#include "test.h"

TEST(cpu_address_is_the_data) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  accel_device_info_t info;
  info.struct_size = sizeof(info);
  ASSERT_OK(accel_device_query_info(d, &info));
  ASSERT((info.caps & ACCEL_DEVICE_CAP_HOST_ACCESSIBLE) != 0);
  // Two buffers, so the second sits at a non-zero offset of its segment.
  accel_buffer_t *a = NULL, *b = NULL;
  ASSERT_OK(accel_buffer_create(d, 4096, &a));
  ASSERT_OK(accel_buffer_create(d, 4096, &b));
  unsigned char bytes[4096];
  for (size_t i = 0; i < sizeof(bytes); i++) bytes[i] = (unsigned char)(i * 7);
  ASSERT_OK(accel_buffer_write(b, 0, bytes, sizeof(bytes)));
  uint64_t address = 0;
  ASSERT_OK(accel_buffer_query_address(b, 100, &address));
  ASSERT(address != 0);
  const unsigned char* p = (const unsigned char*)(uintptr_t)address;
  ASSERT_MEM_EQ(p, bytes + 100, sizeof(bytes) - 100);
  // Writes through the address are what the buffer reads back.
  unsigned char* w = (unsigned char*)(uintptr_t)address;
  w[0] = 0xab;
  unsigned char back = 0;
  ASSERT_OK(accel_buffer_read(b, 100, &back, 1));
  ASSERT_EQ(back, 0xab);
  uint64_t end = 0;
  ASSERT_OK(accel_buffer_query_address(b, 4096, &end));
  ASSERT_EQ(end - address, 4096 - 100);
  accel_buffer_release(a);
  accel_buffer_release(b);
  accel_device_release(d);
}

TEST(address_bad_arguments) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(d, 64, &b));
  uint64_t address = 1;
  ASSERT_EQ(accel_buffer_query_address(b, 65, &address),
            ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(address, 0);
  ASSERT(strstr(accel_last_error(), "past the end") != NULL);
  ASSERT_EQ(accel_buffer_query_address(NULL, 0, &address),
            ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(accel_buffer_query_address(b, 0, NULL),
            ACCEL_ERROR_INVALID_ARGUMENT);
  accel_buffer_release(b);
  accel_device_release(d);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
