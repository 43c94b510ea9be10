// SPDX-License-Identifier: MIT
//
// Events: one CUevent each. Timing is off (CU_EVENT_DISABLE_TIMING, the
// cheaper kind to record and wait on) unless ACCEL_EVENT_TIMING asks for
// it. CUDA's own semantics already match plugin.h: a never-recorded event
// is complete, re-recording replaces the capture, and a stream wait takes
// the record current at the time of the call.
#include <stdlib.h>

#include "accel_cuda.h"

accel_status_t accel_cuda_event_create(void* device_ptr,
                                       accel_event_flags_t flags,
                                       void** out_event) {
  accel_cuda_device_t* device = device_ptr;
  *out_event = NULL;
  accel_cuda_event_t* event = calloc(1, sizeof(*event));
  if (event == NULL) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              "%s: event state", device->prefix);
  }
  event->device = device;
  event->timing = (flags & ACCEL_EVENT_TIMING) != 0;
  atomic_init(&event->recorded, false);
  accel_status_t status = accel_cuda_context_push(device, "event_create");
  if (status != ACCEL_OK) {
    free(event);
    return status;
  }
  // ACCEL_EVENT_BLOCKING_SYNC (from an ABI 1.4 core): a host waiting in
  // cuEventSynchronize sleeps instead of spinning.
  unsigned cu_flags =
      event->timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING;
  if (flags & ACCEL_EVENT_BLOCKING_SYNC) cu_flags |= CU_EVENT_BLOCKING_SYNC;
  CUresult r = device->cu->cuEventCreate(&event->event, cu_flags);
  accel_cuda_context_pop(device);
  if (r != CUDA_SUCCESS) {
    free(event);
    return accel_cuda_device_fail(device, r, "cuEventCreate");
  }
  *out_event = event;
  return ACCEL_OK;
}

void accel_cuda_event_destroy(void* event_ptr) {
  accel_cuda_event_t* event = event_ptr;
  if (event == NULL) return;
  // cuEventDestroy returns at once; pending waits still complete.
  (void)event->device->cu->cuEventDestroy(event->event);
  free(event);
}

accel_status_t accel_cuda_event_record(void* event_ptr, void* stream_ptr) {
  accel_cuda_event_t* event = event_ptr;
  accel_cuda_stream_t* stream = stream_ptr;
  CUresult r = event->device->cu->cuEventRecord(
      event->event, accel_cuda_stream_of(event->device, stream));
  if (r != CUDA_SUCCESS) {
    return accel_cuda_device_fail(event->device, r, "cuEventRecord");
  }
  atomic_store(&event->recorded, true);
  return ACCEL_OK;
}

accel_status_t accel_cuda_event_synchronize(void* event_ptr) {
  accel_cuda_event_t* event = event_ptr;
  CUresult r = event->device->cu->cuEventSynchronize(event->event);
  if (r != CUDA_SUCCESS) {
    return accel_cuda_device_fail(event->device, r, "cuEventSynchronize");
  }
  return ACCEL_OK;
}

accel_status_t accel_cuda_event_query(void* event_ptr, bool* out_done) {
  accel_cuda_event_t* event = event_ptr;
  *out_done = false;
  CUresult r = event->device->cu->cuEventQuery(event->event);
  if (r == CUDA_ERROR_NOT_READY) return ACCEL_OK;
  if (r != CUDA_SUCCESS) {
    return accel_cuda_device_fail(event->device, r, "cuEventQuery");
  }
  *out_done = true;
  return ACCEL_OK;
}

accel_status_t accel_cuda_event_elapsed_ms(void* start_ptr, void* end_ptr,
                                           float* out_ms) {
  accel_cuda_event_t* start = start_ptr;
  accel_cuda_event_t* end = end_ptr;
  const accel_host_t* host = start->device->host;
  *out_ms = 0;
  // Misuse is INVALID_ARGUMENT, as in the CPU plugin and the core; only
  // an event still pending is NOT_READY.
  if (!start->timing || !end->timing) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "%s: elapsed time needs two events created with "
                      "ACCEL_EVENT_TIMING",
                      start->device->prefix);
  }
  if (!atomic_load(&start->recorded) || !atomic_load(&end->recorded)) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "%s: elapsed time: the %s event was never recorded",
                      start->device->prefix,
                      atomic_load(&start->recorded) ? "end" : "start");
  }
  float ms = 0;
  CUresult r =
      start->device->cu->cuEventElapsedTime(&ms, start->event, end->event);
  if (r == CUDA_ERROR_NOT_READY) {
    return host->fail(host, ACCEL_ERROR_NOT_READY,
                      "%s: elapsed time: an event has not completed",
                      start->device->prefix);
  }
  if (r != CUDA_SUCCESS) {
    return accel_cuda_device_fail(start->device, r, "cuEventElapsedTime");
  }
  *out_ms = ms;
  return ACCEL_OK;
}
