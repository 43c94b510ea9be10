// SPDX-License-Identifier: MIT
//
// The OpenCL plugin's kernels half on a real OpenCL runtime (PoCL in CI):
// - the built-in ops give the CPU plugin's bits (a NaN matching any NaN):
//   casts (every pair, with rounding ties, NaN, infinities, subnormals,
//   i32 saturation), fill ties (a double
//   rounded once, not through f32), scale, axpy, add, mul; sums within
//   tolerance (i32 exact);
// - GEMM against a double reference: f32, f16, bf16, mixed f32 C,
//   transposes, padded leading dimensions, offsets, k == 0, and beta == 0
//   over a C full of NaN (the same test runs again with
//   ACCEL_OPENCL_CLBLAST=/nonexistent, i.e. on the plugin's own kernel).
// Custom kernels are test_opencl_launch.c's. Exits 77 when no opencl:0
// device opens.
#include <accel/plugin_dtype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "opencl_test.h"
#include "test.h"

static ocl_ctx_t ocl, cpu;
static bool opened, usable;

// Opens opencl:0 and cpu:0 once per process.
static bool ctx_get(void) {
  if (!opened) {
    opened = true;
    usable = ocl_ctx_open(&ocl, "opencl:0") == ACCEL_OK;
    if (!usable) {
      printf("  opencl:0 unusable: %s\n", accel_last_error());
    } else if (ocl_ctx_open(&cpu, "cpu:0") != ACCEL_OK) {
      printf("  cpu:0 unusable: %s\n", accel_last_error());
      usable = false;
    }
  }
  return usable;
}

#define NEED_DEVICE() \
  if (!ctx_get()) SKIP("no opencl:0 device")

// ---------------------------------------------------------------------------
// Input data
// ---------------------------------------------------------------------------

static uint32_t rng_state = 12345;
static uint32_t rng(void) {
  rng_state = rng_state * 1664525u + 1013904223u;
  return rng_state >> 8 ^ rng_state << 7;
}

static float f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

// `n` elements of `dtype`: special values first (zeros, infinities, NaN,
// subnormals, rounding ties of every narrower type, saturation limits),
// then random ones.
static void fill_inputs(void* out, accel_dtype_t dtype, size_t n) {
  static const float f_special[] = {
      0.0f,           -0.0f,         INFINITY, -INFINITY, NAN,
      1.0f,           -1.0f,         0.5f,     65504.0f,  65520.0f,
      65519.99f,      -65520.0f,
      1.00048828125f,  // f16 tie below 1 + 2^-10
      1.00146484375f,  // f16 tie 1 + 3 * 2^-11
      1.00390625f,     // bf16 tie 1 + 2^-8
      1.01171875f,     // bf16 tie 1 + 3 * 2^-8
      5.9604645e-8f,  2.9802322e-8f, 1e-40f,   -1e-45f,   2147483648.0f,
      -2147483648.0f, 2147483520.0f, 3e9f,     -3e9f,     2.5f,
      -2.5f,          1e30f,
  };
  static const int32_t i_special[] = {
      0,     1,      -1,       INT32_MAX, INT32_MIN, 65519,
      65520, -65520, 16777217, 33685505,  -33685505, 2147483583,
      257,   259,    2049,     2051,
  };
  size_t ns = dtype == ACCEL_DTYPE_I32
                  ? sizeof(i_special) / sizeof(i_special[0])
                  : sizeof(f_special) / sizeof(f_special[0]);
  for (size_t i = 0; i < n; i++) {
    if (dtype == ACCEL_DTYPE_I32) {
      int32_t v = i < ns ? i_special[i] : (int32_t)(rng() << 8 ^ rng());
      if (i >= ns && i % 3 == 0) v >>= 12;
      ((int32_t*)out)[i] = v;
      continue;
    }
    float f =
        i < ns ? f_special[i] : ((float)(rng() % 2000001) - 1e6f) / 1000.0f;
    if (i >= ns && i % 5 == 0) f = f32_from_bits(rng() << 8 ^ rng());
    if (dtype == ACCEL_DTYPE_F32) {
      ((float*)out)[i] = f;
    } else if (dtype == ACCEL_DTYPE_F16) {
      ((uint16_t*)out)[i] =
          i >= ns && i % 7 == 0 ? (uint16_t)rng() : accel_plugin_f32_to_f16(f);
    } else {
      ((uint16_t*)out)[i] =
          i >= ns && i % 7 == 0 ? (uint16_t)rng() : accel_plugin_f32_to_bf16(f);
    }
  }
}

