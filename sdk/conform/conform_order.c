// SPDX-License-Identifier: MIT
//
// Stream order for every kind of work (order.*): each op is enqueued on a
// stream still busy with heavy copies, behind asynchronous writes of new
// values into its inputs and of a poison pattern over its output. In
// stream order the op reads the new inputs and overwrites the poison. A
// plugin that runs the op at once, when it is enqueued (a synchronous
// library call on a path that forgot its stream), reads the stale inputs
// written before, and the queued poison lands on its result afterwards:
// either way the output is wrong.
//
// The queued writes cover whole 8 MiB operand buffers (the op uses the
// first 4 KiB), so that no backend can run them at once as small copies:
// a backend that runs small work on the caller's thread while its stream
// is idle must not do so while big work is queued ahead of it.
//
// An event is recorded behind the queued writes, and the check asks it
// whether it has completed once the op's enqueue has returned: when it
// has not, an op run during the enqueue would have read the stale inputs.
// When it has, the try proves nothing (asking the stream before the
// enqueue is not enough: the writes may land while the enqueue runs), and
// it is repeated with twice the copies (8 tries, then SKIP naming the last
// amount). A wrong result fails whatever the timing.
#include <stdio.h>
#include <string.h>

#include "conform.h"

#define CONFORM_ORDER_N 1024u     // f32 elements per operand
#define CONFORM_ORDER_SIDE 32u    // GEMM: 32 x 32 x 32
#define CONFORM_ORDER_MEMBERS 4u  // batched GEMM: 4 packed 16 x 16 x 16
#define CONFORM_ORDER_STALE 7.0   // every input before the queued writes
#define CONFORM_ORDER_POISON 0xa5 // every output byte before the op
#define CONFORM_ORDER_TRIES 8
#define CONFORM_ORDER_BYTES ((size_t)8 << 20)  // each operand buffer

typedef enum conform_order_op {
  CONFORM_ORDER_MEMSET,
  CONFORM_ORDER_COPY,
  CONFORM_ORDER_FILL,
  CONFORM_ORDER_CAST,
  CONFORM_ORDER_SCALE,
  CONFORM_ORDER_AXPY,
  CONFORM_ORDER_ADD,
  CONFORM_ORDER_MUL,
  CONFORM_ORDER_SUM,
  CONFORM_ORDER_GEMM,
  CONFORM_ORDER_GEMM_BATCHED,
  CONFORM_ORDER_RELU,
  CONFORM_ORDER_BIAS_ADD,
  CONFORM_ORDER_LAUNCH,
} conform_order_op_t;

// The operands of one try: x and y are inputs, z the output (or, for the
// in-place ops scale, axpy, bias-add and the kernel, an input too).
typedef struct conform_order {
  conform_order_op_t op;
  accel_stream_t* stream;
  accel_buffer_t* x;
  accel_buffer_t* y;
  accel_buffer_t* z;
  accel_kernel_t* kernel;      // the add_one test kernel, for LAUNCH
  accel_event_t* mark;         // recorded behind the queued writes
  float xs[CONFORM_ORDER_N];   // the new values of x, y and z
  float ys[CONFORM_ORDER_N];
  float zs[CONFORM_ORDER_N];
  unsigned char want[CONFORM_ORDER_N * 4];
  size_t out_bytes;            // bytes of z that the op defines
  // What the queued writes put in x, y and z (CONFORM_ORDER_BYTES each):
  // the new values first, then zeros; for z, poison unless the op reads
  // it.
  unsigned char* hx;
  unsigned char* hy;
  unsigned char* hz;
} conform_order_t;

// Whether the op reads z (it is then written with new values, not poison).
static bool conform_order_in_place(conform_order_op_t op) {
  return op == CONFORM_ORDER_SCALE || op == CONFORM_ORDER_AXPY ||
         op == CONFORM_ORDER_BIAS_ADD || op == CONFORM_ORDER_LAUNCH;
}

