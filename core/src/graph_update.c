// SPDX-License-Identifier: MIT
//
// Updates between launches (<accel/graph.h>): a kernel node's geometry and
// arguments, and a buffer rebound everywhere the graph uses it. Both are
// checked as the enqueue was, change the node records under the graph's
// mutex, and mark the graph `dirty`, so a native graph is captured again
// at its next launch (launches already enqueued keep what they had: the
// plugin copied their arguments, and destroys an old plugin graph only
// once its runs are over).
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

// Copies the operands of `node` into the plugin structures its `run`
// passes as they are (GEMM, kernel arguments); the other runs read the
// operands themselves.
static void accel__node_resolve(accel__graph_node_t* node) {
  if (node->kind == ACCEL_GRAPH_NODE_GEMM) {
    accel_plugin_gemm_t* p = &node->u.gemm.p;
    p->c = node->ref[0].mem;
    p->c_offset = node->ref[0].at;
    if (node->ref[1].mem != NULL) {
      p->a = node->ref[1].mem;
      p->a_offset = node->ref[1].at;
    }
    if (node->ref[2].mem != NULL) {
      p->b = node->ref[2].mem;
      p->b_offset = node->ref[2].at;
    }
  } else if (node->kind == ACCEL_GRAPH_NODE_KERNEL) {
    for (uint32_t i = 0; i < node->u.kernel.launch.num_args; i++) {
      const accel__graph_ref_t* ref = &node->u.kernel.arg_refs[i];
      if (node->u.kernel.args[i].kind != ACCEL_PLUGIN_ARG_BUFFER) continue;
      node->u.kernel.args[i].mem = ref->mem;
      node->u.kernel.args[i].offset = ref->at;
    }
  }
}

// Whether any node of `graph` uses `buffer`.
static bool accel__graph_uses(const accel_graph_t* graph,
                              const accel_buffer_t* buffer) {
  for (size_t i = 0; i < graph->node_count; i++) {
    const accel__graph_node_t* n = &graph->nodes[i];
    for (int r = 0; r < ACCEL__GRAPH_REFS; r++) {
      if (n->ref[r].buffer == buffer) return true;
    }
    if (n->kind != ACCEL_GRAPH_NODE_KERNEL) continue;
    for (uint32_t a = 0; a < n->u.kernel.launch.num_args; a++) {
      if (n->u.kernel.arg_refs[a].buffer == buffer) return true;
    }
  }
  return false;
}

// Drops the graph's reference on every held buffer no node uses any more.
static void accel__graph_unhold_unused(accel_graph_t* graph) {
  size_t kept = 0;
  for (size_t i = 0; i < graph->held_count; i++) {
    accel_buffer_t* b = graph->held[i];
    if (accel__graph_uses(graph, b)) {
      graph->held[kept++] = b;
    } else {
      accel_buffer_release(b);
    }
  }
  graph->held_count = kept;
}

// Locks `graph` for an update; fails (unlocked) while it is captured.
static accel_status_t accel__update_begin(accel_graph_t* graph,
                                          const char* what) {
  if (graph == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: graph is NULL", what);
  }
  pthread_mutex_lock(&graph->mutex);
  if (graph->capturing) {
    pthread_mutex_unlock(&graph->mutex);
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: the graph is still being captured", what);
  }
  return ACCEL_OK;
}

// Ends an update: the held buffers changed and the graph runs anew.
static accel_status_t accel__update_end(accel_graph_t* graph,
                                        accel_status_t status) {
  if (status == ACCEL_OK) {
    accel__graph_unhold_unused(graph);
    graph->held_version++;
    graph->dirty = true;
  }
  pthread_mutex_unlock(&graph->mutex);
  return status;
}

// ---------------------------------------------------------------------------
// Kernel nodes
// ---------------------------------------------------------------------------

