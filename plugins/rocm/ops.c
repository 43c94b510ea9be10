// SPDX-License-Identifier: MIT
//
// Built-in elementwise ops and the sum (plugin.h, ABI 1.1), activations and
// bias-add (ABI 1.4): each fills the by-value argument struct of
// kernels/ops_impl.h and launches one kernel of the device's built-in
// module (builtin.c) on the stream. The sum runs two
// kernels: per-block partial sums in f64 (i64 for i32) into the stream's
// scratch, then one thread adds them in block order, so the result does
// not depend on scheduling.
#include "accel_rocm.h"
#include "kernels/ops_impl.h"

_Static_assert(ACCEL_ROCM_F32 == ACCEL_DTYPE_F32 &&
                   ACCEL_ROCM_F16 == ACCEL_DTYPE_F16 &&
                   ACCEL_ROCM_BF16 == ACCEL_DTYPE_BF16 &&
                   ACCEL_ROCM_I32 == ACCEL_DTYPE_I32,
               "kernel dtype codes follow accel_dtype_t");

// Threads per block of the elementwise kernels, and the most blocks one
// launch uses (the kernels loop over the rest).
#define ACCEL_ROCM_OP_THREADS 256u
#define ACCEL_ROCM_OP_MAX_BLOCKS (1u << 20)

#define ACCEL_ROCM_AT(p, offset) ((unsigned char*)(p) + (offset))
#define ACCEL_ROCM_AT_CONST(p, offset) ((const unsigned char*)(p) + (offset))

accel_status_t accel_rocm_launch_builtin(accel_rocm_device_t* device,
                                         hipFunction_t function,
                                         const char* what, void* stream,
                                         const uint32_t grid[3],
                                         const uint32_t block[3], void* args) {
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  if (status != ACCEL_OK) return status;
  void* params[] = {args};  // the kernel's one struct parameter
  hipError_t err = device->rt->hipModuleLaunchKernel(
      function, grid[0], grid[1], grid[2], block[0], block[1], block[2], 0,
      accel_rocm_stream_handle(stream), params, NULL);
  accel_rocm_device_leave(device, saved);
  return err == hipSuccess ? ACCEL_OK
                           : accel_rocm_device_fail(device, err, what);
}

// Launches `which` of the elementwise kernels over `args->count` elements.
static accel_status_t accel_rocm_op_launch(void* device_ptr, void* stream,
                                           int which, const char* what,
                                           accel_rocm_op_args_t* args) {
  accel_rocm_device_t* device = device_ptr;
  const accel_rocm_builtin_t* b = NULL;
  accel_status_t status = accel_rocm_builtin_get(device, &b);
  if (status != ACCEL_OK) return status;
  hipFunction_t fn = which == 0 ? b->fill : which == 1 ? b->cast : b->ewise;
  uint64_t blocks =
      (args->count + ACCEL_ROCM_OP_THREADS - 1) / ACCEL_ROCM_OP_THREADS;
  if (blocks > ACCEL_ROCM_OP_MAX_BLOCKS) blocks = ACCEL_ROCM_OP_MAX_BLOCKS;
  uint32_t grid[3] = {(uint32_t)blocks, 1, 1};
  uint32_t block[3] = {ACCEL_ROCM_OP_THREADS, 1, 1};
  return accel_rocm_launch_builtin(device, fn, what, stream, grid, block, args);
}

accel_status_t accel_rocm_op_fill(void* device, void* stream, void* dst,
                                  uint64_t dst_offset, uint32_t dtype,
                                  uint64_t count, double value) {
  accel_rocm_op_args_t a = {.z = ACCEL_ROCM_AT(dst, dst_offset),
                            .count = count,
                            .value = value,
                            .dtype = dtype};
  return accel_rocm_op_launch(device, stream, 0, "fill", &a);
}

