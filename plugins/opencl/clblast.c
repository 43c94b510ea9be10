// SPDX-License-Identifier: MIT
//
// CLBlast, opened at run time at the first GEMM: ACCEL_OPENCL_CLBLAST
// names the library, else libclblast.so.1 (Debian: libclblast1). The
// plugin neither includes CLBlast's header nor links it; the few entry
// points and constants it uses are declared here from CLBlast's
// documented C API (clblast_c.h): CLBlastSgemm and CLBlastHgemm, their
// strided-batched forms (optional: looked up, not required), the
// row-major layout, the transpose values, and CLBlastSuccess == 0.
#include <accel/plugin_dtype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtins.h"

// From clblast_c.h: CLBlastLayout, CLBlastTranspose.
#define ACCEL_CLBLAST_LAYOUT_ROW_MAJOR 101
#define ACCEL_CLBLAST_TRANSPOSE_NO 111
#define ACCEL_CLBLAST_TRANSPOSE_YES 112

// CLBlastSgemm; CLBlastHgemm is the same with cl_half alpha and beta. The
// enums are C enums (int) in the C API.
typedef int (*accel_clblast_sgemm_fn)(int layout, int a_transpose,
                                      int b_transpose, size_t m, size_t n,
                                      size_t k, float alpha, cl_mem a,
                                      size_t a_offset, size_t a_ld, cl_mem b,
                                      size_t b_offset, size_t b_ld, float beta,
                                      cl_mem c, size_t c_offset, size_t c_ld,
                                      cl_command_queue* queue, cl_event* event);
typedef int (*accel_clblast_hgemm_fn)(
    int layout, int a_transpose, int b_transpose, size_t m, size_t n, size_t k,
    cl_half alpha, cl_mem a, size_t a_offset, size_t a_ld, cl_mem b,
    size_t b_offset, size_t b_ld, cl_half beta, cl_mem c, size_t c_offset,
    size_t c_ld, cl_command_queue* queue, cl_event* event);

// CLBlastSgemmStridedBatched; Hgemm... with cl_half alpha and beta. The
// strides and offsets are in elements.
typedef int (*accel_clblast_sgemm_batched_fn)(
    int layout, int a_transpose, int b_transpose, size_t m, size_t n, size_t k,
    float alpha, cl_mem a, size_t a_offset, size_t a_ld, size_t a_stride,
    cl_mem b, size_t b_offset, size_t b_ld, size_t b_stride, float beta,
    cl_mem c, size_t c_offset, size_t c_ld, size_t c_stride, size_t batch_count,
    cl_command_queue* queue, cl_event* event);
typedef int (*accel_clblast_hgemm_batched_fn)(
    int layout, int a_transpose, int b_transpose, size_t m, size_t n, size_t k,
    cl_half alpha, cl_mem a, size_t a_offset, size_t a_ld, size_t a_stride,
    cl_mem b, size_t b_offset, size_t b_ld, size_t b_stride, cl_half beta,
    cl_mem c, size_t c_offset, size_t c_ld, size_t c_stride, size_t batch_count,
    cl_command_queue* queue, cl_event* event);

typedef struct accel_opencl_clblast {
  void* library;
  accel_clblast_sgemm_fn sgemm;
  accel_clblast_hgemm_fn hgemm;  // NULL in a build without half support
  // NULL in a CLBlast without them (before 1.0): batches then run on the
  // plugin's kernel.
  accel_clblast_sgemm_batched_fn sgemm_batched;
  accel_clblast_hgemm_batched_fn hgemm_batched;
} accel_opencl_clblast_t;

bool accel_opencl_clblast_open(accel_opencl_plugin_t* plugin) {
  const accel_host_t* host = plugin->host;
  pthread_mutex_lock(&plugin->mutex);
  if (!plugin->clblast_tried) {
    plugin->clblast_tried = true;
    const char* name = host->getenv(host, "ACCEL_OPENCL_CLBLAST");
    if (name == NULL || name[0] == '\0') name = "libclblast.so.1";
    void* library = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    accel_opencl_clblast_t* cb = NULL;
    if (library == NULL) {
      const char* why = dlerror();
      snprintf(plugin->clblast_error, sizeof(plugin->clblast_error),
               "CLBlast not loaded: %s", why != NULL ? why : name);
    } else if ((cb = calloc(1, sizeof(*cb))) == NULL) {
      dlclose(library);
      snprintf(plugin->clblast_error, sizeof(plugin->clblast_error),
               "CLBlast not loaded: out of memory");
    } else {
      cb->library = library;
      // POSIX allows converting dlsym's result to a function pointer.
      *(void**)&cb->sgemm = dlsym(library, "CLBlastSgemm");
      *(void**)&cb->hgemm = dlsym(library, "CLBlastHgemm");
      *(void**)&cb->sgemm_batched =
          dlsym(library, "CLBlastSgemmStridedBatched");
      *(void**)&cb->hgemm_batched =
          dlsym(library, "CLBlastHgemmStridedBatched");
      if (cb->sgemm == NULL) {
        snprintf(plugin->clblast_error, sizeof(plugin->clblast_error),
                 "CLBlast not loaded: %s has no CLBlastSgemm", name);
        dlclose(library);
        free(cb);
        cb = NULL;
      }
    }
    plugin->clblast = cb;
    host->log(host, ACCEL_LOG_INFO, "%s",
              cb != NULL ? "GEMM through CLBlast" : plugin->clblast_error);
  }
  bool ok = plugin->clblast != NULL;
  pthread_mutex_unlock(&plugin->mutex);
  return ok;
}

