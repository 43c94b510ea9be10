// SPDX-License-Identifier: MIT
//
// Running collective and point-to-point calls, alone or as a group
// (accel_comm_group_start/_end). The core checks every argument, then, at
// once or at the end of the group: takes the communicators' locks, gives
// every operand an address the engine can use (the buffer's own host
// address on a host-accessible device, its device address for an engine
// that takes them, else pinned host staging filled on the stream), orders
// the calls on their streams, starts them on the engine and polls them to
// completion within the communicators' timeout, then writes staged outputs
// back. An engine without `call_start` (engine ABI 1.0) gets its blocking
// entries called one after another instead.
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm_internal.h"

// The calls recorded by this thread's open group.
typedef struct accel__group {
  int depth;
  accel__call_t* calls;
  size_t count;
  size_t capacity;
} accel__group_t;

static _Thread_local accel__group_t accel__group;

// One call being run: its native stream and its engine request.
typedef struct accel__slot {
  uint64_t native_stream;
  void* request;
  bool done;
} accel__slot_t;

// ---------------------------------------------------------------------------
// Checks.
// ---------------------------------------------------------------------------

// Checks that `op` lies in its buffer on `stream`'s device.
static accel_status_t accel__operand_check(const char* what,
                                           const char* name,
                                           accel_stream_t* stream,
                                           const accel__operand_t* op) {
  if (op->buffer == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", what,
                       name);
  }
  accel_status_t live = accel__check_buffer(what, name, op->buffer);
  if (live != ACCEL_OK) return live;
  if (op->buffer->device != stream->device) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %s is on %s but the stream is on %s", what, name,
                       op->buffer->device->uri, stream->device->uri);
  }
  return accel__check_range(what, name, op->buffer, op->offset, op->bytes);
}

static accel_status_t accel__call_check(const accel__call_t* c) {
  if (c->comm == NULL || c->stream == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: comm and stream are required", c->what);
  }
  size_t elem = accel_dtype_size(c->dtype);
  if (elem == 0 || c->count == 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: dtype %d is not an accel_dtype_t or count is 0",
                       c->what, (int)c->dtype);
  }
  if ((unsigned)c->op > ACCEL_REDUCE_MAX) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: op %d is not an accel_reduce_op_t", c->what,
                       (int)c->op);
  }
  if (c->peer != -1 && (c->peer < 0 || c->peer >= c->comm->size)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: rank %d is outside the communicator of %d ranks",
                       c->what, (int)c->peer, (int)c->comm->size);
  }
  if (c->comm->device != NULL && c->stream->device != c->comm->device) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: the %s communicator serves %s, but the stream "
                       "is on %s",
                       c->what, c->comm->engine->name, c->comm->device->uri,
                       c->stream->device->uri);
  }
  for (size_t i = 0; i < c->n; i++) {
    const accel__operand_t* op = &c->ops[i];
    if (op->buffer == NULL && op->bytes == 0) continue;  // non-root
    accel_status_t status = accel__operand_check(
        c->what, i == 0 ? "the first buffer" : "the second buffer",
        c->stream, op);
    if (status != ACCEL_OK) return status;
  }
  return ACCEL_OK;
}

// ---------------------------------------------------------------------------
// Operands.
// ---------------------------------------------------------------------------

// Gives `op` the device address of its buffer, for an engine that takes
// the device's addresses.
static accel_status_t accel__operand_device(const accel__call_t* c,
                                            accel__operand_t* op) {
  accel_device_t* device = c->stream->device;
  uint64_t address = 0;
  accel_status_t status = device->ops->mem_address(
      device->impl, accel__buffer_mem(op->buffer),
      accel__buffer_offset(op->buffer, op->offset), &address);
  if (status != ACCEL_OK) {
    char reason[256];
    snprintf(reason, sizeof(reason), "%s", accel_last_error());
    return accel__fail(status,
                       "%s: the %s engine needs device addresses, which the "
                       "%s plugin does not give (mem_address: %s)",
                       c->what, c->comm->engine->name, device->plugin->name,
                       reason);
  }
  op->host = (void*)(uintptr_t)address;
  return accel__buffer_use(op->buffer, c->stream);
}

