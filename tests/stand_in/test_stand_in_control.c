// SPDX-License-Identifier: MIT
//
// Stream and event controls of a GPU plugin reaching its stand-in driver
// (cuda_fake_control, rocm_fake_control; the adapter is stand_in.h): the
// priority range is the driver's, a stream's priority reaches
// cuStreamCreateWithPriority/hipStreamCreateWithPriority (clamped by the
// core first), ACCEL_EVENT_BLOCKING_SYNC reaches cuEventCreate/
// hipEventCreateWithFlags as the driver's blocking-sync flag, and host
// functions go through cuLaunchHostFunc/hipLaunchHostFunc in stream order.
// The native handles come from accel_stream_query_native and
// accel_event_query_native; the stand-in's test-only accessors read what
// the driver got. A host function behind faulting work is never called.
// This checks the plugins' use of the APIs, not GPU hardware.
#include <accel/accel.h>
#include <accel/interop.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "stand_in/stand_in.h"
#include "test.h"

#define OPEN(fake, device)                                          \
  do {                                                              \
    (fake) = stand_in_open();                                       \
    if ((fake) == NULL) {                                           \
      SKIP("needs %s=<stand-in>", stand_in_backend.driver_env);     \
    }                                                               \
    ASSERT_OK(accel_device_open(stand_in_uri(fake, 0), &(device))); \
  } while (0)

TEST(stream_priority_reaches_driver) {
  const stand_in_t* fake = NULL;
  accel_device_t* d = NULL;
  OPEN(fake, d);
  int32_t least = 99, greatest = 99;
  ASSERT_OK(accel_device_stream_priority_range(d, &least, &greatest));
  ASSERT_EQ(least, fake->priority_least);
  ASSERT_EQ(greatest, fake->priority_greatest);
  // Inside, on and beyond either end of both drivers' ranges; the core
  // clamps to [greatest, least].
  static const int32_t asked[] = {-40, -9, -5, -3, -1, 0, 1, 5, 9};
  for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
    int32_t want = asked[i] < greatest ? greatest
                   : asked[i] > least  ? least
                                       : asked[i];
    accel_stream_t* s = NULL;
    ASSERT_OK(accel_stream_create_with_priority(d, 0, asked[i], &s));
    ASSERT_EQ(accel_stream_priority(s), want);
    uint64_t native = 0;
    ASSERT_OK(accel_stream_query_native(s, &native));
    int priority = 99;
    ASSERT(fake->stream_priority(native, &priority));
    ASSERT_EQ(priority, want);
    accel_stream_release(s);
  }
  accel_device_release(d);
}

TEST(blocking_sync_reaches_driver) {
  const stand_in_t* fake = NULL;
  accel_device_t* d = NULL;
  OPEN(fake, d);
  static const accel_event_flags_t flags[] = {
      0, ACCEL_EVENT_BLOCKING_SYNC, ACCEL_EVENT_TIMING,
      ACCEL_EVENT_TIMING | ACCEL_EVENT_BLOCKING_SYNC};
  const unsigned blocking = fake->event_blocking_sync;
  const unsigned untimed = fake->event_disable_timing;
  const unsigned want[] = {untimed, untimed | blocking, 0, blocking};
  accel_stream_t* s = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  for (int i = 0; i < 4; i++) {
    accel_event_t* e = NULL;
    ASSERT_OK(accel_event_create(d, flags[i], &e));
    uint64_t native = 0;
    ASSERT_OK(accel_event_query_native(e, &native));
    ASSERT_EQ(fake->event_flags(native), want[i]);
    ASSERT_OK(accel_event_record(e, s));
    ASSERT_OK(accel_event_synchronize(e));
    accel_event_release(e);
  }
  accel_stream_release(s);
  accel_device_release(d);
}

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

typedef struct probe {
  const uint32_t* data;  // the buffer: the fake's device memory is host's
  uint32_t seen;         // its first word when the function ran
  atomic_int started;
  atomic_int release;
  atomic_int calls;
} probe_t;

static void probe_fn(void* user) {
  probe_t* p = user;
  p->seen = p->data[0];
  atomic_fetch_add(&p->calls, 1);
  atomic_store(&p->started, 1);
  for (int i = 0; i < 30000 && atomic_load(&p->release) == 0; i++) nap_ms(1);
}

