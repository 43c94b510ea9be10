// SPDX-License-Identifier: MIT
// accel-conform's custom-kernel test module for CUDA: every kernel of
// sdk/conform/kernels/README.md (what each computes is specified there and
// beside the CPU versions, add_one_cpu.c). Built as PTX for sm_75
// (tests/cuda/CMakeLists.txt) into a kernel directory named
// accel_conform_cuda_add_one.ptx; the fake driver runs host versions
// (fakecuda_conform.c), a GPU JIT-compiles it. None of these has run on an
// NVIDIA GPU: there is none here.

// data[i] += 1 for every global thread index i < n.
extern "C" __global__ void accel_conform_add_one(int* data, unsigned n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += 1;
}

// out[(z * ny + y) * nx + x] = x + (y << 10) + (z << 20) inside nx*ny*nz.
extern "C" __global__ void accel_conform_index(int* out, unsigned nx,
                                               unsigned ny, unsigned nz) {
  unsigned x = blockIdx.x * blockDim.x + threadIdx.x;
  unsigned y = blockIdx.y * blockDim.y + threadIdx.y;
  unsigned z = blockIdx.z * blockDim.z + threadIdx.z;
  if (x < nx && y < ny && z < nz) {
    out[((unsigned long long)z * ny + y) * nx + x] =
        (int)(x + (y << 10) + (z << 20));
  }
}

// Value arguments of 1, 2, 4, 8, 16 and 24 bytes, written back as u64.
struct conform_pair {
  unsigned long long lo, hi;
};
struct conform_triple {
  unsigned long long a, b, c;
};

extern "C" __global__ void accel_conform_args(unsigned long long* out,
                                              unsigned char a,
                                              unsigned short b, unsigned c,
                                              unsigned long long d,
                                              conform_pair e,
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
// out[b * n + t] = shared[n - 1 - t]; -1 when the launch gave it less than
// n ints of dynamic shared memory.
extern "C" __global__ void accel_conform_shared(int* out, unsigned n) {
  extern __shared__ int shared[];
  unsigned b = blockIdx.x;
  unsigned dynamic;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(dynamic));
  if (dynamic < n * sizeof(int)) {
    for (unsigned t = threadIdx.x; t < n; t += blockDim.x) out[b * n + t] = -1;
    return;
  }
  for (unsigned t = threadIdx.x; t < n; t += blockDim.x) {
    shared[t] = (int)(b * 1000 + t);
  }
  __syncthreads();
  for (unsigned t = threadIdx.x; t < n; t += blockDim.x) {
    out[b * n + t] = shared[n - 1 - t];
  }
}

// Block 0 busy-waits `ms` milliseconds of the GPU's nanosecond timer.
extern "C" __global__ void accel_conform_spin(unsigned ms) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (now - start < ms * 1000000ull);
}

// Traps in block 0: the launch fails on the device (the stream's sticky
// CUDA_ERROR_LAUNCH_FAILED on a GPU); *flag is not readable afterwards.
extern "C" __global__ void accel_conform_fail(int* flag) {
  if (blockIdx.x != 0 || threadIdx.x != 0) return;
  *flag = 1;
  __trap();
}