// ---------------------------------------------------------------------------
// Running one op on both devices
// ---------------------------------------------------------------------------

typedef enum op { OP_CAST, OP_SCALE, OP_AXPY, OP_ADD, OP_MUL } op_t;
static const char* const op_names[] = {"cast", "scale", "axpy", "add", "mul"};

// Runs `op` on `c` with inputs x (of `src`) and y (of `dst`) placed at an
// element offset of 3, and reads the n results into `out`.
static accel_status_t run_op(ocl_ctx_t* c, op_t op, accel_dtype_t dst,
                             accel_dtype_t src, const void* x, const void* y,
                             size_t n, double alpha, void* out) {
  size_t ds = accel_dtype_size(dst), ss = accel_dtype_size(src);
  size_t zo = 3 * ds, xo = 3 * ss;
  accel_buffer_t *bz = NULL, *bx = NULL, *by = NULL;
  accel_status_t s = accel_buffer_create(c->device, (n + 3) * ds, &bz);
  if (s == ACCEL_OK) s = accel_buffer_create(c->device, (n + 3) * ss, &bx);
  if (s == ACCEL_OK) s = accel_buffer_create(c->device, (n + 3) * ds, &by);
  if (s == ACCEL_OK) s = accel_buffer_write(bx, xo, x, n * ss);
  if (s == ACCEL_OK) s = accel_buffer_write(by, zo, y, n * ds);
  // scale and axpy update z in place: start it as y.
  if (s == ACCEL_OK) s = accel_buffer_write(bz, zo, y, n * ds);
  if (s == ACCEL_OK) {
    switch (op) {
      case OP_CAST:
        s = accel_op_cast(c->stream, bz, zo, dst, bx, xo, src, n);
        break;
      case OP_SCALE:
        s = accel_op_scale(c->stream, bz, zo, dst, n, alpha);
        break;
      case OP_AXPY:
        s = accel_op_axpy(c->stream, bz, zo, bx, xo, dst, n, alpha);
        break;
      case OP_ADD:
        s = accel_op_add(c->stream, bz, zo, bx, xo, by, zo, dst, n);
        break;
      case OP_MUL:
        s = accel_op_mul(c->stream, bz, zo, bx, xo, by, zo, dst, n);
        break;
    }
  }
  if (s == ACCEL_OK) s = ocl_read(c, bz, zo, out, n * ds);
  accel_buffer_release(bz);
  accel_buffer_release(bx);
  accel_buffer_release(by);
  return s;
}

static bool is_nan(const void* p, accel_dtype_t dtype) {
  if (dtype == ACCEL_DTYPE_I32) return false;
  if (dtype == ACCEL_DTYPE_F32) {
    uint32_t u;
    memcpy(&u, p, 4);
    return (u & 0x7fffffffu) > 0x7f800000u;
  }
  uint16_t h;
  memcpy(&h, p, 2);
  return dtype == ACCEL_DTYPE_F16 ? (h & 0x7fffu) > 0x7c00u
                                  : (h & 0x7fffu) > 0x7f80u;
}

// Index of the first element whose bits differ (NaN matches any NaN), or
// n.
static size_t first_diff(const void* a, const void* b, accel_dtype_t dtype,
                         size_t n) {
  size_t es = accel_dtype_size(dtype);
  for (size_t i = 0; i < n; i++) {
    const unsigned char* pa = (const unsigned char*)a + i * es;
    const unsigned char* pb = (const unsigned char*)b + i * es;
    if (memcmp(pa, pb, es) == 0) continue;
    if (is_nan(pa, dtype) && is_nan(pb, dtype)) continue;
    return i;
  }
  return n;
}

enum { N_OPS = 3001 };

