// SPDX-License-Identifier: MIT
//
// Graphs (<accel/graph.h>) on ACCEL_TEST_DEVICE (default cpu:0, whose
// plugin captures natively; CTest also runs this on the template plugin,
// which the core replays): a capture records and runs nothing, launches
// replay it on any stream of the device, illegal calls fail and invalidate
// the capture while leaving the stream usable, rebinding and the graph
// pool, default-generator fills that draw new numbers each launch, child
// graphs and events, and bad arguments.
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"
#include "test.h"

#define N 1024

static accel_device_t* open_device(void) {
  const char* uri = getenv("ACCEL_TEST_DEVICE");
  accel_device_t* d = NULL;
  if (accel_device_open(uri != NULL && uri[0] ? uri : "cpu:0", &d) !=
      ACCEL_OK) {
    return NULL;
  }
  return d;
}

#define OPEN_OR_SKIP(d)                                       \
  do {                                                        \
    d = open_device();                                        \
    if (d == NULL) SKIP("no device: %s", accel_last_error()); \
  } while (0)

static accel_status_t read_f32(accel_buffer_t* b, float* out) {
  return accel_buffer_read(b, 0, out, N * sizeof(float));
}

// x = 1..N written, y = 2 everywhere, z = (x + y) * 3, out = z read back.
static accel_status_t enqueue_work(accel_stream_t* s, accel_buffer_t* x,
                                   accel_buffer_t* y, accel_buffer_t* z,
                                   const float* host, float* out) {
  accel_status_t st = accel_stream_write_buffer(s, x, 0, host, N * 4);
  if (st == ACCEL_OK) st = accel_op_fill(s, y, 0, ACCEL_DTYPE_F32, N, 2.0);
  if (st == ACCEL_OK)
    st = accel_op_add(s, z, 0, x, 0, y, 0, ACCEL_DTYPE_F32, N);
  if (st == ACCEL_OK) st = accel_op_scale(s, z, 0, ACCEL_DTYPE_F32, N, 3.0);
  if (st == ACCEL_OK) st = accel_stream_read_buffer(s, z, 0, out, N * 4);
  return st;
}

TEST(capture_records_and_replays) {
  accel_device_t* d = NULL;
  OPEN_OR_SKIP(d);
  accel_stream_t *s = NULL, *s2 = NULL;
  accel_buffer_t *x = NULL, *y = NULL, *z = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_stream_create(d, 0, &s2));
  ASSERT_OK(accel_buffer_create(d, N * 4, &x));
  ASSERT_OK(accel_buffer_create(d, N * 4, &y));
  ASSERT_OK(accel_buffer_create(d, N * 4, &z));
  ASSERT_OK(accel_buffer_fill(z, 0, 0, N * 4));
  static float host[N], out[N];
  for (int i = 0; i < N; i++) host[i] = (float)(i + 1), out[i] = -1;
  ASSERT(!accel_stream_is_capturing(s));
  ASSERT_OK(accel_stream_begin_capture(s));
  ASSERT(accel_stream_is_capturing(s));
  ASSERT(!accel_stream_is_capturing(s2));
  ASSERT_STATUS(accel_stream_begin_capture(s), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_OK(enqueue_work(s, x, y, z, host, out));
  // A bad argument fails the call and records nothing.
  ASSERT_STATUS(accel_op_fill(s, y, 2, ACCEL_DTYPE_F32, N, 0),
                ACCEL_ERROR_INVALID_ARGUMENT);
  // Count 0 records nothing either.
  ASSERT_OK(accel_op_fill(s, y, 0, ACCEL_DTYPE_F32, 0, 0));
  accel_graph_t* g = NULL;
  ASSERT_OK(accel_stream_end_capture(s, &g));
  ASSERT(!accel_stream_is_capturing(s));
  ASSERT_EQ(accel_graph_node_count(g), 5);
  ASSERT(accel_graph_device(g) == d);
  accel_graph_node_kind_t kind;
  ASSERT_OK(accel_graph_node_kind(g, 0, &kind));
  ASSERT_EQ(kind, ACCEL_GRAPH_NODE_COPY);
  ASSERT_OK(accel_graph_node_kind(g, 1, &kind));
  ASSERT_EQ(kind, ACCEL_GRAPH_NODE_OP);
  ASSERT_STATUS(accel_graph_node_kind(g, 5, &kind), ACCEL_ERROR_NOT_FOUND);
  // Nothing ran.
  ASSERT_OK(accel_stream_synchronize(s));
  float zero[N];
  ASSERT_OK(read_f32(z, zero));
  for (int i = 0; i < N; i++) ASSERT(zero[i] == 0 && out[i] == -1);
  // Launches, on the capture stream and another one, many times.
  for (int round = 0; round < 20; round++) {
    for (int i = 0; i < N; i++) host[i] = (float)(i + round);
    ASSERT_OK(accel_graph_launch(g, (round & 1) ? s2 : s));
    ASSERT_OK(accel_stream_synchronize((round & 1) ? s2 : s));
    for (int i = 0; i < N; i++) {
      if (out[i] != ((float)(i + round) + 2.0f) * 3.0f) {
        TEST_FAIL_AT_("round %d: out[%d] = %g", round, i, (double)out[i]);
      }
    }
  }
  accel_graph_info_t info = {.struct_size = sizeof(info)};
  ASSERT_OK(accel_graph_query_info(g, &info));
  ASSERT_EQ(info.node_count, 5);
  ASSERT_EQ(info.launch_count, 20);
  printf("  native %d, %u plugin graphs\n", (int)info.native,
         info.native_parts);
  accel_device_info_t dinfo = {.struct_size = sizeof(dinfo)};
  ASSERT_OK(accel_device_query_info(d, &dinfo));
  ASSERT(dinfo.caps & ACCEL_DEVICE_CAP_GRAPHS);
  accel_graph_release(g);
  accel_buffer_release(x);
  accel_buffer_release(y);
  accel_buffer_release(z);
  accel_stream_release(s);
  accel_stream_release(s2);
  accel_device_release(d);
}

