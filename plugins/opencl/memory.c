// SPDX-License-Identifier: MIT
//
// Device memory: one cl_mem per allocation, addressed by byte offsets.
// Copies and memset go straight to the matching OpenCL command: blocking
// on the device's sync_queue when the core passes no stream, enqueued on
// the stream's in-order queue otherwise. Pinned host memory is a
// CL_MEM_ALLOC_HOST_PTR buffer kept mapped until host_free.
#include <stdlib.h>
#include <string.h>

#include "accel_opencl.h"

// A same-buffer move that would take more pieces than this goes through a
// temporary buffer instead (two copies, however far apart the regions).
#define ACCEL_OPENCL_MOVE_MAX_PIECES 8

accel_status_t accel_opencl_mem_alloc(void* device_ptr, size_t size,
                                      void** out_mem) {
  accel_opencl_device_t* device = device_ptr;
  const accel_host_t* host = device->host;
  *out_mem = NULL;
  uint64_t limit = device->props.max_alloc_size;
  if (limit != 0 && size > limit) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_DEVICE_MEMORY,
                      "opencl:%u: %zu bytes exceed the device's largest "
                      "allocation (%llu bytes, CL_DEVICE_MAX_MEM_ALLOC_SIZE)",
                      device->index, size, (unsigned long long)limit);
  }
  accel_opencl_mem_t* mem = calloc(1, sizeof(*mem));
  if (mem == NULL || pthread_mutex_init(&mem->views_lock, NULL) != 0) {
    free(mem);
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      "opencl:%u: buffer handle", device->index);
  }
  cl_int err = CL_SUCCESS;
  mem->mem = device->cl->clCreateBuffer(device->context, CL_MEM_READ_WRITE,
                                        size, NULL, &err);
  mem->size = size;
  if (err != CL_SUCCESS) {
    pthread_mutex_destroy(&mem->views_lock);
    free(mem);
    return accel_opencl_check(host, err, "clCreateBuffer");
  }
  atomic_fetch_add(&device->allocated, (uint64_t)size);
  *out_mem = mem;
  return ACCEL_OK;
}

void accel_opencl_mem_free(void* device_ptr, void* mem_ptr) {
  accel_opencl_device_t* device = device_ptr;
  accel_opencl_mem_t* mem = mem_ptr;
  if (mem == NULL) return;
  // OpenCL keeps the buffer until the commands that use it are done.
  for (uint32_t i = 0; i < mem->view_count; i++) {
    device->cl->clReleaseMemObject(mem->views[i]);
  }
  device->cl->clReleaseMemObject(mem->mem);
  pthread_mutex_destroy(&mem->views_lock);
  atomic_fetch_sub(&device->allocated, mem->size);
  free(mem);
}

