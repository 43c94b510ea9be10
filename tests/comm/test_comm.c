// SPDX-License-Identifier: MIT
//
// Collectives on an engine, run with several ranks by mpirun or by
// launch.sh (the rendezvous environment; see CMakeLists.txt): every
// collective and dtype against a reference the test computes itself, in
// place and at offsets, split communicators, point to point, groups (a
// ring of sends and receives that only completes as one group), argument
// checks, and the staged path (a device whose memory the host cannot
// address, or ACCEL_COMM_STAGING=always).
//
// COMM_TEST_DEVICE names the device (default cpu:0) and COMM_TEST_ENGINE
// the engine expected (default mpi); the communicator serves that device.
//
// With the argument "die", rank 1 exits in the middle and every other rank
// must see its next collective fail (ACCEL_ERROR_TIMEOUT within the
// communicator's timeout, or ACCEL_ERROR_DEVICE_LOST when the engine sees
// the peer go) or, where the engine reports the loss asynchronously as
// NCCL does, the call after it, and the communicator refuse later calls.
// With "stall", rank 1 stops calling instead, past the others' timeout.
// With "missing", the launcher left one rank out: accel_comm_create must
// fail within the timeout, naming it. With "refused", the MPI engine,
// started without mpirun or ompi-server, must refuse at once and say why.
// With "init_stall", rank 1 passes the rendezvous and then never finishes
// NCCL's set-up (FAKENCCL_INIT_STALL): the others' accel_comm_create must
// fail within the timeout, naming ncclCommInitRank, instead of hanging.
#include <accel/accel.h>
#include <accel/plugin_dtype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rank_, size_;
static int failures;

