// SPDX-License-Identifier: MIT
//
// The OpenCL plugin: every OpenCL device the system's ICD loader lists
// (PoCL on a CPU, the NVIDIA, AMD and Intel GPU drivers), through
// libOpenCL.so.1, which it opens itself at the first device_count
// (icd.c). This file holds the entry point, the descriptor and the plugin
// state (load/unload); the rest lives in the files listed in
// accel_opencl.h. See docs/opencl-backend.md.
#include <stdlib.h>
#include <time.h>

#include "accel_opencl.h"
#include "builtins.h"  // accel_opencl_clblast_close

static accel_status_t accel_opencl_load(const accel_host_t* host,
                                        void** out_plugin) {
  *out_plugin = NULL;
  accel_opencl_plugin_t* plugin = calloc(1, sizeof(*plugin));
  if (plugin == NULL || pthread_mutex_init(&plugin->mutex, NULL) != 0) {
    free(plugin);
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "opencl: plugin state");
  }
  if (!accel_opencl_host_calls_init(plugin)) {
    pthread_mutex_destroy(&plugin->mutex);
    free(plugin);
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      "opencl: host-call thread state");
  }
  atomic_init(&plugin->relays, 0);
  plugin->host = host;  // the ICD loader is opened later, by device_count
  *out_plugin = plugin;
  return ACCEL_OK;
}

static void accel_opencl_unload(void* plugin_ptr) {
  accel_opencl_plugin_t* plugin = plugin_ptr;
  if (plugin == NULL) return;
  // Every device is closed by now, so every stream has finished; a
  // cross-context wait's or host function's callback may still be running
  // on a driver thread (event.c, stream.c). The last few instructions it
  // runs after its decrement stay mapped (accel_opencl_callback_pending).
  while (atomic_load(&plugin->relays) != 0) {
    nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
  }
  accel_opencl_host_calls_close(plugin);
  accel_opencl_clblast_close(plugin);
  if (plugin->icd != NULL) {
    accel_opencl_devices_release(plugin);
    accel_opencl_icd_close(plugin);
  }
  pthread_mutex_destroy(&plugin->mutex);
  free(plugin);
}

static const accel_device_ops_t accel_opencl_device_ops = {
    .struct_size = sizeof(accel_device_ops_t),
    .query_props = accel_opencl_device_query_props,
    .mem_info = accel_opencl_device_mem_info,
    .mem_alloc = accel_opencl_mem_alloc,
    .mem_free = accel_opencl_mem_free,
    .host_alloc = accel_opencl_host_alloc,
    .host_free = accel_opencl_host_free,
    .copy_h2d = accel_opencl_copy_h2d,
    .copy_d2h = accel_opencl_copy_d2h,
    .copy_d2d = accel_opencl_copy_d2d,
    .copy_peer = accel_opencl_copy_peer,
    .can_access_peer = accel_opencl_device_can_access_peer,
    .memset = accel_opencl_memset,
    .stream_create = accel_opencl_stream_create,
    .stream_destroy = accel_opencl_stream_destroy,
    .stream_synchronize = accel_opencl_stream_synchronize,
    .stream_query = accel_opencl_stream_query,
    .stream_wait_event = accel_opencl_stream_wait_event,
    .event_create = accel_opencl_event_create,
    .event_destroy = accel_opencl_event_destroy,
    .event_record = accel_opencl_event_record,
    .event_synchronize = accel_opencl_event_synchronize,
    .event_query = accel_opencl_event_query,
    .event_elapsed_ms = accel_opencl_event_elapsed_ms,
    .module_load = accel_opencl_module_load,
    .module_unload = accel_opencl_module_unload,
    .module_function = accel_opencl_module_function,
    .launch = accel_opencl_launch,
    // -- since ABI 1.1 --
    .op_fill = accel_opencl_op_fill,
    .op_cast = accel_opencl_op_cast,
    .op_scale = accel_opencl_op_scale,
    .op_axpy = accel_opencl_op_axpy,
    .op_add = accel_opencl_op_add,
    .op_mul = accel_opencl_op_mul,
    .op_sum = accel_opencl_op_sum,
    .op_gemm = accel_opencl_op_gemm,
    // -- since ABI 1.3 --
    .op_rng = accel_opencl_op_rng,
    // -- since ABI 1.4 --
    .op_unary = accel_opencl_op_unary,
    .op_bias_add = accel_opencl_op_bias_add,
    .op_gemm_batched = accel_opencl_op_gemm_batched,
    .native_handle = accel_opencl_native_handle,
    .launch_host_func = accel_opencl_launch_host_func,
    .stream_priority_range = accel_opencl_stream_priority_range,
    .stream_create_priority = accel_opencl_stream_create_priority,
};

static const accel_plugin_t accel_opencl_plugin = {
    .abi_version = ACCEL_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(accel_plugin_t),
    .name = "opencl",
    .version = ACCEL_OPENCL_VERSION,
    .priority = 100,
    .load = accel_opencl_load,
    .unload = accel_opencl_unload,
    .device_count = accel_opencl_device_count,
    .device_open = accel_opencl_device_open,
    .device_close = accel_opencl_device_close,
    .device_ops = &accel_opencl_device_ops,
};

ACCEL_PLUGIN_EXPORT const accel_plugin_t* accel_plugin_entry(
    uint32_t host_abi) {
  return host_abi == ACCEL_PLUGIN_ABI_VERSION ? &accel_opencl_plugin : NULL;
}
