// SPDX-License-Identifier: MIT
//
// Resources. Some checks drive the plugin directly, through its own entry
// point with a host table of the suite's (dlopen, as an older or foreign
// core would), to reach what the core's checks and caching allocator hide:
// - the plugin's own out-of-memory path (an allocation above total memory,
//   which the core would refuse itself) and free memory that goes down
//   after an allocation and back after the free;
// - the properties as query_props gives them, and allocations as large as
//   asked and as large as `max_alloc_size` promises.
// Cycles that must leave nothing behind: conform_resource_cycles.c.
// Through the public API: pinned-memory asynchronous copies, and GEMMs
// with the core's workspace on two streams at once, verified, with every
// workspace byte returned.
#define _GNU_SOURCE  // mallinfo2
#include <accel/plugin.h>
#include <dirent.h>
#include <dlfcn.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include "conform.h"

// One round of small allocations of odd sizes through the plugin's table:
// SMALL_PAIRS of 63 bytes and as many of 65, all held, then all freed, and
// the free memory after. Sizes just below and above a 64-byte unit catch
// accounting that rounds one way at mem_alloc and the other at mem_free,
// which whole allocations of round sizes never show. FAIL (reported) if an
// allocation fails or mem_info does.
enum { SMALL_PAIRS = 16384 };
static conform_result_t conform_resource_small_round(conform_ctx_t* ctx,
                                                     conform_direct_t* d,
                                                     uint64_t* out_free,
                                                     uint64_t* out_total) {
  void** mem = calloc(2 * SMALL_PAIRS, sizeof(*mem));
  if (mem == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "out of host memory");
  }
  accel_status_t status = ACCEL_OK;
  size_t held = 0;
  for (; held < 2 * SMALL_PAIRS && status == ACCEL_OK; held++) {
    status = d->ops->mem_alloc(d->device, held % 2 == 0 ? 63 : 65, &mem[held]);
  }
  if (status != ACCEL_OK) held--;  // the failed one holds nothing
  for (size_t i = 0; i < held; i++) d->ops->mem_free(d->device, mem[i]);
  free(mem);
  if (status != ACCEL_OK) {
    return conform_report(ctx, CONFORM_FAIL,
                          "mem_alloc of %d bytes with %zu small allocations "
                          "held: %s: %s",
                          held % 2 == 0 ? 63 : 65, held,
                          accel_status_string(status), conform_direct_message());
  }
  status = d->ops->mem_info(d->device, out_free, out_total);
  if (status != ACCEL_OK) {
    return conform_report(ctx, CONFORM_FAIL, "mem_info: %s: %s",
                          accel_status_string(status), conform_direct_message());
  }
  return CONFORM_PASS;
}

