// SPDX-License-Identifier: MIT
//
// The OpenCL objects behind the plugin's handles (native_handle, ABI 1.4),
// for code that calls OpenCL itself next to accel: the device's
// cl_device_id and the cl_context it shares with its platform's devices,
// a stream's in-order cl_command_queue, the marker cl_event of an event's
// latest record, and the cl_mem of an allocation. None is retained for the
// caller: each stays the plugin's and lives as long as the accel handle
// (the marker only until the next record), so a caller that keeps one
// longer retains it (clRetainEvent, clRetainMemObject, ...).
//
// OpenCL memory has no address, so the plugin has no mem_address or
// mem_wrap (ABI 1.3), and no host_register: OpenCL cannot page-lock memory
// it did not allocate (a CL_MEM_USE_HOST_PTR buffer may cache the bytes on
// the device, so the caller's later writes are not seen without a map),
// which leaves the core to record registered ranges only.
#include "accel_opencl.h"

accel_status_t accel_opencl_native_handle(void* device_ptr, uint32_t kind,
                                          void* object, uint64_t* out_handle) {
  accel_opencl_device_t* device = device_ptr;
  switch (kind) {
    case ACCEL_PLUGIN_NATIVE_DEVICE:
      *out_handle = (uint64_t)(uintptr_t)device->id;
      return ACCEL_OK;
    case ACCEL_PLUGIN_NATIVE_CONTEXT:
      *out_handle = (uint64_t)(uintptr_t)device->context;
      return ACCEL_OK;
    case ACCEL_PLUGIN_NATIVE_STREAM:
      *out_handle =
          (uint64_t)(uintptr_t)((accel_opencl_stream_t*)object)->queue;
      return ACCEL_OK;
    case ACCEL_PLUGIN_NATIVE_EVENT:
      *out_handle = (uint64_t)(uintptr_t)accel_opencl_event_native(object);
      return ACCEL_OK;
    case ACCEL_PLUGIN_NATIVE_MEMORY:
      *out_handle = (uint64_t)(uintptr_t)((accel_opencl_mem_t*)object)->mem;
      return ACCEL_OK;
    default:
      *out_handle = 0;
      return device->host->fail(device->host, ACCEL_ERROR_UNSUPPORTED,
                                "opencl:%u: no native object of kind %u",
                                device->index, kind);
  }
}
