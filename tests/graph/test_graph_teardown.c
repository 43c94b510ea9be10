// SPDX-License-Identifier: MIT
//
// Graph teardown against a stream that is being released on another
// thread (ACCEL_TEST_DEVICE, default cpu:0). The graph's last launch is
// still running on that stream: its release waits in stream_destroy for
// the work. Releasing the graph meanwhile must wait too, or its pool goes
// back to the device while the launch still writes into it, and the next
// allocation of the same size gets memory that the launch then overwrites.
//
// And the other side of the captured host function: on a backend without
// launch_host_func (run by name on the loader fixture fxgood, CTest
// graph_host_func_refused) the capture refuses it at once, as the eager
// call does, and the graph keeps the rest of the captured work.
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "accel/accel.h"
#include "accel/controls.h"
#include "accel/graph.h"
#include "test.h"

#define N 4096

static void nap_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

// The captured host function: holds the stream up so that the fill after
// it runs while the stream and the graph are being released.
static void slow_host_fn(void* user_data) {
  (void)user_data;
  nap_ms(300);
}

static void* release_stream(void* stream) {
  accel_stream_release(stream);
  return NULL;
}

TEST(graph_release_waits_for_a_dying_stream) {
  const char* uri = getenv("ACCEL_TEST_DEVICE");
  accel_device_t* d = NULL;
  if (accel_device_open(uri != NULL && uri[0] ? uri : "cpu:0", &d) !=
      ACCEL_OK) {
    SKIP("no device: %s", accel_last_error());
  }
  accel_stream_t *s = NULL, *dying = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_stream_create(d, 0, &dying));
  // The graph: a pool buffer, a slow host function, then a fill of the
  // pool buffer with 7.
  ASSERT_OK(accel_stream_begin_capture(s));
  accel_buffer_t* tmp = NULL;
  ASSERT_OK(accel_stream_alloc_buffer(s, N * 4, &tmp));
  accel_status_t st = accel_stream_launch_host_func(s, slow_host_fn, NULL);
  if (st == ACCEL_ERROR_UNSUPPORTED) {
    accel_graph_t* g = NULL;
    (void)accel_stream_end_capture(s, &g);
    accel_graph_release(g);
    accel_buffer_release(tmp);
    accel_stream_release(dying);
    accel_stream_release(s);
    accel_device_release(d);
    SKIP("no host functions on this backend");
  }
  ASSERT_OK(st);
  ASSERT_OK(accel_op_fill(s, tmp, 0, ACCEL_DTYPE_F32, N, 7.0));
  accel_buffer_release(tmp);
  accel_graph_t* g = NULL;
  ASSERT_OK(accel_stream_end_capture(s, &g));
  ASSERT_OK(accel_graph_launch(g, dying));
  // Another thread drops the last reference to the stream: it waits there
  // for the launch (the host function, then the fill).
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, NULL, release_stream, dying), 0);
  nap_ms(100);  // the release is under way, the host function asleep
  accel_graph_release(g);
  // Same-sized buffers now, filled with zeros: if the graph's pool went
  // back early one of them is the pool buffer, which the fill of 7 hits.
  enum { COUNT = 4 };
  accel_buffer_t* fresh[COUNT] = {NULL};
  for (int i = 0; i < COUNT; i++) {
    ASSERT_OK(accel_buffer_create(d, N * 4, &fresh[i]));
    ASSERT_OK(accel_buffer_fill(fresh[i], 0, 0, N * 4));
  }
  ASSERT_EQ(pthread_join(t, NULL), 0);
  ASSERT_OK(accel_device_synchronize(d));
  for (int i = 0; i < COUNT; i++) {
    float host[N];
    ASSERT_OK(accel_buffer_read(fresh[i], 0, host, sizeof(host)));
    size_t hit = 0;
    for (size_t k = 0; k < N; k++) hit += host[k] != 0.0f;
    if (hit != 0) {
      printf("  buffer %d: %zu of %d floats overwritten by the graph\n", i,
             hit, N);
    }
    ASSERT_EQ(hit, 0);
    accel_buffer_release(fresh[i]);
  }
  accel_stream_release(s);
  accel_device_release(d);
}

static void count_call(void* user_data) {
  atomic_fetch_add((atomic_int*)user_data, 1);
}

TEST(host_func_refused_at_capture_without_the_entry) {
  const char* uri = getenv("ACCEL_TEST_DEVICE");
  accel_device_t* d = NULL;
  if (accel_device_open(uri != NULL && uri[0] ? uri : "cpu:0", &d) !=
      ACCEL_OK) {
    SKIP("no device: %s", accel_last_error());
  }
  accel_stream_t* s = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  atomic_int calls = 0;
  accel_status_t st = accel_stream_launch_host_func(s, count_call, &calls);
  if (st == ACCEL_OK) {
    ASSERT_OK(accel_stream_synchronize(s));
    accel_stream_release(s);
    accel_device_release(d);
    SKIP("this backend calls host functions (the refusal needs one without)");
  }
  ASSERT_STATUS(st, ACCEL_ERROR_UNSUPPORTED);
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(d, N, &b));
  ASSERT_OK(accel_buffer_fill(b, 0, 0, N));
  // A fill, the refused host function, a second fill: the capture goes on
  // and the graph holds both fills, not a node that could only fail.
  ASSERT_OK(accel_stream_begin_capture(s));
  ASSERT_OK(accel_stream_fill_buffer(s, b, 0, 0x11, N / 2));
  ASSERT_STATUS(accel_stream_launch_host_func(s, count_call, &calls),
                ACCEL_ERROR_UNSUPPORTED);
  ASSERT_STR_CONTAINS(accel_last_error(), "launch_host_func");
  ASSERT_OK(accel_stream_fill_buffer(s, b, N / 2, 0x22, N / 2));
  accel_graph_t* g = NULL;
  ASSERT_OK(accel_stream_end_capture(s, &g));
  ASSERT_EQ(accel_graph_node_count(g), 2);
  ASSERT_OK(accel_graph_launch(g, s));
  ASSERT_OK(accel_stream_synchronize(s));
  unsigned char host[N];
  ASSERT_OK(accel_buffer_read(b, 0, host, N));
  ASSERT_EQ(host[0], 0x11);
  ASSERT_EQ(host[N / 2 - 1], 0x11);
  ASSERT_EQ(host[N / 2], 0x22);
  ASSERT_EQ(host[N - 1], 0x22);
  ASSERT_EQ(atomic_load(&calls), 0);
  accel_graph_release(g);
  accel_buffer_release(b);
  accel_stream_release(s);
  accel_device_release(d);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
