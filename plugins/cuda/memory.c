// SPDX-License-Identifier: MIT
//
// Device memory of the CUDA plugin: raw cuMemAlloc/cuMemFree under the
// core's caching allocator, page-locked host memory, copies in every
// direction, memset, and peer copies with lazily enabled peer access.
//
// A memory handle is the CUdeviceptr itself (accel_cuda_ptr). All copies
// and memsets use the *Async driver calls. A NULL stream means "run it now
// and return when it is done" (plugin.h): the work goes on the device's
// own non-blocking stream (accel_cuda_stream_of), which is then waited
// for. The synchronous driver calls are not used: they run on the legacy
// default stream, which in the primary context the application shares
// synchronises with every blocking stream of the application (the CUDA
// driver API's "Stream synchronization behavior"), and several of them
// (device-to-device, memset, pageable host-to-device) may return before
// the transfer is done anyway.
#include <stdio.h>

#include "accel_cuda.h"

accel_status_t accel_cuda_mem_alloc(void* device_ptr, size_t size,
                                    void** out_mem) {
  accel_cuda_device_t* device = device_ptr;
  *out_mem = NULL;
  accel_status_t status = accel_cuda_context_push(device, "mem_alloc");
  if (status != ACCEL_OK) return status;
  CUdeviceptr ptr = 0;
  CUresult r = device->cu->cuMemAlloc(&ptr, size);
  accel_cuda_context_pop(device);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_DEVICE_MEMORY,
                              "%s: cuMemAlloc of %zu bytes: out of memory",
                              device->prefix, size);
  }
  if (r != CUDA_SUCCESS) return accel_cuda_device_fail(device, r, "cuMemAlloc");
  *out_mem = (void*)(uintptr_t)ptr;
  return ACCEL_OK;
}

void accel_cuda_mem_free(void* device_ptr, void* mem) {
  accel_cuda_device_t* device = device_ptr;
  if (mem == NULL) return;
  if (accel_cuda_context_push(device, "mem_free") != ACCEL_OK) return;
  CUresult r = device->cu->cuMemFree(accel_cuda_ptr(mem, 0));
  accel_cuda_context_pop(device);
  if (r != CUDA_SUCCESS) {
    // mem_free cannot fail; a sticky error shows at the next synchronise.
    device->host->log(device->host, ACCEL_LOG_WARN, "%s: cuMemFree: error %d",
                      device->prefix, (int)r);
  }
}

accel_status_t accel_cuda_host_alloc(void* device_ptr, size_t size,
                                     void** out_ptr) {
  accel_cuda_device_t* device = device_ptr;
  *out_ptr = NULL;
  accel_status_t status = accel_cuda_context_push(device, "host_alloc");
  if (status != ACCEL_OK) return status;
  // PORTABLE: pinned for every context, so any device can copy from it.
  CUresult r =
      device->cu->cuMemHostAlloc(out_ptr, size, CU_MEMHOSTALLOC_PORTABLE);
  accel_cuda_context_pop(device);
  if (r != CUDA_SUCCESS) {
    *out_ptr = NULL;
    if (r == CUDA_ERROR_OUT_OF_MEMORY) {
      return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                                "%s: cuMemHostAlloc of %zu bytes: out of "
                                "page-locked memory",
                                device->prefix, size);
    }
    return accel_cuda_device_fail(device, r, "cuMemHostAlloc");
  }
  return ACCEL_OK;
}

void accel_cuda_host_free(void* device_ptr, void* ptr) {
  accel_cuda_device_t* device = device_ptr;
  if (ptr == NULL) return;
  if (accel_cuda_context_push(device, "host_free") != ACCEL_OK) return;
  (void)device->cu->cuMemFreeHost(ptr);
  accel_cuda_context_pop(device);
}

