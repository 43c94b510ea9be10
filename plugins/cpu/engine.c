// SPDX-License-Identifier: MIT
//
// GEMM engines chosen by measurement. At the first GEMM the plugin loads
// every engine it can find: the BLAS libraries (OpenBLAS and BLIS, or
// exactly the one ACCEL_CPU_BLAS names; libblas.so.3 only when neither is
// there) and oneDNN. Then, at the first GEMM of each dtype, it picks one:
//   1. ACCEL_CPU_GEMM, when it names an engine for the dtype;
//   2. the decision cached on disk (engine_cache.c) under the same key:
//      CPU model, thread count and the loaded libraries' descriptions
//      (versions, kernels, threading), unless ACCEL_CPU_GEMM_RETUNE=1;
//   3. otherwise the fastest on a timed product of ACCEL_CPU_TUNE_N^3 in
//      that dtype, which is then cached on disk.
// No CPU model rule is involved: a library that picked a poor kernel for
// this CPU loses the timing. The decision holds for the process.
//
// Timing: each engine runs warm-up products for at least
// ACCEL_CPU_TUNE_WARM_NS (OpenBLAS's threads spin for a while after a
// call, which would slow the next engine's first runs), then the best of
// ACCEL_CPU_TUNE_RUNS products counts. For f16/bf16 the candidates are the
// conversion to f32 with the f32 winner, and oneDNN's own kernel where it
// has an optimised one (AVX-512 BF16/FP16, AMX); another f32 engine under
// the same conversion would only repeat the f32 comparison.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "cpu.h"

// The timed product: large enough for every engine to reach its blocked
// kernels and threads, small enough that timing all of them costs a few
// hundred milliseconds on a small machine once per cache key.
#define ACCEL_CPU_TUNE_N 512u
#define ACCEL_CPU_TUNE_RUNS 3
#define ACCEL_CPU_TUNE_WARM_NS 60000000ull

struct accel_cpu_engines {
  accel_cpu_blas_t* blas[3];   // by engine id; NULL when not loaded
  accel_cpu_onednn_t* onednn;  // NULL when not loaded
  char key[512];               // the disk-cache key
};

static const char* const accel_cpu_engine_names[ACCEL_CPU_ENGINE_COUNT] = {
    "openblas", "blis", "blas", "onednn"};
static const char* const accel_cpu_gemm_dtype_names[ACCEL_CPU_GEMM_DTYPES] = {
    "f32", "f16", "bf16"};

const char* accel_cpu_engine_name(accel_cpu_engine_id_t id) {
  return (unsigned)id < ACCEL_CPU_ENGINE_COUNT ? accel_cpu_engine_names[id]
                                               : "none";
}

// Index of `dtype` in gemm_choice[], or -1.
static int accel_cpu_gemm_dtype_index(uint32_t dtype) {
  switch (dtype) {
    case ACCEL_DTYPE_F32:
      return 0;
    case ACCEL_DTYPE_F16:
      return 1;
    case ACCEL_DTYPE_BF16:
      return 2;
    default:
      return -1;
  }
}

static int accel_cpu_engine_lookup(const char* name, size_t len) {
  for (int i = 0; i < (int)ACCEL_CPU_ENGINE_COUNT; i++) {
    if (strlen(accel_cpu_engine_names[i]) == len &&
        strncmp(name, accel_cpu_engine_names[i], len) == 0) {
      return i;
    }
  }
  return -1;
}

bool accel_cpu_gemm_parse(const char* text, int forced[3]) {
  for (int i = 0; i < 3; i++) forced[i] = -1;
  if (text == NULL || text[0] == '\0') return true;
  if (strchr(text, '=') == NULL) {
    int id = accel_cpu_engine_lookup(text, strlen(text));
    for (int i = 0; i < 3; i++) forced[i] = id;
    return id >= 0;
  }
  const char* p = text;
  while (*p != '\0') {
    const char* eq = strchr(p, '=');
    if (eq == NULL) return false;
    const char* end = strchr(eq, ',');
    if (end == NULL) end = eq + strlen(eq);
    int dt = -1;
    for (int i = 0; i < 3; i++) {
      size_t n = strlen(accel_cpu_gemm_dtype_names[i]);
      if ((size_t)(eq - p) == n &&
          strncmp(p, accel_cpu_gemm_dtype_names[i], n) == 0) {
        dt = i;
      }
    }
    int id = accel_cpu_engine_lookup(eq + 1, (size_t)(end - eq - 1));
    if (dt < 0 || id < 0) return false;
    forced[dt] = id;
    if (*end == ',' && end[1] == '\0') return false;
    p = *end == ',' ? end + 1 : end;
  }
  return true;
}

