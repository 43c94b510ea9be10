// SPDX-License-Identifier: MIT
//
// accel-conform's test kernel for OpenCL devices (see conform_kernel.c),
// as OpenCL C source the plugin compiles at module load: adds 1 to
// data[i] for every global index i < n. With block = the launch's block
// and grid its grid, get_global_id(0) is block_id.x * block_dim.x +
// thread_id.x. Copied by sdk/conform/CMakeLists.txt into the kernel
// directory as accel_conform_opencl.cl.
kernel void accel_conform_add_one(global int* data, uint n) {
  uint i = (uint)get_global_id(0);
  if (i < n) data[i] += 1;
}
