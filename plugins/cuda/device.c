// SPDX-License-Identifier: MIT
//
// CUDA devices: opening the driver at the first device_count, primary
// contexts, properties and memory information.
//
// Only primary contexts are used (the one the CUDA runtime, cuBLAS and
// every framework share), retained at device_open and released at
// device_close, so accel interoperates with other CUDA code in the
// process.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_cuda.h"

accel_status_t accel_cuda_device_count(void* plugin_ptr, uint32_t* out_count) {
  accel_cuda_plugin_t* plugin = plugin_ptr;
  const accel_host_t* host = plugin->host;
  *out_count = 0;
  pthread_mutex_lock(&plugin->mutex);
  if (!plugin->driver_tried) {
    plugin->driver_tried = true;
    bool no_device = false;
    accel_cuda_driver_t* cu = &plugin->driver;
    plugin->driver_status =
        accel_cuda_driver_open(host, cu, &no_device, plugin->driver_error,
                               sizeof(plugin->driver_error));
    if (plugin->driver_status == ACCEL_OK && no_device) {
      host->log(host, ACCEL_LOG_INFO, "%s", plugin->driver_error);
    } else if (plugin->driver_status == ACCEL_OK) {
      int count = 0;
      CUresult r = cu->cuDeviceGetCount(&count);
      if (r != CUDA_SUCCESS) {
        char text[256];
        accel_cuda_describe(cu, r, text, sizeof(text));
        snprintf(plugin->driver_error, sizeof(plugin->driver_error),
                 "cuDeviceGetCount: %s", text);
        plugin->driver_status = ACCEL_ERROR_UNAVAILABLE;
      } else {
        if ((uint32_t)count > ACCEL_CUDA_MAX_DEVICES) {
          host->log(host, ACCEL_LOG_WARN,
                    "%d devices; only the first %u are used", count,
                    ACCEL_CUDA_MAX_DEVICES);
          count = (int)ACCEL_CUDA_MAX_DEVICES;
        }
        plugin->device_count = (uint32_t)count;
        host->log(host, ACCEL_LOG_DEBUG,
                  "driver %s (CUDA %d), %d "
                  "device(s)",
                  cu->path, cu->version, count);
      }
    }
  }
  accel_status_t status = plugin->driver_status;
  uint32_t count = plugin->device_count;
  pthread_mutex_unlock(&plugin->mutex);
  if (status != ACCEL_OK) {
    return host->fail(host, status, "%s", plugin->driver_error);
  }
  *out_count = count;
  return ACCEL_OK;
}

accel_status_t accel_cuda_device_fail(const accel_cuda_device_t* device,
                                      CUresult result, const char* call) {
  return accel_cuda_fail(device->host, device->cu, result, device->prefix,
                         call);
}

accel_status_t accel_cuda_context_push(accel_cuda_device_t* device,
                                       const char* what) {
  CUresult r = device->cu->cuCtxPushCurrent(device->ctx);
  if (r != CUDA_SUCCESS) {
    char call[96];
    snprintf(call, sizeof(call), "%s: cuCtxPushCurrent", what);
    return accel_cuda_device_fail(device, r, call);
  }
  return ACCEL_OK;
}

void accel_cuda_context_pop(accel_cuda_device_t* device) {
  CUcontext popped = NULL;
  (void)device->cu->cuCtxPopCurrent(&popped);
}

// Reads one integer attribute; 0 when the driver does not know it.
static int accel_cuda_attr(const accel_cuda_device_t* device,
                           CUdevice_attribute attr) {
  int value = 0;
  if (device->cu->cuDeviceGetAttribute(&value, attr, device->dev) !=
      CUDA_SUCCESS) {
    return 0;
  }
  return value;
}

