// SPDX-License-Identifier: MIT
//
// Stream checks: in-order execution of a dependent chain, two streams
// making progress independently, a cross-stream wait on an event recorded
// after heavy work, query, synchronize, a release that waits for the work,
// and many streams at once. Waits are bounded (--timeout), so a stream that
// never drains fails its check.
#include <stdio.h>
#include <string.h>

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

static const conform_check_t conform_streams[] = {
    {"stream.in_order", conform_stream_in_order, NULL},
    {"stream.concurrent", conform_stream_concurrent, NULL},
    {"stream.wait_event", conform_stream_wait_event, NULL},
    {"stream.query", conform_stream_query, NULL},
    {"stream.synchronize", conform_stream_sync_check, NULL},
    {"stream.release_waits", conform_stream_release_waits, NULL},
    {"stream.many", conform_stream_many, NULL},
};

const conform_check_t* conform_stream_checks(size_t* out_count) {
  *out_count = sizeof(conform_streams) / sizeof(conform_streams[0]);
  return conform_streams;
}
