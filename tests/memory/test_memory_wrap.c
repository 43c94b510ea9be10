// SPDX-License-Identifier: MIT
//
// accel_buffer_wrap on the CPU plugin: memory the caller owns becomes a
// buffer without a copy; the owner's release runs exactly once, after the
// streams that used the buffer have finished; bounds and device checks
// apply as for any buffer; a double release is caught.
#include <accel/accel.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loader/loader_util.h"
#include "memory_test.h"
#include "test.h"

typedef struct owner {
  unsigned char* data;
  size_t size;
  int releases;
  bool work_done;  // the buffer held the last fill's value at release
  uint8_t last;    // that value
} owner_t;

static void owner_release(void* user_data) {
  owner_t* o = user_data;
  o->releases++;
  o->work_done = memory_all(o->data, o->size, o->last);
}

static accel_buffer_t* wrap(accel_device_t* d, owner_t* o) {
  accel_buffer_t* b = NULL;
  accel_status_t status =
      accel_buffer_wrap(d, (uint64_t)(uintptr_t)o->data, o->size,
                        owner_release, o, &b);
  return status == ACCEL_OK ? b : NULL;
}

// How many times `needle` occurs in `hay`.
static int occurrences(const char* hay, const char* needle) {
  int n = 0;
  for (const char* p = strstr(hay, needle); p != NULL;
       p = strstr(p + 1, needle)) {
    n++;
  }
  return n;
}

TEST(wrap_shares_memory) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  owner_t o = {.data = calloc(1, 1000), .size = 1000};
  ASSERT_NOT_NULL(o.data);
  accel_buffer_t* b = wrap(d, &o);
  ASSERT_NOT_NULL(b);
  ASSERT_EQ(accel_buffer_size(b), 1000);
  ASSERT(accel_buffer_device(b) == d);
  uint64_t address = 0;
  ASSERT_OK(accel_buffer_query_address(b, 10, &address));
  ASSERT_EQ(address, (uint64_t)(uintptr_t)(o.data + 10));
  ASSERT_OK(accel_buffer_fill(b, 0, 0x5a, 1000));
  ASSERT(memory_all(o.data, 1000, 0x5a));
  o.data[3] = 7;
  unsigned char back = 0;
  ASSERT_OK(accel_buffer_read(b, 3, &back, 1));
  ASSERT_EQ(back, 7);
  // Copies into and out of allocator buffers work both ways.
  accel_buffer_t* c = NULL;
  ASSERT_OK(accel_buffer_create(d, 1000, &c));
  ASSERT_OK(accel_buffer_fill(c, 0, 0x11, 1000));
  ASSERT_OK(accel_buffer_copy(b, 0, c, 0, 500));
  ASSERT(memory_all(o.data, 500, 0x11));
  ASSERT_OK(accel_buffer_copy(c, 0, b, 500, 500));
  accel_buffer_release(c);
  accel_buffer_retain(b);
  accel_buffer_release(b);
  ASSERT_EQ(o.releases, 0);  // one reference left
  o.last = o.data[999];
  accel_buffer_release(b);
  ASSERT_EQ(o.releases, 1);
  free(o.data);
  accel_device_release(d);
}

TEST(wrap_release_waits_for_queued_work) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  owner_t o = {.data = malloc(MEMORY_TEST_BUSY), .size = MEMORY_TEST_BUSY};
  ASSERT_NOT_NULL(o.data);
  accel_stream_t *s1 = NULL, *s2 = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s1));
  ASSERT_OK(accel_stream_create(d, 0, &s2));
  accel_buffer_t* b = wrap(d, &o);
  ASSERT_NOT_NULL(b);
  // Two streams queue work; the release must wait for both. s1 waits for
  // s2's fills (they write the same bytes), so its last fill, 7, wins.
  accel_event_t* e = NULL;
  ASSERT_OK(accel_event_create(d, 0, &e));
  ASSERT_OK(memory_busy(s2, b, 3));
  ASSERT_OK(accel_event_record(e, s2));
  ASSERT_OK(accel_stream_wait_event(s1, e));
  ASSERT_OK(memory_busy(s1, b, 8));
  o.last = 7;
  accel_buffer_release(b);
  accel_event_release(e);
  ASSERT_EQ(o.releases, 1);
  ASSERT(o.work_done);
  accel_stream_release(s1);
  accel_stream_release(s2);
  ASSERT_EQ(o.releases, 1);
  free(o.data);
  accel_device_release(d);
}

TEST(wrap_release_after_the_stream_is_gone) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  owner_t o = {.data = malloc(4096), .size = 4096, .last = 2};
  ASSERT_NOT_NULL(o.data);
  accel_stream_t* s = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  accel_buffer_t* b = wrap(d, &o);
  ASSERT_NOT_NULL(b);
  ASSERT_OK(memory_busy(s, b, 3));
  accel_stream_release(s);  // the buffer's weak reference keeps the struct
  accel_buffer_release(b);
  ASSERT_EQ(o.releases, 1);
  ASSERT(o.work_done);
  free(o.data);
  accel_device_release(d);
}

