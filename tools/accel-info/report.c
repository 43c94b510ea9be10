// SPDX-License-Identifier: MIT
//
// Collects the load report, the search path, every device and the default
// selection into an info_report_t, using only the public API. Strings from
// accel_last_error() are copied at once: the next call overwrites them.
#define _GNU_SOURCE  // secure_getenv
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "info.h"

const char* info_backend_env(void) {
#if defined(__GLIBC__)
  return secure_getenv("ACCEL_BACKEND");  // as core/src/log.c reads it
#else
  return getenv("ACCEL_BACKEND");
#endif
}

const char* info_state_name(info_state_t state) {
  switch (state) {
    case INFO_STATE_OK:
      return "ok";
    case INFO_STATE_UNAVAILABLE:
      return "unavailable";
    case INFO_STATE_FAILED:
      return "failed";
    case INFO_STATE_CRASHED:
      return "crashed";
    case INFO_STATE_TIMED_OUT:
      return "timed_out";
    case INFO_STATE_EXCLUDED:
      return "excluded";
    case INFO_STATE_SHADOWED:
      return "shadowed";
  }
  return "failed";
}

const char* info_stage_name(accel_plugin_stage_t stage) {
  switch (stage) {
    case ACCEL_PLUGIN_STAGE_FOUND:
      return "found";
    case ACCEL_PLUGIN_STAGE_OPENED:
      return "opened";
    case ACCEL_PLUGIN_STAGE_ENTRY:
      return "entry";
    case ACCEL_PLUGIN_STAGE_NEGOTIATED:
      return "negotiated";
    case ACCEL_PLUGIN_STAGE_INITIALISED:
      return "initialised";
    default:
      return "unknown";
  }
}

const char* info_origin_name(accel_origin_t origin) {
  switch (origin) {
    case ACCEL_ORIGIN_API:
      return "api";
    case ACCEL_ORIGIN_ENV:
      return "env";
    case ACCEL_ORIGIN_INSTALL_DIR:
      return "install_dir";
    default:
      return "unknown";
  }
}

void info_report_add_error(info_report_t* report, const char* plugin,
                           bool from_table, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  int n = vsnprintf(NULL, 0, format, ap);
  va_end(ap);
  if (n < 0) return;
  char* message = malloc((size_t)n + 1);
  info_error_t* grown = realloc(
      report->errors, (report->error_count + 1) * sizeof(*report->errors));
  if (message == NULL || grown == NULL) {
    free(message);
    if (grown != NULL) report->errors = grown;
    return;
  }
  va_start(ap, format);
  vsnprintf(message, (size_t)n + 1, format, ap);
  va_end(ap);
  report->errors = grown;
  report->errors[report->error_count++] = (info_error_t){
      .plugin = plugin, .message = message, .from_table = from_table};
}

// Classifies one load-report entry, applying crash info from the parent:
// a plugin excluded because it crashed earlier shows as crashed, not as
// "excluded" (the library cannot know why we excluded it).
static void info_plugin_classify(info_plugin_t* p,
                                 const info_collect_options_t* options) {
  const accel_plugin_report_t* r = &p->report;
  p->stage = r->stage;
  p->status = r->status;
  p->message = r->message;
  if (r->status == ACCEL_OK) {
    p->state = INFO_STATE_OK;
  } else if (r->status == ACCEL_ERROR_UNAVAILABLE) {
    p->state = INFO_STATE_UNAVAILABLE;
  } else if (r->status == ACCEL_ERROR_NOT_FOUND &&
             r->stage == ACCEL_PLUGIN_STAGE_FOUND &&
             strcmp(r->message, "excluded") == 0) {
    p->state = INFO_STATE_EXCLUDED;
  } else if (r->status == ACCEL_ERROR_NOT_FOUND &&
             r->stage == ACCEL_PLUGIN_STAGE_ENTRY) {
    p->state = INFO_STATE_SHADOWED;
  } else {
    p->state = INFO_STATE_FAILED;
  }
  if (p->state != INFO_STATE_EXCLUDED) return;
  for (size_t i = 0; i < options->crash_count; ++i) {
    const info_crash_t* c = &options->crashes[i];
    if (strcmp(c->path, r->path) == 0) {
      p->state = c->state;
      p->stage = c->stage;
      p->status = ACCEL_ERROR_INTERNAL;
      p->message = c->message;
      return;
    }
  }
}