// Launches of one graph on two streams run one after the other.
TEST(launches_are_ordered_across_streams) {
  accel_device_t* d = NULL;
  OPEN_OR_SKIP(d);
  accel_stream_t *a = NULL, *b = NULL;
  accel_buffer_t* x = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &a));
  ASSERT_OK(accel_stream_create(d, 0, &b));
  ASSERT_OK(accel_buffer_create(d, 4, &x));
  ASSERT_OK(accel_buffer_fill(x, 0, 0, 4));
  ASSERT_OK(accel_stream_begin_capture(a));
  for (int i = 0; i < 50; i++) {
    ASSERT_OK(accel_op_add(a, x, 0, x, 0, x, 0, ACCEL_DTYPE_I32, 1));
    ASSERT_OK(accel_op_fill(a, x, 0, ACCEL_DTYPE_I32, 1, 0));
  }
  ASSERT_OK(accel_op_axpy(a, x, 0, x, 0, ACCEL_DTYPE_F32, 0, 1.0));
  accel_graph_t* g = NULL;
  ASSERT_OK(accel_stream_end_capture(a, &g));
  // +1 each launch, interleaved over two streams.
  accel_graph_t* inc = NULL;
  int32_t one = 1;
  accel_buffer_t* ones = NULL;
  ASSERT_OK(accel_buffer_create(d, 4, &ones));
  ASSERT_OK(accel_buffer_write(ones, 0, &one, 4));
  ASSERT_OK(accel_stream_begin_capture(a));
  ASSERT_OK(accel_op_add(a, x, 0, x, 0, ones, 0, ACCEL_DTYPE_I32, 1));
  ASSERT_OK(accel_stream_end_capture(a, &inc));
  for (int i = 0; i < 40; i++)
    ASSERT_OK(accel_graph_launch(inc, i & 1 ? a : b));
  ASSERT_OK(accel_device_synchronize(d));
  int32_t v = 0;
  ASSERT_OK(accel_buffer_read(x, 0, &v, 4));
  ASSERT_EQ(v, 40);
  accel_graph_release(g);
  accel_graph_release(inc);
  accel_buffer_release(x);
  accel_buffer_release(ones);
  accel_stream_release(a);
  accel_stream_release(b);
  accel_device_release(d);
}

// Launches of one graph from four threads, each on its own stream, while
// a fifth thread updates it: every launch counts once.
typedef struct launcher {
  accel_graph_t* graph;
  accel_stream_t* stream;
  accel_status_t status;
} launcher_t;

static void* launch_many(void* arg) {
  launcher_t* l = arg;
  for (int i = 0; i < 100 && l->status == ACCEL_OK; i++) {
    l->status = accel_graph_launch(l->graph, l->stream);
  }
  return NULL;
}

