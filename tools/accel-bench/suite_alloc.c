// SPDX-License-Identifier: MIT
//
// alloc: one accel_buffer_create + accel_buffer_release pair against one
// raw mem_alloc + mem_free pair of the directly loaded plugin, per size.
// Freeing at once and allocating the same size again is the pattern a
// caching allocator serves from its cache, so once the core has one (issue
// 4) the accel side measures a cache hit (DESIGN "Budgets": <= 100 ns per
// pair); before that it measures the core's uncached path. Nothing here
// depends on which.
#include <accel/plugin.h>
#include <inttypes.h>
#include <string.h>

#include "bench.h"

// Cache-hit budget for one alloc + free pair, in ns.
#define BENCH_ALLOC_BUDGET_NS 100.0

static const char* const bench_alloc_cases[] = {"pair", NULL};

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
  for (size_t i = 0; sizes[i] != 0; ++i) {
    char label[32];
    char name[64];
    bench_format_size(sizes[i], label, sizeof(label));
    snprintf(name, sizeof(name), "pair/%" PRIu64, sizes[i]);
    if (!bench_wanted(ctx, "alloc", name)) continue;
    bench_result_t* r = bench_add(ctx, "alloc", "pair");
    if (r == NULL) return;
    r->size = sizes[i];
    r->unit = "ns";
    r->budget = BENCH_BUDGET_MAX_ABS;
    r->budget_value = BENCH_ALLOC_BUDGET_NS;
    snprintf(r->baseline_name, sizeof(r->baseline_name), "plugin direct");
    bench_direct_t* direct = bench_direct_get(ctx);
    if (direct == NULL) {
      bench_result_fail(ctx, r, ctx->direct_error);
      continue;
    }
    b.ops = bench_direct_ops(direct);
    b.direct_device = bench_direct_device(direct);
    b.size = (size_t)sizes[i];
    bench_progress(ctx, "alloc", label);
    bench_variant_t a = {bench_accel_alloc, &b};
    bench_variant_t d = {bench_direct_alloc, &b};
    if (!bench_measure(&ctx->plan, a, d, &r->accel, &r->baseline)) {
      bench_result_fail(ctx, r, NULL);
      continue;
    }
    r->has_baseline = true;
  }
}

const bench_suite_t bench_suite_alloc = {
    .name = "alloc",
    .summary =
        "accel_buffer_create+release vs raw plugin mem_alloc+mem_free "
        "(ns/pair; budget <= 100 ns once cached, issue 4)",
    .cases = bench_alloc_cases,
    .sizes_quick = "256 B, 4 KiB, 1 MiB",
    .sizes_full = "256 B .. 256 MiB",
    .run = bench_alloc_run,
};
