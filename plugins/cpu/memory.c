// SPDX-License-Identifier: MIT
//
// Device memory of the CPU plugin: 64-byte-aligned host allocations with a
// per-device byte count (for ACCEL_CPU_MEMORY_LIMIT), and the copies and
// fills on them, run at once (stream NULL), queued on a stream, or run at
// once on an idle stream when small (stream.c).
//
// Each allocation is preceded by one alignment unit holding its requested
// size, so mem_free can give the bytes back to the device's count. The
// memory handle is the aligned data address itself.
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

// Header stored in the ACCEL_CPU_ALIGNMENT bytes before the data.
typedef struct accel_cpu_mem_header {
  size_t size;  // bytes requested from mem_alloc
} accel_cpu_mem_header_t;

_Static_assert(sizeof(accel_cpu_mem_header_t) <= ACCEL_CPU_ALIGNMENT,
               "the allocation header must fit in one alignment unit");

// Adds `size` to the device's allocated bytes unless that would exceed its
// limit. Lock-free so concurrent allocations never overshoot the limit.
static accel_status_t accel_cpu_mem_reserve(accel_cpu_device_t* device,
                                            size_t size) {
  uint64_t allocated = atomic_load(&device->allocated);
  for (;;) {
    uint64_t limit = device->memory_limit;
    if (limit != 0 && (size > limit || allocated > limit - size)) {
      return device->host->fail(
          device->host, ACCEL_ERROR_OUT_OF_DEVICE_MEMORY,
          "cpu:%u: cannot allocate %zu bytes: %llu of %llu bytes allocated "
          "(ACCEL_CPU_MEMORY_LIMIT)",
          device->index, size, (unsigned long long)allocated,
          (unsigned long long)limit);
    }
    if (atomic_compare_exchange_weak(&device->allocated, &allocated,
                                     allocated + size)) {
      return ACCEL_OK;
    }
  }
}

accel_status_t accel_cpu_mem_alloc(void* device_ptr, size_t size,
                                   void** out_mem) {
  accel_cpu_device_t* device = device_ptr;
  *out_mem = NULL;
  // aligned_alloc needs a multiple of the alignment; add the header unit.
  size_t rounded =
      (size + ACCEL_CPU_ALIGNMENT - 1) & ~(size_t)(ACCEL_CPU_ALIGNMENT - 1);
  if (rounded < size || rounded > SIZE_MAX - ACCEL_CPU_ALIGNMENT) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_DEVICE_MEMORY,
                              "cpu:%u: cannot allocate %zu bytes: too large",
                              device->index, size);
  }
  accel_status_t status = accel_cpu_mem_reserve(device, size);
  if (status != ACCEL_OK) return status;
  unsigned char* base =
      aligned_alloc(ACCEL_CPU_ALIGNMENT, rounded + ACCEL_CPU_ALIGNMENT);
  if (base == NULL) {
    uint64_t allocated = atomic_fetch_sub(&device->allocated, size) - size;
    return device->host->fail(
        device->host, ACCEL_ERROR_OUT_OF_DEVICE_MEMORY,
        "cpu:%u: cannot allocate %zu bytes: host allocation failed with "
        "%llu bytes allocated on this device",
        device->index, size, (unsigned long long)allocated);
  }
  accel_cpu_mem_header_t header = {.size = size};
  memcpy(base, &header, sizeof(header));
  *out_mem = base + ACCEL_CPU_ALIGNMENT;
  return ACCEL_OK;
}

void accel_cpu_mem_free(void* device_ptr, void* mem) {
  accel_cpu_device_t* device = device_ptr;
  if (mem == NULL) return;
  unsigned char* base = (unsigned char*)mem - ACCEL_CPU_ALIGNMENT;
  accel_cpu_mem_header_t header;
  memcpy(&header, base, sizeof(header));
  atomic_fetch_sub(&device->allocated, header.size);
  free(base);
}

accel_status_t accel_cpu_mem_address(void* device_ptr, void* mem,
                                     uint64_t offset, uint64_t* out_address) {
  (void)device_ptr;
  // The handle is the data address itself (see the top of this file).
  *out_address = (uint64_t)(uintptr_t)((unsigned char*)mem + offset);
  return ACCEL_OK;
}

accel_status_t accel_cpu_mem_wrap(void* device_ptr, uint64_t address,
                                  size_t size, void** out_mem) {
  accel_cpu_device_t* device = device_ptr;
  *out_mem = NULL;
  uintptr_t p = (uintptr_t)address;
  if (p == 0 || (uint64_t)p != address || size > UINTPTR_MAX - p) {
    return device->host->fail(device->host, ACCEL_ERROR_INVALID_ARGUMENT,
                              "cpu:%u: cannot wrap %zu bytes at 0x%llx: not "
                              "a host address range",
                              device->index, size, (unsigned long long)address);
  }
  // The handle is the data address (as for mem_alloc), but no header
  // precedes it: the core unwraps it and never calls mem_free on it.
  *out_mem = (void*)p;
  return ACCEL_OK;
}

void accel_cpu_mem_unwrap(void* device_ptr, void* mem) {
  (void)device_ptr, (void)mem;  // the memory stays its owner's
}

