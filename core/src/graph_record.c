// SPDX-License-Identifier: MIT
//
// Recording (<accel/graph.h>): each hook turns one checked enqueue into a
// node holding exactly what the plugin call would have received, and a
// `run` function that makes that call on the plugin stream of a launch.
// So a replayed node costs one indirect call and the plugin call: there is
// nothing left to check. Buffers are held by the graph (accel__graph_ref);
// memory of the graph's pool is not, the pool keeps it.
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"

// ---------------------------------------------------------------------------
// Nodes
// ---------------------------------------------------------------------------

accel_status_t accel__graph_ref(accel_graph_t* graph, accel__graph_ref_t* ref,
                                accel_buffer_t* buffer, size_t offset) {
  ref->buffer = NULL;
  ref->offset = offset;
  ref->mem = accel__buffer_mem(buffer);
  ref->at = accel__buffer_offset(buffer, offset);
  if (accel__allocator_in_pool(buffer, graph->pool)) return ACCEL_OK;
  ref->buffer = buffer;
  // Newest first: a capture mostly reuses the buffers it just used.
  for (size_t i = graph->held_count; i-- > 0;) {
    if (graph->held[i] == buffer) return ACCEL_OK;
  }
  if (graph->held_count == graph->held_capacity) {
    size_t capacity = graph->held_capacity ? graph->held_capacity * 2 : 16;
    accel_buffer_t** held = realloc(graph->held, capacity * sizeof(*held));
    if (held == NULL) {
      ref->buffer = NULL;
      return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                         "%s: no host memory to record a graph's buffers",
                         graph->device->uri);
    }
    graph->held = held;
    graph->held_capacity = capacity;
  }
  accel_buffer_retain(buffer);
  graph->held[graph->held_count++] = buffer;
  return ACCEL_OK;
}

void accel__graph_node_free(accel__graph_node_t* node) {
  switch (node->kind) {
    case ACCEL_GRAPH_NODE_KERNEL:
      accel_kernel_release(node->u.kernel.kernel);
      free(node->u.kernel.args);
      free(node->u.kernel.arg_refs);
      free(node->u.kernel.values);
      break;
    case ACCEL_GRAPH_NODE_EVENT_RECORD:
    case ACCEL_GRAPH_NODE_EVENT_WAIT:
      accel_event_release(node->u.event);
      break;
    case ACCEL_GRAPH_NODE_GRAPH:
      accel_graph_release(node->u.graph);
      break;
    default:
      break;
  }
  memset(node, 0, sizeof(*node));
}

// Opens a node on the capture of `stream`: returns it zeroed, of `kind`,
// with the graph's mutex held (closed by accel__node_end). Fails, with no
// lock held, when the capture was invalidated or the list cannot grow.
static accel_status_t accel__node_begin(accel_stream_t* stream,
                                        accel_graph_node_kind_t kind,
                                        accel__graph_run_fn_t run,
                                        accel_graph_t** out_graph,
                                        accel__graph_node_t** out_node) {
  accel_graph_t* graph =
      atomic_load_explicit(&stream->capture, memory_order_acquire);
  pthread_mutex_lock(&graph->mutex);
  if (graph->invalid != ACCEL_OK) {
    pthread_mutex_unlock(&graph->mutex);
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "the capture on %s was invalidated, so this enqueue "
                       "is not recorded (end the capture with "
                       "accel_stream_end_capture): %s",
                       graph->device->uri, graph->invalid_message);
  }
  if (graph->node_count == graph->node_capacity) {
    size_t capacity = graph->node_capacity ? graph->node_capacity * 2 : 32;
    accel__graph_node_t* nodes =
        realloc(graph->nodes, capacity * sizeof(*nodes));
    if (nodes == NULL) {
      pthread_mutex_unlock(&graph->mutex);
      return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                         "%s: no host memory to record a graph node",
                         graph->device->uri);
    }
    graph->nodes = nodes;
    graph->node_capacity = capacity;
  }
  accel__graph_node_t* node = &graph->nodes[graph->node_count];
  memset(node, 0, sizeof(*node));
  node->kind = kind;
  node->run = run;
  *out_graph = graph;
  *out_node = node;
  return ACCEL_OK;
}