// Finishes a copy or memset call: checks `r`, then, for work without a
// stream (`stream` NULL), waits for the device's own stream it went on.
static accel_status_t accel_cuda_call_done(accel_cuda_device_t* device,
                                           void* stream, CUresult r,
                                           const char* call) {
  if (r == CUDA_SUCCESS && stream == NULL) {
    r = device->cu->cuStreamSynchronize(device->sync_stream);
    call = "cuStreamSynchronize";
  }
  return r == CUDA_SUCCESS ? ACCEL_OK : accel_cuda_device_fail(device, r, call);
}

accel_status_t accel_cuda_copy_h2d(void* device_ptr, void* stream, void* dst,
                                   size_t dst_offset, const void* src,
                                   size_t size) {
  accel_cuda_device_t* device = device_ptr;
  accel_status_t status = accel_cuda_context_push(device, "copy_h2d");
  if (status != ACCEL_OK) return status;
  CUresult r =
      device->cu->cuMemcpyHtoDAsync(accel_cuda_ptr(dst, dst_offset), src, size,
                                    accel_cuda_stream_of(device, stream));
  status = accel_cuda_call_done(device, stream, r, "cuMemcpyHtoDAsync");
  accel_cuda_context_pop(device);
  return status;
}

accel_status_t accel_cuda_copy_d2h(void* device_ptr, void* stream, void* dst,
                                   const void* src, size_t src_offset,
                                   size_t size) {
  accel_cuda_device_t* device = device_ptr;
  accel_status_t status = accel_cuda_context_push(device, "copy_d2h");
  if (status != ACCEL_OK) return status;
  CUresult r =
      device->cu->cuMemcpyDtoHAsync(dst, accel_cuda_ptr(src, src_offset), size,
                                    accel_cuda_stream_of(device, stream));
  status = accel_cuda_call_done(device, stream, r, "cuMemcpyDtoHAsync");
  accel_cuda_context_pop(device);
  return status;
}

// Most copies an overlapping move is split into before a temporary is
// used instead (see accel_cuda_copy_d2d).
#define ACCEL_CUDA_MOVE_MAX_PIECES 64u

// Queues the overlapping move of `size` bytes from `s` to `d` on `cs` as
// ordered pieces of at most |d - s| bytes, none of which overlaps itself:
// from the end when moving up, from the start when moving down, so each
// piece only overwrites source bytes that earlier pieces already moved.
static CUresult accel_cuda_move_pieces(const accel_cuda_driver_t* cu,
                                       CUdeviceptr d, CUdeviceptr s,
                                       size_t size, CUstream cs) {
  size_t step = d > s ? (size_t)(d - s) : (size_t)(s - d);
  CUresult r = CUDA_SUCCESS;
  for (size_t done = 0; r == CUDA_SUCCESS && done < size;) {
    size_t n = size - done < step ? size - done : step;
    size_t at = d > s ? size - done - n : done;
    r = cu->cuMemcpyDtoDAsync(d + at, s + at, n, cs);
    done += n;
  }
  return r;
}

accel_status_t accel_cuda_copy_d2d(void* device_ptr, void* stream, void* dst,
                                   size_t dst_offset, const void* src,
                                   size_t src_offset, size_t size) {
  accel_cuda_device_t* device = device_ptr;
  const accel_cuda_driver_t* cu = device->cu;
  // cuMemcpyDtoD is not documented for overlapping ranges, and plugin.h
  // allows overlap within one allocation. A move by at least 1/64 of its
  // length is split into ordered pieces that do not overlap, queued on the
  // stream like any copy. A shorter shift would take too many pieces: it
  // goes through a temporary, and waits for the stream before freeing it.
  CUdeviceptr d = accel_cuda_ptr(dst, dst_offset);
  CUdeviceptr s = accel_cuda_ptr(src, src_offset);
  if (d == s || size == 0) return ACCEL_OK;
  bool overlap = d < s + size && s < d + size;
  size_t shift = d > s ? (size_t)(d - s) : (size_t)(s - d);
  bool pieces = overlap && size / shift < ACCEL_CUDA_MOVE_MAX_PIECES;
  void* tmp = NULL;
  if (overlap && !pieces) {
    accel_status_t st = accel_cuda_mem_alloc(device, size, &tmp);
    if (st != ACCEL_OK) return st;
  }
  accel_status_t status = accel_cuda_context_push(device, "copy_d2d");
  if (status != ACCEL_OK) {
    accel_cuda_mem_free(device, tmp);
    return status;
  }
  CUstream cs = accel_cuda_stream_of(device, stream);
  CUresult r;
  if (pieces) {
    r = accel_cuda_move_pieces(cu, d, s, size, cs);
  } else if (overlap) {
    CUdeviceptr t = accel_cuda_ptr(tmp, 0);
    r = cu->cuMemcpyDtoDAsync(t, s, size, cs);
    if (r == CUDA_SUCCESS) r = cu->cuMemcpyDtoDAsync(d, t, size, cs);
    // The temporary must outlive the copies: wait, then free.
    if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(cs);
  } else {
    r = cu->cuMemcpyDtoDAsync(d, s, size, cs);
  }
  status = accel_cuda_call_done(device, stream, r, "cuMemcpyDtoDAsync");
  accel_cuda_context_pop(device);
  accel_cuda_mem_free(device, tmp);
  return status;
}

