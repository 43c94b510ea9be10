// SPDX-License-Identifier: MIT
//
// Stream and device controls after torch.cuda: a stream waiting for
// another (an internal event), and a device-wide synchronize over the
// device's live streams, which the core tracks in a list per device.
// One process-wide lock guards every list: it is held only to link,
// unlink or snapshot, never across a plugin call. Also stream priorities
// (clamped here into the plugin's range, as CUDA clamps) and host
// functions in stream order (controls.h, plugin ABI 1.4), with the core's
// defaults for plugins without those entries.
#include <pthread.h>
#include <stdlib.h>

#include "graph_internal.h"
#include "internal.h"
#include "trace.h"

static pthread_mutex_t accel__live_lock = PTHREAD_MUTEX_INITIALIZER;

void accel__stream_live_add(accel_stream_t* stream) {
  accel_device_t* device = stream->device;
  pthread_mutex_lock(&accel__live_lock);
  stream->live_prev = NULL;
  stream->live_next = device->live_streams;
  if (device->live_streams != NULL) device->live_streams->live_prev = stream;
  device->live_streams = stream;
  pthread_mutex_unlock(&accel__live_lock);
}

void accel__stream_live_remove(accel_stream_t* stream) {
  accel_device_t* device = stream->device;
  pthread_mutex_lock(&accel__live_lock);
  if (stream->live_prev != NULL) {
    stream->live_prev->live_next = stream->live_next;
  } else if (device->live_streams == stream) {
    device->live_streams = stream->live_next;
  }
  if (stream->live_next != NULL)
    stream->live_next->live_prev = stream->live_prev;
  stream->live_prev = stream->live_next = NULL;
  pthread_mutex_unlock(&accel__live_lock);
}

accel_status_t accel_stream_wait_stream(accel_stream_t* stream,
                                        accel_stream_t* other) {
  if (stream == NULL || other == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_stream_wait_stream: stream and other are "
                       "required");
  }
  if (stream == other) return ACCEL_OK;
  if (stream->device->plugin != other->device->plugin) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_stream_wait_stream: the stream is on %s but "
                       "other is on %s, another backend",
                       stream->device->uri, other->device->uri);
  }
  accel_event_t* event = NULL;
  accel_status_t status = accel_event_create(other->device, 0, &event);
  if (status == ACCEL_OK) status = accel_event_record(event, other);
  if (status == ACCEL_OK) status = accel_stream_wait_event(stream, event);
  accel_event_release(event);
  return status;
}

accel_status_t accel_device_synchronize(accel_device_t* device) {
  if (device == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_device_synchronize: device is NULL");
  }
  accel_status_t illegal =
      accel__graph_check_device(device, "accel_device_synchronize");
  if (illegal != ACCEL_OK) return illegal;
  // Snapshot the live streams with a reference each, then wait unlocked.
  size_t count = 0, capacity = 0;
  accel_stream_t** streams = NULL;
  bool oom = false;
  pthread_mutex_lock(&accel__live_lock);
  for (accel_stream_t* s = device->live_streams; s != NULL; s = s->live_next) {
    if (count == capacity) {
      size_t grown = capacity == 0 ? 16 : capacity * 2;
      accel_stream_t** bigger = realloc(streams, grown * sizeof(*streams));
      if (bigger == NULL) {
        oom = true;
        break;
      }
      streams = bigger;
      capacity = grown;
    }
    if (accel__stream_try_retain(s)) streams[count++] = s;
  }
  pthread_mutex_unlock(&accel__live_lock);
  accel_status_t status = ACCEL_OK;
  for (size_t i = 0; i < count; i++) {
    accel_status_t s = accel_stream_synchronize(streams[i]);
    if (status == ACCEL_OK) status = s;
  }
  for (size_t i = 0; i < count; i++) accel_stream_release(streams[i]);
  free(streams);
  if (oom && status == ACCEL_OK) {
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                       "accel_device_synchronize: list of streams");
  }
  return status;
}

// ---------------------------------------------------------------------------
// Stream priorities and host functions (plugin ABI 1.4).
// ---------------------------------------------------------------------------

// A plugin without stream_priority_range: streams have one priority, 0.
static accel_status_t accel__default_priority_range(void* device,
                                                    int32_t* out_least,
                                                    int32_t* out_greatest) {
  (void)device;
  *out_least = 0;
  *out_greatest = 0;
  return ACCEL_OK;
}