static conform_result_t conform_resource_memory(conform_ctx_t* ctx,
                                                const void* arg) {
  (void)arg;
  conform_direct_t d;
  if (conform_direct_open(ctx, &d) != CONFORM_PASS) return CONFORM_FAIL;
  conform_result_t result = CONFORM_PASS;
  uint64_t free0 = 0, total = 0, free1 = 0, free2 = 0;
  uint64_t totals[6] = {0, 0, 0, 0, 0, 0};  // from each mem_info below
  void* mem = NULL;
  accel_status_t status = d.ops->mem_info(d.device, &free0, &total);
  totals[0] = total;
  if (status != ACCEL_OK) {
    result = conform_report(ctx, CONFORM_FAIL, "mem_info: %s: %s",
                            accel_status_string(status), conform_direct_message());
    goto done;
  }
  // Above total memory: the core would refuse it; the plugin must too.
  size_t huge = (size_t)(total + total / 2);
  status = d.ops->mem_alloc(d.device, huge, &mem);
  if (status != ACCEL_ERROR_OUT_OF_DEVICE_MEMORY) {
    if (status == ACCEL_OK) d.ops->mem_free(d.device, mem);
    result = conform_report(ctx, CONFORM_FAIL,
                            "mem_alloc of %zu bytes (total %llu) gave %s, "
                            "expected ACCEL_ERROR_OUT_OF_DEVICE_MEMORY",
                            huge, (unsigned long long)total,
                            accel_status_string(status));
    goto done;
  }
  size_t size = (size_t)(free0 / 4 < (256u << 20) ? free0 / 4 : (256u << 20));
  unsigned char* host = conform_alloc(ctx, size);
  status = host ? d.ops->mem_alloc(d.device, size, &mem) : ACCEL_ERROR_OUT_OF_MEMORY;
  if (status == ACCEL_OK) {
    memset(host, 0x5a, size);  // touch it, for host-memory devices
    status = d.ops->copy_h2d(d.device, NULL, mem, 0, host, size);
  }
  if (status == ACCEL_OK) status = d.ops->mem_info(d.device, &free1, &totals[1]);
  if (status != ACCEL_OK) {
    if (mem != NULL) d.ops->mem_free(d.device, mem);
    result = conform_report(ctx, CONFORM_FAIL, "%zu bytes: %s: %s", size,
                            accel_status_string(status), conform_direct_message());
    goto done;
  }
  d.ops->mem_free(d.device, mem);
  d.ops->mem_info(d.device, &free2, &totals[2]);
  if (!(free1 + size / 2 <= free0) || !(free2 >= free1 + size / 2)) {
    // A CPU device's free memory is usually the host's available memory,
    // which other processes move by more than this allocation.
    // It never moving at all is a bug, though.
    bool host = ctx->info.type == ACCEL_DEVICE_TYPE_CPU &&
                (free1 != free0 || free2 != free0);
    result = conform_report(ctx, host ? CONFORM_SKIP : CONFORM_FAIL,
                            "%s"
                            "free memory %llu, %llu after allocating %zu "
                            "bytes, %llu after freeing them: must drop and "
                            "come back",
                            host ? "host memory moved by others (for the CPU "
                                   "plugin set ACCEL_CPU_MEMORY_LIMIT): "
                                 : "",
                            (unsigned long long)free0,
                            (unsigned long long)free1, size,
                            (unsigned long long)free2);
    goto done;
  }
  // Eight more rounds: a free that gives back only part of the bytes
  // (half, say) passes the single round above, which allows for drivers
  // that account in coarse units, but loses several allocations here.
  uint64_t free3 = free2;
  for (int round = 0; round < 8 && status == ACCEL_OK; round++) {
    status = d.ops->mem_alloc(d.device, size, &mem);
    if (status == ACCEL_OK) d.ops->mem_free(d.device, mem);
  }
  if (status == ACCEL_OK) status = d.ops->mem_info(d.device, &free3, &totals[3]);
  if (status != ACCEL_OK) {
    result = conform_report(ctx, CONFORM_FAIL,
                            "8 rounds of allocating and freeing %zu bytes: "
                            "%s: %s",
                            size, accel_status_string(status),
                            conform_direct_message());
    goto done;
  }
  if (free3 + size < free2) {
    bool host = ctx->info.type == ACCEL_DEVICE_TYPE_CPU;
    result = conform_report(ctx, host ? CONFORM_SKIP : CONFORM_FAIL,
                            "%sfree memory %llu before and %llu after 8 "
                            "rounds of allocating and freeing %zu bytes: "
                            "mem_free does not give every byte back",
                            host ? "host memory moved by others (for the CPU "
                                   "plugin set ACCEL_CPU_MEMORY_LIMIT): "
                                 : "",
                            (unsigned long long)free2,
                            (unsigned long long)free3, size);
    goto done;
  }
  // Two rounds of small odd sizes: a driver may keep some memory cached
  // after the first, but the second must end where the first did (an
  // accounting that rounds differently at mem_alloc and mem_free drifts
  // by about 1 MiB a round).
  uint64_t free4 = 0, free5 = 0;
  result = conform_resource_small_round(ctx, &d, &free4, &totals[4]);
  if (result == CONFORM_PASS) {
    result = conform_resource_small_round(ctx, &d, &free5, &totals[5]);
  }
  if (result != CONFORM_PASS) goto done;
  const uint64_t slack = 256u << 10;
  if (free5 + slack < free4 || free5 > free4 + slack) {
    bool host = ctx->info.type == ACCEL_DEVICE_TYPE_CPU;
    result = conform_report(ctx, host ? CONFORM_SKIP : CONFORM_FAIL,
                            "%sfree memory %llu after a round of %d "
                            "allocations of 63 and 65 bytes (all freed), "
                            "%llu after a second: mem_alloc and mem_free "
                            "must count the same bytes",
                            host ? "host memory moved by others (for the CPU "
                                   "plugin set ACCEL_CPU_MEMORY_LIMIT): "
                                 : "",
                            (unsigned long long)free4, 2 * SMALL_PAIRS,
                            (unsigned long long)free5);
    goto done;
  }
  // Total memory is the device's: it does not move with allocations.
  for (int i = 1; i < 6; i++) {
    if (totals[i] != totals[0]) {
      result = conform_report(ctx, CONFORM_FAIL,
                              "mem_info's total was %llu, then %llu with "
                              "allocations made or freed: total memory "
                              "must not change",
                              (unsigned long long)totals[0],
                              (unsigned long long)totals[i]);
      goto done;
    }
  }
  result = conform_report(ctx, CONFORM_PASS,
                          "OOM above total; free %llu -> %llu -> %llu, %llu "
                          "after 8 more rounds, %llu and %llu after two of "
                          "%d small ones; total %llu throughout",
                          (unsigned long long)free0, (unsigned long long)free1,
                          (unsigned long long)free2, (unsigned long long)free3,
                          (unsigned long long)free4, (unsigned long long)free5,
                          2 * SMALL_PAIRS, (unsigned long long)totals[0]);
done:
  conform_direct_close(&d);
  return result;
}

