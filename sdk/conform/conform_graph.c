// SPDX-License-Identifier: MIT
//
// Graphs (<accel/graph.h>): work captured on a stream runs only when the
// graph is launched, gives the results of the same work enqueued one by
// one, launch after launch, on the capture stream and another one; calls
// illegal during a capture fail, invalidate it and leave the stream
// usable; a kernel node's arguments and a buffer binding change between
// launches; allocations of the capture come from the graph's pool and go
// with it; default-generator fills draw new numbers at every launch. The
// core captures for every plugin (natively where the plugin has the ABI
// 1.4 capture entries, else by replaying its record), so every device
// must pass; each check names which kind of graph it ran.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"

enum { CONFORM_GRAPH_N = 777 };

// Releases `graph`, unless a wait of the check timed out: its launches
// may never finish, and the last release waits for them, so it is leaked
// like the check's other handles (conform.h).
static void conform_graph_release(conform_ctx_t* ctx, accel_graph_t* graph) {
  if (ctx->hung) {
    ctx->tainted = true;
    return;
  }
  accel_graph_release(graph);
}

// "native" or "replayed" for `graph` (after its first launch).
static const char* conform_graph_kind(accel_graph_t* graph) {
  accel_graph_info_t info = {.struct_size = sizeof(info)};
  if (accel_graph_query_info(graph, &info) != ACCEL_OK) return "?";
  return info.native ? "native" : "replayed";
}

// Ends the capture of `stream` after a failure inside it, so the stream
// is usable again (the capture, and its message, are dropped).
static void conform_graph_abandon(accel_stream_t* stream) {
  if (!accel_stream_is_capturing(stream)) return;
  accel_graph_t* graph = NULL;
  (void)accel_stream_end_capture(stream, &graph);
  accel_graph_release(graph);  // nothing of it ran
}

// Fills `want` with ((x + 2) * 3) for x = host[i] as f32 (what
// conform_graph_work computes).
static void conform_graph_expect(const float* host, float* want) {
  for (int i = 0; i < CONFORM_GRAPH_N; i++) {
    want[i] = (host[i] + 2.0f) * 3.0f;
  }
}

// Copies `host` into x, fills y with 2, z = (x + y) * 3, reads z to `out`.
static accel_status_t conform_graph_work(accel_stream_t* s, accel_buffer_t* x,
                                         accel_buffer_t* y, accel_buffer_t* z,
                                         const float* host, float* out) {
  size_t bytes = CONFORM_GRAPH_N * sizeof(float);
  accel_status_t st = accel_stream_write_buffer(s, x, 0, host, bytes);
  if (st == ACCEL_OK) {
    st = accel_op_fill(s, y, 0, ACCEL_DTYPE_F32, CONFORM_GRAPH_N, 2.0);
  }
  if (st == ACCEL_OK) {
    st = accel_op_add(s, z, 0, x, 0, y, 0, ACCEL_DTYPE_F32, CONFORM_GRAPH_N);
  }
  if (st == ACCEL_OK) {
    st = accel_op_scale(s, z, 0, ACCEL_DTYPE_F32, CONFORM_GRAPH_N, 3.0);
  }
  if (st == ACCEL_OK) st = accel_stream_read_buffer(s, z, 0, out, bytes);
  return st;
}

