// SPDX-License-Identifier: MIT
//
// Helpers of the OpenCL kernel tests (test_opencl_kernels.c,
// test_opencl_launch.c, test_opencl_cache.c): one opencl:0 device and
// stream per process, and buffer round trips. Every helper returns an accel_status_t so tests can
// ASSERT_OK it.
#ifndef ACCEL_TESTS_OPENCL_OPENCL_TEST_H_
#define ACCEL_TESTS_OPENCL_OPENCL_TEST_H_

#include <accel/accel.h>
#include <stdlib.h>
#include <string.h>

typedef struct ocl_ctx {
  accel_device_t* device;
  accel_stream_t* stream;
  accel_device_info_t info;
} ocl_ctx_t;

// Opens `uri` and a stream on it. The caller closes with ocl_ctx_close.
static inline accel_status_t ocl_ctx_open(ocl_ctx_t* c, const char* uri) {
  memset(c, 0, sizeof(*c));
  accel_status_t s = accel_device_open(uri, &c->device);
  if (s == ACCEL_OK) s = accel_stream_create(c->device, 0, &c->stream);
  if (s == ACCEL_OK) {
    c->info.struct_size = sizeof(c->info);
    s = accel_device_query_info(c->device, &c->info);
  }
  return s;
}

static inline void ocl_ctx_close(ocl_ctx_t* c) {
  accel_stream_release(c->stream);
  accel_device_release(c->device);
  memset(c, 0, sizeof(*c));
}

// A new buffer of `size` bytes holding `data` (NULL: left as allocated).
static inline accel_status_t ocl_buffer(ocl_ctx_t* c, size_t size,
                                        const void* data,
                                        accel_buffer_t** out) {
  accel_status_t s = accel_buffer_create(c->device, size, out);
  if (s == ACCEL_OK && data != NULL)
    s = accel_buffer_write(*out, 0, data, size);
  return s;
}

// Waits for the stream, then reads `size` bytes at `offset`.
static inline accel_status_t ocl_read(ocl_ctx_t* c, accel_buffer_t* b,
                                      size_t offset, void* out, size_t size) {
  accel_status_t s = accel_stream_synchronize(c->stream);
  if (s == ACCEL_OK) s = accel_buffer_read(b, offset, out, size);
  return s;
}

#endif  // ACCEL_TESTS_OPENCL_OPENCL_TEST_H_
