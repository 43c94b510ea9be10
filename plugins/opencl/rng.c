// SPDX-License-Identifier: MIT
//
// op_rng (plugin.h, ABI 1.3) on OpenCL: the accel_rng kernel of the
// built-in program (kernels/rng.cl after <accel/philox.h>), one work item
// per Philox block, grid-stride. The bounds go in as f32, converted here
// exactly as the other plugins convert them.
#include "accel/philox.h"
#include "builtins.h"

// Global size cap: blocks beyond it are taken grid-stride.
#define ACCEL_OPENCL_RNG_MAX_GLOBAL ((uint64_t)1 << 18)

accel_status_t accel_opencl_op_rng(void* device, void* stream, void* dst,
                                   uint64_t dst_offset, uint32_t dtype,
                                   uint64_t count, uint32_t distribution,
                                   uint64_t seed, uint64_t offset, double a,
                                   double b) {
  (void)device;
  accel_opencl_stream_t* s = stream;
  size_t elem = accel_plugin_dtype_size(dtype);
  if (elem == 0 || distribution > ACCEL_PHILOX_NORMAL) {
    // The core checks these; this guards a core older than the plugin.
    return s->device->host->fail(s->device->host, ACCEL_ERROR_UNSUPPORTED,
                                 "rng: distribution %u with dtype %u",
                                 (unsigned)distribution, (unsigned)dtype);
  }
  accel_opencl_builtins_t* builtins = NULL;
  accel_status_t status = accel_opencl_builtins_get(s->device, &builtins);
  if (status != ACCEL_OK) return status;
  cl_mem mem = accel_opencl_cl_mem(dst);
  cl_ulong first = dst_offset / elem, n = count, cl_seed = seed;
  cl_ulong cl_offset = offset;
  cl_uint dist = distribution, type = dtype;
  cl_float fa = (float)a, fb = (float)b;
  const accel_opencl_karg_t args[] = {
      {sizeof(mem), &mem},
      {sizeof(first), &first},
      {sizeof(n), &n},
      {sizeof(dist), &dist},
      {sizeof(type), &type},
      {sizeof(cl_seed), &cl_seed},
      {sizeof(cl_offset), &cl_offset},
      {sizeof(fa), &fa},
      {sizeof(fb), &fb},
  };
  uint64_t blocks = (count + 3) / 4;
  if (blocks > ACCEL_OPENCL_RNG_MAX_GLOBAL) {
    blocks = ACCEL_OPENCL_RNG_MAX_GLOBAL;
  }
  size_t global = (size_t)((blocks + 63) / 64 * 64);
  return accel_opencl_kernel_run(s, &builtins->kernels[ACCEL_OPENCL_K_RNG],
                                 args, sizeof(args) / sizeof(args[0]), 1,
                                 &global, NULL, "op_rng");
}
