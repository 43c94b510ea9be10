// SPDX-License-Identifier: MIT
// A custom kernel for test_cuda_gpu.c, built as PTX and as cubins.
extern "C" __global__ void vadd(float* z, const float* x, const float* y,
                                unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) z[i] = x[i] + y[i];
}
