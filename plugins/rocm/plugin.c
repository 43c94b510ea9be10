// SPDX-License-Identifier: MIT
//
// The ROCm plugin: AMD GPUs through the HIP runtime, which it opens itself
// on first use (runtime.c). This file holds the entry point, the
// descriptor and the plugin state (load/unload); the rest lives in the
// files listed in accel_rocm.h. See docs/rocm-backend.md.
#include <stdlib.h>

#include "accel_rocm.h"

static accel_status_t accel_rocm_load(const accel_host_t* host,
                                      void** out_plugin) {
  *out_plugin = NULL;
  accel_rocm_plugin_t* plugin = calloc(1, sizeof(*plugin));
  if (plugin == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "rocm: plugin state");
  }
  if (pthread_mutex_init(&plugin->mutex, NULL) != 0) {
    free(plugin);
    return host->fail(host, ACCEL_ERROR_INTERNAL, "rocm: mutex init failed");
  }
  plugin->host = host;  // the runtime is opened later, by device_count
  *out_plugin = plugin;
  return ACCEL_OK;
}

static void accel_rocm_unload(void* plugin_ptr) {
  accel_rocm_plugin_t* plugin = plugin_ptr;
  if (plugin == NULL) return;
  // Every device is closed by now. HIP runtimes tear down their own state
  // in destructors when the library is unloaded.
  accel_rocm_blas_close(plugin);
  if (plugin->opened && plugin->status == ACCEL_OK) {
    accel_rocm_runtime_close(&plugin->rt);
  }
  pthread_mutex_destroy(&plugin->mutex);
  free(plugin);
}

accel_status_t accel_rocm_plugin_runtime(accel_rocm_plugin_t* plugin,
                                         const accel_rocm_runtime_t** out_rt) {
  const accel_host_t* host = plugin->host;
  pthread_mutex_lock(&plugin->mutex);
  if (!plugin->opened) {
    plugin->status = accel_rocm_runtime_open(host, &plugin->rt, plugin->why,
                                             sizeof(plugin->why));
    plugin->opened = true;
    if (plugin->status == ACCEL_OK) {
      host->log(host, ACCEL_LOG_DEBUG,
                "%s: HIP %d, driver %d, %d device(s), hiprtc %s",
                plugin->rt.path, plugin->rt.version, plugin->rt.driver_version,
                plugin->rt.device_count, plugin->rt.has_rtc ? "yes" : "no");
    }
  }
  accel_status_t status = plugin->status;
  pthread_mutex_unlock(&plugin->mutex);
  *out_rt = status == ACCEL_OK ? &plugin->rt : NULL;
  if (status != ACCEL_OK) {
    return host->fail(host, status, "rocm: %s", plugin->why);
  }
  return ACCEL_OK;
}

accel_status_t accel_rocm_device_count(void* plugin_ptr, uint32_t* out_count) {
  *out_count = 0;
  const accel_rocm_runtime_t* rt = NULL;
  accel_status_t status = accel_rocm_plugin_runtime(plugin_ptr, &rt);
  if (status != ACCEL_OK) return status;
  *out_count = (uint32_t)rt->device_count;
  return ACCEL_OK;
}

static const accel_device_ops_t accel_rocm_device_ops = {
    .struct_size = sizeof(accel_device_ops_t),
    .query_props = accel_rocm_device_query_props,
    .mem_info = accel_rocm_device_mem_info,
    .mem_alloc = accel_rocm_mem_alloc,
    .mem_free = accel_rocm_mem_free,
    .host_alloc = accel_rocm_host_alloc,
    .host_free = accel_rocm_host_free,
    .copy_h2d = accel_rocm_copy_h2d,
    .copy_d2h = accel_rocm_copy_d2h,
    .copy_d2d = accel_rocm_copy_d2d,
    .copy_peer = accel_rocm_copy_peer,
    .can_access_peer = accel_rocm_device_can_access_peer,
    .memset = accel_rocm_memset,
    .stream_create = accel_rocm_stream_create,
    .stream_destroy = accel_rocm_stream_destroy,
    .stream_synchronize = accel_rocm_stream_synchronize,
    .stream_query = accel_rocm_stream_query,
    .stream_wait_event = accel_rocm_stream_wait_event,
    .event_create = accel_rocm_event_create,
    .event_destroy = accel_rocm_event_destroy,
    .event_record = accel_rocm_event_record,
    .event_synchronize = accel_rocm_event_synchronize,
    .event_query = accel_rocm_event_query,
    .event_elapsed_ms = accel_rocm_event_elapsed_ms,
    .module_load = accel_rocm_module_load,
    .module_unload = accel_rocm_module_unload,
    .module_function = accel_rocm_module_function,
    .launch = accel_rocm_launch,
    // -- since ABI 1.1 --
    .op_fill = accel_rocm_op_fill,
    .op_cast = accel_rocm_op_cast,
    .op_scale = accel_rocm_op_scale,
    .op_axpy = accel_rocm_op_axpy,
    .op_add = accel_rocm_op_add,
    .op_mul = accel_rocm_op_mul,
    .op_sum = accel_rocm_op_sum,
    .op_gemm = accel_rocm_op_gemm,
    // -- since ABI 1.2 --
    .op_gemm_workspace = accel_rocm_op_gemm_workspace,
    // -- since ABI 1.3 --
    .mem_address = accel_rocm_mem_address,
    .mem_wrap = accel_rocm_mem_wrap,
    .mem_unwrap = accel_rocm_mem_unwrap,
    .op_rng = accel_rocm_op_rng,
    // -- since ABI 1.4 --
    .op_unary = accel_rocm_op_unary,
    .op_bias_add = accel_rocm_op_bias_add,
    .op_gemm_batched = accel_rocm_op_gemm_batched,
    .native_handle = accel_rocm_native_handle,
    .host_register = accel_rocm_host_register,
    .host_unregister = accel_rocm_host_unregister,
    .launch_host_func = accel_rocm_launch_host_func,
    .stream_priority_range = accel_rocm_stream_priority_range,
    .stream_create_priority = accel_rocm_stream_create_priority,
    .stream_begin_capture = accel_rocm_stream_begin_capture,
    .stream_end_capture = accel_rocm_stream_end_capture,
    .graph_launch = accel_rocm_graph_launch,
    .graph_destroy = accel_rocm_graph_destroy,
};

static const accel_plugin_t accel_rocm_plugin = {
    .abi_version = ACCEL_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(accel_plugin_t),
    .name = "rocm",
    .version = ACCEL_ROCM_VERSION,
    .priority = 200,
    .load = accel_rocm_load,
    .unload = accel_rocm_unload,
    .device_count = accel_rocm_device_count,
    .device_open = accel_rocm_device_open,
    .device_close = accel_rocm_device_close,
    .device_ops = &accel_rocm_device_ops,
};

ACCEL_PLUGIN_EXPORT const accel_plugin_t* accel_plugin_entry(
    uint32_t host_abi) {
  return host_abi == ACCEL_PLUGIN_ABI_VERSION ? &accel_rocm_plugin : NULL;
}
