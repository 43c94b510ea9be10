// SPDX-License-Identifier: MIT
//
// libfakecuda's streams, events, copies, memset, modules and launches (see
// fakecuda.c for what the fake models). Each stream is a worker thread
// running its FIFO of tasks, the legacy NULL stream of a context too (it
// never waits for the non-blocking streams). The synchronous calls return
// when CUDA's "API synchronization behavior" says they do: cuMemcpyDtoH
// and copies from page-locked memory when done, cuMemcpyHtoD from pageable
// memory once the source is staged, and cuMemcpyDtoD, cuMemcpyPeer and
// cuMemsetD8 at once, still running on the legacy stream. A fault
// (FAKECUDA_FAULT, or a kernel touching memory its context cannot) sets the
// context's sticky error: later work does not run, synchronising calls report
// it, events still complete.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fakecuda.h"

typedef enum {
  FAKECUDA_COPY,
  FAKECUDA_SET,
  FAKECUDA_LAUNCH,
  FAKECUDA_CALL,
  FAKECUDA_RECORD,
  FAKECUDA_WAIT,
  FAKECUDA_GRAPH,  // runs the tasks of `body` (a graph launch)
  FAKECUDA_STOP
} fakecuda_task_kind_t;

typedef struct fakecuda_body fakecuda_body_t;

typedef struct fakecuda_task {
  struct fakecuda_task* next;
  fakecuda_task_kind_t kind;
  void* dst;
  const void* src;
  size_t size;
  unsigned char value;
  CUevent event;
  uint64_t gen;
  const fakecuda_kernel_t* kernel;
  bool fault;  // FAKECUDA_FAULT named the kernel at launch
  unsigned grid[3], block[3];
  unsigned shared;                    // dynamic shared memory bytes
  void* params[FAKECUDA_MAX_PARAMS];  // into `args`
  unsigned char* args;                // the arguments, copied at launch
  bool (*call)(void* arg);            // FAKECUDA_CALL
  void* arg;
  fakecuda_body_t* body;  // FAKECUDA_GRAPH: holds a reference
} fakecuda_task_t;

struct CUstream_st {
  CUcontext ctx;
  CUstream next;  // in ctx->streams
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  fakecuda_task_t *head, *tail;  // head runs while it stays in the list
  // Tasks ever queued and tasks run; they run in order, so the first
  // `completed` of them are done. A synchronize waits for the count queued
  // when it is called, not for an empty stream (work other threads queue
  // meanwhile is not waited for, as on a GPU).
  uint64_t enqueued, completed;
  bool lazy;  // the legacy stream: each task starts late
  // While capturing, submitted work goes to `capture` instead (guarded
  // by `mutex`); a call illegal in a capture invalidates it.
  fakecuda_body_t* capture;
  bool capture_invalid;
  pthread_t worker;
};

struct CUevent_st {
  CUcontext ctx;
  unsigned flags;
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  int refs;           // the handle plus queued tasks
  uint64_t recorded;  // generation of the last record
  uint64_t done;      // generation completed
  double time_ms;
};

static void fakecuda_fault(CUcontext ctx) {
  int ok = CUDA_SUCCESS;
  atomic_compare_exchange_strong(&ctx->error, &ok, CUDA_ERROR_ILLEGAL_ADDRESS);
}

static void fakecuda_event_release(CUevent e) {
  pthread_mutex_lock(&e->mutex);
  bool last = --e->refs == 0;
  pthread_mutex_unlock(&e->mutex);
  if (last) {
    pthread_mutex_destroy(&e->mutex);
    pthread_cond_destroy(&e->cond);
    free(e);
  }
}

// Marks generation `gen` of `e` complete.
static void fakecuda_event_complete(CUevent e, uint64_t gen) {
  pthread_mutex_lock(&e->mutex);
  if (gen > e->done) {
    e->done = gen;
    e->time_ms = fakecuda_now_ms();
  }
  pthread_cond_broadcast(&e->cond);
  pthread_mutex_unlock(&e->mutex);
}

static void fakecuda_event_wait(CUevent e, uint64_t gen) {
  pthread_mutex_lock(&e->mutex);
  while (e->done < gen) pthread_cond_wait(&e->cond, &e->mutex);
  pthread_mutex_unlock(&e->mutex);
}

static void fakecuda_body_run(CUcontext ctx, const fakecuda_body_t* body);
static void fakecuda_body_release(fakecuda_body_t* body);

// Runs `t` for `ctx`, leaving what it owns. A context with a sticky error
// runs no more work, but its events still complete.
static void fakecuda_task_exec(CUcontext ctx, const fakecuda_task_t* t) {
  bool dead = atomic_load(&ctx->error) != CUDA_SUCCESS;
  switch (t->kind) {
    case FAKECUDA_COPY:
      if (!dead) memmove(t->dst, t->src, t->size);
      break;
    case FAKECUDA_SET:
      if (!dead) memset(t->dst, t->value, t->size);
      break;
    case FAKECUDA_LAUNCH:
      if (!dead &&
          (t->fault || !fakecuda_kernel_run(t->kernel, ctx, t->params,
                                            t->grid, t->block, t->shared))) {
        fakecuda_fault(ctx);
      }
      break;
    case FAKECUDA_CALL:
      if (!dead && !t->call(t->arg)) fakecuda_fault(ctx);
      break;
    case FAKECUDA_RECORD:
      fakecuda_event_complete(t->event, t->gen);
      break;
    case FAKECUDA_WAIT:
      fakecuda_event_wait(t->event, t->gen);
      break;
    case FAKECUDA_GRAPH:
      fakecuda_body_run(ctx, t->body);
      break;
    case FAKECUDA_STOP:
      break;
  }
}

// Frees what `t` owns (not `t`).
static void fakecuda_task_clear(fakecuda_task_t* t) {
  if (t->event != NULL) fakecuda_event_release(t->event);
  if (t->body != NULL) fakecuda_body_release(t->body);
  free(t->args);
  free(t->arg);
}

// Runs `t` for `ctx` and frees what it owns (not `t`).
static void fakecuda_task_run(CUcontext ctx, fakecuda_task_t* t) {
  fakecuda_task_exec(ctx, t);
  fakecuda_task_clear(t);
}

