// SPDX-License-Identifier: MIT
//
// resource.gemm_workspace_bounds: the GEMM workspace the core lends (ABI
// 1.2, plugin.h's accel_plugin_gemm_t) used where it is and only while it
// is lent. The core's caching allocator often hands out a workspace at
// offset 0 of an allocation of its own size, where a plugin that ignores
// `workspace_offset`, uses more than it asked for, or keeps the workspace
// for a later GEMM writes nothing of anyone else's; so this check drives
// the plugin's own table (direct.c) and lends the workspace itself: 64 KiB
// into an allocation with 64 KiB of pattern after it, then a second GEMM
// with another workspace while the first one's memory holds a new pattern.
// Every byte outside the lent range must keep its pattern, and both
// products must be right. A backend's library may use any part of the
// workspace, or none (the stand-in cuBLAS scribbles over its first and
// last 4 KiB, as cuBLAS's kernels use it), so this shows what the library
// touches. UNSUPPORTED where the plugin asks for no workspace.
#include <accel/plugin.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

enum {
  CONFORM_WS_DIM = 16,           // m = n = k
  CONFORM_WS_GUARD = 64 * 1024,  // bytes before and after the lent range
  // Patterns: not the stand-in cuBLAS's 0xa5 and 0x5a, which it writes at
  // the workspace's ends.
  CONFORM_WS_FIRST = 0x3c,  // around the lent ranges
  CONFORM_WS_LATER = 0xc3,  // the first workspace, during the second GEMM
};

#define CONFORM_WS_ELEMS (CONFORM_WS_DIM * CONFORM_WS_DIM)
#define CONFORM_WS_BYTES (CONFORM_WS_ELEMS * sizeof(float))

// What the check allocates through the plugin's table.
typedef struct conform_ws {
  const conform_direct_t* d;
  void* stream;
  void* a;
  void* b;
  void* c;
  void* ws[2];  // each GUARD + bytes + GUARD, lent at offset GUARD
  uint64_t bytes;
  unsigned char* host;  // read-back room for one whole workspace allocation
} conform_ws_t;

// Index of the first byte of `p[0, n)` that is not `value`, or -1.
static long conform_ws_differs(const unsigned char* p, size_t n,
                               unsigned char value) {
  for (size_t i = 0; i < n; i++) {
    if (p[i] != value) return (long)i;
  }
  return -1;
}

// Runs the GEMM with workspace `which` and checks C against `want`.
// Writes the detail and returns FAIL on a wrong step or product.
static conform_result_t conform_ws_gemm(conform_ctx_t* ctx, conform_ws_t* w,
                                        accel_plugin_gemm_t* g, int which,
                                        const float* want) {
  const accel_device_ops_t* o = w->d->ops;
  g->workspace = w->ws[which];
  g->workspace_offset = CONFORM_WS_GUARD;
  g->workspace_size = w->bytes;
  float got[CONFORM_WS_ELEMS];
  accel_status_t st = o->memset(w->d->device, NULL, w->c, 0, 0xff,
                                CONFORM_WS_BYTES);  // NaNs
  if (st == ACCEL_OK) st = o->op_gemm(w->d->device, w->stream, g);
  if (st == ACCEL_OK) st = o->stream_synchronize(w->stream);
  if (st == ACCEL_OK) {
    st = o->copy_d2h(w->d->device, NULL, got, w->c, 0, CONFORM_WS_BYTES);
  }
  if (st != ACCEL_OK) {
    return conform_report(ctx, CONFORM_FAIL,
                          "GEMM %d with a lent workspace of %llu bytes: %s: "
                          "%s",
                          which + 1, (unsigned long long)w->bytes,
                          accel_status_string(st), conform_direct_message());
  }
  for (int i = 0; i < CONFORM_WS_ELEMS; i++) {
    double err = (double)got[i] - want[i];
    if (!(err < 1e-3 && err > -1e-3)) {
      return conform_report(ctx, CONFORM_FAIL,
                            "GEMM %d: C[%d] is %.6g, expected %.6g", which + 1,
                            i, got[i], want[i]);
    }
  }
  return CONFORM_PASS;
}

