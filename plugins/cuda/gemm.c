// SPDX-License-Identifier: MIT
//
// GEMM on cuBLAS, which is opened with dlopen at the first GEMM that needs
// it (the library named by ACCEL_CUDA_CUBLAS when set, otherwise the
// sonames the driver can run: libcublas.so.13 then .12 on a CUDA 13
// driver, only .12 on a 12.x one, since a cuBLAS major needs a driver of
// at least that major; an unversioned libcublas.so is not tried, as it may
// be either), so the plugin loads and
// accel-info stays fast where cuBLAS is absent; GEMM then fails with
// ACCEL_ERROR_UNSUPPORTED naming the libraries tried (or the dlerror()
// text for the named one).
//
// accel's GEMM is row-major and cuBLAS is column-major. A row-major matrix
// is the column-major view of its transpose, so C = op(A) op(B) is computed
// as C^T = op(B)^T op(A)^T: cublasGemmEx with the operands swapped, m and
// n swapped, and each operand's transpose flag kept.
//
// Each stream gets its own cuBLAS handle, created at its first GEMM, bound
// to the stream once (cublasSetStream) and destroyed with the stream, so
// concurrent GEMMs on different streams never share a handle. Each handle
// gets CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION: by default cuBLAS
// may reduce split-K partial sums in the output type (f16/bf16), and
// plugin.h promises f32 accumulation; the compute type is
// CUBLAS_COMPUTE_32F (or _FAST_TF32 when asked for).
//
// Workspace (ABI 1.2): op_gemm_workspace asks the core for 32 MiB on sm_90
// and newer, 4 MiB before (what the cuBLAS documentation recommends for
// cublasSetWorkspace), and the core lends it from its caching allocator
// with each GEMM, so it shows in the memory statistics and an OOM can empty
// the cache. The lent memory changes from GEMM to GEMM, so every GEMM sets
// it on the handle (cublasSetWorkspace only stores the pointer) and holds
// the stream's mutex across cublasSetWorkspace and cublasGemmEx: two
// threads may enqueue GEMMs on one stream at once, and the handle's
// workspace is shared state (cuBLAS: a handle's configuration must not
// change under another thread's call). The GEMMs are serialised on the
// stream anyway. A core older than ABI 1.2 lends nothing: the handle then
// gets its own workspace from cuMemAlloc, at its first such GEMM, outside
// the core's statistics, as before.
//
// Strided-batched GEMM (ABI 1.4) is one cublasGemmStridedBatchedEx, with
// the same operand swap (B and its stride first), handle, workspace (one
// for the whole batch, as cuBLAS uses it) and compute type; batches above
// INT_MAX members go in several calls. k == 0 runs the scale kernel per
// member; a cuBLAS without cublasGemmStridedBatchedEx (it has been in
// cuBLAS since CUDA 9, but the symbol is looked up, not required) runs
// one cublasGemmEx per member.
#include <accel/plugin_dtype.h>
#include <cublas_api.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_cuda.h"

// Workspace per GEMM, as the cuBLAS documentation recommends for
// cublasSetWorkspace: 32 MiB on Hopper and newer, 4 MiB before.
#define ACCEL_CUDA_WORKSPACE_SM90 (32u << 20)
#define ACCEL_CUDA_WORKSPACE_DEFAULT (4u << 20)

typedef cublasStatus_t (*accel_cuda_cublas_create_t)(cublasHandle_t*);
typedef cublasStatus_t (*accel_cuda_cublas_destroy_t)(cublasHandle_t);
typedef cublasStatus_t (*accel_cuda_cublas_set_stream_t)(cublasHandle_t,
                                                         cudaStream_t);
typedef cublasStatus_t (*accel_cuda_cublas_set_workspace_t)(cublasHandle_t,
                                                            void*, size_t);
typedef cublasStatus_t (*accel_cuda_cublas_gemm_ex_t)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
    const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
    const void*, void*, cudaDataType, int, cublasComputeType_t,
    cublasGemmAlgo_t);
