// SPDX-License-Identifier: MIT
//
// Library state: discovery of plugin candidates along the search path,
// the load report, and shutdown.
#define _GNU_SOURCE  // dladdr
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "internal.h"
#include "trace.h"

accel__state_t accel__state = {.lock = PTHREAD_MUTEX_INITIALIZER};

// Anchor whose address tells dladdr() which file libaccel was loaded from.
static const char accel__anchor = 0;

char* accel__strdup(const char* s) {
  size_t n = strlen(s) + 1;
  char* copy = malloc(n);
  if (copy != NULL) memcpy(copy, s, n);
  return copy;
}

void accel_options_init(accel_options_t* options) {
  if (options == NULL) return;
  memset(options, 0, sizeof(*options));
  options->struct_size = sizeof(*options);
}

// ---------------------------------------------------------------------------
// Search path.
// ---------------------------------------------------------------------------

static bool accel__search_add(const char* path, accel_origin_t origin) {
  accel__state_t* st = &accel__state;
  accel__search_entry_t* grown =
      realloc(st->search, (st->search_count + 1) * sizeof(*grown));
  if (grown == NULL) return false;
  st->search = grown;
  char* copy = accel__strdup(path);
  if (copy == NULL) return false;
  st->search[st->search_count].path = copy;
  st->search[st->search_count].origin = origin;
  st->search_count++;
  return true;
}

// Splits a colon list into search entries. Empty items are skipped and
// relative ones refused: either would search the current directory.
static bool accel__search_add_list(const char* list, accel_origin_t origin,
                                   const char* what) {
  if (list == NULL) return true;
  const char* p = list;
  while (*p != '\0') {
    const char* end = strchr(p, ':');
    size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
    if (n > 0 && n < PATH_MAX) {
      char item[PATH_MAX];
      memcpy(item, p, n);
      item[n] = '\0';
      if (item[0] != '/') {
        accel__log(ACCEL_LOG_WARN,
                   "%s: ignoring relative entry '%s' (the current directory "
                   "is never searched; use an absolute path)",
                   what, item);
      } else if (!accel__search_add(item, origin)) {
        return false;
      }
    }
    p += n;
    if (*p == ':') p++;
  }
  return true;
}

bool accel__install_plugin_dir(char* out, size_t size) {
  Dl_info info;
  if (dladdr(&accel__anchor, &info) == 0 || info.dli_fname == NULL) {
    accel__log(ACCEL_LOG_WARN,
               "cannot locate libaccel itself; the install "
               "plugin directory is not searched");
    return false;
  }
  char real[PATH_MAX];
  if (realpath(info.dli_fname, real) == NULL) {
    accel__log(ACCEL_LOG_WARN,
               "cannot resolve %s; the install plugin "
               "directory is not searched",
               info.dli_fname);
    return false;
  }
  char* slash = strrchr(real, '/');
  if (slash == NULL) return false;
  *slash = '\0';
  int n = snprintf(out, size, "%s/accel", real);
  return n > 0 && (size_t)n < size;
}

// The install dir: "accel" beside the file libaccel was loaded from.
static bool accel__search_add_install_dir(void) {
  char dir[PATH_MAX + 8];
  if (!accel__install_plugin_dir(dir, sizeof(dir))) return true;
  return accel__search_add(dir, ACCEL_ORIGIN_INSTALL_DIR);
}

// ---------------------------------------------------------------------------
// Candidates.
// ---------------------------------------------------------------------------

accel__plugin_t* accel__state_add(const char* path, const char* source,
                                  accel_origin_t origin) {
  accel__state_t* st = &accel__state;
  if (st->plugin_count == st->plugin_capacity) {
    size_t cap = st->plugin_capacity ? st->plugin_capacity * 2 : 8;
    accel__plugin_t** grown = realloc(st->plugins, cap * sizeof(*grown));
    if (grown == NULL) return NULL;
    st->plugins = grown;
    st->plugin_capacity = cap;
  }
  accel__plugin_t* plugin = calloc(1, sizeof(*plugin));
  if (plugin == NULL) return NULL;
  plugin->path = accel__strdup(path);
  plugin->source = accel__strdup(source);
  plugin->origin = origin;
  if (plugin->path == NULL || plugin->source == NULL) {
    accel__plugin_destroy(plugin);
    return NULL;
  }
  st->plugins[st->plugin_count++] = plugin;
  return plugin;
}

