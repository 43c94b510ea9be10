// SPDX-License-Identifier: MIT
//
// CPU-plugin specifics of GEMM (portable semantics: tests/kernels):
// - the device features name the GEMM engine per dtype ("gemm-f32=auto"
//   until a run has cached a decision, or the engine ACCEL_CPU_GEMM
//   forces: CPU_TEST_ENGINE) and do not change when the first GEMM loads
//   and times the engines;
// - large products, in every transpose combination, with padded leading
//   dimensions, alpha and beta, agree with a naive reference on sampled
//   tiles, on whichever engine runs them (CTest runs this file once per
//   engine with ACCEL_CPU_GEMM);
// - beta 0 ignores NaN in C; k 0 scales C;
// - a strided-batched GEMM gives each member what a single GEMM gives it;
// - f16/bf16 GEMM against f32 GEMM timings are printed (not asserted);
// - with the BLAS engine forced and no BLAS (CPU_TEST_NO_BLAS, set with
//   ACCEL_CPU_BLAS naming a missing library), GEMM is
//   ACCEL_ERROR_UNSUPPORTED naming it; the same with the own engine forced
//   and ACCEL_CPU_GEMM_ISA naming no kernel (CPU_TEST_NO_BLAS is then the
//   text the message must hold, CPU_TEST_ENGINE the forced engine).
// Exits 77 when no GEMM engine (or not the forced one) is installed.
#include <accel/plugin_dtype.h>
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

static void features(accel_device_t* device, char* out, size_t size) {
  accel_device_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  out[0] = '\0';
  if (accel_device_query_info(device, &info) == ACCEL_OK) {
    snprintf(out, size, "%s", info.features);
  }
}

static float rnd(uint32_t* seed) {
  *seed = *seed * 1664525u + 1013904223u;
  return (float)(*seed >> 8) / 16777216.0f - 0.5f;
}

// Element `i` of `dtype` data at `p`, and the other way.
static float get_elem(const void* p, accel_dtype_t dtype, size_t i) {
  const uint16_t* h = p;
  if (dtype == ACCEL_DTYPE_F16) return accel_plugin_f16_to_f32(h[i]);
  if (dtype == ACCEL_DTYPE_BF16) return accel_plugin_bf16_to_f32(h[i]);
  return ((const float*)p)[i];
}

static void set_elem(void* p, accel_dtype_t dtype, size_t i, float v) {
  uint16_t* h = p;
  if (dtype == ACCEL_DTYPE_F16) {
    h[i] = accel_plugin_f32_to_f16(v);
  } else if (dtype == ACCEL_DTYPE_BF16) {
    h[i] = accel_plugin_f32_to_bf16(v);
  } else {
    ((float*)p)[i] = v;
  }
}

