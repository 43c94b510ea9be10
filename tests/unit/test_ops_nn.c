// SPDX-License-Identifier: MIT
//
// The core's validation of the neural-network ops (<accel/ops_nn.h>):
// activations, bias-add and strided-batched GEMM refuse bad dtypes and
// activations, cross-device buffers, misaligned, out-of-bounds and
// overlapping ranges, strides that overflow, batch members out of bounds
// and C matrices that overlap one another (stride 0, shifted rows, rows
// that wrap into the next member) or the A or B matrices, each with
// ACCEL_ERROR_INVALID_ARGUMENT and a message naming the problem, and
// change nothing. Interleaved C matrices, shared A or B (stride 0), in
// place activations and empty work are accepted, and small products come
// out right on cpu:0. CTest runs this with ACCEL_CPU_DEVICES=2.
#include <accel/accel.h>
#include <stdint.h>
#include <string.h>

#include "test.h"

// `call` fails with INVALID_ARGUMENT and a message containing `text`.
#define EXPECT_INVALID(call, text)                     \
  do {                                                 \
    ASSERT_STATUS(call, ACCEL_ERROR_INVALID_ARGUMENT); \
    ASSERT_STR_CONTAINS(accel_last_error(), text);     \
  } while (0)

typedef struct fixture {
  accel_device_t *d0, *d1;
  accel_stream_t* s;
  accel_buffer_t *a, *b, *c, *other;  // 4 KiB each; `other` on cpu:1
} fixture_t;

static void fixture_open(fixture_t* f) {
  memset(f, 0, sizeof(*f));
  if (accel_device_open("cpu:0", &f->d0) != ACCEL_OK ||
      accel_device_open("cpu:1", &f->d1) != ACCEL_OK ||
      accel_stream_create(f->d0, 0, &f->s) != ACCEL_OK ||
      accel_buffer_create(f->d0, 4096, &f->a) != ACCEL_OK ||
      accel_buffer_create(f->d0, 4096, &f->b) != ACCEL_OK ||
      accel_buffer_create(f->d0, 4096, &f->c) != ACCEL_OK ||
      accel_buffer_create(f->d1, 4096, &f->other) != ACCEL_OK) {
    printf("  setup: %s\n", accel_last_error());
  }
}

static void fixture_close(fixture_t* f) {
  accel_buffer_release(f->other);
  accel_buffer_release(f->c);
  accel_buffer_release(f->b);
  accel_buffer_release(f->a);
  accel_stream_release(f->s);
  accel_device_release(f->d1);
  accel_device_release(f->d0);
}

static void fill_f32(accel_buffer_t* buffer, size_t count, float first,
                     float step) {
  float v[1024];
  for (size_t i = 0; i < count && i < 1024; i++) v[i] = first + step * i;
  accel_buffer_write(buffer, 0, v, count * sizeof(float));
}

TEST(activation_names) {
  ASSERT_STR_EQ(accel_activation_name(ACCEL_ACTIVATION_RELU), "relu");
  ASSERT_STR_EQ(accel_activation_name(ACCEL_ACTIVATION_GELU), "gelu");
  ASSERT_STR_EQ(accel_activation_name(ACCEL_ACTIVATION_SILU), "silu");
  ASSERT_NULL(accel_activation_name((accel_activation_t)3));
}