// w = a * b, all `side` x `side`, packed row-major.
static void conform_order_matmul(float* w, const float* a, const float* b,
                                 size_t side) {
  for (size_t i = 0; i < side; i++) {
    for (size_t j = 0; j < side; j++) {
      float acc = 0;
      for (size_t p = 0; p < side; p++) {
        acc += a[i * side + p] * b[p * side + j];
      }
      w[i * side + j] = acc;
    }
  }
}

// New input values (small integers, so every result below is exact in f32
// whatever the order of its additions) and the expected output.
static void conform_order_expect(conform_order_t* o) {
  const size_t n = CONFORM_ORDER_N, s = CONFORM_ORDER_SIDE;
  for (size_t i = 0; i < n; i++) {
    o->xs[i] = (float)((int)(i % 7) - 3);
    o->ys[i] = (float)((int)(i % 5) - 2);
    o->zs[i] = (float)((int)(i % 11) - 5);
  }
  float* w = (float*)o->want;
  o->out_bytes = n * sizeof(float);
  switch (o->op) {
    case CONFORM_ORDER_MEMSET:
      memset(o->want, 0x3c, sizeof(o->want));
      return;
    case CONFORM_ORDER_COPY:
      memcpy(w, o->xs, sizeof(o->xs));
      return;
    case CONFORM_ORDER_FILL:
      for (size_t i = 0; i < n; i++) w[i] = 2.5f;
      return;
    case CONFORM_ORDER_CAST:  // f32 -> f16, exact for these values
      o->out_bytes = n * 2;
      for (size_t i = 0; i < n; i++) {
        conform_store(o->want, ACCEL_DTYPE_F16, i, o->xs[i]);
      }
      return;
    case CONFORM_ORDER_SCALE:
      for (size_t i = 0; i < n; i++) w[i] = 3.0f * o->zs[i];
      return;
    case CONFORM_ORDER_AXPY:
      for (size_t i = 0; i < n; i++) w[i] = 3.0f * o->xs[i] + o->zs[i];
      return;
    case CONFORM_ORDER_ADD:
      for (size_t i = 0; i < n; i++) w[i] = o->xs[i] + o->ys[i];
      return;
    case CONFORM_ORDER_MUL:
      for (size_t i = 0; i < n; i++) w[i] = o->xs[i] * o->ys[i];
      return;
    case CONFORM_ORDER_SUM: {
      float sum = 0;
      for (size_t i = 0; i < n; i++) sum += o->xs[i];
      w[0] = sum;
      o->out_bytes = sizeof(float);
      return;
    }
    case CONFORM_ORDER_GEMM:
      conform_order_matmul(w, o->xs, o->ys, s);
      return;
    case CONFORM_ORDER_GEMM_BATCHED:  // member b at b * (s / 2)^2 of each
      for (size_t b = 0; b < CONFORM_ORDER_MEMBERS; b++) {
        size_t at = b * (s / 2) * (s / 2);
        conform_order_matmul(w + at, o->xs + at, o->ys + at, s / 2);
      }
      return;
    case CONFORM_ORDER_RELU:
      for (size_t i = 0; i < n; i++) w[i] = o->xs[i] < 0 ? 0.0f : o->xs[i];
      return;
    case CONFORM_ORDER_BIAS_ADD:  // 32 rows of 32, bias = the first 32 of y
      for (size_t i = 0; i < n; i++) w[i] = o->zs[i] + o->ys[i % s];
      return;
    case CONFORM_ORDER_LAUNCH: {  // add_one on int32: z holds i - 500
      int32_t* iw = (int32_t*)o->want;
      for (size_t i = 0; i < n; i++) iw[i] = (int32_t)i - 500 + 1;
      return;
    }
  }
}

