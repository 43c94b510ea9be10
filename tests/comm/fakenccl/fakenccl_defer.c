// SPDX-License-Identifier: MIT
//
// Non-blocking communicators of the fake NCCL: a launch (a call, or a
// group at ncclGroupEnd) or a split's result is held back, and the
// communicators report ncclInProgress, until the next
// ncclCommGetAsyncError on one of them. See fakenccl.c.
#include <stdlib.h>
#include <string.h>

#include "fakenccl.h"

typedef struct fakenccl_deferred {
  fakenccl_stream_t stream;
  size_t count;
  fakenccl_op_t ops[];
} fakenccl_deferred_t;

static pthread_mutex_t fakenccl_defer_lock = PTHREAD_MUTEX_INITIALIZER;

static void fakenccl_state(ncclComm_t c, ncclResult_t from, ncclResult_t to) {
  int expect = (int)from;
  atomic_compare_exchange_strong(&c->async, &expect, (int)to);
}

// Holds `ops` back: each communicator's state becomes ncclInProgress.
static ncclResult_t fakenccl_defer(const fakenccl_op_t* ops, size_t n,
                                   fakenccl_stream_t stream) {
  fakenccl_deferred_t* d = malloc(sizeof(*d) + n * sizeof(ops[0]));
  if (d == NULL) return ncclSystemError;
  d->stream = stream;
  d->count = n;
  memcpy(d->ops, ops, n * sizeof(ops[0]));
  pthread_mutex_lock(&fakenccl_defer_lock);
  for (size_t i = 0; i < n; i++) {
    d->ops[i].comm->deferred = d;
    fakenccl_state(d->ops[i].comm, ncclSuccess, ncclInProgress);
  }
  pthread_mutex_unlock(&fakenccl_defer_lock);
  return ncclInProgress;
}

ncclResult_t fakenccl_launch(const fakenccl_op_t* ops, size_t n,
                             fakenccl_stream_t stream) {
  for (size_t i = 0; i < n; i++) {
    if (!ops[i].comm->blocking) return fakenccl_defer(ops, n, stream);
  }
  return fakenccl_launch_now(ops, n, stream);
}

// Detaches `d` from its communicators; the lock is held.
static void fakenccl_detach(fakenccl_deferred_t* d) {
  for (size_t i = 0; i < d->count; i++) d->ops[i].comm->deferred = NULL;
}

void fakenccl_settle(ncclComm_t c) {
  // Under the lock, so that no thread sees ncclSuccess before the batch
  // is on its stream.
  pthread_mutex_lock(&fakenccl_defer_lock);
  fakenccl_deferred_t* d = c->deferred;
  if (d != NULL) {
    fakenccl_detach(d);
    for (size_t i = 0; i < d->count; i++) {
      fakenccl_state(d->ops[i].comm, ncclInProgress, ncclSuccess);
    }
    ncclResult_t r = fakenccl_launch_now(d->ops, d->count, d->stream);
    for (size_t i = 0; r != ncclSuccess && i < d->count; i++) {
      fakenccl_fail(d->ops[i].comm, r, "rank %d: the launch failed",
                    d->ops[i].comm->rank);
    }
    free(d);
  }
  if (c->split_out != NULL) {
    *c->split_out = c->split_child;
    fakenccl_comm_live();
    c->split_out = NULL;
    c->split_child = NULL;
    fakenccl_state(c, ncclInProgress, ncclSuccess);
  }
  pthread_mutex_unlock(&fakenccl_defer_lock);
}

void fakenccl_forget(ncclComm_t c) {
  pthread_mutex_lock(&fakenccl_defer_lock);
  fakenccl_deferred_t* d = c->deferred;
  if (d != NULL) {
    fakenccl_detach(d);
    for (size_t i = 0; i < d->count; i++) {
      ncclComm_t other = d->ops[i].comm;
      if (other == c) continue;
      fakenccl_fail(other, ncclInvalidUsage,
                    "rank %d: a communicator of its group was destroyed "
                    "before the group was launched",
                    other->rank);
    }
    free(d);
  }
  if (c->split_out != NULL) {
    fakenccl_comm_discard(c->split_child);  // never handed over
    c->split_out = NULL;
    c->split_child = NULL;
  }
  pthread_mutex_unlock(&fakenccl_defer_lock);
}

ncclResult_t fakenccl_defer_split(ncclComm_t parent, ncclComm_t* out,
                                  ncclComm_t child) {
  pthread_mutex_lock(&fakenccl_defer_lock);
  parent->split_out = out;
  parent->split_child = child;
  fakenccl_state(parent, ncclSuccess, ncclInProgress);
  pthread_mutex_unlock(&fakenccl_defer_lock);
  return ncclInProgress;
}
