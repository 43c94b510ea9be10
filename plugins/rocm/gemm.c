// SPDX-License-Identifier: MIT
//
// op_gemm: rocBLAS when it is installed (blas.c), else the plugin's own
// tiled kernel (accel_rocm_gemm in kernels/ops.hip). Both take every dtype
// combination plugin.h allows (f32; f16 and bf16 with C of the same type
// or f32), transposes and leading dimensions, accumulate in f32, and never
// read C when beta is 0.
//
// rocBLAS is column-major. A row-major C (m x n, ldc) is the column-major
// C^T (n x m, ldc), and C^T = op(B)^T op(A)^T, so the call swaps the
// operands: gemm_ex(op_b, op_a, n, m, k, B, ldb, A, lda, C, ldc), with the
// row-major leading dimensions unchanged. k = 0 (C = beta C), sizes above
// INT_MAX, and a device whose handle could not be created go to the
// kernel.
#include <limits.h>

#include "accel_rocm.h"
#include "kernels/ops_impl.h"

// The rocBLAS datatype of an accel dtype (F32, F16 or BF16).
static int accel_rocm_blas_type(uint32_t dtype) {
  return dtype == ACCEL_DTYPE_F16    ? ACCEL_ROCM_BLAS_F16
         : dtype == ACCEL_DTYPE_BF16 ? ACCEL_ROCM_BLAS_BF16
                                     : ACCEL_ROCM_BLAS_F32;
}

// Enqueues `g` on rocBLAS. Returns ACCEL_ERROR_UNSUPPORTED, without
// recording a message, when rocBLAS cannot take it, so the caller falls
// back to the kernel.
static accel_status_t accel_rocm_gemm_blas(accel_rocm_device_t* device,
                                           void* stream,
                                           const accel_rocm_gemm_args_t* g) {
  if (g->k == 0 || g->m > INT_MAX || g->n > INT_MAX || g->k > INT_MAX ||
      g->lda > INT_MAX || g->ldb > INT_MAX || g->ldc > INT_MAX) {
    return ACCEL_ERROR_UNSUPPORTED;
  }
  const accel_rocm_blas_t* blas = accel_rocm_blas_get(device->plugin);
  if (blas == NULL) return ACCEL_ERROR_UNSUPPORTED;
  accel_status_t status = accel_rocm_device_use(device);
  if (status != ACCEL_OK) return status;
  pthread_mutex_lock(&device->blas_lock);
  if (device->blas == NULL && !device->blas_failed) {
    int rc = blas->create_handle(&device->blas);
    if (rc != 0) {
      device->blas = NULL;
      device->blas_failed = true;
      device->host->log(device->host, ACCEL_LOG_WARN,
                        "%s: rocblas_create_handle failed (%d); GEMM uses "
                        "the tiled kernel",
                        device->prefix, rc);
    }
  }
  if (device->blas == NULL) {
    pthread_mutex_unlock(&device->blas_lock);
    return ACCEL_ERROR_UNSUPPORTED;
  }
  int ab = accel_rocm_blas_type(g->ab_dtype);
  int c = accel_rocm_blas_type(g->c_dtype);
  int rc = blas->set_stream(device->blas, accel_rocm_stream_handle(stream));
  if (rc == 0) {
    rc = blas->gemm_ex(
        device->blas, g->trans_b ? ACCEL_ROCM_BLAS_OP_T : ACCEL_ROCM_BLAS_OP_N,
        g->trans_a ? ACCEL_ROCM_BLAS_OP_T : ACCEL_ROCM_BLAS_OP_N, (int)g->n,
        (int)g->m, (int)g->k, &g->alpha, g->b, ab, (int)g->ldb, g->a, ab,
        (int)g->lda, &g->beta, g->c, c, (int)g->ldc, g->c, c, (int)g->ldc,
        ACCEL_ROCM_BLAS_F32, ACCEL_ROCM_BLAS_ALGO_STANDARD, 0, 0);
  }
  pthread_mutex_unlock(&device->blas_lock);
  if (rc != 0) {
    return device->host->fail(device->host, ACCEL_ERROR_BACKEND,
                              "%s: rocblas_gemm_ex failed with rocblas_status "
                              "%d",
                              device->prefix, rc);
  }
  return ACCEL_OK;
}

