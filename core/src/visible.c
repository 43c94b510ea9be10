// SPDX-License-Identifier: MIT
//
// ACCEL_VISIBLE_DEVICES: which devices of each plugin the library shows,
// in which order, and the record of what it hid and why (for accel-info).
//
// Rule: a backend named by at least one positive entry ("cuda",
// "cuda:1", or a UUID or PCI bus id matching one of its devices) shows only
// the devices those entries list, in list order, renumbered from 0 (like
// CUDA_VISIBLE_DEVICES); a backend no positive entry names keeps all its
// devices. Then every device an exclusion ("-cuda:1") matches is hidden.
// Indexes in the variable are the plugin's own, before renumbering.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "visible.h"

typedef struct accel__hidden {
  char* backend;
  uint32_t index;  // the plugin's own index
  char* reason;
} accel__hidden_t;

static accel__visible_t accel__visible;
static char* accel__visible_value;  // as read at init, for messages
static accel__hidden_t* accel__hidden;
static size_t accel__hidden_count;

accel_status_t accel__visible_configure(void) {
  accel__visible_reset();
  const char* value = accel__getenv("ACCEL_VISIBLE_DEVICES");
  char err[256];
  if (!accel__visible_parse(value, &accel__visible, err, sizeof(err))) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "ACCEL_VISIBLE_DEVICES='%.200s': %s", value, err);
  }
  if (accel__visible.count > 0) {
    accel__visible_value = accel__strdup(value);
    if (accel__visible_value == NULL) {
      accel__visible.count = 0;
      return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                         "out of memory during discovery "
                         "(ACCEL_VISIBLE_DEVICES)");
    }
  }
  return ACCEL_OK;
}

void accel__visible_reset(void) {
  for (size_t i = 0; i < accel__hidden_count; i++) {
    free(accel__hidden[i].backend);
    free(accel__hidden[i].reason);
  }
  free(accel__hidden);
  accel__hidden = NULL;
  accel__hidden_count = 0;
  free(accel__visible_value);
  accel__visible_value = NULL;
  accel__visible.count = 0;
}

// Properties of the plugin's device `index`, read through a short-lived
// plugin device (no core handle exists yet). False if it cannot be read.
static bool accel__raw_props(accel__plugin_t* plugin, uint32_t index,
                             accel_plugin_device_props_t* props) {
  memset(props, 0, sizeof(*props));
  props->struct_size = sizeof(*props);
  void* impl = NULL;
  if (plugin->desc.device_open(plugin->state, index, &impl) != ACCEL_OK) {
    return false;
  }
  bool ok = plugin->ops.query_props(impl, props) == ACCEL_OK;
  plugin->desc.device_close(impl);
  props->pci_bus_id[sizeof(props->pci_bus_id) - 1] = '\0';
  return ok;
}

typedef struct accel__ids {
  bool known;
  uint8_t uuid[16];
  bool has_pci;
  uint32_t pci[4];
} accel__ids_t;

static bool accel__matches(const accel__visible_entry_t* e,
                           const accel__plugin_t* plugin, uint32_t index,
                           const accel__ids_t* ids) {
  static const uint8_t zero[16];
  switch (e->kind) {
    case ACCEL__VISIBLE_BACKEND:
      return strcmp(e->backend, plugin->name) == 0;
    case ACCEL__VISIBLE_INDEX:
      return strcmp(e->backend, plugin->name) == 0 && e->index == index;
    case ACCEL__VISIBLE_UUID:
      return ids->known && memcmp(ids->uuid, zero, 16) != 0 &&
             memcmp(ids->uuid, e->uuid, 16) == 0;
    case ACCEL__VISIBLE_PCI:
      return ids->known && ids->has_pci &&
             memcmp(ids->pci, e->pci, sizeof(e->pci)) == 0;
  }
  return false;
}

static void accel__hide(const accel__plugin_t* plugin, uint32_t index,
                        const char* reason) {
  accel__hidden_t* grown = realloc(
      accel__hidden, (accel__hidden_count + 1) * sizeof(*accel__hidden));
  if (grown == NULL) return;  // the record is diagnostics only
  accel__hidden = grown;
  accel__hidden_t* h = &accel__hidden[accel__hidden_count];
  h->backend = accel__strdup(plugin->name);
  h->reason = accel__strdup(reason);
  h->index = index;
  if (h->backend == NULL || h->reason == NULL) {
    free(h->backend);
    free(h->reason);
    return;
  }
  accel__hidden_count++;
  accel__log(ACCEL_LOG_INFO, "%s:%u hidden: %s", plugin->name, index, reason);
}

// Reads the UUID and PCI id of every device when an entry needs them.
static accel__ids_t* accel__ids_read(accel__plugin_t* plugin, uint32_t n) {
  bool needed = false;
  for (size_t i = 0; i < accel__visible.count; i++) {
    accel__visible_kind_t k = accel__visible.entries[i].kind;
    needed = needed || k == ACCEL__VISIBLE_UUID || k == ACCEL__VISIBLE_PCI;
  }
  accel__ids_t* ids = calloc(n, sizeof(*ids));
  if (ids == NULL || !needed) return ids;
  for (uint32_t i = 0; i < n; i++) {
    accel_plugin_device_props_t props;
    if (!accel__raw_props(plugin, i, &props)) continue;
    ids[i].known = true;
    memcpy(ids[i].uuid, props.uuid, 16);
    ids[i].has_pci = accel__pci_parse(props.pci_bus_id,
                                      strlen(props.pci_bus_id), ids[i].pci);
  }
  return ids;
}

