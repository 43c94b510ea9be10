// SPDX-License-Identifier: MIT
//
// Graphs of plain byte work. graph.bytes: a memset, a copy between two
// buffers and an overlapping copy within one buffer (memmove, plugin.h's
// copy_d2d), all at odd offsets, captured once and launched twice with
// fresh contents in between, each launch compared byte for byte with the
// same work done on the host: a native graph must replay every kind of
// node it captured, not only the ops and host copies of
// graph.capture_replay. graph.stream_order: a launch runs in stream
// order, after the work queued before it, not when it is enqueued.
// graph.end_capture: through the plugin's own table (direct.c), a stream
// whose capture has ended runs its work again, and captures again; the
// core never enqueues on its capture streams after the capture, so only
// the plugin's table shows a capture that never ends.
#include <accel/plugin.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

enum {
  CONFORM_GB_SIZE = 4099,   // bytes of each buffer
  CONFORM_GB_FILL_AT = 5,   // memset of b
  CONFORM_GB_FILL_N = 1000,
  CONFORM_GB_FILL_VALUE = 0x3c,
  CONFORM_GB_COPY_DST = 11,  // c <- b
  CONFORM_GB_COPY_SRC = 3,
  CONFORM_GB_COPY_N = 1500,
  CONFORM_GB_MOVE_DST = 1200,  // b <- b, overlapping: dst above src
  CONFORM_GB_MOVE_SRC = 1100,
  CONFORM_GB_MOVE_N = 900,
};

// The captured work, on `s`.
static accel_status_t conform_gb_work(accel_stream_t* s, accel_buffer_t* b,
                                      accel_buffer_t* c) {
  accel_status_t st = accel_stream_fill_buffer(
      s, b, CONFORM_GB_FILL_AT, CONFORM_GB_FILL_VALUE, CONFORM_GB_FILL_N);
  if (st == ACCEL_OK) {
    st = accel_stream_copy_buffer(s, c, CONFORM_GB_COPY_DST, b,
                                  CONFORM_GB_COPY_SRC, CONFORM_GB_COPY_N);
  }
  if (st == ACCEL_OK) {
    st = accel_stream_copy_buffer(s, b, CONFORM_GB_MOVE_DST, b,
                                  CONFORM_GB_MOVE_SRC, CONFORM_GB_MOVE_N);
  }
  return st;
}

// The same on the host.
static void conform_gb_expect(unsigned char* b, unsigned char* c) {
  memset(b + CONFORM_GB_FILL_AT, CONFORM_GB_FILL_VALUE, CONFORM_GB_FILL_N);
  memcpy(c + CONFORM_GB_COPY_DST, b + CONFORM_GB_COPY_SRC, CONFORM_GB_COPY_N);
  memmove(b + CONFORM_GB_MOVE_DST, b + CONFORM_GB_MOVE_SRC, CONFORM_GB_MOVE_N);
}