// graph.capture_replay and graph.other_stream: `streams` launch streams
// (the capture stream first), `rounds` launches alternating over them.
static conform_result_t conform_graph_replay(conform_ctx_t* ctx, int streams,
                                             int rounds) {
  accel_stream_t* s[2] = {NULL, NULL};
  accel_buffer_t *x = NULL, *y = NULL, *z = NULL;
  size_t bytes = CONFORM_GRAPH_N * sizeof(float);
  float* host = conform_alloc(ctx, bytes);
  float* out = conform_alloc(ctx, bytes);
  float* want = conform_alloc(ctx, bytes);
  if (host == NULL || out == NULL || want == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "out of host memory");
  }
  accel_status_t st = conform_stream(ctx, ctx->device, &s[0]);
  if (st == ACCEL_OK) st = conform_stream(ctx, ctx->device, &s[1]);
  if (st == ACCEL_OK) st = conform_buffer(ctx, ctx->device, bytes, &x);
  if (st == ACCEL_OK) st = conform_buffer(ctx, ctx->device, bytes, &y);
  if (st == ACCEL_OK) st = conform_buffer(ctx, ctx->device, bytes, &z);
  if (st == ACCEL_OK) st = accel_buffer_fill(z, 0, 0, bytes);
  if (st != ACCEL_OK) return conform_fail_status(ctx, st, "setup");
  memset(out, 0xff, bytes);
  st = accel_stream_begin_capture(s[0]);
  if (st != ACCEL_OK) return conform_fail_status(ctx, st, "begin capture");
  st = conform_graph_work(s[0], x, y, z, host, out);
  if (st != ACCEL_OK) {
    conform_graph_abandon(s[0]);
    return conform_fail_status(ctx, st, "enqueue during the capture");
  }
  accel_graph_t* graph = NULL;
  st = accel_stream_end_capture(s[0], &graph);
  if (st != ACCEL_OK) return conform_fail_status(ctx, st, "end capture");
  conform_result_t result = CONFORM_PASS;
  size_t nodes = accel_graph_node_count(graph);
  // Nothing ran during the capture.
  st = conform_stream_wait(ctx, s[0]);
  uint32_t first = 1;
  if (st == ACCEL_OK) st = accel_buffer_read(z, 0, &first, sizeof(first));
  if (st != ACCEL_OK) {
    result = conform_fail_status(ctx, st, "read after the capture");
  } else if (nodes != 5 || first != 0 || out[0] == out[0]) {
    result = conform_report(ctx, CONFORM_FAIL,
                            "after the capture: %zu nodes (expected 5), z[0] "
                            "bits 0x%08x (expected 0: nothing may run), host "
                            "output %s",
                            nodes, first,
                            out[0] == out[0] ? "written" : "untouched");
  }
  for (int r = 0; r < rounds && result == CONFORM_PASS; r++) {
    accel_stream_t* on = s[r % streams];
    for (int i = 0; i < CONFORM_GRAPH_N; i++) host[i] = (float)(i * 7 - r);
    conform_graph_expect(host, want);
    st = accel_graph_launch(graph, on);
    if (st != ACCEL_OK) {
      result = conform_fail_status(ctx, st, "accel_graph_launch");
      break;
    }
    st = conform_stream_wait(ctx, on);
    if (st != ACCEL_OK) {
      result = conform_fail_wait(ctx, st, "launch");
      break;
    }
    for (int i = 0; i < CONFORM_GRAPH_N; i++) {
      if (memcmp(&out[i], &want[i], sizeof(float)) != 0) {
        result =
            conform_report(ctx, CONFORM_FAIL,
                           "launch %d on stream %d: element %d is %g, "
                           "expected %g",
                           r, r % streams, i, (double)out[i], (double)want[i]);
        break;
      }
    }
  }
  if (result == CONFORM_PASS) {
    result = conform_report(
        ctx, CONFORM_PASS, "5 nodes, %d launches on %d stream%s (%s graph)",
        rounds, streams, streams > 1 ? "s" : "", conform_graph_kind(graph));
  }
  conform_graph_release(ctx, graph);
  return result;
}

static conform_result_t conform_graph_capture_replay(conform_ctx_t* ctx,
                                                     const void* arg) {
  (void)arg;
  return conform_graph_replay(ctx, 1, 3);
}

static conform_result_t conform_graph_other_stream(conform_ctx_t* ctx,
                                                   const void* arg) {
  (void)arg;
  return conform_graph_replay(ctx, 2, 6);
}

