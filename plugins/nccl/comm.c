// SPDX-License-Identifier: MIT
//
// Calls on NCCL (or RCCL) communicators (formed in init.c), and the
// device around every NCCL call (the CUDA primary context, or the HIP
// device, made current).
//
// A call is enqueued on the native stream of the accel stream (the core
// asks the device plugin for it), followed by an event; request_test
// polls that event and ncclCommGetAsyncError, the core bounds the wait,
// and a timeout or a failed peer aborts the communicator
// (ncclCommAbort), which also frees the stream from the collective stuck
// on it. Between group_start and group_end (ncclGroupStart/End) NCCL holds
// the calls back, so their events are recorded after ncclGroupEnd.
// All-to-all is a group of ncclSend and ncclRecv, as nccl-tests does it,
// which every NCCL 2.x and RCCL has.
//
// Communicators are non-blocking where NCCL has ncclCommInitRankConfig
// (init.c), so a call or ncclGroupEnd may return ncclInProgress: NCCL is
// still putting the kernels on the stream in the background, and the
// stream must not be touched until ncclCommGetAsyncError says
// ncclSuccess. Such a request records its event only then, in
// request_test; the core's wait bounds that polling by the same timeout.
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel_nccl.h"

typedef struct accel_nccl_request {
  accel_nccl_comm_t* comm;
  accel_nccl_stream_t stream;
  void* event;  // recorded after the call; NULL until its group ends
  const char* what;
  bool enqueuing;  // ncclInProgress: the event waits for ncclSuccess
  struct accel_nccl_request* next;  // the open group's pending requests
} accel_nccl_request_t;

// The calling thread's open groups and the requests started in them.
static _Thread_local struct {
  int depth;
  accel_nccl_request_t* pending;
} accel_nccl_group;

#define ACCEL_NCCL_NOT_READY 600  // CUDA_ERROR_NOT_READY, hipErrorNotReady
#define ACCEL_NCCL_DISABLE_TIMING 2u

accel_status_t accel_nccl_fail(accel_nccl_comm_t* c, accel_status_t status,
                               const char* format, ...) {
  char text[400];
  va_list args;
  va_start(args, format);
  vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  const accel_host_t* host = c->engine->host;
  return host->fail(host, status, "%s on rank %d of %d: %s",
                    ACCEL_NCCL_NAME, c->rank, c->size, text);
}

// An NCCL result as a failure: the error string and, where NCCL has it,
// its last error message.
accel_status_t accel_nccl_result(accel_nccl_comm_t* c, const char* what,
                                 ncclResult_t r) {
  accel_nccl_lib_t* n = &c->engine->nccl;
  const char* last = n->ncclGetLastError != NULL && c->comm != NULL
                         ? n->ncclGetLastError(c->comm)
                         : NULL;
  // A peer that died or a broken network: the collective cannot finish.
  accel_status_t status = r == ncclRemoteError || r == ncclSystemError
                              ? ACCEL_ERROR_DEVICE_LOST
                              : ACCEL_ERROR_BACKEND;
  return accel_nccl_fail(c, status, "%s: %s (NCCL error %d)%s%s", what,
                         n->ncclGetErrorString(r), (int)r,
                         last != NULL && last[0] != '\0' ? ": " : "",
                         last != NULL ? last : "");
}

// ---------------------------------------------------------------------------
// The GPU runtime around NCCL calls.
// ---------------------------------------------------------------------------

// Makes the communicator's device current; `*saved` restores it.
bool accel_nccl_enter(accel_nccl_comm_t* c, int* saved) {
  accel_nccl_lib_t* n = &c->engine->nccl;
#ifdef ACCEL_NCCL_HIP
  if (n->hipGetDevice(saved) != 0) *saved = -1;
  return n->hipSetDevice(c->device) == 0;
#else
  *saved = 0;
  return n->cuCtxPushCurrent(c->ctx) == 0;
#endif
}

void accel_nccl_leave(accel_nccl_comm_t* c, int saved) {
  accel_nccl_lib_t* n = &c->engine->nccl;
#ifdef ACCEL_NCCL_HIP
  if (saved >= 0) n->hipSetDevice(saved);
#else
  (void)saved;
  void* popped = NULL;
  n->cuCtxPopCurrent(&popped);
#endif
}

