// SPDX-License-Identifier: MIT
//
// accel communication-engine ABI: the contract between libaccel and a
// collectives engine (MPI, NCCL, RCCL). An engine is a shared object of its
// own kind, beside the device plugins, that exports exactly one symbol,
// `accel_comm_engine_entry`, and is built from this header and
// <accel/plugin.h> alone (it never links libaccel). The core finds engines
// in `ACCEL_COMM_ENGINE_PATH` and then in `${libdir}/accel/comm`, loads
// them with dlopen like device plugins, and records each in the engine
// load report (`accel-info` prints it).
//
// The rules of <accel/plugin.h> apply: the major version must match
// exactly, every table starts with `struct_size` and is append-only, and
// entries marked (optional) may be NULL.
//
// Memory: engine entries take host pointers. The core hands an engine the
// host address of a buffer when the device's memory is host-accessible
// (ACCEL_DEVICE_CAP_HOST_ACCESSIBLE: the CPU plugin), and stages any other
// buffer through pinned host memory, unless the engine declares it can
// take that backend's device addresses (`device_backends`; NCCL for cuda).
//
// Ordering: the core calls a collective entry after the work enqueued
// before it on the caller's stream has finished, and enqueues what uses
// the result after the entry returns. An entry returns when its part of
// the collective is complete. Entries are called from any thread, but the
// core serialises the calls on one communicator (MPI's own rule for a
// communicator used by several threads).
//
// Failure: an entry never blocks for ever. It gives up after `timeout_s`
// (from the communicator's options) with ACCEL_ERROR_TIMEOUT and a message
// naming the operation, the rank and what it waited for; a peer that
// disappeared is ACCEL_ERROR_DEVICE_LOST when the engine can tell. After a
// timeout or a lost peer the communicator is broken: the core fails every
// later call on it.
#ifndef ACCEL_COMM_ENGINE_H_
#define ACCEL_COMM_ENGINE_H_

#include <accel/plugin.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Major ABI version of this table. The core loads exact matches only.
#define ACCEL_COMM_ENGINE_ABI_VERSION 1u

// Name of the one exported symbol; pass it to dlsym().
#define ACCEL_COMM_ENGINE_ENTRY_NAME "accel_comm_engine_entry"

// Reduction operator. Values are stable and shared with <accel/accel.h>'s
// accel_reduce_op_t.
typedef enum accel_comm_engine_op {
  ACCEL_COMM_ENGINE_OP_SUM = 0,
  ACCEL_COMM_ENGINE_OP_PROD = 1,
  ACCEL_COMM_ENGINE_OP_MIN = 2,
  ACCEL_COMM_ENGINE_OP_MAX = 3,
  ACCEL_COMM_ENGINE_OP_MAX_ENUM = 0x7fffffff
} accel_comm_engine_op_t;

// How to form a communicator, as the core hands it to `comm_create`.
typedef struct accel_comm_engine_init {
  uint32_t struct_size;
  uint32_t reserved0;
  // An existing native communicator to duplicate (for MPI, a pointer to an
  // MPI_Comm), or NULL to form one from the fields below.
  const void* native_comm;
  // Rank and size the caller asked for, or -1 to take them from the
  // engine's own launcher (mpirun) or the rendezvous.
  int32_t rank;
  int32_t size;
  // Rendezvous (ACCEL_COMM_ADDR and ACCEL_COMM_PORT, or ACCEL_COMM_FILE),
  // or NULL/0 when the engine's launcher provides one.
  const char* address;
  uint32_t port;
  uint32_t reserved1;
  const char* file;
  // Longest any later entry on the communicator may block, in seconds.
  double timeout_s;
} accel_comm_engine_init_t;

// The engine descriptor, returned by accel_comm_engine_entry.
typedef struct accel_comm_engine {
  uint32_t abi_version;  // ACCEL_COMM_ENGINE_ABI_VERSION at build time
  uint32_t struct_size;  // sizeof(accel_comm_engine_t) at build time
  // -- since ABI 1.0 --
  const char* name;     // short id: "mpi", "nccl", "rccl"
  const char* version;  // the engine plugin's own version
  // Preference when several engines are usable: higher wins.
  int32_t priority;
  uint32_t reserved0;
  // Space-separated device backends whose device addresses the engine
  // takes directly ("cuda" for NCCL), or "" (host memory only).
  const char* device_backends;
  // Initialises the engine. Must not start the vendor library (that
  // happens at the first comm_create). Required.
  accel_status_t (*load)(const accel_host_t* host, void** out_engine);
  // Releases everything. Required.
  void (*unload)(void* engine);
  // Whether the engine can run here (its library is present), with the
  // reason as message when not: ACCEL_ERROR_UNAVAILABLE. May open the
  // vendor library. Required.
  accel_status_t (*probe)(void* engine);
  // Forms a communicator; sets its rank and size. Required.
  accel_status_t (*comm_create)(void* engine,
                                const accel_comm_engine_init_t* init,
                                void** out_comm, int32_t* out_rank,
                                int32_t* out_size);
  // Splits `comm` by `color` (ranks with equal colors form one new
  // communicator, ordered by `key`, then old rank). Collective. Required.
  accel_status_t (*comm_split)(void* comm, int32_t color, int32_t key,
                               void** out_comm, int32_t* out_rank,
                               int32_t* out_size);
  // Frees a communicator. Not collective. Required.
  void (*comm_destroy)(void* comm);
  // recv[i] = op over ranks of send[i], i < count, on every rank. `send`
  // may equal `recv` (in place). Required.
  accel_status_t (*all_reduce)(void* comm, const void* send, void* recv,
                               uint64_t count, uint32_t dtype, uint32_t op);
  // Copies `count` elements of `buffer` on `root` to every rank. Required.
  accel_status_t (*broadcast)(void* comm, void* buffer, uint64_t count,
                              uint32_t dtype, int32_t root);
  // Like all_reduce, but only `root` receives; `recv` is NULL elsewhere.
  // Required.
  accel_status_t (*reduce)(void* comm, const void* send, void* recv,
                           uint64_t count, uint32_t dtype, uint32_t op,
                           int32_t root);
  // recv[r * count + i] = send of rank r [i]. Required.
  accel_status_t (*all_gather)(void* comm, const void* send, void* recv,
                               uint64_t count, uint32_t dtype);
  // recv[i] = op over ranks of send[rank * count + i]. Required.
  accel_status_t (*reduce_scatter)(void* comm, const void* send, void* recv,
                                   uint64_t count, uint32_t dtype,
                                   uint32_t op);
  // recv[r * count + i] = send of rank r [rank * count + i]. Required.
  accel_status_t (*all_to_all)(void* comm, const void* send, void* recv,
                               uint64_t count, uint32_t dtype);
  // Point to point. A send completes when its buffer may be reused; a
  // receive when the data is there. Required.
  accel_status_t (*send)(void* comm, const void* buffer, uint64_t count,
                         uint32_t dtype, int32_t peer);
  accel_status_t (*recv)(void* comm, void* buffer, uint64_t count,
                         uint32_t dtype, int32_t peer);
} accel_comm_engine_t;

// Type of the exported entry. Returns a descriptor in static storage, or
// NULL when the engine cannot serve `host_abi`.
typedef const accel_comm_engine_t* (*accel_comm_engine_entry_fn_t)(
    uint32_t host_abi);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ACCEL_COMM_ENGINE_H_
