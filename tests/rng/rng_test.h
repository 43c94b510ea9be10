// SPDX-License-Identifier: MIT
//
// Shared by the rng tests: the host reference of a fill, computed with
// <accel/philox.h> (the code every backend runs), and one fill case.
#ifndef ACCEL_TESTS_RNG_RNG_TEST_H_
#define ACCEL_TESTS_RNG_RNG_TEST_H_

#include <stdint.h>
#include <string.h>

#include "accel/accel.h"
#include "accel/philox.h"

typedef struct rng_case {
  uint32_t distribution;  // ACCEL_PHILOX_BITS, _UNIFORM, _NORMAL
  accel_dtype_t dtype;
  size_t count;
  uint64_t seed, offset;
  double a, b;
} rng_case_t;

// Writes the `count` elements of `c` to `out` as the device must.
static inline void rng_reference(const rng_case_t* c, void* out) {
  size_t elem = accel_dtype_size(c->dtype);
  for (size_t i = 0; i < c->count; i++) {
    accel_philox_block_t block = accel_philox_at(c->seed, c->offset, i / 4);
    accel_philox_u32_t v = accel_philox_element(
        block, (accel_philox_u32_t)(i % 4), c->distribution, c->dtype,
        (float)c->a, (float)c->b);
    if (elem == 2) {
      uint16_t h = (uint16_t)v;
      memcpy((unsigned char*)out + i * 2, &h, 2);
    } else {
      uint32_t w = v;
      memcpy((unsigned char*)out + i * 4, &w, 4);
    }
  }
}

// Enqueues `c` with the explicit (seed, offset) calls.
static inline accel_status_t rng_enqueue(accel_stream_t* s, accel_buffer_t* b,
                                         size_t offset, const rng_case_t* c) {
  switch (c->distribution) {
    case ACCEL_PHILOX_BITS:
      return accel_op_rng_bits(s, b, offset, c->count, c->seed, c->offset);
    case ACCEL_PHILOX_UNIFORM:
      return accel_op_rng_uniform(s, b, offset, c->dtype, c->count, c->seed,
                                  c->offset, c->a, c->b);
    default:
      return accel_op_rng_normal(s, b, offset, c->dtype, c->count, c->seed,
                                 c->offset, c->a, c->b);
  }
}

#endif  // ACCEL_TESTS_RNG_RNG_TEST_H_
