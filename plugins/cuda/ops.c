// SPDX-License-Identifier: MIT
//
// Built-in ops (plugin.h, ABI 1.1) as CUDA kernels. The kernels live in
// kernels/ops.cu, compiled at build time into one fatbin (SASS for every
// supported SM plus PTX for the newest, see CMakeLists.txt) that is
// embedded in the plugin and loaded into a device's primary context at its
// first op. The numerics (rounding, saturation, accumulation) are
// described there.
#include <accel/plugin_dtype.h>
#include <stdio.h>

#include "accel_cuda.h"

// Threads per block for every ops kernel (the sums rely on exactly this).
#define ACCEL_CUDA_OPS_THREADS 256u

// Blocks of a grid-stride launch: enough to fill the device several times
// over; beyond that each thread loops.
#define ACCEL_CUDA_OPS_MAX_BLOCKS 4096u

// Blocks of the first pass of a sum, and so partials in the scratch.
#define ACCEL_CUDA_SUM_BLOCKS 1024u

// Kernel names, in accel_cuda_kernel_t order (dtype order f32 f16 bf16
// i32, as accel_dtype_t).
static const char* const accel_cuda_kernel_names[ACCEL_CUDA_KERNEL_COUNT] = {
    "accel_cuda_fill_f32",         "accel_cuda_fill_f16",
    "accel_cuda_fill_bf16",        "accel_cuda_fill_i32",
#define ACCEL_CUDA_CAST_NAMES(D)                            \
  "accel_cuda_cast_" D "_f32", "accel_cuda_cast_" D "_f16", \
      "accel_cuda_cast_" D "_bf16", "accel_cuda_cast_" D "_i32"
    ACCEL_CUDA_CAST_NAMES("f32"),  ACCEL_CUDA_CAST_NAMES("f16"),
    ACCEL_CUDA_CAST_NAMES("bf16"), ACCEL_CUDA_CAST_NAMES("i32"),
#undef ACCEL_CUDA_CAST_NAMES
    "accel_cuda_scale_f32",        "accel_cuda_scale_f16",
    "accel_cuda_scale_bf16",       "accel_cuda_axpy_f32",
    "accel_cuda_axpy_f16",         "accel_cuda_axpy_bf16",
    "accel_cuda_add_f32",          "accel_cuda_add_f16",
    "accel_cuda_add_bf16",         "accel_cuda_add_i32",
    "accel_cuda_mul_f32",          "accel_cuda_mul_f16",
    "accel_cuda_mul_bf16",         "accel_cuda_mul_i32",
    "accel_cuda_sum_partial_f32",  "accel_cuda_sum_partial_f16",
    "accel_cuda_sum_partial_bf16", "accel_cuda_sum_partial_i32",
    "accel_cuda_sum_final_f32",    "accel_cuda_sum_final_f16",
    "accel_cuda_sum_final_bf16",   "accel_cuda_sum_final_i32",
    "accel_cuda_gemm_scale_f32",   "accel_cuda_gemm_scale_f16",
    "accel_cuda_gemm_scale_bf16",  "accel_cuda_rng",
    "accel_cuda_unary_f32",        "accel_cuda_unary_f16",
    "accel_cuda_unary_bf16",       "accel_cuda_bias_add_f32",
    "accel_cuda_bias_add_f16",     "accel_cuda_bias_add_bf16",
    "accel_cuda_bias_add_i32",
};

_Static_assert(ACCEL_CUDA_K_END == ACCEL_CUDA_KERNEL_COUNT,
               "kernel table and accel_cuda_kernel_t disagree");