accel_status_t accel_opencl_mem_view(accel_opencl_device_t* device,
                                     accel_opencl_mem_t* mem, uint64_t offset,
                                     cl_mem* out) {
  *out = NULL;
  if (offset == 0) {
    cl_int err = device->cl->clRetainMemObject(mem->mem);
    if (err == CL_SUCCESS) *out = mem->mem;
    return accel_opencl_check(device->host, err, "clRetainMemObject");
  }
  if (offset >= mem->size || offset % device->base_addr_align != 0) {
    return device->host->fail(
        device->host, ACCEL_ERROR_UNSUPPORTED,
        "opencl:%u: buffer offset %llu is not a multiple of the device's "
        "%u-byte sub-buffer alignment or is past the end",
        device->index, (unsigned long long)offset, device->base_addr_align);
  }
  // Kept sub-buffers: a launch at a known offset costs a lookup instead of
  // a clCreateSubBuffer and a release per launch, and sub-buffers of one
  // buffer are created one thread at a time (the lock).
  const accel_opencl_api_t* cl = device->cl;
  const char* what = "clCreateSubBuffer";
  cl_int err = CL_SUCCESS;
  pthread_mutex_lock(&mem->views_lock);
  for (uint32_t i = 0; i < mem->view_count; i++) {
    if (mem->view_offsets[i] == offset) {
      err = cl->clRetainMemObject(mem->views[i]);
      if (err == CL_SUCCESS) *out = mem->views[i];
      pthread_mutex_unlock(&mem->views_lock);
      return accel_opencl_check(device->host, err, "clRetainMemObject");
    }
  }
  cl_buffer_region region = {.origin = offset, .size = mem->size - offset};
  cl_mem view = cl->clCreateSubBuffer(mem->mem, CL_MEM_READ_WRITE,
                                      CL_BUFFER_CREATE_TYPE_REGION, &region,
                                      &err);
  if (err == CL_SUCCESS && mem->view_count < ACCEL_OPENCL_MEM_VIEWS) {
    // The list keeps the creation's reference; the caller gets another.
    err = cl->clRetainMemObject(view);
    what = "clRetainMemObject";
    if (err == CL_SUCCESS) {
      mem->view_offsets[mem->view_count] = offset;
      mem->views[mem->view_count++] = view;
    } else {
      cl->clReleaseMemObject(view);
    }
  }
  pthread_mutex_unlock(&mem->views_lock);
  if (err == CL_SUCCESS) *out = view;
  return accel_opencl_check(device->host, err, what);
}

accel_status_t accel_opencl_host_alloc(void* device_ptr, size_t size,
                                       void** out_ptr) {
  accel_opencl_device_t* device = device_ptr;
  const accel_opencl_api_t* cl = device->cl;
  *out_ptr = NULL;
  struct accel_opencl_pinned* block = calloc(1, sizeof(*block));
  if (block == NULL) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              "opencl:%u: pinned block", device->index);
  }
  cl_int err = CL_SUCCESS;
  block->mem = cl->clCreateBuffer(device->context,
                                  CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                                  size, NULL, &err);
  if (err == CL_SUCCESS) {
    block->ptr = cl->clEnqueueMapBuffer(device->sync_queue, block->mem, CL_TRUE,
                                        CL_MAP_READ | CL_MAP_WRITE, 0, size, 0,
                                        NULL, NULL, &err);
    if (err != CL_SUCCESS) cl->clReleaseMemObject(block->mem);
  }
  if (err != CL_SUCCESS) {
    free(block);
    // Pinned memory comes from the host: a failure is host memory.
    return device->host->fail(device->host,
                              err == CL_INVALID_BUFFER_SIZE
                                  ? ACCEL_ERROR_INVALID_ARGUMENT
                                  : ACCEL_ERROR_OUT_OF_MEMORY,
                              "opencl:%u: pinned %zu bytes: %s", device->index,
                              size, accel_opencl_error_name(err));
  }
  pthread_mutex_lock(&device->mutex);
  block->next = device->pinned;
  device->pinned = block;
  pthread_mutex_unlock(&device->mutex);
  *out_ptr = block->ptr;
  return ACCEL_OK;
}

void accel_opencl_host_free(void* device_ptr, void* ptr) {
  accel_opencl_device_t* device = device_ptr;
  if (ptr == NULL) return;
  struct accel_opencl_pinned* block = NULL;
  pthread_mutex_lock(&device->mutex);
  for (struct accel_opencl_pinned** at = &device->pinned; *at != NULL;
       at = &(*at)->next) {
    if ((*at)->ptr == ptr) {
      block = *at;
      *at = block->next;
      break;
    }
  }
  pthread_mutex_unlock(&device->mutex);
  if (block == NULL) return;  // not ours: the core never passes such a pointer
  cl_event done = NULL;
  if (device->cl->clEnqueueUnmapMemObject(device->sync_queue, block->mem,
                                          block->ptr, 0, NULL,
                                          &done) == CL_SUCCESS) {
    device->cl->clWaitForEvents(1, &done);
    device->cl->clReleaseEvent(done);
  }
  device->cl->clReleaseMemObject(block->mem);
  free(block);
}