static int accel_nccl_event_create(accel_nccl_lib_t* n, void** event) {
#ifdef ACCEL_NCCL_HIP
  return n->hipEventCreateWithFlags(event, ACCEL_NCCL_DISABLE_TIMING);
#else
  return n->cuEventCreate(event, ACCEL_NCCL_DISABLE_TIMING);
#endif
}

static int accel_nccl_event_record(accel_nccl_lib_t* n, void* event,
                                   accel_nccl_stream_t stream) {
#ifdef ACCEL_NCCL_HIP
  return n->hipEventRecord(event, stream);
#else
  return n->cuEventRecord(event, stream);
#endif
}

static int accel_nccl_event_query(accel_nccl_lib_t* n, void* event) {
#ifdef ACCEL_NCCL_HIP
  return n->hipEventQuery(event);
#else
  return n->cuEventQuery(event);
#endif
}

static void accel_nccl_event_destroy(accel_nccl_lib_t* n, void* event) {
  if (event == NULL) return;
#ifdef ACCEL_NCCL_HIP
  n->hipEventDestroy(event);
#else
  n->cuEventDestroy(event);
#endif
}

// Records `r`'s event on its stream, behind its call.
static accel_status_t accel_nccl_request_mark(accel_nccl_request_t* r) {
  accel_nccl_comm_t* c = r->comm;
  accel_nccl_lib_t* n = &c->engine->nccl;
  int saved = 0;
  if (!accel_nccl_enter(c, &saved)) {
    return accel_nccl_fail(c, ACCEL_ERROR_BACKEND,
                           "%s: cannot make device %d current", r->what,
                           c->device);
  }
  int rc = accel_nccl_event_create(n, &r->event);
  if (rc == 0) rc = accel_nccl_event_record(n, r->event, r->stream);
  accel_nccl_leave(c, saved);
  if (rc == 0) return ACCEL_OK;
  return accel_nccl_fail(c, ACCEL_ERROR_BACKEND,
                         "%s: recording its completion event: GPU error %d",
                         r->what, rc);
}

// ---------------------------------------------------------------------------
// Communicators.
// ---------------------------------------------------------------------------

// Retains the device's primary context (CUDA) for a new communicator.
accel_status_t accel_nccl_bind(accel_nccl_comm_t* c) {
#ifdef ACCEL_NCCL_HIP
  (void)c;
  return ACCEL_OK;
#else
  accel_nccl_lib_t* n = &c->engine->nccl;
  int dev = 0;
  int rc = n->cuDeviceGet(&dev, c->device);
  if (rc == 0) rc = n->cuDevicePrimaryCtxRetain(&c->ctx, dev);
  if (rc == 0) return ACCEL_OK;
  c->ctx = NULL;
  return accel_nccl_fail(c, ACCEL_ERROR_BACKEND,
                         "the primary context of CUDA device %d: CUDA error "
                         "%d",
                         c->device, rc);
#endif
}

void accel_nccl_unbind(accel_nccl_comm_t* c) {
#ifndef ACCEL_NCCL_HIP
  if (c->ctx != NULL) {
    int dev = 0;
    if (c->engine->nccl.cuDeviceGet(&dev, c->device) == 0) {
      c->engine->nccl.cuDevicePrimaryCtxRelease(dev);
    }
  }
#endif
  free(c);
}

void accel_nccl_comm_abort(void* comm) {
  accel_nccl_comm_t* c = comm;
  if (c->aborted || c->comm == NULL) return;
  c->aborted = true;
  int saved = 0;
  bool entered = accel_nccl_enter(c, &saved);
  c->engine->nccl.ncclCommAbort(c->comm);
  if (entered) accel_nccl_leave(c, saved);
}

void accel_nccl_comm_destroy(void* comm) {
  accel_nccl_comm_t* c = comm;
  if (!c->aborted && c->comm != NULL) {
    int saved = 0;
    bool entered = accel_nccl_enter(c, &saved);
    c->engine->nccl.ncclCommDestroy(c->comm);
    if (entered) accel_nccl_leave(c, saved);
  }
  accel_nccl_unbind(c);
}

