// SPDX-License-Identifier: MIT
//
// Internal interface of the OpenCL plugin. Nothing here is exported: the
// only public symbol of libaccel-opencl.so is accel_plugin_entry
// (plugin.c). The plugin links no OpenCL library: the ICD loader
// (libOpenCL.so.1) is opened at the first device_count, and CLBlast at the
// first GEMM.
//
// Objects and the files that own them:
//   accel_opencl_api_t     icd.c      the ICD loader's entry points
//   accel_opencl_plugin_t  plugin.c   state created by load(), freed by
//                                     unload(); platforms and devices found
//                                     at the first device_count (device.c)
//   accel_opencl_device_t  device.c   one cl_device_id, its context (one
//                                     context per platform, shared by that
//                                     platform's devices) and properties
//   accel_opencl_mem_t     memory.c   a cl_mem; copies, memset, pinned host
//                                     memory, peer copies
//   accel_opencl_stream_t  stream.c   an in-order, profiling command queue
//                                     and the asynchronous-error tracking
//   accel_opencl_event_t   event.c    a marker event per record
//   programs               program.c  building OpenCL C / SPIR-V, the
//                                     on-disk program binary cache
//   custom kernels         module.c   module_load, kernels, launches
//   built-in ops           ops.c      kernels/ops.cl, built once per device
//   GEMM                   gemm.c     CLBlast (clblast.c) or kernels/gemm.cl
//   native handles         interop.c  the OpenCL objects behind handles
//
// Locking: the plugin mutex guards the one-time ICD and CLBlast loading;
// each device mutex guards its lazily built built-in program; each kernel
// object (built-in or custom) has a mutex held from the first
// clSetKernelArg to the clEnqueueNDRangeKernel that uses the arguments,
// since OpenCL kernel argument state is not thread-safe; each stream mutex
// guards its pending-event list. Lock order: stream, then kernel, then
// device; never the other way.
#ifndef ACCEL_PLUGINS_OPENCL_ACCEL_OPENCL_H_
#define ACCEL_PLUGINS_OPENCL_ACCEL_OPENCL_H_

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>
#include <CL/cl_icd.h>
#include <accel/plugin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Version string of the plugin; the build passes the project version.
#ifndef ACCEL_OPENCL_VERSION
#define ACCEL_OPENCL_VERSION "0.2.0"
#endif

// Size of the buffers that carry a reason to report later.
#define ACCEL_OPENCL_MESSAGE_SIZE 512
// Module programs kept built after their modules unload (module.c).
#define ACCEL_OPENCL_KEPT 8

// ---------------------------------------------------------------------------
// The ICD loader (icd.c)
// ---------------------------------------------------------------------------

// Every OpenCL entry point the plugin calls, resolved with dlsym from the
// ICD loader. The types are the Khronos cl_api_* typedefs of <CL/cl_icd.h>.
// Entry points newer than OpenCL 1.2 are marked optional and may be NULL
// (a 1.2 loader); the plugin checks before calling them.
#define ACCEL_OPENCL_FUNCS(X)      \
  X(clGetPlatformIDs)              \
  X(clGetPlatformInfo)             \
  X(clGetDeviceIDs)                \
  X(clGetDeviceInfo)               \
  X(clCreateContext)               \
  X(clReleaseContext)              \
  X(clCreateCommandQueue)          \
  X(clReleaseCommandQueue)         \
  X(clFlush)                       \
  X(clFinish)                      \
  X(clCreateBuffer)                \
  X(clCreateSubBuffer)             \
  X(clRetainMemObject)             \
  X(clReleaseMemObject)            \
  X(clGetMemObjectInfo)            \
  X(clEnqueueReadBuffer)           \
  X(clEnqueueWriteBuffer)          \
  X(clEnqueueCopyBuffer)           \
  X(clEnqueueFillBuffer)           \
  X(clEnqueueMapBuffer)            \
  X(clEnqueueUnmapMemObject)       \
  X(clEnqueueMarkerWithWaitList)   \
  X(clEnqueueBarrierWithWaitList)  \
  X(clWaitForEvents)               \
  X(clGetEventInfo)                \
  X(clGetEventProfilingInfo)       \
  X(clCreateUserEvent)             \
  X(clSetUserEventStatus)          \
  X(clSetEventCallback)            \
  X(clRetainEvent)                 \
  X(clReleaseEvent)                \
  X(clCreateProgramWithSource)     \
  X(clCreateProgramWithBinary)     \
  X(clBuildProgram)                \
  X(clGetProgramInfo)              \
  X(clGetProgramBuildInfo)         \
  X(clRetainProgram)               \
  X(clReleaseProgram)              \
  X(clCreateKernel)                \
  X(clCreateKernelsInProgram)      \
  X(clGetKernelInfo)               \
  X(clGetKernelWorkGroupInfo)      \
  X(clSetKernelArg)                \
  X(clReleaseKernel)               \
  X(clEnqueueNDRangeKernel)