// The queue a copy goes to, and whether it blocks (no stream).
static cl_command_queue accel_opencl_queue(accel_opencl_device_t* device,
                                           accel_opencl_stream_t* stream) {
  return stream != NULL ? stream->queue : device->sync_queue;
}

// Finishes a command enqueued on `stream` (or run blocking when NULL).
// Stream commands carry no event: see stream.c for how a failure still
// surfaces.
static accel_status_t accel_opencl_done(accel_opencl_device_t* device,
                                        accel_opencl_stream_t* stream,
                                        cl_int err, const char* what) {
  if (stream != NULL) {
    return accel_opencl_stream_enqueued(stream, err, what);
  }
  return accel_opencl_check(device->host, err, what);
}

accel_status_t accel_opencl_copy_h2d(void* device_ptr, void* stream_ptr,
                                     void* dst, size_t dst_offset,
                                     const void* src, size_t size) {
  accel_opencl_device_t* device = device_ptr;
  accel_opencl_stream_t* stream = stream_ptr;
  cl_int err = device->cl->clEnqueueWriteBuffer(
      accel_opencl_queue(device, stream), ((accel_opencl_mem_t*)dst)->mem,
      stream == NULL, dst_offset, size, src, 0, NULL, NULL);
  return accel_opencl_done(device, stream, err, "clEnqueueWriteBuffer");
}

accel_status_t accel_opencl_copy_d2h(void* device_ptr, void* stream_ptr,
                                     void* dst, const void* src,
                                     size_t src_offset, size_t size) {
  accel_opencl_device_t* device = device_ptr;
  accel_opencl_stream_t* stream = stream_ptr;
  cl_int err = device->cl->clEnqueueReadBuffer(
      accel_opencl_queue(device, stream), ((const accel_opencl_mem_t*)src)->mem,
      stream == NULL, src_offset, size, dst, 0, NULL, NULL);
  return accel_opencl_done(device, stream, err, "clEnqueueReadBuffer");
}

// One clEnqueueCopyBuffer on `queue`; blocking (waits) when `stream` is
// NULL.
static accel_status_t accel_opencl_copy_one(accel_opencl_device_t* device,
                                            accel_opencl_stream_t* stream,
                                            cl_mem dst, size_t dst_offset,
                                            cl_mem src, size_t src_offset,
                                            size_t size) {
  cl_event event = NULL;
  cl_int err = device->cl->clEnqueueCopyBuffer(
      accel_opencl_queue(device, stream), src, dst, src_offset, dst_offset,
      size, 0, NULL, stream == NULL ? &event : NULL);
  if (stream == NULL && err == CL_SUCCESS) {
    err = device->cl->clWaitForEvents(1, &event);
    device->cl->clReleaseEvent(event);
  }
  return accel_opencl_done(device, stream, err, "clEnqueueCopyBuffer");
}

// memmove within one buffer. clEnqueueCopyBuffer refuses overlapping
// regions (CL_MEM_COPY_OVERLAP), so the move is split into pieces of the
// distance between the regions, ordered so that each piece reads bytes no
// earlier piece has written (the queue is in order); when that takes many
// pieces the bytes go through a temporary buffer instead.
static accel_status_t accel_opencl_move(accel_opencl_device_t* device,
                                        accel_opencl_stream_t* stream,
                                        cl_mem mem, size_t dst_offset,
                                        size_t src_offset, size_t size) {
  size_t gap = dst_offset > src_offset ? dst_offset - src_offset
                                       : src_offset - dst_offset;
  if (size / gap >= ACCEL_OPENCL_MOVE_MAX_PIECES) {
    cl_int err = CL_SUCCESS;
    cl_mem tmp = device->cl->clCreateBuffer(device->context, CL_MEM_READ_WRITE,
                                            size, NULL, &err);
    if (err == CL_SUCCESS) {
      accel_status_t status =
          accel_opencl_copy_one(device, stream, tmp, 0, mem, src_offset, size);
      if (status == ACCEL_OK) {
        status = accel_opencl_copy_one(device, stream, mem, dst_offset, tmp, 0,
                                       size);
      }
      device->cl->clReleaseMemObject(tmp);  // freed once the copies are done
      return status;
    }
    // No room for a temporary: fall back to the pieces.
  }
  bool up = dst_offset > src_offset;  // then copy the last piece first
  for (size_t done = 0; done < size;) {
    size_t n = size - done < gap ? size - done : gap;
    size_t at = up ? size - done - n : done;
    accel_status_t status = accel_opencl_copy_one(
        device, stream, mem, dst_offset + at, mem, src_offset + at, n);
    if (status != ACCEL_OK) return status;
    done += n;
  }
  return ACCEL_OK;
}

