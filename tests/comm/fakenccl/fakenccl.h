// SPDX-License-Identifier: MIT
//
// Shared by the files of libfakenccl and libfakerccl (tests/comm/fakenccl):
// NCCL's C ABI as nccl.h declares it, the communicator, and the setup
// helpers fakenccl_init.c (ncclCommInitRank*) and fakenccl_run.c (calls,
// groups, split) use. See fakenccl.c.
#ifndef ACCEL_TESTS_COMM_FAKENCCL_FAKENCCL_H_
#define ACCEL_TESTS_COMM_FAKENCCL_FAKENCCL_H_

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef FAKENCCL_HIP
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hip_runtime_api.h>
#define FAKENCCL_NAME "fakerccl"
typedef hipStream_t fakenccl_stream_t;
#else
#include "fakecuda.h"
#define FAKENCCL_NAME "fakenccl"
typedef CUstream fakenccl_stream_t;
#endif

#define FAKENCCL_API __attribute__((visibility("default")))
#define FAKENCCL_MAGIC 0x4e434346u  // "FCCN"

// --- NCCL's C ABI, as nccl.h declares it --------------------------------------
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7
} ncclResult_t;
typedef enum { ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3 } ncclRedOp_t;
typedef enum {
  ncclInt32 = 2,
  ncclFloat16 = 6,
  ncclFloat32 = 7,
  ncclBfloat16 = 9
} ncclDataType_t;
typedef struct {
  char internal[128];
} ncclUniqueId;

// As NCCL 2.18's nccl.h declares it (ncclConfig_v21700 and splitShare).
#define FAKENCCL_CONFIG_MAGIC 0xcafebeefu  // NCCL_API_MAGIC
#define FAKENCCL_CONFIG_UNDEF_INT INT_MIN  // NCCL_CONFIG_UNDEF_INT
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
} ncclConfig_t;

struct fakenccl_deferred;

typedef struct ncclComm {
  int rank;
  int size;
  uint32_t addr;  // where its ranks listen (IPv4, network order)
  int* fds;  // [size]: the connection to each rank; -1 for this one
  atomic_int refs;       // the user's, and one per queued call
  // ncclResult_t: ncclSuccess, ncclInProgress (non-blocking: set-up or a
  // launch not finished), or the first failure.
  atomic_int async;
  atomic_bool failing;   // a failure is being recorded
  atomic_bool aborted;
  pthread_mutex_t lock;  // one call at a time on the connections
  char error[256];
  bool blocking;            // false: calls may return ncclInProgress
  atomic_bool setting_up;   // `setup` runs ncclCommInitRankConfig's set-up
                            // (or finished, not joined yet)
  pthread_t setup;
  // Guarded by fakenccl_defer_lock (fakenccl_defer.c): a launch held back
  // until the next ncclCommGetAsyncError, and a split's result to hand
  // over then.
  struct fakenccl_deferred* deferred;
  struct ncclComm** split_out;
  struct ncclComm* split_child;
#ifndef FAKENCCL_HIP
  CUcontext ctx;
#endif
} *ncclComm_t;

// What ncclGetUniqueId puts in the id.
typedef struct fakenccl_id {
  uint32_t magic;
  uint32_t nonce;
  uint32_t addr;  // IPv4, network order
  uint16_t port;  // network order
} fakenccl_id_t;

// One call of a batch (a call, or a group).
typedef struct fakenccl_op {
  int kind;  // fakenccl_kind
  const void* send;
  void* recv;
  size_t count;
  ncclDataType_t type;
  ncclRedOp_t op;
  int peer;  // root, or the peer of send and recv
  ncclComm_t comm;
} fakenccl_op_t;

enum fakenccl_kind {
  FAKENCCL_ALL_REDUCE,
  FAKENCCL_BROADCAST,
  FAKENCCL_REDUCE,
  FAKENCCL_ALL_GATHER,
  FAKENCCL_REDUCE_SCATTER,
  FAKENCCL_SEND,
  FAKENCCL_RECV
};

typedef struct fakenccl_batch {
  size_t count;
  fakenccl_op_t ops[];
} fakenccl_batch_t;

// fakenccl.c
double fakenccl_now(void);
// FAKENCCL_TIMEOUT, or 120 s.
double fakenccl_timeout(void);
// Records the first failure of `c`, for ncclCommGetAsyncError.
void fakenccl_fail(ncclComm_t c, ncclResult_t r, const char* format, ...)
    __attribute__((format(printf, 3, 4)));
// Makes the calling thread's socket waits below give up once `*stop` is
// set (an abort during a non-blocking set-up); NULL: never.
void fakenccl_stop_on(atomic_bool* stop);
// A listening socket on an ephemeral port of `addr` (network order).
int fakenccl_listen(uint32_t addr, uint16_t* port);
// A connection to `port` of `addr`, retried until `deadline`; -1 if none.
int fakenccl_connect(uint32_t addr, uint16_t port, double deadline);
// The next connection to `listen_fd` before `deadline`, or -1.
int fakenccl_accept(int listen_fd, double deadline);
// Moves all `size` bytes, blocking (setup only). False on failure.
bool fakenccl_io(int fd, void* data, size_t size, bool out, double deadline);
// Joins the full mesh of `c`'s ranks listening at `ports` of `addr`.
bool fakenccl_mesh(ncclComm_t c, int listen_fd, uint32_t addr,
                   const uint16_t* ports, double deadline);
// A communicator with no connections yet and one reference.
ncclComm_t fakenccl_comm_new(int rank, int size, uint32_t addr);
// Drops a reference; the last closes the connections and frees it.
void fakenccl_comm_unref(ncclComm_t c);
// Frees a communicator that never became live (a failed init or split).
void fakenccl_comm_discard(ncclComm_t c);
// Counts a communicator handed to the user as live (for the leak report);
// fakenccl_comm_dead when the user destroys or aborts it.
void fakenccl_comm_live(void);
void fakenccl_comm_dead(void);

// fakenccl_run.c
// Runs `ops` (one call, or a group) on `stream`: queued on the fakecuda
// stream, or after the fakehip stream's work in the caller.
ncclResult_t fakenccl_launch_now(const fakenccl_op_t* ops, size_t n,
                                 fakenccl_stream_t stream);

// fakenccl_defer.c
// Runs `ops` now (fakenccl_launch_now), or, if a communicator of theirs
// is non-blocking, holds them back and returns ncclInProgress.
ncclResult_t fakenccl_launch(const fakenccl_op_t* ops, size_t n,
                             fakenccl_stream_t stream);
// Hands `child` over to `*out` at the next ncclCommGetAsyncError on
// non-blocking `parent`, as NCCL does; returns ncclInProgress.
ncclResult_t fakenccl_defer_split(ncclComm_t parent, ncclComm_t* out,
                                  ncclComm_t child);
// Non-blocking `c`: launches what waits for ncclCommGetAsyncError and
// hands over a finished split, then sets `c` (and the launch's other
// communicators) back from ncclInProgress to ncclSuccess.
void fakenccl_settle(ncclComm_t c);
// Drops what `c` holds back (it is being destroyed or aborted).
void fakenccl_forget(ncclComm_t c);

// fakenccl_init.c
// Waits for a non-blocking set-up of `c` still running to end.
void fakenccl_setup_join(ncclComm_t c);

#endif  // ACCEL_TESTS_COMM_FAKENCCL_FAKENCCL_H_