// OpenCL 2.0+ entry points (optional; NULL on an older loader).
#define ACCEL_OPENCL_FUNCS_OPTIONAL(X) \
  X(clCreateProgramWithIL)             \
  X(clCreateCommandQueueWithProperties)

typedef struct accel_opencl_api {
#define ACCEL_OPENCL_FIELD(name) cl_api_##name name;
  ACCEL_OPENCL_FUNCS(ACCEL_OPENCL_FIELD)
  ACCEL_OPENCL_FUNCS_OPTIONAL(ACCEL_OPENCL_FIELD)
#undef ACCEL_OPENCL_FIELD
} accel_opencl_api_t;

// Name of an OpenCL error code ("CL_OUT_OF_RESOURCES"), or "CL error N".
// Static storage for known codes; unknown ones use a thread-local buffer.
const char* accel_opencl_error_name(cl_int err);

// Maps an OpenCL error to an accel status (CL_MEM_OBJECT_ALLOCATION_FAILURE
// and CL_OUT_OF_RESOURCES on allocation: OUT_OF_DEVICE_MEMORY;
// CL_OUT_OF_HOST_MEMORY: OUT_OF_MEMORY; CL_INVALID_*: INVALID_ARGUMENT or
// INTERNAL; execution failures: DEVICE_LOST; others: BACKEND) and records
// "<what>: <error name>" through host->fail. Returns ACCEL_OK for
// CL_SUCCESS without touching the message.
accel_status_t accel_opencl_check(const accel_host_t* host, cl_int err,
                                  const char* what);

// ---------------------------------------------------------------------------
// Plugin and devices (plugin.c, device.c)
// ---------------------------------------------------------------------------

typedef struct accel_opencl_device accel_opencl_device_t;

typedef struct accel_opencl_plugin {
  const accel_host_t* host;
  pthread_mutex_t mutex;  // guards the one-time loading below
  // The ICD loader, opened at the first device_count.
  bool icd_tried;
  accel_status_t icd_status;  // UNAVAILABLE with the reason when missing
  char icd_error[ACCEL_OPENCL_MESSAGE_SIZE];
  void* icd;  // dlopen handle
  accel_opencl_api_t cl;
  // Every device of every platform, in platform order, then device order.
  uint32_t device_count;
  cl_platform_id* device_platforms;  // [device_count]
  cl_device_id* device_ids;          // [device_count]
  cl_context* platform_contexts;  // [context_count], created at first open
  uint32_t platform_count;
  // Which platform_contexts slot each device uses: its platform's, or its
  // own with ACCEL_OPENCL_CONTEXTS=device (tests: cross-context paths).
  uint32_t* device_contexts;  // [device_count]
  uint32_t context_count;     // slots in platform_contexts
  cl_platform_id* platforms;  // [platform_count]
  // Cross-context waits (event.c) and host functions (stream.c) whose
  // callback has not yet run; unload waits for them, since the callback
  // runs plugin code on a driver thread.
  atomic_uint relays;
  // The thread that runs a host function whose callback the runtime ran
  // inside clSetEventCallback (stream.c): started at the first, joined at
  // unload, so no thread of ours runs plugin code after unload returns.
  pthread_mutex_t host_mutex;
  pthread_cond_t host_cond;
  struct accel_opencl_host_call* host_queue;  // FIFO: head; next links
  struct accel_opencl_host_call* host_last;
  bool host_thread_started;
  bool host_stop;
  pthread_t host_thread;
  // CLBlast (clblast.c), opened at the first GEMM; NULL when missing.
  bool clblast_tried;
  void* clblast;  // opaque accel_opencl_clblast_t*, owned by clblast.c
  char clblast_error[ACCEL_OPENCL_MESSAGE_SIZE];
} accel_opencl_plugin_t;

