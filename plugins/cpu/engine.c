// SPDX-License-Identifier: MIT
//
// GEMM engines chosen by measurement. At the first GEMM the plugin loads
// every engine it can find: the BLAS libraries (OpenBLAS and BLIS, or
// exactly the one ACCEL_CPU_BLAS names; libblas.so.3 only when neither is
// there) and oneDNN. Then, at the first GEMM of each dtype and size class
// (small, medium, large by m*n*k: engine_tune.c), it picks one:
//   1. ACCEL_CPU_GEMM, when it names an engine for the dtype and class;
//   2. the decision cached on disk (engine_cache.c) under the same key:
//      CPU model, thread count and the loaded libraries' descriptions
//      (versions, kernels, threading), unless ACCEL_CPU_GEMM_RETUNE=1;
//   3. otherwise the fastest on the class's timed product in that dtype
//      (engine_tune.c), which is then cached on disk.
// No CPU model rule is involved: a library that picked a poor kernel for
// this CPU loses the timing. The decision holds for the process.
//
// The plugin's own engine ("accel", gemm_kernel.c) needs no library: it
// is a candidate wherever the CPU has AVX2 (FMA, F16C) or AVX-512, for every
// dtype. For f16/bf16 the candidates are the conversion to f32 with the
// f32 winner of the same class, oneDNN's own kernel where it has an
// optimised one (AVX-512 BF16/FP16, AMX), and the own engine, which
// converts while it packs; another f32 engine under the same conversion
// would only repeat the f32 comparison.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "cpu.h"

struct accel_cpu_engines {
  accel_cpu_blas_t* blas[3];   // by engine id; NULL when not loaded
  accel_cpu_onednn_t* onednn;  // NULL when not loaded
  const accel_cpu_gk_isa_t* own;  // the own kernel, or NULL
  char key[512];               // the disk-cache key
};

static const char* const accel_cpu_engine_names[ACCEL_CPU_ENGINE_COUNT] = {
    "openblas", "blis", "blas", "onednn", "onednn-f32", "accel"};
static const char* const accel_cpu_gemm_dtype_names[ACCEL_CPU_GEMM_DTYPES] = {
    "f32", "f16", "bf16"};

const char* accel_cpu_engine_name(accel_cpu_engine_id_t id) {
  return (unsigned)id < ACCEL_CPU_ENGINE_COUNT ? accel_cpu_engine_names[id]
                                               : "none";
}

const char* accel_cpu_gemm_dtype_name(int dt) {
  return dt >= 0 && dt < (int)ACCEL_CPU_GEMM_DTYPES
             ? accel_cpu_gemm_dtype_names[dt]
             : "none";
}