// One thread per Philox block of four elements (<accel/philox.h>); the
// bounds go in as f32, converted here as every plugin converts them.
accel_status_t accel_rocm_op_rng(void* device_ptr, void* stream, void* dst,
                                 uint64_t dst_offset, uint32_t dtype,
                                 uint64_t count, uint32_t distribution,
                                 uint64_t seed, uint64_t offset, double a,
                                 double b) {
  accel_rocm_device_t* device = device_ptr;
  const accel_rocm_builtin_t* bi = NULL;
  accel_status_t status = accel_rocm_builtin_get(device, &bi);
  if (status != ACCEL_OK) return status;
  accel_rocm_rng_args_t r = {.z = ACCEL_ROCM_AT(dst, dst_offset),
                             .count = count,
                             .seed = seed,
                             .offset = offset,
                             .distribution = distribution,
                             .dtype = dtype,
                             .a = (float)a,
                             .b = (float)b};
  uint64_t blocks = ((count + 3) / 4 + ACCEL_ROCM_OP_THREADS - 1) /
                    ACCEL_ROCM_OP_THREADS;
  if (blocks > ACCEL_ROCM_OP_MAX_BLOCKS) blocks = ACCEL_ROCM_OP_MAX_BLOCKS;
  uint32_t grid[3] = {(uint32_t)blocks, 1, 1};
  uint32_t block[3] = {ACCEL_ROCM_OP_THREADS, 1, 1};
  return accel_rocm_launch_builtin(device, bi->rng, "rng", stream, grid, block,
                                   &r);
}

accel_status_t accel_rocm_op_cast(void* device, void* stream, void* dst,
                                  uint64_t dst_offset, uint32_t dst_dtype,
                                  const void* src, uint64_t src_offset,
                                  uint32_t src_dtype, uint64_t count) {
  accel_rocm_op_args_t a = {.z = ACCEL_ROCM_AT(dst, dst_offset),
                            .x = ACCEL_ROCM_AT_CONST(src, src_offset),
                            .count = count,
                            .dtype = dst_dtype,
                            .src_dtype = src_dtype};
  return accel_rocm_op_launch(device, stream, 1, "cast", &a);
}

accel_status_t accel_rocm_op_scale(void* device, void* stream, void* x,
                                   uint64_t x_offset, uint32_t dtype,
                                   uint64_t count, double alpha) {
  accel_rocm_op_args_t a = {.z = ACCEL_ROCM_AT(x, x_offset),
                            .count = count,
                            .value = alpha,
                            .op = ACCEL_ROCM_OP_SCALE,
                            .dtype = dtype};
  return accel_rocm_op_launch(device, stream, 2, "scale", &a);
}

accel_status_t accel_rocm_op_axpy(void* device, void* stream, void* y,
                                  uint64_t y_offset, const void* x,
                                  uint64_t x_offset, uint32_t dtype,
                                  uint64_t count, double alpha) {
  accel_rocm_op_args_t a = {.z = ACCEL_ROCM_AT(y, y_offset),
                            .x = ACCEL_ROCM_AT_CONST(x, x_offset),
                            .count = count,
                            .value = alpha,
                            .op = ACCEL_ROCM_OP_AXPY,
                            .dtype = dtype};
  return accel_rocm_op_launch(device, stream, 2, "axpy", &a);
}

accel_status_t accel_rocm_op_add(void* device, void* stream, void* z,
                                 uint64_t z_offset, const void* x,
                                 uint64_t x_offset, const void* y,
                                 uint64_t y_offset, uint32_t dtype,
                                 uint64_t count) {
  accel_rocm_op_args_t a = {.z = ACCEL_ROCM_AT(z, z_offset),
                            .x = ACCEL_ROCM_AT_CONST(x, x_offset),
                            .y = ACCEL_ROCM_AT_CONST(y, y_offset),
                            .count = count,
                            .op = ACCEL_ROCM_OP_ADD,
                            .dtype = dtype};
  return accel_rocm_op_launch(device, stream, 2, "add", &a);
}

accel_status_t accel_rocm_op_mul(void* device, void* stream, void* z,
                                 uint64_t z_offset, const void* x,
                                 uint64_t x_offset, const void* y,
                                 uint64_t y_offset, uint32_t dtype,
                                 uint64_t count) {
  accel_rocm_op_args_t a = {.z = ACCEL_ROCM_AT(z, z_offset),
                            .x = ACCEL_ROCM_AT_CONST(x, x_offset),
                            .y = ACCEL_ROCM_AT_CONST(y, y_offset),
                            .count = count,
                            .op = ACCEL_ROCM_OP_MUL,
                            .dtype = dtype};
  return accel_rocm_op_launch(device, stream, 2, "mul", &a);
}

