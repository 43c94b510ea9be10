// SPDX-License-Identifier: MIT
//
// CPU plugin streams through the public API: work runs asynchronously, in
// order, streams progress independently, waits order work across streams
// (and devices), and releasing a stream completes its work.
//
// Checks that depend on timing are phrased so that a correct plugin can
// only fail them if the scheduler stalls this process for the whole
// duration of the queued work; those are retried a few times with more
// work, while a wrong plugin fails every attempt.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_test.h"
#include "test.h"

#define ATTEMPTS 3

TEST(stream_is_asynchronous) {
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &device));
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &stream));
  accel_buffer_t* bufs[4] = {NULL};
  for (int i = 0; i < 4; i++) {
    ASSERT_OK(accel_buffer_create(device, CPU_TEST_BIG, &bufs[i]));
  }
  uint8_t tail[4][256];
  bool async = false;
  for (int attempt = 0; attempt < ATTEMPTS && !async; attempt++) {
    int fills = 4 << attempt;  // 1, 2, then 4 GiB of fills in all
    double t0 = cpu_test_now_ms();
    for (int i = 0; i < 4; i++) {
      ASSERT_OK(cpu_test_busy(stream, bufs[i], fills, (uint8_t)(10 * i)));
    }
    ASSERT_OK(
        accel_stream_copy_buffer(stream, bufs[0], 0, bufs[3], 0, CPU_TEST_BIG));
    for (int i = 0; i < 4; i++) {
      ASSERT_OK(accel_stream_read_buffer(stream, bufs[i], CPU_TEST_BIG - 256,
                                         tail[i], 256));
    }
    double t1 = cpu_test_now_ms();
    bool done = true;
    ASSERT_OK(accel_stream_query(stream, &done));
    ASSERT_OK(accel_stream_synchronize(stream));
    double t2 = cpu_test_now_ms();
    ASSERT_OK(accel_stream_query(stream, &done));
    ASSERT(done);
    printf("  attempt %d: enqueue %.3f ms, synchronize %.3f ms\n", attempt,
           t1 - t0, t2 - t1);
    // Everything ran, in order: bufs[0] got bufs[3]'s last value.
    uint8_t last3 = (uint8_t)(30 + fills - 1);
    ASSERT(cpu_test_all(tail[0], 256, last3));
    for (int i = 1; i < 4; i++) {
      ASSERT(cpu_test_all(tail[i], 256, (uint8_t)(10 * i + fills - 1)));
    }
    // A synchronous plugin does all the work inside the enqueue calls.
    async = (t1 - t0) * 4 < (t2 - t1);
  }
  ASSERT(async);
  for (int i = 0; i < 4; i++) accel_buffer_release(bufs[i]);
  accel_stream_release(stream);
  accel_device_release(device);
}

TEST(query_reports_pending_work) {
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &device));
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &stream));
  accel_buffer_t* buf = NULL;
  ASSERT_OK(accel_buffer_create(device, CPU_TEST_BIG, &buf));
  bool seen_pending = false;
  for (int attempt = 0; attempt < ATTEMPTS && !seen_pending; attempt++) {
    ASSERT_OK(cpu_test_busy(stream, buf, 16 << attempt, 1));
    bool done = true;
    ASSERT_OK(accel_stream_query(stream, &done));
    seen_pending = !done;
    ASSERT_OK(accel_stream_synchronize(stream));
  }
  ASSERT(seen_pending);
  // An idle stream is done, and synchronising it returns at once.
  bool done = false;
  ASSERT_OK(accel_stream_query(stream, &done));
  ASSERT(done);
  ASSERT_OK(accel_stream_synchronize(stream));
  accel_buffer_release(buf);
  accel_stream_release(stream);
  accel_device_release(device);
}

