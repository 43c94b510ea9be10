// SPDX-License-Identifier: MIT
//
// The public random-fill calls on cpu:0: argument checks with their
// messages, the device's default generator (seed, state get/set, offset
// advance, concurrent fills getting disjoint blocks) and that a generator
// fill equals the explicit fill with the state it took.
#include <stdlib.h>

#include "rng_test.h"
#include "test.h"

typedef struct ctx {
  accel_device_t* device;
  accel_stream_t* stream;
  accel_buffer_t* buffer;
} ctx_t;

static void ctx_open(ctx_t* c) {
  memset(c, 0, sizeof(*c));
  if (accel_device_open("cpu:0", &c->device) != ACCEL_OK ||
      accel_stream_create(c->device, 0, &c->stream) != ACCEL_OK ||
      accel_buffer_create(c->device, 4096, &c->buffer) != ACCEL_OK) {
    fprintf(stderr, "setup: %s\n", accel_last_error());
    exit(1);
  }
}

static void ctx_close(ctx_t* c) {
  accel_buffer_release(c->buffer);
  accel_stream_release(c->stream);
  accel_device_release(c->device);
}

TEST(bad_arguments_are_refused) {
  ctx_t c;
  ctx_open(&c);
  accel_stream_t* s = c.stream;
  accel_buffer_t* b = c.buffer;
  ASSERT_STATUS(
      accel_op_rng_uniform(NULL, b, 0, ACCEL_DTYPE_F32, 4, 1, 0, 0, 1),
      ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(
      accel_op_rng_uniform(s, NULL, 0, ACCEL_DTYPE_F32, 4, 1, 0, 0, 1),
      ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_op_rng_uniform(s, b, 0, ACCEL_DTYPE_I32, 4, 1, 0, 0, 1),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "accel_op_rng_bits fills i32");
  ASSERT_STATUS(accel_op_rng_uniform(s, b, 0, (accel_dtype_t)9, 4, 1, 0, 0, 1),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_op_rng_uniform(s, b, 0, ACCEL_DTYPE_F32, 4, 1, 0, 2, 1),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "low 2 is above high 1");
  ASSERT_STATUS(
      accel_op_rng_uniform(s, b, 0, ACCEL_DTYPE_F32, 4, 1, 0, -3e38, 3e38),
      ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "overflows f32");
  ASSERT_STATUS(
      accel_op_rng_uniform(s, b, 0, ACCEL_DTYPE_F32, 4, 1, 0, 0, 1e300),
      ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_op_rng_normal(s, b, 0, ACCEL_DTYPE_F16, 4, 1, 0, 0, -1),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "std -1 is negative");
  ASSERT_STATUS(
      accel_op_rng_normal(s, b, 0, ACCEL_DTYPE_F32, 4, 1, 0, 0.0 / 0.0, 1),
      ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_op_rng_bits(s, b, 2, 4, 1, 0),
                ACCEL_ERROR_INVALID_ARGUMENT);  // not a multiple of 4 bytes
  ASSERT_STATUS(accel_op_rng_bits(s, b, 0, 1025, 1, 0),
                ACCEL_ERROR_INVALID_ARGUMENT);     // past the end
  ASSERT_OK(accel_op_rng_bits(s, b, 0, 0, 1, 0));  // nothing to do
  ASSERT_OK(accel_op_rng_bits(s, b, 0, 1024, 1, 0));
  ASSERT_OK(accel_stream_synchronize(s));
  ctx_close(&c);
}

TEST(default_generator_state) {
  ctx_t c;
  ctx_open(&c);
  uint64_t seed = 0, offset = 1;
  ASSERT_OK(accel_device_rng_state_get(c.device, &seed, &offset));
  ASSERT_EQ(seed, 67280421310721ull);
  ASSERT_EQ(offset, 0);
  ASSERT_STATUS(accel_device_rng_state_get(NULL, &seed, &offset),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_device_rng_state_get(c.device, NULL, &offset),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_device_manual_seed(NULL, 1),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_device_rng_state_set(NULL, 1, 2),
                ACCEL_ERROR_INVALID_ARGUMENT);

  ASSERT_OK(accel_device_manual_seed(c.device, 1234));
  // 10 elements take 3 blocks; a refused fill takes none.
  ASSERT_OK(accel_op_random_uniform(c.stream, c.buffer, 0, ACCEL_DTYPE_F32, 10,
                                    -1, 1));
  ASSERT_STATUS(
      accel_op_random_normal(c.stream, c.buffer, 0, ACCEL_DTYPE_I32, 10, 0, 1),
      ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_OK(accel_device_rng_state_get(c.device, &seed, &offset));
  ASSERT_EQ(seed, 1234);
  ASSERT_EQ(offset, 3);
  ASSERT_OK(accel_op_random_normal(c.stream, c.buffer, 64, ACCEL_DTYPE_BF16, 8,
                                   0, 1));
  ASSERT_OK(accel_op_random_bits(c.stream, c.buffer, 128, 5));
  ASSERT_OK(accel_device_rng_state_get(c.device, &seed, &offset));
  ASSERT_EQ(offset, 3 + 2 + 2);
  ASSERT_OK(accel_stream_synchronize(c.stream));

  unsigned char got[148], want[148];
  ASSERT_OK(accel_buffer_read(c.buffer, 0, got, sizeof(got)));
  rng_case_t u = {ACCEL_PHILOX_UNIFORM, ACCEL_DTYPE_F32, 10, 1234, 0, -1, 1};
  rng_case_t n = {ACCEL_PHILOX_NORMAL, ACCEL_DTYPE_BF16, 8, 1234, 3, 0, 1};
  rng_case_t k = {ACCEL_PHILOX_BITS, ACCEL_DTYPE_I32, 5, 1234, 5, 0, 0};
  rng_reference(&u, want);
  rng_reference(&n, want + 64);
  rng_reference(&k, want + 128);
  ASSERT_MEM_EQ(got, want, 40);
  ASSERT_MEM_EQ(got + 64, want + 64, 16);
  ASSERT_MEM_EQ(got + 128, want + 128, 20);

  // Restoring a state replays the same numbers.
  ASSERT_OK(accel_device_rng_state_set(c.device, 1234, 0));
  ASSERT_OK(accel_op_random_uniform(c.stream, c.buffer, 256, ACCEL_DTYPE_F32,
                                    10, -1, 1));
  ASSERT_OK(accel_stream_synchronize(c.stream));
  ASSERT_OK(accel_buffer_read(c.buffer, 256, got, 40));
  ASSERT_MEM_EQ(got, want, 40);
  ctx_close(&c);
}

TEST(explicit_fills_match_the_reference) {
  ctx_t c;
  ctx_open(&c);
  rng_case_t u = {ACCEL_PHILOX_UNIFORM, ACCEL_DTYPE_F16, 1000, 99, 5, 2, 3};
  unsigned char got[2000], want[2000];
  ASSERT_OK(rng_enqueue(c.stream, c.buffer, 0, &u));
  ASSERT_OK(accel_stream_synchronize(c.stream));
  ASSERT_OK(accel_buffer_read(c.buffer, 0, got, sizeof(got)));
  rng_reference(&u, want);
  ASSERT_MEM_EQ(got, want, sizeof(got));
  // Different seeds and offsets give different numbers.
  rng_case_t v = u;
  v.offset = 6;
  rng_reference(&v, got);
  ASSERT(memcmp(got, want, sizeof(got)) != 0);
  ASSERT_MEM_EQ(got, want + 8, sizeof(got) - 8);  // one block = 4 elements
  ctx_close(&c);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
