// SPDX-License-Identifier: MIT
//
// libfakecublas: a test-only stand-in for cuBLAS, loaded by the CUDA
// plugin through ACCEL_CUDA_CUBLAS (and by accel-bench's raw baselines as
// libcublas.so.13 on LD_LIBRARY_PATH). It runs on libfakecuda: handles
// belong to the context current at cublasCreate, and a GEMM is a host task
// queued on the handle's stream, so it is ordered with the stream's other
// work exactly as on a GPU. It checks the plugin's use of cuBLAS (operand
// order, transposes, leading dimensions, types, alpha and beta), not
// NVIDIA's kernels.
//
// cublasGemmEx is column-major, as the real one: C = alpha op(A) op(B) +
// beta C with C read only when beta != 0. Types: A and B CUDA_R_32F,
// CUDA_R_16F or CUDA_R_16BF, C the same or CUDA_R_32F for 16-bit inputs;
// compute CUBLAS_COMPUTE_32F (and _PEDANTIC), or _FAST_TF32 for f32, for
// which the inputs are rounded to TF32 (10 mantissa bits, to nearest, ties
// away from zero, as cvt.rna.tf32.f32) to mimic the tensor cores. Products
// accumulate in double; alpha and beta apply in f32, rounded to C's type.
// The workspace: cublasSetWorkspace checks it is device memory of the
// handle's context, and each queued GEMM scribbles over the first and last
// 4 KiB of the workspace in effect when it was queued (as cuBLAS's kernels
// use it as scratch), faulting if that memory is gone by the time it runs,
// so a workspace reused or freed before the GEMM has run shows. The
// test-only fakecublas_last_workspace() reports the workspace of the last
// GEMM queued.
//
// Math mode (cublasSetMathMode): unless the handle's mode has
// CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION, a GEMM with a 16-bit C
// reduces its split-K partial sums in C's type, as cuBLAS is allowed to by
// default: k is cut into slices of FAKECUBLAS_SPLIT_K, each slice's sum is
// rounded to C's type and the slices are added in C's type. A plugin that
// promises f32 accumulation must forbid it.
// Like cuBLAS 13, the library needs a CUDA 13 driver: cublasCreate returns
// CUBLAS_STATUS_NOT_INITIALIZED when libfakecuda reports an older one.
//
// cublasGemmStridedBatchedEx runs each member as cublasGemmEx would (one
// queued task per member, in order), with the same checks and the
// workspace of the call; a call counts once for fakecublas_last_workspace
// and once for the test-only fakecublas_strided_batched_count().
//
// Not modelled: device pointer mode for alpha and beta, the default
// workspace cuBLAS allocates for itself, algorithms, other cuBLAS
// functions.
#include <accel/plugin_dtype.h>
#include <cublas_api.h>
#include <stdlib.h>
#include <string.h>

#include "fakecuda.h"

// Slice of k whose partial sums a reduced-precision reduction rounds.
#define FAKECUBLAS_SPLIT_K 32
// The cuBLAS major this stand-in plays, and the driver it needs.
#define FAKECUBLAS_DRIVER_NEEDED 13000

// Bytes scribbled at each end of a GEMM's workspace.
#define FAKECUBLAS_SCRIBBLE 4096u

// The workspace of the last GEMM queued, for fakecublas_last_workspace().
static pthread_mutex_t fakecublas_last_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t fakecublas_last_ptr;
static size_t fakecublas_last_size;
static unsigned long fakecublas_gemms;

// Test-only, not cuBLAS: the workspace in effect for the last cublasGemmEx
// that queued work (0 and 0 when none was set), and how many such GEMMs
// there have been. Any argument may be NULL.
FAKECUDA_API void fakecublas_last_workspace(uintptr_t* out_ptr,
                                            size_t* out_size,
                                            unsigned long* out_gemms) {
  pthread_mutex_lock(&fakecublas_last_lock);
  if (out_ptr != NULL) *out_ptr = fakecublas_last_ptr;
  if (out_size != NULL) *out_size = fakecublas_last_size;
  if (out_gemms != NULL) *out_gemms = fakecublas_gemms;
  pthread_mutex_unlock(&fakecublas_last_lock);
}

