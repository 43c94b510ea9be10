// SPDX-License-Identifier: MIT
//
// Device memory, pinned host memory, copies and memset. The memory handle
// is the device pointer itself. A NULL stream means "now": the work is
// issued on the null stream and waited for, so it is finished when the
// call returns (plugin.h); the plugin's own streams are non-blocking, so
// this never waits for them.
#include "accel_rocm.h"

#define ACCEL_ROCM_AT(p, offset) ((unsigned char*)(p) + (offset))
#define ACCEL_ROCM_AT_CONST(p, offset) ((const unsigned char*)(p) + (offset))

accel_status_t accel_rocm_mem_alloc(void* device_ptr, size_t size,
                                    void** out_mem) {
  accel_rocm_device_t* device = device_ptr;
  *out_mem = NULL;
  accel_status_t status = accel_rocm_device_use(device);
  if (status != ACCEL_OK) return status;
  void* mem = NULL;
  hipError_t err = device->rt->hipMalloc(&mem, size);
  if (err != hipSuccess)
    return accel_rocm_device_fail(device, err, "hipMalloc");
  *out_mem = mem;
  return ACCEL_OK;
}

void accel_rocm_mem_free(void* device_ptr, void* mem) {
  accel_rocm_device_t* device = device_ptr;
  if (accel_rocm_device_use(device) != ACCEL_OK) return;
  hipError_t err = device->rt->hipFree(mem);
  if (err != hipSuccess) {
    device->host->log(device->host, ACCEL_LOG_WARN, "%s: hipFree: %s",
                      device->prefix, device->rt->hipGetErrorName(err));
  }
}

accel_status_t accel_rocm_host_alloc(void* device_ptr, size_t size,
                                     void** out_ptr) {
  accel_rocm_device_t* device = device_ptr;
  *out_ptr = NULL;
  accel_status_t status = accel_rocm_device_use(device);
  if (status != ACCEL_OK) return status;
  void* ptr = NULL;
  // Portable: the core pools pinned memory across devices of the plugin.
  hipError_t err = device->rt->hipHostMalloc(&ptr, size, hipHostMallocPortable);
  if (err == hipErrorOutOfMemory) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              "%s: hipHostMalloc of %zu bytes: out of memory",
                              device->prefix, size);
  }
  if (err != hipSuccess) {
    return accel_rocm_device_fail(device, err, "hipHostMalloc");
  }
  *out_ptr = ptr;
  return ACCEL_OK;
}

void accel_rocm_host_free(void* device_ptr, void* ptr) {
  accel_rocm_device_t* device = device_ptr;
  hipError_t err = device->rt->hipHostFree(ptr);
  if (err != hipSuccess) {
    device->host->log(device->host, ACCEL_LOG_WARN, "%s: hipHostFree: %s",
                      device->prefix, device->rt->hipGetErrorName(err));
  }
}

// Finishes an operation issued on `stream`: for NULL, waits for the null
// stream and reports its error; otherwise reports `err` (the enqueue's).
static accel_status_t accel_rocm_finish(accel_rocm_device_t* device,
                                        void* stream, hipError_t err,
                                        const char* what) {
  if (err == hipSuccess && stream == NULL) {
    err = device->rt->hipStreamSynchronize(NULL);
  }
  return err == hipSuccess ? ACCEL_OK
                           : accel_rocm_device_fail(device, err, what);
}

// One hipMemcpyAsync of `kind` on `stream` (NULL: now).
static accel_status_t accel_rocm_copy(accel_rocm_device_t* device, void* stream,
                                      void* dst, const void* src, size_t size,
                                      hipMemcpyKind kind, const char* what) {
  accel_status_t status = accel_rocm_device_use(device);
  if (status != ACCEL_OK) return status;
  hipError_t err = device->rt->hipMemcpyAsync(dst, src, size, kind,
                                              accel_rocm_stream_handle(stream));
  return accel_rocm_finish(device, stream, err, what);
}

accel_status_t accel_rocm_copy_h2d(void* device, void* stream, void* dst,
                                   size_t dst_offset, const void* src,
                                   size_t size) {
  return accel_rocm_copy(device, stream, ACCEL_ROCM_AT(dst, dst_offset), src,
                         size, hipMemcpyHostToDevice, "hipMemcpyAsync(h2d)");
}

accel_status_t accel_rocm_copy_d2h(void* device, void* stream, void* dst,
                                   const void* src, size_t src_offset,
                                   size_t size) {
  return accel_rocm_copy(device, stream, dst,
                         ACCEL_ROCM_AT_CONST(src, src_offset), size,
                         hipMemcpyDeviceToHost, "hipMemcpyAsync(d2h)");
}

accel_status_t accel_rocm_copy_d2d(void* device, void* stream, void* dst,
                                   size_t dst_offset, const void* src,
                                   size_t src_offset, size_t size) {
  // hipMemcpy within one allocation behaves like memmove (as cudaMemcpy).
  return accel_rocm_copy(device, stream, ACCEL_ROCM_AT(dst, dst_offset),
                         ACCEL_ROCM_AT_CONST(src, src_offset), size,
                         hipMemcpyDeviceToDevice, "hipMemcpyAsync(d2d)");
}

accel_status_t accel_rocm_copy_peer(void* device_ptr, void* stream, void* dst,
                                    size_t dst_offset, void* src_device_ptr,
                                    const void* src, size_t src_offset,
                                    size_t size) {
  accel_rocm_device_t* device = device_ptr;
  const accel_rocm_device_t* src_device = src_device_ptr;
  accel_status_t status = accel_rocm_device_use(device);
  if (status != ACCEL_OK) return status;
  // Direct when peer access is enabled (can_access_peer), else the
  // runtime stages it; either way in order on `stream`.
  hipError_t err = device->rt->hipMemcpyPeerAsync(
      ACCEL_ROCM_AT(dst, dst_offset), (int)device->index,
      ACCEL_ROCM_AT_CONST(src, src_offset), (int)src_device->index, size,
      accel_rocm_stream_handle(stream));
  return accel_rocm_finish(device, stream, err, "hipMemcpyPeerAsync");
}

accel_status_t accel_rocm_memset(void* device_ptr, void* stream, void* dst,
                                 size_t offset, uint8_t value, size_t size) {
  accel_rocm_device_t* device = device_ptr;
  accel_status_t status = accel_rocm_device_use(device);
  if (status != ACCEL_OK) return status;
  hipError_t err =
      device->rt->hipMemsetAsync(ACCEL_ROCM_AT(dst, offset), value, size,
                                 accel_rocm_stream_handle(stream));
  return accel_rocm_finish(device, stream, err, "hipMemsetAsync");
}
