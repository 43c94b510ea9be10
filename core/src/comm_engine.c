// SPDX-License-Identifier: MIT
//
// Collectives engines: finding, loading and validating the engine plugins
// (<accel/comm_engine.h>), and their load report. Engines live in their own
// folder ("comm" beside the device plugins) so device discovery never sees
// them, and are loaded only when a communicator is first created, since
// opening an MPI library is costly and most programs never communicate.
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "comm_internal.h"

static pthread_mutex_t accel__engines_lock = PTHREAD_MUTEX_INITIALIZER;
static accel__engine_t** accel__engines;
static size_t accel__engine_count;
static bool accel__engines_found;

// Records the outcome of loading `e` in its report.
static void accel__engine_set(accel__engine_t* e, accel_status_t status,
                              const char* format, ...) ACCEL__PRINTF(3, 4);

static void accel__engine_set(accel__engine_t* e, accel_status_t status,
                              const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(e->message, sizeof(e->message), format, args);
  va_end(args);
  e->status = status;
}

// Checks the descriptor; copies it into `e->desc` zero-extended.
static bool accel__engine_bind(accel__engine_t* e,
                               const accel_comm_engine_t* desc) {
  if (desc == NULL) {
    accel__engine_set(e, ACCEL_ERROR_INCOMPATIBLE,
                      "%s returned NULL for engine ABI %u",
                      ACCEL_COMM_ENGINE_ENTRY_NAME,
                      ACCEL_COMM_ENGINE_ABI_VERSION);
    return false;
  }
  e->abi_version = desc->abi_version;
  if (desc->abi_version != ACCEL_COMM_ENGINE_ABI_VERSION) {
    accel__engine_set(e, ACCEL_ERROR_INCOMPATIBLE,
                      "engine ABI %u, core engine ABI %u", desc->abi_version,
                      ACCEL_COMM_ENGINE_ABI_VERSION);
    return false;
  }
  size_t need = offsetof(accel_comm_engine_t, recv) + sizeof(desc->recv);
  if (desc->struct_size < need) {
    accel__engine_set(e, ACCEL_ERROR_INCOMPATIBLE,
                      "engine descriptor is %u bytes, at least %zu needed",
                      desc->struct_size, need);
    return false;
  }
  memset(&e->desc, 0, sizeof(e->desc));
  size_t n = desc->struct_size < sizeof(e->desc) ? desc->struct_size
                                                 : sizeof(e->desc);
  memcpy(&e->desc, desc, n);
  const accel_comm_engine_t* d = &e->desc;
  if (d->name == NULL || d->load == NULL || d->unload == NULL ||
      d->probe == NULL || d->comm_create == NULL || d->comm_split == NULL ||
      d->comm_destroy == NULL || d->all_reduce == NULL ||
      d->broadcast == NULL || d->reduce == NULL || d->all_gather == NULL ||
      d->reduce_scatter == NULL || d->all_to_all == NULL ||
      d->send == NULL || d->recv == NULL) {
    accel__engine_set(e, ACCEL_ERROR_INCOMPATIBLE,
                      "engine descriptor lacks a required entry");
    return false;
  }
  // Engine ABI 1.1 entries come in sets.
  if ((d->call_start != NULL) !=
          (d->request_test != NULL && d->request_abandon != NULL) ||
      (d->group_start != NULL) != (d->group_end != NULL)) {
    accel__engine_set(e, ACCEL_ERROR_INCOMPATIBLE,
                      "engine descriptor sets call_start without "
                      "request_test and request_abandon, or only one of "
                      "group_start and group_end");
    return false;
  }
  snprintf(e->name, sizeof(e->name), "%s", d->name);
  snprintf(e->version, sizeof(e->version), "%s",
           d->version != NULL ? d->version : "");
  return true;
}

