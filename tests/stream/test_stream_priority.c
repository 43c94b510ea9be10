// SPDX-License-Identifier: MIT
//
// Stream priorities and host functions on cpu:0 (controls.h):
// - the range is -5..0, out-of-range priorities are clamped as CUDA does,
//   plain streams have priority 0, bad arguments are refused;
// - a host function runs after the work enqueued before it (it sees a
//   long random fill finished) and the work enqueued after it waits for it
//   (a copy queued behind a blocked host function has not happened), also
//   across streams through accel_stream_wait_stream; thousands run once
//   each, in order;
// - with ACCEL_CPU_THREADS=1 (one run slot: CMake runs
//   `priority_overtakes_queued_work` so), a task of a priority -5 stream
//   queued behind running work starts before the priority 0 work queued
//   earlier; once no urgent stream is left, streams run side by side again.
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel/accel.h"
#include "accel/philox.h"
#include "loader_util.h"
#include "test.h"

#define BIG ((size_t)1 << 24)

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

// Waits up to `seconds` for `*flag` to become non-zero.
static bool wait_flag(atomic_int* flag, double seconds) {
  double end = now_s() + seconds;
  while (atomic_load(flag) == 0) {
    if (now_s() > end) return false;
    nap_ms(1);
  }
  return true;
}

