// SPDX-License-Identifier: MIT
//
// The core's validation of built-in ops: NULLs, unknown and unsupported
// dtypes, overflowing counts, out-of-range and misaligned offsets,
// overlapping operands, buffers on another device, and GEMM shapes,
// leading dimensions, dtype combinations and undersized buffers. Each
// rejection is INVALID_ARGUMENT with a message naming the operand and the
// numbers, and nothing is enqueued. Runs with ACCEL_CPU_DEVICES=2.
#include <stdio.h>
#include <stdlib.h>

#include "kernels_test.h"
#include "test.h"

#define INVALID ACCEL_ERROR_INVALID_ARGUMENT

typedef struct env {
  accel_device_t* d0;
  accel_device_t* d1;
  accel_stream_t* s0;
  accel_buffer_t* a;      // 4000 bytes on cpu:0
  accel_buffer_t* b;      // 4096 bytes on cpu:0
  accel_buffer_t* other;  // 4096 bytes on cpu:1
} env_t;

static accel_status_t env_open(env_t* e) {
  accel_status_t s = accel_device_open("cpu:0", &e->d0);
  if (s == ACCEL_OK) s = accel_device_open("cpu:1", &e->d1);
  if (s == ACCEL_OK) s = accel_stream_create(e->d0, 0, &e->s0);
  if (s == ACCEL_OK) s = accel_buffer_create(e->d0, 4000, &e->a);
  if (s == ACCEL_OK) s = accel_buffer_create(e->d0, 4096, &e->b);
  if (s == ACCEL_OK) s = accel_buffer_create(e->d1, 4096, &e->other);
  return s;
}

static void env_close(env_t* e) {
  accel_buffer_release(e->a);
  accel_buffer_release(e->b);
  accel_buffer_release(e->other);
  accel_stream_release(e->s0);
  accel_device_release(e->d0);
  accel_device_release(e->d1);
}

TEST(dtype_helpers) {
  ASSERT_EQ(accel_dtype_size(ACCEL_DTYPE_F32), 4);
  ASSERT_EQ(accel_dtype_size(ACCEL_DTYPE_F16), 2);
  ASSERT_EQ(accel_dtype_size(ACCEL_DTYPE_BF16), 2);
  ASSERT_EQ(accel_dtype_size(ACCEL_DTYPE_I32), 4);
  ASSERT_EQ(accel_dtype_size((accel_dtype_t)4), 0);
  ASSERT_EQ(accel_dtype_size((accel_dtype_t)-1), 0);
  ASSERT_STR_EQ(accel_dtype_name(ACCEL_DTYPE_BF16), "bf16");
  ASSERT_STR_EQ(accel_dtype_name(ACCEL_DTYPE_I32), "i32");
  ASSERT_NULL(accel_dtype_name((accel_dtype_t)17));
  accel_gemm_init(NULL);
  accel_gemm_t g;
  memset(&g, 0xff, sizeof(g));
  accel_gemm_init(&g);
  ASSERT_EQ(g.struct_size, sizeof(g));
  ASSERT_EQ(g.a_dtype, ACCEL_DTYPE_F32);
  ASSERT_EQ(g.c_dtype, ACCEL_DTYPE_F32);
  ASSERT(g.alpha == 1.0 && g.beta == 0.0);
  ASSERT(!g.trans_a && !g.trans_b);
  ASSERT_EQ(g.lda, 0);
  ASSERT_NULL(g.a);
}

TEST(op_nulls_and_dtypes) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  ASSERT_STATUS(accel_op_fill(NULL, e.a, 0, ACCEL_DTYPE_F32, 4, 1.0), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "stream is NULL");
  ASSERT_STATUS(accel_op_fill(e.s0, NULL, 0, ACCEL_DTYPE_F32, 4, 1.0), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "dst buffer is NULL");
  ASSERT_STATUS(accel_op_fill(e.s0, e.a, 0, (accel_dtype_t)9, 4, 1.0), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "dtype 9");
  ASSERT_STATUS(accel_op_scale(e.s0, e.a, 0, ACCEL_DTYPE_I32, 4, 2.0), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "i32");
  ASSERT_STATUS(accel_op_axpy(e.s0, e.a, 0, e.b, 0, ACCEL_DTYPE_I32, 4, 2.0),
                INVALID);
  ASSERT_STATUS(accel_op_cast(e.s0, e.a, 0, ACCEL_DTYPE_F32, e.b, 0,
                              (accel_dtype_t)-3, 4),
                INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "src_dtype");
  ASSERT_STATUS(accel_op_add(e.s0, e.a, 0, NULL, 0, e.b, 0, ACCEL_DTYPE_F32, 1),
                INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "x buffer is NULL");
  ASSERT_STATUS(accel_op_mul(e.s0, e.a, 0, e.b, 0, NULL, 0, ACCEL_DTYPE_F32, 1),
                INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "y buffer is NULL");
  ASSERT_STATUS(accel_op_sum(e.s0, NULL, 0, e.b, 0, ACCEL_DTYPE_F32, 1),
                INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "out buffer is NULL");
  // NULLs are rejected even when there is nothing to do.
  ASSERT_STATUS(accel_op_fill(e.s0, NULL, 0, ACCEL_DTYPE_F32, 0, 1.0), INVALID);
  ASSERT_STATUS(accel_op_fill(NULL, e.a, 0, ACCEL_DTYPE_F32, 0, 1.0), INVALID);
  env_close(&e);
}

