// SPDX-License-Identifier: MIT
//
// One program, every backend: built once, run unchanged with ACCEL_BACKEND
// set to each backend this build has (tests/onebinary/run_all.sh). It does
// a round trip, built-in ops, a GEMM and a custom kernel loaded from one
// multi-target bundle file, and prints a digest of every result, which
// must be the same on every backend (all values are exact in f32).
//
//   one_binary BUNDLE
#include <accel/accel.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static int failed(accel_status_t status, const char* call) {
  if (status == ACCEL_OK) return 0;
  fprintf(stderr, "%s: %s: %s\n", call, accel_status_string(status),
          accel_last_error());
  return 1;
}
#define CHECK(call) failed((call), #call)

// FNV-1a over the bytes of every result.
static uint64_t digest = 1469598103934665603ull;
static void mix(const void* data, size_t size) {
  const unsigned char* p = data;
  for (size_t i = 0; i < size; i++) {
    digest ^= p[i];
    digest *= 1099511628211ull;
  }
}

enum { N = 1000, M = 16, K = 8, P = 12 };

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: one_binary BUNDLE\n");
    return 2;
  }
  accel_device_t* dev = NULL;
  accel_stream_t* s = NULL;
  accel_buffer_t *x = NULL, *y = NULL, *z = NULL, *sum = NULL, *a = NULL,
                 *b = NULL, *c = NULL, *data = NULL;
  accel_module_t* module = NULL;
  accel_kernel_t* kernel = NULL;
  static unsigned char bytes[4096], back[4096];
  float zs[N], total = 0, as[M * K], bs[K * P], cs[M * P];
  int32_t ints[N];
  for (size_t i = 0; i < sizeof(bytes); i++) bytes[i] = (unsigned char)(i * 13);
  for (int i = 0; i < M * K; i++) as[i] = (float)(i % 7 - 3);
  for (int i = 0; i < K * P; i++) bs[i] = (float)(i % 5 - 2);
  for (int i = 0; i < N; i++) ints[i] = i;
  uint32_t n = N;
  int err = CHECK(accel_device_default(&dev)) ||
            CHECK(accel_stream_create(dev, 0, &s)) ||
            // Round trip.
            CHECK(accel_buffer_create(dev, sizeof(bytes), &x)) ||
            CHECK(accel_buffer_write(x, 0, bytes, sizeof(bytes))) ||
            CHECK(accel_buffer_read(x, 0, back, sizeof(back))) ||
            // Ops: z = 2 * (1.5 + 2), total = sum(z).
            CHECK(accel_buffer_create(dev, N * 4, &y)) ||
            CHECK(accel_buffer_create(dev, N * 4, &z)) ||
            CHECK(accel_buffer_create(dev, 4, &sum)) ||
            CHECK(accel_op_fill(s, x, 0, ACCEL_DTYPE_F32, N, 1.5)) ||
            CHECK(accel_op_fill(s, y, 0, ACCEL_DTYPE_F32, N, 2.0)) ||
            CHECK(accel_op_add(s, z, 0, x, 0, y, 0, ACCEL_DTYPE_F32, N)) ||
            CHECK(accel_op_scale(s, z, 0, ACCEL_DTYPE_F32, N, 2.0)) ||
            CHECK(accel_op_sum(s, sum, 0, z, 0, ACCEL_DTYPE_F32, N)) ||
            CHECK(accel_stream_read_buffer(s, z, 0, zs, sizeof(zs))) ||
            CHECK(accel_stream_read_buffer(s, sum, 0, &total, 4)) ||
            // GEMM: c = a * b.
            CHECK(accel_buffer_create(dev, sizeof(as), &a)) ||
            CHECK(accel_buffer_create(dev, sizeof(bs), &b)) ||
            CHECK(accel_buffer_create(dev, sizeof(cs), &c)) ||
            CHECK(accel_stream_write_buffer(s, a, 0, as, sizeof(as))) ||
            CHECK(accel_stream_write_buffer(s, b, 0, bs, sizeof(bs)));
  if (!err) {
    accel_gemm_t g;
    accel_gemm_init(&g);
    g.m = M;
    g.n = P;
    g.k = K;
    g.a = a;
    g.lda = K;
    g.b = b;
    g.ldb = P;
    g.c = c;
    g.ldc = P;
    err = CHECK(accel_op_gemm(s, &g)) ||
          CHECK(accel_stream_read_buffer(s, c, 0, cs, sizeof(cs)));
  }
  // The custom kernel, from the bundle: data[i] += 1.
  err = err || CHECK(accel_module_create_from_file(dev, argv[1], &module)) ||
        CHECK(accel_kernel_create(module, "accel_conform_add_one", &kernel)) ||
        CHECK(accel_buffer_create(dev, sizeof(ints), &data)) ||
        CHECK(accel_stream_write_buffer(s, data, 0, ints, sizeof(ints)));
  if (!err) {
    accel_launch_config_t config;
    accel_launch_config_init(&config);
    config.grid[0] = (N + 63) / 64;
    config.block[0] = 64;
    accel_kernel_arg_t args[2] = {
        {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = data},
        {.kind = ACCEL_KERNEL_ARG_VALUE, .value = &n, .size = sizeof(n)}};
    err = CHECK(accel_kernel_launch(kernel, s, &config, 2, args)) ||
          CHECK(accel_stream_read_buffer(s, data, 0, ints, sizeof(ints))) ||
          CHECK(accel_stream_synchronize(s));
  }
  if (!err) {
    mix(back, sizeof(back));
    mix(zs, sizeof(zs));
    mix(&total, sizeof(total));
    mix(cs, sizeof(cs));
    mix(ints, sizeof(ints));
    bool round_trip = memcmp(bytes, back, sizeof(bytes)) == 0;
    printf("%s: round trip %s, sum %.1f, c[0] %.1f, data[999] %d\n",
           accel_device_uri(dev), round_trip ? "ok" : "MISMATCH", total,
           cs[0], ints[N - 1]);
    printf("digest %016llx\n", (unsigned long long)digest);
    err = !round_trip;
  }
  accel_kernel_release(kernel);
  accel_module_release(module);
  accel_buffer_release(data);
  accel_buffer_release(c);
  accel_buffer_release(b);
  accel_buffer_release(a);
  accel_buffer_release(sum);
  accel_buffer_release(z);
  accel_buffer_release(y);
  accel_buffer_release(x);
  accel_stream_release(s);
  accel_device_release(dev);
  accel_shutdown();
  return err;
}
