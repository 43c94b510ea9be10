// SPDX-License-Identifier: MIT
//
// Launches (<accel/graph.h>). A graph runs one of two ways, decided at its
// first launch after the capture or an update (`dirty`):
// - native: the plugin has the ABI 1.4 capture entries. The core creates a
//   plugin stream of its own, and replays the nodes into plugin captures
//   on it: each run of consecutive nodes that may be in a plugin graph
//   becomes one plugin graph (a part). The nodes that may not (`core_only`:
//   default-generator random fills, whose offset changes every launch;
//   event records and waits and host functions, whose meaning inside a
//   backend's capture differs between backends; peer copies, which may be
//   staged synchronously; child graphs) are parts of their own that the
//   core enqueues between the plugin graphs. A launch is then one
//   graph_launch per plugin graph. The plugin stream lives as long as the
//   graph: a plugin may keep per-stream scratch memory (CUDA's sum
//   partials, its cuBLAS handle) that the captured work refers to.
// - replay: otherwise, or when a plugin capture fails (logged at debug
//   level), every node's `run` makes its plugin call on the launch stream.
//
// Launches of one graph are ordered: a launch on another stream than the
// previous one first waits for that stream (an event recorded on it now),
// as cuGraphLaunch orders launches of one executable graph. Launches on
// one stream need nothing. The graph's mutex serialises launches and
// updates.
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"
#include "trace.h"

// One part of a native launch: a plugin graph, or node `node` run by the
// core (`graph` NULL).
typedef struct accel__graph_part {
  void* graph;
  size_t node;
} accel__graph_part_t;

struct accel__graph_native {
  void* stream;  // the plugin stream the parts were captured on
  accel__graph_part_t* parts;
  size_t part_count;
  uint32_t plugin_graphs;
};

// Whether the plugin captures natively: all four ABI 1.4 entries, which
// only go together (a plugin setting some of them is replayed).
static bool accel__graph_native_ok(const accel_device_t* device) {
  const accel_device_ops_t* o = device->ops;
  return o->stream_begin_capture != NULL && o->stream_end_capture != NULL &&
         o->graph_launch != NULL && o->graph_destroy != NULL;
}

// Destroys the plugin graphs of `native`, keeping its stream.
static void accel__native_clear(const accel_device_t* device,
                                accel__graph_native_t* native) {
  for (size_t i = 0; i < native->part_count; i++) {
    if (native->parts[i].graph != NULL) {
      device->ops->graph_destroy(native->parts[i].graph);
    }
  }
  free(native->parts);
  native->parts = NULL;
  native->part_count = 0;
  native->plugin_graphs = 0;
}

void accel__graph_native_free(accel_graph_t* graph) {
  accel__graph_native_t* native = graph->native;
  if (native == NULL) return;
  accel_device_t* device = graph->device;
  accel__native_clear(device, native);
  if (native->stream != NULL) device->ops->stream_destroy(native->stream);
  free(native);
  graph->native = NULL;
}

// Captures nodes [first, end) of `graph` into one plugin graph on the
// plugin stream of `native`.
static accel_status_t accel__native_capture(accel_graph_t* graph,
                                            accel__graph_native_t* native,
                                            size_t first, size_t end,
                                            void** out_graph) {
  accel_device_t* d = graph->device;
  *out_graph = NULL;
  accel_status_t status = d->ops->stream_begin_capture(native->stream);
  if (status != ACCEL_OK) return status;
  accel__graph_exec_t x = {.device = d, .impl = native->stream};
  for (size_t i = first; i < end && status == ACCEL_OK; i++) {
    status = graph->nodes[i].run(&graph->nodes[i], &x);
  }
  void* captured = NULL;
  accel_status_t ended = d->ops->stream_end_capture(native->stream, &captured);
  if (status == ACCEL_OK) status = ended;
  if (status != ACCEL_OK) {
    if (captured != NULL) d->ops->graph_destroy(captured);
    return status;
  }
  *out_graph = captured;
  return ACCEL_OK;
}

// Appends a part to `native` (parts has room for every node).
static void accel__native_add(accel__graph_native_t* native, void* pg,
                              size_t node) {
  native->parts[native->part_count].graph = pg;
  native->parts[native->part_count].node = node;
  native->part_count++;
  if (pg != NULL) native->plugin_graphs++;
}