// Enqueues the op itself.
static accel_status_t conform_order_enqueue(conform_ctx_t* ctx,
                                            conform_order_t* o) {
  const size_t n = CONFORM_ORDER_N, s = CONFORM_ORDER_SIDE;
  accel_stream_t* st = o->stream;
  switch (o->op) {
    case CONFORM_ORDER_MEMSET:
      return accel_stream_fill_buffer(st, o->z, 0, 0x3c, n * sizeof(float));
    case CONFORM_ORDER_COPY:
      return accel_stream_copy_buffer(st, o->z, 0, o->x, 0, n * sizeof(float));
    case CONFORM_ORDER_FILL:
      return accel_op_fill(st, o->z, 0, ACCEL_DTYPE_F32, n, 2.5);
    case CONFORM_ORDER_CAST:
      return accel_op_cast(st, o->z, 0, ACCEL_DTYPE_F16, o->x, 0,
                           ACCEL_DTYPE_F32, n);
    case CONFORM_ORDER_SCALE:
      return accel_op_scale(st, o->z, 0, ACCEL_DTYPE_F32, n, 3.0);
    case CONFORM_ORDER_AXPY:
      return accel_op_axpy(st, o->z, 0, o->x, 0, ACCEL_DTYPE_F32, n, 3.0);
    case CONFORM_ORDER_ADD:
      return accel_op_add(st, o->z, 0, o->x, 0, o->y, 0, ACCEL_DTYPE_F32, n);
    case CONFORM_ORDER_MUL:
      return accel_op_mul(st, o->z, 0, o->x, 0, o->y, 0, ACCEL_DTYPE_F32, n);
    case CONFORM_ORDER_SUM:
      return accel_op_sum(st, o->z, 0, o->x, 0, ACCEL_DTYPE_F32, n);
    case CONFORM_ORDER_GEMM: {
      accel_gemm_t g;
      accel_gemm_init(&g);
      g.m = g.n = g.k = s;
      g.a = o->x;
      g.b = o->y;
      g.c = o->z;
      return accel_op_gemm(st, &g);
    }
    case CONFORM_ORDER_GEMM_BATCHED: {
      accel_gemm_t g;
      accel_gemm_init(&g);
      g.m = g.n = g.k = s / 2;
      g.lda = g.ldb = g.ldc = s / 2;
      g.a = o->x;
      g.b = o->y;
      g.c = o->z;
      const uint64_t stride = (s / 2) * (s / 2);
      return accel_op_gemm_strided_batched(st, &g, CONFORM_ORDER_MEMBERS,
                                           stride, stride, stride);
    }
    case CONFORM_ORDER_RELU:
      return accel_op_activation(st, o->z, 0, o->x, 0, ACCEL_DTYPE_F32, n,
                                 ACCEL_ACTIVATION_RELU);
    case CONFORM_ORDER_BIAS_ADD:
      return accel_op_bias_add(st, o->z, 0, o->y, 0, ACCEL_DTYPE_F32, s, s);
    case CONFORM_ORDER_LAUNCH:
      return conform_launch_add_one(ctx, o->kernel, st, o->z, (uint32_t)n);
  }
  return ACCEL_ERROR_INVALID_ARGUMENT;
}

