// SPDX-License-Identifier: MIT
//
// Stream controls (controls.h, plugin ABI 1.4): stream priorities (a sane
// range, clamping as CUDA does, priority streams that work and order like
// any other), host functions (they run after the work enqueued before them
// and hold up the work after them, once each and in order, across streams
// through events, and bad arguments are refused) and events created with
// ACCEL_EVENT_BLOCKING_SYNC. Host functions also run off the enqueuing
// thread even on an idle stream, and one that is running does not block
// accel_stream_query. A plugin without host functions reports them
// unsupported. Host functions here never call accel and never wait for
// the checking thread, as the contract asks.
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "conform.h"

enum { CONFORM_CONTROL_BYTES = 1 << 16 };

static void conform_control_nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

// A round trip through a fresh buffer on `stream`: true when it reads back
// what it wrote.
static bool conform_control_round_trip(conform_ctx_t* ctx,
                                       accel_stream_t* stream, uint64_t seed,
                                       accel_status_t* out_status) {
  unsigned char* in = conform_alloc(ctx, CONFORM_CONTROL_BYTES);
  unsigned char* out = conform_alloc(ctx, CONFORM_CONTROL_BYTES);
  accel_buffer_t* b = NULL;
  *out_status =
      in != NULL && out != NULL ? ACCEL_OK : ACCEL_ERROR_OUT_OF_MEMORY;
  if (*out_status != ACCEL_OK) return false;
  uint64_t rng = seed;
  conform_rand_bytes(&rng, in, CONFORM_CONTROL_BYTES);
  accel_status_t status =
      conform_buffer(ctx, ctx->device, CONFORM_CONTROL_BYTES, &b);
  if (status == ACCEL_OK) status = conform_heavy_work(ctx, stream, 2);
  if (status == ACCEL_OK) {
    status = accel_stream_write_buffer(stream, b, 0, in, CONFORM_CONTROL_BYTES);
  }
  if (status == ACCEL_OK) {
    status = accel_stream_read_buffer(stream, b, 0, out, CONFORM_CONTROL_BYTES);
  }
  if (status == ACCEL_OK) status = conform_stream_sync(ctx, stream);
  *out_status = status;
  return status == ACCEL_OK && memcmp(in, out, CONFORM_CONTROL_BYTES) == 0;
}

static conform_result_t conform_priority_range(conform_ctx_t* ctx,
                                               const void* arg) {
  (void)arg;
  int32_t least = 0, greatest = 0;
  accel_status_t status =
      accel_device_stream_priority_range(ctx->device, &least, &greatest);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "range");
  if (greatest > least) {
    return conform_report(ctx, CONFORM_FAIL,
                          "greatest priority %d is above the least %d",
                          (int)greatest, (int)least);
  }
  accel_stream_t* plain = NULL;
  status = conform_stream(ctx, ctx->device, &plain);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "stream");
  if (accel_stream_priority(plain) != 0) {
    return conform_report(ctx, CONFORM_FAIL,
                          "a plain stream has priority %d, not 0",
                          (int)accel_stream_priority(plain));
  }
  // Out of range on both sides: clamped to the ends, as CUDA does.
  const int32_t asked[] = {greatest - 1000, least + 1000, greatest, least};
  const int32_t want[] = {greatest, least, greatest, least};
  for (int i = 0; i < 4; i++) {
    accel_stream_t* s = NULL;
    status = accel_stream_create_with_priority(ctx->device, 0, asked[i], &s);
    if (status != ACCEL_OK) {
      return conform_fail_status(ctx, status, "create_with_priority");
    }
    conform_track_stream(ctx, s);
    if (accel_stream_priority(s) != want[i]) {
      return conform_report(ctx, CONFORM_FAIL,
                            "priority %d gave a stream of priority %d, "
                            "expected %d (range %d to %d)",
                            (int)asked[i], (int)accel_stream_priority(s),
                            (int)want[i], (int)least, (int)greatest);
    }
    if (!conform_control_round_trip(ctx, s, ctx->seed + 70 + (uint64_t)i,
                                    &status)) {
      return status != ACCEL_OK
                 ? conform_fail_wait(ctx, status, "round trip")
                 : conform_report(ctx, CONFORM_FAIL,
                                  "a stream of priority %d read back other "
                                  "data than it wrote",
                                  (int)want[i]);
    }
  }
  return conform_report(ctx, CONFORM_PASS, "priorities %d (least) to %d",
                        (int)least, (int)greatest);
}

