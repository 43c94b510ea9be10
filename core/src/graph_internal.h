// SPDX-License-Identifier: MIT
//
// Graphs inside the core (<accel/graph.h>): the capture hooks every enqueue
// path calls, the checks of calls that are illegal during a capture, and
// the graph and node records shared by graph*.c:
//   graph.c         capture begin/end, the graph handle, illegal calls
//   graph_record.c  one node per captured enqueue, and how each node runs
//   graph_launch.c  launches: core replay, or native plugin graphs
//   graph_update.c  kernel node updates and buffer rebinding
//
// A capture is a graph under construction: `stream->capture` points at it
// from begin to end, so the hook every enqueue path has,
//   if (accel__capturing(stream)) return accel__graph_<what>(stream, ...);
// placed after the call's checks and before its plugin call, costs one
// load when nothing is captured. The record functions assume the checks
// passed: they only store what the plugin call would have received.
#ifndef ACCEL_CORE_GRAPH_INTERNAL_H_
#define ACCEL_CORE_GRAPH_INTERNAL_H_

#include <accel/graph.h>

#include "internal.h"

// Whether `stream` is capturing (its enqueues go to the graph).
static inline bool accel__capturing(const accel_stream_t* stream) {
  return atomic_load_explicit(&stream->capture, memory_order_acquire) != NULL;
}

// Captures in progress in the process; the illegal-call checks below cost
// one load while it is 0.
extern atomic_uint accel__graph_captures;

// ---------------------------------------------------------------------------
// Illegal calls during a capture (graph.c). Each returns ACCEL_OK, or
// invalidates the captures concerned and returns INVALID_ARGUMENT with a
// message naming `what` and the capture.
// ---------------------------------------------------------------------------

// `what` (a synchronize or query) would wait for the capturing `stream`.
accel_status_t accel__graph_illegal_wait(accel_stream_t* stream,
                                         const char* what);
accel_status_t accel__graph_check_device_slow(accel_device_t* device,
                                              const char* what);
accel_status_t accel__graph_check_event_slow(accel_event_t* event,
                                             const char* what);
accel_status_t accel__graph_check_buffer_slow(const accel_buffer_t* buffer,
                                              const char* what);

// accel_device_synchronize: no stream of `device` may be capturing.
static inline accel_status_t accel__graph_check_device(accel_device_t* device,
                                                       const char* what) {
  if (atomic_load_explicit(&accel__graph_captures, memory_order_relaxed) == 0)
    return ACCEL_OK;
  return accel__graph_check_device_slow(device, what);
}

// Waiting for `event` (synchronize, query, elapsed time, or a wait of a
// stream that is not capturing): it must not be recorded in a capture.
static inline accel_status_t accel__graph_check_event(accel_event_t* event,
                                                      const char* what) {
  if (atomic_load_explicit(&accel__graph_captures, memory_order_relaxed) == 0)
    return ACCEL_OK;
  return accel__graph_check_event_slow(event, what);
}

// A synchronous read, write, copy or fill of `buffer`: no capture may use
// it.
static inline accel_status_t accel__graph_check_buffer(
    const accel_buffer_t* buffer, const char* what) {
  if (atomic_load_explicit(&accel__graph_captures, memory_order_relaxed) == 0)
    return ACCEL_OK;
  return accel__graph_check_buffer_slow(buffer, what);
}

// The last reference of a capturing `stream` is going: the capture is
// discarded (accel_stream_release calls it first).
void accel__graph_stream_dying(accel_stream_t* stream);

// ---------------------------------------------------------------------------
// Record hooks (graph_record.c): one node per call, with the arguments the
// plugin call would have had. Buffer arguments are checked already.
// ---------------------------------------------------------------------------

accel_status_t accel__graph_copy_h2d(accel_stream_t* stream,
                                     accel_buffer_t* dst, size_t dst_offset,
                                     const void* src, size_t size);
accel_status_t accel__graph_copy_d2h(accel_stream_t* stream, void* dst,
                                     accel_buffer_t* src, size_t src_offset,
                                     size_t size);