// Runs `op` on both devices and compares the results.
static int compare_op(op_t op, accel_dtype_t dst, accel_dtype_t src,
                      double alpha) {
  static unsigned char x[N_OPS * 4], y[N_OPS * 4], want[N_OPS * 4],
      got[N_OPS * 4];
  fill_inputs(x, src, N_OPS);
  fill_inputs(y, dst, N_OPS);
  if (run_op(&cpu, op, dst, src, x, y, N_OPS, alpha, want) != ACCEL_OK ||
      run_op(&ocl, op, dst, src, x, y, N_OPS, alpha, got) != ACCEL_OK) {
    printf("  %s %s<-%s: %s\n", op_names[op], accel_dtype_name(dst),
           accel_dtype_name(src), accel_last_error());
    return 1;
  }
  // A NaN matches any NaN: the CPU plugin's own f32 -> f16 keeps NaN
  // payloads with F16C and gives 0x7e00 without it (the SDK's rule).
  size_t i = first_diff(want, got, dst, N_OPS);
  if (i == N_OPS) return 0;
  uint32_t w = 0, g = 0, in = 0;
  size_t ds = accel_dtype_size(dst), ss = accel_dtype_size(src);
  memcpy(&w, want + i * ds, ds);
  memcpy(&g, got + i * ds, ds);
  memcpy(&in, x + i * ss, ss);
  printf("  %s %s<-%s element %zu (x bits 0x%x): cpu 0x%x, opencl 0x%x\n",
         op_names[op], accel_dtype_name(dst), accel_dtype_name(src), i, in, w,
         g);
  return 1;
}

TEST(casts_match_cpu_bit_for_bit) {
  NEED_DEVICE();
  int bad = 0;
  for (int d = 0; d < 4; d++) {
    for (int s = 0; s < 4; s++) {
      bad += compare_op(OP_CAST, (accel_dtype_t)d, (accel_dtype_t)s, 0);
    }
  }
  ASSERT_EQ(bad, 0);
}

TEST(elementwise_ops_match_cpu) {
  NEED_DEVICE();
  int bad = 0;
  for (int d = 0; d < 4; d++) {
    accel_dtype_t dt = (accel_dtype_t)d;
    if (dt != ACCEL_DTYPE_I32) {
      bad += compare_op(OP_SCALE, dt, dt, -1.7);
      bad += compare_op(OP_AXPY, dt, dt, 0.3);
    }
    bad += compare_op(OP_ADD, dt, dt, 0);
    bad += compare_op(OP_MUL, dt, dt, 0);
  }
  ASSERT_EQ(bad, 0);
}

// Fill values whose correct rounding differs from rounding to f32 first,
// exact ties, and out-of-range integers.
TEST(fill_rounds_once_like_cpu) {
  NEED_DEVICE();
  static const double values[] = {
      1.0 + 0x1p-11 + 0x1p-40,  // above an f16 tie; via f32: on it
      1.0 + 0x1p-11,            // f16 tie: to even (1.0)
      1.0 + 0x1p-8 + 0x1p-35,   // above a bf16 tie; via f32: on it
      1.0 + 0x1p-8,             // bf16 tie
      65519.999999,
      65520.0,
      -2.5,
      2.5,
      3e9,
      -3e9,
      NAN,
      INFINITY,
      1e-30,
      0.1,
      -0.0,
  };
  int bad = 0;
  for (size_t v = 0; v < sizeof(values) / sizeof(values[0]); v++) {
    for (int d = 0; d < 4; d++) {
      accel_dtype_t dt = (accel_dtype_t)d;
      size_t es = accel_dtype_size(dt);
      unsigned char want[64], got[64];
      accel_buffer_t *bc = NULL, *bo = NULL;
      ASSERT_OK(accel_buffer_create(cpu.device, 64, &bc));
      ASSERT_OK(accel_buffer_create(ocl.device, 64, &bo));
      ASSERT_OK(accel_op_fill(cpu.stream, bc, es, dt, 8, values[v]));
      ASSERT_OK(accel_op_fill(ocl.stream, bo, es, dt, 8, values[v]));
      ASSERT_OK(ocl_read(&cpu, bc, es, want, 8 * es));
      ASSERT_OK(ocl_read(&ocl, bo, es, got, 8 * es));
      if (memcmp(want, got, 8 * es) != 0) {
        printf("  fill %s %.17g differs from cpu:0\n", accel_dtype_name(dt),
               values[v]);
        bad++;
      }
      accel_buffer_release(bc);
      accel_buffer_release(bo);
    }
  }
  // And against the SDK's rule directly, in case both were wrong.
  uint16_t h = 0;
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(ocl.device, 16, &b));
  ASSERT_OK(accel_op_fill(ocl.stream, b, 0, ACCEL_DTYPE_F16, 1, values[0]));
  ASSERT_OK(ocl_read(&ocl, b, 0, &h, 2));
  ASSERT_EQ(h, 0x3c01);  // 1 + 2^-10, not 1.0
  ASSERT_OK(accel_op_fill(ocl.stream, b, 0, ACCEL_DTYPE_BF16, 1, values[2]));
  ASSERT_OK(ocl_read(&ocl, b, 0, &h, 2));
  ASSERT_EQ(h, 0x3f81);  // 1 + 2^-7
  accel_buffer_release(b);
  ASSERT_EQ(bad, 0);
}