// Runs one GEMM of m x n x k, A and B of `dtype` and C of `cdt`, with
// transposes, padded leading dimensions, alpha 1.25 and `beta`, then checks
// 3 tiles of 4 x 4 against a double reference. f16/bf16 inputs are
// multiples of 1/256 (exact in both), so only the accumulation and the
// rounding of C differ from the reference.
static accel_status_t check_gemm(ctx_t* c, accel_dtype_t dtype,
                                 accel_dtype_t cdt, size_t m, size_t n,
                                 size_t k, bool ta, bool tb, double beta,
                                 bool* out_ok) {
  size_t ar = ta ? k : m, ac = ta ? m : k, br = tb ? n : k, bc = tb ? k : n;
  size_t lda = ac + 3, ldb = bc + 5, ldc = n + 7;
  size_t es = accel_dtype_size(dtype), ces = accel_dtype_size(cdt);
  bool half = dtype != ACCEL_DTYPE_F32;
  void* a = malloc(ar * lda * es);
  void* b = malloc(br * ldb * es);
  void* cc = malloc(m * ldc * ces);
  void* c0 = malloc(m * ldc * ces);
  uint32_t seed = (uint32_t)(m * 31 + n * 7 + k + ta * 2 + tb + dtype * 3);
  for (size_t i = 0; i < ar * lda; i++) {
    float v = rnd(&seed);
    set_elem(a, dtype, i, half ? roundf(v * 256) / 256 : v);
  }
  for (size_t i = 0; i < br * ldb; i++) {
    float v = rnd(&seed);
    set_elem(b, dtype, i, half ? roundf(v * 256) / 256 : v);
  }
  for (size_t i = 0; i < m * ldc; i++) {  // beta 0 ignores NaN
    set_elem(c0, cdt, i, beta == 0 ? NAN : rnd(&seed));
  }
  memcpy(cc, c0, m * ldc * ces);
  accel_buffer_t *ba = NULL, *bb = NULL, *bcb = NULL;
  accel_status_t s = accel_buffer_create(c->device, ar * lda * es, &ba);
  if (s == ACCEL_OK) s = accel_buffer_create(c->device, br * ldb * es, &bb);
  if (s == ACCEL_OK) s = accel_buffer_create(c->device, m * ldc * ces, &bcb);
  if (s == ACCEL_OK) s = accel_buffer_write(ba, 0, a, ar * lda * es);
  if (s == ACCEL_OK) s = accel_buffer_write(bb, 0, b, br * ldb * es);
  if (s == ACCEL_OK) s = accel_buffer_write(bcb, 0, cc, m * ldc * ces);
  accel_gemm_t g;
  accel_gemm_init(&g);
  g.a_dtype = g.b_dtype = dtype, g.c_dtype = cdt;
  g.trans_a = ta, g.trans_b = tb, g.m = m, g.n = n, g.k = k;
  g.alpha = 1.25, g.beta = beta;
  g.a = ba, g.lda = lda, g.b = bb, g.ldb = ldb, g.c = bcb, g.ldc = ldc;
  if (s == ACCEL_OK) s = accel_op_gemm(c->stream, &g);
  if (s == ACCEL_OK) s = accel_stream_synchronize(c->stream);
  if (s == ACCEL_OK) s = accel_buffer_read(bcb, 0, cc, m * ldc * ces);
  *out_ok = s == ACCEL_OK;
  // The rounding of C: half an ulp of the result's type.
  double round = cdt == ACCEL_DTYPE_F16    ? 0x1p-11
                 : cdt == ACCEL_DTYPE_BF16 ? 0x1p-8
                                           : 0;
  size_t th = m < 4 ? m : 4, tw = n < 4 ? n : 4;
  const size_t rows[3] = {0, (m - th) / 2, m - th};
  const size_t cols[3] = {0, n - tw, (n - tw) / 3};
  for (int t = 0; t < 3 && *out_ok; t++) {
    for (size_t i = rows[t]; i < rows[t] + th; i++) {
      for (size_t j = cols[t]; j < cols[t] + tw; j++) {
        double ref = 0, mag = 0;
        for (size_t p = 0; p < k; p++) {
          double x = get_elem(a, dtype, ta ? p * lda + i : i * lda + p);
          double y = get_elem(b, dtype, tb ? j * ldb + p : p * ldb + j);
          ref += x * y;
          mag += fabs(x * y);
        }
        ref *= 1.25;
        mag *= 1.25;
        double old = get_elem(c0, cdt, i * ldc + j);
        if (beta != 0) {
          ref += beta * old;
          mag += fabs(beta * old);
        }
        double got = get_elem(cc, cdt, i * ldc + j);
        if (!(fabs(got - ref) <= 1e-5 * mag + round * fabs(ref) + 1e-6)) {
          printf("  dtype %d/%d %zux%zux%zu ta=%d tb=%d beta=%g: C[%zu][%zu] "
                 "= %g, want %g\n",
                 (int)dtype, (int)cdt, m, n, k, ta, tb, beta, i, j, got, ref);
          *out_ok = false;
        }
      }
    }
  }
  accel_buffer_release(bcb);
  accel_buffer_release(bb);
  accel_buffer_release(ba);
  free(c0);
  free(cc);
  free(b);
  free(a);
  return s;
}

static accel_status_t check_f32(ctx_t* c, size_t m, size_t n, size_t k, bool ta,
                                bool tb, double beta, bool* out_ok) {
  return check_gemm(c, ACCEL_DTYPE_F32, ACCEL_DTYPE_F32, m, n, k, ta, tb, beta,
                    out_ok);
}