// Reads the load report. Returns false if the library could not say.
static bool info_collect_plugins(const info_collect_options_t* options,
                                 info_report_t* out) {
  size_t count = 0;
  accel_status_t s = accel_plugin_report_count(&count);
  if (s != ACCEL_OK) {
    info_report_add_error(out, NULL, false, "accel_plugin_report_count: %s: %s",
                          accel_status_string(s), accel_last_error());
    return false;
  }
  if (count == 0) return true;
  out->plugins = calloc(count, sizeof(*out->plugins));
  if (out->plugins == NULL) {
    info_report_add_error(out, NULL, false, "out of memory");
    return false;
  }
  for (size_t i = 0; i < count; ++i) {
    info_plugin_t* p = &out->plugins[out->plugin_count];
    p->report.struct_size = sizeof(p->report);
    s = accel_plugin_report_get(i, &p->report);
    if (s != ACCEL_OK) {
      info_report_add_error(out, NULL, false,
                            "accel_plugin_report_get(%zu): %s: %s", i,
                            accel_status_string(s), accel_last_error());
      continue;
    }
    info_plugin_classify(p, options);
    out->plugin_count++;
    if (p->state == INFO_STATE_FAILED || p->state == INFO_STATE_CRASHED ||
        p->state == INFO_STATE_TIMED_OUT) {
      info_report_add_error(out, p->report.path, true, "%s", p->message);
    }
  }
  return true;
}

static void info_collect_search_path(info_report_t* out) {
  size_t count = 0;
  accel_status_t s = accel_search_path_count(&count);
  if (s != ACCEL_OK) {
    info_report_add_error(out, NULL, false, "accel_search_path_count: %s: %s",
                          accel_status_string(s), accel_last_error());
    return;
  }
  if (count == 0) return;
  out->search_paths = calloc(count, sizeof(*out->search_paths));
  out->search_origins = calloc(count, sizeof(*out->search_origins));
  if (out->search_paths == NULL || out->search_origins == NULL) return;
  for (size_t i = 0; i < count; ++i) {
    const char* path = NULL;
    accel_origin_t origin = ACCEL_ORIGIN_API;
    if (accel_search_path_get(i, &path, &origin) != ACCEL_OK) continue;
    out->search_paths[out->search_count] = path != NULL ? path : "";
    out->search_origins[out->search_count] = origin;
    out->search_count++;
  }
}

// Opens and queries device `index` of plugin `p`. On success appends it.
static void info_collect_device(const info_plugin_t* p, uint32_t index,
                                info_report_t* out) {
  char uri[64];
  snprintf(uri, sizeof(uri), "%s:%u", p->report.name, index);
  accel_device_t* device = NULL;
  accel_status_t s = accel_device_open(uri, &device);
  if (s != ACCEL_OK) {
    info_report_add_error(out, p->report.path, false,
                          "%s: accel_device_open: %s: %s", uri,
                          accel_status_string(s), accel_last_error());
    return;
  }
  info_device_t* d = &out->devices[out->device_count];
  memset(d, 0, sizeof(*d));
  d->info.struct_size = sizeof(d->info);
  s = accel_device_query_info(device, &d->info);
  if (s != ACCEL_OK) {
    info_report_add_error(out, p->report.path, false,
                          "%s: accel_device_query_info: %s: %s", uri,
                          accel_status_string(s), accel_last_error());
  } else {
    // Strings from a plugin are not trusted to be terminated.
    d->info.name[sizeof(d->info.name) - 1] = '\0';
    d->info.vendor[sizeof(d->info.vendor) - 1] = '\0';
    d->info.arch[sizeof(d->info.arch) - 1] = '\0';
    d->info.uri[sizeof(d->info.uri) - 1] = '\0';
    d->info.backend[sizeof(d->info.backend) - 1] = '\0';
    d->info.pci_bus_id[sizeof(d->info.pci_bus_id) - 1] = '\0';
    d->info.features[sizeof(d->info.features) - 1] = '\0';
    d->info.driver_version[sizeof(d->info.driver_version) - 1] = '\0';
    // Name the device as the core does, whatever the plugin wrote.
    snprintf(d->info.uri, sizeof(d->info.uri), "%s", accel_device_uri(device));
    snprintf(d->info.backend, sizeof(d->info.backend), "%s",
             accel_device_backend(device));
    d->info.index = accel_device_index(device);
    out->device_count++;
  }
  accel_device_release(device);
}

