// SPDX-License-Identifier: MIT
//
// accel: graphs, captured from a stream and replayed (torch.cuda.CUDAGraph,
// CUDA stream capture). Included at the end of <accel/accel.h>, whose
// conventions hold here too; it also compiles when included first. The
// rules are in docs/graphs.md.
//
// Between accel_stream_begin_capture() and accel_stream_end_capture(), the
// work a program enqueues on the capturing stream is recorded instead of
// run: copies (accel_stream_write_buffer, _read_buffer, _copy_buffer),
// byte fills, the built-in ops (GEMM and random fills included), kernel
// launches, event records and waits, host functions, launches of other
// graphs and stream-ordered allocations (accel_stream_alloc_buffer). Each
// enqueue is checked as it would be outside a capture (a bad argument
// fails the call and records nothing) and becomes one node, in enqueue
// order; work that enqueues nothing (a count of 0) records nothing. The
// graph that accel_stream_end_capture() returns runs that work again, in
// the same order, on any stream of the same device, as many times as
// wanted, each launch one enqueue.
//
// What a launch does is fixed at capture: the buffers, byte offsets,
// sizes, host pointers, scalars, kernel arguments and geometry of every
// node are those of the enqueue, not their values at launch. Host memory
// named by a captured copy must stay valid, and a source unchanged, until
// every launch that reads it has run. accel_graph_update_launch() and
// accel_graph_rebind_buffer() change a graph between launches.
//
// During a capture, calls that would wait for the capturing stream or read
// what the capture has not run fail with ACCEL_ERROR_INVALID_ARGUMENT and
// a message that names the capture, and the capture is then invalidated:
// every later enqueue on the stream fails the same way until
// accel_stream_end_capture(), which returns the first such error instead
// of a graph and leaves the stream as it was before the capture. They are:
// accel_stream_synchronize() and accel_stream_query() of the capturing
// stream; accel_device_synchronize() of its device; accel_event_
// synchronize(), _query() and _elapsed_ms() of an event recorded in the
// capture, and accel_stream_wait_event() of another stream on it; and the
// synchronous accel_buffer_read(), _write(), _copy() and _fill() of a
// buffer the capture uses. Only the capturing stream records: other
// streams run their work as usual, and work of another thread enqueued on
// the capturing stream is recorded too.
//
// Memory: the buffers a graph's nodes use are held by the graph (a
// reference each, dropped when the graph goes), except those allocated
// during the capture with accel_stream_alloc_buffer() on the capturing
// stream. Those come from a pool private to the graph, as torch.cuda's
// graph pools: the pool's memory stays reserved for the graph until it is
// released, every launch reuses it, and a pool buffer released during the
// capture may hand its memory to a later allocation of the same capture
// (the graph runs its nodes in order, so the two never overlap). A pool
// buffer the program still holds after the capture is its own: it stays
// valid after the graph is released. GEMM workspaces of captured GEMMs
// come from the pool too.
//
// Random numbers: a fill from the device's default generator
// (accel_op_random_uniform, _normal, _bits) records its position in the
// graph's share of the generator, not a fixed offset, and does not advance
// the generator at capture. Each launch takes the generator's seed and
// offset at that moment and advances the offset by the graph's total, so
// every launch draws new numbers exactly as the same fills enqueued one by
// one would (torch.cuda graphs do the same). Fills with an explicit seed
// and offset (accel_op_rng_*) replay the same numbers every launch.
//
// How a launch runs: where the plugin captures natively (plugin ABI 1.4
// stream_begin_capture, stream_end_capture, graph_launch and
// graph_destroy: cpu, cuda and rocm), the core instantiates the graph once
// by replaying its nodes into a plugin capture, and a launch is one
// graph_launch (plus the nodes that cannot be in a plugin graph, which the
// core enqueues between its parts: default-generator random fills, event
// records and waits, host functions, peer copies and child graphs). Elsewhere
// (opencl, third-party plugins without the entries) the core replays the
// node list through the plugin's entries; everything was checked at
// capture, so a replayed node costs one plugin call. Either way every
// device reports ACCEL_DEVICE_CAP_GRAPHS; accel_graph_query_info() says
// which kind a graph is. CUDA and HIP graphs have run only on this
// project's stand-in drivers, never on GPU hardware.
#ifndef ACCEL_GRAPH_H_
#define ACCEL_GRAPH_H_