accel_status_t accel_cpu_native_handle(void* device_ptr, uint32_t kind,
                                       void* object, uint64_t* out_handle) {
  accel_cpu_device_t* device = device_ptr;
  *out_handle = 0;
  static const char* const names[] = {"device", "context", "stream", "event"};
  if (kind == ACCEL_PLUGIN_NATIVE_MEMORY) {
    // The handle is the data address itself (see the top of this file).
    *out_handle = (uint64_t)(uintptr_t)object;
    return ACCEL_OK;
  }
  return device->host->fail(
      device->host, ACCEL_ERROR_UNSUPPORTED,
      "cpu:%u: the CPU backend has no native %s object: its devices, "
      "streams and events are accel's own (memory is a host pointer)",
      device->index, kind < 4 ? names[kind] : "(unknown kind)");
}

// Runs a copy (`src` not NULL) or fill of `size` bytes on the calling
// thread if `stream` is idle and the size is small enough (see stream.c and
// ACCEL_CPU_INLINE_BYTES in cpu.h); false when it must be queued instead.
// Up to ACCEL_CPU_INLINE_HOLD_BYTES the stream's mutex stays held
// throughout: one lock round trip instead of two, which matters against a
// memcpy of ~50 ns, and nothing else waits long for it (a few µs at most).
// A memcpy/memset runs no user code and takes no other lock.
static bool accel_cpu_bytes_inline(accel_cpu_device_t* device,
                                   accel_cpu_stream_t* stream, void* dst,
                                   const void* src, uint8_t value, size_t size,
                                   bool overlap) {
  bool hold = size <= ACCEL_CPU_INLINE_HOLD_BYTES;
  if (size > ACCEL_CPU_INLINE_BYTES ||
      !accel_cpu_stream_inline_begin(stream, hold)) {
    return false;
  }
  if (src != NULL) {
    accel_cpu_copy_run(device->plugin, dst, src, size, overlap);
  } else {
    accel_cpu_fill_run(device->plugin, dst, value, size);
  }
  accel_cpu_stream_inline_end(stream, hold, ACCEL_OK, NULL);
  return true;
}

// Queues a copy of `size` bytes on `stream` (or runs it here when the
// stream is idle and the copy small).
static accel_status_t accel_cpu_copy_queue(accel_cpu_device_t* device,
                                           void* stream, void* dst,
                                           const void* src, size_t size,
                                           bool overlap) {
  if (accel_cpu_bytes_inline(device, stream, dst, src, 0, size, overlap)) {
    return ACCEL_OK;
  }
  accel_cpu_task_t* task = accel_cpu_task_create(ACCEL_CPU_TASK_COPY);
  if (task == NULL) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              "cpu:%u: cannot queue a copy of %zu bytes",
                              device->index, size);
  }
  task->u.copy.dst = dst;
  task->u.copy.src = src;
  task->u.copy.size = size;
  task->u.copy.overlap = overlap;
  accel_cpu_stream_submit(stream, task);
  return ACCEL_OK;
}

// Queues (or, for a NULL stream, runs) a copy of `size` bytes.
static inline accel_status_t accel_cpu_copy(accel_cpu_device_t* device,
                                            void* stream, void* dst,
                                            const void* src, size_t size,
                                            bool overlap) {
  if (stream == NULL) {
    // Run in the caller without a task: nothing to allocate, nothing to
    // fail.
    accel_cpu_copy_run(device->plugin, dst, src, size, overlap);
    return ACCEL_OK;
  }
  return accel_cpu_copy_queue(device, stream, dst, src, size, overlap);
}

accel_status_t accel_cpu_copy_h2d(void* device, void* stream, void* dst,
                                  size_t dst_offset, const void* src,
                                  size_t size) {
  return accel_cpu_copy(device, stream, (unsigned char*)dst + dst_offset, src,
                        size, false);
}

accel_status_t accel_cpu_copy_d2h(void* device, void* stream, void* dst,
                                  const void* src, size_t src_offset,
                                  size_t size) {
  return accel_cpu_copy(device, stream, dst,
                        (const unsigned char*)src + src_offset, size, false);
}

accel_status_t accel_cpu_copy_d2d(void* device, void* stream, void* dst,
                                  size_t dst_offset, const void* src,
                                  size_t src_offset, size_t size) {
  // Only regions of one allocation may overlap (plugin.h).
  return accel_cpu_copy(device, stream, (unsigned char*)dst + dst_offset,
                        (const unsigned char*)src + src_offset, size,
                        dst == src);
}

accel_status_t accel_cpu_copy_peer(void* device, void* stream, void* dst,
                                   size_t dst_offset, void* src_device,
                                   const void* src, size_t src_offset,
                                   size_t size) {
  // Every cpu device lives in host memory, so a peer copy is a plain copy
  // queued on the destination device's stream.
  (void)src_device;
  return accel_cpu_copy(device, stream, (unsigned char*)dst + dst_offset,
                        (const unsigned char*)src + src_offset, size, false);
}

accel_status_t accel_cpu_memset(void* device_ptr, void* stream, void* dst,
                                size_t offset, uint8_t value, size_t size) {
  accel_cpu_device_t* device = device_ptr;
  unsigned char* target = (unsigned char*)dst + offset;
  if (stream == NULL) {
    accel_cpu_fill_run(device->plugin, target, value, size);
    return ACCEL_OK;
  }
  if (accel_cpu_bytes_inline(device, stream, target, NULL, value, size,
                             false)) {
    return ACCEL_OK;
  }
  accel_cpu_task_t* task = accel_cpu_task_create(ACCEL_CPU_TASK_FILL);
  if (task == NULL) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              "cpu:%u: cannot queue a fill of %zu bytes",
                              device->index, size);
  }
  task->u.fill.dst = target;
  task->u.fill.size = size;
  task->u.fill.value = value;
  accel_cpu_stream_submit(stream, task);
  return ACCEL_OK;
}
