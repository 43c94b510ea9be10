// SPDX-License-Identifier: MIT
//
// The rendezvous store: how processes started without a launcher (each
// told its ACCEL_COMM_RANK and ACCEL_COMM_SIZE, as torch.distributed's
// env://) exchange the few bytes an engine needs to form a communicator
// (an ncclUniqueId, an MPI port name). Two kinds:
//
// - TCP (ACCEL_COMM_ADDR, ACCEL_COMM_PORT): rank 0 listens on the port,
//   every other rank connects to rank 0's address (retrying until rank 0
//   is up) and keeps its connection for the store's life. In each round
//   every rank sends its blob, and rank 0 answers everyone with all of
//   them, or with the reason it gave up.
// - File (ACCEL_COMM_FILE, on storage every rank shares): in each round
//   every rank writes FILE.<session>.<round>.<rank> (whole, by rename) and
//   reads the others'; a rank that has read them all leaves a .done mark,
//   and whoever sees every mark removes the round's files.
//
// Every round is bounded by the communicator's timeout, and a round that
// times out names the ranks that did not show up. `session` counts the
// stores this process opened, so that a rank's next communicator never
// mixes with the previous one: all ranks create their communicators in the
// same order. The store lives for one accel_comm_create.
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "comm_internal.h"

#define ACCEL__STORE_MAGIC 0x31534341u  // "ACS1"
#define ACCEL__STORE_MAX_BLOB ((uint64_t)1 << 20)

struct accel__store {
  int32_t rank;
  int32_t size;
  char address[256];  // "" for a file store
  uint32_t port;
  char file[PATH_MAX - 64];
  double timeout_s;
  uint32_t session;  // which of this process's stores
  uint32_t round;    // exchanges done
  int listen_fd;     // rank 0 of a TCP store, once listening
  int* peers;        // rank 0: the connection of each rank, or -1
  int fd;            // other ranks: the connection to rank 0, or -1
};

// What a rank sends at the start of a round.
typedef struct accel__store_hello {
  uint32_t magic;
  uint32_t rank;
  uint32_t size;
  uint32_t round;
  uint32_t session;
  uint32_t reserved;
  uint64_t bytes;
} accel__store_hello_t;

// Rank 0's answer: status 0 and `bytes` of blob lengths (one uint64_t per
// rank) then blobs, or status 1 and `bytes` of message.
typedef struct accel__store_answer {
  uint32_t magic;
  uint32_t status;
  uint64_t bytes;
} accel__store_answer_t;

static atomic_uint accel__store_sessions;

// ---------------------------------------------------------------------------
// Sockets with a deadline.
// ---------------------------------------------------------------------------

// Waits until `fd` is ready for `events` or `deadline` passes (false).
static bool accel__wait_fd(int fd, short events, double deadline) {
  for (;;) {
    double left = deadline - accel__comm_now();
    if (left <= 0) return false;
    struct pollfd p = {fd, events, 0};
    int ms = left > 1000 ? 1000 : (int)(left * 1000) + 1;
    int n = poll(&p, 1, ms);
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return true;  // the I/O call reports it
  }
}

// Sends or receives all `size` bytes before `deadline`. 0 on success,
// else an errno value (ETIMEDOUT for the deadline, EPIPE for a peer that
// closed).
static int accel__io(int fd, void* data, size_t size, bool out,
                     double deadline) {
  char* p = data;
  while (size > 0) {
    if (!accel__wait_fd(fd, out ? POLLOUT : POLLIN, deadline)) {
      return ETIMEDOUT;
    }
    ssize_t n = out ? send(fd, p, size, MSG_NOSIGNAL | MSG_DONTWAIT)
                    : recv(fd, p, size, MSG_DONTWAIT);
    if (n == 0) return EPIPE;
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) {
        continue;
      }
      return errno;
    }
    p += n;
    size -= (size_t)n;
  }
  return 0;
}

