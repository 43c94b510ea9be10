// SPDX-License-Identifier: MIT
//
// stream.shared_threads: two threads share one stream with small work.
//
// plugin.h: "Threading: the core calls plugin entries from any thread,
// concurrently" and, for stream_synchronize, "Several threads may wait on
// one stream at once, and each returns". So two threads may enqueue on one
// stream and synchronize it at the same time, on every backend (a CUDA or
// HIP stream and an OpenCL queue allow it too); only the interleaving
// differs.
//
// The interleavings this check is after are those of a plugin that runs
// small work on an idle stream on the calling thread, as the CPU plugin
// does (plugins/cpu/stream.c, "Inline execution"): while thread A's inline
// copy runs, thread B's work is queued behind it and the worker must be
// woken when A's copy ends, and B's synchronize, waiting for A's copy,
// must be woken by its end too. A plugin that forgets either hangs B, but
// only when B comes in while A's work runs: one thread alone, or two
// threads on two streams, never sees it. So each round, after a barrier,
// one of five patterns runs: both threads enqueue at once (racing), or
// one leads with a copy of up to 1 MiB (the most the CPU plugin runs
// inline, ACCEL_CPU_INLINE_BYTES) and the other waits until
// stream_query says "not done" (the lead's work is in flight) and then
// either only synchronizes (it watches) or enqueues work of its own
// behind it (it follows) and synchronizes. Every thread with work reads
// its region back before its synchronize, and the read must have landed
// when the synchronize returns. Sizes vary (4 KiB, just over 64 KiB,
// 256 KiB, 1 MiB), so the CPU plugin takes both of its inline paths (the
// mutex held throughout up to 64 KiB, released above).
//
// Every synchronize runs on a helper thread bounded by --timeout (as in
// stream.synchronize_busy), so a hang is a FAIL naming the round. Between
// two barriers every wait is bounded, so both threads reach the next
// barrier; a failure stops both there.
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

enum {
  CONFORM_SHARED_ROUNDS = 400,
  CONFORM_SHARED_MS = 1000,         // no round starts after this
  CONFORM_SHARED_REGION = 1 << 20,  // each thread's part of the buffer
  CONFORM_SHARED_SHIFT = 251,       // source offsets: data differ per round
};

// Work sizes: the CPU plugin's held inline path (up to 64 KiB), its
// released one (up to 1 MiB), odd sizes so that no whole-word tail hides.
static const size_t conform_shared_sizes[] = {
    4096 + 7, (64 << 10) + 1, (256 << 10) + 3, CONFORM_SHARED_REGION};

typedef enum {
  CONFORM_ROLE_WORK,    // enqueues at once (leads, or races the other)
  CONFORM_ROLE_WATCH,   // once the other's work is in flight: synchronizes
  CONFORM_ROLE_FOLLOW,  // once the other's work is in flight: enqueues
} conform_role_t;

static const char* const conform_role_names[] = {
    "enqueued at once", "only synchronized", "enqueued behind"};

// Each kind ends with a read back of the thread's region to the host.
typedef enum {
  CONFORM_KIND_WRITE,  // from the host, then the read back
  CONFORM_KIND_FILL,   // then the read back
  // The read back alone, of what the region holds: one operation, so
  // work enqueued behind it is woken by its end alone (a later operation
  // of the same thread would wake the worker for it).
  CONFORM_KIND_READ,
} conform_kind_t;

static const char* const conform_kind_names[] = {"write", "fill", "read"};

// What one thread does in one round; both threads derive the same plan.
typedef struct conform_step {
  conform_role_t role;
  size_t size;  // 0 for a watcher
  conform_kind_t kind;
} conform_step_t;

struct conform_shared;

typedef struct conform_sharer {
  struct conform_shared* shared;
  int index;
  unsigned char* src;      // REGION + SHIFT bytes written from
  unsigned char* out;      // REGION bytes read back into
  unsigned char* image;    // what this thread's region must hold
  conform_ctx_t* scratch;  // conform_sync_finish writes hung, sync_message
  // Written by the thread, read after the join.
  bool failed;
  char message[448];
} conform_sharer_t;

