// SPDX-License-Identifier: MIT
//
// Device memory of the CUDA plugin: raw cuMemAlloc/cuMemFree under the
// core's caching allocator, page-locked host memory, copies in every
// direction, memset, and peer copies with lazily enabled peer access.
//
// A memory handle is the CUdeviceptr itself (accel_cuda_ptr). Stream work
// uses the *Async driver calls on the stream's CUstream. A NULL stream
// means "run it now and return when it is done" (plugin.h), and the
// synchronous driver calls do not all promise that: a device-to-device
// copy, a memset, a peer copy and a pageable host-to-device copy may still
// be in flight when they return. So after those the legacy default stream
// (which the synchronous calls use, and which our non-blocking streams
// never wait on) is synchronised; device-to-host copies already return
// complete.
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

// Finishes a copy or memset call: checks `r`, then, for a synchronous call
// that may return early (`drain`), waits for the legacy default stream
// (see the top of this file).
static accel_status_t accel_cuda_call_done(accel_cuda_device_t* device,
                                           CUresult r, const char* call,
                                           bool drain) {
  if (r == CUDA_SUCCESS && drain) {
    r = device->cu->cuStreamSynchronize(NULL);
    call = "cuStreamSynchronize";
  }
  return r == CUDA_SUCCESS ? ACCEL_OK : accel_cuda_device_fail(device, r, call);
}

#define ACCEL_CUDA_STREAM(s) (((accel_cuda_stream_t*)(s))->stream)

accel_status_t accel_cuda_copy_h2d(void* device_ptr, void* stream, void* dst,
                                   size_t dst_offset, const void* src,
                                   size_t size) {
  accel_cuda_device_t* device = device_ptr;
  const accel_cuda_driver_t* cu = device->cu;
  accel_status_t status = accel_cuda_context_push(device, "copy_h2d");
  if (status != ACCEL_OK) return status;
  CUdeviceptr d = accel_cuda_ptr(dst, dst_offset);
  if (stream == NULL) {
    status = accel_cuda_call_done(device, cu->cuMemcpyHtoD(d, src, size),
                                  "cuMemcpyHtoD", true);
  } else {
    status = accel_cuda_call_done(
        device, cu->cuMemcpyHtoDAsync(d, src, size, ACCEL_CUDA_STREAM(stream)),
        "cuMemcpyHtoDAsync", false);
  }
  accel_cuda_context_pop(device);
  return status;
}

accel_status_t accel_cuda_copy_d2h(void* device_ptr, void* stream, void* dst,
                                   const void* src, size_t src_offset,
                                   size_t size) {
  accel_cuda_device_t* device = device_ptr;
  const accel_cuda_driver_t* cu = device->cu;
  accel_status_t status = accel_cuda_context_push(device, "copy_d2h");
  if (status != ACCEL_OK) return status;
  CUdeviceptr s = accel_cuda_ptr(src, src_offset);
  if (stream == NULL) {
    status = accel_cuda_call_done(device, cu->cuMemcpyDtoH(dst, s, size),
                                  "cuMemcpyDtoH", false);
  } else {
    status = accel_cuda_call_done(
        device, cu->cuMemcpyDtoHAsync(dst, s, size, ACCEL_CUDA_STREAM(stream)),
        "cuMemcpyDtoHAsync", false);
  }
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
  CUstream cs = stream != NULL ? ACCEL_CUDA_STREAM(stream) : NULL;
  CUresult r;
  if (pieces) {
    r = accel_cuda_move_pieces(cu, d, s, size, cs);
    if (r == CUDA_SUCCESS && stream == NULL) r = cu->cuStreamSynchronize(NULL);
  } else if (overlap) {
    CUdeviceptr t = accel_cuda_ptr(tmp, 0);
    r = cu->cuMemcpyDtoDAsync(t, s, size, cs);
    if (r == CUDA_SUCCESS) r = cu->cuMemcpyDtoDAsync(d, t, size, cs);
    // The temporary must outlive the copies: wait, then free.
    if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(cs);
  } else if (stream == NULL) {
    r = cu->cuMemcpyDtoD(d, s, size);
    if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(NULL);
  } else {
    r = cu->cuMemcpyDtoDAsync(d, s, size, cs);
  }
  if (r != CUDA_SUCCESS)
    status = accel_cuda_device_fail(device, r, "cuMemcpyDtoD");
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
  if (stream == NULL) {
    status = accel_cuda_call_done(
        device, cu->cuMemcpyPeer(d, device->ctx, s, peer->ctx, size),
        "cuMemcpyPeer", true);
  } else {
    status = accel_cuda_call_done(
        device,
        cu->cuMemcpyPeerAsync(d, device->ctx, s, peer->ctx, size,
                              ACCEL_CUDA_STREAM(stream)),
        "cuMemcpyPeerAsync", false);
  }
  accel_cuda_context_pop(device);
  return status;
}

accel_status_t accel_cuda_memset(void* device_ptr, void* stream, void* dst,
                                 size_t offset, uint8_t value, size_t size) {
  accel_cuda_device_t* device = device_ptr;
  const accel_cuda_driver_t* cu = device->cu;
  accel_status_t status = accel_cuda_context_push(device, "memset");
  if (status != ACCEL_OK) return status;
  CUdeviceptr d = accel_cuda_ptr(dst, offset);
  if (stream == NULL) {
    status = accel_cuda_call_done(device, cu->cuMemsetD8(d, value, size),
                                  "cuMemsetD8", true);
  } else {
    status = accel_cuda_call_done(
        device, cu->cuMemsetD8Async(d, value, size, ACCEL_CUDA_STREAM(stream)),
        "cuMemsetD8Async", false);
  }
  accel_cuda_context_pop(device);
  return status;
}