TEST(launches_from_threads) {
  accel_device_t* d = NULL;
  OPEN_OR_SKIP(d);
  accel_stream_t* s[4] = {NULL, NULL, NULL, NULL};
  accel_buffer_t *x = NULL, *one = NULL;
  for (int i = 0; i < 4; i++) ASSERT_OK(accel_stream_create(d, 0, &s[i]));
  ASSERT_OK(accel_buffer_create(d, 4, &x));
  ASSERT_OK(accel_buffer_create(d, 4, &one));
  int32_t v = 1;
  ASSERT_OK(accel_buffer_write(one, 0, &v, 4));
  ASSERT_OK(accel_buffer_fill(x, 0, 0, 4));
  accel_graph_t* g = NULL;
  ASSERT_OK(accel_stream_begin_capture(s[0]));
  ASSERT_OK(accel_op_add(s[0], x, 0, x, 0, one, 0, ACCEL_DTYPE_I32, 1));
  ASSERT_OK(accel_stream_end_capture(s[0], &g));
  launcher_t l[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    l[i] = (launcher_t){g, s[i], ACCEL_OK};
    ASSERT_EQ(pthread_create(&t[i], NULL, launch_many, &l[i]), 0);
  }
  size_t changed = 0;
  for (int i = 0; i < 50; i++) {
    // Rebinding `one` to itself: an update racing the launches.
    ASSERT_OK(accel_graph_rebind_buffer(g, one, one, &changed));
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    ASSERT_OK(l[i].status);
  }
  ASSERT_OK(accel_device_synchronize(d));
  ASSERT_OK(accel_buffer_read(x, 0, &v, 4));
  ASSERT_EQ(v, 400);
  accel_graph_release(g);
  accel_buffer_release(x);
  accel_buffer_release(one);
  for (int i = 0; i < 4; i++) accel_stream_release(s[i]);
  accel_device_release(d);
}

// Every illegal call fails, invalidates the capture (later enqueues fail
// too), the end returns the first reason, and the stream works again.
TEST(illegal_calls_invalidate_the_capture) {
  accel_device_t* d = NULL;
  OPEN_OR_SKIP(d);
  accel_stream_t *s = NULL, *other = NULL;
  accel_buffer_t *used = NULL, *unused = NULL;
  accel_event_t* e = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_stream_create(d, 0, &other));
  ASSERT_OK(accel_buffer_create(d, 64, &used));
  ASSERT_OK(accel_buffer_create(d, 64, &unused));
  ASSERT_OK(accel_event_create(d, 0, &e));
  ASSERT_OK(accel_buffer_fill(used, 0, 0, 64));
  uint8_t byte = 0;
  bool done = false;
  for (int which = 0; which < 8; which++) {
    ASSERT_OK(accel_stream_begin_capture(s));
    ASSERT_OK(accel_stream_fill_buffer(s, used, 0, 7, 64));
    ASSERT_OK(accel_event_record(e, s));
    // Legal: other buffers, other streams.
    ASSERT_OK(accel_buffer_read(unused, 0, &byte, 1));
    ASSERT_OK(accel_stream_fill_buffer(other, unused, 0, 1, 64));
    ASSERT_OK(accel_stream_synchronize(other));
    accel_status_t st = ACCEL_OK;
    switch (which) {
      case 0:
        st = accel_stream_synchronize(s);
        break;
      case 1:
        st = accel_stream_query(s, &done);
        break;
      case 2:
        st = accel_device_synchronize(d);
        break;
      case 3:
        st = accel_event_synchronize(e);
        break;
      case 4:
        st = accel_event_query(e, &done);
        break;
      case 5:
        st = accel_buffer_read(used, 0, &byte, 1);
        break;
      case 6:
        st = accel_buffer_fill(used, 0, 1, 1);
        break;
      case 7:
        st = accel_stream_wait_event(other, e);
        break;
    }
    ASSERT_STATUS(st, ACCEL_ERROR_INVALID_ARGUMENT);
    ASSERT_STR_CONTAINS(accel_last_error(), "capturing");
    ASSERT(accel_stream_is_capturing(s));
    ASSERT_STATUS(accel_stream_fill_buffer(s, used, 0, 3, 64),
                  ACCEL_ERROR_INVALID_ARGUMENT);
    ASSERT_STR_CONTAINS(accel_last_error(), "invalidated");
    accel_graph_t* g = (accel_graph_t*)&byte;
    ASSERT_STATUS(accel_stream_end_capture(s, &g),
                  ACCEL_ERROR_INVALID_ARGUMENT);
    ASSERT_NULL(g);
    ASSERT_STR_CONTAINS(accel_last_error(), "invalidated");
    ASSERT(!accel_stream_is_capturing(s));
    // The stream works again, and nothing captured ran.
    ASSERT_OK(accel_stream_fill_buffer(s, unused, 0, 5, 64));
    ASSERT_OK(accel_stream_synchronize(s));
    ASSERT_OK(accel_event_synchronize(e));
    ASSERT_OK(accel_buffer_read(used, 0, &byte, 1));
    ASSERT(byte != 7 && byte != 3);
  }
  accel_graph_t* g = NULL;
  ASSERT_STATUS(accel_stream_end_capture(s, &g), ACCEL_ERROR_INVALID_ARGUMENT);
  // A released capturing stream discards its capture.
  accel_stream_t* t = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &t));
  ASSERT_OK(accel_stream_begin_capture(t));
  ASSERT_OK(accel_stream_fill_buffer(t, used, 0, 9, 64));
  accel_stream_release(t);
  ASSERT_OK(accel_buffer_read(used, 0, &byte, 1));
  accel_event_release(e);
  accel_buffer_release(used);
  accel_buffer_release(unused);
  accel_stream_release(s);
  accel_stream_release(other);
  accel_device_release(d);
}

