// SPDX-License-Identifier: MIT
//
// Graphs (<accel/graph.h>): capture begin and end, the graph handle, and
// the calls that are illegal while a capture is in progress.
//
// A capture is the graph under construction. `stream->capture` points at
// it from begin to end; every capture in the process is also on one list
// (under `accel__captures_lock`), which the illegal-call checks walk: they
// run only while `accel__graph_captures` is not 0, so outside captures they
// cost one relaxed load. A broken rule invalidates the capture: the call
// fails, and so does every later enqueue on the stream and the end.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"
#include "trace.h"

atomic_uint accel__graph_captures;

static pthread_mutex_t accel__captures_lock = PTHREAD_MUTEX_INITIALIZER;
static accel_graph_t* accel__captures;  // guarded by accel__captures_lock

// ---------------------------------------------------------------------------
// The graph handle
// ---------------------------------------------------------------------------

// Frees a graph no one references: its launches are drained first, then
// the plugin graphs, the nodes and what they hold, and the pool.
static void accel__graph_destroy(accel_graph_t* graph) {
  accel__graph_launches_drain(graph);
  accel__graph_native_free(graph);
  accel_device_t* device = graph->device;
  if (graph->order_event != NULL) {
    device->ops->event_destroy(graph->order_event);
  }
  for (size_t i = 0; i < graph->node_count; i++) {
    accel__graph_node_free(&graph->nodes[i]);
  }
  free(graph->nodes);
  for (size_t i = 0; i < graph->held_count; i++) {
    accel_buffer_release(graph->held[i]);
  }
  free(graph->held);
  // Work the program enqueued on the capture stream after the capture may
  // still use pool buffers: it finishes before the memory is everyone's.
  accel_stream_t* s = graph->capture_stream;
  if (s != NULL) {
    if (graph->pool != NULL) accel__stream_drain_weak(s);
    accel__stream_weak_release(s);
  }
  if (graph->pool != NULL) accel__allocator_pool_release(device, graph->pool);
  free(graph->launched);
  pthread_mutex_destroy(&graph->mutex);
  free(graph);
  accel_device_release(device);
}

void accel_graph_retain(accel_graph_t* graph) {
  if (graph != NULL) atomic_fetch_add(&graph->refs, 1);
}

void accel_graph_release(accel_graph_t* graph) {
  ACCEL__TRACE_API("accel_graph_release");
  if (graph == NULL || atomic_fetch_sub(&graph->refs, 1) != 1) return;
  accel__graph_destroy(graph);
}

accel_device_t* accel_graph_device(const accel_graph_t* graph) {
  return graph != NULL ? graph->device : NULL;
}

size_t accel_graph_node_count(const accel_graph_t* graph) {
  return graph != NULL ? graph->node_count : 0;
}

accel_status_t accel_graph_node_kind(const accel_graph_t* graph, size_t index,
                                     accel_graph_node_kind_t* out_kind) {
  if (graph == NULL || out_kind == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_graph_node_kind: graph and out_kind are "
                       "required");
  }
  if (index >= graph->node_count) {
    return accel__fail(ACCEL_ERROR_NOT_FOUND,
                       "accel_graph_node_kind: node %zu of a graph of %zu",
                       index, graph->node_count);
  }
  *out_kind = graph->nodes[index].kind;
  return ACCEL_OK;
}

// ---------------------------------------------------------------------------
// Capture
// ---------------------------------------------------------------------------

