// SPDX-License-Identifier: MIT
//
// Stream checks: in-order execution of a dependent chain, two streams
// making progress independently, a cross-stream wait on an event recorded
// after heavy work, query, synchronize, a synchronize while another
// thread keeps the stream busy, a release that waits for the work, many
// streams at once, and two threads sharing one stream with small work
// (conform_stream_threads.c). Waits are bounded (--timeout), so a stream
// that never drains fails its check.
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "conform.h"

#define CONFORM_CHAIN_SIZE ((4u << 20) + 3)

// One dependent chain on `stream`: host -> A -> B -> C, then A is cleared
// and C -> D -> host. If the stream reorders anything, `out` differs from
// `in` or A is not zero.
typedef struct conform_chain {
  accel_buffer_t* buf[4];
  unsigned char* in;
  unsigned char* out;
} conform_chain_t;

static conform_result_t conform_chain_start(conform_ctx_t* ctx,
                                            accel_stream_t* stream,
                                            uint64_t* rng,
                                            conform_chain_t* chain) {
  const size_t n = CONFORM_CHAIN_SIZE;
  chain->in = conform_alloc(ctx, n);
  chain->out = conform_alloc(ctx, n);
  if (chain->in == NULL || chain->out == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "out of host memory");
  }
  conform_rand_bytes(rng, chain->in, n);
  accel_status_t status = ACCEL_OK;
  for (int i = 0; i < 4 && status == ACCEL_OK; i++) {
    status = conform_buffer(ctx, ctx->device, n, &chain->buf[i]);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "create");
  accel_buffer_t** b = chain->buf;
  status = accel_stream_write_buffer(stream, b[0], 0, chain->in, n);
  if (status == ACCEL_OK) {
    status = accel_stream_copy_buffer(stream, b[1], 0, b[0], 0, n);
  }
  if (status == ACCEL_OK) {
    status = accel_stream_copy_buffer(stream, b[2], 0, b[1], 0, n);
  }
  if (status == ACCEL_OK)
    status = accel_stream_fill_buffer(stream, b[0], 0, 0, n);
  if (status == ACCEL_OK) {
    status = accel_stream_copy_buffer(stream, b[3], 0, b[2], 0, n);
  }
  if (status == ACCEL_OK) {
    status = accel_stream_read_buffer(stream, b[3], 0, chain->out, n);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "enqueue");
  return CONFORM_PASS;
}

static conform_result_t conform_chain_check(conform_ctx_t* ctx,
                                            conform_chain_t* chain,
                                            const char* what) {
  const size_t n = CONFORM_CHAIN_SIZE;
  for (size_t i = 0; i < n; i++) {
    if (chain->out[i] != chain->in[i]) {
      return conform_report(ctx, CONFORM_FAIL,
                            "%s: byte %zu came back 0x%02x, expected 0x%02x "
                            "(work ran out of order?)",
                            what, i, chain->out[i], chain->in[i]);
    }
  }
  unsigned char* zero = conform_alloc(ctx, n);
  if (zero == NULL) return conform_report(ctx, CONFORM_FAIL, "host OOM");
  if (!conform_verify(ctx, chain->buf[0], zero, n, what)) return CONFORM_FAIL;
  return CONFORM_PASS;
}

static conform_result_t conform_stream_in_order(conform_ctx_t* ctx,
                                                const void* arg) {
  (void)arg;
  uint64_t rng = ctx->seed + 10;
  accel_stream_t* stream = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "stream");
  conform_chain_t chain;
  if (conform_chain_start(ctx, stream, &rng, &chain) != CONFORM_PASS) {
    return CONFORM_FAIL;
  }
  status = conform_stream_wait(ctx, stream);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
  if (conform_chain_check(ctx, &chain, "chain") != CONFORM_PASS) {
    return CONFORM_FAIL;
  }
  return conform_report(ctx, CONFORM_PASS,
                        "6 dependent operations on 4 MiB ran in order");
}