// One opened device. Fields after `props` are filled at open.
struct accel_opencl_device {
  accel_opencl_plugin_t* plugin;
  const accel_opencl_api_t* cl;  // &plugin->cl
  const accel_host_t* host;      // plugin->host
  uint32_t index;
  cl_platform_id platform;
  cl_device_id id;
  cl_context context;          // shared with the platform's other devices
  cl_command_queue sync_queue;  // for the core's stream-less (NULL) calls
  pthread_mutex_t mutex;
  // Cached properties (device.c).
  accel_plugin_device_props_t props;
  uint32_t base_addr_align;  // bytes (CL_DEVICE_MEM_BASE_ADDR_ALIGN / 8)
  uint32_t opencl_c_major;   // highest OpenCL C version the device takes
  uint32_t opencl_c_minor;
  bool has_fp16;  // cl_khr_fp16
  bool has_fp64;  // cl_khr_fp64
  bool has_il;    // SPIR-V through clCreateProgramWithIL
  uint64_t timer_resolution_ns;  // CL_DEVICE_PROFILING_TIMER_RESOLUTION
  // OpenCL has no free-memory query: bytes of live mem_alloc buffers,
  // subtracted from the total by mem_info.
  _Atomic uint64_t allocated;
  // Pinned host blocks (host_alloc): the mapped buffer of each, kept to
  // unmap and release at host_free; guarded by `mutex`.
  struct accel_opencl_pinned* pinned;
  // Built-in ops (ops.c, program.c): the program built from kernels/ops.cl
  // and its kernels, created at the first op under `mutex`. NULL before.
  void* builtins;
  // Programs of module_load kept by image (module.c), under `mutex`.
  struct accel_opencl_kept {
    unsigned char* image;  // a copy of the module's bytes; NULL: empty
    size_t size;
    cl_program program;  // one reference held by this slot
    uint64_t used;       // kept_clock at the last load
  } kept[ACCEL_OPENCL_KEPT];
  uint64_t kept_clock;
};

// Releases the programs module_load keeps (module.c); at device close.
void accel_opencl_modules_release(accel_opencl_device_t* device);

// Opens the ICD loader (ACCEL_OPENCL_ICD or libOpenCL.so.1) and resolves
// ACCEL_OPENCL_FUNCS into plugin->cl. On failure returns
// ACCEL_ERROR_UNAVAILABLE and writes the reason into plugin->icd_error
// (nothing is left open). Called once, under plugin->mutex (icd.c).
accel_status_t accel_opencl_icd_open(accel_opencl_plugin_t* plugin);

// Closes what accel_opencl_icd_open opened. Safe when it failed (icd.c).
void accel_opencl_icd_close(accel_opencl_plugin_t* plugin);

// Releases the contexts and device lists found by device_count (device.c).
void accel_opencl_devices_release(accel_opencl_plugin_t* plugin);

// Plugin and device entries of accel_plugin_t / accel_device_ops_t
// (device.c); contracts in <accel/plugin.h>.
accel_status_t accel_opencl_device_count(void* plugin, uint32_t* out_count);
accel_status_t accel_opencl_device_open(void* plugin, uint32_t index,
                                        void** out_device);
void accel_opencl_device_close(void* device);
accel_status_t accel_opencl_device_query_props(
    void* device, accel_plugin_device_props_t* props);
accel_status_t accel_opencl_device_mem_info(void* device, uint64_t* out_free,
                                            uint64_t* out_total);
accel_status_t accel_opencl_device_can_access_peer(void* device,
                                                   void* peer_device,
                                                   bool* out_can);

// ---------------------------------------------------------------------------
// Memory (memory.c)
// ---------------------------------------------------------------------------

// A pinned host block (host_alloc): the CL_MEM_ALLOC_HOST_PTR buffer
// behind it and its mapping, listed in device->pinned until host_free.
struct accel_opencl_pinned {
  struct accel_opencl_pinned* next;
  cl_mem mem;
  void* ptr;
};

