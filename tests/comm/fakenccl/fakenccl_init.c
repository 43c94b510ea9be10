// SPDX-License-Identifier: MIT
//
// Forming communicators in the fake NCCL: ncclGetUniqueId,
// ncclCommInitRank, and ncclCommInitRankConfig with its non-blocking
// mode (the set-up on a thread of its own, stopped by ncclCommAbort).
// See fakenccl.c for what is modelled.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fakenccl.h"

static pthread_mutex_t fakenccl_listen_lock = PTHREAD_MUTEX_INITIALIZER;
static int fakenccl_listen_fd = -1;  // from the last ncclGetUniqueId
static uint32_t fakenccl_listen_nonce;

// What a set-up needs: the communicator and its id.
typedef struct fakenccl_setup_job {
  ncclComm_t comm;
  fakenccl_id_t id;
} fakenccl_setup_job_t;

static uint32_t fakenccl_addr(void) {
  const char* a = getenv("FAKENCCL_ADDR");
  struct in_addr in;
  if (a == NULL || inet_pton(AF_INET, a, &in) != 1) {
    in.s_addr = htonl(INADDR_LOOPBACK);
  }
  return in.s_addr;
}

FAKENCCL_API ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  fakenccl_id_t f = {FAKENCCL_MAGIC, 0, fakenccl_addr(), 0};
  pthread_mutex_lock(&fakenccl_listen_lock);
  if (fakenccl_listen_fd >= 0) close(fakenccl_listen_fd);
  fakenccl_listen_fd = fakenccl_listen(f.addr, &f.port);
  fakenccl_listen_nonce = (uint32_t)getpid() ^ (uint32_t)time(NULL);
  f.nonce = fakenccl_listen_nonce;
  int fd = fakenccl_listen_fd;
  pthread_mutex_unlock(&fakenccl_listen_lock);
  if (fd < 0) return ncclSystemError;
  memset(id, 0, sizeof(*id));
  memcpy(id->internal, &f, sizeof(f));
  return ncclSuccess;
}

// FAKENCCL_INIT_STALL=R:S: rank R stays out of the set-up for S seconds,
// then the process exits (a rank lost after the rendezvous).
static void fakenccl_maybe_stall(int rank) {
  const char* v = getenv("FAKENCCL_INIT_STALL");
  int who = -1;
  unsigned seconds = 0;
  if (v == NULL || sscanf(v, "%d:%u", &who, &seconds) != 2 || who != rank) {
    return;
  }
  fprintf(stderr, FAKENCCL_NAME ": rank %d stalls in init for %u s, then "
                  "exits (FAKENCCL_INIT_STALL)\n",
          rank, seconds);
  sleep(seconds);
  _exit(0);
}

// The root's side of init: gathers every rank's port and sends the table.
static bool fakenccl_root(int size, const fakenccl_id_t* f, uint16_t* ports,
                          double deadline) {
  pthread_mutex_lock(&fakenccl_listen_lock);
  int listen_fd = fakenccl_listen_fd;
  bool mine = listen_fd >= 0 && fakenccl_listen_nonce == f->nonce;
  fakenccl_listen_fd = -1;
  pthread_mutex_unlock(&fakenccl_listen_lock);
  if (!mine) return false;  // the id was not made here
  int* fds = calloc((size_t)size, sizeof(int));
  bool ok = fds != NULL;
  for (int n = 1; ok && n < size; n++) {
    uint32_t hello[3];  // nonce, rank, port
    int fd = fakenccl_accept(listen_fd, deadline);
    ok = fd >= 0 && fakenccl_io(fd, hello, sizeof(hello), false, deadline) &&
         hello[0] == f->nonce && hello[1] > 0 && hello[1] < (uint32_t)size &&
         fds[hello[1]] == 0;
    if (ok) {
      fds[hello[1]] = fd;
      ports[hello[1]] = (uint16_t)hello[2];
    } else if (fd >= 0) {
      close(fd);
    }
  }
  for (int r = 1; fds != NULL && r < size; r++) {
    if (ok) ok = fakenccl_io(fds[r], ports, size * sizeof(uint16_t), true,
                             deadline);
    if (fds[r] > 0) close(fds[r]);
  }
  free(fds);
  close(listen_fd);
  return ok;
}

// Connects `c` to its peers as `f` says. False on failure or a stop.
static bool fakenccl_setup_run(ncclComm_t c, const fakenccl_id_t* f) {
  double deadline = fakenccl_now() + fakenccl_timeout();
  uint16_t* ports = calloc((size_t)c->size, sizeof(uint16_t));
  uint16_t port = 0;
  int listen_fd = fakenccl_listen(f->addr, &port);
  bool ok = ports != NULL && listen_fd >= 0;
  if (ok && c->rank == 0) {
    ports[0] = port;
    ok = fakenccl_root(c->size, f, ports, deadline);
  } else if (ok) {
    int fd = fakenccl_connect(f->addr, f->port, deadline);
    uint32_t hello[3] = {f->nonce, (uint32_t)c->rank, port};
    ok = fd >= 0 && fakenccl_io(fd, hello, sizeof(hello), true, deadline) &&
         fakenccl_io(fd, ports, c->size * sizeof(uint16_t), false, deadline);
    if (fd >= 0) close(fd);
  }
  if (ok) ok = fakenccl_mesh(c, listen_fd, f->addr, ports, deadline);
  if (listen_fd >= 0) close(listen_fd);
  free(ports);
  return ok;
}