void accel_opencl_clblast_close(accel_opencl_plugin_t* plugin) {
  accel_opencl_clblast_t* cb = plugin->clblast;
  if (cb != NULL) {
    dlclose(cb->library);
    free(cb);
  }
  plugin->clblast = NULL;
  plugin->clblast_tried = false;
}

int accel_opencl_clblast_gemm(accel_opencl_plugin_t* plugin, uint32_t dtype,
                              bool trans_a, bool trans_b, size_t m, size_t n,
                              size_t k, double alpha, cl_mem a, size_t a_off,
                              size_t lda, cl_mem b, size_t b_off, size_t ldb,
                              double beta, cl_mem c, size_t c_off, size_t ldc,
                              cl_command_queue queue, cl_event* out_event) {
  const accel_opencl_clblast_t* cb = plugin->clblast;
  int ta = trans_a ? ACCEL_CLBLAST_TRANSPOSE_YES : ACCEL_CLBLAST_TRANSPOSE_NO;
  int tb = trans_b ? ACCEL_CLBLAST_TRANSPOSE_YES : ACCEL_CLBLAST_TRANSPOSE_NO;
  *out_event = NULL;
  if (dtype == ACCEL_DTYPE_F32) {
    return cb->sgemm(ACCEL_CLBLAST_LAYOUT_ROW_MAJOR, ta, tb, m, n, k,
                     (float)alpha, a, a_off, lda, b, b_off, ldb, (float)beta, c,
                     c_off, ldc, &queue, out_event);
  }
  if (cb->hgemm == NULL) return CL_INVALID_OPERATION;
  cl_half ha = accel_plugin_f64_to_f16(alpha);
  cl_half hb = accel_plugin_f64_to_f16(beta);
  return cb->hgemm(ACCEL_CLBLAST_LAYOUT_ROW_MAJOR, ta, tb, m, n, k, ha, a,
                   a_off, lda, b, b_off, ldb, hb, c, c_off, ldc, &queue,
                   out_event);
}

bool accel_opencl_clblast_has_batched(const accel_opencl_plugin_t* plugin,
                                      uint32_t dtype) {
  const accel_opencl_clblast_t* cb = plugin->clblast;
  return cb != NULL && (dtype == ACCEL_DTYPE_F32 ? cb->sgemm_batched != NULL
                                                 : cb->hgemm_batched != NULL);
}

int accel_opencl_clblast_gemm_batched(
    accel_opencl_plugin_t* plugin, uint32_t dtype, bool trans_a, bool trans_b,
    size_t m, size_t n, size_t k, double alpha, cl_mem a, size_t a_off,
    size_t lda, size_t a_stride, cl_mem b, size_t b_off, size_t ldb,
    size_t b_stride, double beta, cl_mem c, size_t c_off, size_t ldc,
    size_t c_stride, size_t count, cl_command_queue queue,
    cl_event* out_event) {
  const accel_opencl_clblast_t* cb = plugin->clblast;
  int ta = trans_a ? ACCEL_CLBLAST_TRANSPOSE_YES : ACCEL_CLBLAST_TRANSPOSE_NO;
  int tb = trans_b ? ACCEL_CLBLAST_TRANSPOSE_YES : ACCEL_CLBLAST_TRANSPOSE_NO;
  *out_event = NULL;
  if (!accel_opencl_clblast_has_batched(plugin, dtype)) {
    return CL_INVALID_OPERATION;
  }
  if (dtype == ACCEL_DTYPE_F32) {
    return cb->sgemm_batched(ACCEL_CLBLAST_LAYOUT_ROW_MAJOR, ta, tb, m, n, k,
                             (float)alpha, a, a_off, lda, a_stride, b, b_off,
                             ldb, b_stride, (float)beta, c, c_off, ldc,
                             c_stride, count, &queue, out_event);
  }
  return cb->hgemm_batched(ACCEL_CLBLAST_LAYOUT_ROW_MAJOR, ta, tb, m, n, k,
                           accel_plugin_f64_to_f16(alpha), a, a_off, lda,
                           a_stride, b, b_off, ldb, b_stride,
                           accel_plugin_f64_to_f16(beta), c, c_off, ldc,
                           c_stride, count, &queue, out_event);
}