typedef struct conform_shared {
  accel_stream_t* stream;
  accel_buffer_t* buffer;  // two regions, one per thread
  uint64_t seed;
  double end;
  pthread_mutex_t mutex;  // the barrier
  pthread_cond_t cond;
  int arrived;
  unsigned long generation;
  bool go;                 // the last arrival's verdict for this generation
  int rounds;              // rounds started
  atomic_bool stop;        // a thread failed
  atomic_int enqueued[2];  // per thread: rounds whose enqueues returned
  atomic_int ready[2];     // per thread: rounds it is watching in
  atomic_int overlapped;   // rounds where a watcher or follower came in
                           // while the other's work was in flight
  conform_sharer_t sharer[2];
} conform_shared_t;

// The plan of round `round` for thread `t`.
static conform_step_t conform_shared_plan(uint64_t seed, int round, int t) {
  uint64_t rng = seed + 0x51ed27u * (uint64_t)(round + 1);
  int pattern = (int)(conform_rand(&rng) % 5);
  conform_step_t step[2];
  for (int i = 0; i < 2; i++) {
    step[i].role = CONFORM_ROLE_WORK;
    step[i].size = conform_shared_sizes[conform_rand(&rng) % 4];
    step[i].kind = (conform_kind_t)(conform_rand(&rng) % 3);
  }
  if (pattern > 0) {
    // 1, 2: thread 0 leads; 3, 4: thread 1. The lead's work runs long
    // (256 KiB or 1 MiB), so that the other comes in while it runs.
    int lead = pattern > 2, other = 1 - lead;
    step[lead].size = conform_shared_sizes[2 + conform_rand(&rng) % 2];
    if (pattern % 2 == 1) {
      step[other].role = CONFORM_ROLE_WATCH;
      step[other].size = 0;
    } else {
      step[other].role = CONFORM_ROLE_FOLLOW;
      step[lead].kind = CONFORM_KIND_READ;
    }
  }
  return step[t];
}

// Waits until every thread has arrived; false when the check is to stop
// (a failure, the time or the rounds are up), decided by the last arrival
// so that both threads agree.
static bool conform_shared_barrier(conform_shared_t* s) {
  pthread_mutex_lock(&s->mutex);
  unsigned long generation = s->generation;
  if (++s->arrived == 2) {
    s->arrived = 0;
    s->go = !atomic_load(&s->stop) && s->rounds < CONFORM_SHARED_ROUNDS &&
            conform_now() < s->end;
    if (s->go) s->rounds++;
    s->generation++;
    pthread_cond_broadcast(&s->cond);
  } else {
    while (s->generation == generation) {
      pthread_cond_wait(&s->cond, &s->mutex);
    }
  }
  bool go = s->go;
  pthread_mutex_unlock(&s->mutex);
  return go;
}

// Records this thread's failure and stops both at the next barrier.
static void conform_shared_fail(conform_sharer_t* me, int round,
                                const char* format, ...)
    __attribute__((format(printf, 3, 4)));
static void conform_shared_fail(conform_sharer_t* me, int round,
                                const char* format, ...) {
  if (me->failed) return;
  me->failed = true;
  atomic_store(&me->shared->stop, true);
  int n = snprintf(me->message, sizeof(me->message),
                   "round %d: thread %d: ", round, me->index);
  if (n < 0 || (size_t)n >= sizeof(me->message)) return;
  va_list args;
  va_start(args, format);
  vsnprintf(me->message + n, sizeof(me->message) - (size_t)n, format, args);
  va_end(args);
}

// Until the other thread's work of this round is in flight (the stream
// reports "not done") or its enqueues have returned, bounded by the
// timeout. Yields between queries: on a loaded machine the two threads may
// share a CPU, and the other thread has to run for anything to change.
static accel_status_t conform_shared_await(conform_sharer_t* me, int round,
                                           double timeout_s) {
  conform_shared_t* s = me->shared;
  double deadline = conform_now() + timeout_s;
  while (atomic_load(&s->enqueued[1 - me->index]) <= round &&
         conform_now() < deadline) {
    bool done = true;
    accel_status_t status = accel_stream_query(s->stream, &done);
    if (status == ACCEL_OK && !done) atomic_fetch_add(&s->overlapped, 1);
    if (status != ACCEL_OK || !done) return status;
    sched_yield();
  }
  return ACCEL_OK;
}

