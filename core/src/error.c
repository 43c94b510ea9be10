// SPDX-License-Identifier: MIT
//
// Thread-local error messages and status names.
#include <stdio.h>

#include "internal.h"

// One message per thread, overwritten by each failure. Fixed-size so that
// recording an error can never itself fail.
static _Thread_local char accel__message[1024];

accel_status_t accel__vfail(accel_status_t status, const char* format,
                            va_list args) {
  vsnprintf(accel__message, sizeof(accel__message), format, args);
  if (status != ACCEL_OK) {
    accel__log(ACCEL_LOG_DEBUG, "error %s: %s", accel_status_string(status),
               accel__message);
  }
  return status;
}

accel_status_t accel__fail(accel_status_t status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  accel__vfail(status, format, args);
  va_end(args);
  return status;
}

const char* accel_last_error(void) { return accel__message; }

const char* accel_status_string(accel_status_t status) {
  switch (status) {
    case ACCEL_OK:
      return "ACCEL_OK";
    case ACCEL_ERROR_INVALID_ARGUMENT:
      return "ACCEL_ERROR_INVALID_ARGUMENT";
    case ACCEL_ERROR_OUT_OF_MEMORY:
      return "ACCEL_ERROR_OUT_OF_MEMORY";
    case ACCEL_ERROR_OUT_OF_DEVICE_MEMORY:
      return "ACCEL_ERROR_OUT_OF_DEVICE_MEMORY";
    case ACCEL_ERROR_NOT_FOUND:
      return "ACCEL_ERROR_NOT_FOUND";
    case ACCEL_ERROR_UNSUPPORTED:
      return "ACCEL_ERROR_UNSUPPORTED";
    case ACCEL_ERROR_UNAVAILABLE:
      return "ACCEL_ERROR_UNAVAILABLE";
    case ACCEL_ERROR_INCOMPATIBLE:
      return "ACCEL_ERROR_INCOMPATIBLE";
    case ACCEL_ERROR_DEVICE_LOST:
      return "ACCEL_ERROR_DEVICE_LOST";
    case ACCEL_ERROR_BACKEND:
      return "ACCEL_ERROR_BACKEND";
    case ACCEL_ERROR_INTERNAL:
      return "ACCEL_ERROR_INTERNAL";
    case ACCEL_ERROR_NOT_READY:
      return "ACCEL_ERROR_NOT_READY";
    case ACCEL_ERROR_TIMEOUT:
      return "ACCEL_ERROR_TIMEOUT";
    case ACCEL_STATUS_MAX_ENUM:
      break;
  }
  return "ACCEL_ERROR_UNKNOWN";
}

const char* accel_version_string(void) { return ACCEL_VERSION_STRING; }
