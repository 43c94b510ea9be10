// SPDX-License-Identifier: MIT
//
// Device names ("cuda:1") and selection (ACCEL_BACKEND, decision 3 in
// docs/architecture.md).
//
// "auto" ranks devices, not plugins: by type, GPU above OTHER above CPU
// (from each device's properties); among CPU devices the native `cpu`
// backend first (a CPU device of another runtime, such as PoCL, only adds
// a layer); then the plugin's priority; ties go to discovery order.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "trace.h"
#include "visible.h"

// First-party backends are always "known", installed or not, so that
// ACCEL_BACKEND=cuda on a machine without the plugin says "not installed"
// rather than "unknown".
static const char* const accel__first_party[] = {"cpu", "cuda", "rocm"};
#define ACCEL__FIRST_PARTY_COUNT 3
#define ACCEL__MAX_ITEMS 32

typedef struct accel__item {
  char name[32];
  bool is_auto;
  bool has_index;
  uint32_t index;
} accel__item_t;

// Parses "auto", "name" or "name:index" from `text` (length `n`, spaces
// already trimmed). Returns false on a malformed item.
static bool accel__item_parse(const char* text, size_t n, accel__item_t* item) {
  memset(item, 0, sizeof(*item));
  if (n == 4 && memcmp(text, "auto", 4) == 0) {
    item->is_auto = true;
    return true;
  }
  return accel__device_name_parse(text, n, item->name, &item->has_index,
                                  &item->index);
}

static bool accel__first_party_name(const char* name) {
  for (int i = 0; i < ACCEL__FIRST_PARTY_COUNT; i++) {
    if (strcmp(accel__first_party[i], name) == 0) return true;
  }
  return false;
}

// Writes "cpu, cuda, rocm, <other plugin names>" into `buf`. Caller holds
// the lock.
static void accel__known_names(char* buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (int i = 0; i < ACCEL__FIRST_PARTY_COUNT; i++) {
    accel__appendf(buf, size, &used, "%s%s", i ? ", " : "",
                   accel__first_party[i]);
  }
  for (size_t i = 0; i < accel__state.plugin_count; i++) {
    const accel__plugin_t* p = accel__state.plugins[i];
    if (p->stage < ACCEL_PLUGIN_STAGE_NEGOTIATED || p->name == NULL ||
        accel__first_party_name(p->name) || accel__state_find(p->name) != p) {
      continue;
    }
    accel__appendf(buf, size, &used, ", %s", p->name);
  }
}

// Writes the search path as "a, b, c" into `buf`. Caller holds the lock.
static void accel__searched(char* buf, size_t size) {
  size_t used = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < accel__state.search_count; i++) {
    accel__appendf(buf, size, &used, "%s%s", i ? ", " : "",
                   accel__state.search[i].path);
  }
  if (accel__state.search_count == 0) snprintf(buf, size, "nothing");
}

// Rank of a device of type `type` from `plugin` by type class: GPU 4,
// OTHER 2, CPU from the native cpu backend 1, other CPU 0.
static int accel__type_rank(const accel__plugin_t* plugin,
                            accel_device_type_t type) {
  if (type == ACCEL_DEVICE_TYPE_GPU) return 4;
  if (type != ACCEL_DEVICE_TYPE_CPU) return 2;
  return strcmp(plugin->name, "cpu") == 0 ? 1 : 0;
}

// The usable plugin after `after` in (priority descending, discovery)
// order, or NULL. Plugins are few, so a scan per step is fine.
static accel__plugin_t* accel__next_by_priority(const accel__plugin_t* after,
                                                size_t* at) {
  accel__plugin_t* best = NULL;
  size_t best_at = 0;
  for (size_t i = 0; i < accel__state.plugin_count; i++) {
    accel__plugin_t* p = accel__state.plugins[i];
    if (p->status != ACCEL_OK || p->device_count == 0) continue;
    if (after != NULL &&
        (p->priority > after->priority ||
         (p->priority == after->priority && i <= *at))) {
      continue;
    }
    if (best == NULL || p->priority > best->priority) best = p, best_at = i;
  }
  *at = best_at;
  return best;
}

// "auto": the best-ranked device (see the top of this file). Probes every
// plugin. Devices are visited in priority order, so the first GPU met
// wins and the rest are never opened.
static accel_status_t accel__auto_open(accel_device_t** out_device) {
  accel__plugin_probe_all();
  accel__plugin_t* best = NULL;
  uint32_t best_index = 0;
  int best_rank = -1;
  size_t at = 0;
  for (accel__plugin_t* p = accel__next_by_priority(NULL, &at);
       p != NULL && best_rank < 4; p = accel__next_by_priority(p, &at)) {
    for (uint32_t i = 0; i < p->device_count && best_rank < 4; i++) {
      accel_device_type_t type;
      if (accel__device_type_locked(p, i, &type) != ACCEL_OK) continue;
      int rank = accel__type_rank(p, type);
      if (rank > best_rank) best = p, best_index = i, best_rank = rank;
    }
  }
  if (best == NULL) {
    return accel__fail(ACCEL_ERROR_NOT_FOUND,
                       "auto: no plugin has a usable device (%zu "
                       "candidate(s) found)",
                       accel__state.plugin_count);
  }
  return accel__device_open_locked(best, best_index, out_device);
}