accel__plugin_t* accel__state_find(const char* name) {
  for (size_t i = 0; i < accel__state.plugin_count; i++) {
    accel__plugin_t* plugin = accel__state.plugins[i];
    if (plugin->stage >= ACCEL_PLUGIN_STAGE_NEGOTIATED &&
        plugin->name != NULL && strcmp(plugin->name, name) == 0) {
      return plugin;
    }
  }
  return NULL;
}

static bool accel__known_path(const char* real) {
  for (size_t i = 0; i < accel__state.plugin_count; i++) {
    if (strcmp(accel__state.plugins[i]->path, real) == 0) return true;
  }
  return false;
}

typedef struct accel__discovery {
  const accel_options_t* options;
  char** exclude;  // real paths
  size_t exclude_count;
} accel__discovery_t;

static bool accel__excluded(const accel__discovery_t* d, const char* real) {
  for (size_t i = 0; i < d->exclude_count; i++) {
    if (d->exclude[i] != NULL && strcmp(d->exclude[i], real) == 0) return true;
  }
  return false;
}

// Records and loads one candidate file, unless it is already known.
static accel_status_t accel__candidate(const accel__discovery_t* d,
                                       const char* file, const char* source,
                                       accel_origin_t origin) {
  char real[PATH_MAX];
  if (realpath(file, real) == NULL) {
    int err = errno;
    if (d == NULL || accel__known_path(file)) {
      accel__log(ACCEL_LOG_DEBUG, "%s: not found", file);
      return ACCEL_ERROR_NOT_FOUND;
    }
    // A dangling link or a link loop on the search path is reported, not
    // silently skipped: it is usually a broken install.
    accel__plugin_t* plugin = accel__state_add(file, source, origin);
    if (plugin == NULL) return ACCEL_ERROR_OUT_OF_MEMORY;
    plugin->stage = ACCEL_PLUGIN_STAGE_FOUND;
    plugin->status = ACCEL_ERROR_INCOMPATIBLE;
    char text[PATH_MAX + 128];
    snprintf(text, sizeof(text), "cannot resolve %s: %s%s", file,
             strerror(err),
             err == ELOOP ? " (ELOOP: a symbolic link loop)" : "");
    plugin->message = accel__strdup(text);
    if (plugin->message == NULL) return ACCEL_ERROR_OUT_OF_MEMORY;
    accel__log(ACCEL_LOG_WARN, "%s", text);
    return ACCEL_OK;
  }
  if (accel__known_path(real)) {
    accel__log(ACCEL_LOG_DEBUG, "%s: already found as %s", file, real);
    return ACCEL_OK;
  }
  accel__plugin_t* plugin = accel__state_add(real, source, origin);
  if (plugin == NULL) return ACCEL_ERROR_OUT_OF_MEMORY;
  if (d != NULL && accel__excluded(d, real)) {
    plugin->stage = ACCEL_PLUGIN_STAGE_FOUND;
    plugin->status = ACCEL_ERROR_NOT_FOUND;
    plugin->message = accel__strdup("excluded");
    accel__log(ACCEL_LOG_DEBUG, "%s: excluded by options", real);
    return ACCEL_OK;
  }
  if (d != NULL && d->options != NULL && d->options->probe != NULL) {
    d->options->probe(real, d->options->probe_user_data);
  }
  accel__plugin_load(plugin);
  return ACCEL_OK;
}

static int accel__plugin_file_filter(const struct dirent* entry) {
  const char* name = entry->d_name;
  size_t n = strlen(name);
  return strncmp(name, "libaccel-", 9) == 0 && n > 12 &&
         strcmp(name + n - 3, ".so") == 0;
}

