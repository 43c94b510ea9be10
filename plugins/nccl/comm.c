// SPDX-License-Identifier: MIT
//
// Communicators and calls on NCCL (or RCCL). A communicator is formed
// through the core's rendezvous store: rank 0 makes the ncclUniqueId and
// the store carries it to every rank, which then calls ncclCommInitRank
// with its rank on its device (the CUDA primary context, or the HIP
// device, current around every NCCL call).
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
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel_nccl.h"

typedef struct accel_nccl_comm {
  accel_nccl_engine_t* engine;
  ncclComm_t comm;
  int rank;
  int size;
  double timeout_s;
  int device;  // CUDA or HIP ordinal
  void* ctx;   // CUDA: the retained primary context
  bool aborted;
} accel_nccl_comm_t;

typedef struct accel_nccl_request {
  accel_nccl_comm_t* comm;
  accel_nccl_stream_t stream;
  void* event;  // recorded after the call; NULL until its group ends
  const char* what;
  struct accel_nccl_request* next;  // the open group's pending requests
} accel_nccl_request_t;

// The calling thread's open groups and the requests started in them.
static _Thread_local struct {
  int depth;
  accel_nccl_request_t* pending;
} accel_nccl_group;

#define ACCEL_NCCL_NOT_READY 600  // CUDA_ERROR_NOT_READY, hipErrorNotReady
#define ACCEL_NCCL_DISABLE_TIMING 2u

static accel_status_t accel_nccl_fail(accel_nccl_comm_t* c,
                                      accel_status_t status,
                                      const char* format, ...)
    __attribute__((format(printf, 3, 4)));