static void* fakecuda_worker(void* arg) {
  CUstream s = arg;
  for (;;) {
    pthread_mutex_lock(&s->mutex);
    while (s->head == NULL) pthread_cond_wait(&s->cond, &s->mutex);
    fakecuda_task_t* t = s->head;
    pthread_mutex_unlock(&s->mutex);
    bool stop = t->kind == FAKECUDA_STOP;
    if (s->lazy) {
      // Work on the legacy stream that a caller forgets to wait for is
      // then reliably still pending when its next step runs.
      struct timespec delay = {0, 200 * 1000};
      nanosleep(&delay, NULL);
    }
    fakecuda_task_run(s->ctx, t);
    pthread_mutex_lock(&s->mutex);
    s->head = t->next;
    if (s->head == NULL) s->tail = NULL;
    s->completed++;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mutex);
    free(t);
    if (stop) return NULL;
  }
}

// Waits for the tasks queued on `s` before the call (cuStreamSynchronize:
// "Waits until the device has completed all operations in the stream"),
// not for the ones other threads queue meanwhile: a stream kept busy
// still lets it return.
static void fakecuda_stream_drain(CUstream s) {
  pthread_mutex_lock(&s->mutex);
  uint64_t target = s->enqueued;
  while (s->completed < target) pthread_cond_wait(&s->cond, &s->mutex);
  pthread_mutex_unlock(&s->mutex);
}

static fakecuda_task_t* fakecuda_task(fakecuda_task_kind_t kind) {
  fakecuda_task_t* t = calloc(1, sizeof(*t));
  if (t != NULL) t->kind = kind;
  return t;
}

// A stream of `ctx` with its worker running, or NULL.
static CUstream fakecuda_stream_new(CUcontext ctx, bool lazy) {
  CUstream s = calloc(1, sizeof(*s));
  if (s == NULL) return NULL;
  s->ctx = ctx;
  s->lazy = lazy;
  pthread_mutex_init(&s->mutex, NULL);
  pthread_cond_init(&s->cond, NULL);
  if (pthread_create(&s->worker, NULL, fakecuda_worker, s) != 0) {
    pthread_mutex_destroy(&s->mutex);
    pthread_cond_destroy(&s->cond);
    free(s);
    return NULL;
  }
  return s;
}

// Work queued on, or waits for, a legacy default stream so far. On a GPU
// that stream synchronises with every blocking stream of its context, and
// the primary context is shared with the application, so a library using
// it stalls (and is stalled by) the application's blocking streams. The
// fake refuses blocking streams and does not model that wait; it counts.
static atomic_ulong fakecuda_legacy_uses;

// Test-only, not CUDA: the number of uses of a legacy default stream.
FAKECUDA_API unsigned long fakecuda_legacy_stream_uses(void) {
  return atomic_load(&fakecuda_legacy_uses);
}

// `s`, or for NULL the legacy stream of `ctx` (started now if need be).
static CUstream fakecuda_stream(CUcontext ctx, CUstream s) {
  if (s != NULL) return s;
  atomic_fetch_add(&fakecuda_legacy_uses, 1);
  pthread_mutex_lock(&fakecuda_ctx_lock);
  if (ctx->legacy == NULL) ctx->legacy = fakecuda_stream_new(ctx, true);
  s = ctx->legacy;
  pthread_mutex_unlock(&fakecuda_ctx_lock);
  return s;
}

static CUresult fakecuda_capture_add(CUstream s, fakecuda_task_t* t);

// Queues `t` on `s` (NULL: the legacy stream). Takes ownership of `t`
// (NULL: out of memory).
static CUresult fakecuda_submit(CUcontext ctx, CUstream s, fakecuda_task_t* t) {
  if (t != NULL && (s = fakecuda_stream(ctx, s)) == NULL) {
    free(t->args);
    free(t->arg);
    free(t);
    t = NULL;
  }
  if (t == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&s->mutex);
  if (s->capture != NULL) {
    // Recorded, not run (fakecuda_capture_add takes `t`).
    CUresult r = fakecuda_capture_add(s, t);
    pthread_mutex_unlock(&s->mutex);
    return r;
  }
  if (s->tail != NULL) {
    s->tail->next = t;
  } else {
    s->head = t;
  }
  s->tail = t;
  s->enqueued++;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->mutex);
  return CUDA_SUCCESS;
}

// Joins the worker of `s` after its queued work and frees it.
static void fakecuda_stream_free(CUstream s) {
  fakecuda_task_t* t = fakecuda_task(FAKECUDA_STOP);
  if (t == NULL) {
    fakecuda_stream_drain(s);
    return;  // the worker is left running: the process is out of memory
  }
  fakecuda_body_t* capture = s->capture;  // a capture never ended
  s->capture = NULL;
  if (capture != NULL) fakecuda_body_release(capture);
  fakecuda_submit(s->ctx, s, t);
  pthread_join(s->worker, NULL);
  pthread_mutex_destroy(&s->mutex);
  pthread_cond_destroy(&s->cond);
  free(s);
}

void fakecuda_legacy_stop(CUcontext ctx) {
  if (ctx->legacy != NULL) fakecuda_stream_free(ctx->legacy);
  ctx->legacy = NULL;
}

void fakecuda_ctx_drain(CUcontext ctx) {
  pthread_mutex_lock(&fakecuda_ctx_lock);
  for (CUstream s = ctx->streams; s != NULL; s = s->next) {
    fakecuda_stream_drain(s);
  }
  if (ctx->legacy != NULL) fakecuda_stream_drain(ctx->legacy);
  pthread_mutex_unlock(&fakecuda_ctx_lock);
}

