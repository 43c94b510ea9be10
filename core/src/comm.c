// SPDX-License-Identifier: MIT
//
// Communicators: forming them on an engine plugin (comm_engine.c) from the
// options, the environment and, without a launcher, the rendezvous store
// (comm_store.c); splitting, lifetime, the broken state; and the public
// collective calls, which describe themselves as an accel__call_t for
// comm_call.c to check and run. A timeout or a lost peer breaks the
// communicator for good, since the ranks no longer agree on which
// collective comes next.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm_internal.h"

#define ACCEL__COMM_DEFAULT_TIMEOUT_S 300.0

// The options struct before `device` was appended: callers built against
// it pass this size.
#define ACCEL__COMM_OPTIONS_SIZE_0 offsetof(accel_comm_options_t, device)

double accel__comm_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

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

// An environment variable, or NULL when unset or empty.
static const char* accel__env_text(const char* name) {
  const char* text = accel__getenv(name);
  return text != NULL && text[0] != '\0' ? text : NULL;
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
  init->address = accel__env_text("ACCEL_COMM_ADDR");
  init->file = accel__env_text("ACCEL_COMM_FILE");
  int32_t port = 0;
  if (!accel__env_int("ACCEL_COMM_PORT", 0, &port) || port > 65535) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: ACCEL_COMM_PORT is not a port number", what);
  }
  init->port = (uint32_t)port;
  if (init->address != NULL && init->port == 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: ACCEL_COMM_ADDR is set but ACCEL_COMM_PORT is "
                       "not: give rank 0's port too",
                       what);
  }
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

// Binds `init` to `device` for an engine that takes its addresses: the
// backend and the native device (native_handle, else the plugin's own
// device index, which is the CUDA or HIP ordinal for those plugins).
static accel_status_t accel__comm_bind_device(const accel__engine_t* engine,
                                              accel_device_t* device,
                                              accel_comm_engine_init_t* init) {
  const char* backend = device != NULL ? device->plugin->name : NULL;
  if (!accel__engine_takes(engine, backend)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_comm_create: the %s engine serves %s devices; "
                       "set options.device to one (it is %s)",
                       engine->name, engine->desc.device_backends,
                       device != NULL ? device->uri : "NULL");
  }
  init->device_backend = backend;
  init->native_device = accel__plugin_physical(device->plugin, device->index);
  uint64_t handle = 0;
  // native_handle is an ABI 1.4 entry the core does not fill in.
  if (device->ops->native_handle != NULL &&
      device->ops->native_handle(device->impl, ACCEL_PLUGIN_NATIVE_DEVICE,
                                 NULL, &handle) == ACCEL_OK) {
    init->native_device = handle;
  }
  return ACCEL_OK;
}

// Wraps an engine communicator in a new handle.
static accel_status_t accel__comm_wrap(accel__engine_t* engine, void* impl,
                                       int32_t rank, int32_t size,
                                       double timeout_s,
                                       accel_device_t* device,
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
  comm->device = device;
  if (device != NULL) accel_device_retain(device);
  const char* staging = accel__getenv("ACCEL_COMM_STAGING");
  comm->stage_always = staging != NULL && strcmp(staging, "always") == 0;
  atomic_fetch_add(&engine->comms, 1);
  *out_comm = comm;
  return ACCEL_OK;
}

// Runs the engine's comm_create, with the rendezvous store open when the
// environment names one and the rank and size are known.
static accel_status_t accel__comm_form(accel__engine_t* engine,
                                       accel_comm_engine_init_t* init,
                                       void** impl, int32_t* rank,
                                       int32_t* size) {
  accel__store_t* state = NULL;
  accel_comm_store_t store;
  if (init->rank >= 0 && (init->address != NULL || init->file != NULL)) {
    accel_status_t status = accel__store_open(
        init->rank, init->size, init->address, init->port, init->file,
        init->timeout_s, &state, &store);
    if (status != ACCEL_OK) return status;
    init->store = &store;
  }
  accel_status_t status =
      engine->desc.comm_create(engine->state, init, impl, rank, size);
  init->store = NULL;
  accel__store_close(state);
  return status;
}