// One try with `rounds` of heavy copies: 0 when the op ran in order and
// the writes ahead of it were still pending when its enqueue returned (or
// FAIL/UNSUPPORTED with the detail written, as `*result`), 1 when they
// had already landed (inconclusive).
static int conform_order_try(conform_ctx_t* ctx, conform_order_t* o,
                             int rounds, conform_result_t* result) {
  const size_t bytes = CONFORM_ORDER_N * sizeof(float);
  unsigned char* stale = conform_alloc(ctx, bytes);
  unsigned char* got = conform_alloc(ctx, bytes);
  if (stale == NULL || got == NULL) {
    *result = conform_report(ctx, CONFORM_FAIL, "out of host memory");
    return 0;
  }
  for (size_t i = 0; i < CONFORM_ORDER_N; i++) {
    if (o->op == CONFORM_ORDER_LAUNCH) {
      ((int32_t*)stale)[i] = 7;
    } else {
      ((float*)stale)[i] = (float)CONFORM_ORDER_STALE;
    }
  }
  accel_status_t status = accel_buffer_write(o->x, 0, stale, bytes);
  if (status == ACCEL_OK) status = accel_buffer_write(o->y, 0, stale, bytes);
  if (status == ACCEL_OK) status = accel_buffer_write(o->z, 0, stale, bytes);
  if (status == ACCEL_OK) status = conform_heavy_work(ctx, o->stream, rounds);
  unsigned char* const host[3] = {o->hx, o->hy, o->hz};
  accel_buffer_t* const dev[3] = {o->x, o->y, o->z};
  for (int i = 0; i < 3 && status == ACCEL_OK; i++) {
    status = accel_stream_write_buffer(o->stream, dev[i], 0, host[i],
                                       CONFORM_ORDER_BYTES);
  }
  if (status == ACCEL_OK) status = accel_event_record(o->mark, o->stream);
  if (status != ACCEL_OK) {
    *result = conform_fail_status(ctx, status, "setup");
    return 0;
  }
  status = conform_order_enqueue(ctx, o);
  bool done = false;  // whether the writes had landed by now
  if (status == ACCEL_OK) {
    accel_status_t q = accel_event_query(o->mark, &done);
    if (q != ACCEL_OK) {
      conform_stream_sync(ctx, o->stream);
      *result = conform_fail_status(ctx, q, "event_query");
      return 0;
    }
  }
  if (status == ACCEL_ERROR_UNSUPPORTED) {
    conform_stream_sync(ctx, o->stream);
    *result = conform_report(ctx, CONFORM_UNSUPPORTED, "%s",
                             accel_last_error());
    return 0;
  }
  if (status != ACCEL_OK) {
    *result = conform_fail_status(ctx, status, "enqueueing the op");
    return 0;
  }
  status = conform_stream_sync(ctx, o->stream);
  if (status != ACCEL_OK) {
    *result = conform_fail_wait(ctx, status, "stream_synchronize");
    return 0;
  }
  status = accel_buffer_read(o->z, 0, got, bytes);
  if (status != ACCEL_OK) {
    *result = conform_fail_status(ctx, status, "reading the output");
    return 0;
  }
  for (size_t i = 0; i < o->out_bytes; i++) {
    if (got[i] != o->want[i]) {
      *result = conform_report(
          ctx, CONFORM_FAIL,
          "enqueued behind %d heavy copies and queued writes of its "
          "operands: output byte %zu is 0x%02x, expected 0x%02x (%s): did "
          "the op run when it was enqueued instead of in stream order?",
          rounds, i, got[i], o->want[i],
          got[i] == CONFORM_ORDER_POISON ? "the poison queued before it"
                                         : "not the poison queued before it");
      return 0;
    }
  }
  if (done) return 1;
  *result = conform_report(ctx, CONFORM_PASS,
                           "in order behind %d heavy copies", rounds);
  return 0;
}

