// SPDX-License-Identifier: MIT
//
// Internal interface of the NCCL and RCCL collectives engines
// (libaccel-comm-nccl.so, libaccel-comm-rccl.so): one source, built twice.
// RCCL keeps NCCL's API (the same names, types and enum values, with a
// hipStream_t where NCCL takes a cudaStream_t), so the engines differ only
// in the libraries they open and in the GPU runtime calls around the
// collectives: the CUDA driver (primary context, events) for NCCL, the
// HIP runtime (device, events) for RCCL. ACCEL_NCCL_HIP selects RCCL.
//
// Neither library is linked: libnccl.so.2 or librccl.so.1 and the GPU
// runtime are opened at the first probe and their functions resolved with
// dlsym, so the engines build without nccl.h, cuda.h or hip headers. The
// few NCCL declarations used are below, from NCCL's stable C ABI (nccl.h
// of NCCL 2.x; RCCL's rccl.h declares the same).
//
// Files: plugin.c (descriptor, load/unload/probe), lib.c (opening NCCL
// and the GPU runtime), init.c (forming and splitting communicators,
// bounded by the timeout), comm.c (the GPU runtime around NCCL calls,
// calls and their requests).
#ifndef ACCEL_PLUGINS_NCCL_ACCEL_NCCL_H_
#define ACCEL_PLUGINS_NCCL_ACCEL_NCCL_H_

#include <accel/comm_engine.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#ifndef ACCEL_NCCL_VERSION
#define ACCEL_NCCL_VERSION "0.2.0"
#endif

#ifdef ACCEL_NCCL_HIP
#define ACCEL_NCCL_NAME "rccl"
#define ACCEL_NCCL_BACKEND "rocm"
#define ACCEL_NCCL_LIBRARY "librccl.so.1"
#define ACCEL_NCCL_LIBRARY_ENV "ACCEL_COMM_RCCL_LIBRARY"
#else
#define ACCEL_NCCL_NAME "nccl"
#define ACCEL_NCCL_BACKEND "cuda"
#define ACCEL_NCCL_LIBRARY "libnccl.so.2"
#define ACCEL_NCCL_LIBRARY_ENV "ACCEL_COMM_NCCL_LIBRARY"
#endif

// --- NCCL's C ABI (nccl.h) ---------------------------------------------------
typedef struct ncclComm* ncclComm_t;
#define ACCEL_NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[ACCEL_NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;
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
typedef void* accel_nccl_stream_t;  // cudaStream_t, hipStream_t

// ncclConfig_t as NCCL 2.18 declares it (ncclConfig_v21700 and
// splitShare; RCCL's is the same). NCCL copies min(size, its own sizeof)
// bytes, keeps its defaults for fields newer than `version`, and reads
// NCCL_CONFIG_UNDEF_INT (INT_MIN) or NULL as "the default". NCCL 2.14 to
// 2.16 read `blocking` only.
#define ACCEL_NCCL_CONFIG_MAGIC 0xcafebeefu    // NCCL_API_MAGIC
#define ACCEL_NCCL_CONFIG_VERSION 21800u       // NCCL_VERSION(2, 18, 0)
#define ACCEL_NCCL_CONFIG_UNDEF_INT INT_MIN    // NCCL_CONFIG_UNDEF_INT
typedef struct {
  size_t size;
  unsigned int magic;
  unsigned int version;
  int blocking;  // 0: calls return ncclInProgress and finish in the back
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
} ncclConfig_t;