// Writes the part of the cache key known without loading anything.
static void accel_cpu_gemm_key_prefix(accel_cpu_plugin_t* plugin,
                                      const char* cpu_name, char* out,
                                      size_t size) {
  snprintf(out, size, "cpu=%.200s|threads=%u|", cpu_name,
           accel_cpu_pool_configured_width(plugin));
}

// Loads every engine (gemm_mutex held). NULL with the reasons in `tried`
// when none loads.
static accel_cpu_engines_t* accel_cpu_engines_load(accel_cpu_plugin_t* plugin,
                                                   char* tried, size_t size) {
  const accel_host_t* host = plugin->host;
  uint32_t width = accel_cpu_pool_configured_width(plugin);
  accel_cpu_engines_t* e = calloc(1, sizeof(*e));
  if (e == NULL) {
    snprintf(tried, size, "out of memory");
    return NULL;
  }
  const char* forced = host->getenv(host, "ACCEL_CPU_BLAS");
  if (forced != NULL && forced[0] != '\0') {
    // Named by what it is, so that ACCEL_CPU_GEMM=openblas (or blis)
    // reaches an OpenBLAS (or BLIS) given by path or another soname.
    accel_cpu_blas_t* blas = accel_cpu_blas_load(forced, width, tried, size);
    if (blas != NULL) e->blas[blas->engine] = blas;
  } else {
    e->blas[ACCEL_CPU_ENGINE_OPENBLAS] =
        accel_cpu_blas_load("libopenblas.so.0", width, tried, size);
    e->blas[ACCEL_CPU_ENGINE_BLIS] =
        accel_cpu_blas_load("libblis.so.4", width, tried, size);
    if (e->blas[0] == NULL && e->blas[1] == NULL) {
      e->blas[ACCEL_CPU_ENGINE_BLAS] =
          accel_cpu_blas_load("libblas.so.3", width, tried, size);
    }
  }
  e->onednn = accel_cpu_onednn_load(width, tried, size);
  if (e->blas[0] == NULL && e->blas[1] == NULL && e->blas[2] == NULL &&
      e->onednn == NULL) {
    free(e);
    return NULL;
  }
  accel_cpu_sysinfo_t info;
  accel_cpu_sysinfo_read(&info);
  accel_cpu_gemm_key_prefix(plugin, info.name, e->key, sizeof(e->key));
  for (int i = 0; i < 3; i++) {
    if (e->blas[i] == NULL) continue;
    size_t used = strlen(e->key);
    snprintf(e->key + used, sizeof(e->key) - used, "%s,",
             e->blas[i]->description);
  }
  size_t used = strlen(e->key);
  snprintf(e->key + used, sizeof(e->key) - used, "%s",
           e->onednn != NULL ? accel_cpu_onednn_description(e->onednn)
                             : "no-onednn");
  return e;
}

void accel_cpu_engines_destroy(accel_cpu_engines_t* e) {
  if (e == NULL) return;
  for (int i = 0; i < 3; i++) accel_cpu_blas_destroy(e->blas[i]);
  accel_cpu_onednn_destroy(e->onednn);
  free(e);
}

// Whether engine `id` is loaded.
static bool accel_cpu_engine_loaded(const accel_cpu_engines_t* e, int id) {
  if (id == ACCEL_CPU_ENGINE_ONEDNN) return e->onednn != NULL;
  return id >= 0 && id < 3 && e->blas[id] != NULL;
}

// Fills `out` for engine `id` and dtype index `dt`.
static void accel_cpu_engine_fill(const accel_cpu_engines_t* e, int id,
                                  int dt, accel_cpu_gemm_engine_t* out) {
  out->id = (accel_cpu_engine_id_t)id;
  out->blas = id < 3 ? e->blas[id] : NULL;
  out->onednn = id == ACCEL_CPU_ENGINE_ONEDNN ? e->onednn : NULL;
  out->native = out->onednn != NULL && dt > 0 &&
                accel_cpu_onednn_native(out->onednn, dt == 1
                                                         ? ACCEL_DTYPE_F16
                                                         : ACCEL_DTYPE_BF16);
}