static void accel__close(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

// Appends "2, 5" style lists of the ranks whose `have` is false.
static void accel__missing(const bool* have, int32_t size, char* out,
                           size_t out_size) {
  size_t used = 0;
  out[0] = '\0';
  int listed = 0;
  for (int32_t r = 0; r < size; r++) {
    if (have[r]) continue;
    if (listed++ == 16) {
      accel__appendf(out, out_size, &used, ", ...");
      break;
    }
    accel__appendf(out, out_size, &used, "%s%d", listed > 1 ? ", " : "",
                   (int)r);
  }
}

// ---------------------------------------------------------------------------
// TCP: rank 0.
// ---------------------------------------------------------------------------

// Listens on the store's port, on every address (IPv6 with IPv4 mapped,
// else IPv4).
static accel_status_t accel__tcp_listen(accel__store_t* s) {
  int families[2] = {AF_INET6, AF_INET};
  int error = 0;
  for (int i = 0; i < 2 && s->listen_fd < 0; i++) {
    int fd = socket(families[i], SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      error = errno;
      continue;
    }
    int one = 1, zero = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_storage a;
    socklen_t len;
    memset(&a, 0, sizeof(a));
    if (families[i] == AF_INET6) {
      setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
      struct sockaddr_in6* a6 = (struct sockaddr_in6*)&a;
      a6->sin6_family = AF_INET6;
      a6->sin6_port = htons((uint16_t)s->port);
      a6->sin6_addr = in6addr_any;
      len = sizeof(*a6);
    } else {
      struct sockaddr_in* a4 = (struct sockaddr_in*)&a;
      a4->sin_family = AF_INET;
      a4->sin_port = htons((uint16_t)s->port);
      a4->sin_addr.s_addr = htonl(INADDR_ANY);
      len = sizeof(*a4);
    }
    if (bind(fd, (struct sockaddr*)&a, len) == 0 && listen(fd, 128) == 0) {
      s->listen_fd = fd;
      return ACCEL_OK;
    }
    error = errno;
    close(fd);
  }
  return accel__fail(ACCEL_ERROR_UNAVAILABLE,
                     "rendezvous: rank 0 cannot listen on port %u "
                     "(ACCEL_COMM_PORT): %s",
                     (unsigned)s->port, strerror(error));
}

// Reads a hello (and its blob, into `blobs[rank]`) from `fd` for this
// round. Returns the rank, or -1 after closing a connection that is not
// one of ours (another session, a bad header, a rank already seen).
static int32_t accel__tcp_read_hello(accel__store_t* s, int fd, bool* have,
                                     void** blobs, uint64_t* lens,
                                     double deadline) {
  accel__store_hello_t h;
  if (accel__io(fd, &h, sizeof(h), false, deadline) != 0 ||
      h.magic != ACCEL__STORE_MAGIC || h.session != s->session ||
      h.round != s->round || h.size != (uint32_t)s->size ||
      h.rank == 0 || h.rank >= (uint32_t)s->size || have[h.rank] ||
      h.bytes > ACCEL__STORE_MAX_BLOB) {
    // A stale connection from another of this job's communicators, or
    // another job on the port: answer so that the sender retries.
    accel__store_answer_t a = {ACCEL__STORE_MAGIC, 1, 0};
    (void)accel__io(fd, &a, sizeof(a), true, accel__comm_now() + 1);
    return -1;
  }
  void* blob = malloc(h.bytes ? h.bytes : 1);
  if (blob == NULL || accel__io(fd, blob, h.bytes, false, deadline) != 0) {
    free(blob);
    return -1;
  }
  have[h.rank] = true;
  blobs[h.rank] = blob;
  lens[h.rank] = h.bytes;
  return (int32_t)h.rank;
}

// Sends every connected rank the answer: all blobs, or `message`.
static void accel__tcp_answer(accel__store_t* s, const char* message,
                              void** blobs, const uint64_t* lens,
                              double deadline) {
  uint64_t total = (uint64_t)s->size * sizeof(uint64_t);
  for (int32_t r = 0; r < s->size; r++) total += lens[r];
  accel__store_answer_t a = {ACCEL__STORE_MAGIC, message != NULL ? 1u : 0u,
                             message != NULL ? strlen(message) : total};
  for (int32_t r = 1; r < s->size; r++) {
    int fd = s->peers[r];
    if (fd < 0) continue;
    int e = accel__io(fd, &a, sizeof(a), true, deadline);
    if (e == 0 && message != NULL) {
      e = accel__io(fd, (void*)message, a.bytes, true, deadline);
    } else if (e == 0) {
      e = accel__io(fd, (void*)lens, (size_t)s->size * sizeof(uint64_t),
                    true, deadline);
      for (int32_t q = 0; q < s->size && e == 0; q++) {
        e = accel__io(fd, blobs[q], lens[q], true, deadline);
      }
    }
    if (e != 0) accel__close(&s->peers[r]);
  }
}

// Rank 0's round: collects every rank's blob (accepting the connections
// of the first round), then answers.
static accel_status_t accel__tcp_serve(accel__store_t* s, void** blobs,
                                       uint64_t* lens, double deadline) {
  if (s->listen_fd < 0) {
    accel_status_t status = accel__tcp_listen(s);
    if (status != ACCEL_OK) return status;
  }
  bool* have = calloc((size_t)s->size, sizeof(*have));
  struct pollfd* p = calloc((size_t)s->size, sizeof(*p));
  if (have == NULL || p == NULL) {
    free(have), free(p);
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "rendezvous");
  }
  have[0] = true;
  int32_t count = 1;
  while (count < s->size) {
    double left = deadline - accel__comm_now();
    if (left <= 0) break;
    // The listener, and every connected rank not heard from this round.
    nfds_t n = 0;
    p[n++] = (struct pollfd){s->listen_fd, POLLIN, 0};
    for (int32_t r = 1; r < s->size; r++) {
      if (s->peers[r] >= 0 && !have[r]) {
        p[n++] = (struct pollfd){s->peers[r], POLLIN, 0};
      }
    }
    int ms = left > 1000 ? 1000 : (int)(left * 1000) + 1;
    if (poll(p, n, ms) <= 0) continue;
    for (nfds_t i = 1; i < n; i++) {
      if (p[i].revents == 0) continue;
      int32_t r = accel__tcp_read_hello(s, p[i].fd, have, blobs, lens,
                                        deadline);
      if (r >= 0) {
        count++;
        continue;
      }
      for (int32_t q = 1; q < s->size; q++) {
        if (s->peers[q] == p[i].fd) accel__close(&s->peers[q]);  // gone
      }
    }
    if (p[0].revents != 0) {
      int fd = accept(s->listen_fd, NULL, NULL);
      if (fd < 0) continue;
      (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      int32_t r = accel__tcp_read_hello(s, fd, have, blobs, lens, deadline);
      if (r < 0) {
        close(fd);
        continue;
      }
      accel__close(&s->peers[r]);
      s->peers[r] = fd;
      count++;
    }
  }
  accel_status_t status = ACCEL_OK;
  if (count < s->size) {
    char missing[160];
    accel__missing(have, s->size, missing, sizeof(missing));
    status = accel__fail(ACCEL_ERROR_TIMEOUT,
                         "rendezvous on port %u: rank%s %s of %d did not "
                         "show up within %.1f s",
                         (unsigned)s->port, s->size - count > 1 ? "s" : "",
                         missing, (int)s->size, s->timeout_s);
    accel__tcp_answer(s, accel_last_error(), blobs, lens,
                      accel__comm_now() + 2);
  } else {
    accel__tcp_answer(s, NULL, blobs, lens, deadline + 2);
  }
  free(have);
  free(p);
  return status;
}

// ---------------------------------------------------------------------------
// TCP: the other ranks.
// ---------------------------------------------------------------------------

// Connects to rank 0, retrying until `deadline`. 0 or an errno value.
static int accel__tcp_connect(accel__store_t* s, double deadline) {
  char port[16];
  snprintf(port, sizeof(port), "%u", (unsigned)s->port);
  int error = ETIMEDOUT;
  while (accel__comm_now() < deadline) {
    struct addrinfo hints, *list = NULL;
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(s->address, port, &hints, &list);
    if (rc != 0) return rc == EAI_SYSTEM ? errno : EHOSTUNREACH;
    for (struct addrinfo* a = list; a != NULL && s->fd < 0; a = a->ai_next) {
      int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC,
                      a->ai_protocol);
      if (fd < 0) continue;
      if (connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        s->fd = fd;
      } else {
        error = errno;
        close(fd);
      }
    }
    freeaddrinfo(list);
    if (s->fd >= 0) return 0;
    struct timespec pause = {0, 50 * 1000 * 1000};  // rank 0 not up yet
    nanosleep(&pause, NULL);
  }
  return error;
}