accel_status_t accel_stream_begin_capture(accel_stream_t* stream) {
  ACCEL__TRACE_API("accel_stream_begin_capture");
  static const char what[] = "accel_stream_begin_capture";
  if (stream == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: stream is NULL",
                       what);
  }
  if (accel__capturing(stream)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: the stream on %s is capturing already (captures "
                       "do not nest)",
                       what, stream->device->uri);
  }
  accel_graph_t* graph = calloc(1, sizeof(*graph));
  if (graph == NULL || pthread_mutex_init(&graph->mutex, NULL) != 0) {
    free(graph);
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "%s: graph record", what);
  }
  graph->pool = accel__allocator_pool_begin(stream);
  if (graph->pool == NULL) {
    pthread_mutex_destroy(&graph->mutex);
    free(graph);
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "%s: graph pool", what);
  }
  atomic_init(&graph->refs, 1);
  graph->device = stream->device;
  accel_device_retain(graph->device);
  graph->capture_stream = stream;
  accel__stream_weak_retain(stream);
  graph->capturing = true;
  pthread_mutex_lock(&accel__captures_lock);
  graph->next_capture = accel__captures;
  accel__captures = graph;
  atomic_fetch_add(&accel__graph_captures, 1);
  pthread_mutex_unlock(&accel__captures_lock);
  atomic_store_explicit(&stream->capture, graph, memory_order_release);
  return ACCEL_OK;
}

// Takes the capture of `stream` off the stream and the list, and gives the
// stream its own pool back. Returns the graph (one reference), or NULL if
// the stream was not capturing.
static accel_graph_t* accel__capture_detach(accel_stream_t* stream) {
  pthread_mutex_lock(&accel__captures_lock);
  accel_graph_t* graph = atomic_load(&stream->capture);
  if (graph != NULL) {
    atomic_store(&stream->capture, NULL);
    accel_graph_t** link = &accel__captures;
    while (*link != graph) link = &(*link)->next_capture;
    *link = graph->next_capture;
    graph->next_capture = NULL;
    atomic_fetch_sub(&accel__graph_captures, 1);
  }
  pthread_mutex_unlock(&accel__captures_lock);
  if (graph != NULL) {
    accel__allocator_pool_end(stream, graph->pool);
    pthread_mutex_lock(&graph->mutex);
    graph->capturing = false;
    pthread_mutex_unlock(&graph->mutex);
  }
  return graph;
}

accel_status_t accel_stream_end_capture(accel_stream_t* stream,
                                        accel_graph_t** out_graph) {
  ACCEL__TRACE_API("accel_stream_end_capture");
  static const char what[] = "accel_stream_end_capture";
  if (out_graph != NULL) *out_graph = NULL;
  if (stream == NULL || out_graph == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: stream and out_graph are required", what);
  }
  accel_graph_t* graph = accel__capture_detach(stream);
  if (graph == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: the stream on %s is not capturing", what,
                       stream->device->uri);
  }
  if (graph->invalid != ACCEL_OK) {
    char message[sizeof(graph->invalid_message)];
    memcpy(message, graph->invalid_message, sizeof(message));
    accel_status_t status = graph->invalid;
    accel_graph_release(graph);
    return accel__fail(status,
                       "%s: the capture on %s was invalidated, no graph: %s",
                       what, stream->device->uri, message);
  }
  graph->dirty = true;
  *out_graph = graph;
  return ACCEL_OK;
}

bool accel_stream_is_capturing(const accel_stream_t* stream) {
  return stream != NULL && accel__capturing(stream);
}

void accel__graph_stream_dying(accel_stream_t* stream) {
  if (!accel__capturing(stream)) return;
  accel__log(ACCEL_LOG_WARN,
             "%s: a stream was released while capturing; the capture is "
             "discarded",
             stream->device->uri);
  accel_graph_release(accel__capture_detach(stream));
}

// ---------------------------------------------------------------------------
// Illegal calls
// ---------------------------------------------------------------------------

// Invalidates `graph` (a capture; caller holds accel__captures_lock) with
// the message of the calling thread's last failure, unless it was already.
static void accel__capture_invalidate(accel_graph_t* graph,
                                      accel_status_t status) {
  pthread_mutex_lock(&graph->mutex);
  if (graph->invalid == ACCEL_OK) {
    graph->invalid = status;
    snprintf(graph->invalid_message, sizeof(graph->invalid_message), "%s",
             accel_last_error());
  }
  pthread_mutex_unlock(&graph->mutex);
}