// Scans one search entry: a directory's libaccel-*.so files in name order,
// or a single file.
static accel_status_t accel__scan(const accel__discovery_t* d,
                                  const accel__search_entry_t* entry) {
  struct stat st;
  if (stat(entry->path, &st) != 0 && errno == ENOENT) {
    accel__log(ACCEL_LOG_DEBUG, "search path entry %s does not exist",
               entry->path);
    return ACCEL_OK;
  }
  if (stat(entry->path, &st) != 0 || !S_ISDIR(st.st_mode)) {
    accel_status_t status =
        accel__candidate(d, entry->path, entry->path, entry->origin);
    return status == ACCEL_ERROR_NOT_FOUND ? ACCEL_OK : status;
  }
  struct dirent** names = NULL;
  int n = scandir(entry->path, &names, accel__plugin_file_filter, alphasort);
  if (n < 0) {
    accel__log(ACCEL_LOG_DEBUG, "cannot read directory %s", entry->path);
    return ACCEL_OK;
  }
  accel_status_t status = ACCEL_OK;
  for (int i = 0; i < n; i++) {
    char file[PATH_MAX * 2];
    snprintf(file, sizeof(file), "%s/%s", entry->path, names[i]->d_name);
    if (status == ACCEL_OK) {
      accel_status_t s = accel__candidate(d, file, entry->path, entry->origin);
      if (s == ACCEL_ERROR_OUT_OF_MEMORY) status = s;
    }
    free(names[i]);
  }
  free(names);
  return status;
}

// ---------------------------------------------------------------------------
// Init and shutdown.
// ---------------------------------------------------------------------------

static void accel__state_clear(void) {
  accel__state_t* st = &accel__state;
  for (size_t i = 0; i < st->search_count; i++) free(st->search[i].path);
  free(st->search);
  st->search = NULL;
  st->search_count = 0;
}

// Whether host memory ran out while discovering: the core's own
// bookkeeping, or a plugin whose load() or negotiation could not allocate.
static bool accel__discovery_oom(accel_status_t status) {
  if (status == ACCEL_ERROR_OUT_OF_MEMORY) return true;
  for (size_t i = 0; i < accel__state.plugin_count; i++) {
    const accel__plugin_t* p = accel__state.plugins[i];
    if (p->status == ACCEL_ERROR_OUT_OF_MEMORY || p->message == NULL) {
      return true;
    }
  }
  return false;
}

// Forgets a discovery that ran out of memory, so the next call starts it
// again instead of living with a report that lacks plugins.
static void accel__discovery_undo(void) {
  accel__state_t* st = &accel__state;
  for (size_t i = 0; i < st->plugin_count; i++) {
    accel__plugin_destroy(st->plugins[i]);
  }
  free(st->plugins);
  st->plugins = NULL;
  st->plugin_count = st->plugin_capacity = 0;
  accel__state_clear();
  accel__visible_reset();
}

static accel_status_t accel__init_locked(const accel_options_t* options) {
  accel__state_t* st = &accel__state;
  accel__fork_register();
  accel__log_configure();
  bool ok = true;
  if (options != NULL) {
    ok = accel__search_add_list(options->plugin_path, ACCEL_ORIGIN_API,
                                "accel_options_t.plugin_path");
  }
  if (ok && (options == NULL || !options->ignore_env_path)) {
    ok = accel__search_add_list(accel__getenv("ACCEL_PLUGIN_PATH"),
                                ACCEL_ORIGIN_ENV, "ACCEL_PLUGIN_PATH");
  }
  if (ok && (options == NULL || !options->ignore_install_dir)) {
    ok = accel__search_add_install_dir();
  }
  if (!ok) {
    accel__state_clear();
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                       "accel_init: out of memory during discovery (building "
                       "the search path); nothing was loaded and the next "
                       "call tries again");
  }
  accel_status_t status = accel__visible_configure();
  if (status != ACCEL_OK) {
    accel__state_clear();
    return status;
  }

  accel__discovery_t d = {.options = options};
  char** exclude = NULL;
  if (options != NULL && options->exclude_count > 0) {
    exclude = calloc(options->exclude_count, sizeof(*exclude));
    if (exclude == NULL) {
      accel__discovery_undo();
      return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                         "accel_init: out of memory during discovery; "
                         "nothing was loaded and the next call tries again");
    }
    for (size_t i = 0; i < options->exclude_count; i++) {
      char real[PATH_MAX];
      const char* p = options->exclude[i];
      if (p != NULL && realpath(p, real) != NULL) {
        exclude[i] = accel__strdup(real);
        if (exclude[i] == NULL) status = ACCEL_ERROR_OUT_OF_MEMORY;
      }
    }
    d.exclude = exclude;
    d.exclude_count = options->exclude_count;
  }

  for (size_t i = 0; i < st->search_count && status == ACCEL_OK; i++) {
    accel__log(ACCEL_LOG_DEBUG, "searching %s", st->search[i].path);
    status = accel__scan(&d, &st->search[i]);
  }
  for (size_t i = 0; i < d.exclude_count; i++) free(exclude[i]);
  free(exclude);
  if (accel__discovery_oom(status)) {
    accel__discovery_undo();
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                       "accel_init: out of memory during discovery; nothing "
                       "was loaded and the next call tries again");
  }
  st->custom_options = options != NULL;
  atomic_store(&st->initialised, true);
  return ACCEL_OK;
}

