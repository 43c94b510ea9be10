// SPDX-License-Identifier: MIT
//
// The suite list, in run order. A suite is one suite_<name>.c file that
// defines a bench_suite_t; adding one means adding its file to
// CMakeLists.txt and its name here.
#include "bench.h"

const bench_suite_t* const bench_suites[] = {
    &bench_suite_dispatch,    &bench_suite_alloc,
    &bench_suite_copy,        &bench_suite_gemm,
    &bench_suite_elementwise, &bench_suite_launch,
    &bench_suite_graph,       &bench_suite_startup,
    NULL,
};
