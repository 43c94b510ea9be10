// SPDX-License-Identifier: MIT
//
// Internal interface of the MPI collectives engine (libaccel-comm-mpi.so).
// The engine is built against Open MPI's <mpi.h> but links no MPI library:
// libmpi.so.40 is opened at the first probe (lib.c), its functions resolved
// with dlsym and its predefined handles (MPI_COMM_WORLD, MPI_FLOAT, ...),
// which Open MPI defines as addresses of global objects, looked up by
// their symbol names. Other MPI implementations have another ABI and are
// not supported by this build.
//
// Files: plugin.c (descriptor, load/unload/probe), lib.c (libmpi),
// comm.c (communicators and collectives with a bounded wait), join.c
// (forming a communicator of processes started without mpirun), reduce.c
// (f16 and bf16 reductions as MPI user operations).
#ifndef ACCEL_PLUGINS_MPI_ACCEL_MPI_H_
#define ACCEL_PLUGINS_MPI_ACCEL_MPI_H_

#include <accel/comm_engine.h>
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#ifndef ACCEL_MPI_VERSION
#define ACCEL_MPI_VERSION "0.2.0"
#endif

// Every MPI function the engine calls. The types come from <mpi.h> through
// __typeof__, which names a function's type without referring to the
// symbol, so nothing is linked.
#define ACCEL_MPI_FUNCS(X)  \
  X(MPI_Initialized)        \
  X(MPI_Finalized)          \
  X(MPI_Init_thread)        \
  X(MPI_Finalize)           \
  X(MPI_Query_thread)       \
  X(MPI_Comm_dup)           \
  X(MPI_Comm_split)         \
  X(MPI_Comm_free)          \
  X(MPI_Comm_rank)          \
  X(MPI_Comm_size)          \
  X(MPI_Comm_set_errhandler) \
  X(MPI_Error_string)       \
  X(MPI_Iallreduce)         \
  X(MPI_Ibcast)             \
  X(MPI_Ireduce)            \
  X(MPI_Iallgather)         \
  X(MPI_Ireduce_scatter_block) \
  X(MPI_Ialltoall)          \
  X(MPI_Isend)              \
  X(MPI_Irecv)              \
  X(MPI_Test)               \
  X(MPI_Testall)            \
  X(MPI_Type_contiguous)    \
  X(MPI_Type_commit)        \
  X(MPI_Type_free)          \
  X(MPI_Op_create)          \
  X(MPI_Op_free)            \
  X(MPI_Open_port)          \
  X(MPI_Close_port)         \
  X(MPI_Comm_accept)        \
  X(MPI_Comm_connect)       \
  X(MPI_Intercomm_merge)

// MPI_T calls the engine uses to pick libnbc's all-reduce algorithm per
// call (comm.c); the engine does without them when one is missing.
#define ACCEL_MPI_OPTIONAL_FUNCS(X) \
  X(MPI_T_init_thread)              \
  X(MPI_T_finalize)                 \
  X(MPI_T_cvar_get_index)           \
  X(MPI_T_cvar_handle_alloc)        \
  X(MPI_T_cvar_handle_free)         \
  X(MPI_T_cvar_read)                \
  X(MPI_T_cvar_write)

// Open MPI's predefined handles, by the symbol that backs each.
#define ACCEL_MPI_GLOBALS(X)                        \
  X(MPI_Comm, comm_world, "ompi_mpi_comm_world")    \
  X(MPI_Comm, comm_self, "ompi_mpi_comm_self")      \
  X(MPI_Info, info_null, "ompi_mpi_info_null")      \
  X(MPI_Datatype, type_float, "ompi_mpi_float")     \
  X(MPI_Datatype, type_int32, "ompi_mpi_int32_t")   \
  X(MPI_Datatype, type_byte, "ompi_mpi_byte")       \
  X(MPI_Op, op_sum, "ompi_mpi_op_sum")              \
  X(MPI_Op, op_prod, "ompi_mpi_op_prod")            \
  X(MPI_Op, op_min, "ompi_mpi_op_min")              \
  X(MPI_Op, op_max, "ompi_mpi_op_max")              \
  X(MPI_Errhandler, errors_return, "ompi_mpi_errors_return")

typedef struct accel_mpi_lib {
#define ACCEL_MPI_FN(name) __typeof__(name)* name;
  ACCEL_MPI_FUNCS(ACCEL_MPI_FN)
  ACCEL_MPI_OPTIONAL_FUNCS(ACCEL_MPI_FN)
#undef ACCEL_MPI_FN
#define ACCEL_MPI_GLOBAL(type, field, symbol) type field;
  ACCEL_MPI_GLOBALS(ACCEL_MPI_GLOBAL)
#undef ACCEL_MPI_GLOBAL
  // f16 and bf16 as 2-byte types, and their user reduction ops
  // [dtype - F16][op] (reduce.c).
  MPI_Datatype type_half;
  MPI_Op half_ops[2][4];
} accel_mpi_lib_t;

