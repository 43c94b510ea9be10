// SPDX-License-Identifier: MIT
//
// <accel/controls.h> compiles when included first, on libaccel's include
// directory alone (it includes <accel/accel.h>, which includes it back).
#include <accel/controls.h>

size_t abi_controls_h_use_all(void);
size_t abi_controls_h_use_all(void) {
  accel_allocator_info_t info = {.struct_size = sizeof(info)};
  accel_host_fn_t fn = NULL;
  accel_stream_t* stream = NULL;
  return sizeof(info) + (fn == NULL) + (stream == NULL) +
         (size_t)info.roundup_power2_divisions;
}