// Work on a most urgent and a least urgent stream, ordered by an event
// both ways: the results are what stream order says.
static conform_result_t conform_priority_order(conform_ctx_t* ctx,
                                               const void* arg) {
  (void)arg;
  int32_t least = 0, greatest = 0;
  accel_status_t status =
      accel_device_stream_priority_range(ctx->device, &least, &greatest);
  accel_stream_t *hi = NULL, *lo = NULL;
  accel_buffer_t* b = NULL;
  unsigned char* in = conform_alloc(ctx, CONFORM_CONTROL_BYTES);
  unsigned char* out = conform_alloc(ctx, CONFORM_CONTROL_BYTES);
  if (in == NULL || out == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "host memory");
  }
  if (status == ACCEL_OK) {
    status = accel_stream_create_with_priority(ctx->device, 0, greatest, &hi);
    if (status == ACCEL_OK) conform_track_stream(ctx, hi);
  }
  if (status == ACCEL_OK) {
    status = accel_stream_create_with_priority(ctx->device, 0, least, &lo);
    if (status == ACCEL_OK) conform_track_stream(ctx, lo);
  }
  if (status == ACCEL_OK) {
    status = conform_buffer(ctx, ctx->device, CONFORM_CONTROL_BYTES, &b);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  uint64_t rng = ctx->seed + 80;
  conform_rand_bytes(&rng, in, CONFORM_CONTROL_BYTES);
  // The slow stream writes; the urgent one waits for it, then reads.
  status = conform_heavy_work(ctx, lo, 8);
  if (status == ACCEL_OK) {
    status = accel_stream_write_buffer(lo, b, 0, in, CONFORM_CONTROL_BYTES);
  }
  if (status == ACCEL_OK) status = accel_stream_wait_stream(hi, lo);
  if (status == ACCEL_OK) {
    status = accel_stream_read_buffer(hi, b, 0, out, CONFORM_CONTROL_BYTES);
  }
  if (status == ACCEL_OK) status = conform_stream_sync(ctx, hi);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "urgent read");
  if (memcmp(in, out, CONFORM_CONTROL_BYTES) != 0) {
    return conform_report(ctx, CONFORM_FAIL,
                          "the urgent stream read before the write it "
                          "waited for");
  }
  // And the other way: the urgent stream fills, the slow one waits.
  status = conform_heavy_work(ctx, hi, 4);
  if (status == ACCEL_OK) {
    status = accel_stream_fill_buffer(hi, b, 0, 0x3c, CONFORM_CONTROL_BYTES);
  }
  if (status == ACCEL_OK) status = accel_stream_wait_stream(lo, hi);
  if (status == ACCEL_OK) {
    status = accel_stream_read_buffer(lo, b, 0, out, CONFORM_CONTROL_BYTES);
  }
  if (status == ACCEL_OK) status = conform_stream_sync(ctx, lo);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "slow read");
  for (size_t i = 0; i < CONFORM_CONTROL_BYTES; i++) {
    if (out[i] != 0x3c) {
      return conform_report(ctx, CONFORM_FAIL,
                            "byte %zu is 0x%02x after the urgent fill", i,
                            out[i]);
    }
  }
  return conform_report(ctx, CONFORM_PASS,
                        "priorities %d and %d ordered by waits both ways",
                        (int)greatest, (int)least);
}

// What the host functions of the order check saw.
typedef struct conform_host_probe {
  const unsigned char* host;  // the read's destination
  unsigned char sentinel;
  unsigned char expected;
  atomic_int before_ok;  // first function: the read after it had not run
  atomic_int after_ok;   // second: the read before it had
  atomic_int calls;
} conform_host_probe_t;