// One round of a rank other than 0: sends its blob, reads everyone's.
// Retries the first round on a fresh connection when rank 0's answer
// does not come (a listener left from a previous communicator).
static accel_status_t accel__tcp_join(accel__store_t* s, const void* data,
                                      uint64_t size, void** out,
                                      uint64_t* lens, double deadline) {
  // Rank 0 answers or gives up within the timeout; wait a little longer
  // for its reason.
  double hard = deadline + 5;
  for (;;) {
    if (s->fd < 0) {
      int e = accel__tcp_connect(s, deadline);
      if (e != 0) {
        return accel__fail(ACCEL_ERROR_TIMEOUT,
                           "rendezvous: rank %d could not reach rank 0 at "
                           "%s:%u within %.1f s (%s)",
                           (int)s->rank, s->address, (unsigned)s->port,
                           s->timeout_s, strerror(e));
      }
    }
    accel__store_hello_t h = {ACCEL__STORE_MAGIC, (uint32_t)s->rank,
                              (uint32_t)s->size, s->round, s->session, 0,
                              size};
    accel__store_answer_t a = {0, 0, 0};
    int e = accel__io(s->fd, &h, sizeof(h), true, hard);
    if (e == 0) e = accel__io(s->fd, (void*)data, size, true, hard);
    if (e == 0) e = accel__io(s->fd, &a, sizeof(a), false, hard);
    bool refused = e == 0 && a.status == 1 && a.bytes == 0;
    if ((e == EPIPE || e == ECONNRESET || refused) && s->round == 0 &&
        accel__comm_now() < deadline) {
      accel__close(&s->fd);  // not this session's rank 0: try again
      struct timespec pause = {0, 50 * 1000 * 1000};
      nanosleep(&pause, NULL);
      continue;
    }
    if (e != 0 || a.magic != ACCEL__STORE_MAGIC ||
        a.bytes > ACCEL__STORE_MAX_BLOB * (uint64_t)s->size + 65536) {
      accel__close(&s->fd);
      return accel__fail(e == ETIMEDOUT ? ACCEL_ERROR_TIMEOUT
                                        : ACCEL_ERROR_DEVICE_LOST,
                         "rendezvous: rank %d got no answer from rank 0 at "
                         "%s:%u (%s)",
                         (int)s->rank, s->address, (unsigned)s->port,
                         e != 0 ? strerror(e) : "a malformed answer");
    }
    char* body = malloc(a.bytes + 1);
    if (body == NULL) return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "store");
    e = accel__io(s->fd, body, a.bytes, false, hard);
    body[a.bytes] = '\0';
    if (e == 0 && a.status != 0) {
      accel_status_t status = accel__fail(
          ACCEL_ERROR_TIMEOUT, "rendezvous: rank 0 gave up: %s", body);
      free(body);
      return status;
    }
    uint64_t head = (uint64_t)s->size * sizeof(uint64_t), total = head;
    if (e == 0 && a.bytes >= head) {
      memcpy(lens, body, head);
      for (int32_t r = 0; r < s->size; r++) total += lens[r];
    }
    if (e != 0 || total != a.bytes) {
      free(body);
      return accel__fail(ACCEL_ERROR_DEVICE_LOST,
                         "rendezvous: rank %d got a broken answer from "
                         "rank 0 (%s)",
                         (int)s->rank, e != 0 ? strerror(e) : "lengths");
    }
    memmove(body, body + head, total - head);
    *out = body;
    return ACCEL_OK;
  }
}

