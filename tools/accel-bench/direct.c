// SPDX-License-Identifier: MIT
//
// The dispatch baseline: the device's plugin, loaded a second time without
// the core. We find the file the core loaded (its load report path),
// dlopen it, call accel_plugin_entry and load() with a host table of our
// own, and open the same device index. Calls through this copy reach the
// same plugin code the core reaches, minus the core, which is exactly the
// difference the dispatch budget is about.
//
// dlopen of a path the core already opened returns the same mapping, so
// the code is shared; the plugin state is separate because plugins keep
// everything in what load() returns (plugin.h, STYLE "Plugins keep no
// global state").
#include <accel/plugin.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

struct bench_direct {
  void* dl;
  const accel_plugin_t* desc;
  const accel_device_ops_t* ops;
  void* state;   // from load()
  void* device;  // from device_open()
  accel_host_t host;
  char path[4096];
};

// Host services for the direct copy. Messages go to a per-thread buffer
// that bench_fail() picks up; logging is dropped, as the core drops it
// unless ACCEL_LOG asks.
static _Thread_local char bench_direct_message[256];

static accel_status_t bench_direct_host_fail(const accel_host_t* host,
                                             accel_status_t status,
                                             const char* format, ...) {
  (void)host;
  va_list args;
  va_start(args, format);
  vsnprintf(bench_direct_message, sizeof(bench_direct_message), format, args);
  va_end(args);
  return status;
}

static void bench_direct_host_log(const accel_host_t* host,
                                  accel_log_level_t level, const char* format,
                                  ...) {
  (void)host;
  (void)level;
  (void)format;
}

static const char* bench_direct_host_getenv(const accel_host_t* host,
                                            const char* name) {
  (void)host;
  return getenv(name);
}

// Finds the real path of the usable plugin named `backend` in the report.
static bool bench_direct_find(const char* backend, char* path, size_t size) {
  size_t count = 0;
  if (accel_plugin_report_count(&count) != ACCEL_OK) {
    return bench_fail("accel_plugin_report_count: %s", accel_last_error());
  }
  for (size_t i = 0; i < count; ++i) {
    accel_plugin_report_t report;
    memset(&report, 0, sizeof(report));
    report.struct_size = sizeof(report);
    if (accel_plugin_report_get(i, &report) != ACCEL_OK) continue;
    if (report.status == ACCEL_OK &&
        report.stage == ACCEL_PLUGIN_STAGE_INITIALISED &&
        strcmp(report.name, backend) == 0) {
      snprintf(path, size, "%s", report.path);
      return true;
    }
  }
  return bench_fail("no usable plugin named '%s' in the load report", backend);
}

// Loads the plugin at d->path and opens device `index`.
static bool bench_direct_load(bench_direct_t* d, uint32_t index) {
  d->dl = dlopen(d->path, RTLD_NOW | RTLD_LOCAL);
  if (d->dl == NULL) return bench_fail("dlopen: %s", dlerror());
  accel_plugin_entry_fn_t entry = NULL;
  // POSIX guarantees this conversion for dlsym results.
  *(void**)&entry = dlsym(d->dl, ACCEL_PLUGIN_ENTRY_NAME);
  if (entry == NULL) return bench_fail("%s: no entry symbol", d->path);
  d->desc = entry(ACCEL_PLUGIN_ABI_VERSION);
  if (d->desc == NULL || d->desc->struct_size < ACCEL_PLUGIN_MIN_SIZE ||
      d->desc->device_ops == NULL ||
      d->desc->device_ops->struct_size < ACCEL_DEVICE_OPS_MIN_SIZE) {
    return bench_fail("%s: descriptor missing or too small", d->path);
  }
  d->ops = d->desc->device_ops;
  d->host.struct_size = sizeof(d->host);
  d->host.abi_version = ACCEL_PLUGIN_ABI_VERSION;
  d->host.fail = bench_direct_host_fail;
  d->host.log = bench_direct_host_log;
  d->host.getenv = bench_direct_host_getenv;
  if (d->desc->load(&d->host, &d->state) != ACCEL_OK) {
    d->state = NULL;
    return bench_fail("%s: load: %s", d->path, bench_direct_message);
  }
  uint32_t count = 0;
  if (d->desc->device_count(d->state, &count) != ACCEL_OK) {
    return bench_fail("%s: device_count: %s", d->path, bench_direct_message);
  }
  if (index >= count) {
    return bench_fail("%s: device %u of %u", d->path, index, count);
  }
  if (d->desc->device_open(d->state, index, &d->device) != ACCEL_OK) {
    d->device = NULL;
    return bench_fail("%s: device_open: %s", d->path, bench_direct_message);
  }
  return true;
}

static void bench_direct_free(bench_direct_t* d) {
  if (d == NULL) return;
  if (d->device != NULL) d->desc->device_close(d->device);
  if (d->state != NULL) d->desc->unload(d->state);
  if (d->dl != NULL) dlclose(d->dl);
  free(d);
}

bench_direct_t* bench_direct_get(bench_ctx_t* ctx) {
  if (ctx->direct != NULL || ctx->direct_failed) return ctx->direct;
  bench_direct_t* d = calloc(1, sizeof(*d));
  bool ok = d != NULL || bench_fail("out of memory");
  ok = ok && bench_direct_find(accel_device_backend(ctx->device), d->path,
                               sizeof(d->path));
  ok = ok && bench_direct_load(d, accel_device_index(ctx->device));
  if (!ok) {
    snprintf(ctx->direct_error, sizeof(ctx->direct_error), "direct plugin: %s",
             bench_failure());
    ctx->direct_failed = true;
    bench_direct_free(d);
    return NULL;
  }
  ctx->direct = d;
  return d;
}

void bench_direct_close(bench_ctx_t* ctx) {
  bench_direct_free(ctx->direct);
  ctx->direct = NULL;
}

const void* bench_direct_ops(const bench_direct_t* direct) {
  return direct->ops;
}

void* bench_direct_device(const bench_direct_t* direct) {
  return direct->device;
}

const char* bench_direct_path(const bench_direct_t* direct) {
  return direct->path;
}

const char* bench_direct_error(void) { return bench_direct_message; }
