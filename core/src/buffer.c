// SPDX-License-Identifier: MIT
//
// Buffers: device memory with a known device and size, so every copy can be
// checked for bounds and devices before it reaches a plugin.
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"
#include "internal.h"
#include "trace.h"

accel_status_t accel__check_buffer(const char* what, const char* operand,
                                   const accel_buffer_t* buffer) {
  if (buffer == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: %s buffer is NULL",
                       what, operand);
  }
  // A stale handle never names a newer buffer (handle.c).
  if (accel__buffer_released(buffer)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: the %s buffer was already released", what,
                       operand);
  }
  return ACCEL_OK;
}

accel_status_t accel__range_fail(const char* what, const char* operand,
                                 const accel_buffer_t* buffer, size_t offset,
                                 size_t size) {
  accel_status_t status = accel__check_buffer(what, operand, buffer);
  if (status != ACCEL_OK) return status;
  if (size == 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: size is 0", what);
  }
  if (size > buffer->size || offset > buffer->size - size) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %s range [%zu, %zu + %zu) is outside the "
                       "%zu-byte buffer on %s",
                       what, operand, offset, offset, size, buffer->size,
                       buffer->device->uri);
  }
  return ACCEL_OK;
}

accel_status_t accel_buffer_create(accel_device_t* device, size_t size,
                                   accel_buffer_t** out_buffer) {
  ACCEL__TRACE_API("accel_buffer_create");
  if (out_buffer != NULL) *out_buffer = NULL;
  if (device == NULL || out_buffer == NULL || size == 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_buffer_create: device, a non-zero size and "
                       "out_buffer are required");
  }
  return accel__allocator_alloc(device, NULL, size, out_buffer);
}

// A released handle never names a newer buffer (handle.c), so retaining or
// releasing it again is caught and ignored; the message goes to
// accel_last_error() and the error log.
void accel_buffer_retain(accel_buffer_t* buffer) {
  if (buffer != NULL && accel__refs_step(buffer, &buffer->refs, true) == 0) {
    accel__handle_dead("accel_buffer_retain", "buffer", buffer);
  }
}

void accel_buffer_release(accel_buffer_t* buffer) {
  ACCEL__TRACE_API("accel_buffer_release");
  if (buffer == NULL) return;
  unsigned refs = accel__refs_step(buffer, &buffer->refs, false);
  if (refs == 0) accel__handle_dead("accel_buffer_release", "buffer", buffer);
  if (refs != 1) return;
  accel_device_t* device = buffer->device;
  if (buffer->wrapped) {
    accel__wrapped_free(buffer);  // unwraps and calls the owner's release
  } else {
    accel__allocator_free(buffer);
  }
  accel__handle_free(buffer);  // the handle is stale from here on
  accel_device_release(device);
}

// A released handle has size 0 and no device.
size_t accel_buffer_size(const accel_buffer_t* buffer) {
  return buffer != NULL && !accel__buffer_released(buffer) ? buffer->size
                                                           : 0;
}

accel_device_t* accel_buffer_device(const accel_buffer_t* buffer) {
  return buffer != NULL && !accel__buffer_released(buffer) ? buffer->device
                                                           : NULL;
}

accel_status_t accel_buffer_query_address(const accel_buffer_t* buffer,
                                          size_t offset,
                                          uint64_t* out_address) {
  if (out_address != NULL) *out_address = 0;
  if (buffer == NULL || out_address == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_buffer_query_address: buffer and out_address "
                       "are required");
  }
  accel_status_t live =
      accel__check_buffer("accel_buffer_query_address", "given", buffer);
  if (live != ACCEL_OK) return live;
  if (offset > buffer->size) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_buffer_query_address: offset %zu is past the "
                       "end of the %zu-byte buffer",
                       offset, buffer->size);
  }
  accel_device_t* d = buffer->device;
  accel_status_t status =
      d->ops->mem_address(d->impl, accel__buffer_mem(buffer),
                          accel__buffer_offset(buffer, offset), out_address);
  if (status != ACCEL_OK) {
    *out_address = 0;
    return accel__fail_plugin(status, "accel_buffer_query_address", d);
  }
  return ACCEL_OK;
}

