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
//
// Strided-batched GEMM (ABI 1.4) takes the same route with
// CLBlastSgemmStridedBatched / CLBlastHgemmStridedBatched (strides that
// are whole elements; a CLBlast without them, or one that refuses the
// batch, falls back to the kernel), else the same tiled kernel with the
// batch as the third dimension of its grid.
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
  size_t es = accel_plugin_dtype_size(g->a_dtype);
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
  size_t es = accel_plugin_dtype_size(g->a_dtype);
  cl_event event = NULL;
  uint64_t mark = accel_opencl_stream_mark(stream);
  int code = accel_opencl_clblast_gemm(
      device->plugin, g->a_dtype, g->trans_a != 0, g->trans_b != 0,
      (size_t)g->m, (size_t)g->n, (size_t)g->k, g->alpha,
      accel_opencl_cl_mem(g->a), (size_t)(g->a_offset / es), (size_t)g->lda,
      accel_opencl_cl_mem(g->b), (size_t)(g->b_offset / es), (size_t)g->ldb,
      g->beta, accel_opencl_cl_mem(g->c), (size_t)(g->c_offset / es),
      (size_t)g->ldc, stream->queue, &event);
  if (code == 0) {
    return accel_opencl_stream_tracked(stream, CL_SUCCESS, event, mark,
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

// The tiled kernel of gemm.cl, for one GEMM (`batch` NULL) or a batch.
static accel_status_t accel_opencl_gemm_kernel(
    accel_opencl_stream_t* stream, accel_opencl_builtins_t* b,
    const accel_plugin_gemm_t* g, const accel_plugin_gemm_batch_t* batch) {
  size_t ea = accel_plugin_dtype_size(g->a_dtype);
  size_t ec = accel_plugin_dtype_size(g->c_dtype);
  cl_ulong m = g->m, n = g->n, k = g->k;
  cl_mem am = accel_opencl_cl_mem(g->a), bm = accel_opencl_cl_mem(g->b),
         cm = accel_opencl_cl_mem(g->c);
  cl_ulong ao = g->a_offset / ea, bo = g->b_offset / ea, co = g->c_offset / ec;
  cl_ulong lda = g->lda, ldb = g->ldb, ldc = g->ldc;
  cl_uint ta = g->trans_a != 0, tb = g->trans_b != 0;
  cl_uint abt = g->a_dtype, ct = g->c_dtype, beta_zero = g->beta == 0.0;
  cl_float alpha = (cl_float)g->alpha, beta = (cl_float)g->beta;
  cl_ulong sa = batch != NULL ? batch->stride_a / ea : 0;
  cl_ulong sb = batch != NULL ? batch->stride_b / ea : 0;
  cl_ulong sc = batch != NULL ? batch->stride_c / ec : 0;
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
      {sizeof(sa), &sa},
      {sizeof(sb), &sb},
      {sizeof(sc), &sc},
  };
  // Work-groups of wg x wg items, each computing a 4wg x 4wg tile of C;
  // the third dimension is the batch member.
  size_t wg = b->gemm_tile, tile = 4 * wg;
  size_t global[3] = {(size_t)((g->n + tile - 1) / tile * wg),
                      (size_t)((g->m + tile - 1) / tile * wg),
                      batch != NULL ? (size_t)batch->count : 1};
  size_t local[3] = {wg, wg, 1};
  return accel_opencl_kernel_run(stream, &b->kernels[ACCEL_OPENCL_K_GEMM], args,
                                 22, 3, global, local,
                                 batch != NULL ? "op_gemm_batched" : "op_gemm");
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
  return accel_opencl_gemm_kernel(stream, b, gemm, NULL);
}

// CLBlastXgemmStridedBatched. ACCEL_ERROR_UNSUPPORTED (logged) when the
// kernel must run instead.
static accel_status_t accel_opencl_gemm_blas_batched(
    accel_opencl_stream_t* stream, const accel_plugin_gemm_t* g,
    const accel_plugin_gemm_batch_t* batch) {
  accel_opencl_device_t* device = stream->device;
  const accel_host_t* host = device->host;
  size_t es = accel_plugin_dtype_size(g->a_dtype);
  if (!accel_opencl_clblast_has_batched(device->plugin, g->a_dtype) ||
      batch->stride_a % es != 0 || batch->stride_b % es != 0 ||
      batch->stride_c % es != 0) {
    return ACCEL_ERROR_UNSUPPORTED;
  }
  cl_event event = NULL;
  uint64_t mark = accel_opencl_stream_mark(stream);
  int code = accel_opencl_clblast_gemm_batched(
      device->plugin, g->a_dtype, g->trans_a != 0, g->trans_b != 0,
      (size_t)g->m, (size_t)g->n, (size_t)g->k, g->alpha,
      accel_opencl_cl_mem(g->a), (size_t)(g->a_offset / es), (size_t)g->lda,
      (size_t)(batch->stride_a / es), accel_opencl_cl_mem(g->b),
      (size_t)(g->b_offset / es), (size_t)g->ldb,
      (size_t)(batch->stride_b / es), g->beta, accel_opencl_cl_mem(g->c),
      (size_t)(g->c_offset / es), (size_t)g->ldc,
      (size_t)(batch->stride_c / es), (size_t)batch->count, stream->queue,
      &event);
  if (code == 0) {
    return accel_opencl_stream_tracked(stream, CL_SUCCESS, event, mark,
                                       "op_gemm_batched (CLBlast)");
  }
  if (event != NULL) device->cl->clReleaseEvent(event);
  host->log(host, ACCEL_LOG_WARN,
            "CLBlast %sgemmStridedBatched %llu x %llux%llux%llu failed with "
            "status %d; using the plugin's GEMM kernel",
            g->a_dtype == ACCEL_DTYPE_F32 ? "S" : "H",
            (unsigned long long)batch->count, (unsigned long long)g->m,
            (unsigned long long)g->n, (unsigned long long)g->k, code);
  return ACCEL_ERROR_UNSUPPORTED;
}

accel_status_t accel_opencl_op_gemm_batched(
    void* device, void* stream, const accel_plugin_gemm_t* gemm,
    const accel_plugin_gemm_batch_t* batch) {
  accel_opencl_device_t* d = device;
  if (accel_opencl_gemm_blas_fits(d, gemm) &&
      accel_opencl_clblast_open(d->plugin)) {
    accel_status_t status = accel_opencl_gemm_blas_batched(stream, gemm, batch);
    if (status != ACCEL_ERROR_UNSUPPORTED) return status;
  }
  accel_opencl_builtins_t* b = NULL;
  accel_status_t status = accel_opencl_builtins_get(d, &b);
  if (status != ACCEL_OK) return status;
  return accel_opencl_gemm_kernel(stream, b, gemm, batch);
}