struct cublasContext {
  CUcontext ctx;  // current at cublasCreate
  CUstream stream;
  void* workspace;
  size_t workspace_size;
  cublasMath_t math_mode;
};

FAKECUDA_API cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (handle == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = NULL;
  CUcontext ctx = fakecuda_current();
  int driver = 0;
  if (ctx == NULL || cuDriverGetVersion(&driver) != CUDA_SUCCESS ||
      driver < FAKECUBLAS_DRIVER_NEEDED) {
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  cublasHandle_t h = calloc(1, sizeof(*h));
  if (h == NULL) return CUBLAS_STATUS_ALLOC_FAILED;
  h->ctx = ctx;
  *handle = h;
  return CUBLAS_STATUS_SUCCESS;
}

// cublasDestroy synchronises the device (the cuBLAS documentation says it
// "implicitly calls cudaDeviceSynchronize()"); the fake counts the calls.
static atomic_ulong fakecublas_destroys;

// Test-only, not cuBLAS: cublasDestroy calls so far.
FAKECUDA_API unsigned long fakecublas_destroy_count(void) {
  return atomic_load(&fakecublas_destroys);
}

FAKECUDA_API cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (handle == NULL) return CUBLAS_STATUS_NOT_INITIALIZED;
  atomic_fetch_add(&fakecublas_destroys, 1);
  free(handle);
  return CUBLAS_STATUS_SUCCESS;
}

FAKECUDA_API cublasStatus_t cublasSetStream_v2(cublasHandle_t handle,
                                               cudaStream_t stream) {
  if (handle == NULL) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = stream;
  // As documented: setting the stream resets the workspace to the default.
  handle->workspace = NULL;
  handle->workspace_size = 0;
  return CUBLAS_STATUS_SUCCESS;
}

FAKECUDA_API cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle,
                                                  void* workspace,
                                                  size_t size) {
  if (handle == NULL) return CUBLAS_STATUS_NOT_INITIALIZED;
  // Device memory of the handle's context, 256-byte aligned.
  if (((uintptr_t)workspace & 255u) != 0 ||
      (size != 0 &&
       !fakecuda_range_ok(handle->ctx, (uintptr_t)workspace, size))) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  handle->workspace = workspace;
  handle->workspace_size = size;
  return CUBLAS_STATUS_SUCCESS;
}

FAKECUDA_API cublasStatus_t cublasSetMathMode(cublasHandle_t handle,
                                              cublasMath_t mode) {
  if (handle == NULL) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->math_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

FAKECUDA_API cublasStatus_t cublasGetMathMode(cublasHandle_t handle,
                                              cublasMath_t* mode) {
  if (handle == NULL) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode == NULL) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->math_mode;
  return CUBLAS_STATUS_SUCCESS;
}

FAKECUDA_API const char* cublasGetStatusName(cublasStatus_t status) {
  switch (status) {
#define FAKECUBLAS_NAME(s) \
  case s:                  \
    return #s;
    FAKECUBLAS_NAME(CUBLAS_STATUS_SUCCESS)
    FAKECUBLAS_NAME(CUBLAS_STATUS_NOT_INITIALIZED)
    FAKECUBLAS_NAME(CUBLAS_STATUS_ALLOC_FAILED)
    FAKECUBLAS_NAME(CUBLAS_STATUS_INVALID_VALUE)
    FAKECUBLAS_NAME(CUBLAS_STATUS_ARCH_MISMATCH)
    FAKECUBLAS_NAME(CUBLAS_STATUS_MAPPING_ERROR)
    FAKECUBLAS_NAME(CUBLAS_STATUS_EXECUTION_FAILED)
    FAKECUBLAS_NAME(CUBLAS_STATUS_INTERNAL_ERROR)
    FAKECUBLAS_NAME(CUBLAS_STATUS_NOT_SUPPORTED)
    FAKECUBLAS_NAME(CUBLAS_STATUS_LICENSE_ERROR)
    default:
      return "CUBLAS_STATUS_UNKNOWN";
  }
}

