// SPDX-License-Identifier: MIT
//
// Communicators and collectives on accel buffers, ordered on accel streams,
// carried out by an engine plugin (comm_engine.c). The core checks every
// argument, orders the call on the stream (it waits for the stream's
// earlier work, and what the caller enqueues later sees the result), hands
// the engine host addresses (host-accessible memory directly, anything
// else staged through pinned host memory), and turns a failure into a
// message naming the operation, the rank and the engine. A timeout or a
// lost peer breaks the communicator for good, since the ranks no longer
// agree on which collective comes next.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm_internal.h"

#define ACCEL__COMM_DEFAULT_TIMEOUT_S 300.0

struct accel_comm {
  atomic_uint refs;
  accel__engine_t* engine;
  void* impl;
  int32_t rank;
  int32_t size;
  double timeout_s;
  bool stage_always;     // ACCEL_COMM_STAGING=always (debugging)
  pthread_mutex_t lock;  // serialises calls; guards `broken`
  accel_status_t broken;  // ACCEL_OK while usable
  char broken_message[640];
};

void accel_comm_options_init(accel_comm_options_t* options) {
  if (options == NULL) return;
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
  options->rank = -1;
  options->size = -1;
}

// Reads an integer variable; `fallback` when unset. False if malformed.
static bool accel__env_int(const char* name, int32_t fallback,
                           int32_t* out) {
  const char* text = accel__getenv(name);
  *out = fallback;
  if (text == NULL || text[0] == '\0') return true;
  char* end = NULL;
  long v = strtol(text, &end, 10);
  if (*end != '\0' || v < 0 || v > INT32_MAX) return false;
  *out = (int32_t)v;
  return true;
}

// Fills the engine's init struct from `o` and the environment.
static accel_status_t accel__comm_init_args(const accel_comm_options_t* o,
                                            accel_comm_engine_init_t* init) {
  static const char what[] = "accel_comm_create";
  memset(init, 0, sizeof(*init));
  init->struct_size = sizeof(*init);
  init->native_comm = o->native_comm;
  if (!accel__env_int("ACCEL_COMM_RANK", o->rank, &init->rank) ||
      !accel__env_int("ACCEL_COMM_SIZE", o->size, &init->size)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: ACCEL_COMM_RANK or ACCEL_COMM_SIZE is not a "
                       "non-negative integer",
                       what);
  }
  if (o->rank >= 0) init->rank = o->rank;
  if (o->size >= 0) init->size = o->size;
  if ((init->rank >= 0) != (init->size >= 0) ||
      (init->size >= 0 && (init->size == 0 || init->rank >= init->size))) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: rank %d of size %d: give both, with 0 <= rank "
                       "< size",
                       what, (int)init->rank, (int)init->size);
  }
  init->address = accel__getenv("ACCEL_COMM_ADDR");
  init->file = accel__getenv("ACCEL_COMM_FILE");
  int32_t port = 0;
  if (!accel__env_int("ACCEL_COMM_PORT", 0, &port) || port > 65535) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: ACCEL_COMM_PORT is not a port number", what);
  }
  init->port = (uint32_t)port;
  double timeout = o->timeout_s;
  const char* env = accel__getenv("ACCEL_COMM_TIMEOUT");
  if (timeout == 0 && env != NULL && env[0] != '\0') {
    char* end = NULL;
    timeout = strtod(env, &end);
    if (*end != '\0' || !(timeout > 0)) {
      return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: ACCEL_COMM_TIMEOUT '%s' is not a positive "
                         "number of seconds",
                         what, env);
    }
  }
  if (timeout == 0) timeout = ACCEL__COMM_DEFAULT_TIMEOUT_S;
  if (!(timeout > 0) || !isfinite(timeout)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: timeout_s must be a positive number", what);
  }
  init->timeout_s = timeout;
  return ACCEL_OK;
}

// Wraps an engine communicator in a new handle.
static accel_status_t accel__comm_wrap(accel__engine_t* engine, void* impl,
                                       int32_t rank, int32_t size,
                                       double timeout_s,
                                       accel_comm_t** out_comm) {
  accel_comm_t* comm = calloc(1, sizeof(*comm));
  if (comm == NULL || pthread_mutex_init(&comm->lock, NULL) != 0) {
    free(comm);
    engine->desc.comm_destroy(impl);
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "communicator handle");
  }
  atomic_init(&comm->refs, 1);
  comm->engine = engine;
  comm->impl = impl;
  comm->rank = rank;
  comm->size = size;
  comm->timeout_s = timeout_s;
  const char* staging = accel__getenv("ACCEL_COMM_STAGING");
  comm->stage_always = staging != NULL && strcmp(staging, "always") == 0;
  atomic_fetch_add(&engine->comms, 1);
  *out_comm = comm;
  return ACCEL_OK;
}