// Closes the node opened by accel__node_begin: kept when `status` is OK,
// else dropped. Returns `status`.
static accel_status_t accel__node_end(accel_graph_t* graph,
                                      accel__graph_node_t* node,
                                      accel_status_t status) {
  if (status == ACCEL_OK) {
    graph->node_count++;
  } else {
    accel__graph_node_free(node);
  }
  pthread_mutex_unlock(&graph->mutex);
  return status;
}

// Fills up to three buffer operands of `node` (NULL buffers skipped).
static accel_status_t accel__refs(accel_graph_t* graph,
                                  accel__graph_node_t* node, accel_buffer_t* b0,
                                  size_t o0, accel_buffer_t* b1, size_t o1,
                                  accel_buffer_t* b2, size_t o2) {
  accel_buffer_t* b[3] = {b0, b1, b2};
  size_t o[3] = {o0, o1, o2};
  accel_status_t status = ACCEL_OK;
  for (int i = 0; i < 3 && status == ACCEL_OK; i++) {
    if (b[i] != NULL)
      status = accel__graph_ref(graph, &node->ref[i], b[i], o[i]);
  }
  return status;
}

// A node of `kind` over the given operands, with `setup` run on it once the
// operands are in (may be NULL).
static accel_status_t accel__record(accel_stream_t* stream,
                                    accel_graph_node_kind_t kind,
                                    accel__graph_run_fn_t run,
                                    const accel__graph_node_t* params,
                                    accel_buffer_t* b0, size_t o0,
                                    accel_buffer_t* b1, size_t o1,
                                    accel_buffer_t* b2, size_t o2) {
  accel_graph_t* graph = NULL;
  accel__graph_node_t* node = NULL;
  accel_status_t status = accel__node_begin(stream, kind, run, &graph, &node);
  if (status != ACCEL_OK) return status;
  if (params != NULL) node->u = params->u;
  node->core_only = params != NULL && params->core_only;
  status = accel__refs(graph, node, b0, o0, b1, o1, b2, o2);
  return accel__node_end(graph, node, status);
}

// ---------------------------------------------------------------------------
// Copies and fills
// ---------------------------------------------------------------------------

#define ACCEL__R(n, i) (n)->ref[i].mem, (n)->ref[i].at

static accel_status_t accel__run_h2d(const accel__graph_node_t* n,
                                     const accel__graph_exec_t* x) {
  accel_device_t* d = x->device;
  return d->ops->copy_h2d(d->impl, x->impl, ACCEL__R(n, 0), n->u.copy.src,
                          n->u.copy.size);
}

static accel_status_t accel__run_d2h(const accel__graph_node_t* n,
                                     const accel__graph_exec_t* x) {
  accel_device_t* d = x->device;
  return d->ops->copy_d2h(d->impl, x->impl, n->u.copy.dst, ACCEL__R(n, 0),
                          n->u.copy.size);
}

static accel_status_t accel__run_d2d(const accel__graph_node_t* n,
                                     const accel__graph_exec_t* x) {
  accel_device_t* d = x->device;
  return d->ops->copy_d2d(d->impl, x->impl, ACCEL__R(n, 0), ACCEL__R(n, 1),
                          n->u.copy.size);
}

static accel_status_t accel__run_peer(const accel__graph_node_t* n,
                                      const accel__graph_exec_t* x) {
  accel_device_t* d = x->device;
  return d->plugin->copy_peer(d->plugin, d->impl, x->impl, ACCEL__R(n, 0),
                              n->u.copy.src_device->impl, ACCEL__R(n, 1),
                              n->u.copy.size);
}

static accel_status_t accel__run_memset(const accel__graph_node_t* n,
                                        const accel__graph_exec_t* x) {
  accel_device_t* d = x->device;
  return d->ops->memset(d->impl, x->impl, ACCEL__R(n, 0), n->u.fill.value,
                        n->u.fill.size);
}

accel_status_t accel__graph_copy_h2d(accel_stream_t* stream,
                                     accel_buffer_t* dst, size_t dst_offset,
                                     const void* src, size_t size) {
  accel__graph_node_t p = {.u.copy = {.src = src, .size = size}};
  return accel__record(stream, ACCEL_GRAPH_NODE_COPY, accel__run_h2d, &p, dst,
                       dst_offset, NULL, 0, NULL, 0);
}

