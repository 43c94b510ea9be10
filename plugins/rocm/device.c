// SPDX-License-Identifier: MIT
//
// ROCm devices: open/close, properties and memory information.
//
// Properties come from hipDeviceGetAttribute, not hipDeviceProp_t, whose
// layout changed in ROCm 6 (hipDeviceProp_tR0600). The attribute values
// are those of the headers the plugin was built with; ROCm 6 renumbered
// part of hipDeviceAttribute_t, so they are used only when the runtime's
// major version is the headers' one. The architecture name has no
// attribute: it is read from gcnArchName of the R0000 layout, which ROCm 6
// still fills through hipGetDevicePropertiesR0000 and ROCm 5 through
// hipGetDeviceProperties (runtime.c); with a newer runtime the few numbers
// come from that same R0000 struct.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_rocm.h"

accel_status_t accel_rocm_device_fail(const accel_rocm_device_t* device,
                                      hipError_t error, const char* what) {
  return accel_rocm_fail(device->host, device->rt, error, device->prefix, what);
}

// `saved` of accel_rocm_device_enter when the device was already current.
#define ACCEL_ROCM_NOTHING_SAVED (-1)

accel_status_t accel_rocm_device_enter(accel_rocm_device_t* device,
                                       int* out_saved) {
  const accel_rocm_runtime_t* rt = device->rt;
  *out_saved = ACCEL_ROCM_NOTHING_SAVED;
  int current = 0;
  hipError_t err = rt->hipGetDevice(&current);
  if (err != hipSuccess) {
    return accel_rocm_device_fail(device, err, "hipGetDevice");
  }
  if (current == (int)device->index) return ACCEL_OK;
  err = rt->hipSetDevice((int)device->index);
  if (err != hipSuccess) {
    return accel_rocm_device_fail(device, err, "hipSetDevice");
  }
  *out_saved = current;
  return ACCEL_OK;
}

void accel_rocm_device_leave(const accel_rocm_device_t* device, int saved) {
  if (saved == ACCEL_ROCM_NOTHING_SAVED) return;
  hipError_t err = device->rt->hipSetDevice(saved);
  if (err != hipSuccess) {
    device->host->log(device->host, ACCEL_LOG_WARN,
                      "%s: giving the thread back its device %d: %s",
                      device->prefix, saved, device->rt->hipGetErrorName(err));
  }
}

void accel_rocm_clear_error(const accel_rocm_runtime_t* rt) {
  (void)rt->hipGetLastError();
}

// Copies gcnArchName into `arch_full` and its processor part into `arch`.
static void accel_rocm_device_arch(accel_rocm_device_t* device,
                                   const char* gcn) {
  snprintf(device->arch_full, sizeof(device->arch_full), "%.63s", gcn);
  snprintf(device->arch, sizeof(device->arch), "%.63s", gcn);
  char* colon = strchr(device->arch, ':');  // "gfx90a:sramecc+:xnack-"
  if (colon != NULL) *colon = '\0';
}

// Reads the R0000 properties (gcnArchName, and the numbers when the
// attribute enum cannot be trusted).
static accel_status_t accel_rocm_device_read(accel_rocm_device_t* device) {
  const accel_rocm_runtime_t* rt = device->rt;
  int dev = (int)device->index;
  // Room beyond the struct in case a runtime writes a longer R0000 tail.
  size_t size = sizeof(hipDeviceProp_t) + 4096;
  hipDeviceProp_t* props = calloc(1, size);
  if (props == NULL) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              "%s: device properties", device->prefix);
  }
  hipError_t err = rt->get_props(props, dev);
  if (err != hipSuccess) {
    free(props);
    return accel_rocm_device_fail(device, err, "hipGetDeviceProperties");
  }
  props->gcnArchName[sizeof(props->gcnArchName) - 1] = '\0';
  accel_rocm_device_arch(device, props->gcnArchName);
  // Fields of the stable R0000 layout (ABI 1.3 props).
  device->max_shared = props->sharedMemPerBlock;
  for (int i = 0; i < 3; i++) {
    device->max_grid[i] =
        props->maxGridSize[i] > 0 ? (uint32_t)props->maxGridSize[i] : 0;
  }
  bool same_abi = rt->version / 10000000 == HIP_VERSION_MAJOR;
  int cu = 0, threads = 0, warp = 0;
  if (same_abi &&
      rt->hipDeviceGetAttribute(&cu, hipDeviceAttributeMultiprocessorCount,
                                dev) == hipSuccess &&
      rt->hipDeviceGetAttribute(&threads, hipDeviceAttributeMaxThreadsPerBlock,
                                dev) == hipSuccess &&
      rt->hipDeviceGetAttribute(&warp, hipDeviceAttributeWarpSize, dev) ==
          hipSuccess) {
    device->compute_units = (uint32_t)cu;
    device->max_threads_per_block = (uint32_t)threads;
    device->warp_size = (uint32_t)warp;
  } else {
    device->compute_units = (uint32_t)props->multiProcessorCount;
    device->max_threads_per_block = (uint32_t)props->maxThreadsPerBlock;
    device->warp_size = (uint32_t)props->warpSize;
  }
  free(props);
  size_t total = 0;
  err = rt->hipDeviceTotalMem(&total, dev);
  if (err != hipSuccess) {
    return accel_rocm_device_fail(device, err, "hipDeviceTotalMem");
  }
  device->total_memory = total;
  err = rt->hipDeviceGetName(device->name, (int)sizeof(device->name), dev);
  if (err != hipSuccess) {
    return accel_rocm_device_fail(device, err, "hipDeviceGetName");
  }
  device->name[sizeof(device->name) - 1] = '\0';
  if (rt->hipDeviceGetPCIBusId(device->pci_bus_id,
                               (int)sizeof(device->pci_bus_id),
                               dev) != hipSuccess) {
    device->pci_bus_id[0] = '\0';  // optional information
  }
  device->pci_bus_id[sizeof(device->pci_bus_id) - 1] = '\0';
  // The capability says what hipDeviceCanAccessPeer says, not the count.
  for (int peer = 0; peer < rt->device_count && !device->peer_any; peer++) {
    int can = 0;
    if (peer != dev &&
        rt->hipDeviceCanAccessPeer(&can, dev, peer) == hipSuccess) {
      device->peer_any = can != 0;
    }
  }
  return ACCEL_OK;
}