static conform_result_t conform_graph_bytes(conform_ctx_t* ctx,
                                            const void* arg) {
  (void)arg;
  accel_stream_t* s = NULL;
  accel_buffer_t* b = NULL;
  accel_buffer_t* c = NULL;
  unsigned char* want_b = conform_alloc(ctx, CONFORM_GB_SIZE);
  unsigned char* want_c = conform_alloc(ctx, CONFORM_GB_SIZE);
  if (want_b == NULL || want_c == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "out of host memory");
  }
  accel_status_t st = conform_stream(ctx, ctx->device, &s);
  if (st == ACCEL_OK) st = conform_buffer(ctx, ctx->device, CONFORM_GB_SIZE, &b);
  if (st == ACCEL_OK) st = conform_buffer(ctx, ctx->device, CONFORM_GB_SIZE, &c);
  if (st != ACCEL_OK) return conform_fail_status(ctx, st, "setup");
  st = accel_stream_begin_capture(s);
  if (st != ACCEL_OK) return conform_fail_status(ctx, st, "begin capture");
  st = conform_gb_work(s, b, c);
  accel_graph_t* graph = NULL;
  accel_status_t end = accel_stream_end_capture(s, &graph);
  if (st == ACCEL_OK) st = end;
  if (st != ACCEL_OK) {
    accel_graph_release(graph);  // nothing of it ran
    return conform_fail_status(ctx, st, "capture");
  }
  accel_graph_info_t info = {.struct_size = sizeof(info)};
  conform_result_t result = CONFORM_PASS;
  uint64_t rng = ctx->seed + 97;
  for (int launch = 0; launch < 2 && result == CONFORM_PASS; launch++) {
    // Fresh contents, so each launch has its own work to do.
    conform_rand_bytes(&rng, want_b, CONFORM_GB_SIZE);
    conform_rand_bytes(&rng, want_c, CONFORM_GB_SIZE);
    st = accel_buffer_write(b, 0, want_b, CONFORM_GB_SIZE);
    if (st == ACCEL_OK) st = accel_buffer_write(c, 0, want_c, CONFORM_GB_SIZE);
    if (st == ACCEL_OK) st = accel_graph_launch(graph, s);
    if (st != ACCEL_OK) {
      result = conform_fail_status(ctx, st, "write or accel_graph_launch");
      break;
    }
    st = conform_stream_wait(ctx, s);
    if (st != ACCEL_OK) {
      result = conform_fail_wait(ctx, st, "launch");
      break;
    }
    conform_gb_expect(want_b, want_c);
    char what[128];
    snprintf(what, sizeof(what),
             "launch %d of a captured memset and two copies, buffer b "
             "(memset, then a copy within b)",
             launch + 1);
    if (!conform_verify(ctx, b, want_b, CONFORM_GB_SIZE, what)) {
      result = CONFORM_FAIL;
      break;
    }
    snprintf(what, sizeof(what),
             "launch %d of a captured memset and two copies, buffer c "
             "(copied from b after the memset)",
             launch + 1);
    if (!conform_verify(ctx, c, want_c, CONFORM_GB_SIZE, what)) {
      result = CONFORM_FAIL;
    }
  }
  if (result == CONFORM_PASS) {
    bool native = accel_graph_query_info(graph, &info) == ACCEL_OK &&
                  info.native;
    result = conform_report(ctx, CONFORM_PASS,
                            "memset, copy and overlapping copy, 2 launches "
                            "(%s graph)",
                            native ? "native" : "replayed");
  }
  if (ctx->hung) {
    ctx->tainted = true;  // its launches may never finish: leak it
  } else {
    accel_graph_release(graph);
  }
  return result;
}

enum { CONFORM_GO_BYTES = 8 << 20 };

// One try of graph.stream_order with `rounds` heavy copies ahead: PASS,
// FAIL, or SKIP when the queued write had landed by the time the launch
// returned (`mark`, recorded behind it, says so; asking the stream before
// the launch is not enough: the write may land while the launch runs).
static conform_result_t conform_graph_order_try(
    conform_ctx_t* ctx, accel_stream_t* s, accel_event_t* mark,
    accel_graph_t* graph, accel_buffer_t* x, accel_buffer_t* y,
    unsigned char* old_x, unsigned char* new_x, int rounds) {
  uint64_t rng = ctx->seed + 98 + (uint64_t)rounds;
  conform_rand_bytes(&rng, old_x, CONFORM_GO_BYTES);
  conform_rand_bytes(&rng, new_x, CONFORM_GO_BYTES);
  accel_status_t st = accel_buffer_write(x, 0, old_x, CONFORM_GO_BYTES);
  if (st == ACCEL_OK) st = accel_buffer_fill(y, 0, 0xee, CONFORM_GO_BYTES);
  if (st == ACCEL_OK) st = conform_heavy_work(ctx, s, rounds);
  if (st == ACCEL_OK) {
    st = accel_stream_write_buffer(s, x, 0, new_x, CONFORM_GO_BYTES);
  }
  if (st == ACCEL_OK) st = accel_event_record(mark, s);
  if (st == ACCEL_OK) st = accel_graph_launch(graph, s);
  bool drained = false;
  if (st == ACCEL_OK) st = accel_event_query(mark, &drained);
  if (st != ACCEL_OK) {
    return conform_fail_status(ctx, st, "enqueue or accel_graph_launch");
  }
  st = conform_stream_wait(ctx, s);
  if (st != ACCEL_OK) return conform_fail_wait(ctx, st, "launch");
  if (!conform_verify(ctx, y, new_x, CONFORM_GO_BYTES,
                      "a graph's copy x -> y launched behind a queued "
                      "write of x (a run at launch time copies the old "
                      "x)")) {
    return CONFORM_FAIL;
  }
  return drained ? CONFORM_SKIP : CONFORM_PASS;
}