typedef const char* (*accel_cuda_cublas_status_name_t)(cublasStatus_t);
typedef cublasStatus_t (*accel_cuda_cublas_get_version_t)(cublasHandle_t, int*);
typedef cublasStatus_t (*accel_cuda_cublas_set_math_mode_t)(cublasHandle_t,
                                                            cublasMath_t);
typedef cublasStatus_t (*accel_cuda_cublas_gemm_strided_batched_ex_t)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
    const void*, const void*, cudaDataType, int, long long, const void*,
    cudaDataType, int, long long, const void*, void*, cudaDataType, int,
    long long, int, cublasComputeType_t, cublasGemmAlgo_t);

// The typedefs must match the toolkit's declarations (nothing is linked,
// so only the compiler can check them).
#define ACCEL_CUDA_SAME_TYPE(fn, type) \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&fn), type), #fn)
ACCEL_CUDA_SAME_TYPE(cublasCreate_v2, accel_cuda_cublas_create_t);
ACCEL_CUDA_SAME_TYPE(cublasDestroy_v2, accel_cuda_cublas_destroy_t);
ACCEL_CUDA_SAME_TYPE(cublasSetStream_v2, accel_cuda_cublas_set_stream_t);
ACCEL_CUDA_SAME_TYPE(cublasSetWorkspace_v2, accel_cuda_cublas_set_workspace_t);
ACCEL_CUDA_SAME_TYPE(cublasGemmEx, accel_cuda_cublas_gemm_ex_t);
ACCEL_CUDA_SAME_TYPE(cublasGetStatusName, accel_cuda_cublas_status_name_t);
ACCEL_CUDA_SAME_TYPE(cublasSetMathMode, accel_cuda_cublas_set_math_mode_t);
ACCEL_CUDA_SAME_TYPE(cublasGemmStridedBatchedEx,
                     accel_cuda_cublas_gemm_strided_batched_ex_t);

// A loaded cuBLAS. Immutable once published in plugin->blas.
struct accel_cuda_blas {
  void* library;
  char name[256];  // the soname or ACCEL_CUDA_CUBLAS path that loaded
  accel_cuda_cublas_create_t create;
  accel_cuda_cublas_destroy_t destroy;
  accel_cuda_cublas_set_stream_t set_stream;
  accel_cuda_cublas_set_workspace_t set_workspace;
  accel_cuda_cublas_gemm_ex_t gemm_ex;
  accel_cuda_cublas_set_math_mode_t set_math_mode;
  accel_cuda_cublas_status_name_t status_name;  // may be NULL
  // NULL without it: batches then run one gemm_ex per member.
  accel_cuda_cublas_gemm_strided_batched_ex_t gemm_strided_batched_ex;
};

// cuBLAS sonames, newest first, with the CUDA version of the driver each
// needs (the CUDA toolkit release notes: a toolkit component of major X
// runs on a driver of the same or a newer major).
static const struct {
  const char* name;
  int driver;
} accel_cuda_cublas_names[] = {{"libcublas.so.13", 13000},
                               {"libcublas.so.12", 12000}};

// Resolves `name` into `*slot` (a function pointer). False if absent.
static bool accel_cuda_blas_sym(void* library, const char* name, void* slot) {
  void* fn = dlsym(library, name);
  memcpy(slot, &fn, sizeof(fn));
  return fn != NULL;
}

