// SPDX-License-Identifier: MIT
//
// Synchronisation under load: an event re-recorded on a busy stream
// follows its latest record (query, synchronize and a waiting stream);
// stream_query right after stream_synchronize and event_query right after
// event_synchronize say "done" and earlier writes are visible; elapsed
// time agrees with the host clock for work of known length; and a stream
// waits for an event of another device directly where the plugin claims
// peer access; and every thread blocked in a synchronize returns.
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "conform.h"

enum { CONFORM_SYNC_BYTES = 1 << 20 };

// Heavy work on `stream`, then fresh data written into a new buffer
// (returned in `*out`, the data in `in`).
static accel_status_t conform_sync_work(conform_ctx_t* ctx,
                                        accel_stream_t* stream,
                                        unsigned char* in,
                                        accel_buffer_t** out) {
  uint64_t rng = ctx->seed + 41;
  conform_rand_bytes(&rng, in, CONFORM_SYNC_BYTES);
  accel_status_t status =
      conform_buffer(ctx, accel_stream_device(stream), CONFORM_SYNC_BYTES, out);
  if (status == ACCEL_OK) status = accel_buffer_fill(*out, 0, 0, CONFORM_SYNC_BYTES);
  if (status == ACCEL_OK) status = conform_heavy_work(ctx, stream, 10);
  if (status == ACCEL_OK) {
    status = accel_stream_write_buffer(stream, *out, 0, in, CONFORM_SYNC_BYTES);
  }
  return status;
}

static conform_result_t conform_sync_rerecord(conform_ctx_t* ctx,
                                              const void* arg) {
  (void)arg;
  accel_stream_t *s1 = NULL, *s2 = NULL, *s3 = NULL;
  accel_event_t* e = NULL;
  accel_buffer_t* b = NULL;
  unsigned char* in = conform_alloc(ctx, CONFORM_SYNC_BYTES);
  if (in == NULL) return conform_report(ctx, CONFORM_FAIL, "host memory");
  accel_status_t status = conform_stream(ctx, ctx->device, &s1);
  if (status == ACCEL_OK) status = conform_stream(ctx, ctx->device, &s2);
  if (status == ACCEL_OK) status = conform_stream(ctx, ctx->device, &s3);
  if (status == ACCEL_OK) status = conform_event(ctx, ctx->device, 0, &e);
  // First record on an idle stream: complete almost at once.
  if (status == ACCEL_OK) status = accel_event_record(e, s1);
  if (status == ACCEL_OK) status = conform_event_sync(ctx, e);
  if (status == ACCEL_OK) status = conform_sync_work(ctx, s2, in, &b);
  if (status == ACCEL_OK) status = accel_event_record(e, s2);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  // A third stream waits for the latest record, then reads the buffer.
  unsigned char* seen = conform_alloc(ctx, CONFORM_SYNC_BYTES);
  if (seen == NULL) return conform_report(ctx, CONFORM_FAIL, "host memory");
  status = accel_stream_wait_event(s3, e);
  if (status == ACCEL_OK) {
    status = accel_stream_read_buffer(s3, b, 0, seen, CONFORM_SYNC_BYTES);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "wait");
  status = conform_event_wait(ctx, e);  // polling query
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "query");
  // Done by query: s2's write before the record must be visible now.
  if (!conform_verify(ctx, b, in, CONFORM_SYNC_BYTES,
                      "after event_query said done on the re-record")) {
    return CONFORM_FAIL;
  }
  status = conform_stream_wait(ctx, s3);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "waiter");
  if (memcmp(seen, in, CONFORM_SYNC_BYTES) != 0) {
    return conform_report(ctx, CONFORM_FAIL,
                          "a stream waiting on the re-recorded event read "
                          "the buffer before the busy stream wrote it");
  }
  return conform_report(ctx, CONFORM_PASS,
                        "query and waits follow the latest record");
}

// Rounds of conform_sync_query_after: a synchronize that does not wait is
// caught only if its work is still running at the query right after it,
// which a preemption of this thread at that moment can hide; three rounds
// make a miss take three.
#define CONFORM_SYNC_ROUNDS 3