accel_status_t accel_comm_create(const accel_comm_options_t* options,
                                 accel_comm_t** out_comm) {
  if (out_comm != NULL) *out_comm = NULL;
  accel_comm_options_t defaults;
  accel_comm_options_init(&defaults);
  if (options == NULL) options = &defaults;
  if (out_comm == NULL || options->struct_size < sizeof(*options)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_comm_create: out_comm is NULL or options were "
                       "not initialised with accel_comm_options_init()");
  }
  accel_comm_engine_init_t init;
  accel_status_t status = accel__comm_init_args(options, &init);
  if (status != ACCEL_OK) return status;
  accel__engine_t* engine = NULL;
  status = accel__engine_pick(options->engine, &engine);
  if (status != ACCEL_OK) return status;
  void* impl = NULL;
  int32_t rank = -1, size = -1;
  status = engine->desc.comm_create(engine->state, &init, &impl, &rank, &size);
  if (status != ACCEL_OK) {
    char reason[512];
    snprintf(reason, sizeof(reason), "%s", accel_last_error());
    return accel__fail(status, "accel_comm_create (%s): %s", engine->name,
                       reason);
  }
  accel__log(ACCEL_LOG_INFO, "communicator on %s: rank %d of %d",
             engine->name, (int)rank, (int)size);
  return accel__comm_wrap(engine, impl, rank, size, init.timeout_s, out_comm);
}

void accel_comm_retain(accel_comm_t* comm) {
  if (comm != NULL) atomic_fetch_add(&comm->refs, 1);
}

void accel_comm_release(accel_comm_t* comm) {
  if (comm == NULL || atomic_fetch_sub(&comm->refs, 1) != 1) return;
  comm->engine->desc.comm_destroy(comm->impl);
  atomic_fetch_sub(&comm->engine->comms, 1);
  pthread_mutex_destroy(&comm->lock);
  free(comm);
}

int32_t accel_comm_rank(const accel_comm_t* comm) {
  return comm != NULL ? comm->rank : -1;
}

int32_t accel_comm_size(const accel_comm_t* comm) {
  return comm != NULL ? comm->size : -1;
}

const char* accel_comm_engine(const accel_comm_t* comm) {
  return comm != NULL ? comm->engine->name : "";
}

// Takes the communicator's lock unless it is broken; on failure the lock
// is not held and the original reason is the message.
static accel_status_t accel__comm_enter(accel_comm_t* comm, const char* what) {
  pthread_mutex_lock(&comm->lock);
  if (comm->broken == ACCEL_OK) return ACCEL_OK;
  accel_status_t broken = comm->broken;
  char reason[sizeof(comm->broken_message)];
  snprintf(reason, sizeof(reason), "%s", comm->broken_message);
  pthread_mutex_unlock(&comm->lock);
  return accel__fail(broken,
                     "%s: the communicator is broken (rank %d of %d, %s): "
                     "%s",
                     what, (int)comm->rank, (int)comm->size,
                     comm->engine->name, reason);
}

// Names the call in an engine failure; a timeout or a lost peer breaks the
// communicator. Called with the lock held; releases it.
static accel_status_t accel__comm_leave(accel_comm_t* comm, const char* what,
                                        accel_status_t status) {
  if (status == ACCEL_OK) {
    pthread_mutex_unlock(&comm->lock);
    return ACCEL_OK;
  }
  char reason[512];
  snprintf(reason, sizeof(reason), "%s", accel_last_error());
  if (status == ACCEL_ERROR_TIMEOUT || status == ACCEL_ERROR_DEVICE_LOST) {
    comm->broken = status;
    snprintf(comm->broken_message, sizeof(comm->broken_message),
             "%s failed: %s", what, reason);
  }
  pthread_mutex_unlock(&comm->lock);
  return accel__fail(status, "%s (rank %d of %d, %s): %s", what,
                     (int)comm->rank, (int)comm->size, comm->engine->name,
                     reason);
}

accel_status_t accel_comm_split(accel_comm_t* comm, int32_t color,
                                int32_t key, accel_comm_t** out_comm) {
  static const char what[] = "accel_comm_split";
  if (out_comm != NULL) *out_comm = NULL;
  if (comm == NULL || out_comm == NULL || color < 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: comm and out_comm are required and color must "
                       "be >= 0",
                       what);
  }
  accel_status_t status = accel__comm_enter(comm, what);
  if (status != ACCEL_OK) return status;
  void* impl = NULL;
  int32_t rank = -1, size = -1;
  status = comm->engine->desc.comm_split(comm->impl, color, key, &impl, &rank,
                                         &size);
  status = accel__comm_leave(comm, what, status);
  if (status != ACCEL_OK) return status;
  return accel__comm_wrap(comm->engine, impl, rank, size, comm->timeout_s,
                          out_comm);
}

