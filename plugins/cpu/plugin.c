// SPDX-License-Identifier: MIT
//
// The CPU plugin: every device runs on the host. This file holds the entry
// point, the descriptor and the plugin state (load/unload); the rest lives
// in the files listed in cpu.h.
#include <stdlib.h>

#include "cpu.h"

static accel_status_t accel_cpu_load(const accel_host_t* host,
                                     void** out_plugin) {
  *out_plugin = NULL;
  accel_cpu_plugin_t* plugin = calloc(1, sizeof(*plugin));
  if (plugin == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "cpu: plugin state");
  }
  if (pthread_mutex_init(&plugin->mutex, NULL) != 0) {
    free(plugin);
    return host->fail(host, ACCEL_ERROR_INTERNAL, "cpu: mutex init failed");
  }
  if (pthread_mutex_init(&plugin->gemm_mutex, NULL) != 0) {
    pthread_mutex_destroy(&plugin->mutex);
    free(plugin);
    return host->fail(host, ACCEL_ERROR_INTERNAL, "cpu: mutex init failed");
  }
  plugin->sched = malloc(sizeof(*plugin->sched));
  if (plugin->sched == NULL || !accel_cpu_sched_init(plugin->sched)) {
    free(plugin->sched);
    pthread_mutex_destroy(&plugin->gemm_mutex);
    pthread_mutex_destroy(&plugin->mutex);
    free(plugin);
    return host->fail(host, ACCEL_ERROR_INTERNAL, "cpu: scheduler init failed");
  }
  plugin->host = host;
  *out_plugin = plugin;
  return ACCEL_OK;
}

static void accel_cpu_unload(void* plugin_ptr) {
  accel_cpu_plugin_t* plugin = plugin_ptr;
  if (plugin == NULL) return;
  // Every stream is gone by now, so nothing uses the pool or the engines.
  accel_cpu_pool_destroy(atomic_load(&plugin->pool));
  accel_cpu_engines_destroy(atomic_load(&plugin->engines));
  accel_cpu_scratch_destroy(atomic_load(&plugin->gemm_scratch));
  accel_cpu_sched_deinit(plugin->sched);
  free(plugin->sched);
  pthread_mutex_destroy(&plugin->gemm_mutex);
  pthread_mutex_destroy(&plugin->mutex);
  free(plugin);
}

static const accel_device_ops_t accel_cpu_device_ops = {
    .struct_size = sizeof(accel_device_ops_t),
    .query_props = accel_cpu_device_query_props,
    .mem_info = accel_cpu_device_mem_info,
    .mem_alloc = accel_cpu_mem_alloc,
    .mem_free = accel_cpu_mem_free,
    .copy_h2d = accel_cpu_copy_h2d,
    .copy_d2h = accel_cpu_copy_d2h,
    .copy_d2d = accel_cpu_copy_d2d,
    .copy_peer = accel_cpu_copy_peer,
    .can_access_peer = accel_cpu_device_can_access_peer,
    .memset = accel_cpu_memset,
    .stream_create = accel_cpu_stream_create,
    .stream_destroy = accel_cpu_stream_destroy,
    .stream_synchronize = accel_cpu_stream_synchronize,
    .stream_query = accel_cpu_stream_query,
    .stream_wait_event = accel_cpu_stream_wait_event,
    .event_create = accel_cpu_event_create,
    .event_destroy = accel_cpu_event_destroy,
    .event_record = accel_cpu_event_record,
    .event_synchronize = accel_cpu_event_synchronize,
    .event_query = accel_cpu_event_query,
    .event_elapsed_ms = accel_cpu_event_elapsed_ms,
    .module_load = accel_cpu_module_load,
    .module_unload = accel_cpu_module_unload,
    .module_function = accel_cpu_module_function,
    .launch = accel_cpu_launch,
    // -- since ABI 1.1 --
    .op_fill = accel_cpu_op_fill,
    .op_cast = accel_cpu_op_cast,
    .op_scale = accel_cpu_op_scale,
    .op_axpy = accel_cpu_op_axpy,
    .op_add = accel_cpu_op_add,
    .op_mul = accel_cpu_op_mul,
    .op_sum = accel_cpu_op_sum,
    .op_gemm = accel_cpu_op_gemm,
    // -- since ABI 1.3 --
    .mem_address = accel_cpu_mem_address,
    .mem_wrap = accel_cpu_mem_wrap,
    .mem_unwrap = accel_cpu_mem_unwrap,
    .op_rng = accel_cpu_op_rng,
    // -- since ABI 1.4 --
    .op_unary = accel_cpu_op_unary,
    .op_bias_add = accel_cpu_op_bias_add,
    .op_gemm_batched = accel_cpu_op_gemm_batched,
    .native_handle = accel_cpu_native_handle,
    .launch_host_func = accel_cpu_launch_host_func,
    .stream_priority_range = accel_cpu_stream_priority_range,
    .stream_create_priority = accel_cpu_stream_create_priority,
    .stream_begin_capture = accel_cpu_stream_begin_capture,
    .stream_end_capture = accel_cpu_stream_end_capture,
    .graph_launch = accel_cpu_graph_launch,
    .graph_destroy = accel_cpu_graph_destroy,
};

static const accel_plugin_t accel_cpu_plugin = {
    .abi_version = ACCEL_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(accel_plugin_t),
    .name = "cpu",
    .version = ACCEL_CPU_VERSION,
    .priority = 0,
    .load = accel_cpu_load,
    .unload = accel_cpu_unload,
    .device_count = accel_cpu_device_count,
    .device_open = accel_cpu_device_open,
    .device_close = accel_cpu_device_close,
    .device_ops = &accel_cpu_device_ops,
};

ACCEL_PLUGIN_EXPORT const accel_plugin_t* accel_plugin_entry(
    uint32_t host_abi) {
  return host_abi == ACCEL_PLUGIN_ABI_VERSION ? &accel_cpu_plugin : NULL;
}
