// SPDX-License-Identifier: MIT
//
// CPU-plugin specifics of the built-in ops (the portable semantics are
// tested for every backend in tests/kernels):
// - the thread pool starts at the first op, not at device open, and has
//   ACCEL_CPU_THREADS (or the usable CPU count) threads;
// - a malformed ACCEL_CPU_THREADS fails the first op with a message, while
//   copies keep working;
// - sums are deterministic (same bits whatever thread ran which chunk);
// - every f16 and bf16 value survives the f16/bf16 -> f32 -> f16/bf16
//   round trip through the blocked (F16C/AVX-512 or portable) converters;
// - bandwidth of large copies and elementwise ops is printed.
//
// CPU_TEST_THREADS, when set, is the pool width to expect; CPU_TEST_BAD,
// when set, means ACCEL_CPU_THREADS holds a bad value.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_test.h"
#include "test.h"

typedef struct ctx {
  accel_device_t* device;
  accel_stream_t* stream;
} ctx_t;

static accel_status_t ctx_open(ctx_t* c) {
  memset(c, 0, sizeof(*c));
  accel_status_t s = accel_device_open("cpu:0", &c->device);
  if (s == ACCEL_OK) s = accel_stream_create(c->device, 0, &c->stream);
  return s;
}

static void ctx_close(ctx_t* c) {
  accel_stream_release(c->stream);
  accel_device_release(c->device);
}

TEST(pool_starts_at_first_op) {
  if (getenv("CPU_TEST_BAD") != NULL) SKIP("ACCEL_CPU_THREADS is bad here");
  ctx_t c;
  ASSERT_OK(ctx_open(&c));
  accel_device_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  ASSERT_OK(accel_device_query_info(c.device, &info));
  const char* want = getenv("CPU_TEST_THREADS");
  if (want != NULL) ASSERT_EQ(info.compute_units, atoi(want));
  accel_buffer_t* buf = NULL;
  ASSERT_OK(accel_buffer_create(c.device, 1 << 20, &buf));
  int before = cpu_test_threads();
  ASSERT_OK(accel_op_fill(c.stream, buf, 0, ACCEL_DTYPE_F32, 1 << 18, 1.0));
  ASSERT_OK(accel_stream_synchronize(c.stream));
  int after = cpu_test_threads();
  printf("  threads: %d before the first op, %d after; pool width %u\n", before,
         after, info.compute_units);
  // The pool adds width - 1 helpers (the stream worker is the last one),
  // unless an earlier test of this process already started it.
  if (before != 0) ASSERT_LE(after - before, (int)info.compute_units - 1);
  accel_buffer_release(buf);
  ctx_close(&c);
}

TEST(bad_thread_count_fails_first_op) {
  if (getenv("CPU_TEST_BAD") == NULL) SKIP("ACCEL_CPU_THREADS is fine here");
  ctx_t c;
  ASSERT_OK(ctx_open(&c));
  accel_buffer_t* buf = NULL;
  ASSERT_OK(accel_buffer_create(c.device, 64 << 20, &buf));
  // Copies predate the pool and keep working (single-threaded).
  ASSERT_OK(accel_stream_fill_buffer(c.stream, buf, 0, 7, 64 << 20));
  ASSERT_OK(accel_stream_synchronize(c.stream));
  ASSERT_STATUS(accel_op_fill(c.stream, buf, 0, ACCEL_DTYPE_F32, 16, 1.0),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "ACCEL_CPU_THREADS");
  ASSERT_STATUS(accel_op_sum(c.stream, buf, 0, buf, 64, ACCEL_DTYPE_I32, 4),
                ACCEL_ERROR_INVALID_ARGUMENT);
  accel_buffer_release(buf);
  ctx_close(&c);
}