// The tries of one op, on `o` with its host sides ready.
static conform_result_t conform_order_run(conform_ctx_t* ctx,
                                          conform_order_t* o) {
  accel_status_t status = conform_stream(ctx, ctx->device, &o->stream);
  if (status == ACCEL_OK) status = conform_event(ctx, ctx->device, 0, &o->mark);
  accel_buffer_t** ops[3] = {&o->x, &o->y, &o->z};
  for (int i = 0; i < 3 && status == ACCEL_OK; i++) {
    status = conform_buffer(ctx, ctx->device, CONFORM_ORDER_BYTES, ops[i]);
  }
  if (status == ACCEL_ERROR_OUT_OF_DEVICE_MEMORY) {
    return conform_report(ctx, CONFORM_SKIP,
                          "three %zu-byte operands do not fit: %s",
                          CONFORM_ORDER_BYTES, accel_last_error());
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  int rounds = 4;
  for (int t = 0; t < CONFORM_ORDER_TRIES; t++, rounds *= 2) {
    conform_result_t result = CONFORM_PASS;
    if (conform_order_try(ctx, o, rounds, &result) == 0) return result;
  }
  return conform_report(ctx, CONFORM_SKIP,
                        "the stream had finished %d heavy copies before the "
                        "op's enqueue returned: order not exercised",
                        rounds / 2);
}

static conform_result_t conform_order_check(conform_ctx_t* ctx,
                                            const void* arg) {
  conform_order_t* o = conform_alloc(ctx, sizeof(*o));
  if (o == NULL) return conform_report(ctx, CONFORM_FAIL, "host OOM");
  o->op = (conform_order_op_t)(uintptr_t)arg;
  if (o->op == CONFORM_ORDER_LAUNCH) {
    char path[1024] = "";
    CONFORM_GET_KERNEL(ctx, CONFORM_ADD_ONE, o->kernel, path);
  }
  conform_order_expect(o);
  // The host sides from accel_host_alloc() where the device has pinned
  // memory: a GPU backend may stage a pageable write synchronously, after
  // the work ahead of it, and the stream would have drained before the op
  // is enqueued.
  unsigned char** hosts[3] = {&o->hx, &o->hy, &o->hz};
  bool pinned[3] = {false, false, false};
  for (int i = 0; i < 3; i++) {
    pinned[i] = accel_host_alloc(ctx->device, CONFORM_ORDER_BYTES,
                                 (void**)hosts[i]) == ACCEL_OK;
    if (!pinned[i]) *hosts[i] = conform_alloc(ctx, CONFORM_ORDER_BYTES);
  }
  conform_result_t result;
  if (o->hx == NULL || o->hy == NULL || o->hz == NULL) {
    result = conform_report(ctx, CONFORM_FAIL, "out of host memory");
  } else {
    const size_t bytes = CONFORM_ORDER_N * sizeof(float);
    memset(o->hx, 0, CONFORM_ORDER_BYTES);
    memset(o->hy, 0, CONFORM_ORDER_BYTES);
    memcpy(o->hx, o->xs, bytes);
    memcpy(o->hy, o->ys, bytes);
    if (o->op == CONFORM_ORDER_LAUNCH) {  // int32 i - 500
      memset(o->hz, 0, CONFORM_ORDER_BYTES);
      for (size_t i = 0; i < CONFORM_ORDER_N; i++) {
        ((int32_t*)o->hz)[i] = (int32_t)i - 500;
      }
    } else if (conform_order_in_place(o->op)) {
      memset(o->hz, 0, CONFORM_ORDER_BYTES);
      memcpy(o->hz, o->zs, bytes);
    } else {
      memset(o->hz, CONFORM_ORDER_POISON, CONFORM_ORDER_BYTES);
    }
    result = conform_order_run(ctx, o);
  }
  // A failed try may have left the writes queued: drain the stream first
  // (bounded), and leak the memory if that hangs.
  if (o->stream != NULL && !ctx->hung) (void)conform_stream_sync(ctx, o->stream);
  for (int i = 0; i < 3 && !ctx->hung; i++) {
    if (pinned[i]) accel_host_free(ctx->device, *hosts[i]);
  }
  return result;
}

// order.write: an asynchronous write from the host must not land before
// the work queued ahead of it has read the buffer. A copy x -> z is queued
// behind heavy copies, then a write of new bytes into x: z must get the
// old bytes of x, and x the new ones.
static conform_result_t conform_order_write(conform_ctx_t* ctx,
                                            const void* arg) {
  (void)arg;
  const size_t n = CONFORM_ORDER_BYTES;
  unsigned char* old = conform_alloc(ctx, n);
  unsigned char* fresh = conform_alloc(ctx, n);
  unsigned char* got = conform_alloc(ctx, n);
  if (old == NULL || fresh == NULL || got == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "out of host memory");
  }
  uint64_t rng = ctx->seed ^ 0x6f72646572ull;
  conform_rand_bytes(&rng, old, n);
  conform_rand_bytes(&rng, fresh, n);
  accel_stream_t* stream = NULL;
  accel_buffer_t* x = NULL;
  accel_buffer_t* z = NULL;
  accel_event_t* mark = NULL;  // recorded behind the copy
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status == ACCEL_OK) status = conform_event(ctx, ctx->device, 0, &mark);
  if (status == ACCEL_OK) status = conform_buffer(ctx, ctx->device, n, &x);
  if (status == ACCEL_OK) status = conform_buffer(ctx, ctx->device, n, &z);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  int rounds = 4;
  for (int t = 0; t < CONFORM_ORDER_TRIES; t++, rounds *= 2) {
    bool done = false;
    status = accel_buffer_write(x, 0, old, n);
    if (status == ACCEL_OK) status = accel_buffer_fill(z, 0, 0, n);
    if (status == ACCEL_OK) status = conform_heavy_work(ctx, stream, rounds);
    if (status == ACCEL_OK) {
      status = accel_stream_copy_buffer(stream, z, 0, x, 0, n);
    }
    if (status == ACCEL_OK) status = accel_event_record(mark, stream);
    if (status == ACCEL_OK) {
      status = accel_stream_write_buffer(stream, x, 0, fresh, n);
    }
    // Whether the copy had run by the time the write's enqueue returned.
    if (status == ACCEL_OK) status = accel_event_query(mark, &done);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "enqueue");
    status = conform_stream_sync(ctx, stream);
    if (status != ACCEL_OK) {
      return conform_fail_wait(ctx, status, "stream_synchronize");
    }
    if (!conform_verify(ctx, z, old, n,
                        "the copy queued before the write (did the write "
                        "land at once, before the copy read its buffer?)") ||
        !conform_verify(ctx, x, fresh, n, "the written buffer")) {
      return CONFORM_FAIL;
    }
    if (!done) {
      return conform_report(ctx, CONFORM_PASS,
                            "in order behind %d heavy copies", rounds);
    }
  }
  return conform_report(ctx, CONFORM_SKIP,
                        "the stream had finished %d heavy copies before the "
                        "write's enqueue returned: order not exercised",
                        rounds / 2);
}

