// SPDX-License-Identifier: MIT
//
// Enqueue side of the built-in elementwise ops and the sum (plugin.h, ABI
// 1.1), and of the activations and bias-add (ABI 1.4). The core has
// validated dtypes, counts and bounds; each entry turns its arguments into
// an accel_cpu_op_t stored in a CALL task and queues it on the stream. The
// loops themselves are in kernels.c.
//
// The pool is looked up (and created, at the first op) here rather than on
// the worker, so a malformed ACCEL_CPU_THREADS fails the call that
// enqueues the first op, synchronously and with a message, instead of
// surfacing later as a stream error.
#include <stdio.h>
#include <string.h>

#include "cpu.h"

static accel_status_t accel_cpu_op_call(accel_cpu_device_t* device, void* arg,
                                        char* message, size_t message_size) {
  accel_cpu_pool_t* pool = atomic_load(&device->plugin->pool);
  return accel_cpu_op_execute(pool, arg, message, message_size);
}

static const char* accel_cpu_op_name(accel_cpu_op_kind_t kind) {
  static const char* const names[] = {"fill", "cast",       "scale",
                                      "axpy", "add",        "mul",
                                      "sum",  "activation", "bias_add"};
  return (unsigned)kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "op";
}

// Queues `op` on `stream` of `device`.
static accel_status_t accel_cpu_op_submit(void* device_ptr, void* stream,
                                          const accel_cpu_op_t* op) {
  accel_cpu_device_t* device = device_ptr;
  const accel_host_t* host = device->host;
  if (accel_plugin_dtype_size(op->dtype) == 0 ||
      (op->kind == ACCEL_CPU_OP_CAST &&
       accel_plugin_dtype_size(op->src_dtype) == 0)) {
    // The core checks dtypes; this guards a core older than the plugin.
    return host->fail(host, ACCEL_ERROR_UNSUPPORTED,
                      "cpu:%u: %s: unknown dtype %u", device->index,
                      accel_cpu_op_name(op->kind), (unsigned)op->dtype);
  }
  accel_cpu_pool_t* pool = NULL;
  accel_status_t status = accel_cpu_pool_get(device->plugin, &pool);
  if (status != ACCEL_OK) return status;
  // GELU and SiLU cost an erfc or exp per element, 10-20 times an add, so
  // they run inline only up to a proportionally smaller count.
  uint64_t inline_max =
      op->kind == ACCEL_CPU_OP_UNARY && op->unary != ACCEL_PLUGIN_UNARY_RELU
          ? ACCEL_CPU_INLINE_ELEMENTS / 16
          : ACCEL_CPU_INLINE_ELEMENTS;
  if (op->count <= inline_max && accel_cpu_stream_inline_begin(stream, false)) {
    // Small: run it here (see stream.c); a failure is the stream's error.
    char reason[ACCEL_CPU_MESSAGE_SIZE] = "queued work failed";
    status = accel_cpu_op_execute(pool, op, reason, sizeof(reason));
    accel_cpu_stream_inline_end(stream, false, status, reason);
    return ACCEL_OK;
  }
  accel_cpu_task_t* task =
      accel_cpu_task_create_call(accel_cpu_op_call, sizeof(*op));
  if (task == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      "cpu:%u: cannot queue %s", device->index,
                      accel_cpu_op_name(op->kind));
  }
  memcpy(task->u.call.arg, op, sizeof(*op));
  accel_cpu_stream_submit(stream, task);
  return ACCEL_OK;
}

#define ACCEL_CPU_AT(p, offset) ((unsigned char*)(p) + (offset))
#define ACCEL_CPU_AT_CONST(p, offset) ((const unsigned char*)(p) + (offset))

accel_status_t accel_cpu_op_fill(void* device, void* stream, void* dst,
                                 uint64_t dst_offset, uint32_t dtype,
                                 uint64_t count, double value) {
  accel_cpu_op_t op = {.kind = ACCEL_CPU_OP_FILL,
                       .dtype = dtype,
                       .count = count,
                       .z = ACCEL_CPU_AT(dst, dst_offset),
                       .value = value};
  return accel_cpu_op_submit(device, stream, &op);
}

accel_status_t accel_cpu_op_cast(void* device, void* stream, void* dst,
                                 uint64_t dst_offset, uint32_t dst_dtype,
                                 const void* src, uint64_t src_offset,
                                 uint32_t src_dtype, uint64_t count) {
  accel_cpu_op_t op = {.kind = ACCEL_CPU_OP_CAST,
                       .dtype = dst_dtype,
                       .src_dtype = src_dtype,
                       .count = count,
                       .z = ACCEL_CPU_AT(dst, dst_offset),
                       .x = ACCEL_CPU_AT_CONST(src, src_offset)};
  return accel_cpu_op_submit(device, stream, &op);
}