// Loads one candidate through every stage; the outcome is in its report.
static void accel__engine_load(accel__engine_t* e) {
  e->stage = ACCEL_PLUGIN_STAGE_FOUND;
  struct stat st;
  if (stat(e->path, &st) != 0 || !S_ISREG(st.st_mode)) {
    accel__engine_set(e, ACCEL_ERROR_NOT_FOUND, "not a regular file");
    return;
  }
  e->dl = dlopen(e->path, RTLD_NOW | RTLD_LOCAL);
  if (e->dl == NULL) {
    const char* why = dlerror();
    accel__engine_set(e, ACCEL_ERROR_INCOMPATIBLE, "dlopen: %s",
                      why != NULL ? why : "unknown error");
    return;
  }
  e->stage = ACCEL_PLUGIN_STAGE_OPENED;
  accel_comm_engine_entry_fn_t entry = NULL;
  void* sym = dlsym(e->dl, ACCEL_COMM_ENGINE_ENTRY_NAME);
  memcpy(&entry, &sym, sizeof(entry));
  if (entry == NULL) {
    accel__engine_set(e, ACCEL_ERROR_INCOMPATIBLE, "no %s symbol",
                      ACCEL_COMM_ENGINE_ENTRY_NAME);
    return;
  }
  e->stage = ACCEL_PLUGIN_STAGE_ENTRY;
  if (!accel__engine_bind(e, entry(ACCEL_COMM_ENGINE_ABI_VERSION))) return;
  e->stage = ACCEL_PLUGIN_STAGE_NEGOTIATED;
  accel__host_init(&e->host, NULL);
  snprintf(e->host.tag, sizeof(e->host.tag), "comm-%s", e->name);
  accel_status_t status = e->desc.load(&e->host.host, &e->state);
  if (status != ACCEL_OK) {
    accel__engine_set(e, status, "load: %s", accel_last_error());
    return;
  }
  e->loaded = true;
  e->stage = ACCEL_PLUGIN_STAGE_INITIALISED;
  // The engine's library (libmpi) is opened only when a communicator is
  // wanted (accel__engine_probe): listing engines stays cheap.
  accel__engine_set(e, ACCEL_OK, "%s",
                    "not started yet: its library is opened when the first "
                    "communicator is created");
}

// Starts a loaded engine once: opens its library. Caller holds the lock.
static void accel__engine_probe(accel__engine_t* e) {
  if (!e->loaded || e->probed) return;
  e->probed = true;
  accel_status_t status = e->desc.probe(e->state);
  if (status != ACCEL_OK) {
    accel__engine_set(e, status, "%s", accel_last_error());
    return;
  }
  accel__engine_set(e, ACCEL_OK, "%s", "");
}

static int accel__engine_file_filter(const struct dirent* entry) {
  size_t n = strlen(entry->d_name);
  return strncmp(entry->d_name, "libaccel-comm-", 14) == 0 && n > 17 &&
         strcmp(entry->d_name + n - 3, ".so") == 0;
}

static void accel__engine_add(const char* path, const char* source,
                              bool from_env) {
  accel__engine_t* e = calloc(1, sizeof(*e));
  accel__engine_t** grown =
      realloc(accel__engines, (accel__engine_count + 1) * sizeof(*grown));
  if (e == NULL || grown == NULL) {
    free(e);
    if (grown != NULL) accel__engines = grown;
    accel__log(ACCEL_LOG_WARN, "no memory to record engine %s", path);
    return;
  }
  accel__engines = grown;
  snprintf(e->path, sizeof(e->path), "%s", path);
  snprintf(e->source, sizeof(e->source), "%s", source);
  e->status = ACCEL_ERROR_NOT_FOUND;
  e->from_env = from_env;
  accel__engines[accel__engine_count++] = e;
  // An engine with a name already loaded from an earlier entry is shadowed.
  accel__engine_load(e);
  for (size_t i = 0; i + 1 < accel__engine_count; i++) {
    accel__engine_t* prior = accel__engines[i];
    if (e->name[0] != '\0' && strcmp(prior->name, e->name) == 0 &&
        prior->stage >= ACCEL_PLUGIN_STAGE_NEGOTIATED) {
      accel__engine_set(e, ACCEL_ERROR_NOT_FOUND, "shadowed by %s",
                        prior->path);
      e->shadowed = true;
    }
  }
}