static conform_result_t conform_stream_concurrent(conform_ctx_t* ctx,
                                                  const void* arg) {
  (void)arg;
  uint64_t rng = ctx->seed + 11;
  accel_stream_t* s[2] = {NULL, NULL};
  conform_chain_t chain[2];
  for (int i = 0; i < 2; i++) {
    accel_status_t status = conform_stream(ctx, ctx->device, &s[i]);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "stream");
  }
  for (int i = 0; i < 2; i++) {
    if (conform_chain_start(ctx, s[i], &rng, &chain[i]) != CONFORM_PASS) {
      return CONFORM_FAIL;
    }
  }
  for (int i = 0; i < 2; i++) {
    accel_status_t status = conform_stream_wait(ctx, s[i]);
    if (status != ACCEL_OK) {
      return conform_fail_wait(ctx, status, i ? "stream 2" : "stream 1");
    }
  }
  for (int i = 0; i < 2; i++) {
    if (conform_chain_check(ctx, &chain[i], i ? "stream 2" : "stream 1") !=
        CONFORM_PASS) {
      return CONFORM_FAIL;
    }
  }
  return conform_report(ctx, CONFORM_PASS,
                        "two streams' chains both completed correctly");
}

static conform_result_t conform_stream_wait_event(conform_ctx_t* ctx,
                                                  const void* arg) {
  (void)arg;
  uint64_t rng = ctx->seed + 12;
  const size_t n = 1u << 20;
  accel_stream_t* a = NULL;
  accel_stream_t* b = NULL;
  accel_event_t* e = NULL;
  accel_buffer_t* r = NULL;
  accel_buffer_t* s = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &a);
  if (status == ACCEL_OK) status = conform_stream(ctx, ctx->device, &b);
  if (status == ACCEL_OK) status = conform_event(ctx, ctx->device, 0, &e);
  if (status == ACCEL_OK) status = conform_buffer(ctx, ctx->device, n, &r);
  if (status == ACCEL_OK) status = conform_buffer(ctx, ctx->device, n, &s);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "create");
  unsigned char* in = conform_alloc(ctx, n);
  unsigned char* out = conform_alloc(ctx, n);
  if (in == NULL || out == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "out of host memory");
  }
  conform_rand_bytes(&rng, in, n);
  // A: heavy work, then the data B needs, then the event.
  status = conform_heavy_work(ctx, a, 24);
  if (status == ACCEL_OK) status = accel_stream_write_buffer(a, r, 0, in, n);
  if (status == ACCEL_OK) status = accel_event_record(e, a);
  // B: wait for the event, then use A's data.
  if (status == ACCEL_OK) status = accel_stream_wait_event(b, e);
  if (status == ACCEL_OK) status = accel_stream_copy_buffer(b, s, 0, r, 0, n);
  if (status == ACCEL_OK) status = accel_stream_read_buffer(b, s, 0, out, n);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "enqueue");
  status = conform_stream_wait(ctx, b);
  if (status != ACCEL_OK) {
    return conform_fail_wait(ctx, status, "stream waiting on the event");
  }
  if (memcmp(in, out, n) != 0) {
    return conform_report(ctx, CONFORM_FAIL,
                          "stream B read stale data: it did not wait for the "
                          "event recorded on stream A");
  }
  status = conform_stream_wait(ctx, a);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream A");
  return conform_report(ctx, CONFORM_PASS,
                        "B waited for A's event after 200 MiB of copies");
}

static conform_result_t conform_stream_query(conform_ctx_t* ctx,
                                             const void* arg) {
  (void)arg;
  accel_stream_t* stream = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "stream");
  bool done = false;
  status = accel_stream_query(stream, &done);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "query");
  if (!done) {
    return conform_report(ctx, CONFORM_FAIL, "a new stream is not idle");
  }
  status = conform_heavy_work(ctx, stream, 16);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "enqueue");
  bool busy_seen = false;
  status = accel_stream_query(stream, &done);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "query");
  busy_seen = !done;
  status = conform_stream_wait(ctx, stream);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
  status = accel_stream_query(stream, &done);
  if (status != ACCEL_OK || !done) {
    return conform_report(ctx, CONFORM_FAIL,
                          "query after completion: %s, done %d",
                          accel_status_string(status), (int)done);
  }
  return conform_report(ctx, CONFORM_PASS, "idle, %s, idle",
                        busy_seen ? "busy" : "done before the first query");
}

static conform_result_t conform_stream_sync_check(conform_ctx_t* ctx,
                                                  const void* arg) {
  (void)arg;
  uint64_t rng = ctx->seed + 13;
  accel_stream_t* stream = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "stream");
  conform_chain_t chain;
  if (conform_chain_start(ctx, stream, &rng, &chain) != CONFORM_PASS) {
    return CONFORM_FAIL;
  }
  status = conform_stream_sync(ctx, stream);
  if (status != ACCEL_OK) {
    return conform_fail_wait(ctx, status, "accel_stream_synchronize");
  }
  if (conform_chain_check(ctx, &chain, "after synchronize") != CONFORM_PASS) {
    return CONFORM_FAIL;
  }
  return conform_report(ctx, CONFORM_PASS,
                        "synchronize returned after the work completed");
}