// i32 -> bf16 must round once from the integer: 2^25 + 2^17 + 1 is just
// above a bf16 tie, but its nearest f32 is the tie itself.
TEST(cast_i32_to_bf16_rounds_once) {
  NEED_DEVICE();
  int32_t in[2] = {33685505, -33685505};
  uint16_t out[2];
  accel_buffer_t *bi = NULL, *bo = NULL;
  ASSERT_OK(ocl_buffer(&ocl, sizeof(in), in, &bi));
  ASSERT_OK(ocl_buffer(&ocl, sizeof(out), NULL, &bo));
  ASSERT_OK(accel_op_cast(ocl.stream, bo, 0, ACCEL_DTYPE_BF16, bi, 0,
                          ACCEL_DTYPE_I32, 2));
  ASSERT_OK(ocl_read(&ocl, bo, 0, out, sizeof(out)));
  ASSERT_EQ(out[0], accel_plugin_f64_to_bf16(33685505.0));
  ASSERT_EQ(out[0], 0x4c01);  // 2^25 + 2^18
  ASSERT_EQ(out[1], 0xcc01);
  accel_buffer_release(bi);
  accel_buffer_release(bo);
}

TEST(sum_within_tolerance) {
  NEED_DEVICE();
  static const size_t counts[] = {1, 63, 4097, 300001, 5000003};
  for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
    size_t n = counts[c];
    for (int d = 0; d < 4; d++) {
      accel_dtype_t dt = (accel_dtype_t)d;
      size_t es = accel_dtype_size(dt);
      unsigned char* x = malloc(n * es);
      ASSERT_NOT_NULL(x);
      double ref = 0, mag = 0;
      int64_t iref = 0;
      for (size_t i = 0; i < n; i++) {
        double v = (double)((int32_t)(rng() % 2001) - 1000) / 64.0;
        if (dt == ACCEL_DTYPE_I32) {
          int32_t k = (int32_t)(rng() << 4);
          memcpy(x + i * 4, &k, 4);
          iref += k;
          continue;
        }
        if (dt == ACCEL_DTYPE_F32) {
          float f = (float)v;
          memcpy(x + i * 4, &f, 4);
        } else {
          uint16_t h = dt == ACCEL_DTYPE_F16 ? accel_plugin_f64_to_f16(v)
                                             : accel_plugin_f64_to_bf16(v);
          memcpy(x + i * 2, &h, 2);
          v = dt == ACCEL_DTYPE_F16 ? accel_plugin_f16_to_f32(h)
                                    : accel_plugin_bf16_to_f32(h);
        }
        ref += v;
        mag += fabs(v);
      }
      accel_buffer_t *bx = NULL, *bo = NULL;
      ASSERT_OK(ocl_buffer(&ocl, n * es, x, &bx));
      ASSERT_OK(ocl_buffer(&ocl, 16, NULL, &bo));
      ASSERT_OK(accel_op_sum(ocl.stream, bo, es, bx, 0, dt, n));
      unsigned char out[4] = {0};
      ASSERT_OK(ocl_read(&ocl, bo, es, out, es));
      if (dt == ACCEL_DTYPE_I32) {
        uint32_t got;
        memcpy(&got, out, 4);
        ASSERT_EQ(got, (uint32_t)(uint64_t)iref);
      } else {
        double got;
        uint16_t h;
        memcpy(&h, out, 2);
        float f;
        memcpy(&f, out, 4);
        got = dt == ACCEL_DTYPE_F32   ? f
              : dt == ACCEL_DTYPE_F16 ? accel_plugin_f16_to_f32(h)
                                      : accel_plugin_bf16_to_f32(h);
        double rel = dt == ACCEL_DTYPE_F32   ? 1e-6
                     : dt == ACCEL_DTYPE_F16 ? 1e-3
                                             : 8e-3;
        double tol = rel * fabs(ref) + 1e-6 * mag + 1e-6;
        if (!(fabs(got - ref) <= tol)) {
          printf("  sum %s of %zu: got %.9g, want %.9g (tol %.3g)\n",
                 accel_dtype_name(dt), n, got, ref, tol);
          ASSERT(fabs(got - ref) <= tol);
        }
      }
      accel_buffer_release(bx);
      accel_buffer_release(bo);
      free(x);
    }
  }
}

