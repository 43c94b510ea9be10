// SPDX-License-Identifier: MIT
//
// accel_op_gemm on cpu:0 against a double-precision reference: all four
// transpose combinations, packed and padded leading dimensions (padding
// holds NaN, which must neither be read nor written), alpha and beta
// including beta 0 over a NaN-filled C, k 0, m or n 1, odd sizes, f32,
// f16 and bf16 with C in the input dtype or f32, and the TF32 flag.
//
// Tolerance per element: kt_rel_tol(c_dtype) * |ref| (the final rounding)
// plus KT_ACC_EPS * sqrt(k + 1) * (|alpha| * sum |a_il * b_lj| +
// |beta * c_ij|) for f32 accumulation.
#include <stdio.h>
#include <stdlib.h>

#include "kernels_test.h"
#include "test.h"

typedef struct shape {
  size_t m, n, k;
  bool ta, tb;
  size_t pad;  // extra elements per row of every matrix (0: packed, ld 0)
  double alpha, beta;
} shape_t;

typedef struct mat {
  accel_buffer_t* buffer;
  unsigned char* host;
  size_t rows, cols, ld, offset, bytes;
  accel_dtype_t dtype;
} mat_t;

// Allocates a rows x cols matrix stored with `pad` extra elements per row,
// at a non-zero offset; padding and the bytes around are NaN (floats) or a
// marker (i32 cannot occur here).
static bool mat_create(accel_device_t* device, kt_rng_t* rng, size_t rows,
                       size_t cols, size_t pad, accel_dtype_t dtype,
                       bool nan_payload, mat_t* m) {
  size_t elem = accel_dtype_size(dtype);
  m->rows = rows;
  m->cols = cols;
  m->ld = cols + pad;
  m->dtype = dtype;
  m->offset = 8 * elem;
  size_t elems = rows * m->ld + 8;  // + 8 trailing guard elements
  m->bytes = m->offset + elems * elem;
  m->host = malloc(m->bytes);
  if (m->host == NULL) return false;
  for (size_t i = 0; i < m->bytes / elem; i++) kt_set(m->host, dtype, i, NAN);
  void* base = m->host + m->offset;
  for (size_t r = 0; r < rows; r++) {
    for (size_t c = 0; c < cols; c++) {
      double v = nan_payload ? NAN : kt_uniform(rng, -1.0, 1.0);
      kt_set(base, dtype, r * m->ld + c, v);
    }
  }
  if (accel_buffer_create(device, m->bytes, &m->buffer) != ACCEL_OK ||
      accel_buffer_write(m->buffer, 0, m->host, m->bytes) != ACCEL_OK) {
    fprintf(stderr, "  matrix setup: %s\n", accel_last_error());
    return false;
  }
  return true;
}

static void mat_destroy(mat_t* m) {
  accel_buffer_release(m->buffer);
  free(m->host);
}

static double mat_at(const mat_t* m, const void* base, size_t r, size_t c) {
  return kt_get(base, m->dtype, r * m->ld + c);
}