static accel_status_t accel_nccl_fail(accel_nccl_comm_t* c,
                                      accel_status_t status,
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
static accel_status_t accel_nccl_result(accel_nccl_comm_t* c,
                                        const char* what, ncclResult_t r) {
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
static bool accel_nccl_enter(accel_nccl_comm_t* c, int* saved) {
  accel_nccl_lib_t* n = &c->engine->nccl;
#ifdef ACCEL_NCCL_HIP
  if (n->hipGetDevice(saved) != 0) *saved = -1;
  return n->hipSetDevice(c->device) == 0;
#else
  *saved = 0;
  return n->cuCtxPushCurrent(c->ctx) == 0;
#endif
}

static void accel_nccl_leave(accel_nccl_comm_t* c, int saved) {
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

// What rank 0 sends through the store: its ncclUniqueId, or that it has
// none (then every rank fails at once instead of waiting for it).
typedef struct accel_nccl_id_blob {
  int32_t ok;
  int32_t reserved;
  ncclUniqueId id;
} accel_nccl_id_blob_t;

// Retains the device's primary context (CUDA) for a new communicator.
static accel_status_t accel_nccl_bind(accel_nccl_comm_t* c) {
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

static void accel_nccl_unbind(accel_nccl_comm_t* c) {
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

// Checks what the core asked for and says what is missing.
static accel_status_t accel_nccl_check_init(
    accel_nccl_engine_t* e, const accel_comm_engine_init_t* init) {
  const accel_host_t* host = e->host;
  size_t need = offsetof(accel_comm_engine_init_t, store) + sizeof(void*);
  if (init->struct_size < need) {
    return host->fail(host, ACCEL_ERROR_INCOMPATIBLE,
                      "the core predates engine ABI 1.1 (no rendezvous)");
  }
  if (init->native_comm != NULL) {
    return host->fail(host, ACCEL_ERROR_UNSUPPORTED,
                      ACCEL_NCCL_NAME " cannot adopt a native communicator");
  }
  if (init->rank < 0 || init->store == NULL) {
    return host->fail(
        host, ACCEL_ERROR_UNSUPPORTED,
        ACCEL_NCCL_NAME " forms communicators through the rendezvous: set "
        "ACCEL_COMM_RANK, ACCEL_COMM_SIZE and either ACCEL_COMM_ADDR and "
        "ACCEL_COMM_PORT, or ACCEL_COMM_FILE (docs/collectives.md)");
  }
  if (init->device_backend == NULL ||
      strcmp(init->device_backend, ACCEL_NCCL_BACKEND) != 0) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      ACCEL_NCCL_NAME " serves " ACCEL_NCCL_BACKEND
                      " devices only");
  }
  return ACCEL_OK;
}

accel_status_t accel_nccl_comm_create(void* engine,
                                      const accel_comm_engine_init_t* init,
                                      void** out_comm, int32_t* out_rank,
                                      int32_t* out_size) {
  accel_nccl_engine_t* e = engine;
  accel_status_t status = accel_nccl_start(e);
  if (status == ACCEL_OK) status = accel_nccl_check_init(e, init);
  if (status != ACCEL_OK) return status;
  accel_nccl_comm_t* c = calloc(1, sizeof(*c));
  if (c == NULL) {
    return e->host->fail(e->host, ACCEL_ERROR_OUT_OF_MEMORY,
                         ACCEL_NCCL_NAME " communicator");
  }
  c->engine = e;
  c->rank = init->rank;
  c->size = init->size;
  c->timeout_s = init->timeout_s;
  c->device = (int)init->native_device;
  status = accel_nccl_bind(c);
  int saved = 0;
  if (status == ACCEL_OK && !accel_nccl_enter(c, &saved)) {
    status = accel_nccl_fail(c, ACCEL_ERROR_BACKEND,
                             "cannot make device %d current", c->device);
  }
  if (status != ACCEL_OK) {
    accel_nccl_unbind(c);
    return status;
  }
  accel_nccl_id_blob_t blob;
  memset(&blob, 0, sizeof(blob));
  ncclResult_t r = ncclSuccess;
  if (c->rank == 0) {
    r = e->nccl.ncclGetUniqueId(&blob.id);
    blob.ok = r == ncclSuccess;
  }
  status = init->store->broadcast(init->store, &blob, sizeof(blob), 0);
  if (status == ACCEL_OK && r != ncclSuccess) {
    status = accel_nccl_result(c, "ncclGetUniqueId", r);
  } else if (status == ACCEL_OK && !blob.ok) {
    status = accel_nccl_fail(c, ACCEL_ERROR_BACKEND,
                             "rank 0 could not make the ncclUniqueId");
  }
  if (status == ACCEL_OK) {
    // Every rank was at the rendezvous just now, so this returns unless a
    // rank dies in between: NCCL's blocking init has no time limit.
    r = e->nccl.ncclCommInitRank(&c->comm, c->size, blob.id, c->rank);
    if (r != ncclSuccess) {
      status = accel_nccl_result(c, "ncclCommInitRank", r);
      c->comm = NULL;
    }
  }
  accel_nccl_leave(c, saved);
  if (status != ACCEL_OK) {
    accel_nccl_unbind(c);
    return status;
  }
  *out_comm = c;
  *out_rank = c->rank;
  *out_size = c->size;
  return ACCEL_OK;
}

accel_status_t accel_nccl_comm_split(void* comm, int32_t color, int32_t key,
                                     void** out_comm, int32_t* out_rank,
                                     int32_t* out_size) {
  accel_nccl_comm_t* c = comm;
  accel_nccl_engine_t* e = c->engine;
  if (e->nccl.ncclCommSplit == NULL) {
    return accel_nccl_fail(c, ACCEL_ERROR_UNSUPPORTED,
                           "this library has no ncclCommSplit (NCCL 2.18 or "
                           "newer has it)");
  }
  accel_nccl_comm_t* s = calloc(1, sizeof(*s));
  if (s == NULL) {
    return e->host->fail(e->host, ACCEL_ERROR_OUT_OF_MEMORY,
                         ACCEL_NCCL_NAME " communicator");
  }
  *s = *c;
  s->comm = NULL;
  s->ctx = NULL;
  accel_status_t status = accel_nccl_bind(s);
  int saved = 0;
  if (status == ACCEL_OK && accel_nccl_enter(c, &saved)) {
    ncclResult_t r = e->nccl.ncclCommSplit(c->comm, color, key, &s->comm,
                                           NULL);
    if (r == ncclSuccess) r = e->nccl.ncclCommUserRank(s->comm, &s->rank);
    if (r == ncclSuccess) r = e->nccl.ncclCommCount(s->comm, &s->size);
    accel_nccl_leave(c, saved);
    if (r != ncclSuccess) status = accel_nccl_result(c, "ncclCommSplit", r);
  } else if (status == ACCEL_OK) {
    status = accel_nccl_fail(c, ACCEL_ERROR_BACKEND,
                             "cannot make device %d current", c->device);
  }
  if (status != ACCEL_OK) {
    accel_nccl_unbind(s);
    return status;
  }
  *out_comm = s;
  *out_rank = s->rank;
  *out_size = s->size;
  return ACCEL_OK;
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