// The properties as the plugin itself reports them: the core shows
// mem_info's total instead of a `total_memory` of 0, but a foreign core,
// or a caller of the plugin table, sees what query_props says.
static conform_result_t conform_resource_props(conform_ctx_t* ctx,
                                               const void* arg) {
  (void)arg;
  conform_direct_t d;
  if (conform_direct_open(ctx, &d) != CONFORM_PASS) return CONFORM_FAIL;
  accel_plugin_device_props_t props;
  accel_status_t status = conform_direct_props(&d, &props);
  conform_result_t result;
  if (status != ACCEL_OK) {
    result = conform_report(ctx, CONFORM_FAIL, "query_props: %s: %s",
                            accel_status_string(status), conform_direct_message());
  } else if (props.total_memory == 0 || props.compute_units == 0 ||
             props.max_threads_per_block == 0) {
    result = conform_report(ctx, CONFORM_FAIL,
                            "query_props: total_memory %llu, compute_units "
                            "%u, max_threads_per_block %u: none may be 0",
                            (unsigned long long)props.total_memory,
                            props.compute_units, props.max_threads_per_block);
  } else if (props.max_alloc_size > props.total_memory) {
    result = conform_report(ctx, CONFORM_FAIL,
                            "query_props: max_alloc_size %llu above "
                            "total_memory %llu",
                            (unsigned long long)props.max_alloc_size,
                            (unsigned long long)props.total_memory);
  } else {
    result = conform_report(
        ctx, CONFORM_PASS, "total %llu MiB, %u units, max_alloc_size %llu",
        (unsigned long long)(props.total_memory >> 20), props.compute_units,
        (unsigned long long)props.max_alloc_size);
  }
  conform_direct_close(&d);
  return result;
}

