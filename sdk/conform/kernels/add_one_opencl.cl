// SPDX-License-Identifier: MIT
//
// accel-conform's test kernels for OpenCL devices, as OpenCL C source the
// plugin compiles at module load. What each kernel computes is specified
// beside the CPU versions (add_one_cpu.c); conform_kernel.c and
// conform_launch.c check it. A launch's global size is grid * block and
// its local size block, so get_global_id(d) is block_id * block_dim +
// thread_id. Copied by sdk/conform/CMakeLists.txt into the kernel
// directory as accel_conform_opencl.cl.
//
// accel_conform_fail has no OpenCL version: OpenCL C has no portable way
// to make a launched kernel fail (no trap), so error.sticky skips here.

// data[i] += 1 for every global index i < n.
kernel void accel_conform_add_one(global int* data, uint n) {
  uint i = (uint)get_global_id(0);
  if (i < n) data[i] += 1;
}

// out[(z * ny + y) * nx + x] = x + (y << 10) + (z << 20) inside nx*ny*nz.
kernel void accel_conform_index(global int* out, uint nx, uint ny, uint nz) {
  uint x = (uint)get_global_id(0);
  uint y = (uint)get_global_id(1);
  uint z = (uint)get_global_id(2);
  if (x < nx && y < ny && z < nz) {
    out[((size_t)z * ny + y) * nx + x] = (int)(x + (y << 10) + (z << 20));
  }
}

// Value arguments of 1, 2, 4, 8, 16 and 24 bytes, written back as ulongs.
typedef struct {
  ulong lo, hi;
} conform_pair_t;
typedef struct {
  ulong a, b, c;
} conform_triple_t;

kernel void accel_conform_args(global ulong* out, uchar a, ushort b, uint c,
                               ulong d, conform_pair_t e, conform_triple_t f) {
  if (get_global_id(0) != 0) return;
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

// Dynamic shared memory is the trailing __local argument: each block
// writes b * 1000 + t into shared[t], then out[b * n + t] = shared[n-1-t].
kernel void accel_conform_shared(global int* out, uint n, local int* shared) {
  uint b = (uint)get_group_id(0);
  if (get_local_id(0) != 0) return;
  for (uint t = 0; t < n; t++) shared[t] = (int)(b * 1000 + t);
  for (uint t = 0; t < n; t++) out[(size_t)b * n + t] = shared[n - 1 - t];
}