accel_status_t accel_comm_create(const accel_comm_options_t* options,
                                 accel_comm_t** out_comm) {
  if (out_comm != NULL) *out_comm = NULL;
  accel_comm_options_t o;
  accel_comm_options_init(&o);
  if (out_comm == NULL ||
      (options != NULL &&
       options->struct_size < ACCEL__COMM_OPTIONS_SIZE_0)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_comm_create: out_comm is NULL or options were "
                       "not initialised with accel_comm_options_init()");
  }
  if (options != NULL) {
    memcpy(&o, options,
           options->struct_size < sizeof(o) ? options->struct_size
                                            : sizeof(o));
  }
  accel_comm_engine_init_t init;
  accel_status_t status = accel__comm_init_args(&o, &init);
  if (status != ACCEL_OK) return status;
  accel__engine_t* engine = NULL;
  status = accel__engine_pick(
      o.engine, o.device != NULL ? o.device->plugin->name : NULL, &engine);
  if (status != ACCEL_OK) return status;
  accel_device_t* device = NULL;
  if (engine->desc.device_backends != NULL &&
      engine->desc.device_backends[0] != '\0') {
    status = accel__comm_bind_device(engine, o.device, &init);
    if (status != ACCEL_OK) return status;
    device = o.device;
  }
  void* impl = NULL;
  int32_t rank = -1, size = -1;
  status = accel__comm_form(engine, &init, &impl, &rank, &size);
  if (status != ACCEL_OK) {
    char reason[512];
    snprintf(reason, sizeof(reason), "%s", accel_last_error());
    return accel__fail(status, "accel_comm_create (%s): %s", engine->name,
                       reason);
  }
  accel__log(ACCEL_LOG_INFO, "communicator on %s: rank %d of %d",
             engine->name, (int)rank, (int)size);
  return accel__comm_wrap(engine, impl, rank, size, init.timeout_s, device,
                          out_comm);
}

void accel_comm_retain(accel_comm_t* comm) {
  if (comm != NULL) atomic_fetch_add(&comm->refs, 1);
}