// ---------------------------------------------------------------------------
// GEMM
// ---------------------------------------------------------------------------

static double to_double(const void* p, accel_dtype_t dt, size_t i) {
  if (dt == ACCEL_DTYPE_F32) return ((const float*)p)[i];
  uint16_t h = ((const uint16_t*)p)[i];
  return dt == ACCEL_DTYPE_F16 ? accel_plugin_f16_to_f32(h)
                               : accel_plugin_bf16_to_f32(h);
}

static void from_double(void* p, accel_dtype_t dt, size_t i, double v) {
  if (dt == ACCEL_DTYPE_F32) {
    ((float*)p)[i] = (float)v;
  } else {
    ((uint16_t*)p)[i] = dt == ACCEL_DTYPE_F16 ? accel_plugin_f64_to_f16(v)
                                              : accel_plugin_f64_to_bf16(v);
  }
}

typedef struct gemm_case {
  accel_dtype_t ab, c;
  bool ta, tb;
  size_t m, n, k, pad;
  double alpha, beta;
  bool nan_c;
} gemm_case_t;

// Runs one case on opencl:0 and checks it against a double reference.
static int check_gemm(const gemm_case_t* g) {
  size_t ea = accel_dtype_size(g->ab), ec = accel_dtype_size(g->c);
  size_t ar = g->ta ? g->k : g->m, ac = g->ta ? g->m : g->k;
  size_t br = g->tb ? g->n : g->k, bc = g->tb ? g->k : g->n;
  size_t lda = ac + g->pad, ldb = bc + g->pad, ldc = g->n + g->pad;
  size_t off = 8;  // elements before each matrix
  size_t asz = (off + ar * lda + 1), bsz = (off + br * ldb + 1),
         csz = (off + g->m * ldc + 1);
  unsigned char* a = calloc(asz, ea);
  unsigned char* b = calloc(bsz, ea);
  unsigned char* c = calloc(csz, ec);
  unsigned char* got = calloc(csz, ec);
  if (!a || !b || !c || !got) return 1;
  for (size_t i = 0; i < asz; i++) {
    from_double(a, g->ab, i, ((int)(rng() % 17) - 8) / 8.0);
  }
  for (size_t i = 0; i < bsz; i++) {
    from_double(b, g->ab, i, ((int)(rng() % 17) - 8) / 8.0);
  }
  for (size_t i = 0; i < csz; i++) {
    from_double(c, g->c, i, g->nan_c ? NAN : ((int)(rng() % 9) - 4) / 4.0);
  }
  accel_buffer_t *ba = NULL, *bb = NULL, *bcb = NULL;
  accel_status_t s = ocl_buffer(&ocl, asz * ea, a, &ba);
  if (s == ACCEL_OK) s = ocl_buffer(&ocl, bsz * ea, b, &bb);
  if (s == ACCEL_OK) s = ocl_buffer(&ocl, csz * ec, c, &bcb);
  accel_gemm_t gemm;
  accel_gemm_init(&gemm);
  gemm.a_dtype = gemm.b_dtype = g->ab;
  gemm.c_dtype = g->c;
  gemm.trans_a = g->ta;
  gemm.trans_b = g->tb;
  gemm.m = g->m;
  gemm.n = g->n;
  gemm.k = g->k;
  gemm.alpha = g->alpha;
  gemm.beta = g->beta;
  gemm.a = ba;
  gemm.a_offset = off * ea;
  gemm.lda = lda;
  gemm.b = bb;
  gemm.b_offset = off * ea;
  gemm.ldb = ldb;
  gemm.c = bcb;
  gemm.c_offset = off * ec;
  gemm.ldc = ldc;
  if (s == ACCEL_OK) s = accel_op_gemm(ocl.stream, &gemm);
  if (s == ACCEL_OK) s = ocl_read(&ocl, bcb, 0, got, csz * ec);
  int bad = s != ACCEL_OK;
  if (bad) printf("  gemm: %s\n", accel_last_error());
  double tol = g->c == ACCEL_DTYPE_F32   ? 1e-5
               : g->c == ACCEL_DTYPE_F16 ? 2e-3
                                         : 1.6e-2;
  for (size_t i = 0; !bad && i < csz; i++) {
    size_t r = i >= off ? (i - off) / ldc : 0,
           col = i >= off ? (i - off) % ldc : 0;
    bool inside = i >= off && r < g->m && col < g->n;
    double want = to_double(c, g->c, i), mag = 0;
    if (inside) {
      double acc = 0;
      for (size_t q = 0; q < g->k; q++) {
        double va =
            to_double(a, g->ab, off + (g->ta ? q * lda + r : r * lda + q));
        double vb =
            to_double(b, g->ab, off + (g->tb ? col * ldb + q : q * ldb + col));
        acc += va * vb;
        mag += fabs(va * vb);
      }
      want = g->alpha * acc;
      mag = fabs(g->alpha) * mag + 1;
      if (g->beta != 0) {  // beta == 0 ignores C, NaN included
        want += g->beta * to_double(c, g->c, i);
        mag += fabs(g->beta * to_double(c, g->c, i));
      }
    }
    double v = to_double(got, g->c, i);
    bool ok = inside ? fabs(v - want) <= tol * mag
                     : memcmp(got + i * ec, c + i * ec, ec) == 0;
    if (!ok) {
      printf(
          "  gemm %s->%s ta%d tb%d %zux%zux%zu beta %g: element %zu "
          "(row %zu col %zu%s): got %g want %g\n",
          accel_dtype_name(g->ab), accel_dtype_name(g->c), g->ta, g->tb, g->m,
          g->n, g->k, g->beta, i, r, col, inside ? "" : ", outside C", v, want);
      bad = 1;
    }
  }
  accel_buffer_release(ba);
  accel_buffer_release(bb);
  accel_buffer_release(bcb);
  free(a);
  free(b);
  free(c);
  free(got);
  return bad;
}