static void conform_shared_round(conform_sharer_t* me, int round,
                                 double timeout_s) {
  conform_shared_t* s = me->shared;
  conform_step_t step = conform_shared_plan(s->seed, round, me->index);
  conform_step_t peer = conform_shared_plan(s->seed, round, 1 - me->index);
  char what[160];
  snprintf(what, sizeof(what),
           "this thread %s (%zu-byte %s), the other %s (%zu-byte %s)",
           conform_role_names[step.role], step.size,
           step.size ? conform_kind_names[step.kind] : "nothing",
           conform_role_names[peer.role], peer.size,
           peer.size ? conform_kind_names[peer.kind] : "nothing");
  accel_status_t status = ACCEL_OK;
  if (step.role == CONFORM_ROLE_WORK && peer.role != CONFORM_ROLE_WORK) {
    // A lead starts once the other polls: woken from the barrier after
    // the lead, it would otherwise often come in after a 1 MiB copy ended.
    double deadline = conform_now() + timeout_s;
    while (atomic_load(&s->ready[1 - me->index]) <= round &&
           conform_now() < deadline) {
      sched_yield();
    }
  }
  if (step.role != CONFORM_ROLE_WORK) {
    atomic_store(&s->ready[me->index], round + 1);
    status = conform_shared_await(me, round, timeout_s);
    if (status != ACCEL_OK) {
      conform_shared_fail(me, round, "stream_query: %s: %s; %s",
                          accel_status_string(status), accel_last_error(),
                          what);
      return;
    }
  }
  uint64_t offset = (uint64_t)me->index * CONFORM_SHARED_REGION;
  const unsigned char* from = me->src + round % CONFORM_SHARED_SHIFT;
  uint8_t value = (uint8_t)(2 * round + me->index + 1);
  if (step.size > 0) {
    if (step.kind == CONFORM_KIND_FILL) {
      status = accel_stream_fill_buffer(s->stream, s->buffer, offset, value,
                                        step.size);
    } else if (step.kind == CONFORM_KIND_WRITE) {
      status = accel_stream_write_buffer(s->stream, s->buffer, offset, from,
                                         step.size);
    }
    if (status == ACCEL_OK) {
      status = accel_stream_read_buffer(s->stream, s->buffer, offset, me->out,
                                        step.size);
    }
    if (status != ACCEL_OK) {
      conform_shared_fail(me, round, "enqueue: %s: %s; %s",
                          accel_status_string(status), accel_last_error(),
                          what);
      return;
    }
  }
  atomic_store(&s->enqueued[me->index], round + 1);
  me->scratch->sync_message[0] = '\0';
  conform_call_t* call = conform_sync_start(false, s->stream);
  status = call == NULL ? ACCEL_ERROR_OUT_OF_MEMORY
                        : conform_sync_finish(me->scratch, call,
                                              conform_now() + timeout_s);
  if (status == ACCEL_ERROR_NOT_READY && me->scratch->hung) {
    conform_shared_fail(me, round,
                        "stream_synchronize did not return within %g s; %s "
                        "(work queued behind another thread's work, or a "
                        "synchronize waiting for it, is never woken)",
                        timeout_s, what);
    return;
  }
  if (status != ACCEL_OK) {
    conform_shared_fail(me, round, "stream_synchronize: %s: %s; %s",
                        accel_status_string(status),
                        me->scratch->sync_message[0] ? me->scratch->sync_message
                                                     : "(no message)",
                        what);
    return;
  }
  if (step.size == 0) return;
  if (step.kind == CONFORM_KIND_FILL) {
    memset(me->image, value, step.size);
  } else if (step.kind == CONFORM_KIND_WRITE) {
    memcpy(me->image, from, step.size);
  }
  for (size_t i = 0; i < step.size; i++) {
    if (me->out[i] != me->image[i]) {
      conform_shared_fail(me, round,
                          "when stream_synchronize returned, byte %zu of its "
                          "read back was 0x%02x, expected 0x%02x; %s",
                          i, me->out[i], me->image[i], what);
      return;
    }
  }
}

static void* conform_sharer_main(void* arg) {
  conform_sharer_t* me = arg;
  conform_shared_t* s = me->shared;
  double timeout_s = me->scratch->timeout_s;
  for (int round = 0; conform_shared_barrier(s); round++) {
    conform_shared_round(me, round, timeout_s);
  }
  return NULL;
}

conform_result_t conform_stream_shared_threads(conform_ctx_t* ctx,
                                               const void* arg);

