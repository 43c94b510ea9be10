// SPDX-License-Identifier: MIT
//
// The CPU plugin's thread pool (plugins/cpu/pool.c) from inside the
// plugin: this test compiles the plugin's sources in and calls
// accel_cpu_pool_run with chunk functions of its own, on pools of 2 and 3
// threads (ACCEL_CPU_THREADS, set before the pool starts).
//
// Checked: every chunk runs exactly once, for counts below, at and above
// the width (and uneven ranges); worker indices stay below the width and
// no two threads share one within a loop; a thread takes a range's chunks
// in order; with two threads the helper starts on its own range, never
// the caller's (the affinity that keeps a thread on the same part of a
// buffer from op to op); loops from several threads at once each finish
// whole.
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

ACCEL_PLUGIN_EXPORT const accel_plugin_t* accel_plugin_entry(uint32_t host_abi);

#include "test_host.h"

// test.h's ASSERT_OK prints these; libaccel, which defines them, is not
// linked here.
static const char* accel_last_error(void) { return test_host_message; }

static const char* accel_status_string(accel_status_t status) {
  static _Thread_local char text[32];
  snprintf(text, sizeof(text), "status %d", (int)status);
  return text;
}

#include "test.h"

enum { kMaxChunks = 4096, kMaxWorkers = 8 };

// What one loop saw: how often each chunk ran and by whom, each worker's
// chunks in the order it ran them.
typedef struct record {
  _Atomic uint32_t runs[kMaxChunks];
  _Atomic uint32_t by[kMaxChunks];
  uint64_t order[kMaxWorkers][kMaxChunks];  // written by that worker only
  uint32_t ran[kMaxWorkers];                // likewise
  _Atomic uint32_t inside[kMaxWorkers];     // threads inside with that index
  _Atomic uint32_t bad_worker;              // an index >= kMaxWorkers
  _Atomic uint32_t shared_worker;           // two threads with one index
  uint32_t spin;                            // busy work per chunk
  uint32_t spun[kMaxWorkers];               // its result, per worker
} record_t;

static void record_chunk(void* ctx, uint64_t index, uint32_t worker) {
  record_t* r = ctx;
  if (worker >= kMaxWorkers) {
    atomic_store(&r->bad_worker, 1);
    return;
  }
  if (atomic_fetch_add(&r->inside[worker], 1) != 0) {
    atomic_store(&r->shared_worker, 1);
  }
  atomic_fetch_add(&r->runs[index], 1);
  atomic_store(&r->by[index], worker);
  r->order[worker][r->ran[worker]++] = index;
  volatile uint32_t sink = 0;
  for (uint32_t i = 0; i < r->spin; i++) sink += i;
  r->spun[worker] = sink;  // read, so clang sees the busy work used
  atomic_fetch_sub(&r->inside[worker], 1);
}

typedef struct fixture {
  const accel_plugin_t* desc;
  void* plugin;
  accel_cpu_pool_t* pool;
} fixture_t;

static accel_status_t fixture_init(fixture_t* f, const char* threads) {
  memset(f, 0, sizeof(*f));
  setenv("ACCEL_CPU_THREADS", threads, 1);
  f->desc = accel_plugin_entry(ACCEL_PLUGIN_ABI_VERSION);
  if (f->desc == NULL) return ACCEL_ERROR_INCOMPATIBLE;
  accel_status_t s = f->desc->load(&test_host, &f->plugin);
  if (s == ACCEL_OK) s = accel_cpu_pool_get(f->plugin, &f->pool);
  return s;
}

static void fixture_deinit(fixture_t* f) {
  if (f->plugin != NULL) f->desc->unload(f->plugin);
  unsetenv("ACCEL_CPU_THREADS");
}

// The range (0 .. width - 1) chunk `i` of `count` belongs to: the first
// count % width ranges hold one chunk more.
static uint32_t range_of(uint64_t i, uint64_t count, uint32_t width) {
  uint64_t share = count / width, extra = count % width;
  if (i < extra * (share + 1)) return (uint32_t)(i / (share + 1));
  return (uint32_t)(extra + (i - extra * (share + 1)) / share);
}