static conform_result_t conform_sync_query_after(conform_ctx_t* ctx,
                                                 const void* arg) {
  bool event = arg != NULL;
  accel_stream_t* s = NULL;
  accel_event_t* e = NULL;
  unsigned char* in = conform_alloc(ctx, CONFORM_SYNC_BYTES);
  if (in == NULL) return conform_report(ctx, CONFORM_FAIL, "host memory");
  accel_status_t status = conform_stream(ctx, ctx->device, &s);
  if (status == ACCEL_OK && event) {
    status = conform_event(ctx, ctx->device, 0, &e);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  for (int round = 0; round < CONFORM_SYNC_ROUNDS; round++) {
    accel_buffer_t* b = NULL;
    status = conform_sync_work(ctx, s, in, &b);
    if (status == ACCEL_OK && event) status = accel_event_record(e, s);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
    status = event ? conform_event_sync(ctx, e) : conform_stream_sync(ctx, s);
    if (status != ACCEL_OK) {
      return conform_fail_wait(ctx, status, "synchronize");
    }
    bool done = false;
    status = event ? accel_event_query(e, &done) : accel_stream_query(s, &done);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "query");
    if (!done) {
      return conform_report(ctx, CONFORM_FAIL,
                            "%s_query right after %s_synchronize: not done",
                            event ? "event" : "stream",
                            event ? "event" : "stream");
    }
    if (!conform_verify(ctx, b, in, CONFORM_SYNC_BYTES,
                        "data written before the synchronize")) {
      return CONFORM_FAIL;
    }
  }
  return conform_report(ctx, CONFORM_PASS, "done, earlier writes visible");
}

// A query that says "done" must mean it: heavy work and a write, polled
// (the first query comes long before the work can finish), then the data
// read at once, without any other wait.
static conform_result_t conform_sync_query_means_done(conform_ctx_t* ctx,
                                                      const void* arg) {
  bool event = arg != NULL;
  accel_stream_t* s = NULL;
  accel_event_t* e = NULL;
  accel_buffer_t* b = NULL;
  unsigned char* in = conform_alloc(ctx, CONFORM_SYNC_BYTES);
  if (in == NULL) return conform_report(ctx, CONFORM_FAIL, "host memory");
  accel_status_t status = conform_stream(ctx, ctx->device, &s);
  if (status == ACCEL_OK && event) {
    status = conform_event(ctx, ctx->device, 0, &e);
  }
  if (status == ACCEL_OK) status = conform_sync_work(ctx, s, in, &b);
  if (status == ACCEL_OK && event) status = accel_event_record(e, s);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  status = event ? conform_event_wait(ctx, e) : conform_stream_wait(ctx, s);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "query");
  if (!conform_verify(ctx, b, in, CONFORM_SYNC_BYTES,
                      event ? "data written before the record, once "
                              "event_query said done"
                            : "data written on the stream, once "
                              "stream_query said done")) {
    return CONFORM_FAIL;
  }
  return conform_report(ctx, CONFORM_PASS, "done meant done");
}

