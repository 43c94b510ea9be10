// SPDX-License-Identifier: MIT
//
// <accel/interop.h> on the CPU plugin: native handles (memory is the host
// pointer of the allocation, with the buffer's offset in it; devices,
// streams and events have none and say so) and host registration (the
// registry's bounds, overlap and unknown-pointer checks, copies through
// registered memory, registrations racing from several threads). Run with
// ACCEL_CPU_DEVICES=2.
#include <accel/interop.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

TEST(cpu_has_no_native_device_stream_or_event) {
  accel_device_t* d = NULL;
  accel_stream_t* s = NULL;
  accel_event_t* e = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_event_create(d, 0, &e));
  ASSERT_OK(accel_event_record(e, s));
  uint64_t h = 7;
  ASSERT_STATUS(accel_device_query_native(d, ACCEL_NATIVE_DEVICE, &h),
                ACCEL_ERROR_UNSUPPORTED);
  ASSERT_EQ(h, 0);
  ASSERT_STR_CONTAINS(accel_last_error(), "accel_device_query_native: cpu:0: ");
  ASSERT_STR_CONTAINS(accel_last_error(), "no native device object");
  ASSERT_STATUS(accel_device_query_native(d, ACCEL_NATIVE_CONTEXT, &h),
                ACCEL_ERROR_UNSUPPORTED);
  ASSERT_STR_CONTAINS(accel_last_error(), "no native context object");
  h = 7;
  ASSERT_STATUS(accel_stream_query_native(s, &h), ACCEL_ERROR_UNSUPPORTED);
  ASSERT_EQ(h, 0);
  ASSERT_STR_CONTAINS(accel_last_error(), "no native stream object");
  ASSERT_STATUS(accel_event_query_native(e, &h), ACCEL_ERROR_UNSUPPORTED);
  ASSERT_STR_CONTAINS(accel_last_error(), "no native event object");
  ASSERT_OK(accel_stream_synchronize(s));
  accel_event_release(e);
  accel_stream_release(s);
  accel_device_release(d);
}

