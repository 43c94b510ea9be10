// SPDX-License-Identifier: MIT
//
// Thread stress of the caching allocator (runs under ThreadSanitizer in
// CI): several threads allocate buffers of random sizes on shared streams
// and synchronously, fill them on one stream, read them back on another
// stream behind an event, and release them at once, while the reads are
// still queued. Every read must see its buffer's own pattern: a block
// reused before the other stream's read ran would show another thread's
// bytes. Peer copies between two devices cover the cross-device path. The
// run is bounded by time, not by a count, so slow sanitizer builds finish.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "memory_test.h"
#include "test.h"

#define THREADS 4
#define STREAMS 3
#define RUN_MS 1500.0
#define MAX_PENDING 16

typedef struct shared {
  accel_device_t* device;
  accel_device_t* peer;
  accel_stream_t* streams[STREAMS];
  accel_stream_t* peer_stream;
} shared_t;

typedef struct read_check {
  uint8_t* host;
  size_t size;
  uint8_t value;
} read_check_t;

typedef struct worker {
  shared_t* shared;
  int id;
  unsigned seed;
  accel_event_t* event;
  read_check_t pending[MAX_PENDING];
  int pending_count;
  long ops;
  int failures;
  char failure[256];
} worker_t;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static unsigned next_random(worker_t* w) {
  w->seed = w->seed * 1103515245u + 12345u;
  return w->seed >> 8;
}

static void fail(worker_t* w, const char* what, accel_status_t status) {
  if (w->failures++ == 0) {
    snprintf(w->failure, sizeof(w->failure), "thread %d: %s: %s: %s", w->id,
             what, accel_status_string(status), accel_last_error());
  }
}