static void count_fn(void* user) { atomic_fetch_add((atomic_int*)user, 1); }

TEST(host_func_in_stream_order) {
  const stand_in_t* fake = NULL;
  accel_device_t* d = NULL;
  OPEN(fake, d);
  accel_stream_t* s = NULL;
  accel_buffer_t* b = NULL;
  accel_event_t* after = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_buffer_create(d, 4096, &b));
  ASSERT_OK(accel_event_create(d, 0, &after));
  uint64_t address = 0;
  ASSERT_OK(accel_buffer_query_address(b, 0, &address));
  static probe_t p;
  memset(&p, 0, sizeof(p));
  p.data = (const uint32_t*)(uintptr_t)address;
  unsigned long before = fake->host_func_count();
  const uint32_t first = 0x11111111u, second = 0x22222222u;
  ASSERT_OK(accel_stream_write_buffer(s, b, 0, &first, 4));
  ASSERT_OK(accel_stream_launch_host_func(s, probe_fn, &p));
  ASSERT_OK(accel_stream_write_buffer(s, b, 0, &second, 4));
  ASSERT_OK(accel_event_record(after, s));
  for (int i = 0; i < 30000 && atomic_load(&p.started) == 0; i++) nap_ms(1);
  ASSERT_EQ(atomic_load(&p.started), 1);
  ASSERT_EQ(p.seen, first);  // the write before it had happened
  nap_ms(20);
  bool done = true;
  ASSERT_OK(accel_event_query(after, &done));
  ASSERT(!done);  // the write after it waits
  ASSERT_EQ(p.data[0], first);
  atomic_store(&p.release, 1);
  ASSERT_OK(accel_stream_synchronize(s));
  ASSERT_EQ(p.data[0], second);
  ASSERT_EQ(atomic_load(&p.calls), 1);
  // Many, on the most urgent stream too; each reaches the driver.
  accel_stream_t* urgent = NULL;
  ASSERT_OK(accel_stream_create_with_priority(d, 0, fake->priority_greatest,
                                              &urgent));
  static atomic_int count;
  atomic_store(&count, 0);
  for (int i = 0; i < 500; i++) {
    ASSERT_OK(
        accel_stream_launch_host_func(i % 2 ? s : urgent, count_fn, &count));
  }
  ASSERT_OK(accel_device_synchronize(d));
  ASSERT_EQ(atomic_load(&count), 500);
  ASSERT_EQ(fake->host_func_count() - before, 501);
  ASSERT_STATUS(accel_stream_launch_host_func(s, NULL, NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  accel_stream_release(urgent);
  accel_event_release(after);
  accel_buffer_release(b);
  accel_stream_release(s);
  accel_device_release(d);
}

// Last: the fault leaves the device lost until its release. A host
// function behind faulting work is never called (cuLaunchHostFunc's
// contract): refused at enqueue if the fault came first, else skipped.
TEST(host_func_not_called_after_fault) {
  const stand_in_t* fake = stand_in_open();
  if (fake != NULL && !fake->host_funcs_stop_at_fault) {
    SKIP("%s runs host functions behind a fault", fake->driver_env);
  }
  accel_device_t* d = NULL;
  OPEN(fake, d);
  accel_stream_t* s = NULL;
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_buffer_create(d, 4096, &b));
  static atomic_int ran;
  atomic_store(&ran, 0);
  // The stand-in reads its fault variable at each launch (libfakecuda) or
  // when the kernel runs (libfakehip): set until the stream is done.
  setenv(fake->fault_env, fake->fill_kernel, 1);
  accel_status_t launched = accel_op_fill(s, b, 0, ACCEL_DTYPE_F32, 1024, 1.0);
  accel_status_t queued = accel_stream_launch_host_func(s, count_fn, &ran);
  accel_status_t synced = accel_stream_synchronize(s);
  unsetenv(fake->fault_env);
  ASSERT_OK(launched);
  ASSERT(queued == ACCEL_OK || queued == ACCEL_ERROR_DEVICE_LOST);
  ASSERT_EQ(synced, ACCEL_ERROR_DEVICE_LOST);
  ASSERT_EQ(atomic_load(&ran), 0);
  accel_buffer_release(b);
  accel_stream_release(s);
  accel_device_release(d);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
