// SPDX-License-Identifier: MIT
//
// The CUDA plugin on real hardware: memory and every copy direction,
// pinned memory, streams, events and timing, the built-in ops and GEMM in
// every dtype compared with the CPU plugin, custom modules (PTX and
// cubins embedded at build time) and the NO_BINARY_FOR_GPU error.
// Exits 77 when no CUDA device is usable (every machine without an NVIDIA
// GPU, CI included), so it runs for real only where there is one.
#include <accel/accel.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

extern const unsigned char test_vadd_ptx[], test_vadd_sm75[], test_vadd_sm90[];
extern const size_t test_vadd_ptx_size, test_vadd_sm75_size,
    test_vadd_sm90_size;

static accel_device_t* gpu;
static accel_device_t* cpu;
static accel_device_info_t gpu_info;

// Allocates `size` bytes on `device` or fails the test.
#define NEW_BUFFER(var, device, size) \
  accel_buffer_t* var = NULL;         \
  ASSERT_OK(accel_buffer_create((device), (size), &var))

static void fill_pattern(unsigned char* p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 131u + seed);
}

TEST(copies_every_direction) {
  const size_t n = (64u << 20) + 3;  // large and odd
  unsigned char* src = malloc(n);
  unsigned char* dst = malloc(n);
  ASSERT(src != NULL && dst != NULL);
  fill_pattern(src, n, 7);
  NEW_BUFFER(a, gpu, n);
  NEW_BUFFER(b, gpu, n);
  ASSERT_OK(accel_buffer_write(a, 0, src, n));  // h2d, stream NULL
  ASSERT_OK(accel_buffer_copy(b, 0, a, 0, n));  // d2d, stream NULL
  ASSERT_OK(accel_buffer_read(b, 0, dst, n));   // d2h, stream NULL
  ASSERT_MEM_EQ(src, dst, n);
  ASSERT_OK(accel_buffer_copy(a, 1, a, 0, n - 1));  // overlapping move
  ASSERT_OK(accel_buffer_read(a, 1, dst, n - 1));
  ASSERT_MEM_EQ(src, dst, n - 1);
  ASSERT_OK(accel_buffer_fill(b, 5, 0xAB, 1000));  // memset
  ASSERT_OK(accel_buffer_read(b, 0, dst, 1010));
  for (size_t i = 5; i < 1005; i++) ASSERT_EQ(dst[i], 0xAB);
  ASSERT_EQ(dst[4], src[4]);
  ASSERT_EQ(dst[1005], src[1005]);

  // Overlapping moves in both directions, by shifts that take the
  // plugin's piecewise path (a quarter) and its temporary (3 bytes), on a
  // stream and synchronously.
  accel_stream_t* s = NULL;
  ASSERT_OK(accel_stream_create(gpu, 0, &s));
  const size_t shifts[] = {n / 4 + 1, 3};  // not multiples of the period
  for (size_t i = 0; i < 2; i++) {
    size_t k = shifts[i], len = n - k;
    ASSERT_OK(accel_buffer_write(a, 0, src, n));
    ASSERT_OK(accel_stream_copy_buffer(s, a, k, a, 0, len));  // up
    ASSERT_OK(accel_stream_synchronize(s));
    ASSERT_OK(accel_buffer_read(a, k, dst, len));
    ASSERT_MEM_EQ(src, dst, len);
    ASSERT_OK(accel_buffer_write(a, 0, src, n));
    ASSERT_OK(accel_buffer_copy(a, 0, a, k, len));  // down
    ASSERT_OK(accel_buffer_read(a, 0, dst, len));
    ASSERT_MEM_EQ(src + k, dst, len);
  }
  memset(dst, 0, n);
  ASSERT_OK(accel_stream_write_buffer(s, a, 0, src, n));
  ASSERT_OK(accel_stream_copy_buffer(s, b, 0, a, 0, n));
  ASSERT_OK(accel_stream_fill_buffer(s, b, 0, 0x11, 16));
  ASSERT_OK(accel_stream_read_buffer(s, b, 0, dst, n));
  ASSERT_OK(accel_stream_synchronize(s));
  for (size_t i = 0; i < 16; i++) ASSERT_EQ(dst[i], 0x11);
  ASSERT_MEM_EQ(src + 16, dst + 16, n - 16);
  accel_stream_release(s);
  accel_buffer_release(a);
  accel_buffer_release(b);
  free(src);
  free(dst);
}