static void conform_host_before(void* user) {
  conform_host_probe_t* p = user;
  bool ok = p->host[0] == p->sentinel;
  // Long enough for a runtime that ignores the order to run the read.
  conform_control_nap_ms(20);
  ok = ok && p->host[0] == p->sentinel &&
       p->host[CONFORM_CONTROL_BYTES - 1] == p->sentinel;
  atomic_store(&p->before_ok, ok ? 1 : 0);
  atomic_fetch_add(&p->calls, 1);
}

static void conform_host_after(void* user) {
  conform_host_probe_t* p = user;
  bool ok = p->host[0] == p->expected &&
            p->host[CONFORM_CONTROL_BYTES - 1] == p->expected;
  atomic_store(&p->after_ok, ok ? 1 : 0);
  atomic_fetch_add(&p->calls, 1);
}

// Returns UNSUPPORTED's result when the plugin has no host functions.
#define CONFORM_HOST_FUNC(ctx, stream, fn, user)                          \
  do {                                                                    \
    accel_status_t s_ = accel_stream_launch_host_func(stream, fn, user);  \
    if (s_ == ACCEL_ERROR_UNSUPPORTED) {                                  \
      return conform_report(ctx, CONFORM_UNSUPPORTED, "%s",               \
                            accel_last_error());                          \
    }                                                                     \
    if (s_ != ACCEL_OK) return conform_fail_status(ctx, s_, "host func"); \
  } while (0)

static conform_result_t conform_host_func_order(conform_ctx_t* ctx,
                                                const void* arg) {
  (void)arg;
  accel_stream_t* s = NULL;
  accel_buffer_t* b = NULL;
  unsigned char* host = conform_alloc(ctx, CONFORM_CONTROL_BYTES);
  conform_host_probe_t* p = conform_alloc(ctx, sizeof(*p));
  if (host == NULL || p == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "host memory");
  }
  p->host = host;
  p->sentinel = 0xa5;
  p->expected = 0x5a;
  memset(host, p->sentinel, CONFORM_CONTROL_BYTES);
  accel_status_t status = conform_stream(ctx, ctx->device, &s);
  if (status == ACCEL_OK) {
    status = conform_buffer(ctx, ctx->device, CONFORM_CONTROL_BYTES, &b);
  }
  if (status == ACCEL_OK) status = conform_heavy_work(ctx, s, 6);
  if (status == ACCEL_OK) {
    status =
        accel_stream_fill_buffer(s, b, 0, p->expected, CONFORM_CONTROL_BYTES);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  // before, read into `host`, after: the read may not pass either.
  CONFORM_HOST_FUNC(ctx, s, conform_host_before, p);
  status = accel_stream_read_buffer(s, b, 0, host, CONFORM_CONTROL_BYTES);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "read");
  CONFORM_HOST_FUNC(ctx, s, conform_host_after, p);
  status = conform_stream_sync(ctx, s);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
  if (atomic_load(&p->calls) != 2) {
    return conform_report(ctx, CONFORM_FAIL,
                          "2 host functions ran %d times after a "
                          "synchronize",
                          atomic_load(&p->calls));
  }
  if (!atomic_load(&p->before_ok)) {
    return conform_report(ctx, CONFORM_FAIL,
                          "a read enqueued after a host function ran "
                          "before the function returned");
  }
  if (!atomic_load(&p->after_ok)) {
    return conform_report(ctx, CONFORM_FAIL,
                          "a host function ran before the read enqueued "
                          "before it had finished");
  }
  if (host[0] != p->expected) {
    return conform_report(ctx, CONFORM_FAIL, "the read got 0x%02x", host[0]);
  }
  return conform_report(ctx, CONFORM_PASS,
                        "after earlier work, before later work");
}

// Counts calls and checks their order, per stream.
typedef struct conform_host_counter {
  atomic_uint next;
  atomic_uint wrong;
} conform_host_counter_t;

typedef struct conform_host_ticket {
  conform_host_counter_t* counter;
  unsigned index;
} conform_host_ticket_t;