// Checks the new arguments against the node's and translates them into
// `out` (num_args entries).
static accel_status_t accel__check_args(const char* what,
                                        const accel_graph_t* graph,
                                        const accel__graph_node_t* node,
                                        size_t index, size_t num_args,
                                        const accel_kernel_arg_t* args,
                                        accel_plugin_arg_t* out) {
  uint32_t count = node->u.kernel.launch.num_args;
  if (num_args != count) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: node %zu was captured with %u arguments, not "
                       "%zu",
                       what, index, count, num_args);
  }
  if (num_args > 0 && args == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: args is NULL but num_args is %zu", what, num_args);
  }
  for (size_t i = 0; i < num_args; i++) {
    accel_status_t status =
        accel__kernel_translate_arg(what, graph->device, i, &args[i], &out[i]);
    if (status != ACCEL_OK) return status;
    const accel_plugin_arg_t* was = &node->u.kernel.args[i];
    if (out[i].kind != was->kind ||
        (was->kind == ACCEL_PLUGIN_ARG_VALUE && out[i].size != was->size)) {
      return accel__fail(
          ACCEL_ERROR_INVALID_ARGUMENT,
          "%s: args[%zu] of node %zu was captured as a %s%s; "
          "the kernel's signature cannot change",
          what, i, index,
          was->kind == ACCEL_PLUGIN_ARG_VALUE ? "value" : "buffer",
          was->kind == ACCEL_PLUGIN_ARG_VALUE ? " of another size" : "");
    }
  }
  return ACCEL_OK;
}

// Stores checked arguments in `node`: copies the values, takes the
// buffers. Cannot fail half-way: all memory is allocated first.
static accel_status_t accel__store_args(accel_graph_t* graph,
                                        accel__graph_node_t* node,
                                        const accel_kernel_arg_t* args,
                                        const accel_plugin_arg_t* in) {
  uint32_t n = node->u.kernel.launch.num_args;
  size_t bytes = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (in[i].kind == ACCEL_PLUGIN_ARG_VALUE) bytes += in[i].size;
  }
  unsigned char* values = malloc(bytes != 0 ? bytes : 1);
  // Room for every new buffer in `held`, so taking them cannot fail.
  size_t need = graph->held_count + n;
  if (values != NULL && need > graph->held_capacity) {
    accel_buffer_t** held = realloc(graph->held, need * sizeof(*held));
    if (held != NULL) {
      graph->held = held;
      graph->held_capacity = need;
    } else {
      free(values);
      values = NULL;
    }
  }
  if (values == NULL) {
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                       "%s: no host memory for kernel arguments",
                       graph->device->uri);
  }
  for (uint32_t i = 0; i < n; i++) {
    if (in[i].kind == ACCEL_PLUGIN_ARG_BUFFER) {
      (void)accel__graph_ref(graph, &node->u.kernel.arg_refs[i], args[i].buffer,
                             args[i].offset);
    }
  }
  unsigned char* at = values;
  for (uint32_t i = 0; i < n; i++) {
    node->u.kernel.args[i] = in[i];
    if (in[i].kind == ACCEL_PLUGIN_ARG_VALUE) {
      memcpy(at, in[i].value, in[i].size);
      node->u.kernel.args[i].value = at;
      at += in[i].size;
    }
  }
  free(node->u.kernel.values);
  node->u.kernel.values = values;
  return ACCEL_OK;
}

accel_status_t accel_graph_update_launch(accel_graph_t* graph, size_t index,
                                         const accel_launch_config_t* config,
                                         size_t num_args,
                                         const accel_kernel_arg_t* args) {
  static const char what[] = "accel_graph_update_launch";
  accel_status_t status = accel__update_begin(graph, what);
  if (status != ACCEL_OK) return status;
  if (index >= graph->node_count) {
    pthread_mutex_unlock(&graph->mutex);
    return accel__fail(ACCEL_ERROR_NOT_FOUND, "%s: node %zu of a graph of %zu",
                       what, index, graph->node_count);
  }
  accel__graph_node_t* node = &graph->nodes[index];
  if (node->kind != ACCEL_GRAPH_NODE_KERNEL) {
    pthread_mutex_unlock(&graph->mutex);
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: node %zu is not a kernel launch", what, index);
  }
  if (config != NULL) {
    status = accel__kernel_check_config(what, graph->device, config);
  }
  accel_plugin_arg_t stack[16];
  accel_plugin_arg_t* in = stack;
  if (status == ACCEL_OK && num_args > sizeof(stack) / sizeof(stack[0])) {
    in = malloc(num_args * sizeof(*in));
    if (in == NULL) {
      status = accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                           "%s: no memory for %zu arguments", what, num_args);
    }
  }
  if (status == ACCEL_OK) {
    status = accel__check_args(what, graph, node, index, num_args, args, in);
  }
  if (status == ACCEL_OK) status = accel__store_args(graph, node, args, in);
  if (status == ACCEL_OK && config != NULL) {
    accel_plugin_launch_t* l = &node->u.kernel.launch;
    memcpy(l->grid, config->grid, sizeof(l->grid));
    memcpy(l->block, config->block, sizeof(l->block));
    l->shared_mem_bytes = config->shared_mem_bytes;
  }
  if (in != stack) free(in);
  return accel__update_end(graph, status);
}

