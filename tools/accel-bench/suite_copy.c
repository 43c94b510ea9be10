// SPDX-License-Identifier: MIT
//
// copy: host-to-device, device-to-host and device-to-device bandwidth, the
// synchronous calls (accel_buffer_write/read/copy) and their stream
// versions, from pageable (malloc) and pinned (accel_host_alloc) host
// memory, against the backend's vendor baseline from baseline.c (memcpy on
// the CPU). Reported in GB/s (10^9 bytes per second); the budget is on the
// ratio (docs/architecture.md, "Budgets": >= 95% of the baseline).
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

#define BENCH_COPY_BUDGET_RATIO 0.95

// Host memory a size needs, as a multiple of it: pageable and pinned host
// buffers, two device buffers and the baseline's two buffers. On the CPU
// all six are host memory; elsewhere this over-counts, which only skips a
// size early.
#define BENCH_COPY_FOOTPRINT 6u

// How a case moves data. The name is "<dir>_<host>[_async]".
typedef struct bench_copy_case {
  const char* name;
  bench_copy_kind_t kind;
  bool pinned;
  bool async;
} bench_copy_case_t;

static const bench_copy_case_t bench_copy_cases[] = {
    {"h2d_pageable", BENCH_COPY_H2D, false, false},
    {"h2d_pinned", BENCH_COPY_H2D, true, false},
    {"d2h_pageable", BENCH_COPY_D2H, false, false},
    {"d2h_pinned", BENCH_COPY_D2H, true, false},
    {"d2d", BENCH_COPY_D2D, false, false},
    {"h2d_pageable_async", BENCH_COPY_H2D, false, true},
    {"h2d_pinned_async", BENCH_COPY_H2D, true, true},
    {"d2h_pageable_async", BENCH_COPY_D2H, false, true},
    {"d2h_pinned_async", BENCH_COPY_D2H, true, true},
    {"d2d_async", BENCH_COPY_D2D, false, true},
};
#define BENCH_COPY_CASE_COUNT \
  (sizeof(bench_copy_cases) / sizeof(bench_copy_cases[0]))

static const char* const bench_copy_case_names[] = {
    "h2d_pageable",
    "h2d_pinned",
    "d2h_pageable",
    "d2h_pinned",
    "d2d",
    "h2d_pageable_async",
    "h2d_pinned_async",
    "d2h_pageable_async",
    "d2h_pinned_async",
    "d2d_async",
    NULL,
};

// Everything one size needs; `c` is the case being measured.
typedef struct bench_copy {
  const bench_copy_case_t* c;
  size_t size;
  void* pageable;
  void* pinned;
  accel_device_t* device;
  accel_buffer_t* src;  // device buffers: H2D writes and D2H reads `src`,
  accel_buffer_t* dst;  // D2D copies `src` to `dst`
  accel_stream_t* stream;
  const bench_copy_baseline_t* baseline;
  void* baseline_state;
} bench_copy_t;

static void* bench_copy_host(const bench_copy_t* b) {
  return b->c->pinned ? b->pinned : b->pageable;
}

// One enqueued copy of the current case.
static accel_status_t bench_copy_enqueue(bench_copy_t* b) {
  void* host = bench_copy_host(b);
  switch (b->c->kind) {
    case BENCH_COPY_H2D:
      return accel_stream_write_buffer(b->stream, b->src, 0, host, b->size);
    case BENCH_COPY_D2H:
      return accel_stream_read_buffer(b->stream, b->src, 0, host, b->size);
    case BENCH_COPY_D2D:
      break;
  }
  return accel_stream_copy_buffer(b->stream, b->dst, 0, b->src, 0, b->size);
}

// One synchronous copy of the current case.
static accel_status_t bench_copy_now(bench_copy_t* b) {
  void* host = bench_copy_host(b);
  switch (b->c->kind) {
    case BENCH_COPY_H2D:
      return accel_buffer_write(b->src, 0, host, b->size);
    case BENCH_COPY_D2H:
      return accel_buffer_read(b->src, 0, host, b->size);
    case BENCH_COPY_D2D:
      break;
  }
  return accel_buffer_copy(b->dst, 0, b->src, 0, b->size);
}