static void conform_host_count(void* user) {
  conform_host_ticket_t* t = user;
  if (atomic_load(&t->counter->next) != t->index) {
    atomic_fetch_add(&t->counter->wrong, 1);
  }
  atomic_store(&t->counter->next, t->index + 1);
}

static conform_result_t conform_host_func_many(conform_ctx_t* ctx,
                                               const void* arg) {
  (void)arg;
  enum { N = 2000 };
  int32_t least = 0, greatest = 0;
  accel_status_t status =
      accel_device_stream_priority_range(ctx->device, &least, &greatest);
  accel_stream_t* s[2] = {NULL, NULL};
  accel_buffer_t* b[2] = {NULL, NULL};  // one per stream: no race
  conform_host_ticket_t* tickets = conform_alloc(ctx, 2 * N * sizeof(*tickets));
  conform_host_counter_t* counters = conform_alloc(ctx, 2 * sizeof(*counters));
  if (tickets == NULL || counters == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "host memory");
  }
  if (status == ACCEL_OK) status = conform_stream(ctx, ctx->device, &s[0]);
  if (status == ACCEL_OK) {
    status = accel_stream_create_with_priority(ctx->device, 0, greatest, &s[1]);
    if (status == ACCEL_OK) conform_track_stream(ctx, s[1]);
  }
  for (int k = 0; k < 2 && status == ACCEL_OK; k++) {
    status = conform_buffer(ctx, ctx->device, 4096, &b[k]);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  for (unsigned i = 0; i < N; i++) {
    for (int k = 0; k < 2; k++) {
      conform_host_ticket_t* t = &tickets[k * N + i];
      t->counter = &counters[k];
      t->index = i;
      CONFORM_HOST_FUNC(ctx, s[k], conform_host_count, t);
      if (i % 50 == 0) {
        status = accel_stream_fill_buffer(s[k], b[k], 0, (uint8_t)i, 4096);
        if (status != ACCEL_OK) return conform_fail_status(ctx, status, "fill");
      }
    }
  }
  for (int k = 0; k < 2; k++) {
    status = conform_stream_sync(ctx, s[k]);
    if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
  }
  for (int k = 0; k < 2; k++) {
    unsigned ran = atomic_load(&counters[k].next);
    unsigned wrong = atomic_load(&counters[k].wrong);
    if (ran != N || wrong != 0) {
      return conform_report(ctx, CONFORM_FAIL,
                            "stream %d: the last host function to run was "
                            "number %u of %d; %u ran out of order",
                            k, ran, N, wrong);
    }
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%d host functions on each of 2 streams, in order", N);
}

// A host function on one stream; another stream waits for an event
// recorded after it, then runs its own.
typedef struct conform_host_pair {
  atomic_int first;   // the first stream's function returned
  atomic_int second;  // the second's saw the first's done
  atomic_int calls;
} conform_host_pair_t;

static void conform_host_first(void* user) {
  conform_host_pair_t* p = user;
  conform_control_nap_ms(20);
  atomic_store(&p->first, 1);
  atomic_fetch_add(&p->calls, 1);
}

static void conform_host_second(void* user) {
  conform_host_pair_t* p = user;
  atomic_store(&p->second, atomic_load(&p->first));
  atomic_fetch_add(&p->calls, 1);
}

static conform_result_t conform_host_func_cross(conform_ctx_t* ctx,
                                                const void* arg) {
  (void)arg;
  accel_stream_t *a = NULL, *b = NULL;
  accel_event_t* e = NULL;
  conform_host_pair_t* p = conform_alloc(ctx, sizeof(*p));
  if (p == NULL) return conform_report(ctx, CONFORM_FAIL, "host memory");
  accel_status_t status = conform_stream(ctx, ctx->device, &a);
  if (status == ACCEL_OK) status = conform_stream(ctx, ctx->device, &b);
  if (status == ACCEL_OK) status = conform_event(ctx, ctx->device, 0, &e);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  CONFORM_HOST_FUNC(ctx, a, conform_host_first, p);
  status = accel_event_record(e, a);
  if (status == ACCEL_OK) status = accel_stream_wait_event(b, e);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "wait");
  CONFORM_HOST_FUNC(ctx, b, conform_host_second, p);
  status = conform_stream_sync(ctx, b);
  if (status == ACCEL_OK) status = conform_stream_sync(ctx, a);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "streams");
  if (atomic_load(&p->calls) != 2 || !atomic_load(&p->second)) {
    return conform_report(ctx, CONFORM_FAIL,
                          "a host function behind an event wait ran before "
                          "the host function the event was recorded after "
                          "(%d calls)",
                          atomic_load(&p->calls));
  }
  return conform_report(ctx, CONFORM_PASS, "ordered through an event");
}

