// SPDX-License-Identifier: MIT
//
// The fuzz targets' plugin, "fuzzfx": the loader fixtures' host-memory
// plugin (tests/loader/fixtures) with three devices that each declare a
// different module target and module formats, and a module_load that only
// records the image. Module images are trusted code that a real plugin
// would load and run; this one never executes or parses them, so a fuzzer
// can hand the core arbitrary bytes and exercise its sniffing, rejection
// and bundle parsing alone.
#include <stdlib.h>
#include <string.h>

#include "fixture_common.h"

#define FUZZFX_DEVICES 3u

// The fixture's ops read the host table through the device handle's first
// member, so it comes first here too.
typedef struct fuzzfx_device {
  const accel_host_t* host;
  uint32_t index;
} fuzzfx_device_t;

// What a loaded module keeps: its size and a checksum of its bytes, so the
// image is read in full as a real loader would.
typedef struct fuzzfx_module {
  const accel_host_t* host;
  size_t size;
  uint32_t sum;
} fuzzfx_module_t;

static const struct {
  const char* target;
  const char* formats;
} fuzzfx_targets[FUZZFX_DEVICES] = {
    {"elf-x86_64", ""},  // an ABI 1.2-style device: its own family only
    {"cuda-sm_90", "opencl-c spirv"},
    {"amdgcn-gfx90a", "cuda"},
};

static accel_plugin_t fuzzfx_plugin;
static accel_device_ops_t fuzzfx_ops;

static accel_status_t fuzzfx_device_count(void* plugin, uint32_t* out_count) {
  (void)plugin;
  *out_count = FUZZFX_DEVICES;
  return ACCEL_OK;
}

static accel_status_t fuzzfx_device_open(void* plugin, uint32_t index,
                                         void** out_device) {
  const accel_host_t* host = fx_host(plugin);
  if (index >= FUZZFX_DEVICES) {
    return host->fail(host, ACCEL_ERROR_NOT_FOUND, "fuzzfx: no device %u",
                      index);
  }
  fuzzfx_device_t* device = calloc(1, sizeof(*device));
  if (device == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "fuzzfx: no memory");
  }
  device->host = host;
  device->index = index;
  *out_device = device;
  return ACCEL_OK;
}

static void fuzzfx_device_close(void* device) { free(device); }

static accel_status_t fuzzfx_query_props(void* device,
                                         accel_plugin_device_props_t* props) {
  const fuzzfx_device_t* dev = device;
  props->type = ACCEL_DEVICE_TYPE_OTHER;
  strcpy(props->name, "accel fuzz fixture");
  strcpy(props->vendor, "accel");
  strcpy(props->arch, "host");
  props->total_memory = 1ull << 30;
  props->compute_units = 1;
  strcpy(props->module_target, fuzzfx_targets[dev->index].target);
  if (ACCEL_PLUGIN_HAS_FIELD(props, accel_plugin_device_props_t,
                             module_formats)) {
    strcpy(props->module_formats, fuzzfx_targets[dev->index].formats);
  }
  return ACCEL_OK;
}

static accel_status_t fuzzfx_module_load(void* device, const void* image,
                                         size_t size, void** out_module) {
  const fuzzfx_device_t* dev = device;
  fuzzfx_module_t* module = calloc(1, sizeof(*module));
  if (module == NULL) {
    return dev->host->fail(dev->host, ACCEL_ERROR_OUT_OF_MEMORY,
                           "fuzzfx: no memory");
  }
  const unsigned char* bytes = image;
  for (size_t i = 0; i < size; i++) module->sum = module->sum * 31u + bytes[i];
  module->host = dev->host;
  module->size = size;
  *out_module = module;
  return ACCEL_OK;
}

static void fuzzfx_module_unload(void* module) { free(module); }

static accel_status_t fuzzfx_module_function(void* module, const char* name,
                                             void** out_function) {
  const fuzzfx_module_t* mod = module;
  (void)out_function;
  return mod->host->fail(mod->host, ACCEL_ERROR_NOT_FOUND,
                         "fuzzfx: no kernel '%s' in a %zu-byte image", name,
                         mod->size);
}

// Never reached: module_function finds no kernel. The core wants the
// module entries set together.
static accel_status_t fuzzfx_launch(void* function, void* stream,
                                    const accel_plugin_launch_t* launch) {
  (void)function;
  (void)stream;
  (void)launch;
  return ACCEL_ERROR_UNSUPPORTED;
}

ACCEL_PLUGIN_EXPORT const accel_plugin_t* accel_plugin_entry(
    uint32_t host_abi) {
  if (host_abi != ACCEL_PLUGIN_ABI_VERSION) return NULL;
  fx_plugin_init(&fuzzfx_plugin, &fuzzfx_ops, "fuzzfx");
  fuzzfx_plugin.device_count = fuzzfx_device_count;
  fuzzfx_plugin.device_open = fuzzfx_device_open;
  fuzzfx_plugin.device_close = fuzzfx_device_close;
  fuzzfx_ops.query_props = fuzzfx_query_props;
  fuzzfx_ops.module_load = fuzzfx_module_load;
  fuzzfx_ops.module_unload = fuzzfx_module_unload;
  fuzzfx_ops.module_function = fuzzfx_module_function;
  fuzzfx_ops.launch = fuzzfx_launch;
  return &fuzzfx_plugin;
}
