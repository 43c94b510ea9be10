// SPDX-License-Identifier: MIT
//
// The template plugin's entry point, descriptor and device objects. Read
// this file first: it is the whole contract with the core at a glance.
// Device memory is host memory, streams are worker threads (stream.c),
// events time with CLOCK_MONOTONIC (event.c), and the built-in ops are
// plain loops (ops.c), and modules are host shared objects whose kernels
// follow the CPU kernel ABI (module.c).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template.h"

// The module format this device loads: ELF shared objects of the host.
#if defined(__x86_64__)
#define TEMPLATE_MODULE_TARGET "elf-x86_64"
#elif defined(__aarch64__)
#define TEMPLATE_MODULE_TARGET "elf-aarch64"
#else
#define TEMPLATE_MODULE_TARGET ""  // no custom kernels
#endif

// Number of devices, from ACCEL_TEMPLATE_DEVICES (1 to 8, default 1).
static uint32_t template_configured_devices(const accel_host_t* host) {
  const char* text = host->getenv(host, "ACCEL_TEMPLATE_DEVICES");
  if (text == NULL || text[0] < '1' || text[0] > '8' || text[1] != '\0') {
    return 1;
  }
  return (uint32_t)(text[0] - '0');
}

static accel_status_t template_load(const accel_host_t* host,
                                    void** out_plugin) {
  *out_plugin = NULL;
  template_plugin_t* plugin = calloc(1, sizeof(*plugin));
  if (plugin == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      TEMPLATE_NAME ": plugin state");
  }
  plugin->host = host;
  *out_plugin = plugin;
  return ACCEL_OK;
}

static void template_unload(void* plugin) { free(plugin); }

static accel_status_t template_device_count(void* plugin_ptr,
                                            uint32_t* out_count) {
  template_plugin_t* plugin = plugin_ptr;
  *out_count = template_configured_devices(plugin->host);
  return ACCEL_OK;
}

static accel_status_t template_device_open(void* plugin_ptr, uint32_t index,
                                           void** out_device) {
  template_plugin_t* plugin = plugin_ptr;
  *out_device = NULL;
  template_device_t* device = calloc(1, sizeof(*device));
  if (device == NULL) {
    return plugin->host->fail(plugin->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              TEMPLATE_NAME ":%u: device state", index);
  }
  device->host = plugin->host;
  device->index = index;
  atomic_init(&device->allocated, 0);
  *out_device = device;
  return ACCEL_OK;
}

static void template_device_close(void* device) { free(device); }

static accel_status_t template_query_props(void* device_ptr,
                                           accel_plugin_device_props_t* props) {
  template_device_t* device = device_ptr;
  // Write only what fits the core's struct (an older core has a smaller
  // one); everything up to driver_version is ABI 1.0.
  if (!ACCEL_PLUGIN_HAS_FIELD(props, accel_plugin_device_props_t,
                              driver_version)) {
    return ACCEL_OK;
  }
  props->type = ACCEL_DEVICE_TYPE_OTHER;
  snprintf(props->name, sizeof(props->name), "accel template device %u",
           device->index);
  snprintf(props->vendor, sizeof(props->vendor), "accel");
  snprintf(props->arch, sizeof(props->arch), "host");
  props->total_memory = TEMPLATE_DEVICE_MEMORY;
  props->compute_units = 1;
  // A block is one call of a CPU-ABI kernel that loops over block_dim
  // itself, so large blocks cost nothing.
  props->max_threads_per_block = 1024;
  props->simd_width = 1;
  props->caps = ACCEL_DEVICE_CAP_F16 | ACCEL_DEVICE_CAP_BF16 |
                ACCEL_DEVICE_CAP_EVENT_TIMING;
  if (TEMPLATE_MODULE_TARGET[0] != '\0') props->caps |= ACCEL_DEVICE_CAP_KERNELS;
  snprintf(props->driver_version, sizeof(props->driver_version),
           TEMPLATE_VERSION);
  // Host shared objects of this machine's architecture (ABI 1.1).
  if (ACCEL_PLUGIN_HAS_FIELD(props, accel_plugin_device_props_t,
                             module_target)) {
    snprintf(props->module_target, sizeof(props->module_target), "%s",
             TEMPLATE_MODULE_TARGET);
  }
  return ACCEL_OK;
}

static accel_status_t template_mem_info(void* device_ptr, uint64_t* out_free,
                                        uint64_t* out_total) {
  template_device_t* device = device_ptr;
  uint64_t used = atomic_load(&device->allocated);
  *out_total = TEMPLATE_DEVICE_MEMORY;
  *out_free = used < TEMPLATE_DEVICE_MEMORY ? TEMPLATE_DEVICE_MEMORY - used : 0;
  return ACCEL_OK;
}

static const accel_device_ops_t template_device_ops = {
    .struct_size = sizeof(accel_device_ops_t),
    .query_props = template_query_props,
    .mem_info = template_mem_info,
    .mem_alloc = template_mem_alloc,
    .mem_free = template_mem_free,
    .copy_h2d = template_copy_h2d,
    .copy_d2h = template_copy_d2h,
    .copy_d2d = template_copy_d2d,
    .memset = template_memset,
    .stream_create = template_stream_create,
    .stream_destroy = template_stream_destroy,
    .stream_synchronize = template_stream_synchronize,
    .stream_query = template_stream_query,
    .stream_wait_event = template_stream_wait_event,
    .event_create = template_event_create,
    .event_destroy = template_event_destroy,
    .event_record = template_event_record,
    .event_synchronize = template_event_synchronize,
    .event_query = template_event_query,
    .event_elapsed_ms = template_event_elapsed_ms,
    // host_alloc, copy_peer and can_access_peer are optional and left
    // NULL: the core uses ordinary host memory and stages peer copies
    // through the host.
    .module_load = template_module_load,
    .module_unload = template_module_unload,
    .module_function = template_module_function,
    .launch = template_launch,
    .op_fill = template_op_fill,
    .op_cast = template_op_cast,
    .op_scale = template_op_scale,
    .op_axpy = template_op_axpy,
    .op_add = template_op_add,
    .op_mul = template_op_mul,
    .op_sum = template_op_sum,
    .op_gemm = template_op_gemm,
    // -- since ABI 1.3 --
    .mem_address = template_mem_address,
    .mem_wrap = template_mem_wrap,
    .mem_unwrap = template_mem_unwrap,
    .op_rng = template_op_rng,
    // -- since ABI 1.4 --
    // native_handle, host_register, stream priorities, native graphs and
    // op_gemm_batched are left NULL to the core's defaults (README.md says
    // why, and what the core does instead).
    .launch_host_func = template_launch_host_func,
    .op_unary = template_op_unary,
    .op_bias_add = template_op_bias_add,
};

static const accel_plugin_t template_plugin = {
    .abi_version = ACCEL_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(accel_plugin_t),
    .name = TEMPLATE_NAME,
    .version = TEMPLATE_VERSION,
    // Below cpu (0), so ACCEL_BACKEND=auto never prefers a host-memory
    // backend; a real accelerator picks a high value (cuda 300, rocm 200).
    .priority = -1,
    .load = template_load,
    .unload = template_unload,
    .device_count = template_device_count,
    .device_open = template_device_open,
    .device_close = template_device_close,
    .device_ops = &template_device_ops,
};

ACCEL_PLUGIN_EXPORT const accel_plugin_t* accel_plugin_entry(
    uint32_t host_abi) {
  return host_abi == ACCEL_PLUGIN_ABI_VERSION ? &template_plugin : NULL;
}
