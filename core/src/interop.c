// SPDX-License-Identifier: MIT
//
// Native handles (<accel/interop.h>): the backend objects behind accel's
// handles, from the plugin's native_handle entry (ABI 1.4; the loader
// fills an UNSUPPORTED default for older plugins). The core only checks
// arguments and puts the device in front of the plugin's message.
#include <accel/interop.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

accel_status_t accel__fail_plugin(accel_status_t status, const char* what,
                                  const accel_device_t* device) {
  char reason[512];
  snprintf(reason, sizeof(reason), "%s", accel_last_error());
  size_t n = strlen(device->uri);
  if (strncmp(reason, device->uri, n) == 0 && reason[n] == ':') {
    return accel__fail(status, "%s: %s", what, reason);
  }
  return accel__fail(status, "%s on %s: %s", what, device->uri, reason);
}

// Asks `device`'s plugin for the object of `kind` behind `object`.
static accel_status_t accel__native(const char* what, accel_device_t* device,
                                    uint32_t kind, void* object,
                                    uint64_t* out_handle) {
  uint64_t handle = 0;
  accel_status_t status =
      device->ops->native_handle(device->impl, kind, object, &handle);
  if (status != ACCEL_OK) return accel__fail_plugin(status, what, device);
  *out_handle = handle;
  return ACCEL_OK;
}

accel_status_t accel_device_query_native(accel_device_t* device,
                                         accel_native_kind_t kind,
                                         uint64_t* out_handle) {
  static const char what[] = "accel_device_query_native";
  if (out_handle != NULL) *out_handle = 0;
  if (device == NULL || out_handle == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: device and out_handle are required", what);
  }
  if (kind != ACCEL_NATIVE_DEVICE && kind != ACCEL_NATIVE_CONTEXT) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: kind %d is neither ACCEL_NATIVE_DEVICE nor "
                       "ACCEL_NATIVE_CONTEXT",
                       what, (int)kind);
  }
  _Static_assert((int)ACCEL_NATIVE_DEVICE == ACCEL_PLUGIN_NATIVE_DEVICE &&
                     (int)ACCEL_NATIVE_CONTEXT == ACCEL_PLUGIN_NATIVE_CONTEXT,
                 "public and plugin kinds agree");
  return accel__native(what, device, (uint32_t)kind, NULL, out_handle);
}

accel_status_t accel_stream_query_native(accel_stream_t* stream,
                                         uint64_t* out_handle) {
  static const char what[] = "accel_stream_query_native";
  if (out_handle != NULL) *out_handle = 0;
  if (stream == NULL || out_handle == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: stream and out_handle are required", what);
  }
  return accel__native(what, stream->device, ACCEL_PLUGIN_NATIVE_STREAM,
                       stream->impl, out_handle);
}

accel_status_t accel_event_query_native(accel_event_t* event,
                                        uint64_t* out_handle) {
  static const char what[] = "accel_event_query_native";
  if (out_handle != NULL) *out_handle = 0;
  if (event == NULL || out_handle == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: event and out_handle are required", what);
  }
  return accel__native(what, event->device, ACCEL_PLUGIN_NATIVE_EVENT,
                       event->impl, out_handle);
}

accel_status_t accel_buffer_query_native(const accel_buffer_t* buffer,
                                         uint64_t* out_handle,
                                         size_t* out_offset) {
  static const char what[] = "accel_buffer_query_native";
  if (out_handle != NULL) *out_handle = 0;
  if (out_offset != NULL) *out_offset = 0;
  if (out_handle == NULL || out_offset == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: out_handle and out_offset are required", what);
  }
  // NULL and released buffers (a size of 1 always fits).
  accel_status_t status = accel__check_range(what, "queried", buffer, 0, 1);
  if (status != ACCEL_OK) return status;
  status = accel__native(what, buffer->device, ACCEL_PLUGIN_NATIVE_MEMORY,
                         accel__buffer_mem(buffer), out_handle);
  if (status == ACCEL_OK) *out_offset = accel__buffer_offset(buffer, 0);
  return status;
}