accel_status_t accel_cpu_op_scale(void* device, void* stream, void* x,
                                  uint64_t x_offset, uint32_t dtype,
                                  uint64_t count, double alpha) {
  accel_cpu_op_t op = {.kind = ACCEL_CPU_OP_SCALE,
                       .dtype = dtype,
                       .count = count,
                       .z = ACCEL_CPU_AT(x, x_offset),
                       .value = alpha};
  return accel_cpu_op_submit(device, stream, &op);
}

accel_status_t accel_cpu_op_axpy(void* device, void* stream, void* y,
                                 uint64_t y_offset, const void* x,
                                 uint64_t x_offset, uint32_t dtype,
                                 uint64_t count, double alpha) {
  accel_cpu_op_t op = {.kind = ACCEL_CPU_OP_AXPY,
                       .dtype = dtype,
                       .count = count,
                       .z = ACCEL_CPU_AT(y, y_offset),
                       .x = ACCEL_CPU_AT_CONST(x, x_offset),
                       .value = alpha};
  return accel_cpu_op_submit(device, stream, &op);
}

accel_status_t accel_cpu_op_add(void* device, void* stream, void* z,
                                uint64_t z_offset, const void* x,
                                uint64_t x_offset, const void* y,
                                uint64_t y_offset, uint32_t dtype,
                                uint64_t count) {
  accel_cpu_op_t op = {.kind = ACCEL_CPU_OP_ADD,
                       .dtype = dtype,
                       .count = count,
                       .z = ACCEL_CPU_AT(z, z_offset),
                       .x = ACCEL_CPU_AT_CONST(x, x_offset),
                       .y = ACCEL_CPU_AT_CONST(y, y_offset)};
  return accel_cpu_op_submit(device, stream, &op);
}

accel_status_t accel_cpu_op_mul(void* device, void* stream, void* z,
                                uint64_t z_offset, const void* x,
                                uint64_t x_offset, const void* y,
                                uint64_t y_offset, uint32_t dtype,
                                uint64_t count) {
  accel_cpu_op_t op = {.kind = ACCEL_CPU_OP_MUL,
                       .dtype = dtype,
                       .count = count,
                       .z = ACCEL_CPU_AT(z, z_offset),
                       .x = ACCEL_CPU_AT_CONST(x, x_offset),
                       .y = ACCEL_CPU_AT_CONST(y, y_offset)};
  return accel_cpu_op_submit(device, stream, &op);
}

accel_status_t accel_cpu_op_sum(void* device, void* stream, void* out,
                                uint64_t out_offset, const void* x,
                                uint64_t x_offset, uint32_t dtype,
                                uint64_t count) {
  accel_cpu_op_t op = {.kind = ACCEL_CPU_OP_SUM,
                       .dtype = dtype,
                       .count = count,
                       .z = ACCEL_CPU_AT(out, out_offset),
                       .x = ACCEL_CPU_AT_CONST(x, x_offset)};
  return accel_cpu_op_submit(device, stream, &op);
}

// ABI 1.4: the core passes float dtypes and known activations only; the
// kernels treat anything else as ReLU, so guard a core older than the
// plugin here.
accel_status_t accel_cpu_op_unary(void* device_ptr, void* stream, void* dst,
                                  uint64_t dst_offset, const void* src,
                                  uint64_t src_offset, uint32_t dtype,
                                  uint64_t count, uint32_t op_code) {
  accel_cpu_device_t* device = device_ptr;
  if (dtype == ACCEL_DTYPE_I32 || op_code > ACCEL_PLUGIN_UNARY_SILU) {
    return device->host->fail(device->host, ACCEL_ERROR_UNSUPPORTED,
                              "cpu:%u: activation %u on dtype %u",
                              device->index, (unsigned)op_code,
                              (unsigned)dtype);
  }
  accel_cpu_op_t op = {.kind = ACCEL_CPU_OP_UNARY,
                       .dtype = dtype,
                       .count = count,
                       .z = ACCEL_CPU_AT(dst, dst_offset),
                       .x = ACCEL_CPU_AT_CONST(src, src_offset),
                       .unary = op_code};
  return accel_cpu_op_submit(device, stream, &op);
}

accel_status_t accel_cpu_op_bias_add(void* device, void* stream, void* y,
                                     uint64_t y_offset, const void* bias,
                                     uint64_t bias_offset, uint32_t dtype,
                                     uint64_t rows, uint64_t cols) {
  accel_cpu_op_t op = {.kind = ACCEL_CPU_OP_BIAS_ADD,
                       .dtype = dtype,
                       .count = rows * cols,
                       .z = ACCEL_CPU_AT(y, y_offset),
                       .x = ACCEL_CPU_AT_CONST(bias, bias_offset),
                       .cols = cols};
  return accel_cpu_op_submit(device, stream, &op);
}
