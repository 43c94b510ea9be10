// SPDX-License-Identifier: MIT
//
// Raw OpenCL baselines of accel-bench (opencl_raw.c): the direct OpenCL
// calls the OpenCL results are compared with, made without accel or its
// plugin. libOpenCL.so.1 (the ICD loader) and libclblast.so.1 are opened
// here with dlopen, on a context and an in-order queue of their own on the
// device the accel side measures: the device at the same index when every
// device of every platform is listed in order (the plugin's numbering),
// checked against the accel device's name.
//
// Built with the Khronos headers where the OpenCL plugin is built
// (ACCEL_BENCH_OPENCL); elsewhere every open reports "accel-bench was
// built without the OpenCL headers". Nothing here includes CL/cl.h, so the
// suites compile either way. Single-threaded, like the suites that call it.
#ifndef ACCEL_TOOLS_ACCEL_BENCH_OPENCL_RAW_H_
#define ACCEL_TOOLS_ACCEL_BENCH_OPENCL_RAW_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bench.h"

// The raw OpenCL of ctx->device, opened at the first call; NULL with the
// reason in ctx->ocl_error, without trying again, when it cannot be.
// Closed by bench_ocl_release(); NULL and a closed one are ignored there.
bench_ocl_t* bench_ocl_get(bench_ctx_t* ctx);
void bench_ocl_release(bench_ctx_t* ctx);

// The copy baseline (baseline.c's table): clEnqueueWriteBuffer,
// clEnqueueReadBuffer and clEnqueueCopyBuffer on the raw queue between two
// cl_mem buffers and the baseline's own host memory: a mapped
// CL_MEM_ALLOC_HOST_PTR buffer (pinned, as the plugin's host_alloc) or
// malloc (pageable). Synchronous: blocking write/read, copy + wait, as the
// plugin's synchronous calls; `async`: non-blocking enqueues and one
// clFinish at the end.
extern const bench_copy_baseline_t bench_ocl_copy_baseline;

// The empty kernel `name` built from OpenCL C `source` with
// clCreateProgramWithSource. NULL with bench_fail() on error.
typedef struct bench_ocl_kernel bench_ocl_kernel_t;
bench_ocl_kernel_t* bench_ocl_kernel_open(bench_ocl_t* ocl, const char* source,
                                          const char* name);
void bench_ocl_kernel_close(bench_ocl_kernel_t* k);

// Raw launches of `k` (global size 1, local size 1, no arguments) with
// clEnqueueNDRangeKernel: latency = launch + clFinish per iteration;
// throughput = back to back, one clFinish per `batch` and at the end.
bool bench_ocl_launch_latency(bench_ocl_kernel_t* k, uint64_t iters);
bool bench_ocl_launch_throughput(bench_ocl_kernel_t* k, uint64_t iters,
                                 uint32_t batch);

// One n x n x n row-major f32 product C = A B with CLBlastSgemm (CLBlast
// opened at the first call: ACCEL_OPENCL_CLBLAST, else libclblast.so.1,
// as the plugin) on raw cl_mem buffers holding `a` and `b`. NULL with
// bench_fail() on error.
typedef struct bench_ocl_gemm bench_ocl_gemm_t;
bench_ocl_gemm_t* bench_ocl_gemm_open(bench_ocl_t* ocl, size_t n,
                                      const float* a, const float* b);
void bench_ocl_gemm_close(bench_ocl_gemm_t* g);

// CLBlastSgemm + clFinish, `iters` times, as the accel side does
// accel_op_gemm + accel_stream_synchronize. `user` is the gemm.
bool bench_ocl_gemm_run(void* user, uint64_t iters);

#endif  // ACCEL_TOOLS_ACCEL_BENCH_OPENCL_RAW_H_