accel_status_t accel__graph_copy_d2h(accel_stream_t* stream, void* dst,
                                     accel_buffer_t* src, size_t src_offset,
                                     size_t size) {
  accel__graph_node_t p = {.u.copy = {.dst = dst, .size = size}};
  return accel__record(stream, ACCEL_GRAPH_NODE_COPY, accel__run_d2h, &p, src,
                       src_offset, NULL, 0, NULL, 0);
}

accel_status_t accel__graph_copy_d2d(accel_stream_t* stream,
                                     accel_buffer_t* dst, size_t dst_offset,
                                     accel_buffer_t* src, size_t src_offset,
                                     size_t size) {
  bool peer = src->device != dst->device;
  // A peer copy may be staged through the host (synchronously): never
  // inside a plugin graph.
  accel__graph_node_t p = {.core_only = peer,
                           .u.copy = {.size = size, .src_device = src->device}};
  return accel__record(stream, ACCEL_GRAPH_NODE_COPY,
                       peer ? accel__run_peer : accel__run_d2d, &p, dst,
                       dst_offset, src, src_offset, NULL, 0);
}

accel_status_t accel__graph_memset(accel_stream_t* stream, accel_buffer_t* dst,
                                   size_t offset, uint8_t value, size_t size) {
  accel__graph_node_t p = {.u.fill = {.value = value, .size = size}};
  return accel__record(stream, ACCEL_GRAPH_NODE_FILL, accel__run_memset, &p,
                       dst, offset, NULL, 0, NULL, 0);
}

// ---------------------------------------------------------------------------
// Built-in ops
// ---------------------------------------------------------------------------

#define ACCEL__OP(n) (n)->u.op

static accel_status_t accel__run_fill(const accel__graph_node_t* n,
                                      const accel__graph_exec_t* x) {
  accel_device_t* d = x->device;
  return d->ops->op_fill(d->impl, x->impl, ACCEL__R(n, 0), ACCEL__OP(n).dtype,
                         ACCEL__OP(n).count, ACCEL__OP(n).value);
}

static accel_status_t accel__run_cast(const accel__graph_node_t* n,
                                      const accel__graph_exec_t* x) {
  accel_device_t* d = x->device;
  return d->ops->op_cast(d->impl, x->impl, ACCEL__R(n, 0), ACCEL__OP(n).dtype,
                         ACCEL__R(n, 1), ACCEL__OP(n).dtype2,
                         ACCEL__OP(n).count);
}

static accel_status_t accel__run_scale(const accel__graph_node_t* n,
                                       const accel__graph_exec_t* x) {
  accel_device_t* d = x->device;
  return d->ops->op_scale(d->impl, x->impl, ACCEL__R(n, 0), ACCEL__OP(n).dtype,
                          ACCEL__OP(n).count, ACCEL__OP(n).value);
}

static accel_status_t accel__run_axpy(const accel__graph_node_t* n,
                                      const accel__graph_exec_t* x) {
  accel_device_t* d = x->device;
  return d->ops->op_axpy(d->impl, x->impl, ACCEL__R(n, 0), ACCEL__R(n, 1),
                         ACCEL__OP(n).dtype, ACCEL__OP(n).count,
                         ACCEL__OP(n).value);
}

static accel_status_t accel__run_add(const accel__graph_node_t* n,
                                     const accel__graph_exec_t* x) {
  accel_device_t* d = x->device;
  return d->ops->op_add(d->impl, x->impl, ACCEL__R(n, 0), ACCEL__R(n, 1),
                        ACCEL__R(n, 2), ACCEL__OP(n).dtype, ACCEL__OP(n).count);
}

static accel_status_t accel__run_mul(const accel__graph_node_t* n,
                                     const accel__graph_exec_t* x) {
  accel_device_t* d = x->device;
  return d->ops->op_mul(d->impl, x->impl, ACCEL__R(n, 0), ACCEL__R(n, 1),
                        ACCEL__R(n, 2), ACCEL__OP(n).dtype, ACCEL__OP(n).count);
}

