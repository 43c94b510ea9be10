// SPDX-License-Identifier: MIT
//
// The launch suite's empty CUDA kernel (suite_launch.c): no arguments, no
// work, so a launch measures only the launch path. Built by nvcc into a
// fatbin for ACCEL_CUDA_ARCHS and embedded in accel-bench (CMakeLists.txt);
// the accel side loads it with accel_module_create, the raw side with
// cuModuleLoadData, so both launch the same code.
extern "C" __global__ void accel_bench_empty() {}
