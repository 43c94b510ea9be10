// SPDX-License-Identifier: MIT
//
// Devices: one core handle per open plugin device, shared by every caller
// that opens it and closed when the last reference goes.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

// Caches the properties that launches and module loads check, so they need
// no plugin call. A failing query leaves them empty: no block limit, no
// modules.
static void accel__device_cache_props(accel_device_t* device) {
  accel_plugin_device_props_t props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  if (device->ops->query_props(device->impl, &props) != ACCEL_OK) return;
  device->max_threads_per_block = props.max_threads_per_block;
  if (device->plugin->has_kernels) {
    props.module_target[sizeof(props.module_target) - 1] = '\0';
    memcpy(device->module_target, props.module_target,
           sizeof(device->module_target));
    // ABI 1.3; a 1.0-1.2 plugin leaves these zero, as the core set them.
    props.module_formats[sizeof(props.module_formats) - 1] = '\0';
    memcpy(device->module_formats, props.module_formats,
           sizeof(device->module_formats));
  }
  device->max_alloc_size = props.max_alloc_size;
  device->max_shared_mem_bytes = props.max_shared_mem_bytes;
  device->buffer_offset_alignment = props.buffer_offset_alignment;
  memcpy(device->max_grid, props.max_grid, sizeof(device->max_grid));
  device->host_accessible = (props.caps & ACCEL_DEVICE_CAP_HOST_ACCESSIBLE) != 0;
  device->separate_allocations =
      (props.caps & ACCEL_DEVICE_CAP_SEPARATE_ALLOCATIONS) != 0;
}

accel_status_t accel__device_open_locked(accel__plugin_t* plugin,
                                         uint32_t index,
                                         accel_device_t** out_device) {
  if (index >= plugin->device_count) {
    return accel__fail(ACCEL_ERROR_NOT_FOUND,
                       "%s:%u: backend %s has %u device(s)", plugin->name,
                       index, plugin->name, plugin->device_count);
  }
  accel_device_t* device = plugin->devices[index];
  if (device != NULL) {
    atomic_fetch_add(&device->refs, 1);
    *out_device = device;
    return ACCEL_OK;
  }
  device = accel__handle_new(sizeof(*device));
  if (device == NULL) {
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "device handle");
  }
  accel_status_t status = plugin->desc.device_open(
      plugin->state, accel__plugin_physical(plugin, index), &device->impl);
  if (status != ACCEL_OK) {
    accel__handle_free(device);
    return status;  // the plugin recorded why
  }
  atomic_init(&device->refs, 1);
  device->plugin = plugin;
  device->ops = &plugin->ops;
  device->index = index;
  snprintf(device->uri, sizeof(device->uri), "%s:%u", plugin->name, index);
  accel__device_cache_props(device);
  status = accel__allocator_create(device);
  if (status == ACCEL_OK) status = accel__host_pool_create(device);
  if (status != ACCEL_OK) {
    accel__allocator_destroy(device);
    plugin->desc.device_close(device->impl);
    accel__handle_free(device);
    return status;
  }
  plugin->devices[index] = device;
  *out_device = device;
  return ACCEL_OK;
}

accel_status_t accel_device_count(uint32_t* out_count) {
  if (out_count == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_device_count: out_count is NULL");
  }
  *out_count = 0;
  accel_status_t status = accel__ensure_init();
  if (status != ACCEL_OK) return status;
  pthread_mutex_lock(&accel__state.lock);
  accel__plugin_probe_all();
  // 64-bit sum: per-plugin counts are capped, but many plugins could still
  // pass 2^32; the result saturates.
  uint64_t total = 0;
  for (size_t i = 0; i < accel__state.plugin_count; i++) {
    const accel__plugin_t* plugin = accel__state.plugins[i];
    if (plugin->status == ACCEL_OK) total += plugin->device_count;
  }
  pthread_mutex_unlock(&accel__state.lock);
  *out_count = total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
  return ACCEL_OK;
}

accel_status_t accel_device_get(uint32_t index, accel_device_t** out_device) {
  if (out_device == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_device_get: out_device is NULL");
  }
  *out_device = NULL;
  accel_status_t status = accel__ensure_init();
  if (status != ACCEL_OK) return status;
  pthread_mutex_lock(&accel__state.lock);
  accel__plugin_probe_all();
  uint32_t left = index;
  status = ACCEL_ERROR_NOT_FOUND;
  for (size_t i = 0; i < accel__state.plugin_count; i++) {
    accel__plugin_t* plugin = accel__state.plugins[i];
    if (plugin->status != ACCEL_OK) continue;
    if (left < plugin->device_count) {
      status = accel__device_open_locked(plugin, left, out_device);
      break;
    }
    left -= plugin->device_count;
  }
  pthread_mutex_unlock(&accel__state.lock);
  if (status == ACCEL_ERROR_NOT_FOUND) {
    return accel__fail(status,
                       "accel_device_get: index %u, but there are "
                       "only %u device(s)",
                       index, index - left);
  }
  return status;
}

