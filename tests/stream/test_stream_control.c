// SPDX-License-Identifier: MIT
//
// accel_stream_wait_stream and accel_device_synchronize on cpu:0: a stream
// that waits for a busy one reads that one's finished results; a device
// synchronize leaves every live stream of the device idle; bad arguments
// are refused. The busy work is a large random fill (tens of ms), so a
// missing wait shows as unfinished data or an unfinished stream.
#include <stdlib.h>

#include "accel/accel.h"
#include "accel/philox.h"
#include "test.h"

#define BIG ((size_t)1 << 24)

static float reference_uniform(size_t i) {
  accel_philox_block_t b = accel_philox_at(3, 0, i / 4);
  return accel_philox_as_f32(
      accel_philox_element(b, (uint32_t)(i % 4), ACCEL_PHILOX_UNIFORM,
                           ACCEL_PHILOX_F32, 1.0f, 2.0f));
}

TEST(wait_stream_orders_work) {
  accel_device_t* d = NULL;
  accel_stream_t *a = NULL, *b = NULL;
  accel_buffer_t* buf = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  ASSERT_OK(accel_stream_create(d, 0, &a));
  ASSERT_OK(accel_stream_create(d, 0, &b));
  ASSERT_OK(accel_buffer_create(d, BIG * 4, &buf));
  for (int round = 0; round < 3; round++) {
    ASSERT_OK(accel_stream_fill_buffer(b, buf, 0, 0, BIG * 4));
    ASSERT_OK(
        accel_op_rng_uniform(b, buf, 0, ACCEL_DTYPE_F32, BIG, 3, 0, 1, 2));
    ASSERT_OK(accel_stream_wait_stream(a, b));
    float last = 0;
    ASSERT_OK(accel_stream_read_buffer(a, buf, (BIG - 1) * 4, &last, 4));
    ASSERT_OK(accel_stream_synchronize(a));
    ASSERT(last == reference_uniform(BIG - 1));
    ASSERT_OK(accel_stream_synchronize(b));
  }
  ASSERT_OK(accel_stream_wait_stream(a, a));  // no-op
  ASSERT_STATUS(accel_stream_wait_stream(NULL, a),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_stream_wait_stream(a, NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  accel_buffer_release(buf);
  accel_stream_release(a);
  accel_stream_release(b);
  accel_device_release(d);
}

TEST(device_synchronize_waits_for_every_stream) {
  accel_device_t* d = NULL;
  accel_stream_t* s[3] = {NULL, NULL, NULL};
  accel_buffer_t* buf[3] = {NULL, NULL, NULL};
  ASSERT_OK(accel_device_open("cpu:0", &d));
  ASSERT_STATUS(accel_device_synchronize(NULL), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_OK(accel_device_synchronize(d));  // no streams
  for (int i = 0; i < 3; i++) {
    ASSERT_OK(accel_stream_create(d, 0, &s[i]));
    ASSERT_OK(accel_buffer_create(d, BIG * 4, &buf[i]));
  }
  accel_stream_release(s[1]);  // a released stream leaves the list
  s[1] = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s[1]));
  for (int i = 0; i < 3; i++) {
    ASSERT_OK(
        accel_op_rng_normal(s[i], buf[i], 0, ACCEL_DTYPE_F32, BIG, 5, 0, 0, 1));
  }
  ASSERT_OK(accel_device_synchronize(d));
  for (int i = 0; i < 3; i++) {
    bool done = false;
    ASSERT_OK(accel_stream_query(s[i], &done));
    ASSERT(done);
    accel_stream_release(s[i]);
    accel_buffer_release(buf[i]);
  }
  ASSERT_OK(accel_device_synchronize(d));
  accel_device_release(d);
}

TEST(blocking_sync_event_flag_is_a_hint) {
  accel_device_t* d = NULL;
  accel_stream_t* s = NULL;
  accel_event_t* e = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_event_create(
      d, ACCEL_EVENT_BLOCKING_SYNC | ACCEL_EVENT_TIMING, &e));
  ASSERT_OK(accel_event_record(e, s));
  ASSERT_OK(accel_event_synchronize(e));
  accel_event_release(e);
  e = NULL;
  ASSERT_STATUS(accel_event_create(d, 1u << 2, &e),
                ACCEL_ERROR_INVALID_ARGUMENT);
  accel_stream_release(s);
  accel_device_release(d);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
