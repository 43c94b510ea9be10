// SPDX-License-Identifier: MIT
//
// Internal interface shared by the kernel files of the OpenCL plugin:
// program building (program.c), the built-in program and its kernels
// (ops.c), running a kernel with its arguments (ops.c, used by gemm.c and
// module.c) and CLBlast (clblast.c). Kept apart from accel_opencl.h,
// which is the contract with the runtime half of the plugin.
#ifndef ACCEL_PLUGINS_OPENCL_BUILTINS_H_
#define ACCEL_PLUGINS_OPENCL_BUILTINS_H_

#include <accel/plugin_dtype.h>

#include "accel_opencl.h"

// ---------------------------------------------------------------------------
// Programs (program.c)
// ---------------------------------------------------------------------------

// Builds OpenCL C `source` (`size` bytes) for `device` with `options`
// (NULL: none). With `cache` the program binary cache on disk is used
// (see program.c; ACCEL_OPENCL_CACHE=0 disables it). `what` prefixes
// messages. On success `*out_program` is a new program the caller
// releases. A compile error is ACCEL_ERROR_INVALID_ARGUMENT whose message
// holds the (trimmed) build log; other failures map OpenCL errors with
// accel_opencl_check. Thread-safe.
accel_status_t accel_opencl_program_build(accel_opencl_device_t* device,
                                          const char* source, size_t size,
                                          const char* options, bool cache,
                                          const char* what,
                                          cl_program* out_program);

// Builds a SPIR-V module with clCreateProgramWithIL. ACCEL_ERROR_UNSUPPORTED
// when the device takes no IL (or the ICD loader lacks the entry point),
// ACCEL_ERROR_INVALID_ARGUMENT when the driver refuses the module or
// fails to build it (with the build log). Thread-safe.
accel_status_t accel_opencl_program_build_il(accel_opencl_device_t* device,
                                             const void* il, size_t size,
                                             const char* what,
                                             cl_program* out_program);

// ---------------------------------------------------------------------------
// Kernels and launches (ops.c)
// ---------------------------------------------------------------------------

// A kernel object and the mutex held from its first clSetKernelArg to the
// clEnqueueNDRangeKernel that uses the arguments.
typedef struct accel_opencl_kernel {
  cl_kernel kernel;
  pthread_mutex_t mutex;
} accel_opencl_kernel_t;

// One kernel argument: `size` bytes at `value` (a cl_mem is passed as a
// pointer to the cl_mem); `value` NULL with a size is a __local buffer.
typedef struct accel_opencl_karg {
  size_t size;
  const void* value;
} accel_opencl_karg_t;

// Sets `count` arguments of `kernel` and enqueues it on `stream` with the
// given geometry (`local` may be NULL), under the kernel's mutex; the
// command is then reported through accel_opencl_stream_enqueued. A failing
// clSetKernelArg is reported with its index. `what` names the operation.
accel_status_t accel_opencl_kernel_run(accel_opencl_stream_t* stream,
                                       accel_opencl_kernel_t* kernel,
                                       const accel_opencl_karg_t* args,
                                       uint32_t count, cl_uint dims,
                                       const size_t* global,
                                       const size_t* local, const char* what);

// The built-in kernels, in the order of accel_opencl_builtin_names (ops.c).
enum {
  ACCEL_OPENCL_K_CAST,
  ACCEL_OPENCL_K_ELEMENTWISE,
  ACCEL_OPENCL_K_SUM_PARTIAL,
  ACCEL_OPENCL_K_SUM_FINAL,
  ACCEL_OPENCL_K_GEMM,
  ACCEL_OPENCL_K_RNG,
  ACCEL_OPENCL_K_UNARY,
  ACCEL_OPENCL_K_BIAS_ADD,
  ACCEL_OPENCL_K_COUNT
};

