// SPDX-License-Identifier: MIT
//
// Communicators and collectives on MPI. Every call is started as its
// non-blocking MPI form, so that a peer that died or stopped calling
// cannot hold the caller for ever. The core starts calls with call_start
// (all the calls of a group one after another, which is what lets a ring
// of sends and receives complete) and polls them with request_test until
// its timeout; the blocking entries of engine ABI 1.0 poll MPI_Test
// themselves until the communicator's timeout. A request given up is
// abandoned (MPI forbids freeing an active collective request); the core
// then refuses further calls on the communicator, since the ranks no
// longer agree on what comes next. Polling keeps calling into MPI, which
// is also what moves Open MPI's non-blocking collectives forward.
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel_mpi.h"

// A started call, for request_test: one MPI request, or the sends and
// receives of an all-gather made of point-to-point calls.
typedef struct accel_mpi_request {
  accel_mpi_comm_t* comm;
  const char* what;
  int count;
  MPI_Request* requests;  // `one`, or an array of `count`
  MPI_Request one;
} accel_mpi_request_t;

static double accel_mpi_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void accel_mpi_lock(accel_mpi_engine_t* e) {
  if (!e->multiple) pthread_mutex_lock(&e->mutex);
}

void accel_mpi_unlock(accel_mpi_engine_t* e) {
  if (!e->multiple) pthread_mutex_unlock(&e->mutex);
}

// Turns an MPI error code into a failure naming `what`.
static accel_status_t accel_mpi_fail(accel_mpi_comm_t* c, const char* what,
                                     int code) {
  char text[256];
  accel_mpi_error_text(c->engine, code, text, sizeof(text));
  return c->engine->host->fail(c->engine->host, ACCEL_ERROR_BACKEND,
                               "%s on rank %d of %d: %s", what, c->rank,
                               c->size, text);
}

// Wraps `comm` (owned afterwards) in a new handle.
static accel_status_t accel_mpi_wrap(accel_mpi_engine_t* e, MPI_Comm comm,
                                     double timeout_s, void** out_comm,
                                     int32_t* out_rank, int32_t* out_size) {
  accel_mpi_comm_t* c = calloc(1, sizeof(*c));
  if (c == NULL) {
    e->mpi.MPI_Comm_free(&comm);
    return e->host->fail(e->host, ACCEL_ERROR_OUT_OF_MEMORY,
                         "mpi communicator");
  }
  c->engine = e;
  c->comm = comm;
  c->timeout_s = timeout_s;
  e->mpi.MPI_Comm_set_errhandler(comm, e->mpi.errors_return);
  e->mpi.MPI_Comm_rank(comm, &c->rank);
  e->mpi.MPI_Comm_size(comm, &c->size);
  *out_comm = c;
  *out_rank = c->rank;
  *out_size = c->size;
  return ACCEL_OK;
}

// Whether `init` has the 1.1 field `store` (older cores pass a shorter
// struct).
static const accel_comm_store_t* accel_mpi_store(
    const accel_comm_engine_init_t* init) {
  size_t need = offsetof(accel_comm_engine_init_t, store) + sizeof(void*);
  return init->struct_size >= need ? init->store : NULL;
}