// Many launches of a one-node graph (x += 1) alternating over two streams:
// launches of one graph are ordered, so x counts them all.
static conform_result_t conform_graph_many(conform_ctx_t* ctx,
                                           const void* arg) {
  (void)arg;
  enum { LAUNCHES = 300 };
  accel_stream_t *a = NULL, *b = NULL;
  accel_buffer_t *x = NULL, *one = NULL;
  int32_t v = 1;
  accel_status_t st = conform_stream(ctx, ctx->device, &a);
  if (st == ACCEL_OK) st = conform_stream(ctx, ctx->device, &b);
  if (st == ACCEL_OK) st = conform_buffer(ctx, ctx->device, 4, &x);
  if (st == ACCEL_OK) st = conform_buffer(ctx, ctx->device, 4, &one);
  if (st == ACCEL_OK) st = accel_buffer_write(one, 0, &v, 4);
  if (st == ACCEL_OK) st = accel_buffer_fill(x, 0, 0, 4);
  if (st != ACCEL_OK) return conform_fail_status(ctx, st, "setup");
  st = accel_stream_begin_capture(a);
  if (st == ACCEL_OK) {
    st = accel_op_add(a, x, 0, x, 0, one, 0, ACCEL_DTYPE_I32, 1);
  }
  accel_graph_t* graph = NULL;
  accel_status_t end = accel_stream_end_capture(a, &graph);
  if (st == ACCEL_OK) st = end;
  if (st != ACCEL_OK) {
    conform_graph_release(ctx, graph);
    return conform_fail_status(ctx, st, "capture");
  }
  for (int i = 0; i < LAUNCHES && st == ACCEL_OK; i++) {
    st = accel_graph_launch(graph, (i / 3) % 2 ? b : a);
  }
  if (st != ACCEL_OK) {
    conform_graph_release(ctx, graph);
    return conform_fail_status(ctx, st, "accel_graph_launch");
  }
  st = conform_stream_wait(ctx, a);
  if (st == ACCEL_OK) st = conform_stream_wait(ctx, b);
  if (st != ACCEL_OK) {
    conform_graph_release(ctx, graph);
    return conform_fail_wait(ctx, st, "launches");
  }
  const char* kind = conform_graph_kind(graph);
  conform_graph_release(ctx, graph);
  v = 0;
  st = accel_buffer_read(x, 0, &v, 4);
  if (st != ACCEL_OK) return conform_fail_status(ctx, st, "read");
  if (v != LAUNCHES) {
    return conform_report(ctx, CONFORM_FAIL,
                          "x is %d after %d launches of x += 1 on two "
                          "streams (launches of one graph must be ordered)",
                          (int)v, LAUNCHES);
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%d launches alternating over two streams (%s graph)",
                        LAUNCHES, kind);
}

// One illegal call during a capture.
typedef struct conform_graph_illegal {
  const char* name;
  int which;
} conform_graph_illegal_t;

static accel_status_t conform_graph_illegal_call(conform_ctx_t* ctx, int which,
                                                 accel_stream_t* s,
                                                 accel_stream_t* other,
                                                 accel_buffer_t* used,
                                                 accel_event_t* event) {
  bool done = false;
  uint8_t byte = 0;
  switch (which) {
    case 0:
      return accel_stream_synchronize(s);
    case 1:
      return accel_stream_query(s, &done);
    case 2:
      return accel_device_synchronize(ctx->device);
    case 3:
      return accel_event_synchronize(event);
    case 4:
      return accel_event_query(event, &done);
    case 5:
      return accel_buffer_read(used, 0, &byte, 1);
    case 6:
      return accel_buffer_write(used, 0, &byte, 1);
    default:
      return accel_stream_wait_event(other, event);
  }
}

static const char* const conform_graph_illegal_names[] = {
    "accel_stream_synchronize", "accel_stream_query",
    "accel_device_synchronize", "accel_event_synchronize",
    "accel_event_query",        "accel_buffer_read",
    "accel_buffer_write",       "accel_stream_wait_event (another stream)"};

