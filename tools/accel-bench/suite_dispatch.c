// SPDX-License-Identifier: MIT
//
// dispatch: what the core adds to a call. Each case makes one cheap call
// through the public API and the same plugin entry through the directly
// loaded plugin (direct.c), on handles of the same kind in the same state,
// and reports nanoseconds per call for both; the budget is on the
// difference (docs/architecture.md, "Budgets": <= 20 ns).
//
// buffer_write and buffer_copy are the fixed cost of a small synchronous
// copy: 64 bytes (one cache line, so the bytes themselves cost a few ns)
// through accel_buffer_write / accel_buffer_copy against copy_h2d /
// copy_d2d with no stream on memory from the plugin's own mem_alloc.
#include <accel/plugin.h>
#include <string.h>

#include "bench.h"

// Core dispatch budget, ns above the direct call.
#define BENCH_DISPATCH_BUDGET_NS 20.0

static const char* const bench_dispatch_cases[] = {
    "stream_query",  // an idle stream: a lock and a counter compare
    "event_query",   // an event never recorded
    "mem_info",      // accel_device_query_memory vs ops->mem_info
    "buffer_write",  // 64 B synchronous, vs ops->copy_h2d
    "buffer_copy",   // 64 B synchronous between two buffers, vs copy_d2d
    NULL,
};

// Bytes each buffer_write and buffer_copy moves.
#define BENCH_DISPATCH_COPY_BYTES 64

typedef struct bench_dispatch {
  accel_device_t* device;
  accel_stream_t* stream;
  accel_event_t* event;
  const accel_device_ops_t* ops;
  void* direct_device;
  void* direct_stream;
  void* direct_event;
  accel_buffer_t* src;  // BENCH_DISPATCH_COPY_BYTES each
  accel_buffer_t* dst;
  void* direct_src;  // from the direct plugin's mem_alloc
  void* direct_dst;
  unsigned char host[BENCH_DISPATCH_COPY_BYTES];
} bench_dispatch_t;

static bool bench_accel_stream_query(void* user, uint64_t iters) {
  accel_stream_t* stream = ((bench_dispatch_t*)user)->stream;
  for (uint64_t i = 0; i < iters; ++i) {
    bool done = false;
    if (accel_stream_query(stream, &done) != ACCEL_OK) {
      return bench_fail("accel_stream_query: %s", accel_last_error());
    }
  }
  return true;
}

static bool bench_direct_stream_query(void* user, uint64_t iters) {
  bench_dispatch_t* b = user;
  accel_status_t (*query)(void*, bool*) = b->ops->stream_query;
  void* stream = b->direct_stream;
  for (uint64_t i = 0; i < iters; ++i) {
    bool done = false;
    if (query(stream, &done) != ACCEL_OK) {
      return bench_fail("stream_query: %s", bench_direct_error());
    }
  }
  return true;
}

static bool bench_accel_event_query(void* user, uint64_t iters) {
  accel_event_t* event = ((bench_dispatch_t*)user)->event;
  for (uint64_t i = 0; i < iters; ++i) {
    bool done = false;
    if (accel_event_query(event, &done) != ACCEL_OK) {
      return bench_fail("accel_event_query: %s", accel_last_error());
    }
  }
  return true;
}

static bool bench_direct_event_query(void* user, uint64_t iters) {
  bench_dispatch_t* b = user;
  accel_status_t (*query)(void*, bool*) = b->ops->event_query;
  void* event = b->direct_event;
  for (uint64_t i = 0; i < iters; ++i) {
    bool done = false;
    if (query(event, &done) != ACCEL_OK) {
      return bench_fail("event_query: %s", bench_direct_error());
    }
  }
  return true;
}

static bool bench_accel_mem_info(void* user, uint64_t iters) {
  accel_device_t* device = ((bench_dispatch_t*)user)->device;
  for (uint64_t i = 0; i < iters; ++i) {
    uint64_t free_bytes = 0, total = 0;
    if (accel_device_query_memory(device, &free_bytes, &total) != ACCEL_OK) {
      return bench_fail("accel_device_query_memory: %s", accel_last_error());
    }
  }
  return true;
}

