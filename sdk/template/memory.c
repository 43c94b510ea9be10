// SPDX-License-Identifier: MIT
//
// Device memory of the template plugin: aligned host allocations counted
// against TEMPLATE_DEVICE_MEMORY, and the copies and fills on them, run at
// once (stream NULL) or queued on a stream as tasks.
//
// Each allocation is preceded by one alignment unit holding its size, so
// mem_free can give the bytes back. The memory handle is the data address
// itself, so the copies and ops below (and the kernels of module.c) find
// byte `offset` at handle + offset. Wrapped memory (mem_wrap, DLPack
// import) gets a handle of the same kind, its own address, and works
// everywhere unchanged; it has no header and is not counted against
// TEMPLATE_DEVICE_MEMORY, which is fine because the core never passes it
// to mem_free. A real backend calls its runtime here (cuMemAlloc,
// cuMemcpyHtoDAsync, ...) and keeps the same shape.
#include <stdlib.h>
#include <string.h>

#include "template.h"

// Header stored in the TEMPLATE_ALIGNMENT bytes before the data.
typedef struct template_mem_header {
  size_t size;
} template_mem_header_t;

accel_status_t template_mem_alloc(void* device_ptr, size_t size,
                                  void** out_mem) {
  template_device_t* device = device_ptr;
  *out_mem = NULL;
  uint64_t allocated = atomic_load(&device->allocated);
  do {
    if (size > TEMPLATE_DEVICE_MEMORY - allocated ||
        allocated > TEMPLATE_DEVICE_MEMORY) {
      return device->host->fail(
          device->host, ACCEL_ERROR_OUT_OF_DEVICE_MEMORY,
          TEMPLATE_NAME
          ":%u: cannot allocate %zu bytes: %llu of %llu bytes "
          "in use",
          device->index, size, (unsigned long long)allocated,
          (unsigned long long)TEMPLATE_DEVICE_MEMORY);
    }
  } while (!atomic_compare_exchange_weak(&device->allocated, &allocated,
                                         allocated + size));
  size_t rounded =
      (size + TEMPLATE_ALIGNMENT - 1) & ~(size_t)(TEMPLATE_ALIGNMENT - 1);
  unsigned char* base =
      aligned_alloc(TEMPLATE_ALIGNMENT, rounded + TEMPLATE_ALIGNMENT);
  if (base == NULL) {
    atomic_fetch_sub(&device->allocated, size);
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_DEVICE_MEMORY,
                              TEMPLATE_NAME
                              ":%u: host allocation of %zu "
                              "bytes failed",
                              device->index, size);
  }
  template_mem_header_t header = {.size = size};
  memcpy(base, &header, sizeof(header));
  *out_mem = base + TEMPLATE_ALIGNMENT;
  return ACCEL_OK;
}

void template_mem_free(void* device_ptr, void* mem) {
  template_device_t* device = device_ptr;
  if (mem == NULL) return;
  unsigned char* base = (unsigned char*)mem - TEMPLATE_ALIGNMENT;
  template_mem_header_t header;
  memcpy(&header, base, sizeof(header));
  atomic_fetch_sub(&device->allocated, header.size);
  free(base);
}

accel_status_t template_mem_address(void* device, void* mem, uint64_t offset,
                                    uint64_t* out_address) {
  (void)device;
  *out_address = (uint64_t)(uintptr_t)((unsigned char*)mem + offset);
  return ACCEL_OK;
}

accel_status_t template_mem_wrap(void* device_ptr, uint64_t address,
                                 size_t size, void** out_mem) {
  template_device_t* device = device_ptr;
  *out_mem = NULL;
  // Any host address is this device's memory. A GPU backend asks its driver
  // instead and refuses memory of another device, host memory and a range
  // past the end of its allocation (cuPointerGetAttribute, docs/
  // plugin-guide.md) with ACCEL_ERROR_INVALID_ARGUMENT.
  uintptr_t p = (uintptr_t)address;
  if (p == 0 || (uint64_t)p != address || size > UINTPTR_MAX - p) {
    return device->host->fail(device->host, ACCEL_ERROR_INVALID_ARGUMENT,
                              TEMPLATE_NAME
                              ":%u: cannot wrap %zu bytes at 0x%llx: not a "
                              "host address range",
                              device->index, size, (unsigned long long)address);
  }
  // The address itself, as mem_alloc's handles are, at whatever alignment
  // the owner chose. No header, and `allocated` is untouched: the memory
  // stays the owner's.
  *out_mem = (void*)p;
  return ACCEL_OK;
}

void template_mem_unwrap(void* device, void* mem) {
  (void)device;
  (void)mem;  // nothing to forget, and never free: the owner frees it
}

// Task: memmove(dst, src, size). memmove, not memcpy, because a
// same-allocation device copy may overlap.
static accel_status_t template_copy_task(template_task_t* task, char* message,
                                         size_t size) {
  (void)message;
  (void)size;
  size_t n = task->size;
#ifdef CONFORM_BUG_OFF_BY_ONE_COPY
  // Deliberate bug for tests/conform/fixtures: drop the last byte.
  if (n > 1) n--;
#endif
#ifdef CONFORM_BUG_CRASH_COPY
  // Deliberate bug for tests/conform/fixtures: a write to address 16, an
  // unmapped page (not NULL, which UBSan would stop before the fault).
  volatile unsigned char* volatile nowhere =
      (volatile unsigned char*)(uintptr_t)16;
  nowhere[0] = 1;
#endif
  memmove(task->dst, task->src, n);
  return ACCEL_OK;
}

// Task: memset(dst, (int)value, size).
static accel_status_t template_fill_task(template_task_t* task, char* message,
                                         size_t size) {
  (void)message;
  (void)size;
  memset(task->dst, (int)task->value, task->size);
  return ACCEL_OK;
}

static accel_status_t template_copy(template_device_t* device, void* stream,
                                    void* dst, const void* src, size_t size) {
  template_task_t* task = template_task_create(template_copy_task);
  if (task == NULL) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              TEMPLATE_NAME ":%u: copy task", device->index);
  }
  task->dst = dst;
  task->src = src;
  task->size = size;
  return template_submit(device->host, stream, task);
}

accel_status_t template_copy_h2d(void* device, void* stream, void* dst,
                                 size_t dst_offset, const void* src,
                                 size_t size) {
  return template_copy(device, stream, (char*)dst + dst_offset, src, size);
}

accel_status_t template_copy_d2h(void* device, void* stream, void* dst,
                                 const void* src, size_t src_offset,
                                 size_t size) {
  return template_copy(device, stream, dst, (const char*)src + src_offset,
                       size);
}

accel_status_t template_copy_d2d(void* device, void* stream, void* dst,
                                 size_t dst_offset, const void* src,
                                 size_t src_offset, size_t size) {
  return template_copy(device, stream, (char*)dst + dst_offset,
                       (const char*)src + src_offset, size);
}

accel_status_t template_memset(void* device_ptr, void* stream, void* dst,
                               size_t offset, uint8_t value, size_t size) {
  template_device_t* device = device_ptr;
  template_task_t* task = template_task_create(template_fill_task);
  if (task == NULL) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              TEMPLATE_NAME ":%u: memset task", device->index);
  }
  task->dst = (char*)dst + offset;
  task->value = value;
  task->size = size;
  return template_submit(device->host, stream, task);
}