TEST(rebind_buffer) {
  accel_device_t* d = NULL;
  OPEN_OR_SKIP(d);
  accel_stream_t* s = NULL;
  accel_buffer_t *x = NULL, *x2 = NULL, *z = NULL, *small = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_buffer_create(d, N * 4, &x));
  ASSERT_OK(accel_buffer_create(d, N * 4 + 64, &x2));
  ASSERT_OK(accel_buffer_create(d, N * 4, &z));
  ASSERT_OK(accel_buffer_create(d, 16, &small));
  ASSERT_OK(accel_op_fill(s, x, 0, ACCEL_DTYPE_F32, N, 1.0));
  ASSERT_OK(accel_op_fill(s, x2, 0, ACCEL_DTYPE_F32, N, 5.0));
  ASSERT_OK(accel_stream_synchronize(s));
  ASSERT_OK(accel_stream_begin_capture(s));
  ASSERT_OK(accel_op_add(s, z, 0, x, 0, x, 0, ACCEL_DTYPE_F32, N));
  ASSERT_OK(accel_op_scale(s, z, 0, ACCEL_DTYPE_F32, N, 0.5));
  accel_graph_t* g = NULL;
  ASSERT_OK(accel_stream_end_capture(s, &g));
  // The graph holds x: the program's release leaves it alive (the extra
  // reference keeps it alive after the graph drops its own below).
  accel_buffer_retain(x);
  accel_buffer_release(x);
  float out[N];
  ASSERT_OK(accel_graph_launch(g, s));
  ASSERT_OK(accel_stream_synchronize(s));
  ASSERT_OK(read_f32(z, out));
  ASSERT(out[0] == 1.0f && out[N - 1] == 1.0f);
  size_t count = 99;
  ASSERT_STATUS(accel_graph_rebind_buffer(g, x, small, &count),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(count, 0);
  ASSERT_OK(accel_graph_rebind_buffer(g, x, x2, &count));
  ASSERT_EQ(count, 2);  // both inputs of the add
  ASSERT_OK(accel_graph_rebind_buffer(g, x, x2, &count));
  ASSERT_EQ(count, 0);  // x is no longer used
  ASSERT_OK(accel_graph_launch(g, s));
  ASSERT_OK(accel_stream_synchronize(s));
  ASSERT_OK(read_f32(z, out));
  ASSERT(out[0] == 5.0f && out[N - 1] == 5.0f);
  accel_graph_release(g);
  accel_buffer_release(x);
  accel_buffer_release(x2);
  accel_buffer_release(z);
  accel_buffer_release(small);
  accel_stream_release(s);
  accel_device_release(d);
}

