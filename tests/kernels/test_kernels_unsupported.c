// SPDX-License-Identifier: MIT
//
// A backend that implements no built-in op and loads no modules (the
// loader fixture "fxgood"): every op is ACCEL_ERROR_UNSUPPORTED with a
// message naming the call and the device, after the core's own checks
// (which still reject bad arguments first), and module loading is
// UNSUPPORTED too.
#include <stdio.h>
#include <stdlib.h>

#include "kernels_test.h"
#include "loader/loader_util.h"
#include "test.h"

TEST(ops_unsupported_name_the_device) {
  const char* good = lu_env_path("ACCEL_TEST_FX_GOOD");
  ASSERT_NOT_NULL(good);
  lu_restart(good);
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("fxgood:0", &device));
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &stream));
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(device, 4096, &b));
  const accel_status_t unsupported = ACCEL_ERROR_UNSUPPORTED;
  ASSERT_STATUS(accel_op_fill(stream, b, 0, ACCEL_DTYPE_F32, 4, 1.0),
                unsupported);
  ASSERT_STR_CONTAINS(accel_last_error(), "accel_op_fill: fxgood:0");
  ASSERT_STR_CONTAINS(accel_last_error(), "fill");
  ASSERT_STATUS(
      accel_op_cast(stream, b, 0, ACCEL_DTYPE_F32, b, 1024, ACCEL_DTYPE_I32, 4),
      unsupported);
  ASSERT_STATUS(accel_op_scale(stream, b, 0, ACCEL_DTYPE_F32, 4, 1.0),
                unsupported);
  ASSERT_STATUS(accel_op_axpy(stream, b, 0, b, 64, ACCEL_DTYPE_F32, 4, 1.0),
                unsupported);
  ASSERT_STATUS(accel_op_add(stream, b, 0, b, 64, b, 128, ACCEL_DTYPE_F32, 4),
                unsupported);
  ASSERT_STATUS(accel_op_mul(stream, b, 0, b, 64, b, 128, ACCEL_DTYPE_F32, 4),
                unsupported);
  ASSERT_STATUS(accel_op_sum(stream, b, 0, b, 64, ACCEL_DTYPE_F32, 4),
                unsupported);
  ASSERT_STR_CONTAINS(accel_last_error(), "accel_op_sum: fxgood:0");
  accel_gemm_t g;
  accel_gemm_init(&g);
  g.m = g.n = g.k = 4;
  g.a = g.b = g.c = b;
  g.b_offset = 64;
  g.c_offset = 128;
  ASSERT_STATUS(accel_op_gemm(stream, &g), unsupported);
  ASSERT_STR_CONTAINS(accel_last_error(), "accel_op_gemm: fxgood:0");
  ASSERT_STR_CONTAINS(accel_last_error(), "gemm");
  // The core's checks come first.
  ASSERT_STATUS(accel_op_fill(stream, b, 0, ACCEL_DTYPE_F32, 4096, 1.0),
                ACCEL_ERROR_INVALID_ARGUMENT);
  // Nothing to do succeeds even here; the sum of nothing is a memset.
  ASSERT_OK(accel_op_fill(stream, b, 0, ACCEL_DTYPE_F32, 0, 1.0));
  ASSERT_OK(accel_op_sum(stream, b, 0, b, 64, ACCEL_DTYPE_F32, 0));
  ASSERT_OK(accel_stream_synchronize(stream));

  accel_device_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  ASSERT_OK(accel_device_query_info(device, &info));
  ASSERT_STR_EQ(info.module_target, "");
  ASSERT_EQ(info.caps & ACCEL_DEVICE_CAP_KERNELS, 0);
  accel_module_t* module = NULL;
  ASSERT_STATUS(accel_module_create(device, "\177ELF", 4, &module),
                unsupported);
  ASSERT_STR_CONTAINS(accel_last_error(), "fxgood:0 does not run custom");
  ASSERT_NULL(module);

  accel_buffer_release(b);
  accel_stream_release(stream);
  accel_device_release(device);
  accel_shutdown();
}

// accel_device_query_info() fills a caller's older, smaller struct (built
// before `module_target` was appended) without writing past it.
TEST(device_info_old_size) {
  lu_restart("");
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &device));
  size_t old = offsetof(accel_device_info_t, module_target);
  unsigned char* raw = malloc(old);  // exactly the old size, for ASan
  ASSERT_NOT_NULL(raw);
  accel_device_info_t head;
  memset(&head, 0, sizeof(head));
  head.struct_size = (uint32_t)old;
  memcpy(raw, &head, old);
  ASSERT_OK(accel_device_query_info(device, (accel_device_info_t*)raw));
  memcpy(&head, raw, old);
  ASSERT_EQ(head.struct_size, old);
  ASSERT_STR_EQ(head.uri, "cpu:0");
  free(raw);
  head.struct_size = (uint32_t)old - 1;
  ASSERT_STATUS(accel_device_query_info(device, &head),
                ACCEL_ERROR_INVALID_ARGUMENT);
  accel_device_release(device);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