// stream.synchronize_busy. plugin.h, stream_synchronize: "Blocks until all
// work enqueued so far has finished". So far: work another thread enqueues
// on the stream after the call is not waited for, and a synchronize that
// waits for the stream to be empty (re-reading the live enqueued count
// instead of the count at the call) never returns while a feeder keeps it
// busy. The feeder enqueues fills of CONFORM_BUSY_FILL bytes, each longer
// than an enqueue, in batches, recording an event after each; it waits for
// the record of the batch `ahead` batches back before the next, so
// between `ahead` - 1 and `ahead` batches stay queued. `ahead` makes about
// CONFORM_BUSY_MS of work, from the least time one batch took on the idle
// stream (a device or a sanitizer 30 times slower queues fewer batches):
// what a correct synchronize waits for is bounded, and the stream never
// runs dry, so a buggy one stays blocked, unless the feeder is held up
// that long. A loaded machine does hold it up: with 50 ms, PoCL's
// clFinish (which waits for an empty queue) saw the queue empty within a
// second or so on the 2-core development VM, and with 100 ms the
// template mutant of tests/mutation did once, under a parallel PoCL run.
enum {
  CONFORM_BUSY_FILL = 8 << 20,
  CONFORM_BUSY_BATCH = 8,
  CONFORM_BUSY_RING = 64,  // events: at most this many batches queued
  CONFORM_BUSY_MS = 250,
  CONFORM_BUSY_BYTES = (1 << 20) + 5,  // the marker's data
};

typedef struct conform_feeder {
  accel_stream_t* stream;
  accel_buffer_t* buffer;
  accel_event_t* events[CONFORM_BUSY_RING];
  uint64_t ahead;    // batches kept queued, 2 .. CONFORM_BUSY_RING
  double timeout_s;  // for each of its waits
  atomic_bool stop;
  atomic_ulong fills;  // enqueued so far
  atomic_bool ended;   // the feeder has stopped feeding
  // Written by the feeder, read after the join.
  accel_status_t status;  // NOT_READY: a record never completed
  const char* what;
  char message[256];
} conform_feeder_t;

static void conform_nap(void) {
  struct timespec nap = {0, 50000};
  nanosleep(&nap, NULL);
}

// Waits for `event` until done, an error, stop or the timeout. Each wait
// has its own deadline: the feeder must not stop while the synchronize it
// races is still within its own.
static accel_status_t conform_feeder_wait(conform_feeder_t* f,
                                          accel_event_t* event) {
  double deadline = conform_now() + f->timeout_s;
  for (;;) {
    bool done = false;
    accel_status_t status = accel_event_query(event, &done);
    if (status != ACCEL_OK || done || atomic_load(&f->stop)) return status;
    if (conform_now() > deadline) return ACCEL_ERROR_NOT_READY;
    conform_nap();
  }
}

static void* conform_feeder_main(void* arg) {
  conform_feeder_t* f = arg;
  accel_status_t status = ACCEL_OK;
  for (uint64_t batch = 0; !atomic_load(&f->stop); batch++) {
    f->what = "event_query of its own record";
    if (batch >= f->ahead) {
      status = conform_feeder_wait(
          f, f->events[(batch - f->ahead) % CONFORM_BUSY_RING]);
    }
    for (int i = 0; i < CONFORM_BUSY_BATCH && status == ACCEL_OK; i++) {
      f->what = "stream_fill_buffer";
      status = accel_stream_fill_buffer(f->stream, f->buffer, 0,
                                        (uint8_t)(batch + (uint64_t)i),
                                        CONFORM_BUSY_FILL);
      if (status == ACCEL_OK) atomic_fetch_add(&f->fills, 1);
    }
    f->what = "event_record";
    if (status == ACCEL_OK) {
      status =
          accel_event_record(f->events[batch % CONFORM_BUSY_RING], f->stream);
    }
    if (status != ACCEL_OK) break;
  }
  f->status = status;
  if (status != ACCEL_OK && status != ACCEL_ERROR_NOT_READY) {
    snprintf(f->message, sizeof(f->message), "%s", accel_last_error());
  }
  atomic_store(&f->ended, true);
  return NULL;
}