// Sub-buffers a device allocation keeps for kernel arguments at an offset
// (accel_opencl_mem_view); past this many, a view is made per launch.
#define ACCEL_OPENCL_MEM_VIEWS 16

// A device allocation. Every `void* mem` the core passes is one of these.
// `views` holds one reference on each sub-buffer made for a kernel
// argument at `view_offsets[i]`, released by mem_free; `views_lock`
// guards them and is held while a sub-buffer is created.
typedef struct accel_opencl_mem {
  cl_mem mem;
  uint64_t size;
  pthread_mutex_t views_lock;
  uint32_t view_count;
  uint64_t view_offsets[ACCEL_OPENCL_MEM_VIEWS];
  cl_mem views[ACCEL_OPENCL_MEM_VIEWS];
} accel_opencl_mem_t;

// A cl_mem starting at `offset` of `mem` and reaching its end, for a
// kernel argument: `mem->mem` itself when offset is 0, otherwise the
// sub-buffer `mem` keeps for that offset (made at its first use; one per
// launch once ACCEL_OPENCL_MEM_VIEWS offsets are kept). Either way retained
// for the caller, who releases it with clReleaseMemObject once the launch
// is enqueued. `offset` must be a multiple of the device's base_addr_align,
// which the core guarantees for kernel arguments. Thread-safe.
accel_status_t accel_opencl_mem_view(accel_opencl_device_t* device,
                                     accel_opencl_mem_t* mem, uint64_t offset,
                                     cl_mem* out);

// Fills reaching past this offset use no pattern narrower than 4 bytes on
// the whole buffer (accel_opencl_fill).
#define ACCEL_OPENCL_FILL_NARROW_END \
  (((uint64_t)1 << 31) - ((uint64_t)1 << 20))

// Enqueues on `queue` a fill of `size` bytes at `offset` of `mem` with
// the `pattern_size`-byte `pattern` (1, 2 or 4; `offset` and `size` are
// multiples of it), as clEnqueueFillBuffer does, in one to three commands;
// when `out_event` is not NULL it receives the last one's event, which
// completes after the others (`queue` is in order).
//
// NVIDIA's OpenCL (driver 580.159.04 on an H200) writes a fill with a
// 1-byte pattern that starts at 4 GiB 4 GiB lower, and one that ends at
// 4 GiB loses the context; 4- and 16-byte patterns and copies at 4 GiB
// land right. So a fill that reaches past ACCEL_OPENCL_FILL_NARROW_END
// with a narrower pattern fills its 4-byte-aligned middle with the pattern
// repeated to 4 bytes and copies the fewer than 4 bytes before and after
// it from a small buffer holding the pattern, on every device. The bound
// sits below 2 GiB, where a driver with a signed 32-bit offset would go
// wrong, and within the 2 GiB that PoCL allocates at most, so CI runs this
// path. (A sub-buffer near the ends would do too, but on that driver
// freeing a buffer whose kept sub-buffers had such fills crashed.)
// Returns the status of the failing OpenCL call (through host->fail).
// Thread-safe.
accel_status_t accel_opencl_fill(accel_opencl_device_t* device,
                                 cl_command_queue queue,
                                 accel_opencl_mem_t* mem, uint64_t offset,
                                 const void* pattern, size_t pattern_size,
                                 uint64_t size, cl_event* out_event);

// Memory entries of accel_device_ops_t; contracts in <accel/plugin.h>.
accel_status_t accel_opencl_mem_alloc(void* device, size_t size,
                                      void** out_mem);
void accel_opencl_mem_free(void* device, void* mem);
accel_status_t accel_opencl_host_alloc(void* device, size_t size,
                                       void** out_ptr);
void accel_opencl_host_free(void* device, void* ptr);
accel_status_t accel_opencl_copy_h2d(void* device, void* stream, void* dst,
                                     size_t dst_offset, const void* src,
                                     size_t size);
accel_status_t accel_opencl_copy_d2h(void* device, void* stream, void* dst,
                                     const void* src, size_t src_offset,
                                     size_t size);
accel_status_t accel_opencl_copy_d2d(void* device, void* stream, void* dst,
                                     size_t dst_offset, const void* src,
                                     size_t src_offset, size_t size);