// ---------------------------------------------------------------------------
// Operands: a buffer region the engine sees as host memory.
// ---------------------------------------------------------------------------

typedef struct accel__operand {
  accel_buffer_t* buffer;
  size_t offset;
  size_t bytes;
  bool in;    // the engine reads it
  bool out;   // the engine writes it
  void* host;     // what the engine gets
  void* staging;  // pinned host memory when the buffer is not addressable
} accel__operand_t;

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

// Gives every operand a host address: the buffer's own when the device is
// host-accessible, else pinned staging filled (for inputs) on `stream`.
// Then waits for the stream, so the engine sees the data.
static accel_status_t accel__operands_prepare(const accel_comm_t* comm,
                                              accel_stream_t* stream,
                                              accel__operand_t* ops,
                                              size_t n) {
  accel_device_t* device = stream->device;
  accel_status_t status = ACCEL_OK;
  for (size_t i = 0; i < n && status == ACCEL_OK; i++) {
    accel__operand_t* op = &ops[i];
    if (op->buffer == NULL || op->bytes == 0) continue;
    uint64_t address = 0;
    if (device->host_accessible && !comm->stage_always &&
        device->ops->mem_address(device->impl, accel__buffer_mem(op->buffer),
                                 accel__buffer_offset(op->buffer, op->offset),
                                 &address) == ACCEL_OK) {
      op->host = (void*)(uintptr_t)address;
      status = accel__buffer_use(op->buffer, stream);
      continue;
    }
    status = accel_host_alloc(device, op->bytes, &op->staging);
    if (status != ACCEL_OK) break;
    op->host = op->staging;
    if (op->in) {
      status = accel_stream_read_buffer(stream, op->buffer, op->offset,
                                        op->staging, op->bytes);
    }
  }
  if (status == ACCEL_OK) status = accel_stream_synchronize(stream);
  return status;
}

// Writes staged outputs back on `stream` and waits for them, then frees
// the staging. Runs whatever `status` says, to free the staging.
static accel_status_t accel__operands_finish(accel_stream_t* stream,
                                             accel__operand_t* ops, size_t n,
                                             accel_status_t status) {
  bool wrote = false;
  for (size_t i = 0; i < n && status == ACCEL_OK; i++) {
    accel__operand_t* op = &ops[i];
    if (op->staging == NULL || !op->out) continue;
    status = accel_stream_write_buffer(stream, op->buffer, op->offset,
                                       op->staging, op->bytes);
    wrote = true;
  }
  if (wrote) {
    // The staging must outlive the copies that read it.
    accel_status_t sync = accel_stream_synchronize(stream);
    if (status == ACCEL_OK) status = sync;
  }
  for (size_t i = 0; i < n; i++) {
    if (ops[i].staging != NULL) accel_host_free(stream->device, ops[i].staging);
    ops[i].staging = NULL;
  }
  return status;
}

// What one collective call asks of the engine.
typedef struct accel__call {
  const char* what;
  uint32_t kind;
  accel_dtype_t dtype;
  accel_reduce_op_t op;
  uint64_t count;
  int32_t peer;  // root or peer rank; -1 when none
} accel__call_t;

enum {
  ACCEL__ALL_REDUCE,
  ACCEL__BROADCAST,
  ACCEL__REDUCE,
  ACCEL__ALL_GATHER,
  ACCEL__REDUCE_SCATTER,
  ACCEL__ALL_TO_ALL,
  ACCEL__SEND,
  ACCEL__RECV,
};

// Runs the call on the engine. With one operand of a two-buffer call (in
// place, or a non-root rank of reduce) the second address is the first's
// or NULL.
static accel_status_t accel__engine_call(accel_comm_t* comm,
                                         const accel__call_t* c,
                                         accel__operand_t* ops, size_t n) {
  const accel_comm_engine_t* e = &comm->engine->desc;
  void* x = comm->impl;
  uint32_t t = (uint32_t)c->dtype, op = (uint32_t)c->op;
  void* second = n > 1 ? ops[1].host : ops[0].host;
  switch (c->kind) {
    case ACCEL__ALL_REDUCE:
      return e->all_reduce(x, ops[0].host, second, c->count, t, op);
    case ACCEL__BROADCAST:
      return e->broadcast(x, ops[0].host, c->count, t, c->peer);
    case ACCEL__REDUCE:
      return e->reduce(x, ops[0].host, second, c->count, t, op, c->peer);
    case ACCEL__ALL_GATHER:
      return e->all_gather(x, ops[0].host, second, c->count, t);
    case ACCEL__REDUCE_SCATTER:
      return e->reduce_scatter(x, ops[0].host, second, c->count, t, op);
    case ACCEL__ALL_TO_ALL:
      return e->all_to_all(x, ops[0].host, second, c->count, t);
    case ACCEL__SEND:
      return e->send(x, ops[0].host, c->count, t, c->peer);
    default:
      return e->recv(x, ops[0].host, c->count, t, c->peer);
  }
}

