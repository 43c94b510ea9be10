// SPDX-License-Identifier: MIT
//
// Streams: in-order asynchronous queues. The core checks devices and bounds
// and hands the work to the plugin, which enqueues it.
#include <stdlib.h>
#include <time.h>

#include "graph_internal.h"
#include "internal.h"
#include "trace.h"

accel_status_t accel__stream_open(const char* what, accel_device_t* device,
                                  accel_stream_flags_t flags,
                                  const int32_t* priority,
                                  accel_stream_t** out_stream) {
  if (out_stream != NULL) *out_stream = NULL;
  if (device == NULL || out_stream == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: device and out_stream are required", what);
  }
  if (flags != 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: unknown flags 0x%x",
                       what, flags);
  }
  accel_stream_t* stream = accel__handle_new(sizeof(*stream));
  if (stream == NULL) {
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "stream handle");
  }
  accel_status_t status =
      priority == NULL
          ? device->ops->stream_create(device->impl, flags, &stream->impl)
          : device->ops->stream_create_priority(device->impl, flags, *priority,
                                                &stream->impl);
  if (status != ACCEL_OK) {
    accel__handle_free(stream);
    return status;
  }
  atomic_init(&stream->refs, 1);
  atomic_init(&stream->weak, 1);  // held by the strong references together
  stream->device = device;
  stream->priority = priority != NULL ? *priority : 0;
  accel_device_retain(device);
  accel__stream_live_add(stream);
  *out_stream = stream;
  return ACCEL_OK;
}

accel_status_t accel_stream_create(accel_device_t* device,
                                   accel_stream_flags_t flags,
                                   accel_stream_t** out_stream) {
  ACCEL__TRACE_API("accel_stream_create");
  return accel__stream_open("accel_stream_create", device, flags, NULL,
                            out_stream);
}

void accel_stream_retain(accel_stream_t* stream) {
  if (stream != NULL && accel__refs_step(stream, &stream->refs, true) == 0) {
    accel__handle_dead("accel_stream_retain", "stream", stream);
  }
}

// The stream this thread is releasing (its teardown below), so that a
// drain reached from that teardown (a discarded capture's graph) does not
// wait for the destruction it is part of.
static _Thread_local const accel_stream_t* accel__stream_releasing;

void accel_stream_release(accel_stream_t* stream) {
  ACCEL__TRACE_API("accel_stream_release");
  if (stream == NULL) return;
  unsigned refs = accel__refs_step(stream, &stream->refs, false);
  if (refs == 0) accel__handle_dead("accel_stream_release", "stream", stream);
  if (refs != 1) return;
  accel_device_t* device = stream->device;
  const accel_stream_t* outer = accel__stream_releasing;
  accel__stream_releasing = stream;
  accel__graph_stream_dying(stream);
  accel__stream_live_remove(stream);
  // The allocator must know before the plugin stream goes (it may be
  // recording an event on it) and after its work is done (its cached
  // blocks become everyone's). Buffers may still hold weak references.
  accel__allocator_stream_dying(stream);
  accel__trace_stream_release(stream);
  device->ops->stream_destroy(stream->impl);
  accel__allocator_stream_dead(stream);
  atomic_store_explicit(&stream->destroyed, true, memory_order_release);
  accel__stream_releasing = outer;
  accel_device_release(device);
  accel__stream_weak_release(stream);
}

bool accel__stream_try_retain(accel_stream_t* stream) {
  unsigned refs = atomic_load(&stream->refs);
  while (refs != 0) {
    if (atomic_compare_exchange_weak(&stream->refs, &refs, refs + 1)) {
      return true;
    }
  }
  return false;
}

void accel__stream_weak_retain(accel_stream_t* stream) {
  atomic_fetch_add_explicit(&stream->weak, 1, memory_order_relaxed);
}

