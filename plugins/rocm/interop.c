// SPDX-License-Identifier: MIT
//
// What crosses to other HIP libraries: device addresses (mem_address),
// memory another library allocated adopted as accel memory (mem_wrap), the
// runtime objects behind the plugin's handles (native_handle) and host
// memory page-locked for fast copies (host_register).
//
// A wrapped memory handle is the device pointer itself, as for mem_alloc;
// the core never passes it to mem_free. Before adopting an address the
// plugin asks the runtime what it is (hipPointerGetAttributes,
// hipMemGetAddressRange): unknown to HIP, not device memory, memory of
// another device, or a range running past the end of its allocation are
// refused with ACCEL_ERROR_INVALID_ARGUMENT.
//
// hipPointerAttribute_t kept its layout from ROCm 5 to 6 (type, device,
// devicePointer, ...), but the values of its memory type changed: ROCm 5
// has Host 0, Device 1, Array 2, Unified 3, Managed 4; ROCm 6 added
// Unregistered 0 (what it answers, with hipSuccess, for memory it does not
// know, where ROCm 5 fails with hipErrorInvalidValue) and renumbered Host
// 1, Device 2, Managed 3, Array 10, Unified 11. The plugin is compiled
// against one header and runs on whichever runtime it finds, so it reads
// the type as an integer and decodes it by the runtime's version.
#include <string.h>

#include "accel_rocm.h"

accel_status_t accel_rocm_mem_address(void* device_ptr, void* mem,
                                      uint64_t offset, uint64_t* out_address) {
  (void)device_ptr;
  *out_address = (uint64_t)(uintptr_t)mem + offset;
  return ACCEL_OK;
}

// Whether memory type `type` (as the runtime of `version` numbers it) is
// memory of a device: device or managed.
static bool accel_rocm_device_memory(int version, int type) {
  if (version >= 60000000) return type == 2 || type == 3;
  return type == 1 || type == 4;
}

// Checks that [ptr, ptr + size) is memory of `device`. The caller made the
// device current.
static accel_status_t accel_rocm_wrap_check(accel_rocm_device_t* device,
                                            void* ptr, size_t size) {
  const accel_rocm_runtime_t* rt = device->rt;
  const accel_host_t* host = device->host;
  hipPointerAttribute_t attr;
  memset(&attr, 0, sizeof(attr));
  hipError_t err = rt->hipPointerGetAttributes(&attr, ptr);
  int type = (int)attr.memoryType;  // see the top of this file
  bool unknown = err == hipErrorInvalidValue ||
                 (err == hipSuccess && rt->version >= 60000000 && type == 0);
  if (err != hipSuccess) accel_rocm_clear_error(rt);
  if (unknown) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "%s: %p is not memory the HIP runtime knows "
                      "(hipPointerGetAttributes)",
                      device->prefix, ptr);
  }
  if (err != hipSuccess) {
    return accel_rocm_device_fail(device, err, "hipPointerGetAttributes");
  }
  if (!accel_rocm_device_memory(rt->version, type)) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "%s: %p is host memory (HIP memory type %d), not "
                      "device memory (wrap host memory on a cpu device)",
                      device->prefix, ptr, type);
  }
  if (attr.device != (int)device->index) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "%s: %p is memory of HIP device %d, not of this device",
                      device->prefix, ptr, attr.device);
  }
  hipDeviceptr_t base = NULL;
  size_t range = 0;
  err = rt->hipMemGetAddressRange(&base, &range, ptr);
  if (err != hipSuccess) {
    accel_rocm_clear_error(rt);
    return accel_rocm_device_fail(device, err, "hipMemGetAddressRange");
  }
  uintptr_t p = (uintptr_t)ptr, start = (uintptr_t)base;
  if (p < start || size > range || p - start > range - size) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "%s: %zu bytes at %p run past the end of their "
                      "allocation (%zu bytes at %p)",
                      device->prefix, size, ptr, range, base);
  }
  return ACCEL_OK;
}