// ---------------------------------------------------------------------------
// Rebinding
// ---------------------------------------------------------------------------

// Points `ref` at `buffer` (same offset) when it names `old`; counts it.
static void accel__rebind_ref(accel_graph_t* graph, accel__graph_ref_t* ref,
                              const accel_buffer_t* old, accel_buffer_t* buffer,
                              size_t* count) {
  if (ref->buffer != old) return;
  ref->mem = accel__buffer_mem(buffer);
  ref->at = accel__buffer_offset(buffer, ref->offset);
  ref->buffer = accel__allocator_in_pool(buffer, graph->pool) ? NULL : buffer;
  ++*count;
}

// Checks that kernel arguments on `old` can move to `buffer`: the device's
// alignment of buffer arguments.
static accel_status_t accel__rebind_check(const char* what,
                                          const accel_graph_t* graph,
                                          const accel_buffer_t* old,
                                          const accel_buffer_t* buffer) {
  uint32_t align = graph->device->buffer_offset_alignment;
  if (align <= 1) return ACCEL_OK;
  for (size_t i = 0; i < graph->node_count; i++) {
    const accel__graph_node_t* n = &graph->nodes[i];
    if (n->kind != ACCEL_GRAPH_NODE_KERNEL) continue;
    for (uint32_t a = 0; a < n->u.kernel.launch.num_args; a++) {
      const accel__graph_ref_t* ref = &n->u.kernel.arg_refs[a];
      uint64_t at = accel__buffer_offset(buffer, ref->offset);
      if (ref->buffer == old && at % align != 0) {
        return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                           "%s: node %zu args[%u] would be at offset %llu of "
                           "its device allocation, not a multiple of %s's "
                           "buffer_offset_alignment of %u bytes",
                           what, i, a, (unsigned long long)at,
                           graph->device->uri, align);
      }
    }
  }
  return ACCEL_OK;
}

accel_status_t accel_graph_rebind_buffer(accel_graph_t* graph,
                                         accel_buffer_t* old_buffer,
                                         accel_buffer_t* new_buffer,
                                         size_t* out_count) {
  static const char what[] = "accel_graph_rebind_buffer";
  if (out_count != NULL) *out_count = 0;
  accel_status_t status = accel__check_buffer(what, "old", old_buffer);
  if (status == ACCEL_OK) status = accel__check_buffer(what, "new", new_buffer);
  if (status == ACCEL_OK) status = accel__update_begin(graph, what);
  if (status != ACCEL_OK) return status;
  if (new_buffer->device != graph->device) {
    status = accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: the new buffer is on %s but the graph is on %s",
                         what, new_buffer->device->uri, graph->device->uri);
  } else if (new_buffer->size < old_buffer->size) {
    status = accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: the new buffer has %zu bytes, fewer than the "
                         "%zu of the buffer it replaces",
                         what, new_buffer->size, old_buffer->size);
  } else if (accel__allocator_in_pool(old_buffer, graph->pool)) {
    status = accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: the old buffer comes from the graph's own "
                         "pool (allocated during the capture), which the "
                         "graph does not rebind",
                         what);
  } else {
    status = accel__rebind_check(what, graph, old_buffer, new_buffer);
  }
  size_t count = 0;
  if (status == ACCEL_OK && old_buffer != new_buffer &&
      accel__graph_uses(graph, old_buffer)) {
    // Hold the new buffer first (the only step that can fail).
    accel__graph_ref_t probe;
    status = accel__graph_ref(graph, &probe, new_buffer, 0);
    for (size_t i = 0; i < graph->node_count && status == ACCEL_OK; i++) {
      accel__graph_node_t* n = &graph->nodes[i];
      for (int r = 0; r < ACCEL__GRAPH_REFS; r++) {
        accel__rebind_ref(graph, &n->ref[r], old_buffer, new_buffer, &count);
      }
      if (n->kind == ACCEL_GRAPH_NODE_KERNEL) {
        for (uint32_t a = 0; a < n->u.kernel.launch.num_args; a++) {
          accel__rebind_ref(graph, &n->u.kernel.arg_refs[a], old_buffer,
                            new_buffer, &count);
        }
      }
      accel__node_resolve(n);
    }
  }
  if (status == ACCEL_OK && out_count != NULL) *out_count = count;
  return accel__update_end(graph, status);
}