static conform_result_t conform_graph_illegal(conform_ctx_t* ctx,
                                              const void* arg) {
  (void)arg;
  accel_stream_t *s = NULL, *other = NULL;
  accel_buffer_t *used = NULL, *spare = NULL;
  accel_event_t* event = NULL;
  accel_status_t st = conform_stream(ctx, ctx->device, &s);
  if (st == ACCEL_OK) st = conform_stream(ctx, ctx->device, &other);
  if (st == ACCEL_OK) st = conform_buffer(ctx, ctx->device, 256, &used);
  if (st == ACCEL_OK) st = conform_buffer(ctx, ctx->device, 256, &spare);
  if (st == ACCEL_OK) st = conform_event(ctx, ctx->device, 0, &event);
  if (st == ACCEL_OK) st = accel_buffer_fill(used, 0, 0, 256);
  if (st != ACCEL_OK) return conform_fail_status(ctx, st, "setup");
  size_t count = sizeof(conform_graph_illegal_names) /
                 sizeof(conform_graph_illegal_names[0]);
  for (size_t k = 0; k < count; k++) {
    const char* what = conform_graph_illegal_names[k];
    st = accel_stream_begin_capture(s);
    if (st == ACCEL_OK) st = accel_stream_fill_buffer(s, used, 0, 0x5a, 256);
    if (st == ACCEL_OK) st = accel_event_record(event, s);
    // Legal during the capture: another stream, another buffer.
    if (st == ACCEL_OK) st = accel_stream_fill_buffer(other, spare, 0, 1, 256);
    if (st == ACCEL_OK) st = conform_stream_wait(ctx, other);
    uint8_t byte = 0;
    if (st == ACCEL_OK) st = accel_buffer_read(spare, 0, &byte, 1);
    if (st != ACCEL_OK) {
      conform_graph_abandon(s);
      return conform_report(ctx, CONFORM_FAIL,
                            "before %s: a legal call failed during the "
                            "capture: %s: %s",
                            what, accel_status_string(st), accel_last_error());
    }
    st = conform_graph_illegal_call(ctx, (int)k, s, other, used, event);
    if (st != ACCEL_ERROR_INVALID_ARGUMENT) {
      conform_graph_abandon(s);
      return conform_report(ctx, CONFORM_FAIL,
                            "%s during a capture returned %s, expected "
                            "ACCEL_ERROR_INVALID_ARGUMENT",
                            what, accel_status_string(st));
    }
    // Invalidated: later enqueues fail, the end gives no graph.
    accel_status_t later = accel_stream_fill_buffer(s, used, 0, 0x77, 256);
    accel_graph_t* graph = NULL;
    accel_status_t end = accel_stream_end_capture(s, &graph);
    conform_graph_release(ctx, graph);
    if (later != ACCEL_ERROR_INVALID_ARGUMENT ||
        end != ACCEL_ERROR_INVALID_ARGUMENT || graph != NULL ||
        accel_stream_is_capturing(s)) {
      conform_graph_abandon(s);
      return conform_report(ctx, CONFORM_FAIL,
                            "after %s: the next enqueue returned %s and the "
                            "end %s with %s graph (expected "
                            "INVALID_ARGUMENT twice, no graph, capture over)",
                            what, accel_status_string(later),
                            accel_status_string(end),
                            graph != NULL ? "a" : "no");
    }
    // The stream works again; nothing of the capture ran.
    st = accel_stream_fill_buffer(s, spare, 0, 2, 256);
    if (st == ACCEL_OK) st = conform_stream_wait(ctx, s);
    if (st == ACCEL_OK) st = conform_event_wait(ctx, event);
    if (st == ACCEL_OK) st = accel_buffer_read(used, 0, &byte, 1);
    if (st != ACCEL_OK) {
      return conform_report(ctx, CONFORM_FAIL,
                            "after %s and the end of the capture the stream "
                            "does not work: %s: %s",
                            what, accel_status_string(st), accel_last_error());
    }
    if (byte != 0) {
      return conform_report(ctx, CONFORM_FAIL,
                            "after %s: captured work ran (byte 0x%02x)", what,
                            byte);
    }
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%zu illegal calls refused, capture invalidated, "
                        "stream usable after each",
                        count);
}

