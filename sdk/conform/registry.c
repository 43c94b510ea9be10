// SPDX-License-Identifier: MIT
//
// The registry: every area's checks, in run order. Areas are independent;
// the order only makes reports read from the basics up.
#include "conform.h"

typedef const conform_check_t* (*conform_area_fn_t)(size_t* out_count);

static const conform_area_fn_t conform_areas[] = {
    conform_abi_checks,  conform_abi_older_checks, conform_device_checks, conform_memory_checks,
    conform_copy_checks, conform_copy_large_checks, conform_stream_checks, conform_event_checks,
    conform_ops_checks,  conform_ops_nn_checks, conform_specials_checks, conform_kernel_checks,
    conform_launch_checks,  conform_order_checks,
    conform_launch_view_checks,
    conform_sync_checks,    conform_threads_checks, conform_round_checks, conform_resource_checks, conform_resource_cycle_checks,
    conform_workspace_checks,
    conform_rng_checks,     conform_interop_checks, conform_control_checks,
    conform_graph_checks,   conform_graph_bytes_checks,
    conform_error_checks,
};

#define CONFORM_AREA_COUNT (sizeof(conform_areas) / sizeof(conform_areas[0]))

size_t conform_check_count(void) {
  size_t total = 0;
  for (size_t a = 0; a < CONFORM_AREA_COUNT; a++) {
    size_t n = 0;
    conform_areas[a](&n);
    total += n;
  }
  return total;
}

const conform_check_t* conform_check_get(size_t index) {
  for (size_t a = 0; a < CONFORM_AREA_COUNT; a++) {
    size_t n = 0;
    const conform_check_t* checks = conform_areas[a](&n);
    if (index < n) return &checks[index];
    index -= n;
  }
  return NULL;
}