TEST(pinned_memory) {
  ASSERT(gpu_info.caps & ACCEL_DEVICE_CAP_PINNED_MEMORY);
  const size_t n = 32u << 20;
  unsigned char* h = NULL;
  ASSERT_OK(accel_host_alloc(gpu, n, (void**)&h));
  fill_pattern(h, n, 3);
  NEW_BUFFER(a, gpu, n);
  accel_stream_t* s = NULL;
  ASSERT_OK(accel_stream_create(gpu, 0, &s));
  ASSERT_OK(accel_stream_write_buffer(s, a, 0, h, n));
  ASSERT_OK(accel_stream_synchronize(s));
  memset(h, 0, n);
  ASSERT_OK(accel_stream_read_buffer(s, a, 0, h, n));
  ASSERT_OK(accel_stream_synchronize(s));
  unsigned char* expect = malloc(n);
  fill_pattern(expect, n, 3);
  ASSERT_MEM_EQ(h, expect, n);
  free(expect);
  accel_stream_release(s);
  accel_buffer_release(a);
  accel_host_free(gpu, h);
}

TEST(streams_events_timing) {
  accel_stream_t* s1 = NULL;
  accel_stream_t* s2 = NULL;
  accel_event_t* start = NULL;
  accel_event_t* end = NULL;
  accel_event_t* plain = NULL;
  ASSERT_OK(accel_stream_create(gpu, 0, &s1));
  ASSERT_OK(accel_stream_create(gpu, 0, &s2));
  ASSERT_OK(accel_event_create(gpu, ACCEL_EVENT_TIMING, &start));
  ASSERT_OK(accel_event_create(gpu, ACCEL_EVENT_TIMING, &end));
  ASSERT_OK(accel_event_create(gpu, 0, &plain));
  bool done = false;
  ASSERT_OK(accel_event_query(plain, &done));  // never recorded: complete
  ASSERT(done);
  const size_t n = 256u << 20;
  NEW_BUFFER(a, gpu, n);
  NEW_BUFFER(b, gpu, n);
  ASSERT_OK(accel_event_record(start, s1));
  for (int i = 0; i < 8; i++)
    ASSERT_OK(accel_stream_fill_buffer(s1, a, 0, (uint8_t)i, n));
  ASSERT_OK(accel_event_record(end, s1));
  ASSERT_OK(accel_event_record(plain, s1));
  // s2 copies a only after s1's fills.
  ASSERT_OK(accel_stream_wait_event(s2, plain));
  ASSERT_OK(accel_stream_copy_buffer(s2, b, 0, a, 0, n));
  ASSERT_OK(accel_stream_synchronize(s2));
  unsigned char probe[4];
  ASSERT_OK(accel_buffer_read(b, n - 4, probe, 4));
  ASSERT_EQ(probe[0], 7);
  ASSERT_OK(accel_event_synchronize(end));
  ASSERT_OK(accel_stream_query(s1, &done));
  ASSERT(done);
  float ms = 0;
  ASSERT_OK(accel_event_elapsed_ms(start, end, &ms));
  printf("  8 fills of %zu MiB: %.3f ms (%.1f GB/s)\n", n >> 20, ms,
         8.0 * (double)n / (ms * 1e6));
  ASSERT(ms > 0);
  // accel.h: an event without timing is an invalid argument (the core
  // refuses it before the plugin is asked).
  ASSERT_STATUS(accel_event_elapsed_ms(start, plain, &ms),
                ACCEL_ERROR_INVALID_ARGUMENT);
  accel_event_release(start);
  accel_event_release(end);
  accel_event_release(plain);
  accel_stream_release(s1);
  accel_stream_release(s2);
  accel_buffer_release(a);
  accel_buffer_release(b);
}

