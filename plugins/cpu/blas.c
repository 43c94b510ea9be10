// SPDX-License-Identifier: MIT
//
// Finds the BLAS library GEMM runs on, at the first GEMM (never at load:
// accel-info must not start OpenBLAS's threads, and the plugin must load
// where no BLAS is installed).
//
// Order, chosen by measurement (docs/cpu-backend.md):
//   1. ACCEL_CPU_BLAS, when set: exactly that library (a soname or path).
//   2. libopenblas.so.0, when it picked a kernel that matches the CPU.
//   3. libblis.so.4, whose kernel choice follows CPU features rather than
//      model numbers, so it is right on CPUs newer than the library.
//   4. libopenblas.so.0 with a generic kernel, with a warning.
//   5. libblas.so.3 (whatever the system's BLAS alternative is).
// OpenBLAS 0.3.21 (Debian 12) selects its kernel from the CPU model and
// falls back to "Prescott" (SSE3, ~20 GFLOP/s) on models it does not know,
// such as recent Xeons. The only switch is the OPENBLAS_CORETYPE variable,
// read by its constructor during dlopen. This plugin does not setenv() it:
// setenv is not thread-safe against getenv in the application's other
// threads (glibc reallocates the environment array), and a library must
// not edit its host's environment. BLIS is used instead, which on the
// machines measured is within reach of OpenBLAS's best kernel; a user who
// sets OPENBLAS_CORETYPE gets OpenBLAS as forced.
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

// Whether an OpenBLAS core name is an old generic kernel on a CPU that has
// AVX2 (every x86-64 CPU of the last decade); false off x86-64.
static bool accel_cpu_blas_core_is_weak(const char* core) {
#if defined(__x86_64__) && defined(__GNUC__)
  static const char* const good[] = {
      "Haswell",        "Zen",       "SkylakeX",   "Cooperlake",
      "SapphireRapids", "Excavator", "Steamroller"};
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2")) return false;
  for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
    if (strcmp(core, good[i]) == 0) return false;
  }
  return true;
#else
  (void)core;
  return false;
#endif
}

// Describes an OpenBLAS in `blas`; returns its core name.
static const char* accel_cpu_blas_openblas(accel_cpu_blas_t* blas,
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
  return core;
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
// reason to `tried`.
static void* accel_cpu_blas_open(const char* name, accel_cpu_sgemm_fn_t* fn,
                                 char* tried, size_t tried_size) {
  void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
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

// Runs the search of the file comment. Returns the library or NULL with
// the reasons in `tried`.
static accel_cpu_blas_t* accel_cpu_blas_search(accel_cpu_plugin_t* plugin,
                                               char* tried, size_t tried_size) {
  const accel_host_t* host = plugin->host;
  uint32_t width = accel_cpu_pool_configured_width(plugin);
  accel_cpu_blas_t* blas = calloc(1, sizeof(*blas));
  if (blas == NULL) return NULL;
  const char* forced = host->getenv(host, "ACCEL_CPU_BLAS");
  if (forced != NULL && forced[0] != '\0') {
    blas->handle = accel_cpu_blas_open(forced, &blas->sgemm, tried, tried_size);
    if (blas->handle == NULL) goto fail;
    if (dlsym(blas->handle, "openblas_get_config") != NULL) {
      accel_cpu_blas_openblas(blas, width);
    } else if (dlsym(blas->handle, "bli_info_get_version_str") != NULL) {
      accel_cpu_blas_blis(blas);
    } else {
      snprintf(blas->description, sizeof(blas->description), "%s", forced);
    }
    return blas;
  }

  accel_cpu_sgemm_fn_t weak_sgemm = NULL;
  void* weak = NULL;  // an OpenBLAS with a generic kernel, kept in reserve
  blas->handle =
      accel_cpu_blas_open("libopenblas.so.0", &blas->sgemm, tried, tried_size);
  if (blas->handle != NULL) {
    const char* core = accel_cpu_blas_openblas(blas, width);
    const char* coretype = host->getenv(host, "OPENBLAS_CORETYPE");
    bool forced_core = coretype != NULL && coretype[0] != '\0';
    if (forced_core || !accel_cpu_blas_core_is_weak(core)) return blas;
    host->log(host, ACCEL_LOG_INFO,
              "cpu: OpenBLAS chose its generic '%s' kernel for this CPU; "
              "trying BLIS",
              core);
    weak = blas->handle;
    weak_sgemm = blas->sgemm;
  }
  blas->handle =
      accel_cpu_blas_open("libblis.so.4", &blas->sgemm, tried, tried_size);
  if (blas->handle != NULL) {
    if (weak != NULL) dlclose(weak);
    accel_cpu_blas_blis(blas);
    return blas;
  }
  if (weak != NULL) {
    host->log(host, ACCEL_LOG_WARN,
              "cpu: GEMM uses OpenBLAS's generic kernel and is slow; install "
              "libblis4 or set OPENBLAS_CORETYPE (e.g. SkylakeX, Haswell)");
    blas->handle = weak;
    blas->sgemm = weak_sgemm;
    accel_cpu_blas_openblas(blas, width);
    return blas;
  }
  blas->handle =
      accel_cpu_blas_open("libblas.so.3", &blas->sgemm, tried, tried_size);
  if (blas->handle != NULL) {
    snprintf(blas->description, sizeof(blas->description),
             "libblas.so.3:generic:pool");
    return blas;
  }
fail:
  free(blas);
  return NULL;
}

accel_status_t accel_cpu_blas_get(accel_cpu_plugin_t* plugin,
                                  const accel_cpu_blas_t** out_blas) {
  accel_cpu_blas_t* blas = atomic_load(&plugin->blas);
  *out_blas = blas;
  if (blas != NULL) return ACCEL_OK;
  const accel_host_t* host = plugin->host;
  accel_status_t status = ACCEL_OK;
  pthread_mutex_lock(&plugin->mutex);
  blas = atomic_load(&plugin->blas);
  if (blas == NULL && !plugin->blas_tried) {
    char tried[ACCEL_CPU_MESSAGE_SIZE - 96] = "";
    blas = accel_cpu_blas_search(plugin, tried, sizeof(tried));
    plugin->blas_tried = true;
    if (blas != NULL) {
      host->log(host, ACCEL_LOG_INFO, "cpu: GEMM runs on %s",
                blas->description);
      atomic_store(&plugin->blas, blas);
    } else {
      snprintf(plugin->blas_error, sizeof(plugin->blas_error),
               "GEMM needs a BLAS library and none could be loaded: %s; "
               "install libopenblas0 or libblis4",
               tried[0] ? tried : "out of memory");
    }
  }
  if (blas == NULL) {
    status =
        host->fail(host, ACCEL_ERROR_UNSUPPORTED, "%s", plugin->blas_error);
  }
  pthread_mutex_unlock(&plugin->mutex);
  *out_blas = blas;
  return status;
}

void accel_cpu_blas_destroy(accel_cpu_blas_t* blas) {
  if (blas == NULL) return;
  // OpenBLAS and BLIS stop their threads in their destructors.
  dlclose(blas->handle);
  free(blas);
}