#define CHECK(w, call)          \
  do {                          \
    accel_status_t s_ = (call); \
    if (s_ != ACCEL_OK) {       \
      fail((w), #call, s_);     \
      return;                   \
    }                           \
  } while (0)

// Synchronises every stream and checks the queued reads.
static void drain(worker_t* w) {
  shared_t* sh = w->shared;
  for (int i = 0; i < STREAMS; i++)
    CHECK(w, accel_stream_synchronize(sh->streams[i]));
  CHECK(w, accel_stream_synchronize(sh->peer_stream));
  for (int i = 0; i < w->pending_count; i++) {
    read_check_t* r = &w->pending[i];
    if (!memory_all(r->host, r->size, r->value) && w->failures++ == 0) {
      snprintf(w->failure, sizeof(w->failure),
               "thread %d: a read of %zu bytes saw another buffer's data "
               "(expected 0x%02x)",
               w->id, r->size, r->value);
    }
    free(r->host);
  }
  w->pending_count = 0;
}

// One round: allocate, fill on stream F, read on stream R after an event,
// release at once.
static void round_trip(worker_t* w) {
  shared_t* sh = w->shared;
  unsigned r = next_random(w);
  size_t size = (r % 8 == 0) ? 1 * MiB + r % (3 * MiB)  // some large ones
                             : 1 + r % (64 * KiB);
  accel_stream_t* f = sh->streams[r % STREAMS];
  accel_stream_t* rd = sh->streams[(r / STREAMS) % STREAMS];
  uint8_t value = (uint8_t)(w->id * 64 + w->ops % 61 + 1);
  accel_buffer_t* b = NULL;
  if (r % 3 == 0) {
    CHECK(w, accel_buffer_create(sh->device, size, &b));
    CHECK(w, accel_buffer_fill(b, 0, value, size));
  } else {
    CHECK(w, accel_stream_alloc_buffer(f, size, &b));
    CHECK(w, accel_stream_fill_buffer(f, b, 0, value, size));
  }
  read_check_t* check = &w->pending[w->pending_count];
  check->host = malloc(size);
  if (check->host == NULL) {
    accel_buffer_release(b);
    fail(w, "malloc", ACCEL_ERROR_OUT_OF_MEMORY);
    return;
  }
  check->size = size;
  check->value = value;
  w->pending_count++;
  CHECK(w, accel_event_record(w->event, f));
  CHECK(w, accel_stream_wait_event(rd, w->event));
  if (r % 16 == 5 && size <= 64 * KiB) {
    // Read it on the peer device's stream, through a peer copy.
    accel_buffer_t* p = NULL;
    CHECK(w, accel_stream_alloc_buffer(sh->peer_stream, size, &p));
    CHECK(w, accel_stream_wait_event(sh->peer_stream, w->event));
    CHECK(w, accel_stream_copy_buffer(sh->peer_stream, p, 0, b, 0, size));
    CHECK(w,
          accel_stream_read_buffer(sh->peer_stream, p, 0, check->host, size));
    accel_buffer_release(p);
  } else {
    CHECK(w, accel_stream_read_buffer(rd, b, 0, check->host, size));
  }
  accel_buffer_release(b);  // the read is still queued
  w->ops++;
}

static void* worker_main(void* arg) {
  worker_t* w = arg;
  double end = now_ms() + RUN_MS;
  if (accel_event_create(w->shared->device, 0, &w->event) != ACCEL_OK) {
    fail(w, "accel_event_create", ACCEL_ERROR_INTERNAL);
    return NULL;
  }
  while (now_ms() < end && w->failures == 0) {
    round_trip(w);
    if (w->pending_count == MAX_PENDING) drain(w);
    if (w->ops % 64 == 0) {
      accel_memory_stats_t s = memory_stats(w->shared->device);
      if (s.struct_size == 0 || s.allocated_bytes > s.reserved_bytes) {
        fail(w, "statistics inconsistent", ACCEL_ERROR_INTERNAL);
      }
    }
    if (w->ops % 200 == 0) (void)accel_device_empty_cache(w->shared->device);
  }
  drain(w);
  accel_event_release(w->event);
  return NULL;
}

TEST(threads_on_shared_streams) {
  shared_t sh;
  memset(&sh, 0, sizeof(sh));
  ASSERT_OK(accel_device_open("cpu:0", &sh.device));
  ASSERT_OK(accel_device_open("cpu:1", &sh.peer));
  for (int i = 0; i < STREAMS; i++) {
    ASSERT_OK(accel_stream_create(sh.device, 0, &sh.streams[i]));
  }
  ASSERT_OK(accel_stream_create(sh.peer, 0, &sh.peer_stream));
  worker_t workers[THREADS];
  pthread_t threads[THREADS];
  memset(workers, 0, sizeof(workers));
  for (int i = 0; i < THREADS; i++) {
    workers[i].shared = &sh;
    workers[i].id = i;
    workers[i].seed = 1000u + (unsigned)i * 7919u;
    ASSERT_EQ(pthread_create(&threads[i], NULL, worker_main, &workers[i]), 0);
  }
  long ops = 0;
  int failures = 0;
  for (int i = 0; i < THREADS; i++) {
    pthread_join(threads[i], NULL);
    ops += workers[i].ops;
    failures += workers[i].failures;
    if (workers[i].failures) fprintf(stderr, "  %s\n", workers[i].failure);
  }
  accel_memory_stats_t s = memory_stats(sh.device);
  printf("  %ld round trips; %llu hits, %llu misses, %llu segments now\n", ops,
         (unsigned long long)s.cache_hits, (unsigned long long)s.cache_misses,
         (unsigned long long)(s.raw_allocs - s.raw_frees));
  ASSERT_EQ(failures, 0);
  ASSERT_GT(ops, THREADS);
  // Everything was released and every stream is idle: nothing is active,
  // and empty-cache gives every segment back.
  ASSERT_EQ(s.allocated_bytes, 0);
  ASSERT_EQ(s.requested_bytes, 0);
  ASSERT_OK(accel_device_empty_cache(sh.device));
  s = memory_stats(sh.device);
  ASSERT_EQ(s.active_blocks, 0);
  ASSERT_EQ(s.reserved_bytes, 0);
  ASSERT_EQ(s.raw_allocs, s.raw_frees);
  for (int i = 0; i < STREAMS; i++) accel_stream_release(sh.streams[i]);
  accel_stream_release(sh.peer_stream);
  accel_device_release(sh.peer);
  accel_device_release(sh.device);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