accel_status_t accel__device_type_locked(accel__plugin_t* plugin,
                                         uint32_t index,
                                         accel_device_type_t* out_type) {
  accel_plugin_device_props_t props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  accel_device_t* open = plugin->devices[index];
  accel_status_t status;
  if (open != NULL) {
    status = plugin->ops.query_props(open->impl, &props);
  } else {
    void* impl = NULL;
    status = plugin->desc.device_open(
        plugin->state, accel__plugin_physical(plugin, index), &impl);
    if (status == ACCEL_OK) {
      status = plugin->ops.query_props(impl, &props);
      plugin->desc.device_close(impl);
    }
  }
  *out_type = props.type <= ACCEL_DEVICE_TYPE_GPU
                  ? (accel_device_type_t)props.type
                  : ACCEL_DEVICE_TYPE_OTHER;
  return status;
}

void accel_device_retain(accel_device_t* device) {
  if (device != NULL && accel__refs_step(device, &device->refs, true) == 0) {
    accel__handle_dead("accel_device_retain", "device", device);
  }
}

void accel_device_release(accel_device_t* device) {
  if (device == NULL) return;
  // Read what we need first: once the count drops, another thread may
  // reopen and release (and free) this handle.
  accel__plugin_t* plugin = device->plugin;
  uint32_t index = device->index;
  unsigned refs = accel__refs_step(device, &device->refs, false);
  if (refs == 0) accel__handle_dead("accel_device_release", "device", device);
  if (refs != 1) return;
  // The count reached zero, but another thread may reopen the device before
  // we take the lock: close it only if it is still this plugin's handle and
  // still unreferenced.
  pthread_mutex_lock(&accel__state.lock);
  if (plugin->devices[index] == device && atomic_load(&device->refs) == 0) {
    plugin->devices[index] = NULL;
    // Cached memory goes back to the plugin before the device closes.
    accel__host_pool_destroy(device);
    accel__allocator_destroy(device);
    plugin->desc.device_close(device->impl);
    accel__handle_free(device);
  }
  pthread_mutex_unlock(&accel__state.lock);
}

const char* accel_device_uri(const accel_device_t* device) {
  return device != NULL ? device->uri : "";
}

const char* accel_device_backend(const accel_device_t* device) {
  return device != NULL ? device->plugin->name : "";
}

uint32_t accel_device_index(const accel_device_t* device) {
  return device != NULL ? device->index : 0;
}

static void accel__copy_string(char* dst, size_t n, const char* src) {
  size_t len = strnlen(src, n - 1);
  memcpy(dst, src, len);
  dst[len] = '\0';
}

