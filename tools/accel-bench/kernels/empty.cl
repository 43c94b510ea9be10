// SPDX-License-Identifier: MIT
//
// accel-bench's empty OpenCL C kernel: no arguments and no work, so a
// launch measures only the launch path. Embedded in accel-bench as text
// (CMakeLists.txt); the accel side loads it with accel_module_create, the
// raw side (opencl_raw.c) with clCreateProgramWithSource, so both launch
// the same code.
__kernel void accel_bench_empty(void) {}