TEST(sum_is_deterministic) {
  if (getenv("CPU_TEST_BAD") != NULL) SKIP("ACCEL_CPU_THREADS is bad here");
  ctx_t c;
  ASSERT_OK(ctx_open(&c));
  const size_t n = (size_t)3 << 20;  // 48 chunks, spread over the pool
  float* host = malloc(n * sizeof(float));
  ASSERT_NOT_NULL(host);
  uint32_t seed = 12345;
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    host[i] = (float)(seed >> 8) / 16777216.0f - 0.3f;
  }
  accel_buffer_t *x = NULL, *out = NULL;
  ASSERT_OK(accel_buffer_create(c.device, n * sizeof(float), &x));
  ASSERT_OK(accel_buffer_create(c.device, 64 * sizeof(float), &out));
  ASSERT_OK(accel_buffer_write(x, 0, host, n * sizeof(float)));
  for (int r = 0; r < 64; r++) {
    ASSERT_OK(
        accel_op_sum(c.stream, out, (size_t)r * 4, x, 0, ACCEL_DTYPE_F32, n));
  }
  float sums[64];
  ASSERT_OK(accel_stream_synchronize(c.stream));
  ASSERT_OK(accel_buffer_read(out, 0, sums, sizeof(sums)));
  double ref = 0;
  for (size_t i = 0; i < n; i++) ref += host[i];
  for (int r = 1; r < 64; r++) ASSERT_MEM_EQ(&sums[r], &sums[0], 4);
  ASSERT(fabs(sums[0] - ref) <= 1e-6 * n);
  accel_buffer_release(out);
  accel_buffer_release(x);
  free(host);
  ctx_close(&c);
}

// Every 16-bit pattern of `dtype`, cast to f32 and back, is unchanged
// (NaNs stay NaNs).
static bool round_trip(ctx_t* c, accel_dtype_t dtype) {
  uint16_t in[65536], back[65536];
  for (uint32_t i = 0; i < 65536; i++) in[i] = (uint16_t)i;
  accel_buffer_t *h = NULL, *f = NULL;
  bool ok = accel_buffer_create(c->device, sizeof(in), &h) == ACCEL_OK &&
            accel_buffer_create(c->device, 65536 * 4, &f) == ACCEL_OK &&
            accel_buffer_write(h, 0, in, sizeof(in)) == ACCEL_OK &&
            accel_op_cast(c->stream, f, 0, ACCEL_DTYPE_F32, h, 0, dtype,
                          65536) == ACCEL_OK &&
            accel_op_fill(c->stream, h, 0, dtype, 65536, 0.0) == ACCEL_OK &&
            accel_op_cast(c->stream, h, 0, dtype, f, 0, ACCEL_DTYPE_F32,
                          65536) == ACCEL_OK &&
            accel_stream_synchronize(c->stream) == ACCEL_OK &&
            accel_buffer_read(h, 0, back, sizeof(back)) == ACCEL_OK;
  for (uint32_t i = 0; ok && i < 65536; i++) {
    bool nan = dtype == ACCEL_DTYPE_F16
                   ? (i & 0x7c00) == 0x7c00 && (i & 0x3ff) != 0
                   : (i & 0x7f80) == 0x7f80 && (i & 0x7f) != 0;
    bool back_nan = dtype == ACCEL_DTYPE_F16
                        ? (back[i] & 0x7c00) == 0x7c00 && (back[i] & 0x3ff)
                        : (back[i] & 0x7f80) == 0x7f80 && (back[i] & 0x7f);
    if (nan ? !back_nan : back[i] != in[i]) {
      printf("  0x%04x came back as 0x%04x\n", i, back[i]);
      ok = false;
    }
  }
  accel_buffer_release(f);
  accel_buffer_release(h);
  return ok;
}

TEST(half_round_trips) {
  if (getenv("CPU_TEST_BAD") != NULL) SKIP("ACCEL_CPU_THREADS is bad here");
  ctx_t c;
  ASSERT_OK(ctx_open(&c));
  ASSERT(round_trip(&c, ACCEL_DTYPE_F16));
  ASSERT(round_trip(&c, ACCEL_DTYPE_BF16));
  ctx_close(&c);
}

// Median of `reps` timings of `what` on `stream`, in ms.
typedef accel_status_t (*op_fn_t)(accel_stream_t*, accel_buffer_t*,
                                  accel_buffer_t*, accel_buffer_t*, size_t);