// Writes `size` random bytes to `mem` at `offset` and reads them back.
static bool conform_direct_roundtrip(conform_ctx_t* ctx, conform_direct_t* d,
                                     void* mem, size_t offset, size_t size,
                                     uint64_t* rng, const char* what) {
  unsigned char* in = conform_alloc(ctx, size);
  unsigned char* out = conform_alloc(ctx, size);
  if (in == NULL || out == NULL) {
    conform_report(ctx, CONFORM_FAIL, "host OOM");
    return false;
  }
  conform_rand_bytes(rng, in, size);
  accel_status_t status =
      d->ops->copy_h2d(d->device, NULL, mem, offset, in, size);
  if (status == ACCEL_OK) {
    status = d->ops->copy_d2h(d->device, NULL, out, mem, offset, size);
  }
  if (status != ACCEL_OK) {
    conform_report(ctx, CONFORM_FAIL, "%s: %s: %s", what,
                   accel_status_string(status), conform_direct_message());
    return false;
  }
  if (memcmp(in, out, size) != 0) {
    conform_report(ctx, CONFORM_FAIL, "%s: the data did not come back", what);
    return false;
  }
  return true;
}

// mem_alloc through the plugin's own table, past the core's caching
// allocator: two allocations written in full, one after the other, must
// each keep their own bytes (an allocation smaller than asked overlaps its
// neighbour), and the largest allocation the properties promise
// (`max_alloc_size`, or `total_memory` when 0), capped at half the free
// memory, must succeed with its last page usable.
// Device allocations a failed resource.alloc_direct keeps instead of
// freeing (a plugin that handed out less than it was asked for may have
// corrupted its heap; its free could crash the run). Held here so that
// they stay reachable: LeakSanitizer does not report them as leaks
// (volatile, or the compiler drops stores that nothing reads).
static void* volatile conform_resource_kept[2];

static conform_result_t conform_resource_alloc(conform_ctx_t* ctx,
                                               const void* arg) {
  (void)arg;
  conform_direct_t d;
  if (conform_direct_open(ctx, &d) != CONFORM_PASS) return CONFORM_FAIL;
  uint64_t rng = ctx->seed + 40;
  const size_t size = (96u << 10) + 13;
  void* mem[2] = {NULL, NULL};
  unsigned char* in[2];
  // Host memory first, so that an overrun of the device memory (host
  // memory too, on some devices) lands after it, not in it.
  unsigned char* out = conform_alloc(ctx, size);
  in[0] = conform_alloc(ctx, size);
  in[1] = conform_alloc(ctx, size);
  accel_status_t status =
      out && in[0] && in[1] ? ACCEL_OK : ACCEL_ERROR_OUT_OF_MEMORY;
  for (int i = 0; i < 2 && status == ACCEL_OK; i++) {
    status = d.ops->mem_alloc(d.device, size, &mem[i]);
  }
  for (int i = 0; i < 2 && status == ACCEL_OK; i++) {
    conform_rand_bytes(&rng, in[i], size);
    status = d.ops->copy_h2d(d.device, NULL, mem[i], 0, in[i], size);
  }
  conform_result_t result = CONFORM_PASS;
  for (int i = 0; i < 2 && status == ACCEL_OK && result == CONFORM_PASS; i++) {
    status = d.ops->copy_d2h(d.device, NULL, out, mem[i], 0, size);
    for (size_t j = 0; status == ACCEL_OK && j < size; j++) {
      if (out[j] != in[i][j]) {
        result = conform_report(ctx, CONFORM_FAIL,
                                "allocation %d of %zu bytes: byte %zu changed "
                                "when the next one was written (smaller "
                                "than asked?); both leaked, not freed",
                                i, size, j);
        break;
      }
    }
  }
  if (result != CONFORM_PASS) {  // freeing may corrupt the heap: kept
    conform_resource_kept[0] = mem[0];
    conform_resource_kept[1] = mem[1];
    goto done;
  }
  for (int i = 0; i < 2; i++) {
    if (mem[i] != NULL) d.ops->mem_free(d.device, mem[i]);
  }
  if (status != ACCEL_OK) {
    result =
        conform_report(ctx, CONFORM_FAIL, "%zu-byte allocations: %s: %s", size,
                       accel_status_string(status), conform_direct_message());
    goto done;
  }
  accel_plugin_device_props_t props;
  uint64_t free0 = 0, total = 0;
  status = conform_direct_props(&d, &props);
  if (status == ACCEL_OK) status = d.ops->mem_info(d.device, &free0, &total);
  uint64_t limit = props.max_alloc_size ? props.max_alloc_size : total;
  uint64_t big = (limit < free0 / 2 ? limit : free0 / 2) & ~(uint64_t)4095;
  void* large = NULL;
  if (status == ACCEL_OK && big >= 8192) {
    status = d.ops->mem_alloc(d.device, (size_t)big, &large);
  }
  if (status != ACCEL_OK) {
    result = conform_report(
        ctx, CONFORM_FAIL,
        "mem_alloc of %llu bytes (max_alloc_size %llu, "
        "total %llu, free %llu): %s: %s",
        (unsigned long long)big, (unsigned long long)props.max_alloc_size,
        (unsigned long long)total, (unsigned long long)free0,
        accel_status_string(status), conform_direct_message());
    goto done;
  }
  if (large != NULL) {
    bool ok = conform_direct_roundtrip(ctx, &d, large, (size_t)big - 4096, 4096,
                                       &rng, "the last page");
    d.ops->mem_free(d.device, large);
    if (!ok) {
      result = CONFORM_FAIL;
      goto done;
    }
  }
  result = conform_report(ctx, CONFORM_PASS,
                          "2 x %zu bytes apart; one of %llu MiB (max_alloc "
                          "%llu MiB, free %llu MiB)",
                          size, (unsigned long long)(big >> 20),
                          (unsigned long long)(props.max_alloc_size >> 20),
                          (unsigned long long)(free0 >> 20));
done:
  conform_direct_close(&d);
  return result;
}

