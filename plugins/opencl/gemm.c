// SPDX-License-Identifier: MIT
//
// GEMM on OpenCL. f32, and f16 on devices with cl_khr_fp16 (CLBlast needs
// it), go through CLBlast (clblast.c) in row-major layout with offsets in
// elements. Everything else runs the tiled kernel of kernels/gemm.cl
// (f32 accumulation): bf16, f16 without cl_khr_fp16, f16/bf16 inputs with
// an f32 C, k == 0, an offset that is not a whole number of elements, a
// machine without CLBlast, ACCEL_OPENCL_GEMM=kernel, and any GEMM that
// CLBlast refuses at run time (logged as a warning).
//
// beta == 0 must not read C (a NaN there must not leak). Our kernel skips
// the read, and so do CLBlast's GEMM kernels (they store alpha * AB when
// beta is zero); the tests put NaN in C to check both.
#include <string.h>

#include "builtins.h"

// Whether CLBlast can take `g` on `device`.
static bool accel_opencl_gemm_blas_fits(const accel_opencl_device_t* device,
                                        const accel_plugin_gemm_t* g) {
  const accel_host_t* host = device->host;
  const char* mode = host->getenv(host, "ACCEL_OPENCL_GEMM");
  if (mode != NULL && strcmp(mode, "kernel") == 0) return false;
  if (g->c_dtype != g->a_dtype || g->k == 0) return false;
  if (g->a_dtype != ACCEL_DTYPE_F32 &&
      !(g->a_dtype == ACCEL_DTYPE_F16 && device->has_fp16)) {
    return false;
  }
  size_t es = accel_opencl_dtype_size(g->a_dtype);
  return g->a_offset % es == 0 && g->b_offset % es == 0 &&
         g->c_offset % es == 0;
}

// Tries CLBlast. ACCEL_OK when it took the GEMM, ACCEL_ERROR_UNSUPPORTED
// when our kernel must run instead (already logged), another status when
// enqueuing failed for good.
static accel_status_t accel_opencl_gemm_blas(accel_opencl_stream_t* stream,
                                             const accel_plugin_gemm_t* g) {
  accel_opencl_device_t* device = stream->device;
  const accel_host_t* host = device->host;
  size_t es = accel_opencl_dtype_size(g->a_dtype);
  cl_event event = NULL;
  int code = accel_opencl_clblast_gemm(
      device->plugin, g->a_dtype, g->trans_a != 0, g->trans_b != 0,
      (size_t)g->m, (size_t)g->n, (size_t)g->k, g->alpha,
      accel_opencl_cl_mem(g->a), (size_t)(g->a_offset / es), (size_t)g->lda,
      accel_opencl_cl_mem(g->b), (size_t)(g->b_offset / es), (size_t)g->ldb,
      g->beta, accel_opencl_cl_mem(g->c), (size_t)(g->c_offset / es),
      (size_t)g->ldc, stream->queue, &event);
  if (code == 0) {
    return accel_opencl_stream_enqueued(stream, CL_SUCCESS, event,
                                        "op_gemm (CLBlast)");
  }
  if (event != NULL) device->cl->clReleaseEvent(event);
  host->log(host, ACCEL_LOG_WARN,
            "CLBlast %sgemm %llux%llux%llu failed with status %d; "
            "using the plugin's GEMM kernel",
            g->a_dtype == ACCEL_DTYPE_F32 ? "S" : "H", (unsigned long long)g->m,
            (unsigned long long)g->n, (unsigned long long)g->k, code);
  return ACCEL_ERROR_UNSUPPORTED;
}

// The tiled kernel of gemm.cl.
static accel_status_t accel_opencl_gemm_kernel(accel_opencl_stream_t* stream,
                                               accel_opencl_builtins_t* b,
                                               const accel_plugin_gemm_t* g) {
  size_t ea = accel_opencl_dtype_size(g->a_dtype);
  size_t ec = accel_opencl_dtype_size(g->c_dtype);
  cl_ulong m = g->m, n = g->n, k = g->k;
  cl_mem am = accel_opencl_cl_mem(g->a), bm = accel_opencl_cl_mem(g->b),
         cm = accel_opencl_cl_mem(g->c);
  cl_ulong ao = g->a_offset / ea, bo = g->b_offset / ea, co = g->c_offset / ec;
  cl_ulong lda = g->lda, ldb = g->ldb, ldc = g->ldc;
  cl_uint ta = g->trans_a != 0, tb = g->trans_b != 0;
  cl_uint abt = g->a_dtype, ct = g->c_dtype, beta_zero = g->beta == 0.0;
  cl_float alpha = (cl_float)g->alpha, beta = (cl_float)g->beta;
  const accel_opencl_karg_t args[] = {
      {sizeof(m), &m},
      {sizeof(n), &n},
      {sizeof(k), &k},
      {sizeof(am), &am},
      {sizeof(ao), &ao},
      {sizeof(lda), &lda},
      {sizeof(ta), &ta},
      {sizeof(bm), &bm},
      {sizeof(bo), &bo},
      {sizeof(ldb), &ldb},
      {sizeof(tb), &tb},
      {sizeof(cm), &cm},
      {sizeof(co), &co},
      {sizeof(ldc), &ldc},
      {sizeof(abt), &abt},
      {sizeof(ct), &ct},
      {sizeof(alpha), &alpha},
      {sizeof(beta), &beta},
      {sizeof(beta_zero), &beta_zero},
  };
  // Work-groups of wg x wg items, each computing a 4wg x 4wg tile of C.
  size_t wg = b->gemm_tile, tile = 4 * wg;
  size_t global[2] = {(size_t)((g->n + tile - 1) / tile * wg),
                      (size_t)((g->m + tile - 1) / tile * wg)};
  size_t local[2] = {wg, wg};
  return accel_opencl_kernel_run(stream, &b->kernels[ACCEL_OPENCL_K_GEMM], args,
                                 19, 2, global, local, "op_gemm");
}

accel_status_t accel_opencl_op_gemm(void* device, void* stream,
                                    const accel_plugin_gemm_t* gemm) {
  accel_opencl_device_t* d = device;
  if (accel_opencl_gemm_blas_fits(d, gemm) &&
      accel_opencl_clblast_open(d->plugin)) {
    accel_status_t status = accel_opencl_gemm_blas(stream, gemm);
    if (status != ACCEL_ERROR_UNSUPPORTED) return status;
  }
  // Our kernel; its program is built at the first use.
  accel_opencl_builtins_t* b = NULL;
  accel_status_t status = accel_opencl_builtins_get(d, &b);
  if (status != ACCEL_OK) return status;
  return accel_opencl_gemm_kernel(stream, b, gemm);
}