TEST(gemm_matches_reference) {
  NEED_DEVICE();
  printf("  ACCEL_OPENCL_CLBLAST=%s ACCEL_OPENCL_GEMM=%s\n",
         getenv("ACCEL_OPENCL_CLBLAST") ? getenv("ACCEL_OPENCL_CLBLAST") : "",
         getenv("ACCEL_OPENCL_GEMM") ? getenv("ACCEL_OPENCL_GEMM") : "");
  // With the failing stand-in CLBlast (fake_clblast.c), every f32 GEMM
  // must have tried it and then fallen back to the plugin's kernel.
  const char* mark = getenv("FAKE_CLBLAST_MARK");
  if (mark != NULL) remove(mark);
  static const accel_dtype_t pairs[][2] = {
      {ACCEL_DTYPE_F32, ACCEL_DTYPE_F32},   {ACCEL_DTYPE_F16, ACCEL_DTYPE_F16},
      {ACCEL_DTYPE_BF16, ACCEL_DTYPE_BF16}, {ACCEL_DTYPE_F16, ACCEL_DTYPE_F32},
      {ACCEL_DTYPE_BF16, ACCEL_DTYPE_F32},
  };
  int bad = 0;
  for (size_t p = 0; p < sizeof(pairs) / sizeof(pairs[0]); p++) {
    for (int t = 0; t < 4; t++) {
      gemm_case_t g = {pairs[p][0], pairs[p][1], t & 1, t >> 1, 37,   29,
                       45,          3,           1.5,   0.5,    false};
      bad += check_gemm(&g);
    }
    gemm_case_t nan_c = {pairs[p][0], pairs[p][1], false, true, 19,  33,
                         17,          0,           -2.0,  0.0,  true};
    bad += check_gemm(&nan_c);
    gemm_case_t k0 = {pairs[p][0], pairs[p][1], false, false, 5,    7,
                      0,           2,           1.0,   2.0,   false};
    bad += check_gemm(&k0);
  }
  gemm_case_t big = {ACCEL_DTYPE_F32,
                     ACCEL_DTYPE_F32,
                     false,
                     false,
                     128,
                     96,
                     160,
                     0,
                     1.0,
                     0.0,
                     true};
  bad += check_gemm(&big);
  ASSERT_EQ(bad, 0);
  if (mark != NULL) {
    FILE* f = fopen(mark, "r");
    ASSERT_NOT_NULL(f);  // the stand-in was never called
    fclose(f);
  }
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  if (usable) {
    ocl_ctx_close(&ocl);
    ocl_ctx_close(&cpu);
  }
  accel_shutdown();
  return rc;
}
