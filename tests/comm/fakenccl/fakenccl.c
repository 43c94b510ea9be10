// SPDX-License-Identifier: MIT
//
// libfakenccl and libfakerccl: test-only stand-ins for libnccl.so.2 and
// librccl.so.1, loaded by the nccl and rccl engines through
// ACCEL_COMM_NCCL_LIBRARY and ACCEL_COMM_RCCL_LIBRARY. They prove the
// engines' plumbing across real processes, not NVIDIA or AMD hardware:
// device memory is the fake drivers' host memory (tests/cuda/fakecuda,
// tests/rocm/fakehip), and the ranks talk over TCP on one machine.
//
// - ncclGetUniqueId listens on an ephemeral port and writes its address
//   into the id; ncclCommInitRank connects every rank to the root, which
//   hands out every rank's own listening port, and the ranks then join a
//   full mesh of TCP connections (fakenccl_init.c). ncclCommSplit builds a
//   new mesh among each color's ranks.
// - Non-blocking communicators (ncclCommInitRankConfig, blocking = 0), as
//   NCCL documents them: init returns ncclInProgress with the
//   communicator, whose set-up runs on a thread of its own until
//   ncclCommGetAsyncError reports ncclSuccess or the error, and which
//   ncclCommAbort stops. A call, ncclGroupEnd or ncclCommSplit on such a
//   communicator returns ncclInProgress and puts nothing on the stream
//   until the next ncclCommGetAsyncError (NCCL's background thread, made
//   as late as it may be, so an engine that touches the stream first sees
//   wrong results); using a communicator still in progress is
//   ncclInvalidArgument. A split's child inherits the parent's mode.
// - A call (or the calls between ncclGroupStart and ncclGroupEnd) runs on
//   its stream: on a fakecuda stream's worker thread (fakecuda_enqueue), so
//   that the engine's event, polling and timeout paths are real; on fakehip
//   after hipStreamSynchronize, in the caller. All calls of a group must be
//   on one stream. Every rank sends its whole input to the peers that need
//   it and reduces what it receives in rank order, so every rank computes
//   the same bits; f16 and bf16 are combined in f32 and rounded once per
//   step. The point-to-point calls of a group move together, so a ring of
//   sends and receives completes.
// - A peer that closes its connections (it died) fails the call with
//   ncclRemoteError through ncclCommGetAsyncError, and the outputs are left
//   as they were. A silent peer blocks the call until ncclCommAbort (which
//   shuts the connections down) or FAKENCCL_TIMEOUT seconds (default 120).
//
// Not modelled: several streams in one group, ncclConfig_t fields other
// than `blocking` (split takes NULL), registered buffers, ncclAvg and the
// other ops, speed. Environment:
//   FAKENCCL_ADDR     the address put in the unique id (default 127.0.0.1)
//   FAKENCCL_TIMEOUT  seconds a call or set-up waits for a silent peer
//                     (default 120)
//   FAKENCCL_INIT_STALL=R:S  rank R, in ncclCommInitRank(Config), takes
//                     no part in the set-up for S seconds, then exits the
//                     process with status 0 (a rank that passed the
//                     rendezvous and then hung or died)
// At exit, communicators never destroyed or aborted are reported as
// "fakenccl: leak" (the CI's GPU-present stage looks for that line).
#include <accel/plugin_dtype.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "fakenccl.h"

static atomic_int fakenccl_live;  // communicators not destroyed or aborted
static _Thread_local atomic_bool* fakenccl_stop;  // see fakenccl_stop_on

double fakenccl_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double fakenccl_timeout(void) {
  const char* t = getenv("FAKENCCL_TIMEOUT");
  double v = t != NULL ? atof(t) : 0;
  return v > 0 ? v : 120;
}

void fakenccl_fail(ncclComm_t c, ncclResult_t r, const char* format, ...) {
  // The first failure writes its message, then publishes its result, so
  // that a reader who sees the result finds the message.
  if (atomic_exchange(&c->failing, true)) return;
  va_list args;
  va_start(args, format);
  vsnprintf(c->error, sizeof(c->error), format, args);
  va_end(args);
  atomic_store(&c->async, (int)r);
}