accel_status_t accel_rocm_device_open(void* plugin_ptr, uint32_t index,
                                      void** out_device) {
  accel_rocm_plugin_t* plugin = plugin_ptr;
  const accel_host_t* host = plugin->host;
  *out_device = NULL;
  const accel_rocm_runtime_t* rt = NULL;
  accel_status_t status = accel_rocm_plugin_runtime(plugin, &rt);
  if (status != ACCEL_OK) return status;
  if (index >= (uint32_t)rt->device_count) {
    return host->fail(host, ACCEL_ERROR_NOT_FOUND,
                      "rocm:%u: backend rocm has %d device(s)", index,
                      rt->device_count);
  }
  accel_rocm_device_t* device = calloc(1, sizeof(*device));
  if (device == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "rocm:%u: device state",
                      index);
  }
  if (pthread_mutex_init(&device->mutex, NULL) != 0) {
    free(device);
    return host->fail(host, ACCEL_ERROR_INTERNAL, "rocm:%u: mutex", index);
  }
  if (accel_rocm_blas_slot_init(&device->blas) != ACCEL_OK) {
    pthread_mutex_destroy(&device->mutex);
    free(device);
    return host->fail(host, ACCEL_ERROR_INTERNAL, "rocm:%u: mutex", index);
  }
  device->plugin = plugin;
  device->host = host;
  device->rt = rt;
  device->index = index;
  atomic_init(&device->blas_failed, false);
  snprintf(device->prefix, sizeof(device->prefix), "rocm:%u", index);
  int saved = 0;
  status = accel_rocm_device_enter(device, &saved);
  if (status == ACCEL_OK) {
    status = accel_rocm_device_read(device);
    accel_rocm_device_leave(device, saved);
  }
  if (status != ACCEL_OK) {
    pthread_mutex_destroy(&device->blas.lock);
    pthread_mutex_destroy(&device->mutex);
    free(device);
    return status;
  }
  host->log(host, ACCEL_LOG_DEBUG, "%s: %s (%s, %u CUs)", device->prefix,
            device->name, device->arch_full, device->compute_units);
  *out_device = device;
  return ACCEL_OK;
}

void accel_rocm_device_close(void* device_ptr) {
  accel_rocm_device_t* device = device_ptr;
  if (device == NULL) return;
  accel_rocm_builtin_release(device);
  int saved = 0;
  bool entered = accel_rocm_device_enter(device, &saved) == ACCEL_OK;
  accel_rocm_blas_slot_deinit(device, &device->blas, false);
  accel_rocm_blas_pool_drain(device);
  if (entered) accel_rocm_device_leave(device, saved);
  pthread_mutex_destroy(&device->mutex);
  free(device);
}

// Writes `src` into the props string `field` when it fits the caller's
// struct. Truncates; always NUL-terminates.
#define ACCEL_ROCM_PROPS_STRING(props, field, src)                           \
  do {                                                                       \
    if (ACCEL_PLUGIN_HAS_FIELD(props, accel_plugin_device_props_t, field)) { \
      snprintf((props)->field, sizeof((props)->field), "%s", (src));         \
    }                                                                        \
  } while (0)

// Writes a scalar props field when it fits in the caller's struct.
#define ACCEL_ROCM_PROPS_SET(props, field, value)                          \
  do {                                                                     \
    if (ACCEL_PLUGIN_HAS_FIELD(props, accel_plugin_device_props_t, field)) \
      (props)->field = (value);                                            \
  } while (0)