// A kernel node's arguments change between launches, and a buffer is
// rebound everywhere the graph uses it.
static conform_result_t conform_graph_update(conform_ctx_t* ctx,
                                             const void* arg) {
  (void)arg;
  char path[1024] = "";
  accel_kernel_t* kernel = NULL;
  CONFORM_GET_KERNEL(ctx, CONFORM_ADD_ONE, kernel, path);
  enum { M = 300 };
  int32_t init[M], got[M];
  for (int i = 0; i < M; i++) init[i] = i * 5;
  accel_stream_t* s = NULL;
  accel_buffer_t *a = NULL, *b = NULL, *c = NULL;
  accel_status_t st = conform_stream(ctx, ctx->device, &s);
  if (st == ACCEL_OK) st = conform_buffer(ctx, ctx->device, sizeof(init), &a);
  if (st == ACCEL_OK) st = conform_buffer(ctx, ctx->device, sizeof(init), &b);
  if (st == ACCEL_OK) st = conform_buffer(ctx, ctx->device, sizeof(init), &c);
  if (st == ACCEL_OK) st = accel_buffer_write(a, 0, init, sizeof(init));
  if (st == ACCEL_OK) st = accel_buffer_write(b, 0, init, sizeof(init));
  if (st == ACCEL_OK) st = accel_buffer_write(c, 0, init, sizeof(init));
  if (st != ACCEL_OK) return conform_fail_status(ctx, st, "setup");
  // Grids over all M elements: the update raises n to 200.
  conform_add_one_t launch, update;
  conform_add_one_init(ctx, &launch, a, 0, 100, M);
  conform_add_one_init(ctx, &update, b, 0, 200, M);
  accel_graph_t* graph = NULL;
  st = accel_stream_begin_capture(s);
  if (st == ACCEL_OK) st = conform_add_one_launch(&launch, kernel, s);
  // Also an op on `a`, for the rebinding: a += a.
  if (st == ACCEL_OK) {
    st = accel_op_add(s, a, 0, a, 0, a, 0, ACCEL_DTYPE_I32, M);
  }
  accel_status_t end = accel_stream_end_capture(s, &graph);
  if (st == ACCEL_OK) st = end;
  launch.n = 7;  // values are copied at capture
  // Launch 1: a[i < 100] += 1, then a doubles.
  if (st == ACCEL_OK) st = accel_graph_launch(graph, s);
  if (st == ACCEL_OK) st = conform_stream_wait(ctx, s);
  // Launch 2: the kernel on b's first 200 elements; the add still on a.
  if (st == ACCEL_OK) {
    st = accel_graph_update_launch(graph, 0, NULL, 2, update.args);
  }
  if (st == ACCEL_OK) st = accel_graph_launch(graph, s);
  if (st == ACCEL_OK) st = conform_stream_wait(ctx, s);
  // Launch 3: a rebound to c everywhere: the add doubles c (the kernel
  // node reads b since the update).
  size_t changed = 0;
  if (st == ACCEL_OK) st = accel_graph_rebind_buffer(graph, a, c, &changed);
  if (st == ACCEL_OK) st = accel_graph_launch(graph, s);
  if (st == ACCEL_OK) st = conform_stream_wait(ctx, s);
  const char* kind = graph != NULL ? conform_graph_kind(graph) : "no";
  conform_graph_release(ctx, graph);
  if (st != ACCEL_OK) {
    conform_graph_abandon(s);
    return conform_fail_status(ctx, st, "capture, update or launch");
  }
  if (changed != 3) {
    return conform_report(ctx, CONFORM_FAIL,
                          "rebinding a changed %zu operands, expected 3 (the "
                          "add's z, x and y)",
                          changed);
  }
  // Expected contents.
  int32_t want_a[M], want_b[M], want_c[M];
  for (int i = 0; i < M; i++) {
    int32_t v = init[i];
    want_a[i] = (v + (i < 100)) * 2 * 2;  // launches 1 and 2 double it
    want_b[i] = v + (i < 200) * 2;        // launches 2 and 3
    want_c[i] = v * 2;                    // launch 3
  }
  accel_buffer_t* bufs[3] = {a, b, c};
  const int32_t* wants[3] = {want_a, want_b, want_c};
  for (int k = 0; k < 3; k++) {
    st = accel_buffer_read(bufs[k], 0, got, sizeof(got));
    if (st != ACCEL_OK) return conform_fail_status(ctx, st, "read");
    for (int i = 0; i < M; i++) {
      if (got[i] != wants[k][i]) {
        return conform_report(ctx, CONFORM_FAIL,
                              "buffer %c element %d is %d, expected %d "
                              "(kernel update or rebind not applied)",
                              "abc"[k], i, (int)got[i], (int)wants[k][i]);
      }
    }
  }
  return conform_report(ctx, CONFORM_PASS,
                        "kernel arguments updated, a buffer rebound (3 "
                        "operands) between launches (%s graph)",
                        kind);
}