static conform_result_t conform_stream_sync_busy(conform_ctx_t* ctx,
                                                 const void* arg) {
  (void)arg;
  uint64_t rng = ctx->seed + 15;
  const size_t n = CONFORM_BUSY_BYTES;
  conform_feeder_t* f = conform_alloc(ctx, sizeof(*f));
  unsigned char* in = conform_alloc(ctx, n);
  unsigned char* out = conform_alloc(ctx, n);
  if (f == NULL || in == NULL || out == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "out of host memory");
  }
  conform_rand_bytes(&rng, in, n);
  accel_buffer_t* m[2] = {NULL, NULL};
  accel_status_t status = conform_stream(ctx, ctx->device, &f->stream);
  if (status == ACCEL_OK) {
    status = conform_buffer(ctx, ctx->device, CONFORM_BUSY_FILL, &f->buffer);
  }
  for (int i = 0; i < 2 && status == ACCEL_OK; i++) {
    status = conform_buffer(ctx, ctx->device, n, &m[i]);
  }
  for (int i = 0; i < CONFORM_BUSY_RING && status == ACCEL_OK; i++) {
    status = conform_event(ctx, ctx->device, 0, &f->events[i]);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "create");
  // One batch to warm up, then three timed, on the idle stream.
  double batch_s = 1e9;
  for (int round = 0; round < 4 && status == ACCEL_OK; round++) {
    double t = conform_now();
    for (int i = 0; i < CONFORM_BUSY_BATCH && status == ACCEL_OK; i++) {
      status = accel_stream_fill_buffer(f->stream, f->buffer, 0, (uint8_t)i,
                                        CONFORM_BUSY_FILL);
    }
    if (status == ACCEL_OK)
      status = accel_event_record(f->events[0], f->stream);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "warm-up");
    status = conform_event_wait(ctx, f->events[0]);
    if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "warm-up");
    t = conform_now() - t;
    if (round > 0 && t < batch_s) batch_s = t;
  }
  double want = CONFORM_BUSY_MS * 1e-3 / (batch_s > 1e-6 ? batch_s : 1e-6);
  f->ahead = want < 2                   ? 2
             : want > CONFORM_BUSY_RING ? CONFORM_BUSY_RING
                                        : (uint64_t)want;
  atomic_init(&f->stop, false);
  atomic_init(&f->fills, 0);
  atomic_init(&f->ended, false);
  f->timeout_s = ctx->timeout_s;
  pthread_t feeder;
  if (pthread_create(&feeder, NULL, conform_feeder_main, f) != 0) {
    return conform_report(ctx, CONFORM_FAIL, "cannot start a thread");
  }
  // A backlog first (`ahead` batches, or the feeder gave up), then this
  // thread's own work: host -> A -> B -> host, and the synchronize.
  double start = conform_now();
  while (atomic_load(&f->fills) < f->ahead * CONFORM_BUSY_BATCH &&
         !atomic_load(&f->ended) && conform_now() < start + ctx->timeout_s) {
    conform_nap();
  }
  status = accel_stream_write_buffer(f->stream, m[0], 0, in, n);
  if (status == ACCEL_OK) {
    status = accel_stream_copy_buffer(f->stream, m[1], 0, m[0], 0, n);
  }
  if (status == ACCEL_OK) {
    status = accel_stream_read_buffer(f->stream, m[1], 0, out, n);
  }
  accel_status_t synced = status;
  unsigned long before = atomic_load(&f->fills), during = 0;
  double t0 = conform_now(), ms = 0;
  if (status == ACCEL_OK) {
    ctx->sync_message[0] = '\0';
    conform_call_t* call = conform_sync_start(false, f->stream);
    synced = call == NULL ? ACCEL_ERROR_OUT_OF_MEMORY
                          : conform_sync_finish(ctx, call, t0 + ctx->timeout_s);
    ms = (conform_now() - t0) * 1e3;
    during = atomic_load(&f->fills) - before;
  }
  atomic_store(&f->stop, true);
  pthread_join(feeder, NULL);  // its waits end at stop or their timeout
  // Fills that never complete may still use the buffers: leak them.
  if (f->status == ACCEL_ERROR_NOT_READY) ctx->hung = true;
  if (status != ACCEL_OK) {
    return conform_fail_status(ctx, status, "enqueue of this thread's work");
  }
  if (synced == ACCEL_ERROR_NOT_READY && ctx->hung) {
    return conform_report(ctx, CONFORM_FAIL,
                          "stream_synchronize did not return within %g s "
                          "while another thread kept enqueueing fills (%lu "
                          "meanwhile): it must wait for the work enqueued "
                          "before the call, not for an empty stream",
                          ctx->timeout_s, during);
  }
  if (synced != ACCEL_OK) {
    return conform_fail_wait(ctx, synced, "stream_synchronize");
  }
  if (f->status != ACCEL_OK) {
    if (f->status == ACCEL_ERROR_NOT_READY) {
      return conform_report(ctx, CONFORM_FAIL,
                            "the feeding thread's event recorded after its "
                            "fills did not complete within %g s",
                            ctx->timeout_s);
    }
    return conform_report(ctx, CONFORM_FAIL, "feeding thread: %s: %s: %s",
                          f->what, accel_status_string(f->status), f->message);
  }
  for (size_t i = 0; i < n; i++) {
    if (out[i] != in[i]) {
      return conform_report(ctx, CONFORM_FAIL,
                            "when stream_synchronize returned, byte %zu "
                            "read back by work enqueued before it was "
                            "0x%02x, expected 0x%02x (it returned early)",
                            i, out[i], in[i]);
    }
  }
  return conform_report(ctx, CONFORM_PASS,
                        "returned in %.1f ms, its earlier work done, while "
                        "another thread enqueued %lu fills of %d MiB (%d "
                        "batches of %d kept queued, %.1f ms each)",
                        ms, during, CONFORM_BUSY_FILL >> 20, (int)f->ahead,
                        CONFORM_BUSY_BATCH, batch_s * 1e3);
}