// Runs one op on `device` over fresh buffers filled from `x0`/`y0`, and
// returns the output bytes (malloc'd). kind: 0 fill 1 cast 2 scale 3 axpy
// 4 add 5 mul 6 sum.
static unsigned char* run_op(accel_device_t* device, int kind, accel_dtype_t dt,
                             accel_dtype_t src_dt, size_t count, const void* x0,
                             const void* y0) {
  size_t es = accel_dtype_size(dt), ss = accel_dtype_size(src_dt);
  size_t bytes = count * (es > ss ? es : ss);
  accel_buffer_t *x = NULL, *y = NULL, *z = NULL;
  accel_stream_t* s = NULL;
  unsigned char* out = calloc(1, bytes);
  if (accel_buffer_create(device, bytes, &x) != ACCEL_OK ||
      accel_buffer_create(device, bytes, &y) != ACCEL_OK ||
      accel_buffer_create(device, bytes, &z) != ACCEL_OK ||
      accel_stream_create(device, 0, &s) != ACCEL_OK) {
    free(out);
    out = NULL;
  }
  accel_status_t st = ACCEL_OK;
  if (out != NULL) {
    st = accel_buffer_write(x, 0, x0, count * (kind == 1 ? ss : es));
    if (st == ACCEL_OK) st = accel_buffer_write(y, 0, y0, count * es);
    if (st == ACCEL_OK) st = accel_buffer_write(z, 0, y0, count * es);
    switch (kind) {
      case 0:
        st = st ? st : accel_op_fill(s, z, 0, dt, count, -3.3e9);
        break;
      case 1:
        st = st ? st : accel_op_cast(s, z, 0, dt, x, 0, src_dt, count);
        break;
      case 2:
        st = st ? st : accel_op_scale(s, z, 0, dt, count, 0.7);
        break;
      case 3:
        st = st ? st : accel_op_axpy(s, z, 0, x, 0, dt, count, -1.3);
        break;
      case 4:
        st = st ? st : accel_op_add(s, z, 0, x, 0, y, 0, dt, count);
        break;
      case 5:
        st = st ? st : accel_op_mul(s, z, 0, x, 0, y, 0, dt, count);
        break;
      default:
        st = st ? st : accel_op_sum(s, z, 0, x, 0, dt, count);
        break;
    }
    if (st == ACCEL_OK) st = accel_stream_synchronize(s);
    if (st == ACCEL_OK)
      st = accel_buffer_read(z, 0, out, kind == 6 ? es : count * es);
    if (st != ACCEL_OK) {
      printf("  %s: op %d: %s\n", accel_device_uri(device), kind,
             accel_last_error());
      free(out);
      out = NULL;
    }
  }
  accel_stream_release(s);
  accel_buffer_release(x);
  accel_buffer_release(y);
  accel_buffer_release(z);
  return out;
}

// Inputs with specials (NaN, inf, huge, tiny, halfway cases) for `dt`.
static void make_input(void* p, accel_dtype_t dt, size_t count, unsigned seed) {
  static const float specials[] = {NAN,   INFINITY,      -INFINITY, 3e38f,
                                   -3e9f, 2147483648.0f, 65520.0f,  1e-8f,
                                   -0.0f, 0.5f,          1.5f,      2.5f};
  size_t ns = sizeof(specials) / sizeof(specials[0]);
  for (size_t i = 0; i < count; i++) {
    float f =
        i < ns
            ? specials[i]
            : (float)((int)((i * 2654435761u + seed) % 20001) - 10000) / 37.0f;
    switch (dt) {
      case ACCEL_DTYPE_F32:
        ((float*)p)[i] = f;
        break;
      case ACCEL_DTYPE_I32:
        ((int32_t*)p)[i] = (int32_t)(i * 2654435761u + seed);
        break;
      default: {  // f16/bf16 bit patterns from the low bits (NaNs included)
        ((uint16_t*)p)[i] = (uint16_t)(i * 40503u + seed);
        break;
      }
    }
  }
}