// Allocations during a capture come from the graph's pool: the memory
// stays reserved while the graph lives, a block freed in the capture
// serves a later allocation of it, and the pool goes with the graph.
TEST(graph_pool) {
  accel_device_t* d = NULL;
  OPEN_OR_SKIP(d);
  accel_stream_t* s = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  accel_memory_stats_t before = {.struct_size = sizeof(before)};
  ASSERT_OK(accel_device_query_memory_stats(d, &before));
  ASSERT_OK(accel_stream_begin_capture(s));
  accel_buffer_t *tmp = NULL, *out = NULL;
  ASSERT_OK(accel_stream_alloc_buffer(s, N * 4, &tmp));
  ASSERT_OK(accel_op_fill(s, tmp, 0, ACCEL_DTYPE_F32, N, 4.0));
  ASSERT_OK(accel_stream_alloc_buffer(s, N * 4, &out));
  ASSERT_OK(accel_op_add(s, out, 0, tmp, 0, tmp, 0, ACCEL_DTYPE_F32, N));
  uint64_t tmp_address = 0, reused = 0;
  // ACCEL_ALLOCATOR=raw has no pool: the graph holds plain buffers.
  const char* mode = getenv("ACCEL_ALLOCATOR");
  bool raw = mode != NULL && strcmp(mode, "raw") == 0;
  bool addressable =
      !raw && accel_buffer_query_address(tmp, 0, &tmp_address) == ACCEL_OK;
  accel_buffer_release(tmp);  // freed in the capture
  accel_buffer_t* later = NULL;
  ASSERT_OK(accel_stream_alloc_buffer(s, N * 4, &later));
  if (addressable) {
    ASSERT_OK(accel_buffer_query_address(later, 0, &reused));
    ASSERT_EQ(reused, tmp_address);  // the pool reuses it, in order
  }
  ASSERT_OK(accel_op_fill(s, later, 0, ACCEL_DTYPE_F32, N, 1.0));
  accel_buffer_release(later);
  accel_graph_t* g = NULL;
  ASSERT_OK(accel_stream_end_capture(s, &g));
  ASSERT_EQ(accel_graph_node_count(g), 6);  // 3 allocations, 3 ops
  accel_graph_node_kind_t kind;
  ASSERT_OK(accel_graph_node_kind(g, 0, &kind));
  ASSERT_EQ(kind, ACCEL_GRAPH_NODE_ALLOC);
  accel_graph_info_t info = {.struct_size = sizeof(info)};
  ASSERT_OK(accel_graph_query_info(g, &info));
  printf("  pool %llu bytes\n", (unsigned long long)info.pool_bytes);
  // A pool buffer cannot be rebound (without a pool it is an ordinary
  // buffer: rebinding it to itself changes nothing).
  ASSERT_STATUS(accel_graph_rebind_buffer(g, out, out, NULL),
                raw ? ACCEL_OK : ACCEL_ERROR_INVALID_ARGUMENT);
  // Ordinary allocations never get the pool's memory.
  accel_buffer_t* other = NULL;
  ASSERT_OK(accel_buffer_create(d, N * 4, &other));
  if (addressable) {
    uint64_t a = 0;
    ASSERT_OK(accel_buffer_query_address(other, 0, &a));
    ASSERT_NE(a, tmp_address);
  }
  accel_buffer_release(other);
  float host[N];
  for (int round = 0; round < 3; round++) {
    ASSERT_OK(accel_buffer_fill(out, 0, 0, N * 4));
    ASSERT_OK(accel_graph_launch(g, s));
    ASSERT_OK(accel_stream_synchronize(s));
    ASSERT_OK(read_f32(out, host));
    ASSERT(host[0] == 8.0f && host[N - 1] == 8.0f);
  }
  accel_graph_release(g);
  // `out` is the program's and outlives the graph.
  ASSERT_OK(read_f32(out, host));
  ASSERT(host[0] == 8.0f);
  accel_buffer_release(out);
  accel_memory_stats_t after = {.struct_size = sizeof(after)};
  ASSERT_OK(accel_device_query_memory_stats(d, &after));
  ASSERT_EQ(after.allocated_bytes, before.allocated_bytes);
  accel_stream_release(s);
  accel_device_release(d);
}