// Largest grid y (rows of tiles per launch); the kernel loops over more.
#define ACCEL_ROCM_GEMM_MAX_GRID_Y 65535u
// Largest grid x (columns of tiles).
#define ACCEL_ROCM_GEMM_MAX_GRID_X 0x7fffffffu

accel_status_t accel_rocm_op_gemm(void* device_ptr, void* stream,
                                  const accel_plugin_gemm_t* gemm) {
  accel_rocm_device_t* device = device_ptr;
  const accel_host_t* host = device->host;
  bool half_in =
      gemm->a_dtype == ACCEL_DTYPE_F16 || gemm->a_dtype == ACCEL_DTYPE_BF16;
  if ((gemm->a_dtype != ACCEL_DTYPE_F32 && !half_in) ||
      gemm->b_dtype != gemm->a_dtype ||
      (gemm->c_dtype != gemm->a_dtype &&
       !(half_in && gemm->c_dtype == ACCEL_DTYPE_F32))) {
    return host->fail(host, ACCEL_ERROR_UNSUPPORTED,
                      "%s: gemm: unsupported dtypes a=%u b=%u c=%u",
                      device->prefix, (unsigned)gemm->a_dtype,
                      (unsigned)gemm->b_dtype, (unsigned)gemm->c_dtype);
  }
  uint64_t col_tiles =
      (gemm->n + ACCEL_ROCM_GEMM_TILE - 1) / ACCEL_ROCM_GEMM_TILE;
  uint64_t row_tiles =
      (gemm->m + ACCEL_ROCM_GEMM_TILE - 1) / ACCEL_ROCM_GEMM_TILE;
  if (col_tiles > ACCEL_ROCM_GEMM_MAX_GRID_X) {
    return host->fail(host, ACCEL_ERROR_UNSUPPORTED,
                      "%s: gemm: n = %llu is too large", device->prefix,
                      (unsigned long long)gemm->n);
  }
  accel_rocm_gemm_args_t g = {
      .a = (const unsigned char*)gemm->a + gemm->a_offset,
      .b = (const unsigned char*)gemm->b + gemm->b_offset,
      .c = (unsigned char*)gemm->c + gemm->c_offset,
      .m = gemm->m,
      .n = gemm->n,
      .k = gemm->k,
      .lda = gemm->lda,
      .ldb = gemm->ldb,
      .ldc = gemm->ldc,
      .alpha = (float)gemm->alpha,
      .beta = (float)gemm->beta,
      .ab_dtype = gemm->a_dtype,
      .c_dtype = gemm->c_dtype,
      .trans_a = gemm->trans_a != 0,
      .trans_b = gemm->trans_b != 0};
  accel_status_t status = accel_rocm_gemm_blas(device, stream, &g);
  if (status != ACCEL_ERROR_UNSUPPORTED) return status;
  const accel_rocm_builtin_t* b = NULL;
  status = accel_rocm_builtin_get(device, &b);
  if (status != ACCEL_OK) return status;
  uint32_t grid[3] = {(uint32_t)col_tiles,
                      (uint32_t)(row_tiles < ACCEL_ROCM_GEMM_MAX_GRID_Y
                                     ? row_tiles
                                     : ACCEL_ROCM_GEMM_MAX_GRID_Y),
                      1};
  uint32_t block[3] = {ACCEL_ROCM_GEMM_TILE, ACCEL_ROCM_GEMM_TILE, 1};
  return accel_rocm_launch_builtin(device, b->gemm, "gemm", stream, grid, block,
                                   &g);
}
