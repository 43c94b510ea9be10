// SPDX-License-Identifier: MIT
//
// Core-internal declarations of the collectives: communicators (comm.c),
// running calls and groups (comm_call.c), engines (comm_engine.c) and the
// rendezvous store (comm_store.c).
#ifndef ACCEL_CORE_COMM_INTERNAL_H_
#define ACCEL_CORE_COMM_INTERNAL_H_

#include <limits.h>

#include "accel/comm_engine.h"
#include "internal.h"

// One collectives engine candidate: its report entry and, once loaded, its
// validated descriptor. Lives until accel_shutdown().
typedef struct accel__engine {
  accel__host_t host;  // lent to the engine's load()
  char path[PATH_MAX];
  char source[PATH_MAX];
  bool from_env;  // found through ACCEL_COMM_ENGINE_PATH
  accel_plugin_stage_t stage;
  accel_status_t status;  // ACCEL_OK when usable
  char message[512];
  char name[32];
  char version[32];
  uint32_t abi_version;
  bool shadowed;  // an earlier engine has the same name
  void* dl;
  accel_comm_engine_t desc;  // zero-extended copy
  void* state;               // from load()
  bool loaded;               // load() succeeded; unload() owed
  bool probed;               // probe() ran (the engine's library opened)
  atomic_uint comms;         // live communicators
} accel__engine_t;

// Finds the engines (once) and picks `wanted` ("mpi", or NULL/"auto" for
// ACCEL_COMM_ENGINE, then the usable one of highest priority). Under
// "auto", an engine that takes device addresses is a candidate only for a
// `backend` it names ("cuda" for nccl); `backend` is NULL without a
// device. Fails with a message that gives each candidate's reason.
accel_status_t accel__engine_pick(const char* wanted, const char* backend,
                                  accel__engine_t** out_engine);

// Whether `e` takes the device addresses of `backend` (its
// device_backends names it).
bool accel__engine_takes(const accel__engine_t* e, const char* backend);

struct accel_comm {
  atomic_uint refs;
  accel__engine_t* engine;
  void* impl;
  int32_t rank;
  int32_t size;
  double timeout_s;
  // The device of an engine that takes its addresses (nccl), with a
  // reference; NULL for host-driven engines.
  accel_device_t* device;
  bool stage_always;      // ACCEL_COMM_STAGING=always (debugging)
  pthread_mutex_t lock;   // serialises calls; guards the fields below
  accel_status_t broken;  // ACCEL_OK while usable
  bool aborted;           // the engine's comm_abort ran
  char broken_message[640];
};

// ---------------------------------------------------------------------------
// Calls (comm_call.c)
// ---------------------------------------------------------------------------

// A buffer region of a call, and what the engine is handed for it.
typedef struct accel__operand {
  accel_buffer_t* buffer;
  size_t offset;
  size_t bytes;
  bool in;        // the engine reads it
  bool out;       // the engine writes it
  void* host;     // what the engine gets (host or device address)
  void* staging;  // pinned host memory when the buffer is not addressable
} accel__operand_t;

// One collective or point-to-point call: what the public function was
// asked. `ops[1]` is unused (NULL buffer, 0 bytes) for one-buffer calls,
// in-place calls and the non-root ranks of reduce.
typedef struct accel__call {
  const char* what;  // "accel_comm_all_reduce"
  uint32_t kind;     // accel_comm_engine_kind_t
  accel_dtype_t dtype;
  accel_reduce_op_t op;
  uint64_t count;
  int32_t peer;  // root or peer rank; -1 when none
  accel_comm_t* comm;
  accel_stream_t* stream;
  accel__operand_t ops[2];
  size_t n;  // operands in use: 1 or 2
} accel__call_t;

// Checks the call's arguments, then runs it, or records it when the
// calling thread is inside a group (accel_comm_group_start).
accel_status_t accel__comm_call(accel__call_t* call);

// Takes the communicator's lock unless it is broken; on failure the lock
// is not held and the original reason is the message (comm.c).
accel_status_t accel__comm_enter(accel_comm_t* comm, const char* what);
// Names the call in an engine failure; a timeout or a lost peer breaks the
// communicator (and aborts it in the engine). Called with the lock held;
// releases it (comm.c).
accel_status_t accel__comm_leave(accel_comm_t* comm, const char* what,
                                 accel_status_t status);
// Marks `comm` broken by `status` (TIMEOUT or DEVICE_LOST) with `reason`
// and aborts it in the engine, once. Caller holds the lock (comm.c).
void accel__comm_break(accel_comm_t* comm, accel_status_t status,
                       const char* what, const char* reason);

// Seconds on CLOCK_MONOTONIC.
double accel__comm_now(void);

// ---------------------------------------------------------------------------
// Rendezvous (comm_store.c)
// ---------------------------------------------------------------------------

typedef struct accel__store accel__store_t;

// Opens the rendezvous of `rank` of `size` at `address`:`port` (a TCP
// store served by rank 0) or at `file` (a file store on shared storage),
// for at most `timeout_s` per exchange. Fills `out_store` for an engine;
// the store lives until accel__store_close().
accel_status_t accel__store_open(int32_t rank, int32_t size,
                                 const char* address, uint32_t port,
                                 const char* file, double timeout_s,
                                 accel__store_t** out_state,
                                 accel_comm_store_t* out_store);
void accel__store_close(accel__store_t* store);

#endif  // ACCEL_CORE_COMM_INTERNAL_H_
