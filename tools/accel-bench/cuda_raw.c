// SPDX-License-Identifier: MIT
//
// Raw CUDA baselines (cuda_raw.h). The driver is opened the way the CUDA
// plugin opens it (plugins/cuda/driver.c): bootstrap entries by dlsym,
// every other entry by cuGetProcAddress at the explicit version whose
// cudaTypedefs.h PFN_ type the table declares, with dlsym of that
// version's exported name as the fallback. cuBLAS is opened as the
// plugin's gemm.c opens it and called with the same arguments.
#include "cuda_raw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(ACCEL_BENCH_CUDA)

bench_cuda_t* bench_cuda_open(uint32_t ordinal, char* why, size_t why_size) {
  (void)ordinal;
  snprintf(why, why_size,
           "accel-bench was built without the CUDA toolkit (headers)");
  return NULL;
}

void bench_cuda_close(bench_cuda_t* cu) { (void)cu; }

static bool bench_cuda_copy_open(bench_ctx_t* ctx, size_t size,
                                 const bench_copy_place_t* place,
                                 void** out_state) {
  (void)place;  // device memory: its address says nothing here
  (void)size;
  *out_state = NULL;
  return bench_fail("baseline not available: %s",
                    bench_cuda_get(ctx) == NULL ? ctx->cuda_error : "?");
}

static bool bench_cuda_copy_run(void* state, bench_copy_kind_t kind,
                                bool pinned, void* host, size_t size,
                                uint64_t iters, bool async) {
  (void)state, (void)kind, (void)pinned, (void)host, (void)size;
  (void)iters, (void)async;
  return bench_fail("no raw CUDA in this build");
}

static void bench_cuda_copy_close(void* state) { (void)state; }

bool bench_cuda_alloc_pair(void* user, uint64_t iters) {
  (void)user, (void)iters;
  return bench_fail("no raw CUDA in this build");
}

bench_cuda_kernel_t* bench_cuda_kernel_open(bench_cuda_t* cu, const void* image,
                                            const char* name) {
  (void)cu, (void)image, (void)name;
  bench_fail("no raw CUDA in this build");
  return NULL;
}

void bench_cuda_kernel_close(bench_cuda_kernel_t* k) { (void)k; }

bool bench_cuda_launch_latency(void* user, uint64_t iters) {
  (void)user, (void)iters;
  return bench_fail("no raw CUDA in this build");
}

bool bench_cuda_launch_throughput(void* user, uint64_t iters, uint32_t batch) {
  (void)user, (void)iters, (void)batch;
  return bench_fail("no raw CUDA in this build");
}

const char* bench_cuda_blas_name(bench_cuda_t* cu, char* why, size_t why_size) {
  (void)cu;
  snprintf(why, why_size, "no raw CUDA in this build");
  return NULL;
}

bench_cuda_gemm_t* bench_cuda_gemm_open(bench_cuda_t* cu, accel_dtype_t dtype,
                                        bool tf32, size_t n, const float* a,
                                        const float* b) {
  (void)cu, (void)dtype, (void)tf32, (void)n, (void)a, (void)b;
  bench_fail("no raw CUDA in this build");
  return NULL;
}

void bench_cuda_gemm_close(bench_cuda_gemm_t* g) { (void)g; }

bool bench_cuda_gemm_run(void* user, uint64_t iters) {
  (void)user, (void)iters;
  return bench_fail("no raw CUDA in this build");
}

#else  // ACCEL_BENCH_CUDA

#include <cublas_api.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <limits.h>

// The driver ABI resolved against: CUDA 12.0, the first driver with
// cuGetProcAddress_v2 (as the plugin).
#define BENCH_CUDA_MIN_VERSION 12000

// cuBLAS workspace, as the plugin's gemm.c: 32 MiB on sm_90 and newer.
#define BENCH_CUDA_WORKSPACE_SM90 (32u << 20)
#define BENCH_CUDA_WORKSPACE_DEFAULT (4u << 20)