accel_status_t accel_opencl_copy_d2d(void* device_ptr, void* stream_ptr,
                                     void* dst, size_t dst_offset,
                                     const void* src, size_t src_offset,
                                     size_t size) {
  accel_opencl_device_t* device = device_ptr;
  cl_mem d = ((accel_opencl_mem_t*)dst)->mem;
  cl_mem s = ((const accel_opencl_mem_t*)src)->mem;
  if (d == s && dst_offset == src_offset) return ACCEL_OK;
  if (d == s && dst_offset < src_offset + size &&
      src_offset < dst_offset + size) {
    return accel_opencl_move(device, stream_ptr, d, dst_offset, src_offset,
                             size);
  }
  return accel_opencl_copy_one(device, stream_ptr, d, dst_offset, s, src_offset,
                               size);
}

// A peer copy between contexts (two platforms): through host memory, after
// the stream's earlier work, blocking until the data has landed.
static accel_status_t accel_opencl_copy_via_host(
    accel_opencl_device_t* device, accel_opencl_stream_t* stream, cl_mem dst,
    size_t dst_offset, accel_opencl_device_t* src_device, cl_mem src,
    size_t src_offset, size_t size) {
  void* staging = malloc(size);
  if (staging == NULL) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              "opencl:%u: %zu-byte staging for a peer copy",
                              device->index, size);
  }
  cl_command_queue queue = accel_opencl_queue(device, stream);
  cl_int err = device->cl->clFinish(queue);
  accel_status_t status = accel_opencl_check(device->host, err, "clFinish");
  if (status == ACCEL_OK) {
    err = src_device->cl->clEnqueueReadBuffer(src_device->sync_queue, src,
                                              CL_TRUE, src_offset, size,
                                              staging, 0, NULL, NULL);
    status = accel_opencl_check(device->host, err, "clEnqueueReadBuffer");
  }
  if (status == ACCEL_OK) {
    err = device->cl->clEnqueueWriteBuffer(queue, dst, CL_TRUE, dst_offset,
                                           size, staging, 0, NULL, NULL);
    status = accel_opencl_check(device->host, err, "clEnqueueWriteBuffer");
  }
  free(staging);
  return status;
}

accel_status_t accel_opencl_copy_peer(void* device_ptr, void* stream_ptr,
                                      void* dst, size_t dst_offset,
                                      void* src_device_ptr, const void* src,
                                      size_t src_offset, size_t size) {
  accel_opencl_device_t* device = device_ptr;
  accel_opencl_device_t* src_device = src_device_ptr;
  cl_mem d = ((accel_opencl_mem_t*)dst)->mem;
  cl_mem s = ((const accel_opencl_mem_t*)src)->mem;
  if (device->context != src_device->context) {
    return accel_opencl_copy_via_host(device, stream_ptr, d, dst_offset,
                                      src_device, s, src_offset, size);
  }
  // Buffers belong to the context, so one copy moves data between its
  // devices (the runtime migrates the source as needed).
  return accel_opencl_copy_one(device, stream_ptr, d, dst_offset, s, src_offset,
                               size);
}