// ---------------------------------------------------------------------------
// Calls.
// ---------------------------------------------------------------------------

static const char* accel_nccl_call_name(uint32_t kind) {
  static const char* const names[] = {
      "all-reduce", "broadcast",  "reduce", "all-gather",
      "reduce-scatter", "all-to-all", "send", "recv"};
  return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "call";
}

// accel dtypes (F32, F16, BF16, I32) and ops (SUM, PROD, MIN, MAX).
static const ncclDataType_t accel_nccl_types[] = {ncclFloat32, ncclFloat16,
                                                  ncclBfloat16, ncclInt32};
static const size_t accel_nccl_sizes[] = {4, 2, 2, 4};
static const ncclRedOp_t accel_nccl_ops[] = {ncclSum, ncclProd, ncclMin,
                                             ncclMax};

// Enqueues `call` on `stream`; the device is current.
static ncclResult_t accel_nccl_issue(accel_nccl_comm_t* c,
                                     const accel_comm_engine_call_t* call,
                                     accel_nccl_stream_t stream) {
  accel_nccl_lib_t* n = &c->engine->nccl;
  if (call->dtype > 3 || call->op > 3) return ncclInvalidArgument;
  ncclDataType_t t = accel_nccl_types[call->dtype];
  ncclRedOp_t op = accel_nccl_ops[call->op];
  size_t count = (size_t)call->count;
  switch (call->kind) {
    case ACCEL_COMM_ENGINE_ALL_REDUCE:
      return n->ncclAllReduce(call->send, call->recv, count, t, op, c->comm,
                              stream);
    case ACCEL_COMM_ENGINE_BROADCAST:
      return n->ncclBroadcast(call->recv, call->recv, count, t, call->peer,
                              c->comm, stream);
    case ACCEL_COMM_ENGINE_REDUCE:
      return n->ncclReduce(call->send, call->recv, count, t, op, call->peer,
                           c->comm, stream);
    case ACCEL_COMM_ENGINE_ALL_GATHER:
      return n->ncclAllGather(call->send, call->recv, count, t, c->comm,
                              stream);
    case ACCEL_COMM_ENGINE_REDUCE_SCATTER:
      return n->ncclReduceScatter(call->send, call->recv, count, t, op,
                                  c->comm, stream);
    case ACCEL_COMM_ENGINE_ALL_TO_ALL: {
      size_t block = count * accel_nccl_sizes[call->dtype];
      ncclResult_t r = n->ncclGroupStart();
      for (int peer = 0; peer < c->size && r == ncclSuccess; peer++) {
        r = n->ncclSend((const char*)call->send + (size_t)peer * block, count,
                        t, peer, c->comm, stream);
        if (r == ncclSuccess) {
          r = n->ncclRecv((char*)call->recv + (size_t)peer * block, count, t,
                          peer, c->comm, stream);
        }
      }
      ncclResult_t end = n->ncclGroupEnd();
      return r != ncclSuccess ? r : end;
    }
    case ACCEL_COMM_ENGINE_SEND:
      return n->ncclSend(call->send, count, t, call->peer, c->comm, stream);
    case ACCEL_COMM_ENGINE_RECV:
      return n->ncclRecv(call->recv, count, t, call->peer, c->comm, stream);
    default:
      return ncclInvalidArgument;
  }
}

accel_status_t accel_nccl_call_start(void* comm,
                                     const accel_comm_engine_call_t* call,
                                     void** out_request) {
  accel_nccl_comm_t* c = comm;
  *out_request = NULL;
  accel_nccl_request_t* r = calloc(1, sizeof(*r));
  if (r == NULL) {
    return c->engine->host->fail(c->engine->host, ACCEL_ERROR_OUT_OF_MEMORY,
                                 ACCEL_NCCL_NAME " request");
  }
  r->comm = c;
  r->stream = (accel_nccl_stream_t)(uintptr_t)call->stream;
  r->what = accel_nccl_call_name(call->kind);
  int saved = 0;
  if (!accel_nccl_enter(c, &saved)) {
    free(r);
    return accel_nccl_fail(c, ACCEL_ERROR_BACKEND,
                           "%s: cannot make device %d current",
                           accel_nccl_call_name(call->kind), c->device);
  }
  ncclResult_t result = accel_nccl_issue(c, call, r->stream);
  accel_nccl_leave(c, saved);
  accel_status_t status = ACCEL_OK;
  if (result != ncclSuccess && result != ncclInProgress) {
    status = accel_nccl_result(c, r->what, result);
  } else if (accel_nccl_group.depth > 0) {
    r->next = accel_nccl_group.pending;  // marked at group_end
    accel_nccl_group.pending = r;
  } else if (result == ncclInProgress) {
    r->enqueuing = true;  // marked by request_test once NCCL is done
  } else {
    status = accel_nccl_request_mark(r);
  }
  if (status != ACCEL_OK) {
    accel_nccl_event_destroy(&c->engine->nccl, r->event);
    free(r);
    return status;
  }
  *out_request = r;
  return ACCEL_OK;
}