// Runs one GEMM and checks every element of C and every padding byte.
static bool run_gemm(accel_device_t* device, accel_stream_t* stream,
                     const shape_t* s, accel_dtype_t ab, accel_dtype_t cd,
                     accel_gemm_flags_t flags, uint64_t seed) {
  kt_rng_t rng = {seed * 0x9E3779B97F4A7C15ULL + 7};
  mat_t a = {0}, b = {0}, c = {0};
  unsigned char* got = NULL;
  bool ok = false;
  if (!mat_create(device, &rng, s->ta ? s->k : s->m, s->ta ? s->m : s->k,
                  s->pad, ab, false, &a) ||
      !mat_create(device, &rng, s->tb ? s->n : s->k, s->tb ? s->k : s->n,
                  s->pad, ab, false, &b) ||
      !mat_create(device, &rng, s->m, s->n, s->pad, cd, s->beta == 0.0, &c)) {
    goto done;
  }
  accel_gemm_t g;
  accel_gemm_init(&g);
  g.a_dtype = ab;
  g.b_dtype = ab;
  g.c_dtype = cd;
  g.trans_a = s->ta;
  g.trans_b = s->tb;
  g.flags = flags;
  g.m = s->m;
  g.n = s->n;
  g.k = s->k;
  g.alpha = s->alpha;
  g.beta = s->beta;
  g.a = a.buffer;
  g.a_offset = a.offset;
  g.lda = s->pad != 0 ? a.ld : 0;
  g.b = b.buffer;
  g.b_offset = b.offset;
  g.ldb = s->pad != 0 ? b.ld : 0;
  g.c = c.buffer;
  g.c_offset = c.offset;
  g.ldc = s->pad != 0 ? c.ld : 0;
  accel_status_t status = accel_op_gemm(stream, &g);
  if (status == ACCEL_OK) status = accel_stream_synchronize(stream);
  if (status != ACCEL_OK) {
    fprintf(stderr, "  gemm returned %s: %s\n", accel_status_string(status),
            accel_last_error());
    goto done;
  }
  got = malloc(c.bytes);
  if (got == NULL || accel_buffer_read(c.buffer, 0, got, c.bytes) != ACCEL_OK) {
    goto done;
  }
  const void* abase = a.host + a.offset;
  const void* bbase = b.host + b.offset;
  const void* cold = c.host + c.offset;
  const void* cnew = got + c.offset;
  for (size_t i = 0; i < s->m; i++) {
    for (size_t j = 0; j < s->n; j++) {
      double acc = 0.0, mag = 0.0;
      for (size_t l = 0; l < s->k; l++) {
        double av = s->ta ? mat_at(&a, abase, l, i) : mat_at(&a, abase, i, l);
        double bv = s->tb ? mat_at(&b, bbase, j, l) : mat_at(&b, bbase, l, j);
        acc += av * bv;
        mag += fabs(av * bv);
      }
      double old = s->beta == 0.0 ? 0.0 : mat_at(&c, cold, i, j);
      double want = s->alpha * acc + s->beta * old;
      double tol = kt_rel_tol(cd) * fabs(want) +
                   KT_ACC_EPS * sqrt((double)s->k + 1.0) *
                       (fabs(s->alpha) * mag + fabs(s->beta * old));
      double v = mat_at(&c, cnew, i, j);
      if (!(fabs(v - want) <= tol)) {
        fprintf(stderr,
                "  %zux%zux%zu%s%s %s->%s pad %zu alpha %g beta %g: C[%zu][%zu]"
                " is %.9g, want %.9g (tol %.3g)\n",
                s->m, s->n, s->k, s->ta ? " At" : "", s->tb ? " Bt" : "",
                accel_dtype_name(ab), accel_dtype_name(cd), s->pad, s->alpha,
                s->beta, i, j, v, want, tol);
        goto done;
      }
    }
  }
  // Everything outside C's m x n elements is untouched.
  size_t elem = accel_dtype_size(cd);
  for (size_t byte = 0; byte < c.bytes; byte++) {
    size_t e = byte / elem;
    bool inside = byte >= c.offset && e - c.offset / elem < s->m * c.ld &&
                  (e - c.offset / elem) % c.ld < s->n;
    if (!inside && got[byte] != c.host[byte]) {
      fprintf(stderr, "  byte %zu outside C (pad %zu) changed\n", byte, s->pad);
      goto done;
    }
  }
  ok = true;
done:
  free(got);
  mat_destroy(&a);
  mat_destroy(&b);
  mat_destroy(&c);
  return ok;
}

typedef struct env {
  accel_device_t* device;
  accel_stream_t* stream;
} env_t;

static accel_status_t env_open(env_t* e) {
  accel_status_t s = accel_device_open("cpu:0", &e->device);
  if (s == ACCEL_OK) s = accel_stream_create(e->device, 0, &e->stream);
  return s;
}

static void env_close(env_t* e) {
  accel_stream_release(e->stream);
  accel_device_release(e->device);
}

static const size_t dims[][3] = {
    {1, 1, 1},    {1, 7, 5}, {9, 1, 4},    {17, 33, 65},
    {64, 64, 64}, {3, 5, 0}, {31, 2, 129}, {128, 96, 40},
};