// Loads the ops module into `device` unless done. Caller pushed the
// context. A failure is kept and returned again by later calls.
static accel_status_t accel_cuda_ops_load(accel_cuda_device_t* device) {
  if (atomic_load(&device->ops_ready)) return ACCEL_OK;
  const accel_host_t* host = device->host;
  bool attempted = false;
  pthread_mutex_lock(&device->mutex);
  if (!device->ops_tried) {
    device->ops_tried = attempted = true;
    accel_status_t status = accel_cuda_module_load_image(
        device, accel_cuda_ops_fatbin, "built-in ops", &device->ops_module);
    for (int i = 0; status == ACCEL_OK && i < ACCEL_CUDA_KERNEL_COUNT; i++) {
      CUresult r = device->cu->cuModuleGetFunction(&device->ops_kernels[i],
                                                   device->ops_module,
                                                   accel_cuda_kernel_names[i]);
      if (r != CUDA_SUCCESS) {
        status = accel_cuda_fail(host, device->cu, r, device->prefix,
                                 accel_cuda_kernel_names[i]);
      }
    }
    device->ops_status = status;
    if (status == ACCEL_OK) atomic_store(&device->ops_ready, true);
  }
  accel_status_t status = device->ops_status;
  pthread_mutex_unlock(&device->mutex);
  if (status != ACCEL_OK && !attempted) {
    // The attempt that failed recorded the driver's reason; later calls
    // repeat the outcome without loading again.
    return host->fail(host, status,
                      "%s: the built-in ops module (%zu-byte fatbin) could "
                      "not be loaded for %s (see the first op's error)",
                      device->prefix, accel_cuda_ops_fatbin_size, device->arch);
  }
  return status;
}

void accel_cuda_ops_unload(accel_cuda_device_t* device) {
  if (device->ops_module != NULL) {
    (void)device->cu->cuModuleUnload(device->ops_module);
    device->ops_module = NULL;
  }
}

accel_status_t accel_cuda_ops_launch(accel_cuda_stream_t* stream,
                                     accel_cuda_kernel_t kernel, uint64_t count,
                                     void** params, const char* what) {
  accel_cuda_device_t* device = stream->device;
  accel_status_t status = accel_cuda_context_push(device, what);
  if (status != ACCEL_OK) return status;
  status = accel_cuda_ops_load(device);
  if (status == ACCEL_OK) {
    uint64_t blocks =
        (count + ACCEL_CUDA_OPS_THREADS - 1) / ACCEL_CUDA_OPS_THREADS;
    if (blocks > ACCEL_CUDA_OPS_MAX_BLOCKS) blocks = ACCEL_CUDA_OPS_MAX_BLOCKS;
    if (blocks == 0) blocks = 1;
    CUresult r = device->cu->cuLaunchKernel(
        device->ops_kernels[kernel], (unsigned)blocks, 1, 1,
        ACCEL_CUDA_OPS_THREADS, 1, 1, 0, stream->stream, params, NULL);
    if (r != CUDA_SUCCESS) {
      status = accel_cuda_fail(device->host, device->cu, r, device->prefix,
                               accel_cuda_kernel_names[kernel]);
    }
  }
  accel_cuda_context_pop(device);
  return status;
}

accel_status_t accel_cuda_op_fill(void* device, void* stream, void* dst,
                                  uint64_t dst_offset, uint32_t dtype,
                                  uint64_t count, double value) {
  (void)device;
  CUdeviceptr z = accel_cuda_ptr(dst, dst_offset);
  unsigned long long n = count;
  void* params[] = {&z, &n, &value};
  return accel_cuda_ops_launch(stream, ACCEL_CUDA_K_FILL + dtype, count, params,
                               "fill");
}

// One thread per Philox block of four elements (<accel/philox.h>); the
// bounds go in as f32, converted here as every plugin converts them.
accel_status_t accel_cuda_op_rng(void* device, void* stream, void* dst,
                                 uint64_t dst_offset, uint32_t dtype,
                                 uint64_t count, uint32_t distribution,
                                 uint64_t seed, uint64_t offset, double a,
                                 double b) {
  (void)device;
  CUdeviceptr z = accel_cuda_ptr(dst, dst_offset);
  unsigned long long n = count, s = seed, o = offset;
  unsigned kind = distribution, type = dtype;
  float fa = (float)a, fb = (float)b;
  void* params[] = {&z, &n, &kind, &type, &s, &o, &fa, &fb};
  return accel_cuda_ops_launch(stream, ACCEL_CUDA_K_RNG, (count + 3) / 4,
                               params, "rng");
}