// Between buffers; `src` may be on a peer device of the same backend.
accel_status_t accel__graph_copy_d2d(accel_stream_t* stream,
                                     accel_buffer_t* dst, size_t dst_offset,
                                     accel_buffer_t* src, size_t src_offset,
                                     size_t size);
accel_status_t accel__graph_memset(accel_stream_t* stream, accel_buffer_t* dst,
                                   size_t offset, uint8_t value, size_t size);

accel_status_t accel__graph_op_fill(accel_stream_t* stream, accel_buffer_t* dst,
                                    size_t dst_offset, accel_dtype_t dtype,
                                    size_t count, double value);
accel_status_t accel__graph_op_cast(accel_stream_t* stream, accel_buffer_t* dst,
                                    size_t dst_offset, accel_dtype_t dst_dtype,
                                    accel_buffer_t* src, size_t src_offset,
                                    accel_dtype_t src_dtype, size_t count);
accel_status_t accel__graph_op_scale(accel_stream_t* stream, accel_buffer_t* x,
                                     size_t x_offset, accel_dtype_t dtype,
                                     size_t count, double alpha);
accel_status_t accel__graph_op_axpy(accel_stream_t* stream, accel_buffer_t* y,
                                    size_t y_offset, accel_buffer_t* x,
                                    size_t x_offset, accel_dtype_t dtype,
                                    size_t count, double alpha);
// add (`mul` false) or mul.
accel_status_t accel__graph_op_binary(accel_stream_t* stream, bool mul,
                                      accel_buffer_t* z, size_t z_offset,
                                      accel_buffer_t* x, size_t x_offset,
                                      accel_buffer_t* y, size_t y_offset,
                                      accel_dtype_t dtype, size_t count);
accel_status_t accel__graph_op_sum(accel_stream_t* stream, accel_buffer_t* out,
                                   size_t out_offset, accel_buffer_t* x,
                                   size_t x_offset, accel_dtype_t dtype,
                                   size_t count);
// `p` is the plugin GEMM as op_gemm would get it, its workspace (when it
// has one) the pool buffer `workspace`; `gemm` names the buffers.
accel_status_t accel__graph_op_gemm(accel_stream_t* stream,
                                    const accel_plugin_gemm_t* p,
                                    const accel_gemm_t* gemm,
                                    accel_buffer_t* workspace);
// ABI 1.4 ops (ops_nn.c): activations, bias-add.
accel_status_t accel__graph_op_unary(accel_stream_t* stream,
                                     accel_buffer_t* dst, size_t dst_offset,
                                     accel_buffer_t* src, size_t src_offset,
                                     accel_dtype_t dtype, size_t count,
                                     uint32_t op);
accel_status_t accel__graph_op_bias_add(accel_stream_t* stream,
                                        accel_buffer_t* y, size_t y_offset,
                                        accel_buffer_t* bias,
                                        size_t bias_offset, accel_dtype_t dtype,
                                        size_t rows, size_t cols);
// How a strided-batched GEMM is enqueued on a plugin stream (ops_nn.c's
// accel__gemm_batched_run: the plugin's op_gemm_batched, or a loop).
typedef accel_status_t (*accel__graph_batched_fn_t)(
    accel_device_t* device, void* stream, const accel_plugin_gemm_t* p,
    const accel_plugin_gemm_batch_t* batch);
// A strided-batched GEMM (ops_nn.c), enqueued at each launch by `run`; as
// accel__graph_op_gemm otherwise.
accel_status_t accel__graph_op_gemm_batched(
    accel_stream_t* stream, const accel_plugin_gemm_t* p,
    const accel_plugin_gemm_batch_t* batch, const accel_gemm_t* gemm,
    accel_buffer_t* workspace, accel__graph_batched_fn_t run);
// A random fill; with `generator` the default generator's seed and offset
// are taken at each launch (`seed` and `offset` are ignored).
accel_status_t accel__graph_op_rng(accel_stream_t* stream, accel_buffer_t* dst,
                                   size_t dst_offset, accel_dtype_t dtype,
                                   size_t count, uint32_t distribution,
                                   uint64_t seed, uint64_t offset,
                                   bool generator, double a, double b);