accel_status_t accel_opencl_copy_peer(void* device, void* stream, void* dst,
                                      size_t dst_offset, void* src_device,
                                      const void* src, size_t src_offset,
                                      size_t size);
accel_status_t accel_opencl_memset(void* device, void* stream, void* dst,
                                   size_t offset, uint8_t value, size_t size);

// ---------------------------------------------------------------------------
// Streams (stream.c)
// ---------------------------------------------------------------------------

typedef struct accel_opencl_stream {
  accel_opencl_device_t* device;
  cl_command_queue queue;  // in order, without profiling (see stream.c)
  // Commands enqueued without an event so far (copies, fills, launches):
  // counted after each enqueue, without the mutex. A tracked command
  // reads the count before its enqueue (accel_opencl_stream_mark), so its
  // event covers at least that many of them (the queue is in order).
  _Atomic uint64_t untracked;
  pthread_mutex_t mutex;  // guards the fields below
  // In order, CL_QUEUE_PROFILING_ENABLE: created at the first record of a
  // timing event, it holds only the 4-byte fills of `timing_scratch` that
  // timestamp such records (event.c says why fills and not markers).
  cl_command_queue timing_queue;
  cl_mem timing_scratch;
  // Events of enqueued commands not yet known to be complete (the markers
  // and barriers of event records, waits and queries), checked for a
  // negative execution status at synchronize and query; the first failure
  // becomes the stream's sticky error.
  cl_event* pending;
  size_t pending_count;
  size_t pending_capacity;
  // How many of `untracked` are known to be covered by a pending or
  // completed event (or by a clFinish): while fewer than `untracked`,
  // stream_query cannot judge completion from `pending` alone.
  uint64_t covered;
  accel_status_t error;  // sticky; ACCEL_OK while healthy
  char error_message[ACCEL_OPENCL_MESSAGE_SIZE];
} accel_opencl_stream_t;

// Records the outcome of enqueuing `what`, a command without an event, on
// `stream`: when `err` is not CL_SUCCESS, fails with its status and
// message; otherwise counts the command as untracked (a failure of it
// surfaces through clFinish or a later event; stream.c). Thread-safe and
// lock-free.
accel_status_t accel_opencl_stream_enqueued(accel_opencl_stream_t* stream,
                                            cl_int err, const char* what);

// The count of untracked commands, read before enqueuing a command that
// will carry an event, and passed with that event to
// accel_opencl_stream_tracked(). Thread-safe.
static inline uint64_t accel_opencl_stream_mark(accel_opencl_stream_t* stream) {
  return atomic_load_explicit(&stream->untracked, memory_order_acquire);
}

// As accel_opencl_stream_enqueued() for a command with an event: on
// success takes ownership of `event`, so that a failure of the command
// surfaces as the stream's sticky error at the next synchronize or query,
// and notes that it completes only after the untracked commands counted
// in `mark`. On failure `event` must be NULL. Thread-safe.
accel_status_t accel_opencl_stream_tracked(accel_opencl_stream_t* stream,
                                           cl_int err, cl_event event,
                                           uint64_t mark, const char* what);

// The stream's profiling queue for timestamps and the small buffer its
// timestamp fills write, both created at the first call. Thread-safe.
accel_status_t accel_opencl_stream_timing_queue(accel_opencl_stream_t* stream,
                                                cl_command_queue* out_queue,
                                                cl_mem* out_scratch);

// Stream entries of accel_device_ops_t; contracts in <accel/plugin.h>.
accel_status_t accel_opencl_stream_create(void* device,
                                          accel_stream_flags_t flags,
                                          void** out_stream);
void accel_opencl_stream_destroy(void* stream);
accel_status_t accel_opencl_stream_synchronize(void* stream);
accel_status_t accel_opencl_stream_query(void* stream, bool* out_done);
accel_status_t accel_opencl_stream_wait_event(void* stream, void* event);
// plugin ABI 1.4: stream priorities (cl_khr_priority_hints: 1 low, 0 the
// default, -1 high; one priority without the extension) and host
// functions (a marker whose completion callback calls the function and
// then completes a user event that a barrier behind it waits for).
accel_status_t accel_opencl_stream_priority_range(void* device,
                                                  int32_t* out_least,
                                                  int32_t* out_greatest);