void accel__stream_drain_weak(accel_stream_t* stream) {
  if (accel__stream_try_retain(stream)) {
    if (stream->device->ops->stream_synchronize(stream->impl) != ACCEL_OK) {
      accel__log(ACCEL_LOG_DEBUG, "%s: draining a stream: %s",
                 stream->device->uri, accel_last_error());
    }
    accel_stream_release(stream);
    return;
  }
  // This thread's own release of the stream reached here: its
  // stream_destroy, which waits for the work, comes after.
  if (stream == accel__stream_releasing) return;
  while (!accel__stream_gone(stream)) {
    struct timespec pause = {0, 100 * 1000};
    nanosleep(&pause, NULL);
  }
}

bool accel__stream_gone(const accel_stream_t* stream) {
  return atomic_load_explicit(&stream->destroyed, memory_order_acquire);
}

void accel__stream_weak_release(accel_stream_t* stream) {
  if (atomic_fetch_sub(&stream->weak, 1) == 1) accel__handle_free(stream);
}

accel_device_t* accel_stream_device(const accel_stream_t* stream) {
  return stream != NULL ? stream->device : NULL;
}

accel_status_t accel_stream_synchronize(accel_stream_t* stream) {
  ACCEL__TRACE_API("accel_stream_synchronize");
  if (stream == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_stream_synchronize: stream is NULL");
  }
  if (accel__capturing(stream)) {
    return accel__graph_illegal_wait(stream, "accel_stream_synchronize");
  }
  accel_status_t status = stream->device->ops->stream_synchronize(stream->impl);
  if (status == ACCEL_OK) accel__trace_stream_resolve(stream);
  return status;
}

accel_status_t accel_stream_query(accel_stream_t* stream, bool* out_done) {
  ACCEL__TRACE_API("accel_stream_query");
  if (out_done != NULL) *out_done = false;
  if (stream == NULL || out_done == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_stream_query: stream and out_done are required");
  }
  if (accel__capturing(stream)) {
    return accel__graph_illegal_wait(stream, "accel_stream_query");
  }
  return stream->device->ops->stream_query(stream->impl, out_done);
}

accel_status_t accel_stream_wait_event(accel_stream_t* stream,
                                       accel_event_t* event) {
  ACCEL__TRACE_API("accel_stream_wait_event");
  if (stream == NULL || event == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_stream_wait_event: stream and event are "
                       "required");
  }
  if (stream->device->plugin != event->device->plugin) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_stream_wait_event: the stream is on %s but the "
                       "event is on %s, another backend",
                       stream->device->uri, event->device->uri);
  }
  if (accel__capturing(stream)) return accel__graph_event_wait(stream, event);
  accel_status_t status =
      accel__graph_check_event(event, "accel_stream_wait_event");
  if (status != ACCEL_OK) return status;
  return stream->device->ops->stream_wait_event(stream->impl, event->impl);
}

// Checks that `buffer` is on the stream's device; `operand` names it.
static accel_status_t accel__check_device(const char* what, const char* operand,
                                          const accel_stream_t* stream,
                                          const accel_buffer_t* buffer) {
  if (buffer->device != stream->device) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %s buffer is on %s but the stream is on %s", what,
                       operand, buffer->device->uri, stream->device->uri);
  }
  return ACCEL_OK;
}

// Common checks for a stream operation on `buffer`.
static accel_status_t accel__check_stream_op(const char* what,
                                             const char* operand,
                                             const accel_stream_t* stream,
                                             const accel_buffer_t* buffer,
                                             size_t offset, size_t size) {
  if (stream == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: stream is NULL",
                       what);
  }
  accel_status_t status =
      accel__check_range(what, operand, buffer, offset, size);
  if (status != ACCEL_OK) return status;
  return accel__check_device(what, operand, stream, buffer);
}

