// SPDX-License-Identifier: MIT
//
// <accel/plugin.h> compiles on its own: it comes first, and this target
// sees only the SDK include directory (not libaccel's), as a third-party
// plugin build does. Also exports the shared-types values it sees.
#include <accel/plugin.h>

#include "shared_types_list.h"

ABI_SHARED_TABLE(abi_shared_from_plugin_h);

// Uses every type and macro the header promises, so a missing definition
// fails the build.
size_t abi_plugin_h_use_all(void);
size_t abi_plugin_h_use_all(void) {
  accel_device_ops_t ops = {.struct_size = sizeof(accel_device_ops_t)};
  accel_plugin_entry_fn_t entry = NULL;
  accel_plugin_arg_kind_t kind = ACCEL_PLUGIN_ARG_BUFFER;
  return sizeof(accel_host_t) + sizeof(accel_plugin_device_props_t) +
         sizeof(accel_plugin_arg_t) + sizeof(accel_plugin_launch_t) +
         sizeof(accel_plugin_t) + ACCEL_DEVICE_OPS_MIN_SIZE +
         ACCEL_PLUGIN_MIN_SIZE + ACCEL_PLUGIN_ABI_VERSION +
         ACCEL_PLUGIN_ABI_MINOR + sizeof(ACCEL_PLUGIN_ENTRY_NAME) +
         (size_t)ACCEL_PLUGIN_HAS_FIELD(&ops, accel_device_ops_t, launch) +
         (entry == NULL) + (size_t)kind;
}

// The export macro is usable on a function definition.
ACCEL_PLUGIN_EXPORT int abi_plugin_h_exported(void);
ACCEL_PLUGIN_EXPORT int abi_plugin_h_exported(void) { return 0; }