TEST(priority_range_and_clamping) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  int32_t least = 7, greatest = 7;
  ASSERT_OK(accel_device_stream_priority_range(d, &least, &greatest));
  ASSERT_EQ(least, 0);
  ASSERT_EQ(greatest, -5);
  ASSERT_STATUS(accel_device_stream_priority_range(NULL, &least, &greatest),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(least, 0);
  ASSERT_STATUS(accel_device_stream_priority_range(d, NULL, &greatest),
                ACCEL_ERROR_INVALID_ARGUMENT);
  static const int32_t asked[] = {-100, -5, -2, 0, 3, INT32_MAX, INT32_MIN};
  static const int32_t got[] = {-5, -5, -2, 0, 0, 0, -5};
  for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
    accel_stream_t* s = NULL;
    ASSERT_OK(accel_stream_create_with_priority(d, 0, asked[i], &s));
    ASSERT_EQ(accel_stream_priority(s), got[i]);
    // The stream works like any other.
    accel_buffer_t* b = NULL;
    ASSERT_OK(accel_buffer_create(d, 4096, &b));
    ASSERT_OK(accel_stream_fill_buffer(s, b, 0, 0x5a, 4096));
    unsigned char back[4096];
    ASSERT_OK(accel_stream_read_buffer(s, b, 0, back, sizeof(back)));
    ASSERT_OK(accel_stream_synchronize(s));
    ASSERT_EQ(back[0], 0x5a);
    ASSERT_EQ(back[4095], 0x5a);
    accel_buffer_release(b);
    accel_stream_release(s);
  }
  accel_stream_t* s = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_EQ(accel_stream_priority(s), 0);
  accel_stream_release(s);
  ASSERT_EQ(accel_stream_priority(NULL), 0);
  s = (accel_stream_t*)&s;
  ASSERT_STATUS(accel_stream_create_with_priority(NULL, 0, 0, &s),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_NULL(s);
  ASSERT_STATUS(accel_stream_create_with_priority(d, 1, -1, &s),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_stream_create_with_priority(d, 0, -1, NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  accel_device_release(d);
}

// What the blocking host function of host_func_runs_in_stream_order sees.
typedef struct probe {
  const float* data;  // the buffer, host-addressable on the CPU
  float last;         // its last element when the function ran
  float first;
  atomic_int started;
  atomic_int release;
  atomic_int calls;
  atomic_int timed_out;  // the release never came
} probe_t;

static void probe_fn(void* user) {
  probe_t* p = user;
  p->last = p->data[BIG - 1];
  p->first = p->data[0];
  atomic_fetch_add(&p->calls, 1);
  atomic_store(&p->started, 1);
  wait_flag(&p->release, 30.0);
}

static float reference_uniform(size_t i) {
  accel_philox_block_t b = accel_philox_at(9, 0, i / 4);
  return accel_philox_as_f32(
      accel_philox_element(b, (uint32_t)(i % 4), ACCEL_PHILOX_UNIFORM,
                           ACCEL_PHILOX_F32, 1.0f, 2.0f));
}

TEST(host_func_runs_in_stream_order) {
  accel_device_t* d = NULL;
  accel_stream_t* s = NULL;
  accel_buffer_t* buf = NULL;
  accel_event_t* after = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_buffer_create(d, BIG * 4, &buf));
  ASSERT_OK(accel_event_create(d, 0, &after));
  uint64_t address = 0;
  ASSERT_OK(accel_buffer_query_address(buf, 0, &address));
  static probe_t p;  // static: a failed assertion leaves the worker on it
  memset(&p, 0, sizeof(p));
  p.data = (const float*)(uintptr_t)address;
  ASSERT_OK(accel_stream_fill_buffer(s, buf, 0, 0, BIG * 4));
  ASSERT_OK(accel_op_rng_uniform(s, buf, 0, ACCEL_DTYPE_F32, BIG, 9, 0, 1, 2));
  ASSERT_OK(accel_stream_launch_host_func(s, probe_fn, &p));
  const float mark = -7.0f;
  ASSERT_OK(accel_stream_write_buffer(s, buf, 0, &mark, sizeof(mark)));
  ASSERT_OK(accel_event_record(after, s));
  ASSERT(wait_flag(&p.started, 30.0));
  // Earlier work finished before the function ran...
  ASSERT(p.last == reference_uniform(BIG - 1));
  ASSERT(p.first == reference_uniform(0));
  // ...and later work waits for it to return.
  nap_ms(20);
  bool done = true;
  ASSERT_OK(accel_event_query(after, &done));
  ASSERT(!done);
  ASSERT(p.data[0] == reference_uniform(0));
  atomic_store(&p.release, 1);
  ASSERT_OK(accel_stream_synchronize(s));
  ASSERT(p.data[0] == mark);
  ASSERT_EQ(atomic_load(&p.calls), 1);
  accel_event_release(after);
  accel_buffer_release(buf);
  accel_stream_release(s);
  accel_device_release(d);
}

// Counts calls and checks they come in launch order.
typedef struct counter {
  atomic_uint next;  // index the next call must carry
  atomic_uint wrong;
} counter_t;

typedef struct ticket {
  counter_t* counter;
  unsigned index;
} ticket_t;

static void ticket_fn(void* user) {
  ticket_t* t = user;
  unsigned want = atomic_load(&t->counter->next);
  if (want != t->index) atomic_fetch_add(&t->counter->wrong, 1);
  atomic_store(&t->counter->next, t->index + 1);
}

TEST(host_func_many_in_order) {
  enum { N = 5000 };
  accel_device_t* d = NULL;
  accel_stream_t *a = NULL, *b = NULL;
  accel_buffer_t* buf[2] = {NULL, NULL};  // one per stream: no race
  ASSERT_OK(accel_device_open("cpu:0", &d));
  ASSERT_OK(accel_stream_create(d, 0, &a));
  ASSERT_OK(accel_stream_create_with_priority(d, 0, -3, &b));
  ASSERT_OK(accel_buffer_create(d, 1 << 20, &buf[0]));
  ASSERT_OK(accel_buffer_create(d, 1 << 20, &buf[1]));
  ticket_t* tickets = calloc(2 * N, sizeof(*tickets));
  ASSERT_NOT_NULL(tickets);
  counter_t counters[2];
  memset(counters, 0, sizeof(counters));
  for (unsigned i = 0; i < N; i++) {
    for (int k = 0; k < 2; k++) {
      ticket_t* t = &tickets[k * N + i];
      t->counter = &counters[k];
      t->index = i;
      accel_stream_t* s = k == 0 ? a : b;
      ASSERT_OK(accel_stream_launch_host_func(s, ticket_fn, t));
      if (i % 64 == 0) {
        ASSERT_OK(accel_stream_fill_buffer(s, buf[k], 0, (uint8_t)i, 1 << 20));
      }
    }
  }
  ASSERT_OK(accel_device_synchronize(d));
  for (int k = 0; k < 2; k++) {
    ASSERT_EQ(atomic_load(&counters[k].next), (unsigned)N);
    ASSERT_EQ(atomic_load(&counters[k].wrong), 0u);
  }
  free(tickets);
  accel_buffer_release(buf[0]);
  accel_buffer_release(buf[1]);
  accel_stream_release(a);
  accel_stream_release(b);
  accel_device_release(d);
}

static void flag_fn(void* user) { atomic_store((atomic_int*)user, 1); }

// Blocks until `user` (a probe) is released; flags that it started.
static void gate_fn(void* user) {
  probe_t* p = user;
  atomic_store(&p->started, 1);
  if (!wait_flag(&p->release, 10.0)) atomic_store(&p->timed_out, 1);
  atomic_fetch_add(&p->calls, 1);
}

TEST(host_func_ordered_across_streams) {
  accel_device_t* d = NULL;
  accel_stream_t *a = NULL, *b = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  ASSERT_OK(accel_stream_create(d, 0, &a));
  ASSERT_OK(accel_stream_create(d, 0, &b));
  static probe_t p;
  memset(&p, 0, sizeof(p));
  static atomic_int ran;
  atomic_store(&ran, 0);
  ASSERT_OK(accel_stream_launch_host_func(a, gate_fn, &p));
  ASSERT_OK(accel_stream_wait_stream(b, a));
  ASSERT_OK(accel_stream_launch_host_func(b, flag_fn, &ran));
  ASSERT(wait_flag(&p.started, 30.0));
  nap_ms(20);
  ASSERT_EQ(atomic_load(&ran), 0);  // b waits for a's host function
  atomic_store(&p.release, 1);
  ASSERT_OK(accel_stream_synchronize(b));
  ASSERT_EQ(atomic_load(&ran), 1);
  ASSERT_EQ(atomic_load(&p.calls), 1);
  accel_stream_release(a);
  accel_stream_release(b);
  accel_device_release(d);
}

TEST(host_func_errors) {
  accel_device_t* d = NULL;
  accel_stream_t* s = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  ASSERT_OK(accel_stream_create(d, 0, &s));
  atomic_int ran = 0;
  ASSERT_STATUS(accel_stream_launch_host_func(NULL, flag_fn, &ran),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_stream_launch_host_func(s, NULL, &ran),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "accel_stream_launch_host_func");
  // NULL user data is the caller's business.
  ASSERT_OK(accel_stream_launch_host_func(s, flag_fn, &ran));
  ASSERT_OK(accel_stream_synchronize(s));
  ASSERT_EQ(atomic_load(&ran), 1);
  accel_stream_release(s);
  accel_device_release(d);
}

// The order host functions of the overtaking test ran in.
typedef struct order_log {
  atomic_uint count;
  char names[8];
} order_log_t;

typedef struct order_entry {
  order_log_t* log;
  char name;
} order_entry_t;

static void order_fn(void* user) {
  order_entry_t* e = user;
  unsigned i = atomic_fetch_add(&e->log->count, 1);
  if (i < sizeof(e->log->names)) e->log->names[i] = e->name;
}

// Host function `a`: blocks the one run slot until released.
typedef struct blocker {
  probe_t probe;
  order_entry_t entry;
} blocker_t;

static void blocker_fn(void* user) {
  blocker_t* b = user;
  gate_fn(&b->probe);
  order_fn(&b->entry);
}

TEST(priority_overtakes_queued_work) {
  const char* threads = getenv("ACCEL_CPU_THREADS");
  if (threads == NULL || strcmp(threads, "1") != 0) {
    SKIP("needs ACCEL_CPU_THREADS=1 (one run slot)");
  }
  accel_device_t* d = NULL;
  accel_stream_t *low = NULL, *low2 = NULL, *high = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  ASSERT_OK(accel_stream_create(d, 0, &low));
  ASSERT_OK(accel_stream_create_with_priority(d, 0, 0, &low2));
  ASSERT_OK(accel_stream_create_with_priority(d, 0, -5, &high));
  static order_log_t log;
  static blocker_t blocker;
  blocker.entry = (order_entry_t){&log, 'a'};
  static order_entry_t b = {&log, 'b'}, c = {&log, 'c'}, h = {&log, 'H'};
  ASSERT_OK(accel_stream_launch_host_func(low, blocker_fn, &blocker));
  ASSERT(wait_flag(&blocker.probe.started, 30.0));
  // Queued while `a` holds the slot: low2's task first, then low's next,
  // then the urgent stream's.
  ASSERT_OK(accel_stream_launch_host_func(low2, order_fn, &b));
  ASSERT_OK(accel_stream_launch_host_func(low, order_fn, &c));
  ASSERT_OK(accel_stream_launch_host_func(high, order_fn, &h));
  nap_ms(200);                             // every worker is at the gate by now
  ASSERT_EQ(atomic_load(&log.count), 0u);  // nothing ran beside `a`
  atomic_store(&blocker.probe.release, 1);
  ASSERT_OK(accel_device_synchronize(d));
  ASSERT_EQ(atomic_load(&log.count), 4u);
  printf("  order: %.4s\n", log.names);
  ASSERT_EQ(log.names[0], 'a');
  ASSERT_EQ(log.names[1], 'H');  // overtook b and c
  ASSERT(memcmp(log.names + 2, "bc", 2) == 0 ||
         memcmp(log.names + 2, "cb", 2) == 0);
  accel_stream_release(high);
  // No urgent stream left: the gate is off, so two streams run side by
  // side again even with one pool thread (`a` waits for `b`'s function).
  static probe_t wait;
  ASSERT_OK(accel_stream_launch_host_func(low, gate_fn, &wait));
  ASSERT(wait_flag(&wait.started, 30.0));
  ASSERT_OK(accel_stream_launch_host_func(low2, flag_fn, &wait.release));
  ASSERT_OK(accel_stream_synchronize(low));
  ASSERT_EQ(atomic_load(&wait.calls), 1);
  ASSERT_EQ(atomic_load(&wait.timed_out), 0);
  accel_stream_release(low);
  accel_stream_release(low2);
  accel_device_release(d);
}

// Run alone with ACCEL_TEST_FX_GOOD (CTest stream_priority_defaults): the
// loader fixture "fxgood" has neither priorities nor host functions, so
// the core's defaults answer: one priority, and UNSUPPORTED host
// functions naming the call and the device.
TEST(defaults_without_the_entries) {
  const char* good = lu_env_path("ACCEL_TEST_FX_GOOD");
  if (good == NULL) SKIP("ACCEL_TEST_FX_GOOD is not set");
  lu_restart(good);
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("fxgood:0", &d));
  int32_t least = 5, greatest = 5;
  ASSERT_OK(accel_device_stream_priority_range(d, &least, &greatest));
  ASSERT_EQ(least, 0);
  ASSERT_EQ(greatest, 0);
  accel_stream_t* s = NULL;
  ASSERT_OK(accel_stream_create_with_priority(d, 0, -3, &s));
  ASSERT_EQ(accel_stream_priority(s), 0);
  atomic_int ran = 0;
  ASSERT_STATUS(accel_stream_launch_host_func(s, flag_fn, &ran),
                ACCEL_ERROR_UNSUPPORTED);
  ASSERT_STR_CONTAINS(accel_last_error(),
                      "accel_stream_launch_host_func: fxgood:0");
  ASSERT_STR_CONTAINS(accel_last_error(), "launch_host_func");
  ASSERT_EQ(atomic_load(&ran), 0);
  accel_stream_release(s);
  accel_device_release(d);
}

// ACCEL_TEST_FX_HALFPRIO: a table with one of the two priority entries is
// refused at load, with the reason in the report.
TEST(half_a_priority_pair_is_refused) {
  const char* half = lu_env_path("ACCEL_TEST_FX_HALFPRIO");
  if (half == NULL) SKIP("ACCEL_TEST_FX_HALFPRIO is not set");
  lu_restart(half);
  accel_plugin_report_t r;
  memset(&r, 0, sizeof(r));
  r.struct_size = sizeof(r);
  ASSERT_EQ(lu_report_find(half, &r), 1);
  ASSERT_EQ(r.status, ACCEL_ERROR_INCOMPATIBLE);
  ASSERT_STR_CONTAINS(r.message,
                      "stream_priority_range and "
                      "stream_create_priority must be set "
                      "together");
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