accel_status_t accel_stream_write_buffer(accel_stream_t* stream,
                                         accel_buffer_t* dst, size_t dst_offset,
                                         const void* src, size_t size) {
  ACCEL__TRACE_STREAM_API("accel_stream_write_buffer", stream);
  static const char what[] = "accel_stream_write_buffer";
  accel_status_t status =
      accel__check_stream_op(what, "dst", stream, dst, dst_offset, size);
  if (status != ACCEL_OK) return status;
  if (src == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: src is NULL", what);
  }
  status = accel__buffer_use(dst, stream);
  if (status != ACCEL_OK) return status;
  if (accel__capturing(stream)) {
    return accel__graph_copy_h2d(stream, dst, dst_offset, src, size);
  }
  accel_device_t* d = stream->device;
  return d->ops->copy_h2d(d->impl, stream->impl, dst->impl,
                          accel__buffer_offset(dst, dst_offset), src, size);
}

accel_status_t accel_stream_read_buffer(accel_stream_t* stream,
                                        accel_buffer_t* src, size_t src_offset,
                                        void* dst, size_t size) {
  ACCEL__TRACE_STREAM_API("accel_stream_read_buffer", stream);
  static const char what[] = "accel_stream_read_buffer";
  accel_status_t status =
      accel__check_stream_op(what, "src", stream, src, src_offset, size);
  if (status != ACCEL_OK) return status;
  if (dst == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: dst is NULL", what);
  }
  status = accel__buffer_use(src, stream);
  if (status != ACCEL_OK) return status;
  if (accel__capturing(stream)) {
    return accel__graph_copy_d2h(stream, dst, src, src_offset, size);
  }
  accel_device_t* d = stream->device;
  return d->ops->copy_d2h(d->impl, stream->impl, dst, src->impl,
                          accel__buffer_offset(src, src_offset), size);
}

accel_status_t accel_stream_copy_buffer(accel_stream_t* stream,
                                        accel_buffer_t* dst, size_t dst_offset,
                                        accel_buffer_t* src, size_t src_offset,
                                        size_t size) {
  ACCEL__TRACE_STREAM_API("accel_stream_copy_buffer", stream);
  static const char what[] = "accel_stream_copy_buffer";
  accel_status_t status =
      accel__check_stream_op(what, "dst", stream, dst, dst_offset, size);
  if (status == ACCEL_OK) {
    status = accel__check_range(what, "src", src, src_offset, size);
  }
  if (status != ACCEL_OK) return status;
  accel_device_t* d = stream->device;
  accel_device_t* s = src->device;
  if (s != d && s->plugin != d->plugin) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: src buffer is on %s, another backend than the "
                       "stream's %s; use accel_buffer_copy()",
                       what, s->uri, d->uri);
  }
  status = accel__buffer_use(dst, stream);
  if (status == ACCEL_OK) status = accel__buffer_use(src, stream);
  if (status != ACCEL_OK) return status;
  if (accel__capturing(stream)) {
    return accel__graph_copy_d2d(stream, dst, dst_offset, src, src_offset,
                                 size);
  }
  uint64_t dst_at = accel__buffer_offset(dst, dst_offset);
  uint64_t src_at = accel__buffer_offset(src, src_offset);
  if (s == d) {
    return d->ops->copy_d2d(d->impl, stream->impl, dst->impl, dst_at, src->impl,
                            src_at, size);
  }
  return d->plugin->copy_peer(d->plugin, d->impl, stream->impl, dst->impl,
                              dst_at, s->impl, src->impl, src_at, size);
}

accel_status_t accel_stream_fill_buffer(accel_stream_t* stream,
                                        accel_buffer_t* dst, size_t offset,
                                        uint8_t value, size_t size) {
  ACCEL__TRACE_STREAM_API("accel_stream_fill_buffer", stream);
  accel_status_t status = accel__check_stream_op(
      "accel_stream_fill_buffer", "dst", stream, dst, offset, size);
  if (status == ACCEL_OK) status = accel__buffer_use(dst, stream);
  if (status != ACCEL_OK) return status;
  if (accel__capturing(stream)) {
    return accel__graph_memset(stream, dst, offset, value, size);
  }
  accel_device_t* d = stream->device;
  return d->ops->memset(d->impl, stream->impl, dst->impl,
                        accel__buffer_offset(dst, offset), value, size);
}