TEST(no_blas_is_unsupported) {
  const char* lib = getenv("CPU_TEST_NO_BLAS");
  if (lib == NULL) SKIP("a BLAS may be installed here");
  ctx_t c;
  ASSERT_OK(ctx_open(&c));
  accel_buffer_t* buf = NULL;
  ASSERT_OK(accel_buffer_create(c.device, 64, &buf));
  accel_gemm_t g;
  accel_gemm_init(&g);
  g.m = g.n = g.k = 2, g.a = g.b = g.c = buf;
  g.c_offset = 32;
  ASSERT_STATUS(accel_op_gemm(c.stream, &g), ACCEL_ERROR_UNSUPPORTED);
  ASSERT_STR_CONTAINS(accel_last_error(), lib);
  // Asked again: the same answer, without searching again.
  ASSERT_STATUS(accel_op_gemm(c.stream, &g), ACCEL_ERROR_UNSUPPORTED);
  ASSERT_STR_CONTAINS(accel_last_error(), lib);
  char f[512], want[64];
  features(c.device, f, sizeof(f));
  const char* engine = getenv("CPU_TEST_ENGINE");
  snprintf(want, sizeof(want), "gemm-f32=%s", engine != NULL ? engine : "blas");
  ASSERT_STR_CONTAINS(f, want);
  accel_buffer_release(buf);
  ctx_close(&c);
}

TEST(engine_is_named_and_large_products_agree) {
  if (getenv("CPU_TEST_NO_BLAS") != NULL) SKIP("no BLAS on purpose");
  const char* engine = getenv("CPU_TEST_ENGINE");
  ctx_t c;
  ASSERT_OK(ctx_open(&c));
  char before[512], f[512];
  features(c.device, before, sizeof(before));
  printf("  features: %s\n", before);
  ASSERT_STR_CONTAINS(before, "gemm-f32=");
  ASSERT_STR_CONTAINS(before, "gemm-bf16=");
  if (engine != NULL) {
    char want[64];
    snprintf(want, sizeof(want), "gemm-f32=%s", engine);
    ASSERT_STR_CONTAINS(before, want);
  }
  bool ok = false;
  accel_status_t s = check_f32(&c, 67, 45, 33, false, false, 0.0, &ok);
  if (s == ACCEL_ERROR_UNSUPPORTED) {
    printf("  %s\n", accel_last_error());
    ctx_close(&c);
    SKIP("no GEMM engine (or not the forced one) installed");
  }
  ASSERT_OK(s);
  ASSERT(ok);
  // Loading and timing the engines leaves the features as they were.
  features(c.device, f, sizeof(f));
  ASSERT_STR_EQ(f, before);
  static const size_t shapes[][3] = {
      {1031, 997, 515}, {513, 1500, 64}, {2, 3000, 700}, {1200, 1, 900}};
  for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
    for (int t = 0; t < 4; t++) {
      ASSERT_OK(check_f32(&c, shapes[i][0], shapes[i][1], shapes[i][2], t & 1,
                          t >> 1, (i & 1) ? 0.5 : 0.0, &ok));
      ASSERT(ok);
    }
  }
  // f16 and bf16, with a C of the same type or f32: k of one block and of
  // several (the own engine blocks k by 256 or 512), every transpose. An
  // f16/bf16 C over several k blocks is written once from the registers
  // while B's blocks fit half the L2 (130 x 30 x 700: 88 KiB of B, under
  // half of any L2 today; 130 x 70 x 1100: 422 KiB, on this side of it
  // where L2 is 1 MiB or more), else through an f32 tile (40 x 300 x 5000:
  // 5 MiB of B; 1100 x 260 x 4200, 4.3 MiB of B, in two chunks of rows
  // since the tile holds 1024 or so). 70 x 600 x 900: columns for more
  // than one B block per task, so A is packed once before the product
  // (as the f32 shapes with n >= 997 do).
  static const size_t half_shapes[][3] = {{77, 101, 300},    {130, 30, 700},
                                          {130, 70, 1100},   {40, 300, 5000},
                                          {1100, 260, 4200}, {70, 600, 900}};
  static const accel_dtype_t halves[] = {ACCEL_DTYPE_F16, ACCEL_DTYPE_BF16};
  for (size_t h = 0; h < 2; h++) {
    for (size_t i = 0; i < sizeof(half_shapes) / sizeof(half_shapes[0]); i++) {
      for (int t = 0; t < 4; t++) {
        for (int cf = 0; cf < 2; cf++) {
          ASSERT_OK(check_gemm(&c, halves[h], cf ? ACCEL_DTYPE_F32 : halves[h],
                               half_shapes[i][0], half_shapes[i][1],
                               half_shapes[i][2], t & 1, t >> 1,
                               (t + cf) & 1 ? 0.5 : 0.0, &ok));
          ASSERT(ok);
        }
      }
    }
  }
  ctx_close(&c);
}

