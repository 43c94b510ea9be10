// SPDX-License-Identifier: MIT
//
// The calls of the fake NCCL: collectives and point to point, groups,
// running a batch of calls on its stream, and ncclCommSplit. See
// fakenccl.c for what is modelled.
#include <accel/plugin_dtype.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fakenccl.h"

// One message to or from a peer: a 16-byte header (magic, bytes), then
// the payload. Messages to one peer in one direction go in array order.
typedef struct fakenccl_msg {
  int peer;
  bool out;
  char* data;
  uint64_t bytes;
  uint64_t header[2];
  uint64_t done;  // of header and payload
} fakenccl_msg_t;

// The calling thread's open group.
static _Thread_local struct {
  int depth;
  fakenccl_op_t* ops;
  size_t count, capacity;
  fakenccl_stream_t stream;
  ncclResult_t error;
} fakenccl_group;

static size_t fakenccl_size(ncclDataType_t t) {
  return t == ncclFloat16 || t == ncclBfloat16 ? 2 : 4;
}

// ---------------------------------------------------------------------------
// Moving messages.
// ---------------------------------------------------------------------------

static fakenccl_msg_t fakenccl_msg(int peer, bool out, const void* data,
                                   uint64_t bytes) {
  fakenccl_msg_t m;
  memset(&m, 0, sizeof(m));
  m.peer = peer;
  m.out = out;
  m.data = (char*)data;
  m.bytes = bytes;
  m.header[0] = FAKENCCL_MAGIC;
  m.header[1] = bytes;
  return m;
}

// Moves what it can of `m` without blocking. False on a lost or confused
// peer (recorded on `c`).
static bool fakenccl_step(ncclComm_t c, fakenccl_msg_t* m) {
  int fd = c->fds[m->peer];
  uint64_t total = sizeof(m->header) + m->bytes;
  while (m->done < total) {
    char* p;
    size_t n;
    if (m->done < sizeof(m->header)) {
      p = (char*)m->header + m->done;
      n = sizeof(m->header) - (size_t)m->done;
    } else {
      p = m->data + (m->done - sizeof(m->header));
      n = (size_t)(total - m->done);
    }
    uint64_t expect = m->bytes;
    ssize_t k = m->out ? send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT)
                       : recv(fd, p, n, MSG_DONTWAIT);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      return true;
    }
    if (k <= 0) {
      fakenccl_fail(c, ncclRemoteError,
                    "rank %d: the connection to rank %d was lost (%s)",
                    c->rank, m->peer, k == 0 ? "closed" : strerror(errno));
      return false;
    }
    m->done += (uint64_t)k;
    if (!m->out && m->done == sizeof(m->header) &&
        (m->header[0] != FAKENCCL_MAGIC || m->header[1] != expect)) {
      fakenccl_fail(c, ncclInvalidUsage,
                    "rank %d: rank %d sent %llu bytes where %llu were "
                    "expected (mismatched calls)",
                    c->rank, m->peer, (unsigned long long)m->header[1],
                    (unsigned long long)expect);
      return false;
    }
  }
  return true;
}

// Whether `m[i]` is the first unfinished message of its peer and
// direction.
static bool fakenccl_head(const fakenccl_msg_t* m, size_t i) {
  for (size_t j = 0; j < i; j++) {
    if (m[j].peer == m[i].peer && m[j].out == m[i].out &&
        m[j].done < sizeof(m[j].header) + m[j].bytes) {
      return false;
    }
  }
  return true;
}

