// SPDX-License-Identifier: MIT
//
// Forming one communicator of processes started without mpirun: each is
// an MPI singleton (MPI_COMM_WORLD of size 1), told its rank and the size
// by the environment (ACCEL_COMM_RANK, ACCEL_COMM_SIZE) and sharing the
// core's rendezvous store. The ranks join one at a time, in rank order:
// for rank k, rank 0 opens an MPI port and the store carries its name to
// every rank; ranks 0..k-1 accept on it (MPI_Comm_accept, collective over
// the communicator they already form), rank k connects, and both sides
// merge into one intracommunicator, ordered by the joining order. A port
// of its own for each step keeps a rank that is early from being accepted
// in another's place.
//
// Open MPI 4.1 (Debian 12) carries connect/accept between separately
// started jobs only through its PMIx server, ompi-server: without one,
// MPI_Comm_connect fails with "Underlying runtime environment does not
// support accept/connect functionality" and MPI_Comm_join likewise (it
// is built on connect/accept). The engine therefore refuses at once,
// saying so, unless OMPI_MCA_pmix_server_uri names an ompi-server (it must
// be set before MPI_Init, which the engine calls at its first use).
//
// MPI_Comm_accept and _connect have no time limit. The store's broadcast
// of each port name first proves every rank is there, within the timeout;
// the step itself then runs on a helper thread, and a step that does not
// finish within the timeout (a rank died in between) returns
// ACCEL_ERROR_TIMEOUT and leaves that thread blocked in MPI.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel_mpi.h"

// One joining step, shared with its helper thread.
typedef struct accel_mpi_step {
  accel_mpi_engine_t* engine;
  char port[MPI_MAX_PORT_NAME];
  bool connect;  // this rank is the one joining; else it accepts
  bool have;     // `comm` holds the communicator joined so far
  MPI_Comm comm;
  // Set by the helper under `lock`.
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool finished;
  bool abandoned;  // the caller gave up; the helper frees the step
  int rc;          // MPI result
  const char* what;
  MPI_Comm merged;
} accel_mpi_step_t;

// Accepts or connects, then merges. Returns the MPI result and names the
// failed call in `s->what`.
static int accel_mpi_step_run(accel_mpi_step_t* s) {
  accel_mpi_lib_t* mpi = &s->engine->mpi;
  MPI_Comm inter;
  int rc;
  if (s->connect) {
    s->what = "MPI_Comm_connect";
    rc = mpi->MPI_Comm_connect(s->port, mpi->info_null, 0, mpi->comm_self,
                               &inter);
  } else {
    s->what = "MPI_Comm_accept";
    rc = mpi->MPI_Comm_accept(s->port, mpi->info_null, 0, s->comm, &inter);
  }
  if (rc != MPI_SUCCESS) return rc;
  s->what = "MPI_Intercomm_merge";
  rc = mpi->MPI_Intercomm_merge(inter, s->connect, &s->merged);
  mpi->MPI_Comm_free(&inter);
  if (rc == MPI_SUCCESS) {
    mpi->MPI_Comm_set_errhandler(s->merged, mpi->errors_return);
  }
  return rc;
}