// Compares GPU and CPU results: bitwise, except that NaNs only need to be
// NaNs and sums may differ (summation order): f32 by 1e-5 of `sum_abs`,
// the sum of the inputs' magnitudes (as accel-conform; the sum itself may
// be small after cancellation), f16/bf16 by one unit in the last place.
// `sum_abs` is 0 for the other ops.
static bool same_result(const unsigned char* g, const unsigned char* c,
                        accel_dtype_t dt, size_t count, double sum_abs) {
  bool sum = sum_abs > 0;
  for (size_t i = 0; i < count; i++) {
    if (dt == ACCEL_DTYPE_F32) {
      float a, b;
      memcpy(&a, g + 4 * i, 4);
      memcpy(&b, c + 4 * i, 4);
      if (isnan(a) && isnan(b)) continue;
      if (sum ? fabs((double)a - b) <= 1e-5 * sum_abs : memcmp(&a, &b, 4) == 0)
        continue;
      printf("  element %zu: gpu %.9g cpu %.9g\n", i, a, b);
      return false;
    }
    if (dt == ACCEL_DTYPE_I32) {
      if (memcmp(g + 4 * i, c + 4 * i, 4) != 0) return false;
      continue;
    }
    uint16_t a, b;
    memcpy(&a, g + 2 * i, 2);
    memcpy(&b, c + 2 * i, 2);
    uint16_t exp = dt == ACCEL_DTYPE_F16 ? 0x7C00 : 0x7F80;
    uint16_t man = dt == ACCEL_DTYPE_F16 ? 0x03FF : 0x007F;
    bool na = (a & exp) == exp && (a & man), nb = (b & exp) == exp && (b & man);
    if ((na && nb) || a == b) continue;
    if (sum && abs((int)(a & 0x7FFF) - (int)(b & 0x7FFF)) <= 1) continue;
    printf("  element %zu: gpu 0x%04x cpu 0x%04x\n", i, a, b);
    return false;
  }
  return true;
}

TEST(ops_match_cpu) {
  const size_t count = 100003;
  void* x = malloc(count * 4);
  void* y = malloc(count * 4);
  int failures = 0;
  for (int dt = 0; dt < 4; dt++) {
    for (int kind = 0; kind < 7; kind++) {
      if ((kind == 2 || kind == 3) && dt == ACCEL_DTYPE_I32) continue;
      for (int src = 0; src < (kind == 1 ? 4 : 1); src++) {
        accel_dtype_t sdt = kind == 1 ? (accel_dtype_t)src : (accel_dtype_t)dt;
        make_input(x, sdt, count, 1);
        make_input(y, (accel_dtype_t)dt, count, 2);
        if (kind == 6 && dt != ACCEL_DTYPE_I32) {
          make_input(x, (accel_dtype_t)dt, count, 1);
          // Sums of specials are NaN; keep the sum finite and meaningful.
          memset(x, 0, 12 * accel_dtype_size((accel_dtype_t)dt));
          if (dt != ACCEL_DTYPE_F32) {
            for (size_t i = 0; i < count; i++) ((uint16_t*)x)[i] &= 0x3BFF;
          }
        }
        double sum_abs = 0;  // f32: sum |x|; other dtypes: just not 0
        for (size_t i = 0; kind == 6 && i < count; i++) {
          sum_abs += dt == ACCEL_DTYPE_F32 ? fabs(((const float*)x)[i]) : 1;
        }
        unsigned char* g =
            run_op(gpu, kind, (accel_dtype_t)dt, sdt, count, x, y);
        unsigned char* c =
            run_op(cpu, kind, (accel_dtype_t)dt, sdt, count, x, y);
        bool ok = g != NULL && c != NULL &&
                  same_result(g, c, (accel_dtype_t)dt, kind == 6 ? 1 : count,
                              sum_abs);
        if (!ok) {
          printf("  FAIL op %d dtype %s (src %s)\n", kind,
                 accel_dtype_name((accel_dtype_t)dt), accel_dtype_name(sdt));
          failures++;
        }
        free(g);
        free(c);
      }
    }
  }
  free(x);
  free(y);
  ASSERT_EQ(failures, 0);
}