// Default-generator fills draw new numbers at every launch, exactly the
// numbers the same fills enqueued one by one draw.
TEST(rng_offset_advances_per_launch) {
  accel_device_t* d = NULL;
  OPEN_OR_SKIP(d);
  accel_stream_t* s = NULL;
  accel_buffer_t *a = NULL, *b = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_buffer_create(d, N * 4, &a));
  ASSERT_OK(accel_buffer_create(d, N * 4, &b));
  ASSERT_OK(accel_device_manual_seed(d, 1234));
  accel_status_t st =
      accel_op_random_uniform(s, a, 0, ACCEL_DTYPE_F32, 10, 0, 1);
  if (st == ACCEL_ERROR_UNSUPPORTED) SKIP("no random fills");
  ASSERT_OK(st);
  // Eager: three launches' worth of (uniform N, normal 10).
  static float want[3][2][N];
  ASSERT_OK(accel_device_manual_seed(d, 1234));
  for (int r = 0; r < 3; r++) {
    ASSERT_OK(accel_op_random_uniform(s, a, 0, ACCEL_DTYPE_F32, N, 0, 1));
    ASSERT_OK(accel_op_random_normal(s, b, 0, ACCEL_DTYPE_F32, 10, 0, 1));
    ASSERT_OK(accel_stream_synchronize(s));
    ASSERT_OK(accel_buffer_read(a, 0, want[r][0], N * 4));
    ASSERT_OK(accel_buffer_read(b, 0, want[r][1], 40));
  }
  ASSERT_OK(accel_device_manual_seed(d, 1234));
  ASSERT_OK(accel_stream_begin_capture(s));
  ASSERT_OK(accel_op_random_uniform(s, a, 0, ACCEL_DTYPE_F32, N, 0, 1));
  ASSERT_OK(accel_op_random_normal(s, b, 0, ACCEL_DTYPE_F32, 10, 0, 1));
  accel_graph_t* g = NULL;
  ASSERT_OK(accel_stream_end_capture(s, &g));
  uint64_t seed = 0, offset = 99;
  ASSERT_OK(accel_device_rng_state_get(d, &seed, &offset));
  ASSERT_EQ(offset, 0);  // the capture drew nothing
  accel_graph_info_t info = {.struct_size = sizeof(info)};
  ASSERT_OK(accel_graph_query_info(g, &info));
  ASSERT_EQ(info.rng_blocks, N / 4 + 3);
  float got[2][N];
  for (int r = 0; r < 3; r++) {
    ASSERT_OK(accel_graph_launch(g, s));
    ASSERT_OK(accel_stream_synchronize(s));
    ASSERT_OK(accel_buffer_read(a, 0, got[0], N * 4));
    ASSERT_OK(accel_buffer_read(b, 0, got[1], 40));
    ASSERT_MEM_EQ(got[0], want[r][0], N * 4);
    ASSERT_MEM_EQ(got[1], want[r][1], 40);
  }
  ASSERT_OK(accel_device_rng_state_get(d, &seed, &offset));
  ASSERT_EQ(seed, 1234);
  ASSERT_EQ(offset, 3 * (N / 4 + 3));
  accel_graph_release(g);
  accel_buffer_release(a);
  accel_buffer_release(b);
  accel_stream_release(s);
  accel_device_release(d);
}

// A graph launched into a capture is a node; events recorded and waited in
// a capture are recorded and waited at each launch.
TEST(child_graphs_and_events) {
  accel_device_t* d = NULL;
  OPEN_OR_SKIP(d);
  accel_stream_t *s = NULL, *t = NULL;
  accel_buffer_t* x = NULL;
  accel_event_t* e = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_stream_create(d, 0, &t));
  ASSERT_OK(accel_buffer_create(d, 4, &x));
  ASSERT_OK(accel_event_create(d, 0, &e));
  ASSERT_OK(accel_buffer_fill(x, 0, 0, 4));
  accel_graph_t *inner = NULL, *outer = NULL;
  ASSERT_OK(accel_stream_begin_capture(s));
  ASSERT_OK(accel_op_fill(s, x, 0, ACCEL_DTYPE_I32, 1, 7));
  ASSERT_OK(accel_stream_end_capture(s, &inner));
  ASSERT_OK(accel_stream_begin_capture(s));
  ASSERT_STATUS(accel_graph_launch(inner, NULL), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_OK(accel_graph_launch(inner, s));
  ASSERT_OK(accel_op_add(s, x, 0, x, 0, x, 0, ACCEL_DTYPE_I32, 1));
  ASSERT_OK(accel_event_record(e, s));
  ASSERT_OK(accel_stream_wait_event(s, e));
  ASSERT_OK(accel_stream_end_capture(s, &outer));
  ASSERT_EQ(accel_graph_node_count(outer), 4);
  accel_graph_node_kind_t kind;
  ASSERT_OK(accel_graph_node_kind(outer, 0, &kind));
  ASSERT_EQ(kind, ACCEL_GRAPH_NODE_GRAPH);
  ASSERT_OK(accel_graph_node_kind(outer, 2, &kind));
  ASSERT_EQ(kind, ACCEL_GRAPH_NODE_EVENT_RECORD);
  accel_graph_release(inner);  // the outer graph holds it
  ASSERT_OK(accel_graph_launch(outer, t));
  ASSERT_OK(accel_event_synchronize(e));  // recorded by the launch
  int32_t v = 0;
  ASSERT_OK(accel_buffer_read(x, 0, &v, 4));
  ASSERT_EQ(v, 14);
  ASSERT_OK(accel_stream_synchronize(t));
  accel_graph_release(outer);
  accel_event_release(e);
  accel_buffer_release(x);
  accel_stream_release(s);
  accel_stream_release(t);
  accel_device_release(d);
}