// Moves every message; false on a failure (recorded on `c`), an abort, or
// a peer silent for FAKENCCL_TIMEOUT.
static bool fakenccl_move(ncclComm_t c, fakenccl_msg_t* m, size_t n) {
  struct pollfd* p = calloc(n ? n : 1, sizeof(*p));
  size_t* which = calloc(n ? n : 1, sizeof(*which));
  double deadline = fakenccl_now() + fakenccl_timeout();
  bool ok = p != NULL && which != NULL;
  while (ok) {
    if (atomic_load(&c->aborted)) {
      ok = false;
      break;
    }
    nfds_t k = 0;
    for (size_t i = 0; i < n; i++) {
      if (m[i].done == sizeof(m[i].header) + m[i].bytes ||
          !fakenccl_head(m, i)) {
        continue;
      }
      p[k] = (struct pollfd){c->fds[m[i].peer], m[i].out ? POLLOUT : POLLIN,
                             0};
      which[k++] = i;
    }
    if (k == 0) break;  // all done
    if (fakenccl_now() > deadline) {
      fakenccl_fail(c, ncclRemoteError,
                    "rank %d: a peer sent nothing for %.0f s "
                    "(FAKENCCL_TIMEOUT)",
                    c->rank, fakenccl_timeout());
      ok = false;
      break;
    }
    if (poll(p, k, 100) <= 0) continue;
    for (nfds_t i = 0; i < k && ok; i++) {
      if (p[i].revents != 0) ok = fakenccl_step(c, &m[which[i]]);
    }
  }
  free(p);
  free(which);
  return ok;
}

// ---------------------------------------------------------------------------
// Reductions: acc[i] = acc[i] op x[i], in f32 for the 16-bit types.
// ---------------------------------------------------------------------------

static double fakenccl_apply(ncclRedOp_t op, double a, double b) {
  switch (op) {
    case ncclSum: return a + b;
    case ncclProd: return a * b;
    case ncclMin: return b < a ? b : a;
    default: return b > a ? b : a;
  }
}

static void fakenccl_reduce_into(void* acc, const void* x, size_t count,
                                 ncclDataType_t t, ncclRedOp_t op) {
  for (size_t i = 0; i < count; i++) {
    if (t == ncclInt32) {
      int32_t a, b;
      memcpy(&a, (char*)acc + 4 * i, 4);
      memcpy(&b, (const char*)x + 4 * i, 4);
      int64_t r = (int64_t)fakenccl_apply(op, (double)a, (double)b);
      a = (int32_t)(uint32_t)(uint64_t)r;  // wraps, as NCCL's kernels do
      memcpy((char*)acc + 4 * i, &a, 4);
    } else if (t == ncclFloat32) {
      float a, b;
      memcpy(&a, (char*)acc + 4 * i, 4);
      memcpy(&b, (const char*)x + 4 * i, 4);
      a = (float)fakenccl_apply(op, a, b);
      memcpy((char*)acc + 4 * i, &a, 4);
    } else {
      uint16_t a, b;
      memcpy(&a, (char*)acc + 2 * i, 2);
      memcpy(&b, (const char*)x + 2 * i, 2);
      bool half = t == ncclFloat16;
      float fa = half ? accel_plugin_f16_to_f32(a) : accel_plugin_bf16_to_f32(a);
      float fb = half ? accel_plugin_f16_to_f32(b) : accel_plugin_bf16_to_f32(b);
      float r = (float)fakenccl_apply(op, fa, fb);
      a = half ? accel_plugin_f32_to_f16(r) : accel_plugin_f32_to_bf16(r);
      memcpy((char*)acc + 2 * i, &a, 2);
    }
  }
}

// ---------------------------------------------------------------------------
// Collectives.
// ---------------------------------------------------------------------------

// Every rank's `bytes` at `mine` (its own block `block` of `send` when
// `block` >= 0, each peer getting its own block) into tmp[r].
static bool fakenccl_gather(ncclComm_t c, const char* send, size_t bytes,
                            bool blocks, char* tmp, int root) {
  fakenccl_msg_t* m = calloc(2 * (size_t)c->size, sizeof(*m));
  if (m == NULL) return false;
  size_t n = 0;
  for (int p = 0; p < c->size; p++) {
    if (p == c->rank) continue;
    const char* out = blocks ? send + (size_t)p * bytes : send;
    if (root < 0 || p == root) m[n++] = fakenccl_msg(p, true, out, bytes);
    if (root < 0 || c->rank == root) {
      m[n++] = fakenccl_msg(p, false, tmp + (size_t)p * bytes, bytes);
    }
  }
  const char* own = blocks ? send + (size_t)c->rank * bytes : send;
  memcpy(tmp + (size_t)c->rank * bytes, own, bytes);
  bool ok = fakenccl_move(c, m, n);
  free(m);
  return ok;
}