// Allocations of the capture come from the graph's pool: reserved while
// the graph lives, every launch reuses them, released with the graph (and
// the program's own pool buffers).
static conform_result_t conform_graph_pool(conform_ctx_t* ctx,
                                           const void* arg) {
  (void)arg;
  enum { M = 4096 };
  accel_stream_t* s = NULL;
  accel_status_t st = conform_stream(ctx, ctx->device, &s);
  if (st != ACCEL_OK) return conform_fail_status(ctx, st, "stream");
  accel_memory_stats_t before = {.struct_size = sizeof(before)};
  st = accel_device_query_memory_stats(ctx->device, &before);
  if (st != ACCEL_OK) return conform_fail_status(ctx, st, "memory stats");
  accel_buffer_t *tmp = NULL, *out = NULL;
  accel_graph_t* graph = NULL;
  st = accel_stream_begin_capture(s);
  if (st == ACCEL_OK) st = accel_stream_alloc_buffer(s, M * 4, &tmp);
  if (st == ACCEL_OK) st = accel_stream_alloc_buffer(s, M * 4, &out);
  if (st == ACCEL_OK) st = accel_op_fill(s, tmp, 0, ACCEL_DTYPE_F32, M, 1.5);
  if (st == ACCEL_OK) {
    st = accel_op_add(s, out, 0, tmp, 0, tmp, 0, ACCEL_DTYPE_F32, M);
  }
  accel_buffer_release(tmp);  // freed inside the capture: the pool's now
  accel_status_t end = accel_stream_end_capture(s, &graph);
  if (st == ACCEL_OK) st = end;
  if (st != ACCEL_OK) {
    conform_graph_release(ctx, graph);
    accel_buffer_release(out);
    return conform_fail_status(ctx, st, "capture");
  }
  accel_graph_info_t info = {.struct_size = sizeof(info)};
  st = accel_graph_query_info(graph, &info);
  conform_result_t result = CONFORM_PASS;
  // ACCEL_ALLOCATOR=raw has no pool: the graph holds plain buffers.
  const char* mode = getenv("ACCEL_ALLOCATOR");
  bool raw = mode != NULL && strcmp(mode, "raw") == 0;
  if (st == ACCEL_OK && !raw && info.pool_bytes < 2 * M * 4) {
    result = conform_report(ctx, CONFORM_FAIL,
                            "the graph's pool holds %llu bytes after two "
                            "allocations of %d",
                            (unsigned long long)info.pool_bytes, M * 4);
  }
  float got[M];
  for (int r = 0; r < 3 && st == ACCEL_OK && result == CONFORM_PASS; r++) {
    st = accel_buffer_fill(out, 0, 0, M * 4);
    if (st == ACCEL_OK) st = accel_graph_launch(graph, s);
    if (st == ACCEL_OK) st = conform_stream_wait(ctx, s);
    if (st == ACCEL_OK) st = accel_buffer_read(out, 0, got, sizeof(got));
    if (st == ACCEL_OK && (got[0] != 3.0f || got[M - 1] != 3.0f)) {
      result = conform_report(ctx, CONFORM_FAIL,
                              "launch %d: out[0] %g, out[%d] %g, expected 3", r,
                              (double)got[0], M - 1, (double)got[M - 1]);
    }
  }
  accel_memory_stats_t during = {.struct_size = sizeof(during)};
  if (st == ACCEL_OK) {
    st = accel_device_query_memory_stats(ctx->device, &during);
  }
  conform_graph_release(ctx, graph);
  // `out` is the program's: valid after the graph.
  if (st == ACCEL_OK && result == CONFORM_PASS) {
    st = accel_buffer_read(out, 0, got, sizeof(got));
    if (st == ACCEL_OK && got[0] != 3.0f) {
      result = conform_report(ctx, CONFORM_FAIL,
                              "a pool buffer held by the program lost its "
                              "contents when the graph was released");
    }
  }
  accel_buffer_release(out);
  accel_memory_stats_t after = {.struct_size = sizeof(after)};
  if (st == ACCEL_OK) {
    st = accel_device_query_memory_stats(ctx->device, &after);
  }
  if (st != ACCEL_OK) return conform_fail_status(ctx, st, "pool");
  if (result != CONFORM_PASS) return result;
  if (during.allocated_bytes < before.allocated_bytes + M * 4 ||
      after.allocated_bytes != before.allocated_bytes) {
    return conform_report(ctx, CONFORM_FAIL,
                          "allocated bytes %llu before the capture, %llu "
                          "with the graph, %llu after its release (the "
                          "pool must hold its memory until then, and give "
                          "it all back)",
                          (unsigned long long)before.allocated_bytes,
                          (unsigned long long)during.allocated_bytes,
                          (unsigned long long)after.allocated_bytes);
  }
  return conform_report(ctx, CONFORM_PASS,
                        "pool of %llu bytes, 3 launches, released with the "
                        "graph",
                        (unsigned long long)info.pool_bytes);
}