// Seconds-per-product of the best timed run of `engine` on `g`, or a
// negative value when it failed.
static double accel_cpu_engine_time(accel_cpu_plugin_t* plugin,
                                    accel_cpu_pool_t* pool,
                                    const accel_cpu_gemm_engine_t* engine,
                                    const accel_plugin_gemm_t* g) {
  char message[ACCEL_CPU_MESSAGE_SIZE];
  uint64_t start = accel_cpu_now_ns();
  do {
    if (accel_cpu_gemm_execute(plugin, pool, engine, g, message,
                               sizeof(message)) != ACCEL_OK) {
      plugin->host->log(plugin->host, ACCEL_LOG_INFO,
                        "gemm engine %s failed its timing: %s",
                        accel_cpu_engine_name(engine->id), message);
      return -1.0;
    }
  } while (accel_cpu_now_ns() - start < ACCEL_CPU_TUNE_WARM_NS);
  double best = -1.0;
  for (int r = 0; r < ACCEL_CPU_TUNE_RUNS; r++) {
    uint64_t t0 = accel_cpu_now_ns();
    (void)accel_cpu_gemm_execute(plugin, pool, engine, g, message,
                                 sizeof(message));
    double s = (double)(accel_cpu_now_ns() - t0) * 1e-9;
    if (best < 0 || s < best) best = s;
  }
  return best;
}

// Times the candidates for dtype index `dt` and returns the winner's id
// (with `native` set for oneDNN's own f16/bf16 kernel); -1 when out of
// memory for the operands.
static int accel_cpu_engine_tune(accel_cpu_plugin_t* plugin,
                                 accel_cpu_pool_t* pool,
                                 const accel_cpu_engines_t* e, int dt,
                                 int f32_winner) {
  static const uint32_t dtypes[3] = {ACCEL_DTYPE_F32, ACCEL_DTYPE_F16,
                                     ACCEL_DTYPE_BF16};
  uint64_t n = ACCEL_CPU_TUNE_N;
  size_t es = dt == 0 ? 4 : 2;
  unsigned char* buf = aligned_alloc(ACCEL_CPU_ALIGNMENT, 3 * n * n * es);
  if (buf == NULL) return -1;
  float row[ACCEL_CPU_TUNE_N];
  for (uint64_t i = 0; i < 3 * n; i++) {
    for (uint64_t j = 0; j < n; j++) row[j] = (float)((i + j) % 17) / 16.0f;
    accel_cpu_from_f32_block(buf + i * n * es, row, dtypes[dt], n);
  }
  accel_plugin_gemm_t g = {.struct_size = sizeof(g), .a_dtype = dtypes[dt],
                           .b_dtype = dtypes[dt], .c_dtype = dtypes[dt],
                           .m = n, .n = n, .k = n, .alpha = 1.0,
                           .a = buf, .lda = n, .b = buf + n * n * es,
                           .ldb = n, .c = buf + 2 * n * n * es, .ldc = n};
  // OpenBLAS last: after a call its idle threads yield-spin for about 2^28
  // cycles (0.1 s), longer than the warm-up, and would slow the engine
  // timed after it. libgomp's threads (oneDNN) spin for much less.
  static const int order[ACCEL_CPU_ENGINE_COUNT] = {
      ACCEL_CPU_ENGINE_BLIS, ACCEL_CPU_ENGINE_BLAS, ACCEL_CPU_ENGINE_ONEDNN,
      ACCEL_CPU_ENGINE_OPENBLAS};
  char report[384] = "";
  int best_id = -1;
  double best = 0;
  for (int i = 0; i < (int)ACCEL_CPU_ENGINE_COUNT; i++) {
    int id = order[i];
    if (!accel_cpu_engine_loaded(e, id)) continue;
    accel_cpu_gemm_engine_t engine;
    accel_cpu_engine_fill(e, id, dt, &engine);
    // f16/bf16: the f32 winner converted, or oneDNN's own kernel.
    if (dt > 0 && id != f32_winner && !engine.native) continue;
    double s = accel_cpu_engine_time(plugin, pool, &engine, &g);
    size_t used = strlen(report);
    snprintf(report + used, sizeof(report) - used, "%s%s %.1f",
             used ? ", " : "", accel_cpu_engine_name((accel_cpu_engine_id_t)id),
             s > 0 ? 2.0 * (double)n * (double)n * (double)n / s * 1e-9 : 0.0);
    if (s > 0 && (best_id < 0 || s < best)) best_id = id, best = s;
  }
  free(buf);
  plugin->host->log(plugin->host, ACCEL_LOG_INFO,
                    "gemm-%s timed at %llu^3 (GFLOP/s): %s -> %s",
                    accel_cpu_gemm_dtype_names[dt], (unsigned long long)n,
                    report, accel_cpu_engine_name(best_id));
  return best_id;
}