// ---------------------------------------------------------------------------
// Files.
// ---------------------------------------------------------------------------

static void accel__file_name(const accel__store_t* s, int32_t rank,
                             const char* suffix, char* out, size_t size) {
  snprintf(out, size, "%s.%u.%u.%d%s", s->file, s->session, s->round,
           (int)rank, suffix);
}

// Writes `size` bytes as `name`, whole: to a temporary, then renamed.
static bool accel__file_put(const char* name, const void* data, size_t size) {
  char tmp[PATH_MAX];
  int n = snprintf(tmp, sizeof(tmp), "%s.tmp%ld", name, (long)getpid());
  if (n < 0 || (size_t)n >= sizeof(tmp)) return false;  // name too long
  FILE* f = fopen(tmp, "wb");
  if (f == NULL) return false;
  bool ok = size == 0 || fwrite(data, 1, size, f) == size;
  ok = fclose(f) == 0 && ok;
  if (ok) ok = rename(tmp, name) == 0;
  if (!ok) unlink(tmp);
  return ok;
}

static accel_status_t accel__file_round(accel__store_t* s, const void* data,
                                        uint64_t size, void** out,
                                        uint64_t* lens, double deadline) {
  char name[PATH_MAX];
  accel__file_name(s, s->rank, "", name, sizeof(name));
  if (!accel__file_put(name, data, size)) {
    return accel__fail(ACCEL_ERROR_UNAVAILABLE,
                       "rendezvous: rank %d cannot write %s "
                       "(ACCEL_COMM_FILE): %s",
                       (int)s->rank, name, strerror(errno));
  }
  bool* have = calloc((size_t)s->size, sizeof(*have));
  if (have == NULL) return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "store");
  int32_t count = 0;
  uint64_t total = 0;
  while (count < s->size && accel__comm_now() < deadline) {
    for (int32_t r = 0; r < s->size; r++) {
      struct stat st;
      accel__file_name(s, r, "", name, sizeof(name));
      if (have[r] || stat(name, &st) != 0) continue;
      have[r] = true;
      lens[r] = (uint64_t)st.st_size;
      total += lens[r];
      count++;
    }
    if (count < s->size) {
      struct timespec pause = {0, 10 * 1000 * 1000};
      nanosleep(&pause, NULL);
    }
  }
  if (count < s->size) {
    char missing[160];
    accel__missing(have, s->size, missing, sizeof(missing));
    free(have);
    return accel__fail(ACCEL_ERROR_TIMEOUT,
                       "rendezvous in %s: rank%s %s of %d did not show up "
                       "within %.1f s",
                       s->file, s->size - count > 1 ? "s" : "", missing,
                       (int)s->size, s->timeout_s);
  }
  free(have);
  char* all = malloc(total ? total : 1);
  if (all == NULL) return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "store");
  uint64_t at = 0;
  for (int32_t r = 0; r < s->size; r++) {
    accel__file_name(s, r, "", name, sizeof(name));
    FILE* f = fopen(name, "rb");
    bool ok = f != NULL && fread(all + at, 1, lens[r], f) == lens[r];
    if (f != NULL) fclose(f);
    if (!ok) {
      free(all);
      return accel__fail(ACCEL_ERROR_UNAVAILABLE,
                         "rendezvous: rank %d cannot read %s", (int)s->rank,
                         name);
    }
    at += lens[r];
  }
  *out = all;
  // Read: mark it; the rank that sees every mark removes the round.
  accel__file_name(s, s->rank, ".done", name, sizeof(name));
  (void)accel__file_put(name, "", 0);
  int32_t done = 0;
  for (int32_t r = 0; r < s->size; r++) {
    accel__file_name(s, r, ".done", name, sizeof(name));
    done += access(name, F_OK) == 0;
  }
  for (int32_t r = 0; done == s->size && r < s->size; r++) {
    accel__file_name(s, r, "", name, sizeof(name));
    unlink(name);
    accel__file_name(s, r, ".done", name, sizeof(name));
    unlink(name);
  }
  return ACCEL_OK;
}

