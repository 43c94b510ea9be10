// SPDX-License-Identifier: MIT
//
// rocBLAS, opened lazily at the first GEMM (never at load: it is large and
// starts its own machinery). Order: ACCEL_ROCM_BLAS when set ("none"
// disables it, anything else is a soname or path), else librocblas.so,
// .so.4, .so.3, .so.0. Without it GEMM runs on the plugin's tiled kernel.
// The enum values and the rocblas_gemm_ex signature are rocBLAS's public
// ABI since ROCm 3 (rocblas-types.h, rocblas-functions.h), spelled out so
// the build needs no rocBLAS headers. rocblas_set_workspace(handle, addr,
// size) (rocblas-auxiliary.h, public since ROCm 5) is optional: without it
// the core lends no GEMM workspace and rocBLAS allocates its own.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_rocm.h"

static const char* const accel_rocm_blas_names[] = {
    "librocblas.so", "librocblas.so.4", "librocblas.so.3", "librocblas.so.0"};

// Copies a code address out of dlsym (POSIX guarantees this works).
#define ACCEL_ROCM_SYM(handle, name, fn)  \
  do {                                    \
    void* sym_ = dlsym((handle), (name)); \
    memcpy(&(fn), &sym_, sizeof(fn));     \
  } while (0)

// Opens `name` and resolves the four entry points; on failure appends the
// reason to `tried` and returns false.
static bool accel_rocm_blas_open(accel_rocm_blas_t* blas, const char* name,
                                 char* tried, size_t tried_size) {
  const char* why = NULL;
  blas->lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (blas->lib == NULL) {
    why = dlerror();
  } else {
    ACCEL_ROCM_SYM(blas->lib, "rocblas_create_handle", blas->create_handle);
    ACCEL_ROCM_SYM(blas->lib, "rocblas_destroy_handle", blas->destroy_handle);
    ACCEL_ROCM_SYM(blas->lib, "rocblas_set_stream", blas->set_stream);
    ACCEL_ROCM_SYM(blas->lib, "rocblas_gemm_ex", blas->gemm_ex);
    ACCEL_ROCM_SYM(blas->lib, "rocblas_set_workspace", blas->set_workspace);
    ACCEL_ROCM_SYM(blas->lib, "rocblas_gemm_strided_batched_ex",
                   blas->gemm_strided_batched_ex);
    if (blas->create_handle == NULL || blas->destroy_handle == NULL ||
        blas->set_stream == NULL || blas->gemm_ex == NULL) {
      why = "not rocBLAS: no rocblas_gemm_ex";
      dlclose(blas->lib);
      blas->lib = NULL;
    }
  }
  if (blas->lib == NULL) {
    size_t used = strlen(tried);
    snprintf(tried + used, tried_size - used, "%s%s (%.120s)", used ? "; " : "",
             name, why != NULL ? why : "unknown error");
    return false;
  }
  snprintf(blas->description, sizeof(blas->description), "rocBLAS (%.80s)",
           name);
  return true;
}

const accel_rocm_blas_t* accel_rocm_blas_get(accel_rocm_plugin_t* plugin) {
  const accel_host_t* host = plugin->host;
  pthread_mutex_lock(&plugin->mutex);
  if (!plugin->blas_tried) {
    plugin->blas_tried = true;
    accel_rocm_blas_t* blas = &plugin->blas;
    char tried[ACCEL_ROCM_MESSAGE_SIZE] = "";
    const char* forced = host->getenv(host, "ACCEL_ROCM_BLAS");
    bool found = false;
    if (forced != NULL && strcmp(forced, "none") == 0) {
      snprintf(tried, sizeof(tried), "ACCEL_ROCM_BLAS=none");
    } else if (forced != NULL && forced[0] != '\0') {
      found = accel_rocm_blas_open(blas, forced, tried, sizeof(tried));
    } else {
      size_t n =
          sizeof(accel_rocm_blas_names) / sizeof(accel_rocm_blas_names[0]);
      for (size_t i = 0; i < n && !found; i++) {
        found = accel_rocm_blas_open(blas, accel_rocm_blas_names[i], tried,
                                     sizeof(tried));
      }
    }
    plugin->blas_ok = found;
    if (found) {
      host->log(host, ACCEL_LOG_INFO, "GEMM runs on %s, %s",
                blas->description,
                blas->set_workspace != NULL
                    ? "workspace lent by accel"
                    : "its own workspace (no rocblas_set_workspace)");
    } else {
      host->log(host, ACCEL_LOG_INFO,
                "GEMM runs on the plugin's tiled kernel (no rocBLAS: "
                "%s)",
                tried);
    }
  }
  const accel_rocm_blas_t* blas = plugin->blas_ok ? &plugin->blas : NULL;
  pthread_mutex_unlock(&plugin->mutex);
  return blas;
}

void accel_rocm_blas_close(accel_rocm_plugin_t* plugin) {
  if (plugin->blas.lib != NULL) dlclose(plugin->blas.lib);
  plugin->blas.lib = NULL;
}