static accel_status_t accel__run_sum(const accel__graph_node_t* n,
                                     const accel__graph_exec_t* x) {
  accel_device_t* d = x->device;
  return d->ops->op_sum(d->impl, x->impl, ACCEL__R(n, 0), ACCEL__R(n, 1),
                        ACCEL__OP(n).dtype, ACCEL__OP(n).count);
}

static accel_status_t accel__run_unary(const accel__graph_node_t* n,
                                       const accel__graph_exec_t* x) {
  accel_device_t* d = x->device;
  return d->ops->op_unary(d->impl, x->impl, ACCEL__R(n, 0), ACCEL__R(n, 1),
                          ACCEL__OP(n).dtype, ACCEL__OP(n).count,
                          ACCEL__OP(n).dtype2);
}

static accel_status_t accel__run_bias_add(const accel__graph_node_t* n,
                                          const accel__graph_exec_t* x) {
  accel_device_t* d = x->device;
  return d->ops->op_bias_add(d->impl, x->impl, ACCEL__R(n, 0), ACCEL__R(n, 1),
                             ACCEL__OP(n).dtype, ACCEL__OP(n).count,
                             ACCEL__OP(n).count2);
}

// An op node: `params` of dtype, second dtype, counts and value.
static accel_status_t accel__record_op(accel_stream_t* stream,
                                       accel__graph_run_fn_t run,
                                       uint32_t dtype, uint32_t dtype2,
                                       uint64_t count, uint64_t count2,
                                       double value, accel_buffer_t* b0,
                                       size_t o0, accel_buffer_t* b1, size_t o1,
                                       accel_buffer_t* b2, size_t o2) {
  accel__graph_node_t p = {.u.op = {.dtype = dtype,
                                    .dtype2 = dtype2,
                                    .count = count,
                                    .count2 = count2,
                                    .value = value}};
  return accel__record(stream, ACCEL_GRAPH_NODE_OP, run, &p, b0, o0, b1, o1, b2,
                       o2);
}

accel_status_t accel__graph_op_fill(accel_stream_t* stream, accel_buffer_t* dst,
                                    size_t dst_offset, accel_dtype_t dtype,
                                    size_t count, double value) {
  return accel__record_op(stream, accel__run_fill, (uint32_t)dtype, 0, count, 0,
                          value, dst, dst_offset, NULL, 0, NULL, 0);
}

accel_status_t accel__graph_op_cast(accel_stream_t* stream, accel_buffer_t* dst,
                                    size_t dst_offset, accel_dtype_t dst_dtype,
                                    accel_buffer_t* src, size_t src_offset,
                                    accel_dtype_t src_dtype, size_t count) {
  return accel__record_op(stream, accel__run_cast, (uint32_t)dst_dtype,
                          (uint32_t)src_dtype, count, 0, 0, dst, dst_offset,
                          src, src_offset, NULL, 0);
}

accel_status_t accel__graph_op_scale(accel_stream_t* stream, accel_buffer_t* x,
                                     size_t x_offset, accel_dtype_t dtype,
                                     size_t count, double alpha) {
  return accel__record_op(stream, accel__run_scale, (uint32_t)dtype, 0, count,
                          0, alpha, x, x_offset, NULL, 0, NULL, 0);
}

accel_status_t accel__graph_op_axpy(accel_stream_t* stream, accel_buffer_t* y,
                                    size_t y_offset, accel_buffer_t* x,
                                    size_t x_offset, accel_dtype_t dtype,
                                    size_t count, double alpha) {
  return accel__record_op(stream, accel__run_axpy, (uint32_t)dtype, 0, count, 0,
                          alpha, y, y_offset, x, x_offset, NULL, 0);
}

accel_status_t accel__graph_op_binary(accel_stream_t* stream, bool mul,
                                      accel_buffer_t* z, size_t z_offset,
                                      accel_buffer_t* x, size_t x_offset,
                                      accel_buffer_t* y, size_t y_offset,
                                      accel_dtype_t dtype, size_t count) {
  return accel__record_op(stream, mul ? accel__run_mul : accel__run_add,
                          (uint32_t)dtype, 0, count, 0, 0, z, z_offset, x,
                          x_offset, y, y_offset);
}

