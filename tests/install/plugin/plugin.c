// SPDX-License-Identifier: MIT
//
// The smallest thing that is shaped like a plugin, built against an
// installed SDK to prove <accel/plugin.h> is usable on its own. It exports
// the entry point but serves no ABI, so a core that loads it reports
// "accel_plugin_entry(1) returned NULL". The real starting point for a
// plugin is the SDK template (issue #5).
#include <accel/plugin.h>

_Static_assert(ACCEL_PLUGIN_ABI_VERSION == 1u, "this sample targets ABI 1");
_Static_assert(ACCEL_DEVICE_OPS_MIN_SIZE <= sizeof(accel_device_ops_t),
               "the ABI 1.0 minimum fits the table");
_Static_assert(ACCEL_PLUGIN_MIN_SIZE <= sizeof(accel_plugin_t),
               "the ABI 1.0 minimum fits the descriptor");

ACCEL_PLUGIN_EXPORT const accel_plugin_t* accel_plugin_entry(
    uint32_t host_abi) {
  (void)host_abi;
  return NULL;
}