// Builds the parts of a native launch. On failure nothing native is left
// and the graph is replayed.
static accel_status_t accel__native_build(accel_graph_t* graph) {
  accel_device_t* d = graph->device;
  accel__graph_native_t* native = graph->native;
  if (native == NULL) {
    native = calloc(1, sizeof(*native));
    if (native == NULL) {
      return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "%s: graph parts", d->uri);
    }
    accel_status_t status = d->ops->stream_create(d->impl, 0, &native->stream);
    if (status != ACCEL_OK) {
      free(native);
      return status;
    }
    graph->native = native;
  }
  accel__native_clear(d, native);
  native->parts = calloc(graph->node_count != 0 ? graph->node_count : 1,
                         sizeof(*native->parts));
  if (native->parts == NULL) {
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "%s: graph parts", d->uri);
  }
  accel_status_t status = ACCEL_OK;
  size_t first = 0;
  for (size_t i = 0; i <= graph->node_count && status == ACCEL_OK; i++) {
    bool core = i < graph->node_count && graph->nodes[i].core_only;
    if (i < graph->node_count && !core) continue;
    if (first < i) {
      void* pg = NULL;
      status = accel__native_capture(graph, native, first, i, &pg);
      if (status == ACCEL_OK) accel__native_add(native, pg, first);
    }
    if (core) accel__native_add(native, NULL, i);
    first = i + 1;
  }
  if (status != ACCEL_OK) accel__native_clear(d, native);
  return status;
}

// Decides how `graph` runs after its capture or an update.
static void accel__graph_instantiate(accel_graph_t* graph) {
  graph->dirty = false;
  accel_device_t* d = graph->device;
  if (!accel__graph_native_ok(d)) return;
  accel_status_t status = accel__native_build(graph);
  if (status != ACCEL_OK) {
    accel__log(ACCEL_LOG_DEBUG,
               "%s: a graph of %zu nodes is replayed by the core: the "
               "plugin could not capture it (%s: %s)",
               d->uri, graph->node_count, accel_status_string(status),
               accel_last_error());
    accel__graph_native_free(graph);
  }
}

// ---------------------------------------------------------------------------
// Launch
// ---------------------------------------------------------------------------

// Orders this launch on `stream` after the previous one, and tells the
// allocator `stream` uses the graph's buffers (once per stream and
// version of the held buffers). Graph mutex held.
static accel_status_t accel__launch_prepare(accel_graph_t* graph,
                                            accel_stream_t* stream) {
  accel_device_t* d = graph->device;
  accel_status_t status = ACCEL_OK;
  accel_stream_t* last = graph->last_stream;
  if (last != NULL && last != stream && accel__stream_try_retain(last)) {
    if (graph->order_event == NULL) {
      status = d->ops->event_create(d->impl, 0, &graph->order_event);
    }
    if (status == ACCEL_OK) {
      status = d->ops->event_record(graph->order_event, last->impl);
    }
    if (status == ACCEL_OK) {
      status = d->ops->stream_wait_event(stream->impl, graph->order_event);
    }
    accel_stream_release(last);
    if (status != ACCEL_OK) return status;
  }
  accel__graph_launched_t* entry = NULL;
  for (size_t i = 0; i < graph->launched_count && entry == NULL; i++) {
    if (graph->launched[i].stream == stream) entry = &graph->launched[i];
  }
  if (entry == NULL && graph->launched_count == graph->launched_capacity) {
    // Streams destroyed since: their work is done, so forget them (a
    // program that launches on a new stream each time keeps no list of
    // dead ones).
    size_t kept = 0;
    for (size_t i = 0; i < graph->launched_count; i++) {
      accel_stream_t* s = graph->launched[i].stream;
      if (accel__stream_gone(s)) {
        if (graph->last_stream == s) graph->last_stream = NULL;
        accel__stream_weak_release(s);
      } else {
        graph->launched[kept++] = graph->launched[i];
      }
    }
    graph->launched_count = kept;
  }
  if (entry == NULL) {
    if (graph->launched_count == graph->launched_capacity) {
      size_t capacity =
          graph->launched_capacity ? graph->launched_capacity * 2 : 4;
      accel__graph_launched_t* launched =
          realloc(graph->launched, capacity * sizeof(*launched));
      if (launched == NULL) {
        return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                           "%s: no host memory to track a graph's streams",
                           d->uri);
      }
      graph->launched = launched;
      graph->launched_capacity = capacity;
    }
    entry = &graph->launched[graph->launched_count++];
    entry->stream = stream;
    entry->held_version = UINT64_MAX;
    accel__stream_weak_retain(stream);
  }
  if (entry->held_version != graph->held_version) {
    for (size_t i = 0; i < graph->held_count && status == ACCEL_OK; i++) {
      status = accel__buffer_use(graph->held[i], stream);
    }
    if (status != ACCEL_OK) return status;
    entry->held_version = graph->held_version;
  }
  graph->last_stream = stream;
  return ACCEL_OK;
}

