// SPDX-License-Identifier: MIT
//
// Events: each record enqueues a marker (clEnqueueMarkerWithWaitList) on
// the stream's queue and keeps its cl_event, replacing the previous one.
// A marker completes when all earlier work on its in-order queue has.
//
// Stream queues have no profiling (stream.c), so a timing event's record
// also enqueues a stamp on the stream's profiling timing queue, waiting
// for the marker: its CL_PROFILING_COMMAND_END is the moment the runtime
// saw the stream's work done, and elapsed time is the difference of two
// stamps' END timestamps. Both stamps lag their work by the runtime's
// notification time, so the lag cancels out in the difference.
// The stamp is a 4-byte clEnqueueFillBuffer, not a marker: markers and
// barriers carry no execution of their own, and some runtimes stamp them
// when they are submitted rather than when their wait list completes
// (NVIDIA's gave two stamps around 0.3 ms of copies the same END time on
// an H100, driver 580; Intel's NEO is reported to do the same), while
// every runtime times a real command when it runs. An event never
// recorded is complete, and timing it is refused, as on the CPU plugin.
//
// stream_wait_event puts the marker in a barrier's wait list when both
// queues share a context. A marker of another context (another platform)
// cannot be waited on there, so a user event of the waiting context
// stands in for it, completed by a callback on the foreign marker.
#include <stdlib.h>

#include "accel_opencl.h"

typedef struct accel_opencl_event {
  accel_opencl_device_t* device;
  accel_event_flags_t flags;
  pthread_mutex_t mutex;  // guards `marker` and `stamp`
  cl_event marker;        // the last record; NULL until the first
  cl_event stamp;         // its timing-queue fill (ACCEL_EVENT_TIMING)
} accel_opencl_event_t;

accel_status_t accel_opencl_event_create(void* device_ptr,
                                         accel_event_flags_t flags,
                                         void** out_event) {
  accel_opencl_device_t* device = device_ptr;
  const accel_host_t* host = device->host;
  *out_event = NULL;
  // ACCEL_EVENT_BLOCKING_SYNC is accepted and ignored: how
  // clWaitForEvents waits is the runtime's choice.
  if ((flags & ~(accel_event_flags_t)(ACCEL_EVENT_TIMING |
                                      ACCEL_EVENT_BLOCKING_SYNC)) != 0) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "opencl:%u: unknown event flags 0x%x", device->index,
                      (unsigned)flags);
  }
  accel_opencl_event_t* event = calloc(1, sizeof(*event));
  if (event == NULL || pthread_mutex_init(&event->mutex, NULL) != 0) {
    free(event);
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "opencl:%u: event state",
                      device->index);
  }
  event->device = device;
  event->flags = flags;
  *out_event = event;
  return ACCEL_OK;
}

void accel_opencl_event_destroy(void* event_ptr) {
  accel_opencl_event_t* event = event_ptr;
  if (event == NULL) return;
  // Commands that wait on the marker hold their own reference to it.
  if (event->marker != NULL) event->device->cl->clReleaseEvent(event->marker);
  if (event->stamp != NULL) event->device->cl->clReleaseEvent(event->stamp);
  pthread_mutex_destroy(&event->mutex);
  free(event);
}

// The event's current marker with a reference the caller releases, or
// NULL when it was never recorded; with its stamp (also referenced, NULL
// for an event without timing) when `out_stamp` is not NULL.
static cl_event accel_opencl_event_marker_stamp(accel_opencl_event_t* event,
                                                cl_event* out_stamp) {
  const accel_opencl_api_t* cl = event->device->cl;
  pthread_mutex_lock(&event->mutex);
  cl_event marker = event->marker;
  if (marker != NULL) cl->clRetainEvent(marker);
  if (out_stamp != NULL) {
    *out_stamp = event->stamp;
    if (*out_stamp != NULL) cl->clRetainEvent(*out_stamp);
  }
  pthread_mutex_unlock(&event->mutex);
  return marker;
}

static cl_event accel_opencl_event_marker(accel_opencl_event_t* event) {
  return accel_opencl_event_marker_stamp(event, NULL);
}

// Enqueues the timestamp of a timing record: a fill on the stream's timing
// queue, waiting for `marker`, submitted at once.
static accel_status_t accel_opencl_event_stamp(accel_opencl_stream_t* stream,
                                               cl_event marker,
                                               cl_event* out_stamp) {
  const accel_opencl_api_t* cl = stream->device->cl;
  cl_command_queue timing = NULL;
  cl_mem scratch = NULL;
  accel_status_t status =
      accel_opencl_stream_timing_queue(stream, &timing, &scratch);
  if (status != ACCEL_OK) return status;
  const cl_uint pattern = 0;
  cl_int err = cl->clEnqueueFillBuffer(timing, scratch, &pattern,
                                       sizeof(pattern), 0, sizeof(pattern), 1,
                                       &marker, out_stamp);
  if (err == CL_SUCCESS) err = cl->clFlush(timing);
  if (err != CL_SUCCESS && *out_stamp != NULL) {
    cl->clReleaseEvent(*out_stamp);
    *out_stamp = NULL;
  }
  return accel_opencl_check(stream->device->host, err,
                            "clEnqueueFillBuffer (timestamp)");
}

