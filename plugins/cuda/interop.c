// SPDX-License-Identifier: MIT
//
// What crosses to other CUDA libraries: device addresses (mem_address),
// memory another library allocated adopted as accel memory (mem_wrap), the
// driver objects behind the plugin's handles (native_handle) and host
// memory page-locked for fast copies (host_register).
//
// A wrapped memory handle is the CUdeviceptr itself, as for mem_alloc, so
// every copy, op and launch takes it unchanged; the core never passes it
// to mem_free. Before adopting an address the plugin asks the driver
// (cuPointerGetAttribute) what it is: unknown to CUDA, page-locked host
// memory, memory of another device or of another context than the primary
// one the plugin runs in, or a range running past the end of its
// allocation are refused with ACCEL_ERROR_INVALID_ARGUMENT.
#include <stdio.h>

#include "accel_cuda.h"

accel_status_t accel_cuda_mem_address(void* device_ptr, void* mem,
                                      uint64_t offset, uint64_t* out_address) {
  (void)device_ptr;
  *out_address = (uint64_t)accel_cuda_ptr(mem, offset);
  return ACCEL_OK;
}

// One pointer attribute of `ptr`, or the driver's error.
static CUresult accel_cuda_attr(const accel_cuda_device_t* device, void* data,
                                CUpointer_attribute attr, CUdeviceptr ptr) {
  return device->cu->cuPointerGetAttribute(data, attr, ptr);
}

// Checks that [ptr, ptr + size) is memory of `device` the plugin can use:
// device (or managed) memory, of this device, in its primary context, and
// inside one allocation. The caller has pushed the context.
static accel_status_t accel_cuda_wrap_check(accel_cuda_device_t* device,
                                            CUdeviceptr ptr, size_t size) {
  const accel_host_t* host = device->host;
  unsigned int type = 0;
  CUresult r =
      accel_cuda_attr(device, &type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr);
  if (r == CUDA_ERROR_INVALID_VALUE) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "%s: 0x%llx is not memory the CUDA driver knows "
                      "(cuPointerGetAttribute: CUDA_ERROR_INVALID_VALUE)",
                      device->prefix, (unsigned long long)ptr);
  }
  if (r != CUDA_SUCCESS) {
    return accel_cuda_device_fail(device, r, "cuPointerGetAttribute");
  }
  if (type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "%s: 0x%llx is %s, not device memory (wrap host "
                      "memory on a cpu device)",
                      device->prefix, (unsigned long long)ptr,
                      type == CU_MEMORYTYPE_HOST ? "page-locked host memory"
                                                 : "not device memory");
  }
  int ordinal = -1;
  r = accel_cuda_attr(device, &ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                      ptr);
  if (r != CUDA_SUCCESS) {
    return accel_cuda_device_fail(device, r, "cuPointerGetAttribute");
  }
  if (ordinal != (int)device->dev) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "%s: 0x%llx is memory of CUDA device %d, not of this "
                      "device (CUdevice %d)",
                      device->prefix, (unsigned long long)ptr, ordinal,
                      (int)device->dev);
  }
  CUcontext ctx = NULL;
  r = accel_cuda_attr(device, &ctx, CU_POINTER_ATTRIBUTE_CONTEXT, ptr);
  if (r != CUDA_SUCCESS) {
    return accel_cuda_device_fail(device, r, "cuPointerGetAttribute");
  }
  // NULL for allocations that belong to no context (cuMemCreate/cuMemMap).
  if (ctx != NULL && ctx != device->ctx) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "%s: 0x%llx was allocated in another CUDA context than "
                      "the device's primary context, which accel uses",
                      device->prefix, (unsigned long long)ptr);
  }
  CUdeviceptr start = 0;
  size_t range = 0;
  r = accel_cuda_attr(device, &start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                      ptr);
  if (r == CUDA_SUCCESS) {
    r = accel_cuda_attr(device, &range, CU_POINTER_ATTRIBUTE_RANGE_SIZE, ptr);
  }
  if (r != CUDA_SUCCESS) {
    return accel_cuda_device_fail(device, r, "cuPointerGetAttribute");
  }
  if (ptr < start || size > range || ptr - start > range - size) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "%s: %zu bytes at 0x%llx run past the end of their "
                      "allocation (%zu bytes at 0x%llx)",
                      device->prefix, size, (unsigned long long)ptr, range,
                      (unsigned long long)start);
  }
  return ACCEL_OK;
}