accel_status_t accel_opencl_stream_create_priority(void* device,
                                                   accel_stream_flags_t flags,
                                                   int32_t priority,
                                                   void** out_stream);
accel_status_t accel_opencl_launch_host_func(void* stream,
                                             void (*fn)(void* user),
                                             void* user);
// The host-call thread's state in `plugin` (load): false when a mutex or
// condition cannot be made. accel_opencl_host_calls_close (unload, once
// no host function is pending) stops and joins the thread if it started.
bool accel_opencl_host_calls_init(accel_opencl_plugin_t* plugin);
void accel_opencl_host_calls_close(accel_opencl_plugin_t* plugin);

// Counts one more callback in plugin->relays before a clSetEventCallback
// whose function is plugin code (the callback subtracts it as its last
// step). The first such call in the process also marks this plugin's
// shared object RTLD_NODELETE: unload waits for relays to reach 0, but the
// driver thread still returns through a few instructions of plugin code
// after that, so the core's dlclose must not unmap it. Thread-safe.
void accel_opencl_callback_pending(accel_opencl_plugin_t* plugin);

// ---------------------------------------------------------------------------
// Events (event.c)
// ---------------------------------------------------------------------------

// Event entries of accel_device_ops_t; contracts in <accel/plugin.h>.
accel_status_t accel_opencl_event_create(void* device,
                                         accel_event_flags_t flags,
                                         void** out_event);
void accel_opencl_event_destroy(void* event);
accel_status_t accel_opencl_event_record(void* event, void* stream);
accel_status_t accel_opencl_event_synchronize(void* event);
accel_status_t accel_opencl_event_query(void* event, bool* out_done);
accel_status_t accel_opencl_event_elapsed_ms(void* start, void* end,
                                             float* out_ms);
// The marker of the event's latest record (not retained: valid until the
// next record or the event's destruction), NULL if never recorded.
cl_event accel_opencl_event_native(void* event);

// plugin ABI 1.4: native_handle (interop.c): cl_device_id, cl_context,
// the stream's cl_command_queue, the event's latest marker, the cl_mem.
accel_status_t accel_opencl_native_handle(void* device, uint32_t kind,
                                          void* object, uint64_t* out_handle);

// ---------------------------------------------------------------------------
// Built-in ops and GEMM (ops.c, gemm.c), custom kernels (module.c): the
// plugin ABI entries, with the signatures of accel_device_ops_t.
// ---------------------------------------------------------------------------

// Frees the device's built-in program and kernels (device_close).
void accel_opencl_builtins_release(accel_opencl_device_t* device);

// The entries below are the accel_device_ops_t entries of the same name
// without the "accel_opencl_" prefix; their contracts are in
// <accel/plugin.h>. `device` is an accel_opencl_device_t, `stream` an
// accel_opencl_stream_t and memory an accel_opencl_mem_t.
accel_plugin_op_fill_fn accel_opencl_op_fill;
accel_plugin_op_cast_fn accel_opencl_op_cast;
accel_plugin_op_scale_fn accel_opencl_op_scale;
accel_plugin_op_axpy_fn accel_opencl_op_axpy;
accel_plugin_op_binary_fn accel_opencl_op_add;
accel_plugin_op_binary_fn accel_opencl_op_mul;
accel_plugin_op_sum_fn accel_opencl_op_sum;
accel_plugin_op_gemm_fn accel_opencl_op_gemm;
// ABI 1.4: activations and bias-add (ops.c), strided-batched GEMM (gemm.c).
accel_plugin_op_unary_fn accel_opencl_op_unary;
accel_plugin_op_bias_add_fn accel_opencl_op_bias_add;
accel_plugin_op_gemm_batched_fn accel_opencl_op_gemm_batched;

// Custom kernels (module.c): `module` comes from accel_opencl_module_load,
// `function` from accel_opencl_module_function.
accel_status_t accel_opencl_module_load(void* device, const void* image,
                                        size_t size, void** out_module);
void accel_opencl_module_unload(void* module);
accel_status_t accel_opencl_module_function(void* module, const char* name,
                                            void** out_function);
accel_status_t accel_opencl_launch(void* function, void* stream,
                                   const accel_plugin_launch_t* launch);

#endif  // ACCEL_PLUGINS_OPENCL_ACCEL_OPENCL_H_