static bool bench_accel_copy(void* user, uint64_t iters) {
  bench_copy_t* b = user;
  for (uint64_t i = 0; i < iters; ++i) {
    accel_status_t s = b->c->async ? bench_copy_enqueue(b) : bench_copy_now(b);
    if (s != ACCEL_OK) {
      return bench_fail("%s of %zu bytes: %s", b->c->name, b->size,
                        accel_last_error());
    }
  }
  if (b->c->async && accel_stream_synchronize(b->stream) != ACCEL_OK) {
    return bench_fail("accel_stream_synchronize: %s", accel_last_error());
  }
  return true;
}

static bool bench_baseline_copy(void* user, uint64_t iters) {
  bench_copy_t* b = user;
  return b->baseline->run(b->baseline_state, b->c->kind, b->c->pinned,
                          bench_copy_host(b), b->size, iters, b->c->async);
}

// Converts a timing in ns per copy of `size` bytes to GB/s: the slowest
// trial gives the minimum bandwidth.
static void bench_copy_to_gbps(bench_timing_t* t, size_t size) {
  double median = t->median, min = t->min, max = t->max;
  t->median = (double)size / median;
  t->min = (double)size / max;
  t->max = (double)size / min;
}

static void bench_copy_free(bench_copy_t* b) {
  if (b->baseline_state != NULL) b->baseline->close(b->baseline_state);
  accel_stream_release(b->stream);
  accel_buffer_release(b->dst);
  accel_buffer_release(b->src);
  accel_host_free(b->device, b->pinned);
  free(b->pageable);
  memset(b, 0, sizeof(*b));
}

// Allocates and touches everything for copies of `size` bytes.
static bool bench_copy_alloc(bench_ctx_t* ctx, bench_copy_t* b, size_t size,
                             const bench_copy_baseline_t* baseline) {
  memset(b, 0, sizeof(*b));
  b->size = size;
  b->device = ctx->device;
  b->baseline = baseline;
  b->pageable = malloc(size);
  if (b->pageable == NULL) return bench_fail("malloc(%zu) failed", size);
  memset(b->pageable, 3, size);
  const char* what = "accel_host_alloc";
  accel_status_t s = accel_host_alloc(ctx->device, size, &b->pinned);
  if (s == ACCEL_OK) memset(b->pinned, 4, size);
  if (s == ACCEL_OK) what = "accel_buffer_create";
  if (s == ACCEL_OK) s = accel_buffer_create(ctx->device, size, &b->src);
  if (s == ACCEL_OK) s = accel_buffer_create(ctx->device, size, &b->dst);
  if (s == ACCEL_OK) what = "accel_buffer_fill";
  if (s == ACCEL_OK) s = accel_buffer_fill(b->src, 0, 5, size);
  if (s == ACCEL_OK) s = accel_buffer_fill(b->dst, 0, 6, size);
  if (s == ACCEL_OK) what = "accel_stream_create";
  if (s == ACCEL_OK) s = accel_stream_create(ctx->device, 0, &b->stream);
  if (s != ACCEL_OK) {
    return bench_fail("%s (%zu bytes): %s", what, size, accel_last_error());
  }
  bench_copy_place_t place = {.known = false};
  uint64_t src_at = 0, dst_at = 0;
  if (accel_buffer_query_address(b->src, 0, &src_at) == ACCEL_OK &&
      accel_buffer_query_address(b->dst, 0, &dst_at) == ACCEL_OK) {
    place.known = true;
    place.src_page_offset = (size_t)(src_at % 4096);
    place.dst_page_offset = (size_t)(dst_at % 4096);
  }
  if (baseline != NULL &&
      !baseline->open(ctx, size, &place, &b->baseline_state)) {
    b->baseline_state = NULL;
    return false;
  }
  return true;
}

// Bytes we may use for one size: a fraction of the host memory available
// and of the device's free memory, whichever is smaller.
static uint64_t bench_copy_room(const bench_ctx_t* ctx) {
  long pages = sysconf(_SC_AVPHYS_PAGES);
  long page = sysconf(_SC_PAGESIZE);
  uint64_t room =
      pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : UINT64_MAX;
  uint64_t free_bytes = 0, total = 0;
  if (accel_device_query_memory(ctx->device, &free_bytes, &total) == ACCEL_OK &&
      free_bytes < room) {
    room = free_bytes;
  }
  return room / 4 * 3;
}