// Reads workspace allocation `which` back and checks the bytes around the
// lent range (all of it with `whole`) hold `value`.
static conform_result_t conform_ws_guards(conform_ctx_t* ctx, conform_ws_t* w,
                                          int which, bool whole,
                                          unsigned char value,
                                          const char* when) {
  const accel_device_ops_t* o = w->d->ops;
  size_t size = 2 * CONFORM_WS_GUARD + (size_t)w->bytes;
  accel_status_t st =
      o->copy_d2h(w->d->device, NULL, w->host, w->ws[which], 0, size);
  if (st != ACCEL_OK) {
    return conform_report(ctx, CONFORM_FAIL, "read back: %s: %s",
                          accel_status_string(st), conform_direct_message());
  }
  size_t after = CONFORM_WS_GUARD + (size_t)w->bytes;
  long at = whole ? conform_ws_differs(w->host, size, value)
                  : conform_ws_differs(w->host, CONFORM_WS_GUARD, value);
  if (at < 0 && !whole) {
    at = conform_ws_differs(w->host + after, CONFORM_WS_GUARD, value);
    if (at >= 0) at += (long)after;
  }
  if (at < 0) return CONFORM_PASS;
  long from_lent = at - (long)CONFORM_WS_GUARD;
  return conform_report(
      ctx, CONFORM_FAIL,
      "%s: byte %ld of the allocation (%+ld from the workspace lent at "
      "offset %d, %llu bytes) is 0x%02x, expected 0x%02x%s",
      when, at, from_lent, CONFORM_WS_GUARD, (unsigned long long)w->bytes,
      w->host[at], value,
      whole ? " (a workspace kept from an earlier GEMM)"
            : (at < CONFORM_WS_GUARD ? " (workspace_offset ignored?)"
                                     : " (more used than asked for?)"));
}

static conform_result_t conform_ws_run(conform_ctx_t* ctx, conform_ws_t* w) {
  const accel_device_ops_t* o = w->d->ops;
  float a[CONFORM_WS_ELEMS], b[CONFORM_WS_ELEMS], want[CONFORM_WS_ELEMS];
  uint64_t rng = ctx->seed + 131;
  for (int i = 0; i < CONFORM_WS_ELEMS; i++) {
    a[i] = (float)conform_rand_range(&rng, -1, 1);
    b[i] = (float)conform_rand_range(&rng, -1, 1);
  }
  for (int i = 0; i < CONFORM_WS_DIM; i++) {
    for (int j = 0; j < CONFORM_WS_DIM; j++) {
      double acc = 0;
      for (int p = 0; p < CONFORM_WS_DIM; p++) {
        acc += (double)a[i * CONFORM_WS_DIM + p] * b[p * CONFORM_WS_DIM + j];
      }
      want[i * CONFORM_WS_DIM + j] = (float)acc;
    }
  }
  accel_plugin_gemm_t g;
  memset(&g, 0, sizeof(g));
  g.struct_size = sizeof(g);
  g.a_dtype = g.b_dtype = g.c_dtype = ACCEL_DTYPE_F32;
  g.m = g.n = g.k = CONFORM_WS_DIM;
  g.alpha = 1.0;
  g.lda = g.ldb = g.ldc = CONFORM_WS_DIM;
  const char* step = "stream_create";
  accel_status_t st = o->stream_create(w->d->device, 0, &w->stream);
  const void* in[2] = {a, b};
  void** mem[3] = {&w->a, &w->b, &w->c};
  for (int i = 0; i < 3 && st == ACCEL_OK; i++) {
    step = "mem_alloc of an operand";
    st = o->mem_alloc(w->d->device, CONFORM_WS_BYTES, mem[i]);
    if (st == ACCEL_OK && i < 2) {
      step = "copy_h2d of an operand";
      st = o->copy_h2d(w->d->device, NULL, *mem[i], 0, in[i],
                       CONFORM_WS_BYTES);
    }
  }
  g.a = w->a, g.b = w->b, g.c = w->c;
  if (st == ACCEL_OK) {
    step = "op_gemm_workspace";
    st = o->op_gemm_workspace(w->d->device, &g, &w->bytes);
  }
  if (st == ACCEL_OK && w->bytes == 0) {
    return conform_report(ctx, CONFORM_UNSUPPORTED,
                          "op_gemm_workspace asks for no workspace for a "
                          "16 x 16 x 16 f32 GEMM");
  }
  size_t size = 2 * CONFORM_WS_GUARD + (size_t)w->bytes;
  if (st == ACCEL_OK && (w->bytes > ((uint64_t)1 << 30) ||
                         (w->host = conform_alloc(ctx, size)) == NULL)) {
    return conform_report(ctx, CONFORM_FAIL,
                          "no host memory to read back a workspace of %llu "
                          "bytes",
                          (unsigned long long)w->bytes);
  }
  for (int i = 0; i < 2 && st == ACCEL_OK; i++) {
    step = "mem_alloc of a workspace";
    st = o->mem_alloc(w->d->device, size, &w->ws[i]);
    if (st == ACCEL_OK) {
      step = "memset of a workspace";
      st = o->memset(w->d->device, NULL, w->ws[i], 0, CONFORM_WS_FIRST, size);
    }
  }
  if (st != ACCEL_OK) {
    return conform_report(ctx, CONFORM_FAIL, "%s: %s: %s", step,
                          accel_status_string(st), conform_direct_message());
  }
  conform_result_t r = conform_ws_gemm(ctx, w, &g, 0, want);
  if (r == CONFORM_PASS) {
    r = conform_ws_guards(ctx, w, 0, false, CONFORM_WS_FIRST,
                          "after GEMM 1");
  }
  // The first workspace is the core's again (plugin.h: "The plugin must
  // not keep using it for later calls"): a new pattern over all of it,
  // which GEMM 2, lent the other workspace, must leave alone.
  if (r == CONFORM_PASS) {
    st = o->memset(w->d->device, NULL, w->ws[0], 0, CONFORM_WS_LATER, size);
    if (st != ACCEL_OK) {
      r = conform_report(ctx, CONFORM_FAIL, "memset: %s: %s",
                         accel_status_string(st), conform_direct_message());
    }
  }
  if (r == CONFORM_PASS) r = conform_ws_gemm(ctx, w, &g, 1, want);
  if (r == CONFORM_PASS) {
    r = conform_ws_guards(ctx, w, 0, true, CONFORM_WS_LATER,
                          "after GEMM 2, lent another workspace");
  }
  if (r == CONFORM_PASS) {
    r = conform_ws_guards(ctx, w, 1, false, CONFORM_WS_FIRST,
                          "after GEMM 2");
  }
  return r;
}