// Every NCCL function the engine calls: X(name, return, parameters).
// ncclCommSplit (NCCL 2.18), ncclGetLastError (2.13) and
// ncclCommInitRankConfig (2.14) may be missing.
#define ACCEL_NCCL_FUNCS(X)                                                  \
  X(ncclGetVersion, ncclResult_t, (int*))                                    \
  X(ncclGetUniqueId, ncclResult_t, (ncclUniqueId*))                          \
  X(ncclCommInitRank, ncclResult_t, (ncclComm_t*, int, ncclUniqueId, int))  \
  X(ncclCommDestroy, ncclResult_t, (ncclComm_t))                             \
  X(ncclCommAbort, ncclResult_t, (ncclComm_t))                               \
  X(ncclCommCount, ncclResult_t, (ncclComm_t, int*))                         \
  X(ncclCommUserRank, ncclResult_t, (ncclComm_t, int*))                      \
  X(ncclCommGetAsyncError, ncclResult_t, (ncclComm_t, ncclResult_t*))       \
  X(ncclGetErrorString, const char*, (ncclResult_t))                         \
  X(ncclAllReduce, ncclResult_t,                                             \
    (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,    \
     accel_nccl_stream_t))                                                   \
  X(ncclBroadcast, ncclResult_t,                                             \
    (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t,            \
     accel_nccl_stream_t))                                                   \
  X(ncclReduce, ncclResult_t,                                                \
    (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int,           \
     ncclComm_t, accel_nccl_stream_t))                                       \
  X(ncclAllGather, ncclResult_t,                                             \
    (const void*, void*, size_t, ncclDataType_t, ncclComm_t,                 \
     accel_nccl_stream_t))                                                   \
  X(ncclReduceScatter, ncclResult_t,                                         \
    (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,    \
     accel_nccl_stream_t))                                                   \
  X(ncclSend, ncclResult_t,                                                  \
    (const void*, size_t, ncclDataType_t, int, ncclComm_t,                   \
     accel_nccl_stream_t))                                                   \
  X(ncclRecv, ncclResult_t,                                                  \
    (void*, size_t, ncclDataType_t, int, ncclComm_t, accel_nccl_stream_t))   \
  X(ncclGroupStart, ncclResult_t, (void))                                    \
  X(ncclGroupEnd, ncclResult_t, (void))

#define ACCEL_NCCL_OPTIONAL_FUNCS(X)                                   \
  X(ncclCommSplit, ncclResult_t,                                       \
    (ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*))                \
  X(ncclGetLastError, const char*, (ncclComm_t))                       \
  X(ncclCommInitRankConfig, ncclResult_t,                              \
    (ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*))

// --- The GPU runtime calls around the collectives ------------------------
// CUDA driver: X(name, symbol, return, parameters), with the versioned
// symbols the driver exports. HIP: the runtime's own names.
#ifdef ACCEL_NCCL_HIP
#define ACCEL_NCCL_GPU_FUNCS(X)                                     \
  X(hipGetDevice, "hipGetDevice", int, (int*))                      \
  X(hipSetDevice, "hipSetDevice", int, (int))                       \
  X(hipEventCreateWithFlags, "hipEventCreateWithFlags", int,        \
    (void**, unsigned))                                             \
  X(hipEventRecord, "hipEventRecord", int, (void*, void*))          \
  X(hipEventQuery, "hipEventQuery", int, (void*))                   \
  X(hipEventDestroy, "hipEventDestroy", int, (void*))
#else
#define ACCEL_NCCL_GPU_FUNCS(X)                                        \
  X(cuInit, "cuInit", int, (unsigned))                                 \
  X(cuDeviceGet, "cuDeviceGet", int, (int*, int))                      \
  X(cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", int,         \
    (void**, int))                                                     \
  X(cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", int,    \
    (int))                                                             \
  X(cuCtxPushCurrent, "cuCtxPushCurrent_v2", int, (void*))             \
  X(cuCtxPopCurrent, "cuCtxPopCurrent_v2", int, (void**))              \
  X(cuEventCreate, "cuEventCreate", int, (void**, unsigned))           \
  X(cuEventRecord, "cuEventRecord", int, (void*, void*))               \
  X(cuEventQuery, "cuEventQuery", int, (void*))                        \
  X(cuEventDestroy, "cuEventDestroy_v2", int, (void*))
#endif

typedef struct accel_nccl_lib {
#define ACCEL_NCCL_FN(name, ret, params) ret(*name) params;
  ACCEL_NCCL_FUNCS(ACCEL_NCCL_FN)
  ACCEL_NCCL_OPTIONAL_FUNCS(ACCEL_NCCL_FN)
#undef ACCEL_NCCL_FN
#define ACCEL_NCCL_GPU_FN(name, symbol, ret, params) ret(*name) params;
  ACCEL_NCCL_GPU_FUNCS(ACCEL_NCCL_GPU_FN)
#undef ACCEL_NCCL_GPU_FN
} accel_nccl_lib_t;