bool accel_cpu_name_is(const char* text, size_t len, const char* name) {
  return name != NULL && strlen(name) == len && strncmp(text, name, len) == 0;
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

// Index of the name the `len` characters at `text` spell in `names`, or
// -1.
// Index (below `count`) of the name `name_of` gives that the `len`
// characters at `text` spell, or -1.
static int accel_cpu_name_lookup(const char* (*name_of)(int), int count,
                                 const char* text, size_t len) {
  for (int i = 0; i < count; i++) {
    if (accel_cpu_name_is(text, len, name_of(i))) return i;
  }
  return -1;
}

static const char* accel_cpu_engine_name_of(int id) {
  return accel_cpu_engine_name((accel_cpu_engine_id_t)id);
}

int accel_cpu_engine_id(const char* text, size_t len) {
  return accel_cpu_name_lookup(accel_cpu_engine_name_of,
                               (int)ACCEL_CPU_ENGINE_COUNT, text, len);
}

// One `dtype[@class]=engine` item of ACCEL_CPU_GEMM, the `len` characters
// at `item`: its dtype index, class (-1 for every class) and engine id.
static bool accel_cpu_gemm_parse_item(const char* item, size_t len, int* dt,
                                      int* cls, int* id) {
  const char* eq = memchr(item, '=', len);
  if (eq == NULL) return false;
  const char* at = memchr(item, '@', (size_t)(eq - item));
  const char* dt_end = at != NULL ? at : eq;
  *dt = accel_cpu_name_lookup(accel_cpu_gemm_dtype_name,
                              (int)ACCEL_CPU_GEMM_DTYPES, item,
                              (size_t)(dt_end - item));
  *cls = at != NULL ? accel_cpu_name_lookup(accel_cpu_gemm_class_name,
                                            (int)ACCEL_CPU_GEMM_CLASSES,
                                            at + 1, (size_t)(eq - at - 1))
                    : -1;
  *id = accel_cpu_engine_id(eq + 1, (size_t)(item + len - eq - 1));
  return *dt >= 0 && (at == NULL || *cls >= 0) && *id >= 0;
}

bool accel_cpu_gemm_parse(
    const char* text,
    int forced[ACCEL_CPU_GEMM_DTYPES][ACCEL_CPU_GEMM_CLASSES]) {
  int wide[ACCEL_CPU_GEMM_DTYPES];
  for (int d = 0; d < (int)ACCEL_CPU_GEMM_DTYPES; d++) {
    wide[d] = -1;
    for (int c = 0; c < (int)ACCEL_CPU_GEMM_CLASSES; c++) forced[d][c] = -1;
  }
  if (text == NULL || text[0] == '\0') return true;
  if (strchr(text, '=') == NULL) {
    int id = accel_cpu_engine_id(text, strlen(text));
    for (int d = 0; d < (int)ACCEL_CPU_GEMM_DTYPES; d++) {
      for (int c = 0; c < (int)ACCEL_CPU_GEMM_CLASSES; c++) forced[d][c] = id;
    }
    return id >= 0;
  }
  for (const char* p = text;;) {
    const char* end = p + strcspn(p, ",");
    int dt, cls, id;
    if (!accel_cpu_gemm_parse_item(p, (size_t)(end - p), &dt, &cls, &id)) {
      return false;
    }
    if (cls < 0) {
      wide[dt] = id;
    } else {
      forced[dt][cls] = id;
    }
    if (*end == '\0') break;
    p = end + 1;  // "f32=blis," ends in an empty item, which fails
  }
  // A class named on its own wins over its dtype, in any order.
  for (int d = 0; d < (int)ACCEL_CPU_GEMM_DTYPES; d++) {
    for (int c = 0; c < (int)ACCEL_CPU_GEMM_CLASSES; c++) {
      if (forced[d][c] < 0) forced[d][c] = wide[d];
    }
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
  // The user's own setting of OpenMP's idle spinning stands.
  bool pause_idle = host->getenv(host, "OMP_WAIT_POLICY") == NULL &&
                    host->getenv(host, "GOMP_SPINCOUNT") == NULL;
  e->onednn = accel_cpu_onednn_load(width, pause_idle, tried, size);
  char why[96];
  e->own = accel_cpu_gk_choose(host->getenv(host, "ACCEL_CPU_GEMM_ISA"), why,
                               sizeof(why));
  if (e->own == NULL) {
    size_t used = strlen(tried);
    snprintf(tried + used, size - used, "%saccel (%s)", used > 0 ? "; " : "",
             why);
  }
  if (e->blas[0] == NULL && e->blas[1] == NULL && e->blas[2] == NULL &&
      e->onednn == NULL && e->own == NULL) {
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
  snprintf(e->key + used, sizeof(e->key) - used, "%s,accel-%s",
           e->onednn != NULL ? accel_cpu_onednn_description(e->onednn)
                             : "no-onednn",
           e->own != NULL ? accel_cpu_gk_name(e->own) : "none");
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
  if (id == ACCEL_CPU_ENGINE_ONEDNN || id == ACCEL_CPU_ENGINE_ONEDNN_F32) {
    return e->onednn != NULL;
  }
  if (id == ACCEL_CPU_ENGINE_ACCEL) return e->own != NULL;
  return id >= 0 && id < 3 && e->blas[id] != NULL;
}

// Fills `out` for engine `id` and dtype index `dt`.
static void accel_cpu_engine_fill(const accel_cpu_engines_t* e, int id,
                                  int dt, accel_cpu_gemm_engine_t* out) {
  out->id = (accel_cpu_engine_id_t)id;
  out->blas = id < 3 ? e->blas[id] : NULL;
  out->onednn = id == ACCEL_CPU_ENGINE_ONEDNN ||
                        id == ACCEL_CPU_ENGINE_ONEDNN_F32
                    ? e->onednn
                    : NULL;
  out->own = id == ACCEL_CPU_ENGINE_ACCEL ? e->own : NULL;
  out->native = id == ACCEL_CPU_ENGINE_ONEDNN && dt > 0 &&
                accel_cpu_onednn_native(out->onednn, dt == 1
                                                         ? ACCEL_DTYPE_F16
                                                         : ACCEL_DTYPE_BF16);
}

// The cache line's second field for dtype index `dt` and class `cls`:
// "f32@large".
static void accel_cpu_gemm_field(int dt, int cls, char* out, size_t size) {
  snprintf(out, size, "%s@%s", accel_cpu_gemm_dtype_names[dt],
           accel_cpu_gemm_class_name(cls));
}

// The engine cached in `text` (the cache file's contents) for dtype index
// `dt` and class `cls` under `key` (a prefix when `prefix_only`), or -1.
// A line of the format before classes names the dtype alone ("f32"); it
// was timed at 512^3, the medium class's product, and counts for that
// class only, so that the other classes are timed rather than inherit a
// decision measured elsewhere.
static int accel_cpu_gemm_cached(const char* text, const char* key,
                                 bool prefix_only, int dt, int cls) {
  char field[32];
  accel_cpu_gemm_field(dt, cls, field, sizeof(field));
  return accel_cpu_gemm_cache_find(
      text, key, prefix_only, field,
      cls == ACCEL_CPU_GEMM_MEDIUM ? accel_cpu_gemm_dtype_names[dt] : NULL);
}

// The engine ACCEL_CPU_GEMM forces for dtype index `dt` and class `cls`
// (-1 for none), or -2 with `status` set when it is malformed or names an
// engine that did not load.
static int accel_cpu_engine_forced(accel_cpu_plugin_t* plugin,
                                   const accel_cpu_engines_t* e, int dt,
                                   int cls, accel_status_t* status) {
  const accel_host_t* host = plugin->host;
  const char* text = host->getenv(host, "ACCEL_CPU_GEMM");
  int forced[ACCEL_CPU_GEMM_DTYPES][ACCEL_CPU_GEMM_CLASSES];
  if (!accel_cpu_gemm_parse(text, forced)) {
    *status = host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                         "ACCEL_CPU_GEMM='%s' is not an engine (openblas, "
                         "blis, blas, onednn, accel) or a comma-separated "
                         "list of "
                         "dtype=engine or dtype@class=engine (dtype f32, "
                         "f16, bf16; class small, medium, large)",
                         text);
    return -2;
  }
  int id = forced[dt][cls];
  if (id >= 0 && !accel_cpu_engine_loaded(e, id)) {
    // The key ends with the loaded libraries' descriptions.
    const char* loaded = strrchr(e->key, '|');
    *status = host->fail(
        host, ACCEL_ERROR_UNSUPPORTED,
        "ACCEL_CPU_GEMM forces %s for %s@%s, which is not "
        "loaded (loaded: %s%s)",
        accel_cpu_engine_name((accel_cpu_engine_id_t)id),
        accel_cpu_gemm_dtype_names[dt], accel_cpu_gemm_class_name(cls),
        loaded != NULL ? loaded + 1 : e->key, plugin->engines_error);
    return -2;
  }
  return id;
}

// Times the candidates for dtype index `dt` and class `cls` (the f32
// winner of the class is `f32`), and caches the winner in `path` unless
// the machine was busy. Returns the winner, or -1 with `status` set.
static int accel_cpu_engine_time_class(accel_cpu_plugin_t* plugin,
                                       accel_cpu_pool_t* pool,
                                       const accel_cpu_engines_t* e, int dt,
                                       int cls, int f32, const char* path,
                                       accel_status_t* status) {
  const accel_host_t* host = plugin->host;
  // OpenBLAS last: after a call its idle threads yield-spin for about 2^28
  // cycles (0.1 s), longer than the warm-up, and would slow the engine
  // timed after it. libgomp's threads (oneDNN) spin for 5-10 ms, within
  // the warm-up; the own engine, whose threads are the pool's, first.
  static const int order[ACCEL_CPU_ENGINE_COUNT] = {
      ACCEL_CPU_ENGINE_ACCEL,      ACCEL_CPU_ENGINE_BLIS,
      ACCEL_CPU_ENGINE_BLAS,       ACCEL_CPU_ENGINE_ONEDNN,
      ACCEL_CPU_ENGINE_ONEDNN_F32, ACCEL_CPU_ENGINE_OPENBLAS};
  accel_cpu_gemm_engine_t candidates[ACCEL_CPU_ENGINE_COUNT];
  int count = 0;
  bool native = false;  // oneDNN's own half kernel is a candidate
  for (int i = 0; i < (int)ACCEL_CPU_ENGINE_COUNT; i++) {
    if (!accel_cpu_engine_loaded(e, order[i])) continue;
    accel_cpu_engine_fill(e, order[i], dt, &candidates[count]);
    native = native || candidates[count].native;
    // f16/bf16: the f32 winner converted, oneDNN's own kernel, or the
    // plugin's own (which converts while packing). When oneDNN won f32,
    // "onednn" is its own kernel if it has one and the conversion
    // otherwise, so oneDNN-f32 is timed only beside oneDNN's own kernel;
    // f32 has no oneDNN-f32 of its own.
    if (order[i] == ACCEL_CPU_ENGINE_ONEDNN_F32) {
      if (dt == 0 || f32 != ACCEL_CPU_ENGINE_ONEDNN || !native) continue;
    } else if (dt > 0 && order[i] != f32 && !candidates[count].native &&
               order[i] != ACCEL_CPU_ENGINE_ACCEL) {
      continue;
    }
    count++;
  }
  char field[32];
  accel_cpu_gemm_field(dt, cls, field, sizeof(field));
  uint32_t others = accel_cpu_sysinfo_other_runnable();
  int best = accel_cpu_engine_tune(plugin, pool, dt, cls, candidates, count);
  if (best < 0) {
    *status = host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                         "cpu: gemm: no engine passed the timing of %s", field);
    return -1;
  }
  int id = (int)candidates[best].id;
  uint32_t busy = accel_cpu_tune_busy_threshold(host);
  if (others >= busy) {
    host->log(host, ACCEL_LOG_INFO,
              "gemm-%s: timed while %u other threads were runnable (%u "
              "or more count as busy, ACCEL_CPU_TUNE_BUSY): the choice "
              "holds for this process and is not cached on disk",
              field, (unsigned)others, (unsigned)busy);
  } else if (path[0] != '\0' &&
             !accel_cpu_gemm_cache_store(path, e->key, field,
                                         (accel_cpu_engine_id_t)id)) {
    host->log(host, ACCEL_LOG_DEBUG, "cannot write %s", path);
  }
  return id;
}

// Decides dtype index `dt` and class `cls` (gemm_mutex held, engines
// loaded). Returns the engine id, or -1 with `status` set.
static int accel_cpu_engine_decide(accel_cpu_plugin_t* plugin,
                                   accel_cpu_pool_t* pool,
                                   const accel_cpu_engines_t* e, int dt,
                                   int cls, accel_status_t* status) {
  const accel_host_t* host = plugin->host;
  uint32_t stored = atomic_load(&plugin->gemm_choice[dt][cls]);
  if (stored != 0) return (int)stored - 1;
  int id = accel_cpu_engine_forced(plugin, e, dt, cls, status);
  if (id == -2) return -1;
  char path[1024];
  accel_cpu_gemm_cache_path(host, path, sizeof(path));
  const char* retune = host->getenv(host, "ACCEL_CPU_GEMM_RETUNE");
  bool redo = retune != NULL && strcmp(retune, "1") == 0;
  if (id < 0 && !redo && path[0] != '\0') {
    char* text = accel_cpu_gemm_cache_read(path);
    id = accel_cpu_gemm_cached(text, e->key, false, dt, cls);
    free(text);
    if (!accel_cpu_engine_loaded(e, id)) id = -1;
  }
  if (id < 0) {
    int f32 =
        dt == 0 ? -1 : accel_cpu_engine_decide(plugin, pool, e, 0, cls, status);
    if (dt > 0 && f32 < 0) return -1;
    id = accel_cpu_engine_time_class(plugin, pool, e, dt, cls, f32, path,
                                     status);
    if (id < 0) return -1;
  }
  atomic_store(&plugin->gemm_choice[dt][cls], (uint32_t)id + 1);
  return id;
}

// Loads the engines once per plugin (gemm_mutex held); NULL with the
// reason in `plugin->engines_error` when none loads.
static accel_cpu_engines_t* accel_cpu_engines_get(accel_cpu_plugin_t* plugin) {
  const accel_host_t* host = plugin->host;
  accel_cpu_engines_t* e = atomic_load(&plugin->engines);
  if (e != NULL || plugin->engines_tried) return e;
  char tried[ACCEL_CPU_MESSAGE_SIZE - 96] = "";
  e = accel_cpu_engines_load(plugin, tried, sizeof(tried));
  plugin->engines_tried = true;
  if (e != NULL) {
    host->log(host, ACCEL_LOG_INFO, "GEMM engines: %s", e->key);
    snprintf(plugin->engines_error, sizeof(plugin->engines_error), "%s%s",
             tried[0] ? "; not loaded: " : "", tried);
    atomic_store(&plugin->engines, e);
  } else {
    snprintf(plugin->engines_error, sizeof(plugin->engines_error),
             "GEMM needs the plugin's own engine (x86-64 with AVX2 and "
             "FMA), a BLAS library or oneDNN, and none is available: %s; "
             "install libopenblas0, libblis4 or libdnnl2",
             tried);
  }
  return e;
}

accel_status_t accel_cpu_gemm_engine_get(accel_cpu_plugin_t* plugin,
                                         accel_cpu_pool_t* pool,
                                         const accel_plugin_gemm_t* gemm,
                                         accel_cpu_gemm_engine_t* out) {
  int dt = accel_cpu_gemm_dtype_index(gemm->a_dtype);
  int cls = accel_cpu_gemm_class(gemm->m, gemm->n, gemm->k);
  accel_cpu_engines_t* e = atomic_load(&plugin->engines);
  uint32_t stored = dt >= 0 ? atomic_load(&plugin->gemm_choice[dt][cls]) : 0;
  if (e != NULL && stored != 0) {
    accel_cpu_engine_fill(e, (int)stored - 1, dt, out);
    return ACCEL_OK;
  }
  const accel_host_t* host = plugin->host;
  if (dt < 0) {
    return host->fail(host, ACCEL_ERROR_UNSUPPORTED, "cpu: gemm dtype %u",
                      (unsigned)gemm->a_dtype);
  }
  accel_status_t status = ACCEL_OK;
  pthread_mutex_lock(&plugin->gemm_mutex);
  e = accel_cpu_engines_get(plugin);
  if (e == NULL) {
    status = host->fail(host, ACCEL_ERROR_UNSUPPORTED, "%s",
                        plugin->engines_error);
  } else {
    int id = accel_cpu_engine_decide(plugin, pool, e, dt, cls, &status);
    if (id >= 0) accel_cpu_engine_fill(e, id, dt, out);
  }
  pthread_mutex_unlock(&plugin->gemm_mutex);
  return status;
}

// The features' value for one dtype whose classes have engines `ids`
// (-1: not known): "auto" when none is known, the engine when every class
// has the same one, else the classes in order, "openblas/openblas/onednn"
// (small/medium/large, "auto" where not known).
static void accel_cpu_gemm_feature_value(const int ids[ACCEL_CPU_GEMM_CLASSES],
                                         char* out, size_t size) {
  bool same = true, none = true;
  for (int c = 0; c < (int)ACCEL_CPU_GEMM_CLASSES; c++) {
    if (ids[c] != ids[0]) same = false;
    if (ids[c] >= 0) none = false;
  }
  if (none || same) {
    snprintf(
        out, size, "%s",
        none ? "auto" : accel_cpu_engine_name((accel_cpu_engine_id_t)ids[0]));
    return;
  }
  out[0] = '\0';
  for (int c = 0; c < (int)ACCEL_CPU_GEMM_CLASSES; c++) {
    size_t used = strlen(out);
    snprintf(out + used, size - used, "%s%s", c ? "/" : "",
             ids[c] >= 0 ? accel_cpu_engine_name((accel_cpu_engine_id_t)ids[c])
                         : "auto");
  }
}

void accel_cpu_gemm_features(accel_cpu_plugin_t* plugin, const char* cpu_name,
                             char* out, size_t size) {
  const accel_host_t* host = plugin->host;
  int forced[ACCEL_CPU_GEMM_DTYPES][ACCEL_CPU_GEMM_CLASSES];
  bool valid = accel_cpu_gemm_parse(host->getenv(host, "ACCEL_CPU_GEMM"),
                                    forced);
  char path[1024], prefix[320];
  accel_cpu_gemm_cache_path(host, path, sizeof(path));
  accel_cpu_gemm_key_prefix(plugin, cpu_name, prefix, sizeof(prefix));
  char value[ACCEL_CPU_GEMM_DTYPES][64];
  size_t total = 0;
  char* text = valid ? accel_cpu_gemm_cache_read(path) : NULL;
  for (int dt = 0; dt < (int)ACCEL_CPU_GEMM_DTYPES; dt++) {
    int ids[ACCEL_CPU_GEMM_CLASSES];
    for (int c = 0; c < (int)ACCEL_CPU_GEMM_CLASSES; c++) {
      uint32_t stored = atomic_load(&plugin->gemm_choice[dt][c]);
      ids[c] = valid ? forced[dt][c] : -1;
      if (ids[c] < 0 && stored != 0) ids[c] = (int)stored - 1;
      if (ids[c] < 0 && valid && path[0] != '\0') {
        ids[c] = accel_cpu_gemm_cached(text, prefix, true, dt, c);
      }
    }
    accel_cpu_gemm_feature_value(ids, value[dt], sizeof(value[dt]));
    total += strlen(" gemm-bf16=") + strlen(value[dt]);
  }
  free(text);
  // The device's string has room for about 95 characters (device.c):
  // per-class values that do not fit say "auto", the last dtype first,
  // rather than be cut.
  for (int dt = ACCEL_CPU_GEMM_DTYPES - 1; dt >= 0 && total >= size; dt--) {
    if (strchr(value[dt], '/') == NULL) continue;
    total -= strlen(value[dt]) - strlen("auto");
    snprintf(value[dt], sizeof(value[dt]), "auto");
  }
  out[0] = '\0';
  for (int dt = 0; dt < (int)ACCEL_CPU_GEMM_DTYPES; dt++) {
    size_t used = strlen(out);
    snprintf(out + used, size - used, "%sgemm-%s=%s", dt ? " " : "",
             accel_cpu_gemm_dtype_names[dt], value[dt]);
  }
}