// Reduces the `size` blocks of tmp into `out`, in rank order.
static void fakenccl_fold(ncclComm_t c, const fakenccl_op_t* op,
                          const char* tmp, size_t bytes) {
  memcpy(op->recv, tmp, bytes);
  for (int r = 1; r < c->size; r++) {
    fakenccl_reduce_into(op->recv, tmp + (size_t)r * bytes, op->count,
                         op->type, op->op);
  }
}

// Runs one collective (not send or recv) of a batch.
static void fakenccl_collective(const fakenccl_op_t* op) {
  ncclComm_t c = op->comm;
  size_t bytes = op->count * fakenccl_size(op->type);
  bool ok = true;
  switch (op->kind) {
    case FAKENCCL_BROADCAST: {
      fakenccl_msg_t* m = calloc((size_t)c->size, sizeof(*m));
      size_t n = 0;
      if (c->rank == op->peer) {
        if (op->recv != op->send) memmove(op->recv, op->send, bytes);
        for (int p = 0; m != NULL && p < c->size; p++) {
          if (p != c->rank) m[n++] = fakenccl_msg(p, true, op->recv, bytes);
        }
      } else if (m != NULL) {
        m[n++] = fakenccl_msg(op->peer, false, op->recv, bytes);
      }
      ok = m != NULL && fakenccl_move(c, m, n);
      free(m);
      break;
    }
    case FAKENCCL_ALL_GATHER: {
      char* tmp = malloc(bytes * (size_t)c->size + 1);
      ok = tmp != NULL && fakenccl_gather(c, op->send, bytes, false, tmp, -1);
      if (ok) memcpy(op->recv, tmp, bytes * (size_t)c->size);
      free(tmp);
      break;
    }
    default: {  // all-reduce, reduce, reduce-scatter
      bool scatter = op->kind == FAKENCCL_REDUCE_SCATTER;
      int root = op->kind == FAKENCCL_REDUCE ? op->peer : -1;
      char* tmp = malloc(bytes * (size_t)c->size + 1);
      ok = tmp != NULL &&
           fakenccl_gather(c, op->send, bytes, scatter, tmp, root);
      if (ok && (root < 0 || c->rank == root)) fakenccl_fold(c, op, tmp, bytes);
      free(tmp);
    }
  }
  if (!ok) fakenccl_fail(c, ncclSystemError, "rank %d: out of memory", c->rank);
}

// The `nth` send of `c` to itself in `ops`, or NULL.
static const fakenccl_op_t* fakenccl_self_send(ncclComm_t c,
                                               const fakenccl_op_t* ops,
                                               size_t n, size_t nth) {
  for (size_t i = 0; i < n; i++) {
    if (ops[i].comm == c && ops[i].kind == FAKENCCL_SEND &&
        ops[i].peer == c->rank && nth-- == 0) {
      return &ops[i];
    }
  }
  return NULL;
}

// Runs the sends and receives of one communicator in a batch together. A
// rank's sends to itself meet its receives from itself in order.
static void fakenccl_p2p(ncclComm_t c, const fakenccl_op_t* ops, size_t n) {
  fakenccl_msg_t* m = calloc(n ? n : 1, sizeof(*m));
  size_t k = 0, self = 0;
  for (size_t i = 0; m != NULL && i < n; i++) {
    const fakenccl_op_t* op = &ops[i];
    if (op->comm != c) continue;
    size_t bytes = op->count * fakenccl_size(op->type);
    if (op->peer == c->rank && op->kind == FAKENCCL_RECV) {
      const fakenccl_op_t* from = fakenccl_self_send(c, ops, n, self++);
      size_t sent = from != NULL ? from->count * fakenccl_size(from->type) : 0;
      if (sent != bytes) {
        fakenccl_fail(c, ncclInvalidUsage,
                      "rank %d: a receive from itself of %zu bytes has no "
                      "matching send",
                      c->rank, bytes);
        break;
      }
      memmove(op->recv, from->send, bytes);
    } else if (op->peer == c->rank) {
      continue;  // a send to itself, matched above
    } else if (op->kind == FAKENCCL_SEND) {
      m[k++] = fakenccl_msg(op->peer, true, op->send, bytes);
    } else if (op->kind == FAKENCCL_RECV) {
      m[k++] = fakenccl_msg(op->peer, false, op->recv, bytes);
    }
  }
  if (m == NULL) {
    fakenccl_fail(c, ncclSystemError, "rank %d: out of memory", c->rank);
  } else {
    (void)fakenccl_move(c, m, k);
  }
  free(m);
}

