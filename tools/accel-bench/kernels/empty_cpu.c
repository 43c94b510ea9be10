// SPDX-License-Identifier: MIT
//
// accel-bench's launch suite kernel for the CPU backend: does nothing, so
// a launch measures only the path from accel_kernel_launch() to the
// kernel's return. Built as a module (a shared object), loaded with
// accel_module_create_from_file() on the accel side and called directly
// through dlsym() for the baseline.
#include <accel/cpu_kernel.h>

ACCEL_CPU_KERNEL(accel_bench_empty) {
  (void)ctx;
  (void)args;
}