// Default-generator fills in a graph draw, at each launch, what the same
// fills enqueued one by one draw, and advance the generator per launch.
static conform_result_t conform_graph_rng(conform_ctx_t* ctx, const void* arg) {
  (void)arg;
  enum { M = 1001, LAUNCHES = 3 };
  accel_stream_t* s = NULL;
  accel_buffer_t* buf = NULL;
  accel_status_t st = conform_stream(ctx, ctx->device, &s);
  if (st == ACCEL_OK) st = conform_buffer(ctx, ctx->device, 2 * M * 4, &buf);
  if (st != ACCEL_OK) return conform_fail_status(ctx, st, "setup");
  uint64_t seed = ctx->seed ^ 0x9e3779b97f4a7c15ull;
  float* want = conform_alloc(ctx, (size_t)LAUNCHES * 2 * M * 4);
  float* got = conform_alloc(ctx, 2 * M * 4);
  if (want == NULL || got == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "out of host memory");
  }
  st = accel_device_manual_seed(ctx->device, seed);
  for (int r = 0; r < LAUNCHES && st == ACCEL_OK; r++) {
    st = accel_op_random_uniform(s, buf, 0, ACCEL_DTYPE_F32, M, -1, 1);
    if (st == ACCEL_OK) {
      st = accel_op_random_normal(s, buf, M * 4, ACCEL_DTYPE_F32, M, 0, 1);
    }
    if (st == ACCEL_OK) st = conform_stream_wait(ctx, s);
    if (st == ACCEL_OK) {
      st = accel_buffer_read(buf, 0, want + (size_t)r * 2 * M, 2 * M * 4);
    }
  }
  if (st == ACCEL_ERROR_UNSUPPORTED) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "no random fills: %s",
                          accel_last_error());
  }
  if (st != ACCEL_OK) return conform_fail_status(ctx, st, "eager fills");
  accel_graph_t* graph = NULL;
  st = accel_device_manual_seed(ctx->device, seed);
  if (st == ACCEL_OK) st = accel_stream_begin_capture(s);
  if (st == ACCEL_OK) {
    st = accel_op_random_uniform(s, buf, 0, ACCEL_DTYPE_F32, M, -1, 1);
  }
  if (st == ACCEL_OK) {
    st = accel_op_random_normal(s, buf, M * 4, ACCEL_DTYPE_F32, M, 0, 1);
  }
  if (st == ACCEL_OK) {
    st = accel_stream_end_capture(s, &graph);
  } else {
    conform_graph_abandon(s);
  }
  uint64_t got_seed = 0, offset = 1;
  if (st == ACCEL_OK) {
    st = accel_device_rng_state_get(ctx->device, &got_seed, &offset);
  }
  conform_result_t result = CONFORM_PASS;
  if (st == ACCEL_OK && offset != 0) {
    result = conform_report(ctx, CONFORM_FAIL,
                            "the capture advanced the generator to offset "
                            "%llu; it must not",
                            (unsigned long long)offset);
  }
  for (int r = 0; r < LAUNCHES && st == ACCEL_OK && result == CONFORM_PASS;
       r++) {
    st = accel_graph_launch(graph, s);
    if (st == ACCEL_OK) st = conform_stream_wait(ctx, s);
    if (st == ACCEL_OK) st = accel_buffer_read(buf, 0, got, 2 * M * 4);
    if (st == ACCEL_OK &&
        memcmp(got, want + (size_t)r * 2 * M, 2 * M * 4) != 0) {
      result =
          conform_report(ctx, CONFORM_FAIL,
                         "launch %d drew other numbers than the same "
                         "fills enqueued one by one (got %g, expected "
                         "%g first)",
                         r, (double)got[0], (double)want[(size_t)r * 2 * M]);
    }
  }
  uint64_t blocks = 2 * ((M + 3) / 4);
  if (st == ACCEL_OK && result == CONFORM_PASS) {
    st = accel_device_rng_state_get(ctx->device, &got_seed, &offset);
    if (st == ACCEL_OK && (got_seed != seed || offset != LAUNCHES * blocks)) {
      result = conform_report(ctx, CONFORM_FAIL,
                              "after %d launches the generator is at seed "
                              "%llu offset %llu, expected offset %llu",
                              LAUNCHES, (unsigned long long)got_seed,
                              (unsigned long long)offset,
                              (unsigned long long)(LAUNCHES * blocks));
    }
  }
  const char* kind = graph != NULL ? conform_graph_kind(graph) : "no";
  conform_graph_release(ctx, graph);
  if (st != ACCEL_OK) return conform_fail_status(ctx, st, "graph fills");
  if (result != CONFORM_PASS) return result;
  return conform_report(ctx, CONFORM_PASS,
                        "%d launches drew new numbers, offset +%llu blocks "
                        "each (%s graph)",
                        LAUNCHES, (unsigned long long)blocks, kind);
}