conform_result_t conform_stream_shared_threads(conform_ctx_t* ctx,
                                               const void* arg) {
  (void)arg;
  uint64_t rng = ctx->seed + 16;
  const size_t region = CONFORM_SHARED_REGION;
  conform_shared_t* s = conform_alloc(ctx, sizeof(*s));
  if (s == NULL) return conform_report(ctx, CONFORM_FAIL, "out of host memory");
  for (int t = 0; t < 2; t++) {
    conform_sharer_t* me = &s->sharer[t];
    me->shared = s;
    me->index = t;
    me->src = conform_alloc(ctx, region + CONFORM_SHARED_SHIFT);
    me->out = conform_alloc(ctx, region);
    me->image = conform_alloc(ctx, region);
    me->scratch = conform_alloc(ctx, sizeof(*me->scratch));
    if (me->src == NULL || me->out == NULL || me->image == NULL ||
        me->scratch == NULL) {
      return conform_report(ctx, CONFORM_FAIL, "out of host memory");
    }
    conform_rand_bytes(&rng, me->src, region + CONFORM_SHARED_SHIFT);
    memset(me->image, 0x5a, region);
    me->scratch->timeout_s = ctx->timeout_s;
  }
  accel_status_t status = conform_stream(ctx, ctx->device, &s->stream);
  if (status == ACCEL_OK) {
    status = conform_buffer(ctx, ctx->device, 2 * region, &s->buffer);
  }
  if (status == ACCEL_OK) {
    status =
        accel_stream_fill_buffer(s->stream, s->buffer, 0, 0x5a, 2 * region);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  status = conform_stream_sync(ctx, s->stream);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "setup fill");
  s->seed = ctx->seed;
  pthread_mutex_init(&s->mutex, NULL);
  pthread_cond_init(&s->cond, NULL);
  atomic_init(&s->stop, false);
  atomic_init(&s->enqueued[0], 0);
  atomic_init(&s->enqueued[1], 0);
  atomic_init(&s->overlapped, 0);
  atomic_init(&s->ready[0], 0);
  atomic_init(&s->ready[1], 0);
  double start = conform_now();
  s->end = start + CONFORM_SHARED_MS * 1e-3;
  pthread_t thread[2];
  int started = 0;
  for (; started < 2; started++) {
    if (pthread_create(&thread[started], NULL, conform_sharer_main,
                       &s->sharer[started]) != 0) {
      break;
    }
  }
  if (started < 2) {
    // The first waits at the barrier for a second that never comes: let a
    // stand-in arrive with the stop set, so it ends at once.
    atomic_store(&s->stop, true);
    if (started == 1) {
      conform_shared_barrier(s);
      pthread_join(thread[0], NULL);
    }
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->mutex);
    return conform_report(ctx, CONFORM_FAIL, "cannot start a thread");
  }
  for (int t = 0; t < 2; t++) pthread_join(thread[t], NULL);
  double ms = (conform_now() - start) * 1e3;
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->mutex);
  // A synchronize abandoned on its helper: the stream and buffers may
  // still be in use, so they are leaked (conform_release_tracked).
  for (int t = 0; t < 2; t++) {
    if (s->sharer[t].scratch->hung) ctx->hung = true;
  }
  for (int t = 0; t < 2; t++) {
    if (s->sharer[t].failed) {
      return conform_report(ctx, CONFORM_FAIL, "%s", s->sharer[t].message);
    }
  }
  // Each thread's region holds its last work, and only its own: an
  // offset mixed up between the two threads shows here.
  unsigned char* whole = conform_alloc(ctx, 2 * region);
  if (whole == NULL) return conform_report(ctx, CONFORM_FAIL, "host OOM");
  for (int t = 0; t < 2; t++) {
    memcpy(whole + (size_t)t * region, s->sharer[t].image, region);
  }
  char what[64];
  snprintf(what, sizeof(what), "both threads' regions after %d rounds",
           s->rounds);
  if (!conform_verify(ctx, s->buffer, whole, 2 * region, what)) {
    return CONFORM_FAIL;
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%d rounds in %.0f ms, two threads enqueueing on and "
                        "synchronizing one stream (in %d, one came in while "
                        "the other's work was in flight)",
                        s->rounds, ms, atomic_load(&s->overlapped));
}