// C = A B (+ transposes) on `device`; returns C as f32 (malloc'd).
static float* run_gemm(accel_device_t* device, accel_dtype_t ab,
                       accel_dtype_t cd, bool ta, bool tb, size_t m, size_t n,
                       size_t k, const void* a0, const void* b0,
                       uint32_t flags) {
  size_t es = accel_dtype_size(ab), cs = accel_dtype_size(cd);
  accel_buffer_t *a = NULL, *b = NULL, *c = NULL;
  accel_stream_t* s = NULL;
  float* out = calloc(m * n, sizeof(float));
  unsigned char* raw = calloc(m * n, cs);
  accel_status_t st = accel_buffer_create(device, m * k * es, &a);
  if (!st) st = accel_buffer_create(device, k * n * es, &b);
  if (!st) st = accel_buffer_create(device, m * n * cs, &c);
  if (!st) st = accel_stream_create(device, 0, &s);
  if (!st) st = accel_buffer_write(a, 0, a0, m * k * es);
  if (!st) st = accel_buffer_write(b, 0, b0, k * n * es);
  if (!st) st = accel_buffer_fill(c, 0, 0, m * n * cs);
  accel_gemm_t g;
  accel_gemm_init(&g);
  g.a_dtype = g.b_dtype = ab;
  g.c_dtype = cd;
  g.trans_a = ta;
  g.trans_b = tb;
  g.flags = flags;
  g.m = m, g.n = n, g.k = k;
  g.alpha = 1.0, g.beta = 0.0;
  g.a = a, g.lda = ta ? m : k;
  g.b = b, g.ldb = tb ? k : n;
  g.c = c, g.ldc = n;
  if (!st) st = accel_op_gemm(s, &g);
  if (!st) st = accel_stream_synchronize(s);
  if (!st) st = accel_buffer_read(c, 0, raw, m * n * cs);
  if (st) {
    printf("  %s: gemm: %s\n", accel_device_uri(device), accel_last_error());
    free(out);
    out = NULL;
  } else {
    for (size_t i = 0; i < m * n; i++) {
      if (cd == ACCEL_DTYPE_F32) {
        memcpy(&out[i], raw + 4 * i, 4);
      } else {
        uint16_t h;
        memcpy(&h, raw + 2 * i, 2);
        uint32_t u = (uint32_t)h << 16;  // bf16
        if (cd == ACCEL_DTYPE_F16) {     // f16: normals only here
          uint32_t e = (h >> 10) & 0x1F, mant = h & 0x3FF;
          u = ((uint32_t)(h & 0x8000) << 16) |
              (e ? ((e + 112) << 23) | (mant << 13) : 0);
        }
        memcpy(&out[i], &u, 4);
      }
    }
  }
  free(raw);
  accel_stream_release(s);
  accel_buffer_release(a);
  accel_buffer_release(b);
  accel_buffer_release(c);
  return out;
}