// The failure of an illegal call `what` on the capture of `graph`.
static accel_status_t accel__capture_illegal(accel_graph_t* graph,
                                             const char* what,
                                             const char* why) {
  accel_status_t status = accel__fail(
      ACCEL_ERROR_INVALID_ARGUMENT,
      "%s: not allowed while a stream on %s is capturing a graph (%s); the "
      "capture is invalidated: end it with accel_stream_end_capture()",
      what, graph->device->uri, why);
  accel__capture_invalidate(graph, status);
  return status;
}

accel_status_t accel__graph_illegal_wait(accel_stream_t* stream,
                                         const char* what) {
  pthread_mutex_lock(&accel__captures_lock);
  accel_graph_t* graph = atomic_load(&stream->capture);
  accel_status_t status =
      graph == NULL ? ACCEL_OK
                    : accel__capture_illegal(graph, what,
                                             "it would wait for the capturing "
                                             "stream, whose work is recorded, "
                                             "not run");
  pthread_mutex_unlock(&accel__captures_lock);
  return status;
}

accel_status_t accel__graph_check_device_slow(accel_device_t* device,
                                              const char* what) {
  accel_status_t status = ACCEL_OK;
  pthread_mutex_lock(&accel__captures_lock);
  for (accel_graph_t* g = accel__captures; g != NULL; g = g->next_capture) {
    if (g->device == device) {
      accel_status_t s = accel__capture_illegal(
          g, what, "it would wait for the capturing stream");
      if (status == ACCEL_OK) status = s;
    }
  }
  pthread_mutex_unlock(&accel__captures_lock);
  return status;
}

// Whether node `n` records `event`.
static bool accel__records(const accel__graph_node_t* n,
                           const accel_event_t* event) {
  return n->kind == ACCEL_GRAPH_NODE_EVENT_RECORD && n->u.event == event;
}

accel_status_t accel__graph_check_event_slow(accel_event_t* event,
                                             const char* what) {
  accel_status_t status = ACCEL_OK;
  pthread_mutex_lock(&accel__captures_lock);
  for (accel_graph_t* g = accel__captures; g != NULL; g = g->next_capture) {
    bool found = false;
    pthread_mutex_lock(&g->mutex);
    for (size_t i = 0; i < g->node_count && !found; i++) {
      found = accel__records(&g->nodes[i], event);
    }
    pthread_mutex_unlock(&g->mutex);
    if (found) {
      accel_status_t s = accel__capture_illegal(
          g, what,
          "the event is recorded in the capture, which has not run; wait "
          "for it inside the capture or after a launch of the graph");
      if (status == ACCEL_OK) status = s;
    }
  }
  pthread_mutex_unlock(&accel__captures_lock);
  return status;
}

// Whether `graph` (a capture; its mutex held) uses `buffer`.
static bool accel__capture_uses(const accel_graph_t* graph,
                                const accel_buffer_t* buffer) {
  if (accel__allocator_in_pool(buffer, graph->pool)) return true;
  for (size_t i = 0; i < graph->held_count; i++) {
    if (graph->held[i] == buffer) return true;
  }
  return false;
}

accel_status_t accel__graph_check_buffer_slow(const accel_buffer_t* buffer,
                                              const char* what) {
  accel_status_t status = ACCEL_OK;
  pthread_mutex_lock(&accel__captures_lock);
  for (accel_graph_t* g = accel__captures; g != NULL; g = g->next_capture) {
    if (g->device != buffer->device) continue;
    pthread_mutex_lock(&g->mutex);
    bool uses = accel__capture_uses(g, buffer);
    pthread_mutex_unlock(&g->mutex);
    if (uses) {
      accel_status_t s = accel__capture_illegal(
          g, what,
          "the buffer is used by the capture, whose work has not run; "
          "enqueue the copy on the capturing stream instead");
      if (status == ACCEL_OK) status = s;
    }
  }
  pthread_mutex_unlock(&accel__captures_lock);
  return status;
}