// Opens `name` and resolves the entries gemm.c uses. Returns NULL with
// the dlerror() text or the missing entry in `why` (when not NULL).
static accel_cuda_blas_t* accel_cuda_blas_try(const char* name, char* why,
                                              size_t why_size) {
  void* library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (library == NULL) {
    const char* e = dlerror();
    if (why != NULL) snprintf(why, why_size, "%s", e != NULL ? e : name);
    return NULL;
  }
  accel_cuda_blas_t* blas = calloc(1, sizeof(*blas));
  if (blas == NULL) {
    dlclose(library);
    if (why != NULL) snprintf(why, why_size, "out of host memory");
    return NULL;
  }
  blas->library = library;
  snprintf(blas->name, sizeof(blas->name), "%s", name);
  if (accel_cuda_blas_sym(library, "cublasCreate_v2", &blas->create) &&
      accel_cuda_blas_sym(library, "cublasDestroy_v2", &blas->destroy) &&
      accel_cuda_blas_sym(library, "cublasSetStream_v2", &blas->set_stream) &&
      accel_cuda_blas_sym(library, "cublasSetWorkspace_v2",
                          &blas->set_workspace) &&
      accel_cuda_blas_sym(library, "cublasGemmEx", &blas->gemm_ex) &&
      accel_cuda_blas_sym(library, "cublasSetMathMode", &blas->set_math_mode)) {
    (void)accel_cuda_blas_sym(library, "cublasGetStatusName",
                              &blas->status_name);
    (void)accel_cuda_blas_sym(library, "cublasGemmStridedBatchedEx",
                              &blas->gemm_strided_batched_ex);
    return blas;
  }
  if (why != NULL) {
    snprintf(why, why_size,
             "%s is not cuBLAS (no cublasCreate_v2, cublasSetStream_v2, "
             "cublasSetWorkspace_v2, cublasGemmEx or cublasSetMathMode)",
             name);
  }
  free(blas);
  dlclose(library);
  return NULL;
}

// Tries to open cuBLAS: the library ACCEL_CUDA_CUBLAS names (read through
// `host`), else the sonames a driver of CUDA `driver` can run. Returns
// NULL with the reason in `message`.
static accel_cuda_blas_t* accel_cuda_blas_open(const accel_host_t* host,
                                               int driver, char* message,
                                               size_t size) {
  char why[256] = "";
  const char* override = host->getenv(host, "ACCEL_CUDA_CUBLAS");
  if (override != NULL && override[0] != '\0') {
    accel_cuda_blas_t* blas = accel_cuda_blas_try(override, why, sizeof(why));
    if (blas == NULL) {
      snprintf(message, size,
               "cannot load the cuBLAS named by ACCEL_CUDA_CUBLAS: %s", why);
    }
    return blas;
  }
  char tried[128] = "";
  size_t n =
      sizeof(accel_cuda_cublas_names) / sizeof(accel_cuda_cublas_names[0]);
  for (size_t i = 0; i < n; i++) {
    if (accel_cuda_cublas_names[i].driver > driver) continue;
    const char* name = accel_cuda_cublas_names[i].name;
    size_t used = strlen(tried);
    snprintf(tried + used, sizeof(tried) - used, "%s%s", used ? ", " : "",
             name);
    accel_cuda_blas_t* blas =
        accel_cuda_blas_try(name, why[0] == '\0' ? why : NULL, sizeof(why));
    if (blas != NULL) return blas;
  }
  snprintf(message, size,
           "cuBLAS is not installed: tried %s, the cuBLAS majors a CUDA "
           "%d.%d driver runs (%s)",
           tried, driver / 1000, driver % 1000 / 10, why);
  return NULL;
}

// Returns the plugin's cuBLAS, loading it at the first call; the same
// ACCEL_ERROR_UNSUPPORTED, without searching again, when it cannot.
static accel_status_t accel_cuda_blas_get(accel_cuda_plugin_t* plugin,
                                          const accel_cuda_blas_t** out) {
  *out = atomic_load(&plugin->blas);
  if (*out != NULL) return ACCEL_OK;
  pthread_mutex_lock(&plugin->mutex);
  if (atomic_load(&plugin->blas) == NULL && !plugin->blas_tried) {
    plugin->blas_tried = true;
    accel_cuda_blas_t* blas =
        accel_cuda_blas_open(plugin->host, plugin->driver.version,
                             plugin->blas_error, sizeof(plugin->blas_error));
    if (blas != NULL) {
      plugin->host->log(plugin->host, ACCEL_LOG_INFO, "GEMM on %s",
                        blas->name);
      atomic_store(&plugin->blas, blas);
    }
  }
  *out = atomic_load(&plugin->blas);
  pthread_mutex_unlock(&plugin->mutex);
  if (*out != NULL) return ACCEL_OK;
  return plugin->host->fail(plugin->host, ACCEL_ERROR_UNSUPPORTED,
                            "cuda: gemm: %s", plugin->blas_error);
}