accel_status_t accel_rocm_mem_wrap(void* device_ptr, uint64_t address,
                                   size_t size, void** out_mem) {
  accel_rocm_device_t* device = device_ptr;
  *out_mem = NULL;
  void* ptr = (void*)(uintptr_t)address;
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  if (status != ACCEL_OK) return status;
  status = accel_rocm_wrap_check(device, ptr, size);
  accel_rocm_device_leave(device, saved);
  if (status == ACCEL_OK) *out_mem = ptr;
  return status;
}

void accel_rocm_mem_unwrap(void* device_ptr, void* mem) {
  (void)device_ptr, (void)mem;  // the memory stays its owner's
}

accel_status_t accel_rocm_native_handle(void* device_ptr, uint32_t kind,
                                        void* object, uint64_t* out_handle) {
  accel_rocm_device_t* device = device_ptr;
  *out_handle = 0;
  switch (kind) {
    case ACCEL_PLUGIN_NATIVE_DEVICE:
      *out_handle = device->index;  // hipDevice_t is the ordinal
      return ACCEL_OK;
    case ACCEL_PLUGIN_NATIVE_STREAM:
      *out_handle = (uint64_t)(uintptr_t)((accel_rocm_stream_t*)object)->stream;
      return ACCEL_OK;
    case ACCEL_PLUGIN_NATIVE_EVENT:
      *out_handle = (uint64_t)(uintptr_t)((accel_rocm_event_t*)object)->event;
      return ACCEL_OK;
    case ACCEL_PLUGIN_NATIVE_MEMORY:
      *out_handle = (uint64_t)(uintptr_t)object;
      return ACCEL_OK;
    case ACCEL_PLUGIN_NATIVE_CONTEXT:
      return device->host->fail(
          device->host, ACCEL_ERROR_UNSUPPORTED,
          "%s: the plugin uses no HIP context (hipCtx_t is deprecated; HIP "
          "work is addressed by device ordinal: ask for the device)",
          device->prefix);
    default:
      return device->host->fail(device->host, ACCEL_ERROR_UNSUPPORTED,
                                "%s: no native object of kind %u",
                                device->prefix, kind);
  }
}

accel_status_t accel_rocm_host_register(void* device_ptr, void* ptr,
                                        size_t size) {
  accel_rocm_device_t* device = device_ptr;
  const accel_rocm_runtime_t* rt = device->rt;
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  if (status != ACCEL_OK) return status;
  // Portable: pinned for every device, as host_alloc's memory is.
  hipError_t err = rt->hipHostRegister(ptr, size, hipHostRegisterPortable);
  if (err != hipSuccess) accel_rocm_clear_error(rt);
  accel_rocm_device_leave(device, saved);
  if (err == hipSuccess) return ACCEL_OK;
  if (err == hipErrorHostMemoryAlreadyRegistered) {
    return device->host->fail(
        device->host, ACCEL_ERROR_INVALID_ARGUMENT,
        "%s: hipHostRegister: %zu bytes at %p overlap memory the runtime "
        "already page-locks (registered by another library, or from "
        "hipHostMalloc / accel_host_alloc)",
        device->prefix, size, ptr);
  }
  if (err == hipErrorOutOfMemory) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              "%s: hipHostRegister of %zu bytes: cannot "
                              "page-lock that much memory",
                              device->prefix, size);
  }
  return accel_rocm_device_fail(device, err, "hipHostRegister");
}

void accel_rocm_host_unregister(void* device_ptr, void* ptr) {
  accel_rocm_device_t* device = device_ptr;
  const accel_rocm_runtime_t* rt = device->rt;
  hipError_t err = rt->hipHostUnregister(ptr);
  if (err != hipSuccess) {
    accel_rocm_clear_error(rt);
    device->host->log(device->host, ACCEL_LOG_WARN,
                      "%s: hipHostUnregister(%p): %s", device->prefix, ptr,
                      rt->hipGetErrorName(err));
  }
}
