// SPDX-License-Identifier: MIT
//
// Device memory, pinned host memory, copies and memset. The memory handle
// is the device pointer itself. A NULL stream means "now": the work is
// issued on the null stream and waited for, so it is finished when the
// call returns (plugin.h); the plugin's own streams are non-blocking, so
// this never waits for them.
//
// hipMemcpyAsync is documented (hip_runtime_api.h) with "src and dst must
// not overlap", and plugin.h allows overlap within one allocation: an
// overlapping move is split into ordered pieces that do not overlap, or
// goes through a temporary (accel_rocm_copy_d2d).
#include "accel_rocm.h"

#define ACCEL_ROCM_AT(p, offset) ((unsigned char*)(p) + (offset))
#define ACCEL_ROCM_AT_CONST(p, offset) ((const unsigned char*)(p) + (offset))

accel_status_t accel_rocm_mem_alloc(void* device_ptr, size_t size,
                                    void** out_mem) {
  accel_rocm_device_t* device = device_ptr;
  *out_mem = NULL;
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  if (status != ACCEL_OK) return status;
  void* mem = NULL;
  hipError_t err = device->rt->hipMalloc(&mem, size);
  // Out of memory is expected (the core empties its cache and retries):
  // the status carries it, the thread's sticky last error must not.
  if (err != hipSuccess) accel_rocm_clear_error(device->rt);
  accel_rocm_device_leave(device, saved);
  if (err != hipSuccess)
    return accel_rocm_device_fail(device, err, "hipMalloc");
  *out_mem = mem;
  return ACCEL_OK;
}

void accel_rocm_mem_free(void* device_ptr, void* mem) {
  accel_rocm_device_t* device = device_ptr;
  int saved = 0;
  if (accel_rocm_device_enter(device, &saved) != ACCEL_OK) return;
  hipError_t err = device->rt->hipFree(mem);
  accel_rocm_device_leave(device, saved);
  if (err != hipSuccess) {
    device->host->log(device->host, ACCEL_LOG_WARN, "%s: hipFree: %s",
                      device->prefix, device->rt->hipGetErrorName(err));
  }
}