// Waits for `s` (NULL: the legacy stream of `ctx`); the sticky error.
static CUresult fakecuda_sync(CUcontext ctx, CUstream s) {
  s = fakecuda_stream(ctx, s);
  if (s == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  fakecuda_stream_drain(s);
  return (CUresult)atomic_load(&ctx->error);
}

// For work queued on `s` (NULL: the legacy stream): a current context that
// owns the stream, and no sticky error.
static CUresult fakecuda_enqueue_ctx(CUstream s, CUcontext* out) {
  CUresult r = fakecuda_need(out);
  if (r != CUDA_SUCCESS) return r;
  if (s != NULL && s->ctx != *out) return CUDA_ERROR_INVALID_HANDLE;
  return (CUresult)atomic_load(&(*out)->error);
}

FAKECUDA_API CUresult fakecuda_enqueue(CUcontext ctx, CUstream stream,
                                       bool (*fn)(void* arg), void* arg) {
  CUcontext current;
  CUresult r = fakecuda_enqueue_ctx(stream, &current);
  if (r == CUDA_SUCCESS && current != ctx) r = CUDA_ERROR_INVALID_CONTEXT;
  fakecuda_task_t* t = r == CUDA_SUCCESS ? fakecuda_task(FAKECUDA_CALL) : NULL;
  if (t == NULL) {
    free(arg);
    return r != CUDA_SUCCESS ? r : CUDA_ERROR_OUT_OF_MEMORY;
  }
  t->call = fn;
  t->arg = arg;
  return fakecuda_submit(ctx, stream, t);
}

FAKECUDA_API CUresult cuStreamCreate(CUstream* out, unsigned int flags) {
  CUcontext ctx;
  CUresult r = fakecuda_need(&ctx);
  if (r != CUDA_SUCCESS) return r;
  // Blocking streams (CU_STREAM_DEFAULT) serialise with the legacy stream;
  // the plugin and accel-bench must never create one, so the fake refuses.
  if (flags != CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
  CUstream s = fakecuda_stream_new(ctx, false);
  if (s == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&fakecuda_ctx_lock);
  s->next = ctx->streams;
  ctx->streams = s;
  pthread_mutex_unlock(&fakecuda_ctx_lock);
  *out = s;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuStreamDestroy_v2(CUstream s) {
  if (s == NULL) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&fakecuda_ctx_lock);
  CUstream* at = &s->ctx->streams;
  while (*at != NULL && *at != s) at = &(*at)->next;
  if (*at != NULL) *at = s->next;
  pthread_mutex_unlock(&fakecuda_ctx_lock);
  fakecuda_stream_free(s);  // queued work finishes first
  return CUDA_SUCCESS;
}

static bool fakecuda_capture_illegal(CUstream s);

FAKECUDA_API CUresult cuStreamSynchronize(CUstream s) {
  if (fakecuda_capture_illegal(s)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  CUcontext ctx = s != NULL ? s->ctx : fakecuda_current();
  return ctx != NULL ? fakecuda_sync(ctx, s) : CUDA_ERROR_INVALID_CONTEXT;
}

FAKECUDA_API CUresult cuStreamQuery(CUstream s) {
  if (fakecuda_capture_illegal(s)) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  CUcontext ctx = s != NULL ? s->ctx : fakecuda_current();
  if (ctx == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  if ((s = fakecuda_stream(ctx, s)) == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&s->mutex);
  bool pending = s->completed < s->enqueued;  // at this moment
  pthread_mutex_unlock(&s->mutex);
  return pending ? CUDA_ERROR_NOT_READY : (CUresult)atomic_load(&ctx->error);
}

FAKECUDA_API CUresult cuEventCreate(CUevent* out, unsigned int flags) {
  CUcontext ctx;
  CUresult r = fakecuda_need(&ctx);
  if (r != CUDA_SUCCESS) return r;
  if ((flags & ~(unsigned)(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING)) !=
      0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUevent e = calloc(1, sizeof(*e));
  if (e == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_init(&e->mutex, NULL);
  pthread_cond_init(&e->cond, NULL);
  e->ctx = ctx;
  e->flags = flags;
  e->refs = 1;
  pthread_mutex_lock(&fakecuda_ctx_lock);
  ctx->events++;
  pthread_mutex_unlock(&fakecuda_ctx_lock);
  *out = e;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuEventDestroy_v2(CUevent e) {
  if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&fakecuda_ctx_lock);
  e->ctx->events--;
  pthread_mutex_unlock(&fakecuda_ctx_lock);
  fakecuda_event_release(e);  // pending waits still complete
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuEventRecord(CUevent e, CUstream s) {
  if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
  CUcontext ctx = s != NULL ? s->ctx : fakecuda_current();
  if (ctx == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx != e->ctx) return CUDA_ERROR_INVALID_HANDLE;  // same context only
  fakecuda_task_t* t = fakecuda_task(FAKECUDA_RECORD);
  if (t == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&e->mutex);
  t->gen = ++e->recorded;
  e->refs++;
  pthread_mutex_unlock(&e->mutex);
  t->event = e;
  return fakecuda_submit(ctx, s, t);
}

FAKECUDA_API CUresult cuStreamWaitEvent(CUstream s, CUevent e,
                                        unsigned int flags) {
  if (e == NULL || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx = s != NULL ? s->ctx : fakecuda_current();
  if (ctx == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  // Another context's event is fine: the driver orders across devices.
  fakecuda_task_t* t = fakecuda_task(FAKECUDA_WAIT);
  if (t == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&e->mutex);
  t->gen = e->recorded;  // the record current now
  e->refs++;
  pthread_mutex_unlock(&e->mutex);
  t->event = e;
  return fakecuda_submit(ctx, s, t);
}

FAKECUDA_API CUresult cuEventSynchronize(CUevent e) {
  if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&e->mutex);
  uint64_t gen = e->recorded;
  pthread_mutex_unlock(&e->mutex);
  fakecuda_event_wait(e, gen);
  return (CUresult)atomic_load(&e->ctx->error);
}

FAKECUDA_API CUresult cuEventQuery(CUevent e) {
  if (e == NULL) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&e->mutex);
  bool done = e->done >= e->recorded;
  pthread_mutex_unlock(&e->mutex);
  return done ? (CUresult)atomic_load(&e->ctx->error) : CUDA_ERROR_NOT_READY;
}

// CUDA 13 renamed the original cuEventElapsedTime (2000) to _v2 (12080)
// in cuda.h; the fake exports both, with the same behaviour.
#undef cuEventElapsedTime
FAKECUDA_API CUresult cuEventElapsedTime(float* ms, CUevent start,
                                         CUevent end) {
  if (ms == NULL || start == NULL || end == NULL) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) != 0) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  double t[2];
  CUevent e[2] = {start, end};
  for (int i = 0; i < 2; i++) {
    pthread_mutex_lock(&e[i]->mutex);
    bool never = e[i]->recorded == 0, done = e[i]->done >= e[i]->recorded;
    t[i] = e[i]->time_ms;
    pthread_mutex_unlock(&e[i]->mutex);
    if (never) return CUDA_ERROR_INVALID_HANDLE;
    if (!done) return CUDA_ERROR_NOT_READY;
  }
  *ms = (float)(t[1] - t[0]);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuEventElapsedTime_v2(float* ms, CUevent start,
                                            CUevent end) {
  return cuEventElapsedTime(ms, start, end);
}

// ---------------------------------------------------------------------------
// Copies and memset. Device ranges are checked when the work is queued.
// ---------------------------------------------------------------------------

// When a copy returns: once queued, once its source is staged (copied
// aside, so the caller may reuse it), or once done.
typedef enum { FAKECUDA_ASYNC, FAKECUDA_STAGED, FAKECUDA_SYNC } fakecuda_mode_t;

static CUresult fakecuda_copy(CUstream s, uintptr_t dst, uintptr_t src,
                              size_t size, bool dst_dev, bool src_dev,
                              fakecuda_mode_t mode) {
  CUcontext ctx;
  CUresult r = fakecuda_enqueue_ctx(s, &ctx);
  if (r != CUDA_SUCCESS || size == 0) return r;
  if ((dst_dev && fakecuda_device_of(dst, size) < 0) ||
      (src_dev && fakecuda_device_of(src, size) < 0)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // Overlapping ranges are undefined for the driver's copies: refuse
  // them, so that a caller relying on memmove semantics fails here.
  if (dst < src + size && src < dst + size) return CUDA_ERROR_INVALID_VALUE;
  fakecuda_task_t* t = fakecuda_task(FAKECUDA_COPY);
  if (t != NULL) {
    t->dst = (void*)dst;
    t->src = (const void*)src;
    t->size = size;
  }
  if (t != NULL && mode == FAKECUDA_STAGED) {
    t->args = malloc(size);
    if (t->args == NULL) {
      free(t);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    memcpy(t->args, t->src, size);
    t->src = t->args;
  }
  r = fakecuda_submit(ctx, s, t);
  return r == CUDA_SUCCESS && mode == FAKECUDA_SYNC ? fakecuda_sync(ctx, s) : r;
}

#define FAKECUDA_U(p) ((uintptr_t)(p))

FAKECUDA_API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src,
                                      size_t size) {
  bool pinned = fakecuda_device_of(FAKECUDA_U(src), size) == -1;
  return fakecuda_copy(NULL, FAKECUDA_U(dst), FAKECUDA_U(src), size, true,
                       false, pinned ? FAKECUDA_SYNC : FAKECUDA_STAGED);
}

FAKECUDA_API CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t size) {
  return fakecuda_copy(NULL, FAKECUDA_U(dst), FAKECUDA_U(src), size, false,
                       true, FAKECUDA_SYNC);
}

FAKECUDA_API CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src,
                                      size_t size) {
  return fakecuda_copy(NULL, FAKECUDA_U(dst), FAKECUDA_U(src), size, true, true,
                       FAKECUDA_ASYNC);
}

FAKECUDA_API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src,
                                           size_t size, CUstream s) {
  return fakecuda_copy(s, FAKECUDA_U(dst), FAKECUDA_U(src), size, true, false,
                       FAKECUDA_ASYNC);
}

FAKECUDA_API CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src,
                                           size_t size, CUstream s) {
  return fakecuda_copy(s, FAKECUDA_U(dst), FAKECUDA_U(src), size, false, true,
                       FAKECUDA_ASYNC);
}

FAKECUDA_API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src,
                                           size_t size, CUstream s) {
  return fakecuda_copy(s, FAKECUDA_U(dst), FAKECUDA_U(src), size, true, true,
                       FAKECUDA_ASYNC);
}

// Peer copies: each pointer must be memory of its context's device.
static CUresult fakecuda_copy_peer(CUdeviceptr dst, CUcontext dst_ctx,
                                   CUdeviceptr src, CUcontext src_ctx,
                                   size_t size, CUstream s) {
  if (!fakecuda_ctx_live(dst_ctx) || !fakecuda_ctx_live(src_ctx)) {
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  if (size != 0 &&
      (fakecuda_device_of(FAKECUDA_U(dst), size) != dst_ctx->device ||
       fakecuda_device_of(FAKECUDA_U(src), size) != src_ctx->device)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return fakecuda_copy(s, FAKECUDA_U(dst), FAKECUDA_U(src), size, true, true,
                       FAKECUDA_ASYNC);
}

FAKECUDA_API CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dst_ctx,
                                   CUdeviceptr src, CUcontext src_ctx,
                                   size_t size) {
  return fakecuda_copy_peer(dst, dst_ctx, src, src_ctx, size, NULL);
}

FAKECUDA_API CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx,
                                        CUdeviceptr src, CUcontext src_ctx,
                                        size_t size, CUstream s) {
  return fakecuda_copy_peer(dst, dst_ctx, src, src_ctx, size, s);
}

static CUresult fakecuda_memset(CUdeviceptr dst, unsigned char value,
                                size_t size, CUstream s) {
  CUcontext ctx;
  CUresult r = fakecuda_enqueue_ctx(s, &ctx);
  if (r != CUDA_SUCCESS || size == 0) return r;
  if (fakecuda_device_of(FAKECUDA_U(dst), size) < 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  fakecuda_task_t* t = fakecuda_task(FAKECUDA_SET);
  if (t != NULL) {
    t->dst = (void*)FAKECUDA_U(dst);
    t->value = value;
    t->size = size;
  }
  return fakecuda_submit(ctx, s, t);
}

FAKECUDA_API CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value,
                                    size_t size) {
  return fakecuda_memset(dst, value, size, NULL);
}

FAKECUDA_API CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value,
                                      size_t size, CUstream s) {
  return fakecuda_memset(dst, value, size, s);
}

// ---------------------------------------------------------------------------
// Modules and launches
// ---------------------------------------------------------------------------

struct CUfunc_st {
  CUfunction next;  // in module->functions
  CUmodule module;
  const fakecuda_kernel_t* kernel;
  _Atomic int max_dynamic_shared;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_...
  int static_shared;               // CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES
};

// Static shared memory of kernel `name`: FAKECUDA_STATIC_SHARED is
// "<kernel>:<bytes>" (the kernels have none otherwise).
static int fakecuda_static_shared(const char* name) {
  const char* v = getenv("FAKECUDA_STATIC_SHARED");
  const char* colon = v != NULL ? strchr(v, ':') : NULL;
  if (colon == NULL || (size_t)(colon - v) != strlen(name) ||
      strncmp(v, name, (size_t)(colon - v)) != 0) {
    return 0;
  }
  return atoi(colon + 1);
}

struct CUmod_st {
  CUmodule next;  // in fakecuda_modules
  CUcontext ctx;
  unsigned char* image;  // a copy, as the driver keeps
  fakecuda_image_t info;
  CUfunction functions;  // guarded by fakecuda_ctx_lock
};

static CUmodule fakecuda_modules;  // guarded by fakecuda_ctx_lock

// Copies `text` into a JIT log option buffer and its size back into the
// size option, as the driver does.
static void fakecuda_jit_log(const char* text, char* buffer, void** size_slot) {
  if (buffer == NULL || size_slot == NULL) return;
  size_t size = (size_t)(uintptr_t)*size_slot;
  if (size == 0) return;
  snprintf(buffer, size, "%s", text);
  size_t used = strlen(buffer);
  *size_slot = (void*)(uintptr_t)(used != 0 ? used + 1 : 0);
}

FAKECUDA_API CUresult cuModuleLoadDataEx(CUmodule* out, const void* image,
                                         unsigned int num_options,
                                         CUjit_option* options, void** values) {
  CUcontext ctx;
  CUresult r = fakecuda_need(&ctx);
  if (r != CUDA_SUCCESS) return r;
  if (out == NULL || image == NULL) return CUDA_ERROR_INVALID_VALUE;
  char *error_log = NULL, *info_log = NULL;
  void **error_size = NULL, **info_size = NULL;
  for (unsigned i = 0; i < num_options; i++) {
    switch (options[i]) {
      case CU_JIT_ERROR_LOG_BUFFER:
        error_log = values[i];
        break;
      case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
        error_size = &values[i];
        break;
      case CU_JIT_INFO_LOG_BUFFER:
        info_log = values[i];
        break;
      case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
        info_size = &values[i];
        break;
      default:
        break;  // other JIT options do not change what the fake does
    }
  }
  char log[256];
  fakecuda_image_t info;
  r = fakecuda_image_check(image, fakecuda_sm(), fakecuda_ptx_max(), &info, log,
                           sizeof(log));
  if (r != CUDA_SUCCESS) {
    fakecuda_jit_log(log, error_log, error_size);
    return r;
  }
  CUmodule m = calloc(1, sizeof(*m));
  unsigned char* copy = malloc(info.size);
  if (m == NULL || copy == NULL) {
    free(m);
    free(copy);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  memcpy(copy, image, info.size);
  m->ctx = ctx;
  m->image = copy;
  m->info = info;
  snprintf(log, sizeof(log), "fakecuda: loaded %s on sm_%d", info.what,
           fakecuda_sm());
  fakecuda_jit_log(log, info_log, info_size);
  fakecuda_jit_log("", error_log, error_size);
  pthread_mutex_lock(&fakecuda_ctx_lock);
  m->next = fakecuda_modules;
  fakecuda_modules = m;
  ctx->modules++;
  pthread_mutex_unlock(&fakecuda_ctx_lock);
  *out = m;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuModuleLoadData(CUmodule* out, const void* image) {
  return cuModuleLoadDataEx(out, image, 0, NULL, NULL);
}

// Unlinks `m` from the loaded modules; false if it is not one.
static bool fakecuda_module_unlink(CUmodule m) {
  bool live = false;
  pthread_mutex_lock(&fakecuda_ctx_lock);
  for (CUmodule* at = &fakecuda_modules; *at != NULL; at = &(*at)->next) {
    if (*at == m) {
      *at = m->next;
      m->ctx->modules--;
      live = true;
      break;
    }
  }
  pthread_mutex_unlock(&fakecuda_ctx_lock);
  return live;
}

FAKECUDA_API CUresult cuModuleUnload(CUmodule m) {
  if (!fakecuda_module_unlink(m)) return CUDA_ERROR_INVALID_HANDLE;
  for (CUfunction f = m->functions; f != NULL;) {
    CUfunction next = f->next;
    free(f);
    f = next;
  }
  free(m->image);
  free(m);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuModuleGetFunction(CUfunction* out, CUmodule m,
                                          const char* name) {
  if (out == NULL || m == NULL || name == NULL) return CUDA_ERROR_INVALID_VALUE;
  bool live = false;
  pthread_mutex_lock(&fakecuda_ctx_lock);
  for (CUmodule at = fakecuda_modules; at != NULL; at = at->next) {
    live = live || at == m;
  }
  pthread_mutex_unlock(&fakecuda_ctx_lock);
  if (!live) return CUDA_ERROR_INVALID_HANDLE;
  // Stricter than the driver needs to be, perhaps: its documentation
  // names no exception for handle lookups, so callers push the context.
  if (fakecuda_current() != m->ctx) return CUDA_ERROR_INVALID_CONTEXT;
  if (!fakecuda_image_has(m->image, &m->info, name)) {
    return CUDA_ERROR_NOT_FOUND;
  }
  const fakecuda_kernel_t* kernel = fakecuda_kernel_find(name);
  if (kernel == NULL) return CUDA_ERROR_NOT_SUPPORTED;  // no host version
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&fakecuda_ctx_lock);
  CUfunction f = m->functions;
  while (f != NULL && f->kernel != kernel) f = f->next;
  if (f == NULL && (f = malloc(sizeof(*f))) != NULL) {
    f->module = m;
    f->kernel = kernel;
    // As the driver: the default dynamic allowance is what 48 KiB leaves
    // beside the static shared memory.
    f->static_shared = fakecuda_static_shared(kernel->name);
    atomic_init(&f->max_dynamic_shared,
                FAKECUDA_MAX_SHARED - f->static_shared);
    f->next = m->functions;
    m->functions = f;
  }
  pthread_mutex_unlock(&fakecuda_ctx_lock);
  if (f == NULL) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (r == CUDA_SUCCESS) *out = f;
  return r;
}

// Whether `f` is a function of a loaded module of `ctx`.
static bool fakecuda_function_live(CUfunction f, CUcontext ctx) {
  bool live = false;
  pthread_mutex_lock(&fakecuda_ctx_lock);
  for (CUmodule m = fakecuda_modules; m != NULL && !live; m = m->next) {
    for (CUfunction g = m->functions; g != NULL; g = g->next) {
      if (g == f && m->ctx == ctx) live = true;
    }
  }
  pthread_mutex_unlock(&fakecuda_ctx_lock);
  return live;
}

// Only the dynamic shared memory opt-in: static + dynamic must fit the
// device's opt-in limit.
FAKECUDA_API CUresult cuFuncSetAttribute(CUfunction f,
                                         CUfunction_attribute attr,
                                         int value) {
  CUcontext ctx = fakecuda_current();
  if (ctx == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  if (f == NULL || !fakecuda_function_live(f, ctx)) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (attr != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES || value < 0 ||
      value + f->static_shared > fakecuda_shared_optin()) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  atomic_store(&f->max_dynamic_shared, value);
  return CUDA_SUCCESS;
}

// The shared memory sizes, the block limit and the parameter bytes.
FAKECUDA_API CUresult cuFuncGetAttribute(int* value, CUfunction_attribute attr,
                                         CUfunction f) {
  CUcontext ctx = fakecuda_current();
  if (ctx == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  if (value == NULL) return CUDA_ERROR_INVALID_VALUE;
  if (f == NULL || !fakecuda_function_live(f, ctx)) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  switch (attr) {
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
      *value = f->static_shared;
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
      *value = atomic_load(&f->max_dynamic_shared);
      return CUDA_SUCCESS;
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
      *value = FAKECUDA_MAX_THREADS;
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// Offset and size of parameter `index` of `f`'s kernel (CUDA 12.4); past
// the last one, CUDA_ERROR_INVALID_VALUE.
FAKECUDA_API CUresult cuFuncGetParamInfo(CUfunction f, size_t index,
                                         size_t* offset, size_t* size) {
  CUcontext ctx = fakecuda_current();
  if (ctx == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  if (f == NULL || !fakecuda_function_live(f, ctx)) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (offset == NULL || size == NULL || index >= f->kernel->num_params) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  size_t at = 0;
  for (size_t i = 0; i < index; i++) {
    size_t s = f->kernel->param_size[i];
    at = (at + s - 1) / s * s + s;  // each parameter aligned to its size
  }
  size_t s = f->kernel->param_size[index];
  *offset = (at + s - 1) / s * s;
  *size = s;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuLaunchKernel(CUfunction f, unsigned int gx,
                                     unsigned int gy, unsigned int gz,
                                     unsigned int bx, unsigned int by,
                                     unsigned int bz, unsigned int shared,
                                     CUstream s, void** params, void** extra) {
  CUcontext ctx;
  CUresult r = fakecuda_enqueue_ctx(s, &ctx);
  if (r != CUDA_SUCCESS) return r;
  if (f == NULL || !fakecuda_function_live(f, ctx)) {
    return CUDA_ERROR_INVALID_HANDLE;
  }
  const fakecuda_kernel_t* k = f->kernel;
  if (extra != NULL || (params == NULL && k->num_params > 0) || gx == 0 ||
      gy == 0 || gz == 0 || gx > 0x7fffffffu || gy > 65535 || gz > 65535 ||
      bx == 0 || by == 0 || bz == 0 || bz > 64 ||
      (uint64_t)bx * by * bz > FAKECUDA_MAX_THREADS ||
      shared > (unsigned)atomic_load(&f->max_dynamic_shared)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  fakecuda_task_t* t = fakecuda_task(FAKECUDA_LAUNCH);
  size_t bytes = 0;
  for (unsigned i = 0; i < k->num_params; i++) bytes += k->param_size[i];
  if (t != NULL && (t->args = malloc(bytes + 1)) == NULL) {
    free(t);
    t = NULL;
  }
  if (t != NULL) {
    // The arguments are copied now, as cuLaunchKernel does.
    t->kernel = k;
    for (unsigned i = 0, at = 0; i < k->num_params; i++) {
      memcpy(t->args + at, params[i], k->param_size[i]);
      t->params[i] = t->args + at;
      at += k->param_size[i];
    }
    t->grid[0] = gx, t->grid[1] = gy, t->grid[2] = gz;
    t->block[0] = bx, t->block[1] = by, t->block[2] = bz;
    t->shared = shared;
    const char* fault = getenv("FAKECUDA_FAULT");
    t->fault = fault != NULL && strcmp(fault, k->name) == 0;
  }
  return fakecuda_submit(ctx, s, t);
}

// ---------------------------------------------------------------------------
// Stream priorities and host functions (CUDA 5.5 and 10.0 entry points).
// Found by the plugin through dlsym (cuGetProcAddress does not list them).
// ---------------------------------------------------------------------------

#include <cudaTypedefs.h>

// The fake's range, as an sm_90 part reports it.
#define FAKECUDA_PRIORITY_LEAST 0
#define FAKECUDA_PRIORITY_GREATEST (-5)

// The priority each stream made by cuStreamCreateWithPriority got (after
// clamping), newest last; a stream address reused later is looked up from
// the newest entry. Test-only bookkeeping, guarded by the lock.
#define FAKECUDA_PRIORITY_SLOTS 256
static pthread_mutex_t fakecuda_priority_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  CUstream stream;
  int priority;
} fakecuda_priorities[FAKECUDA_PRIORITY_SLOTS];
static unsigned fakecuda_priority_count;  // entries ever written
static atomic_ulong fakecuda_host_funcs;   // host functions that ran

FAKECUDA_API CUresult cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  CUcontext ctx;
  CUresult r = fakecuda_need(&ctx);
  if (r != CUDA_SUCCESS) return r;
  if (least != NULL) *least = FAKECUDA_PRIORITY_LEAST;
  if (greatest != NULL) *greatest = FAKECUDA_PRIORITY_GREATEST;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuStreamCreateWithPriority(CUstream* out,
                                                 unsigned int flags,
                                                 int priority) {
  // Out-of-range priorities are clamped, as the driver documents.
  if (priority < FAKECUDA_PRIORITY_GREATEST) {
    priority = FAKECUDA_PRIORITY_GREATEST;
  }
  if (priority > FAKECUDA_PRIORITY_LEAST) priority = FAKECUDA_PRIORITY_LEAST;
  CUresult r = cuStreamCreate(out, flags);
  if (r != CUDA_SUCCESS) return r;
  pthread_mutex_lock(&fakecuda_priority_lock);
  unsigned slot = fakecuda_priority_count++ % FAKECUDA_PRIORITY_SLOTS;
  fakecuda_priorities[slot].stream = *out;
  fakecuda_priorities[slot].priority = priority;
  pthread_mutex_unlock(&fakecuda_priority_lock);
  return CUDA_SUCCESS;
}

// Test-only, not CUDA: the priority `s` was created with by
// cuStreamCreateWithPriority into `*out`; false when it was not.
FAKECUDA_API bool fakecuda_stream_priority(CUstream s, int* out) {
  bool found = false;
  pthread_mutex_lock(&fakecuda_priority_lock);
  unsigned n = fakecuda_priority_count < FAKECUDA_PRIORITY_SLOTS
                   ? fakecuda_priority_count
                   : FAKECUDA_PRIORITY_SLOTS;
  for (unsigned k = 0; k < n && !found; k++) {
    unsigned slot = (fakecuda_priority_count - 1 - k) % FAKECUDA_PRIORITY_SLOTS;
    if (fakecuda_priorities[slot].stream == s) {
      *out = fakecuda_priorities[slot].priority;
      found = true;
    }
  }
  pthread_mutex_unlock(&fakecuda_priority_lock);
  return found;
}

// Test-only, not CUDA: the flags `e` was created with (cuEventCreate).
FAKECUDA_API unsigned fakecuda_event_flags(CUevent e) {
  return e != NULL ? e->flags : 0;
}

// Test-only, not CUDA: host functions run so far.
FAKECUDA_API unsigned long fakecuda_host_func_count(void) {
  return atomic_load(&fakecuda_host_funcs);
}

typedef struct fakecuda_host_call {
  CUhostFn fn;
  void* user;
} fakecuda_host_call_t;

static bool fakecuda_host_call_run(void* arg) {
  fakecuda_host_call_t* call = arg;
  call->fn(call->user);
  atomic_fetch_add(&fakecuda_host_funcs, 1);
  return true;
}

// As the driver: `fn` runs on the stream's thread after the work before it
// and holds up the work after it; a context with a sticky error skips it.
FAKECUDA_API CUresult cuLaunchHostFunc(CUstream s, CUhostFn fn, void* user) {
  if (fn == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx = s != NULL ? s->ctx : fakecuda_current();
  if (ctx == NULL) return CUDA_ERROR_INVALID_CONTEXT;
  fakecuda_host_call_t* call = malloc(sizeof(*call));
  if (call == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  call->fn = fn;
  call->user = user;
  return fakecuda_enqueue(ctx, s, fakecuda_host_call_run, call);
}

_Static_assert(__builtin_types_compatible_p(__typeof__(&cuLaunchHostFunc),
                                            PFN_cuLaunchHostFunc_v10000),
               "cuLaunchHostFunc");
_Static_assert(
    __builtin_types_compatible_p(__typeof__(&cuStreamCreateWithPriority),
                                 PFN_cuStreamCreateWithPriority_v5050),
    "cuStreamCreateWithPriority");
_Static_assert(
    __builtin_types_compatible_p(__typeof__(&cuCtxGetStreamPriorityRange),
                                 PFN_cuCtxGetStreamPriorityRange_v5050),
    "cuCtxGetStreamPriorityRange");

// ---------------------------------------------------------------------------
// Stream capture and graphs (CUDA 10.0 and 11.4 entry points; found by the
// plugin through dlsym). A capturing stream appends the tasks submitted to
// it to its capture instead of queueing them; the CUgraph is that list (a
// "body"), and a launch of an executable graph queues one task that runs
// the list in order on the launch stream's worker, leaving the tasks for
// the next launch. Event records and waits on a capturing stream (which
// CUDA turns into graph dependencies) are refused with
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, as are cuStreamSynchronize and
// cuStreamQuery of it; any of them invalidates the capture, whose end then
// returns CUDA_ERROR_STREAM_CAPTURE_INVALIDATED. Not modelled: capture
// modes (every capture behaves as relaxed), other streams joining a
// capture, graphs built node by node, and the ordering CUDA gives
// launches of one executable graph on different streams (the core orders
// them itself).
// ---------------------------------------------------------------------------

struct fakecuda_body {
  atomic_int refs;  // the CUgraph, each CUgraphExec and each queued launch
  CUcontext ctx;
  fakecuda_task_t** tasks;
  size_t count, capacity;
};

struct CUgraph_st {
  fakecuda_body_t* body;
};

struct CUgraphExec_st {
  fakecuda_body_t* body;
};

// Graphs and executable graphs alive (test-only).
static atomic_int fakecuda_graphs_live;

// Test-only, not CUDA: CUgraphs and CUgraphExecs not destroyed yet.
FAKECUDA_API int fakecuda_graph_count(void) {
  return atomic_load(&fakecuda_graphs_live);
}

static void fakecuda_body_release(fakecuda_body_t* body) {
  if (atomic_fetch_sub(&body->refs, 1) != 1) return;
  for (size_t i = 0; i < body->count; i++) {
    fakecuda_task_clear(body->tasks[i]);
    free(body->tasks[i]);
  }
  free(body->tasks);
  free(body);
}

static void fakecuda_body_run(CUcontext ctx, const fakecuda_body_t* body) {
  for (size_t i = 0; i < body->count; i++) {
    fakecuda_task_exec(ctx, body->tasks[i]);
  }
}

// Invalidates the capture of `s` (mutex held).
static void fakecuda_capture_invalidate(CUstream s) {
  s->capture_invalid = true;
}

static CUresult fakecuda_capture_add(CUstream s, fakecuda_task_t* t) {
  fakecuda_body_t* body = s->capture;
  CUresult r = CUDA_SUCCESS;
  if (t->kind == FAKECUDA_RECORD || t->kind == FAKECUDA_WAIT ||
      t->kind == FAKECUDA_GRAPH) {
    // Complete the record now, so no one waits for it for ever.
    if (t->kind == FAKECUDA_RECORD) fakecuda_event_complete(t->event, t->gen);
    r = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  } else if (s->capture_invalid) {
    r = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  } else if (body->count == body->capacity) {
    size_t capacity = body->capacity != 0 ? body->capacity * 2 : 16;
    fakecuda_task_t** tasks = realloc(body->tasks, capacity * sizeof(*tasks));
    if (tasks == NULL) {
      r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
      body->tasks = tasks;
      body->capacity = capacity;
    }
  }
  if (r != CUDA_SUCCESS) {
    if (r != CUDA_ERROR_STREAM_CAPTURE_INVALIDATED) {
      fakecuda_capture_invalidate(s);
    }
    fakecuda_task_clear(t);
    free(t);
    return r;
  }
  t->next = NULL;
  body->tasks[body->count++] = t;
  return CUDA_SUCCESS;
}

static bool fakecuda_capture_illegal(CUstream s) {
  if (s == NULL) return false;
  pthread_mutex_lock(&s->mutex);
  bool capturing = s->capture != NULL;
  if (capturing) fakecuda_capture_invalidate(s);
  pthread_mutex_unlock(&s->mutex);
  return capturing;
}

FAKECUDA_API CUresult cuStreamBeginCapture_v2(CUstream s,
                                              CUstreamCaptureMode mode) {
  if (s == NULL) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;  // legacy
  if (mode != CU_STREAM_CAPTURE_MODE_GLOBAL &&
      mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  fakecuda_body_t* body = calloc(1, sizeof(*body));
  if (body == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  atomic_init(&body->refs, 1);
  body->ctx = s->ctx;
  pthread_mutex_lock(&s->mutex);
  bool busy = s->capture != NULL;
  if (!busy) {
    s->capture = body;
    s->capture_invalid = false;
  }
  pthread_mutex_unlock(&s->mutex);
  if (busy) {
    free(body);
    return CUDA_ERROR_ILLEGAL_STATE;
  }
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuStreamEndCapture(CUstream s, CUgraph* out) {
  if (s == NULL || out == NULL) return CUDA_ERROR_INVALID_VALUE;
  *out = NULL;
  pthread_mutex_lock(&s->mutex);
  fakecuda_body_t* body = s->capture;
  bool invalid = s->capture_invalid;
  s->capture = NULL;
  s->capture_invalid = false;
  pthread_mutex_unlock(&s->mutex);
  if (body == NULL) return CUDA_ERROR_ILLEGAL_STATE;
  CUgraph g = invalid ? NULL : calloc(1, sizeof(*g));
  if (g == NULL) {
    fakecuda_body_release(body);
    return invalid ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
                   : CUDA_ERROR_OUT_OF_MEMORY;
  }
  g->body = body;
  atomic_fetch_add(&fakecuda_graphs_live, 1);
  *out = g;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuStreamIsCapturing(CUstream s,
                                          CUstreamCaptureStatus* out) {
  if (out == NULL) return CUDA_ERROR_INVALID_VALUE;
  *out = CU_STREAM_CAPTURE_STATUS_NONE;
  if (s == NULL) return CUDA_SUCCESS;
  pthread_mutex_lock(&s->mutex);
  if (s->capture != NULL) {
    *out = s->capture_invalid ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                              : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  }
  pthread_mutex_unlock(&s->mutex);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuGraphInstantiateWithFlags(CUgraphExec* out,
                                                  CUgraph g,
                                                  unsigned long long flags) {
  if (out == NULL || g == NULL || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  CUgraphExec x = calloc(1, sizeof(*x));
  if (x == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  atomic_fetch_add(&g->body->refs, 1);
  x->body = g->body;
  atomic_fetch_add(&fakecuda_graphs_live, 1);
  *out = x;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuGraphLaunch(CUgraphExec x, CUstream s) {
  if (x == NULL) return CUDA_ERROR_INVALID_VALUE;
  CUcontext ctx;
  CUresult r = fakecuda_enqueue_ctx(s, &ctx);
  if (r != CUDA_SUCCESS) return r;
  if (ctx != x->body->ctx) return CUDA_ERROR_INVALID_CONTEXT;
  fakecuda_task_t* t = fakecuda_task(FAKECUDA_GRAPH);
  if (t == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  atomic_fetch_add(&x->body->refs, 1);
  t->body = x->body;
  return fakecuda_submit(ctx, s, t);
}

// Launches still queued keep the body: they finish, as CUDA frees an
// executable graph in flight only once its launches are done.
FAKECUDA_API CUresult cuGraphExecDestroy(CUgraphExec x) {
  if (x == NULL) return CUDA_ERROR_INVALID_VALUE;
  fakecuda_body_release(x->body);
  free(x);
  atomic_fetch_sub(&fakecuda_graphs_live, 1);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuGraphDestroy(CUgraph g) {
  if (g == NULL) return CUDA_ERROR_INVALID_VALUE;
  fakecuda_body_release(g->body);
  free(g);
  atomic_fetch_sub(&fakecuda_graphs_live, 1);
  return CUDA_SUCCESS;
}

// A graph still there when the process ends was never destroyed.
__attribute__((destructor)) static void fakecuda_graph_leaks(void) {
  int n = atomic_load(&fakecuda_graphs_live);
  if (n != 0) {
    fprintf(stderr,
            "fakecuda: leak: %d graph(s) or executable graph(s) never "
            "destroyed (cuGraphDestroy, cuGraphExecDestroy)\n",
            n);
  }
}
