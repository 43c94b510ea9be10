// SPDX-License-Identifier: MIT
//
// accel collectives: communicators across processes and machines, on an
// existing engine (MPI everywhere, NCCL on CUDA devices, RCCL on ROCm
// devices). Part of <accel/accel.h>, which includes it; it may also be
// included on its own. The conventions at the top of <accel/accel.h> hold.
// See docs/collectives.md.
#ifndef ACCEL_COMM_H_
#define ACCEL_COMM_H_

#include <accel/accel.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// ===========================================================================
// Collectives. An engine is a plugin of its own kind
// (<accel/comm_engine.h>), found in ACCEL_COMM_ENGINE_PATH and then in the
// "comm" folder beside the device plugins, and picked by ACCEL_COMM_ENGINE
// ("mpi", "nccl", "rccl"; "auto", the default, takes the usable engine of
// highest priority that can serve the communicator's device).
//
// Every collective is ordered on `stream`: it starts after the work
// enqueued on `stream` before the call, and work enqueued after the call
// sees its result. The call returns when this rank's part is complete.
// Buffers are on `stream`'s device. An engine bound to a device (NCCL,
// RCCL) takes that device's memory directly, on the stream's own native
// stream; for the others (MPI), memory that the host can address
// (ACCEL_DEVICE_CAP_HOST_ACCESSIBLE) goes to the engine directly and other
// buffers are staged through pinned host memory. Calls on one communicator
// are serialised; every rank must make the same collective calls in the
// same order, as with MPI.
//
// Failures name the operation, the rank and the engine. No call blocks for
// ever: one that does not complete within the communicator's timeout
// returns ACCEL_ERROR_TIMEOUT (a peer died or stopped calling), a peer the
// engine reports lost gives ACCEL_ERROR_DEVICE_LOST, and the communicator
// is then broken: every later call on it fails with the original reason.
// ===========================================================================

typedef struct accel_comm accel_comm_t;

// Reduction operators. Values are stable.
typedef enum accel_reduce_op {
  ACCEL_REDUCE_SUM = 0,
  ACCEL_REDUCE_PROD = 1,
  ACCEL_REDUCE_MIN = 2,
  ACCEL_REDUCE_MAX = 3,
  ACCEL_REDUCE_OP_MAX_ENUM = 0x7fffffff
} accel_reduce_op_t;

// How accel_comm_create() forms a communicator. Fill with
// accel_comm_options_init() and change what you need.
typedef struct accel_comm_options {
  uint32_t struct_size;  // set by accel_comm_options_init()
  // Engine name ("mpi", "nccl", "rccl"), or NULL for ACCEL_COMM_ENGINE
  // (default "auto").
  const char* engine;
  // An existing native communicator to duplicate: for MPI a pointer to an
  // MPI_Comm. NULL forms one from the launcher (mpirun sets rank and size)
  // or the rendezvous: ACCEL_COMM_RANK, ACCEL_COMM_SIZE and either
  // ACCEL_COMM_ADDR and ACCEL_COMM_PORT (rank 0's address) or
  // ACCEL_COMM_FILE (a file on storage every rank shares).
  const void* native_comm;
  // Rank and size, or -1 for ACCEL_COMM_RANK / ACCEL_COMM_SIZE or the
  // engine's launcher.
  int32_t rank;
  int32_t size;
  // Longest a call may block, in seconds; 0 for ACCEL_COMM_TIMEOUT or 300.
  double timeout_s;
  // The device whose buffers the communicator moves, for engines bound to
  // one device (NCCL on cuda, RCCL on rocm): their collectives then take
  // only this device's buffers and streams. NULL (the default) leaves only
  // the host-driven engines (MPI), which take buffers of any device. The
  // communicator holds a reference to the device.
  accel_device_t* device;
} accel_comm_options_t;

// Fills `options` with the defaults. NULL is ignored.
ACCEL_API void accel_comm_options_init(accel_comm_options_t* options);

// Creates a communicator (collective: every rank calls it). `options` may
// be NULL for the defaults. On success `*out_comm` holds one reference.
// ACCEL_ERROR_INVALID_ARGUMENT for a bad option, ACCEL_ERROR_NOT_FOUND or
// ACCEL_ERROR_UNAVAILABLE when no engine can be used (the message gives
// each engine's reason), ACCEL_ERROR_TIMEOUT when a rank did not join the
// rendezvous within the timeout (the message names the missing ranks),
// the engine's error otherwise.
ACCEL_API accel_status_t accel_comm_create(const accel_comm_options_t* options,
                                           accel_comm_t** out_comm);

// Splits `comm` (collective): ranks passing the same `color` (>= 0) form
// one new communicator, ordered by `key` and then by their old rank.
ACCEL_API accel_status_t accel_comm_split(accel_comm_t* comm, int32_t color,
                                          int32_t key,
                                          accel_comm_t** out_comm);

// Adds a reference. NULL is ignored.
ACCEL_API void accel_comm_retain(accel_comm_t* comm);

// Drops a reference; the last one frees the communicator (not
// collective). NULL is ignored.
ACCEL_API void accel_comm_release(accel_comm_t* comm);

// This process's rank and the number of ranks; -1 for NULL.
ACCEL_API int32_t accel_comm_rank(const accel_comm_t* comm);
ACCEL_API int32_t accel_comm_size(const accel_comm_t* comm);

