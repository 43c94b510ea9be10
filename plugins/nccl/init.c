// SPDX-License-Identifier: MIT
//
// Forming NCCL (or RCCL) communicators. Through the core's rendezvous
// store, rank 0 makes the ncclUniqueId and the store carries it to every
// rank, which then creates its communicator on its device.
//
// The rendezvous proves that every rank was there a moment ago, not that
// it will take part in NCCL's own set-up: a rank that dies or stalls in
// between would hold the others in a blocking ncclCommInitRank for ever.
// So the communicator is made non-blocking (ncclCommInitRankConfig with
// `blocking = 0`, NCCL 2.14 and later, and RCCL): the call returns
// ncclInProgress, and ncclCommGetAsyncError is polled until the set-up is
// done, for at most the communicator's timeout (ACCEL_COMM_TIMEOUT), after
// which ncclCommAbort stops it. This is the pattern NCCL documents for
// aborting a communicator safely. A library without
// ncclCommInitRankConfig (NCCL older than 2.14) gets the blocking
// ncclCommInitRank, unbounded as before (docs/collectives.md).
//
// A split of a non-blocking communicator is non-blocking too (the child
// inherits the parent's configuration): ncclCommSplit may return
// ncclInProgress, the new communicator appears when the parent's state
// leaves ncclInProgress, and the same bound applies.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel_nccl.h"

// What rank 0 sends through the store: its ncclUniqueId, or that it has
// none (then every rank fails at once instead of waiting for it).
typedef struct accel_nccl_id_blob {
  int32_t ok;
  int32_t reserved;
  ncclUniqueId id;
} accel_nccl_id_blob_t;

static double accel_nccl_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

accel_status_t accel_nccl_settle(accel_nccl_comm_t* c, ncclComm_t comm,
                                 const char* what) {
  accel_nccl_lib_t* n = &c->engine->nccl;
  double start = accel_nccl_now();
  long pause_ms = 1;  // 1 ms, growing to 10 ms: quick sets-up return fast
  for (;;) {
    ncclResult_t state = ncclInProgress;
    ncclResult_t q = n->ncclCommGetAsyncError(comm, &state);
    if (q != ncclSuccess) return accel_nccl_result(c, what, q);
    if (state == ncclSuccess) return ACCEL_OK;
    if (state != ncclInProgress) return accel_nccl_result(c, what, state);
    double waited = accel_nccl_now() - start;
    if (waited > c->timeout_s) {
      return accel_nccl_fail(
          c, ACCEL_ERROR_TIMEOUT,
          "%s did not finish within %.1f s (waited %.1f s, "
          "ACCEL_COMM_TIMEOUT): a rank may have died or stalled after the "
          "rendezvous; the communicator was aborted",
          what, c->timeout_s, waited);
    }
    struct timespec ts = {0, pause_ms * 1000 * 1000};
    nanosleep(&ts, NULL);
    if (pause_ms < 10) pause_ms++;
  }
}

// Creates `c->comm` from `id`; the device is current. On failure
// `c->comm` is NULL and nothing is left of it.
static accel_status_t accel_nccl_init_rank(accel_nccl_comm_t* c,
                                           ncclUniqueId id) {
  accel_nccl_lib_t* n = &c->engine->nccl;
  ncclResult_t r;
  if (n->ncclCommInitRankConfig == NULL) {
    // NCCL older than 2.14: no non-blocking communicators, so no bound on
    // a rank that never joins (docs/collectives.md).
    r = n->ncclCommInitRank(&c->comm, c->size, id, c->rank);
    if (r == ncclSuccess) return ACCEL_OK;
    c->comm = NULL;
    return accel_nccl_result(c, "ncclCommInitRank", r);
  }
  ncclConfig_t config = {
      .size = sizeof(config),
      .magic = ACCEL_NCCL_CONFIG_MAGIC,
      .version = ACCEL_NCCL_CONFIG_VERSION,
      .blocking = 0,
      .cgaClusterSize = ACCEL_NCCL_CONFIG_UNDEF_INT,
      .minCTAs = ACCEL_NCCL_CONFIG_UNDEF_INT,
      .maxCTAs = ACCEL_NCCL_CONFIG_UNDEF_INT,
      .netName = NULL,
      .splitShare = ACCEL_NCCL_CONFIG_UNDEF_INT,
  };
  c->comm = NULL;
  r = n->ncclCommInitRankConfig(&c->comm, c->size, id, c->rank, &config);
  accel_status_t status = ACCEL_OK;
  if (r != ncclSuccess && r != ncclInProgress) {
    status = accel_nccl_result(c, "ncclCommInitRank", r);
  } else if (c->comm == NULL) {
    status = accel_nccl_fail(c, ACCEL_ERROR_BACKEND,
                             "ncclCommInitRankConfig returned no "
                             "communicator");
  } else {
    status = accel_nccl_settle(c, c->comm, "ncclCommInitRank");
  }
  if (status != ACCEL_OK && c->comm != NULL) {
    // A set-up that failed or is still running: NCCL documents
    // ncclCommAbort as the way to stop it and free its resources.
    n->ncclCommAbort(c->comm);
    c->comm = NULL;
  }
  return status;
}