typedef struct accel_mpi_engine {
  const accel_host_t* host;
  pthread_mutex_t mutex;  // guards the fields below and, below
                          // MPI_THREAD_MULTIPLE, every MPI call
  bool tried;
  accel_status_t status;  // of opening libmpi and MPI_Init
  char error[512];
  void* dl;
  accel_mpi_lib_t mpi;
  bool we_initialised;  // MPI_Finalize at unload
  // A request was abandoned (a peer died or stopped answering): MPI_Finalize
  // would wait for that peer for ever, so the engine leaves MPI as it is.
  atomic_bool abandoned;
  bool multiple;        // MPI_THREAD_MULTIPLE provided
  // libnbc's all-reduce algorithm as an MPI_T control variable (lib.c),
  // when the engine may set it per call: the handle and the value to
  // restore after each call.
  bool tune;
  MPI_T_cvar_handle allreduce_algorithm;
  int allreduce_default;
} accel_mpi_engine_t;

// Opens libmpi and initialises MPI once; later calls give the same answer.
accel_status_t accel_mpi_start(accel_mpi_engine_t* engine);
// Finalises MPI if the engine initialised it and closes the library.
void accel_mpi_stop(accel_mpi_engine_t* engine);
// Opens the MPI_T handle of libnbc's all-reduce algorithm (lib.c), unless
// the user chose one (OMPI_MCA_coll_libnbc_iallreduce_algorithm) or MPI_T
// is missing; then `tune` stays false.
void accel_mpi_tune_start(accel_mpi_engine_t* engine);
void accel_mpi_tune_stop(accel_mpi_engine_t* engine);
// "MPI_ERR_TRUNCATE: message truncated" for an MPI error code.
void accel_mpi_error_text(accel_mpi_engine_t* engine, int code, char* out,
                          size_t size);

// The MPI datatype of an accel dtype, and the MPI op for (dtype, op).
MPI_Datatype accel_mpi_type(accel_mpi_engine_t* engine, uint32_t dtype);
MPI_Op accel_mpi_op(accel_mpi_engine_t* engine, uint32_t dtype, uint32_t op);
// Creates and frees the 2-byte type and the f16/bf16 user ops (reduce.c).
int accel_mpi_half_ops_create(accel_mpi_engine_t* engine);
void accel_mpi_half_ops_free(accel_mpi_engine_t* engine);

// A communicator of the engine (comm.c).
typedef struct accel_mpi_comm {
  accel_mpi_engine_t* engine;
  MPI_Comm comm;
  int rank;
  int size;
  double timeout_s;
} accel_mpi_comm_t;

// Serialises MPI calls when MPI is not MPI_THREAD_MULTIPLE (comm.c).
void accel_mpi_lock(accel_mpi_engine_t* engine);
void accel_mpi_unlock(accel_mpi_engine_t* engine);

// Forms `*out` from independently started singleton processes, rank
// `init->rank` of `init->size`, through MPI_Comm_connect/accept with the
// port name shared through the rendezvous store (join.c). Needs an
// ompi-server that every rank reaches (OMPI_MCA_pmix_server_uri);
// ACCEL_ERROR_UNSUPPORTED with the reason otherwise.
accel_status_t accel_mpi_join(accel_mpi_engine_t* engine,
                              const accel_comm_engine_init_t* init,
                              MPI_Comm* out);

// Engine ABI entries (comm.c).
accel_status_t accel_mpi_comm_create(void* engine,
                                     const accel_comm_engine_init_t* init,
                                     void** out_comm, int32_t* out_rank,
                                     int32_t* out_size);
accel_status_t accel_mpi_comm_split(void* comm, int32_t color, int32_t key,
                                    void** out_comm, int32_t* out_rank,
                                    int32_t* out_size);
void accel_mpi_comm_destroy(void* comm);
accel_status_t accel_mpi_all_reduce(void* comm, const void* send, void* recv,
                                    uint64_t count, uint32_t dtype,
                                    uint32_t op);
accel_status_t accel_mpi_broadcast(void* comm, void* buffer, uint64_t count,
                                   uint32_t dtype, int32_t root);
accel_status_t accel_mpi_reduce(void* comm, const void* send, void* recv,
                                uint64_t count, uint32_t dtype, uint32_t op,
                                int32_t root);
accel_status_t accel_mpi_all_gather(void* comm, const void* send, void* recv,
                                    uint64_t count, uint32_t dtype);
accel_status_t accel_mpi_reduce_scatter(void* comm, const void* send,
                                        void* recv, uint64_t count,
                                        uint32_t dtype, uint32_t op);
accel_status_t accel_mpi_all_to_all(void* comm, const void* send, void* recv,
                                    uint64_t count, uint32_t dtype);
accel_status_t accel_mpi_send(void* comm, const void* buffer, uint64_t count,
                              uint32_t dtype, int32_t peer);
accel_status_t accel_mpi_recv(void* comm, void* buffer, uint64_t count,
                              uint32_t dtype, int32_t peer);
accel_status_t accel_mpi_call_start(void* comm,
                                    const accel_comm_engine_call_t* call,
                                    void** out_request);
accel_status_t accel_mpi_request_test(void* request, int32_t* out_done);
void accel_mpi_request_abandon(void* request);

#endif  // ACCEL_PLUGINS_MPI_ACCEL_MPI_H_