// Name of the engine ("mpi"); "" for NULL. Static storage.
ACCEL_API const char* accel_comm_engine(const accel_comm_t* comm);

// recv[i] = `op` over all ranks of send[i], for i < `count` elements of
// `dtype` at the given byte offsets. `send` may be `recv` at the same
// offset (in place). f16 and bf16 are combined in f32 and rounded once per
// step.
ACCEL_API accel_status_t accel_comm_all_reduce(
    accel_comm_t* comm, accel_stream_t* stream, accel_buffer_t* send,
    size_t send_offset, accel_buffer_t* recv, size_t recv_offset,
    size_t count, accel_dtype_t dtype, accel_reduce_op_t op);

// Copies `count` elements at `offset` of `buffer` on rank `root` into the
// same place on every other rank.
ACCEL_API accel_status_t accel_comm_broadcast(accel_comm_t* comm,
                                              accel_stream_t* stream,
                                              accel_buffer_t* buffer,
                                              size_t offset, size_t count,
                                              accel_dtype_t dtype,
                                              int32_t root);

// Like accel_comm_all_reduce, but only `root` receives; `recv` may be
// NULL on the other ranks.
ACCEL_API accel_status_t accel_comm_reduce(
    accel_comm_t* comm, accel_stream_t* stream, accel_buffer_t* send,
    size_t send_offset, accel_buffer_t* recv, size_t recv_offset,
    size_t count, accel_dtype_t dtype, accel_reduce_op_t op, int32_t root);

// Every rank's `count` elements of `send`, in rank order, into `recv`
// (which holds size * count elements).
ACCEL_API accel_status_t accel_comm_all_gather(
    accel_comm_t* comm, accel_stream_t* stream, accel_buffer_t* send,
    size_t send_offset, accel_buffer_t* recv, size_t recv_offset,
    size_t count, accel_dtype_t dtype);

// `send` holds size * count elements; rank r receives in `recv` the
// reduction over ranks of block r.
ACCEL_API accel_status_t accel_comm_reduce_scatter(
    accel_comm_t* comm, accel_stream_t* stream, accel_buffer_t* send,
    size_t send_offset, accel_buffer_t* recv, size_t recv_offset,
    size_t count, accel_dtype_t dtype, accel_reduce_op_t op);

// `send` and `recv` hold size * count elements: block r of `send` goes to
// rank r, and block r of `recv` comes from rank r.
ACCEL_API accel_status_t accel_comm_all_to_all(
    accel_comm_t* comm, accel_stream_t* stream, accel_buffer_t* send,
    size_t send_offset, accel_buffer_t* recv, size_t recv_offset,
    size_t count, accel_dtype_t dtype);

// Point to point: sends `count` elements to rank `peer`, which receives
// them with accel_comm_recv. Messages between two ranks arrive in order.
// A send and a receive that wait on each other (every rank of a ring
// sending to the next, then receiving from the previous) must be in one
// group (accel_comm_group_start).
ACCEL_API accel_status_t accel_comm_send(accel_comm_t* comm,
                                         accel_stream_t* stream,
                                         accel_buffer_t* buffer, size_t offset,
                                         size_t count, accel_dtype_t dtype,
                                         int32_t peer);
ACCEL_API accel_status_t accel_comm_recv(accel_comm_t* comm,
                                         accel_stream_t* stream,
                                         accel_buffer_t* buffer, size_t offset,
                                         size_t count, accel_dtype_t dtype,
                                         int32_t peer);

// ---------------------------------------------------------------------------
// Group calls (as ncclGroupStart and ncclGroupEnd).
// ---------------------------------------------------------------------------

// Starts a group on the calling thread. Until the matching
// accel_comm_group_end(), the collectives and point-to-point calls this
// thread makes are checked (a bad argument still fails at once) but not
// run: they return ACCEL_OK and are run together by accel_comm_group_end.
// Groups nest; only the outermost end runs the calls. A grouped call
// holds references to its communicator, stream and buffers until then.
// accel_comm_create, _split and _release are not deferred.
ACCEL_API accel_status_t accel_comm_group_start(void);

// Ends a group. At the outermost end, the calls of the group start
// together, each after the work enqueued on its stream before this call,
// and this call returns once all are complete; work enqueued afterwards
// sees their results. The calls may use several communicators of one
// engine (ACCEL_ERROR_INVALID_ARGUMENT if they mix engines; nothing then
// runs). Returns the first failure, naming the call; a timeout or a lost
// peer breaks the communicators involved. ACCEL_ERROR_INVALID_ARGUMENT
// without a matching accel_comm_group_start().
ACCEL_API accel_status_t accel_comm_group_end(void);

// ---------------------------------------------------------------------------
// Engine load report.
// ---------------------------------------------------------------------------

// The collectives engines found, in the shape of the plugin load report:
// path, stage reached, status and message, name and version. Initialises
// the library. Same errors as accel_plugin_report_count/_get.
ACCEL_API accel_status_t accel_comm_engine_report_count(size_t* out_count);
ACCEL_API accel_status_t
accel_comm_engine_report_get(size_t index, accel_plugin_report_t* out_report);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ACCEL_COMM_H_