static void conform_host_nothing(void* user) { (void)user; }

static conform_result_t conform_host_func_errors(conform_ctx_t* ctx,
                                                 const void* arg) {
  (void)arg;
  accel_stream_t* s = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &s);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "stream");
  status = accel_stream_launch_host_func(s, NULL, NULL);
  if (status != ACCEL_ERROR_INVALID_ARGUMENT) {
    return conform_report(ctx, CONFORM_FAIL,
                          "a NULL function gave %s, not "
                          "ACCEL_ERROR_INVALID_ARGUMENT",
                          accel_status_string(status));
  }
  status = accel_stream_launch_host_func(NULL, conform_host_nothing, NULL);
  if (status != ACCEL_ERROR_INVALID_ARGUMENT) {
    return conform_report(ctx, CONFORM_FAIL,
                          "a NULL stream gave %s, not "
                          "ACCEL_ERROR_INVALID_ARGUMENT",
                          accel_status_string(status));
  }
  CONFORM_HOST_FUNC(ctx, s, conform_host_nothing, NULL);
  status = conform_stream_sync(ctx, s);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
  return conform_report(ctx, CONFORM_PASS, "NULL function and stream refused");
}

// What the host function of the idle check saw: the thread it ran on.
typedef struct conform_host_thread {
  pthread_t thread;  // written before `calls` is bumped
  atomic_int calls;
} conform_host_thread_t;

static void conform_host_record_thread(void* user) {
  conform_host_thread_t* p = user;
  p->thread = pthread_self();
  atomic_fetch_add(&p->calls, 1);  // seq_cst: publishes `thread`
}

// controls.h: a host function "runs on a thread of the backend's choosing
// (never inside this call)". The other host_func checks enqueue behind
// heavy work, so a plugin that calls the function inline only when the
// stream is idle (nothing to order it after) slips past them. Here the
// stream is fresh and idle. Whether the function had run when the enqueue
// returned proves nothing (a fast worker may have run it already), so the
// thread it ran on decides: never the enqueuing one.
static conform_result_t conform_host_func_idle(conform_ctx_t* ctx,
                                               const void* arg) {
  (void)arg;
  accel_stream_t* s = NULL;
  conform_host_thread_t* p = conform_alloc(ctx, sizeof(*p));
  if (p == NULL) return conform_report(ctx, CONFORM_FAIL, "host memory");
  atomic_init(&p->calls, 0);
  accel_status_t status = conform_stream(ctx, ctx->device, &s);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "stream");
  // Idle for certain: nothing was ever enqueued, and a synchronize of an
  // empty stream returns at once.
  status = conform_stream_sync(ctx, s);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "idle stream");
  pthread_t self = pthread_self();
  CONFORM_HOST_FUNC(ctx, s, conform_host_record_thread, p);
  int calls_at_return = atomic_load(&p->calls);
  if (calls_at_return > 0 && pthread_equal(p->thread, self)) {
    return conform_report(ctx, CONFORM_FAIL,
                          "a host function enqueued on an idle stream ran "
                          "inside accel_stream_launch_host_func, on the "
                          "calling thread (controls.h: never inside this "
                          "call)");
  }
  status = conform_stream_sync(ctx, s);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
  int calls = atomic_load(&p->calls);
  if (calls != 1) {
    return conform_report(ctx, CONFORM_FAIL,
                          "a host function on an idle stream ran %d times "
                          "by a synchronize",
                          calls);
  }
  if (pthread_equal(p->thread, self)) {
    return conform_report(ctx, CONFORM_FAIL,
                          "a host function enqueued on an idle stream ran "
                          "on the enqueuing thread (controls.h: on a thread "
                          "of the backend's choosing, never inside this "
                          "call)");
  }
  return conform_report(ctx, CONFORM_PASS,
                        "on an idle stream: once, off the enqueuing thread%s",
                        calls_at_return ? " (already done at return)" : "");
}

