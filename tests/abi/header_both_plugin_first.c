// SPDX-License-Identifier: MIT
//
// Both public headers in one file, plugin.h first: the guarded shared block
// must not be defined twice.
// The include order is the point of this file.
// clang-format off
#include <accel/plugin.h>
#include <accel/accel.h>
// clang-format on

size_t abi_both_plugin_first(void);
size_t abi_both_plugin_first(void) {
  accel_event_flags_t flags = ACCEL_EVENT_TIMING;
  return sizeof(accel_host_t) + sizeof(accel_device_info_t) + (size_t)flags;
}