// X(name, version, exported name of that version); see plugins/cuda/
// driver.h for why the version is explicit.
#define BENCH_CUDA_SYMBOLS(X)                                         \
  X(cuDeviceGet, 2000, "cuDeviceGet")                                 \
  X(cuDeviceGetAttribute, 2000, "cuDeviceGetAttribute")               \
  X(cuDevicePrimaryCtxRetain, 7000, "cuDevicePrimaryCtxRetain")       \
  X(cuDevicePrimaryCtxRelease, 11000, "cuDevicePrimaryCtxRelease_v2") \
  X(cuCtxPushCurrent, 4000, "cuCtxPushCurrent_v2")                    \
  X(cuCtxPopCurrent, 4000, "cuCtxPopCurrent_v2")                      \
  X(cuStreamCreate, 2000, "cuStreamCreate")                           \
  X(cuStreamDestroy, 4000, "cuStreamDestroy_v2")                      \
  X(cuStreamSynchronize, 2000, "cuStreamSynchronize")                 \
  X(cuMemAlloc, 3020, "cuMemAlloc_v2")                                \
  X(cuMemFree, 3020, "cuMemFree_v2")                                  \
  X(cuMemHostAlloc, 2020, "cuMemHostAlloc")                           \
  X(cuMemFreeHost, 2000, "cuMemFreeHost")                             \
  X(cuMemsetD8, 3020, "cuMemsetD8_v2")                                \
  X(cuMemcpyHtoD, 3020, "cuMemcpyHtoD_v2")                            \
  X(cuMemcpyHtoDAsync, 3020, "cuMemcpyHtoDAsync_v2")                  \
  X(cuMemcpyDtoHAsync, 3020, "cuMemcpyDtoHAsync_v2")                  \
  X(cuMemcpyDtoDAsync, 3020, "cuMemcpyDtoDAsync_v2")                  \
  X(cuModuleLoadData, 2000, "cuModuleLoadData")                       \
  X(cuModuleUnload, 2000, "cuModuleUnload")                           \
  X(cuModuleGetFunction, 2000, "cuModuleGetFunction")                 \
  X(cuLaunchKernel, 4000, "cuLaunchKernel")

#define BENCH_CUDA_MEMBER(name, version, exported) PFN_##name##_v##version name;

// cuBLAS entries, typed as in gemm.c and checked against cublas_api.h.
typedef cublasStatus_t (*bench_cublas_create_t)(cublasHandle_t*);
typedef cublasStatus_t (*bench_cublas_destroy_t)(cublasHandle_t);
typedef cublasStatus_t (*bench_cublas_set_stream_t)(cublasHandle_t,
                                                    cudaStream_t);
typedef cublasStatus_t (*bench_cublas_set_workspace_t)(cublasHandle_t, void*,
                                                       size_t);
typedef cublasStatus_t (*bench_cublas_gemm_ex_t)(
    cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
    const void*, const void*, cudaDataType, int, const void*, cudaDataType, int,
    const void*, void*, cudaDataType, int, cublasComputeType_t,
    cublasGemmAlgo_t);
typedef cublasStatus_t (*bench_cublas_set_math_mode_t)(cublasHandle_t,
                                                       cublasMath_t);
#define BENCH_CUDA_SAME_TYPE(fn, type) \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&fn), type), #fn)
BENCH_CUDA_SAME_TYPE(cublasCreate_v2, bench_cublas_create_t);
BENCH_CUDA_SAME_TYPE(cublasDestroy_v2, bench_cublas_destroy_t);
BENCH_CUDA_SAME_TYPE(cublasSetStream_v2, bench_cublas_set_stream_t);
BENCH_CUDA_SAME_TYPE(cublasSetWorkspace_v2, bench_cublas_set_workspace_t);
BENCH_CUDA_SAME_TYPE(cublasGemmEx, bench_cublas_gemm_ex_t);
BENCH_CUDA_SAME_TYPE(cublasSetMathMode, bench_cublas_set_math_mode_t);

struct bench_cuda {
  void* library;
  char path[256];
  int version;
  PFN_cuInit_v2000 cuInit;
  PFN_cuDriverGetVersion_v2020 cuDriverGetVersion;
  PFN_cuGetErrorName_v6000 cuGetErrorName;
  PFN_cuGetProcAddress_v12000 cuGetProcAddress;
  BENCH_CUDA_SYMBOLS(BENCH_CUDA_MEMBER)
  CUdevice dev;
  CUcontext ctx;  // retained primary context, pushed while open
  CUstream stream;
  int sm_major;
  // cuBLAS, loaded at the first GEMM.
  bool blas_tried;
  void* blas;
  char blas_name[32];
  char blas_error[256];
  bench_cublas_create_t cublas_create;
  bench_cublas_destroy_t cublas_destroy;
  bench_cublas_set_stream_t cublas_set_stream;
  bench_cublas_set_workspace_t cublas_set_workspace;
  bench_cublas_gemm_ex_t cublas_gemm_ex;
  bench_cublas_set_math_mode_t cublas_set_math_mode;
};