// GFLOP/s of `reps` n x n x n GEMMs in `dtype` (c_dtype `cdt`).
static double gflops(ctx_t* c, accel_dtype_t dtype, accel_dtype_t cdt, size_t n,
                     int reps) {
  size_t es = accel_dtype_size(dtype), cs = accel_dtype_size(cdt);
  accel_buffer_t *a = NULL, *b = NULL, *cc = NULL;
  double best = -1;
  if (accel_buffer_create(c->device, n * n * es, &a) != ACCEL_OK ||
      accel_buffer_create(c->device, n * n * es, &b) != ACCEL_OK ||
      accel_buffer_create(c->device, n * n * cs, &cc) != ACCEL_OK ||
      accel_op_fill(c->stream, a, 0, dtype, n * n, 0.25) != ACCEL_OK ||
      accel_op_fill(c->stream, b, 0, dtype, n * n, 0.5) != ACCEL_OK) {
    goto done;
  }
  accel_gemm_t g;
  accel_gemm_init(&g);
  g.a_dtype = g.b_dtype = dtype, g.c_dtype = cdt;
  g.m = g.n = g.k = n, g.a = a, g.b = b, g.c = cc;
  double ms[16];
  for (int r = 0; r <= reps && r < 16; r++) {
    double t0 = cpu_test_now_ms();
    if (accel_op_gemm(c->stream, &g) != ACCEL_OK ||
        accel_stream_synchronize(c->stream) != ACCEL_OK) {
      goto done;
    }
    ms[r] = cpu_test_now_ms() - t0;  // r == 0 is a warm-up
  }
  for (int i = 1; i <= reps; i++) {
    for (int j = i + 1; j <= reps; j++) {
      if (ms[j] < ms[i]) {
        double t = ms[i];
        ms[i] = ms[j];
        ms[j] = t;
      }
    }
  }
  best = 2.0 * (double)n * n * n / (ms[1 + reps / 2] * 1e6);
done:
  accel_buffer_release(cc);
  accel_buffer_release(b);
  accel_buffer_release(a);
  return best;
}

TEST(half_gemm_speed_report) {
  if (getenv("CPU_TEST_NO_BLAS") != NULL) SKIP("no BLAS on purpose");
  ctx_t c;
  ASSERT_OK(ctx_open(&c));
  static const size_t sizes[] = {512, 1024};
  for (size_t i = 0; i < 2; i++) {
    size_t n = sizes[i];
    double f32 = gflops(&c, ACCEL_DTYPE_F32, ACCEL_DTYPE_F32, n, 5);
    if (f32 < 0) {
      ctx_close(&c);
      SKIP("GEMM unavailable: %s", accel_last_error());
    }
    double f16 = gflops(&c, ACCEL_DTYPE_F16, ACCEL_DTYPE_F16, n, 5);
    double bf16 = gflops(&c, ACCEL_DTYPE_BF16, ACCEL_DTYPE_BF16, n, 5);
    double mixed = gflops(&c, ACCEL_DTYPE_BF16, ACCEL_DTYPE_F32, n, 5);
    printf(
        "  %zu^3: f32 %.0f, f16 %.0f (%.2fx), bf16 %.0f (%.2fx), "
        "bf16->f32 %.0f GFLOP/s (medians)\n",
        n, f32, f16, f32 / f16, bf16, f32 / bf16, mixed);
    ASSERT(f16 > 0.0);  // ASSERT_GT compares integers: < 1 under TSan
    ASSERT(bf16 > 0.0);
  }
  ctx_close(&c);
}