// Checks what the core asked for and says what is missing.
static accel_status_t accel_nccl_check_init(
    accel_nccl_engine_t* e, const accel_comm_engine_init_t* init) {
  const accel_host_t* host = e->host;
  size_t need = offsetof(accel_comm_engine_init_t, store) + sizeof(void*);
  if (init->struct_size < need) {
    return host->fail(host, ACCEL_ERROR_INCOMPATIBLE,
                      "the core predates engine ABI 1.1 (no rendezvous)");
  }
  if (init->native_comm != NULL) {
    return host->fail(host, ACCEL_ERROR_UNSUPPORTED,
                      ACCEL_NCCL_NAME " cannot adopt a native communicator");
  }
  if (init->rank < 0 || init->store == NULL) {
    return host->fail(
        host, ACCEL_ERROR_UNSUPPORTED,
        ACCEL_NCCL_NAME " forms communicators through the rendezvous: set "
        "ACCEL_COMM_RANK, ACCEL_COMM_SIZE and either ACCEL_COMM_ADDR and "
        "ACCEL_COMM_PORT, or ACCEL_COMM_FILE (docs/collectives.md)");
  }
  if (init->device_backend == NULL ||
      strcmp(init->device_backend, ACCEL_NCCL_BACKEND) != 0) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      ACCEL_NCCL_NAME " serves " ACCEL_NCCL_BACKEND
                      " devices only");
  }
  return ACCEL_OK;
}

accel_status_t accel_nccl_comm_create(void* engine,
                                      const accel_comm_engine_init_t* init,
                                      void** out_comm, int32_t* out_rank,
                                      int32_t* out_size) {
  accel_nccl_engine_t* e = engine;
  accel_status_t status = accel_nccl_start(e);
  if (status == ACCEL_OK) status = accel_nccl_check_init(e, init);
  if (status != ACCEL_OK) return status;
  accel_nccl_comm_t* c = calloc(1, sizeof(*c));
  if (c == NULL) {
    return e->host->fail(e->host, ACCEL_ERROR_OUT_OF_MEMORY,
                         ACCEL_NCCL_NAME " communicator");
  }
  c->engine = e;
  c->rank = init->rank;
  c->size = init->size;
  c->timeout_s = init->timeout_s;
  c->device = (int)init->native_device;
  status = accel_nccl_bind(c);
  int saved = 0;
  if (status == ACCEL_OK && !accel_nccl_enter(c, &saved)) {
    status = accel_nccl_fail(c, ACCEL_ERROR_BACKEND,
                             "cannot make device %d current", c->device);
  }
  if (status != ACCEL_OK) {
    accel_nccl_unbind(c);
    return status;
  }
  accel_nccl_id_blob_t blob;
  memset(&blob, 0, sizeof(blob));
  ncclResult_t r = ncclSuccess;
  if (c->rank == 0) {
    r = e->nccl.ncclGetUniqueId(&blob.id);
    blob.ok = r == ncclSuccess;
  }
  status = init->store->broadcast(init->store, &blob, sizeof(blob), 0);
  if (status == ACCEL_OK && r != ncclSuccess) {
    status = accel_nccl_result(c, "ncclGetUniqueId", r);
  } else if (status == ACCEL_OK && !blob.ok) {
    status = accel_nccl_fail(c, ACCEL_ERROR_BACKEND,
                             "rank 0 could not make the ncclUniqueId");
  }
  if (status == ACCEL_OK) status = accel_nccl_init_rank(c, blob.id);
  accel_nccl_leave(c, saved);
  if (status != ACCEL_OK) {
    accel_nccl_unbind(c);
    return status;
  }
  *out_comm = c;
  *out_rank = c->rank;
  *out_size = c->size;
  return ACCEL_OK;
}

