// SPDX-License-Identifier: MIT
//
// graph: 100 small ops (add, scale, axpy and mul in turn on f32 vectors of
// 256 elements) launched as one captured graph (<accel/graph.h>) against
// the same 100 ops enqueued one by one, on one stream of the same device.
// Two cases, as operations per microsecond (higher is better; the note
// gives nanoseconds per op):
// - host_per_op: only the time the host spends in the enqueueing calls
//   (accel_graph_launch, or the 100 accel_op_* calls), the stream being
//   synchronised between rounds outside the clock. This is what graphs
//   save (issue 16: on the CPU plugin at least 3 times less host time per
//   op; judged only for a native graph, since a graph the core replays
//   makes the same plugin calls). On the CPU the one-by-one side may run
//   each small op inline on the calling thread (plugins/cpu/stream.c), so
//   its host time includes the op itself; the graph is one task for the
//   stream's worker.
// - end_to_end: enqueue and synchronise, per op, for information: what a
//   program that waits for every round sees.
// The graph is captured once per case; the rounds of a trial alternate
// with the other side's, as bench_measure() does.
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define BENCH_GRAPH_OPS 100
#define BENCH_GRAPH_ELEMS 256
#define BENCH_GRAPH_BUDGET_RATIO 3.0

static const char* const bench_graph_case_names[] = {"host_per_op",
                                                     "end_to_end", NULL};

typedef struct bench_graph {
  accel_stream_t* stream;
  accel_buffer_t* v[4];
  accel_graph_t* graph;
} bench_graph_t;

// Enqueues the 100 ops on `s`.
static accel_status_t bench_graph_ops(bench_graph_t* g, accel_stream_t* s) {
  accel_status_t st = ACCEL_OK;
  for (int i = 0; i < BENCH_GRAPH_OPS && st == ACCEL_OK; i++) {
    accel_buffer_t* a = g->v[i % 4];
    accel_buffer_t* b = g->v[(i + 1) % 4];
    switch (i % 4) {
      case 0:
        st = accel_op_add(s, a, 0, a, 0, b, 0, ACCEL_DTYPE_F32,
                          BENCH_GRAPH_ELEMS);
        break;
      case 1:
        st = accel_op_scale(s, a, 0, ACCEL_DTYPE_F32, BENCH_GRAPH_ELEMS, 0.5);
        break;
      case 2:
        st = accel_op_axpy(s, a, 0, b, 0, ACCEL_DTYPE_F32, BENCH_GRAPH_ELEMS,
                           -0.25);
        break;
      default:
        st = accel_op_mul(s, a, 0, a, 0, b, 0, ACCEL_DTYPE_F32,
                          BENCH_GRAPH_ELEMS);
        break;
    }
  }
  return st;
}

static void bench_graph_close(bench_graph_t* g) {
  accel_graph_release(g->graph);
  for (int i = 0; i < 4; i++) accel_buffer_release(g->v[i]);
  accel_stream_release(g->stream);
  memset(g, 0, sizeof(*g));
}

static bool bench_graph_open(bench_ctx_t* ctx, bench_graph_t* g) {
  memset(g, 0, sizeof(*g));
  accel_status_t s = accel_stream_create(ctx->device, 0, &g->stream);
  for (int i = 0; i < 4 && s == ACCEL_OK; i++) {
    s = accel_buffer_create(ctx->device, BENCH_GRAPH_ELEMS * 4, &g->v[i]);
    if (s == ACCEL_OK) {
      s = accel_op_fill(g->stream, g->v[i], 0, ACCEL_DTYPE_F32,
                        BENCH_GRAPH_ELEMS, 1.0 + i);
    }
  }
  if (s == ACCEL_OK) s = accel_stream_synchronize(g->stream);
  if (s == ACCEL_OK) s = accel_stream_begin_capture(g->stream);
  if (s == ACCEL_OK) {
    s = bench_graph_ops(g, g->stream);
    accel_graph_t* graph = NULL;
    accel_status_t end = accel_stream_end_capture(g->stream, &graph);
    g->graph = graph;
    if (s == ACCEL_OK) s = end;
  }
  // The first launch instantiates a native graph: not a round's cost.
  if (s == ACCEL_OK) s = accel_graph_launch(g->graph, g->stream);
  if (s == ACCEL_OK) s = accel_stream_synchronize(g->stream);
  if (s != ACCEL_OK) {
    bench_fail("setup: %s", accel_last_error());
    bench_graph_close(g);
    return false;
  }
  return true;
}

