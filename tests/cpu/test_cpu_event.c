// SPDX-License-Identifier: MIT
//
// CPU plugin events through the public API: record, query, synchronize,
// elapsed time, waits, re-recording and releasing with pending waits.
//
// Where a check needs an event that has not completed yet, the event is
// put behind tens of milliseconds of queued work and the check is retried
// with more work if the scheduler still let it finish first.
#include <stdlib.h>
#include <string.h>

#include "cpu_test.h"
#include "test.h"

#define ATTEMPTS 3

// One device, two streams and a big buffer, shared by most tests.
typedef struct fixture {
  accel_device_t* device;
  accel_stream_t* a;
  accel_stream_t* b;
  accel_buffer_t* big;
} fixture_t;

static accel_status_t fixture_init(fixture_t* f) {
  memset(f, 0, sizeof(*f));
  accel_status_t status = accel_device_open("cpu:0", &f->device);
  if (status == ACCEL_OK) status = accel_stream_create(f->device, 0, &f->a);
  if (status == ACCEL_OK) status = accel_stream_create(f->device, 0, &f->b);
  if (status == ACCEL_OK) {
    status = accel_buffer_create(f->device, CPU_TEST_BIG, &f->big);
  }
  return status;
}

static void fixture_deinit(fixture_t* f) {
  accel_stream_release(f->a);
  accel_stream_release(f->b);
  accel_buffer_release(f->big);
  accel_device_release(f->device);
}

TEST(never_recorded_event_is_complete) {
  fixture_t f;
  ASSERT_OK(fixture_init(&f));
  accel_event_t* event = NULL;
  ASSERT_OK(accel_event_create(f.device, ACCEL_EVENT_TIMING, &event));
  bool done = false;
  ASSERT_OK(accel_event_query(event, &done));
  ASSERT(done);
  ASSERT_OK(accel_event_synchronize(event));
  // Waiting on it does not block the stream.
  uint8_t out[64] = {0};
  ASSERT_OK(accel_stream_wait_event(f.a, event));
  ASSERT_OK(accel_stream_fill_buffer(f.a, f.big, 0, 9, sizeof(out)));
  ASSERT_OK(accel_stream_read_buffer(f.a, f.big, 0, out, sizeof(out)));
  ASSERT_OK(accel_stream_synchronize(f.a));
  ASSERT(cpu_test_all(out, sizeof(out), 9));
  // Elapsed time needs recorded events.
  float ms = -1.0f;
  ASSERT_STATUS(accel_event_elapsed_ms(event, event, &ms),
                ACCEL_ERROR_INVALID_ARGUMENT);
  accel_event_release(event);
  fixture_deinit(&f);
}

TEST(record_query_synchronize) {
  fixture_t f;
  ASSERT_OK(fixture_init(&f));
  accel_event_t* event = NULL;
  ASSERT_OK(accel_event_create(f.device, 0, &event));
  bool seen_pending = false;
  for (int attempt = 0; attempt < ATTEMPTS && !seen_pending; attempt++) {
    int fills = 8 << attempt;
    uint8_t out[256] = {0};
    ASSERT_OK(cpu_test_busy(f.a, f.big, fills, 1));
    ASSERT_OK(accel_stream_read_buffer(f.a, f.big, CPU_TEST_BIG - 256, out,
                                       sizeof(out)));
    ASSERT_OK(accel_event_record(event, f.a));
    bool done = true;
    ASSERT_OK(accel_event_query(event, &done));
    seen_pending = !done;
    ASSERT_OK(accel_event_synchronize(event));
    // Completion of the event means completion of the work before it.
    ASSERT(cpu_test_all(out, sizeof(out), (uint8_t)fills));
    ASSERT_OK(accel_event_query(event, &done));
    ASSERT(done);
    ASSERT_OK(accel_stream_query(f.a, &done));
    ASSERT(done);
  }
  ASSERT(seen_pending);
  // The other way round: a synchronized stream has completed its events.
  for (int i = 0; i < 20; i++) {
    ASSERT_OK(accel_stream_fill_buffer(f.a, f.big, 0, 1, 1 << 20));
    ASSERT_OK(accel_event_record(event, f.a));
    ASSERT_OK(accel_stream_synchronize(f.a));
    bool done = false;
    ASSERT_OK(accel_event_query(event, &done));
    ASSERT(done);
  }
  accel_event_release(event);
  fixture_deinit(&f);
}

