// SPDX-License-Identifier: MIT
//
// Stream-ordered reuse. A block freed while a stream may still use it must
// not be handed to anyone else before that work is done, yet the stream it
// was allocated on may reuse it at once.
//
// The tests keep stream A busy with fills of a large buffer so that work
// queued behind them (a read into host memory) has not run yet when the
// buffer is released and its memory would be reused. If the allocator
// reused too early, the new owner's fill would land before A's read and the
// host copy would hold the wrong bytes. Whether A really was still busy is
// checked; when the machine was too slow to tell, the attempt is repeated
// with more work, as tests/cpu does.
#include <stdlib.h>
#include <string.h>

#include "memory_test.h"
#include "test.h"

#define ATTEMPTS 4
#define X_SIZE ((size_t)8 << 20)  // large: a segment of its own

typedef struct fixture {
  accel_device_t* device;
  accel_stream_t* a;
  accel_stream_t* b;
  accel_buffer_t* busy;  // keeps stream A busy
  uint8_t* host;         // A's read of X lands here
} fixture_t;

static accel_status_t fixture_open(fixture_t* f) {
  memset(f, 0, sizeof(*f));
  accel_status_t s = accel_device_open("cpu:0", &f->device);
  if (s == ACCEL_OK) s = accel_stream_create(f->device, 0, &f->a);
  if (s == ACCEL_OK) s = accel_stream_create(f->device, 0, &f->b);
  if (s == ACCEL_OK) {
    s = accel_buffer_create(f->device, MEMORY_TEST_BUSY, &f->busy);
  }
  if (s == ACCEL_OK) {
    f->host = malloc(X_SIZE);
    if (f->host == NULL) s = ACCEL_ERROR_OUT_OF_MEMORY;
  }
  return s;
}

static void fixture_close(fixture_t* f) {
  free(f->host);
  accel_buffer_release(f->busy);
  accel_stream_release(f->a);
  accel_stream_release(f->b);
  accel_device_release(f->device);
}

// Queues `fills` busy fills on A, then A's read of all of `x` into host.
static accel_status_t queue_busy_read(fixture_t* f, accel_buffer_t* x,
                                      int fills) {
  memset(f->host, 0, X_SIZE);
  accel_status_t s = memory_busy(f->a, f->busy, fills);
  if (s == ACCEL_OK) {
    s = accel_stream_read_buffer(f->a, x, 0, f->host, X_SIZE);
  }
  return s;
}

// X from accel_buffer_create, read on A, released; then a new buffer of
// the same size is allocated and overwritten at once, (a) synchronously and
// (b) in stream order on B. A's read must still see X's bytes.
static void cross_stream(test_result_t* test_result_, bool on_stream_b) {
  fixture_t f;
  ASSERT_OK(fixture_open(&f));
  bool conclusive = false;
  for (int attempt = 0; attempt < ATTEMPTS && !conclusive; attempt++) {
    accel_buffer_t *x = NULL, *y = NULL;
    ASSERT_OK(accel_buffer_create(f.device, X_SIZE, &x));
    ASSERT_OK(accel_buffer_fill(x, 0, 0xa1, X_SIZE));
    ASSERT_OK(queue_busy_read(&f, x, 2 << attempt));
    accel_memory_stats_t before = memory_stats(f.device);
    accel_buffer_release(x);  // A's read is still queued
    accel_memory_stats_t s = memory_stats(f.device);
    if (on_stream_b) {
      ASSERT_OK(accel_stream_alloc_buffer(f.b, X_SIZE, &y));
      ASSERT_OK(accel_stream_fill_buffer(f.b, y, 0, 0x5e, X_SIZE));
      ASSERT_OK(accel_stream_synchronize(f.b));
    } else {
      ASSERT_OK(accel_buffer_create(f.device, X_SIZE, &y));
      ASSERT_OK(accel_buffer_fill(y, 0, 0x5e, X_SIZE));
    }
    bool a_done = true;
    ASSERT_OK(accel_stream_query(f.a, &a_done));
    ASSERT_OK(accel_stream_synchronize(f.a));
    ASSERT(memory_all(f.host, X_SIZE, 0xa1));  // X's bytes, not y's
    // X's block waited for A: still active, no longer allocated.
    ASSERT_EQ(s.active_blocks, before.active_blocks);
    ASSERT_EQ(s.allocated_bytes, before.allocated_bytes - X_SIZE);
    conclusive = !a_done;
    printf("  attempt %d: stream A %s when y was written\n", attempt,
           a_done ? "had finished (inconclusive)" : "was still busy");
    accel_buffer_release(y);
  }
  ASSERT(conclusive);
  // Once A is done, X's block is reusable by anyone: no new segment.
  accel_buffer_t* z = NULL;
  accel_buffer_t* w = NULL;
  ASSERT_OK(accel_buffer_create(f.device, X_SIZE, &z));
  accel_memory_stats_t s = memory_stats(f.device);
  ASSERT_OK(accel_stream_alloc_buffer(f.b, X_SIZE, &w));
  accel_memory_stats_t t = memory_stats(f.device);
  ASSERT_EQ(t.raw_allocs, s.raw_allocs);
  accel_buffer_release(z);
  accel_buffer_release(w);
  fixture_close(&f);
}

