// SPDX-License-Identifier: MIT
//
// JSON output, schema_version 1 (docs/accel-info.md lists every key).
// Keys are snake_case, byte counts are numbers, collections are arrays.
// Keys are only ever added within a schema version; a removal or change of
// meaning bumps schema_version.
#include <accel/plugin.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "info.h"
#include "json.h"

#define INFO_JSON_SCHEMA_VERSION 1

// "" becomes null: the library reports unknown strings as "".
static void info_json_opt_string(json_writer_t* w, const char* s) {
  json_string(w, s != NULL && s[0] != '\0' ? s : NULL);
}

static void info_json_plugin(json_writer_t* w, const info_plugin_t* p) {
  const accel_plugin_report_t* r = &p->report;
  json_begin_object(w);
  json_key(w, "name");
  info_json_opt_string(w, r->name);
  json_key(w, "path");
  json_string(w, r->path);
  json_key(w, "source");
  info_json_opt_string(w, r->source);
  json_key(w, "origin");
  json_string(w, info_origin_name(r->origin));
  json_key(w, "version");
  info_json_opt_string(w, r->version);
  json_key(w, "abi_version");
  json_uint(w, r->abi_version);
  json_key(w, "abi_minor");
  json_uint(w, r->abi_minor);
  json_key(w, "stage");
  json_string(w, info_stage_name(p->stage));
  json_key(w, "state");
  json_string(w, info_state_name(p->state));
  json_key(w, "status");
  json_string(w, accel_status_string(p->status));
  json_key(w, "message");
  json_string(w, p->message != NULL ? p->message : "");
  json_key(w, "device_count");
  json_uint(w, r->device_count);
  json_key(w, "priority");
  json_int(w, r->priority);
  json_end_object(w);
}

static const char* info_device_type_name(accel_device_type_t type) {
  switch (type) {
    case ACCEL_DEVICE_TYPE_CPU:
      return "cpu";
    case ACCEL_DEVICE_TYPE_GPU:
      return "gpu";
    default:
      return "other";
  }
}

// The UUID as 32 lowercase hex digits, or null when the plugin left it 0.
static void info_json_uuid(json_writer_t* w, const uint8_t uuid[16]) {
  char hex[33];
  bool any = false;
  for (int i = 0; i < 16; ++i) {
    snprintf(hex + 2 * i, 3, "%02x", uuid[i]);
    any = any || uuid[i] != 0;
  }
  json_string(w, any ? hex : NULL);
}

static void info_json_caps(json_writer_t* w, accel_device_caps_t caps) {
  json_begin_array(w);
  for (unsigned bit = 0; bit < 32; ++bit) {
    accel_device_caps_t cap = (accel_device_caps_t)1u << bit;
    if ((caps & cap) == 0) continue;
    const char* name = accel_device_cap_name(cap);
    char unknown[16];
    if (name == NULL) {
      snprintf(unknown, sizeof(unknown), "bit%u", bit);
      name = unknown;
    }
    json_string(w, name);
  }
  json_end_array(w);
}

// A space-separated list as an array of strings.
static void info_json_words(json_writer_t* w, const char* list) {
  json_begin_array(w);
  char word[128];
  while (*list != '\0') {
    while (*list == ' ') list++;
    size_t n = strcspn(list, " ");
    if (n != 0) {
      snprintf(word, sizeof(word), "%.*s", (int)n, list);
      json_string(w, word);
    }
    list += n;
  }
  json_end_array(w);
}

static void info_json_device(json_writer_t* w, const info_device_t* d) {
  const accel_device_info_t* in = &d->info;
  json_begin_object(w);
  json_key(w, "id");
  json_string(w, in->uri);
  json_key(w, "backend");
  json_string(w, in->backend);
  json_key(w, "index");
  json_uint(w, in->index);
  json_key(w, "type");
  json_string(w, info_device_type_name(in->type));
  json_key(w, "name");
  json_string(w, in->name);
  json_key(w, "vendor");
  json_string(w, in->vendor);
  json_key(w, "arch");
  json_string(w, in->arch);
  json_key(w, "total_memory_bytes");
  json_uint(w, in->total_memory);
  json_key(w, "free_memory_bytes");
  json_uint(w, in->free_memory);
  json_key(w, "compute_units");
  json_uint(w, in->compute_units);
  json_key(w, "max_threads_per_block");
  json_uint(w, in->max_threads_per_block);
  json_key(w, "simd_width");
  json_uint(w, in->simd_width);
  json_key(w, "capabilities");
  info_json_caps(w, in->caps);
  json_key(w, "features");
  json_string(w, in->features);
  json_key(w, "uuid");
  info_json_uuid(w, in->uuid);
  json_key(w, "pci_bus_id");
  info_json_opt_string(w, in->pci_bus_id);
  json_key(w, "driver_version");
  json_string(w, in->driver_version);
  json_key(w, "module_target");
  json_string(w, in->module_target);
  json_key(w, "module_formats");
  info_json_words(w, in->module_formats);
  json_key(w, "max_alloc_size_bytes");
  json_uint(w, in->max_alloc_size);
  json_end_object(w);
}