accel_status_t accel_cuda_op_cast(void* device, void* stream, void* dst,
                                  uint64_t dst_offset, uint32_t dst_dtype,
                                  const void* src, uint64_t src_offset,
                                  uint32_t src_dtype, uint64_t count) {
  if (dst_dtype == src_dtype) {
    return accel_cuda_copy_d2d(device, stream, dst, dst_offset, src, src_offset,
                               count * accel_plugin_dtype_size(dst_dtype));
  }
  CUdeviceptr z = accel_cuda_ptr(dst, dst_offset);
  CUdeviceptr x = accel_cuda_ptr(src, src_offset);
  unsigned long long n = count;
  void* params[] = {&z, &x, &n};
  return accel_cuda_ops_launch(stream,
                               ACCEL_CUDA_K_CAST + dst_dtype * 4 + src_dtype,
                               count, params, "cast");
}

// The core only passes float dtypes to scale and axpy; guard anyway, since
// their kernel tables have no i32 entry.
static accel_status_t accel_cuda_float_only(void* device_ptr, uint32_t dtype,
                                            const char* what) {
  accel_cuda_device_t* device = device_ptr;
  if (dtype <= ACCEL_DTYPE_BF16) return ACCEL_OK;
  return device->host->fail(device->host, ACCEL_ERROR_UNSUPPORTED,
                            "%s: %s: float dtypes only", device->prefix, what);
}

accel_status_t accel_cuda_op_scale(void* device, void* stream, void* x,
                                   uint64_t x_offset, uint32_t dtype,
                                   uint64_t count, double alpha) {
  accel_status_t status = accel_cuda_float_only(device, dtype, "scale");
  if (status != ACCEL_OK) return status;
  CUdeviceptr z = accel_cuda_ptr(x, x_offset);
  unsigned long long n = count;
  float a = (float)alpha;
  void* params[] = {&z, &n, &a};
  return accel_cuda_ops_launch(stream, ACCEL_CUDA_K_SCALE + dtype, count,
                               params, "scale");
}

accel_status_t accel_cuda_op_axpy(void* device, void* stream, void* y,
                                  uint64_t y_offset, const void* x,
                                  uint64_t x_offset, uint32_t dtype,
                                  uint64_t count, double alpha) {
  accel_status_t status = accel_cuda_float_only(device, dtype, "axpy");
  if (status != ACCEL_OK) return status;
  CUdeviceptr yp = accel_cuda_ptr(y, y_offset);
  CUdeviceptr xp = accel_cuda_ptr(x, x_offset);
  unsigned long long n = count;
  float a = (float)alpha;
  void* params[] = {&yp, &xp, &n, &a};
  return accel_cuda_ops_launch(stream, ACCEL_CUDA_K_AXPY + dtype, count, params,
                               "axpy");
}

accel_status_t accel_cuda_op_add(void* device, void* stream, void* z,
                                 uint64_t z_offset, const void* x,
                                 uint64_t x_offset, const void* y,
                                 uint64_t y_offset, uint32_t dtype,
                                 uint64_t count) {
  (void)device;
  CUdeviceptr zp = accel_cuda_ptr(z, z_offset);
  CUdeviceptr xp = accel_cuda_ptr(x, x_offset);
  CUdeviceptr yp = accel_cuda_ptr(y, y_offset);
  unsigned long long n = count;
  void* params[] = {&zp, &xp, &yp, &n};
  return accel_cuda_ops_launch(stream, ACCEL_CUDA_K_ADD + dtype, count, params,
                               "add");
}

accel_status_t accel_cuda_op_mul(void* device, void* stream, void* z,
                                 uint64_t z_offset, const void* x,
                                 uint64_t x_offset, const void* y,
                                 uint64_t y_offset, uint32_t dtype,
                                 uint64_t count) {
  (void)device;
  CUdeviceptr zp = accel_cuda_ptr(z, z_offset);
  CUdeviceptr xp = accel_cuda_ptr(x, x_offset);
  CUdeviceptr yp = accel_cuda_ptr(y, y_offset);
  unsigned long long n = count;
  void* params[] = {&zp, &xp, &yp, &n};
  return accel_cuda_ops_launch(stream, ACCEL_CUDA_K_MUL + dtype, count, params,
                               "mul");
}