static bool bench_direct_mem_info(void* user, uint64_t iters) {
  bench_dispatch_t* b = user;
  accel_status_t (*info)(void*, uint64_t*, uint64_t*) = b->ops->mem_info;
  void* device = b->direct_device;
  for (uint64_t i = 0; i < iters; ++i) {
    uint64_t free_bytes = 0, total = 0;
    if (info(device, &free_bytes, &total) != ACCEL_OK) {
      return bench_fail("mem_info: %s", bench_direct_error());
    }
  }
  return true;
}

static bool bench_accel_buffer_write(void* user, uint64_t iters) {
  bench_dispatch_t* b = user;
  for (uint64_t i = 0; i < iters; ++i) {
    if (accel_buffer_write(b->dst, 0, b->host, BENCH_DISPATCH_COPY_BYTES) !=
        ACCEL_OK) {
      return bench_fail("accel_buffer_write: %s", accel_last_error());
    }
  }
  return true;
}

static bool bench_direct_buffer_write(void* user, uint64_t iters) {
  bench_dispatch_t* b = user;
  accel_status_t (*copy)(void*, void*, void*, size_t, const void*, size_t) =
      b->ops->copy_h2d;
  for (uint64_t i = 0; i < iters; ++i) {
    if (copy(b->direct_device, NULL, b->direct_dst, 0, b->host,
             BENCH_DISPATCH_COPY_BYTES) != ACCEL_OK) {
      return bench_fail("copy_h2d: %s", bench_direct_error());
    }
  }
  return true;
}

static bool bench_accel_buffer_copy(void* user, uint64_t iters) {
  bench_dispatch_t* b = user;
  for (uint64_t i = 0; i < iters; ++i) {
    if (accel_buffer_copy(b->dst, 0, b->src, 0, BENCH_DISPATCH_COPY_BYTES) !=
        ACCEL_OK) {
      return bench_fail("accel_buffer_copy: %s", accel_last_error());
    }
  }
  return true;
}

static bool bench_direct_buffer_copy(void* user, uint64_t iters) {
  bench_dispatch_t* b = user;
  accel_status_t (*copy)(void*, void*, void*, size_t, const void*, size_t,
                         size_t) = b->ops->copy_d2d;
  for (uint64_t i = 0; i < iters; ++i) {
    if (copy(b->direct_device, NULL, b->direct_dst, 0, b->direct_src, 0,
             BENCH_DISPATCH_COPY_BYTES) != ACCEL_OK) {
      return bench_fail("copy_d2d: %s", bench_direct_error());
    }
  }
  return true;
}

// Creates the handles both sides need; false with bench_fail() on error.
static bool bench_dispatch_open(bench_ctx_t* ctx, bench_dispatch_t* b) {
  b->device = ctx->device;
  if (accel_stream_create(ctx->device, 0, &b->stream) != ACCEL_OK) {
    return bench_fail("accel_stream_create: %s", accel_last_error());
  }
  if (accel_event_create(ctx->device, 0, &b->event) != ACCEL_OK) {
    return bench_fail("accel_event_create: %s", accel_last_error());
  }
  bench_direct_t* direct = bench_direct_get(ctx);
  if (direct == NULL) return bench_fail("%s", ctx->direct_error);
  b->ops = bench_direct_ops(direct);
  b->direct_device = bench_direct_device(direct);
  if (b->ops->stream_create(b->direct_device, 0, &b->direct_stream) !=
      ACCEL_OK) {
    b->direct_stream = NULL;
    return bench_fail("direct stream_create: %s", bench_direct_error());
  }
  if (b->ops->event_create(b->direct_device, 0, &b->direct_event) != ACCEL_OK) {
    b->direct_event = NULL;
    return bench_fail("direct event_create: %s", bench_direct_error());
  }
  memset(b->host, 7, sizeof(b->host));
  if (accel_buffer_create(ctx->device, BENCH_DISPATCH_COPY_BYTES, &b->src) !=
          ACCEL_OK ||
      accel_buffer_create(ctx->device, BENCH_DISPATCH_COPY_BYTES, &b->dst) !=
          ACCEL_OK ||
      accel_buffer_write(b->src, 0, b->host, sizeof(b->host)) != ACCEL_OK) {
    return bench_fail("buffers of %d bytes: %s", BENCH_DISPATCH_COPY_BYTES,
                      accel_last_error());
  }
  if (b->ops->mem_alloc(b->direct_device, BENCH_DISPATCH_COPY_BYTES,
                        &b->direct_src) != ACCEL_OK) {
    b->direct_src = NULL;
    return bench_fail("direct mem_alloc: %s", bench_direct_error());
  }
  if (b->ops->mem_alloc(b->direct_device, BENCH_DISPATCH_COPY_BYTES,
                        &b->direct_dst) != ACCEL_OK) {
    b->direct_dst = NULL;
    return bench_fail("direct mem_alloc: %s", bench_direct_error());
  }
  if (b->ops->copy_h2d(b->direct_device, NULL, b->direct_src, 0, b->host,
                       sizeof(b->host)) != ACCEL_OK) {
    return bench_fail("direct copy_h2d: %s", bench_direct_error());
  }
  return true;
}

