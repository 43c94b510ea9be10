// SPDX-License-Identifier: MIT
//
// Events: markers in a stream to wait on and to time.
#include <stdlib.h>

#include "graph_internal.h"
#include "internal.h"
#include "trace.h"

accel_status_t accel_event_create(accel_device_t* device,
                                  accel_event_flags_t flags,
                                  accel_event_t** out_event) {
  if (out_event != NULL) *out_event = NULL;
  if (device == NULL || out_event == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_event_create: device and out_event are "
                       "required");
  }
  if ((flags & ~(accel_event_flags_t)(ACCEL_EVENT_TIMING |
                                      ACCEL_EVENT_BLOCKING_SYNC)) != 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_event_create: unknown flags 0x%x", flags);
  }
  if ((flags & ACCEL_EVENT_TIMING) && !device->plugin->has_timing) {
    return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                       "accel_event_create: events on %s cannot measure time",
                       device->uri);
  }
  accel_event_t* event = accel__handle_new(sizeof(*event));
  if (event == NULL) {
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "event handle");
  }
  // ACCEL_EVENT_BLOCKING_SYNC reaches plugins of ABI 1.4 and later; an
  // older one may refuse a flag it does not know, and never sees it.
  accel_event_flags_t passed = ACCEL_EVENT_TIMING;
  if (device->plugin->abi_minor >= 4) passed |= ACCEL_EVENT_BLOCKING_SYNC;
  accel_status_t status =
      device->ops->event_create(device->impl, flags & passed, &event->impl);
  if (status != ACCEL_OK) {
    accel__handle_free(event);
    return status;
  }
  atomic_init(&event->refs, 1);
  atomic_init(&event->recorded, false);
  event->device = device;
  event->flags = flags;
  accel_device_retain(device);
  *out_event = event;
  return ACCEL_OK;
}

void accel_event_retain(accel_event_t* event) {
  if (event != NULL && accel__refs_step(event, &event->refs, true) == 0) {
    accel__handle_dead("accel_event_retain", "event", event);
  }
}

void accel_event_release(accel_event_t* event) {
  if (event == NULL) return;
  unsigned refs = accel__refs_step(event, &event->refs, false);
  if (refs == 0) accel__handle_dead("accel_event_release", "event", event);
  if (refs != 1) return;
  accel_device_t* device = event->device;
  device->ops->event_destroy(event->impl);
  accel__handle_free(event);
  accel_device_release(device);
}

accel_status_t accel_event_record(accel_event_t* event,
                                  accel_stream_t* stream) {
  ACCEL__TRACE_API("accel_event_record");
  if (event == NULL || stream == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_event_record: event and stream are required");
  }
  if (event->device != stream->device) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_event_record: the event is on %s but the "
                       "stream is on %s",
                       event->device->uri, stream->device->uri);
  }
  if (accel__capturing(stream)) return accel__graph_event_record(stream, event);
  accel_status_t status =
      event->device->ops->event_record(event->impl, stream->impl);
  if (status == ACCEL_OK) atomic_store(&event->recorded, true);
  return status;
}

accel_status_t accel_event_synchronize(accel_event_t* event) {
  ACCEL__TRACE_API("accel_event_synchronize");
  if (event == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_event_synchronize: event is NULL");
  }
  accel_status_t status =
      accel__graph_check_event(event, "accel_event_synchronize");
  if (status != ACCEL_OK) return status;
  return event->device->ops->event_synchronize(event->impl);
}

accel_status_t accel_event_query(accel_event_t* event, bool* out_done) {
  ACCEL__TRACE_API("accel_event_query");
  if (out_done != NULL) *out_done = false;
  if (event == NULL || out_done == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_event_query: event and out_done are required");
  }
  accel_status_t status = accel__graph_check_event(event, "accel_event_query");
  if (status != ACCEL_OK) return status;
  return event->device->ops->event_query(event->impl, out_done);
}

accel_status_t accel_event_elapsed_ms(accel_event_t* start, accel_event_t* end,
                                      float* out_ms) {
  static const char what[] = "accel_event_elapsed_ms";
  if (out_ms != NULL) *out_ms = 0.0f;
  if (start == NULL || end == NULL || out_ms == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: start, end and out_ms are required", what);
  }
  if (start->device != end->device) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: start is on %s but end is on %s", what,
                       start->device->uri, end->device->uri);
  }
  if (!(start->flags & ACCEL_EVENT_TIMING) ||
      !(end->flags & ACCEL_EVENT_TIMING)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: both events need ACCEL_EVENT_TIMING", what);
  }
  if (!atomic_load(&start->recorded) || !atomic_load(&end->recorded)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: both events must have been recorded", what);
  }
  accel_status_t status = accel__graph_check_event(start, what);
  if (status == ACCEL_OK) status = accel__graph_check_event(end, what);
  if (status != ACCEL_OK) return status;
  return start->device->ops->event_elapsed_ms(start->impl, end->impl, out_ms);
}