TEST(stream_runs_in_order) {
  enum { kRegion = 4096, kOps = 300, kSnapEvery = 50 };
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &device));
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &stream));
  accel_buffer_t* dst = NULL;
  accel_buffer_t* src = NULL;
  ASSERT_OK(accel_buffer_create(device, CPU_TEST_BIG, &dst));
  ASSERT_OK(accel_buffer_create(device, kRegion, &src));
  uint8_t* host = malloc((size_t)kOps * kRegion);  // write sources
  uint8_t* snaps = calloc(kOps / kSnapEvery + 1, kRegion);
  uint8_t* rest = calloc(1, kRegion);
  ASSERT_NOT_NULL(host);
  ASSERT_NOT_NULL(snaps);
  ASSERT_NOT_NULL(rest);

  // A slow first operation, then a long chain of small ones on the same
  // region, each leaving a distinct value; reads in between snapshot it.
  ASSERT_OK(accel_stream_fill_buffer(stream, dst, 0, 0xAA, CPU_TEST_BIG));
  for (int i = 1; i <= kOps; i++) {
    uint8_t value = (uint8_t)i;
    switch (i % 3) {
      case 0:
        ASSERT_OK(accel_stream_fill_buffer(stream, dst, 0, value, kRegion));
        break;
      case 1:
        memset(host + (size_t)(i - 1) * kRegion, value, kRegion);
        ASSERT_OK(accel_stream_write_buffer(
            stream, dst, 0, host + (size_t)(i - 1) * kRegion, kRegion));
        break;
      default:
        ASSERT_OK(accel_stream_fill_buffer(stream, src, 0, value, kRegion));
        ASSERT_OK(accel_stream_copy_buffer(stream, dst, 0, src, 0, kRegion));
        break;
    }
    if (i % kSnapEvery == 0) {
      ASSERT_OK(accel_stream_read_buffer(
          stream, dst, 0, snaps + (size_t)(i / kSnapEvery) * kRegion, kRegion));
    }
  }
  ASSERT_OK(accel_stream_read_buffer(stream, dst, CPU_TEST_BIG - kRegion, rest,
                                     kRegion));
  ASSERT_OK(accel_stream_synchronize(stream));

  uint8_t final_region[kRegion];
  ASSERT_OK(accel_buffer_read(dst, 0, final_region, kRegion));
  ASSERT(cpu_test_all(final_region, kRegion, (uint8_t)kOps));
  ASSERT(cpu_test_all(rest, kRegion, 0xAA));
  for (int k = 1; k <= kOps / kSnapEvery; k++) {
    ASSERT(cpu_test_all(snaps + (size_t)k * kRegion, kRegion,
                        (uint8_t)(k * kSnapEvery)));
  }
  free(rest);
  free(snaps);
  free(host);
  accel_buffer_release(src);
  accel_buffer_release(dst);
  accel_stream_release(stream);
  accel_device_release(device);
}

TEST(streams_progress_independently) {
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &device));
  accel_stream_t* busy = NULL;
  accel_stream_t* quick = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &busy));
  ASSERT_OK(accel_stream_create(device, 0, &quick));
  accel_buffer_t* big = NULL;
  accel_buffer_t* small = NULL;
  ASSERT_OK(accel_buffer_create(device, CPU_TEST_BIG, &big));
  ASSERT_OK(accel_buffer_create(device, 4096, &small));
  // If streams shared one queue, `quick` could not finish before `busy`.
  bool overtaken = false;
  int fills = 0;
  for (int attempt = 0; attempt < ATTEMPTS && !overtaken; attempt++) {
    uint8_t host[4096] = {0};
    fills = 16 << attempt;
    ASSERT_OK(cpu_test_busy(busy, big, fills, 1));
    ASSERT_OK(accel_stream_fill_buffer(quick, small, 0, 5, sizeof(host)));
    ASSERT_OK(accel_stream_read_buffer(quick, small, 0, host, sizeof(host)));
    ASSERT_OK(accel_stream_synchronize(quick));
    ASSERT(cpu_test_all(host, sizeof(host), 5));
    bool busy_done = true;
    ASSERT_OK(accel_stream_query(busy, &busy_done));
    overtaken = !busy_done;
    ASSERT_OK(accel_stream_synchronize(busy));
  }
  ASSERT(overtaken);
  uint8_t last[256];
  ASSERT_OK(accel_buffer_read(big, 0, last, sizeof(last)));
  ASSERT(cpu_test_all(last, sizeof(last), (uint8_t)fills));
  accel_buffer_release(small);
  accel_buffer_release(big);
  accel_stream_release(quick);
  accel_stream_release(busy);
  accel_device_release(device);
}