// Gives every operand of `c` an address the engine can use; fills staged
// inputs on the stream. Sets `*sync` when the engine needs the stream's
// work done first (host memory, or device memory without a native
// stream).
static accel_status_t accel__call_prepare(accel__call_t* c,
                                          accel__slot_t* slot, bool* sync) {
  accel_device_t* device = c->stream->device;
  bool on_device = c->comm->device != NULL;
  *sync = true;
  if (on_device && device->ops->native_handle != NULL) {
    // native_handle is an ABI 1.4 entry the core does not fill in.
    uint64_t native = 0;
    if (device->ops->native_handle(device->impl, ACCEL_PLUGIN_NATIVE_STREAM,
                                   c->stream->impl, &native) == ACCEL_OK) {
      slot->native_stream = native;
      *sync = false;
    }
  }
  accel_status_t status = ACCEL_OK;
  for (size_t i = 0; i < c->n && status == ACCEL_OK; i++) {
    accel__operand_t* op = &c->ops[i];
    if (op->buffer == NULL || op->bytes == 0) continue;
    if (on_device) {
      status = accel__operand_device(c, op);
      continue;
    }
    uint64_t address = 0;
    if (device->host_accessible && !c->comm->stage_always &&
        device->ops->mem_address(device->impl, accel__buffer_mem(op->buffer),
                                 accel__buffer_offset(op->buffer, op->offset),
                                 &address) == ACCEL_OK) {
      op->host = (void*)(uintptr_t)address;
      status = accel__buffer_use(op->buffer, c->stream);
      continue;
    }
    status = accel_host_alloc(device, op->bytes, &op->staging);
    if (status != ACCEL_OK) break;
    op->host = op->staging;
    if (op->in) {
      status = accel_stream_read_buffer(c->stream, op->buffer, op->offset,
                                        op->staging, op->bytes);
    }
  }
  return status;
}

// Writes staged outputs back on the stream and waits for them, then frees
// the staging. Runs whatever `status` says, to free the staging.
static accel_status_t accel__call_finish(accel__call_t* c,
                                         accel_status_t status) {
  bool wrote = false;
  for (size_t i = 0; i < c->n && status == ACCEL_OK; i++) {
    accel__operand_t* op = &c->ops[i];
    if (op->staging == NULL || !op->out) continue;
    status = accel_stream_write_buffer(c->stream, op->buffer, op->offset,
                                       op->staging, op->bytes);
    wrote = true;
  }
  if (wrote) {
    // The staging must outlive the copies that read it.
    accel_status_t sync = accel_stream_synchronize(c->stream);
    if (status == ACCEL_OK) status = sync;
  }
  for (size_t i = 0; i < c->n; i++) {
    if (c->ops[i].staging != NULL) {
      accel_host_free(c->stream->device, c->ops[i].staging);
    }
    c->ops[i].staging = NULL;
  }
  return status;
}

// ---------------------------------------------------------------------------
// Engine calls.
// ---------------------------------------------------------------------------

// The engine's view of `c`. With one operand of a two-buffer call (in
// place, or a non-root rank of reduce) the second address is the first's
// or NULL.
static accel_comm_engine_call_t accel__engine_call(const accel__call_t* c,
                                                   uint64_t stream) {
  accel_comm_engine_call_t e;
  memset(&e, 0, sizeof(e));
  e.struct_size = sizeof(e);
  e.kind = c->kind;
  e.comm = c->comm->impl;
  e.count = c->count;
  e.dtype = (uint32_t)c->dtype;
  e.op = (uint32_t)c->op;
  e.peer = c->peer;
  e.stream = stream;
  void* first = c->ops[0].host;
  void* second = c->n > 1 ? c->ops[1].host : first;
  switch (c->kind) {
    case ACCEL_COMM_ENGINE_SEND:
      e.send = first;
      break;
    case ACCEL_COMM_ENGINE_RECV:
      e.recv = first;
      break;
    case ACCEL_COMM_ENGINE_BROADCAST:
      e.send = first;
      e.recv = first;
      break;
    default:
      e.send = first;
      e.recv = second;
  }
  return e;
}