TEST(native_arguments_are_checked) {
  accel_device_t* d = NULL;
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  ASSERT_OK(accel_buffer_create(d, 64, &b));
  uint64_t h = 7;
  size_t offset = 7;
  ASSERT_STATUS(accel_device_query_native(NULL, ACCEL_NATIVE_DEVICE, &h),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(h, 0);
  ASSERT_STATUS(accel_device_query_native(d, ACCEL_NATIVE_DEVICE, NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_device_query_native(d, (accel_native_kind_t)2, &h),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "kind 2");
  ASSERT_STATUS(accel_stream_query_native(NULL, &h),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_event_query_native(NULL, &h),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_buffer_query_native(NULL, &h, &offset),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(offset, 0);
  ASSERT_STATUS(accel_buffer_query_native(b, NULL, &offset),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_buffer_query_native(b, &h, NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  accel_buffer_release(b);
  accel_device_release(d);
}

TEST(buffer_native_is_the_allocation_and_offset) {
  accel_device_t* d = NULL;
  accel_buffer_t* a = NULL;
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  // Small buffers share a segment of the caching allocator.
  ASSERT_OK(accel_buffer_create(d, 1000, &a));
  ASSERT_OK(accel_buffer_create(d, 1000, &b));
  uint64_t ha = 0, hb = 0, address = 0;
  size_t oa = 1, ob = 1;
  ASSERT_OK(accel_buffer_query_native(a, &ha, &oa));
  ASSERT_OK(accel_buffer_query_native(b, &hb, &ob));
  ASSERT_EQ(ha, hb);
  ASSERT_NE(oa, ob);
  ASSERT_OK(accel_buffer_query_address(b, 0, &address));
  ASSERT_EQ(hb + ob, address);
  // The host pointer sees what accel wrote, and the other way round.
  const char text[] = "through the native pointer";
  ASSERT_OK(accel_buffer_write(b, 10, text, sizeof(text)));
  unsigned char* p = (unsigned char*)(uintptr_t)hb + ob;
  ASSERT_MEM_EQ(p + 10, text, sizeof(text));
  p[0] = 42;
  unsigned char back = 0;
  ASSERT_OK(accel_buffer_read(b, 0, &back, 1));
  ASSERT_EQ(back, 42);
  accel_buffer_release(a);
  accel_buffer_release(b);
  // A released buffer is refused.
  ASSERT_STATUS(accel_buffer_query_native(a, &ha, &oa),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "already released");
  accel_device_release(d);
}

TEST(wrapped_buffer_native_is_the_wrapped_memory) {
  accel_device_t* d = NULL;
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  static unsigned char owned[256];
  ASSERT_OK(accel_buffer_wrap(d, (uint64_t)(uintptr_t)(owned + 3), 100, NULL,
                              NULL, &b));
  uint64_t h = 0;
  size_t offset = 9;
  ASSERT_OK(accel_buffer_query_native(b, &h, &offset));
  ASSERT_EQ(h, (uint64_t)(uintptr_t)(owned + 3));
  ASSERT_EQ(offset, 0);
  accel_buffer_release(b);
  accel_device_release(d);
}

TEST(host_register_arguments) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  static char mem[4096];
  bool in = true;
  ASSERT_STATUS(accel_host_register(NULL, mem, 10, 0),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_host_register(d, NULL, 10, 0),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_host_register(d, mem, 0, 0),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_host_register(d, mem, 10, 1),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "flags must be 0");
  ASSERT_STATUS(accel_host_register(d, (void*)(UINTPTR_MAX - 8), 16, 0),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "wrap around");
  ASSERT_STATUS(accel_host_unregister(NULL, mem), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_host_unregister(d, NULL), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_host_query_registered(d, mem, 0, &in),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT(!in);
  ASSERT_STATUS(accel_host_query_registered(d, mem, 1, NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  // Nothing registered: unknown pointer.
  ASSERT_STATUS(accel_host_unregister(d, mem), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "is not registered on cpu:0");
  ASSERT_OK(accel_host_query_registered(d, mem, 1, &in));
  ASSERT(!in);
  accel_device_release(d);
}

TEST(host_register_bounds_overlap_and_unregister) {
  accel_device_t* d0 = NULL;
  accel_device_t* d1 = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d0));
  ASSERT_OK(accel_device_open("cpu:1", &d1));
  static char mem[8192];
  ASSERT_OK(accel_host_register(d0, mem + 1000, 2000, 0));
  bool in = false;
  ASSERT_OK(accel_host_query_registered(d0, mem + 1000, 2000, &in));
  ASSERT(in);
  ASSERT_OK(accel_host_query_registered(d0, mem + 2999, 1, &in));
  ASSERT(in);
  ASSERT_OK(accel_host_query_registered(d0, mem + 2999, 2, &in));
  ASSERT(!in);  // one byte past the end
  ASSERT_OK(accel_host_query_registered(d0, mem + 999, 2, &in));
  ASSERT(!in);  // one byte before the start
  ASSERT_OK(accel_host_query_registered(d1, mem + 1000, 1, &in));
  ASSERT(!in);  // another device
  // Overlaps on the same device and on another device of the backend.
  ASSERT_STATUS(accel_host_register(d0, mem, 1001, 0),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "already registered on cpu:0");
  ASSERT_STATUS(accel_host_register(d1, mem + 2999, 10, 0),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "once per backend");
  // Neighbours that touch but do not overlap are fine.
  ASSERT_OK(accel_host_register(d0, mem, 1000, 0));
  ASSERT_OK(accel_host_register(d1, mem + 3000, 1000, 0));
  // Unregister: inside a range, on the wrong device, twice.
  ASSERT_STATUS(accel_host_unregister(d0, mem + 1500),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "pass the start of the range");
  ASSERT_STATUS(accel_host_unregister(d0, mem + 3000),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "registered on cpu:1, not on cpu:0");
  ASSERT_OK(accel_host_unregister(d0, mem + 1000));
  ASSERT_STATUS(accel_host_unregister(d0, mem + 1000),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_OK(accel_host_query_registered(d0, mem + 1000, 1, &in));
  ASSERT(!in);
  ASSERT_OK(accel_host_unregister(d0, mem));
  ASSERT_OK(accel_host_unregister(d1, mem + 3000));
  accel_device_release(d1);
  accel_device_release(d0);
}

TEST(registration_keeps_the_device_and_copies_work) {
  accel_device_t* d = NULL;
  accel_stream_t* s = NULL;
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  size_t n = (size_t)4 << 20;
  unsigned char* host = malloc(2 * n);
  ASSERT_NOT_NULL(host);
  for (size_t i = 0; i < n; i++) host[i] = (unsigned char)(i * 7 + 1);
  memset(host + n, 0, n);
  ASSERT_OK(accel_host_register(d, host, 2 * n, 0));
  // The registration holds its own reference: the caller's may go.
  accel_device_release(d);
  ASSERT_OK(accel_device_open("cpu:0", &d));
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_buffer_create(d, n, &b));
  ASSERT_OK(accel_stream_write_buffer(s, b, 0, host, n));
  ASSERT_OK(accel_stream_read_buffer(s, b, 0, host + n, n));
  ASSERT_OK(accel_stream_synchronize(s));
  ASSERT_MEM_EQ(host, host + n, n);
  ASSERT_OK(accel_host_unregister(d, host));
  accel_buffer_release(b);
  accel_stream_release(s);
  accel_device_release(d);
  free(host);
}

// Threads registering the same 64 ranges at once: each range is won by
// exactly one thread, and every other attempt is an overlap.
enum { RACE_THREADS = 4, RACE_RANGES = 64, RACE_SIZE = 256 };
static char race_mem[RACE_RANGES * RACE_SIZE];
static accel_device_t* race_device;
static int race_won[RACE_THREADS];

static void* race_thread(void* arg) {
  int t = (int)(intptr_t)arg;
  for (int i = 0; i < RACE_RANGES; i++) {
    // Each thread's ranges are shifted by t bytes, so all of them overlap.
    if (accel_host_register(race_device, race_mem + i * RACE_SIZE + t,
                            RACE_SIZE - RACE_THREADS, 0) == ACCEL_OK) {
      race_won[t]++;
    }
  }
  return NULL;
}

TEST(concurrent_registrations_never_overlap) {
  ASSERT_OK(accel_device_open("cpu:0", &race_device));
  pthread_t threads[RACE_THREADS];
  for (int t = 0; t < RACE_THREADS; t++) {
    ASSERT_EQ(
        pthread_create(&threads[t], NULL, race_thread, (void*)(intptr_t)t), 0);
  }
  for (int t = 0; t < RACE_THREADS; t++) pthread_join(threads[t], NULL);
  int won = 0;
  for (int t = 0; t < RACE_THREADS; t++) won += race_won[t];
  ASSERT_EQ(won, RACE_RANGES);
  int unregistered = 0;
  for (int i = 0; i < RACE_RANGES; i++) {
    for (int t = 0; t < RACE_THREADS; t++) {
      if (accel_host_unregister(race_device, race_mem + i * RACE_SIZE + t) ==
          ACCEL_OK) {
        unregistered++;
      }
    }
  }
  ASSERT_EQ(unregistered, RACE_RANGES);
  accel_device_release(race_device);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
