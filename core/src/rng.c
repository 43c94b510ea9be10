// SPDX-License-Identifier: MIT
//
// Counter-based random fills (accel.h, "Random numbers"): the checks, the
// device's default generator, and the call into the plugin's op_rng (ABI
// 1.3). The numbers themselves are defined by <accel/philox.h>, which
// every plugin runs; the core computes none.
#include <float.h>

#include "graph_internal.h"
#include "internal.h"

// torch's default seed, so a fresh device starts where torch.cuda does.
#define ACCEL__RNG_DEFAULT_SEED UINT64_C(67280421310721)

// Distribution codes of op_rng (<accel/philox.h>).
enum { ACCEL__RNG_BITS = 0, ACCEL__RNG_UNIFORM = 1, ACCEL__RNG_NORMAL = 2 };

// Checks the parameters of `distribution` against `dtype`.
static accel_status_t accel__rng_check_params(const char* what,
                                              uint32_t distribution,
                                              accel_dtype_t dtype, double a,
                                              double b) {
  if (accel_dtype_size(dtype) == 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: dtype %d is not an accel_dtype_t (f32 0, f16 1, "
                       "bf16 2, i32 3)",
                       what, (int)dtype);
  }
  if (distribution == ACCEL__RNG_BITS) return ACCEL_OK;
  if (dtype == ACCEL_DTYPE_I32) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: dtype is i32, but this fill takes f32, f16 or "
                       "bf16 only (accel_op_rng_bits fills i32)",
                       what);
  }
  const char* a_name = distribution == ACCEL__RNG_UNIFORM ? "low" : "mean";
  const char* b_name = distribution == ACCEL__RNG_UNIFORM ? "high" : "std";
  if (!(a >= -FLT_MAX && a <= FLT_MAX && b >= -FLT_MAX && b <= FLT_MAX)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %s %g and %s %g must be finite f32 values", what,
                       a_name, a, b_name, b);
  }
  if (distribution == ACCEL__RNG_NORMAL) {
    if (b < 0) {
      return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: std %g is negative",
                         what, b);
    }
    return ACCEL_OK;
  }
  if (a > b) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: low %g is above high %g", what, a, b);
  }
  float range = (float)b - (float)a;
  if (!(range <= FLT_MAX)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: high - low (%g - %g) overflows f32", what, b, a);
  }
  return ACCEL_OK;
}

// Checks and enqueues one fill with (`seed`, `offset`), or, with
// `generator`, with the device generator's seed and offset, advanced once
// the fill has passed its checks.
static accel_status_t accel__rng_fill(const char* what, accel_stream_t* stream,
                                      accel_buffer_t* dst, size_t dst_offset,
                                      accel_dtype_t dtype, size_t count,
                                      uint32_t distribution, uint64_t seed,
                                      uint64_t offset, bool generator, double a,
                                      double b) {
  if (stream == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: stream is NULL",
                       what);
  }
  accel_status_t status =
      accel__rng_check_params(what, distribution, dtype, a, b);
  size_t bytes = 0;
  if (status == ACCEL_OK) {
    status = accel__check_operand(what, "dst", stream, dst, dst_offset, dtype,
                                  count, &bytes);
  }
  if (status != ACCEL_OK || count == 0) return status;
  status = accel__buffer_use(dst, stream);
  if (status != ACCEL_OK) return status;
  if (accel__capturing(stream)) {
    return accel__graph_op_rng(stream, dst, dst_offset, dtype, count,
                               distribution, seed, offset, generator, a, b);
  }
  accel_device_t* d = stream->device;
  if (generator) {
    seed = atomic_load(&d->rng_seed_xor) ^ ACCEL__RNG_DEFAULT_SEED;
    offset = atomic_fetch_add(&d->rng_offset, ((uint64_t)count + 3) / 4);
  }
  status =
      d->ops->op_rng(d->impl, stream->impl, accel__buffer_mem(dst),
                     accel__buffer_offset(dst, dst_offset), (uint32_t)dtype,
                     count, distribution, seed, offset, a, b);
  return status == ACCEL_OK ? ACCEL_OK : accel__op_result(what, stream, status);
}

