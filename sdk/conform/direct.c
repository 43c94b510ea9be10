// SPDX-License-Identifier: MIT
//
// The plugin under test loaded a second time, through its own entry point
// with a host table of the suite's (dlopen, as an older or foreign core
// would), so checks reach what the core hides: the plugin's own
// out-of-memory path, its properties as query_props gives them, and
// objects created and destroyed without the core's caches in between.
#include <accel/plugin.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conform.h"

static _Thread_local char conform_host_message[512];

static accel_status_t conform_host_fail(const accel_host_t* host,
                                        accel_status_t status,
                                        const char* format, ...) {
  (void)host;
  va_list ap;
  va_start(ap, format);
  vsnprintf(conform_host_message, sizeof(conform_host_message), format, ap);
  va_end(ap);
  return status;
}

static void conform_host_log(const accel_host_t* host, accel_log_level_t level,
                             const char* format, ...) {
  (void)host, (void)level, (void)format;
}

static const char* conform_host_getenv(const accel_host_t* host,
                                       const char* name) {
  (void)host;
  return getenv(name);
}

static const accel_host_t conform_host = {
    .struct_size = sizeof(accel_host_t),
    .abi_version = ACCEL_PLUGIN_ABI_VERSION,
    .fail = conform_host_fail,
    .log = conform_host_log,
    .getenv = conform_host_getenv,
    .abi_minor = ACCEL_PLUGIN_ABI_MINOR,
};

void conform_direct_host_init(accel_host_t* host, size_t size) {
  memcpy(host, &conform_host, size);
  host->struct_size = (uint32_t)size;
}

accel_status_t conform_direct_props(const conform_direct_t* d,
                                    accel_plugin_device_props_t* props) {
  memset(props, 0, sizeof(*props));
  props->struct_size = sizeof(*props);
  return d->ops->query_props(d->device, props);
}

void conform_direct_close(conform_direct_t* d) {
  if (d->device != NULL) d->desc->device_close(d->device);
  if (d->plugin != NULL) d->desc->unload(d->plugin);
  if (d->handle != NULL) dlclose(d->handle);
  memset(d, 0, sizeof(*d));
}

conform_result_t conform_direct_open(conform_ctx_t* ctx, conform_direct_t* d) {
  return conform_direct_open_with(ctx, d, &conform_host, NULL);
}

conform_result_t conform_direct_open_with(conform_ctx_t* ctx,
                                          conform_direct_t* d,
                                          const accel_host_t* host,
                                          accel_status_t* out_load) {
  memset(d, 0, sizeof(*d));
  if (out_load != NULL) *out_load = ACCEL_OK;
  d->handle = dlopen(ctx->plugin_path, RTLD_NOW | RTLD_LOCAL);
  void* sym = d->handle ? dlsym(d->handle, ACCEL_PLUGIN_ENTRY_NAME) : NULL;
  if (sym == NULL) {
    conform_direct_close(d);
    return conform_report(ctx, CONFORM_FAIL, "dlopen %s: %s", ctx->plugin_path,
                          dlerror());
  }
  accel_plugin_entry_fn_t entry;
  memcpy(&entry, &sym, sizeof(entry));
  d->desc = entry(ACCEL_PLUGIN_ABI_VERSION);
  if (d->desc == NULL) {
    conform_direct_close(d);
    return conform_report(ctx, CONFORM_FAIL, "entry returned NULL");
  }
  d->ops = d->desc->device_ops;
  uint32_t count = 0;
  accel_status_t status = d->desc->load(host, &d->plugin);
  if (out_load != NULL) *out_load = status;
  if (status == ACCEL_OK) status = d->desc->device_count(d->plugin, &count);
  if (status == ACCEL_OK && count <= accel_device_index(ctx->device)) {
    status = ACCEL_ERROR_NOT_FOUND;
  }
  if (status == ACCEL_OK) {
    status = d->desc->device_open(d->plugin, accel_device_index(ctx->device),
                                  &d->device);
  }
  if (status != ACCEL_OK) {
    conform_direct_close(d);
    return conform_report(ctx, CONFORM_FAIL, "direct load: %s: %s",
                          accel_status_string(status), conform_host_message);
  }
  return CONFORM_PASS;
}

const char* conform_direct_message(void) { return conform_host_message; }