accel_status_t accel_buffer_write(accel_buffer_t* buffer, size_t offset,
                                  const void* src, size_t size) {
  ACCEL__TRACE_API("accel_buffer_write");
  accel_status_t status =
      accel__check_range("accel_buffer_write", "dst", buffer, offset, size);
  if (status == ACCEL_OK) {
    status = accel__graph_check_buffer(buffer, "accel_buffer_write");
  }
  if (status != ACCEL_OK) return status;
  if (src == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_buffer_write: src is NULL");
  }
  accel_device_t* d = buffer->device;
  return d->ops->copy_h2d(d->impl, NULL, buffer->impl,
                          accel__buffer_offset(buffer, offset), src, size);
}

accel_status_t accel_buffer_read(accel_buffer_t* buffer, size_t offset,
                                 void* dst, size_t size) {
  ACCEL__TRACE_API("accel_buffer_read");
  accel_status_t status =
      accel__check_range("accel_buffer_read", "src", buffer, offset, size);
  if (status == ACCEL_OK) {
    status = accel__graph_check_buffer(buffer, "accel_buffer_read");
  }
  if (status != ACCEL_OK) return status;
  if (dst == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_buffer_read: dst is NULL");
  }
  accel_device_t* d = buffer->device;
  return d->ops->copy_d2h(d->impl, NULL, dst, buffer->impl,
                          accel__buffer_offset(buffer, offset), size);
}

accel_status_t accel__copy_staged(accel_buffer_t* dst, size_t dst_offset,
                                  accel_buffer_t* src, size_t src_offset,
                                  size_t size) {
  void* bounce = malloc(size);
  if (bounce == NULL) {
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                       "copy from %s to %s: no host memory for a %zu-byte "
                       "bounce buffer",
                       src->device->uri, dst->device->uri, size);
  }
  accel_device_t* s = src->device;
  accel_device_t* d = dst->device;
  accel_status_t status =
      s->ops->copy_d2h(s->impl, NULL, bounce, src->impl,
                       accel__buffer_offset(src, src_offset), size);
  if (status == ACCEL_OK) {
    status =
        d->ops->copy_h2d(d->impl, NULL, dst->impl,
                         accel__buffer_offset(dst, dst_offset), bounce, size);
  }
  free(bounce);
  return status;
}

accel_status_t accel_buffer_copy(accel_buffer_t* dst, size_t dst_offset,
                                 accel_buffer_t* src, size_t src_offset,
                                 size_t size) {
  ACCEL__TRACE_API("accel_buffer_copy");
  accel_status_t status =
      accel__check_range("accel_buffer_copy", "dst", dst, dst_offset, size);
  if (status == ACCEL_OK) {
    status =
        accel__check_range("accel_buffer_copy", "src", src, src_offset, size);
  }
  if (status == ACCEL_OK) {
    status = accel__graph_check_buffer(dst, "accel_buffer_copy");
  }
  if (status == ACCEL_OK) {
    status = accel__graph_check_buffer(src, "accel_buffer_copy");
  }
  if (status != ACCEL_OK) return status;
  accel_device_t* d = dst->device;
  accel_device_t* s = src->device;
  if (d == s) {
    return d->ops->copy_d2d(d->impl, NULL, dst->impl,
                            accel__buffer_offset(dst, dst_offset), src->impl,
                            accel__buffer_offset(src, src_offset), size);
  }
  if (d->plugin == s->plugin) {
    return d->plugin->copy_peer(d->plugin, d->impl, NULL, dst->impl,
                                accel__buffer_offset(dst, dst_offset), s->impl,
                                src->impl,
                                accel__buffer_offset(src, src_offset), size);
  }
  return accel__copy_staged(dst, dst_offset, src, src_offset, size);
}

accel_status_t accel_buffer_fill(accel_buffer_t* buffer, size_t offset,
                                 uint8_t value, size_t size) {
  ACCEL__TRACE_API("accel_buffer_fill");
  accel_status_t status =
      accel__check_range("accel_buffer_fill", "dst", buffer, offset, size);
  if (status == ACCEL_OK) {
    status = accel__graph_check_buffer(buffer, "accel_buffer_fill");
  }
  if (status != ACCEL_OK) return status;
  accel_device_t* d = buffer->device;
  return d->ops->memset(d->impl, NULL, buffer->impl,
                        accel__buffer_offset(buffer, offset), value, size);
}