accel_status_t accel_opencl_fill(accel_opencl_device_t* device,
                                 cl_command_queue queue,
                                 accel_opencl_mem_t* mem, uint64_t offset,
                                 const void* pattern, size_t pattern_size,
                                 uint64_t size, cl_event* out_event) {
  const accel_opencl_api_t* cl = device->cl;
  uint64_t end = offset + size;
  if (pattern_size >= 4 || end <= ACCEL_OPENCL_FILL_NARROW_END) {
    cl_int err = cl->clEnqueueFillBuffer(queue, mem->mem, pattern,
                                         pattern_size, offset, size, 0, NULL,
                                         out_event);
    return accel_opencl_check(device->host, err, "clEnqueueFillBuffer");
  }
  // `wide`: the pattern repeated to 4 bytes. Elements start at every
  // 4-aligned byte (offset is a multiple of pattern_size, which divides 4),
  // and the head and tail are under 4 bytes of whole elements, so each is
  // the start of `wide` too.
  unsigned char wide[4];
  for (size_t i = 0; i < sizeof(wide); i++) {
    wide[i] = ((const unsigned char*)pattern)[i % pattern_size];
  }
  uint64_t mid = (offset + 3) & ~(uint64_t)3;
  uint64_t mid_end = end & ~(uint64_t)3;
  if (mid > mid_end) mid = mid_end = end;  // under 4 bytes: a head only
  // The head and tail are copied from a scratch buffer of the pattern (a
  // buffer of their own, released once enqueued: the runtime keeps it for
  // the copies), the middle is filled with the 4-byte pattern.
  cl_int err = CL_SUCCESS;
  const char* what = "clCreateBuffer (fill pattern)";
  cl_mem scratch = cl->clCreateBuffer(device->context, CL_MEM_READ_WRITE,
                                      sizeof(wide), NULL, &err);
  if (err != CL_SUCCESS) return accel_opencl_check(device->host, err, what);
  struct {
    uint64_t dst, bytes;
    bool fill;  // the middle; else a copy from scratch
  } steps[3] = {{offset, mid - offset, false},
                {mid, mid_end - mid, true},
                {mid_end, end - mid_end, false}};
  int last = 2;
  while (last > 0 && steps[last].bytes == 0) last--;
  what = "clEnqueueFillBuffer (fill pattern)";
  err = cl->clEnqueueFillBuffer(queue, scratch, wide, sizeof(wide), 0,
                                sizeof(wide), 0, NULL, NULL);
  for (int i = 0; err == CL_SUCCESS && i <= last; i++) {
    if (steps[i].bytes == 0) continue;
    cl_event* event = i == last ? out_event : NULL;
    if (steps[i].fill) {
      what = "clEnqueueFillBuffer";
      err = cl->clEnqueueFillBuffer(queue, mem->mem, wide, sizeof(wide),
                                    steps[i].dst, steps[i].bytes, 0, NULL,
                                    event);
    } else {
      what = "clEnqueueCopyBuffer (fill head or tail)";
      err = cl->clEnqueueCopyBuffer(queue, scratch, mem->mem, 0,
                                    steps[i].dst, steps[i].bytes, 0, NULL,
                                    event);
    }
  }
  cl->clReleaseMemObject(scratch);
  return accel_opencl_check(device->host, err, what);
}

accel_status_t accel_opencl_memset(void* device_ptr, void* stream_ptr,
                                   void* dst, size_t offset, uint8_t value,
                                   size_t size) {
  accel_opencl_device_t* device = device_ptr;
  accel_opencl_stream_t* stream = stream_ptr;
  cl_event event = NULL;
  accel_status_t status = accel_opencl_fill(
      device, accel_opencl_queue(device, stream), dst, offset, &value, 1, size,
      stream == NULL ? &event : NULL);
  if (status != ACCEL_OK) return status;
  cl_int err = CL_SUCCESS;
  if (stream == NULL) {
    err = device->cl->clWaitForEvents(1, &event);
    device->cl->clReleaseEvent(event);
  }
  return accel_opencl_done(device, stream, err, "clEnqueueFillBuffer");
}