// Every shape x transpose combination x padding for one dtype pairing.
static bool sweep(env_t* e, accel_dtype_t ab, accel_dtype_t cd,
                  accel_gemm_flags_t flags) {
  uint64_t seed = 1;
  const double ab_values[][2] = {{1.0, 0.0}, {0.5, -1.5}, {-2.0, 1.0}};
  for (size_t d = 0; d < sizeof(dims) / sizeof(dims[0]); d++) {
    for (int t = 0; t < 4; t++) {
      for (size_t pad = 0; pad < 2; pad++) {
        const double* ab_v = ab_values[(d + t + pad) % 3];
        shape_t s = {dims[d][0],   dims[d][1],  dims[d][2], (t & 1) != 0,
                     (t & 2) != 0, pad ? 3 : 0, ab_v[0],    ab_v[1]};
        if (!run_gemm(e->device, e->stream, &s, ab, cd, flags, seed++)) {
          return false;
        }
      }
    }
  }
  return true;
}

TEST(gemm_f32) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  bool ok = sweep(&e, ACCEL_DTYPE_F32, ACCEL_DTYPE_F32, 0);
  env_close(&e);
  ASSERT(ok);
}

TEST(gemm_f16) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  bool ok = sweep(&e, ACCEL_DTYPE_F16, ACCEL_DTYPE_F16, 0) &&
            sweep(&e, ACCEL_DTYPE_F16, ACCEL_DTYPE_F32, 0);
  env_close(&e);
  ASSERT(ok);
}

TEST(gemm_bf16) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  bool ok = sweep(&e, ACCEL_DTYPE_BF16, ACCEL_DTYPE_BF16, 0) &&
            sweep(&e, ACCEL_DTYPE_BF16, ACCEL_DTYPE_F32, 0);
  env_close(&e);
  ASSERT(ok);
}

// The CPU has no TF32 hardware: the flag is accepted and ignored, so the
// result meets the f32 tolerance.
TEST(gemm_tf32_flag_accepted) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  accel_device_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  ASSERT_OK(accel_device_query_info(e.device, &info));
  ASSERT_EQ(info.caps & ACCEL_DEVICE_CAP_TF32, 0);
  bool ok = sweep(&e, ACCEL_DTYPE_F32, ACCEL_DTYPE_F32, ACCEL_GEMM_ALLOW_TF32);
  env_close(&e);
  ASSERT(ok);
}

// m or n of 0 enqueues nothing and touches nothing; k of 0 scales C.
TEST(gemm_degenerate) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  shape_t empty_m = {0, 5, 3, false, false, 0, 1.0, 0.0};
  shape_t empty_n = {4, 0, 3, true, true, 2, 1.0, 1.0};
  shape_t k0_beta = {4, 6, 0, false, false, 1, 2.0, 0.5};
  shape_t k0_zero = {4, 6, 0, true, false, 0, 2.0, 0.0};
  bool ok = run_gemm(e.device, e.stream, &empty_m, ACCEL_DTYPE_F32,
                     ACCEL_DTYPE_F32, 0, 1) &&
            run_gemm(e.device, e.stream, &empty_n, ACCEL_DTYPE_F16,
                     ACCEL_DTYPE_F32, 0, 2) &&
            run_gemm(e.device, e.stream, &k0_beta, ACCEL_DTYPE_F32,
                     ACCEL_DTYPE_F32, 0, 3) &&
            run_gemm(e.device, e.stream, &k0_zero, ACCEL_DTYPE_BF16,
                     ACCEL_DTYPE_BF16, 0, 4);
  env_close(&e);
  ASSERT(ok);
}

// A size where a BLAS takes its blocked path, and a long k.
TEST(gemm_larger) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  shape_t big = {257, 255, 300, false, true, 0, 1.0, 0.0};
  shape_t long_k = {8, 8, 4099, true, false, 5, 1.0, 1.0};
  bool ok = run_gemm(e.device, e.stream, &big, ACCEL_DTYPE_F32, ACCEL_DTYPE_F32,
                     0, 11) &&
            run_gemm(e.device, e.stream, &big, ACCEL_DTYPE_BF16,
                     ACCEL_DTYPE_F32, 0, 12) &&
            run_gemm(e.device, e.stream, &long_k, ACCEL_DTYPE_F16,
                     ACCEL_DTYPE_F32, 0, 13);
  env_close(&e);
  ASSERT(ok);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