static conform_result_t conform_resource_pinned(conform_ctx_t* ctx,
                                                const void* arg) {
  (void)arg;
  const size_t size = 4u << 20;
  unsigned char *in = NULL, *out = NULL;
  accel_status_t status = accel_host_alloc(ctx->device, size, (void**)&in);
  if (status == ACCEL_OK) {
    status = accel_host_alloc(ctx->device, size, (void**)&out);
  }
  if (status != ACCEL_OK) {
    if (in != NULL) accel_host_free(ctx->device, in);
    return conform_fail_status(ctx, status, "accel_host_alloc");
  }
  uint64_t rng = ctx->seed + 77;
  conform_rand_bytes(&rng, in, size);
  memset(out, 0, size);
  accel_stream_t* s = NULL;
  accel_buffer_t* b = NULL;
  status = conform_stream(ctx, ctx->device, &s);
  if (status == ACCEL_OK) status = conform_buffer(ctx, ctx->device, size, &b);
  if (status == ACCEL_OK) status = accel_stream_write_buffer(s, b, 0, in, size);
  if (status == ACCEL_OK) status = accel_stream_read_buffer(s, b, 0, out, size);
  if (status == ACCEL_OK) status = conform_stream_wait(ctx, s);
  bool same = status == ACCEL_OK && memcmp(in, out, size) == 0;
  if (!ctx->hung) {
    accel_host_free(ctx->device, in);
    accel_host_free(ctx->device, out);
  }
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "copies");
  if (!same) {
    return conform_report(ctx, CONFORM_FAIL,
                          "pinned write then read on a stream differ");
  }
  return conform_report(ctx, CONFORM_PASS, "%zu bytes each way%s", size,
                        (ctx->info.caps & ACCEL_DEVICE_CAP_PINNED_MEMORY)
                            ? ", pinned"
                            : " (ordinary host memory)");
}