static void accel_mpi_step_free(accel_mpi_step_t* s) {
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

static void* accel_mpi_step_thread(void* arg) {
  accel_mpi_step_t* s = arg;
  int rc = accel_mpi_step_run(s);
  pthread_mutex_lock(&s->lock);
  s->rc = rc;
  s->finished = true;
  bool abandoned = s->abandoned;
  pthread_cond_signal(&s->cond);
  pthread_mutex_unlock(&s->lock);
  if (abandoned) {
    // Too late: the caller returned a timeout. Nothing uses the result.
    if (rc == MPI_SUCCESS) s->engine->mpi.MPI_Comm_free(&s->merged);
    accel_mpi_step_free(s);
  }
  return NULL;
}

// Runs the step on a helper thread and waits for it until `timeout_s`.
// True when it finished; false leaves the step to the helper.
static bool accel_mpi_step_bounded(accel_mpi_step_t* s, double timeout_s) {
  pthread_t thread;
  // Below MPI_THREAD_MULTIPLE another thread may not call MPI while this
  // one waits, so the step runs here, unbounded.
  if (!s->engine->multiple ||
      pthread_create(&thread, NULL, accel_mpi_step_thread, s) != 0) {
    s->rc = accel_mpi_step_run(s);
    return true;
  }
  pthread_detach(thread);
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += (time_t)timeout_s + 1;
  pthread_mutex_lock(&s->lock);
  int rc = 0;
  while (!s->finished && rc != ETIMEDOUT) {
    rc = pthread_cond_timedwait(&s->cond, &s->lock, &deadline);
  }
  bool finished = s->finished;
  if (!finished) s->abandoned = true;
  pthread_mutex_unlock(&s->lock);
  return finished;
}

// Step k: rank 0 opens a port, the store carries its name, ranks below k
// accept and rank k connects. `*comm` (when `*have`) becomes the merged
// communicator.
static accel_status_t accel_mpi_join_step(accel_mpi_engine_t* e,
                                          const accel_comm_engine_init_t* init,
                                          int k, MPI_Comm* comm, bool* have) {
  const accel_host_t* host = e->host;
  accel_mpi_step_t* s = calloc(1, sizeof(*s));
  if (s == NULL) return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "join");
  s->engine = e;
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->cond, NULL);
  int rc = MPI_SUCCESS;
  if (init->rank == 0) rc = e->mpi.MPI_Open_port(e->mpi.info_null, s->port);
  // Every rank is there once this returns, within the timeout. (A failed
  // MPI_Open_port sends an empty name; the others then fail to connect.)
  accel_status_t status =
      init->store->broadcast(init->store, s->port, sizeof(s->port), 0);
  if (rc != MPI_SUCCESS) {
    char text[256];
    accel_mpi_error_text(e, rc, text, sizeof(text));
    status = host->fail(host, ACCEL_ERROR_BACKEND, "MPI_Open_port: %s", text);
  }
  if (status == ACCEL_OK && init->rank <= k) {
    s->connect = init->rank == k;
    s->comm = *comm;
    if (!accel_mpi_step_bounded(s, init->timeout_s)) {
      // The helper owns `s` now, and the port stays open with it.
      return host->fail(host, ACCEL_ERROR_TIMEOUT,
                        "rank %d of %d: joining rank %d through "
                        "MPI_Comm_connect/accept did not finish within "
                        "%.1f s (a rank died after the rendezvous?)",
                        (int)init->rank, (int)init->size, k, init->timeout_s);
    }
    if (s->rc != MPI_SUCCESS) {
      char text[256];
      accel_mpi_error_text(e, s->rc, text, sizeof(text));
      status = host->fail(host, ACCEL_ERROR_BACKEND,
                          "rank %d of %d: joining rank %d: %s: %s (is the "
                          "ompi-server reachable?)",
                          (int)init->rank, (int)init->size, k, s->what, text);
    } else {
      if (*have) e->mpi.MPI_Comm_free(comm);
      *comm = s->merged;
      *have = true;
    }
  }
  if (init->rank == 0 && rc == MPI_SUCCESS) e->mpi.MPI_Close_port(s->port);
  accel_mpi_step_free(s);
  return status;
}

accel_status_t accel_mpi_join(accel_mpi_engine_t* e,
                              const accel_comm_engine_init_t* init,
                              MPI_Comm* out) {
  const accel_host_t* host = e->host;
  const char* server = host->getenv(host, "OMPI_MCA_pmix_server_uri");
  if (server == NULL || server[0] == '\0') {
    return host->fail(
        host, ACCEL_ERROR_UNSUPPORTED,
        "rank %d of %d was started without mpirun, and Open MPI joins "
        "separately started processes (MPI_Comm_connect/accept) only "
        "through an ompi-server: start `ompi-server -r FILE` where every "
        "rank reaches it and set OMPI_MCA_pmix_server_uri=file:FILE in "
        "every rank, or launch with mpirun or srun (docs/collectives.md)",
        (int)init->rank, (int)init->size);
  }
  // Errors of connect and accept come back as codes, not aborts.
  e->mpi.MPI_Comm_set_errhandler(e->mpi.comm_self, e->mpi.errors_return);
  MPI_Comm comm;
  bool have = false;
  accel_status_t status = ACCEL_OK;
  if (init->rank == 0) {
    int rc = e->mpi.MPI_Comm_dup(e->mpi.comm_self, &comm);
    if (rc != MPI_SUCCESS) {
      char text[256];
      accel_mpi_error_text(e, rc, text, sizeof(text));
      return host->fail(host, ACCEL_ERROR_BACKEND,
                        "MPI_Comm_dup of MPI_COMM_SELF: %s", text);
    }
    have = true;
    e->mpi.MPI_Comm_set_errhandler(comm, e->mpi.errors_return);
  }
  for (int k = 1; k < init->size && status == ACCEL_OK; k++) {
    status = accel_mpi_join_step(e, init, k, &comm, &have);
  }
  if (status != ACCEL_OK) {
    if (have) e->mpi.MPI_Comm_free(&comm);
    return status;
  }
  *out = comm;
  return ACCEL_OK;
}