// graph_launch enqueues one run "in stream order" (plugin.h): behind
// heavy copies and a queued write of new bytes into x on the stream, a
// launch of a captured copy x -> y must copy the new bytes, not the old
// ones a run at launch time would see. When the write had landed by the
// time the launch returned (a fast device), again with twice the copies,
// up to 5 tries.
static conform_result_t conform_graph_stream_order(conform_ctx_t* ctx,
                                                   const void* arg) {
  (void)arg;
  accel_stream_t* s = NULL;
  accel_buffer_t* x = NULL;
  accel_buffer_t* y = NULL;
  accel_event_t* mark = NULL;
  accel_status_t st = conform_stream(ctx, ctx->device, &s);
  if (st == ACCEL_OK) st = conform_event(ctx, ctx->device, 0, &mark);
  if (st == ACCEL_OK) st = conform_buffer(ctx, ctx->device, CONFORM_GO_BYTES, &x);
  if (st == ACCEL_OK) st = conform_buffer(ctx, ctx->device, CONFORM_GO_BYTES, &y);
  if (st != ACCEL_OK) return conform_fail_status(ctx, st, "setup");
  // The queued write's source from accel_host_alloc() where the device
  // has pinned memory: a GPU backend may stage a pageable write at once.
  unsigned char* new_x = NULL;
  bool pinned = accel_host_alloc(ctx->device, CONFORM_GO_BYTES,
                                 (void**)&new_x) == ACCEL_OK;
  if (!pinned) new_x = conform_alloc(ctx, CONFORM_GO_BYTES);
  unsigned char* old_x = conform_alloc(ctx, CONFORM_GO_BYTES);
  if (old_x == NULL || new_x == NULL) {
    if (pinned) accel_host_free(ctx->device, new_x);
    return conform_report(ctx, CONFORM_FAIL, "out of host memory");
  }
  st = accel_stream_begin_capture(s);
  if (st == ACCEL_OK) {
    st = accel_stream_copy_buffer(s, y, 0, x, 0, CONFORM_GO_BYTES);
  }
  accel_graph_t* graph = NULL;
  if (accel_stream_is_capturing(s)) {
    accel_status_t end = accel_stream_end_capture(s, &graph);
    if (st == ACCEL_OK) st = end;
  }
  conform_result_t result = CONFORM_SKIP;
  int rounds = 4;
  if (st != ACCEL_OK) {
    result = conform_fail_status(ctx, st, "capture");
  }
  for (int i = 0; i < 5 && result == CONFORM_SKIP; i++) {
    rounds *= 2;
    result =
        conform_graph_order_try(ctx, s, mark, graph, x, y, old_x, new_x, rounds);
  }
  if (result == CONFORM_PASS) {
    result = conform_report(ctx, CONFORM_PASS,
                            "the launch ran after the work queued before it "
                            "(%d copies of 8 MiB ahead)",
                            rounds);
  } else if (result == CONFORM_SKIP) {
    result = conform_report(ctx, CONFORM_SKIP,
                            "the write had landed before every launch "
                            "returned: "
                            "nothing to see");
  }
  // A failed try may have left the write queued: drain the stream first
  // (bounded), and leak the memory and the graph if that hangs.
  if (!ctx->hung) (void)conform_stream_sync(ctx, s);
  if (ctx->hung) {
    ctx->tainted = true;
  } else {
    accel_graph_release(graph);
    if (pinned) accel_host_free(ctx->device, new_x);
  }
  return result;
}

// The plugin's capture entries, as the core reads them: NULL when the
// table is too small to hold one or the plugin leaves it NULL.
#define CONFORM_GB_OP(ops, field)                                          \
  (ACCEL_PLUGIN_HAS_FIELD((ops), accel_device_ops_t, field) ? (ops)->field \
                                                            : NULL)

enum { CONFORM_GE_SIZE = 4096, CONFORM_GE_HALF = CONFORM_GE_SIZE / 2 };