// A captured GEMM (whose workspace, where the backend wants one, comes
// from the graph's pool) gives the bytes of the same GEMM enqueued.
static conform_result_t conform_graph_gemm(conform_ctx_t* ctx,
                                           const void* arg) {
  (void)arg;
  enum { D = 24 };
  float a[D * D], b[D * D], want[D * D], got[D * D];
  uint64_t state = ctx->seed;
  for (int i = 0; i < D * D; i++) {
    a[i] = (float)conform_rand_range(&state, -1, 1);
    b[i] = (float)conform_rand_range(&state, -1, 1);
  }
  accel_stream_t* s = NULL;
  accel_buffer_t *ba = NULL, *bb = NULL, *bc = NULL;
  accel_status_t st = conform_stream(ctx, ctx->device, &s);
  if (st == ACCEL_OK) st = conform_buffer(ctx, ctx->device, sizeof(a), &ba);
  if (st == ACCEL_OK) st = conform_buffer(ctx, ctx->device, sizeof(a), &bb);
  if (st == ACCEL_OK) st = conform_buffer(ctx, ctx->device, sizeof(a), &bc);
  if (st == ACCEL_OK) st = accel_buffer_write(ba, 0, a, sizeof(a));
  if (st == ACCEL_OK) st = accel_buffer_write(bb, 0, b, sizeof(b));
  if (st != ACCEL_OK) return conform_fail_status(ctx, st, "setup");
  accel_gemm_t g;
  accel_gemm_init(&g);
  g.m = g.n = g.k = D;
  g.a = ba;
  g.b = bb;
  g.c = bc;
  st = accel_op_gemm(s, &g);
  if (st == ACCEL_ERROR_UNSUPPORTED) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "no GEMM: %s",
                          accel_last_error());
  }
  if (st == ACCEL_OK) st = conform_stream_wait(ctx, s);
  if (st == ACCEL_OK) st = accel_buffer_read(bc, 0, want, sizeof(want));
  if (st == ACCEL_OK) st = accel_buffer_fill(bc, 0, 0, sizeof(want));
  if (st != ACCEL_OK) return conform_fail_status(ctx, st, "eager GEMM");
  accel_graph_t* graph = NULL;
  st = accel_stream_begin_capture(s);
  if (st == ACCEL_OK) st = accel_op_gemm(s, &g);
  accel_status_t end = accel_stream_end_capture(s, &graph);
  if (st == ACCEL_OK) st = end;
  for (int r = 0; r < 2 && st == ACCEL_OK; r++) {
    st = accel_graph_launch(graph, s);
  }
  if (st == ACCEL_OK) st = conform_stream_wait(ctx, s);
  if (st == ACCEL_OK) st = accel_buffer_read(bc, 0, got, sizeof(got));
  const char* kind = graph != NULL ? conform_graph_kind(graph) : "no";
  conform_graph_release(ctx, graph);
  if (st != ACCEL_OK) return conform_fail_status(ctx, st, "graph GEMM");
  if (memcmp(got, want, sizeof(got)) != 0) {
    return conform_report(ctx, CONFORM_FAIL,
                          "the captured GEMM gave other bytes than the "
                          "enqueued one");
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%dx%dx%d f32 GEMM, 2 launches (%s graph)", D, D, D,
                        kind);
}

static const conform_check_t conform_graphs[] = {
    {"graph.capture_replay", conform_graph_capture_replay, NULL},
    {"graph.other_stream", conform_graph_other_stream, NULL},
    {"graph.many_launches", conform_graph_many, NULL},
    {"graph.illegal", conform_graph_illegal, NULL},
    {"graph.update", conform_graph_update, NULL},
    {"graph.pool", conform_graph_pool, NULL},
    {"graph.rng", conform_graph_rng, NULL},
    {"graph.gemm", conform_graph_gemm, NULL},
};

const conform_check_t* conform_graph_checks(size_t* out_count) {
  *out_count = sizeof(conform_graphs) / sizeof(conform_graphs[0]);
  return conform_graphs;
}