accel_status_t accel_init(const accel_options_t* options) {
  if (options != NULL) {
    if (options->struct_size < sizeof(accel_options_t)) {
      return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "accel_init: options->struct_size is %u; initialise "
                         "options with accel_options_init()",
                         options->struct_size);
    }
    if (options->exclude_count > 0 && options->exclude == NULL) {
      return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "accel_init: exclude_count is %zu but exclude is "
                         "NULL",
                         options->exclude_count);
    }
  }
  pthread_mutex_lock(&accel__state.lock);
  accel_status_t status = ACCEL_OK;
  if (atomic_load(&accel__state.initialised)) {
    if (options != NULL) {
      status = accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                           "accel_init: already initialised; call "
                           "accel_shutdown() before initialising with new "
                           "options");
    }
  } else {
    status = accel__init_locked(options);
  }
  pthread_mutex_unlock(&accel__state.lock);
  return status;
}

accel_status_t accel__ensure_init(void) {
  if (atomic_load_explicit(&accel__state.initialised, memory_order_acquire)) {
    return ACCEL_OK;
  }
  return accel_init(NULL);
}

void accel_shutdown(void) {
  accel__trace_flush();
  accel__engines_shutdown();
  accel__state_t* st = &accel__state;
  pthread_mutex_lock(&st->lock);
  size_t kept = 0;
  for (size_t i = 0; i < st->plugin_count; i++) {
    accel__plugin_t* plugin = st->plugins[i];
    bool busy = false;
    for (uint32_t j = 0; j < plugin->device_count; j++) {
      if (plugin->devices[j] != NULL) busy = true;
    }
    if (busy) {
      // Handles outlive the library: keep the plugin mapped so they do not
      // dangle. Its memory is reclaimed at process exit.
      accel__log(ACCEL_LOG_WARN,
                 "accel_shutdown: plugin '%s' still has open devices; it "
                 "stays loaded",
                 plugin->name);
      kept++;
      continue;
    }
    accel__plugin_destroy(plugin);
  }
  free(st->plugins);
  st->plugins = NULL;
  st->plugin_count = 0;
  st->plugin_capacity = 0;
  accel__state_clear();
  accel__visible_reset();
  st->custom_options = false;
  atomic_store(&st->initialised, false);
  pthread_mutex_unlock(&st->lock);
  (void)kept;
}

// ---------------------------------------------------------------------------
// Report and search-path API.
// ---------------------------------------------------------------------------

accel_status_t accel_plugin_report_count(size_t* out_count) {
  if (out_count == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_plugin_report_count: out_count is NULL");
  }
  *out_count = 0;
  accel_status_t status = accel__ensure_init();
  if (status != ACCEL_OK) return status;
  pthread_mutex_lock(&accel__state.lock);
  accel__plugin_probe_all();  // the report shows device counts
  *out_count = accel__state.plugin_count;
  pthread_mutex_unlock(&accel__state.lock);
  return ACCEL_OK;
}