// Appends the devices positive entries list to `order`; returns how many,
// or UINT32_MAX when no positive entry names this plugin.
static uint32_t accel__listed(accel__plugin_t* plugin, uint32_t n,
                              const accel__ids_t* ids, uint32_t* order,
                              bool* taken) {
  bool named = false;
  uint32_t count = 0;
  for (size_t k = 0; k < accel__visible.count; k++) {
    const accel__visible_entry_t* e = &accel__visible.entries[k];
    if (e->exclude) continue;
    if (e->kind == ACCEL__VISIBLE_INDEX && e->index >= n &&
        strcmp(e->backend, plugin->name) == 0) {
      named = true;
      accel__log(ACCEL_LOG_WARN,
                 "ACCEL_VISIBLE_DEVICES: %s lists a device that does not "
                 "exist (%s has %u)",
                 e->text, plugin->name, n);
    }
    for (uint32_t i = 0; i < n; i++) {
      if (!accel__matches(e, plugin, i, &ids[i])) continue;
      named = true;
      if (!taken[i]) order[count++] = i;
      taken[i] = true;
    }
  }
  return named ? count : UINT32_MAX;
}

void accel__visible_apply(accel__plugin_t* plugin) {
  uint32_t n = plugin->device_count;
  if (accel__visible.count == 0 || n == 0) return;
  accel__ids_t* ids = accel__ids_read(plugin, n);
  uint32_t* order = calloc(n, sizeof(*order));
  bool* taken = calloc(n, sizeof(*taken));
  if (ids == NULL || order == NULL || taken == NULL) {
    // Showing devices the user hid would be wrong: show none.
    accel__log(ACCEL_LOG_ERROR, "%s: out of memory applying "
               "ACCEL_VISIBLE_DEVICES; its devices are hidden", plugin->name);
    plugin->device_count = 0;
    free(ids), free(order), free(taken);
    return;
  }
  uint32_t count = accel__listed(plugin, n, ids, order, taken);
  if (count == UINT32_MAX) {
    for (uint32_t i = 0; i < n; i++) order[i] = i, taken[i] = true;
    count = n;
  }
  char reason[160];
  for (uint32_t i = 0; i < n; i++) {
    if (taken[i]) continue;
    snprintf(reason, sizeof(reason), "not listed in ACCEL_VISIBLE_DEVICES='%s'",
             accel__visible_value);
    accel__hide(plugin, i, reason);
  }
  uint32_t kept = 0;
  for (uint32_t j = 0; j < count; j++) {
    const accel__visible_entry_t* hit = NULL;
    for (size_t k = 0; k < accel__visible.count && hit == NULL; k++) {
      const accel__visible_entry_t* e = &accel__visible.entries[k];
      if (e->exclude && accel__matches(e, plugin, order[j], &ids[order[j]])) {
        hit = e;
      }
    }
    if (hit == NULL) {
      order[kept++] = order[j];
      continue;
    }
    snprintf(reason, sizeof(reason),
             "excluded by entry '%s' of ACCEL_VISIBLE_DEVICES", hit->text);
    accel__hide(plugin, order[j], reason);
  }
  free(ids);
  free(taken);
  plugin->device_count = kept;
  plugin->physical = order;
}

accel_status_t accel_device_hidden_count(size_t* out_count) {
  if (out_count == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_device_hidden_count: out_count is NULL");
  }
  *out_count = 0;
  accel_status_t status = accel__ensure_init();
  if (status != ACCEL_OK) return status;
  pthread_mutex_lock(&accel__state.lock);
  accel__plugin_probe_all();
  *out_count = accel__hidden_count;
  pthread_mutex_unlock(&accel__state.lock);
  return ACCEL_OK;
}

accel_status_t accel_device_hidden_get(size_t index, const char** out_backend,
                                       uint32_t* out_index,
                                       const char** out_reason) {
  if (out_backend == NULL || out_index == NULL || out_reason == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_device_hidden_get: out_backend, out_index and "
                       "out_reason are required");
  }
  *out_backend = *out_reason = NULL;
  *out_index = 0;
  accel_status_t status = accel__ensure_init();
  if (status != ACCEL_OK) return status;
  pthread_mutex_lock(&accel__state.lock);
  accel__plugin_probe_all();
  if (index >= accel__hidden_count) {
    size_t count = accel__hidden_count;
    pthread_mutex_unlock(&accel__state.lock);
    return accel__fail(ACCEL_ERROR_NOT_FOUND,
                       "accel_device_hidden_get: index %zu, but %zu "
                       "device(s) are hidden",
                       index, count);
  }
  *out_backend = accel__hidden[index].backend;
  *out_index = accel__hidden[index].index;
  *out_reason = accel__hidden[index].reason;
  pthread_mutex_unlock(&accel__state.lock);
  return ACCEL_OK;
}