static conform_result_t conform_workspace_bounds(conform_ctx_t* ctx,
                                                 const void* arg) {
  (void)arg;
  conform_direct_t d;
  if (conform_direct_open(ctx, &d) != CONFORM_PASS) return CONFORM_FAIL;
  const accel_device_ops_t* o = d.ops;
  bool has = ACCEL_PLUGIN_HAS_FIELD(o, accel_device_ops_t, op_gemm_workspace) &&
             o->op_gemm_workspace != NULL && o->op_gemm != NULL;
  if (!has) {
    conform_direct_close(&d);
    return conform_report(ctx, CONFORM_UNSUPPORTED,
                          "no op_gemm_workspace: the plugin wants no GEMM "
                          "workspace");
  }
  conform_ws_t w = {.d = &d};
  conform_result_t r = conform_ws_run(ctx, &w);
  if (w.stream != NULL) {
    (void)o->stream_synchronize(w.stream);
    o->stream_destroy(w.stream);
  }
  void* mem[5] = {w.a, w.b, w.c, w.ws[0], w.ws[1]};
  for (int i = 0; i < 5; i++) {
    if (mem[i] != NULL) o->mem_free(d.device, mem[i]);
  }
  conform_direct_close(&d);
  if (r != CONFORM_PASS) return r;
  return conform_report(ctx, CONFORM_PASS,
                        "2 GEMMs, each lent %llu bytes at offset %d between "
                        "64 KiB guards: nothing outside touched",
                        (unsigned long long)w.bytes, CONFORM_WS_GUARD);
}

static const conform_check_t conform_workspace[] = {
    {"resource.gemm_workspace_bounds", conform_workspace_bounds, NULL},
};

const conform_check_t* conform_workspace_checks(size_t* out_count) {
  *out_count = sizeof(conform_workspace) / sizeof(conform_workspace[0]);
  return conform_workspace;
}