void accel_cuda_blas_destroy(accel_cuda_blas_t* blas) {
  // The library stays loaded, like libcuda: its bundled CUDA runtime keeps
  // process-wide state and exit handlers that must not be unmapped.
  free(blas);
}

// Records a failed cuBLAS call and returns ACCEL_ERROR_BACKEND (or
// OUT_OF_DEVICE_MEMORY for allocation failures).
static accel_status_t accel_cuda_blas_fail(const accel_cuda_device_t* device,
                                           const accel_cuda_blas_t* blas,
                                           cublasStatus_t s, const char* call) {
  const char* name = blas->status_name != NULL ? blas->status_name(s) : NULL;
  accel_status_t status = s == CUBLAS_STATUS_ALLOC_FAILED
                              ? ACCEL_ERROR_OUT_OF_DEVICE_MEMORY
                              : ACCEL_ERROR_BACKEND;
  return device->host->fail(device->host, status, "%s: %s: %s (%d)",
                            device->prefix, call, name ? name : "cuBLAS error",
                            (int)s);
}

void accel_cuda_gemm_release(accel_cuda_stream_t* stream) {
  accel_cuda_device_t* device = stream->device;
  const accel_cuda_blas_t* blas = atomic_load(&device->plugin->blas);
  if (stream->blas_handle != NULL && blas != NULL) {
    // Kept for the next stream: cublasDestroy waits for the whole device
    // (cuBLAS documents that it synchronises), which a stream's release
    // must not do to the application's other work.
    pthread_mutex_lock(&device->mutex);
    bool kept = device->blas_pooled < ACCEL_CUDA_BLAS_POOL;
    if (kept) device->blas_pool[device->blas_pooled++] = stream->blas_handle;
    pthread_mutex_unlock(&device->mutex);
    if (!kept) (void)blas->destroy(stream->blas_handle);
  }
  stream->blas_handle = NULL;
  if (stream->workspace != 0) {
    (void)stream->device->cu->cuMemFree(stream->workspace);
    stream->workspace = 0;
  }
}

void accel_cuda_gemm_pool_drain(accel_cuda_device_t* device) {
  const accel_cuda_blas_t* blas = atomic_load(&device->plugin->blas);
  for (uint32_t i = 0; i < device->blas_pooled && blas != NULL; i++) {
    (void)blas->destroy(device->blas_pool[i]);
  }
  device->blas_pooled = 0;
}

static size_t accel_cuda_gemm_workspace_bytes(
    const accel_cuda_device_t* device) {
  return device->sm_major >= 9 ? ACCEL_CUDA_WORKSPACE_SM90
                               : ACCEL_CUDA_WORKSPACE_DEFAULT;
}