// ---------------------------------------------------------------------------
// Rounds and the engine's interface.
// ---------------------------------------------------------------------------

// One round: every rank gives `size` bytes at `data`; `*out` (malloc'd,
// the caller frees it) receives all ranks' blobs in rank order and
// `lens[r]` their sizes.
static accel_status_t accel__store_round(accel__store_t* s, const void* data,
                                         uint64_t size, void** out,
                                         uint64_t* lens) {
  *out = NULL;
  if (size > ACCEL__STORE_MAX_BLOB) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "rendezvous: %llu bytes is more than a round takes",
                       (unsigned long long)size);
  }
  double deadline = accel__comm_now() + s->timeout_s;
  accel_status_t status;
  if (s->address[0] == '\0') {
    status = accel__file_round(s, data, size, out, lens, deadline);
  } else if (s->rank != 0) {
    status = accel__tcp_join(s, data, size, out, lens, deadline);
  } else {
    void** blobs = calloc((size_t)s->size, sizeof(*blobs));
    if (blobs == NULL) return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "store");
    blobs[0] = (void*)data;
    lens[0] = size;
    status = accel__tcp_serve(s, blobs, lens, deadline);
    uint64_t total = 0;
    for (int32_t r = 0; r < s->size; r++) total += lens[r];
    char* all = status == ACCEL_OK ? malloc(total ? total : 1) : NULL;
    if (status == ACCEL_OK && all == NULL) {
      status = accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "store");
    }
    uint64_t at = 0;
    for (int32_t r = 0; r < s->size; r++) {
      if (all != NULL && lens[r] > 0) memcpy(all + at, blobs[r], lens[r]);
      at += lens[r];
      if (r > 0) free(blobs[r]);
    }
    free(blobs);
    *out = all;
  }
  s->round++;
  return status;
}