TEST(no_early_reuse_by_synchronous_allocation) {
  cross_stream(test_result_, false);
}

TEST(no_early_reuse_by_another_stream) { cross_stream(test_result_, true); }

// A buffer allocated on A and freed while A's read of it is queued is
// reused at once by the next allocation on A, which is safe in stream
// order; the read still sees the old bytes.
TEST(same_stream_reuses_at_once) {
  fixture_t f;
  ASSERT_OK(fixture_open(&f));
  accel_buffer_t *x = NULL, *y = NULL, *other = NULL;
  ASSERT_OK(accel_stream_alloc_buffer(f.a, X_SIZE, &x));
  ASSERT_OK(accel_stream_fill_buffer(f.a, x, 0, 0xc3, X_SIZE));
  ASSERT_OK(queue_busy_read(&f, x, 2));
  accel_buffer_release(x);
  accel_memory_stats_t s = memory_stats(f.device);
  ASSERT_OK(accel_stream_alloc_buffer(f.a, X_SIZE, &y));
  accel_memory_stats_t t = memory_stats(f.device);
  ASSERT_EQ(t.raw_allocs, s.raw_allocs);  // X's block, straight away
  ASSERT_EQ(t.cache_hits, s.cache_hits + 1);
  ASSERT_OK(accel_stream_fill_buffer(f.a, y, 0, 0x3c, X_SIZE));
  // Another stream may not have it while A is busy (it is A's).
  ASSERT_OK(accel_stream_alloc_buffer(f.b, 4 * MiB, &other));
  t = memory_stats(f.device);
  ASSERT_EQ(t.raw_allocs, s.raw_allocs + 1);
  ASSERT_OK(accel_stream_synchronize(f.a));
  ASSERT(memory_all(f.host, X_SIZE, 0xc3));  // the read ran before the fill
  uint8_t tail[64];
  ASSERT_OK(accel_buffer_read(y, X_SIZE - 64, tail, 64));
  ASSERT(memory_all(tail, 64, 0x3c));
  accel_buffer_release(y);
  accel_buffer_release(other);
  fixture_close(&f);
}