accel_status_t accel_device_query_info(accel_device_t* device,
                                       accel_device_info_t* out_info) {
  if (device == NULL || out_info == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_device_query_info: device and out_info are "
                       "required");
  }
  // Callers built before `module_target` was appended pass the smaller
  // size and get the fields that fit.
  size_t fits = out_info->struct_size < sizeof(accel_device_info_t)
                    ? out_info->struct_size
                    : sizeof(accel_device_info_t);
  if (fits < offsetof(accel_device_info_t, module_target)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_device_query_info: out_info->struct_size is %u; "
                       "set it to sizeof(accel_device_info_t) (%zu)",
                       out_info->struct_size, sizeof(accel_device_info_t));
  }
  accel_plugin_device_props_t props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  accel_status_t status = device->ops->query_props(device->impl, &props);
  if (status != ACCEL_OK) return status;
  uint64_t free_bytes = 0, total_bytes = 0;
  status = device->ops->mem_info(device->impl, &free_bytes, &total_bytes);
  if (status != ACCEL_OK) return status;

  accel_device_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = out_info->struct_size;
  info.type = props.type <= ACCEL_DEVICE_TYPE_GPU
                  ? (accel_device_type_t)props.type
                  : ACCEL_DEVICE_TYPE_OTHER;
  accel__copy_string(info.uri, sizeof(info.uri), device->uri);
  accel__copy_string(info.backend, sizeof(info.backend), device->plugin->name);
  info.index = device->index;
  // Plugin strings are not trusted to be terminated.
  props.name[sizeof(props.name) - 1] = '\0';
  props.vendor[sizeof(props.vendor) - 1] = '\0';
  props.arch[sizeof(props.arch) - 1] = '\0';
  props.pci_bus_id[sizeof(props.pci_bus_id) - 1] = '\0';
  props.features[sizeof(props.features) - 1] = '\0';
  props.driver_version[sizeof(props.driver_version) - 1] = '\0';
  accel__copy_string(info.name, sizeof(info.name), props.name);
  accel__copy_string(info.vendor, sizeof(info.vendor), props.vendor);
  accel__copy_string(info.arch, sizeof(info.arch), props.arch);
  accel__copy_string(info.pci_bus_id, sizeof(info.pci_bus_id),
                     props.pci_bus_id);
  accel__copy_string(info.features, sizeof(info.features), props.features);
  accel__copy_string(info.driver_version, sizeof(info.driver_version),
                     props.driver_version);
  info.total_memory = total_bytes != 0 ? total_bytes : props.total_memory;
  info.free_memory = free_bytes;
  info.compute_units = props.compute_units;
  info.max_threads_per_block = props.max_threads_per_block;
  info.simd_width = props.simd_width;
  memcpy(info.uuid, props.uuid, sizeof(info.uuid));
  // Capabilities the core fills in itself are claimed only when the plugin
  // really implements them.
  info.caps = props.caps;
  if (!device->plugin->has_pinned) info.caps &= ~ACCEL_DEVICE_CAP_PINNED_MEMORY;
  if (!device->plugin->has_timing) info.caps &= ~ACCEL_DEVICE_CAP_EVENT_TIMING;
  if (!device->plugin->has_kernels) info.caps &= ~ACCEL_DEVICE_CAP_KERNELS;
  // Graphs work on every device: natively or replayed by the core (graph.h).
  info.caps |= ACCEL_DEVICE_CAP_GRAPHS;
  memcpy(info.module_target, device->module_target, sizeof(info.module_target));
  // -- since accel 0.2: ABI 1.3 properties (zero from older plugins) --
  info.max_alloc_size = props.max_alloc_size;
  info.max_shared_mem_bytes = props.max_shared_mem_bytes;
  info.buffer_offset_alignment = props.buffer_offset_alignment;
  memcpy(info.max_grid, props.max_grid, sizeof(info.max_grid));
  memcpy(info.module_formats, device->module_formats,
         sizeof(info.module_formats));
  props.platform[sizeof(props.platform) - 1] = '\0';
  accel__copy_string(info.platform, sizeof(info.platform), props.platform);
  memcpy(out_info, &info, fits);
  return ACCEL_OK;
}

accel_status_t accel_device_query_memory(accel_device_t* device,
                                         uint64_t* out_free,
                                         uint64_t* out_total) {
  if (device == NULL || out_free == NULL || out_total == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_device_query_memory: device, out_free and "
                       "out_total are required");
  }
  *out_free = 0;
  *out_total = 0;
  return device->ops->mem_info(device->impl, out_free, out_total);
}

accel_status_t accel_device_can_access_peer(accel_device_t* device,
                                            accel_device_t* peer,
                                            bool* out_can) {
  if (device == NULL || peer == NULL || out_can == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_device_can_access_peer: device, peer and "
                       "out_can are required");
  }
  *out_can = false;
  if (device == peer || device->plugin != peer->plugin) return ACCEL_OK;
  return device->ops->can_access_peer(device->impl, peer->impl, out_can);
}

const char* accel_device_cap_name(accel_device_caps_t cap) {
  switch (cap) {
    case ACCEL_DEVICE_CAP_F16:
      return "f16";
    case ACCEL_DEVICE_CAP_BF16:
      return "bf16";
    case ACCEL_DEVICE_CAP_TF32:
      return "tf32";
    case ACCEL_DEVICE_CAP_PINNED_MEMORY:
      return "pinned_memory";
    case ACCEL_DEVICE_CAP_PEER_ACCESS:
      return "peer_access";
    case ACCEL_DEVICE_CAP_EVENT_TIMING:
      return "event_timing";
    case ACCEL_DEVICE_CAP_KERNELS:
      return "kernels";
    case ACCEL_DEVICE_CAP_GRAPHS:
      return "graphs";
    case ACCEL_DEVICE_CAP_HOST_ACCESSIBLE:
      return "host_accessible";
    case ACCEL_DEVICE_CAP_SEPARATE_ALLOCATIONS:
      return "separate_allocations";
    default:
      return NULL;
  }
}