// Returns the stream's cuBLAS handle, creating it (bound to the stream) at
// the first GEMM. The caller pushed the context and holds stream->mutex.
static accel_status_t accel_cuda_gemm_handle(accel_cuda_stream_t* stream,
                                             const accel_cuda_blas_t* blas,
                                             cublasHandle_t* out) {
  *out = stream->blas_handle;
  if (*out != NULL) return ACCEL_OK;
  accel_cuda_device_t* device = stream->device;
  cublasHandle_t handle = NULL;
  pthread_mutex_lock(&device->mutex);
  if (device->blas_pooled > 0) {
    handle = device->blas_pool[--device->blas_pooled];
  }
  pthread_mutex_unlock(&device->mutex);
  cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
  if (handle == NULL) s = blas->create(&handle);
  if (s != CUBLAS_STATUS_SUCCESS) {
    return accel_cuda_blas_fail(device, blas, s, "cublasCreate");
  }
  // A pooled handle is bound to its new stream here; cublasSetStream also
  // drops the workspace it had (each GEMM sets its own anyway).
  s = blas->set_stream(handle, (cudaStream_t)stream->stream);
  const char* call = "cublasSetStream";
  if (s == CUBLAS_STATUS_SUCCESS) {
    // f32 accumulation throughout, split-K reductions included.
    call = "cublasSetMathMode";
    s = blas->set_math_mode(
        handle,
        (cublasMath_t)(CUBLAS_DEFAULT_MATH |
                       CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
  }
  if (s != CUBLAS_STATUS_SUCCESS) {
    (void)blas->destroy(handle);
    return accel_cuda_blas_fail(device, blas, s, call);
  }
  stream->blas_handle = handle;
  *out = handle;
  return ACCEL_OK;
}

// The workspace for GEMM `g`: the one the core lent, or else (a core older
// than ABI 1.2) the stream's own, allocated at the first such GEMM. The
// caller pushed the context and holds stream->mutex.
static accel_status_t accel_cuda_gemm_workspace(accel_cuda_stream_t* stream,
                                                const accel_plugin_gemm_t* g,
                                                CUdeviceptr* out_ptr,
                                                size_t* out_size) {
  if (ACCEL_PLUGIN_HAS_FIELD(g, accel_plugin_gemm_t, workspace_size) &&
      g->workspace != NULL && g->workspace_size != 0) {
    *out_ptr = accel_cuda_ptr(g->workspace, g->workspace_offset);
    *out_size = (size_t)g->workspace_size;
    return ACCEL_OK;
  }
  accel_cuda_device_t* device = stream->device;
  size_t bytes = accel_cuda_gemm_workspace_bytes(device);
  if (stream->workspace == 0) {
    CUresult r = device->cu->cuMemAlloc(&stream->workspace, bytes);
    if (r != CUDA_SUCCESS) {
      stream->workspace = 0;
      return accel_cuda_device_fail(device, r, "cuMemAlloc (cuBLAS workspace)");
    }
  }
  *out_ptr = stream->workspace;
  *out_size = bytes;
  return ACCEL_OK;
}

static cudaDataType accel_cuda_blas_type(uint32_t dtype) {
  switch (dtype) {
    case ACCEL_DTYPE_F16:
      return CUDA_R_16F;
    case ACCEL_DTYPE_BF16:
      return CUDA_R_16BF;
    default:
      return CUDA_R_32F;
  }
}

// C = beta * C for k == 0, with the ops kernel (cuBLAS needs not load).
static accel_status_t accel_cuda_gemm_scale(accel_cuda_stream_t* stream,
                                            const accel_plugin_gemm_t* g) {
  CUdeviceptr c = accel_cuda_ptr(g->c, g->c_offset);
  unsigned long long m = g->m, n = g->n, ldc = g->ldc;
  float beta = (float)g->beta;
  void* params[] = {&c, &m, &n, &ldc, &beta};
  return accel_cuda_ops_launch(stream, ACCEL_CUDA_K_GEMM_SCALE + g->c_dtype,
                               g->m * g->n, params, "gemm");
}

// Refuses what cublasGemmEx cannot do here: unknown dtype combinations
// and dimensions beyond int.
static accel_status_t accel_cuda_gemm_check(const accel_cuda_device_t* device,
                                            const accel_plugin_gemm_t* g) {
  const accel_host_t* host = device->host;
  bool half_in =
      g->a_dtype == ACCEL_DTYPE_F16 || g->a_dtype == ACCEL_DTYPE_BF16;
  if ((g->a_dtype != ACCEL_DTYPE_F32 && !half_in) || g->b_dtype != g->a_dtype ||
      (g->c_dtype != g->a_dtype &&
       !(half_in && g->c_dtype == ACCEL_DTYPE_F32))) {
    return host->fail(host, ACCEL_ERROR_UNSUPPORTED,
                      "%s: gemm: unsupported dtypes a=%u b=%u c=%u",
                      device->prefix, (unsigned)g->a_dtype,
                      (unsigned)g->b_dtype, (unsigned)g->c_dtype);
  }
  if (g->m > INT_MAX || g->n > INT_MAX || g->k > INT_MAX || g->lda > INT_MAX ||
      g->ldb > INT_MAX || g->ldc > INT_MAX) {
    return host->fail(host, ACCEL_ERROR_UNSUPPORTED,
                      "%s: gemm: dimensions and leading dimensions above %d "
                      "are not supported",
                      device->prefix, INT_MAX);
  }
  return ACCEL_OK;
}

accel_status_t accel_cuda_op_gemm_workspace(void* device_ptr,
                                            const accel_plugin_gemm_t* g,
                                            uint64_t* out_bytes) {
  accel_cuda_device_t* device = device_ptr;
  *out_bytes = 0;
  accel_status_t status = accel_cuda_gemm_check(device, g);
  // k == 0 runs the scale kernel, not cuBLAS. Without cuBLAS the GEMM
  // fails: say so now rather than after allocating its workspace.
  if (status != ACCEL_OK || g->k == 0) return status;
  const accel_cuda_blas_t* blas = NULL;
  status = accel_cuda_blas_get(device->plugin, &blas);
  if (status == ACCEL_OK) *out_bytes = accel_cuda_gemm_workspace_bytes(device);
  return status;
}

// The cuBLAS call(s) of GEMM `g`, or of `batch` when not NULL, on
// `handle`: row-major to column-major by swapping the operands and m with
// n. Returns the first failing status with the call's name in `*call`.
static cublasStatus_t accel_cuda_gemm_call(
    const accel_cuda_blas_t* blas, cublasHandle_t handle,
    const accel_plugin_gemm_t* g, const accel_plugin_gemm_batch_t* batch,
    const char** call) {
  float alpha = (float)g->alpha, beta = (float)g->beta;
  cublasComputeType_t compute =
      g->a_dtype == ACCEL_DTYPE_F32 && (g->flags & ACCEL_GEMM_ALLOW_TF32)
          ? CUBLAS_COMPUTE_32F_FAST_TF32
          : CUBLAS_COMPUTE_32F;
  cudaDataType ab = accel_cuda_blas_type(g->a_dtype);
  cudaDataType ct = accel_cuda_blas_type(g->c_dtype);
  cublasOperation_t op_b = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t op_a = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  CUdeviceptr a = accel_cuda_ptr(g->a, g->a_offset);
  CUdeviceptr b = accel_cuda_ptr(g->b, g->b_offset);
  CUdeviceptr c = accel_cuda_ptr(g->c, g->c_offset);
  uint64_t count = batch != NULL ? batch->count : 1;
  uint64_t sa = batch != NULL ? batch->stride_a : 0;
  uint64_t sb = batch != NULL ? batch->stride_b : 0;
  uint64_t sc = batch != NULL ? batch->stride_c : 0;
  size_t ea = accel_plugin_dtype_size(g->a_dtype);
  size_t ec = accel_plugin_dtype_size(g->c_dtype);
  if (batch != NULL && blas->gemm_strided_batched_ex != NULL && sa % ea == 0 &&
      sb % ea == 0 && sc % ec == 0) {
    *call = "cublasGemmStridedBatchedEx";
    cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
    for (uint64_t first = 0; first < count && s == CUBLAS_STATUS_SUCCESS;
         first += INT_MAX) {
      int members = count - first < INT_MAX ? (int)(count - first) : INT_MAX;
      s = blas->gemm_strided_batched_ex(
          handle, op_b, op_a, (int)g->n, (int)g->m, (int)g->k, &alpha,
          (const void*)(uintptr_t)(b + first * sb), ab, (int)g->ldb,
          (long long)(sb / ea), (const void*)(uintptr_t)(a + first * sa), ab,
          (int)g->lda, (long long)(sa / ea), &beta,
          (void*)(uintptr_t)(c + first * sc), ct, (int)g->ldc,
          (long long)(sc / ec), members, compute, CUBLAS_GEMM_DEFAULT);
    }
    return s;
  }
  *call = "cublasGemmEx";
  cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
  for (uint64_t i = 0; i < count && s == CUBLAS_STATUS_SUCCESS; i++) {
    s = blas->gemm_ex(handle, op_b, op_a, (int)g->n, (int)g->m, (int)g->k,
                      &alpha, (const void*)(uintptr_t)(b + i * sb), ab,
                      (int)g->ldb, (const void*)(uintptr_t)(a + i * sa), ab,
                      (int)g->lda, &beta, (void*)(uintptr_t)(c + i * sc), ct,
                      (int)g->ldc, compute, CUBLAS_GEMM_DEFAULT);
  }
  return s;
}

// Enqueues GEMM `g` (or `batch` of it) on cuBLAS with the stream's handle
// and the workspace `g` carries.
static accel_status_t accel_cuda_gemm_blas(
    accel_cuda_device_t* device, accel_cuda_stream_t* stream,
    const accel_plugin_gemm_t* g, const accel_plugin_gemm_batch_t* batch) {
  const accel_cuda_blas_t* blas = NULL;
  accel_status_t status = accel_cuda_blas_get(device->plugin, &blas);
  if (status != ACCEL_OK) return status;
  status = accel_cuda_context_push(device, "gemm");
  if (status != ACCEL_OK) return status;
  // Held until the GEMM has enqueued: see the top of this file.
  pthread_mutex_lock(&stream->mutex);
  cublasHandle_t handle = NULL;
  CUdeviceptr workspace = 0;
  size_t workspace_size = 0;
  status = accel_cuda_gemm_handle(stream, blas, &handle);
  if (status == ACCEL_OK) {
    status = accel_cuda_gemm_workspace(stream, g, &workspace, &workspace_size);
  }
  if (status == ACCEL_OK) {
    cublasStatus_t s = blas->set_workspace(handle, (void*)(uintptr_t)workspace,
                                           workspace_size);
    if (s != CUBLAS_STATUS_SUCCESS) {
      status = accel_cuda_blas_fail(device, blas, s, "cublasSetWorkspace");
    }
  }
  if (status == ACCEL_OK) {
    const char* call = "cublasGemmEx";
    cublasStatus_t s = accel_cuda_gemm_call(blas, handle, g, batch, &call);
    if (s != CUBLAS_STATUS_SUCCESS) {
      status = accel_cuda_blas_fail(device, blas, s, call);
    }
  }
  pthread_mutex_unlock(&stream->mutex);
  accel_cuda_context_pop(device);
  return status;
}

accel_status_t accel_cuda_op_gemm(void* device_ptr, void* stream_ptr,
                                  const accel_plugin_gemm_t* g) {
  accel_cuda_device_t* device = device_ptr;
  accel_status_t status = accel_cuda_gemm_check(device, g);
  if (status != ACCEL_OK) return status;
  if (g->k == 0) return accel_cuda_gemm_scale(stream_ptr, g);
  return accel_cuda_gemm_blas(device, stream_ptr, g, NULL);
}

accel_status_t accel_cuda_op_gemm_batched(
    void* device_ptr, void* stream_ptr, const accel_plugin_gemm_t* g,
    const accel_plugin_gemm_batch_t* batch) {
  accel_cuda_device_t* device = device_ptr;
  accel_status_t status = accel_cuda_gemm_check(device, g);
  if (status != ACCEL_OK) return status;
  if (g->k != 0) return accel_cuda_gemm_blas(device, stream_ptr, g, batch);
  accel_plugin_gemm_t member = *g;
  for (uint64_t i = 0; i < batch->count && status == ACCEL_OK; i++) {
    member.c_offset = g->c_offset + i * batch->stride_c;
    status = accel_cuda_gemm_scale(stream_ptr, &member);
  }
  return status;
}