// Scans a directory (its libaccel-comm-*.so files in name order) or file.
static void accel__engine_scan(const char* path, bool from_env) {
  struct stat st;
  if (stat(path, &st) != 0) return;
  if (!S_ISDIR(st.st_mode)) {
    accel__engine_add(path, path, from_env);
    return;
  }
  struct dirent** names = NULL;
  int n = scandir(path, &names, accel__engine_file_filter, alphasort);
  for (int i = 0; i < n; i++) {
    char file[PATH_MAX];
    int w = snprintf(file, sizeof(file), "%s/%s", path, names[i]->d_name);
    if (w > 0 && (size_t)w < sizeof(file)) {
      accel__engine_add(file, path, from_env);
    }
    free(names[i]);
  }
  free(names);
}

// ACCEL_COMM_ENGINE_PATH, then "comm" inside the install plugin folder.
static void accel__engines_find_locked(void) {
  if (accel__engines_found) return;
  accel__engines_found = true;
  const char* list = accel__getenv("ACCEL_COMM_ENGINE_PATH");
  while (list != NULL && *list != '\0') {
    const char* end = strchr(list, ':');
    size_t len = end != NULL ? (size_t)(end - list) : strlen(list);
    if (len > 0 && len < PATH_MAX) {
      char item[PATH_MAX];
      memcpy(item, list, len);
      item[len] = '\0';
      accel__engine_scan(item, true);
    }
    list = end != NULL ? end + 1 : NULL;
  }
  char dir[PATH_MAX];
  if (accel__install_plugin_dir(dir, sizeof(dir))) {
    size_t used = strlen(dir);
    if (used + 6 < sizeof(dir)) {
      memcpy(dir + used, "/comm", 6);
      accel__engine_scan(dir, false);
    }
  }
}

bool accel__engine_takes(const accel__engine_t* e, const char* backend) {
  const char* list = e->desc.device_backends;
  size_t n = backend != NULL ? strlen(backend) : 0;
  while (n > 0 && list != NULL && *list != '\0') {
    size_t len = strcspn(list, " ");
    if (len == n && strncmp(list, backend, n) == 0) return true;
    list += len;
    list += strspn(list, " ");
  }
  return false;
}

// Whether `e` can serve a communicator on a device of `backend` (NULL:
// none): host-driven engines serve any, device-bound ones their backends.
static bool accel__engine_serves(const accel__engine_t* e,
                                 const char* backend) {
  const char* list = e->desc.device_backends;
  return list == NULL || list[0] == '\0' || accel__engine_takes(e, backend);
}

