// SPDX-License-Identifier: MIT
//
// Native graphs (plugin ABI 1.4) on CUDA graphs. The core replays a
// captured accel graph into a capture of one of the plugin's streams,
// which this file turns into a CUDA stream capture: cuStreamBeginCapture
// in relaxed mode (the built-in ops may allocate their per-stream scratch
// with cuMemAlloc during the capture, which global and thread-local modes
// forbid), then cuStreamEndCapture and cuGraphInstantiateWithFlags. A
// launch is one cuGraphLaunch; cuGraphExecDestroy lets launches still in
// flight finish, as graph_destroy promises.
//
// Never run on GPU hardware: tests/cuda/fakecuda records the stream work
// of a capture and replays it, which proves the plumbing only.
#include <stdlib.h>

#include "accel_cuda.h"

typedef struct accel_cuda_graph {
  accel_cuda_device_t* device;
  CUgraph graph;
  CUgraphExec exec;
} accel_cuda_graph_t;

accel_status_t accel_cuda_stream_begin_capture(void* stream_ptr) {
  accel_cuda_stream_t* stream = stream_ptr;
  accel_cuda_device_t* device = stream->device;
  accel_status_t status = accel_cuda_context_push(device, "begin_capture");
  if (status != ACCEL_OK) return status;
  CUresult r = device->cu->cuStreamBeginCapture(stream->stream,
                                                CU_STREAM_CAPTURE_MODE_RELAXED);
  accel_cuda_context_pop(device);
  if (r != CUDA_SUCCESS) {
    return accel_cuda_device_fail(device, r, "cuStreamBeginCapture");
  }
  return ACCEL_OK;
}

accel_status_t accel_cuda_stream_end_capture(void* stream_ptr,
                                             void** out_graph) {
  accel_cuda_stream_t* stream = stream_ptr;
  accel_cuda_device_t* device = stream->device;
  const accel_cuda_driver_t* cu = device->cu;
  *out_graph = NULL;
  accel_cuda_graph_t* g = calloc(1, sizeof(*g));
  accel_status_t status = accel_cuda_context_push(device, "end_capture");
  if (status != ACCEL_OK) {
    free(g);
    return status;
  }
  // The capture ends whatever else fails, so the stream works again.
  CUgraph graph = NULL;
  CUresult r = cu->cuStreamEndCapture(stream->stream, &graph);
  const char* call = "cuStreamEndCapture";
  if (r == CUDA_SUCCESS && g == NULL) r = CUDA_ERROR_OUT_OF_MEMORY;
  if (r == CUDA_SUCCESS) {
    call = "cuGraphInstantiateWithFlags";
    r = cu->cuGraphInstantiateWithFlags(&g->exec, graph, 0);
  }
  if (r != CUDA_SUCCESS) {
    if (graph != NULL) (void)cu->cuGraphDestroy(graph);
    accel_cuda_context_pop(device);
    free(g);
    return accel_cuda_device_fail(device, r, call);
  }
  accel_cuda_context_pop(device);
  g->device = device;
  g->graph = graph;
  *out_graph = g;
  return ACCEL_OK;
}

accel_status_t accel_cuda_graph_launch(void* graph_ptr, void* stream_ptr) {
  accel_cuda_graph_t* g = graph_ptr;
  accel_cuda_stream_t* stream = stream_ptr;
  accel_cuda_device_t* device = stream->device;
  accel_status_t status = accel_cuda_context_push(device, "graph_launch");
  if (status != ACCEL_OK) return status;
  CUresult r = device->cu->cuGraphLaunch(g->exec, stream->stream);
  accel_cuda_context_pop(device);
  if (r != CUDA_SUCCESS) {
    return accel_cuda_device_fail(device, r, "cuGraphLaunch");
  }
  return ACCEL_OK;
}

void accel_cuda_graph_destroy(void* graph_ptr) {
  accel_cuda_graph_t* g = graph_ptr;
  if (g == NULL) return;
  accel_cuda_device_t* device = g->device;
  if (accel_cuda_context_push(device, "graph_destroy") == ACCEL_OK) {
    (void)device->cu->cuGraphExecDestroy(g->exec);
    (void)device->cu->cuGraphDestroy(g->graph);
    accel_cuda_context_pop(device);
  }
  free(g);
}