// The set-up of a non-blocking communicator, on its own thread: the
// result goes where ncclCommGetAsyncError reads it.
static void* fakenccl_setup_main(void* arg) {
  fakenccl_setup_job_t* job = arg;
  ncclComm_t c = job->comm;
  fakenccl_stop_on(&c->aborted);
  bool ok = fakenccl_setup_run(c, &job->id);
  fakenccl_stop_on(NULL);
  if (!ok) {
    fakenccl_fail(c, ncclSystemError,
                  "rank %d: the set-up of a communicator of %d ranks failed "
                  "(a peer missing, or aborted)",
                  c->rank, c->size);
  } else {
    int expect = ncclInProgress;
    atomic_compare_exchange_strong(&c->async, &expect, ncclSuccess);
  }
  free(job);
  return NULL;
}

void fakenccl_setup_join(ncclComm_t c) {
  // Once, whichever of ncclCommGetAsyncError, destroy and abort comes
  // first (a process that ends without destroying its communicator must
  // not leave the thread unjoined).
  if (atomic_exchange(&c->setting_up, false)) pthread_join(c->setup, NULL);
}

// Checks the arguments of an init and reads the id.
static bool fakenccl_init_args(ncclComm_t* out, int size, ncclUniqueId id,
                               int rank, fakenccl_id_t* f) {
  memcpy(f, id.internal, sizeof(*f));
  return out != NULL && size >= 1 && rank >= 0 && rank < size &&
         f->magic == FAKENCCL_MAGIC;
}

FAKENCCL_API ncclResult_t ncclCommInitRank(ncclComm_t* out, int size,
                                           ncclUniqueId id, int rank) {
  fakenccl_id_t f;
  if (!fakenccl_init_args(out, size, id, rank, &f)) {
    return ncclInvalidArgument;
  }
  *out = NULL;
  fakenccl_maybe_stall(rank);
  ncclComm_t c = fakenccl_comm_new(rank, size, f.addr);
  if (c == NULL) return ncclSystemError;
  if (!fakenccl_setup_run(c, &f)) {
    fakenccl_comm_discard(c);
    return ncclSystemError;
  }
  fakenccl_comm_live();
  *out = c;
  return ncclSuccess;
}

// Reads `blocking` as NCCL does: from a config made by
// NCCL_CONFIG_INITIALIZER of NCCL 2.14 or later; unset means blocking.
static ncclResult_t fakenccl_config_blocking(const ncclConfig_t* config,
                                             bool* blocking) {
  *blocking = true;
  if (config == NULL) return ncclSuccess;
  size_t size = 0;
  memcpy(&size, config, sizeof(size));
  if (size < offsetof(ncclConfig_t, blocking) + sizeof(int) ||
      config->magic != FAKENCCL_CONFIG_MAGIC) {
    return ncclInvalidArgument;  // not from NCCL_CONFIG_INITIALIZER
  }
  if (config->version < 21400) return ncclSuccess;
  int b = config->blocking;
  if (b != FAKENCCL_CONFIG_UNDEF_INT && b != 0 && b != 1) {
    return ncclInvalidArgument;
  }
  *blocking = b != 0;
  return ncclSuccess;
}

FAKENCCL_API ncclResult_t ncclCommInitRankConfig(ncclComm_t* out, int size,
                                                 ncclUniqueId id, int rank,
                                                 ncclConfig_t* config) {
  fakenccl_id_t f;
  bool blocking = true;
  if (!fakenccl_init_args(out, size, id, rank, &f) ||
      fakenccl_config_blocking(config, &blocking) != ncclSuccess) {
    if (out != NULL) *out = NULL;
    return ncclInvalidArgument;
  }
  if (blocking) return ncclCommInitRank(out, size, id, rank);
  *out = NULL;
  fakenccl_maybe_stall(rank);
  ncclComm_t c = fakenccl_comm_new(rank, size, f.addr);
  fakenccl_setup_job_t* job = malloc(sizeof(*job));
  if (c == NULL || job == NULL) {
    if (c != NULL) fakenccl_comm_discard(c);
    free(job);
    return ncclSystemError;
  }
  c->blocking = false;
  atomic_store(&c->async, ncclInProgress);
  job->comm = c;
  job->id = f;
  if (pthread_create(&c->setup, NULL, fakenccl_setup_main, job) != 0) {
    fakenccl_comm_discard(c);
    free(job);
    return ncclSystemError;
  }
  atomic_store(&c->setting_up, true);
  // As NCCL does, the communicator is the user's at once: poll it with
  // ncclCommGetAsyncError, and abort or destroy it whatever happens.
  fakenccl_comm_live();
  *out = c;
  return ncclInProgress;
}
