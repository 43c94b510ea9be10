// SPDX-License-Identifier: MIT
//
// Opens a BLAS library for the GEMM engines (engine.c), at the first GEMM
// (never at load: accel-info must not start OpenBLAS's threads, and the
// plugin must load where no BLAS is installed).
//
// Which library runs a GEMM is not decided here: engine.c loads every
// candidate (OpenBLAS, BLIS, or exactly ACCEL_CPU_BLAS) and times them.
// That replaces a fixed preference order with CPU-model rules: OpenBLAS
// 0.3.21 (Debian 12) selects its kernel from the CPU model and falls back
// to "Prescott" (SSE3) on models it does not know, such as recent Xeons;
// its only switch is OPENBLAS_CORETYPE, read by its constructor during
// dlopen, which this plugin does not setenv() (not thread-safe against
// getenv in the application's other threads, and a library must not edit
// its host's environment). Such a kernel simply loses the timing. BLIS
// 0.9 already picks its kernel from the CPU's features (CPUID: zen3 on an
// AVX2 EPYC), not the model. Debian's build also reads BLIS_ARCH_TYPE, a
// numeric sub-configuration id, at its first call, and aborts the process
// on an id it was not built with; the plugin leaves it alone for the same
// reason as OPENBLAS_CORETYPE. What each picked is in its description.
//
// Threads: OpenBLAS's pthread and OpenMP builds run one call on their own
// threads, so GEMM hands them whole products and leaves the pool idle.
// BLIS runs single-threaded unless BLIS_NUM_THREADS or OMP_NUM_THREADS say
// otherwise, and a serial OpenBLAS is single-threaded: then gemm.c splits
// C into tiles run on the pool. Never both at full width.
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

// Copies a code address out of dlsym (POSIX guarantees this works).
#define ACCEL_CPU_SYM(handle, name, fn)   \
  do {                                    \
    void* sym_ = dlsym((handle), (name)); \
    memcpy(&(fn), &sym_, sizeof(fn));     \
  } while (0)

typedef const char* (*accel_cpu_str_fn_t)(void);
typedef int (*accel_cpu_int_fn_t)(void);
typedef void (*accel_cpu_set_int_fn_t)(int);
typedef int64_t (*accel_cpu_i64_fn_t)(void);
typedef const char* (*accel_cpu_arch_str_fn_t)(int);

// Describes an OpenBLAS in `blas`.
static void accel_cpu_blas_openblas(accel_cpu_blas_t* blas,
                                           uint32_t width) {
  accel_cpu_str_fn_t corename = NULL, config = NULL;
  accel_cpu_int_fn_t parallel = NULL, threads = NULL;
  accel_cpu_set_int_fn_t set_threads = NULL;
  ACCEL_CPU_SYM(blas->handle, "openblas_get_corename", corename);
  ACCEL_CPU_SYM(blas->handle, "openblas_get_config", config);
  ACCEL_CPU_SYM(blas->handle, "openblas_get_parallel", parallel);
  ACCEL_CPU_SYM(blas->handle, "openblas_get_num_threads", threads);
  ACCEL_CPU_SYM(blas->handle, "openblas_set_num_threads", set_threads);
  const char* core = corename != NULL ? corename() : "unknown";
  char version[32] = "";
  // "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY Cooperlake MAX_THREADS=64"
  if (config != NULL) sscanf(config(), "OpenBLAS %31s", version);
  int nthreads = threads != NULL ? threads() : 1;
  blas->threaded = parallel != NULL && parallel() != 0 && nthreads > 1;
  if (blas->threaded && (uint32_t)nthreads > width && set_threads != NULL) {
    // ACCEL_CPU_THREADS (or a narrower affinity) asks for fewer threads
    // than OpenBLAS would use. This setting is OpenBLAS-global.
    set_threads((int)width);
    nthreads = (int)width;
  }
  snprintf(blas->description, sizeof(blas->description), "openblas-%s:%s:%s",
           version[0] ? version : "unknown", core,
           blas->threaded ? "threads" : "pool");
}