static void info_json_selected(json_writer_t* w, const info_report_t* r) {
  json_begin_object(w);
  json_key(w, "device");
  json_string(w, r->selected ? r->selected_uri : NULL);
  json_key(w, "backend_env");
  json_string(w, r->backend_env);
  json_key(w, "status");
  json_string(w, r->select_error != NULL ? accel_status_string(r->select_status)
                                         : NULL);
  json_key(w, "error");
  json_string(w, r->select_error);
  json_end_object(w);
}

void info_render_json(const info_report_t* r, FILE* out) {
  json_writer_t w;
  json_writer_init(&w, out);
  json_begin_object(&w);
  json_key(&w, "schema_version");
  json_uint(&w, INFO_JSON_SCHEMA_VERSION);
  json_key(&w, "accel_version");
  json_string(&w, accel_version_string());
  json_key(&w, "plugin_abi_version");
  json_uint(&w, ACCEL_PLUGIN_ABI_VERSION);

  json_key(&w, "plugins");
  json_begin_array(&w);
  for (size_t i = 0; i < r->plugin_count; ++i) {
    info_json_plugin(&w, &r->plugins[i]);
  }
  json_end_array(&w);

  json_key(&w, "devices");
  json_begin_array(&w);
  for (size_t i = 0; i < r->device_count; ++i) {
    info_json_device(&w, &r->devices[i]);
  }
  json_end_array(&w);

  // Devices ACCEL_VISIBLE_DEVICES hides: the plugin's own index and why.
  json_key(&w, "hidden_devices");
  json_begin_array(&w);
  for (size_t i = 0; i < r->hidden_count; ++i) {
    json_begin_object(&w);
    json_key(&w, "backend");
    json_string(&w, r->hidden[i].backend);
    json_key(&w, "index");
    json_uint(&w, r->hidden[i].index);
    json_key(&w, "reason");
    json_string(&w, r->hidden[i].reason);
    json_end_object(&w);
  }
  json_end_array(&w);

  // Collectives engines: found and loaded, their libraries not opened.
  json_key(&w, "comm_engines");
  json_begin_array(&w);
  for (size_t i = 0; i < r->engine_count; ++i) {
    const accel_plugin_report_t* e = &r->engines[i];
    json_begin_object(&w);
    json_key(&w, "name");
    json_string(&w, e->name != NULL ? e->name : "");
    json_key(&w, "path");
    json_string(&w, e->path);
    json_key(&w, "status");
    json_string(&w, accel_status_string(e->status));
    json_key(&w, "message");
    json_string(&w, e->message != NULL ? e->message : "");
    json_end_object(&w);
  }
  json_end_array(&w);

  json_key(&w, "selected");
  info_json_selected(&w, r);

  json_key(&w, "search_path");
  json_begin_array(&w);
  for (size_t i = 0; i < r->search_count; ++i) {
    json_begin_object(&w);
    json_key(&w, "path");
    json_string(&w, r->search_paths[i]);
    json_key(&w, "origin");
    json_string(&w, info_origin_name(r->search_origins[i]));
    json_end_object(&w);
  }
  json_end_array(&w);

  json_key(&w, "errors");
  json_begin_array(&w);
  for (size_t i = 0; i < r->error_count; ++i) {
    json_begin_object(&w);
    json_key(&w, "plugin");
    json_string(&w, r->errors[i].plugin);
    json_key(&w, "message");
    json_string(&w, r->errors[i].message);
    json_end_object(&w);
  }
  json_end_array(&w);
  json_end_object(&w);
}