static void accel_nccl_request_free(accel_nccl_request_t* r) {
  accel_nccl_event_destroy(&r->comm->engine->nccl, r->event);
  free(r);
}

accel_status_t accel_nccl_request_test(void* request, int32_t* out_done) {
  accel_nccl_request_t* r = request;
  accel_nccl_comm_t* c = r->comm;
  accel_nccl_lib_t* n = &c->engine->nccl;
  *out_done = 0;
  ncclResult_t async = ncclSuccess;
  ncclResult_t q = n->ncclCommGetAsyncError(c->comm, &async);
  if (q == ncclSuccess && async != ncclSuccess && async != ncclInProgress) {
    accel_status_t status = accel_nccl_result(c, r->what, async);
    accel_nccl_request_free(r);
    return status;
  }
  if (r->enqueuing) {
    // Until ncclSuccess, NCCL may still be putting the call on the stream.
    if (q != ncclSuccess || async != ncclSuccess) return ACCEL_OK;
    r->enqueuing = false;
    accel_status_t status = accel_nccl_request_mark(r);
    if (status != ACCEL_OK) {
      accel_nccl_request_free(r);
      return status;
    }
  }
  if (r->event == NULL) return ACCEL_OK;  // its group has not ended
  int rc = accel_nccl_event_query(n, r->event);
  if (rc == ACCEL_NCCL_NOT_READY) return ACCEL_OK;
  const char* what = r->what;
  accel_nccl_request_free(r);
  if (rc != 0) {
    return accel_nccl_fail(c, ACCEL_ERROR_BACKEND,
                           "%s: its completion event failed: GPU error %d",
                           what, rc);
  }
  *out_done = 1;
  return ACCEL_OK;
}

void accel_nccl_request_abandon(void* request) {
  accel_nccl_request_t* r = request;
  // A request of a group that failed may still be on the pending list.
  for (accel_nccl_request_t** p = &accel_nccl_group.pending; *p != NULL;
       p = &(*p)->next) {
    if (*p == r) {
      *p = r->next;
      break;
    }
  }
  accel_nccl_request_free(r);
}

accel_status_t accel_nccl_group_start(void* engine) {
  accel_nccl_engine_t* e = engine;
  ncclResult_t r = e->nccl.ncclGroupStart();
  if (r != ncclSuccess) {
    return e->host->fail(e->host, ACCEL_ERROR_BACKEND,
                         "ncclGroupStart: %s", e->nccl.ncclGetErrorString(r));
  }
  accel_nccl_group.depth++;
  return ACCEL_OK;
}

accel_status_t accel_nccl_group_end(void* engine) {
  accel_nccl_engine_t* e = engine;
  ncclResult_t r = e->nccl.ncclGroupEnd();
  accel_nccl_request_t* pending = NULL;
  if (--accel_nccl_group.depth == 0) {
    pending = accel_nccl_group.pending;
    accel_nccl_group.pending = NULL;
  }
  if (r != ncclSuccess && r != ncclInProgress) {
    // Nothing was launched; the core abandons the requests.
    return e->host->fail(e->host, ACCEL_ERROR_BACKEND, "ncclGroupEnd: %s",
                         e->nccl.ncclGetErrorString(r));
  }
  accel_status_t status = ACCEL_OK;
  for (accel_nccl_request_t* q = pending; q != NULL; q = q->next) {
    if (r == ncclInProgress) {
      q->enqueuing = true;  // non-blocking: see request_test
      continue;
    }
    accel_status_t s = accel_nccl_request_mark(q);
    if (status == ACCEL_OK) status = s;
  }
  return status;
}