// Whether `c` may still run calls.
static bool fakenccl_usable(ncclComm_t c) {
  return atomic_load(&c->async) == ncclSuccess && !atomic_load(&c->aborted);
}

// Runs a batch: on each communicator, its sends and receives together,
// then its collectives in order (every rank keeps the same order).
static void fakenccl_batch_run(fakenccl_batch_t* b) {
  for (size_t i = 0; i < b->count; i++) {
    ncclComm_t c = b->ops[i].comm;
    bool first = true;  // of this communicator in the batch
    for (size_t j = 0; j < i && first; j++) first = b->ops[j].comm != c;
    if (!first) continue;
    pthread_mutex_lock(&c->lock);
    if (fakenccl_usable(c)) fakenccl_p2p(c, b->ops, b->count);
    for (size_t j = i; j < b->count && fakenccl_usable(c); j++) {
      const fakenccl_op_t* op = &b->ops[j];
      if (op->comm == c && op->kind != FAKENCCL_SEND &&
          op->kind != FAKENCCL_RECV) {
        fakenccl_collective(op);
      }
    }
    pthread_mutex_unlock(&c->lock);
  }
  for (size_t i = 0; i < b->count; i++) fakenccl_comm_unref(b->ops[i].comm);
}

#ifndef FAKENCCL_HIP
static bool fakenccl_batch_task(void* arg) {
  fakenccl_batch_run(arg);
  return true;  // failures are the communicators', not the device's
}
#endif

ncclResult_t fakenccl_launch_now(const fakenccl_op_t* ops, size_t n,
                                 fakenccl_stream_t stream) {
  fakenccl_batch_t* b = malloc(sizeof(*b) + n * sizeof(ops[0]));
  ncclComm_t* comms = malloc(n * sizeof(*comms));
  if (b == NULL || comms == NULL) {
    free(b);
    free(comms);
    return ncclSystemError;
  }
  b->count = n;
  memcpy(b->ops, ops, n * sizeof(ops[0]));
  for (size_t i = 0; i < n; i++) {
    comms[i] = ops[i].comm;
    atomic_fetch_add(&comms[i]->refs, 1);  // until the batch has run
  }
  ncclResult_t result = ncclSuccess;
#ifdef FAKENCCL_HIP
  if (hipStreamSynchronize(stream) != hipSuccess) {
    result = ncclUnhandledCudaError;
    for (size_t i = 0; i < n; i++) fakenccl_comm_unref(comms[i]);
  } else {
    fakenccl_batch_run(b);
  }
  free(b);
#else
  // As NCCL does at launch, the communicator's device becomes current.
  CUcontext ctx = ops[0].comm->ctx, popped = NULL;
  bool pushed = cuCtxPushCurrent_v2(ctx) == CUDA_SUCCESS;
  if (!pushed || fakecuda_enqueue(ctx, stream, fakenccl_batch_task, b) !=
                     CUDA_SUCCESS) {
    if (!pushed) free(b);
    result = ncclUnhandledCudaError;  // `b` is freed, and never ran
    for (size_t i = 0; i < n; i++) fakenccl_comm_unref(comms[i]);
  }
  if (pushed) cuCtxPopCurrent_v2(&popped);
#endif
  free(comms);
  return result;
}