static const conform_check_t conform_orders[] = {
    {"order.write", conform_order_write, NULL},
    {"order.memset", conform_order_check, (void*)(uintptr_t)CONFORM_ORDER_MEMSET},
    {"order.copy", conform_order_check, (void*)(uintptr_t)CONFORM_ORDER_COPY},
    {"order.fill", conform_order_check, (void*)(uintptr_t)CONFORM_ORDER_FILL},
    {"order.cast", conform_order_check, (void*)(uintptr_t)CONFORM_ORDER_CAST},
    {"order.scale", conform_order_check, (void*)(uintptr_t)CONFORM_ORDER_SCALE},
    {"order.axpy", conform_order_check, (void*)(uintptr_t)CONFORM_ORDER_AXPY},
    {"order.add", conform_order_check, (void*)(uintptr_t)CONFORM_ORDER_ADD},
    {"order.mul", conform_order_check, (void*)(uintptr_t)CONFORM_ORDER_MUL},
    {"order.sum", conform_order_check, (void*)(uintptr_t)CONFORM_ORDER_SUM},
    {"order.gemm", conform_order_check, (void*)(uintptr_t)CONFORM_ORDER_GEMM},
    {"order.gemm_batched", conform_order_check, (void*)(uintptr_t)CONFORM_ORDER_GEMM_BATCHED},
    {"order.relu", conform_order_check, (void*)(uintptr_t)CONFORM_ORDER_RELU},
    {"order.bias_add", conform_order_check, (void*)(uintptr_t)CONFORM_ORDER_BIAS_ADD},
    {"order.launch", conform_order_check, (void*)(uintptr_t)CONFORM_ORDER_LAUNCH},
};

const conform_check_t* conform_order_checks(size_t* out_count) {
  *out_count = sizeof(conform_orders) / sizeof(conform_orders[0]);
  return conform_orders;
}