#include <accel/accel.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// A captured graph. Reference counted; keeps its device alive.
typedef struct accel_graph accel_graph_t;

// ===========================================================================
// Capture
// ===========================================================================

// Starts capturing `stream`: until accel_stream_end_capture(), the work
// enqueued on it is recorded, not run (see the top of this header). Work
// enqueued before the call runs as usual and is not waited for.
// ACCEL_ERROR_INVALID_ARGUMENT for a NULL `stream` or one already
// capturing (that capture goes on unchanged); ACCEL_ERROR_OUT_OF_MEMORY.
ACCEL_API accel_status_t accel_stream_begin_capture(accel_stream_t* stream);

// Ends the capture of `stream` and returns what it recorded in
// `*out_graph` (one reference; a capture that recorded nothing gives a
// graph of 0 nodes, whose launch enqueues nothing). The stream runs its
// work again from now on. If a call during the capture broke a capture
// rule, returns ACCEL_ERROR_INVALID_ARGUMENT with that call's message and
// no graph; the capture is discarded all the same and the stream works
// again. ACCEL_ERROR_INVALID_ARGUMENT also for NULL arguments or a stream
// that is not capturing.
ACCEL_API accel_status_t accel_stream_end_capture(accel_stream_t* stream,
                                                  accel_graph_t** out_graph);

// Whether `stream` is capturing (between begin and end, also after a rule
// broke the capture). False for NULL.
ACCEL_API bool accel_stream_is_capturing(const accel_stream_t* stream);

// ===========================================================================
// Graphs
// ===========================================================================

ACCEL_API void accel_graph_retain(accel_graph_t* graph);

// Drops a reference. The last one waits for the graph's launches that are
// still queued (as accel_module_release() does for its launches), then
// releases the buffers, events and kernels the graph held and gives its
// pool back to the device's allocator (pool buffers the program still
// holds stay valid). NULL is ignored.
ACCEL_API void accel_graph_release(accel_graph_t* graph);

// The graph's device (borrowed); NULL for NULL.
ACCEL_API accel_device_t* accel_graph_device(const accel_graph_t* graph);

// Number of nodes; 0 for NULL.
ACCEL_API size_t accel_graph_node_count(const accel_graph_t* graph);

// What one node does. Values are stable.
typedef enum accel_graph_node_kind {
  ACCEL_GRAPH_NODE_COPY = 0,    // a stream copy: host <-> buffer, buffers
  ACCEL_GRAPH_NODE_FILL = 1,    // accel_stream_fill_buffer (bytes)
  ACCEL_GRAPH_NODE_OP = 2,      // a built-in op other than GEMM and RNG
  ACCEL_GRAPH_NODE_GEMM = 3,    // accel_op_gemm
  ACCEL_GRAPH_NODE_RNG = 4,     // a random fill
  ACCEL_GRAPH_NODE_KERNEL = 5,  // accel_kernel_launch
  ACCEL_GRAPH_NODE_EVENT_RECORD = 6,
  ACCEL_GRAPH_NODE_EVENT_WAIT = 7,
  ACCEL_GRAPH_NODE_HOST_FUNC = 8,  // accel_stream_launch_host_func
  ACCEL_GRAPH_NODE_ALLOC = 9,      // accel_stream_alloc_buffer (no work)
  ACCEL_GRAPH_NODE_GRAPH = 10,     // accel_graph_launch of another graph
  ACCEL_GRAPH_NODE_KIND_MAX_ENUM = 0x7fffffff
} accel_graph_node_kind_t;

// Sets `*out_kind` to the kind of node `index` (0 is the first enqueue
// of the capture). ACCEL_ERROR_INVALID_ARGUMENT for NULL arguments,
// ACCEL_ERROR_NOT_FOUND for an index past the last node.
ACCEL_API accel_status_t
accel_graph_node_kind(const accel_graph_t* graph, size_t index,
                      accel_graph_node_kind_t* out_kind);

