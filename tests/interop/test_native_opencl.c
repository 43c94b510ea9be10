// SPDX-License-Identifier: MIT
//
// Native handles on the OpenCL plugin (PoCL's CPU device in CI), used
// with the OpenCL API directly: clEnqueueReadBuffer on the returned
// cl_command_queue and cl_mem reads what accel wrote, a write enqueued
// there is ordered before accel's later work on the stream, and the
// context, device, queue and event answer the queries OpenCL defines for
// them. The OpenCL entry points come from the ICD loader the plugin opens
// too (libOpenCL.so.1), so the handles are the same objects. Skips (77)
// without an OpenCL device.
#include <accel/interop.h>
#include <stdint.h>
#include <string.h>

#include "opencl_loader.h"
#include "test.h"

static ocl_loader_t cl;

// Opens the OpenCL device and the ICD loader; false (skip) without them.
static bool ocl_open(accel_device_t** out) {
  if (accel_device_open("opencl:0", out) != ACCEL_OK) return false;
  return ocl_loader_open(&cl);
}

#define CL_OK(call) ASSERT_EQ((call), CL_SUCCESS)

TEST(device_and_context_are_opencl_objects) {
  accel_device_t* d = NULL;
  if (!ocl_open(&d)) SKIP("no OpenCL device or ICD loader");
  uint64_t dev = 0, ctx = 0, again = 0;
  ASSERT_OK(accel_device_query_native(d, ACCEL_NATIVE_DEVICE, &dev));
  ASSERT_OK(accel_device_query_native(d, ACCEL_NATIVE_CONTEXT, &ctx));
  ASSERT_OK(accel_device_query_native(d, ACCEL_NATIVE_CONTEXT, &again));
  ASSERT_NE(dev, 0);
  ASSERT_NE(ctx, 0);
  ASSERT_EQ(ctx, again);
  cl_device_type type = 0;
  CL_OK(cl.device_info((cl_device_id)(uintptr_t)dev, CL_DEVICE_TYPE,
                       sizeof(type), &type, NULL));
  ASSERT_NE(type, 0);
  // DLPack needs an address, which a cl_mem does not have.
  int32_t dl_type = 0, dl_id = 0;
  ASSERT_STATUS(accel_dlpack_device(d, &dl_type, &dl_id),
                ACCEL_ERROR_UNSUPPORTED);
  accel_device_release(d);
}

TEST(queue_and_mem_read_what_accel_wrote) {
  accel_device_t* d = NULL;
  if (!ocl_open(&d)) SKIP("no OpenCL device or ICD loader");
  accel_stream_t* s = NULL;
  accel_buffer_t* pad = NULL;
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  // A first buffer, so that `b` may sit at an offset of a shared cl_mem.
  ASSERT_OK(accel_buffer_create(d, 4096, &pad));
  ASSERT_OK(accel_buffer_create(d, 4096, &b));
  uint64_t queue_h = 0, mem_h = 0, dev = 0, ctx = 0;
  size_t offset = 0;
  ASSERT_OK(accel_stream_query_native(s, &queue_h));
  ASSERT_OK(accel_buffer_query_native(b, &mem_h, &offset));
  ASSERT_OK(accel_device_query_native(d, ACCEL_NATIVE_DEVICE, &dev));
  ASSERT_OK(accel_device_query_native(d, ACCEL_NATIVE_CONTEXT, &ctx));
  cl_command_queue queue = (cl_command_queue)(uintptr_t)queue_h;
  cl_mem mem = (cl_mem)(uintptr_t)mem_h;
  // OpenCL agrees on what the objects are.
  cl_context mem_ctx = NULL, queue_ctx = NULL;
  cl_device_id queue_dev = NULL;
  size_t mem_size = 0;
  CL_OK(cl.mem_info(mem, CL_MEM_CONTEXT, sizeof(mem_ctx), &mem_ctx, NULL));
  CL_OK(cl.mem_info(mem, CL_MEM_SIZE, sizeof(mem_size), &mem_size, NULL));
  CL_OK(cl.queue_info(queue, CL_QUEUE_CONTEXT, sizeof(queue_ctx), &queue_ctx,
                      NULL));
  CL_OK(cl.queue_info(queue, CL_QUEUE_DEVICE, sizeof(queue_dev), &queue_dev,
                      NULL));
  ASSERT_EQ((uintptr_t)mem_ctx, ctx);
  ASSERT_EQ((uintptr_t)queue_ctx, ctx);
  ASSERT_EQ((uintptr_t)queue_dev, dev);
  ASSERT_GE(mem_size, offset + 4096);
  // accel writes on its stream; OpenCL reads on the same in-order queue.
  unsigned char in[4096], out[4096];
  for (size_t i = 0; i < sizeof(in); i++) in[i] = (unsigned char)(i * 13 + 5);
  ASSERT_OK(accel_stream_write_buffer(s, b, 0, in, sizeof(in)));
  memset(out, 0, sizeof(out));
  CL_OK(cl.read(queue, mem, CL_TRUE, offset, sizeof(out), out, 0, NULL, NULL));
  ASSERT_MEM_EQ(in, out, sizeof(in));
  // OpenCL writes on the queue; accel's later read on the stream sees it.
  for (size_t i = 0; i < sizeof(in); i++) in[i] = (unsigned char)(255 - i);
  CL_OK(cl.write(queue, mem, CL_FALSE, offset + 100, 1000, in, 0, NULL, NULL));
  ASSERT_OK(accel_stream_read_buffer(s, b, 100, out, 1000));
  ASSERT_OK(accel_stream_synchronize(s));
  ASSERT_MEM_EQ(in, out, 1000);
  accel_buffer_release(b);
  accel_buffer_release(pad);
  accel_stream_release(s);
  accel_device_release(d);
}