// Runs `rounds` rounds of one side (`graph` or one by one) and returns
// the nanoseconds of the timed part (enqueue only, or enqueue and
// synchronise), or a negative value on failure.
static double bench_graph_rounds(bench_graph_t* g, bool graph, bool host_only,
                                 uint64_t rounds) {
  uint64_t timed = 0;
  for (uint64_t r = 0; r < rounds; r++) {
    uint64_t start = bench_now_ns();
    accel_status_t s = graph ? accel_graph_launch(g->graph, g->stream)
                             : bench_graph_ops(g, g->stream);
    uint64_t enqueued = bench_now_ns();
    if (s == ACCEL_OK) s = accel_stream_synchronize(g->stream);
    uint64_t done = bench_now_ns();
    if (s != ACCEL_OK) {
      bench_fail("%s: %s", graph ? "accel_graph_launch" : "accel_op_*",
                 accel_last_error());
      return -1.0;
    }
    timed += (host_only ? enqueued : done) - start;
  }
  return timed > 0 ? (double)timed : 1.0;
}

// Measures both sides of one case: ops per microsecond, median of the
// trials, into `out[0]` (graph) and `out[1]` (one by one).
static bool bench_graph_measure(const bench_ctx_t* ctx, bench_graph_t* g,
                                bool host_only, bench_timing_t out[2]) {
  const bench_plan_t* plan = &ctx->plan;
  // Rounds per trial: about trial_ns of the slower, one-by-one side.
  double one = bench_graph_rounds(g, false, false, 4);
  if (one < 0) return false;
  uint64_t rounds = (uint64_t)(plan->trial_ns / (one / 4.0));
  if (rounds < 4) rounds = 4;
  if (rounds > 100000) rounds = 100000;
  uint32_t trials = plan->trials;
  double* samples = calloc(2 * (size_t)trials, sizeof(*samples));
  if (samples == NULL) return bench_fail("out of host memory");
  bool ok = true;
  for (uint32_t t = 0; t < trials && ok; t++) {
    for (int k = 0; k < 2 && ok; k++) {
      bool graph = ((t + (uint32_t)k) % 2) == 0;
      double ns = bench_graph_rounds(g, graph, host_only, rounds);
      ok = ns > 0;
      samples[(graph ? 0 : trials) + t] =
          (double)(rounds * BENCH_GRAPH_OPS) / (ns / 1e3);
    }
  }
  if (ok) {
    bench_timing_from_samples(samples, trials, &out[0]);
    bench_timing_from_samples(samples + trials, trials, &out[1]);
    out[0].iters = out[1].iters = rounds * BENCH_GRAPH_OPS;
  }
  free(samples);
  return ok;
}

static void bench_graph_run(bench_ctx_t* ctx) {
  size_t row[2] = {SIZE_MAX, SIZE_MAX};
  for (int k = 0; k < 2; k++) {
    if (!bench_wanted(ctx, "graph", bench_graph_case_names[k])) continue;
    bench_result_t* r =
        bench_add(ctx, "graph", "%s", bench_graph_case_names[k]);
    if (r == NULL) return;
    r->unit = "op/us";
    r->higher_is_better = true;
    if (k == 0) {
      r->budget = BENCH_BUDGET_MIN_RATIO;
      r->budget_value = BENCH_GRAPH_BUDGET_RATIO;
    }
    row[k] = ctx->result_count - 1;
  }
  if (row[0] == SIZE_MAX && row[1] == SIZE_MAX) return;
  bench_graph_t g;
  bool ok = bench_graph_open(ctx, &g);
  for (int k = 0; k < 2; k++) {
    if (row[k] == SIZE_MAX) continue;
    bench_result_t* r = &ctx->results[row[k]];
    if (!ok) {
      bench_result_fail(ctx, r, NULL);
      continue;
    }
    bench_progress(ctx, "graph", r->name);
    bench_timing_t t[2];
    if (!bench_graph_measure(ctx, &g, k == 0, t)) {
      bench_result_fail(ctx, r, NULL);
      continue;
    }
    r->accel = t[0];
    r->baseline = t[1];
    r->has_baseline = true;
    snprintf(r->baseline_name, sizeof(r->baseline_name), "%d ops one by one",
             BENCH_GRAPH_OPS);
    accel_graph_info_t info = {.struct_size = sizeof(info)};
    bool native =
        accel_graph_query_info(g.graph, &info) == ACCEL_OK && info.native;
    // The budget is for a native graph (one plugin call per launch); a
    // replayed one makes the same plugin calls as the ops one by one.
    if (!native) r->budget = BENCH_BUDGET_NONE;
    snprintf(r->note, sizeof(r->note),
             "%.1f ns per op with the graph (%s), %.1f ns one by one",
             1e3 / t[0].median, native ? "native" : "replayed by the core",
             1e3 / t[1].median);
  }
  if (ok) bench_graph_close(&g);
}

const bench_suite_t bench_suite_graph = {
    .name = "graph",
    .summary =
        "100 small ops as one graph launch vs enqueued one by one "
        "(op/us; host_per_op budget >= 3x)",
    .cases = bench_graph_case_names,
    .sizes_quick = "100 ops of 256 f32",
    .sizes_full = "100 ops of 256 f32",
    .run = bench_graph_run,
};