// One GEMM, queued on the handle's stream.
typedef struct fakecublas_gemm {
  CUcontext ctx;
  bool trans_a, trans_b, tf32;
  bool reduced;  // split-K partial sums reduced in C's 16-bit type
  int m, n, k, lda, ldb, ldc;
  float alpha, beta;
  uintptr_t a, b, c;
  cudaDataType ab_type, c_type;
  uintptr_t workspace;  // in effect when queued; 0 if none was set
  size_t workspace_size;
} fakecublas_gemm_t;

static size_t fakecublas_size(cudaDataType t) {
  return t == CUDA_R_32F ? 4 : 2;
}

static float fakecublas_load(uintptr_t p, cudaDataType t, size_t i) {
  uint16_t h;
  float f;
  if (t == CUDA_R_32F) {
    memcpy(&f, (const void*)(p + 4 * i), 4);
    return f;
  }
  memcpy(&h, (const void*)(p + 2 * i), 2);
  return t == CUDA_R_16F ? accel_plugin_f16_to_f32(h)
                         : accel_plugin_bf16_to_f32(h);
}

static void fakecublas_store(uintptr_t p, cudaDataType t, size_t i, float f) {
  uint16_t h;
  if (t == CUDA_R_32F) {
    memcpy((void*)(p + 4 * i), &f, 4);
    return;
  }
  h = t == CUDA_R_16F ? accel_plugin_f32_to_f16(f)
                      : accel_plugin_f32_to_bf16(f);
  memcpy((void*)(p + 2 * i), &h, 2);
}

// Rounds an f32 to TF32 (10 mantissa bits), to nearest, ties away.
static float fakecublas_tf32(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & ~0x1fffu;
  memcpy(&f, &u, 4);
  return f;
}

// Rounds `f` to `t` (f16 or bf16) and back.
static float fakecublas_round(cudaDataType t, float f) {
  return t == CUDA_R_16F ? accel_plugin_f16_to_f32(accel_plugin_f32_to_f16(f))
         : t == CUDA_R_16BF
             ? accel_plugin_bf16_to_f32(accel_plugin_f32_to_bf16(f))
             : f;
}

// Elements an operand spans: `ld` per column, the last column `rows` long.
static size_t fakecublas_span(int rows, int cols, int ld) {
  return rows == 0 || cols == 0 ? 0 : (size_t)ld * (size_t)(cols - 1) + rows;
}

// The queued task. False (a device fault) if an operand is not memory
// the handle's context can reach.
static bool fakecublas_gemm_run(void* arg) {
  const fakecublas_gemm_t* g = arg;
  size_t es = fakecublas_size(g->ab_type), cs = fakecublas_size(g->c_type);
  int ar = g->trans_a ? g->k : g->m, ac = g->trans_a ? g->m : g->k;
  int br = g->trans_b ? g->n : g->k, bc = g->trans_b ? g->k : g->n;
  if (!fakecuda_range_ok(g->ctx, g->a, es * fakecublas_span(ar, ac, g->lda)) ||
      !fakecuda_range_ok(g->ctx, g->b, es * fakecublas_span(br, bc, g->ldb)) ||
      !fakecuda_range_ok(g->ctx, g->c,
                         cs * fakecublas_span(g->m, g->n, g->ldc)) ||
      !fakecuda_range_ok(g->ctx, g->workspace, g->workspace_size)) {
    return false;
  }
  if (g->workspace_size != 0) {
    size_t n = g->workspace_size < FAKECUBLAS_SCRIBBLE ? g->workspace_size
                                                       : FAKECUBLAS_SCRIBBLE;
    memset((void*)g->workspace, 0xa5, n);
    memset((void*)(g->workspace + g->workspace_size - n), 0x5a, n);
  }
  for (int j = 0; j < g->n; j++) {
    for (int i = 0; i < g->m; i++) {
      double acc = 0.0;
      float reduced = 0.0f;  // the slices' sum, in C's type
      for (int l = 0; l < g->k; l++) {
        size_t ai = g->trans_a ? (size_t)l + (size_t)i * g->lda
                               : (size_t)i + (size_t)l * g->lda;
        size_t bi = g->trans_b ? (size_t)j + (size_t)l * g->ldb
                               : (size_t)l + (size_t)j * g->ldb;
        float x = fakecublas_load(g->a, g->ab_type, ai);
        float y = fakecublas_load(g->b, g->ab_type, bi);
        if (g->tf32) x = fakecublas_tf32(x), y = fakecublas_tf32(y);
        acc += (double)x * (double)y;
        if (g->reduced && (l % FAKECUBLAS_SPLIT_K == FAKECUBLAS_SPLIT_K - 1 ||
                           l == g->k - 1)) {
          reduced = fakecublas_round(
              g->c_type, reduced + fakecublas_round(g->c_type, (float)acc));
          acc = 0.0;
        }
      }
      if (g->reduced) acc = reduced;
      size_t ci = (size_t)i + (size_t)j * g->ldc;
      float r = g->alpha * (float)acc;
      if (g->beta != 0.0f) r += g->beta * fakecublas_load(g->c, g->c_type, ci);
      fakecublas_store(g->c, g->c_type, ci, r);
    }
  }
  return true;
}

