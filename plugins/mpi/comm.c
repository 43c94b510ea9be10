// SPDX-License-Identifier: MIT
//
// Communicators and collectives on MPI. Every collective is started as its
// non-blocking MPI form and completed by polling MPI_Test, so that a peer
// that died or stopped calling cannot hold the caller for ever: after the
// communicator's timeout the call gives up with ACCEL_ERROR_TIMEOUT (the
// request is abandoned; the core then refuses further calls on the
// communicator, since the ranks no longer agree on what comes next).
// Polling keeps calling into MPI, which is also what moves Open MPI's
// non-blocking collectives forward.
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "accel_mpi.h"

typedef struct accel_mpi_comm {
  accel_mpi_engine_t* engine;
  MPI_Comm comm;
  int rank;
  int size;
  double timeout_s;
} accel_mpi_comm_t;

static double accel_mpi_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

// Serialises MPI calls when MPI is not MPI_THREAD_MULTIPLE.
static void accel_mpi_lock(accel_mpi_engine_t* e) {
  if (!e->multiple) pthread_mutex_lock(&e->mutex);
}
static void accel_mpi_unlock(accel_mpi_engine_t* e) {
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

// Waits for `request` until the communicator's timeout.
static accel_status_t accel_mpi_wait(accel_mpi_comm_t* c, const char* what,
                                     MPI_Request* request) {
  accel_mpi_engine_t* e = c->engine;
  double deadline = accel_mpi_now() + c->timeout_s;
  for (unsigned spin = 0;; spin++) {
    int done = 0;
    accel_mpi_lock(e);
    int rc = e->mpi.MPI_Test(request, &done, MPI_STATUS_IGNORE);
    accel_mpi_unlock(e);
    if (rc != MPI_SUCCESS) return accel_mpi_fail(c, what, rc);
    if (done) return ACCEL_OK;
    if ((spin & 255) == 255) {
      if (accel_mpi_now() > deadline) {
        return e->host->fail(e->host, ACCEL_ERROR_TIMEOUT,
                             "%s on rank %d of %d did not complete within "
                             "%.1f s; a peer may have died or stopped "
                             "calling (ACCEL_COMM_TIMEOUT)",
                             what, c->rank, c->size, c->timeout_s);
      }
      sched_yield();
    }
  }
}

// Checks that `count` fits MPI's int counts.
static accel_status_t accel_mpi_count(accel_mpi_comm_t* c, const char* what,
                                      uint64_t count) {
  if (count <= (uint64_t)INT_MAX) return ACCEL_OK;
  return c->engine->host->fail(
      c->engine->host, ACCEL_ERROR_UNSUPPORTED,
      "%s: %llu elements is more than MPI's int count (%d) allows; split "
      "the call",
      what, (unsigned long long)count, INT_MAX);
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

accel_status_t accel_mpi_comm_create(void* engine,
                                     const accel_comm_engine_init_t* init,
                                     void** out_comm, int32_t* out_rank,
                                     int32_t* out_size) {
  accel_mpi_engine_t* e = engine;
  accel_status_t status = accel_mpi_start(e);
  if (status != ACCEL_OK) return status;
  MPI_Comm base = e->mpi.comm_world;
  if (init->native_comm != NULL) base = *(const MPI_Comm*)init->native_comm;
  MPI_Comm comm;
  accel_mpi_lock(e);
  int rc = e->mpi.MPI_Comm_dup(base, &comm);
  accel_mpi_unlock(e);
  if (rc != MPI_SUCCESS) {
    char text[256];
    accel_mpi_error_text(e, rc, text, sizeof(text));
    return e->host->fail(e->host, ACCEL_ERROR_BACKEND, "MPI_Comm_dup: %s",
                         text);
  }
  int rank = 0, size = 0;
  e->mpi.MPI_Comm_rank(comm, &rank);
  e->mpi.MPI_Comm_size(comm, &size);
  if (size == 1 && init->size > 1 &&
      (init->address != NULL || init->file != NULL)) {
    e->mpi.MPI_Comm_free(&comm);
    return e->host->fail(
        e->host, ACCEL_ERROR_UNSUPPORTED,
        "the mpi engine forms communicators through its launcher (mpirun, "
        "srun), not through ACCEL_COMM_ADDR/ACCEL_COMM_FILE: this process "
        "is a lone MPI process, but %d ranks were asked for",
        (int)init->size);
  }
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

// Starts a non-blocking call (`rc` is its result) and waits for it.
static accel_status_t accel_mpi_finish(accel_mpi_comm_t* c, const char* what,
                                       int rc, MPI_Request* request) {
  if (rc != MPI_SUCCESS) return accel_mpi_fail(c, what, rc);
  return accel_mpi_wait(c, what, request);
}

// Sets `rc` to the result of MPI call `call` on `c`'s engine, serialised
// below MPI_THREAD_MULTIPLE.
#define ACCEL_MPI_START(c, call)     \
  do {                               \
    accel_mpi_lock((c)->engine);     \
    rc = (c)->engine->mpi.call;      \
    accel_mpi_unlock((c)->engine);   \
  } while (0)

accel_status_t accel_mpi_all_reduce(void* comm, const void* send, void* recv,
                                    uint64_t count, uint32_t dtype,
                                    uint32_t op) {
  accel_mpi_comm_t* c = comm;
  accel_status_t status = accel_mpi_count(c, "all-reduce", count);
  if (status != ACCEL_OK) return status;
  accel_mpi_engine_t* e = c->engine;
  MPI_Request request;
  int rc;
  const void* from = send == recv ? MPI_IN_PLACE : send;
  ACCEL_MPI_START(c, MPI_Iallreduce(from, recv, (int)count,
                                    accel_mpi_type(e, dtype),
                                    accel_mpi_op(e, dtype, op), c->comm,
                                    &request));
  return accel_mpi_finish(c, "all-reduce", rc, &request);
}

accel_status_t accel_mpi_broadcast(void* comm, void* buffer, uint64_t count,
                                   uint32_t dtype, int32_t root) {
  accel_mpi_comm_t* c = comm;
  accel_status_t status = accel_mpi_count(c, "broadcast", count);
  if (status != ACCEL_OK) return status;
  MPI_Request request;
  int rc;
  ACCEL_MPI_START(c, MPI_Ibcast(buffer, (int)count,
                                accel_mpi_type(c->engine, dtype), root,
                                c->comm, &request));
  return accel_mpi_finish(c, "broadcast", rc, &request);
}

accel_status_t accel_mpi_reduce(void* comm, const void* send, void* recv,
                                uint64_t count, uint32_t dtype, uint32_t op,
                                int32_t root) {
  accel_mpi_comm_t* c = comm;
  accel_status_t status = accel_mpi_count(c, "reduce", count);
  if (status != ACCEL_OK) return status;
  accel_mpi_engine_t* e = c->engine;
  MPI_Request request;
  int rc;
  const void* from = (send == recv && c->rank == root) ? MPI_IN_PLACE : send;
  ACCEL_MPI_START(c, MPI_Ireduce(from, recv, (int)count,
                                 accel_mpi_type(e, dtype),
                                 accel_mpi_op(e, dtype, op), root, c->comm,
                                 &request));
  return accel_mpi_finish(c, "reduce", rc, &request);
}

accel_status_t accel_mpi_all_gather(void* comm, const void* send, void* recv,
                                    uint64_t count, uint32_t dtype) {
  accel_mpi_comm_t* c = comm;
  accel_status_t status = accel_mpi_count(c, "all-gather", count);
  if (status != ACCEL_OK) return status;
  MPI_Datatype type = accel_mpi_type(c->engine, dtype);
  MPI_Request request;
  int rc;
  ACCEL_MPI_START(c, MPI_Iallgather(send, (int)count, type, recv, (int)count,
                                    type, c->comm, &request));
  return accel_mpi_finish(c, "all-gather", rc, &request);
}

accel_status_t accel_mpi_reduce_scatter(void* comm, const void* send,
                                        void* recv, uint64_t count,
                                        uint32_t dtype, uint32_t op) {
  accel_mpi_comm_t* c = comm;
  accel_status_t status = accel_mpi_count(c, "reduce-scatter", count);
  if (status != ACCEL_OK) return status;
  accel_mpi_engine_t* e = c->engine;
  MPI_Request request;
  int rc;
  ACCEL_MPI_START(c, MPI_Ireduce_scatter_block(
                         send, recv, (int)count, accel_mpi_type(e, dtype),
                         accel_mpi_op(e, dtype, op), c->comm, &request));
  return accel_mpi_finish(c, "reduce-scatter", rc, &request);
}

accel_status_t accel_mpi_all_to_all(void* comm, const void* send, void* recv,
                                    uint64_t count, uint32_t dtype) {
  accel_mpi_comm_t* c = comm;
  accel_status_t status = accel_mpi_count(c, "all-to-all", count);
  if (status != ACCEL_OK) return status;
  MPI_Datatype type = accel_mpi_type(c->engine, dtype);
  MPI_Request request;
  int rc;
  ACCEL_MPI_START(c, MPI_Ialltoall(send, (int)count, type, recv, (int)count,
                                   type, c->comm, &request));
  return accel_mpi_finish(c, "all-to-all", rc, &request);
}

// Point-to-point messages of accel use one tag, so they pair in order.
#define ACCEL_MPI_TAG 0x6acc

accel_status_t accel_mpi_send(void* comm, const void* buffer, uint64_t count,
                              uint32_t dtype, int32_t peer) {
  accel_mpi_comm_t* c = comm;
  accel_status_t status = accel_mpi_count(c, "send", count);
  if (status != ACCEL_OK) return status;
  MPI_Request request;
  int rc;
  ACCEL_MPI_START(c, MPI_Isend(buffer, (int)count,
                               accel_mpi_type(c->engine, dtype), peer,
                               ACCEL_MPI_TAG, c->comm, &request));
  return accel_mpi_finish(c, "send", rc, &request);
}

accel_status_t accel_mpi_recv(void* comm, void* buffer, uint64_t count,
                              uint32_t dtype, int32_t peer) {
  accel_mpi_comm_t* c = comm;
  accel_status_t status = accel_mpi_count(c, "recv", count);
  if (status != ACCEL_OK) return status;
  MPI_Request request;
  int rc;
  ACCEL_MPI_START(c, MPI_Irecv(buffer, (int)count,
                               accel_mpi_type(c->engine, dtype), peer,
                               ACCEL_MPI_TAG, c->comm, &request));
  return accel_mpi_finish(c, "recv", rc, &request);
}