static conform_result_t conform_resource_gemm(conform_ctx_t* ctx,
                                              const void* arg) {
  (void)arg;
  enum { M = 48, N = 40, K = 56, STREAMS = 2 };
  float a[M * K], b[K * N], want[M * N], got[M * N];
  uint64_t rng = ctx->seed + 91;
  for (int i = 0; i < M * K; i++) a[i] = (float)conform_rand_range(&rng, -1, 1);
  for (int i = 0; i < K * N; i++) b[i] = (float)conform_rand_range(&rng, -1, 1);
  for (int i = 0; i < M; i++) {
    for (int j = 0; j < N; j++) {
      double acc = 0;
      for (int p = 0; p < K; p++) acc += (double)a[i * K + p] * b[p * N + j];
      want[i * N + j] = (float)acc;
    }
  }
  accel_memory_stats_t before = {.struct_size = sizeof(before)};
  accel_memory_stats_t after = {.struct_size = sizeof(after)};
  accel_buffer_t *ba = NULL, *bb = NULL, *bc[STREAMS] = {NULL};
  accel_stream_t* s[STREAMS] = {NULL};
  accel_status_t status = conform_buffer(ctx, ctx->device, sizeof(a), &ba);
  if (status == ACCEL_OK) status = conform_buffer(ctx, ctx->device, sizeof(b), &bb);
  if (status == ACCEL_OK) status = accel_buffer_write(ba, 0, a, sizeof(a));
  if (status == ACCEL_OK) status = accel_buffer_write(bb, 0, b, sizeof(b));
  for (int i = 0; status == ACCEL_OK && i < STREAMS; i++) {
    status = conform_stream(ctx, ctx->device, &s[i]);
    if (status == ACCEL_OK) {
      status = conform_buffer(ctx, ctx->device, sizeof(got), &bc[i]);
    }
  }
  if (status == ACCEL_OK) {
    status = accel_device_query_memory_stats(ctx->device, &before);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  for (int round = 0; round < 4 && status == ACCEL_OK; round++) {
    for (int i = 0; i < STREAMS && status == ACCEL_OK; i++) {
      accel_gemm_t g;
      accel_gemm_init(&g);
      g.m = M, g.n = N, g.k = K;
      g.a = ba, g.b = bb, g.c = bc[i];
      status = accel_op_gemm(s[i], &g);
    }
  }
  if (status == ACCEL_ERROR_UNSUPPORTED) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "op_gemm: %s",
                          accel_last_error());
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "op_gemm");
  for (int i = 0; i < STREAMS; i++) {
    status = conform_stream_wait(ctx, s[i]);
    if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "gemm");
    status = accel_buffer_read(bc[i], 0, got, sizeof(got));
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "read");
    for (int j = 0; j < M * N; j++) {
      double err = got[j] - want[j];
      if (!(err < 1e-3 && err > -1e-3)) {
        return conform_report(ctx, CONFORM_FAIL,
                              "stream %d: C[%d] is %.6g, expected %.6g", i, j,
                              got[j], want[j]);
      }
    }
  }
  status = accel_device_query_memory_stats(ctx->device, &after);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "stats");
  if (after.allocated_bytes != before.allocated_bytes) {
    return conform_report(ctx, CONFORM_FAIL,
                          "live bytes %llu before the GEMMs, %llu after: the "
                          "workspace was not returned",
                          (unsigned long long)before.allocated_bytes,
                          (unsigned long long)after.allocated_bytes);
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%d GEMMs on %d streams; live bytes unchanged",
                        4 * STREAMS, STREAMS);
}

static const conform_check_t conform_resources[] = {
    {"resource.memory_direct", conform_resource_memory, NULL},
    {"resource.props_direct", conform_resource_props, NULL},
    {"resource.alloc_direct", conform_resource_alloc, NULL},
    {"resource.pinned_async", conform_resource_pinned, NULL},
    {"resource.gemm_workspace", conform_resource_gemm, NULL},
};

const conform_check_t* conform_resource_checks(size_t* out_count) {
  *out_count = sizeof(conform_resources) / sizeof(conform_resources[0]);
  return conform_resources;
}