// ---------------------------------------------------------------------------
// The blocking entries: one call on the legacy default stream, waited for
// until the communicator's timeout.
// ---------------------------------------------------------------------------

static accel_status_t accel_nccl_run(void* comm, uint32_t kind,
                                     const void* send, void* recv,
                                     uint64_t count, uint32_t dtype,
                                     uint32_t op, int32_t peer) {
  accel_nccl_comm_t* c = comm;
  accel_comm_engine_call_t call = {sizeof(call), kind, c, send, recv,
                                   count, dtype, op, peer, 0, 0};
  void* request = NULL;
  accel_status_t status = accel_nccl_call_start(c, &call, &request);
  struct timespec start, now;
  clock_gettime(CLOCK_MONOTONIC, &start);
  while (status == ACCEL_OK) {
    int32_t done = 0;
    status = accel_nccl_request_test(request, &done);
    if (status != ACCEL_OK || done) break;
    clock_gettime(CLOCK_MONOTONIC, &now);
    double waited = (double)(now.tv_sec - start.tv_sec) +
                    1e-9 * (double)(now.tv_nsec - start.tv_nsec);
    if (waited > c->timeout_s) {
      accel_nccl_request_abandon(request);
      return accel_nccl_fail(c, ACCEL_ERROR_TIMEOUT,
                             "%s did not complete within %.1f s "
                             "(ACCEL_COMM_TIMEOUT)",
                             accel_nccl_call_name(kind), c->timeout_s);
    }
  }
  return status;
}

accel_status_t accel_nccl_all_reduce(void* comm, const void* send, void* recv,
                                     uint64_t count, uint32_t dtype,
                                     uint32_t op) {
  return accel_nccl_run(comm, ACCEL_COMM_ENGINE_ALL_REDUCE, send, recv, count,
                        dtype, op, -1);
}

accel_status_t accel_nccl_broadcast(void* comm, void* buffer, uint64_t count,
                                    uint32_t dtype, int32_t root) {
  return accel_nccl_run(comm, ACCEL_COMM_ENGINE_BROADCAST, buffer, buffer,
                        count, dtype, 0, root);
}

accel_status_t accel_nccl_reduce(void* comm, const void* send, void* recv,
                                 uint64_t count, uint32_t dtype, uint32_t op,
                                 int32_t root) {
  return accel_nccl_run(comm, ACCEL_COMM_ENGINE_REDUCE, send, recv, count,
                        dtype, op, root);
}

accel_status_t accel_nccl_all_gather(void* comm, const void* send, void* recv,
                                     uint64_t count, uint32_t dtype) {
  return accel_nccl_run(comm, ACCEL_COMM_ENGINE_ALL_GATHER, send, recv, count,
                        dtype, 0, -1);
}

accel_status_t accel_nccl_reduce_scatter(void* comm, const void* send,
                                         void* recv, uint64_t count,
                                         uint32_t dtype, uint32_t op) {
  return accel_nccl_run(comm, ACCEL_COMM_ENGINE_REDUCE_SCATTER, send, recv,
                        count, dtype, op, -1);
}

accel_status_t accel_nccl_all_to_all(void* comm, const void* send, void* recv,
                                     uint64_t count, uint32_t dtype) {
  return accel_nccl_run(comm, ACCEL_COMM_ENGINE_ALL_TO_ALL, send, recv, count,
                        dtype, 0, -1);
}

accel_status_t accel_nccl_send(void* comm, const void* buffer, uint64_t count,
                               uint32_t dtype, int32_t peer) {
  return accel_nccl_run(comm, ACCEL_COMM_ENGINE_SEND, buffer, NULL, count,
                        dtype, 0, peer);
}

accel_status_t accel_nccl_recv(void* comm, void* buffer, uint64_t count,
                               uint32_t dtype, int32_t peer) {
  return accel_nccl_run(comm, ACCEL_COMM_ENGINE_RECV, NULL, buffer, count,
                        dtype, 0, peer);
}