// Enables access of `device`'s context to `peer`'s memory the first time
// the pair copies, so the driver can copy directly instead of staging.
// Failure only means slower copies, so it is remembered and logged, not
// returned. The caller has pushed `device`'s context.
static void accel_cuda_peer_enable(accel_cuda_device_t* device,
                                   const accel_cuda_device_t* peer) {
  pthread_mutex_lock(&device->mutex);
  if (device->peer_state[peer->index] == 0) {
    int can = 0;
    CUresult r =
        device->cu->cuDeviceCanAccessPeer(&can, device->dev, peer->dev);
    if (r == CUDA_SUCCESS && can) {
      r = device->cu->cuCtxEnablePeerAccess(peer->ctx, 0);
      if (r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) r = CUDA_SUCCESS;
    }
    device->peer_state[peer->index] = (r == CUDA_SUCCESS && can) ? 1 : 2;
    device->host->log(
        device->host, ACCEL_LOG_DEBUG, "%s: peer access to cuda:%u %s",
        device->prefix, peer->index,
        device->peer_state[peer->index] == 1 ? "enabled" : "unavailable");
  }
  pthread_mutex_unlock(&device->mutex);
}

accel_status_t accel_cuda_copy_peer(void* device_ptr, void* stream, void* dst,
                                    size_t dst_offset, void* src_device,
                                    const void* src, size_t src_offset,
                                    size_t size) {
  accel_cuda_device_t* device = device_ptr;
  const accel_cuda_device_t* peer = src_device;
  const accel_cuda_driver_t* cu = device->cu;
  accel_status_t status = accel_cuda_context_push(device, "copy_peer");
  if (status != ACCEL_OK) return status;
  accel_cuda_peer_enable(device, peer);
  CUdeviceptr d = accel_cuda_ptr(dst, dst_offset);
  CUdeviceptr s = accel_cuda_ptr(src, src_offset);
  CUresult r = cu->cuMemcpyPeerAsync(d, device->ctx, s, peer->ctx, size,
                                     accel_cuda_stream_of(device, stream));
  status = accel_cuda_call_done(device, stream, r, "cuMemcpyPeerAsync");
  accel_cuda_context_pop(device);
  return status;
}

accel_status_t accel_cuda_memset(void* device_ptr, void* stream, void* dst,
                                 size_t offset, uint8_t value, size_t size) {
  accel_cuda_device_t* device = device_ptr;
  const accel_cuda_driver_t* cu = device->cu;
  accel_status_t status = accel_cuda_context_push(device, "memset");
  if (status != ACCEL_OK) return status;
  CUresult r = cu->cuMemsetD8Async(accel_cuda_ptr(dst, offset), value, size,
                                   accel_cuda_stream_of(device, stream));
  status = accel_cuda_call_done(device, stream, r, "cuMemsetD8Async");
  accel_cuda_context_pop(device);
  return status;
}