// A strided-batched GEMM (ABI 1.4) gives every member exactly what
// accel_op_gemm gives it, on whichever engine runs (members side by side on
// the pool for a single-threaded BLAS, one after another otherwise): 24
// small members with a shared B, in f32 and bf16 (converted panels).
TEST(batched_members_match_single_gemms) {
  if (getenv("CPU_TEST_NO_BLAS") != NULL) SKIP("no BLAS on purpose");
  ctx_t c;
  ASSERT_OK(ctx_open(&c));
  enum { kCount = 24, kM = 13, kN = 17, kK = 29 };
  static const accel_dtype_t dtypes[] = {ACCEL_DTYPE_F32, ACCEL_DTYPE_BF16};
  for (size_t d = 0; d < 2; d++) {
    size_t es = accel_dtype_size(dtypes[d]);
    size_t a_n = kCount * kM * kK, b_n = kK * kN, c_n = kCount * kM * kN;
    accel_buffer_t *a = NULL, *b = NULL, *batched = NULL, *single = NULL;
    ASSERT_OK(accel_buffer_create(c.device, a_n * es, &a));
    ASSERT_OK(accel_buffer_create(c.device, b_n * es, &b));
    ASSERT_OK(accel_buffer_create(c.device, c_n * 4, &batched));
    ASSERT_OK(accel_buffer_create(c.device, c_n * 4, &single));
    float* host = malloc(a_n * sizeof(float));
    ASSERT_NOT_NULL(host);
    uint32_t seed = 7;
    for (size_t i = 0; i < a_n; i++) host[i] = rnd(&seed);
    accel_buffer_t* staging = NULL;
    ASSERT_OK(accel_buffer_create(c.device, a_n * 4, &staging));
    ASSERT_OK(accel_buffer_write(staging, 0, host, a_n * 4));
    ASSERT_OK(accel_op_cast(c.stream, a, 0, dtypes[d], staging, 0,
                            ACCEL_DTYPE_F32, a_n));
    ASSERT_OK(accel_op_cast(c.stream, b, 0, dtypes[d], staging, 0,
                            ACCEL_DTYPE_F32, b_n));
    accel_gemm_t g;
    accel_gemm_init(&g);
    g.a_dtype = g.b_dtype = dtypes[d];
    g.c_dtype = ACCEL_DTYPE_F32;
    g.m = kM, g.n = kN, g.k = kK, g.alpha = 1.5;
    g.a = a, g.b = b, g.c = batched;
    accel_status_t s = accel_op_gemm_strided_batched(c.stream, &g, kCount,
                                                     kM * kK, 0, kM * kN);
    if (s == ACCEL_ERROR_UNSUPPORTED) {  // the forced engine is missing
      printf("  %s\n", accel_last_error());
      accel_buffer_t* all[5] = {a, b, batched, single, staging};
      for (int i = 0; i < 5; i++) accel_buffer_release(all[i]);
      free(host);
      ctx_close(&c);
      SKIP("no GEMM engine (or not the forced one) installed");
    }
    ASSERT_OK(s);
    g.c = single;
    for (size_t i = 0; i < kCount; i++) {
      g.a_offset = i * kM * kK * es;
      g.c_offset = i * kM * kN * 4;
      ASSERT_OK(accel_op_gemm(c.stream, &g));
    }
    ASSERT_OK(accel_stream_synchronize(c.stream));
    float* got = malloc(c_n * sizeof(float));
    float* want = malloc(c_n * sizeof(float));
    ASSERT_NOT_NULL(got);
    ASSERT_NOT_NULL(want);
    ASSERT_OK(accel_buffer_read(batched, 0, got, c_n * 4));
    ASSERT_OK(accel_buffer_read(single, 0, want, c_n * 4));
    ASSERT_MEM_EQ(got, want, c_n * 4);
    free(want);
    free(got);
    free(host);
    accel_buffer_release(staging);
    accel_buffer_release(single);
    accel_buffer_release(batched);
    accel_buffer_release(b);
    accel_buffer_release(a);
  }
  ctx_close(&c);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