// A kernel launch; `launch` as the plugin would get it, `args` as the
// caller gave them (for the buffers and the values, which are copied).
accel_status_t accel__graph_launch_kernel(accel_stream_t* stream,
                                          accel_kernel_t* kernel,
                                          void* kernel_impl,
                                          const accel_plugin_launch_t* launch,
                                          const accel_kernel_arg_t* args);
accel_status_t accel__graph_event_record(accel_stream_t* stream,
                                         accel_event_t* event);
accel_status_t accel__graph_event_wait(accel_stream_t* stream,
                                       accel_event_t* event);
accel_status_t accel__graph_host_func(accel_stream_t* stream,
                                      void (*fn)(void* user_data),
                                      void* user_data);
// A launch of `child` on a capturing stream: a node that launches it.
accel_status_t accel__graph_child(accel_stream_t* stream, accel_graph_t* child);
// A stream-ordered allocation the capture made (from its pool): a node
// that does nothing at launch.
void accel__graph_note_alloc(accel_stream_t* stream, accel_buffer_t* buffer);

// Checks a launch geometry as accel_kernel_launch() does (module.c).
accel_status_t accel__kernel_check_config(const char* what,
                                          const accel_device_t* device,
                                          const accel_launch_config_t* config);
// Checks kernel argument `i` as accel_kernel_launch() does and translates
// it for the plugin (module.c).
accel_status_t accel__kernel_translate_arg(const char* what,
                                           const accel_device_t* device,
                                           size_t i,
                                           const accel_kernel_arg_t* arg,
                                           accel_plugin_arg_t* out);

// ---------------------------------------------------------------------------
// Records
// ---------------------------------------------------------------------------

// One buffer operand of a node: the buffer (held by the graph), or NULL
// for memory of the graph's pool, and the plugin memory and offset the
// node passes (recomputed when the buffer is rebound).
typedef struct accel__graph_ref {
  accel_buffer_t* buffer;
  size_t offset;  // bytes into `buffer`
  void* mem;
  uint64_t at;
} accel__graph_ref_t;

typedef struct accel__graph_node accel__graph_node_t;

// What one launch of a graph runs against.
typedef struct accel__graph_exec {
  accel_device_t* device;
  void* impl;              // the plugin stream the nodes are enqueued on
  accel_stream_t* stream;  // the launch stream; NULL while instantiating
  uint64_t rng_seed;       // the default generator, taken at launch
  uint64_t rng_base;       // its offset, advanced by the graph's blocks
} accel__graph_exec_t;

typedef accel_status_t (*accel__graph_run_fn_t)(const accel__graph_node_t* node,
                                                const accel__graph_exec_t* x);

#define ACCEL__GRAPH_REFS 4

struct accel__graph_node {
  accel_graph_node_kind_t kind;
  // Runs only from the core: never inside a plugin graph (see
  // graph_launch.c).
  bool core_only;
  accel__graph_run_fn_t run;
  accel__graph_ref_t ref[ACCEL__GRAPH_REFS];
  union {
    struct {
      const void* src;  // host source (h2d)
      void* dst;        // host destination (d2h)
      size_t size;
      accel_device_t* src_device;  // peer copies
    } copy;
    struct {
      uint8_t value;
      size_t size;
    } fill;
    struct {
      uint32_t dtype, dtype2;  // dtype2: cast's source, unary's op
      uint64_t count, count2;  // count2: bias-add's cols
      double value;
    } op;
    struct {
      accel_plugin_gemm_t p;  // c, a, b, workspace from ref[0..3]
      accel_plugin_gemm_batch_t batch;
      accel__graph_batched_fn_t batched;  // NULL for one GEMM
    } gemm;
    struct {
      uint32_t dtype, distribution;
      uint64_t count, seed, offset;  // offset: relative with `generator`
      bool generator;
      double a, b;
    } rng;
    struct {
      accel_kernel_t* kernel;  // held
      void* impl;
      accel_plugin_launch_t launch;  // args -> `args`
      accel_plugin_arg_t* args;
      accel__graph_ref_t* arg_refs;  // per argument; buffer NULL: a value
      unsigned char* values;         // the value bytes, copied
    } kernel;
    accel_event_t* event;  // held
    struct {
      void (*fn)(void* user_data);
      void* user_data;
    } host;
    accel_graph_t* graph;  // a child graph, held
  } u;
};