accel_status_t accel_rocm_op_sum(void* device_ptr, void* stream_ptr, void* out,
                                 uint64_t out_offset, const void* x,
                                 uint64_t x_offset, uint32_t dtype,
                                 uint64_t count) {
  accel_rocm_device_t* device = device_ptr;
  accel_rocm_stream_t* stream = stream_ptr;
  const accel_rocm_builtin_t* b = NULL;
  accel_status_t status = accel_rocm_builtin_get(device, &b);
  if (status != ACCEL_OK) return status;
  uint64_t blocks =
      (count + ACCEL_ROCM_SUM_THREADS - 1) / ACCEL_ROCM_SUM_THREADS;
  if (blocks > ACCEL_ROCM_SUM_BLOCKS) blocks = ACCEL_ROCM_SUM_BLOCKS;
  accel_rocm_op_args_t a = {.z = ACCEL_ROCM_AT(out, out_offset),
                            .x = ACCEL_ROCM_AT_CONST(x, x_offset),
                            .partial = stream->scratch,
                            .count = count,
                            .dtype = dtype,
                            .blocks = (uint32_t)blocks};
  uint32_t grid[3] = {(uint32_t)blocks, 1, 1};
  uint32_t block[3] = {ACCEL_ROCM_SUM_THREADS, 1, 1};
  status = accel_rocm_launch_builtin(device, b->sum_partial, "sum", stream,
                                     grid, block, &a);
  if (status != ACCEL_OK) return status;
  uint32_t one[3] = {1, 1, 1};
  return accel_rocm_launch_builtin(device, b->sum_final, "sum", stream, one,
                                   one, &a);
}

// ABI 1.4: the activations and the bias-add, one grid-stride kernel each.
static accel_status_t accel_rocm_nn_launch(accel_rocm_device_t* device,
                                           void* stream, bool bias,
                                           accel_rocm_nn_args_t* args) {
  const accel_rocm_builtin_t* b = NULL;
  accel_status_t status = accel_rocm_builtin_get(device, &b);
  if (status != ACCEL_OK) return status;
  uint64_t blocks =
      (args->count + ACCEL_ROCM_OP_THREADS - 1) / ACCEL_ROCM_OP_THREADS;
  if (blocks > ACCEL_ROCM_OP_MAX_BLOCKS) blocks = ACCEL_ROCM_OP_MAX_BLOCKS;
  uint32_t grid[3] = {(uint32_t)blocks, 1, 1};
  uint32_t block[3] = {ACCEL_ROCM_OP_THREADS, 1, 1};
  return accel_rocm_launch_builtin(device, bias ? b->bias_add : b->unary,
                                   bias ? "bias_add" : "activation", stream,
                                   grid, block, args);
}

accel_status_t accel_rocm_op_unary(void* device, void* stream, void* dst,
                                   uint64_t dst_offset, const void* src,
                                   uint64_t src_offset, uint32_t dtype,
                                   uint64_t count, uint32_t op) {
  accel_rocm_nn_args_t a = {.z = ACCEL_ROCM_AT(dst, dst_offset),
                            .x = ACCEL_ROCM_AT_CONST(src, src_offset),
                            .count = count,
                            .dtype = dtype,
                            .op = op};
  return accel_rocm_nn_launch(device, stream, false, &a);
}

accel_status_t accel_rocm_op_bias_add(void* device, void* stream, void* y,
                                      uint64_t y_offset, const void* bias,
                                      uint64_t bias_offset, uint32_t dtype,
                                      uint64_t rows, uint64_t cols) {
  accel_rocm_nn_args_t a = {.z = ACCEL_ROCM_AT(y, y_offset),
                            .x = ACCEL_ROCM_AT_CONST(bias, bias_offset),
                            .count = rows * cols,
                            .cols = cols,
                            .dtype = dtype};
  return accel_rocm_nn_launch(device, stream, true, &a);
}