#define CHECK(cond, ...)                                 \
  do {                                                   \
    if (!(cond)) {                                       \
      fprintf(stderr, "rank %d: %s:%d: ", rank_, __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                      \
      fprintf(stderr, "\n");                             \
      failures++;                                        \
    }                                                    \
  } while (0)

#define OK(call)                                                        \
  do {                                                                  \
    accel_status_t s_ = (call);                                         \
    CHECK(s_ == ACCEL_OK, "%s: %s: %s", #call, accel_status_string(s_), \
          accel_last_error());                                          \
  } while (0)

static const accel_dtype_t dtypes[] = {ACCEL_DTYPE_F32, ACCEL_DTYPE_F16,
                                       ACCEL_DTYPE_BF16, ACCEL_DTYPE_I32};

// Element `i` of rank `r`'s input: small integers, exact in every dtype,
// and in {1, 2} for products so that 2^size stays exact.
static double input(int r, size_t i, accel_reduce_op_t op) {
  if (op == ACCEL_REDUCE_PROD) return (double)(1 + (int)((r + i) % 2));
  return (double)((int)((r * 7 + i * 3) % 11) - 5);
}

static void put(unsigned char* p, accel_dtype_t t, size_t i, double v) {
  switch (t) {
    case ACCEL_DTYPE_F32: {
      float f = (float)v;
      memcpy(p + 4 * i, &f, 4);
      break;
    }
    case ACCEL_DTYPE_I32: {
      int32_t x = (int32_t)v;
      memcpy(p + 4 * i, &x, 4);
      break;
    }
    default: {
      uint16_t h = t == ACCEL_DTYPE_F16 ? accel_plugin_f64_to_f16(v)
                                        : accel_plugin_f64_to_bf16(v);
      memcpy(p + 2 * i, &h, 2);
    }
  }
}

static double get(const unsigned char* p, accel_dtype_t t, size_t i) {
  switch (t) {
    case ACCEL_DTYPE_F32: {
      float f;
      memcpy(&f, p + 4 * i, 4);
      return f;
    }
    case ACCEL_DTYPE_I32: {
      int32_t x;
      memcpy(&x, p + 4 * i, 4);
      return x;
    }
    default: {
      uint16_t h;
      memcpy(&h, p + 2 * i, 2);
      return t == ACCEL_DTYPE_F16 ? accel_plugin_f16_to_f32(h)
                                  : accel_plugin_bf16_to_f32(h);
    }
  }
}

static double reduce_ref(size_t i, accel_reduce_op_t op) {
  double acc = input(0, i, op);
  for (int r = 1; r < size_; r++) {
    double v = input(r, i, op);
    if (op == ACCEL_REDUCE_SUM) acc += v;
    if (op == ACCEL_REDUCE_PROD) acc *= v;
    if (op == ACCEL_REDUCE_MIN && v < acc) acc = v;
    if (op == ACCEL_REDUCE_MAX && v > acc) acc = v;
  }
  return acc;
}

typedef struct fixture {
  accel_device_t* dev;
  accel_stream_t* stream;
  accel_comm_t* comm;
} fixture_t;

// A buffer of `n` elements of `t` with rank `r`'s inputs for `op`, placed
// at byte offset `off`.
static accel_buffer_t* make(fixture_t* f, accel_dtype_t t, size_t n,
                            size_t off, int r, accel_reduce_op_t op,
                            size_t first) {
  size_t elem = accel_dtype_size(t);
  accel_buffer_t* b = NULL;
  OK(accel_buffer_create(f->dev, off + n * elem + 64, &b));
  unsigned char* host = calloc(n, elem);
  for (size_t i = 0; i < n; i++) put(host, t, i, input(r, first + i, op));
  OK(accel_buffer_write(b, off, host, n * elem));
  free(host);
  return b;
}

static unsigned char* fetch(fixture_t* f, accel_buffer_t* b, size_t off,
                            size_t bytes) {
  unsigned char* host = malloc(bytes);
  OK(accel_stream_read_buffer(f->stream, b, off, host, bytes));
  OK(accel_stream_synchronize(f->stream));
  return host;
}

static void test_all_reduce_n(fixture_t* f, accel_dtype_t t,
                              accel_reduce_op_t op, bool in_place, size_t n) {
  size_t off = 12;
  accel_buffer_t* send = make(f, t, n, off, rank_, op, 0);
  accel_buffer_t* recv = in_place ? send : make(f, t, n, 0, 0, op, 0);
  size_t roff = in_place ? off : 0;
  OK(accel_comm_all_reduce(f->comm, f->stream, send, off, recv, roff, n, t,
                           op));
  unsigned char* out = fetch(f, recv, roff, n * accel_dtype_size(t));
  for (size_t i = 0; i < n; i++) {
    double want = reduce_ref(i, op), got = get(out, t, i);
    if (got != want) {
      CHECK(false, "all_reduce %s op %d%s [%zu]: %g, want %g",
            accel_dtype_name(t), (int)op, in_place ? " in place" : "", i, got,
            want);
      break;
    }
  }
  free(out);
  if (!in_place) accel_buffer_release(recv);
  accel_buffer_release(send);
}

static void test_all_reduce(fixture_t* f, accel_dtype_t t,
                            accel_reduce_op_t op, bool in_place) {
  test_all_reduce_n(f, t, op, in_place, 1000);
}

static void test_gathers_n(fixture_t* f, accel_dtype_t t, size_t n) {
  size_t elem = accel_dtype_size(t), all = n * (size_t)size_;
  accel_reduce_op_t sum = ACCEL_REDUCE_SUM;
  // all_gather: block r of recv is rank r's input.
  accel_buffer_t* send = make(f, t, n, 0, rank_, sum, 0);
  accel_buffer_t* recv = make(f, t, all, 0, 0, sum, 0);
  OK(accel_comm_all_gather(f->comm, f->stream, send, 0, recv, 0, n, t));
  unsigned char* out = fetch(f, recv, 0, all * elem);
  for (size_t i = 0; i < all; i++) {
    double want = input((int)(i / n), i % n, sum);
    if (get(out, t, i) != want) {
      CHECK(false, "all_gather %s [%zu]", accel_dtype_name(t), i);
      break;
    }
  }
  free(out);
  accel_buffer_release(send);
  accel_buffer_release(recv);
  // reduce_scatter: rank r gets the sum of block r.
  send = make(f, t, all, 0, rank_, sum, 0);
  recv = make(f, t, n, 0, 0, sum, 0);
  OK(accel_comm_reduce_scatter(f->comm, f->stream, send, 0, recv, 0, n, t,
                               sum));
  out = fetch(f, recv, 0, n * elem);
  for (size_t i = 0; i < n; i++) {
    double want = reduce_ref((size_t)rank_ * n + i, sum);
    if (get(out, t, i) != want) {
      CHECK(false, "reduce_scatter %s [%zu]", accel_dtype_name(t), i);
      break;
    }
  }
  free(out);
  accel_buffer_release(send);
  accel_buffer_release(recv);
  // all_to_all: block r of recv is block `rank` of rank r's send.
  send = make(f, t, all, 0, rank_, sum, 0);
  recv = make(f, t, all, 0, 0, sum, 0);
  OK(accel_comm_all_to_all(f->comm, f->stream, send, 0, recv, 0, n, t));
  out = fetch(f, recv, 0, all * elem);
  for (size_t i = 0; i < all; i++) {
    int from = (int)(i / n);
    double want = input(from, (size_t)rank_ * n + i % n, sum);
    if (get(out, t, i) != want) {
      CHECK(false, "all_to_all %s [%zu]", accel_dtype_name(t), i);
      break;
    }
  }
  free(out);
  accel_buffer_release(send);
  accel_buffer_release(recv);
}

static void test_gathers(fixture_t* f, accel_dtype_t t) {
  test_gathers_n(f, t, 257);
}

static void test_rooted(fixture_t* f, accel_dtype_t t) {
  size_t n = 333, elem = accel_dtype_size(t);
  int root = size_ - 1;
  accel_reduce_op_t max = ACCEL_REDUCE_MAX;
  accel_buffer_t* b = make(f, t, n, 8, rank_, max, 0);
  OK(accel_comm_broadcast(f->comm, f->stream, b, 8, n, t, root));
  unsigned char* out = fetch(f, b, 8, n * elem);
  for (size_t i = 0; i < n; i++) {
    if (get(out, t, i) != input(root, i, max)) {
      CHECK(false, "broadcast %s [%zu]", accel_dtype_name(t), i);
      break;
    }
  }
  free(out);
  accel_buffer_release(b);
  accel_buffer_t* send = make(f, t, n, 0, rank_, max, 0);
  accel_buffer_t* recv = rank_ == root ? make(f, t, n, 0, 0, max, 0) : NULL;
  OK(accel_comm_reduce(f->comm, f->stream, send, 0, recv, 0, n, t, max,
                       root));
  if (recv != NULL) {
    out = fetch(f, recv, 0, n * elem);
    for (size_t i = 0; i < n; i++) {
      if (get(out, t, i) != reduce_ref(i, max)) {
        CHECK(false, "reduce %s [%zu]", accel_dtype_name(t), i);
        break;
      }
    }
    free(out);
  }
  accel_buffer_release(send);
  accel_buffer_release(recv);
}

// A ring: each rank sends to the next and receives from the previous.
// Even ranks send first so blocking sends cannot deadlock.
static void test_point_to_point(fixture_t* f) {
  size_t n = 4096;
  accel_dtype_t t = ACCEL_DTYPE_I32;
  int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
  accel_buffer_t* mine = make(f, t, n, 0, rank_, ACCEL_REDUCE_SUM, 0);
  accel_buffer_t* got = make(f, t, n, 0, 0, ACCEL_REDUCE_SUM, 0);
  for (int phase = 0; phase < 2; phase++) {
    if ((rank_ % 2 == 0) == (phase == 0)) {
      OK(accel_comm_send(f->comm, f->stream, mine, 0, n, t, next));
    } else {
      OK(accel_comm_recv(f->comm, f->stream, got, 0, n, t, prev));
    }
  }
  unsigned char* out = fetch(f, got, 0, n * 4);
  for (size_t i = 0; i < n; i++) {
    if (get(out, t, i) != input(prev, i, ACCEL_REDUCE_SUM)) {
      CHECK(false, "recv from %d [%zu]", prev, i);
      break;
    }
  }
  free(out);
  accel_buffer_release(mine);
  accel_buffer_release(got);
}

// A ring in one group: every rank first receives from the previous rank,
// then sends to the next, 1 MiB each way (past every engine's eager
// limit). Run one call at a time this waits for ever; in a group the
// engine starts both together.
static void test_group_ring(fixture_t* f) {
  size_t n = (size_t)1 << 18;
  accel_dtype_t t = ACCEL_DTYPE_I32;
  int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
  accel_buffer_t* mine = make(f, t, n, 0, rank_, ACCEL_REDUCE_SUM, 0);
  accel_buffer_t* got = make(f, t, n, 0, 0, ACCEL_REDUCE_SUM, 1);
  OK(accel_comm_group_start());
  OK(accel_comm_recv(f->comm, f->stream, got, 0, n, t, prev));
  OK(accel_comm_send(f->comm, f->stream, mine, 0, n, t, next));
  OK(accel_comm_group_end());
  unsigned char* out = fetch(f, got, 0, n * 4);
  for (size_t i = 0; i < n; i++) {
    if (get(out, t, i) != input(prev, i, ACCEL_REDUCE_SUM)) {
      CHECK(false, "group ring: recv from %d [%zu]", prev, i);
      break;
    }
  }
  free(out);
  accel_buffer_release(mine);
  accel_buffer_release(got);
}

// A nested group of two all-reduces and an all-to-all; a bad call inside
// a group fails at once and leaves the group going; an end without a
// start is refused.
static void test_group_collectives(fixture_t* f) {
  size_t n = 500;
  accel_dtype_t t = ACCEL_DTYPE_F32;
  accel_reduce_op_t sum = ACCEL_REDUCE_SUM, max = ACCEL_REDUCE_MAX;
  accel_buffer_t* a = make(f, t, n, 0, rank_, sum, 0);
  accel_buffer_t* b = make(f, t, n, 0, rank_, max, 0);
  size_t all = n * (size_t)size_;
  accel_buffer_t* x = make(f, t, all, 0, rank_, sum, 0);
  accel_buffer_t* y = make(f, t, all, 0, 0, sum, 0);
  OK(accel_comm_group_start());
  OK(accel_comm_all_reduce(f->comm, f->stream, a, 0, a, 0, n, t, sum));
  OK(accel_comm_group_start());
  OK(accel_comm_all_reduce(f->comm, f->stream, b, 0, b, 0, n, t, max));
  OK(accel_comm_group_end());  // inner: nothing runs yet
  accel_status_t s = accel_comm_all_reduce(f->comm, f->stream, a, 0, a, 0,
                                           2 * n, t, sum);  // past the end
  CHECK(s == ACCEL_ERROR_INVALID_ARGUMENT,
        "a bad call inside a group fails at once: %s",
        accel_status_string(s));
  OK(accel_comm_all_to_all(f->comm, f->stream, x, 0, y, 0, n, t));
  OK(accel_comm_group_end());
  unsigned char* out = fetch(f, a, 0, n * 4);
  unsigned char* out2 = fetch(f, b, 0, n * 4);
  unsigned char* out3 = fetch(f, y, 0, all * 4);
  for (size_t i = 0; i < n; i++) {
    if (get(out, t, i) != reduce_ref(i, sum) ||
        get(out2, t, i) != reduce_ref(i, max)) {
      CHECK(false, "grouped all_reduce [%zu]: %g %g", i, get(out, t, i),
            get(out2, t, i));
      break;
    }
  }
  for (size_t i = 0; i < all; i++) {
    double want = input((int)(i / n), (size_t)rank_ * n + i % n, sum);
    if (get(out3, t, i) != want) {
      CHECK(false, "grouped all_to_all [%zu]", i);
      break;
    }
  }
  free(out);
  free(out2);
  free(out3);
  s = accel_comm_group_end();
  CHECK(s == ACCEL_ERROR_INVALID_ARGUMENT && strstr(accel_last_error(),
                                                    "without"),
        "group_end without start: %s", accel_last_error());
  OK(accel_comm_group_start());  // an empty group
  OK(accel_comm_group_end());
  accel_buffer_release(a);
  accel_buffer_release(b);
  accel_buffer_release(x);
  accel_buffer_release(y);
}

static void test_split(fixture_t* f) {
  accel_comm_t* half = NULL;
  OK(accel_comm_split(f->comm, rank_ % 2, -rank_, &half));
  if (half == NULL) return;
  int members = (size_ + (rank_ % 2 == 0 ? 1 : 0)) / 2;
  CHECK(accel_comm_size(half) == members, "split size %d, want %d",
        accel_comm_size(half), members);
  // key -rank reverses the order.
  CHECK(accel_comm_rank(half) == members - 1 - rank_ / 2,
        "split rank %d", accel_comm_rank(half));
  accel_buffer_t* b = NULL;
  OK(accel_buffer_create(f->dev, 4, &b));
  int32_t one = 1, total = 0;
  OK(accel_buffer_write(b, 0, &one, 4));
  OK(accel_comm_all_reduce(half, f->stream, b, 0, b, 0, 1, ACCEL_DTYPE_I32,
                           ACCEL_REDUCE_SUM));
  OK(accel_stream_read_buffer(f->stream, b, 0, &total, 4));
  OK(accel_stream_synchronize(f->stream));
  CHECK(total == members, "split all_reduce %d, want %d", total, members);
  accel_buffer_release(b);
  accel_comm_release(half);
}

static void test_bad_arguments(fixture_t* f) {
  accel_buffer_t* b = NULL;
  OK(accel_buffer_create(f->dev, 64, &b));
  accel_status_t s = accel_comm_all_reduce(f->comm, f->stream, b, 0, b, 0, 17,
                                           ACCEL_DTYPE_F32, ACCEL_REDUCE_SUM);
  CHECK(s == ACCEL_ERROR_INVALID_ARGUMENT && strstr(accel_last_error(),
                                                    "accel_comm_all_reduce"),
        "too small a buffer: %s", accel_last_error());
  s = accel_comm_broadcast(f->comm, f->stream, b, 0, 1, ACCEL_DTYPE_F32,
                           size_);
  CHECK(s == ACCEL_ERROR_INVALID_ARGUMENT &&
            strstr(accel_last_error(), "outside the communicator"),
        "root out of range: %s", accel_last_error());
  s = accel_comm_all_reduce(f->comm, f->stream, b, 0, b, 0, 1,
                            (accel_dtype_t)9, ACCEL_REDUCE_SUM);
  CHECK(s == ACCEL_ERROR_INVALID_ARGUMENT, "bad dtype");
  s = accel_comm_all_reduce(f->comm, f->stream, b, 0, b, 0, 1,
                            ACCEL_DTYPE_F32, (accel_reduce_op_t)7);
  CHECK(s == ACCEL_ERROR_INVALID_ARGUMENT, "bad op");
  s = accel_comm_all_reduce(NULL, f->stream, b, 0, b, 0, 1, ACCEL_DTYPE_F32,
                            ACCEL_REDUCE_SUM);
  CHECK(s == ACCEL_ERROR_INVALID_ARGUMENT, "NULL comm");
  const char* engine = getenv("COMM_TEST_ENGINE");
  accel_device_t* cpu = NULL;
  accel_stream_t* other = NULL;
  if (engine != NULL && strcmp(engine, "mpi") != 0 &&
      accel_device_open("cpu:0", &cpu) == ACCEL_OK &&
      accel_stream_create(cpu, 0, &other) == ACCEL_OK) {
    // A device-bound engine takes its own device's streams only.
    s = accel_comm_all_reduce(f->comm, other, b, 0, b, 0, 1, ACCEL_DTYPE_F32,
                              ACCEL_REDUCE_SUM);
    CHECK(s == ACCEL_ERROR_INVALID_ARGUMENT &&
              strstr(accel_last_error(), "serves"),
          "a stream of another device: %s", accel_last_error());
  }
  accel_stream_release(other);
  accel_device_release(cpu);
  accel_buffer_release(b);
}

// Under tests/comm/two_hosts.sh each rank runs in its own network
// namespace: the ranks must see COMM_TEST_EXPECT_HOSTS distinct ones, so
// the collectives above crossed the veth pair over TCP.
static void test_hosts(fixture_t* f, int expect) {
  char link[64] = "";
  ssize_t n = readlink("/proc/self/ns/net", link, sizeof(link) - 1);
  if (n > 0) link[n] = '\0';
  int32_t mine = (int32_t)strtol(strchr(link, '[') ? strchr(link, '[') + 1
                                                    : "0",
                                 NULL, 10);
  accel_buffer_t *one = NULL, *all = NULL;
  OK(accel_buffer_create(f->dev, 4, &one));
  OK(accel_buffer_create(f->dev, 4 * (size_t)size_, &all));
  OK(accel_buffer_write(one, 0, &mine, 4));
  OK(accel_comm_all_gather(f->comm, f->stream, one, 0, all, 0, 1,
                           ACCEL_DTYPE_I32));
  int32_t* ids = calloc((size_t)size_, 4);
  OK(accel_stream_read_buffer(f->stream, all, 0, ids, 4 * (size_t)size_));
  OK(accel_stream_synchronize(f->stream));
  int distinct = 0;
  for (int i = 0; i < size_; i++) {
    bool seen = false;
    for (int j = 0; j < i; j++) seen = seen || ids[j] == ids[i];
    if (!seen) distinct++;
  }
  CHECK(distinct == expect, "ranks ran in %d network namespaces, want %d",
        distinct, expect);
  if (rank_ == 0) printf("ranks span %d network namespaces\n", distinct);
  free(ids);
  accel_buffer_release(one);
  accel_buffer_release(all);
}

// Rank 1 leaves (or, with `stall`, stops calling); everyone else must
// fail within the timeout (or as soon as the engine sees the peer gone),
// then find the communicator broken and the stream usable.
static int run_die(fixture_t* f, bool stall) {
  accel_buffer_t* b = NULL;
  OK(accel_buffer_create(f->dev, 4, &b));
  OK(accel_buffer_fill(b, 0, 0, 4));
  OK(accel_comm_all_reduce(f->comm, f->stream, b, 0, b, 0, 1, ACCEL_DTYPE_F32,
                           ACCEL_REDUCE_SUM));
  OK(accel_stream_synchronize(f->stream));
  if (rank_ == 1 && stall) {
    // Alive but silent past the others' timeout, then gone.
    const char* limit = getenv("ACCEL_COMM_TIMEOUT");
    sleep((unsigned)(limit != NULL ? atoi(limit) : 1) + 3);
    _exit(0);
  }
  if (rank_ == 1) _exit(0);  // dies mid-job, without MPI_Finalize
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  accel_status_t s = accel_comm_all_reduce(f->comm, f->stream, b, 0, b, 0, 1,
                                           ACCEL_DTYPE_F32, ACCEL_REDUCE_SUM);
  const char* call = "all_reduce";
  if (s == ACCEL_OK) {
    // NCCL reports a lost peer asynchronously (ncclCommGetAsyncError): an
    // all-reduce whose kernels were queued before the loss was seen is
    // accepted, and the loss fails the next call instead.
    call = "broadcast";
    s = accel_comm_broadcast(f->comm, f->stream, b, 0, 1, ACCEL_DTYPE_F32, 0);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double waited = (double)(t1.tv_sec - t0.tv_sec) +
                  1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  CHECK(s == ACCEL_ERROR_TIMEOUT || s == ACCEL_ERROR_DEVICE_LOST,
        "after a peer died: %s: %s", accel_status_string(s),
        accel_last_error());
  CHECK(strstr(accel_last_error(), "rank") != NULL &&
            strstr(accel_last_error(), call) != NULL,
        "the message names the call (%s) and the rank: %s", call,
        accel_last_error());
  CHECK(waited < 30, "gave up after %.1f s", waited);
  accel_status_t first = s;
  s = accel_comm_broadcast(f->comm, f->stream, b, 0, 1, ACCEL_DTYPE_F32, 0);
  CHECK(s == first && strstr(accel_last_error(), "broken"),
        "a broken communicator refuses later calls: %s", accel_last_error());
  // The stream still works: an aborted collective does not hold it. (The
  // buffer is the stream's again once the stream is synchronised.)
  OK(accel_stream_synchronize(f->stream));
  OK(accel_buffer_fill(b, 0, 0, 4));
  printf("rank %d: peer loss reported after %.1f s: %s\n", rank_, waited,
         accel_last_error());
  accel_buffer_release(b);
  return failures == 0 ? 0 : 1;
}

// The launcher left rank `size - 1` out: creating the communicator must
// fail within the timeout with a message naming that rank.
static int run_missing(accel_status_t s) {
  const char* rank = getenv("ACCEL_COMM_RANK");
  const char* size = getenv("ACCEL_COMM_SIZE");
  int n = size != NULL ? atoi(size) : 0;
  char want[64];
  snprintf(want, sizeof(want), "rank %d of %d", n - 1, n);
  CHECK(s == ACCEL_ERROR_TIMEOUT && strstr(accel_last_error(), want),
        "rank %s: a missing rank: %s: %s (want '%s')",
        rank != NULL ? rank : "?", accel_status_string(s),
        accel_last_error(), want);
  printf("rank %s: %s\n", rank != NULL ? rank : "?", accel_last_error());
  return failures == 0 ? 0 : 1;
}

// Rank 1 stalled inside ncclCommInitRank after the rendezvous (and never
// gets here): creating the communicator must fail within the timeout
// (`waited` seconds it took), naming the call: ACCEL_ERROR_TIMEOUT, or
// ACCEL_ERROR_DEVICE_LOST where another rank gave up first and its abort
// broke this rank's set-up.
static int run_init_stall(accel_status_t s, double waited) {
  const char* rank = getenv("ACCEL_COMM_RANK");
  const char* limit = getenv("ACCEL_COMM_TIMEOUT");
  double timeout = limit != NULL ? atof(limit) : 300;
  rank_ = rank != NULL ? atoi(rank) : -1;  // for CHECK's messages
  CHECK((s == ACCEL_ERROR_TIMEOUT || s == ACCEL_ERROR_DEVICE_LOST) &&
            strstr(accel_last_error(), "ncclCommInitRank") != NULL,
        "a rank stalled in NCCL's set-up: %s: %s", accel_status_string(s),
        accel_last_error());
  CHECK(waited < timeout + 10, "gave up after %.1f s (timeout %.0f s)",
        waited, timeout);
  printf("rank %s: after %.1f s: %s\n", rank != NULL ? rank : "?", waited,
         accel_last_error());
  return failures == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  const char* device = getenv("COMM_TEST_DEVICE");
  const char* engine = getenv("COMM_TEST_ENGINE");
  fixture_t f = {0};
  accel_status_t s = accel_device_open(device != NULL ? device : "cpu:0",
                                       &f.dev);
  if (s != ACCEL_OK) {
    fprintf(stderr, "skip: %s\n", accel_last_error());
    return 77;
  }
  OK(accel_stream_create(f.dev, 0, &f.stream));
  accel_comm_options_t options;
  accel_comm_options_init(&options);
  options.engine = engine;
  options.device = f.dev;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  s = accel_comm_create(&options, &f.comm);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (strcmp(mode, "missing") == 0) return run_missing(s);
  if (strcmp(mode, "init_stall") == 0) {
    return run_init_stall(s, (double)(t1.tv_sec - t0.tv_sec) +
                                 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec));
  }
  if (strcmp(mode, "refused") == 0) {
    // MPI, started without mpirun and without an ompi-server.
    CHECK(s == ACCEL_ERROR_UNSUPPORTED &&
              strstr(accel_last_error(), "ompi-server") != NULL,
          "without mpirun or ompi-server: %s: %s", accel_status_string(s),
          accel_last_error());
    printf("%s\n", accel_last_error());
    accel_comm_release(f.comm);
    return failures == 0 ? 0 : 1;
  }
  if (s == ACCEL_ERROR_UNAVAILABLE || s == ACCEL_ERROR_NOT_FOUND) {
    fprintf(stderr, "skip: %s\n", accel_last_error());
    return 77;
  }
  OK(s);
  if (f.comm == NULL) return 1;
  accel_buffer_t* probe = NULL;
  uint64_t address = 0;
  if (engine != NULL && strcmp(engine, "mpi") != 0 &&
      accel_buffer_create(f.dev, 64, &probe) == ACCEL_OK &&
      accel_buffer_query_address(probe, 0, &address) ==
          ACCEL_ERROR_UNSUPPORTED) {
    // A device plugin older than plugin ABI 1.3 gives no device addresses,
    // which NCCL and RCCL need.
    fprintf(stderr, "skip: %s\n", accel_last_error());
    accel_buffer_release(probe);
    accel_comm_release(f.comm);
    return 77;
  }
  accel_buffer_release(probe);
  rank_ = accel_comm_rank(f.comm);
  size_ = accel_comm_size(f.comm);
  const char* want = engine != NULL ? engine : "mpi";
  CHECK(strcmp(accel_comm_engine(f.comm), want) == 0, "engine %s, want %s",
        accel_comm_engine(f.comm), want);
  int rc = 0;
  if (strcmp(mode, "die") == 0 || strcmp(mode, "stall") == 0) {
    rc = run_die(&f, strcmp(mode, "stall") == 0);
  } else {
    for (size_t t = 0; t < sizeof(dtypes) / sizeof(dtypes[0]); t++) {
      for (int op = 0; op < 4; op++) {
        test_all_reduce(&f, dtypes[t], (accel_reduce_op_t)op, false);
      }
      test_all_reduce(&f, dtypes[t], ACCEL_REDUCE_SUM, true);
      test_gathers(&f, dtypes[t]);
      test_rooted(&f, dtypes[t]);
    }
    // Large enough for the engines' large-message paths (MPI: the ring or
    // reduce-scatter/all-gather it asks libnbc for, all-gathers made of
    // sends and receives).
    test_all_reduce_n(&f, ACCEL_DTYPE_F32, ACCEL_REDUCE_SUM, true, 100000);
    test_all_reduce_n(&f, ACCEL_DTYPE_F32, ACCEL_REDUCE_MAX, false, 100000);
    test_all_reduce_n(&f, ACCEL_DTYPE_BF16, ACCEL_REDUCE_SUM, true, 100000);
    test_gathers_n(&f, ACCEL_DTYPE_F32, 20000);  // MPI: point to point
    test_gathers_n(&f, ACCEL_DTYPE_BF16, 40000);
    test_point_to_point(&f);
    test_group_ring(&f);
    test_group_collectives(&f);
    test_split(&f);
    test_bad_arguments(&f);
    const char* hosts = getenv("COMM_TEST_EXPECT_HOSTS");
    if (hosts != NULL) test_hosts(&f, atoi(hosts));
    printf("rank %d of %d on %s (%s): %d failure(s)\n", rank_, size_,
           accel_device_uri(f.dev), accel_comm_engine(f.comm), failures);
    rc = failures == 0 ? 0 : 1;
  }
  accel_comm_release(f.comm);
  accel_stream_release(f.stream);
  accel_device_release(f.dev);
  accel_shutdown();
  return rc;
}