static accel_status_t accel__store_broadcast(const accel_comm_store_t* store,
                                             void* data, size_t size,
                                             int32_t root) {
  accel__store_t* s = store->state;
  if (root < 0 || root >= s->size) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "rendezvous broadcast: root %d of %d", (int)root,
                       (int)s->size);
  }
  uint64_t* lens = calloc((size_t)s->size, sizeof(*lens));
  if (lens == NULL) return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "store");
  void* all = NULL;
  accel_status_t status = accel__store_round(
      s, s->rank == root ? data : NULL, s->rank == root ? size : 0, &all,
      lens);
  if (status == ACCEL_OK && lens[root] != size) {
    status = accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "rendezvous broadcast: rank %d sent %llu bytes, "
                         "rank %d expected %zu",
                         (int)root, (unsigned long long)lens[root],
                         (int)s->rank, size);
  }
  if (status == ACCEL_OK && s->rank != root) {
    uint64_t at = 0;
    for (int32_t r = 0; r < root; r++) at += lens[r];
    memcpy(data, (char*)all + at, size);
  }
  free(all);
  free(lens);
  return status;
}

static accel_status_t accel__store_all_gather(const accel_comm_store_t* store,
                                              const void* data, size_t size,
                                              void* out) {
  accel__store_t* s = store->state;
  uint64_t* lens = calloc((size_t)s->size, sizeof(*lens));
  if (lens == NULL) return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "store");
  void* all = NULL;
  accel_status_t status = accel__store_round(s, data, size, &all, lens);
  for (int32_t r = 0; r < s->size && status == ACCEL_OK; r++) {
    if (lens[r] != size) {
      status = accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                           "rendezvous all-gather: rank %d sent %llu bytes, "
                           "rank %d %zu",
                           (int)r, (unsigned long long)lens[r], (int)s->rank,
                           size);
    }
  }
  if (status == ACCEL_OK) memcpy(out, all, size * (size_t)s->size);
  free(all);
  free(lens);
  return status;
}

accel_status_t accel__store_open(int32_t rank, int32_t size,
                                 const char* address, uint32_t port,
                                 const char* file, double timeout_s,
                                 accel__store_t** out_state,
                                 accel_comm_store_t* out_store) {
  *out_state = NULL;
  if (address == NULL && strlen(file) >= sizeof(((accel__store_t*)0)->file)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "rendezvous: ACCEL_COMM_FILE is %zu bytes long; at "
                       "most %zu are allowed (the ranks add suffixes)",
                       strlen(file), sizeof(((accel__store_t*)0)->file) - 1);
  }
  accel__store_t* s = calloc(1, sizeof(*s));
  if (s == NULL) return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "store");
  s->rank = rank;
  s->size = size;
  s->port = port;
  s->timeout_s = timeout_s;
  s->session = atomic_fetch_add(&accel__store_sessions, 1);
  s->listen_fd = -1;
  s->fd = -1;
  if (address != NULL) {
    snprintf(s->address, sizeof(s->address), "%s", address);
  } else {
    snprintf(s->file, sizeof(s->file), "%s", file);
  }
  if (rank == 0 && address != NULL) {
    s->peers = malloc((size_t)size * sizeof(*s->peers));
    if (s->peers == NULL) {
      free(s);
      return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "store");
    }
    for (int32_t r = 0; r < size; r++) s->peers[r] = -1;
  }
  memset(out_store, 0, sizeof(*out_store));
  out_store->struct_size = sizeof(*out_store);
  out_store->state = s;
  out_store->broadcast = accel__store_broadcast;
  out_store->all_gather = accel__store_all_gather;
  *out_state = s;
  return ACCEL_OK;
}

void accel__store_close(accel__store_t* s) {
  if (s == NULL) return;
  accel__close(&s->listen_fd);
  accel__close(&s->fd);
  for (int32_t r = 0; s->peers != NULL && r < s->size; r++) {
    accel__close(&s->peers[r]);
  }
  free(s->peers);
  free(s);
}