// Runs a loop of `count` chunks and checks what every loop must give.
static void run_and_check(test_result_t* test_result_, accel_cpu_pool_t* pool,
                          record_t* r, uint64_t count) {
  memset(r, 0, sizeof(*r));
  r->spin = 20000;
  accel_cpu_pool_run(pool, count, record_chunk, r);
  uint32_t width = accel_cpu_pool_width(pool);
  ASSERT_EQ(atomic_load(&r->bad_worker), 0u);
  ASSERT_EQ(atomic_load(&r->shared_worker), 0u);
  for (uint64_t i = 0; i < count; i++) {
    if (atomic_load(&r->runs[i]) != 1) {
      TEST_FAIL_AT_("count %llu: chunk %llu ran %u times",
           (unsigned long long)count, (unsigned long long)i,
           atomic_load(&r->runs[i]));
    }
    ASSERT(atomic_load(&r->by[i]) < width);
  }
  // Each thread takes the chunks of a range in order (one cursor each).
  for (uint32_t w = 0; w < width && w < kMaxWorkers; w++) {
    for (uint32_t k = 1; k < r->ran[w]; k++) {
      uint64_t prev = r->order[w][k - 1], next = r->order[w][k];
      if (next < prev && range_of(next, count, width) ==
                             range_of(prev, count, width)) {
        TEST_FAIL_AT_("count %llu: worker %u ran chunk %llu after %llu",
             (unsigned long long)count, w, (unsigned long long)next,
             (unsigned long long)prev);
      }
    }
  }
}

// Two threads: the helper's first chunk lies in its own range, never the
// caller's. (The caller leaves its range only once that range is done,
// so the helper can find its own range taken only with the caller's
// done too. With three or more threads a late helper may find its range
// taken by another helper and go on to the caller's: not checked.)
static void check_helper_starts_apart(test_result_t* test_result_,
                                      const record_t* r, uint64_t count) {
  if (r->ran[1] == 0) return;  // joined late or not at all
  if (range_of(r->order[1][0], count, 2) == 0) {
    TEST_FAIL_AT_("count %llu: the helper's first chunk was %llu, in the caller's "
         "range",
         (unsigned long long)count, (unsigned long long)r->order[1][0]);
  }
}

static record_t g_record;

TEST(two_threads_every_chunk_once_and_ranges_apart) {
  fixture_t f;
  ASSERT_OK(fixture_init(&f, "2"));
  ASSERT_EQ(accel_cpu_pool_width(f.pool), 2u);
  const uint64_t counts[] = {1, 2, 3, 7, 64, 101, 1000};
  uint32_t helped = 0;
  for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
    run_and_check(test_result_, f.pool, &g_record, counts[i]);
    if (*test_result_ == TEST_FAIL) return;
    check_helper_starts_apart(test_result_, &g_record, counts[i]);
    if (*test_result_ == TEST_FAIL) return;
    if (g_record.ran[1] != 0) helped++;
  }
  // Loops of 1000 busy chunks, again: the helper joins at least one.
  for (int i = 0; i < 20 && helped == 0; i++) {
    run_and_check(test_result_, f.pool, &g_record, 1000);
    if (*test_result_ == TEST_FAIL) return;
    check_helper_starts_apart(test_result_, &g_record, 1000);
    if (*test_result_ == TEST_FAIL) return;
    if (g_record.ran[1] != 0) helped++;
  }
  ASSERT(helped > 0);
  fixture_deinit(&f);
}

TEST(three_threads_uneven_ranges) {
  fixture_t f;
  ASSERT_OK(fixture_init(&f, "3"));
  ASSERT_EQ(accel_cpu_pool_width(f.pool), 3u);
  const uint64_t counts[] = {2, 3, 4, 5, 11, 1000, 4096};
  for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
    run_and_check(test_result_, f.pool, &g_record, counts[i]);
    if (*test_result_ == TEST_FAIL) return;
  }
  fixture_deinit(&f);
}

// Loops started by several threads at once (streams share one pool): each
// finishes with every chunk run once.
typedef struct racer {
  accel_cpu_pool_t* pool;
  record_t record;
  uint64_t count;
  int loops;
  int failures;
} racer_t;

static void* racer_main(void* arg) {
  racer_t* r = arg;
  for (int l = 0; l < r->loops; l++) {
    memset(&r->record, 0, sizeof(r->record));
    r->record.spin = 2000;
    accel_cpu_pool_run(r->pool, r->count, record_chunk, &r->record);
    for (uint64_t i = 0; i < r->count; i++) {
      if (atomic_load(&r->record.runs[i]) != 1) r->failures++;
    }
    if (atomic_load(&r->record.shared_worker) != 0) r->failures++;
  }
  return NULL;
}

TEST(loops_from_three_threads_at_once) {
  fixture_t f;
  ASSERT_OK(fixture_init(&f, "3"));
  static racer_t racers[3];
  pthread_t threads[3];
  for (int i = 0; i < 3; i++) {
    racers[i] = (racer_t){.pool = f.pool, .count = 97u + 300u * (uint64_t)i,
                          .loops = 30};
    ASSERT_EQ(pthread_create(&threads[i], NULL, racer_main, &racers[i]), 0);
  }
  for (int i = 0; i < 3; i++) pthread_join(threads[i], NULL);
  for (int i = 0; i < 3; i++) ASSERT_EQ(racers[i].failures, 0);
  fixture_deinit(&f);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
