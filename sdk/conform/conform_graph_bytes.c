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

static const conform_check_t conform_graph_bytes_table[] = {
    {"graph.bytes", conform_graph_bytes, NULL},
    {"graph.stream_order", conform_graph_stream_order, NULL},
};

const conform_check_t* conform_graph_bytes_checks(size_t* out_count) {
  *out_count =
      sizeof(conform_graph_bytes_table) / sizeof(conform_graph_bytes_table[0]);
  return conform_graph_bytes_table;
}