TEST(wrap_bounds) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  owner_t o = {.data = calloc(1, 256), .size = 100};
  ASSERT_NOT_NULL(o.data);
  accel_buffer_t* b = wrap(d, &o);
  ASSERT_NOT_NULL(b);
  unsigned char bytes[128] = {0};
  ASSERT_STATUS(accel_buffer_write(b, 0, bytes, 101),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "outside the 100-byte buffer");
  ASSERT_STATUS(accel_buffer_fill(b, 99, 1, 2), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_buffer_read(b, 100, bytes, 1),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_OK(accel_buffer_fill(b, 99, 1, 1));
  ASSERT_EQ(o.data[100], 0);  // nothing past the wrapped range
  accel_buffer_release(b);
  ASSERT_EQ(o.releases, 1);
  free(o.data);
  accel_device_release(d);
}

TEST(wrap_wrong_device) {
  accel_device_t *d0 = NULL, *d1 = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d0));
  if (accel_device_open("cpu:1", &d1) != ACCEL_OK) {
    accel_device_release(d0);
    SKIP("needs ACCEL_CPU_DEVICES=2");
  }
  float host[16] = {0};
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_wrap(d0, (uint64_t)(uintptr_t)host, sizeof(host),
                              NULL, NULL, &b));
  accel_stream_t* s1 = NULL;
  ASSERT_OK(accel_stream_create(d1, 0, &s1));
  ASSERT_STATUS(accel_op_fill(s1, b, 0, ACCEL_DTYPE_F32, 16, 1.0),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "cpu:0");
  accel_stream_t* s0 = NULL;
  ASSERT_OK(accel_stream_create(d0, 0, &s0));
  ASSERT_OK(accel_op_fill(s0, b, 0, ACCEL_DTYPE_F32, 16, 2.5));
  ASSERT_OK(accel_stream_synchronize(s0));
  ASSERT(host[15] == 2.5f);
  accel_buffer_release(b);  // release NULL: nothing to call
  accel_stream_release(s0);
  accel_stream_release(s1);
  accel_device_release(d0);
  accel_device_release(d1);
}

TEST(wrap_bad_arguments) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  char host[8];
  uint64_t a = (uint64_t)(uintptr_t)host;
  accel_buffer_t* b = (accel_buffer_t*)1;
  ASSERT_STATUS(accel_buffer_wrap(d, a, 0, NULL, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_NULL(b);
  ASSERT_STATUS(accel_buffer_wrap(d, 0, 8, NULL, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_buffer_wrap(NULL, a, 8, NULL, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_buffer_wrap(d, a, 8, NULL, NULL, NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_buffer_wrap(d, UINT64_MAX - 3, 8, NULL, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  // The plugin's message already names the device: the core does not
  // repeat it ("cpu:0: cpu:0: ...").
  ASSERT_STR_CONTAINS(accel_last_error(), "accel_buffer_wrap: cpu:0: cannot");
  ASSERT_EQ(occurrences(accel_last_error(), "cpu:0"), 1);
  accel_device_release(d);
}

TEST(wrap_double_release_is_caught) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  owner_t o = {.data = calloc(1, 64), .size = 64};
  ASSERT_NOT_NULL(o.data);
  accel_buffer_t* b = wrap(d, &o);
  ASSERT_NOT_NULL(b);
  accel_buffer_release(b);
  ASSERT_EQ(o.releases, 1);
  accel_buffer_release(b);  // a program bug, caught while not reused
  ASSERT_EQ(o.releases, 1);
  ASSERT_STR_CONTAINS(accel_last_error(), "already released");
  ASSERT_STATUS(accel_buffer_fill(b, 0, 1, 1), ACCEL_ERROR_INVALID_ARGUMENT);
  // The handle is recycled by the next wrap, as allocator handles are.
  owner_t o2 = {.data = o.data, .size = 64};
  accel_buffer_t* b2 = wrap(d, &o2);
  ASSERT_NOT_NULL(b2);
  accel_buffer_release(b2);
  ASSERT_EQ(o2.releases, 1);
  free(o.data);
  accel_device_release(d);
}

// Run alone, with ACCEL_TEST_FX_GOOD set (CTest memory_wrap_unsupported):
// restarts the library with only the loader fixture "fxgood", whose table
// has no mem_wrap, so the core's default answers.
TEST(wrap_unsupported_without_the_entry) {
  const char* good = lu_env_path("ACCEL_TEST_FX_GOOD");
  if (good == NULL) SKIP("ACCEL_TEST_FX_GOOD is not set");
  lu_restart(good);
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("fxgood:0", &d));
  char host[64];
  accel_buffer_t* b = NULL;
  ASSERT_STATUS(accel_buffer_wrap(d, (uint64_t)(uintptr_t)host, sizeof(host),
                                  NULL, NULL, &b),
                ACCEL_ERROR_UNSUPPORTED);
  ASSERT_NULL(b);
  ASSERT_STR_CONTAINS(accel_last_error(), "accel_buffer_wrap on fxgood:0");
  ASSERT_STR_CONTAINS(accel_last_error(), "cannot wrap");
  ASSERT_EQ(occurrences(accel_last_error(), "fxgood:0"), 1);
  // Nor has its memory an address; the core's message names the device
  // once, as the plugin's did not.
  ASSERT_OK(accel_buffer_create(d, 64, &b));
  uint64_t address = 1;
  ASSERT_STATUS(accel_buffer_query_address(b, 0, &address),
                ACCEL_ERROR_UNSUPPORTED);
  ASSERT_EQ(address, 0);
  ASSERT_STR_CONTAINS(accel_last_error(),
                      "accel_buffer_query_address on fxgood:0: ");
  ASSERT_EQ(occurrences(accel_last_error(), "fxgood:0"), 1);
  accel_buffer_release(b);
  accel_device_release(d);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
