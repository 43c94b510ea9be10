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
//   full mesh of TCP connections. ncclCommSplit builds a new mesh among
//   each color's ranks.
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
// Not modelled: several streams in one group, ncclConfig_t (split takes
// NULL), registered buffers, ncclAvg and the other ops, speed. Environment:
//   FAKENCCL_ADDR     the address put in the unique id (default 127.0.0.1)
//   FAKENCCL_TIMEOUT  seconds a call waits for a silent peer (default 120)
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
static pthread_mutex_t fakenccl_listen_lock = PTHREAD_MUTEX_INITIALIZER;
static int fakenccl_listen_fd = -1;  // from the last ncclGetUniqueId
static uint32_t fakenccl_listen_nonce;

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

static uint32_t fakenccl_addr(void) {
  const char* a = getenv("FAKENCCL_ADDR");
  struct in_addr in;
  if (a == NULL || inet_pton(AF_INET, a, &in) != 1) {
    in.s_addr = htonl(INADDR_LOOPBACK);
  }
  return in.s_addr;
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

static int fakenccl_connect(uint32_t addr, uint16_t port, double deadline) {
  while (fakenccl_now() < deadline) {
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

static int fakenccl_accept(int listen_fd, double deadline) {
  struct pollfd p = {listen_fd, POLLIN, 0};
  while (fakenccl_now() < deadline) {
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

// Moves all `size` bytes, blocking (setup only). False on failure.
static bool fakenccl_io(int fd, void* data, size_t size, bool out,
                        double deadline) {
  char* p = data;
  while (size > 0) {
    struct pollfd q = {fd, out ? POLLOUT : POLLIN, 0};
    if (fakenccl_now() > deadline) return false;
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
  atomic_init(&c->refs, 1);
  pthread_mutex_init(&c->lock, NULL);
#ifndef FAKENCCL_HIP
  c->ctx = fakecuda_current();
#endif
  return c;
}

void fakenccl_comm_live(void) { atomic_fetch_add(&fakenccl_live, 1); }

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

FAKENCCL_API ncclResult_t ncclCommInitRank(ncclComm_t* out, int size,
                                           ncclUniqueId id, int rank) {
  fakenccl_id_t f;
  memcpy(&f, id.internal, sizeof(f));
  if (out == NULL || size < 1 || rank < 0 || rank >= size ||
      f.magic != FAKENCCL_MAGIC) {
    return ncclInvalidArgument;
  }
  *out = NULL;
  double deadline = fakenccl_now() + fakenccl_timeout();
  ncclComm_t c = fakenccl_comm_new(rank, size, f.addr);
  uint16_t* ports = calloc((size_t)size, sizeof(uint16_t));
  uint16_t port = 0;
  int listen_fd = fakenccl_listen(f.addr, &port);
  bool ok = c != NULL && ports != NULL && listen_fd >= 0;
  if (ok && rank == 0) {
    ports[0] = port;
    ok = fakenccl_root(size, &f, ports, deadline);
  } else if (ok) {
    int fd = fakenccl_connect(f.addr, f.port, deadline);
    uint32_t hello[3] = {f.nonce, (uint32_t)rank, port};
    ok = fd >= 0 && fakenccl_io(fd, hello, sizeof(hello), true, deadline) &&
         fakenccl_io(fd, ports, size * sizeof(uint16_t), false, deadline);
    if (fd >= 0) close(fd);
  }
  if (ok) ok = fakenccl_mesh(c, listen_fd, f.addr, ports, deadline);
  if (listen_fd >= 0) close(listen_fd);
  free(ports);
  if (!ok) {
    if (c != NULL) fakenccl_comm_discard(c);
    return ncclSystemError;
  }
  fakenccl_comm_live();
  *out = c;
  return ncclSuccess;
}

FAKENCCL_API ncclResult_t ncclCommCount(ncclComm_t c, int* count) {
  if (c == NULL || count == NULL) return ncclInvalidArgument;
  *count = c->size;
  return ncclSuccess;
}

FAKENCCL_API ncclResult_t ncclCommUserRank(ncclComm_t c, int* rank) {
  if (c == NULL || rank == NULL) return ncclInvalidArgument;
  *rank = c->rank;
  return ncclSuccess;
}

FAKENCCL_API ncclResult_t ncclCommGetAsyncError(ncclComm_t c,
                                                ncclResult_t* result) {
  if (c == NULL || result == NULL) return ncclInvalidArgument;
  *result = (ncclResult_t)atomic_load(&c->async);
  return ncclSuccess;
}

FAKENCCL_API ncclResult_t ncclCommDestroy(ncclComm_t c) {
  if (c == NULL) return ncclInvalidArgument;
  atomic_fetch_sub(&fakenccl_live, 1);
  fakenccl_comm_unref(c);
  return ncclSuccess;
}

FAKENCCL_API ncclResult_t ncclCommAbort(ncclComm_t c) {
  if (c == NULL) return ncclInvalidArgument;
  // A call blocked on a connection sees it shut and gives up.
  atomic_store(&c->aborted, true);
  for (int r = 0; r < c->size; r++) {
    if (c->fds[r] >= 0) shutdown(c->fds[r], SHUT_RDWR);
  }
  fakenccl_fail(c, ncclRemoteError, "the communicator was aborted");
  atomic_fetch_sub(&fakenccl_live, 1);
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