// Elapsed time of `ms` of spinning (or heavy copies) against the host.
// The host's time may grow on a loaded machine (the waiting thread woken
// late): copies of 5 ms timed at 30 ms by the host looked like a clock
// that stops early. So a try outside the bounds is repeated, with twice
// the copies, and only a plugin outside them in all 3 tries fails: a
// wrong unit or a stamp taken at record time is outside every time.
enum { CONFORM_ELAPSED_TRIES = 3 };
static conform_result_t conform_sync_elapsed(conform_ctx_t* ctx,
                                             const void* arg) {
  (void)arg;
  if ((ctx->info.caps & ACCEL_DEVICE_CAP_EVENT_TIMING) == 0) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "no event_timing");
  }
  char path[1024] = "";
  accel_kernel_t* spin = NULL;
  if ((ctx->info.caps & ACCEL_DEVICE_CAP_KERNELS) != 0 &&
      conform_kernel_get(ctx, "accel_conform_spin", &spin, path,
                         sizeof(path)) != ACCEL_OK) {
    spin = NULL;
  }
  accel_stream_t* s = NULL;
  accel_event_t *e0 = NULL, *e1 = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &s);
  if (status == ACCEL_OK) {
    status = conform_event(ctx, ctx->device, ACCEL_EVENT_TIMING, &e0);
  }
  if (status == ACCEL_OK) {
    status = conform_event(ctx, ctx->device, ACCEL_EVENT_TIMING, &e1);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  const uint32_t ms = 60;
  float elapsed = -1;
  double host_ms = 0, low = 0;
  int rounds = 16;
  for (int try = 0; try < CONFORM_ELAPSED_TRIES; try++, rounds *= 2) {
    double t0 = conform_now();
    status = accel_event_record(e0, s);
    if (status == ACCEL_OK && spin != NULL) {
      accel_launch_config_t config;
      accel_launch_config_init(&config);
      accel_kernel_arg_t a = {
          .kind = ACCEL_KERNEL_ARG_VALUE, .size = sizeof(ms), .value = &ms};
      status = accel_kernel_launch(spin, s, &config, 1, &a);
    } else if (status == ACCEL_OK) {
      status = conform_heavy_work(ctx, s, rounds);
    }
    if (status == ACCEL_OK) status = accel_event_record(e1, s);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "enqueue");
    status = conform_event_sync(ctx, e1);
    host_ms = (conform_now() - t0) * 1e3;
    if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "end event");
    status = accel_event_elapsed_ms(e0, e1, &elapsed);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "elapsed");
    // Never longer than the host saw (plus clock granularity); at least
    // the spin, or a fifth of the host time for copies (the enqueue
    // overhead is small next to 16 rounds of 8 MiB).
    low = spin != NULL ? ms * 0.95 : host_ms * 0.2;
    if (elapsed <= host_ms + 2.0 && elapsed >= low) {
      return conform_report(ctx, CONFORM_PASS, "%.3f ms of %s, host %.3f ms%s",
                            elapsed, spin ? "spin" : "copies", host_ms,
                            try > 0 ? " (after a try out of bounds)" : "");
    }
  }
  return conform_report(ctx, CONFORM_FAIL,
                        "elapsed %.3f ms for %s; host saw %.3f ms; need "
                        "%.3f <= elapsed <= host + 2 (the last of %d tries, "
                        "all out of bounds)",
                        elapsed, spin ? "a 60 ms spin kernel" : "copies",
                        host_ms, low, CONFORM_ELAPSED_TRIES);
}