TEST(not_ready_until_complete) {
  fixture_t f;
  ASSERT_OK(fixture_init(&f));
  accel_event_t *start = NULL, *mid = NULL, *end = NULL;
  ASSERT_OK(accel_event_create(f.device, ACCEL_EVENT_TIMING, &start));
  ASSERT_OK(accel_event_create(f.device, ACCEL_EVENT_TIMING, &mid));
  ASSERT_OK(accel_event_create(f.device, ACCEL_EVENT_TIMING, &end));
  bool seen_not_ready = false;
  for (int attempt = 0; attempt < ATTEMPTS && !seen_not_ready; attempt++) {
    // a: start, heavy work, mid.  b: wait for mid, then end. So `end`
    // cannot complete before the heavy work on `a`.
    ASSERT_OK(accel_event_record(start, f.a));
    ASSERT_OK(cpu_test_busy(f.a, f.big, 8 << attempt, 1));
    ASSERT_OK(accel_event_record(mid, f.a));
    ASSERT_OK(accel_stream_wait_event(f.b, mid));
    ASSERT_OK(accel_event_record(end, f.b));
    float ms = -1.0f;
    accel_status_t status = accel_event_elapsed_ms(start, end, &ms);
    if (status == ACCEL_ERROR_NOT_READY) {
      seen_not_ready = true;
    } else {
      ASSERT_OK(status);
    }
    ASSERT_OK(accel_event_synchronize(end));
    bool done = false;
    // `end` completed after `mid` by construction.
    ASSERT_OK(accel_event_query(mid, &done));
    ASSERT(done);
    ASSERT_OK(accel_event_elapsed_ms(start, end, &ms));
    ASSERT(ms >= 0.0f);
    float to_mid = -1.0f;
    ASSERT_OK(accel_event_elapsed_ms(start, mid, &to_mid));
    ASSERT(to_mid <= ms);
    ASSERT_OK(accel_stream_synchronize(f.a));
  }
  ASSERT(seen_not_ready);
  accel_event_release(start);
  accel_event_release(mid);
  accel_event_release(end);
  fixture_deinit(&f);
}

TEST(elapsed_time_is_monotonic) {
  fixture_t f;
  ASSERT_OK(fixture_init(&f));
  accel_event_t* e[3] = {NULL};
  for (int i = 0; i < 3; i++) {
    ASSERT_OK(accel_event_create(f.device, ACCEL_EVENT_TIMING, &e[i]));
  }
  ASSERT_OK(accel_event_record(e[0], f.a));
  ASSERT_OK(cpu_test_busy(f.a, f.big, 2, 1));
  ASSERT_OK(accel_event_record(e[1], f.a));
  ASSERT_OK(cpu_test_busy(f.a, f.big, 4, 1));
  ASSERT_OK(accel_event_record(e[2], f.a));
  ASSERT_OK(accel_event_synchronize(e[2]));
  float t01 = -1.0f, t02 = -1.0f, t12 = -1.0f, t00 = -1.0f;
  ASSERT_OK(accel_event_elapsed_ms(e[0], e[1], &t01));
  ASSERT_OK(accel_event_elapsed_ms(e[0], e[2], &t02));
  ASSERT_OK(accel_event_elapsed_ms(e[1], e[2], &t12));
  ASSERT_OK(accel_event_elapsed_ms(e[0], e[0], &t00));
  printf("  e0->e1 %.3f ms, e0->e2 %.3f ms, e1->e2 %.3f ms\n", t01, t02, t12);
  ASSERT(t00 == 0.0f);
  ASSERT(t01 > 0.0f);  // two 64 MiB fills take far more than a nanosecond
  ASSERT(t12 > 0.0f);
  ASSERT(t01 <= t02);
  ASSERT(t12 <= t02);
  for (int i = 0; i < 3; i++) accel_event_release(e[i]);
  fixture_deinit(&f);
}