// Reads `mem` on `s` into `host` (first filled with 0xee, which no step
// writes) and synchronizes. Returns the first failing status.
static accel_status_t conform_ge_read(const conform_direct_t* d, void* s,
                                      void* mem, unsigned char* host) {
  memset(host, 0xee, CONFORM_GE_SIZE);
  accel_status_t st =
      d->ops->copy_d2h(d->device, s, host, mem, 0, CONFORM_GE_SIZE);
  if (st == ACCEL_OK) st = d->ops->stream_synchronize(s);
  return st;
}

// Index of the first byte of `host` in [from, to) that is not `value`, or
// -1 when all are.
static long conform_ge_differs(const unsigned char* host, size_t from,
                               size_t to, unsigned char value) {
  for (size_t i = from; i < to; i++) {
    if (host[i] != value) return (long)i;
  }
  return -1;
}

// The steps of graph.end_capture on stream `s` and memory `mem` of the
// directly opened device; the graphs it made go to `g` for the caller to
// destroy. Writes the detail and returns FAIL at the first wrong step.
static conform_result_t conform_ge_steps(conform_ctx_t* ctx,
                                         const conform_direct_t* d, void* s,
                                         void* mem, void* g[2],
                                         unsigned char* host) {
  const accel_device_ops_t* o = d->ops;
  const char* step = "memset before the capture";
  long at = -1;
  accel_status_t st = o->memset(d->device, NULL, mem, 0, 0x11, CONFORM_GE_SIZE);
  if (st == ACCEL_OK) {
    step = "stream_begin_capture";
    st = o->stream_begin_capture(s);
  }
  if (st == ACCEL_OK) {
    step = "the captured memset";
    st = o->memset(d->device, s, mem, 0, 0x22, CONFORM_GE_HALF);
    accel_status_t end = o->stream_end_capture(s, &g[0]);
    if (st == ACCEL_OK && end != ACCEL_OK) step = "stream_end_capture";
    if (st == ACCEL_OK) st = end;
  }
  if (st == ACCEL_OK && g[0] == NULL) {
    return conform_report(ctx, CONFORM_FAIL,
                          "stream_end_capture returned ACCEL_OK without a "
                          "graph");
  }
  // plugin.h: work is recorded "until stream_end_capture"; after it, a
  // read on the stream runs, and finds the captured memset not yet run.
  if (st == ACCEL_OK) {
    step = "a read on the stream after the capture";
    st = conform_ge_read(d, s, mem, host);
  }
  if (st != ACCEL_OK) {
    return conform_report(ctx, CONFORM_FAIL, "%s: %s: %s", step,
                          accel_status_string(st), conform_direct_message());
  }
  if (host[0] == 0xee && host[CONFORM_GE_SIZE - 1] == 0xee) {
    return conform_report(ctx, CONFORM_FAIL,
                          "a read enqueued after stream_end_capture did not "
                          "run by the stream's synchronize: the stream still "
                          "captures its work");
  }
  if ((at = conform_ge_differs(host, 0, CONFORM_GE_SIZE, 0x11)) >= 0) {
    return conform_report(ctx, CONFORM_FAIL,
                          "before any launch: byte %ld is 0x%02x, expected "
                          "0x11 (a captured memset ran when it was "
                          "captured?)",
                          at, host[at]);
  }
  step = "graph_launch";
  st = o->graph_launch(g[0], s);
  if (st == ACCEL_OK) {
    step = "a read after the launch";
    st = conform_ge_read(d, s, mem, host);
  }
  // The stream captures again: a second graph of a memset of the other
  // half.
  if (st == ACCEL_OK) {
    step = "stream_begin_capture on a stream whose capture has ended";
    st = o->stream_begin_capture(s);
  }
  if (st == ACCEL_OK) {
    step = "the second captured memset";
    st = o->memset(d->device, s, mem, CONFORM_GE_HALF, 0x33, CONFORM_GE_HALF);
    accel_status_t end = o->stream_end_capture(s, &g[1]);
    if (st == ACCEL_OK && end != ACCEL_OK) step = "the second stream_end_capture";
    if (st == ACCEL_OK) st = end;
  }
  if (st != ACCEL_OK) {
    return conform_report(ctx, CONFORM_FAIL, "%s: %s: %s", step,
                          accel_status_string(st), conform_direct_message());
  }
  if ((at = conform_ge_differs(host, 0, CONFORM_GE_HALF, 0x22)) >= 0 ||
      (at = conform_ge_differs(host, CONFORM_GE_HALF, CONFORM_GE_SIZE,
                               0x11)) >= 0) {
    return conform_report(ctx, CONFORM_FAIL,
                          "after the launch: byte %ld is 0x%02x, expected "
                          "0x%02x",
                          at, host[at], at < CONFORM_GE_HALF ? 0x22 : 0x11);
  }
  st = g[1] != NULL ? o->graph_launch(g[1], s) : ACCEL_ERROR_INTERNAL;
  if (st == ACCEL_OK) st = conform_ge_read(d, s, mem, host);
  if (st != ACCEL_OK) {
    return conform_report(ctx, CONFORM_FAIL,
                          "the second graph's launch and read: %s: %s",
                          accel_status_string(st), conform_direct_message());
  }
  if ((at = conform_ge_differs(host, 0, CONFORM_GE_HALF, 0x22)) >= 0 ||
      (at = conform_ge_differs(host, CONFORM_GE_HALF, CONFORM_GE_SIZE,
                               0x33)) >= 0) {
    return conform_report(ctx, CONFORM_FAIL,
                          "after the second graph's launch: byte %ld is "
                          "0x%02x, expected 0x%02x",
                          at, host[at], at < CONFORM_GE_HALF ? 0x22 : 0x33);
  }
  return CONFORM_PASS;
}