// Returns the stream's scratch for per-block partial sums (8 bytes per
// block), allocating it at the first sum. Per stream, so concurrent sums
// on different streams never share it, and sums on one stream run in order.
static accel_status_t accel_cuda_sum_scratch(accel_cuda_stream_t* stream,
                                             CUdeviceptr* out) {
  accel_status_t status = ACCEL_OK;
  pthread_mutex_lock(&stream->mutex);
  if (stream->scratch == 0) {
    void* mem = NULL;
    status = accel_cuda_mem_alloc(stream->device,
                                  ACCEL_CUDA_SUM_BLOCKS * sizeof(double), &mem);
    if (status == ACCEL_OK) stream->scratch = accel_cuda_ptr(mem, 0);
  }
  *out = stream->scratch;
  pthread_mutex_unlock(&stream->mutex);
  return status;
}

accel_status_t accel_cuda_op_sum(void* device, void* stream_ptr, void* out,
                                 uint64_t out_offset, const void* x,
                                 uint64_t x_offset, uint32_t dtype,
                                 uint64_t count) {
  (void)device;
  accel_cuda_stream_t* stream = stream_ptr;
  CUdeviceptr partial = 0;
  accel_status_t status = accel_cuda_sum_scratch(stream, &partial);
  if (status != ACCEL_OK) return status;
  CUdeviceptr xp = accel_cuda_ptr(x, x_offset);
  CUdeviceptr op = accel_cuda_ptr(out, out_offset);
  unsigned long long n = count;
  // The first pass runs exactly ACCEL_CUDA_SUM_BLOCKS blocks (or fewer for
  // small inputs), each writing one partial; the second combines them.
  uint64_t blocks =
      (count + ACCEL_CUDA_OPS_THREADS - 1) / ACCEL_CUDA_OPS_THREADS;
  if (blocks > ACCEL_CUDA_SUM_BLOCKS) blocks = ACCEL_CUDA_SUM_BLOCKS;
  unsigned nblocks = (unsigned)blocks;
  void* first[] = {&partial, &xp, &n};
  status = accel_cuda_ops_launch(stream, ACCEL_CUDA_K_SUM_PARTIAL + dtype,
                                 blocks * ACCEL_CUDA_OPS_THREADS, first, "sum");
  if (status != ACCEL_OK) return status;
  void* second[] = {&op, &partial, &nblocks};
  return accel_cuda_ops_launch(stream, ACCEL_CUDA_K_SUM_FINAL + dtype,
                               ACCEL_CUDA_OPS_THREADS, second, "sum");
}

// ABI 1.4. The core passes float dtypes and known activations only.
accel_status_t accel_cuda_op_unary(void* device, void* stream, void* dst,
                                   uint64_t dst_offset, const void* src,
                                   uint64_t src_offset, uint32_t dtype,
                                   uint64_t count, uint32_t op) {
  accel_status_t status = accel_cuda_float_only(device, dtype, "activation");
  if (status != ACCEL_OK) return status;
  CUdeviceptr z = accel_cuda_ptr(dst, dst_offset);
  CUdeviceptr x = accel_cuda_ptr(src, src_offset);
  unsigned long long n = count;
  unsigned act = op;
  void* params[] = {&z, &x, &n, &act};
  return accel_cuda_ops_launch(stream, ACCEL_CUDA_K_UNARY + dtype, count,
                               params, "activation");
}

accel_status_t accel_cuda_op_bias_add(void* device, void* stream, void* y,
                                      uint64_t y_offset, const void* bias,
                                      uint64_t bias_offset, uint32_t dtype,
                                      uint64_t rows, uint64_t cols) {
  (void)device;
  CUdeviceptr yp = accel_cuda_ptr(y, y_offset);
  CUdeviceptr bp = accel_cuda_ptr(bias, bias_offset);
  unsigned long long c = cols, n = rows * cols;
  void* params[] = {&yp, &bp, &c, &n};
  return accel_cuda_ops_launch(stream, ACCEL_CUDA_K_BIAS_ADD + dtype, n, params,
                               "bias_add");
}