static accel_status_t do_copy(accel_stream_t* s, accel_buffer_t* z,
                              accel_buffer_t* x, accel_buffer_t* y, size_t n) {
  (void)y;
  return accel_stream_copy_buffer(s, z, 0, x, 0, n * 4);
}
static accel_status_t do_add(accel_stream_t* s, accel_buffer_t* z,
                             accel_buffer_t* x, accel_buffer_t* y, size_t n) {
  return accel_op_add(s, z, 0, x, 0, y, 0, ACCEL_DTYPE_F32, n);
}
static accel_status_t do_axpy(accel_stream_t* s, accel_buffer_t* z,
                              accel_buffer_t* x, accel_buffer_t* y, size_t n) {
  (void)y;
  return accel_op_axpy(s, z, 0, x, 0, ACCEL_DTYPE_F32, n, 0.5);
}
static accel_status_t do_cast(accel_stream_t* s, accel_buffer_t* z,
                              accel_buffer_t* x, accel_buffer_t* y, size_t n) {
  (void)y;
  return accel_op_cast(s, z, 0, ACCEL_DTYPE_F16, x, 0, ACCEL_DTYPE_F32, n);
}
static accel_status_t do_add_bf16(accel_stream_t* s, accel_buffer_t* z,
                                  accel_buffer_t* x, accel_buffer_t* y,
                                  size_t n) {
  return accel_op_add(s, z, 0, x, 0, y, 0, ACCEL_DTYPE_BF16, n);
}
static accel_status_t do_sum(accel_stream_t* s, accel_buffer_t* z,
                             accel_buffer_t* x, accel_buffer_t* y, size_t n) {
  (void)y;
  return accel_op_sum(s, z, 0, x, 0, ACCEL_DTYPE_F32, n);
}

TEST(bandwidth_report) {
  if (getenv("CPU_TEST_BAD") != NULL) SKIP("ACCEL_CPU_THREADS is bad here");
  ctx_t c;
  ASSERT_OK(ctx_open(&c));
  const size_t n = (size_t)16 << 20;  // 64 MiB of f32 per operand
  accel_buffer_t *x = NULL, *y = NULL, *z = NULL;
  ASSERT_OK(accel_buffer_create(c.device, n * 4, &x));
  ASSERT_OK(accel_buffer_create(c.device, n * 4, &y));
  ASSERT_OK(accel_buffer_create(c.device, n * 4, &z));
  ASSERT_OK(accel_op_fill(c.stream, x, 0, ACCEL_DTYPE_F32, n, 1.5));
  ASSERT_OK(accel_op_fill(c.stream, y, 0, ACCEL_DTYPE_F32, n, 2.5));
  ASSERT_OK(accel_op_fill(c.stream, z, 0, ACCEL_DTYPE_F32, n, 0.0));
  ASSERT_OK(accel_stream_synchronize(c.stream));
  static const struct {
    const char* name;
    op_fn_t fn;
    double bytes_per_elem;  // read + written
  } cases[] = {
      {"copy f32", do_copy, 8},     {"add f32", do_add, 12},
      {"axpy f32", do_axpy, 12},    {"cast f32->f16", do_cast, 6},
      {"add bf16", do_add_bf16, 6}, {"sum f32", do_sum, 4},
  };
  for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
    double ms[7];
    for (int r = 0; r < 7; r++) {
      double t0 = cpu_test_now_ms();
      ASSERT_OK(cases[k].fn(c.stream, z, x, y, n));
      ASSERT_OK(accel_stream_synchronize(c.stream));
      ms[r] = cpu_test_now_ms() - t0;
    }
    for (int i = 0; i < 7; i++) {
      for (int j = i + 1; j < 7; j++) {
        if (ms[j] < ms[i]) {
          double t = ms[i];
          ms[i] = ms[j];
          ms[j] = t;
        }
      }
    }
    double gb = cases[k].bytes_per_elem * (double)n / 1e9;
    printf("  %-14s %6.1f GB/s median (%.1f - %.1f)\n", cases[k].name,
           gb / (ms[3] / 1e3), gb / (ms[6] / 1e3), gb / (ms[0] / 1e3));
  }
  accel_buffer_release(z);
  accel_buffer_release(y);
  accel_buffer_release(x);
  ctx_close(&c);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
