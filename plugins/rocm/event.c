// SPDX-License-Identifier: MIT
//
// Events: one hipEvent_t each, created without timing unless the caller
// asked for ACCEL_EVENT_TIMING (cheaper records, as in CUDA).
#include <stdlib.h>

#include "accel_rocm.h"

accel_status_t accel_rocm_event_create(void* device_ptr,
                                       accel_event_flags_t flags,
                                       void** out_event) {
  accel_rocm_device_t* device = device_ptr;
  *out_event = NULL;
  if ((flags & ~(accel_event_flags_t)(ACCEL_EVENT_TIMING |
                                      ACCEL_EVENT_BLOCKING_SYNC)) != 0) {
    return device->host->fail(device->host, ACCEL_ERROR_INVALID_ARGUMENT,
                              "%s: unknown event flags 0x%x", device->prefix,
                              (unsigned)flags);
  }
  accel_rocm_event_t* event = calloc(1, sizeof(*event));
  if (event == NULL) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              "%s: event state", device->prefix);
  }
  event->device = device;
  event->flags = flags;
  atomic_init(&event->recorded, false);
  unsigned hip_flags =
      (flags & ACCEL_EVENT_TIMING) ? hipEventDefault : hipEventDisableTiming;
  // ACCEL_EVENT_BLOCKING_SYNC (from an ABI 1.4 core): a host waiting in
  // hipEventSynchronize sleeps instead of spinning.
  if (flags & ACCEL_EVENT_BLOCKING_SYNC) hip_flags |= hipEventBlockingSync;
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  if (status != ACCEL_OK) {
    free(event);
    return status;
  }
  hipError_t err =
      device->rt->hipEventCreateWithFlags(&event->event, hip_flags);
  accel_rocm_device_leave(device, saved);
  if (err != hipSuccess) {
    free(event);
    return accel_rocm_device_fail(device, err, "hipEventCreateWithFlags");
  }
  *out_event = event;
  return ACCEL_OK;
}

void accel_rocm_event_destroy(void* event_ptr) {
  accel_rocm_event_t* event = event_ptr;
  if (event == NULL) return;
  // HIP defers the release until pending work that uses the event is done.
  event->device->rt->hipEventDestroy(event->event);
  free(event);
}

accel_status_t accel_rocm_event_record(void* event_ptr, void* stream_ptr) {
  accel_rocm_event_t* event = event_ptr;
  accel_rocm_stream_t* stream = stream_ptr;
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(stream->device, &saved);
  if (status != ACCEL_OK) return status;
  hipError_t err =
      event->device->rt->hipEventRecord(event->event, stream->stream);
  accel_rocm_device_leave(stream->device, saved);
  if (err != hipSuccess) {
    return accel_rocm_device_fail(stream->device, err, "hipEventRecord");
  }
  atomic_store(&event->recorded, true);
  return ACCEL_OK;
}

accel_status_t accel_rocm_event_synchronize(void* event_ptr) {
  accel_rocm_event_t* event = event_ptr;
  if (!atomic_load(&event->recorded)) return ACCEL_OK;
  hipError_t err = event->device->rt->hipEventSynchronize(event->event);
  return err == hipSuccess ? ACCEL_OK
                           : accel_rocm_device_fail(event->device, err,
                                                    "hipEventSynchronize");
}

accel_status_t accel_rocm_event_query(void* event_ptr, bool* out_done) {
  accel_rocm_event_t* event = event_ptr;
  *out_done = true;
  if (!atomic_load(&event->recorded)) return ACCEL_OK;
  hipError_t err = event->device->rt->hipEventQuery(event->event);
  if (err == hipErrorNotReady) {
    *out_done = false;
    return ACCEL_OK;
  }
  return err == hipSuccess
             ? ACCEL_OK
             : accel_rocm_device_fail(event->device, err, "hipEventQuery");
}

accel_status_t accel_rocm_event_elapsed_ms(void* start_ptr, void* end_ptr,
                                           float* out_ms) {
  accel_rocm_event_t* start = start_ptr;
  accel_rocm_event_t* end = end_ptr;
  const accel_host_t* host = start->device->host;
  *out_ms = 0;
  if (!(start->flags & ACCEL_EVENT_TIMING) ||
      !(end->flags & ACCEL_EVENT_TIMING)) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "%s: elapsed time needs two ACCEL_EVENT_TIMING events",
                      start->device->prefix);
  }
  // As the CPU plugin and the core: misuse, not "not yet".
  if (!atomic_load(&start->recorded) || !atomic_load(&end->recorded)) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "%s: elapsed time: the %s event was never recorded",
                      start->device->prefix,
                      atomic_load(&start->recorded) ? "end" : "start");
  }
  hipError_t err =
      start->device->rt->hipEventElapsedTime(out_ms, start->event, end->event);
  if (err == hipErrorNotReady) {
    return host->fail(host, ACCEL_ERROR_NOT_READY,
                      "%s: events have not completed", start->device->prefix);
  }
  return err == hipSuccess ? ACCEL_OK
                           : accel_rocm_device_fail(start->device, err,
                                                    "hipEventElapsedTime");
}