// How many other runnable threads make the machine too busy for a timing
// to be cached: ACCEL_CPU_TUNE_BUSY, else a quarter of the usable CPUs
// (at least 1). Timings taken while other work competes for the cores
// can pick the wrong engine by far: on a 16-core Xeon, oneDNN's AMX bf16
// kernel (6x OpenBLAS on converted data when quiet) lost the timings taken
// inside accel-conform runs on PoCL (16 PoCL threads in the process), and
// the cached choice then held in every later process.
static uint32_t accel_cpu_tune_busy_threshold(const accel_host_t* host) {
  const char* text = host->getenv(host, "ACCEL_CPU_TUNE_BUSY");
  uint32_t busy = 0;
  if (text != NULL && text[0] != '\0') {
    if (accel_cpu_parse_count(text, 10, UINT32_MAX, &busy)) return busy;
    host->log(host, ACCEL_LOG_WARN,
              "ACCEL_CPU_TUNE_BUSY='%s' is not a positive count; ignored",
              text);
  }
  uint32_t cpus = accel_cpu_sysinfo_usable_cpus();
  return cpus / 4 > 1 ? cpus / 4 : 1;
}

// Decides dtype index `dt` (gemm_mutex held, engines loaded). Returns the
// engine id, or -1 with `status` set.
static int accel_cpu_engine_decide(accel_cpu_plugin_t* plugin,
                                   accel_cpu_pool_t* pool,
                                   const accel_cpu_engines_t* e, int dt,
                                   accel_status_t* status) {
  const accel_host_t* host = plugin->host;
  uint32_t stored = atomic_load(&plugin->gemm_choice[dt]);
  if (stored != 0) return (int)stored - 1;
  const char* text = host->getenv(host, "ACCEL_CPU_GEMM");
  int forced[3];
  if (!accel_cpu_gemm_parse(text, forced)) {
    *status = host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                         "ACCEL_CPU_GEMM='%s' is not an engine (openblas, "
                         "blis, blas, onednn) or a list of dtype=engine "
                         "(f32, f16, bf16)",
                         text);
    return -1;
  }
  int id = forced[dt];
  if (id >= 0 && !accel_cpu_engine_loaded(e, id)) {
    // The key ends with the loaded libraries' descriptions.
    const char* loaded = strrchr(e->key, '|');
    *status = host->fail(host, ACCEL_ERROR_UNSUPPORTED,
                         "ACCEL_CPU_GEMM forces %s for %s, which is not "
                         "loaded (loaded: %s%s)",
                         accel_cpu_engine_name((accel_cpu_engine_id_t)id),
                         accel_cpu_gemm_dtype_names[dt],
                         loaded != NULL ? loaded + 1 : e->key,
                         plugin->engines_error);
    return -1;
  }
  char path[1024];
  accel_cpu_gemm_cache_path(host, path, sizeof(path));
  const char* retune = host->getenv(host, "ACCEL_CPU_GEMM_RETUNE");
  bool redo = retune != NULL && strcmp(retune, "1") == 0;
  if (id < 0 && !redo && path[0] != '\0') {
    id = accel_cpu_gemm_cache_find(path, e->key, false,
                                   accel_cpu_gemm_dtype_names[dt]);
    if (!accel_cpu_engine_loaded(e, id)) id = -1;
  }
  if (id < 0) {
    int f32 = dt == 0 ? -1 : accel_cpu_engine_decide(plugin, pool, e, 0,
                                                     status);
    if (dt > 0 && f32 < 0) return -1;
    uint32_t others = accel_cpu_sysinfo_other_runnable();
    id = accel_cpu_engine_tune(plugin, pool, e, dt, f32);
    if (id < 0) {
      *status = host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                           "cpu: gemm: no engine passed the timing of %s",
                           accel_cpu_gemm_dtype_names[dt]);
      return -1;
    }
    uint32_t busy = accel_cpu_tune_busy_threshold(host);
    if (others >= busy) {
      host->log(host, ACCEL_LOG_INFO,
                "gemm-%s: timed while %u other threads were runnable (%u "
                "or more count as busy, ACCEL_CPU_TUNE_BUSY): the choice "
                "holds for this process and is not cached on disk",
                accel_cpu_gemm_dtype_names[dt], (unsigned)others,
                (unsigned)busy);
    } else if (path[0] != '\0' &&
               !accel_cpu_gemm_cache_store(path, e->key,
                                           accel_cpu_gemm_dtype_names[dt],
                                           (accel_cpu_engine_id_t)id)) {
      host->log(host, ACCEL_LOG_DEBUG, "cannot write %s", path);
    }
  }
  atomic_store(&plugin->gemm_choice[dt], (uint32_t)id + 1);
  return id;
}