// Runs `e` through the blocking entry of its kind (engines without
// call_start).
static accel_status_t accel__engine_blocking(const accel_comm_engine_t* d,
                                             const accel_comm_engine_call_t* e) {
  void* x = e->comm;
  switch (e->kind) {
    case ACCEL_COMM_ENGINE_ALL_REDUCE:
      return d->all_reduce(x, e->send, e->recv, e->count, e->dtype, e->op);
    case ACCEL_COMM_ENGINE_BROADCAST:
      return d->broadcast(x, e->recv, e->count, e->dtype, e->peer);
    case ACCEL_COMM_ENGINE_REDUCE:
      return d->reduce(x, e->send, e->recv, e->count, e->dtype, e->op,
                       e->peer);
    case ACCEL_COMM_ENGINE_ALL_GATHER:
      return d->all_gather(x, e->send, e->recv, e->count, e->dtype);
    case ACCEL_COMM_ENGINE_REDUCE_SCATTER:
      return d->reduce_scatter(x, e->send, e->recv, e->count, e->dtype,
                               e->op);
    case ACCEL_COMM_ENGINE_ALL_TO_ALL:
      return d->all_to_all(x, e->send, e->recv, e->count, e->dtype);
    case ACCEL_COMM_ENGINE_SEND:
      return d->send(x, e->send, e->count, e->dtype, e->peer);
    default:
      return d->recv(x, e->recv, e->count, e->dtype, e->peer);
  }
}

// Gives the waiting thread away more and more as a wait drags on: a call
// that completes within 50 ms is polled flat out, as MPI's blocking calls
// poll, since a yield on a loaded machine can cost a whole time slice.
static void accel__wait_pause(double waited) {
  if (waited > 1.0) {
    struct timespec pause = {0, 100000};  // 0.1 ms
    nanosleep(&pause, NULL);
  } else if (waited > 0.05) {
    sched_yield();
  }
}

// Polls the started requests until all are done, one fails (`*failed` is
// its index) or `timeout_s` passes (ACCEL_ERROR_TIMEOUT; `*failed` is the
// first unfinished call).
static accel_status_t accel__engine_wait(const accel_comm_engine_t* d,
                                         accel__slot_t* slots, size_t n,
                                         double timeout_s, size_t* failed) {
  double start = accel__comm_now();
  for (unsigned spin = 1;; spin++) {
    bool all = true;
    for (size_t i = 0; i < n; i++) {
      if (slots[i].done) continue;
      int32_t done = 0;
      accel_status_t status = d->request_test(slots[i].request, &done);
      if (status != ACCEL_OK) {
        slots[i].done = true;  // the engine freed it
        *failed = i;
        return status;
      }
      slots[i].done = done != 0;
      all = all && slots[i].done;
    }
    if (all) return ACCEL_OK;
    if ((spin & 63) != 0) continue;
    double waited = accel__comm_now() - start;
    if (waited > timeout_s) {
      for (size_t i = 0; i < n; i++) {
        if (slots[i].done) continue;
        *failed = i;
        return accel__fail(ACCEL_ERROR_TIMEOUT,
                           "did not complete within %.1f s; a peer may have "
                           "died or stopped calling (ACCEL_COMM_TIMEOUT)",
                           timeout_s);
      }
    }
    accel__wait_pause(waited);
  }
}

// Starts every call (as one engine group when there are several) and
// waits for all. On failure `*failed` is the index of the call to blame
// and no request is left outstanding.
static accel_status_t accel__engine_run(accel__engine_t* engine,
                                        accel__call_t* calls,
                                        accel__slot_t* slots, size_t n,
                                        double timeout_s, size_t* failed) {
  const accel_comm_engine_t* d = &engine->desc;
  accel_status_t status = ACCEL_OK;
  *failed = 0;
  if (d->call_start == NULL) {
    for (size_t i = 0; i < n && status == ACCEL_OK; i++) {
      accel_comm_engine_call_t e =
          accel__engine_call(&calls[i], slots[i].native_stream);
      status = accel__engine_blocking(d, &e);
      *failed = i;
    }
    return status;
  }
  bool bracket = n > 1 && d->group_start != NULL && d->group_end != NULL;
  if (bracket) status = d->group_start(engine->state);
  size_t started = 0;
  for (; started < n && status == ACCEL_OK; started++) {
    accel_comm_engine_call_t e =
        accel__engine_call(&calls[started], slots[started].native_stream);
    status = d->call_start(calls[started].comm->impl, &e,
                           &slots[started].request);
    if (status != ACCEL_OK) *failed = started;
  }
  if (bracket) {
    char reason[512];
    snprintf(reason, sizeof(reason), "%s", accel_last_error());
    accel_status_t end = d->group_end(engine->state);
    if (status != ACCEL_OK) {
      accel__fail(status, "%s", reason);  // the first failure's message
    } else {
      status = end;
    }
  }
  if (status == ACCEL_OK) {
    status = accel__engine_wait(d, slots, n, timeout_s, failed);
  }
  if (status != ACCEL_OK) {
    char reason[512];
    snprintf(reason, sizeof(reason), "%s", accel_last_error());
    for (size_t i = 0; i < started && i < n; i++) {
      if (!slots[i].done && slots[i].request != NULL) {
        d->request_abandon(slots[i].request);
      }
      slots[i].done = true;
    }
    accel__fail(status, "%s", reason);
  }
  return status;
}