// Checks a call, then runs it, or records it in the open group.
static ncclResult_t fakenccl_submit(const fakenccl_op_t* op,
                                    fakenccl_stream_t stream) {
  ncclComm_t c = op->comm;
  bool rooted = op->kind == FAKENCCL_BROADCAST || op->kind == FAKENCCL_REDUCE ||
                op->kind == FAKENCCL_SEND || op->kind == FAKENCCL_RECV;
  if (c == NULL || (op->type != ncclInt32 && op->type != ncclFloat16 &&
                    op->type != ncclFloat32 && op->type != ncclBfloat16) ||
      (unsigned)op->op > ncclMin ||
      (rooted && (op->peer < 0 || op->peer >= c->size)) ||
      atomic_load(&c->async) == ncclInProgress) {  // used before ready
    return ncclInvalidArgument;
  }
  if (fakenccl_group.depth == 0) return fakenccl_launch(op, 1, stream);
  if (fakenccl_group.count == 0) fakenccl_group.stream = stream;
  if (stream != fakenccl_group.stream) {
    fakenccl_group.error = ncclInvalidUsage;  // one stream per group here
    return ncclInvalidUsage;
  }
  if (fakenccl_group.count == fakenccl_group.capacity) {
    size_t capacity = fakenccl_group.capacity ? 2 * fakenccl_group.capacity
                                              : 16;
    fakenccl_op_t* grown =
        realloc(fakenccl_group.ops, capacity * sizeof(*grown));
    if (grown == NULL) return ncclSystemError;
    fakenccl_group.ops = grown;
    fakenccl_group.capacity = capacity;
  }
  fakenccl_group.ops[fakenccl_group.count++] = *op;
  return ncclSuccess;
}

FAKENCCL_API ncclResult_t ncclGroupStart(void) {
  if (fakenccl_group.depth++ == 0) {
    fakenccl_group.count = 0;
    fakenccl_group.error = ncclSuccess;
  }
  return ncclSuccess;
}

FAKENCCL_API ncclResult_t ncclGroupEnd(void) {
  if (fakenccl_group.depth == 0) return ncclInvalidUsage;
  if (--fakenccl_group.depth > 0) return ncclSuccess;
  ncclResult_t r = fakenccl_group.error;
  if (r == ncclSuccess && fakenccl_group.count > 0) {
    r = fakenccl_launch(fakenccl_group.ops, fakenccl_group.count,
                        fakenccl_group.stream);
  }
  free(fakenccl_group.ops);
  fakenccl_group.ops = NULL;
  fakenccl_group.count = fakenccl_group.capacity = 0;
  return r;
}

#define FAKENCCL_OP(kind_, send_, recv_, count_, type_, op_, peer_, comm_) \
  fakenccl_op_t o = {kind_, send_, recv_, count_, type_, op_, peer_, comm_}

FAKENCCL_API ncclResult_t ncclAllReduce(const void* send, void* recv,
                                        size_t count, ncclDataType_t type,
                                        ncclRedOp_t op, ncclComm_t comm,
                                        fakenccl_stream_t stream) {
  FAKENCCL_OP(FAKENCCL_ALL_REDUCE, send, recv, count, type, op, -1, comm);
  return fakenccl_submit(&o, stream);
}

FAKENCCL_API ncclResult_t ncclBroadcast(const void* send, void* recv,
                                        size_t count, ncclDataType_t type,
                                        int root, ncclComm_t comm,
                                        fakenccl_stream_t stream) {
  FAKENCCL_OP(FAKENCCL_BROADCAST, send, recv, count, type, ncclSum, root,
              comm);
  return fakenccl_submit(&o, stream);
}

FAKENCCL_API ncclResult_t ncclReduce(const void* send, void* recv,
                                     size_t count, ncclDataType_t type,
                                     ncclRedOp_t op, int root,
                                     ncclComm_t comm,
                                     fakenccl_stream_t stream) {
  FAKENCCL_OP(FAKENCCL_REDUCE, send, recv, count, type, op, root, comm);
  return fakenccl_submit(&o, stream);
}

FAKENCCL_API ncclResult_t ncclAllGather(const void* send, void* recv,
                                        size_t count, ncclDataType_t type,
                                        ncclComm_t comm,
                                        fakenccl_stream_t stream) {
  FAKENCCL_OP(FAKENCCL_ALL_GATHER, send, recv, count, type, ncclSum, -1,
              comm);
  return fakenccl_submit(&o, stream);
}

