// SPDX-License-Identifier: MIT
//
// Stream and device controls after torch.cuda: a stream waiting for
// another (an internal event), and a device-wide synchronize over the
// device's live streams, which the core tracks in a list per device.
// One process-wide lock guards every list: it is held only to link,
// unlink or snapshot, never across a plugin call.
#include <pthread.h>
#include <stdlib.h>

#include "graph_internal.h"
#include "internal.h"

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