TEST(gemm_all_dtypes_match_cpu) {
  const size_t m = 129, n = 67, k = 255;
  struct {
    accel_dtype_t ab, c;
    uint32_t flags;
    float tol;
  } cases[] = {
      {ACCEL_DTYPE_F32, ACCEL_DTYPE_F32, 0, 1e-4f},
      {ACCEL_DTYPE_F32, ACCEL_DTYPE_F32, ACCEL_GEMM_ALLOW_TF32, 2e-2f},
      {ACCEL_DTYPE_F16, ACCEL_DTYPE_F16, 0, 2e-2f},
      {ACCEL_DTYPE_F16, ACCEL_DTYPE_F32, 0, 1e-3f},
      {ACCEL_DTYPE_BF16, ACCEL_DTYPE_BF16, 0, 5e-2f},
      {ACCEL_DTYPE_BF16, ACCEL_DTYPE_F32, 0, 1e-3f},
  };
  void* a = malloc(m * k * 4);
  void* b = malloc(k * n * 4);
  int failures = 0;
  for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
    // Small exact-ish values: multiples of 1/8 in [-2, 2].
    for (size_t i = 0; i < m * k || i < k * n; i++) {
      float v = (float)((int)((i * 7919u) % 33) - 16) / 8.0f;
      uint32_t u;
      memcpy(&u, &v, 4);
      uint16_t h =
          cases[ci].ab == ACCEL_DTYPE_BF16
              ? (uint16_t)(u >> 16)
              : (uint16_t)(((u >> 16) & 0x8000) |
                           (v == 0 ? 0
                                   : ((((u >> 23) & 0xFF) - 112) << 10) |
                                         ((u >> 13) & 0x3FF)));
      if (i < m * k) {
        if (cases[ci].ab == ACCEL_DTYPE_F32)
          ((float*)a)[i] = v;
        else
          ((uint16_t*)a)[i] = h;
      }
      if (i < k * n) {
        if (cases[ci].ab == ACCEL_DTYPE_F32)
          ((float*)b)[i] = v;
        else
          ((uint16_t*)b)[i] = h;
      }
    }
    for (int t = 0; t < 4; t++) {
      bool ta = t & 1, tb = t & 2;
      float* g = run_gemm(gpu, cases[ci].ab, cases[ci].c, ta, tb, m, n, k, a, b,
                          cases[ci].flags);
      float* c = run_gemm(cpu, cases[ci].ab, cases[ci].c, ta, tb, m, n, k, a, b,
                          cases[ci].flags);
      bool ok = g != NULL && c != NULL;
      for (size_t i = 0; ok && i < m * n; i++) {
        if (fabsf(g[i] - c[i]) > cases[ci].tol * (1.0f + fabsf(c[i]))) {
          printf("  C[%zu] gpu %g cpu %g\n", i, g[i], c[i]);
          ok = false;
        }
      }
      if (!ok) {
        printf("  FAIL gemm %s->%s flags %u trans %d%d\n",
               accel_dtype_name(cases[ci].ab), accel_dtype_name(cases[ci].c),
               cases[ci].flags, ta, tb);
        failures++;
      }
      free(g);
      free(c);
    }
  }
  free(a);
  free(b);
  ASSERT_EQ(failures, 0);
}

// Loads `image`, runs vadd over 1000 floats with `shared` bytes of dynamic
// shared memory per block (vadd uses none) and checks the result.
static accel_status_t run_vadd_shared(const void* image, size_t size,
                                      uint32_t shared) {
  accel_module_t* module = NULL;
  accel_status_t st = accel_module_create(gpu, image, size, &module);
  if (st != ACCEL_OK) return st;
  accel_kernel_t* kernel = NULL;
  st = accel_kernel_create(module, "vadd", &kernel);
  enum { N = 1000 };
  float x[N], y[N], z[N];
  for (int i = 0; i < N; i++) x[i] = (float)i, y[i] = 0.5f * (float)i;
  accel_buffer_t *bx = NULL, *by = NULL, *bz = NULL;
  accel_stream_t* s = NULL;
  if (!st) st = accel_buffer_create(gpu, sizeof(x), &bx);
  if (!st) st = accel_buffer_create(gpu, sizeof(y), &by);
  if (!st) st = accel_buffer_create(gpu, sizeof(z), &bz);
  if (!st) st = accel_stream_create(gpu, 0, &s);
  if (!st) st = accel_buffer_write(bx, 0, x, sizeof(x));
  if (!st) st = accel_buffer_write(by, 0, y, sizeof(y));
  unsigned n = N;
  accel_kernel_arg_t args[4] = {
      {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = bz},
      {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = bx},
      {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = by},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = sizeof(n), .value = &n}};
  accel_launch_config_t config;
  accel_launch_config_init(&config);
  config.grid[0] = (N + 127) / 128;
  config.block[0] = 128;
  config.shared_mem_bytes = shared;
  if (!st) st = accel_kernel_launch(kernel, s, &config, 4, args);
  if (!st) st = accel_stream_synchronize(s);
  if (!st) st = accel_buffer_read(bz, 0, z, sizeof(z));
  for (int i = 0; !st && i < N; i++) {
    if (z[i] != 1.5f * (float)i) st = ACCEL_ERROR_INTERNAL;
  }
  accel_stream_release(s);
  accel_buffer_release(bx);
  accel_buffer_release(by);
  accel_buffer_release(bz);
  accel_kernel_release(kernel);
  accel_module_release(module);
  return st;
}