// Releasing the last reference waits for the stream's pending work
// (accel.h): a dependent chain, the read back to the host last, must have
// landed when the release returns, not be dropped with the stream.
static conform_result_t conform_stream_release_waits(conform_ctx_t* ctx,
                                                     const void* arg) {
  (void)arg;
  uint64_t rng = ctx->seed + 14;
  accel_stream_t* stream = NULL;  // not tracked: released by the check
  accel_status_t status = accel_stream_create(ctx->device, 0, &stream);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "stream");
  conform_chain_t chain;
  conform_result_t r = conform_chain_start(ctx, stream, &rng, &chain);
  accel_stream_release(stream);
  if (r != CONFORM_PASS) return r;
  if (conform_chain_check(ctx, &chain, "after the release") != CONFORM_PASS) {
    return CONFORM_FAIL;
  }
  return conform_report(ctx, CONFORM_PASS,
                        "the release returned after the work completed");
}

#define CONFORM_MANY_STREAMS 16

static conform_result_t conform_stream_many(conform_ctx_t* ctx,
                                            const void* arg) {
  (void)arg;
  accel_stream_t* s[CONFORM_MANY_STREAMS];
  accel_buffer_t* b[CONFORM_MANY_STREAMS];
  for (int i = 0; i < CONFORM_MANY_STREAMS; i++) {
    accel_status_t status = conform_stream(ctx, ctx->device, &s[i]);
    if (status == ACCEL_OK)
      status = conform_buffer(ctx, ctx->device, 4096, &b[i]);
    if (status == ACCEL_OK) {
      status = accel_stream_fill_buffer(s[i], b[i], 0, (uint8_t)(i + 1), 4096);
    }
    if (status != ACCEL_OK) {
      return conform_fail_status(ctx, status, "stream, buffer or fill");
    }
  }
  unsigned char expected[4096];
  for (int i = 0; i < CONFORM_MANY_STREAMS; i++) {
    accel_status_t status = conform_stream_wait(ctx, s[i]);
    if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
    memset(expected, i + 1, sizeof(expected));
    if (!conform_verify(ctx, b[i], expected, sizeof(expected), "fill")) {
      return CONFORM_FAIL;
    }
  }
  return conform_report(ctx, CONFORM_PASS, "%d streams at once",
                        CONFORM_MANY_STREAMS);
}

// conform_stream_threads.c
conform_result_t conform_stream_shared_threads(conform_ctx_t* ctx,
                                               const void* arg);

static const conform_check_t conform_streams[] = {
    {"stream.in_order", conform_stream_in_order, NULL},
    {"stream.concurrent", conform_stream_concurrent, NULL},
    {"stream.wait_event", conform_stream_wait_event, NULL},
    {"stream.query", conform_stream_query, NULL},
    {"stream.synchronize", conform_stream_sync_check, NULL},
    {"stream.synchronize_busy", conform_stream_sync_busy, NULL},
    {"stream.release_waits", conform_stream_release_waits, NULL},
    {"stream.many", conform_stream_many, NULL},
    {"stream.shared_threads", conform_stream_shared_threads, NULL},
};

const conform_check_t* conform_stream_checks(size_t* out_count) {
  *out_count = sizeof(conform_streams) / sizeof(conform_streams[0]);
  return conform_streams;
}
