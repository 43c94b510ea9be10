// SPDX-License-Identifier: MIT
//
// Random fills (op_rng, ABI 1.3): every distribution and dtype must give
// exactly the bytes of <accel/philox.h>, the reference every backend runs,
// including a fill that ends inside a Philox block, one that starts past
// the buffer's first element (the elements before and after the fill must
// stay untouched), a counter that carries past 2^64, and one
// fill of 2^20 + 2^16 + 13 elements: past the pieces a backend splits a
// fill into (a CPU thread pool's chunks, a grid capped in size whose work
// items loop), whose later pieces a small fill never reaches. The
// device generator must hand out consecutive blocks. A backend without
// op_rng (an optional ABI 1.3 entry) is UNSUPPORTED, also under
// --require-ops, which covers the ABI 1.1 ops. One whose table has op_rng
// but refuses a combination is UNSUPPORTED too, as a refused dtype of an
// op is, except under --require-ops (first-party plugins take them all),
// where it fails.
#include <accel/philox.h>
#include <accel/plugin.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

enum { CONFORM_RNG_COUNT = 1001 };
// Elements checked after a fill (a batch of 16 Philox blocks written whole
// reaches 63 past the end), and the byte they hold.
enum { CONFORM_RNG_AFTER = 64, CONFORM_RNG_GUARD = 0xa5 };

typedef struct conform_rng_case {
  uint32_t distribution;
  accel_dtype_t dtype;
  uint64_t offset;
  double a, b;
  size_t count;  // elements; 0: CONFORM_RNG_COUNT
} conform_rng_case_t;

// The reference bytes of `count` elements of `c` with `seed`.
static void conform_rng_reference(const conform_rng_case_t* c, uint64_t seed,
                                  uint64_t offset, size_t count, void* out) {
  size_t elem = accel_dtype_size(c->dtype);
  for (size_t i = 0; i < count; i++) {
    accel_philox_block_t block = accel_philox_at(seed, offset, i / 4);
    accel_philox_u32_t v = accel_philox_element(
        block, (accel_philox_u32_t)(i % 4), c->distribution, c->dtype,
        (float)c->a, (float)c->b);
    uint16_t h = (uint16_t)v;
    uint32_t w = v;
    memcpy((unsigned char*)out + i * elem, elem == 2 ? (void*)&h : (void*)&w,
           elem);
  }
}

// Compares `count` elements read from `buffer` at `start` with the
// reference; FAIL names the first different element.
static conform_result_t conform_rng_compare(
    conform_ctx_t* ctx, accel_buffer_t* buffer, size_t start,
    const conform_rng_case_t* c, uint64_t seed, uint64_t offset, size_t count) {
  size_t elem = accel_dtype_size(c->dtype);
  unsigned char* got = conform_alloc(ctx, count * elem);
  unsigned char* want = conform_alloc(ctx, count * elem);
  if (got == NULL || want == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "out of host memory");
  }
  accel_status_t status = accel_buffer_read(buffer, start, got, count * elem);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "read");
  conform_rng_reference(c, seed, offset, count, want);
  for (size_t i = 0; i < count; i++) {
    if (memcmp(got + i * elem, want + i * elem, elem) != 0) {
      uint32_t g = 0, w = 0;
      memcpy(&g, got + i * elem, elem);
      memcpy(&w, want + i * elem, elem);
      return conform_report(ctx, CONFORM_FAIL,
                            "%s %s: element %zu is 0x%08x, <accel/philox.h> "
                            "gives 0x%08x",
                            c->distribution == ACCEL_PHILOX_BITS ? "bits"
                            : c->distribution == ACCEL_PHILOX_UNIFORM
                                ? "uniform"
                                : "normal",
                            accel_dtype_name(c->dtype), i, g, w);
    }
  }
  return CONFORM_PASS;
}

static accel_status_t conform_rng_enqueue(accel_stream_t* s, accel_buffer_t* b,
                                          size_t start,
                                          const conform_rng_case_t* c,
                                          uint64_t seed, size_t count) {
  if (c->distribution == ACCEL_PHILOX_BITS) {
    return accel_op_rng_bits(s, b, start, count, seed, c->offset);
  }
  if (c->distribution == ACCEL_PHILOX_UNIFORM) {
    return accel_op_rng_uniform(s, b, start, c->dtype, count, seed, c->offset,
                                c->a, c->b);
  }
  return accel_op_rng_normal(s, b, start, c->dtype, count, seed, c->offset,
                             c->a, c->b);
}