accel_status_t accel__graph_op_sum(accel_stream_t* stream, accel_buffer_t* out,
                                   size_t out_offset, accel_buffer_t* x,
                                   size_t x_offset, accel_dtype_t dtype,
                                   size_t count) {
  if (count == 0) {
    // As accel_op_sum does: the sum of nothing is 0 in every dtype.
    return accel__graph_memset(stream, out, out_offset, 0,
                               accel_dtype_size(dtype));
  }
  return accel__record_op(stream, accel__run_sum, (uint32_t)dtype, 0, count, 0,
                          0, out, out_offset, x, x_offset, NULL, 0);
}

accel_status_t accel__graph_op_unary(accel_stream_t* stream,
                                     accel_buffer_t* dst, size_t dst_offset,
                                     accel_buffer_t* src, size_t src_offset,
                                     accel_dtype_t dtype, size_t count,
                                     uint32_t op) {
  return accel__record_op(stream, accel__run_unary, (uint32_t)dtype, op, count,
                          0, 0, dst, dst_offset, src, src_offset, NULL, 0);
}

accel_status_t accel__graph_op_bias_add(accel_stream_t* stream,
                                        accel_buffer_t* y, size_t y_offset,
                                        accel_buffer_t* bias,
                                        size_t bias_offset, accel_dtype_t dtype,
                                        size_t rows, size_t cols) {
  return accel__record_op(stream, accel__run_bias_add, (uint32_t)dtype, 0, rows,
                          cols, 0, y, y_offset, bias, bias_offset, NULL, 0);
}

// ---------------------------------------------------------------------------
// GEMM and random fills
// ---------------------------------------------------------------------------

static accel_status_t accel__run_gemm(const accel__graph_node_t* n,
                                      const accel__graph_exec_t* x) {
  accel_device_t* d = x->device;
  const accel_plugin_gemm_t* p = &n->u.gemm.p;
  if (n->u.gemm.batched == NULL) return d->ops->op_gemm(d->impl, x->impl, p);
  return n->u.gemm.batched(d, x->impl, p, &n->u.gemm.batch);
}

// A GEMM node, batched when `batch` is not NULL.
static accel_status_t accel__record_gemm(accel_stream_t* stream,
                                         const accel_plugin_gemm_t* p,
                                         const accel_plugin_gemm_batch_t* batch,
                                         accel__graph_batched_fn_t run,
                                         const accel_gemm_t* gemm,
                                         accel_buffer_t* workspace) {
  accel_graph_t* graph = NULL;
  accel__graph_node_t* node = NULL;
  accel_status_t status = accel__node_begin(stream, ACCEL_GRAPH_NODE_GEMM,
                                            accel__run_gemm, &graph, &node);
  if (status != ACCEL_OK) return status;
  node->u.gemm.p = *p;
  node->u.gemm.batched = run;
  if (batch != NULL) node->u.gemm.batch = *batch;
  // k of 0 reads neither A nor B (C = beta * C).
  bool reads = p->k != 0;
  status =
      accel__refs(graph, node, gemm->c, gemm->c_offset, reads ? gemm->a : NULL,
                  gemm->a_offset, reads ? gemm->b : NULL, gemm->b_offset);
  if (status == ACCEL_OK && workspace != NULL) {
    // The workspace is pool memory (the capture's allocations are), freed
    // right after this node as outside a capture: the GEMM of a later node
    // may reuse it, which replays in order too.
    status = accel__graph_ref(graph, &node->ref[3], workspace, 0);
  }
  return accel__node_end(graph, node, status);
}

accel_status_t accel__graph_op_gemm(accel_stream_t* stream,
                                    const accel_plugin_gemm_t* p,
                                    const accel_gemm_t* gemm,
                                    accel_buffer_t* workspace) {
  return accel__record_gemm(stream, p, NULL, NULL, gemm, workspace);
}

accel_status_t accel__graph_op_gemm_batched(
    accel_stream_t* stream, const accel_plugin_gemm_t* p,
    const accel_plugin_gemm_batch_t* batch, const accel_gemm_t* gemm,
    accel_buffer_t* workspace, accel__graph_batched_fn_t run) {
  return accel__record_gemm(stream, p, batch, run, gemm, workspace);
}