accel_status_t accel_mpi_comm_create(void* engine,
                                     const accel_comm_engine_init_t* init,
                                     void** out_comm, int32_t* out_rank,
                                     int32_t* out_size) {
  accel_mpi_engine_t* e = engine;
  accel_status_t status = accel_mpi_start(e);
  if (status != ACCEL_OK) return status;
  int world = 0;
  e->mpi.MPI_Comm_size(e->mpi.comm_world, &world);
  MPI_Comm comm;
  if (init->native_comm == NULL && world == 1 && init->size > 1) {
    // A lone process (no mpirun) asked to be one of several ranks.
    if (accel_mpi_store(init) == NULL) {
      return e->host->fail(
          e->host, ACCEL_ERROR_UNSUPPORTED,
          "this process was not started by an MPI launcher (mpirun, srun), "
          "and no rendezvous (ACCEL_COMM_ADDR and ACCEL_COMM_PORT, or "
          "ACCEL_COMM_FILE) is set to join %d ranks",
          (int)init->size);
    }
    status = accel_mpi_join(e, init, &comm);
    if (status != ACCEL_OK) return status;
  } else {
    MPI_Comm base = e->mpi.comm_world;
    if (init->native_comm != NULL) base = *(const MPI_Comm*)init->native_comm;
    accel_mpi_lock(e);
    int rc = e->mpi.MPI_Comm_dup(base, &comm);
    accel_mpi_unlock(e);
    if (rc != MPI_SUCCESS) {
      char text[256];
      accel_mpi_error_text(e, rc, text, sizeof(text));
      return e->host->fail(e->host, ACCEL_ERROR_BACKEND, "MPI_Comm_dup: %s",
                           text);
    }
  }
  int rank = 0, size = 0;
  e->mpi.MPI_Comm_rank(comm, &rank);
  e->mpi.MPI_Comm_size(comm, &size);
  if ((init->rank >= 0 && init->rank != rank) ||
      (init->size >= 0 && init->size != size)) {
    e->mpi.MPI_Comm_free(&comm);
    return e->host->fail(
        e->host, ACCEL_ERROR_INVALID_ARGUMENT,
        "rank %d of %d was asked for, but the MPI launcher made this "
        "process rank %d of %d (leave ACCEL_COMM_RANK/SIZE unset under "
        "mpirun)",
        (int)init->rank, (int)init->size, rank, size);
  }
  return accel_mpi_wrap(e, comm, init->timeout_s, out_comm, out_rank,
                        out_size);
}

accel_status_t accel_mpi_comm_split(void* comm, int32_t color, int32_t key,
                                    void** out_comm, int32_t* out_rank,
                                    int32_t* out_size) {
  accel_mpi_comm_t* c = comm;
  MPI_Comm split;
  accel_mpi_lock(c->engine);
  int rc = c->engine->mpi.MPI_Comm_split(c->comm, color, key, &split);
  accel_mpi_unlock(c->engine);
  if (rc != MPI_SUCCESS) return accel_mpi_fail(c, "MPI_Comm_split", rc);
  return accel_mpi_wrap(c->engine, split, c->timeout_s, out_comm, out_rank,
                        out_size);
}

void accel_mpi_comm_destroy(void* comm) {
  accel_mpi_comm_t* c = comm;
  accel_mpi_lock(c->engine);
  int finalised = 0;
  c->engine->mpi.MPI_Finalized(&finalised);
  if (!finalised) c->engine->mpi.MPI_Comm_free(&c->comm);
  accel_mpi_unlock(c->engine);
  free(c);
}

// ---------------------------------------------------------------------------
// Calls.
// ---------------------------------------------------------------------------

static const char* accel_mpi_call_name(uint32_t kind) {
  static const char* const names[] = {
      "all-reduce", "broadcast",  "reduce", "all-gather",
      "reduce-scatter", "all-to-all", "send", "recv"};
  return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "call";
}

// Point-to-point messages of accel use one tag, so they pair in order.
#define ACCEL_MPI_TAG 0x6acc

// libnbc's all-reduce algorithm for a call of `bytes` (1 ring, 3
// reduce-scatter then all-gather), or -1 to leave libnbc's own choice.
// libnbc picks a binomial tree below 4 ranks and for every in-place call,
// which moves the whole buffer through one rank: on 2 ranks the ring
// takes about 0.65 of its time from 64 KiB up (docs/performance.md), and
// an in-place call deserves the algorithm the same call out of place gets.
// (MPI's blocking MPI_Allreduce picks among coll/tuned's algorithms.)
static int accel_mpi_allreduce_algorithm(const accel_mpi_comm_t* c,
                                         uint64_t bytes, bool in_place) {
  if (!c->engine->tune || bytes < 65536) return -1;
  if (c->size == 2) return 1;
  if (c->size >= 4 && in_place) return 3;
  return -1;
}