static conform_result_t conform_sync_peer_wait(conform_ctx_t* ctx,
                                               const void* arg) {
  (void)arg;
  bool can = false;
  if (ctx->peer == NULL) {
    return conform_report(ctx, CONFORM_SKIP, "needs a second device");
  }
  accel_status_t status = accel_device_can_access_peer(ctx->device, ctx->peer,
                                                       &can);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "can_access");
  if (!can) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "no peer access claimed");
  }
  accel_stream_t *ps = NULL, *s = NULL;
  accel_event_t* e = NULL;
  accel_buffer_t *pb = NULL, *b = NULL;
  unsigned char* in = conform_alloc(ctx, CONFORM_SYNC_BYTES);
  unsigned char* seen = conform_alloc(ctx, CONFORM_SYNC_BYTES);
  if (in == NULL || seen == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "host memory");
  }
  status = conform_stream(ctx, ctx->peer, &ps);
  if (status == ACCEL_OK) status = conform_stream(ctx, ctx->device, &s);
  if (status == ACCEL_OK) status = conform_event(ctx, ctx->peer, 0, &e);
  if (status == ACCEL_OK) {
    status = conform_buffer(ctx, ctx->device, CONFORM_SYNC_BYTES, &b);
  }
  if (status == ACCEL_OK) {
    status = conform_buffer(ctx, ctx->peer, CONFORM_SYNC_BYTES, &pb);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  // A try proves something only if the peer's event was still pending
  // when the copy was enqueued: a copy run at once, or a wait that waits
  // for nothing, then reads stale bytes. Tries with 10, 40 and 160
  // rounds of work on the peer until one is.
  uint64_t rng = ctx->seed + 41;
  int rounds = 10;
  bool conclusive = false;
  for (; rounds <= 160 && !conclusive; rounds *= 4) {
    conform_rand_bytes(&rng, in, CONFORM_SYNC_BYTES);
    status = accel_buffer_fill(pb, 0, 0, CONFORM_SYNC_BYTES);
    if (status == ACCEL_OK) status = conform_heavy_work(ctx, ps, rounds);
    if (status == ACCEL_OK) {
      status = accel_stream_write_buffer(ps, pb, 0, in, CONFORM_SYNC_BYTES);
    }
    if (status == ACCEL_OK) status = accel_event_record(e, ps);
    if (status == ACCEL_OK) status = accel_stream_wait_event(s, e);
    bool done = true;
    if (status == ACCEL_OK) status = accel_event_query(e, &done);
    if (status == ACCEL_OK) {
      status = accel_stream_copy_buffer(s, b, 0, pb, 0, CONFORM_SYNC_BYTES);
    }
    if (status == ACCEL_OK) {
      status = accel_stream_read_buffer(s, b, 0, seen, CONFORM_SYNC_BYTES);
    }
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "enqueue");
    status = conform_stream_wait(ctx, s);
    if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
    // Both buffers are rewritten next try: the peer's work must be done.
    status = conform_stream_wait(ctx, ps);
    if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "peer");
    if (memcmp(seen, in, CONFORM_SYNC_BYTES) != 0) {
      return conform_report(ctx, CONFORM_FAIL,
                            "the peer copy after stream_wait_event on the "
                            "other device's event read stale data (%d "
                            "rounds of work on the peer)",
                            rounds);
    }
    conclusive = !done;
  }
  if (!conclusive) {
    return conform_report(ctx, CONFORM_PASS,
                          "inconclusive: %s finished 160 rounds of work "
                          "before the copy was enqueued every time",
                          accel_device_uri(ctx->peer));
  }
  return conform_report(ctx, CONFORM_PASS, "%s waited for %s (%d rounds)",
                        accel_device_uri(ctx->device),
                        accel_device_uri(ctx->peer), rounds / 4);
}

enum {
  CONFORM_WAITERS = 3,
  CONFORM_WAIT_ROUNDS = 40,  // heavy work of the first try
  CONFORM_WAIT_TRIES = 8,    // each doubling the work
};
// The last copy of the work, one long piece: a completion that wakes one
// waiter only wakes one per piece of work, and a waiter woken by an
// earlier piece but not yet scheduled (a loaded machine) sees the end
// when it runs, so short last pieces could let every waiter return. One
// long last piece leaves the waiters asleep when it completes.
#define CONFORM_WAIT_TAIL ((size_t)64 << 20)

// One try of sync.many_waiters with `rounds` of heavy work. Sets `*early`
// (and returns CONFORM_PASS) when the work had already finished once
// every waiter was asleep in its synchronize call (or had returned), so
// some waiters may never have blocked and the try proves nothing.
static conform_result_t conform_sync_waiters_try(conform_ctx_t* ctx,
                                                 int rounds,
                                                 accel_buffer_t* const tail[2],
                                                 bool* early) {
  *early = false;
  accel_stream_t* stream = NULL;
  accel_event_t* event = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status == ACCEL_OK) status = conform_event(ctx, ctx->device, 0, &event);
  if (status == ACCEL_OK) status = conform_heavy_work(ctx, stream, rounds);
  if (status == ACCEL_OK && tail[0] != NULL) {
    status = accel_stream_copy_buffer(stream, tail[1], 0, tail[0], 0,
                                      CONFORM_WAIT_TAIL);
  }
  if (status == ACCEL_OK) status = accel_event_record(event, stream);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  conform_call_t* calls[2 * CONFORM_WAITERS] = {NULL};
  size_t started = 0;
  for (; started < 2 * CONFORM_WAITERS; started++) {
    bool on_event = started % 2 == 1;
    calls[started] =
        conform_sync_start(on_event, on_event ? (void*)event : (void*)stream);
    if (calls[started] == NULL) break;
  }
  double deadline = conform_now() + ctx->timeout_s;
  // Every waiter asleep in its call (a thread that reached the call but
  // was preempted before it could wait proves nothing if the work ends
  // meanwhile), then the work must still be running.
  for (size_t i = 0; i < started; i++) {
    while (!conform_sync_blocked(calls[i]) && conform_now() < deadline) {
      struct timespec nap = {0, 100000};
      nanosleep(&nap, NULL);
    }
  }
  bool done = false;
  if (accel_event_query(event, &done) == ACCEL_OK && done) *early = true;
  size_t returned = 0;
  accel_status_t first = ACCEL_OK;
  ctx->sync_message[0] = '\0';
  for (size_t i = 0; i < started; i++) {
    accel_status_t s = conform_sync_finish(ctx, calls[i], deadline);
    if (s != ACCEL_ERROR_NOT_READY || !ctx->hung) returned++;
    if (s != ACCEL_OK && first == ACCEL_OK) first = s;
  }
  if (returned < started) {
    *early = false;  // a hang is a verdict however early the work ended
    return conform_report(ctx, CONFORM_FAIL,
                          "%zu of %zu threads waiting in stream_synchronize "
                          "and event_synchronize (alternately) were still "
                          "blocked %g s later: does a completion wake one "
                          "waiter only?",
                          started - returned, started, ctx->timeout_s);
  }
  if (started < 2 * CONFORM_WAITERS) {
    *early = false;
    return conform_report(ctx, CONFORM_FAIL, "cannot start a waiter thread");
  }
  if (first != ACCEL_OK) {
    *early = false;
    return conform_fail_wait(ctx, first, "synchronize");
  }
  return CONFORM_PASS;
}