static accel_status_t accel__run_rng(const accel__graph_node_t* n,
                                     const accel__graph_exec_t* x) {
  accel_device_t* d = x->device;
  uint64_t seed = n->u.rng.seed, offset = n->u.rng.offset;
  if (n->u.rng.generator) {
    seed = x->rng_seed;
    offset += x->rng_base;
  }
  return d->ops->op_rng(d->impl, x->impl, ACCEL__R(n, 0), n->u.rng.dtype,
                        n->u.rng.count, n->u.rng.distribution, seed, offset,
                        n->u.rng.a, n->u.rng.b);
}

accel_status_t accel__graph_op_rng(accel_stream_t* stream, accel_buffer_t* dst,
                                   size_t dst_offset, accel_dtype_t dtype,
                                   size_t count, uint32_t distribution,
                                   uint64_t seed, uint64_t offset,
                                   bool generator, double a, double b) {
  accel_graph_t* graph = NULL;
  accel__graph_node_t* node = NULL;
  accel_status_t status = accel__node_begin(stream, ACCEL_GRAPH_NODE_RNG,
                                            accel__run_rng, &graph, &node);
  if (status != ACCEL_OK) return status;
  node->u.rng.dtype = (uint32_t)dtype;
  node->u.rng.distribution = distribution;
  node->u.rng.count = count;
  node->u.rng.seed = seed;
  node->u.rng.offset = offset;
  node->u.rng.generator = generator;
  node->u.rng.a = a;
  node->u.rng.b = b;
  // Default-generator fills take the offset of each launch: they cannot
  // be baked into a plugin graph.
  node->core_only = generator;
  status = accel__graph_ref(graph, &node->ref[0], dst, dst_offset);
  if (status == ACCEL_OK && generator) {
    node->u.rng.offset = graph->rng_blocks;
    graph->rng_blocks += ((uint64_t)count + 3) / 4;
  }
  return accel__node_end(graph, node, status);
}

// ---------------------------------------------------------------------------
// Kernel launches
// ---------------------------------------------------------------------------

static accel_status_t accel__run_kernel(const accel__graph_node_t* n,
                                        const accel__graph_exec_t* x) {
  return x->device->ops->launch(n->u.kernel.impl, x->impl, &n->u.kernel.launch);
}

accel_status_t accel__graph_launch_kernel(accel_stream_t* stream,
                                          accel_kernel_t* kernel,
                                          void* kernel_impl,
                                          const accel_plugin_launch_t* launch,
                                          const accel_kernel_arg_t* args) {
  accel_graph_t* graph = NULL;
  accel__graph_node_t* node = NULL;
  accel_status_t status = accel__node_begin(stream, ACCEL_GRAPH_NODE_KERNEL,
                                            accel__run_kernel, &graph, &node);
  if (status != ACCEL_OK) return status;
  uint32_t n = launch->num_args;
  size_t bytes = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (launch->args[i].kind == ACCEL_PLUGIN_ARG_VALUE) {
      bytes += launch->args[i].size;
    }
  }
  node->u.kernel.launch = *launch;
  node->u.kernel.impl = kernel_impl;
  node->u.kernel.args = calloc(n != 0 ? n : 1, sizeof(accel_plugin_arg_t));
  node->u.kernel.arg_refs = calloc(n != 0 ? n : 1, sizeof(accel__graph_ref_t));
  node->u.kernel.values = malloc(bytes != 0 ? bytes : 1);
  if (node->u.kernel.args == NULL || node->u.kernel.arg_refs == NULL ||
      node->u.kernel.values == NULL) {
    status = accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                         "%s: no host memory to record a launch of %u "
                         "arguments",
                         graph->device->uri, n);
  }
  unsigned char* value = node->u.kernel.values;
  for (uint32_t i = 0; i < n && status == ACCEL_OK; i++) {
    accel_plugin_arg_t* out = &node->u.kernel.args[i];
    *out = launch->args[i];
    if (out->kind == ACCEL_PLUGIN_ARG_VALUE) {
      memcpy(value, out->value, out->size);
      out->value = value;
      value += out->size;
    } else {
      status = accel__graph_ref(graph, &node->u.kernel.arg_refs[i],
                                args[i].buffer, args[i].offset);
    }
  }
  node->u.kernel.launch.args = node->u.kernel.args;
  if (status == ACCEL_OK) {
    accel_kernel_retain(kernel);
    node->u.kernel.kernel = kernel;
  }
  return accel__node_end(graph, node, status);
}