// Stream `consumer` (on `consumer_device`) waits for an event recorded on
// `producer` after heavy work and then copies the result; without the wait
// it would read stale data.
static void check_cross_stream_wait(test_result_t* test_result_,
                                    accel_device_t* producer_device,
                                    accel_device_t* consumer_device) {
  enum { kFills = 8, kProbe = 1 << 20 };
  accel_stream_t* producer = NULL;
  accel_stream_t* consumer = NULL;
  ASSERT_OK(accel_stream_create(producer_device, 0, &producer));
  ASSERT_OK(accel_stream_create(consumer_device, 0, &consumer));
  accel_event_t* ready = NULL;
  ASSERT_OK(accel_event_create(producer_device, 0, &ready));
  accel_buffer_t *x = NULL, *y = NULL, *z = NULL;
  ASSERT_OK(accel_buffer_create(producer_device, CPU_TEST_BIG, &x));
  ASSERT_OK(accel_buffer_create(producer_device, CPU_TEST_BIG, &y));
  ASSERT_OK(accel_buffer_create(consumer_device, CPU_TEST_BIG, &z));
  ASSERT_OK(accel_buffer_fill(y, 0, 0, CPU_TEST_BIG));
  uint8_t* head = calloc(1, kProbe);
  uint8_t* tail = calloc(1, kProbe);
  ASSERT_NOT_NULL(head);
  ASSERT_NOT_NULL(tail);

  ASSERT_OK(cpu_test_busy(producer, x, kFills, 1));
  ASSERT_OK(accel_stream_copy_buffer(producer, y, 0, x, 0, CPU_TEST_BIG));
  ASSERT_OK(accel_event_record(ready, producer));
  ASSERT_OK(accel_stream_wait_event(consumer, ready));
  // Same device: a d2d copy; another device: a peer copy.
  ASSERT_OK(accel_stream_copy_buffer(consumer, z, 0, y, 0, CPU_TEST_BIG));
  ASSERT_OK(accel_stream_read_buffer(consumer, z, 0, head, kProbe));
  ASSERT_OK(accel_stream_read_buffer(consumer, z, CPU_TEST_BIG - kProbe, tail,
                                     kProbe));
  ASSERT_OK(accel_stream_synchronize(consumer));  // not the producer
  ASSERT(cpu_test_all(head, kProbe, kFills));
  ASSERT(cpu_test_all(tail, kProbe, kFills));
  bool done = false;
  ASSERT_OK(accel_event_query(ready, &done));
  ASSERT(done);  // the consumer finished, so what it waited for did too

  ASSERT_OK(accel_stream_synchronize(producer));
  free(tail);
  free(head);
  accel_buffer_release(z);
  accel_buffer_release(y);
  accel_buffer_release(x);
  accel_event_release(ready);
  accel_stream_release(consumer);
  accel_stream_release(producer);
}

TEST(cross_stream_wait) {
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &device));
  check_cross_stream_wait(test_result_, device, device);
  accel_device_release(device);
}

TEST(cross_device_wait) {
  accel_device_t* d0 = NULL;
  accel_device_t* d1 = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d0));
  if (accel_device_open("cpu:1", &d1) != ACCEL_OK) {
    accel_device_release(d0);
    SKIP("needs ACCEL_CPU_DEVICES >= 2");
  }
  check_cross_stream_wait(test_result_, d0, d1);
  accel_device_release(d1);
  accel_device_release(d0);
}

TEST(release_completes_pending_work) {
  enum { kProbe = 1 << 20 };
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &device));
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &stream));
  accel_buffer_t* buf = NULL;
  ASSERT_OK(accel_buffer_create(device, CPU_TEST_BIG, &buf));
  uint8_t* probe = calloc(1, kProbe);
  ASSERT_NOT_NULL(probe);
  ASSERT_OK(cpu_test_busy(stream, buf, 8, 1));
  ASSERT_OK(accel_stream_read_buffer(stream, buf, CPU_TEST_BIG - kProbe, probe,
                                     kProbe));
  accel_stream_release(stream);  // no synchronize: release must drain
  ASSERT(cpu_test_all(probe, kProbe, 8));
  free(probe);
  accel_buffer_release(buf);
  accel_device_release(device);
}