// Several threads blocked in stream_synchronize on one stream and in
// event_synchronize on one event while the work runs must all return
// once it completes: a completion that wakes one waiter only (a condition
// signalled, not broadcast) leaves the others blocked for good. The work
// must still be running once the waiters are in their calls; on a fast
// device, or a machine that starts the threads late, a try whose work
// ended first is repeated with twice the work.
static conform_result_t conform_sync_many_waiters(conform_ctx_t* ctx,
                                                  const void* arg) {
  (void)arg;
  accel_buffer_t* tail[2] = {NULL, NULL};
  if (conform_buffer(ctx, ctx->device, CONFORM_WAIT_TAIL, &tail[0]) !=
          ACCEL_OK ||
      conform_buffer(ctx, ctx->device, CONFORM_WAIT_TAIL, &tail[1]) !=
          ACCEL_OK) {
    tail[0] = NULL;  // too little memory: short pieces only
  }
  int rounds = CONFORM_WAIT_ROUNDS;
  for (int t = 0; t < CONFORM_WAIT_TRIES; t++, rounds *= 2) {
    bool early = false;
    conform_result_t r = conform_sync_waiters_try(ctx, rounds, tail, &early);
    if (r != CONFORM_PASS) return r;
    if (!early) {
      return conform_report(ctx, CONFORM_PASS,
                            "%d threads on the stream and %d on the event "
                            "returned (%d copies of 8 MiB)",
                            CONFORM_WAITERS, CONFORM_WAITERS, rounds);
    }
  }
  return conform_report(ctx, CONFORM_SKIP,
                        "the work (up to %d copies of 8 MiB) always finished "
                        "before the waiters were in their calls",
                        rounds / 2);
}

static const int conform_on_event = 1;

static const conform_check_t conform_syncs[] = {
    {"sync.rerecord_busy", conform_sync_rerecord, NULL},
    {"sync.stream_query_after_sync", conform_sync_query_after, NULL},
    {"sync.event_query_after_sync", conform_sync_query_after,
     &conform_on_event},
    {"sync.stream_query_done", conform_sync_query_means_done, NULL},
    {"sync.event_query_done", conform_sync_query_means_done,
     &conform_on_event},
    {"sync.elapsed_vs_host", conform_sync_elapsed, NULL},
    {"sync.peer_wait_event", conform_sync_peer_wait, NULL},
    {"sync.many_waiters", conform_sync_many_waiters, NULL},
};

const conform_check_t* conform_sync_checks(size_t* out_count) {
  *out_count = sizeof(conform_syncs) / sizeof(conform_syncs[0]);
  return conform_syncs;
}