// ---------------------------------------------------------------------------
// Sockets.
// ---------------------------------------------------------------------------

void fakenccl_stop_on(atomic_bool* stop) { fakenccl_stop = stop; }

static bool fakenccl_stopped(void) {
  return fakenccl_stop != NULL && atomic_load(fakenccl_stop);
}

int fakenccl_listen(uint32_t addr, uint16_t* port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a;
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = addr;
  socklen_t len = sizeof(a);
  if (bind(fd, (struct sockaddr*)&a, sizeof(a)) != 0 || listen(fd, 64) != 0 ||
      getsockname(fd, (struct sockaddr*)&a, &len) != 0) {
    close(fd);
    return -1;
  }
  (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
  *port = a.sin_port;
  return fd;
}

int fakenccl_connect(uint32_t addr, uint16_t port, double deadline) {
  while (fakenccl_now() < deadline && !fakenccl_stopped()) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    struct sockaddr_in a;
    memset(&a, 0, sizeof(a));
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = addr;
    a.sin_port = port;
    if (connect(fd, (struct sockaddr*)&a, sizeof(a)) == 0) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
      return fd;
    }
    close(fd);
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
  }
  return -1;
}

int fakenccl_accept(int listen_fd, double deadline) {
  struct pollfd p = {listen_fd, POLLIN, 0};
  while (fakenccl_now() < deadline && !fakenccl_stopped()) {
    if (poll(&p, 1, 100) > 0) {
      int fd = accept(listen_fd, NULL, NULL);
      if (fd < 0) continue;
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
      return fd;
    }
  }
  return -1;
}