// A capture that ends (plugin.h, stream_begin_capture: work is recorded
// "until stream_end_capture"): on a stream of the plugin's own, a memset
// captured, then a read enqueued after the end must run (and find the
// memset not run), the graph's launch must run it, and the stream must
// capture a second graph. The core captures on streams of its own that it
// never enqueues on afterwards, so a capture that stays on after its end
// shows only here, through the plugin's table (direct.c). UNSUPPORTED
// without the capture entries.
static conform_result_t conform_graph_end_capture(conform_ctx_t* ctx,
                                                  const void* arg) {
  (void)arg;
  unsigned char* host = conform_alloc(ctx, CONFORM_GE_SIZE);
  if (host == NULL) return conform_report(ctx, CONFORM_FAIL, "host memory");
  conform_direct_t d;
  if (conform_direct_open(ctx, &d) != CONFORM_PASS) return CONFORM_FAIL;
  const accel_device_ops_t* o = d.ops;
  if (CONFORM_GB_OP(o, stream_begin_capture) == NULL ||
      CONFORM_GB_OP(o, stream_end_capture) == NULL ||
      CONFORM_GB_OP(o, graph_launch) == NULL ||
      CONFORM_GB_OP(o, graph_destroy) == NULL) {
    conform_direct_close(&d);
    return conform_report(ctx, CONFORM_UNSUPPORTED,
                          "the plugin has no native capture (the core "
                          "replays graphs)");
  }
  void* s = NULL;
  void* mem = NULL;
  void* g[2] = {NULL, NULL};
  conform_result_t result = CONFORM_PASS;
  accel_status_t st = o->stream_create(d.device, 0, &s);
  if (st == ACCEL_OK) st = o->mem_alloc(d.device, CONFORM_GE_SIZE, &mem);
  if (st != ACCEL_OK) {
    result = conform_report(ctx, CONFORM_FAIL, "setup: %s: %s",
                            accel_status_string(st), conform_direct_message());
  } else {
    result = conform_ge_steps(ctx, &d, s, mem, g, host);
  }
  if (s != NULL) (void)o->stream_synchronize(s);
  for (int i = 0; i < 2; i++) {
    if (g[i] != NULL) o->graph_destroy(g[i]);
  }
  if (s != NULL) o->stream_destroy(s);
  if (mem != NULL) o->mem_free(d.device, mem);
  conform_direct_close(&d);
  if (result != CONFORM_PASS) return result;
  return conform_report(ctx, CONFORM_PASS,
                        "a read after the capture ran, 2 graphs captured on "
                        "one stream and launched");
}

static const conform_check_t conform_graph_bytes_table[] = {
    {"graph.bytes", conform_graph_bytes, NULL},
    {"graph.stream_order", conform_graph_stream_order, NULL},
    {"graph.end_capture", conform_graph_end_capture, NULL},
};

const conform_check_t* conform_graph_bytes_checks(size_t* out_count) {
  *out_count =
      sizeof(conform_graph_bytes_table) / sizeof(conform_graph_bytes_table[0]);
  return conform_graph_bytes_table;
}