FAKENCCL_API ncclResult_t ncclReduceScatter(const void* send, void* recv,
                                            size_t count, ncclDataType_t type,
                                            ncclRedOp_t op, ncclComm_t comm,
                                            fakenccl_stream_t stream) {
  FAKENCCL_OP(FAKENCCL_REDUCE_SCATTER, send, recv, count, type, op, -1, comm);
  return fakenccl_submit(&o, stream);
}

FAKENCCL_API ncclResult_t ncclSend(const void* send, size_t count,
                                   ncclDataType_t type, int peer,
                                   ncclComm_t comm,
                                   fakenccl_stream_t stream) {
  FAKENCCL_OP(FAKENCCL_SEND, send, NULL, count, type, ncclSum, peer, comm);
  return fakenccl_submit(&o, stream);
}

FAKENCCL_API ncclResult_t ncclRecv(void* recv, size_t count,
                                   ncclDataType_t type, int peer,
                                   ncclComm_t comm,
                                   fakenccl_stream_t stream) {
  FAKENCCL_OP(FAKENCCL_RECV, NULL, recv, count, type, ncclSum, peer, comm);
  return fakenccl_submit(&o, stream);
}

// ---------------------------------------------------------------------------
// ncclCommSplit: the parent's ranks share (color, key, port) over its
// mesh; each color's ranks, ordered by key then parent rank, form a new
// mesh.
// ---------------------------------------------------------------------------

FAKENCCL_API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
                                        ncclComm_t* out, void* config) {
  (void)config;  // NULL: the child inherits the parent's mode
  if (comm == NULL || out == NULL ||
      atomic_load(&comm->async) == ncclInProgress) {
    return ncclInvalidArgument;
  }
  *out = NULL;
  double deadline = fakenccl_now() + fakenccl_timeout();
  uint16_t port = 0;
  int listen_fd = fakenccl_listen(comm->addr, &port);
  int32_t mine[3] = {color, key, port};
  int32_t* all = calloc((size_t)comm->size, sizeof(mine));
  if (listen_fd < 0 || all == NULL) {
    if (listen_fd >= 0) close(listen_fd);
    free(all);
    return ncclSystemError;
  }
  pthread_mutex_lock(&comm->lock);
  bool ok = fakenccl_usable(comm) &&
            fakenccl_gather(comm, (const char*)mine, sizeof(mine), false,
                            (char*)all, -1);
  pthread_mutex_unlock(&comm->lock);
  int rank = 0, size = 0;
  uint16_t* ports = calloc((size_t)comm->size, sizeof(*ports));
  for (int r = 0; ok && ports != NULL && r < comm->size; r++) {
    const int32_t* t = all + 3 * r;
    if (t[0] != color) continue;
    // Ranks before this one in (key, parent rank) order.
    if (t[1] < key || (t[1] == key && r < comm->rank)) rank++;
    size++;
  }
  for (int r = 0; ok && ports != NULL && r < comm->size; r++) {
    const int32_t* t = all + 3 * r;
    if (t[0] != color) continue;
    // This member's new rank, by the same order.
    int at = 0;
    for (int q = 0; q < comm->size; q++) {
      const int32_t* u = all + 3 * q;
      if (u[0] == color && (u[1] < t[1] || (u[1] == t[1] && q < r))) at++;
    }
    ports[at] = (uint16_t)t[2];
  }
  ncclComm_t c = ok && ports != NULL && color >= 0
                     ? fakenccl_comm_new(rank, size, comm->addr)
                     : NULL;
  if (c != NULL && !fakenccl_mesh(c, listen_fd, comm->addr, ports, deadline)) {
    fakenccl_comm_discard(c);
    c = NULL;
  }
  close(listen_fd);
  free(ports);
  free(all);
  if (color < 0 && ok) return ncclSuccess;  // NCCL_SPLIT_NOCOLOR
  if (c == NULL) return ok ? ncclSystemError : ncclRemoteError;
  c->blocking = comm->blocking;
  if (!comm->blocking) return fakenccl_defer_split(comm, out, c);
  fakenccl_comm_live();
  *out = c;
  return ncclSuccess;
}
