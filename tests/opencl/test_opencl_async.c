// SPDX-License-Identifier: MIT
//
// The OpenCL plugin's stream machinery seen from inside: this test reads
// the plugin's stream and device structs (accel_opencl.h) and is built
// with stream.c and icd.c, so it can hold a stream's queue with a user
// event (a command that waits for the host), track it as the plugin
// tracks its own commands, and make it fail. It
// checks that stream_query never blocks, that a failed command becomes
// the stream's sticky error for synchronize and query, that elapsed time
// of an event not yet reached is NOT_READY, that a stream waiting for an
// event of another stream waits, that the pending-event list is pruned
// instead of growing, that a fill enqueued behind another thread's marker
// is not taken as covered by it, and that pinned blocks are released.
// Skips (77) without an OpenCL device.
#include <time.h>

#include "accel_opencl.h"
#include "opencl/test_opencl_plugin.h"
#include "test.h"
#include "test_host.h"

// Opens device 0 of a fresh plugin state or skips the test.
#define OPEN_OR_SKIP(fx)                            \
  do {                                              \
    const accel_plugin_t* desc_ = ocl_descriptor(); \
    ASSERT_NOT_NULL(desc_);                         \
    OCL_ASSERT_OK(ocl_load(desc_, &(fx)));          \
    if (!ocl_open_device(&(fx), 0)) {               \
      ocl_unload(&(fx));                            \
      SKIP("no OpenCL device");                     \
    }                                               \
  } while (0)