accel_status_t accel_opencl_event_record(void* event_ptr, void* stream_ptr) {
  accel_opencl_event_t* event = event_ptr;
  accel_opencl_stream_t* stream = stream_ptr;
  const accel_opencl_api_t* cl = stream->device->cl;
  cl_event marker = NULL;
  uint64_t mark = accel_opencl_stream_mark(stream);
  cl_int err = cl->clEnqueueMarkerWithWaitList(stream->queue, 0, NULL, &marker);
  // Submitted now, so that host waits and other queues see it progress.
  if (err == CL_SUCCESS) err = cl->clFlush(stream->queue);
  if (err != CL_SUCCESS) {
    if (marker != NULL) cl->clReleaseEvent(marker);
    return accel_opencl_stream_enqueued(stream, err,
                                        "clEnqueueMarkerWithWaitList");
  }
  // One reference for the stream's error tracking, one for the event.
  cl->clRetainEvent(marker);
  accel_opencl_stream_tracked(stream, CL_SUCCESS, marker, mark,
                              "clEnqueueMarkerWithWaitList");
  cl_event stamp = NULL;
  if (event->flags & ACCEL_EVENT_TIMING) {
    accel_status_t status = accel_opencl_event_stamp(stream, marker, &stamp);
    if (status != ACCEL_OK) {
      cl->clReleaseEvent(marker);
      return status;
    }
  }
  pthread_mutex_lock(&event->mutex);
  cl_event old[2] = {event->marker, event->stamp};
  event->marker = marker;
  event->stamp = stamp;
  pthread_mutex_unlock(&event->mutex);
  for (int i = 0; i < 2; i++) {
    if (old[i] != NULL) cl->clReleaseEvent(old[i]);
  }
  return ACCEL_OK;
}

// The status of a marker whose execution status is `status`.
static accel_status_t accel_opencl_event_failed(accel_opencl_event_t* event,
                                                cl_int status) {
  const accel_host_t* host = event->device->host;
  return host->fail(host, ACCEL_ERROR_DEVICE_LOST,
                    "opencl:%u: work before the recorded event failed: %s",
                    event->device->index, accel_opencl_error_name(status));
}

// Execution status of `marker`, or CL_COMPLETE when it cannot be read.
static cl_int accel_opencl_event_status(const accel_opencl_api_t* cl,
                                        cl_event marker) {
  cl_int status = CL_COMPLETE;
  if (cl->clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS,
                         sizeof(status), &status, NULL) != CL_SUCCESS) {
    return CL_COMPLETE;
  }
  return status;
}

accel_status_t accel_opencl_event_synchronize(void* event_ptr) {
  accel_opencl_event_t* event = event_ptr;
  const accel_opencl_api_t* cl = event->device->cl;
  cl_event marker = accel_opencl_event_marker(event);
  if (marker == NULL) return ACCEL_OK;
  cl->clWaitForEvents(1, &marker);  // a failure shows in the status below
  cl_int status = accel_opencl_event_status(cl, marker);
  cl->clReleaseEvent(marker);
  return status < 0 ? accel_opencl_event_failed(event, status) : ACCEL_OK;
}

accel_status_t accel_opencl_event_query(void* event_ptr, bool* out_done) {
  accel_opencl_event_t* event = event_ptr;
  const accel_opencl_api_t* cl = event->device->cl;
  *out_done = true;
  cl_event marker = accel_opencl_event_marker(event);
  if (marker == NULL) return ACCEL_OK;
  cl_int status = accel_opencl_event_status(cl, marker);
  cl->clReleaseEvent(marker);
  if (status < 0) return accel_opencl_event_failed(event, status);
  *out_done = status == CL_COMPLETE;
  return ACCEL_OK;
}