// A host function that naps with the stream held up: `started` when it
// begins, `finished` when it is about to return.
typedef struct conform_host_nap {
  atomic_int started;
  atomic_int finished;
  atomic_int calls;
} conform_host_nap_t;

enum {
  CONFORM_HOST_NAP_MS = 300,       // how long the function runs
  CONFORM_QUERY_LIMIT_MS = 100,    // how long a query may take meanwhile
};

static void conform_host_long_nap(void* user) {
  conform_host_nap_t* p = user;
  atomic_store(&p->started, 1);
  conform_control_nap_ms(CONFORM_HOST_NAP_MS);
  atomic_store(&p->finished, 1);
  atomic_fetch_add(&p->calls, 1);
}

// accel.h: accel_stream_query reports "whether all enqueued work has
// finished, without blocking". A worker that keeps the stream's lock
// while a host function runs makes the query wait for the whole function
// (300 ms here); cuStreamQuery returns at once. The query must come back
// well inside the nap, and not done (the function has not returned).
static conform_result_t conform_host_func_query(conform_ctx_t* ctx,
                                                const void* arg) {
  (void)arg;
  accel_stream_t* s = NULL;
  conform_host_nap_t* p = conform_alloc(ctx, sizeof(*p));
  if (p == NULL) return conform_report(ctx, CONFORM_FAIL, "host memory");
  atomic_init(&p->started, 0);
  atomic_init(&p->finished, 0);
  atomic_init(&p->calls, 0);
  accel_status_t status = conform_stream(ctx, ctx->device, &s);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "stream");
  CONFORM_HOST_FUNC(ctx, s, conform_host_long_nap, p);
  // Bounded wait for the function to begin; it touches `p` until it
  // returns, so on a timeout leave the check hung (its memory leaked)
  // rather than free `p` under it.
  double deadline = conform_now() + ctx->timeout_s;
  while (!atomic_load(&p->started)) {
    if (conform_now() > deadline) {
      ctx->hung = true;  // leaks `p` and the stream (util.c)
      return conform_report(ctx, CONFORM_FAIL,
                            "a host function on an idle stream had not "
                            "started after %.0f s",
                            ctx->timeout_s);
    }
    conform_control_nap_ms(1);
  }
  bool done = true;
  double t0 = conform_now();
  status = accel_stream_query(s, &done);
  double query_ms = (conform_now() - t0) * 1e3;
  // Read after the query returned: if the function had not finished by
  // then, the stream cannot have been done when the query looked.
  int finished = atomic_load(&p->finished);
  if (status != ACCEL_OK) {
    accel_status_t wait = conform_stream_sync(ctx, s);
    if (wait != ACCEL_OK) return conform_fail_wait(ctx, wait, "stream");
    return conform_fail_status(ctx, status, "query");
  }
  accel_status_t wait = conform_stream_sync(ctx, s);
  if (wait != ACCEL_OK) return conform_fail_wait(ctx, wait, "stream");
  // A query that waited for the function returned after it had
  // finished; one that was only slow to be scheduled (a loaded machine)
  // returned while the function still ran, and blocked on nothing.
  if (query_ms > CONFORM_QUERY_LIMIT_MS && finished) {
    return conform_report(ctx, CONFORM_FAIL,
                          "accel_stream_query took %.0f ms while a %d ms "
                          "host function ran, and returned only after it "
                          "had (accel.h: without blocking; limit %d ms)",
                          query_ms, CONFORM_HOST_NAP_MS,
                          CONFORM_QUERY_LIMIT_MS);
  }
  if (done && !finished) {
    return conform_report(ctx, CONFORM_FAIL,
                          "accel_stream_query said done while a host "
                          "function on the stream was still running");
  }
  if (atomic_load(&p->calls) != 1) {
    return conform_report(ctx, CONFORM_FAIL,
                          "the host function ran %d times by a synchronize",
                          atomic_load(&p->calls));
  }
  return conform_report(ctx, CONFORM_PASS,
                        "query returned in %.1f ms during a %d ms host "
                        "function",
                        query_ms, CONFORM_HOST_NAP_MS);
}