TEST(synchronous_copies) {
  enum { kSize = 1 << 16 };
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &device));
  accel_buffer_t *a = NULL, *b = NULL;
  ASSERT_OK(accel_buffer_create(device, kSize, &a));
  ASSERT_OK(accel_buffer_create(device, kSize, &b));
  static uint8_t pattern[kSize], out[kSize], expect[kSize];
  for (int i = 0; i < kSize; i++) pattern[i] = (uint8_t)(i * 31 + 7);
  ASSERT_OK(accel_buffer_write(a, 0, pattern, kSize));
  ASSERT_OK(accel_buffer_copy(b, 0, a, 0, kSize));
  ASSERT_OK(accel_buffer_read(b, 0, out, kSize));
  ASSERT_MEM_EQ(out, pattern, kSize);
  ASSERT_OK(accel_buffer_fill(b, 100, 0x5A, 1000));
  ASSERT_OK(accel_buffer_read(b, 0, out, kSize));
  memcpy(expect, pattern, kSize);
  memset(expect + 100, 0x5A, 1000);
  ASSERT_MEM_EQ(out, expect, kSize);
  // Overlapping copy within one buffer behaves like memmove, both ways.
  ASSERT_OK(accel_buffer_copy(a, 1, a, 0, kSize - 1));
  memmove(expect, pattern, kSize);
  memmove(expect + 1, pattern, kSize - 1);
  ASSERT_OK(accel_buffer_read(a, 0, out, kSize));
  ASSERT_MEM_EQ(out, expect, kSize);
  ASSERT_OK(accel_buffer_copy(a, 0, a, 3, kSize - 3));
  memmove(expect, expect + 3, kSize - 3);
  ASSERT_OK(accel_buffer_read(a, 0, out, kSize));
  ASSERT_MEM_EQ(out, expect, kSize);
  accel_buffer_release(b);
  accel_buffer_release(a);
  accel_device_release(device);
}

// Several threads share one stream: each writes its own slice, reads it
// back and synchronises, while the others keep enqueueing.
typedef struct worker_arg {
  accel_stream_t* stream;
  accel_buffer_t* buffer;
  int index;
  int failures;
} worker_arg_t;

enum { kThreads = 4, kSlice = 8192, kIters = 100 };

static void* shared_stream_worker(void* p) {
  worker_arg_t* arg = p;
  uint8_t in[kSlice], out[kSlice];
  size_t offset = (size_t)arg->index * kSlice;
  for (int it = 0; it < kIters; it++) {
    uint8_t value = (uint8_t)(arg->index * 50 + it);
    memset(in, value, sizeof(in));
    memset(out, 0, sizeof(out));
    bool done = false;
    if (accel_stream_write_buffer(arg->stream, arg->buffer, offset, in,
                                  kSlice) != ACCEL_OK ||
        accel_stream_read_buffer(arg->stream, arg->buffer, offset, out,
                                 kSlice) != ACCEL_OK ||
        accel_stream_query(arg->stream, &done) != ACCEL_OK ||
        accel_stream_synchronize(arg->stream) != ACCEL_OK ||
        !cpu_test_all(out, kSlice, value)) {
      arg->failures++;
    }
  }
  return NULL;
}

TEST(shared_stream_threads) {
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &device));
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &stream));
  accel_buffer_t* buf = NULL;
  ASSERT_OK(accel_buffer_create(device, (size_t)kThreads * kSlice, &buf));
  pthread_t threads[kThreads];
  worker_arg_t args[kThreads];
  for (int i = 0; i < kThreads; i++) {
    args[i] = (worker_arg_t){.stream = stream, .buffer = buf, .index = i};
    ASSERT_EQ(pthread_create(&threads[i], NULL, shared_stream_worker, &args[i]),
              0);
  }
  for (int i = 0; i < kThreads; i++) {
    pthread_join(threads[i], NULL);
    ASSERT_EQ(args[i].failures, 0);
  }
  accel_buffer_release(buf);
  accel_stream_release(stream);
  accel_device_release(device);
}

TEST(many_streams) {
  enum { kStreams = 16 };
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &device));
  accel_stream_t* streams[kStreams];
  accel_buffer_t* buf = NULL;
  ASSERT_OK(accel_buffer_create(device, kStreams * 64, &buf));
  for (int i = 0; i < kStreams; i++) {
    ASSERT_OK(accel_stream_create(device, 0, &streams[i]));
    ASSERT_OK(accel_stream_fill_buffer(streams[i], buf, (size_t)i * 64,
                                       (uint8_t)i, 64));
  }
  for (int i = 0; i < kStreams; i++) accel_stream_release(streams[i]);
  uint8_t out[kStreams * 64];
  ASSERT_OK(accel_buffer_read(buf, 0, out, sizeof(out)));
  for (int i = 0; i < kStreams; i++) {
    ASSERT(cpu_test_all(out + i * 64, 64, (uint8_t)i));
  }
  accel_buffer_release(buf);
  accel_device_release(device);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