// The report for an op_rng call that gave ACCEL_ERROR_UNSUPPORTED:
// UNSUPPORTED, unless --require-ops is given and the plugin's table has an
// op_rng (it refused a dtype and distribution the core had checked:
// plugin.h lists bits with I32, uniform and normal with F32, F16 and
// BF16): then FAIL. Without op_rng the core answered: UNSUPPORTED. The
// table is read once per run, through the plugin's own entry point
// (direct.c).
static conform_result_t conform_rng_unsupported(conform_ctx_t* ctx,
                                                const char* what) {
  static int has_op_rng = -1;  // -1: not looked yet
  char message[256];
  snprintf(message, sizeof(message), "%s", accel_last_error());
  if (!ctx->require_ops) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "op_rng: %s", message);
  }
  if (has_op_rng < 0) {
    conform_direct_t d;
    if (conform_direct_open(ctx, &d) != CONFORM_PASS) return CONFORM_FAIL;
    has_op_rng = ACCEL_PLUGIN_HAS_FIELD(d.ops, accel_device_ops_t, op_rng) &&
                 d.ops->op_rng != NULL;
    conform_direct_close(&d);
  }
  if (!has_op_rng) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "op_rng: %s", message);
  }
  return conform_report(ctx, CONFORM_FAIL,
                        "op_rng is in the plugin's table but refused %s "
                        "with ACCEL_ERROR_UNSUPPORTED (%s), under "
                        "--require-ops (every combination the core lets "
                        "through is claimed)",
                        what, message);
}

// Whether the guard bytes before and after a fill kept their pattern; if
// not, writes the detail (the first changed element) and returns false.
static bool conform_rng_guards(conform_ctx_t* ctx, accel_buffer_t* buffer,
                               size_t start, size_t end, size_t size,
                               size_t elem) {
  unsigned char* got = conform_alloc(ctx, size);
  unsigned char* want = conform_alloc(ctx, size);
  if (got == NULL || want == NULL) {
    conform_report(ctx, CONFORM_FAIL, "out of host memory");
    return false;
  }
  memset(want, CONFORM_RNG_GUARD, size);
  accel_status_t status = accel_buffer_read(buffer, 0, got, start);
  if (status == ACCEL_OK) {
    status = accel_buffer_read(buffer, end, got + end, size - end);
  }
  if (status != ACCEL_OK) {
    conform_fail_status(ctx, status, "read the guards");
    return false;
  }
  for (size_t i = 0; i < size; i += elem) {
    if (i == start) i = end;
    if (i < size && memcmp(got + i, want + i, elem) != 0) {
      long long index = ((long long)i - (long long)start) / (long long)elem;
      conform_report(ctx, CONFORM_FAIL,
                     "wrote element %lld of a fill of %zu elements (outside "
                     "dst[0, count): a last Philox block or batch written "
                     "whole, or one started before dst)",
                     index, (end - start) / elem);
      return false;
    }
  }
  return true;
}

static conform_result_t conform_rng_fill(conform_ctx_t* ctx, const void* arg) {
  const conform_rng_case_t* c = arg;
  size_t elem = accel_dtype_size(c->dtype);
  size_t start = 3 * elem;
  size_t count = c->count != 0 ? c->count : CONFORM_RNG_COUNT;
  // Guards: the 3 elements before the fill and CONFORM_RNG_AFTER after it.
  size_t end = start + count * elem, size = end + CONFORM_RNG_AFTER * elem;
  accel_stream_t* stream = NULL;
  accel_buffer_t* buffer = NULL;
  unsigned char* init = conform_alloc(ctx, size);
  if (init == NULL) return conform_report(ctx, CONFORM_FAIL, "host OOM");
  memset(init, CONFORM_RNG_GUARD, size);
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status == ACCEL_OK) {
    status = conform_buffer(ctx, ctx->device, size, &buffer);
  }
  if (status == ACCEL_OK) status = accel_buffer_write(buffer, 0, init, size);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  uint64_t seed = ctx->seed ^ 0x5eed5eed5eedull;
  status = conform_rng_enqueue(stream, buffer, start, c, seed, count);
  if (status == ACCEL_ERROR_UNSUPPORTED) {
    char what[64];
    static const char* const names[] = {"random bits", "uniform", "normal"};
    snprintf(what, sizeof(what), "%s with %s",
             c->distribution < 3 ? names[c->distribution] : "?",
             accel_dtype_name(c->dtype));
    return conform_rng_unsupported(ctx, what);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "op_rng");
  status = conform_stream_wait(ctx, stream);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "op_rng");
  conform_result_t result =
      conform_rng_compare(ctx, buffer, start, c, seed, c->offset, count);
  if (result != CONFORM_PASS) return result;
  if (!conform_rng_guards(ctx, buffer, start, end, size, elem)) {
    return CONFORM_FAIL;
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%zu elements from offset %llu identical to "
                        "<accel/philox.h>, none written around them",
                        count, (unsigned long long)c->offset);
}