// Makes `stream`'s queue wait for a new user event, which is returned.
static cl_event block(accel_opencl_stream_t* stream) {
  const accel_opencl_api_t* cl = stream->device->cl;
  cl_int err = CL_SUCCESS;
  cl_event gate = cl->clCreateUserEvent(stream->device->context, &err);
  if (err != CL_SUCCESS) return NULL;
  cl_event barrier = NULL;
  uint64_t mark = accel_opencl_stream_mark(stream);
  err = cl->clEnqueueBarrierWithWaitList(stream->queue, 1, &gate, &barrier);
  accel_opencl_stream_tracked(stream, err, barrier, mark, "test barrier");
  return gate;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

TEST(blocked_stream) {
  ocl_fixture_t fx;
  OPEN_OR_SKIP(fx);
  accel_opencl_device_t* device = fx.device;
  void *mem = NULL, *stream = NULL, *other = NULL, *start = NULL, *end = NULL;
  OCL_ASSERT_OK(fx.ops->mem_alloc(device, 4096, &mem));
  OCL_ASSERT_OK(fx.ops->stream_create(device, 0, &stream));
  OCL_ASSERT_OK(fx.ops->stream_create(device, 0, &other));
  OCL_ASSERT_OK(fx.ops->event_create(device, ACCEL_EVENT_TIMING, &start));
  OCL_ASSERT_OK(fx.ops->event_create(device, ACCEL_EVENT_TIMING, &end));
  OCL_ASSERT_OK(fx.ops->event_record(start, stream));
  OCL_ASSERT_OK(fx.ops->stream_synchronize(stream));
  cl_event gate = block(stream);
  ASSERT_NOT_NULL(gate);
  OCL_ASSERT_OK(fx.ops->memset(device, stream, mem, 0, 1, 4096));
  OCL_ASSERT_OK(fx.ops->event_record(end, stream));
  // The other stream waits for `end`, then writes 2.
  OCL_ASSERT_OK(fx.ops->stream_wait_event(other, end));
  OCL_ASSERT_OK(fx.ops->memset(device, other, mem, 0, 2, 4096));
  double t0 = now_ms();
  bool done = true;
  OCL_ASSERT_OK(fx.ops->stream_query(stream, &done));
  ASSERT(!done);
  OCL_ASSERT_OK(fx.ops->stream_query(other, &done));
  ASSERT(!done);
  OCL_ASSERT_OK(fx.ops->event_query(end, &done));
  ASSERT(!done);
  float ms = 0;
  OCL_ASSERT_STATUS(fx.ops->event_elapsed_ms(start, end, &ms),
                    ACCEL_ERROR_NOT_READY);
  ASSERT(now_ms() - t0 < 2000);  // none of these waited
  device->cl->clSetUserEventStatus(gate, CL_COMPLETE);
  device->cl->clReleaseEvent(gate);
  OCL_ASSERT_OK(fx.ops->stream_synchronize(other));
  unsigned char out[4096];
  OCL_ASSERT_OK(fx.ops->copy_d2h(device, NULL, out, mem, 0, sizeof(out)));
  ASSERT_EQ(out[0], 2);  // after the first stream's 1
  ASSERT_EQ(out[4095], 2);
  OCL_ASSERT_OK(fx.ops->event_elapsed_ms(start, end, &ms));
  ASSERT(ms >= 0);
  fx.ops->event_destroy(start);
  fx.ops->event_destroy(end);
  fx.ops->stream_destroy(stream);
  fx.ops->stream_destroy(other);
  fx.ops->mem_free(device, mem);
  ocl_unload(&fx);
}

TEST(sticky_async_error) {
  ocl_fixture_t fx;
  OPEN_OR_SKIP(fx);
  accel_opencl_device_t* device = fx.device;
  void *mem = NULL, *stream = NULL, *event = NULL;
  OCL_ASSERT_OK(fx.ops->mem_alloc(device, 4096, &mem));
  OCL_ASSERT_OK(fx.ops->stream_create(device, 0, &stream));
  OCL_ASSERT_OK(fx.ops->event_create(device, 0, &event));
  cl_event gate = block(stream);
  ASSERT_NOT_NULL(gate);
  OCL_ASSERT_OK(fx.ops->memset(device, stream, mem, 0, 1, 4096));
  OCL_ASSERT_OK(fx.ops->event_record(event, stream));
  // The host-side command fails: everything after it fails too.
  device->cl->clSetUserEventStatus(gate, CL_OUT_OF_RESOURCES);
  device->cl->clReleaseEvent(gate);
  OCL_ASSERT_STATUS(fx.ops->stream_synchronize(stream),
                    ACCEL_ERROR_DEVICE_LOST);
  ASSERT_STR_CONTAINS(test_host_message, "opencl:0: an enqueued command");
  ASSERT_STR_CONTAINS(test_host_message, "failed");
  bool done = false;
  for (int i = 0; i < 2; i++) {  // sticky: reported again
    OCL_ASSERT_STATUS(fx.ops->stream_query(stream, &done),
                      ACCEL_ERROR_DEVICE_LOST);
    OCL_ASSERT_STATUS(fx.ops->stream_synchronize(stream),
                      ACCEL_ERROR_DEVICE_LOST);
  }
  OCL_ASSERT_STATUS(fx.ops->event_synchronize(event), ACCEL_ERROR_DEVICE_LOST);
  fx.ops->event_destroy(event);
  fx.ops->stream_destroy(stream);
  fx.ops->mem_free(device, mem);
  ocl_unload(&fx);
}

// Two threads on one stream, replayed in the order that used to lose a
// command: a marker is enqueued (its count read first), another thread's
// fill lands behind it (here behind a second gate too, so that it cannot
// finish), and only then is the marker handed to the stream. The stream
// must still know that the fill is not covered: once the marker has
// completed, stream_query has to say "not done". A flag that the fill set
// and the late marker cleared said "done".
TEST(marker_overtaken_by_a_fill) {
  ocl_fixture_t fx;
  OPEN_OR_SKIP(fx);
  accel_opencl_device_t* device = fx.device;
  const accel_opencl_api_t* cl = device->cl;
  void *mem = NULL, *stream_ptr = NULL;
  OCL_ASSERT_OK(fx.ops->mem_alloc(device, 4096, &mem));
  OCL_ASSERT_OK(fx.ops->stream_create(device, 0, &stream_ptr));
  accel_opencl_stream_t* stream = stream_ptr;
  cl_event gate = block(stream);
  ASSERT_NOT_NULL(gate);
  uint64_t mark = accel_opencl_stream_mark(stream);
  cl_event marker = NULL;
  ASSERT_EQ(cl->clEnqueueMarkerWithWaitList(stream->queue, 0, NULL, &marker),
            CL_SUCCESS);
  cl_int err = CL_SUCCESS;
  cl_event hold = cl->clCreateUserEvent(device->context, &err);
  ASSERT_EQ(err, CL_SUCCESS);
  ASSERT_EQ(cl->clEnqueueBarrierWithWaitList(stream->queue, 1, &hold, NULL),
            CL_SUCCESS);
  OCL_ASSERT_OK(fx.ops->memset(device, stream, mem, 0, 7, 4096));
  cl->clRetainEvent(marker);  // one reference for the stream, one here
  OCL_ASSERT_OK(accel_opencl_stream_tracked(stream, CL_SUCCESS, marker, mark,
                                            "test marker"));
  cl->clSetUserEventStatus(gate, CL_COMPLETE);
  cl->clReleaseEvent(gate);
  ASSERT_EQ(cl->clWaitForEvents(1, &marker), CL_SUCCESS);
  cl->clReleaseEvent(marker);
  bool done = true;
  OCL_ASSERT_OK(fx.ops->stream_query(stream, &done));
  ASSERT(!done);  // the fill still waits behind `hold`
  cl->clSetUserEventStatus(hold, CL_COMPLETE);
  cl->clReleaseEvent(hold);
  OCL_ASSERT_OK(fx.ops->stream_synchronize(stream));
  OCL_ASSERT_OK(fx.ops->stream_query(stream, &done));
  ASSERT(done);
  unsigned char out[4096];
  OCL_ASSERT_OK(fx.ops->copy_d2h(device, NULL, out, mem, 0, sizeof(out)));
  ASSERT_EQ(out[4095], 7);
  fx.ops->stream_destroy(stream_ptr);
  fx.ops->mem_free(device, mem);
  ocl_unload(&fx);
}

// Copies, fills and launches carry no event; the markers of event records
// are what the stream tracks.
TEST(pending_list_pruned) {
  ocl_fixture_t fx;
  OPEN_OR_SKIP(fx);
  accel_opencl_device_t* device = fx.device;
  void *mem = NULL, *stream_ptr = NULL, *event = NULL;
  OCL_ASSERT_OK(fx.ops->mem_alloc(device, 64, &mem));
  OCL_ASSERT_OK(fx.ops->stream_create(device, 0, &stream_ptr));
  OCL_ASSERT_OK(fx.ops->event_create(device, 0, &event));
  accel_opencl_stream_t* stream = stream_ptr;
  // Held back, the list grows past its first capacity...
  cl_event gate = block(stream);
  ASSERT_NOT_NULL(gate);
  for (int i = 0; i < 100; i++) {
    OCL_ASSERT_OK(fx.ops->memset(device, stream, mem, 0, 1, 64));
    OCL_ASSERT_OK(fx.ops->event_record(event, stream));
  }
  ASSERT_EQ(stream->pending_count, 101);
  size_t capacity = stream->pending_capacity;
  device->cl->clSetUserEventStatus(gate, CL_COMPLETE);
  device->cl->clReleaseEvent(gate);
  // ...and once the work is done, new records reuse the room.
  for (int i = 0; i < 1000; i++) {
    device->cl->clFinish(stream->queue);
    OCL_ASSERT_OK(fx.ops->memset(device, stream, mem, 0, 1, 64));
    OCL_ASSERT_OK(fx.ops->event_record(event, stream));
    ASSERT(stream->pending_count <= capacity);
  }
  ASSERT_EQ(stream->pending_capacity, capacity);
  OCL_ASSERT_OK(fx.ops->stream_synchronize(stream));
  ASSERT_EQ(stream->pending_count, 0);
  fx.ops->event_destroy(event);
  fx.ops->stream_destroy(stream);
  fx.ops->mem_free(device, mem);
  ocl_unload(&fx);
}

// Pinned blocks are mapped buffers the device keeps until host_free,
// which unmaps and forgets each one, in any order.
TEST(pinned_blocks_released) {
  ocl_fixture_t fx;
  OPEN_OR_SKIP(fx);
  accel_opencl_device_t* device = fx.device;
  void *a = NULL, *b = NULL;
  OCL_ASSERT_OK(fx.ops->host_alloc(device, 1 << 16, &a));
  OCL_ASSERT_OK(fx.ops->host_alloc(device, 1 << 12, &b));
  ASSERT_NOT_NULL(device->pinned);
  ASSERT(device->pinned->ptr == b && device->pinned->next->ptr == a);
  memset(a, 1, 1 << 16);  // mapped for writing
  fx.ops->host_free(device, a);
  ASSERT(device->pinned->ptr == b && device->pinned->next == NULL);
  fx.ops->host_free(device, b);
  ASSERT_NULL(device->pinned);
  ocl_unload(&fx);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