TEST(op_bounds) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  // 1000 f32 fill exactly 4000 bytes; one more does not fit.
  ASSERT_OK(accel_op_fill(e.s0, e.a, 0, ACCEL_DTYPE_F32, 1000, 1.0));
  ASSERT_STATUS(accel_op_fill(e.s0, e.a, 0, ACCEL_DTYPE_F32, 1001, 1.0),
                INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "dst range [0, 0 + 4004)");
  ASSERT_STR_CONTAINS(accel_last_error(), "4000-byte buffer");
  ASSERT_STATUS(accel_op_fill(e.s0, e.a, 3996, ACCEL_DTYPE_F32, 2, 1.0),
                INVALID);
  ASSERT_STATUS(accel_op_fill(e.s0, e.a, 8000, ACCEL_DTYPE_F16, 1, 1.0),
                INVALID);
  // count * size overflows.
  ASSERT_STATUS(accel_op_fill(e.s0, e.a, 0, ACCEL_DTYPE_F32, SIZE_MAX / 2, 1.0),
                INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "overflows");
  // Offsets are whole elements.
  ASSERT_STATUS(accel_op_fill(e.s0, e.a, 2, ACCEL_DTYPE_F32, 1, 1.0), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "offset 2 is not a multiple");
  ASSERT_OK(accel_op_fill(e.s0, e.a, 2, ACCEL_DTYPE_F16, 1, 1.0));
  // The source of a cast is checked with its own dtype: 1000 f16 read
  // 2000 bytes, which fit, into 4000 bytes of f32, which fit; 1001 do not.
  ASSERT_OK(accel_op_cast(e.s0, e.b, 0, ACCEL_DTYPE_F32, e.a, 0,
                          ACCEL_DTYPE_F16, 1000));
  ASSERT_STATUS(accel_op_cast(e.s0, e.a, 0, ACCEL_DTYPE_F32, e.b, 0,
                              ACCEL_DTYPE_F16, 1001),
                INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "dst range");
  ASSERT_STATUS(accel_op_sum(e.s0, e.a, 4000, e.b, 0, ACCEL_DTYPE_F32, 4),
                INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "out range");
  ASSERT_STATUS(accel_op_axpy(e.s0, e.b, 0, e.a, 4, ACCEL_DTYPE_F32, 1000, 1),
                INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "x range [4, 4 + 4000)");
  // Count 0 is valid anywhere within (or at the end of) the buffer.
  ASSERT_OK(accel_op_fill(e.s0, e.a, 4000, ACCEL_DTYPE_F32, 0, 1.0));
  ASSERT_OK(accel_op_add(e.s0, e.a, 0, e.b, 0, e.b, 0, ACCEL_DTYPE_I32, 0));
  ASSERT_OK(accel_stream_synchronize(e.s0));
  env_close(&e);
}

TEST(op_overlap) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  // Identical ranges are in place; shifted ones are rejected.
  ASSERT_OK(accel_op_add(e.s0, e.b, 0, e.b, 0, e.b, 0, ACCEL_DTYPE_F32, 16));
  ASSERT_STATUS(accel_op_add(e.s0, e.b, 0, e.b, 4, e.b, 0, ACCEL_DTYPE_F32, 16),
                INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "partially overlaps");
  ASSERT_STATUS(
      accel_op_cast(e.s0, e.b, 0, ACCEL_DTYPE_F32, e.b, 0, ACCEL_DTYPE_F16, 16),
      INVALID);
  ASSERT_OK(accel_op_cast(e.s0, e.b, 0, ACCEL_DTYPE_I32, e.b, 0,
                          ACCEL_DTYPE_F32, 16));
  ASSERT_STATUS(accel_op_sum(e.s0, e.b, 8, e.b, 0, ACCEL_DTYPE_F32, 16),
                INVALID);
  ASSERT_OK(accel_op_sum(e.s0, e.b, 64, e.b, 0, ACCEL_DTYPE_F32, 16));
  ASSERT_OK(accel_stream_synchronize(e.s0));
  env_close(&e);
}