// Two generator fills take consecutive blocks: 10 elements use 3.
static conform_result_t conform_rng_generator(conform_ctx_t* ctx,
                                              const void* arg) {
  (void)arg;
  static const conform_rng_case_t bits = {
      ACCEL_PHILOX_BITS, ACCEL_DTYPE_I32, 0, 0, 0, 0};
  accel_stream_t* stream = NULL;
  accel_buffer_t* buffer = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status == ACCEL_OK)
    status = conform_buffer(ctx, ctx->device, 64, &buffer);
  if (status == ACCEL_OK) status = accel_device_manual_seed(ctx->device, 77);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  status = accel_op_random_bits(stream, buffer, 0, 10);
  if (status == ACCEL_ERROR_UNSUPPORTED) {
    return conform_rng_unsupported(ctx, "random bits with i32");
  }
  if (status == ACCEL_OK) status = accel_op_random_bits(stream, buffer, 40, 6);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "op_rng");
  status = conform_stream_wait(ctx, stream);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "op_rng");
  conform_result_t result =
      conform_rng_compare(ctx, buffer, 0, &bits, 77, 0, 10);
  if (result == CONFORM_PASS) {
    result = conform_rng_compare(ctx, buffer, 40, &bits, 77, 3, 6);
  }
  uint64_t seed = 0, offset = 0;
  if (result == CONFORM_PASS &&
      (accel_device_rng_state_get(ctx->device, &seed, &offset) != ACCEL_OK ||
       seed != 77 || offset != 5)) {
    return conform_report(ctx, CONFORM_FAIL,
                          "generator state is seed %llu offset %llu, "
                          "expected 77 and 5",
                          (unsigned long long)seed, (unsigned long long)offset);
  }
  if (result != CONFORM_PASS) return result;
  return conform_report(ctx, CONFORM_PASS, "consecutive blocks");
}

static const conform_rng_case_t conform_rng_cases[] = {
    {ACCEL_PHILOX_BITS, ACCEL_DTYPE_I32, 5, 0, 0, 0},
    {ACCEL_PHILOX_UNIFORM, ACCEL_DTYPE_F32, 0, -2, 3, 0},
    {ACCEL_PHILOX_UNIFORM, ACCEL_DTYPE_F16, 1, -2, 3, 0},
    {ACCEL_PHILOX_UNIFORM, ACCEL_DTYPE_BF16, 2, 0, 1, 0},
    {ACCEL_PHILOX_NORMAL, ACCEL_DTYPE_F32, 0, 0.5, 2, 0},
    {ACCEL_PHILOX_NORMAL, ACCEL_DTYPE_F16, 9, 0, 1, 0},
    {ACCEL_PHILOX_NORMAL, ACCEL_DTYPE_BF16, 9, -1, 0.25, 0},
    {ACCEL_PHILOX_UNIFORM, ACCEL_DTYPE_F32, UINT64_MAX - 100, 0, 1, 0},
    // Past 16 CPU chunks of 2^16 and an OpenCL grid of 2^18 blocks.
    {ACCEL_PHILOX_NORMAL, ACCEL_DTYPE_F16, 7, 1, 3,
     ((size_t)1 << 20) + ((size_t)1 << 16) + 13},
};

static const conform_check_t conform_rngs[] = {
    {"rng.bits", conform_rng_fill, &conform_rng_cases[0]},
    {"rng.uniform.f32", conform_rng_fill, &conform_rng_cases[1]},
    {"rng.uniform.f16", conform_rng_fill, &conform_rng_cases[2]},
    {"rng.uniform.bf16", conform_rng_fill, &conform_rng_cases[3]},
    {"rng.normal.f32", conform_rng_fill, &conform_rng_cases[4]},
    {"rng.normal.f16", conform_rng_fill, &conform_rng_cases[5]},
    {"rng.normal.bf16", conform_rng_fill, &conform_rng_cases[6]},
    {"rng.counter_carry", conform_rng_fill, &conform_rng_cases[7]},
    {"rng.large", conform_rng_fill, &conform_rng_cases[8]},
    {"rng.generator", conform_rng_generator, NULL},
};

const conform_check_t* conform_rng_checks(size_t* out_count) {
  *out_count = sizeof(conform_rngs) / sizeof(conform_rngs[0]);
  return conform_rngs;
}
