// SPDX-License-Identifier: MIT
//
// Suites whose accel side does not exist yet. They are listed (--list
// shows why) and skipped. Each is replaced by its own suite_<name>.c when
// the API it measures lands; nothing else changes.
#include <stddef.h>

#include "bench.h"

// TODO(#3): GEMM 512^3 .. 8192^3 per dtype (quick: 512, 1024, 2048) through
// accel_op_gemm vs cblas_sgemm from the BLAS library the CPU plugin loaded
// (cuBLAS on CUDA), GFLOP/s; budget >= 90% on the CPU, >= 98% on CUDA.
static const char* const bench_gemm_cases[] = {"f32", "f16", "bf16", NULL};
const bench_suite_t bench_suite_gemm = {
    .name = "gemm",
    .summary =
        "accel_op_gemm vs the direct BLAS call (GFLOP/s; budget >= "
        "90% CPU, >= 98% CUDA)",
    .cases = bench_gemm_cases,
    .sizes_quick = "512, 1024, 2048",
    .sizes_full = "512 .. 8192",
    .pending = "pending issue 3 (built-in ops)",
};

// TODO(#3): accel_op_add/mul/axpy/scale vs a compiler-vectorised C loop,
// GB/s.
static const char* const bench_elementwise_cases[] = {"add", "mul", "axpy",
                                                      "scale", NULL};
const bench_suite_t bench_suite_elementwise = {
    .name = "elementwise",
    .summary = "elementwise ops vs a plain vectorised C loop (GB/s)",
    .cases = bench_elementwise_cases,
    .sizes_quick = "4 KiB .. 64 MiB",
    .sizes_full = "4 KiB .. 1 GiB",
    .pending = "pending issue 3 (built-in ops)",
};

// TODO(#3, #6): empty-kernel enqueue-to-completion latency and back-to-back
// throughput vs raw cuLaunchKernel; budget <= raw + 0.5 us.
static const char* const bench_launch_cases[] = {"latency", "throughput", NULL};
const bench_suite_t bench_suite_launch = {
    .name = "launch",
    .summary =
        "empty kernel launch latency and throughput vs the raw "
        "vendor launch (us; budget <= raw + 0.5 us)",
    .cases = bench_launch_cases,
    .sizes_quick = "-",
    .sizes_full = "-",
    .pending = "pending issue 3 (custom kernels) and issue 6 (CUDA)",
};