// "CUDA_ERROR_X" for `r`, or its number.
static const char* bench_cuda_error(const bench_cuda_t* cu, CUresult r) {
  static char number[32];
  const char* name = NULL;
  if (cu != NULL && cu->cuGetErrorName != NULL &&
      cu->cuGetErrorName(r, &name) == CUDA_SUCCESS && name != NULL) {
    return name;
  }
  snprintf(number, sizeof(number), "CUresult %d", (int)r);
  return number;
}

// bench_fail("<call>: CUDA_ERROR_X") for a failed driver call.
static bool bench_cuda_fail(const bench_cuda_t* cu, CUresult r,
                            const char* call) {
  return bench_fail("%s: %s", call, bench_cuda_error(cu, r));
}

static void* bench_cuda_resolve(bench_cuda_t* cu, const char* name, int version,
                                const char* exported) {
  void* fn = NULL;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (cu->cuGetProcAddress != NULL &&
      cu->cuGetProcAddress(name, &fn, version,
                           CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                           &found) == CUDA_SUCCESS &&
      found == CU_GET_PROC_ADDRESS_SUCCESS && fn != NULL) {
    return fn;
  }
  return dlsym(cu->library, exported);
}

#define BENCH_CUDA_RESOLVE(name, version, exported)                    \
  if (ok) {                                                            \
    void* fn_ = bench_cuda_resolve(cu, #name, version, exported);      \
    if (fn_ == NULL) {                                                 \
      snprintf(why, why_size, "the CUDA driver %s lacks %s (CUDA %d)", \
               cu->path, #name, version);                              \
      ok = false;                                                      \
    } else {                                                           \
      memcpy(&cu->name, &fn_, sizeof(fn_));                            \
    }                                                                  \
  }

// dlopen()s libcuda and resolves the bootstrap entries. False with `why`.
static bool bench_cuda_load(bench_cuda_t* cu, char* why, size_t why_size) {
  static const char* const names[] = {"libcuda.so.1", "libcuda.so"};
  char first[200] = "";
  for (size_t i = 0; i < 2 && cu->library == NULL; ++i) {
    cu->library = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (cu->library != NULL) {
      snprintf(cu->path, sizeof(cu->path), "%s", names[i]);
    } else if (i == 0) {
      const char* e = dlerror();
      snprintf(first, sizeof(first), "%s", e != NULL ? e : names[i]);
    }
  }
  if (cu->library == NULL) {
    snprintf(why, why_size,
             "the NVIDIA driver is not installed: %s (also tried "
             "libcuda.so)",
             first);
    return false;
  }
  void* sym[4] = {dlsym(cu->library, "cuInit"),
                  dlsym(cu->library, "cuDriverGetVersion"),
                  dlsym(cu->library, "cuGetErrorName"),
                  dlsym(cu->library, "cuGetProcAddress_v2")};
  if (sym[0] == NULL || sym[1] == NULL || sym[2] == NULL) {
    snprintf(why, why_size, "%s is not a CUDA driver", cu->path);
    return false;
  }
  memcpy(&cu->cuInit, &sym[0], sizeof(sym[0]));
  memcpy(&cu->cuDriverGetVersion, &sym[1], sizeof(sym[1]));
  memcpy(&cu->cuGetErrorName, &sym[2], sizeof(sym[2]));
  memcpy(&cu->cuGetProcAddress, &sym[3], sizeof(sym[3]));
  return true;
}

// cuInit, the version check and the table. False with `why`.
static bool bench_cuda_start(bench_cuda_t* cu, char* why, size_t why_size) {
  CUresult r = cu->cuInit(0);
  if (r == CUDA_ERROR_STUB_LIBRARY) {
    snprintf(why, why_size,
             "the CUDA driver library found (%s) is the toolkit's stub",
             cu->path);
    return false;
  }
  if (r != CUDA_SUCCESS) {
    snprintf(why, why_size, "cuInit: %s", bench_cuda_error(cu, r));
    return false;
  }
  if ((r = cu->cuDriverGetVersion(&cu->version)) != CUDA_SUCCESS) {
    snprintf(why, why_size, "cuDriverGetVersion: %s", bench_cuda_error(cu, r));
    return false;
  }
  if (cu->version < BENCH_CUDA_MIN_VERSION) {
    snprintf(why, why_size, "the CUDA driver (CUDA %d) is older than 12.0",
             cu->version);
    return false;
  }
  bool ok = true;
  BENCH_CUDA_SYMBOLS(BENCH_CUDA_RESOLVE)
  return ok;
}

// Context, attributes and stream of device `ordinal`. False with `why`.
static bool bench_cuda_bind(bench_cuda_t* cu, uint32_t ordinal, char* why,
                            size_t why_size) {
  const char* call = "cuDeviceGet";
  CUresult r = cu->cuDeviceGet(&cu->dev, (int)ordinal);
  if (r == CUDA_SUCCESS) {
    call = "cuDeviceGetAttribute";
    r = cu->cuDeviceGetAttribute(
        &cu->sm_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cu->dev);
  }
  if (r == CUDA_SUCCESS) {
    call = "cuDevicePrimaryCtxRetain";
    r = cu->cuDevicePrimaryCtxRetain(&cu->ctx, cu->dev);
    if (r != CUDA_SUCCESS) cu->ctx = NULL;
  }
  if (r == CUDA_SUCCESS) {
    call = "cuCtxPushCurrent";
    r = cu->cuCtxPushCurrent(cu->ctx);
  }
  if (r == CUDA_SUCCESS) {
    call = "cuStreamCreate";
    r = cu->cuStreamCreate(&cu->stream, CU_STREAM_NON_BLOCKING);
    if (r != CUDA_SUCCESS) {
      CUcontext popped = NULL;
      (void)cu->cuCtxPopCurrent(&popped);
      cu->stream = NULL;
    }
  }
  if (r != CUDA_SUCCESS) {
    if (cu->ctx != NULL) (void)cu->cuDevicePrimaryCtxRelease(cu->dev);
    cu->ctx = NULL;
    snprintf(why, why_size, "cuda device %u: %s: %s", ordinal, call,
             bench_cuda_error(cu, r));
    return false;
  }
  return true;
}

bench_cuda_t* bench_cuda_open(uint32_t ordinal, char* why, size_t why_size) {
  why[0] = '\0';
  bench_cuda_t* cu = calloc(1, sizeof(*cu));
  if (cu == NULL) {
    snprintf(why, why_size, "out of memory");
    return NULL;
  }
  if (bench_cuda_load(cu, why, why_size) &&
      bench_cuda_start(cu, why, why_size) &&
      bench_cuda_bind(cu, ordinal, why, why_size)) {
    return cu;
  }
  // Unloaded only if cuInit never succeeded (see plugins/cuda/driver.h).
  if (cu->library != NULL && cu->version == 0) dlclose(cu->library);
  free(cu);
  return NULL;
}

void bench_cuda_close(bench_cuda_t* cu) {
  if (cu == NULL) return;
  (void)cu->cuStreamSynchronize(cu->stream);
  (void)cu->cuStreamDestroy(cu->stream);
  CUcontext popped = NULL;
  (void)cu->cuCtxPopCurrent(&popped);
  (void)cu->cuDevicePrimaryCtxRelease(cu->dev);
  // cuBLAS and libcuda stay loaded, as in the plugin.
  free(cu);
}

// ---------------------------------------------------------------------------
// Copies
// ---------------------------------------------------------------------------

typedef struct bench_cuda_copy {
  bench_cuda_t* cu;
  CUdeviceptr a;  // H2D writes and D2H reads `a`; D2D copies `a` to `b`
  CUdeviceptr b;
  void* pinned;    // cuMemHostAlloc
  void* pageable;  // malloc
} bench_cuda_copy_t;

static void bench_cuda_copy_close(void* state) {
  bench_cuda_copy_t* s = state;
  if (s == NULL) return;
  bench_cuda_t* cu = s->cu;
  if (s->a != 0) (void)cu->cuMemFree(s->a);
  if (s->b != 0) (void)cu->cuMemFree(s->b);
  if (s->pinned != NULL) (void)cu->cuMemFreeHost(s->pinned);
  free(s->pageable);
  free(s);
}

static bool bench_cuda_copy_open(bench_ctx_t* ctx, size_t size,
                                 const bench_copy_place_t* place,
                                 void** out_state) {
  (void)place;  // device memory: its address says nothing here
  *out_state = NULL;
  bench_cuda_t* cu = bench_cuda_get(ctx);
  if (cu == NULL) {
    return bench_fail("raw CUDA baseline not available: %s", ctx->cuda_error);
  }
  bench_cuda_copy_t* s = calloc(1, sizeof(*s));
  if (s == NULL) return bench_fail("cuMemcpy baseline: out of memory");
  s->cu = cu;
  const char* call = "cuMemAlloc";
  CUresult r = cu->cuMemAlloc(&s->a, size);
  if (r == CUDA_SUCCESS) r = cu->cuMemAlloc(&s->b, size);
  if (r == CUDA_SUCCESS) {
    call = "cuMemHostAlloc";
    r = cu->cuMemHostAlloc(&s->pinned, size, 0);
  }
  if (r == CUDA_SUCCESS) {
    call = "cuMemsetD8";
    r = cu->cuMemsetD8(s->a, 5, size);
  }
  if (r == CUDA_SUCCESS) r = cu->cuMemsetD8(s->b, 6, size);
  // cuMemsetD8 may return before it is done, on the legacy stream, which
  // the non-blocking stream the copies run on does not wait for.
  if (r == CUDA_SUCCESS) {
    call = "cuStreamSynchronize";
    r = cu->cuStreamSynchronize(NULL);
  }
  if (r != CUDA_SUCCESS) {
    bench_cuda_copy_close(s);
    return bench_fail("cuMemcpy baseline (%zu bytes): %s: %s", size, call,
                      bench_cuda_error(cu, r));
  }
  s->pageable = malloc(size);
  if (s->pageable == NULL) {
    bench_cuda_copy_close(s);
    return bench_fail("cuMemcpy baseline: malloc(%zu) failed", size);
  }
  // Touch every page now, as the accel side's host buffers are.
  memset(s->pageable, 3, size);
  memset(s->pinned, 4, size);
  *out_state = s;
  return true;
}

static bool bench_cuda_copy_run(void* state, bench_copy_kind_t kind,
                                bool pinned, void* host, size_t size,
                                uint64_t iters, bool async) {
  (void)host;  // the baseline copies from and to its own host memory
  bench_cuda_copy_t* s = state;
  bench_cuda_t* cu = s->cu;
  void* h = pinned ? s->pinned : s->pageable;
  CUresult r = CUDA_SUCCESS;
  const char* call = "cuMemcpyDtoDAsync";
  for (uint64_t i = 0; i < iters && r == CUDA_SUCCESS; ++i) {
    switch (kind) {
      case BENCH_COPY_H2D:
        call = "cuMemcpyHtoDAsync";
        r = cu->cuMemcpyHtoDAsync(s->a, h, size, cu->stream);
        break;
      case BENCH_COPY_D2H:
        call = "cuMemcpyDtoHAsync";
        r = cu->cuMemcpyDtoHAsync(h, s->a, size, cu->stream);
        break;
      case BENCH_COPY_D2D:
        r = cu->cuMemcpyDtoDAsync(s->b, s->a, size, cu->stream);
        break;
    }
    if (r == CUDA_SUCCESS && !async) {
      call = "cuStreamSynchronize";
      r = cu->cuStreamSynchronize(cu->stream);
    }
  }
  if (r == CUDA_SUCCESS && async) {
    call = "cuStreamSynchronize";
    r = cu->cuStreamSynchronize(cu->stream);
  }
  return r == CUDA_SUCCESS || bench_cuda_fail(cu, r, call);
}

// ---------------------------------------------------------------------------
// Allocation
// ---------------------------------------------------------------------------

bool bench_cuda_alloc_pair(void* user, uint64_t iters) {
  bench_cuda_alloc_t* a = user;
  bench_cuda_t* cu = a->cu;
  for (uint64_t i = 0; i < iters; ++i) {
    CUdeviceptr p = 0;
    CUresult r = cu->cuMemAlloc(&p, a->size);
    if (r != CUDA_SUCCESS) return bench_cuda_fail(cu, r, "cuMemAlloc");
    r = cu->cuMemFree(p);
    if (r != CUDA_SUCCESS) return bench_cuda_fail(cu, r, "cuMemFree");
  }
  return true;
}

// ---------------------------------------------------------------------------
// Launch
// ---------------------------------------------------------------------------

struct bench_cuda_kernel {
  bench_cuda_t* cu;
  CUmodule module;
  CUfunction function;
};

bench_cuda_kernel_t* bench_cuda_kernel_open(bench_cuda_t* cu, const void* image,
                                            const char* name) {
  bench_cuda_kernel_t* k = calloc(1, sizeof(*k));
  if (k == NULL) {
    bench_fail("out of memory");
    return NULL;
  }
  k->cu = cu;
  CUresult r = cu->cuModuleLoadData(&k->module, image);
  if (r != CUDA_SUCCESS) {
    bench_cuda_fail(cu, r, "cuModuleLoadData");
    free(k);
    return NULL;
  }
  r = cu->cuModuleGetFunction(&k->function, k->module, name);
  if (r != CUDA_SUCCESS) {
    bench_fail("cuModuleGetFunction(%s): %s", name, bench_cuda_error(cu, r));
    bench_cuda_kernel_close(k);
    return NULL;
  }
  return k;
}

void bench_cuda_kernel_close(bench_cuda_kernel_t* k) {
  if (k == NULL) return;
  (void)k->cu->cuStreamSynchronize(k->cu->stream);
  (void)k->cu->cuModuleUnload(k->module);
  free(k);
}

static CUresult bench_cuda_launch_one(const bench_cuda_kernel_t* k) {
  return k->cu->cuLaunchKernel(k->function, 1, 1, 1, 1, 1, 1, 0, k->cu->stream,
                               NULL, NULL);
}

bool bench_cuda_launch_latency(void* user, uint64_t iters) {
  bench_cuda_kernel_t* k = user;
  for (uint64_t i = 0; i < iters; ++i) {
    CUresult r = bench_cuda_launch_one(k);
    if (r != CUDA_SUCCESS) return bench_cuda_fail(k->cu, r, "cuLaunchKernel");
    r = k->cu->cuStreamSynchronize(k->cu->stream);
    if (r != CUDA_SUCCESS) {
      return bench_cuda_fail(k->cu, r, "cuStreamSynchronize");
    }
  }
  return true;
}

bool bench_cuda_launch_throughput(void* user, uint64_t iters, uint32_t batch) {
  bench_cuda_kernel_t* k = user;
  for (uint64_t i = 0; i < iters; ++i) {
    CUresult r = bench_cuda_launch_one(k);
    if (r != CUDA_SUCCESS) return bench_cuda_fail(k->cu, r, "cuLaunchKernel");
    if ((i + 1) % batch == 0 &&
        (r = k->cu->cuStreamSynchronize(k->cu->stream)) != CUDA_SUCCESS) {
      return bench_cuda_fail(k->cu, r, "cuStreamSynchronize");
    }
  }
  CUresult r = k->cu->cuStreamSynchronize(k->cu->stream);
  return r == CUDA_SUCCESS || bench_cuda_fail(k->cu, r, "cuStreamSynchronize");
}

// ---------------------------------------------------------------------------
// GEMM
// ---------------------------------------------------------------------------

static bool bench_cuda_blas_sym(void* library, const char* name, void* slot) {
  void* fn = dlsym(library, name);
  memcpy(slot, &fn, sizeof(fn));
  return fn != NULL;
}

const char* bench_cuda_blas_name(bench_cuda_t* cu, char* why, size_t why_size) {
  static const char* const names[] = {"libcublas.so.13", "libcublas.so.12",
                                      "libcublas.so"};
  if (!cu->blas_tried) {
    cu->blas_tried = true;
    char first[200] = "";
    for (size_t i = 0; i < 3 && cu->blas == NULL; ++i) {
      void* lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
      if (lib == NULL) {
        const char* e = dlerror();
        if (i == 0) snprintf(first, sizeof(first), "%s", e ? e : names[i]);
        continue;
      }
      if (bench_cuda_blas_sym(lib, "cublasCreate_v2", &cu->cublas_create) &&
          bench_cuda_blas_sym(lib, "cublasDestroy_v2", &cu->cublas_destroy) &&
          bench_cuda_blas_sym(lib, "cublasSetStream_v2",
                              &cu->cublas_set_stream) &&
          bench_cuda_blas_sym(lib, "cublasSetWorkspace_v2",
                              &cu->cublas_set_workspace) &&
          bench_cuda_blas_sym(lib, "cublasGemmEx", &cu->cublas_gemm_ex) &&
          bench_cuda_blas_sym(lib, "cublasSetMathMode",
                              &cu->cublas_set_math_mode)) {
        cu->blas = lib;
        snprintf(cu->blas_name, sizeof(cu->blas_name), "%s", names[i]);
      } else {
        dlclose(lib);
      }
    }
    if (cu->blas == NULL) {
      snprintf(cu->blas_error, sizeof(cu->blas_error),
               "cuBLAS is not installed: tried libcublas.so.13, .12 and "
               ".so (%.120s)",
               first);
    }
  }
  if (cu->blas != NULL) return cu->blas_name;
  snprintf(why, why_size, "%s", cu->blas_error);
  return NULL;
}

struct bench_cuda_gemm {
  bench_cuda_t* cu;
  int n;
  cudaDataType type;
  cublasComputeType_t compute;
  cublasHandle_t handle;
  CUdeviceptr a, b, c, workspace;
};

void bench_cuda_gemm_close(bench_cuda_gemm_t* g) {
  if (g == NULL) return;
  bench_cuda_t* cu = g->cu;
  (void)cu->cuStreamSynchronize(cu->stream);
  if (g->handle != NULL) (void)cu->cublas_destroy(g->handle);
  CUdeviceptr p[4] = {g->a, g->b, g->c, g->workspace};
  for (int i = 0; i < 4; ++i) {
    if (p[i] != 0) (void)cu->cuMemFree(p[i]);
  }
  free(g);
}

// f32 to f16 (round to nearest even) or bf16 (the values are exact, so
// truncation is exact too) in `out`, n * n elements.
static void bench_cuda_pack(accel_dtype_t dtype, const float* in, size_t count,
                            uint16_t* out) {
  if (dtype == ACCEL_DTYPE_F16) {
    bench_loop_cast_f16(out, in, count);
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    uint32_t bits;
    memcpy(&bits, &in[i], sizeof(bits));
    out[i] = (uint16_t)(bits >> 16);
  }
}

// Uploads `values` (f32) into a new n x n matrix of `dtype` at `*out`.
static bool bench_cuda_gemm_matrix(bench_cuda_t* cu, accel_dtype_t dtype,
                                   size_t n, const float* values,
                                   CUdeviceptr* out) {
  size_t count = n * n;
  size_t elem = dtype == ACCEL_DTYPE_F32 ? 4 : 2;
  CUresult r = cu->cuMemAlloc(out, count * elem);
  if (r != CUDA_SUCCESS) {
    *out = 0;
    return bench_cuda_fail(cu, r, "cuMemAlloc (gemm)");
  }
  if (values == NULL) {
    r = cu->cuMemsetD8(*out, 0, count * elem);
    return r == CUDA_SUCCESS || bench_cuda_fail(cu, r, "cuMemsetD8");
  }
  const void* src = values;
  uint16_t* packed = NULL;
  if (dtype != ACCEL_DTYPE_F32) {
    packed = malloc(count * sizeof(*packed));
    if (packed == NULL) return bench_fail("out of memory");
    bench_cuda_pack(dtype, values, count, packed);
    src = packed;
  }
  r = cu->cuMemcpyHtoD(*out, src, count * elem);
  free(packed);
  return r == CUDA_SUCCESS || bench_cuda_fail(cu, r, "cuMemcpyHtoD");
}

bench_cuda_gemm_t* bench_cuda_gemm_open(bench_cuda_t* cu, accel_dtype_t dtype,
                                        bool tf32, size_t n, const float* a,
                                        const float* b) {
  char why[256];
  if (bench_cuda_blas_name(cu, why, sizeof(why)) == NULL) {
    bench_fail("%s", why);
    return NULL;
  }
  if (n > INT_MAX) {
    bench_fail("gemm %zu: above INT_MAX", n);
    return NULL;
  }
  bench_cuda_gemm_t* g = calloc(1, sizeof(*g));
  if (g == NULL) {
    bench_fail("out of memory");
    return NULL;
  }
  g->cu = cu;
  g->n = (int)n;
  g->type = dtype == ACCEL_DTYPE_F16    ? CUDA_R_16F
            : dtype == ACCEL_DTYPE_BF16 ? CUDA_R_16BF
                                        : CUDA_R_32F;
  g->compute = dtype == ACCEL_DTYPE_F32 && tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                : CUBLAS_COMPUTE_32F;
  size_t bytes = cu->sm_major >= 9 ? BENCH_CUDA_WORKSPACE_SM90
                                   : BENCH_CUDA_WORKSPACE_DEFAULT;
  bool ok = bench_cuda_gemm_matrix(cu, dtype, n, a, &g->a) &&
            bench_cuda_gemm_matrix(cu, dtype, n, b, &g->b) &&
            bench_cuda_gemm_matrix(cu, dtype, n, NULL, &g->c);
  CUresult r = CUDA_SUCCESS;
  if (ok && (r = cu->cuMemAlloc(&g->workspace, bytes)) != CUDA_SUCCESS) {
    g->workspace = 0;
    ok = bench_cuda_fail(cu, r, "cuMemAlloc (cuBLAS workspace)");
  }
  cublasStatus_t s = CUBLAS_STATUS_SUCCESS;
  const char* call = "cublasCreate";
  if (ok && (s = cu->cublas_create(&g->handle)) != CUBLAS_STATUS_SUCCESS) {
    g->handle = NULL;
  }
  // The workspace after the stream: cublasSetStream resets it.
  if (ok && s == CUBLAS_STATUS_SUCCESS) {
    call = "cublasSetStream";
    s = cu->cublas_set_stream(g->handle, (cudaStream_t)cu->stream);
  }
  // The plugin's math mode (plugins/cuda/gemm.c): split-K partial sums in
  // f32, not in f16/bf16. cuBLAS's default allows the reduced-precision
  // reduction and may then pick other kernels, so a default-mode baseline
  // could compare two algorithms rather than accel's overhead.
  if (ok && s == CUBLAS_STATUS_SUCCESS) {
    call = "cublasSetMathMode";
    s = cu->cublas_set_math_mode(
        g->handle,
        (cublasMath_t)(CUBLAS_DEFAULT_MATH |
                       CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
  }
  if (ok && s == CUBLAS_STATUS_SUCCESS) {
    call = "cublasSetWorkspace";
    s = cu->cublas_set_workspace(g->handle, (void*)(uintptr_t)g->workspace,
                                 bytes);
  }
  if (ok && s != CUBLAS_STATUS_SUCCESS) {
    ok = bench_fail("%s: cuBLAS status %d", call, (int)s);
  }
  // The matrices were written by synchronous calls on the legacy stream,
  // which the GEMM's non-blocking stream does not wait for.
  if (ok) {
    r = cu->cuStreamSynchronize(NULL);
    if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(cu->stream);
    if (r != CUDA_SUCCESS) ok = bench_cuda_fail(cu, r, "cuStreamSynchronize");
  }
  if (!ok) {
    bench_cuda_gemm_close(g);
    return NULL;
  }
  return g;
}

bool bench_cuda_gemm_run(void* user, uint64_t iters) {
  bench_cuda_gemm_t* g = user;
  bench_cuda_t* cu = g->cu;
  const float alpha = 1.0f, beta = 0.0f;
  for (uint64_t i = 0; i < iters; ++i) {
    // Row-major C = A B as column-major C^T = B^T A^T: B first, m and n
    // swapped (square here), no transposes, as the plugin's gemm.c.
    cublasStatus_t s = cu->cublas_gemm_ex(
        g->handle, CUBLAS_OP_N, CUBLAS_OP_N, g->n, g->n, g->n, &alpha,
        (const void*)(uintptr_t)g->b, g->type, g->n,
        (const void*)(uintptr_t)g->a, g->type, g->n, &beta,
        (void*)(uintptr_t)g->c, g->type, g->n, g->compute, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) {
      return bench_fail("cublasGemmEx %d: cuBLAS status %d", g->n, (int)s);
    }
    CUresult r = cu->cuStreamSynchronize(cu->stream);
    if (r != CUDA_SUCCESS) return bench_cuda_fail(cu, r, "cuStreamSynchronize");
  }
  return true;
}

#endif  // ACCEL_BENCH_CUDA

// ---------------------------------------------------------------------------
// Shared by both builds
// ---------------------------------------------------------------------------

const bench_copy_baseline_t bench_cuda_copy_baseline = {
    .name = "cuMemcpy*Async",
    .open = bench_cuda_copy_open,
    .run = bench_cuda_copy_run,
    .close = bench_cuda_copy_close,
};

bench_cuda_t* bench_cuda_get(bench_ctx_t* ctx) {
  if (ctx->cuda == NULL && !ctx->cuda_tried) {
    ctx->cuda_tried = true;
    uint32_t ordinal = accel_device_index(ctx->device);
    ctx->cuda =
        bench_cuda_open(ordinal, ctx->cuda_error, sizeof(ctx->cuda_error));
  }
  return ctx->cuda;
}

void bench_cuda_release(bench_ctx_t* ctx) {
  bench_cuda_close(ctx->cuda);
  ctx->cuda = NULL;
}