// Measures every wanted case at `size`.
static void bench_copy_size(bench_ctx_t* ctx, size_t size,
                            const bench_baselines_t* baselines) {
  bool wanted[BENCH_COPY_CASE_COUNT];
  bool any = false;
  for (size_t i = 0; i < BENCH_COPY_CASE_COUNT; ++i) {
    char name[64];
    snprintf(name, sizeof(name), "%s/%zu", bench_copy_cases[i].name, size);
    wanted[i] = bench_wanted(ctx, "copy", name);
    any = any || wanted[i];
  }
  if (!any) return;

  char label[32];
  bench_format_size(size, label, sizeof(label));
  char problem[192] = "";
  bool skipped = false;
  uint64_t room = bench_copy_room(ctx);
  bench_copy_t b;
  memset(&b, 0, sizeof(b));
  if ((uint64_t)size > room / BENCH_COPY_FOOTPRINT) {
    char have[32];
    snprintf(
        problem, sizeof(problem), "skipped: needs %u x %s, %s available",
        (unsigned)BENCH_COPY_FOOTPRINT, label,
        bench_format_size(room / (1u << 20) * (1u << 20), have, sizeof(have)));
    skipped = true;
  } else {
    bench_progress(ctx, "copy", label);
    if (!bench_copy_alloc(ctx, &b, size, baselines->copy)) {
      snprintf(problem, sizeof(problem), "%s", bench_failure());
    }
  }

  for (size_t i = 0; i < BENCH_COPY_CASE_COUNT; ++i) {
    if (!wanted[i]) continue;
    const bench_copy_case_t* c = &bench_copy_cases[i];
    bench_result_t* r = bench_add(ctx, "copy", "%s", c->name);
    if (r == NULL) break;
    r->size = size;
    r->unit = "GB/s";
    r->higher_is_better = true;
    r->budget = BENCH_BUDGET_MIN_RATIO;
    r->budget_value = BENCH_COPY_BUDGET_RATIO;
    if (skipped) {
      r->outcome = BENCH_OUTCOME_SKIPPED;
      snprintf(r->note, sizeof(r->note), "%s", problem);
      continue;
    }
    if (problem[0] != '\0') {
      bench_result_fail(ctx, r, problem);
      continue;
    }
    char what[96];
    snprintf(what, sizeof(what), "%s %s", c->name, label);
    bench_progress(ctx, "copy", what);
    b.c = c;
    bench_variant_t a = {bench_accel_copy, &b};
    bench_variant_t base = {NULL, NULL};
    if (baselines->copy != NULL) {
      base.run = bench_baseline_copy;
      base.user = &b;
      snprintf(r->baseline_name, sizeof(r->baseline_name), "%s",
               baselines->copy->name);
    } else {
      snprintf(r->note, sizeof(r->note), "baseline %s",
               baselines->copy_missing);
    }
    // A synchronous copy is whole on its own: single copies of each side
    // alternate once one takes 10 us or more (bench_measure_single; on
    // OpenCL every size, each copy waiting for the runtime's worker).
    // Stream copies keep trials: many enqueued, one synchronize.
    bool measured =
        c->async
            ? bench_measure(&ctx->plan, a, base, &r->accel, &r->baseline)
            : bench_measure_single(&ctx->plan, a, base, &r->accel,
                                   &r->baseline, NULL);
    if (!measured) {
      bench_result_fail(ctx, r, NULL);
      continue;
    }
    bench_copy_to_gbps(&r->accel, size);
    if (base.run != NULL) {
      bench_copy_to_gbps(&r->baseline, size);
      r->has_baseline = true;
    }
  }
  bench_copy_free(&b);
}

static void bench_copy_run(bench_ctx_t* ctx) {
  // Powers of four from 4 KiB: every cache level, then DRAM.
  uint64_t largest = ctx->mode == BENCH_MODE_FULL    ? UINT64_C(1) << 30
                     : ctx->mode == BENCH_MODE_SMOKE ? UINT64_C(64) << 10
                                                     : UINT64_C(64) << 20;
  uint64_t step = ctx->mode == BENCH_MODE_SMOKE ? 16 : 4;
  const bench_baselines_t* baselines =
      bench_baselines_find(accel_device_backend(ctx->device));
  for (uint64_t size = 4096; size <= largest; size *= step) {
    if (size > SIZE_MAX) break;
    bench_copy_size(ctx, (size_t)size, baselines);
  }
}

const bench_suite_t bench_suite_copy = {
    .name = "copy",
    .summary =
        "H2D/D2H/D2D, sync and stream, pageable and pinned, vs the "
        "backend's baseline (GB/s; budget >= 95%)",
    .cases = bench_copy_case_names,
    .sizes_quick = "4 KiB .. 64 MiB (x4)",
    .sizes_full = "4 KiB .. 1 GiB (x4), bounded by free memory",
    .run = bench_copy_run,
};
