// SPDX-License-Identifier: MIT
// accel-conform's custom-kernel test module for CUDA (see
// sdk/conform/conform_kernel.c): data[i] += 1 for every global thread index
// i < n. Built as PTX for sm_75 (tests/cuda/CMakeLists.txt) into a kernel
// directory named accel_conform_cuda_add_one.ptx; the fake driver runs its
// host version (fakecuda_kernels.c), a GPU JIT-compiles it.
extern "C" __global__ void accel_conform_add_one(int* data, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
}