static void accel_cpu_blas_blis(accel_cpu_blas_t* blas) {
  accel_cpu_str_fn_t version = NULL;
  accel_cpu_i64_fn_t threading = NULL, threads = NULL;
  accel_cpu_int_fn_t arch_id = NULL;
  accel_cpu_arch_str_fn_t arch_name = NULL;
  ACCEL_CPU_SYM(blas->handle, "bli_info_get_version_str", version);
  ACCEL_CPU_SYM(blas->handle, "bli_info_get_enable_threading", threading);
  ACCEL_CPU_SYM(blas->handle, "bli_thread_get_num_threads", threads);
  ACCEL_CPU_SYM(blas->handle, "bli_arch_query_id", arch_id);
  ACCEL_CPU_SYM(blas->handle, "bli_arch_string", arch_name);
  const char* arch =
      arch_id != NULL && arch_name != NULL ? arch_name(arch_id()) : "unknown";
  // Threaded only when the user asked BLIS for threads (BLIS_NUM_THREADS
  // or OMP_NUM_THREADS): respect that, and keep the pool out of the way.
  blas->threaded =
      threading != NULL && threading() != 0 && threads != NULL && threads() > 1;
  snprintf(blas->description, sizeof(blas->description), "blis-%s:%s:%s",
           version != NULL ? version() : "unknown", arch,
           blas->threaded ? "threads" : "pool");
}

// dlopen()s `name` and checks it has cblas_sgemm. On failure appends the
// reason to `tried`. RTLD_NODELETE: a BLAS stays mapped after its dlclose
// (unload), as the OpenCL plugin keeps its ICD loader. OpenBLAS and BLIS
// keep process-wide state (thread pools, buffers reachable only from
// their own globals) and are not written to be unloaded and loaded again;
// unmapped, that state also looks leaked to LeakSanitizer, whose report
// then names no library. A later load reuses the same library.
static void* accel_cpu_blas_open(const char* name, accel_cpu_sgemm_fn_t* fn,
                                 char* tried, size_t tried_size) {
  void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  const char* why = NULL;
  if (handle == NULL) {
    why = dlerror();
  } else {
    ACCEL_CPU_SYM(handle, "cblas_sgemm", *fn);
    if (*fn == NULL) {
      why = "no cblas_sgemm";
      dlclose(handle);
      handle = NULL;
    }
  }
  if (handle == NULL) {
    size_t used = strlen(tried);
    snprintf(tried + used, tried_size - used, "%s%s (%.80s)", used ? "; " : "",
             name, why != NULL ? why : "unknown error");
  }
  return handle;
}

accel_cpu_blas_t* accel_cpu_blas_load(const char* name, uint32_t width,
                                      char* tried, size_t tried_size) {
  accel_cpu_blas_t* blas = calloc(1, sizeof(*blas));
  if (blas == NULL) {
    size_t used = strlen(tried);
    snprintf(tried + used, tried_size - used, "%s%s (out of memory)",
             used ? "; " : "", name);
    return NULL;
  }
  blas->handle = accel_cpu_blas_open(name, &blas->sgemm, tried, tried_size);
  if (blas->handle == NULL) {
    free(blas);
    return NULL;
  }
  blas->engine = ACCEL_CPU_ENGINE_BLAS;
  if (dlsym(blas->handle, "openblas_get_config") != NULL) {
    blas->engine = ACCEL_CPU_ENGINE_OPENBLAS;
    accel_cpu_blas_openblas(blas, width);
  } else if (dlsym(blas->handle, "bli_info_get_version_str") != NULL) {
    blas->engine = ACCEL_CPU_ENGINE_BLIS;
    accel_cpu_blas_blis(blas);
  } else {
    const char* base = strrchr(name, '/');
    snprintf(blas->description, sizeof(blas->description), "%.80s:pool",
             base != NULL ? base + 1 : name);
  }
  return blas;
}

void accel_cpu_blas_destroy(accel_cpu_blas_t* blas) {
  if (blas == NULL) return;
  // Drops this reference only: the library (with OpenBLAS's idle threads)
  // stays mapped until exit, see accel_cpu_blas_open().
  dlclose(blas->handle);
  free(blas);
}