// Checks the common arguments, then prepares, runs and finishes the call.
static accel_status_t accel__collective(accel_comm_t* comm,
                                        accel_stream_t* stream,
                                        const accel__call_t* c,
                                        accel__operand_t* ops, size_t n) {
  if (comm == NULL || stream == NULL) {
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
  if (c->peer != -1 && (c->peer < 0 || c->peer >= comm->size)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: rank %d is outside the communicator of %d ranks",
                       c->what, (int)c->peer, (int)comm->size);
  }
  for (size_t i = 0; i < n; i++) {
    if (ops[i].buffer == NULL && ops[i].bytes == 0) continue;  // non-root
    accel_status_t status = accel__operand_check(
        c->what, i == 0 ? "the first buffer" : "the second buffer", stream,
        &ops[i]);
    if (status != ACCEL_OK) return status;
  }
  accel_status_t status = accel__comm_enter(comm, c->what);
  if (status != ACCEL_OK) return status;
  status = accel__operands_prepare(comm, stream, ops, n);
  if (status == ACCEL_OK) {
    status = accel__engine_call(comm, c, ops, n);
    status = accel__comm_leave(comm, c->what, status);
  } else {
    pthread_mutex_unlock(&comm->lock);
  }
  return accel__operands_finish(stream, ops, n, status);
}

// Bytes of `count` elements of `dtype` times `blocks`; SIZE_MAX on
// overflow (the range check then refuses it).
static size_t accel__bytes(size_t count, accel_dtype_t dtype, size_t blocks) {
  size_t elem = accel_dtype_size(dtype);
  if (elem == 0 || count > SIZE_MAX / elem / (blocks ? blocks : 1)) {
    return SIZE_MAX;
  }
  return count * elem * blocks;
}

static size_t accel__ranks(const accel_comm_t* comm) {
  return comm != NULL && comm->size > 0 ? (size_t)comm->size : 1;
}

accel_status_t accel_comm_all_reduce(accel_comm_t* comm,
                                     accel_stream_t* stream,
                                     accel_buffer_t* send, size_t send_offset,
                                     accel_buffer_t* recv, size_t recv_offset,
                                     size_t count, accel_dtype_t dtype,
                                     accel_reduce_op_t op) {
  accel__call_t c = {"accel_comm_all_reduce", ACCEL__ALL_REDUCE, dtype, op,
                     count, -1};
  size_t bytes = accel__bytes(count, dtype, 1);
  accel__operand_t ops[2] = {
      {send, send_offset, bytes, true, false, NULL, NULL},
      {recv, recv_offset, bytes, false, true, NULL, NULL}};
  if (send == recv && send_offset == recv_offset) {
    ops[0].out = true;  // in place: one operand, read and written
    return accel__collective(comm, stream, &c, ops, 1);
  }
  return accel__collective(comm, stream, &c, ops, 2);
}

accel_status_t accel_comm_broadcast(accel_comm_t* comm, accel_stream_t* stream,
                                    accel_buffer_t* buffer, size_t offset,
                                    size_t count, accel_dtype_t dtype,
                                    int32_t root) {
  accel__call_t c = {"accel_comm_broadcast", ACCEL__BROADCAST, dtype,
                     ACCEL_REDUCE_SUM, count, root};
  bool is_root = comm != NULL && comm->rank == root;
  accel__operand_t ops[1] = {{buffer, offset, accel__bytes(count, dtype, 1),
                              is_root, !is_root, NULL, NULL}};
  if (root < 0) c.peer = INT32_MIN;  // refused by the rank check
  return accel__collective(comm, stream, &c, ops, 1);
}

