// SPDX-License-Identifier: MIT
//
// Native graphs (plugin ABI 1.4) on HIP graphs, as plugins/cuda/graph.c
// does on CUDA: the core replays a captured accel graph into a capture of
// one of the plugin's streams, here hipStreamBeginCapture in relaxed mode
// (the sum's scratch and rocBLAS may allocate during the capture), then
// hipStreamEndCapture and hipGraphInstantiate; a launch is one
// hipGraphLaunch, and hipGraphExecDestroy lets launches in flight finish.
//
// Never run on AMD hardware: tests/rocm/fakehip records the stream work of
// a capture and replays it, which proves the plumbing only.
#include <stdlib.h>

#include "accel_rocm.h"

typedef struct accel_rocm_graph {
  accel_rocm_device_t* device;
  hipGraph_t graph;
  hipGraphExec_t exec;
} accel_rocm_graph_t;

accel_status_t accel_rocm_stream_begin_capture(void* stream_ptr) {
  accel_rocm_stream_t* stream = stream_ptr;
  accel_rocm_device_t* device = stream->device;
  const accel_rocm_runtime_t* rt = device->rt;
  if (!rt->has_graphs) {
    return device->host->fail(device->host, ACCEL_ERROR_UNSUPPORTED,
                              "%s: the HIP runtime has no graph entry points",
                              device->prefix);
  }
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  if (status != ACCEL_OK) return status;
  hipError_t err =
      rt->hipStreamBeginCapture(stream->stream, hipStreamCaptureModeRelaxed);
  if (err != hipSuccess) accel_rocm_clear_error(rt);
  accel_rocm_device_leave(device, saved);
  if (err != hipSuccess) {
    return accel_rocm_device_fail(device, err, "hipStreamBeginCapture");
  }
  return ACCEL_OK;
}

accel_status_t accel_rocm_stream_end_capture(void* stream_ptr,
                                             void** out_graph) {
  accel_rocm_stream_t* stream = stream_ptr;
  accel_rocm_device_t* device = stream->device;
  const accel_rocm_runtime_t* rt = device->rt;
  *out_graph = NULL;
  accel_rocm_graph_t* g = calloc(1, sizeof(*g));
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  if (status != ACCEL_OK) {
    free(g);
    return status;
  }
  // The capture ends whatever else fails, so the stream works again.
  hipGraph_t graph = NULL;
  hipError_t err = rt->hipStreamEndCapture(stream->stream, &graph);
  const char* what = "hipStreamEndCapture";
  if (err == hipSuccess && g == NULL) err = hipErrorOutOfMemory;
  if (err == hipSuccess) {
    what = "hipGraphInstantiate";
    err = rt->hipGraphInstantiate(&g->exec, graph, NULL, NULL, 0);
  }
  if (err != hipSuccess) {
    accel_rocm_clear_error(rt);
    if (graph != NULL) (void)rt->hipGraphDestroy(graph);
    accel_rocm_device_leave(device, saved);
    free(g);
    return accel_rocm_device_fail(device, err, what);
  }
  accel_rocm_device_leave(device, saved);
  g->device = device;
  g->graph = graph;
  *out_graph = g;
  return ACCEL_OK;
}

accel_status_t accel_rocm_graph_launch(void* graph_ptr, void* stream_ptr) {
  accel_rocm_graph_t* g = graph_ptr;
  accel_rocm_stream_t* stream = stream_ptr;
  accel_rocm_device_t* device = stream->device;
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  if (status != ACCEL_OK) return status;
  hipError_t err = device->rt->hipGraphLaunch(g->exec, stream->stream);
  if (err != hipSuccess) accel_rocm_clear_error(device->rt);
  accel_rocm_device_leave(device, saved);
  if (err != hipSuccess) {
    return accel_rocm_device_fail(device, err, "hipGraphLaunch");
  }
  return ACCEL_OK;
}

void accel_rocm_graph_destroy(void* graph_ptr) {
  accel_rocm_graph_t* g = graph_ptr;
  if (g == NULL) return;
  accel_rocm_device_t* device = g->device;
  int saved = 0;
  if (accel_rocm_device_enter(device, &saved) == ACCEL_OK) {
    (void)device->rt->hipGraphExecDestroy(g->exec);
    (void)device->rt->hipGraphDestroy(g->graph);
    accel_rocm_device_leave(device, saved);
  }
  free(g);
}