TEST(elapsed_requires_timing_events) {
  fixture_t f;
  ASSERT_OK(fixture_init(&f));
  accel_event_t *plain = NULL, *timed = NULL;
  ASSERT_OK(accel_event_create(f.device, 0, &plain));
  ASSERT_OK(accel_event_create(f.device, ACCEL_EVENT_TIMING, &timed));
  ASSERT_OK(accel_event_record(plain, f.a));
  ASSERT_OK(accel_event_record(timed, f.a));
  ASSERT_OK(accel_stream_synchronize(f.a));
  float ms = -1.0f;
  ASSERT_STATUS(accel_event_elapsed_ms(plain, plain, &ms),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_event_elapsed_ms(plain, timed, &ms),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_event_elapsed_ms(timed, plain, &ms),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_OK(accel_event_elapsed_ms(timed, timed, &ms));
  ASSERT(ms == 0.0f);
  accel_event_t* bad = NULL;
  ASSERT_STATUS(accel_event_create(f.device, 0x80, &bad),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_NULL(bad);
  accel_event_release(plain);
  accel_event_release(timed);
  fixture_deinit(&f);
}

TEST(rerecord_replaces_capture) {
  fixture_t f;
  ASSERT_OK(fixture_init(&f));
  accel_stream_t* c = NULL;
  ASSERT_OK(accel_stream_create(f.device, 0, &c));
  accel_buffer_t* copy = NULL;
  ASSERT_OK(accel_buffer_create(f.device, CPU_TEST_BIG, &copy));
  ASSERT_OK(accel_buffer_fill(copy, 0, 0, CPU_TEST_BIG));
  accel_event_t* event = NULL;
  ASSERT_OK(accel_event_create(f.device, ACCEL_EVENT_TIMING, &event));
  uint8_t out[256] = {0};

  // Record 1 on `a`, behind heavy work; `b` captures record 1.
  ASSERT_OK(cpu_test_busy(f.a, f.big, 8, 1));
  ASSERT_OK(accel_event_record(event, f.a));
  ASSERT_OK(accel_stream_wait_event(f.b, event));
  ASSERT_OK(accel_stream_copy_buffer(f.b, copy, 0, f.big, 0, CPU_TEST_BIG));
  ASSERT_OK(accel_stream_read_buffer(f.b, copy, CPU_TEST_BIG - sizeof(out), out,
                                     sizeof(out)));
  // Record 2 on the idle stream `c`: query and synchronize now refer to
  // it, and it completes without waiting for `a`...
  ASSERT_OK(accel_event_record(event, c));
  ASSERT_OK(accel_event_synchronize(event));
  bool done = false;
  ASSERT_OK(accel_event_query(event, &done));
  ASSERT(done);
  // ...while `b` still waits for record 1, so it sees all of `a`'s work.
  ASSERT_OK(accel_stream_synchronize(f.b));
  ASSERT(cpu_test_all(out, sizeof(out), 8));

  // Re-recording a completed event behind new work makes it pending again
  // (retried in case the work finishes before the query).
  bool seen_pending = false;
  for (int attempt = 0; attempt < ATTEMPTS && !seen_pending; attempt++) {
    ASSERT_OK(accel_stream_synchronize(f.a));
    ASSERT_OK(accel_event_record(event, f.a));
    ASSERT_OK(accel_event_synchronize(event));
    ASSERT_OK(cpu_test_busy(f.a, f.big, 8 << attempt, 1));
    ASSERT_OK(accel_event_record(event, f.a));
    ASSERT_OK(accel_event_query(event, &done));
    seen_pending = !done;
    ASSERT_OK(accel_event_synchronize(event));
  }
  ASSERT(seen_pending);
  accel_event_release(event);
  accel_buffer_release(copy);
  accel_stream_release(c);
  fixture_deinit(&f);
}

TEST(release_event_with_pending_wait) {
  fixture_t f;
  ASSERT_OK(fixture_init(&f));
  accel_buffer_t* copy = NULL;
  ASSERT_OK(accel_buffer_create(f.device, CPU_TEST_BIG, &copy));
  ASSERT_OK(accel_buffer_fill(copy, 0, 0, CPU_TEST_BIG));
  uint8_t out[256] = {0};
  accel_event_t* event = NULL;
  ASSERT_OK(accel_event_create(f.device, ACCEL_EVENT_TIMING, &event));
  ASSERT_OK(cpu_test_busy(f.a, f.big, 8, 1));
  ASSERT_OK(accel_event_record(event, f.a));
  ASSERT_OK(accel_stream_wait_event(f.b, event));
  accel_event_release(event);  // the record and the wait are still queued
  ASSERT_OK(accel_stream_copy_buffer(f.b, copy, 0, f.big, 0, CPU_TEST_BIG));
  ASSERT_OK(accel_stream_read_buffer(f.b, copy, 0, out, sizeof(out)));
  ASSERT_OK(accel_stream_synchronize(f.b));
  ASSERT(cpu_test_all(out, sizeof(out), 8));
  ASSERT_OK(accel_stream_synchronize(f.a));
  accel_buffer_release(copy);
  fixture_deinit(&f);
}

TEST(many_records_and_waits) {
  // A ping-pong between two streams through two events: each round, one
  // stream waits for the other's latest record and adds one to a counter
  // byte through a copy. The final value proves every wait held.
  enum { kRounds = 200 };
  fixture_t f;
  ASSERT_OK(fixture_init(&f));
  accel_buffer_t *x = NULL, *y = NULL;
  ASSERT_OK(accel_buffer_create(f.device, 64, &x));
  ASSERT_OK(accel_buffer_create(f.device, 64, &y));
  ASSERT_OK(accel_buffer_fill(x, 0, 0, 64));
  accel_event_t *ea = NULL, *eb = NULL;
  ASSERT_OK(accel_event_create(f.device, 0, &ea));
  ASSERT_OK(accel_event_create(f.device, 0, &eb));
  static uint8_t values[kRounds][64];
  for (int i = 0; i < kRounds; i++) {
    accel_stream_t* s = (i % 2 == 0) ? f.a : f.b;
    accel_event_t* wait = (i % 2 == 0) ? eb : ea;
    accel_event_t* mine = (i % 2 == 0) ? ea : eb;
    memset(values[i], i + 1, 64);
    ASSERT_OK(accel_stream_wait_event(s, wait));
    ASSERT_OK(accel_stream_write_buffer(s, y, 0, values[i], 64));
    ASSERT_OK(accel_stream_copy_buffer(s, x, 0, y, 0, 64));
    ASSERT_OK(accel_event_record(mine, s));
  }
  ASSERT_OK(accel_event_synchronize(ea));
  ASSERT_OK(accel_event_synchronize(eb));
  uint8_t out[64];
  ASSERT_OK(accel_buffer_read(x, 0, out, sizeof(out)));
  ASSERT(cpu_test_all(out, sizeof(out), (uint8_t)kRounds));
  accel_event_release(ea);
  accel_event_release(eb);
  accel_buffer_release(x);
  accel_buffer_release(y);
  fixture_deinit(&f);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