accel_status_t accel_rocm_host_alloc(void* device_ptr, size_t size,
                                     void** out_ptr) {
  accel_rocm_device_t* device = device_ptr;
  *out_ptr = NULL;
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  if (status != ACCEL_OK) return status;
  void* ptr = NULL;
  // Portable: the core pools pinned memory across devices of the plugin.
  hipError_t err = device->rt->hipHostMalloc(&ptr, size, hipHostMallocPortable);
  if (err != hipSuccess) accel_rocm_clear_error(device->rt);
  accel_rocm_device_leave(device, saved);
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
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  if (status != ACCEL_OK) return status;
  hipError_t err = device->rt->hipMemcpyAsync(dst, src, size, kind,
                                              accel_rocm_stream_handle(stream));
  status = accel_rocm_finish(device, stream, err, what);
  accel_rocm_device_leave(device, saved);
  return status;
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

// Most pieces an overlapping move is split into before a temporary is used
// instead (as in the CUDA plugin).
#define ACCEL_ROCM_MOVE_MAX_PIECES 64u

// Queues the overlapping move of `size` bytes from `s` to `d` on `hs` as
// ordered pieces of at most |d - s| bytes, none overlapping itself: from
// the end when moving up, from the start when moving down, so each piece
// only overwrites source bytes that earlier pieces already moved (one
// stream runs its copies in order).
static hipError_t accel_rocm_move_pieces(const accel_rocm_runtime_t* rt,
                                         unsigned char* d,
                                         const unsigned char* s, size_t size,
                                         hipStream_t hs) {
  size_t step = d > s ? (size_t)(d - s) : (size_t)(s - d);
  hipError_t err = hipSuccess;
  for (size_t done = 0; err == hipSuccess && done < size;) {
    size_t n = size - done < step ? size - done : step;
    size_t at = d > s ? size - done - n : done;
    err = rt->hipMemcpyAsync(d + at, s + at, n, hipMemcpyDeviceToDevice, hs);
    done += n;
  }
  return err;
}

accel_status_t accel_rocm_copy_d2d(void* device_ptr, void* stream, void* dst,
                                   size_t dst_offset, const void* src,
                                   size_t src_offset, size_t size) {
  accel_rocm_device_t* device = device_ptr;
  const accel_rocm_runtime_t* rt = device->rt;
  unsigned char* d = ACCEL_ROCM_AT(dst, dst_offset);
  const unsigned char* s = ACCEL_ROCM_AT_CONST(src, src_offset);
  if (d == s || size == 0) return ACCEL_OK;
  bool overlap = d < s + size && s < d + size;
  if (!overlap) {
    return accel_rocm_copy(device, stream, d, s, size, hipMemcpyDeviceToDevice,
                           "hipMemcpyAsync(d2d)");
  }
  size_t shift = d > s ? (size_t)(d - s) : (size_t)(s - d);
  bool pieces = size / shift < ACCEL_ROCM_MOVE_MAX_PIECES;
  void* tmp = NULL;
  if (!pieces) {
    accel_status_t st = accel_rocm_mem_alloc(device, size, &tmp);
    if (st != ACCEL_OK) return st;
  }
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  if (status != ACCEL_OK) {
    accel_rocm_mem_free(device, tmp);
    return status;
  }
  hipStream_t hs = accel_rocm_stream_handle(stream);
  hipError_t err;
  if (pieces) {
    err = accel_rocm_move_pieces(rt, d, s, size, hs);
  } else {
    err = rt->hipMemcpyAsync(tmp, s, size, hipMemcpyDeviceToDevice, hs);
    if (err == hipSuccess) {
      err = rt->hipMemcpyAsync(d, tmp, size, hipMemcpyDeviceToDevice, hs);
    }
    // The temporary must outlive the copies: wait, then free.
    if (err == hipSuccess) err = rt->hipStreamSynchronize(hs);
  }
  status = accel_rocm_finish(device, stream, err, "hipMemcpyAsync(move)");
  accel_rocm_device_leave(device, saved);
  accel_rocm_mem_free(device, tmp);
  return status;
}

// Enables `device`'s access to `peer`'s memory the first time the pair
// copies, so hipMemcpyPeerAsync goes direct rather than staged. Failure
// only means slower copies: it is logged, remembered and cleared from the
// thread's last error, like "already enabled" (an application or another
// library may have enabled it). `device` is current.
static void accel_rocm_peer_enable(accel_rocm_device_t* device,
                                   const accel_rocm_device_t* peer) {
  if (peer->index >= 64 || !device->peer_any) return;
  pthread_mutex_lock(&device->mutex);
  if (!device->peer_tried[peer->index]) {
    device->peer_tried[peer->index] = true;
    const accel_rocm_runtime_t* rt = device->rt;
    int can = 0;
    hipError_t err =
        rt->hipDeviceCanAccessPeer(&can, (int)device->index, (int)peer->index);
    if (err == hipSuccess && can) {
      err = rt->hipDeviceEnablePeerAccess((int)peer->index, 0);
    }
    if (err != hipSuccess) accel_rocm_clear_error(rt);
    bool on =
        can && (err == hipSuccess || err == hipErrorPeerAccessAlreadyEnabled);
    device->host->log(device->host, ACCEL_LOG_DEBUG,
                      "%s: peer access to rocm:%u %s", device->prefix,
                      peer->index, on ? "enabled" : "unavailable");
  }
  pthread_mutex_unlock(&device->mutex);
}

accel_status_t accel_rocm_copy_peer(void* device_ptr, void* stream, void* dst,
                                    size_t dst_offset, void* src_device_ptr,
                                    const void* src, size_t src_offset,
                                    size_t size) {
  accel_rocm_device_t* device = device_ptr;
  const accel_rocm_device_t* src_device = src_device_ptr;
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  if (status != ACCEL_OK) return status;
  accel_rocm_peer_enable(device, src_device);
  // Direct when peer access is enabled, else the runtime stages it;
  // either way in order on `stream`.
  hipError_t err = device->rt->hipMemcpyPeerAsync(
      ACCEL_ROCM_AT(dst, dst_offset), (int)device->index,
      ACCEL_ROCM_AT_CONST(src, src_offset), (int)src_device->index, size,
      accel_rocm_stream_handle(stream));
  status = accel_rocm_finish(device, stream, err, "hipMemcpyPeerAsync");
  accel_rocm_device_leave(device, saved);
  return status;
}

accel_status_t accel_rocm_memset(void* device_ptr, void* stream, void* dst,
                                 size_t offset, uint8_t value, size_t size) {
  accel_rocm_device_t* device = device_ptr;
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  if (status != ACCEL_OK) return status;
  hipError_t err =
      device->rt->hipMemsetAsync(ACCEL_ROCM_AT(dst, offset), value, size,
                                 accel_rocm_stream_handle(stream));
  status = accel_rocm_finish(device, stream, err, "hipMemsetAsync");
  accel_rocm_device_leave(device, saved);
  return status;
}