// Facts about a graph. Caller-owned; set `struct_size` first.
typedef struct accel_graph_info {
  uint32_t struct_size;
  size_t node_count;
  // Bytes of device memory the graph's private pool holds (allocations and
  // GEMM workspaces of the capture, rounded as the caching allocator
  // rounds, in whole segments).
  uint64_t pool_bytes;
  // Philox blocks of the default generator one launch advances the offset
  // by (the sum of ceil(count / 4) over its default-generator fills).
  uint64_t rng_blocks;
  // Whether launches go through the plugin's native graphs (true) or the
  // core replays the nodes (false); decided at the first launch after the
  // capture or an update, false before.
  bool native;
  // Plugin graphs one launch runs (native only; the core enqueues the
  // nodes that cannot be in one between them).
  uint32_t native_parts;
  // Launches so far.
  uint64_t launch_count;
} accel_graph_info_t;

// Fills `*out_info`. ACCEL_ERROR_INVALID_ARGUMENT for NULL arguments or a
// `struct_size` smaller than this first version of the struct.
ACCEL_API accel_status_t accel_graph_query_info(accel_graph_t* graph,
                                                accel_graph_info_t* out_info);

// Enqueues one run of `graph` on `stream`, which may be any stream of the
// graph's device (not only the one it was captured on): the nodes run in
// capture order, after the work enqueued on `stream` before the call and
// after the previous launch of the same graph on any stream (as
// cuGraphLaunch orders launches of one graph), and work enqueued after
// the call waits for them. Returns once enqueued. On a capturing `stream`
// the launch is recorded as one node (a child graph, held by the new
// graph). ACCEL_ERROR_INVALID_ARGUMENT for NULL arguments, a stream of
// another device, or a graph launched into its own capture; the
// enqueue errors of the nodes (a launch that fails part-way has enqueued
// the nodes before the failing one).
ACCEL_API accel_status_t accel_graph_launch(accel_graph_t* graph,
                                            accel_stream_t* stream);

// ===========================================================================
// Update between launches. An update applies to the launches that follow
// it; launches already enqueued run as they were. Updates and launches of
// one graph may come from several threads (they are serialised).
// ===========================================================================

// Replaces the geometry and arguments of kernel node `index`: `config`
// (NULL keeps the captured one) and `num_args` arguments `args`, checked
// as accel_kernel_launch() checks them. `num_args` must be the captured
// count and every argument keep its kind and, for a value, its size (the
// kernel's signature is fixed); buffers must be on the graph's device,
// and may be any buffer there (the graph takes a reference and drops the
// one it held). Values are copied. ACCEL_ERROR_INVALID_ARGUMENT for NULL
// `graph`, a node that is not a kernel launch (ACCEL_ERROR_NOT_FOUND for
// an index past the last node), or arguments that do not fit;
// ACCEL_ERROR_UNSUPPORTED for a buffer offset the device cannot take (as
// accel_kernel_launch()).
ACCEL_API accel_status_t accel_graph_update_launch(
    accel_graph_t* graph, size_t index, const accel_launch_config_t* config,
    size_t num_args, const accel_kernel_arg_t* args);

// Makes every node of `graph` that uses `old_buffer` use `new_buffer`
// instead, at the same byte offsets (torch's "static input" pattern turned
// around: point a captured graph at other memory). `new_buffer` must be on
// the graph's device and at least as large as `old_buffer`, which must not
// be a pool buffer of this graph. The graph takes a reference on
// `new_buffer` and drops its reference on `old_buffer`. `*out_count`, when
// `out_count` is not NULL, gets the number of operands changed (0 when no
// node used `old_buffer`, which is not an error).
// ACCEL_ERROR_INVALID_ARGUMENT for NULL or released buffers, another
// device, a smaller `new_buffer` or a pool buffer; ACCEL_ERROR_UNSUPPORTED
// when a kernel argument would land at an offset the device cannot take.
ACCEL_API accel_status_t accel_graph_rebind_buffer(accel_graph_t* graph,
                                                   accel_buffer_t* old_buffer,
                                                   accel_buffer_t* new_buffer,
                                                   size_t* out_count);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ACCEL_GRAPH_H_