TEST(event_is_the_marker_of_the_latest_record) {
  accel_device_t* d = NULL;
  if (!ocl_open(&d)) SKIP("no OpenCL device or ICD loader");
  accel_stream_t* s = NULL;
  accel_event_t* e = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_event_create(d, 0, &e));
  uint64_t h = 1, first = 0, second = 0, queue_h = 0;
  ASSERT_OK(accel_event_query_native(e, &h));
  ASSERT_EQ(h, 0);  // never recorded
  ASSERT_OK(accel_stream_query_native(s, &queue_h));
  ASSERT_OK(accel_event_record(e, s));
  ASSERT_OK(accel_event_query_native(e, &first));
  ASSERT_NE(first, 0);
  cl_event marker = (cl_event)(uintptr_t)first;
  cl_command_queue queue = NULL;
  CL_OK(cl.event_info(marker, CL_EVENT_COMMAND_QUEUE, sizeof(queue), &queue,
                      NULL));
  ASSERT_EQ((uintptr_t)queue, queue_h);
  CL_OK(cl.wait(1, &marker));
  cl_int state = -1;
  CL_OK(cl.event_info(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(state),
                      &state, NULL));
  ASSERT_EQ(state, CL_COMPLETE);
  ASSERT_OK(accel_event_record(e, s));
  ASSERT_OK(accel_event_query_native(e, &second));
  ASSERT_NE(second, 0);
  ASSERT_NE(second, first);  // a new marker per record
  ASSERT_OK(accel_event_synchronize(e));
  accel_event_release(e);
  accel_stream_release(s);
  accel_device_release(d);
}

TEST(host_register_only_records_on_opencl) {
  accel_device_t* d = NULL;
  if (!ocl_open(&d)) SKIP("no OpenCL device or ICD loader");
  static unsigned char host[8192];
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_host_register(d, host, sizeof(host), 0));
  bool in = false;
  ASSERT_OK(accel_host_query_registered(d, host + 10, 100, &in));
  ASSERT(in);
  for (size_t i = 0; i < 4096; i++) host[i] = (unsigned char)(i ^ 0x5a);
  ASSERT_OK(accel_buffer_create(d, 4096, &b));
  ASSERT_OK(accel_buffer_write(b, 0, host, 4096));
  ASSERT_OK(accel_buffer_read(b, 0, host + 4096, 4096));
  ASSERT_MEM_EQ(host, host + 4096, 4096);
  ASSERT_OK(accel_host_unregister(d, host));
  accel_buffer_release(b);
  accel_device_release(d);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  if (cl.lib != NULL) dlclose(cl.lib);
  return rc;
}
