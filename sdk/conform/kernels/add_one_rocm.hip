// SPDX-License-Identifier: MIT
//
// accel-conform's test kernels for the ROCm backend: every kernel of
// README.md in this directory but accel_conform_spin (HIP has no portable
// clock of known rate in device code; sync.elapsed_vs_host then times
// copies). Built by plugins/rocm/CMakeLists.txt with hipcc into an offload
// bundle. The ROCm stand-in (tests/rocm/fakehip) runs host versions. None
// of these has run on an AMD GPU: there is none here.
#include <hip/hip_runtime.h>
#include <stdint.h>

// data[i] += 1 for every global index i < n.
extern "C" __global__ void accel_conform_add_one(int32_t* data, uint32_t n) {
  uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
}

// out[(z * ny + y) * nx + x] = x + (y << 10) + (z << 20) inside nx*ny*nz.
extern "C" __global__ void accel_conform_index(int32_t* out, uint32_t nx,
                                               uint32_t ny, uint32_t nz) {
  uint32_t x = blockIdx.x * blockDim.x + threadIdx.x;
  uint32_t y = blockIdx.y * blockDim.y + threadIdx.y;
  uint32_t z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x < nx && y < ny && z < nz) {
    out[((uint64_t)z * ny + y) * nx + x] = (int32_t)(x + (y << 10) + (z << 20));
  }
}

// Value arguments of 1, 2, 4, 8, 16 and 24 bytes, written back as u64.
struct conform_pair {
  uint64_t lo, hi;
};
struct conform_triple {
  uint64_t a, b, c;
};

extern "C" __global__ void accel_conform_args(uint64_t* out, uint8_t a,
                                              uint16_t b, uint32_t c,
                                              uint64_t d, conform_pair e,
                                              conform_triple f) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  out[0] = a;
  out[1] = b;
  out[2] = c;
  out[3] = d;
  out[4] = e.lo;
  out[5] = e.hi;
  out[6] = f.a;
  out[7] = f.b;
  out[8] = f.c;
}

// Block b writes b * 1000 + t into dynamic shared[t] for t < n, then
// out[b * n + t] = shared[n - 1 - t]. (The launch must give n ints of
// dynamic shared memory; unlike the CPU and CUDA versions this one cannot
// tell when it did not.)
extern "C" __global__ void accel_conform_shared(int32_t* out, uint32_t n) {
  extern __shared__ int32_t shared[];
  uint32_t b = blockIdx.x;
  for (uint32_t t = threadIdx.x; t < n; t += blockDim.x) {
    shared[t] = (int32_t)(b * 1000 + t);
  }
  __syncthreads();
  for (uint32_t t = threadIdx.x; t < n; t += blockDim.x) {
    out[(uint64_t)b * n + t] = shared[n - 1 - t];
  }
}

// Traps in block 0: the launch fails on the device (hipErrorLaunchFailure
// or an illegal-address error, sticky); *flag is not readable afterwards.
extern "C" __global__ void accel_conform_fail(int32_t* flag) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  *flag = 1;
  __builtin_trap();
}