typedef struct accel_nccl_engine {
  const accel_host_t* host;
  pthread_mutex_t mutex;  // guards starting the libraries
  bool tried;
  accel_status_t status;  // of opening the libraries
  char error[512];
  void* dl;      // NCCL or RCCL
  void* gpu_dl;  // the CUDA driver or the HIP runtime
  int version;   // ncclGetVersion
  accel_nccl_lib_t nccl;
} accel_nccl_engine_t;

// One communicator of the engine.
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

// Opens the libraries once; later calls give the same answer (lib.c).
accel_status_t accel_nccl_start(accel_nccl_engine_t* engine);
// Closes what accel_nccl_start opened (lib.c).
void accel_nccl_stop(accel_nccl_engine_t* engine);

// Records "<engine> on rank R of N: <message>" and returns `status`
// (comm.c).
accel_status_t accel_nccl_fail(accel_nccl_comm_t* c, accel_status_t status,
                               const char* format, ...)
    __attribute__((format(printf, 3, 4)));
// An NCCL result `r` of `what` as a failure, with NCCL's last error
// (comm.c).
accel_status_t accel_nccl_result(accel_nccl_comm_t* c, const char* what,
                                 ncclResult_t r);
// Makes `c`'s device current; accel_nccl_leave restores `saved` (comm.c).
bool accel_nccl_enter(accel_nccl_comm_t* c, int* saved);
void accel_nccl_leave(accel_nccl_comm_t* c, int saved);
// Retains the device's primary context (CUDA) for a new communicator;
// accel_nccl_unbind releases it and frees `c` (comm.c).
accel_status_t accel_nccl_bind(accel_nccl_comm_t* c);
void accel_nccl_unbind(accel_nccl_comm_t* c);
// Waits until `comm`'s state (ncclCommGetAsyncError) is no longer
// ncclInProgress, at most `c->timeout_s`: ACCEL_OK once it is
// ncclSuccess, ACCEL_ERROR_TIMEOUT naming `what` and the seconds waited,
// or NCCL's error. Aborts nothing (init.c).
accel_status_t accel_nccl_settle(accel_nccl_comm_t* c, ncclComm_t comm,
                                 const char* what);

// Engine ABI entries (init.c: create and split; comm.c: the others).
accel_status_t accel_nccl_comm_create(void* engine,
                                      const accel_comm_engine_init_t* init,
                                      void** out_comm, int32_t* out_rank,
                                      int32_t* out_size);
accel_status_t accel_nccl_comm_split(void* comm, int32_t color, int32_t key,
                                     void** out_comm, int32_t* out_rank,
                                     int32_t* out_size);
void accel_nccl_comm_destroy(void* comm);
void accel_nccl_comm_abort(void* comm);
accel_status_t accel_nccl_call_start(void* comm,
                                     const accel_comm_engine_call_t* call,
                                     void** out_request);
accel_status_t accel_nccl_request_test(void* request, int32_t* out_done);
void accel_nccl_request_abandon(void* request);
accel_status_t accel_nccl_group_start(void* engine);
accel_status_t accel_nccl_group_end(void* engine);

// The blocking entries of engine ABI 1.0: a call on the legacy default
// stream, waited for until the timeout (comm.c).
accel_status_t accel_nccl_all_reduce(void* comm, const void* send, void* recv,
                                     uint64_t count, uint32_t dtype,
                                     uint32_t op);
accel_status_t accel_nccl_broadcast(void* comm, void* buffer, uint64_t count,
                                    uint32_t dtype, int32_t root);
accel_status_t accel_nccl_reduce(void* comm, const void* send, void* recv,
                                 uint64_t count, uint32_t dtype, uint32_t op,
                                 int32_t root);
accel_status_t accel_nccl_all_gather(void* comm, const void* send, void* recv,
                                     uint64_t count, uint32_t dtype);
accel_status_t accel_nccl_reduce_scatter(void* comm, const void* send,
                                         void* recv, uint64_t count,
                                         uint32_t dtype, uint32_t op);
accel_status_t accel_nccl_all_to_all(void* comm, const void* send, void* recv,
                                     uint64_t count, uint32_t dtype);
accel_status_t accel_nccl_send(void* comm, const void* buffer, uint64_t count,
                               uint32_t dtype, int32_t peer);
accel_status_t accel_nccl_recv(void* comm, void* buffer, uint64_t count,
                               uint32_t dtype, int32_t peer);

#endif  // ACCEL_PLUGINS_NCCL_ACCEL_NCCL_H_