// ---------------------------------------------------------------------------
// Events, host functions, allocations and child graphs: run by the core
// ---------------------------------------------------------------------------

static accel_status_t accel__run_record(const accel__graph_node_t* n,
                                        const accel__graph_exec_t* x) {
  accel_event_t* event = n->u.event;
  accel_status_t status = x->device->ops->event_record(event->impl, x->impl);
  if (status == ACCEL_OK) atomic_store(&event->recorded, true);
  return status;
}

static accel_status_t accel__run_wait(const accel__graph_node_t* n,
                                      const accel__graph_exec_t* x) {
  return x->device->ops->stream_wait_event(x->impl, n->u.event->impl);
}

static accel_status_t accel__record_event(accel_stream_t* stream,
                                          accel_graph_node_kind_t kind,
                                          accel__graph_run_fn_t run,
                                          accel_event_t* event) {
  accel_graph_t* graph = NULL;
  accel__graph_node_t* node = NULL;
  accel_status_t status = accel__node_begin(stream, kind, run, &graph, &node);
  if (status != ACCEL_OK) return status;
  accel_event_retain(event);
  node->u.event = event;
  node->core_only = true;
  return accel__node_end(graph, node, ACCEL_OK);
}

accel_status_t accel__graph_event_record(accel_stream_t* stream,
                                         accel_event_t* event) {
  return accel__record_event(stream, ACCEL_GRAPH_NODE_EVENT_RECORD,
                             accel__run_record, event);
}

accel_status_t accel__graph_event_wait(accel_stream_t* stream,
                                       accel_event_t* event) {
  return accel__record_event(stream, ACCEL_GRAPH_NODE_EVENT_WAIT,
                             accel__run_wait, event);
}

static accel_status_t accel__run_host(const accel__graph_node_t* n,
                                      const accel__graph_exec_t* x) {
  return x->device->ops->launch_host_func(x->impl, n->u.host.fn,
                                          n->u.host.user_data);
}

accel_status_t accel__graph_host_func(accel_stream_t* stream,
                                      void (*fn)(void* user_data),
                                      void* user_data) {
  accel__graph_node_t p = {.core_only = true,
                           .u.host = {.fn = fn, .user_data = user_data}};
  return accel__record(stream, ACCEL_GRAPH_NODE_HOST_FUNC, accel__run_host, &p,
                       NULL, 0, NULL, 0, NULL, 0);
}

static accel_status_t accel__run_nothing(const accel__graph_node_t* n,
                                         const accel__graph_exec_t* x) {
  (void)n, (void)x;
  return ACCEL_OK;
}

void accel__graph_note_alloc(accel_stream_t* stream, accel_buffer_t* buffer) {
  // The memory is the pool's whatever happens here; a node that cannot be
  // recorded only leaves the count one short.
  (void)buffer;
  (void)accel__record(stream, ACCEL_GRAPH_NODE_ALLOC, accel__run_nothing, NULL,
                      NULL, 0, NULL, 0, NULL, 0);
}

static accel_status_t accel__run_child(const accel__graph_node_t* n,
                                       const accel__graph_exec_t* x) {
  return accel__graph_enqueue(n->u.graph, x->stream);
}

accel_status_t accel__graph_child(accel_stream_t* stream,
                                  accel_graph_t* child) {
  accel_graph_t* graph = NULL;
  accel__graph_node_t* node = NULL;
  accel_status_t status = accel__node_begin(stream, ACCEL_GRAPH_NODE_GRAPH,
                                            accel__run_child, &graph, &node);
  if (status != ACCEL_OK) return status;
  accel_graph_retain(child);
  node->u.graph = child;
  node->core_only = true;
  return accel__node_end(graph, node, ACCEL_OK);
}