// Starts `call` as its non-blocking MPI form; returns the MPI result.
static int accel_mpi_issue(accel_mpi_comm_t* c,
                           const accel_comm_engine_call_t* call,
                           MPI_Request* request) {
  accel_mpi_engine_t* e = c->engine;
  int n = (int)call->count;
  MPI_Datatype type = accel_mpi_type(e, call->dtype);
  MPI_Op op = accel_mpi_op(e, call->dtype, call->op);
  const void* from = call->send;
  switch (call->kind) {
    case ACCEL_COMM_ENGINE_ALL_REDUCE: {
      bool in_place = from == call->recv;
      if (in_place) from = MPI_IN_PLACE;
      int size =
          call->dtype == ACCEL_DTYPE_F16 || call->dtype == ACCEL_DTYPE_BF16 ? 2
                                                                          : 4;
      int algorithm = accel_mpi_allreduce_algorithm(
          c, call->count * (uint64_t)size, in_place);
      // libnbc reads the variable when the call starts; restore it so the
      // application's own calls keep their algorithm.
      if (algorithm >= 0) {
        e->mpi.MPI_T_cvar_write(e->allreduce_algorithm, &algorithm);
      }
      int rc = e->mpi.MPI_Iallreduce(from, call->recv, n, type, op, c->comm,
                                     request);
      if (algorithm >= 0) {
        e->mpi.MPI_T_cvar_write(e->allreduce_algorithm, &e->allreduce_default);
      }
      return rc;
    }
    case ACCEL_COMM_ENGINE_BROADCAST:
      return e->mpi.MPI_Ibcast(call->recv, n, type, call->peer, c->comm,
                               request);
    case ACCEL_COMM_ENGINE_REDUCE:
      if (from == call->recv && c->rank == call->peer) from = MPI_IN_PLACE;
      return e->mpi.MPI_Ireduce(from, call->recv, n, type, op, call->peer,
                                c->comm, request);
    case ACCEL_COMM_ENGINE_ALL_GATHER:
      return e->mpi.MPI_Iallgather(from, n, type, call->recv, n, type,
                                   c->comm, request);
    case ACCEL_COMM_ENGINE_REDUCE_SCATTER:
      return e->mpi.MPI_Ireduce_scatter_block(from, call->recv, n, type, op,
                                              c->comm, request);
    case ACCEL_COMM_ENGINE_ALL_TO_ALL:
      return e->mpi.MPI_Ialltoall(from, n, type, call->recv, n, type, c->comm,
                                  request);
    case ACCEL_COMM_ENGINE_SEND:
      return e->mpi.MPI_Isend(from, n, type, call->peer, ACCEL_MPI_TAG,
                              c->comm, request);
    case ACCEL_COMM_ENGINE_RECV:
      return e->mpi.MPI_Irecv(call->recv, n, type, call->peer, ACCEL_MPI_TAG,
                              c->comm, request);
    default:
      return MPI_ERR_ARG;
  }
}

// Point-to-point messages of accel's large all-gathers, apart from the
// user's sends and receives.
#define ACCEL_MPI_GATHER_TAG (ACCEL_MPI_TAG + 1)

// A large all-gather as every rank's block sent to every other rank
// (MPI_Isend and MPI_Irecv), with this rank's own block copied while they
// move. libnbc's MPI_Iallgather copies the own block first and only then
// starts sending: on 2 ranks it takes 1.3 to 1.4 times MPI_Allgather's time
// from 1 MiB up, measured on plain MPI (docs/performance.md).
static int accel_mpi_issue_gather(accel_mpi_comm_t* c,
                                  const accel_comm_engine_call_t* call,
                                  size_t block, MPI_Request* requests) {
  accel_mpi_engine_t* e = c->engine;
  MPI_Datatype type = accel_mpi_type(e, call->dtype);
  int n = (int)call->count, k = 0, rc = MPI_SUCCESS;
  char* recv = call->recv;
  char* own = recv + (size_t)c->rank * block;
  for (int peer = 0; peer < c->size && rc == MPI_SUCCESS; peer++) {
    if (peer == c->rank) continue;
    rc = e->mpi.MPI_Irecv(recv + (size_t)peer * block, n, type, peer,
                          ACCEL_MPI_GATHER_TAG, c->comm, &requests[k++]);
    if (rc == MPI_SUCCESS) {
      rc = e->mpi.MPI_Isend(call->send, n, type, peer, ACCEL_MPI_GATHER_TAG,
                            c->comm, &requests[k++]);
    }
  }
  if (rc == MPI_SUCCESS && call->send != own) memcpy(own, call->send, block);
  return rc;
}

