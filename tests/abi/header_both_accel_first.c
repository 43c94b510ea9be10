// SPDX-License-Identifier: MIT
//
// Both public headers in one file, accel.h first: the guarded shared block
// must not be defined twice.
#include <accel/accel.h>
#include <accel/plugin.h>

size_t abi_both_accel_first(void);
size_t abi_both_accel_first(void) {
  accel_status_t status = ACCEL_ERROR_NOT_READY;
  return sizeof(accel_plugin_t) + sizeof(accel_options_t) + (size_t)status;
}
