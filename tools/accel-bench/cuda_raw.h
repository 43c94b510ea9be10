// SPDX-License-Identifier: MIT
//
// Raw CUDA baselines of accel-bench (cuda_raw.c): the vendor calls the
// CUDA results are compared with, made without accel or its plugin.
// libcuda.so.1 and cuBLAS are opened here with dlopen (the plugin exports
// nothing), on the primary context of the device the accel side measures
// and on a CU_STREAM_NON_BLOCKING stream of their own.
//
// Built with the CUDA toolkit's headers where the CUDA plugin is built
// (ACCEL_BENCH_CUDA); elsewhere every open reports "accel-bench was built
// without the CUDA toolkit". Nothing here includes cuda.h, so the suites
// compile either way. Single-threaded, like the suites that call it.
#ifndef ACCEL_TOOLS_ACCEL_BENCH_CUDA_RAW_H_
#define ACCEL_TOOLS_ACCEL_BENCH_CUDA_RAW_H_

#include <accel/accel.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench.h"

// ---------------------------------------------------------------------------
// Driver, context and stream
// ---------------------------------------------------------------------------

// Opens libcuda (libcuda.so.1, then libcuda.so), runs cuInit, checks that
// the driver is CUDA 12.0 or newer, resolves the entry points it uses,
// retains the primary context of device `ordinal` (made current on the
// calling thread until bench_cuda_close) and creates a non-blocking
// stream. NULL with the reason in `why` ("the NVIDIA driver is not
// installed: ...") when any step fails; nothing is left open then.
bench_cuda_t* bench_cuda_open(uint32_t ordinal, char* why, size_t why_size);

// Destroys the stream, pops and releases the context. libcuda stays
// loaded once initialised (as in plugins/cuda/driver.c). NULL is ignored.
void bench_cuda_close(bench_cuda_t* cu);

// The raw CUDA of ctx->device (its index is the CUDA ordinal), opened at
// the first call; NULL with the reason in ctx->cuda_error, without trying
// again, when it cannot be. Closed by bench_cuda_release().
bench_cuda_t* bench_cuda_get(bench_ctx_t* ctx);
void bench_cuda_release(bench_ctx_t* ctx);

// ---------------------------------------------------------------------------
// Baselines
// ---------------------------------------------------------------------------

// The copy baseline (baseline.c's table): cuMemcpyHtoDAsync, DtoHAsync and
// DtoDAsync on the raw stream between two cuMemAlloc buffers and the
// baseline's own cuMemHostAlloc (pinned) or malloc (pageable) buffer, then
// cuStreamSynchronize: after every copy, or once for `async`.
extern const bench_copy_baseline_t bench_cuda_copy_baseline;

// One cuMemAlloc + cuMemFree pair of `size` bytes per iteration; `user` is
// a bench_cuda_alloc_t. For bench_measure().
typedef struct bench_cuda_alloc {
  bench_cuda_t* cu;
  size_t size;
} bench_cuda_alloc_t;
bool bench_cuda_alloc_pair(void* user, uint64_t iters);

// A kernel loaded with cuModuleLoadData from `image` (a fatbin, cubin or
// PTX) and cuModuleGetFunction(`name`). NULL with bench_fail() on error.
typedef struct bench_cuda_kernel bench_cuda_kernel_t;
bench_cuda_kernel_t* bench_cuda_kernel_open(bench_cuda_t* cu, const void* image,
                                            const char* name);
void bench_cuda_kernel_close(bench_cuda_kernel_t* k);

// Raw launches of `k` (1 x 1 x 1, no arguments) with cuLaunchKernel on the
// raw stream: latency = launch + cuStreamSynchronize per iteration;
// throughput = back to back, one synchronisation per `batch` and at the
// end. `user` is the bench_cuda_kernel_t.
bool bench_cuda_launch_latency(void* user, uint64_t iters);
bool bench_cuda_launch_throughput(void* user, uint64_t iters, uint32_t batch);

// cuBLAS, dlopen()ed at the first call (libcublas.so.13, .12, .so); its
// soname, or NULL with the reason in `why` when it cannot be loaded.
const char* bench_cuda_blas_name(bench_cuda_t* cu, char* why, size_t why_size);

// One n x n x n row-major product C = A B of `dtype` (f32, f16 or bf16;
// C of the same dtype) on raw cuMemAlloc buffers holding `a` and `b`
// (f32 values exact in `dtype`), with cublasGemmEx as the CUDA plugin
// calls it: operands and m, n swapped for row-major, compute type
// CUBLAS_COMPUTE_32F (32F_FAST_TF32 for `tf32`), a handle bound to the raw
// stream with a workspace of the plugin's size. NULL with bench_fail().
typedef struct bench_cuda_gemm bench_cuda_gemm_t;
bench_cuda_gemm_t* bench_cuda_gemm_open(bench_cuda_t* cu, accel_dtype_t dtype,
                                        bool tf32, size_t n, const float* a,
                                        const float* b);
void bench_cuda_gemm_close(bench_cuda_gemm_t* g);

// cublasGemmEx + cuStreamSynchronize, `iters` times, as the accel side
// does accel_op_gemm + accel_stream_synchronize. `user` is the gemm.
bool bench_cuda_gemm_run(void* user, uint64_t iters);

#endif  // ACCEL_TOOLS_ACCEL_BENCH_CUDA_RAW_H_