TEST(activation_validation) {
  fixture_t f;
  fixture_open(&f);
  ASSERT_NOT_NULL(f.other);
  const accel_activation_t relu = ACCEL_ACTIVATION_RELU;
  EXPECT_INVALID(
      accel_op_activation(NULL, f.a, 0, f.b, 0, ACCEL_DTYPE_F32, 4, relu),
      "stream is NULL");
  EXPECT_INVALID(accel_op_activation(f.s, f.a, 0, f.b, 0, ACCEL_DTYPE_F32, 4,
                                     (accel_activation_t)7),
                 "activation 7");
  EXPECT_INVALID(
      accel_op_activation(f.s, f.a, 0, f.b, 0, ACCEL_DTYPE_I32, 4, relu),
      "i32");
  EXPECT_INVALID(
      accel_op_activation(f.s, f.a, 0, f.other, 0, ACCEL_DTYPE_F32, 4, relu),
      "cpu:1");
  EXPECT_INVALID(
      accel_op_activation(f.s, f.a, 2, f.b, 0, ACCEL_DTYPE_F32, 4, relu),
      "offset 2");
  EXPECT_INVALID(
      accel_op_activation(f.s, f.a, 0, f.b, 4, ACCEL_DTYPE_F32, 1024, relu),
      "src");
  EXPECT_INVALID(
      accel_op_activation(f.s, f.a, 0, f.a, 4, ACCEL_DTYPE_F32, 8, relu),
      "partially overlaps");
  // In place, empty and disjoint ranges of one buffer are fine.
  fill_f32(f.a, 8, -2.0f, 1.0f);
  ASSERT_OK(accel_op_activation(f.s, f.a, 0, f.a, 0, ACCEL_DTYPE_F32, 4, relu));
  ASSERT_OK(
      accel_op_activation(f.s, f.a, 16, f.a, 0, ACCEL_DTYPE_F32, 0, relu));
  ASSERT_OK(
      accel_op_activation(f.s, f.a, 32, f.a, 16, ACCEL_DTYPE_F32, 4, relu));
  ASSERT_OK(accel_stream_synchronize(f.s));
  float got[12];
  ASSERT_OK(accel_buffer_read(f.a, 0, got, sizeof(got)));
  const float want[12] = {0, 0, 0, 1, 2, 3, 4, 5, 2, 3, 4, 5};
  ASSERT_MEM_EQ(got, want, sizeof(want));
  fixture_close(&f);
}

TEST(bias_add_validation) {
  fixture_t f;
  fixture_open(&f);
  ASSERT_NOT_NULL(f.other);
  EXPECT_INVALID(accel_op_bias_add(f.s, f.a, 0, f.b, 0, (accel_dtype_t)9, 2, 2),
                 "dtype 9");
  EXPECT_INVALID(
      accel_op_bias_add(f.s, f.a, 0, f.b, 0, ACCEL_DTYPE_F32, SIZE_MAX / 2, 3),
      "overflows");
  EXPECT_INVALID(
      accel_op_bias_add(f.s, f.a, 0, f.b, 0, ACCEL_DTYPE_F32, 33, 32), "y");
  EXPECT_INVALID(
      accel_op_bias_add(f.s, f.a, 0, f.b, 4000, ACCEL_DTYPE_F32, 1, 32),
      "bias");
  EXPECT_INVALID(
      accel_op_bias_add(f.s, f.a, 0, f.other, 0, ACCEL_DTYPE_F32, 2, 2),
      "cpu:1");
  EXPECT_INVALID(accel_op_bias_add(f.s, f.a, 0, f.a, 8, ACCEL_DTYPE_F32, 2, 4),
                 "overlaps bias");
  // The bias may sit right after y in the same buffer; rows 0 is nothing.
  float init[6] = {1, 2, 3, 4, 10, 20};  // y = [[1 2] [3 4]], bias = [10 20]
  ASSERT_OK(accel_buffer_write(f.a, 0, init, sizeof(init)));
  ASSERT_OK(accel_op_bias_add(f.s, f.a, 0, f.a, 16, ACCEL_DTYPE_F32, 2, 2));
  ASSERT_OK(accel_op_bias_add(f.s, f.a, 0, f.a, 0, ACCEL_DTYPE_F32, 0, 2));
  ASSERT_OK(accel_stream_synchronize(f.s));
  float got[6];
  ASSERT_OK(accel_buffer_read(f.a, 0, got, sizeof(got)));
  const float want[6] = {11, 22, 13, 24, 10, 20};
  ASSERT_MEM_EQ(got, want, sizeof(want));
  fixture_close(&f);
}

// A 2 x 2 x 2 f32 GEMM of A in `f.a`, B in `f.b`, C in `f.c`.
static accel_gemm_t gemm_2x2(const fixture_t* f) {
  accel_gemm_t g;
  accel_gemm_init(&g);
  g.m = g.n = g.k = 2;
  g.a = f->a, g.b = f->b, g.c = f->c;
  return g;
}