void accel_comm_release(accel_comm_t* comm) {
  if (comm == NULL || atomic_fetch_sub(&comm->refs, 1) != 1) return;
  comm->engine->desc.comm_destroy(comm->impl);
  atomic_fetch_sub(&comm->engine->comms, 1);
  accel_device_release(comm->device);
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

accel_status_t accel__comm_enter(accel_comm_t* comm, const char* what) {
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

void accel__comm_break(accel_comm_t* comm, accel_status_t status,
                       const char* what, const char* reason) {
  if (comm->broken == ACCEL_OK) {
    comm->broken = status;
    snprintf(comm->broken_message, sizeof(comm->broken_message),
             "%s failed: %s", what, reason);
  }
  if (!comm->aborted && comm->engine->desc.comm_abort != NULL) {
    comm->aborted = true;
    comm->engine->desc.comm_abort(comm->impl);
  }
}

accel_status_t accel__comm_leave(accel_comm_t* comm, const char* what,
                                 accel_status_t status) {
  if (status == ACCEL_OK) {
    pthread_mutex_unlock(&comm->lock);
    return ACCEL_OK;
  }
  char reason[512];
  snprintf(reason, sizeof(reason), "%s", accel_last_error());
  if (status == ACCEL_ERROR_TIMEOUT || status == ACCEL_ERROR_DEVICE_LOST) {
    accel__comm_break(comm, status, what, reason);
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
                          comm->device, out_comm);
}

// ---------------------------------------------------------------------------
// The public calls: each describes itself for accel__comm_call.
// ---------------------------------------------------------------------------

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

// A call of `kind` with no operands yet.
static accel__call_t accel__call(const char* what, uint32_t kind,
                                 accel_comm_t* comm, accel_stream_t* stream,
                                 size_t count, accel_dtype_t dtype,
                                 accel_reduce_op_t op, int32_t peer) {
  accel__call_t c;
  memset(&c, 0, sizeof(c));
  c.what = what;
  c.kind = kind;
  c.comm = comm;
  c.stream = stream;
  c.count = count;
  c.dtype = dtype;
  c.op = op;
  c.peer = peer;
  c.n = 1;
  return c;
}

static accel__operand_t accel__operand(accel_buffer_t* buffer, size_t offset,
                                       size_t bytes, bool in, bool out) {
  return (accel__operand_t){buffer, offset, bytes, in, out, NULL, NULL};
}

// A send and a receive operand, or one read and written when they are the
// same region (in place).
static accel_status_t accel__call_two(accel__call_t* c, accel_buffer_t* send,
                                      size_t send_offset, size_t send_bytes,
                                      accel_buffer_t* recv,
                                      size_t recv_offset, size_t recv_bytes) {
  c->ops[0] = accel__operand(send, send_offset, send_bytes, true, false);
  if (send == recv && send_offset == recv_offset &&
      send_bytes == recv_bytes) {
    c->ops[0].out = true;
    return accel__comm_call(c);
  }
  c->ops[1] = accel__operand(recv, recv_offset, recv_bytes, false, true);
  c->n = 2;
  return accel__comm_call(c);
}

accel_status_t accel_comm_all_reduce(accel_comm_t* comm,
                                     accel_stream_t* stream,
                                     accel_buffer_t* send, size_t send_offset,
                                     accel_buffer_t* recv, size_t recv_offset,
                                     size_t count, accel_dtype_t dtype,
                                     accel_reduce_op_t op) {
  accel__call_t c =
      accel__call("accel_comm_all_reduce", ACCEL_COMM_ENGINE_ALL_REDUCE,
                  comm, stream, count, dtype, op, -1);
  size_t bytes = accel__bytes(count, dtype, 1);
  return accel__call_two(&c, send, send_offset, bytes, recv, recv_offset,
                         bytes);
}

accel_status_t accel_comm_broadcast(accel_comm_t* comm, accel_stream_t* stream,
                                    accel_buffer_t* buffer, size_t offset,
                                    size_t count, accel_dtype_t dtype,
                                    int32_t root) {
  accel__call_t c = accel__call(
      "accel_comm_broadcast", ACCEL_COMM_ENGINE_BROADCAST, comm, stream,
      count, dtype, ACCEL_REDUCE_SUM, root < 0 ? INT32_MIN : root);
  bool is_root = comm != NULL && comm->rank == root;
  c.ops[0] = accel__operand(buffer, offset, accel__bytes(count, dtype, 1),
                            is_root, !is_root);
  return accel__comm_call(&c);
}

accel_status_t accel_comm_reduce(accel_comm_t* comm, accel_stream_t* stream,
                                 accel_buffer_t* send, size_t send_offset,
                                 accel_buffer_t* recv, size_t recv_offset,
                                 size_t count, accel_dtype_t dtype,
                                 accel_reduce_op_t op, int32_t root) {
  accel__call_t c =
      accel__call("accel_comm_reduce", ACCEL_COMM_ENGINE_REDUCE, comm, stream,
                  count, dtype, op, root < 0 ? INT32_MIN : root);
  size_t bytes = accel__bytes(count, dtype, 1);
  if (comm == NULL || comm->rank != root) {
    // Only the root receives: elsewhere `recv` is ignored (may be NULL),
    // and the engine gets NULL for it.
    c.ops[0] = accel__operand(send, send_offset, bytes, true, false);
    c.ops[1] = accel__operand(NULL, 0, 0, false, false);
    c.n = 2;
    return accel__comm_call(&c);
  }
  return accel__call_two(&c, send, send_offset, bytes, recv, recv_offset,
                         bytes);
}

accel_status_t accel_comm_all_gather(accel_comm_t* comm,
                                     accel_stream_t* stream,
                                     accel_buffer_t* send, size_t send_offset,
                                     accel_buffer_t* recv, size_t recv_offset,
                                     size_t count, accel_dtype_t dtype) {
  accel__call_t c = accel__call("accel_comm_all_gather",
                                ACCEL_COMM_ENGINE_ALL_GATHER, comm, stream,
                                count, dtype, ACCEL_REDUCE_SUM, -1);
  c.ops[0] = accel__operand(send, send_offset, accel__bytes(count, dtype, 1),
                            true, false);
  c.ops[1] = accel__operand(recv, recv_offset,
                            accel__bytes(count, dtype, accel__ranks(comm)),
                            false, true);
  c.n = 2;
  return accel__comm_call(&c);
}

accel_status_t accel_comm_reduce_scatter(
    accel_comm_t* comm, accel_stream_t* stream, accel_buffer_t* send,
    size_t send_offset, accel_buffer_t* recv, size_t recv_offset,
    size_t count, accel_dtype_t dtype, accel_reduce_op_t op) {
  accel__call_t c = accel__call("accel_comm_reduce_scatter",
                                ACCEL_COMM_ENGINE_REDUCE_SCATTER, comm, stream,
                                count, dtype, op, -1);
  c.ops[0] = accel__operand(send, send_offset,
                            accel__bytes(count, dtype, accel__ranks(comm)),
                            true, false);
  c.ops[1] = accel__operand(recv, recv_offset, accel__bytes(count, dtype, 1),
                            false, true);
  c.n = 2;
  return accel__comm_call(&c);
}

accel_status_t accel_comm_all_to_all(accel_comm_t* comm,
                                     accel_stream_t* stream,
                                     accel_buffer_t* send, size_t send_offset,
                                     accel_buffer_t* recv, size_t recv_offset,
                                     size_t count, accel_dtype_t dtype) {
  accel__call_t c = accel__call("accel_comm_all_to_all",
                                ACCEL_COMM_ENGINE_ALL_TO_ALL, comm, stream,
                                count, dtype, ACCEL_REDUCE_SUM, -1);
  size_t bytes = accel__bytes(count, dtype, accel__ranks(comm));
  c.ops[0] = accel__operand(send, send_offset, bytes, true, false);
  c.ops[1] = accel__operand(recv, recv_offset, bytes, false, true);
  c.n = 2;
  return accel__comm_call(&c);
}

accel_status_t accel_comm_send(accel_comm_t* comm, accel_stream_t* stream,
                               accel_buffer_t* buffer, size_t offset,
                               size_t count, accel_dtype_t dtype,
                               int32_t peer) {
  accel__call_t c =
      accel__call("accel_comm_send", ACCEL_COMM_ENGINE_SEND, comm, stream,
                  count, dtype, ACCEL_REDUCE_SUM, peer < 0 ? INT32_MIN : peer);
  c.ops[0] = accel__operand(buffer, offset, accel__bytes(count, dtype, 1),
                            true, false);
  return accel__comm_call(&c);
}

accel_status_t accel_comm_recv(accel_comm_t* comm, accel_stream_t* stream,
                               accel_buffer_t* buffer, size_t offset,
                               size_t count, accel_dtype_t dtype,
                               int32_t peer) {
  accel__call_t c =
      accel__call("accel_comm_recv", ACCEL_COMM_ENGINE_RECV, comm, stream,
                  count, dtype, ACCEL_REDUCE_SUM, peer < 0 ? INT32_MIN : peer);
  c.ops[0] = accel__operand(buffer, offset, accel__bytes(count, dtype, 1),
                            false, true);
  return accel__comm_call(&c);
}