// Whether `call` is an all-gather sent as point-to-point calls.
static bool accel_mpi_gather_p2p(const accel_mpi_comm_t* c,
                                 const accel_comm_engine_call_t* call,
                                 size_t* block) {
  size_t size =
      call->dtype == ACCEL_DTYPE_F16 || call->dtype == ACCEL_DTYPE_BF16 ? 2
                                                                        : 4;
  *block = (size_t)call->count * size;
  return call->kind == ACCEL_COMM_ENGINE_ALL_GATHER && c->size > 1 &&
         *block >= 65536;
}

// Checks `call` and starts it into `r`.
static accel_status_t accel_mpi_begin(accel_mpi_comm_t* c,
                                      const accel_comm_engine_call_t* call,
                                      accel_mpi_request_t* r) {
  const char* what = accel_mpi_call_name(call->kind);
  r->comm = c;
  r->what = what;
  r->count = 1;
  r->requests = &r->one;
  if (call->count > (uint64_t)INT_MAX) {
    return c->engine->host->fail(
        c->engine->host, ACCEL_ERROR_UNSUPPORTED,
        "%s: %llu elements is more than MPI's int count (%d) allows; split "
        "the call",
        what, (unsigned long long)call->count, INT_MAX);
  }
  size_t block = 0;
  bool p2p = accel_mpi_gather_p2p(c, call, &block);
  if (p2p) {
    r->count = 2 * (c->size - 1);
    r->requests = calloc((size_t)r->count, sizeof(MPI_Request));
    if (r->requests == NULL) {
      return c->engine->host->fail(c->engine->host, ACCEL_ERROR_OUT_OF_MEMORY,
                                   "%s: %d requests", what, r->count);
    }
  }
  accel_mpi_lock(c->engine);
  int rc = p2p ? accel_mpi_issue_gather(c, call, block, r->requests)
               : accel_mpi_issue(c, call, r->requests);
  accel_mpi_unlock(c->engine);
  // A failed start leaves what did start to MPI; the communicator is not
  // used again (the core refuses calls once one failed this way).
  if (rc == MPI_SUCCESS) return ACCEL_OK;
  if (p2p) free(r->requests);
  return accel_mpi_fail(c, what, rc);
}

static void accel_mpi_request_free(accel_mpi_request_t* r) {
  if (r->requests != &r->one) free(r->requests);
  free(r);
}

accel_status_t accel_mpi_call_start(void* comm,
                                    const accel_comm_engine_call_t* call,
                                    void** out_request) {
  accel_mpi_comm_t* c = comm;
  *out_request = NULL;
  accel_mpi_request_t* r = calloc(1, sizeof(*r));
  if (r == NULL) {
    return c->engine->host->fail(c->engine->host, ACCEL_ERROR_OUT_OF_MEMORY,
                                 "mpi request");
  }
  accel_status_t status = accel_mpi_begin(c, call, r);
  if (status != ACCEL_OK) {
    free(r);
    return status;
  }
  *out_request = r;
  return ACCEL_OK;
}

accel_status_t accel_mpi_request_test(void* request, int32_t* out_done) {
  accel_mpi_request_t* r = request;
  accel_mpi_engine_t* e = r->comm->engine;
  int done = 0;
  accel_mpi_lock(e);
  int rc = r->count == 1
               ? e->mpi.MPI_Test(r->requests, &done, MPI_STATUS_IGNORE)
               : e->mpi.MPI_Testall(r->count, r->requests, &done,
                                    MPI_STATUSES_IGNORE);
  accel_mpi_unlock(e);
  *out_done = done != 0;
  if (rc != MPI_SUCCESS) {
    accel_status_t status = accel_mpi_fail(r->comm, r->what, rc);
    accel_mpi_request_free(r);
    return status;
  }
  if (done) accel_mpi_request_free(r);
  return ACCEL_OK;
}