// Whether the type combination is one cublasGemmEx supports.
static bool fakecublas_types_ok(cudaDataType a, cudaDataType b, cudaDataType c,
                                cublasComputeType_t compute) {
  bool f32 =
      compute == CUBLAS_COMPUTE_32F || compute == CUBLAS_COMPUTE_32F_PEDANTIC;
  if (a != b) return false;
  if (a == CUDA_R_32F) {
    return c == CUDA_R_32F && (f32 || compute == CUBLAS_COMPUTE_32F_FAST_TF32);
  }
  return (a == CUDA_R_16F || a == CUDA_R_16BF) && (c == a || c == CUDA_R_32F) &&
         f32;
}

FAKECUDA_API cublasStatus_t cublasGemmEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
    int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
    int lda, const void* B, cudaDataType Btype, int ldb, const void* beta,
    void* C, cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
    cublasGemmAlgo_t algo) {
  (void)algo;
  if (handle == NULL) return CUBLAS_STATUS_NOT_INITIALIZED;
  bool ta = transa == CUBLAS_OP_T || transa == CUBLAS_OP_C;
  bool tb = transb == CUBLAS_OP_T || transb == CUBLAS_OP_C;
  // The checks and order of cuBLAS's own argument validation.
  if ((!ta && transa != CUBLAS_OP_N) || (!tb && transb != CUBLAS_OP_N) ||
      m < 0 || n < 0 || k < 0 || alpha == NULL || beta == NULL ||
      lda < (ta ? (k > 1 ? k : 1) : (m > 1 ? m : 1)) ||
      ldb < (tb ? (n > 1 ? n : 1) : (k > 1 ? k : 1)) || ldc < (m > 1 ? m : 1)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (!fakecublas_types_ok(Atype, Btype, Ctype, computeType)) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  // The handle is bound to the device current when it was created.
  if (fakecuda_current() != handle->ctx) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (m == 0 || n == 0) return CUBLAS_STATUS_SUCCESS;
  fakecublas_gemm_t* g = malloc(sizeof(*g));
  if (g == NULL) return CUBLAS_STATUS_ALLOC_FAILED;
  *g = (fakecublas_gemm_t){
      .ctx = handle->ctx,
      .trans_a = ta,
      .trans_b = tb,
      .tf32 = computeType == CUBLAS_COMPUTE_32F_FAST_TF32,
      .reduced = Ctype != CUDA_R_32F &&
                 !(handle->math_mode &
                   CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION),
      .m = m,
      .n = n,
      .k = k,
      .lda = lda,
      .ldb = ldb,
      .ldc = ldc,
      .a = (uintptr_t)A,
      .b = (uintptr_t)B,
      .c = (uintptr_t)C,
      .ab_type = Atype,
      .c_type = Ctype,
      .workspace = (uintptr_t)handle->workspace,
      .workspace_size = handle->workspace_size};
  memcpy(&g->alpha, alpha, sizeof(float));  // host pointer mode
  memcpy(&g->beta, beta, sizeof(float));
  uintptr_t workspace = g->workspace;
  size_t workspace_size = g->workspace_size;
  CUresult r =
      fakecuda_enqueue(handle->ctx, handle->stream, fakecublas_gemm_run, g);
  if (r != CUDA_SUCCESS) return CUBLAS_STATUS_EXECUTION_FAILED;
  pthread_mutex_lock(&fakecublas_last_lock);
  fakecublas_last_ptr = workspace;
  fakecublas_last_size = workspace_size;
  fakecublas_gemms++;
  pthread_mutex_unlock(&fakecublas_last_lock);
  return CUBLAS_STATUS_SUCCESS;
}

// Calls of cublasGemmStridedBatchedEx that queued work.
static atomic_ulong fakecublas_strided_batched_calls;

// Test-only, not cuBLAS: cublasGemmStridedBatchedEx calls that queued work.
FAKECUDA_API unsigned long fakecublas_strided_batched_count(void) {
  return atomic_load(&fakecublas_strided_batched_calls);
}

FAKECUDA_API cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
    int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
    int lda, long long strideA, const void* B, cudaDataType Btype, int ldb,
    long long strideB, const void* beta, void* C, cudaDataType Ctype, int ldc,
    long long strideC, int batchCount, cublasComputeType_t computeType,
    cublasGemmAlgo_t algo) {
  (void)algo;
  if (handle == NULL) return CUBLAS_STATUS_NOT_INITIALIZED;
  bool ta = transa == CUBLAS_OP_T || transa == CUBLAS_OP_C;
  bool tb = transb == CUBLAS_OP_T || transb == CUBLAS_OP_C;
  // cublasGemmEx's checks, and a batch count that is not negative.
  if ((!ta && transa != CUBLAS_OP_N) || (!tb && transb != CUBLAS_OP_N) ||
      m < 0 || n < 0 || k < 0 || batchCount < 0 || alpha == NULL ||
      beta == NULL || lda < (ta ? (k > 1 ? k : 1) : (m > 1 ? m : 1)) ||
      ldb < (tb ? (n > 1 ? n : 1) : (k > 1 ? k : 1)) || ldc < (m > 1 ? m : 1)) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  if (!fakecublas_types_ok(Atype, Btype, Ctype, computeType)) {
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  if (fakecuda_current() != handle->ctx) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (m == 0 || n == 0 || batchCount == 0) return CUBLAS_STATUS_SUCCESS;
  size_t es = fakecublas_size(Atype), cs = fakecublas_size(Ctype);
  for (int i = 0; i < batchCount; i++) {
    fakecublas_gemm_t* g = malloc(sizeof(*g));
    if (g == NULL) return CUBLAS_STATUS_ALLOC_FAILED;
    *g = (fakecublas_gemm_t){
        .ctx = handle->ctx,
        .trans_a = ta,
        .trans_b = tb,
        .tf32 = computeType == CUBLAS_COMPUTE_32F_FAST_TF32,
        .reduced = Ctype != CUDA_R_32F &&
                   !(handle->math_mode &
                     CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION),
        .m = m,
        .n = n,
        .k = k,
        .lda = lda,
        .ldb = ldb,
        .ldc = ldc,
        .a = (uintptr_t)A + (uintptr_t)((long long)i * strideA * (long long)es),
        .b = (uintptr_t)B + (uintptr_t)((long long)i * strideB * (long long)es),
        .c = (uintptr_t)C + (uintptr_t)((long long)i * strideC * (long long)cs),
        .ab_type = Atype,
        .c_type = Ctype,
        .workspace = (uintptr_t)handle->workspace,
        .workspace_size = handle->workspace_size};
    memcpy(&g->alpha, alpha, sizeof(float));  // host pointer mode
    memcpy(&g->beta, beta, sizeof(float));
    CUresult r =
        fakecuda_enqueue(handle->ctx, handle->stream, fakecublas_gemm_run, g);
    if (r != CUDA_SUCCESS) return CUBLAS_STATUS_EXECUTION_FAILED;
  }
  atomic_fetch_add(&fakecublas_strided_batched_calls, 1);
  pthread_mutex_lock(&fakecublas_last_lock);
  fakecublas_last_ptr = (uintptr_t)handle->workspace;
  fakecublas_last_size = handle->workspace_size;
  fakecublas_gemms++;
  pthread_mutex_unlock(&fakecublas_last_lock);
  return CUBLAS_STATUS_SUCCESS;
}