accel_status_t accel_plugin_report_get(size_t index,
                                       accel_plugin_report_t* out_report) {
  if (out_report == NULL ||
      out_report->struct_size < offsetof(accel_plugin_report_t, abi_minor)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_plugin_report_get: out_report is NULL or its "
                       "struct_size is not sizeof(accel_plugin_report_t)");
  }
  accel_status_t status = accel__ensure_init();
  if (status != ACCEL_OK) return status;
  pthread_mutex_lock(&accel__state.lock);
  accel__plugin_probe_all();  // the report shows device counts
  if (index >= accel__state.plugin_count) {
    size_t count = accel__state.plugin_count;
    pthread_mutex_unlock(&accel__state.lock);
    return accel__fail(ACCEL_ERROR_NOT_FOUND,
                       "accel_plugin_report_get: index %zu, but the report "
                       "has %zu entries",
                       index, count);
  }
  const accel__plugin_t* p = accel__state.plugins[index];
  accel_plugin_report_t r = {
      .struct_size = out_report->struct_size,
      .path = p->path,
      .source = p->source,
      .origin = p->origin,
      .stage = p->stage,
      .status = p->status,
      .message = p->message != NULL ? p->message : "",
      .name = p->name != NULL ? p->name : "",
      .version = p->version != NULL ? p->version : "",
      .abi_version = p->abi_version,
      .device_count = p->status == ACCEL_OK ? p->device_count : 0,
      .priority = p->priority,
      .abi_minor = p->abi_minor,
  };
  pthread_mutex_unlock(&accel__state.lock);
  // A caller built before `abi_minor` gets the fields that fit.
  memcpy(out_report, &r,
         out_report->struct_size < sizeof(r) ? out_report->struct_size
                                             : sizeof(r));
  return ACCEL_OK;
}

accel_status_t accel_search_path_count(size_t* out_count) {
  if (out_count == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_search_path_count: out_count is NULL");
  }
  *out_count = 0;
  accel_status_t status = accel__ensure_init();
  if (status != ACCEL_OK) return status;
  pthread_mutex_lock(&accel__state.lock);
  *out_count = accel__state.search_count;
  pthread_mutex_unlock(&accel__state.lock);
  return ACCEL_OK;
}

accel_status_t accel_search_path_get(size_t index, const char** out_path,
                                     accel_origin_t* out_origin) {
  if (out_path == NULL || out_origin == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_search_path_get: out_path and out_origin are "
                       "required");
  }
  *out_path = NULL;
  accel_status_t status = accel__ensure_init();
  if (status != ACCEL_OK) return status;
  pthread_mutex_lock(&accel__state.lock);
  if (index >= accel__state.search_count) {
    size_t count = accel__state.search_count;
    pthread_mutex_unlock(&accel__state.lock);
    return accel__fail(ACCEL_ERROR_NOT_FOUND,
                       "accel_search_path_get: index %zu, but the search "
                       "path has %zu entries",
                       index, count);
  }
  *out_path = accel__state.search[index].path;
  *out_origin = accel__state.search[index].origin;
  pthread_mutex_unlock(&accel__state.lock);
  return ACCEL_OK;
}

accel_status_t accel_plugin_load(const char* path) {
  if (path == NULL || path[0] == '\0') {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_plugin_load: path is NULL or empty");
  }
  accel_status_t status = accel__ensure_init();
  if (status != ACCEL_OK) return status;
  pthread_mutex_lock(&accel__state.lock);
  char real[PATH_MAX];
  if (realpath(path, real) == NULL) {
    pthread_mutex_unlock(&accel__state.lock);
    return accel__fail(ACCEL_ERROR_NOT_FOUND,
                       "accel_plugin_load: %s: no such file", path);
  }
  if (accel__known_path(real)) {
    pthread_mutex_unlock(&accel__state.lock);
    return ACCEL_OK;
  }
  status = accel__candidate(NULL, real, path, ACCEL_ORIGIN_API);
  accel__plugin_t* plugin =
      status == ACCEL_OK ? accel__state.plugins[accel__state.plugin_count - 1]
                         : NULL;
  if (plugin != NULL) accel__plugin_probe(plugin);
  if (plugin != NULL && plugin->status != ACCEL_OK) {
    status = accel__fail(plugin->status, "accel_plugin_load: %s: %s", real,
                         plugin->message);
  } else if (status != ACCEL_OK) {
    status = accel__fail(status, "accel_plugin_load: %s: out of memory", real);
  }
  pthread_mutex_unlock(&accel__state.lock);
  return status;
}