void accel_mpi_request_abandon(void* request) {
  // The MPI requests stay with MPI: freeing an active collective request
  // is erroneous, and the communicator is broken from now on.
  accel_mpi_request_t* r = request;
  atomic_store(&r->comm->engine->abandoned, true);
  accel_mpi_request_free(r);
}

// A blocking entry (engine ABI 1.0): starts the call and polls it until
// the communicator's timeout. Polls flat out for the first 50 ms, as MPI's
// blocking calls do: a yield on a loaded machine can cost a time slice.
static accel_status_t accel_mpi_run(accel_mpi_comm_t* c, uint32_t kind,
                                    const void* send, void* recv,
                                    uint64_t count, uint32_t dtype,
                                    uint32_t op, int32_t peer) {
  accel_comm_engine_call_t call = {sizeof(call), kind, c, send, recv,
                                   count, dtype, op, peer, 0, 0};
  void* request = NULL;
  accel_status_t status = accel_mpi_call_start(c, &call, &request);
  double start = accel_mpi_now();
  for (unsigned spin = 1; status == ACCEL_OK; spin++) {
    int32_t done = 0;
    status = accel_mpi_request_test(request, &done);
    if (status != ACCEL_OK || done) break;
    if ((spin & 255) != 0) continue;
    double waited = accel_mpi_now() - start;
    if (waited > c->timeout_s) {
      accel_mpi_request_abandon(request);
      return c->engine->host->fail(
          c->engine->host, ACCEL_ERROR_TIMEOUT,
          "%s on rank %d of %d did not complete within %.1f s; a peer may "
          "have died or stopped calling (ACCEL_COMM_TIMEOUT)",
          accel_mpi_call_name(kind), c->rank, c->size, c->timeout_s);
    }
    if (waited > 0.05) sched_yield();
  }
  return status;
}

accel_status_t accel_mpi_all_reduce(void* comm, const void* send, void* recv,
                                    uint64_t count, uint32_t dtype,
                                    uint32_t op) {
  return accel_mpi_run(comm, ACCEL_COMM_ENGINE_ALL_REDUCE, send, recv, count,
                       dtype, op, -1);
}

accel_status_t accel_mpi_broadcast(void* comm, void* buffer, uint64_t count,
                                   uint32_t dtype, int32_t root) {
  return accel_mpi_run(comm, ACCEL_COMM_ENGINE_BROADCAST, buffer, buffer,
                       count, dtype, 0, root);
}

accel_status_t accel_mpi_reduce(void* comm, const void* send, void* recv,
                                uint64_t count, uint32_t dtype, uint32_t op,
                                int32_t root) {
  return accel_mpi_run(comm, ACCEL_COMM_ENGINE_REDUCE, send, recv, count,
                       dtype, op, root);
}

accel_status_t accel_mpi_all_gather(void* comm, const void* send, void* recv,
                                    uint64_t count, uint32_t dtype) {
  return accel_mpi_run(comm, ACCEL_COMM_ENGINE_ALL_GATHER, send, recv, count,
                       dtype, 0, -1);
}

accel_status_t accel_mpi_reduce_scatter(void* comm, const void* send,
                                        void* recv, uint64_t count,
                                        uint32_t dtype, uint32_t op) {
  return accel_mpi_run(comm, ACCEL_COMM_ENGINE_REDUCE_SCATTER, send, recv,
                       count, dtype, op, -1);
}

accel_status_t accel_mpi_all_to_all(void* comm, const void* send, void* recv,
                                    uint64_t count, uint32_t dtype) {
  return accel_mpi_run(comm, ACCEL_COMM_ENGINE_ALL_TO_ALL, send, recv, count,
                       dtype, 0, -1);
}

accel_status_t accel_mpi_send(void* comm, const void* buffer, uint64_t count,
                              uint32_t dtype, int32_t peer) {
  return accel_mpi_run(comm, ACCEL_COMM_ENGINE_SEND, buffer, NULL, count,
                       dtype, 0, peer);
}

accel_status_t accel_mpi_recv(void* comm, void* buffer, uint64_t count,
                              uint32_t dtype, int32_t peer) {
  return accel_mpi_run(comm, ACCEL_COMM_ENGINE_RECV, NULL, buffer, count,
                       dtype, 0, peer);
}