accel_status_t accel_opencl_event_elapsed_ms(void* start_ptr, void* end_ptr,
                                             float* out_ms) {
  accel_opencl_event_t* events[2] = {start_ptr, end_ptr};
  static const char* const kRoles[2] = {"start", "end"};
  const accel_host_t* host = events[0]->device->host;
  const accel_opencl_api_t* cl = events[0]->device->cl;
  unsigned index = events[0]->device->index;
  *out_ms = 0;
  cl_event markers[2] = {NULL, NULL};
  cl_event stamps[2] = {NULL, NULL};
  cl_ulong ends[2] = {0, 0};
  accel_status_t status = ACCEL_OK;
  for (int i = 0; i < 2 && status == ACCEL_OK; i++) {
    if (!(events[i]->flags & ACCEL_EVENT_TIMING)) {
      status = host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                          "opencl:%u: %s event was created without "
                          "ACCEL_EVENT_TIMING",
                          index, kRoles[i]);
    } else if ((markers[i] = accel_opencl_event_marker_stamp(
                    events[i], &stamps[i])) == NULL) {
      status = host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                          "opencl:%u: %s event was never recorded", index,
                          kRoles[i]);
    } else {
      cl_int state = accel_opencl_event_status(cl, markers[i]);
      if (state < 0) {
        status = accel_opencl_event_failed(events[i], state);
      } else if (state != CL_COMPLETE) {
        status = host->fail(host, ACCEL_ERROR_NOT_READY,
                            "opencl:%u: %s event has not completed", index,
                            kRoles[i]);
      } else if (stamps[i] == NULL) {
        // Recorded before the event had ACCEL_EVENT_TIMING: cannot be.
        status = host->fail(host, ACCEL_ERROR_INTERNAL,
                            "opencl:%u: %s event has no timestamp", index,
                            kRoles[i]);
      } else {
        // The stamp follows its completed marker within the runtime's
        // notification time.
        cl_int err = cl->clWaitForEvents(1, &stamps[i]);
        if (err == CL_SUCCESS) {
          err = cl->clGetEventProfilingInfo(stamps[i], CL_PROFILING_COMMAND_END,
                                            sizeof(ends[i]), &ends[i], NULL);
        }
        status = accel_opencl_check(host, err, "clGetEventProfilingInfo");
      }
    }
  }
  for (int i = 0; i < 2; i++) {
    if (markers[i] != NULL) cl->clReleaseEvent(markers[i]);
    if (stamps[i] != NULL) cl->clReleaseEvent(stamps[i]);
  }
  if (status != ACCEL_OK) return status;
  double ns = ends[1] >= ends[0] ? (double)(ends[1] - ends[0])
                                 : -(double)(ends[0] - ends[1]);
  *out_ms = (float)(ns / 1e6);
  return ACCEL_OK;
}

// Completes a user event of the waiting context when the foreign marker
// completes (or fails, passing the failure on).
typedef struct accel_opencl_relay {
  const accel_opencl_api_t* cl;
  cl_event user;
  atomic_uint* pending;  // plugin->relays
} accel_opencl_relay_t;

static void CL_CALLBACK accel_opencl_relay_fire(cl_event marker, cl_int status,
                                                void* data) {
  (void)marker;
  accel_opencl_relay_t* relay = data;
  relay->cl->clSetUserEventStatus(relay->user,
                                  status < 0 ? status : CL_COMPLETE);
  relay->cl->clReleaseEvent(relay->user);
  atomic_uint* pending = relay->pending;
  free(relay);
  atomic_fetch_sub(pending, 1);  // last: unload may proceed
}

// A user event of `stream`'s context that completes with `marker`.
static accel_status_t accel_opencl_event_relay(accel_opencl_stream_t* stream,
                                               cl_event marker,
                                               cl_event* out_user) {
  accel_opencl_device_t* device = stream->device;
  const accel_opencl_api_t* cl = device->cl;
  *out_user = NULL;
  accel_opencl_relay_t* relay = malloc(sizeof(*relay));
  if (relay == NULL) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              "opencl:%u: cross-context wait", device->index);
  }
  cl_int err = CL_SUCCESS;
  relay->cl = cl;
  relay->user = cl->clCreateUserEvent(device->context, &err);
  if (err != CL_SUCCESS) {
    free(relay);
    return accel_opencl_check(device->host, err, "clCreateUserEvent");
  }
  cl_event user = relay->user;
  cl->clRetainEvent(user);  // the callback's reference
  relay->pending = &device->plugin->relays;
  accel_opencl_callback_pending(device->plugin);
  err = cl->clSetEventCallback(marker, CL_COMPLETE, accel_opencl_relay_fire,
                               relay);
  if (err != CL_SUCCESS) {
    atomic_fetch_sub(relay->pending, 1);
    cl->clReleaseEvent(user);
    cl->clReleaseEvent(user);
    free(relay);
    return accel_opencl_check(device->host, err, "clSetEventCallback");
  }
  *out_user = user;
  return ACCEL_OK;
}

accel_status_t accel_opencl_stream_wait_event(void* stream_ptr,
                                              void* event_ptr) {
  accel_opencl_stream_t* stream = stream_ptr;
  accel_opencl_event_t* event = event_ptr;
  const accel_opencl_api_t* cl = stream->device->cl;
  cl_event marker = accel_opencl_event_marker(event);
  if (marker == NULL) return ACCEL_OK;  // never recorded: already complete
  cl_event wait = marker;
  accel_status_t status = ACCEL_OK;
  if (event->device->context != stream->device->context) {
    status = accel_opencl_event_relay(stream, marker, &wait);
  }
  if (status == ACCEL_OK) {
    cl_event barrier = NULL;
    uint64_t mark = accel_opencl_stream_mark(stream);
    cl_int err =
        cl->clEnqueueBarrierWithWaitList(stream->queue, 1, &wait, &barrier);
    status = accel_opencl_stream_tracked(stream, err, barrier, mark,
                                         "clEnqueueBarrierWithWaitList");
    if (wait != marker) cl->clReleaseEvent(wait);
  }
  cl->clReleaseEvent(marker);
  return status;
}

cl_event accel_opencl_event_native(void* event_ptr) {
  accel_opencl_event_t* event = event_ptr;
  pthread_mutex_lock(&event->mutex);
  cl_event marker = event->marker;
  pthread_mutex_unlock(&event->mutex);
  return marker;
}