// A stream's cached blocks join the device-wide pool when it is destroyed,
// and empty-cache gives them back only once the stream is idle.
TEST(stream_pool_lifetime) {
  fixture_t f;
  ASSERT_OK(fixture_open(&f));
  accel_stream_t* c = NULL;
  ASSERT_OK(accel_stream_create(f.device, 0, &c));
  accel_buffer_t* x = NULL;
  ASSERT_OK(accel_stream_alloc_buffer(c, X_SIZE, &x));
  ASSERT_OK(memory_busy(c, x, 4));
  accel_buffer_release(x);
  accel_memory_stats_t s = memory_stats(f.device);
  ASSERT_OK(accel_device_empty_cache(f.device));
  accel_memory_stats_t t = memory_stats(f.device);
  bool c_done = false;
  ASSERT_OK(accel_stream_query(c, &c_done));
  if (!c_done) ASSERT_EQ(t.reserved_bytes, s.reserved_bytes);  // C was busy
  accel_stream_release(c);  // waits for C's work
  // Now X's block is everyone's: a synchronous allocation takes it.
  t = memory_stats(f.device);
  accel_buffer_t* y = NULL;
  ASSERT_OK(accel_buffer_create(f.device, X_SIZE, &y));
  accel_memory_stats_t u = memory_stats(f.device);
  if (t.reserved_bytes == s.reserved_bytes) {
    ASSERT_EQ(u.raw_allocs, t.raw_allocs);
  }
  accel_buffer_release(y);
  ASSERT_OK(accel_device_empty_cache(f.device));
  u = memory_stats(f.device);
  ASSERT_EQ(u.reserved_bytes, MEMORY_TEST_BUSY);  // only `busy` is left
  fixture_close(&f);
}

// accel_buffer_record_stream(): a use the core cannot see (here simulated:
// A is busy with unrelated work) still delays reuse until A is done.
TEST(record_stream_delays_reuse) {
  fixture_t f;
  ASSERT_OK(fixture_open(&f));
  accel_buffer_t* x = NULL;
  ASSERT_OK(accel_buffer_create(f.device, X_SIZE, &x));
  ASSERT_OK(accel_buffer_record_stream(x, f.a));
  ASSERT_OK(memory_busy(f.a, f.busy, 4));
  accel_buffer_release(x);
  accel_memory_stats_t s = memory_stats(f.device);
  ASSERT_EQ(s.active_blocks, 2);                  // busy and the pending X
  ASSERT_OK(accel_device_empty_cache(f.device));  // skips, never waits
  bool done = true;
  ASSERT_OK(accel_stream_query(f.a, &done));
  // Still busy now, so it was busy during the empty-cache too.
  if (!done) {
    ASSERT_EQ(memory_stats(f.device).reserved_bytes, s.reserved_bytes);
  }
  ASSERT_OK(accel_stream_synchronize(f.a));
  ASSERT_OK(accel_device_empty_cache(f.device));
  s = memory_stats(f.device);
  ASSERT_EQ(s.active_blocks, 1);
  ASSERT_EQ(s.reserved_bytes, MEMORY_TEST_BUSY);
  fixture_close(&f);
}

// A buffer used on many streams (more than the inline slots) waits for
// all of them.
TEST(many_streams_use_one_buffer) {
  enum { kStreams = 9 };
  fixture_t f;
  ASSERT_OK(fixture_open(&f));
  accel_stream_t* streams[kStreams] = {NULL};
  accel_buffer_t* x = NULL;
  ASSERT_OK(accel_buffer_create(f.device, 64 * KiB, &x));
  ASSERT_OK(accel_buffer_fill(x, 0, 0x77, 64 * KiB));
  uint8_t* out = malloc(kStreams * 64 * KiB);
  ASSERT_NOT_NULL(out);
  for (int i = 0; i < kStreams; i++) {
    ASSERT_OK(accel_stream_create(f.device, 0, &streams[i]));
    if (i == kStreams - 1) ASSERT_OK(memory_busy(streams[i], f.busy, 2));
    ASSERT_OK(accel_stream_read_buffer(streams[i], x, 0, out + i * 64 * KiB,
                                       64 * KiB));
  }
  accel_buffer_release(x);
  // Overwrite whatever a too-early reuse would hand out.
  accel_buffer_t* y[8] = {NULL};
  for (int i = 0; i < 8; i++) {
    ASSERT_OK(accel_buffer_create(f.device, 64 * KiB, &y[i]));
    ASSERT_OK(accel_buffer_fill(y[i], 0, 0x11, 64 * KiB));
  }
  for (int i = 0; i < kStreams; i++) {
    ASSERT_OK(accel_stream_synchronize(streams[i]));
    accel_stream_release(streams[i]);
  }
  ASSERT(memory_all(out, kStreams * 64 * KiB, 0x77));
  free(out);
  for (int i = 0; i < 8; i++) accel_buffer_release(y[i]);
  fixture_close(&f);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
