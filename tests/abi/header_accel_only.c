// SPDX-License-Identifier: MIT
//
// <accel/accel.h> compiles on its own: it comes first, and this target sees
// only libaccel's include directory (not the SDK's). Also exports the
// shared-types values it sees.
#include <accel/accel.h>

#include "shared_types_list.h"

ABI_SHARED_TABLE(abi_shared_from_accel_h);

// Uses every type the header promises, so a missing definition fails the
// build.
size_t abi_accel_h_use_all(void);
size_t abi_accel_h_use_all(void) {
  accel_probe_fn_t probe = NULL;
  accel_origin_t origin = ACCEL_ORIGIN_ENV;
  accel_plugin_stage_t stage = ACCEL_PLUGIN_STAGE_OPENED;
  accel_device_t* device = NULL;
  accel_buffer_t* buffer = NULL;
  accel_stream_t* stream = NULL;
  accel_event_t* event = NULL;
  return sizeof(accel_options_t) + sizeof(accel_plugin_report_t) +
         sizeof(accel_device_info_t) + (probe == NULL) + (size_t)origin +
         (size_t)stage + (device == NULL) + (buffer == NULL) +
         (stream == NULL) + (event == NULL) + ACCEL_VERSION_MAJOR;
}
