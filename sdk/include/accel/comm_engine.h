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
// Memory: engine entries take host pointers, except that an engine which
// names a device backend in `device_backends` (NCCL: "cuda") is handed
// that backend's device addresses, with the native stream to order them
// on (`call_start`). The core hands other engines the host address of a
// buffer when the device's memory is host-accessible
// (ACCEL_DEVICE_CAP_HOST_ACCESSIBLE: the CPU plugin), and stages any other
// buffer through pinned host memory.
//
// Ordering: the core calls a blocking collective entry after the work
// enqueued before it on the caller's stream has finished, and enqueues
// what uses the result after the entry returns. An entry returns when its
// part of the collective is complete. With `call_start` (engine ABI 1.1)
// the core starts calls and polls them with `request_test` itself. Entries
// are called from any thread, but the core serialises the calls on one
// communicator (MPI's own rule for a communicator used by several
// threads); the calls of one group (accel_comm_group_start) are started
// one after another by one thread, and may span several communicators.
//
// Failure: an entry never blocks for ever. A blocking entry gives up after
// `timeout_s` (from the communicator's options) with ACCEL_ERROR_TIMEOUT
// and a message naming the operation, the rank and what it waited for; the
// core applies the same limit to requests from `call_start`. A peer that
// disappeared is ACCEL_ERROR_DEVICE_LOST when the engine can tell. After a
// timeout or a lost peer the communicator is broken: the core calls
// `comm_abort` (when there is one) and fails every later call on it.
#ifndef ACCEL_COMM_ENGINE_H_
#define ACCEL_COMM_ENGINE_H_

#include <accel/plugin.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Major ABI version of this table. The core loads exact matches only;
// minor versions append entries ("since engine ABI 1.1"), and the core
// reads an engine's `struct_size` to know which it has.
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
  // -- since engine ABI 1.1 (read only when struct_size covers them) --
  // The device the communicator serves, for an engine that takes device
  // addresses (`device_backends`): its backend ("cuda", "rocm") and native
  // device (the CUDA or HIP device ordinal). NULL and 0 otherwise.
  const char* device_backend;
  uint64_t native_device;
  // The rendezvous when ACCEL_COMM_ADDR and ACCEL_COMM_PORT, or
  // ACCEL_COMM_FILE, are set (with `rank` and `size`), for exchanging what
  // the engine needs to form a communicator (an ncclUniqueId, an MPI port
  // name). Valid only during comm_create; NULL without a rendezvous.
  const struct accel_comm_store* store;
} accel_comm_engine_init_t;

// The core's rendezvous store (engine ABI 1.1), lent to comm_create. Its
// calls are collective over the `size` ranks of the rendezvous, in the
// same order on every rank, and give up after the communicator's timeout
// with ACCEL_ERROR_TIMEOUT and a message naming the ranks that did not
// show up.
typedef struct accel_comm_store {
  uint32_t struct_size;
  uint32_t reserved0;
  void* state;  // the core's; pass the store itself to the calls
  // Copies `size` bytes at `data` on rank `root` to `data` on every rank.
  // `size` must be the same on every rank (at most 1 MiB).
  accel_status_t (*broadcast)(const struct accel_comm_store* store,
                              void* data, size_t size, int32_t root);
  // out[r * size ...] = rank r's `size` bytes at `data`, for every rank r;
  // `out` holds size * ranks bytes. The same `size` on every rank.
  accel_status_t (*all_gather)(const struct accel_comm_store* store,
                               const void* data, size_t size, void* out);
} accel_comm_store_t;

// What a call asks of the engine (engine ABI 1.1, `call_start`).
typedef enum accel_comm_engine_kind {
  ACCEL_COMM_ENGINE_ALL_REDUCE = 0,
  ACCEL_COMM_ENGINE_BROADCAST = 1,
  ACCEL_COMM_ENGINE_REDUCE = 2,
  ACCEL_COMM_ENGINE_ALL_GATHER = 3,
  ACCEL_COMM_ENGINE_REDUCE_SCATTER = 4,
  ACCEL_COMM_ENGINE_ALL_TO_ALL = 5,
  ACCEL_COMM_ENGINE_SEND = 6,
  ACCEL_COMM_ENGINE_RECV = 7,
  ACCEL_COMM_ENGINE_KIND_MAX_ENUM = 0x7fffffff
} accel_comm_engine_kind_t;

// One call for `call_start`, with the operands of the blocking entry of
// the same kind: `send` is what the call reads and `recv` what it writes
// (both the buffer for broadcast, equal for in-place calls; `recv` NULL on
// the non-root ranks of reduce; `send` NULL for recv and `recv` NULL for
// send).
typedef struct accel_comm_engine_call {
  uint32_t struct_size;
  uint32_t kind;  // accel_comm_engine_kind_t
  void* comm;     // the engine's communicator
  const void* send;
  void* recv;
  uint64_t count;
  uint32_t dtype;  // accel_dtype_t
  uint32_t op;     // accel_comm_engine_op_t
  int32_t peer;    // root, or the peer of send and recv; -1 otherwise
  uint32_t reserved0;
  // For an engine that takes device addresses: the native stream
  // (CUstream, hipStream_t) to enqueue the call on, or 0 when the device
  // plugin gives none; the core has then waited for the accel stream, and
  // the engine enqueues on the legacy default stream. 0 for host memory.
  uint64_t stream;
} accel_comm_engine_call_t;

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

  // -- since engine ABI 1.1 --
  // (optional) Starts `call` and returns without waiting for it, setting
  // `*out_request` to a request that request_test completes. The operands
  // stay untouched by the core until then. A failure to start returns the
  // error and no request. NULL: the core runs the blocking entries above,
  // one after another, and a group of calls that wait on each other (a
  // ring of sends and receives) then times out.
  accel_status_t (*call_start)(void* comm,
                               const accel_comm_engine_call_t* call,
                               void** out_request);
  // (optional; required with call_start) Checks `request` without
  // blocking: sets `*out_done` to 1 when it is complete (the engine then
  // frees it) and to 0 when it is not. A failure (ACCEL_ERROR_DEVICE_LOST
  // for a peer the engine reports lost, ACCEL_ERROR_BACKEND) also frees
  // it. The core calls it until done or the communicator's timeout.
  accel_status_t (*request_test)(void* request, int32_t* out_done);
  // (optional; required with call_start) Gives up an unfinished request
  // (its group failed, or the timeout passed) and frees what the engine
  // can; the core then breaks the communicator.
  void (*request_abandon)(void* request);
  // (optional) Brackets the call_start calls of a group made by the
  // calling thread, as ncclGroupStart and ncclGroupEnd: the engine may
  // hold them back until group_end and start them together there. NULL:
  // no bracket (call_start starts each call at once, as MPI's non-blocking
  // calls do, which is enough for calls that wait on each other). Set
  // both or neither.
  accel_status_t (*group_start)(void* engine);
  accel_status_t (*group_end)(void* engine);
  // (optional) Aborts `comm` after a timeout or a lost peer so that work
  // in flight stops waiting for its peers (ncclCommAbort). Afterwards the
  // core calls only comm_destroy. NULL: nothing to abort.
  void (*comm_abort)(void* comm);
} accel_comm_engine_t;

// Type of the exported entry. Returns a descriptor in static storage, or
// NULL when the engine cannot serve `host_abi`.
typedef const accel_comm_engine_t* (*accel_comm_engine_entry_fn_t)(
    uint32_t host_abi);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ACCEL_COMM_ENGINE_H_
