// SPDX-License-Identifier: MIT
//
// The CUDA plugin: NVIDIA GPUs through the CUDA driver API, which it loads
// itself at run time (driver.c) so the plugin loads, and reports why it
// cannot run, on machines without the driver. This file holds the entry
// point, the descriptor and the plugin state (load/unload); the rest lives
// in the files listed in accel_cuda.h.
//
// load() touches nothing of CUDA: the driver is opened by the first
// device_count(), cuBLAS by the first GEMM.
#include <stdlib.h>

#include "accel_cuda.h"

static accel_status_t accel_cuda_load(const accel_host_t* host,
                                      void** out_plugin) {
  *out_plugin = NULL;
  accel_cuda_plugin_t* plugin = calloc(1, sizeof(*plugin));
  if (plugin == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "cuda: plugin state");
  }
  if (pthread_mutex_init(&plugin->mutex, NULL) != 0) {
    free(plugin);
    return host->fail(host, ACCEL_ERROR_INTERNAL, "cuda: mutex init failed");
  }
  plugin->host = host;
  atomic_init(&plugin->blas, NULL);
  *out_plugin = plugin;
  return ACCEL_OK;
}

static void accel_cuda_unload(void* plugin_ptr) {
  accel_cuda_plugin_t* plugin = plugin_ptr;
  if (plugin == NULL) return;
  // Every device, stream and cuBLAS handle is gone by now.
  accel_cuda_blas_destroy(atomic_load(&plugin->blas));
  if (plugin->driver_tried && plugin->driver_status == ACCEL_OK) {
    accel_cuda_driver_close(&plugin->driver);
  }
  pthread_mutex_destroy(&plugin->mutex);
  free(plugin);
}

static const accel_device_ops_t accel_cuda_device_ops = {
    .struct_size = sizeof(accel_device_ops_t),
    .query_props = accel_cuda_device_query_props,
    .mem_info = accel_cuda_device_mem_info,
    .mem_alloc = accel_cuda_mem_alloc,
    .mem_free = accel_cuda_mem_free,
    .host_alloc = accel_cuda_host_alloc,
    .host_free = accel_cuda_host_free,
    .copy_h2d = accel_cuda_copy_h2d,
    .copy_d2h = accel_cuda_copy_d2h,
    .copy_d2d = accel_cuda_copy_d2d,
    .copy_peer = accel_cuda_copy_peer,
    .can_access_peer = accel_cuda_device_can_access_peer,
    .memset = accel_cuda_memset,
    .stream_create = accel_cuda_stream_create,
    .stream_destroy = accel_cuda_stream_destroy,
    .stream_synchronize = accel_cuda_stream_synchronize,
    .stream_query = accel_cuda_stream_query,
    .stream_wait_event = accel_cuda_stream_wait_event,
    .event_create = accel_cuda_event_create,
    .event_destroy = accel_cuda_event_destroy,
    .event_record = accel_cuda_event_record,
    .event_synchronize = accel_cuda_event_synchronize,
    .event_query = accel_cuda_event_query,
    .event_elapsed_ms = accel_cuda_event_elapsed_ms,
    .module_load = accel_cuda_module_load,
    .module_unload = accel_cuda_module_unload,
    .module_function = accel_cuda_module_function,
    .launch = accel_cuda_launch,
    // -- since ABI 1.1 --
    .op_fill = accel_cuda_op_fill,
    .op_cast = accel_cuda_op_cast,
    .op_scale = accel_cuda_op_scale,
    .op_axpy = accel_cuda_op_axpy,
    .op_add = accel_cuda_op_add,
    .op_mul = accel_cuda_op_mul,
    .op_sum = accel_cuda_op_sum,
    .op_gemm = accel_cuda_op_gemm,
    // -- since ABI 1.2 --
    .op_gemm_workspace = accel_cuda_op_gemm_workspace,
    // -- since ABI 1.3 --
    .mem_address = accel_cuda_mem_address,
    .mem_wrap = accel_cuda_mem_wrap,
    .mem_unwrap = accel_cuda_mem_unwrap,
    .op_rng = accel_cuda_op_rng,
    // -- since ABI 1.4 --
    .op_unary = accel_cuda_op_unary,
    .op_bias_add = accel_cuda_op_bias_add,
    .op_gemm_batched = accel_cuda_op_gemm_batched,
    .native_handle = accel_cuda_native_handle,
    .host_register = accel_cuda_host_register,
    .host_unregister = accel_cuda_host_unregister,
    .launch_host_func = accel_cuda_launch_host_func,
    .stream_priority_range = accel_cuda_stream_priority_range,
    .stream_create_priority = accel_cuda_stream_create_priority,
    .stream_begin_capture = accel_cuda_stream_begin_capture,
    .stream_end_capture = accel_cuda_stream_end_capture,
    .graph_launch = accel_cuda_graph_launch,
    .graph_destroy = accel_cuda_graph_destroy,
};

static const accel_plugin_t accel_cuda_plugin = {
    .abi_version = ACCEL_PLUGIN_ABI_VERSION,
    .struct_size = sizeof(accel_plugin_t),
    .name = "cuda",
    .version = ACCEL_CUDA_VERSION,
    .priority = 300,
    .load = accel_cuda_load,
    .unload = accel_cuda_unload,
    .device_count = accel_cuda_device_count,
    .device_open = accel_cuda_device_open,
    .device_close = accel_cuda_device_close,
    .device_ops = &accel_cuda_device_ops,
};

ACCEL_PLUGIN_EXPORT const accel_plugin_t* accel_plugin_entry(
    uint32_t host_abi) {
  return host_abi == ACCEL_PLUGIN_ABI_VERSION ? &accel_cuda_plugin : NULL;
}