TEST(op_cross_device) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  ASSERT_STATUS(accel_op_fill(e.s0, e.other, 0, ACCEL_DTYPE_F32, 4, 1.0),
                INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "dst buffer is on cpu:1");
  ASSERT_STR_CONTAINS(accel_last_error(), "stream is on cpu:0");
  ASSERT_STATUS(
      accel_op_add(e.s0, e.a, 0, e.b, 0, e.other, 0, ACCEL_DTYPE_F32, 4),
      INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "y buffer is on cpu:1");
  ASSERT_STATUS(accel_op_sum(e.s0, e.a, 0, e.other, 0, ACCEL_DTYPE_F32, 0),
                INVALID);
  env_close(&e);
}

// A valid 16 x 16 f32 GEMM on `e`'s cpu:0 buffers (A, B in `b`, C in `a`).
static void gemm_valid(env_t* e, accel_gemm_t* g) {
  accel_gemm_init(g);
  g->m = g->n = g->k = 16;  // 1024 bytes per packed matrix
  g->a = e->b;
  g->b = e->b;
  g->b_offset = 1024;
  g->c = e->a;
}

TEST(gemm_rejections) {
  env_t e = {0};
  ASSERT_OK(env_open(&e));
  accel_gemm_t g;
  gemm_valid(&e, &g);
  ASSERT_OK(accel_op_gemm(e.s0, &g));
  ASSERT_STATUS(accel_op_gemm(NULL, &g), INVALID);
  ASSERT_STATUS(accel_op_gemm(e.s0, NULL), INVALID);

  gemm_valid(&e, &g);
  g.struct_size = 8;
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "accel_gemm_init");

  // Dtype combinations.
  gemm_valid(&e, &g);
  g.b_dtype = ACCEL_DTYPE_F16;
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "a_dtype is f32 but b_dtype is f16");
  gemm_valid(&e, &g);
  g.a_dtype = g.b_dtype = ACCEL_DTYPE_F16;
  g.c_dtype = ACCEL_DTYPE_BF16;
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "c_dtype bf16 with f16 inputs");
  gemm_valid(&e, &g);
  g.c_dtype = ACCEL_DTYPE_F16;  // f32 inputs, f16 output: not offered
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);
  gemm_valid(&e, &g);
  g.a_dtype = g.b_dtype = g.c_dtype = ACCEL_DTYPE_I32;
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "i32");
  gemm_valid(&e, &g);
  g.c_dtype = (accel_dtype_t)12;
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);
  gemm_valid(&e, &g);
  g.flags = 0x80;
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "flags 0x80");

  // Leading dimensions below the stored columns.
  gemm_valid(&e, &g);
  g.lda = 15;
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "lda is 15 but A has 16 columns");
  gemm_valid(&e, &g);
  g.m = 4;
  g.trans_a = true;  // A stored k x m = 16 x 4: lda 4 is enough
  g.lda = 4;
  ASSERT_OK(accel_op_gemm(e.s0, &g));
  g.lda = 3;
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);
  gemm_valid(&e, &g);
  g.ldc = 8;
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "ldc is 8 but C has 16 columns");

  // Buffers too small for the stated shape: C = 32 x 32 f32 needs 4096
  // bytes; `a` has 4000.
  gemm_valid(&e, &g);
  g.m = g.n = 32;
  g.k = 8;
  g.a_offset = 0;
  g.b_offset = 2048;
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(),
                      "C (32 x 32 f32, ld 32) needs 4096 bytes from offset 0 "
                      "but the buffer has 4000");
  gemm_valid(&e, &g);
  g.ldb = 100;  // B: 15 * 100 + 16 elements = 6064 bytes from offset 1024
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "B (16 x 16 f32, ld 100) needs 6064");
  ASSERT_STR_CONTAINS(accel_last_error(), "the buffer has 3072");
  gemm_valid(&e, &g);
  g.a_offset = 8192;
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "the buffer has 0");
  gemm_valid(&e, &g);
  g.a_offset = 6;
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "A offset 6 is not a multiple");
  // Overflowing extents.
  gemm_valid(&e, &g);
  g.m = SIZE_MAX / 2;
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "overflows");
  gemm_valid(&e, &g);
  g.lda = SIZE_MAX / 4;
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);

  // C overlapping A or B.
  gemm_valid(&e, &g);
  g.c = e.b;
  g.c_offset = 512;
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "C [512, 1536) overlaps A [0, 1024)");
  g.c_offset = 2048;  // after A and B
  ASSERT_OK(accel_op_gemm(e.s0, &g));

  // NULL and cross-device operands.
  gemm_valid(&e, &g);
  g.b = NULL;
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "B buffer is NULL");
  gemm_valid(&e, &g);
  g.c = e.other;
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);
  ASSERT_STR_CONTAINS(accel_last_error(), "C buffer is on cpu:1");

  // m or n 0: nothing to do, but the operands are still checked.
  gemm_valid(&e, &g);
  g.m = 0;
  ASSERT_OK(accel_op_gemm(e.s0, &g));
  g.a = NULL;
  ASSERT_STATUS(accel_op_gemm(e.s0, &g), INVALID);
  ASSERT_OK(accel_stream_synchronize(e.s0));
  env_close(&e);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