accel_status_t accel_cuda_mem_wrap(void* device_ptr, uint64_t address,
                                   size_t size, void** out_mem) {
  accel_cuda_device_t* device = device_ptr;
  *out_mem = NULL;
  accel_status_t status = accel_cuda_context_push(device, "mem_wrap");
  if (status != ACCEL_OK) return status;
  status = accel_cuda_wrap_check(device, (CUdeviceptr)address, size);
  accel_cuda_context_pop(device);
  if (status == ACCEL_OK) *out_mem = (void*)(uintptr_t)address;
  return status;
}

void accel_cuda_mem_unwrap(void* device_ptr, void* mem) {
  (void)device_ptr, (void)mem;  // the memory stays its owner's
}

accel_status_t accel_cuda_native_handle(void* device_ptr, uint32_t kind,
                                        void* object, uint64_t* out_handle) {
  accel_cuda_device_t* device = device_ptr;
  switch (kind) {
    case ACCEL_PLUGIN_NATIVE_DEVICE:
      *out_handle = (uint64_t)(uint32_t)device->dev;
      return ACCEL_OK;
    case ACCEL_PLUGIN_NATIVE_CONTEXT:
      *out_handle = (uint64_t)(uintptr_t)device->ctx;
      return ACCEL_OK;
    case ACCEL_PLUGIN_NATIVE_STREAM:
      *out_handle = (uint64_t)(uintptr_t)((accel_cuda_stream_t*)object)->stream;
      return ACCEL_OK;
    case ACCEL_PLUGIN_NATIVE_EVENT:
      *out_handle = (uint64_t)(uintptr_t)((accel_cuda_event_t*)object)->event;
      return ACCEL_OK;
    case ACCEL_PLUGIN_NATIVE_MEMORY:
      *out_handle = (uint64_t)accel_cuda_ptr(object, 0);
      return ACCEL_OK;
    default:
      *out_handle = 0;
      return device->host->fail(device->host, ACCEL_ERROR_UNSUPPORTED,
                                "%s: no native object of kind %u",
                                device->prefix, kind);
  }
}

accel_status_t accel_cuda_host_register(void* device_ptr, void* ptr,
                                        size_t size) {
  accel_cuda_device_t* device = device_ptr;
  accel_status_t status = accel_cuda_context_push(device, "host_register");
  if (status != ACCEL_OK) return status;
  // PORTABLE: pinned for every context, as host_alloc's memory is.
  CUresult r =
      device->cu->cuMemHostRegister(ptr, size, CU_MEMHOSTREGISTER_PORTABLE);
  accel_cuda_context_pop(device);
  switch (r) {
    case CUDA_SUCCESS:
      return ACCEL_OK;
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
      return device->host->fail(
          device->host, ACCEL_ERROR_INVALID_ARGUMENT,
          "%s: cuMemHostRegister: %zu bytes at %p overlap memory the driver "
          "already page-locks (registered by another library, or from "
          "cuMemHostAlloc / accel_host_alloc)",
          device->prefix, size, ptr);
    case CUDA_ERROR_OUT_OF_MEMORY:
      return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                                "%s: cuMemHostRegister of %zu bytes: cannot "
                                "page-lock that much memory",
                                device->prefix, size);
    default:
      return accel_cuda_device_fail(device, r, "cuMemHostRegister");
  }
}

void accel_cuda_host_unregister(void* device_ptr, void* ptr) {
  accel_cuda_device_t* device = device_ptr;
  if (accel_cuda_context_push(device, "host_unregister") != ACCEL_OK) return;
  CUresult r = device->cu->cuMemHostUnregister(ptr);
  accel_cuda_context_pop(device);
  if (r != CUDA_SUCCESS) {
    device->host->log(device->host, ACCEL_LOG_WARN,
                      "%s: cuMemHostUnregister(%p): error %d", device->prefix,
                      ptr, (int)r);
  }
}
