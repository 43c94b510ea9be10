// SPDX-License-Identifier: MIT
//
// Internal interface of the template plugin: a complete, deliberately
// simple backend whose "device memory" is host memory. Copy this directory,
// run rename.sh, and replace the bodies with calls into your runtime; the
// structure (one object per file, every entry of <accel/plugin.h>) stays.
//
// Objects and the files that own them:
//   template_plugin_t  plugin.c  state created by load(), freed by unload()
//   template_device_t  plugin.c  one per opened device; props, mem_info
//   device memory      memory.c  allocation, wrapping, copies, memset
//   template_stream_t  stream.c  in-order queue drained by one worker
//                                thread; host functions in stream order
//   template_event_t   event.c   markers recorded into streams, timing
//   built-in ops       ops.c     fill, cast, scale, axpy, add, mul, sum,
//                                gemm, activations, bias-add, random fills
//   modules, kernels   module.c  host shared objects, CPU kernel ABI
//
// Nothing here is exported: the only public symbol of the plugin is
// accel_plugin_entry (plugin.c). Locking: each stream and each event has
// one mutex; a worker completing a record holds only the event's mutex.
#ifndef ACCEL_SDK_TEMPLATE_TEMPLATE_H_
#define ACCEL_SDK_TEMPLATE_TEMPLATE_H_

#include <accel/plugin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// The plugin's name: devices are "template:0". rename.sh rewrites it.
#define TEMPLATE_NAME "template"

// Version string of the plugin; a build may pass its own.
#ifndef TEMPLATE_VERSION
#define TEMPLATE_VERSION "0.1.0"
#endif

// Memory each device pretends to have, in bytes. Allocations beyond it
// fail with ACCEL_ERROR_OUT_OF_DEVICE_MEMORY, as on a real device.
#define TEMPLATE_DEVICE_MEMORY (1ull << 30)

// Alignment of every allocation (a cache line).
#define TEMPLATE_ALIGNMENT 64u

// Size of the buffers that carry an asynchronous error message.
#define TEMPLATE_MESSAGE_SIZE 256

typedef struct template_stream template_stream_t;
typedef struct template_event template_event_t;
typedef struct template_task template_task_t;

// State allocated by load().
typedef struct template_plugin {
  const accel_host_t* host;
} template_plugin_t;

// One opened device. `allocated` counts the bytes handed out by mem_alloc.
typedef struct template_device {
  const accel_host_t* host;
  uint32_t index;
  _Atomic uint64_t allocated;
} template_device_t;

// ---------------------------------------------------------------------------
// Tasks and streams (stream.c)
// ---------------------------------------------------------------------------

// Runs one task on a stream worker (or inline for a NULL stream). Returns
// ACCEL_OK or a failure whose message it wrote into `message`; the stream
// keeps the first failure and reports it at the next synchronisation.
typedef accel_status_t (*template_task_fn_t)(template_task_t* task,
                                             char* message, size_t size);

// One unit of work: a function and its arguments, owned by the stream from
// submission until it has run.
struct template_task {
  template_task_t* next;  // FIFO link, owned by the stream
  template_task_fn_t run;
  // Arguments; each task function documents which it uses.
  void* dst;
  const void* src;
  const void* src2;
  size_t size;
  uint64_t count;
  uint32_t dtype, dtype2;
  double value;
  template_event_t* event;  // RECORD and WAIT tasks hold a reference
  uint64_t gen;
  accel_plugin_gemm_t gemm;
  struct {
    uint64_t seed, offset;      // Philox key and first counter block
    uint32_t distribution;      // ACCEL_PHILOX_BITS, _UNIFORM or _NORMAL
    float a, b;                 // the bounds, or the mean and std deviation
  } rng;                        // op_rng
  void (*host_fn)(void* user);  // launch_host_func; `dst` is its `user`
  void* owned;  // heap block freed with the task (a launch's arguments)
};

// Allocates a zeroed task running `run`; NULL when out of host memory.
template_task_t* template_task_create(template_task_fn_t run);
// Frees a task and the block it owns.
void template_task_free(template_task_t* task);

// Runs `task` now (stream NULL) or appends it to `stream`, and takes
// ownership of it. Returns the task's own status when run now, ACCEL_OK
// when queued. `host` reports the failure of an inline task.
accel_status_t template_submit(const accel_host_t* host, void* stream,
                               template_task_t* task);