accel_status_t accel__engine_pick(const char* wanted, const char* backend,
                                  accel__engine_t** out_engine) {
  *out_engine = NULL;
  if (wanted == NULL || wanted[0] == '\0') {
    wanted = accel__getenv("ACCEL_COMM_ENGINE");
  }
  if (wanted == NULL || wanted[0] == '\0') wanted = "auto";
  bool any = strcmp(wanted, "auto") == 0;
  pthread_mutex_lock(&accel__engines_lock);
  accel__engines_find_locked();
  accel__engine_t* best = NULL;
  char reasons[1024] = "";
  size_t used = 0;
  for (size_t i = 0; i < accel__engine_count; i++) {
    accel__engine_t* e = accel__engines[i];
    if (e->shadowed || (!any && strcmp(e->name, wanted) != 0)) continue;
    if (any && e->stage >= ACCEL_PLUGIN_STAGE_INITIALISED &&
        !accel__engine_serves(e, backend)) {
      // Not started: its library is not opened for a device it cannot use.
      accel__appendf(reasons, sizeof(reasons), &used,
                     "%s%s: serves %s devices, not %s", used != 0 ? "; " : "",
                     e->name, e->desc.device_backends,
                     backend != NULL ? backend : "host-driven communicators");
      continue;
    }
    accel__engine_probe(e);
    if (e->status == ACCEL_OK) {
      if (best == NULL || e->desc.priority > best->desc.priority) best = e;
      continue;
    }
    accel__appendf(reasons, sizeof(reasons), &used, "%s%s: %s",
                   used != 0 ? "; " : "",
                   e->name[0] != '\0' ? e->name : e->path, e->message);
  }
  pthread_mutex_unlock(&accel__engines_lock);
  if (best != NULL) {
    *out_engine = best;
    return ACCEL_OK;
  }
  if (reasons[0] == '\0') {
    return accel__fail(ACCEL_ERROR_NOT_FOUND,
                       "no collectives engine%s%s%s was found (searched "
                       "ACCEL_COMM_ENGINE_PATH and the 'comm' plugin folder)",
                       any ? "" : " named '", any ? "" : wanted,
                       any ? "" : "'");
  }
  return accel__fail(ACCEL_ERROR_UNAVAILABLE,
                     "no usable collectives engine%s%s%s: %s",
                     any ? "" : " named '", any ? "" : wanted, any ? "" : "'",
                     reasons);
}

void accel__engines_shutdown(void) {
  pthread_mutex_lock(&accel__engines_lock);
  for (size_t i = 0; i < accel__engine_count; i++) {
    accel__engine_t* e = accel__engines[i];
    if (atomic_load(&e->comms) != 0) {
      // Communicators outlive the library: keep the engine mapped.
      accel__log(ACCEL_LOG_WARN,
                 "accel_shutdown: engine '%s' still has communicators; it "
                 "stays loaded",
                 e->name);
      continue;
    }
    if (e->loaded) e->desc.unload(e->state);
    if (e->dl != NULL) dlclose(e->dl);
    free(e);
    accel__engines[i] = NULL;
  }
  free(accel__engines);
  accel__engines = NULL;
  accel__engine_count = 0;
  accel__engines_found = false;
  pthread_mutex_unlock(&accel__engines_lock);
}

accel_status_t accel_comm_engine_report_count(size_t* out_count) {
  if (out_count == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_comm_engine_report_count: out_count is NULL");
  }
  pthread_mutex_lock(&accel__engines_lock);
  accel__engines_find_locked();
  *out_count = accel__engine_count;
  pthread_mutex_unlock(&accel__engines_lock);
  return ACCEL_OK;
}

accel_status_t accel_comm_engine_report_get(size_t index,
                                            accel_plugin_report_t* out) {
  if (out == NULL || out->struct_size < sizeof(accel_plugin_report_t)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_comm_engine_report_get: out_report is NULL or "
                       "its struct_size is not set");
  }
  pthread_mutex_lock(&accel__engines_lock);
  accel__engines_find_locked();
  if (index >= accel__engine_count) {
    size_t count = accel__engine_count;
    pthread_mutex_unlock(&accel__engines_lock);
    return accel__fail(ACCEL_ERROR_NOT_FOUND,
                       "accel_comm_engine_report_get: index %zu, %zu engines",
                       index, count);
  }
  const accel__engine_t* e = accel__engines[index];
  uint32_t size = out->struct_size;
  memset(out, 0, sizeof(*out));
  out->struct_size = size;
  out->path = e->path;
  out->source = e->source;
  out->origin = e->from_env ? ACCEL_ORIGIN_ENV : ACCEL_ORIGIN_INSTALL_DIR;
  out->stage = e->stage;
  out->status = e->status;
  out->message = e->message;
  out->name = e->name;
  out->version = e->version;
  out->abi_version = e->abi_version;
  out->priority = e->desc.priority;
  pthread_mutex_unlock(&accel__engines_lock);
  return ACCEL_OK;
}