static accel_status_t run_vadd(const void* image, size_t size) {
  return run_vadd_shared(image, size, 0);
}

TEST(module_ptx_and_cubin) {
  ASSERT_OK(run_vadd(test_vadd_ptx, test_vadd_ptx_size));
  bool turing = strcmp(gpu_info.arch, "sm_75") == 0;
  bool hopper = strcmp(gpu_info.arch, "sm_90") == 0;
  if (turing) ASSERT_OK(run_vadd(test_vadd_sm75, test_vadd_sm75_size));
  if (hopper) ASSERT_OK(run_vadd(test_vadd_sm90, test_vadd_sm90_size));
}

// Above 48 KiB of dynamic shared memory a CUDA kernel must opt in: the
// plugin does it, up to the device's limit (64 KiB on sm_75, 227 KiB on
// sm_90), which it reports as max_shared_mem_bytes, so the core refuses
// more with the limit in the message.
TEST(launch_large_dynamic_shared_memory) {
  ASSERT_OK(run_vadd_shared(test_vadd_ptx, test_vadd_ptx_size, 64u << 10));
  ASSERT_OK(run_vadd_shared(test_vadd_ptx, test_vadd_ptx_size, 48u << 10));
  ASSERT_EQ(run_vadd_shared(test_vadd_ptx, test_vadd_ptx_size, 1u << 20),
            ACCEL_ERROR_INVALID_ARGUMENT);
  printf("  %s\n", accel_last_error());
  ASSERT_STR_CONTAINS(accel_last_error(), "1048576");
  ASSERT_STR_CONTAINS(accel_last_error(), "allows at most");
}

TEST(module_no_binary_for_gpu) {
  // A cubin for another major SM version cannot run here.
  bool hopper = strncmp(gpu_info.arch, "sm_9", 4) == 0;
  const void* image = hopper ? test_vadd_sm75 : test_vadd_sm90;
  size_t size = hopper ? test_vadd_sm75_size : test_vadd_sm90_size;
  accel_module_t* module = NULL;
  accel_status_t st = accel_module_create(gpu, image, size, &module);
  ASSERT_NE(st, ACCEL_OK);
  printf("  %s\n", accel_last_error());
  ASSERT_STR_CONTAINS(accel_last_error(), "module has no code for");
  ASSERT_STR_CONTAINS(accel_last_error(), gpu_info.arch);
}

int main(int argc, char** argv) {
  if (accel_device_open("cuda:0", &gpu) != ACCEL_OK) {
    printf("SKIP: no usable CUDA device: %s\n", accel_last_error());
    accel_shutdown();
    return TEST_EXIT_SKIP;
  }
  if (accel_device_open("cpu:0", &cpu) != ACCEL_OK ||
      (gpu_info.struct_size = sizeof(gpu_info),
       accel_device_query_info(gpu, &gpu_info)) != ACCEL_OK) {
    printf("FAIL: %s\n", accel_last_error());
    return 1;
  }
  printf("%s: %s (%s)\n", accel_device_uri(gpu), gpu_info.name, gpu_info.arch);
  int rc = test_main(argc, argv);
  accel_device_release(gpu);
  accel_device_release(cpu);
  accel_shutdown();
  return rc;
}