static conform_result_t conform_event_blocking_sync(conform_ctx_t* ctx,
                                                    const void* arg) {
  (void)arg;
  accel_event_flags_t flags = ACCEL_EVENT_BLOCKING_SYNC;
  if (ctx->info.caps & ACCEL_DEVICE_CAP_EVENT_TIMING) {
    flags |= ACCEL_EVENT_TIMING;
  }
  accel_stream_t* s = NULL;
  accel_event_t *start = NULL, *end = NULL;
  accel_buffer_t* b = NULL;
  unsigned char* in = conform_alloc(ctx, CONFORM_CONTROL_BYTES);
  if (in == NULL) return conform_report(ctx, CONFORM_FAIL, "host memory");
  uint64_t rng = ctx->seed + 90;
  conform_rand_bytes(&rng, in, CONFORM_CONTROL_BYTES);
  accel_status_t status = conform_stream(ctx, ctx->device, &s);
  if (status == ACCEL_OK)
    status = conform_event(ctx, ctx->device, flags, &start);
  if (status == ACCEL_OK) status = conform_event(ctx, ctx->device, flags, &end);
  if (status == ACCEL_OK) {
    status = conform_buffer(ctx, ctx->device, CONFORM_CONTROL_BYTES, &b);
  }
  if (status == ACCEL_OK) status = accel_event_record(start, s);
  if (status == ACCEL_OK) status = conform_heavy_work(ctx, s, 10);
  if (status == ACCEL_OK) {
    status = accel_stream_write_buffer(s, b, 0, in, CONFORM_CONTROL_BYTES);
  }
  if (status == ACCEL_OK) status = accel_event_record(end, s);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  status = conform_event_sync(ctx, end);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "synchronize");
  bool done = false;
  status = accel_event_query(end, &done);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "query");
  if (!done) {
    return conform_report(ctx, CONFORM_FAIL,
                          "not complete right after its synchronize");
  }
  if (!conform_verify(ctx, b, in, CONFORM_CONTROL_BYTES,
                      "data written before the record")) {
    return CONFORM_FAIL;
  }
  if (flags & ACCEL_EVENT_TIMING) {
    float ms = -1;
    status = accel_event_elapsed_ms(start, end, &ms);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "elapsed");
    if (!(ms >= 0)) {
      return conform_report(ctx, CONFORM_FAIL, "elapsed time %g ms", ms);
    }
  }
  return conform_report(ctx, CONFORM_PASS, "records, waits%s",
                        (flags & ACCEL_EVENT_TIMING) ? " and times" : "");
}

static const conform_check_t conform_control_table[] = {
    {"control.priority.range", conform_priority_range, NULL},
    {"control.priority.order", conform_priority_order, NULL},
    {"control.host_func.order", conform_host_func_order, NULL},
    {"control.host_func.many", conform_host_func_many, NULL},
    {"control.host_func.cross_stream", conform_host_func_cross, NULL},
    {"control.host_func.errors", conform_host_func_errors, NULL},
    {"control.host_func.idle", conform_host_func_idle, NULL},
    {"control.host_func.query_nonblocking", conform_host_func_query, NULL},
    {"control.event.blocking_sync", conform_event_blocking_sync, NULL},
};

const conform_check_t* conform_control_checks(size_t* out_count) {
  *out_count = sizeof(conform_control_table) / sizeof(conform_control_table[0]);
  return conform_control_table;
}
