// SPDX-License-Identifier: MIT
//
// alloc: one accel_buffer_create + accel_buffer_release pair against one
// raw mem_alloc + mem_free pair of the directly loaded plugin, per size.
// Freeing at once and allocating the same size again is the pattern a
// caching allocator serves from its cache, so once the core has one (issue
// 4) the accel side measures a cache hit (architecture "Budgets": <= 100 ns per
// pair); before that it measures the core's uncached path. Nothing here
// depends on which. Where the backend has a raw vendor allocator below
// the plugin (CUDA: cuMemAlloc + cuMemFree, cuda_raw.c), a second row
// "pair_raw" compares the same accel timings with it, all three sides
// measured interleaved.
#include <accel/plugin.h>
#include <inttypes.h>
#include <string.h>

#include "bench.h"
#include "cuda_raw.h"

// Cache-hit budget for one alloc + free pair, in ns.
#define BENCH_ALLOC_BUDGET_NS 100.0
// Pairs made once before the first size (not timed): a buffer handle's
// record takes a new address for each of its slot's first 64 generations
// (core/src/handle.c), so the first 64 x 4160 pairs of a process touch
// their records' pages for the first time, which is not what a cache hit
// costs (docs/performance.md, "alloc").
#define BENCH_ALLOC_WARM_PAIRS (64u * 4160u)

static const char* const bench_alloc_cases[] = {"pair", "pair_raw", NULL};

typedef struct bench_alloc {
  accel_device_t* device;
  const accel_device_ops_t* ops;
  void* direct_device;
  size_t size;
} bench_alloc_t;

static bool bench_accel_alloc(void* user, uint64_t iters) {
  bench_alloc_t* b = user;
  for (uint64_t i = 0; i < iters; ++i) {
    accel_buffer_t* buffer = NULL;
    if (accel_buffer_create(b->device, b->size, &buffer) != ACCEL_OK) {
      return bench_fail("accel_buffer_create(%zu): %s", b->size,
                        accel_last_error());
    }
    accel_buffer_release(buffer);
  }
  return true;
}

static bool bench_direct_alloc(void* user, uint64_t iters) {
  bench_alloc_t* b = user;
  accel_status_t (*alloc)(void*, size_t, void**) = b->ops->mem_alloc;
  void (*release)(void*, void*) = b->ops->mem_free;
  for (uint64_t i = 0; i < iters; ++i) {
    void* mem = NULL;
    if (alloc(b->direct_device, b->size, &mem) != ACCEL_OK) {
      return bench_fail("mem_alloc(%zu): %s", b->size, bench_direct_error());
    }
    release(b->direct_device, mem);
  }
  return true;
}

static void bench_alloc_run(bench_ctx_t* ctx) {
  static const uint64_t quick[] = {256, 4096, 1u << 20, 0};
  static const uint64_t full[] = {256,       4096,       65536, 1u << 20,
                                  16u << 20, 256u << 20, 0};
  static const uint64_t smoke[] = {4096, 0};
  const uint64_t* sizes = ctx->mode == BENCH_MODE_FULL    ? full
                          : ctx->mode == BENCH_MODE_SMOKE ? smoke
                                                          : quick;
  bench_alloc_t b = {.device = ctx->device};
  bool warm = ctx->mode == BENCH_MODE_SMOKE;
  const bench_baselines_t* bl =
      bench_baselines_find(accel_device_backend(ctx->device));
  for (size_t i = 0; sizes[i] != 0; ++i) {
    char label[32];
    char name[64];
    bench_format_size(sizes[i], label, sizeof(label));
    snprintf(name, sizeof(name), "pair/%" PRIu64, sizes[i]);
    if (!bench_wanted(ctx, "alloc", name)) continue;
    bench_result_t* r = bench_add(ctx, "alloc", "pair");
    if (r == NULL) return;
    size_t row = ctx->result_count - 1;
    r->size = sizes[i];
    r->unit = "ns";
    r->budget = BENCH_BUDGET_MAX_ABS;
    r->budget_value = BENCH_ALLOC_BUDGET_NS;
    snprintf(r->baseline_name, sizeof(r->baseline_name), "plugin direct");
    // The raw vendor row, on backends that have one (see baseline.c).
    size_t raw_row = SIZE_MAX;
    bench_cuda_alloc_t raw = {.size = (size_t)sizes[i]};
    if (bl->alloc != NULL) {
      bench_result_t* q = bench_add(ctx, "alloc", "pair_raw");
      if (q == NULL) return;
      raw_row = ctx->result_count - 1;
      r = &ctx->results[row];
      *q = *r;
      snprintf(q->name, sizeof(q->name), "pair_raw");
      snprintf(q->baseline_name, sizeof(q->baseline_name), "%s", bl->alloc);
      raw.cu = bench_cuda_get(ctx);
      if (raw.cu == NULL) {
        snprintf(q->note, sizeof(q->note), "baseline not available: %.160s",
                 ctx->cuda_error);
      }
    }
    bench_direct_t* direct = bench_direct_get(ctx);
    if (direct == NULL) {
      bench_result_fail(ctx, r, ctx->direct_error);
      if (raw_row != SIZE_MAX) {
        bench_result_fail(ctx, &ctx->results[raw_row], ctx->direct_error);
      }
      continue;
    }
    b.ops = bench_direct_ops(direct);
    b.direct_device = bench_direct_device(direct);
    b.size = (size_t)sizes[i];
    bench_progress(ctx, "alloc", label);
    bench_variant_t v[3] = {
        {bench_accel_alloc, &b},
        {bench_direct_alloc, &b},
        {raw.cu != NULL ? bench_cuda_alloc_pair : NULL, &raw}};
    bench_timing_t t[3];
    bool ok = true;
    if (!warm) {
      warm = true;
      ok = bench_accel_alloc(&b, BENCH_ALLOC_WARM_PAIRS);
    }
    ok = ok && bench_measure_n(&ctx->plan, raw_row != SIZE_MAX ? 3 : 2, v, t);
    r = &ctx->results[row];
    bench_result_t* q = raw_row != SIZE_MAX ? &ctx->results[raw_row] : NULL;
    if (!ok) {
      bench_result_fail(ctx, r, NULL);
      if (q != NULL) bench_result_fail(ctx, q, NULL);
      continue;
    }
    r->accel = t[0];
    r->baseline = t[1];
    r->has_baseline = true;
    if (q != NULL) {
      q->accel = t[0];
      q->baseline = t[2];
      q->has_baseline = raw.cu != NULL;
    }
  }
}

const bench_suite_t bench_suite_alloc = {
    .name = "alloc",
    .summary =
        "accel_buffer_create+release vs raw plugin mem_alloc+mem_free "
        "(and cuMemAlloc+cuMemFree on CUDA: pair_raw) (ns/pair; budget "
        "<= 100 ns once cached, issue 4)",
    .cases = bench_alloc_cases,
    .sizes_quick = "256 B, 4 KiB, 1 MiB",
    .sizes_full = "256 B .. 256 MiB",
    .run = bench_alloc_run,
};