// ---------------------------------------------------------------------------
// Running a batch: one call, or the calls of a group.
// ---------------------------------------------------------------------------

static int accel__comm_order(const void* a, const void* b) {
  uintptr_t x = (uintptr_t)*(accel_comm_t* const*)a;
  uintptr_t y = (uintptr_t)*(accel_comm_t* const*)b;
  return (x > y) - (x < y);
}

// The distinct communicators of `calls`, in address order (the order
// their locks are taken in, so two groups cannot deadlock). `out` holds n.
static size_t accel__batch_comms(const accel__call_t* calls, size_t n,
                                 accel_comm_t** out) {
  size_t m = 0;
  for (size_t i = 0; i < n; i++) out[m++] = calls[i].comm;
  qsort(out, m, sizeof(*out), accel__comm_order);
  size_t k = 0;
  for (size_t i = 0; i < m; i++) {
    if (k == 0 || out[k - 1] != out[i]) out[k++] = out[i];
  }
  return k;
}

// Prepares every call, then waits for the streams whose work the engine
// must see done: each once, after every call's staging reads were
// enqueued (a later call of a group may stage on a stream an earlier one
// already needed).
static accel_status_t accel__batch_prepare(accel__call_t* calls,
                                           accel__slot_t* slots, size_t n) {
  accel_status_t status = ACCEL_OK;
  bool* sync = calloc(n, sizeof(*sync));
  if (sync == NULL) {
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "%zu calls", n);
  }
  for (size_t i = 0; i < n && status == ACCEL_OK; i++) {
    status = accel__call_prepare(&calls[i], &slots[i], &sync[i]);
  }
  for (size_t i = 0; i < n && status == ACCEL_OK; i++) {
    if (!sync[i]) continue;
    bool seen = false;  // each stream is waited for once
    for (size_t j = 0; j < i && !seen; j++) {
      seen = sync[j] && calls[j].stream == calls[i].stream;
    }
    if (!seen) status = accel_stream_synchronize(calls[i].stream);
  }
  free(sync);
  return status;
}