// Splits `c` into `s->comm`; the device is current. A timeout aborts the
// parent and the child, as NCCL documents for a non-blocking split (the
// core then finds the parent broken).
static accel_status_t accel_nccl_split_rank(accel_nccl_comm_t* c,
                                            accel_nccl_comm_t* s, int color,
                                            int key) {
  accel_nccl_lib_t* n = &c->engine->nccl;
  ncclResult_t r = n->ncclCommSplit(c->comm, color, key, &s->comm, NULL);
  accel_status_t status = ACCEL_OK;
  if (r == ncclInProgress) {
    // The child appears in `s->comm` once the parent's state settles.
    status = accel_nccl_settle(c, c->comm, "ncclCommSplit");
    if (status == ACCEL_ERROR_TIMEOUT) {
      c->aborted = true;
      n->ncclCommAbort(c->comm);
    }
    if (status == ACCEL_OK && s->comm != NULL) {
      status = accel_nccl_settle(c, s->comm, "ncclCommSplit");
    }
  } else if (r != ncclSuccess) {
    status = accel_nccl_result(c, "ncclCommSplit", r);
  }
  if (status == ACCEL_OK && s->comm == NULL) {
    status = accel_nccl_fail(c, ACCEL_ERROR_BACKEND,
                             "ncclCommSplit returned no communicator");
  }
  if (status == ACCEL_OK) r = n->ncclCommUserRank(s->comm, &s->rank);
  if (status == ACCEL_OK && r == ncclSuccess) {
    r = n->ncclCommCount(s->comm, &s->size);
  }
  if (status == ACCEL_OK && r != ncclSuccess) {
    status = accel_nccl_result(c, "ncclCommSplit", r);
  }
  if (status != ACCEL_OK && s->comm != NULL) {
    n->ncclCommAbort(s->comm);
    s->comm = NULL;
  }
  return status;
}

accel_status_t accel_nccl_comm_split(void* comm, int32_t color, int32_t key,
                                     void** out_comm, int32_t* out_rank,
                                     int32_t* out_size) {
  accel_nccl_comm_t* c = comm;
  accel_nccl_engine_t* e = c->engine;
  if (e->nccl.ncclCommSplit == NULL) {
    return accel_nccl_fail(c, ACCEL_ERROR_UNSUPPORTED,
                           "this library has no ncclCommSplit (NCCL 2.18 or "
                           "newer has it)");
  }
  accel_nccl_comm_t* s = calloc(1, sizeof(*s));
  if (s == NULL) {
    return e->host->fail(e->host, ACCEL_ERROR_OUT_OF_MEMORY,
                         ACCEL_NCCL_NAME " communicator");
  }
  *s = *c;
  s->comm = NULL;
  s->ctx = NULL;
  accel_status_t status = accel_nccl_bind(s);
  int saved = 0;
  if (status == ACCEL_OK && accel_nccl_enter(c, &saved)) {
    status = accel_nccl_split_rank(c, s, color, key);
    accel_nccl_leave(c, saved);
  } else if (status == ACCEL_OK) {
    status = accel_nccl_fail(c, ACCEL_ERROR_BACKEND,
                             "cannot make device %d current", c->device);
  }
  if (status != ACCEL_OK) {
    accel_nccl_unbind(s);
    return status;
  }
  *out_comm = s;
  *out_rank = s->rank;
  *out_size = s->size;
  return ACCEL_OK;
}