// Never called: the core asks for a priority only where the range has
// more than one (which needs the plugin's own pair of entries).
static accel_status_t accel__default_create_priority(void* device,
                                                     accel_stream_flags_t flags,
                                                     int32_t priority,
                                                     void** out_stream) {
  (void)device, (void)flags, (void)priority;
  *out_stream = NULL;
  return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                     "this backend has one stream priority");
}

static accel_status_t accel__default_launch_host_func(void* stream,
                                                      void (*fn)(void* user),
                                                      void* user) {
  (void)stream, (void)fn, (void)user;
  return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                     "this backend cannot call host functions in stream "
                     "order (its plugin has no launch_host_func, plugin ABI "
                     "1.4)");
}

const char* accel__control_bind(accel_device_ops_t* o) {
  if ((o->stream_priority_range == NULL) !=
      (o->stream_create_priority == NULL)) {
    return "device_ops.stream_priority_range and stream_create_priority "
           "must be set together";
  }
  if (o->stream_priority_range == NULL) {
    o->stream_priority_range = accel__default_priority_range;
    o->stream_create_priority = accel__default_create_priority;
  }
  if (o->launch_host_func == NULL) {
    o->launch_host_func = accel__default_launch_host_func;
  }
  return NULL;
}

// The device's range, checked: the most urgent is numerically lowest.
static accel_status_t accel__priority_range(const char* what,
                                            accel_device_t* device,
                                            int32_t* out_least,
                                            int32_t* out_greatest) {
  int32_t least = 0, greatest = 0;
  accel_status_t status =
      device->ops->stream_priority_range(device->impl, &least, &greatest);
  if (status != ACCEL_OK) return status;
  if (greatest > least) {
    return accel__fail(ACCEL_ERROR_BACKEND,
                       "%s: %s reports stream priorities from %d (least "
                       "urgent) to %d (most urgent), but the most urgent "
                       "must be numerically lowest",
                       what, device->uri, (int)least, (int)greatest);
  }
  *out_least = least;
  *out_greatest = greatest;
  return ACCEL_OK;
}

accel_status_t accel_device_stream_priority_range(accel_device_t* device,
                                                  int32_t* out_least,
                                                  int32_t* out_greatest) {
  static const char what[] = "accel_device_stream_priority_range";
  if (out_least != NULL) *out_least = 0;
  if (out_greatest != NULL) *out_greatest = 0;
  if (device == NULL || out_least == NULL || out_greatest == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: device, out_least and out_greatest are required",
                       what);
  }
  return accel__priority_range(what, device, out_least, out_greatest);
}

accel_status_t accel_stream_create_with_priority(accel_device_t* device,
                                                 accel_stream_flags_t flags,
                                                 int32_t priority,
                                                 accel_stream_t** out_stream) {
  ACCEL__TRACE_API("accel_stream_create_with_priority");
  static const char what[] = "accel_stream_create_with_priority";
  if (out_stream != NULL) *out_stream = NULL;
  if (device == NULL || out_stream == NULL) {
    return accel__stream_open(what, device, flags, NULL, out_stream);
  }
  int32_t least = 0, greatest = 0;
  accel_status_t status =
      accel__priority_range(what, device, &least, &greatest);
  if (status != ACCEL_OK) return status;
  // Clamped into the range, as cuStreamCreateWithPriority does.
  if (priority < greatest) priority = greatest;
  if (priority > least) priority = least;
  if (least == greatest) {
    // One priority: a plain stream (the plugin may have no entry for it).
    accel_status_t s =
        accel__stream_open(what, device, flags, NULL, out_stream);
    if (s == ACCEL_OK) (*out_stream)->priority = priority;
    return s;
  }
  return accel__stream_open(what, device, flags, &priority, out_stream);
}

int32_t accel_stream_priority(const accel_stream_t* stream) {
  return stream != NULL ? stream->priority : 0;
}

accel_status_t accel_stream_launch_host_func(accel_stream_t* stream,
                                             accel_host_fn_t fn,
                                             void* user_data) {
  ACCEL__TRACE_STREAM_API("accel_stream_launch_host_func", stream);
  static const char what[] = "accel_stream_launch_host_func";
  if (stream == NULL || fn == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: stream and fn are required", what);
  }
  accel_device_t* d = stream->device;
  if (accel__capturing(stream)) {
    // Refused now, as eagerly, rather than recorded for launches that
    // could only fail.
    if (d->ops->launch_host_func == accel__default_launch_host_func) {
      return accel__default_launch_host_func(NULL, fn, user_data);
    }
    return accel__graph_host_func(stream, fn, user_data);
  }
  return accel__op_result(
      what, stream, d->ops->launch_host_func(stream->impl, fn, user_data));
}