// Reads the static properties of `device` (dev set) into its fields.
static accel_status_t accel_cuda_device_read(accel_cuda_device_t* device) {
  const accel_cuda_driver_t* cu = device->cu;
  CUresult r =
      cu->cuDeviceGetName(device->name, sizeof(device->name), device->dev);
  if (r != CUDA_SUCCESS)
    return accel_cuda_device_fail(device, r, "cuDeviceGetName");
  size_t total = 0;
  r = cu->cuDeviceTotalMem(&total, device->dev);
  if (r != CUDA_SUCCESS)
    return accel_cuda_device_fail(device, r, "cuDeviceTotalMem");
  device->total_memory = total;
  device->sm_major =
      accel_cuda_attr(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  device->sm_minor =
      accel_cuda_attr(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  snprintf(device->arch, sizeof(device->arch), "sm_%d%d", device->sm_major,
           device->sm_minor);
  device->sms = (uint32_t)accel_cuda_attr(
      device, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  device->warp_size =
      (uint32_t)accel_cuda_attr(device, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  device->max_threads_per_block = (uint32_t)accel_cuda_attr(
      device, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  device->max_shared = (uint32_t)accel_cuda_attr(
      device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  device->max_shared_optin = (uint32_t)accel_cuda_attr(
      device, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  static const CUdevice_attribute grid[3] = {
      CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
      CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
  for (int i = 0; i < 3; i++) {
    device->max_grid[i] = (uint32_t)accel_cuda_attr(device, grid[i]);
  }
  CUuuid uuid;
  if (cu->cuDeviceGetUuid(&uuid, device->dev) == CUDA_SUCCESS) {
    memcpy(device->uuid, uuid.bytes, sizeof(device->uuid));
  }
  if (cu->cuDeviceGetPCIBusId(device->pci_bus_id,
                              (int)sizeof(device->pci_bus_id),
                              device->dev) != CUDA_SUCCESS) {
    device->pci_bus_id[0] = '\0';
  }
  // Every CUDA device of sm_75 or newer (the oldest this toolkit targets)
  // does f16; BF16 and TF32 arithmetic arrived with sm_80 (Ampere).
  accel_device_caps_t caps =
      ACCEL_DEVICE_CAP_F16 | ACCEL_DEVICE_CAP_PINNED_MEMORY |
      ACCEL_DEVICE_CAP_EVENT_TIMING | ACCEL_DEVICE_CAP_KERNELS;
  if (device->sm_major >= 8) {
    caps |= ACCEL_DEVICE_CAP_BF16 | ACCEL_DEVICE_CAP_TF32;
  }
  uint32_t count = device->plugin->device_count;
  for (uint32_t i = 0; i < count; i++) {
    CUdevice peer;
    int can = 0;
    if (i != device->index && cu->cuDeviceGet(&peer, (int)i) == CUDA_SUCCESS &&
        cu->cuDeviceCanAccessPeer(&can, device->dev, peer) == CUDA_SUCCESS &&
        can) {
      caps |= ACCEL_DEVICE_CAP_PEER_ACCESS;
      break;
    }
  }
  device->caps = caps;
  return ACCEL_OK;
}

accel_status_t accel_cuda_device_open(void* plugin_ptr, uint32_t index,
                                      void** out_device) {
  accel_cuda_plugin_t* plugin = plugin_ptr;
  const accel_host_t* host = plugin->host;
  *out_device = NULL;
  uint32_t count = 0;
  accel_status_t status = accel_cuda_device_count(plugin, &count);
  if (status != ACCEL_OK) return status;
  if (index >= count) {
    return host->fail(host, ACCEL_ERROR_NOT_FOUND,
                      "cuda:%u: backend cuda has %u device(s)", index, count);
  }
  accel_cuda_device_t* device = calloc(1, sizeof(*device));
  if (device == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "cuda:%u: device state",
                      index);
  }
  if (pthread_mutex_init(&device->mutex, NULL) != 0) {
    free(device);
    return host->fail(host, ACCEL_ERROR_INTERNAL, "cuda:%u: mutex init", index);
  }
  device->plugin = plugin;
  device->host = host;
  device->cu = &plugin->driver;
  device->index = index;
  atomic_init(&device->ops_ready, false);
  snprintf(device->prefix, sizeof(device->prefix), "cuda:%u", index);
  const accel_cuda_driver_t* cu = device->cu;
  CUresult r = cu->cuDeviceGet(&device->dev, (int)index);
  if (r != CUDA_SUCCESS) {
    status = accel_cuda_device_fail(device, r, "cuDeviceGet");
  } else if ((r = cu->cuDevicePrimaryCtxRetain(&device->ctx, device->dev)) !=
             CUDA_SUCCESS) {
    device->ctx = NULL;
    status = accel_cuda_device_fail(device, r, "cuDevicePrimaryCtxRetain");
  } else {
    status = accel_cuda_device_read(device);
  }
  if (status == ACCEL_OK) {
    status = accel_cuda_context_push(device, "device_open");
    if (status == ACCEL_OK) {
      r = cu->cuStreamCreate(&device->sync_stream, CU_STREAM_NON_BLOCKING);
      accel_cuda_context_pop(device);
      if (r != CUDA_SUCCESS) {
        device->sync_stream = NULL;
        status = accel_cuda_device_fail(device, r, "cuStreamCreate");
      }
    }
  }
  if (status != ACCEL_OK) {
    if (device->ctx != NULL) (void)cu->cuDevicePrimaryCtxRelease(device->dev);
    pthread_mutex_destroy(&device->mutex);
    free(device);
    return status;
  }
  host->log(host, ACCEL_LOG_DEBUG, "device %u: %s (%s, %u SMs)", index,
            device->name, device->arch, device->sms);
  *out_device = device;
  return ACCEL_OK;
}

CUstream accel_cuda_stream_of(const accel_cuda_device_t* device, void* stream) {
  return stream != NULL ? ((accel_cuda_stream_t*)stream)->stream
                        : device->sync_stream;
}

void accel_cuda_device_close(void* device_ptr) {
  accel_cuda_device_t* device = device_ptr;
  if (device == NULL) return;
  if (accel_cuda_context_push(device, "device_close") == ACCEL_OK) {
    if (device->ops_module != NULL) accel_cuda_ops_unload(device);
    accel_cuda_gemm_pool_drain(device);
    (void)device->cu->cuStreamSynchronize(device->sync_stream);
    (void)device->cu->cuStreamDestroy(device->sync_stream);
    accel_cuda_context_pop(device);
  }
  (void)device->cu->cuDevicePrimaryCtxRelease(device->dev);
  pthread_mutex_destroy(&device->mutex);
  free(device);
}

// Writes `src` into the props string `field` when it fits in the caller's
// struct. Truncates; always NUL-terminates.
#define ACCEL_CUDA_PROPS_STRING(props, field, src)                           \
  do {                                                                       \
    if (ACCEL_PLUGIN_HAS_FIELD(props, accel_plugin_device_props_t, field)) { \
      snprintf((props)->field, sizeof((props)->field), "%s", (src));         \
    }                                                                        \
  } while (0)

// Writes a scalar props field when it fits in the caller's struct.
#define ACCEL_CUDA_PROPS_SET(props, field, value)                          \
  do {                                                                     \
    if (ACCEL_PLUGIN_HAS_FIELD(props, accel_plugin_device_props_t, field)) \
      (props)->field = (value);                                            \
  } while (0)

accel_status_t accel_cuda_device_query_props(
    void* device_ptr, accel_plugin_device_props_t* props) {
  const accel_cuda_device_t* device = device_ptr;
  const accel_cuda_driver_t* cu = device->cu;
  char driver[64], features[256], target[64];
  snprintf(driver, sizeof(driver), "CUDA %d.%d", cu->version / 1000,
           (cu->version % 1000) / 10);
  snprintf(target, sizeof(target), "cuda-%s", device->arch);
  const accel_cuda_blas_t* blas = atomic_load(&device->plugin->blas);
  snprintf(features, sizeof(features), "cc=%d.%d cublas=%s", device->sm_major,
           device->sm_minor, blas != NULL ? "loaded" : "unloaded");
  ACCEL_CUDA_PROPS_SET(props, type, ACCEL_DEVICE_TYPE_GPU);
  ACCEL_CUDA_PROPS_STRING(props, name, device->name);
  ACCEL_CUDA_PROPS_STRING(props, vendor, "NVIDIA");
  ACCEL_CUDA_PROPS_STRING(props, arch, device->arch);
  ACCEL_CUDA_PROPS_SET(props, total_memory, device->total_memory);
  ACCEL_CUDA_PROPS_SET(props, compute_units, device->sms);
  ACCEL_CUDA_PROPS_SET(props, max_threads_per_block,
                       device->max_threads_per_block);
  ACCEL_CUDA_PROPS_SET(props, simd_width, device->warp_size);
  ACCEL_CUDA_PROPS_SET(props, caps, device->caps);
  if (ACCEL_PLUGIN_HAS_FIELD(props, accel_plugin_device_props_t, uuid)) {
    memcpy(props->uuid, device->uuid, sizeof(props->uuid));
  }
  ACCEL_CUDA_PROPS_STRING(props, pci_bus_id, device->pci_bus_id);
  ACCEL_CUDA_PROPS_STRING(props, features, features);
  ACCEL_CUDA_PROPS_STRING(props, driver_version, driver);
  ACCEL_CUDA_PROPS_STRING(props, module_target, target);
  // ABI 1.3. cuMemAlloc documents no per-allocation limit below the
  // device's memory; a launch's dynamic shared memory may go up to the
  // opt-in limit (module.c opts in); memory handles are device pointers,
  // so any byte offset launches.
  char platform[64];
  snprintf(platform, sizeof(platform), "NVIDIA CUDA %d.%d", cu->version / 1000,
           (cu->version % 1000) / 10);
  ACCEL_CUDA_PROPS_SET(props, max_alloc_size, device->total_memory);
  ACCEL_CUDA_PROPS_SET(props, max_shared_mem_bytes,
                       device->max_shared_optin != 0 ? device->max_shared_optin
                                                     : device->max_shared);
  ACCEL_CUDA_PROPS_SET(props, buffer_offset_alignment, 0);
  if (ACCEL_PLUGIN_HAS_FIELD(props, accel_plugin_device_props_t, max_grid)) {
    memcpy(props->max_grid, device->max_grid, sizeof(props->max_grid));
  }
  ACCEL_CUDA_PROPS_STRING(props, platform, platform);
  return ACCEL_OK;
}

accel_status_t accel_cuda_device_mem_info(void* device_ptr, uint64_t* out_free,
                                          uint64_t* out_total) {
  accel_cuda_device_t* device = device_ptr;
  accel_status_t status = accel_cuda_context_push(device, "mem_info");
  if (status != ACCEL_OK) return status;
  size_t free_bytes = 0, total = 0;
  CUresult r = device->cu->cuMemGetInfo(&free_bytes, &total);
  accel_cuda_context_pop(device);
  if (r != CUDA_SUCCESS)
    return accel_cuda_device_fail(device, r, "cuMemGetInfo");
  *out_free = free_bytes;
  *out_total = total;
  return ACCEL_OK;
}

accel_status_t accel_cuda_device_can_access_peer(void* device_ptr,
                                                 void* peer_ptr,
                                                 bool* out_can) {
  accel_cuda_device_t* device = device_ptr;
  const accel_cuda_device_t* peer = peer_ptr;
  *out_can = false;
  if (device == peer) return ACCEL_OK;
  int can = 0;
  CUresult r = device->cu->cuDeviceCanAccessPeer(&can, device->dev, peer->dev);
  if (r != CUDA_SUCCESS) {
    return accel_cuda_device_fail(device, r, "cuDeviceCanAccessPeer");
  }
  *out_can = can != 0;
  return ACCEL_OK;
}