bool fakenccl_io(int fd, void* data, size_t size, bool out,
                 double deadline) {
  char* p = data;
  while (size > 0) {
    struct pollfd q = {fd, out ? POLLOUT : POLLIN, 0};
    if (fakenccl_now() > deadline || fakenccl_stopped()) return false;
    if (poll(&q, 1, 100) <= 0) continue;
    ssize_t n = out ? send(fd, p, size, MSG_NOSIGNAL) : recv(fd, p, size, 0);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return false;
    }
    p += n;
    size -= (size_t)n;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Setup: the root's table of ports, then the mesh.
// ---------------------------------------------------------------------------

// Joins the mesh of `size` ranks listening at `ports` (network order) of
// `addr`: connects to every lower rank, accepts every higher one. `me`
// listens on `listen_fd`.
bool fakenccl_mesh(ncclComm_t c, int listen_fd, uint32_t addr,
                          const uint16_t* ports, double deadline) {
  for (int r = 0; r < c->rank; r++) {
    int fd = fakenccl_connect(addr, ports[r], deadline);
    uint32_t me = (uint32_t)c->rank;
    if (fd < 0 || !fakenccl_io(fd, &me, sizeof(me), true, deadline)) {
      if (fd >= 0) close(fd);
      return false;
    }
    c->fds[r] = fd;
  }
  for (int n = c->rank + 1; n < c->size; n++) {
    int fd = fakenccl_accept(listen_fd, deadline);
    uint32_t who = 0;
    if (fd < 0 || !fakenccl_io(fd, &who, sizeof(who), false, deadline) ||
        who <= (uint32_t)c->rank || who >= (uint32_t)c->size ||
        c->fds[who] >= 0) {
      if (fd >= 0) close(fd);
      return false;
    }
    c->fds[who] = fd;
  }
  return true;
}

ncclComm_t fakenccl_comm_new(int rank, int size, uint32_t addr) {
  ncclComm_t c = calloc(1, sizeof(*c));
  int* fds = malloc((size_t)size * sizeof(int));
  if (c == NULL || fds == NULL) {
    free(c);
    free(fds);
    return NULL;
  }
  for (int r = 0; r < size; r++) fds[r] = -1;
  c->rank = rank;
  c->size = size;
  c->addr = addr;
  c->fds = fds;
  c->blocking = true;
  atomic_init(&c->refs, 1);
  pthread_mutex_init(&c->lock, NULL);
#ifndef FAKENCCL_HIP
  c->ctx = fakecuda_current();
#endif
  return c;
}

void fakenccl_comm_live(void) { atomic_fetch_add(&fakenccl_live, 1); }

void fakenccl_comm_dead(void) { atomic_fetch_sub(&fakenccl_live, 1); }

void fakenccl_comm_discard(ncclComm_t c) {
  fakenccl_comm_unref(c);
}

void fakenccl_comm_unref(ncclComm_t c) {
  if (atomic_fetch_sub(&c->refs, 1) != 1) return;
  for (int r = 0; r < c->size; r++) {
    if (c->fds[r] >= 0) close(c->fds[r]);
  }
  pthread_mutex_destroy(&c->lock);
  free(c->fds);
  free(c);
}

FAKENCCL_API ncclResult_t ncclGetVersion(int* version) {
  *version = 21800;  // NCCL 2.18.0: the newest entry used is ncclCommSplit
  return ncclSuccess;
}

FAKENCCL_API const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

FAKENCCL_API const char* ncclGetLastError(ncclComm_t c) {
  return c != NULL ? c->error : "";
}

// NCCL: the communicator must be ready (not ncclInProgress) before it is
// used, except by ncclCommGetAsyncError, ncclCommDestroy and
// ncclCommAbort.
static ncclResult_t fakenccl_ready(ncclComm_t c) {
  if (c == NULL) return ncclInvalidArgument;
  return atomic_load(&c->async) == ncclInProgress ? ncclInvalidArgument
                                                  : ncclSuccess;
}

FAKENCCL_API ncclResult_t ncclCommCount(ncclComm_t c, int* count) {
  if (fakenccl_ready(c) != ncclSuccess || count == NULL) {
    return ncclInvalidArgument;
  }
  *count = c->size;
  return ncclSuccess;
}

FAKENCCL_API ncclResult_t ncclCommUserRank(ncclComm_t c, int* rank) {
  if (fakenccl_ready(c) != ncclSuccess || rank == NULL) {
    return ncclInvalidArgument;
  }
  *rank = c->rank;
  return ncclSuccess;
}

FAKENCCL_API ncclResult_t ncclCommGetAsyncError(ncclComm_t c,
                                                ncclResult_t* result) {
  if (c == NULL || result == NULL) return ncclInvalidArgument;
  if (!c->blocking) fakenccl_settle(c);
  *result = (ncclResult_t)atomic_load(&c->async);
  // The set-up thread stores the result as its last act: it is done.
  if (*result != ncclInProgress) fakenccl_setup_join(c);
  return ncclSuccess;
}

FAKENCCL_API ncclResult_t ncclCommDestroy(ncclComm_t c) {
  if (c == NULL) return ncclInvalidArgument;
  fakenccl_setup_join(c);  // NCCL: destroy may block on a set-up
  fakenccl_forget(c);
  fakenccl_comm_dead();
  fakenccl_comm_unref(c);
  return ncclSuccess;
}

FAKENCCL_API ncclResult_t ncclCommAbort(ncclComm_t c) {
  if (c == NULL) return ncclInvalidArgument;
  // A call blocked on a connection, or a set-up, sees the flag or the
  // connection shut and gives up.
  atomic_store(&c->aborted, true);
  fakenccl_setup_join(c);
  fakenccl_forget(c);
  for (int r = 0; r < c->size; r++) {
    if (c->fds[r] >= 0) shutdown(c->fds[r], SHUT_RDWR);
  }
  fakenccl_fail(c, ncclRemoteError, "the communicator was aborted");
  fakenccl_comm_dead();
  fakenccl_comm_unref(c);
  return ncclSuccess;
}

__attribute__((destructor)) static void fakenccl_report(void) {
  int live = atomic_load(&fakenccl_live);
  if (live > 0) {
    fprintf(stderr,
            FAKENCCL_NAME ": leak: %d communicator(s) never destroyed\n",
            live);
  }
}

