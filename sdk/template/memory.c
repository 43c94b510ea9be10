// SPDX-License-Identifier: MIT
//
// Device memory of the template plugin: aligned host allocations counted
// against TEMPLATE_DEVICE_MEMORY, and the copies and fills on them, run at
// once (stream NULL) or queued on a stream as tasks.
//
// Each allocation is preceded by one alignment unit holding its size, so
// mem_free can give the bytes back. A real backend calls its runtime here
// (cuMemAlloc, cuMemcpyHtoDAsync, ...) and keeps the same shape.
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