// The ops not covered above (sum, cast, GEMM, strided-batched GEMM,
// activation, bias-add, buffer copies, the sum of nothing) give, replayed,
// the bytes they give enqueued one by one.
static accel_status_t ops_sequence(accel_stream_t* s, accel_buffer_t* a,
                                   accel_buffer_t* b, accel_buffer_t* c,
                                   accel_buffer_t* out) {
  accel_gemm_t g;
  accel_gemm_init(&g);
  g.m = g.n = g.k = 16;
  g.a = a;
  g.b = b;
  g.c = c;
  accel_status_t st = accel_op_gemm(s, &g);
  if (st == ACCEL_OK) {
    st = accel_op_gemm_strided_batched(s, &g, 2, 0, 0, 0) ==
                 ACCEL_ERROR_INVALID_ARGUMENT
             ? ACCEL_OK  // overlapping C: refused, records nothing
             : ACCEL_ERROR_INTERNAL;
  }
  g.m = g.n = g.k = 8;
  g.c_offset = 0;
  if (st == ACCEL_OK) st = accel_op_gemm_strided_batched(s, &g, 2, 64, 64, 64);
  if (st == ACCEL_OK) {
    st = accel_op_activation(s, c, 0, c, 0, ACCEL_DTYPE_F32, 256,
                             ACCEL_ACTIVATION_GELU);
  }
  if (st == ACCEL_OK) {
    st = accel_op_bias_add(s, c, 0, a, 0, ACCEL_DTYPE_F32, 16, 16);
  }
  if (st == ACCEL_OK) st = accel_op_sum(s, out, 0, c, 0, ACCEL_DTYPE_F32, 256);
  if (st == ACCEL_OK) st = accel_op_sum(s, out, 4, c, 0, ACCEL_DTYPE_F32, 0);
  if (st == ACCEL_OK) {
    st = accel_op_cast(s, out, 8, ACCEL_DTYPE_F16, c, 0, ACCEL_DTYPE_F32, 64);
  }
  if (st == ACCEL_OK) st = accel_stream_copy_buffer(s, out, 512, c, 0, 1024);
  return st;
}