TEST(gemm_batched_validation) {
  fixture_t f;
  fixture_open(&f);
  ASSERT_NOT_NULL(f.other);
  accel_gemm_t g = gemm_2x2(&f);
  // C matrices on top of one another: stride 0, one element apart, and a
  // row of one member running into the next (ldc 3, stride 2).
  EXPECT_INVALID(accel_op_gemm_strided_batched(f.s, &g, 2, 4, 4, 0),
                 "C matrices of the batch overlap");
  EXPECT_INVALID(accel_op_gemm_strided_batched(f.s, &g, 2, 4, 4, 1), "overlap");
  g.ldc = 3;
  EXPECT_INVALID(accel_op_gemm_strided_batched(f.s, &g, 2, 4, 4, 2),
                 "stride_c 2");
  // Out of bounds: the last member of C, then of A.
  g = gemm_2x2(&f);
  EXPECT_INVALID(accel_op_gemm_strided_batched(f.s, &g, 257, 0, 0, 4),
                 "batch member 256");
  EXPECT_INVALID(accel_op_gemm_strided_batched(f.s, &g, 3, 1000, 0, 4),
                 "A of batch member 2");
  // Strides whose bytes, or whose last member, overflow size_t.
  EXPECT_INVALID(accel_op_gemm_strided_batched(f.s, &g, 2, SIZE_MAX / 2, 0, 4),
                 "stride_a");
  EXPECT_INVALID(accel_op_gemm_strided_batched(f.s, &g, 5, 0, SIZE_MAX / 8, 4),
                 "overflows");
  // The C matrices, as a whole, must not overlap the A or the B matrices.
  g.b = f.c, g.b_offset = 64;  // B of member 1 at 80 .. 96
  EXPECT_INVALID(accel_op_gemm_strided_batched(f.s, &g, 3, 4, 4, 8),
                 "overlap the B matrices");
  // The dtype and shape checks of accel_op_gemm() apply.
  g = gemm_2x2(&f);
  g.a_dtype = g.b_dtype = ACCEL_DTYPE_I32;
  EXPECT_INVALID(accel_op_gemm_strided_batched(f.s, &g, 2, 4, 4, 4), "i32");
  g = gemm_2x2(&f);
  g.c = f.other;
  EXPECT_INVALID(accel_op_gemm_strided_batched(f.s, &g, 2, 4, 4, 4), "cpu:1");
  EXPECT_INVALID(accel_op_gemm_strided_batched(f.s, NULL, 2, 4, 4, 4),
                 "gemm is NULL");
  // Nothing to do: accepted.
  g = gemm_2x2(&f);
  ASSERT_OK(accel_op_gemm_strided_batched(f.s, &g, 0, 4, 4, 0));
  g.m = 0;
  ASSERT_OK(accel_op_gemm_strided_batched(f.s, &g, 3, 4, 4, 0));
  // Members two rows apart of a single column with ldc 100 are disjoint;
  // with one member more, member 100 starts on member 0's second row.
  g = gemm_2x2(&f);
  g.n = 1, g.ldc = 100, g.ldb = 1;
  ASSERT_OK(accel_op_gemm_strided_batched(f.s, &g, 100, 0, 0, 1));
  EXPECT_INVALID(accel_op_gemm_strided_batched(f.s, &g, 101, 0, 0, 1),
                 "overlap");
  ASSERT_OK(accel_stream_synchronize(f.s));
  fixture_close(&f);
}

TEST(gemm_batched_results) {
  fixture_t f;
  fixture_open(&f);
  ASSERT_NOT_NULL(f.c);
  // Three A matrices [[i 0] [0 i]] (i = 1, 2, 3) times one shared B
  // [[1 2] [3 4]]; C matrices interleaved as the columns of a 2 x 6 matrix.
  const float a[12] = {1, 0, 0, 1, 2, 0, 0, 2, 3, 0, 0, 3};
  const float b[4] = {1, 2, 3, 4};
  ASSERT_OK(accel_buffer_write(f.a, 0, a, sizeof(a)));
  ASSERT_OK(accel_buffer_write(f.b, 0, b, sizeof(b)));
  ASSERT_OK(accel_buffer_fill(f.c, 0, 0, 4096));
  accel_gemm_t g = gemm_2x2(&f);
  g.ldc = 6;
  ASSERT_OK(accel_op_gemm_strided_batched(f.s, &g, 3, 4, 0, 2));
  ASSERT_OK(accel_stream_synchronize(f.s));
  float got[13];
  ASSERT_OK(accel_buffer_read(f.c, 0, got, sizeof(got)));
  const float want[13] = {1, 2, 2, 4, 3, 6, 3, 4, 6, 8, 9, 12, 0};
  ASSERT_MEM_EQ(got, want, sizeof(want));
  fixture_close(&f);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