// Queries the devices of every usable plugin, plugin by plugin, with a
// marker before each so a crash is blamed on the right plugin.
static void info_collect_devices(const info_collect_options_t* options,
                                 info_report_t* out) {
  size_t total = 0;
  for (size_t i = 0; i < out->plugin_count; ++i) {
    if (out->plugins[i].state == INFO_STATE_OK) {
      total += out->plugins[i].report.device_count;
    }
  }
  if (total == 0) return;
  out->devices = calloc(total, sizeof(*out->devices));
  if (out->devices == NULL) {
    info_report_add_error(out, NULL, false, "out of memory");
    return;
  }
  for (size_t i = 0; i < out->plugin_count; ++i) {
    const info_plugin_t* p = &out->plugins[i];
    if (p->state != INFO_STATE_OK || p->report.device_count == 0) continue;
    if (options->mark != NULL) {
      options->mark(INFO_MARK_DEVICES, p->report.path, options->mark_user_data);
    }
    for (uint32_t d = 0; d < p->report.device_count; ++d) {
      info_collect_device(p, d, out);
    }
  }
}

static void info_collect_hidden(info_report_t* out) {
  size_t count = 0;
  if (accel_device_hidden_count(&count) != ACCEL_OK || count == 0) return;
  out->hidden = calloc(count, sizeof(*out->hidden));
  if (out->hidden == NULL) {
    info_report_add_error(out, NULL, false, "out of memory");
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    info_hidden_t* h = &out->hidden[out->hidden_count];
    if (accel_device_hidden_get(i, &h->backend, &h->index, &h->reason) ==
        ACCEL_OK) {
      out->hidden_count++;
    }
  }
}

static void info_collect_engines(info_report_t* out) {
  size_t count = 0;
  if (accel_comm_engine_report_count(&count) != ACCEL_OK || count == 0) {
    return;
  }
  out->engines = calloc(count, sizeof(*out->engines));
  if (out->engines == NULL) {
    info_report_add_error(out, NULL, false, "out of memory");
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    accel_plugin_report_t* e = &out->engines[out->engine_count];
    e->struct_size = sizeof(*e);
    if (accel_comm_engine_report_get(i, e) == ACCEL_OK) out->engine_count++;
  }
}

static void info_collect_selection(info_report_t* out) {
  out->backend_env = info_backend_env();
  accel_device_t* device = NULL;
  accel_status_t s = accel_device_default(&device);
  out->select_status = s;
  if (s != ACCEL_OK) {
    const char* why = accel_last_error();
    out->select_error = strdup(why[0] != '\0' ? why : accel_status_string(s));
    return;
  }
  out->selected = true;
  snprintf(out->selected_uri, sizeof(out->selected_uri), "%s",
           accel_device_uri(device));
  accel_device_release(device);
}

// Adapts the library's probe callback to our marker hook.
static void info_probe(const char* path, void* user_data) {
  const info_collect_options_t* options = user_data;
  options->mark(INFO_MARK_OPEN, path, options->mark_user_data);
}

void info_report_collect(const info_collect_options_t* options,
                         info_report_t* out) {
  memset(out, 0, sizeof(*out));
  const char** exclude = NULL;
  if (options->crash_count > 0) {
    exclude = calloc(options->crash_count, sizeof(*exclude));
    if (exclude == NULL) {
      info_report_add_error(out, NULL, false, "out of memory");
      return;
    }
    for (size_t i = 0; i < options->crash_count; ++i) {
      exclude[i] = options->crashes[i].path;
    }
  }
  accel_options_t init;
  accel_options_init(&init);
  init.exclude = exclude;
  init.exclude_count = options->crash_count;
  if (options->mark != NULL) {
    init.probe = info_probe;
    init.probe_user_data = (void*)options;
  }
  accel_status_t s = accel_init(&init);
  free(exclude);  // accel_init() copies it
  if (s != ACCEL_OK) {
    info_report_add_error(out, NULL, false, "accel_init: %s: %s",
                          accel_status_string(s), accel_last_error());
    return;
  }
  info_collect_search_path(out);
  if (!info_collect_plugins(options, out)) return;
  info_collect_devices(options, out);
  info_collect_hidden(out);
  info_collect_engines(out);
  // Selection may open devices again; a crash there is not one plugin's
  // probe, so say so before starting.
  if (options->mark != NULL) {
    options->mark(INFO_MARK_NONE, NULL, options->mark_user_data);
  }
  info_collect_selection(out);
}

int info_report_exit_code(const info_report_t* report) {
  if (report->device_count == 0) return INFO_EXIT_NO_DEVICE;
  if (report->error_count > 0) return INFO_EXIT_PROBLEMS;
  return INFO_EXIT_OK;
}

void info_report_deinit(info_report_t* report) {
  for (size_t i = 0; i < report->error_count; ++i) {
    free(report->errors[i].message);
  }
  free(report->errors);
  free(report->plugins);
  free(report->devices);
  free(report->hidden);
  free(report->engines);
  free(report->search_paths);
  free(report->search_origins);
  free(report->select_error);
  memset(report, 0, sizeof(*report));
}