accel_status_t accel_rocm_device_query_props(
    void* device_ptr, accel_plugin_device_props_t* props) {
  const accel_rocm_device_t* device = device_ptr;
  const accel_rocm_runtime_t* rt = device->rt;
  accel_device_caps_t caps = ACCEL_DEVICE_CAP_F16 | ACCEL_DEVICE_CAP_BF16 |
                             ACCEL_DEVICE_CAP_PINNED_MEMORY |
                             ACCEL_DEVICE_CAP_EVENT_TIMING |
                             ACCEL_DEVICE_CAP_KERNELS;
  if (device->peer_any) caps |= ACCEL_DEVICE_CAP_PEER_ACCESS;
  char version[64];
  snprintf(version, sizeof(version), "HIP %d.%d.%d, driver %d",
           rt->version / 10000000, rt->version / 100000 % 100,
           rt->version % 100000, rt->driver_version);
  char features[256];
  snprintf(features, sizeof(features), "gcnArchName=%s hiprtc=%s",
           device->arch_full, rt->has_rtc ? "yes" : "no");
  char target[64];
  snprintf(target, sizeof(target), "amdgcn-%.56s", device->arch);
  ACCEL_ROCM_PROPS_SET(props, type, ACCEL_DEVICE_TYPE_GPU);
  ACCEL_ROCM_PROPS_STRING(props, name, device->name);
  ACCEL_ROCM_PROPS_STRING(props, vendor, "AMD");
  ACCEL_ROCM_PROPS_STRING(props, arch, device->arch);
  ACCEL_ROCM_PROPS_SET(props, total_memory, device->total_memory);
  ACCEL_ROCM_PROPS_SET(props, compute_units, device->compute_units);
  ACCEL_ROCM_PROPS_SET(props, max_threads_per_block,
                       device->max_threads_per_block);
  ACCEL_ROCM_PROPS_SET(props, simd_width, device->warp_size);
  ACCEL_ROCM_PROPS_SET(props, caps, caps);
  ACCEL_ROCM_PROPS_STRING(props, pci_bus_id, device->pci_bus_id);
  ACCEL_ROCM_PROPS_STRING(props, features, features);
  ACCEL_ROCM_PROPS_STRING(props, driver_version, version);
  ACCEL_ROCM_PROPS_STRING(props, module_target, target);
  // ABI 1.3. hipMalloc documents no per-allocation limit below the device
  // memory; LDS has no opt-in on AMD GPUs (sharedMemPerBlock is the most a
  // launch gets); memory handles are device pointers (any offset).
  char platform[64];
  snprintf(platform, sizeof(platform), "AMD ROCm/HIP %d.%d.%d",
           rt->version / 10000000, rt->version / 100000 % 100,
           rt->version % 100000);
  ACCEL_ROCM_PROPS_SET(props, max_alloc_size, device->total_memory);
  ACCEL_ROCM_PROPS_SET(props, max_shared_mem_bytes, device->max_shared);
  ACCEL_ROCM_PROPS_SET(props, buffer_offset_alignment, 0);
  if (ACCEL_PLUGIN_HAS_FIELD(props, accel_plugin_device_props_t, max_grid)) {
    memcpy(props->max_grid, device->max_grid, sizeof(props->max_grid));
  }
  ACCEL_ROCM_PROPS_STRING(props, platform, platform);
  return ACCEL_OK;
}

accel_status_t accel_rocm_device_mem_info(void* device_ptr, uint64_t* out_free,
                                          uint64_t* out_total) {
  accel_rocm_device_t* device = device_ptr;
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  if (status != ACCEL_OK) return status;
  size_t free_bytes = 0, total = 0;
  hipError_t err = device->rt->hipMemGetInfo(&free_bytes, &total);
  accel_rocm_device_leave(device, saved);
  if (err != hipSuccess) {
    return accel_rocm_device_fail(device, err, "hipMemGetInfo");
  }
  *out_free = free_bytes;
  *out_total = total;
  return ACCEL_OK;
}

accel_status_t accel_rocm_device_can_access_peer(void* device_ptr,
                                                 void* peer_ptr,
                                                 bool* out_can) {
  accel_rocm_device_t* device = device_ptr;
  const accel_rocm_device_t* peer = peer_ptr;
  *out_can = false;
  if (device == peer) return ACCEL_OK;
  // A pure query: access is enabled at the first copy between the pair
  // (accel_rocm_peer_enable in memory.c).
  int can = 0;
  hipError_t err = device->rt->hipDeviceCanAccessPeer(&can, (int)device->index,
                                                      (int)peer->index);
  if (err != hipSuccess) {
    return accel_rocm_device_fail(device, err, "hipDeviceCanAccessPeer");
  }
  *out_can = can != 0;
  return ACCEL_OK;
}