// A plugin stream and the plugin graphs captured on it (graph_launch.c).
typedef struct accel__graph_native accel__graph_native_t;

// A stream a graph was launched on (weakly held), and the `held_version`
// of the buffers it was told about (accel__buffer_use).
typedef struct accel__graph_launched {
  accel_stream_t* stream;
  uint64_t held_version;
} accel__graph_launched_t;

struct accel_graph {
  atomic_uint refs;
  accel_device_t* device;  // held
  pthread_mutex_t mutex;   // launches, updates and the fields below
  accel__graph_node_t* nodes;
  size_t node_count;
  size_t node_capacity;
  // Buffers the nodes use, one reference each (not pool buffers).
  accel_buffer_t** held;
  size_t held_count;
  size_t held_capacity;
  // The private pool (allocator_stream.c) and the capture stream, weakly held,
  // which its blocks may still be used by after the capture.
  accel__pool_t* pool;
  accel_stream_t* capture_stream;
  uint64_t rng_blocks;
  // Capture state: from begin to end only.
  bool capturing;
  accel_status_t invalid;  // first broken rule, ACCEL_OK if none
  char invalid_message[512];
  accel_graph_t* next_capture;  // in graph.c's list of captures
  // Launch state (graph_launch.c).
  accel__graph_launched_t* launched;  // streams launched on
  size_t launched_count;
  size_t launched_capacity;
  uint64_t held_version;        // bumped when `held` changes after the capture
  accel_stream_t* last_stream;  // of the last launch, in `launched`
  void* order_event;            // plugin event ordering launches
  accel__graph_native_t* native;
  bool dirty;  // captured or updated since the last instantiation
  uint64_t launch_count;
};

// Adds `buffer` (not NULL) to the graph's held buffers, taking a reference
// unless it is already there, and fills `ref`: a pool buffer is not held
// (`ref->buffer` NULL). Caller holds the graph's mutex or is capturing.
accel_status_t accel__graph_ref(accel_graph_t* graph, accel__graph_ref_t* ref,
                                accel_buffer_t* buffer, size_t offset);
// Drops every record the node holds (graph_record.c).
void accel__graph_node_free(accel__graph_node_t* node);

// Native instantiation (graph_launch.c): destroys the plugin graphs and
// their stream.
void accel__graph_native_free(accel_graph_t* graph);
// Waits for the launches still queued on every stream the graph was
// launched on and forgets those streams (graph_launch.c).
void accel__graph_launches_drain(accel_graph_t* graph);
// Enqueues one launch of `graph` on `stream` (checked; not capturing).
accel_status_t accel__graph_enqueue(accel_graph_t* graph,
                                    accel_stream_t* stream);

// The graph's private pool (allocator_stream.c). accel__allocator_pool_begin
// creates a pool and makes it the allocations of `stream` (its stream
// pool) until accel__allocator_pool_end; NULL when out of memory.
// accel__allocator_pool_release gives the pool's memory back to the
// device (the graph's launches are done); blocks still live stay valid.
accel__pool_t* accel__allocator_pool_begin(accel_stream_t* stream);
void accel__allocator_pool_end(accel_stream_t* stream, accel__pool_t* pool);
void accel__allocator_pool_release(accel_device_t* device, accel__pool_t* pool);
uint64_t accel__allocator_pool_bytes(accel_device_t* device,
                                     const accel__pool_t* pool);
// Whether `buffer` is a block of `pool`.
bool accel__allocator_in_pool(const accel_buffer_t* buffer,
                              const accel__pool_t* pool);

#endif  // ACCEL_CORE_GRAPH_INTERNAL_H_