accel_status_t accel_comm_reduce(accel_comm_t* comm, accel_stream_t* stream,
                                 accel_buffer_t* send, size_t send_offset,
                                 accel_buffer_t* recv, size_t recv_offset,
                                 size_t count, accel_dtype_t dtype,
                                 accel_reduce_op_t op, int32_t root) {
  accel__call_t c = {"accel_comm_reduce", ACCEL__REDUCE, dtype, op, count,
                     root < 0 ? INT32_MIN : root};
  size_t bytes = accel__bytes(count, dtype, 1);
  bool is_root = comm != NULL && comm->rank == root;
  accel__operand_t ops[2] = {
      {send, send_offset, bytes, true, false, NULL, NULL},
      {recv, recv_offset, bytes, false, true, NULL, NULL}};
  if (!is_root) {
    // Only the root receives: elsewhere `recv` is ignored (may be NULL),
    // and the engine gets NULL for it.
    ops[1] = (accel__operand_t){NULL, 0, 0, false, false, NULL, NULL};
    return accel__collective(comm, stream, &c, ops, 2);
  }
  if (send == recv && send_offset == recv_offset) {
    ops[0].out = true;
    return accel__collective(comm, stream, &c, ops, 1);
  }
  return accel__collective(comm, stream, &c, ops, 2);
}

accel_status_t accel_comm_all_gather(accel_comm_t* comm,
                                     accel_stream_t* stream,
                                     accel_buffer_t* send, size_t send_offset,
                                     accel_buffer_t* recv, size_t recv_offset,
                                     size_t count, accel_dtype_t dtype) {
  accel__call_t c = {"accel_comm_all_gather", ACCEL__ALL_GATHER, dtype,
                     ACCEL_REDUCE_SUM, count, -1};
  accel__operand_t ops[2] = {
      {send, send_offset, accel__bytes(count, dtype, 1), true, false, NULL,
       NULL},
      {recv, recv_offset, accel__bytes(count, dtype, accel__ranks(comm)),
       false, true, NULL, NULL}};
  return accel__collective(comm, stream, &c, ops, 2);
}

accel_status_t accel_comm_reduce_scatter(
    accel_comm_t* comm, accel_stream_t* stream, accel_buffer_t* send,
    size_t send_offset, accel_buffer_t* recv, size_t recv_offset,
    size_t count, accel_dtype_t dtype, accel_reduce_op_t op) {
  accel__call_t c = {"accel_comm_reduce_scatter", ACCEL__REDUCE_SCATTER,
                     dtype, op, count, -1};
  accel__operand_t ops[2] = {
      {send, send_offset, accel__bytes(count, dtype, accel__ranks(comm)), true,
       false, NULL, NULL},
      {recv, recv_offset, accel__bytes(count, dtype, 1), false, true, NULL,
       NULL}};
  return accel__collective(comm, stream, &c, ops, 2);
}

accel_status_t accel_comm_all_to_all(accel_comm_t* comm,
                                     accel_stream_t* stream,
                                     accel_buffer_t* send, size_t send_offset,
                                     accel_buffer_t* recv, size_t recv_offset,
                                     size_t count, accel_dtype_t dtype) {
  accel__call_t c = {"accel_comm_all_to_all", ACCEL__ALL_TO_ALL, dtype,
                     ACCEL_REDUCE_SUM, count, -1};
  size_t bytes = accel__bytes(count, dtype, accel__ranks(comm));
  accel__operand_t ops[2] = {
      {send, send_offset, bytes, true, false, NULL, NULL},
      {recv, recv_offset, bytes, false, true, NULL, NULL}};
  return accel__collective(comm, stream, &c, ops, 2);
}

accel_status_t accel_comm_send(accel_comm_t* comm, accel_stream_t* stream,
                               accel_buffer_t* buffer, size_t offset,
                               size_t count, accel_dtype_t dtype,
                               int32_t peer) {
  accel__call_t c = {"accel_comm_send", ACCEL__SEND, dtype, ACCEL_REDUCE_SUM,
                     count, peer < 0 ? INT32_MIN : peer};
  accel__operand_t ops[1] = {{buffer, offset, accel__bytes(count, dtype, 1),
                              true, false, NULL, NULL}};
  return accel__collective(comm, stream, &c, ops, 1);
}

accel_status_t accel_comm_recv(accel_comm_t* comm, accel_stream_t* stream,
                               accel_buffer_t* buffer, size_t offset,
                               size_t count, accel_dtype_t dtype,
                               int32_t peer) {
  accel__call_t c = {"accel_comm_recv", ACCEL__RECV, dtype, ACCEL_REDUCE_SUM,
                     count, peer < 0 ? INT32_MIN : peer};
  accel__operand_t ops[1] = {{buffer, offset, accel__bytes(count, dtype, 1),
                              false, true, NULL, NULL}};
  return accel__collective(comm, stream, &c, ops, 1);
}