accel_status_t accel__graph_enqueue(accel_graph_t* graph,
                                    accel_stream_t* stream) {
  accel_device_t* d = graph->device;
  pthread_mutex_lock(&graph->mutex);
  accel_status_t status = accel__launch_prepare(graph, stream);
  if (status != ACCEL_OK) {
    pthread_mutex_unlock(&graph->mutex);
    return status;
  }
  if (graph->dirty) accel__graph_instantiate(graph);
  accel__graph_exec_t x = {.device = d, .impl = stream->impl, .stream = stream};
  if (graph->rng_blocks != 0) {
    // As torch.cuda graphs: this launch's share of the default generator.
    uint64_t now = 0;
    (void)accel_device_rng_state_get(d, &x.rng_seed, &now);
    x.rng_base = atomic_fetch_add(&d->rng_offset, graph->rng_blocks);
  }
  const accel__graph_native_t* native = graph->native;
  if (native != NULL) {
    for (size_t i = 0; i < native->part_count && status == ACCEL_OK; i++) {
      const accel__graph_part_t* part = &native->parts[i];
      if (part->graph != NULL) {
        status = d->ops->graph_launch(part->graph, stream->impl);
      } else {
        const accel__graph_node_t* node = &graph->nodes[part->node];
        status = node->run(node, &x);
      }
    }
  } else {
    for (size_t i = 0; i < graph->node_count && status == ACCEL_OK; i++) {
      status = graph->nodes[i].run(&graph->nodes[i], &x);
    }
  }
  graph->launch_count++;
  pthread_mutex_unlock(&graph->mutex);
  return status;
}

accel_status_t accel_graph_launch(accel_graph_t* graph,
                                  accel_stream_t* stream) {
  ACCEL__TRACE_STREAM_API("accel_graph_launch", stream);
  static const char what[] = "accel_graph_launch";
  if (graph == NULL || stream == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: graph and stream are required", what);
  }
  if (graph->device != stream->device) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: the graph is on %s but the stream is on %s", what,
                       graph->device->uri, stream->device->uri);
  }
  if (accel__capturing(stream)) {
    if (atomic_load(&stream->capture) == graph) {
      return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: a graph cannot be launched into its own "
                         "capture",
                         what);
    }
    return accel__graph_child(stream, graph);
  }
  if (graph->capturing) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: the graph is still being captured", what);
  }
  return accel__graph_enqueue(graph, stream);
}

void accel__graph_launches_drain(accel_graph_t* graph) {
  for (size_t i = 0; i < graph->launched_count; i++) {
    accel_stream_t* s = graph->launched[i].stream;
    accel__stream_drain_weak(s);
    accel__stream_weak_release(s);
  }
  graph->launched_count = 0;
  graph->last_stream = NULL;
}

accel_status_t accel_graph_query_info(accel_graph_t* graph,
                                      accel_graph_info_t* out_info) {
  if (graph == NULL || out_info == NULL ||
      out_info->struct_size < sizeof(accel_graph_info_t)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_graph_query_info: graph and out_info (with "
                       "struct_size set to sizeof(accel_graph_info_t)) are "
                       "required");
  }
  uint32_t size = out_info->struct_size;
  memset(out_info, 0, sizeof(*out_info));
  out_info->struct_size = size;
  pthread_mutex_lock(&graph->mutex);
  out_info->node_count = graph->node_count;
  out_info->pool_bytes =
      accel__allocator_pool_bytes(graph->device, graph->pool);
  out_info->rng_blocks = graph->rng_blocks;
  out_info->native = graph->native != NULL;
  out_info->native_parts =
      graph->native != NULL ? graph->native->plugin_graphs : 0;
  out_info->launch_count = graph->launch_count;
  pthread_mutex_unlock(&graph->mutex);
  return ACCEL_OK;
}