TEST(ops_match_eager) {
  accel_device_t* d = NULL;
  OPEN_OR_SKIP(d);
  accel_stream_t* s = NULL;
  accel_buffer_t *a = NULL, *b = NULL, *c = NULL, *out = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_buffer_create(d, 1024, &a));
  ASSERT_OK(accel_buffer_create(d, 1024, &b));
  ASSERT_OK(accel_buffer_create(d, 1024, &c));
  ASSERT_OK(accel_buffer_create(d, 2048, &out));
  float host[256];
  for (int i = 0; i < 256; i++) host[i] = (float)((i * 37) % 19) / 7.0f - 1.0f;
  ASSERT_OK(accel_buffer_write(a, 0, host, 1024));
  for (int i = 0; i < 256; i++) host[i] = (float)((i * 11) % 23) / 5.0f - 2.0f;
  ASSERT_OK(accel_buffer_write(b, 0, host, 1024));
  ASSERT_OK(accel_buffer_fill(out, 0, 0, 2048));
  accel_status_t st = ops_sequence(s, a, b, c, out);
  if (st == ACCEL_ERROR_UNSUPPORTED) SKIP("an op is unsupported here");
  ASSERT_OK(st);
  ASSERT_OK(accel_stream_synchronize(s));
  static unsigned char want[2048], got[2048];
  ASSERT_OK(accel_buffer_read(out, 0, want, 2048));
  ASSERT_OK(accel_buffer_fill(out, 0, 0, 2048));
  ASSERT_OK(accel_buffer_fill(c, 0, 0, 1024));
  accel_graph_t* g = NULL;
  ASSERT_OK(accel_stream_begin_capture(s));
  ASSERT_OK(ops_sequence(s, a, b, c, out));
  ASSERT_OK(accel_stream_end_capture(s, &g));
  ASSERT_EQ(accel_graph_node_count(g), 8);
  for (int r = 0; r < 2; r++) {
    ASSERT_OK(accel_buffer_fill(c, 0, 0, 1024));
    ASSERT_OK(accel_graph_launch(g, s));
    ASSERT_OK(accel_stream_synchronize(s));
    ASSERT_OK(accel_buffer_read(out, 0, got, 2048));
    ASSERT_MEM_EQ(got, want, 2048);
  }
  accel_graph_release(g);
  accel_buffer_release(a);
  accel_buffer_release(b);
  accel_buffer_release(c);
  accel_buffer_release(out);
  accel_stream_release(s);
  accel_device_release(d);
}

// A move within one buffer by a few bytes: the CUDA plugin runs it through
// a temporary it waits for, which a CUDA capture refuses; the core then
// replays the graph instead, with the same result.
TEST(refused_capture_is_replayed) {
  accel_device_t* d = NULL;
  OPEN_OR_SKIP(d);
  accel_stream_t* s = NULL;
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_buffer_create(d, 4100, &b));
  static uint8_t init[4100], got[4100], want[4100];
  for (int i = 0; i < 4100; i++) init[i] = (uint8_t)(i * 7);
  memcpy(want, init, sizeof(want));
  memmove(want + 4, want, 4096);
  memmove(want + 4, want, 4096);
  accel_graph_t* g = NULL;
  ASSERT_OK(accel_stream_begin_capture(s));
  ASSERT_OK(accel_stream_copy_buffer(s, b, 4, b, 0, 4096));
  ASSERT_OK(accel_stream_end_capture(s, &g));
  ASSERT_OK(accel_buffer_write(b, 0, init, sizeof(init)));
  ASSERT_OK(accel_graph_launch(g, s));
  ASSERT_OK(accel_graph_launch(g, s));
  ASSERT_OK(accel_stream_synchronize(s));
  ASSERT_OK(accel_buffer_read(b, 0, got, sizeof(got)));
  ASSERT_MEM_EQ(got, want, sizeof(got));
  accel_graph_info_t info = {.struct_size = sizeof(info)};
  ASSERT_OK(accel_graph_query_info(g, &info));
  printf("  %s\n", info.native ? "native" : "replayed");
  accel_graph_release(g);
  accel_buffer_release(b);
  accel_stream_release(s);
  accel_device_release(d);
}

TEST(bad_arguments) {
  accel_device_t* d = NULL;
  OPEN_OR_SKIP(d);
  accel_stream_t* s = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  accel_graph_t* g = NULL;
  ASSERT_STATUS(accel_stream_begin_capture(NULL), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_stream_end_capture(s, &g), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_stream_end_capture(s, NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT(!accel_stream_is_capturing(NULL));
  ASSERT_OK(accel_stream_begin_capture(s));
  ASSERT_OK(accel_stream_end_capture(s, &g));  // empty is fine
  ASSERT_EQ(accel_graph_node_count(g), 0);
  ASSERT_OK(accel_graph_launch(g, s));
  ASSERT_STATUS(accel_graph_launch(NULL, s), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_graph_update_launch(g, 0, NULL, 0, NULL),
                ACCEL_ERROR_NOT_FOUND);
  ASSERT_STATUS(accel_graph_rebind_buffer(g, NULL, NULL, NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  accel_graph_info_t info = {.struct_size = 4};
  ASSERT_STATUS(accel_graph_query_info(g, &info), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(accel_graph_node_count(NULL), 0);
  ASSERT_NULL(accel_graph_device(NULL));
  accel_graph_release(NULL);
  accel_graph_retain(g);
  accel_graph_release(g);
  accel_graph_release(g);
  ASSERT_OK(accel_stream_synchronize(s));
  accel_stream_release(s);
  accel_device_release(d);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