accel_status_t accel_op_rng_uniform(accel_stream_t* stream, accel_buffer_t* dst,
                                    size_t dst_offset, accel_dtype_t dtype,
                                    size_t count, uint64_t seed,
                                    uint64_t rng_offset, double low,
                                    double high) {
  return accel__rng_fill("accel_op_rng_uniform", stream, dst, dst_offset, dtype,
                         count, ACCEL__RNG_UNIFORM, seed, rng_offset, false,
                         low, high);
}

accel_status_t accel_op_rng_normal(accel_stream_t* stream, accel_buffer_t* dst,
                                   size_t dst_offset, accel_dtype_t dtype,
                                   size_t count, uint64_t seed,
                                   uint64_t rng_offset, double mean,
                                   double std) {
  return accel__rng_fill("accel_op_rng_normal", stream, dst, dst_offset, dtype,
                         count, ACCEL__RNG_NORMAL, seed, rng_offset, false,
                         mean, std);
}

accel_status_t accel_op_rng_bits(accel_stream_t* stream, accel_buffer_t* dst,
                                 size_t dst_offset, size_t count, uint64_t seed,
                                 uint64_t rng_offset) {
  return accel__rng_fill("accel_op_rng_bits", stream, dst, dst_offset,
                         ACCEL_DTYPE_I32, count, ACCEL__RNG_BITS, seed,
                         rng_offset, false, 0, 0);
}

accel_status_t accel_op_random_uniform(accel_stream_t* stream,
                                       accel_buffer_t* dst, size_t dst_offset,
                                       accel_dtype_t dtype, size_t count,
                                       double low, double high) {
  return accel__rng_fill("accel_op_random_uniform", stream, dst, dst_offset,
                         dtype, count, ACCEL__RNG_UNIFORM, 0, 0, true, low,
                         high);
}

accel_status_t accel_op_random_normal(accel_stream_t* stream,
                                      accel_buffer_t* dst, size_t dst_offset,
                                      accel_dtype_t dtype, size_t count,
                                      double mean, double std) {
  return accel__rng_fill("accel_op_random_normal", stream, dst, dst_offset,
                         dtype, count, ACCEL__RNG_NORMAL, 0, 0, true, mean,
                         std);
}

accel_status_t accel_op_random_bits(accel_stream_t* stream, accel_buffer_t* dst,
                                    size_t dst_offset, size_t count) {
  return accel__rng_fill("accel_op_random_bits", stream, dst, dst_offset,
                         ACCEL_DTYPE_I32, count, ACCEL__RNG_BITS, 0, 0, true, 0,
                         0);
}

accel_status_t accel_device_manual_seed(accel_device_t* device, uint64_t seed) {
  return accel_device_rng_state_set(device, seed, 0);
}

accel_status_t accel_device_rng_state_get(accel_device_t* device,
                                          uint64_t* out_seed,
                                          uint64_t* out_offset) {
  if (device == NULL || out_seed == NULL || out_offset == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_device_rng_state_get: device, out_seed and "
                       "out_offset must be non-NULL");
  }
  *out_seed = atomic_load(&device->rng_seed_xor) ^ ACCEL__RNG_DEFAULT_SEED;
  *out_offset = atomic_load(&device->rng_offset);
  return ACCEL_OK;
}

accel_status_t accel_device_rng_state_set(accel_device_t* device, uint64_t seed,
                                          uint64_t offset) {
  if (device == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_device_rng_state_set: device is NULL");
  }
  atomic_store(&device->rng_seed_xor, seed ^ ACCEL__RNG_DEFAULT_SEED);
  atomic_store(&device->rng_offset, offset);
  return ACCEL_OK;
}