// Opens the device `item` names. Caller holds the lock. A backend that is
// not installed is `missing` (UNAVAILABLE for selection, NOT_FOUND for
// accel_device_open).
static accel_status_t accel__item_open(const accel__item_t* item,
                                       accel_status_t missing,
                                       accel_device_t** out_device) {
  if (item->is_auto) return accel__auto_open(out_device);
  accel__plugin_t* plugin = accel__state_find(item->name);
  if (plugin != NULL) accel__plugin_probe(plugin);  // lazy start
  if (plugin == NULL) {
    char searched[1024];
    accel__searched(searched, sizeof(searched));
    return accel__fail(missing,
                       "%s: no plugin named '%s' was found (searched: %s)",
                       item->name, item->name, searched);
  }
  if (plugin->status != ACCEL_OK) {
    return accel__fail(plugin->status, "%s: %s (plugin %s)", item->name,
                       plugin->message, plugin->path);
  }
  return accel__device_open_locked(plugin, item->index, out_device);
}

// Logs once that "auto" settled on the CPU, with the reasons the other
// plugins gave, so a user wondering why the GPU is idle can find out.
static void accel__note_cpu_fallback(const accel_device_t* device) {
  static atomic_bool said = false;
  if (strcmp(device->plugin->name, "cpu") != 0 ||
      atomic_exchange(&said, true)) {
    return;
  }
  char why[1024];
  size_t used = 0;
  why[0] = '\0';
  for (size_t i = 0; i < accel__state.plugin_count; i++) {
    const accel__plugin_t* p = accel__state.plugins[i];
    if (p->status == ACCEL_OK) continue;
    accel__appendf(why, sizeof(why), &used, "; %s: %s",
                   p->name ? p->name : p->path, p->message);
  }
  accel__log(ACCEL_LOG_INFO, "auto: no accelerator is usable; using %s%s",
             device->uri, why);
}

// Selects from the list `spec`; `label` names its source in messages.
static accel_status_t accel__select(const char* label, const char* spec,
                                    accel_device_t** out_device) {
  if (out_device == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "device selection: out_device is NULL");
  }
  *out_device = NULL;
  accel_status_t status = accel__ensure_init();
  if (status != ACCEL_OK) return status;
  if (spec == NULL) spec = "";

  accel__item_t items[ACCEL__MAX_ITEMS];
  size_t count = 0;
  bool blank = true;
  for (const char* c = spec; *c != '\0'; c++) {
    if (*c != ' ' && *c != '\t') blank = false;
  }
  if (blank) {
    items[0] = (accel__item_t){.is_auto = true};
    count = 1;
  }
  pthread_mutex_lock(&accel__state.lock);
  char known[512];
  accel__known_names(known, sizeof(known));
  for (const char* p = spec; !blank;) {
    const char* end = strchr(p, ',');
    size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
    const char* s = p;
    while (n > 0 && (*s == ' ' || *s == '\t')) s++, n--;
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    if (count == ACCEL__MAX_ITEMS) {
      status = accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s='%s': more than %d entries", label, spec,
                           ACCEL__MAX_ITEMS);
      break;
    }
    if (!accel__item_parse(s, n, &items[count])) {
      status = accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s='%s': malformed entry '%.*s'; expected a "
                           "comma-separated list of auto, backend or "
                           "backend:index; known backends: %s",
                           label, spec, (int)(n < 64 ? n : 64), s, known);
      break;
    }
    const accel__item_t* item = &items[count];
    if (!item->is_auto && !accel__first_party_name(item->name) &&
        accel__state_find(item->name) == NULL) {
      status = accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s='%s': unknown backend '%s'; known backends: %s",
                           label, spec, item->name, known);
      break;
    }
    count++;
    if (end == NULL) break;
    p = end + 1;
  }

  char reasons[2048];
  size_t used = 0;
  reasons[0] = '\0';
  for (size_t i = 0; status == ACCEL_OK && i < count; i++) {
    accel_status_t s =
        accel__item_open(&items[i], ACCEL_ERROR_UNAVAILABLE, out_device);
    if (s == ACCEL_OK) {
      if (i > 0) {
        accel__log(ACCEL_LOG_INFO, "%s: selected %s after skipping: %s", label,
                   (*out_device)->uri, reasons);
      }
      if (items[i].is_auto) accel__note_cpu_fallback(*out_device);
      accel__trace_instant("device selection", (*out_device)->uri);
      pthread_mutex_unlock(&accel__state.lock);
      return ACCEL_OK;
    }
    accel__appendf(reasons, sizeof(reasons), &used, "%s%s", i ? "; " : "",
                   accel_last_error());
    if (i + 1 == count) {
      status =
          accel__fail(s, "%s='%s': no usable device: %s", label, spec, reasons);
    }
  }
  pthread_mutex_unlock(&accel__state.lock);
  return status;
}

accel_status_t accel_device_select(const char* spec,
                                   accel_device_t** out_device) {
  return accel__select("spec", spec, out_device);
}

accel_status_t accel_device_default(accel_device_t** out_device) {
  return accel__select("ACCEL_BACKEND", accel__getenv("ACCEL_BACKEND"),
                       out_device);
}

accel_status_t accel_device_open(const char* uri, accel_device_t** out_device) {
  if (out_device == NULL || uri == NULL) {
    if (out_device != NULL) *out_device = NULL;
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_device_open: uri and out_device are required");
  }
  *out_device = NULL;
  accel__item_t item;
  if (!accel__item_parse(uri, strlen(uri), &item) || item.is_auto) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_device_open: malformed device name '%.64s'; "
                       "expected backend or backend:index, like cpu:0",
                       uri);
  }
  accel_status_t status = accel__ensure_init();
  if (status != ACCEL_OK) return status;
  pthread_mutex_lock(&accel__state.lock);
  status = accel__item_open(&item, ACCEL_ERROR_NOT_FOUND, out_device);
  pthread_mutex_unlock(&accel__state.lock);
  if (status == ACCEL_OK) {
    accel__trace_instant("device selection", (*out_device)->uri);
  }
  return status;
}