static void bench_dispatch_close(bench_dispatch_t* b) {
  if (b->direct_dst != NULL) b->ops->mem_free(b->direct_device, b->direct_dst);
  if (b->direct_src != NULL) b->ops->mem_free(b->direct_device, b->direct_src);
  accel_buffer_release(b->dst);
  accel_buffer_release(b->src);
  if (b->direct_event != NULL) b->ops->event_destroy(b->direct_event);
  if (b->direct_stream != NULL) b->ops->stream_destroy(b->direct_stream);
  accel_event_release(b->event);
  accel_stream_release(b->stream);
}

static void bench_dispatch_run(bench_ctx_t* ctx) {
  static const bench_run_fn_t accel_fns[] = {
      bench_accel_stream_query, bench_accel_event_query, bench_accel_mem_info,
      bench_accel_buffer_write, bench_accel_buffer_copy};
  static const bench_run_fn_t direct_fns[] = {
      bench_direct_stream_query, bench_direct_event_query,
      bench_direct_mem_info, bench_direct_buffer_write,
      bench_direct_buffer_copy};
  bool any = false;
  for (size_t i = 0; bench_dispatch_cases[i] != NULL; ++i) {
    any = any || bench_wanted(ctx, "dispatch", bench_dispatch_cases[i]);
  }
  if (!any) return;

  bench_dispatch_t b;
  memset(&b, 0, sizeof(b));
  char open_error[256] = "";
  bool opened = bench_dispatch_open(ctx, &b);
  if (!opened) snprintf(open_error, sizeof(open_error), "%s", bench_failure());
  for (size_t i = 0; bench_dispatch_cases[i] != NULL; ++i) {
    const char* name = bench_dispatch_cases[i];
    if (!bench_wanted(ctx, "dispatch", name)) continue;
    bench_result_t* r = bench_add(ctx, "dispatch", "%s", name);
    if (r == NULL) break;
    r->unit = "ns";
    r->budget = BENCH_BUDGET_MAX_DIFF;
    r->budget_value = BENCH_DISPATCH_BUDGET_NS;
    snprintf(r->baseline_name, sizeof(r->baseline_name), "plugin direct");
    if (!opened) {
      bench_result_fail(ctx, r, open_error);
      continue;
    }
    bench_progress(ctx, "dispatch", name);
    bench_variant_t a = {accel_fns[i], &b};
    bench_variant_t d = {direct_fns[i], &b};
    if (!bench_measure(&ctx->plan, a, d, &r->accel, &r->baseline)) {
      bench_result_fail(ctx, r, NULL);
      continue;
    }
    r->has_baseline = true;
    // The spread of a call that costs microseconds (mem_info reads /proc
    // on the CPU) is far wider than the budget; its difference is then
    // noise, so it is shown but not judged.
    if (r->baseline.median > 100.0 * BENCH_DISPATCH_BUDGET_NS) {
      r->informational = true;
      snprintf(r->note, sizeof(r->note),
               "a %.0f ns call: too slow to resolve a %.0f ns difference",
               r->baseline.median, BENCH_DISPATCH_BUDGET_NS);
    }
  }
  bench_dispatch_close(&b);
}

const bench_suite_t bench_suite_dispatch = {
    .name = "dispatch",
    .summary =
        "core overhead: public API vs the same plugin entry called "
        "directly (ns/call; budget <= 20 ns above direct)",
    .cases = bench_dispatch_cases,
    .sizes_quick = "-",
    .sizes_full = "-",
    .run = bench_dispatch_run,
};