// The device's built-in program (kernels/ops.cl and kernels/gemm.cl).
typedef struct accel_opencl_builtins {
  cl_program program;
  accel_opencl_kernel_t kernels[ACCEL_OPENCL_K_COUNT];
  uint32_t gemm_tile;  // ACCEL_GEMM_TS it was built with
  // A failed build is remembered (program NULL), so later ops report it
  // at once instead of paying the compiler again.
  accel_status_t status;
  char why[ACCEL_OPENCL_MESSAGE_SIZE];
} accel_opencl_builtins_t;

// Returns the device's built-in kernels, building them at the first call
// (under device->mutex). A build that failed fails every later call with
// the same status and reason. The result lives until
// accel_opencl_builtins_release. Thread-safe.
accel_status_t accel_opencl_builtins_get(accel_opencl_device_t* device,
                                         accel_opencl_builtins_t** out);

// Counter-based random fill (rng.c, kernels/rng.cl; ABI 1.3).
accel_status_t accel_opencl_op_rng(void* device, void* stream, void* dst,
                                   uint64_t dst_offset, uint32_t dtype,
                                   uint64_t count, uint32_t distribution,
                                   uint64_t seed, uint64_t offset, double a,
                                   double b);

// The cl_mem of a plugin memory handle.
static inline cl_mem accel_opencl_cl_mem(const void* mem) {
  return ((const accel_opencl_mem_t*)mem)->mem;
}

// ---------------------------------------------------------------------------
// CLBlast (clblast.c)
// ---------------------------------------------------------------------------

// Opens CLBlast once per plugin (ACCEL_OPENCL_CLBLAST, else
// libclblast.so.1), under plugin->mutex. False when it is missing; the
// reason is in plugin->clblast_error. Thread-safe.
bool accel_opencl_clblast_open(accel_opencl_plugin_t* plugin);

// Closes CLBlast (plugin unload). Safe when it was never opened.
void accel_opencl_clblast_close(accel_opencl_plugin_t* plugin);

// Row-major GEMM through CLBlast on `queue`; `dtype` is ACCEL_DTYPE_F32 or
// ACCEL_DTYPE_F16 (c of the same dtype), offsets and leading dimensions in
// elements. Returns CLBlast's status code (0 on success; negative values
// are OpenCL errors, others CLBlast's own) and its event in `*out_event`.
int accel_opencl_clblast_gemm(accel_opencl_plugin_t* plugin, uint32_t dtype,
                              bool trans_a, bool trans_b, size_t m, size_t n,
                              size_t k, double alpha, cl_mem a, size_t a_off,
                              size_t lda, cl_mem b, size_t b_off, size_t ldb,
                              double beta, cl_mem c, size_t c_off, size_t ldc,
                              cl_command_queue queue, cl_event* out_event);

// Whether the CLBlast opened has the strided-batched GEMM of `dtype`
// (CLBlastSgemmStridedBatched, CLBlastHgemmStridedBatched; CLBlast 1.0+).
bool accel_opencl_clblast_has_batched(const accel_opencl_plugin_t* plugin,
                                      uint32_t dtype);

// accel_opencl_clblast_gemm for `count` GEMMs whose A, B and C are
// `a_stride`, `b_stride` and `c_stride` elements apart (strides may be 0
// for A and B). Same return values; CL_INVALID_OPERATION when CLBlast has
// no strided-batched GEMM for `dtype`.
int accel_opencl_clblast_gemm_batched(
    accel_opencl_plugin_t* plugin, uint32_t dtype, bool trans_a, bool trans_b,
    size_t m, size_t n, size_t k, double alpha, cl_mem a, size_t a_off,
    size_t lda, size_t a_stride, cl_mem b, size_t b_off, size_t ldb,
    size_t b_stride, double beta, cl_mem c, size_t c_off, size_t ldc,
    size_t c_stride, size_t count, cl_command_queue queue,
    cl_event* out_event);

#endif  // ACCEL_PLUGINS_OPENCL_BUILTINS_H_