accel_status_t accel_cpu_gemm_engine_get(accel_cpu_plugin_t* plugin,
                                         accel_cpu_pool_t* pool,
                                         uint32_t dtype,
                                         accel_cpu_gemm_engine_t* out) {
  int dt = accel_cpu_gemm_dtype_index(dtype);
  accel_cpu_engines_t* e = atomic_load(&plugin->engines);
  uint32_t stored = dt >= 0 ? atomic_load(&plugin->gemm_choice[dt]) : 0;
  if (e != NULL && stored != 0) {
    accel_cpu_engine_fill(e, (int)stored - 1, dt, out);
    return ACCEL_OK;
  }
  const accel_host_t* host = plugin->host;
  if (dt < 0) {
    return host->fail(host, ACCEL_ERROR_UNSUPPORTED, "cpu: gemm dtype %u",
                      (unsigned)dtype);
  }
  accel_status_t status = ACCEL_OK;
  pthread_mutex_lock(&plugin->gemm_mutex);
  e = atomic_load(&plugin->engines);
  if (e == NULL && !plugin->engines_tried) {
    char tried[ACCEL_CPU_MESSAGE_SIZE - 96] = "";
    e = accel_cpu_engines_load(plugin, tried, sizeof(tried));
    plugin->engines_tried = true;
    if (e != NULL) {
      host->log(host, ACCEL_LOG_INFO, "GEMM engines: %s", e->key);
      snprintf(plugin->engines_error, sizeof(plugin->engines_error),
               "%s%s", tried[0] ? "; not loaded: " : "", tried);
      atomic_store(&plugin->engines, e);
    } else {
      snprintf(plugin->engines_error, sizeof(plugin->engines_error),
               "GEMM needs a BLAS library or oneDNN and none could be "
               "loaded: %s; install libopenblas0, libblis4 or libdnnl2",
               tried);
    }
  }
  if (e == NULL) {
    status = host->fail(host, ACCEL_ERROR_UNSUPPORTED, "%s",
                        plugin->engines_error);
  } else {
    int id = accel_cpu_engine_decide(plugin, pool, e, dt, &status);
    if (id >= 0) accel_cpu_engine_fill(e, id, dt, out);
  }
  pthread_mutex_unlock(&plugin->gemm_mutex);
  return status;
}

void accel_cpu_gemm_features(accel_cpu_plugin_t* plugin, const char* cpu_name,
                             char* out, size_t size) {
  const accel_host_t* host = plugin->host;
  int forced[3];
  bool valid = accel_cpu_gemm_parse(host->getenv(host, "ACCEL_CPU_GEMM"),
                                    forced);
  char path[1024], prefix[320];
  accel_cpu_gemm_cache_path(host, path, sizeof(path));
  accel_cpu_gemm_key_prefix(plugin, cpu_name, prefix, sizeof(prefix));
  out[0] = '\0';
  for (int dt = 0; dt < 3; dt++) {
    uint32_t stored = atomic_load(&plugin->gemm_choice[dt]);
    int id = valid ? forced[dt] : -1;
    if (id < 0 && stored != 0) id = (int)stored - 1;
    if (id < 0 && valid && path[0] != '\0') {
      id = accel_cpu_gemm_cache_find(path, prefix, true,
                                     accel_cpu_gemm_dtype_names[dt]);
    }
    size_t used = strlen(out);
    snprintf(out + used, size - used, "%sgemm-%s=%s", dt ? " " : "",
             accel_cpu_gemm_dtype_names[dt],
             id >= 0 ? accel_cpu_engine_name((accel_cpu_engine_id_t)id)
                     : "auto");
  }
}
