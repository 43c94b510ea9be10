// SPDX-License-Identifier: MIT
//
// Opening NCCL (or RCCL) and the GPU runtime at run time. The GPU runtime
// is the one the device plugin uses (ACCEL_CUDA_DRIVER or libcuda.so.1;
// ACCEL_ROCM_RUNTIME or libamdhip64), so that the engine and the plugin
// share one driver state: the same primary contexts, streams and memory.
// The library names can be overridden with ACCEL_COMM_NCCL_LIBRARY and
// ACCEL_COMM_RCCL_LIBRARY (the tests point them at the stand-in).
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "accel_nccl.h"

#ifdef ACCEL_NCCL_HIP
static const char* const accel_nccl_gpu_names[] = {
    "libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
    "libamdhip64.so.5"};
#define ACCEL_NCCL_GPU_ENV "ACCEL_ROCM_RUNTIME"
#else
static const char* const accel_nccl_gpu_names[] = {"libcuda.so.1",
                                                   "libcuda.so"};
#define ACCEL_NCCL_GPU_ENV "ACCEL_CUDA_DRIVER"
#endif

static accel_status_t accel_nccl_unavailable(accel_nccl_engine_t* e,
                                             const char* format,
                                             const char* a, const char* b) {
  snprintf(e->error, sizeof(e->error), format, a, b);
  e->status = ACCEL_ERROR_UNAVAILABLE;
  return e->status;
}

// Opens the GPU runtime: the override, else the usual sonames.
static bool accel_nccl_open_gpu(accel_nccl_engine_t* e) {
  const char* forced = e->host->getenv(e->host, ACCEL_NCCL_GPU_ENV);
  if (forced != NULL && forced[0] != '\0') {
    e->gpu_dl = dlopen(forced, RTLD_NOW | RTLD_GLOBAL);
  }
  size_t n = sizeof(accel_nccl_gpu_names) / sizeof(accel_nccl_gpu_names[0]);
  for (size_t i = 0; e->gpu_dl == NULL && i < n; i++) {
    if (forced != NULL && forced[0] != '\0') break;
    e->gpu_dl = dlopen(accel_nccl_gpu_names[i], RTLD_NOW | RTLD_GLOBAL);
  }
  if (e->gpu_dl == NULL) {
    const char* why = dlerror();
    accel_nccl_unavailable(e, "no GPU runtime for " ACCEL_NCCL_NAME " (%s): %s",
                           forced != NULL && forced[0] != '\0'
                               ? forced
                               : accel_nccl_gpu_names[0],
                           why != NULL ? why : "not found");
    return false;
  }
  void* sym = NULL;
#define ACCEL_NCCL_GPU_RESOLVE(name, symbol, ret, params)                 \
  sym = dlsym(e->gpu_dl, symbol);                                         \
  if (sym == NULL) {                                                      \
    accel_nccl_unavailable(e, "the GPU runtime lacks %s%s", symbol, "");  \
    return false;                                                         \
  }                                                                       \
  memcpy(&e->nccl.name, &sym, sizeof(sym));
  ACCEL_NCCL_GPU_FUNCS(ACCEL_NCCL_GPU_RESOLVE)
#undef ACCEL_NCCL_GPU_RESOLVE
  return true;
}

// Opens NCCL and resolves its functions; false says why in e->error.
static bool accel_nccl_open(accel_nccl_engine_t* e) {
  const char* name = e->host->getenv(e->host, ACCEL_NCCL_LIBRARY_ENV);
  if (name == NULL || name[0] == '\0') name = ACCEL_NCCL_LIBRARY;
  e->dl = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (e->dl == NULL) {
    const char* why = dlerror();
    accel_nccl_unavailable(e, "%s not found: %s", name,
                           why != NULL ? why : "dlopen failed");
    return false;
  }
  void* sym = NULL;
#define ACCEL_NCCL_RESOLVE(fn, ret, params)                        \
  sym = dlsym(e->dl, #fn);                                         \
  if (sym == NULL) {                                               \
    accel_nccl_unavailable(e, "%s lacks %s", name, #fn);           \
    return false;                                                  \
  }                                                                \
  memcpy(&e->nccl.fn, &sym, sizeof(sym));
  ACCEL_NCCL_FUNCS(ACCEL_NCCL_RESOLVE)
#undef ACCEL_NCCL_RESOLVE
#define ACCEL_NCCL_RESOLVE_OPTIONAL(fn, ret, params) \
  sym = dlsym(e->dl, #fn);                           \
  memcpy(&e->nccl.fn, &sym, sizeof(sym));
  ACCEL_NCCL_OPTIONAL_FUNCS(ACCEL_NCCL_RESOLVE_OPTIONAL)
#undef ACCEL_NCCL_RESOLVE_OPTIONAL
  if (e->nccl.ncclGetVersion(&e->version) != ncclSuccess) e->version = 0;
  return true;
}

accel_status_t accel_nccl_start(accel_nccl_engine_t* e) {
  pthread_mutex_lock(&e->mutex);
  if (!e->tried) {
    e->tried = true;
    e->status = ACCEL_OK;
    if (accel_nccl_open(e) && accel_nccl_open_gpu(e)) {
#ifndef ACCEL_NCCL_HIP
      int rc = e->nccl.cuInit(0);
      if (rc != 0) {
        char code[16];
        snprintf(code, sizeof(code), "%d", rc);
        accel_nccl_unavailable(e, "cuInit failed with CUDA error %s%s", code,
                               "");
      }
#endif
    }
  }
  accel_status_t status = e->status;
  pthread_mutex_unlock(&e->mutex);
  if (status != ACCEL_OK) {
    return e->host->fail(e->host, status, "%s", e->error);
  }
  return ACCEL_OK;
}

void accel_nccl_stop(accel_nccl_engine_t* e) {
  // NCCL and the GPU runtime stay mapped: NCCL keeps threads and driver
  // state of its own that may outlive a communicator's destruction.
  (void)e;
}