// Runs `calls` (all checked) together on their engine; `what` names a
// group ("accel_comm_group_end"), or is NULL for a single call.
static accel_status_t accel__batch_run(accel__call_t* calls, size_t n,
                                       const char* what) {
  accel__engine_t* engine = calls[0].comm->engine;
  for (size_t i = 1; i < n; i++) {
    if (calls[i].comm->engine != engine) {
      return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: the group mixes engines (%s and %s); nothing "
                         "ran",
                         what, engine->name, calls[i].comm->engine->name);
    }
  }
  accel_comm_t* one[1];
  accel__slot_t slot[1];
  accel_comm_t** comms = n == 1 ? one : calloc(n, sizeof(*comms));
  accel__slot_t* slots = n == 1 ? slot : calloc(n, sizeof(*slots));
  if (comms == NULL || slots == NULL) {
    if (n > 1) free(comms), free(slots);
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "%s: %zu calls", what, n);
  }
  memset(slots, 0, n * sizeof(*slots));
  size_t m = accel__batch_comms(calls, n, comms);
  accel_status_t status = ACCEL_OK;
  size_t locked = 0;
  double timeout_s = comms[0]->timeout_s;
  for (; locked < m && status == ACCEL_OK; locked++) {
    status = accel__comm_enter(comms[locked],
                               n == 1 ? calls[0].what : what);
    if (timeout_s > comms[locked]->timeout_s) {
      timeout_s = comms[locked]->timeout_s;
    }
  }
  if (status != ACCEL_OK) locked--;  // the failed enter holds no lock
  size_t failed = 0;
  bool ran = false;
  if (status == ACCEL_OK) status = accel__batch_prepare(calls, slots, n);
  if (status == ACCEL_OK) {
    ran = true;
    status = accel__engine_run(engine, calls, slots, n, timeout_s, &failed);
  }
  if (ran && status != ACCEL_OK) {
    // Names the call: "accel_comm_send (rank 0 of 4, mpi): ..." for a
    // single call, with the group's name in front for a group.
    char reason[600];
    snprintf(reason, sizeof(reason), "%s", accel_last_error());
    accel__call_t* c = &calls[failed];
    accel__fail(status, "%s%s%s (rank %d of %d, %s): %s",
                what != NULL ? what : "", what != NULL ? ": " : "", c->what,
                (int)c->comm->rank, (int)c->comm->size, engine->name,
                reason);
    if (status == ACCEL_ERROR_TIMEOUT || status == ACCEL_ERROR_DEVICE_LOST) {
      snprintf(reason, sizeof(reason), "%s", accel_last_error());
      for (size_t i = 0; i < locked; i++) {
        accel__comm_break(comms[i], status, c->what, reason);
      }
    }
  }
  for (size_t i = 0; i < locked; i++) pthread_mutex_unlock(&comms[i]->lock);
  char reason[600] = "";
  if (status != ACCEL_OK) {
    snprintf(reason, sizeof(reason), "%s", accel_last_error());
  }
  for (size_t i = 0; i < n; i++) {
    accel_status_t end = accel__call_finish(&calls[i], status);
    if (status == ACCEL_OK) status = end;
  }
  if (reason[0] != '\0') accel__fail(status, "%s", reason);
  if (n > 1) free(comms), free(slots);
  return status;
}

// ---------------------------------------------------------------------------
// Single calls and groups.
// ---------------------------------------------------------------------------

// Drops the references a recorded call holds.
static void accel__call_release(accel__call_t* c) {
  for (size_t i = 0; i < c->n; i++) accel_buffer_release(c->ops[i].buffer);
  accel_stream_release(c->stream);
  accel_comm_release(c->comm);
}

// Records `c` in this thread's group, with references to what it uses.
static accel_status_t accel__group_add(const accel__call_t* c) {
  accel__group_t* g = &accel__group;
  if (g->count == g->capacity) {
    size_t capacity = g->capacity ? 2 * g->capacity : 16;
    accel__call_t* grown = realloc(g->calls, capacity * sizeof(*grown));
    if (grown == NULL) {
      return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                         "%s: recording it in the group", c->what);
    }
    g->calls = grown;
    g->capacity = capacity;
  }
  accel__call_t* slot = &g->calls[g->count++];
  *slot = *c;
  accel_comm_retain(slot->comm);
  accel_stream_retain(slot->stream);
  for (size_t i = 0; i < slot->n; i++) {
    accel_buffer_retain(slot->ops[i].buffer);
  }
  return ACCEL_OK;
}

accel_status_t accel__comm_call(accel__call_t* call) {
  accel_status_t status = accel__call_check(call);
  if (status != ACCEL_OK) return status;
  if (accel__group.depth > 0) return accel__group_add(call);
  return accel__batch_run(call, 1, NULL);
}

accel_status_t accel_comm_group_start(void) {
  accel__group.depth++;
  return ACCEL_OK;
}

accel_status_t accel_comm_group_end(void) {
  static const char what[] = "accel_comm_group_end";
  accel__group_t* g = &accel__group;
  if (g->depth == 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s without accel_comm_group_start", what);
  }
  if (--g->depth > 0) return ACCEL_OK;
  accel__call_t* calls = g->calls;
  size_t n = g->count;
  *g = (accel__group_t){0};
  accel_status_t status = n > 0 ? accel__batch_run(calls, n, what) : ACCEL_OK;
  for (size_t i = 0; i < n; i++) accel__call_release(&calls[i]);
  free(calls);
  return status;
}
