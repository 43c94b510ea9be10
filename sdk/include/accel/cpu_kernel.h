// SPDX-License-Identifier: MIT
//
// Custom kernels for the accel CPU backend.
//
// A CPU module is an ordinary shared object (ELF for the host architecture:
// "elf-x86_64", "elf-aarch64") that exports one C function per kernel,
// each declared with ACCEL_CPU_KERNEL. Load it with accel_module_create()
// (bytes) or accel_module_create_from_file(), look a kernel up with
// accel_kernel_create() and launch it with accel_kernel_launch(), exactly
// as on a GPU. This header is standalone (standard C headers only) and is
// all a kernel needs; kernels do not link libaccel.
//
// Execution model:
// - Each block of the grid is one task on the CPU plugin's thread pool, so
//   blocks run in parallel across cores, in no particular order, each
//   exactly once. A launch completes, in stream order, when all its blocks
//   have returned.
// - A block is one call of the kernel on one thread. There are no threads
//   inside a block: `block_dim` is a size the kernel interprets itself,
//   typically by looping over it (see the example below), which lets a
//   CUDA-style launch configuration carry over unchanged. The device
//   reports max_threads_per_block 1024 so such configurations are
//   accepted; nothing is spawned per "thread". There is no __syncthreads():
//   a block's loop is already sequential.
// - `shared_mem` is the block's scratch of `shared_mem_bytes` (the launch's
//   dynamic shared memory), 64-byte aligned, private to the block while it
//   runs. It belongs to the worker thread running the block and is reused,
//   uninitialised, by the next block that worker runs. NULL when the launch
//   asked for none.
// - Kernels run in the host process: a crash in a kernel is a crash of
//   the application. Kernels may call any function of the C library;
//   blocking (locks shared between blocks, waiting on other blocks) can
//   deadlock the pool and must be avoided.
//
// Example (see sdk/examples/cpu_kernel/):
//
//   #include <accel/cpu_kernel.h>
//
//   // args: float a, float* x, float* y, uint32_t n
//   ACCEL_CPU_KERNEL(saxpy) {
//     float a = *(const float*)args[0];
//     const float* x = *(float* const*)args[1];
//     float* y = *(float* const*)args[2];
//     uint32_t n = *(const uint32_t*)args[3];
//     uint32_t base = ctx->block_idx[0] * ctx->block_dim[0];
//     for (uint32_t t = 0; t < ctx->block_dim[0]; t++) {
//       uint32_t i = base + t;
//       if (i < n) y[i] = a * x[i] + y[i];
//     }
//   }
#ifndef ACCEL_CPU_KERNEL_H_
#define ACCEL_CPU_KERNEL_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Where a block sits in its launch, and its scratch memory. Passed by
// pointer, read-only, valid for the duration of the call.
typedef struct accel_cpu_kernel_ctx {
  // sizeof(accel_cpu_kernel_ctx_t) of the plugin that runs the kernel.
  // Fields may be appended; check it before reading fields added later.
  uint32_t struct_size;
  uint32_t block_idx[3];  // this block: x < grid_dim[0], and so on
  uint32_t grid_dim[3];   // the launch's grid, in blocks
  uint32_t block_dim[3];  // the launch's block size, for the kernel to use
  void* shared_mem;       // 64-byte-aligned scratch, or NULL
  uint32_t shared_mem_bytes;
  // Index of the pool thread running the block, below the pool's width.
  // Blocks running at the same time in one launch have different values,
  // so it can index per-thread partial results.
  uint32_t worker;
  // -- appended: kernel failures --
  // Makes the launch fail, as a fault does on a GPU: the stream reports
  // `status` (a non-zero accel_status_t, e.g. 9 for ACCEL_ERROR_BACKEND)
  // with `message` as its sticky error at the next synchronize or query,
  // and work queued after the launch is skipped. The block should return
  // soon after; other blocks may still run. Thread-safe; the first
  // failure of a launch wins. A plugin that predates this field passes a
  // smaller struct_size: check
  //   ctx->struct_size >= offsetof(accel_cpu_kernel_ctx_t, fail_state) +
  //                       sizeof(void*) && ctx->fail != NULL
  // before calling it.
  void (*fail)(const struct accel_cpu_kernel_ctx* ctx, int32_t status,
               const char* message);
  void* fail_state;  // the plugin's, for `fail`; opaque to kernels
} accel_cpu_kernel_ctx_t;

// Signature of a CPU kernel. `args[i]` points to the value of the i-th
// launch argument (the cuLaunchKernel convention): a value argument of
// `size` bytes is a copy made at launch time, and a buffer argument is a
// `void*` holding the host address of the buffer plus its offset, so
// `float* x = *(float* const*)args[1];`. The values stay valid until the
// launch completes.
typedef void (*accel_cpu_kernel_fn_t)(const accel_cpu_kernel_ctx_t* ctx,
                                      void* const* args);

// Defines an exported kernel `name` with the signature above, visible even
// when the module is built with -fvisibility=hidden, and with C linkage
// when compiled as C++.
#if defined(__cplusplus)
#define ACCEL_CPU_KERNEL_LINKAGE_ extern "C"
#else
#define ACCEL_CPU_KERNEL_LINKAGE_
#endif
#if defined(__GNUC__) || defined(__clang__)
#define ACCEL_CPU_KERNEL_EXPORT_ __attribute__((visibility("default")))
#else
#define ACCEL_CPU_KERNEL_EXPORT_
#endif
#define ACCEL_CPU_KERNEL(name)                                  \
  ACCEL_CPU_KERNEL_LINKAGE_ ACCEL_CPU_KERNEL_EXPORT_ void name( \
      const accel_cpu_kernel_ctx_t* ctx, void* const* args)

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ACCEL_CPU_KERNEL_H_