accel_status_t template_stream_create(void* device, accel_stream_flags_t flags,
                                      void** out_stream);
void template_stream_destroy(void* stream);
accel_status_t template_stream_synchronize(void* stream);
accel_status_t template_stream_query(void* stream, bool* out_done);
accel_status_t template_stream_wait_event(void* stream, void* event);
// ABI 1.4: `fn(user)` as a task of `stream` (stream.c).
accel_status_t template_launch_host_func(void* stream, void (*fn)(void* user),
                                         void* user);

// ---------------------------------------------------------------------------
// Events (event.c)
// ---------------------------------------------------------------------------

void template_event_retain(template_event_t* event);
void template_event_release(template_event_t* event);

// Task functions for event_record and stream_wait_event.
accel_status_t template_event_complete_task(template_task_t* task,
                                            char* message, size_t size);
accel_status_t template_event_wait_task(template_task_t* task, char* message,
                                        size_t size);

// The generation a stream_wait_event issued now must wait for, or 0 when
// there is nothing to wait for (never recorded, or already complete).
uint64_t template_event_pending_gen(template_event_t* event);

accel_status_t template_event_create(void* device, accel_event_flags_t flags,
                                     void** out_event);
void template_event_destroy(void* event);
accel_status_t template_event_record(void* event, void* stream);
accel_status_t template_event_synchronize(void* event);
accel_status_t template_event_query(void* event, bool* out_done);
accel_status_t template_event_elapsed_ms(void* start, void* end, float* out_ms);

// ---------------------------------------------------------------------------
// Memory (memory.c). The memory handle is the data's host address, for
// memory from mem_alloc (a header precedes it) and from mem_wrap (the
// owner's memory, no header) alike, so every copy, op and launch finds
// the data at handle + offset whichever it is.
// ---------------------------------------------------------------------------

accel_status_t template_mem_alloc(void* device, size_t size, void** out_mem);
void template_mem_free(void* device, void* mem);
// ABI 1.3: the address of a handle, and wrapping memory the plugin did not
// allocate.
accel_status_t template_mem_address(void* device, void* mem, uint64_t offset,
                                    uint64_t* out_address);
accel_status_t template_mem_wrap(void* device, uint64_t address, size_t size,
                                 void** out_mem);
void template_mem_unwrap(void* device, void* mem);
accel_status_t template_copy_h2d(void* device, void* stream, void* dst,
                                 size_t dst_offset, const void* src,
                                 size_t size);
accel_status_t template_copy_d2h(void* device, void* stream, void* dst,
                                 const void* src, size_t src_offset,
                                 size_t size);
accel_status_t template_copy_d2d(void* device, void* stream, void* dst,
                                 size_t dst_offset, const void* src,
                                 size_t src_offset, size_t size);
accel_status_t template_memset(void* device, void* stream, void* dst,
                               size_t offset, uint8_t value, size_t size);

// ---------------------------------------------------------------------------
// Built-in ops (ops.c)
// ---------------------------------------------------------------------------

// Declared with the SDK's op function types (<accel/plugin.h>), so the
// prototypes cannot drift from the table's.
accel_plugin_op_fill_fn template_op_fill;
accel_plugin_op_cast_fn template_op_cast;
accel_plugin_op_scale_fn template_op_scale;
accel_plugin_op_axpy_fn template_op_axpy;
accel_plugin_op_binary_fn template_op_add;
accel_plugin_op_binary_fn template_op_mul;
accel_plugin_op_sum_fn template_op_sum;
accel_plugin_op_gemm_fn template_op_gemm;
// ABI 1.3: counter-based random fills, <accel/philox.h>.
accel_plugin_op_rng_fn template_op_rng;
// ABI 1.4 (op_gemm_batched is left NULL: the core loops over op_gemm).
accel_plugin_op_unary_fn template_op_unary;
accel_plugin_op_bias_add_fn template_op_bias_add;

// ---------------------------------------------------------------------------
// Custom kernels (module.c): host shared objects with CPU-ABI kernels.
// ---------------------------------------------------------------------------

accel_status_t template_module_load(void* device, const void* image,
                                    size_t size, void** out_module);
void template_module_unload(void* module);
accel_status_t template_module_function(void* module, const char* name,
                                        void** out_function);
accel_status_t template_launch(void* function, void* stream,
                               const accel_plugin_launch_t* launch);

#endif  // ACCEL_SDK_TEMPLATE_TEMPLATE_H_
