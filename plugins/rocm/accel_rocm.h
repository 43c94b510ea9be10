// SPDX-License-Identifier: MIT
//
// Internal interface of the ROCm plugin. Nothing here is exported: the
// only public symbol of libaccel-rocm.so is accel_plugin_entry (plugin.c).
//
// Objects and the files that own them:
//   accel_rocm_plugin_t   plugin.c   state created by load(), runtime
//   (HIP symbol table)    runtime.c  dlopen of libamdhip64, error mapping
//   accel_rocm_device_t   device.c   one per opened device, properties
//   device memory         memory.c   allocation, copies, memset, peers
//   accel_rocm_stream_t   stream.c   a non-blocking hipStream_t
//   accel_rocm_event_t    event.c    a hipEvent_t
//   custom kernels        module.c   hipModuleLoadData and launches
//   built-in kernels      builtin.c  embedded code objects or hiprtc JIT
//   built-in ops          ops.c      op_fill ... op_sum launches
//   GEMM                  gemm.c     op_gemm: rocBLAS or the tiled kernel
//   rocBLAS loader        blas.c     dlopen()s rocBLAS at the first GEMM
//   interop               interop.c  addresses, wrapped memory, native
//                                    handles, host registration
//
// HIP keeps a "current device" per thread, and the application shares it:
// every entry that creates or uses device state makes its device current
// (accel_rocm_device_enter) and gives the caller's back before returning
// (accel_rocm_device_leave), so the core may call any entry from any
// thread and the application's next HIP call still targets its own device.
//
// From HIP 7.0 the last error is sticky until hipGetLastError reads it.
// A failure the plugin expects and handles (peer access already enabled,
// hipMalloc out of memory before the cache retry, a code object that does
// not load before the hiprtc fallback) is cleared with
// accel_rocm_clear_error so the application's own error checks do not trip
// on it.
#ifndef ACCEL_PLUGINS_ROCM_ACCEL_ROCM_H_
#define ACCEL_PLUGINS_ROCM_ACCEL_ROCM_H_

#include <accel/plugin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime.h"

// Version string of the plugin; the build passes the project version.
#ifndef ACCEL_ROCM_VERSION
#define ACCEL_ROCM_VERSION "0.2.0"
#endif

typedef struct accel_rocm_device accel_rocm_device_t;
typedef void* accel_rocm_blas_handle_t;  // rocblas_handle
// A rocBLAS handle bound to one stream, created at its first GEMM. `lock`
// serialises set_stream + set_workspace + gemm_ex on it (handles are not
// thread-safe, and the workspace the core lends changes per GEMM). `lent`:
// the handle may still point at memory the core lent an earlier GEMM
// (gemm.c), so a GEMM without a lent workspace must first hand it back to
// rocBLAS-managed memory. Both guarded by `lock`.
typedef struct accel_rocm_blas_slot {
  pthread_mutex_t lock;
  accel_rocm_blas_handle_t handle;
  bool lent;
} accel_rocm_blas_slot_t;

// ---------------------------------------------------------------------------
// Plugin state (plugin.c)
// ---------------------------------------------------------------------------

// rocBLAS, as blas.c opened it (enum values of rocblas-types.h).
enum {
  ACCEL_ROCM_BLAS_OP_N = 111,         // rocblas_operation_none
  ACCEL_ROCM_BLAS_OP_T = 112,         // rocblas_operation_transpose
  ACCEL_ROCM_BLAS_F16 = 150,          // rocblas_datatype_f16_r
  ACCEL_ROCM_BLAS_F32 = 151,          // rocblas_datatype_f32_r
  ACCEL_ROCM_BLAS_BF16 = 168,         // rocblas_datatype_bf16_r
  ACCEL_ROCM_BLAS_ALGO_STANDARD = 0,  // rocblas_gemm_algo_standard
};
typedef struct accel_rocm_blas {
  void* lib;
  int (*create_handle)(accel_rocm_blas_handle_t* handle);
  int (*destroy_handle)(accel_rocm_blas_handle_t handle);
  int (*set_stream)(accel_rocm_blas_handle_t handle, hipStream_t stream);
  // rocblas_set_workspace (public since ROCm 5); NULL when this rocBLAS
  // lacks it, and GEMM then asks the core for no workspace (gemm.c).
  int (*set_workspace)(accel_rocm_blas_handle_t handle, void* addr,
                       size_t size);
  int (*gemm_ex)(accel_rocm_blas_handle_t handle, int trans_a, int trans_b,
                 int m, int n, int k, const void* alpha, const void* a,
                 int a_type, int lda, const void* b, int b_type, int ldb,
                 const void* beta, const void* c, int c_type, int ldc, void* d,
                 int d_type, int ldd, int compute_type, int algo,
                 int32_t solution_index, uint32_t flags);
  // rocblas_gemm_strided_batched_ex (ROCm 2+; strides in elements, as
  // rocblas_stride); NULL when absent: batches then run on the kernel.
  int (*gemm_strided_batched_ex)(
      accel_rocm_blas_handle_t handle, int trans_a, int trans_b, int m, int n,
      int k, const void* alpha, const void* a, int a_type, int lda,
      int64_t stride_a, const void* b, int b_type, int ldb, int64_t stride_b,
      const void* beta, const void* c, int c_type, int ldc, int64_t stride_c,
      void* d, int d_type, int ldd, int64_t stride_d, int batch_count,
      int compute_type, int algo, int32_t solution_index, uint32_t flags);
  char description[96];
} accel_rocm_blas_t;

// State allocated by load(). The runtime is opened once, by the first
// device_count (or device_open), under `mutex`; the outcome, success or
// the reason for failure, is kept and returned to every later call.
typedef struct accel_rocm_plugin {
  const accel_host_t* host;
  pthread_mutex_t mutex;
  bool opened;            // accel_rocm_runtime_open ran
  accel_status_t status;  // its result
  char why[ACCEL_ROCM_MESSAGE_SIZE];
  accel_rocm_runtime_t rt;   // valid when opened and status == ACCEL_OK
  bool blas_tried, blas_ok;  // guarded by `mutex`; see blas.c
  accel_rocm_blas_t blas;    // immutable once blas_ok
} accel_rocm_plugin_t;

// Returns rocBLAS, opening it at the first call (blas.c), or NULL when it
// is not installed or ACCEL_ROCM_BLAS=none; logs the choice once at info
// level. Thread-safe.
const accel_rocm_blas_t* accel_rocm_blas_get(accel_rocm_plugin_t* plugin);

// Unloads rocBLAS (plugin unload, after every device closed).
void accel_rocm_blas_close(accel_rocm_plugin_t* plugin);
// Initialises an empty slot; ACCEL_ERROR_INTERNAL if its mutex cannot be.
accel_status_t accel_rocm_blas_slot_init(accel_rocm_blas_slot_t* slot);
// Releases the slot's handle, if any, and destroys its mutex: into the
// device's pool when `pool` is set and there is room (a stream going
// away), else with rocblas_destroy_handle. `device` is current and the
// slot's stream idle.
void accel_rocm_blas_slot_deinit(accel_rocm_device_t* device,
                                 accel_rocm_blas_slot_t* slot, bool pool);
// Destroys the device's pooled handles (device close; `device` current).
void accel_rocm_blas_pool_drain(accel_rocm_device_t* device);

// Opens the runtime on first use; returns its status (with the reason
// through host->fail when it failed). Thread-safe.
accel_status_t accel_rocm_plugin_runtime(accel_rocm_plugin_t* plugin,
                                         const accel_rocm_runtime_t** out_rt);

// plugin ABI: device_count.
accel_status_t accel_rocm_device_count(void* plugin, uint32_t* out_count);

// ---------------------------------------------------------------------------
// Built-in kernels (builtin.c)
// ---------------------------------------------------------------------------

// The built-in kernels of one device, loaded at its first op.
typedef struct accel_rocm_builtin {
  hipModule_t module;
  hipFunction_t fill, cast, ewise, sum_partial, sum_final, gemm, rng;
  hipFunction_t unary, bias_add, gemm_batched;  // ABI 1.4
} accel_rocm_builtin_t;

// Returns the device's built-in kernels, loading them at the first call:
// the embedded code object when the device's arch is one of the embedded
// targets, else the embedded source compiled with hiprtc (cached on disk).
// ACCEL_ERROR_UNSUPPORTED naming the embedded arches when neither works;
// the outcome is kept. Thread-safe.
accel_status_t accel_rocm_builtin_get(accel_rocm_device_t* device,
                                      const accel_rocm_builtin_t** out);

// Unloads the kernels of `builtin` (device close).
void accel_rocm_builtin_release(accel_rocm_device_t* device);

// ---------------------------------------------------------------------------
// Devices (device.c)
// ---------------------------------------------------------------------------

// One opened device. Strings are read at open and immutable afterwards.
struct accel_rocm_device {
  accel_rocm_plugin_t* plugin;
  const accel_host_t* host;
  const accel_rocm_runtime_t* rt;
  uint32_t index;
  char prefix[32];     // "rocm:0", for messages
  char name[256];      // hipDeviceGetName
  char arch[64];       // gcnArchName without features: "gfx90a"
  char arch_full[64];  // with features: "gfx90a:sramecc+:xnack-"
  char pci_bus_id[32];
  uint64_t total_memory;
  uint32_t compute_units, max_threads_per_block, warp_size;
  // hipDeviceProp_t (R0000) sharedMemPerBlock and maxGridSize; 0 when the
  // runtime does not say.
  uint64_t max_shared;
  uint32_t max_grid[3];
  bool peer_any;          // hipDeviceCanAccessPeer allows another device
  bool peer_tried[64];    // guarded by `mutex`: enabling was attempted
  pthread_mutex_t mutex;  // guards `builtin` loading and peer_tried
  // rocBLAS handle for GEMMs without a stream ("now"); each stream has
  // its own (accel_rocm_stream_t), so no two streams share a handle's
  // rocBLAS-managed scratch.
  accel_rocm_blas_slot_t blas;
  _Atomic bool blas_failed;  // creating a handle failed: the kernel runs
  // Handles of destroyed streams, kept for the next stream's first GEMM
  // (guarded by `mutex`): rocblas_destroy_handle frees rocBLAS's device
  // memory with hipFree, which synchronises the device, so it runs only at
  // device close.
  accel_rocm_blas_handle_t blas_pool[8];
  uint32_t blas_pooled;
  bool builtin_tried;
  accel_status_t builtin_status;
  char builtin_why[ACCEL_ROCM_MESSAGE_SIZE];
  accel_rocm_builtin_t builtin;
};

// Makes `device` current on the calling thread and stores in `*out_saved`
// what accel_rocm_device_leave needs to give the caller's current device
// back; host->fail on error (then nothing is to be left).
accel_status_t accel_rocm_device_enter(accel_rocm_device_t* device,
                                       int* out_saved);
// Makes the device current before accel_rocm_device_enter current again.
void accel_rocm_device_leave(const accel_rocm_device_t* device, int saved);
// Reads and drops the calling thread's last HIP error after a failure the
// plugin handled, so it does not surface in the application's next
// hipGetLastError/hipPeekAtLastError.
void accel_rocm_clear_error(const accel_rocm_runtime_t* rt);

// Records a HIP failure of `what` on `device` and returns its status.
accel_status_t accel_rocm_device_fail(const accel_rocm_device_t* device,
                                      hipError_t error, const char* what);

accel_status_t accel_rocm_device_open(void* plugin, uint32_t index,
                                      void** out_device);
void accel_rocm_device_close(void* device);
accel_status_t accel_rocm_device_query_props(
    void* device, accel_plugin_device_props_t* props);
accel_status_t accel_rocm_device_mem_info(void* device, uint64_t* out_free,
                                          uint64_t* out_total);
accel_status_t accel_rocm_device_can_access_peer(void* device,
                                                 void* peer_device,
                                                 bool* out_can);

// ---------------------------------------------------------------------------
// Memory (memory.c). The memory handle is the device pointer.
// ---------------------------------------------------------------------------

accel_status_t accel_rocm_mem_alloc(void* device, size_t size, void** out_mem);
void accel_rocm_mem_free(void* device, void* mem);
accel_status_t accel_rocm_host_alloc(void* device, size_t size, void** out_ptr);
void accel_rocm_host_free(void* device, void* ptr);
accel_status_t accel_rocm_copy_h2d(void* device, void* stream, void* dst,
                                   size_t dst_offset, const void* src,
                                   size_t size);
accel_status_t accel_rocm_copy_d2h(void* device, void* stream, void* dst,
                                   const void* src, size_t src_offset,
                                   size_t size);
accel_status_t accel_rocm_copy_d2d(void* device, void* stream, void* dst,
                                   size_t dst_offset, const void* src,
                                   size_t src_offset, size_t size);
accel_status_t accel_rocm_copy_peer(void* device, void* stream, void* dst,
                                    size_t dst_offset, void* src_device,
                                    const void* src, size_t src_offset,
                                    size_t size);
accel_status_t accel_rocm_memset(void* device, void* stream, void* dst,
                                 size_t offset, uint8_t value, size_t size);

// ---------------------------------------------------------------------------
// Interop (interop.c): device addresses and wrapped memory (ABI 1.3),
// native handles and host registration (ABI 1.4). A wrapped handle is the
// device pointer, checked with hipPointerGetAttributes first.
// ---------------------------------------------------------------------------

accel_status_t accel_rocm_mem_address(void* device, void* mem, uint64_t offset,
                                      uint64_t* out_address);
accel_status_t accel_rocm_mem_wrap(void* device, uint64_t address, size_t size,
                                   void** out_mem);
void accel_rocm_mem_unwrap(void* device, void* mem);
accel_status_t accel_rocm_native_handle(void* device, uint32_t kind,
                                        void* object, uint64_t* out_handle);
accel_status_t accel_rocm_host_register(void* device, void* ptr, size_t size);
void accel_rocm_host_unregister(void* device, void* ptr);

// ---------------------------------------------------------------------------
// Streams (stream.c) and events (event.c)
// ---------------------------------------------------------------------------

// A stream: a non-blocking hipStream_t plus the scratch the sum uses
// (stream-ordered, so no two sums on one stream share it at once).
typedef struct accel_rocm_stream {
  accel_rocm_device_t* device;
  hipStream_t stream;
  void* scratch;                // ACCEL_ROCM_SUM_SCRATCH bytes of device memory
  accel_rocm_blas_slot_t blas;  // this stream's rocBLAS handle (gemm.c)
} accel_rocm_stream_t;

// The hipStream_t of `stream`, or the null stream for NULL.
hipStream_t accel_rocm_stream_handle(void* stream);

accel_status_t accel_rocm_stream_create(void* device,
                                        accel_stream_flags_t flags,
                                        void** out_stream);
void accel_rocm_stream_destroy(void* stream);
accel_status_t accel_rocm_stream_synchronize(void* stream);
accel_status_t accel_rocm_stream_query(void* stream, bool* out_done);
accel_status_t accel_rocm_stream_wait_event(void* stream, void* event);
// plugin ABI 1.4: stream priorities (hipDeviceGetStreamPriorityRange,
// hipStreamCreateWithPriority) and host functions (hipLaunchHostFunc).
accel_status_t accel_rocm_stream_priority_range(void* device,
                                                int32_t* out_least,
                                                int32_t* out_greatest);
accel_status_t accel_rocm_stream_create_priority(void* device,
                                                 accel_stream_flags_t flags,
                                                 int32_t priority,
                                                 void** out_stream);
accel_status_t accel_rocm_launch_host_func(void* stream, void (*fn)(void* user),
                                           void* user);
// plugin ABI 1.4: native graphs (graph.c): hipStreamBeginCapture in relaxed
// mode, hipStreamEndCapture and hipGraphInstantiate, hipGraphLaunch. A
// runtime without the graph entry points makes begin UNSUPPORTED (the core
// then replays). Never run on AMD hardware: only on tests/rocm/fakehip.
accel_status_t accel_rocm_stream_begin_capture(void* stream);
accel_status_t accel_rocm_stream_end_capture(void* stream, void** out_graph);
accel_status_t accel_rocm_graph_launch(void* graph, void* stream);
void accel_rocm_graph_destroy(void* graph);

// An event. `recorded` (atomic) is false until the first record: HIP
// leaves waiting on a never-recorded event to the implementation, the
// plugin ABI says it is complete.
typedef struct accel_rocm_event {
  accel_rocm_device_t* device;
  hipEvent_t event;
  accel_event_flags_t flags;
  _Atomic bool recorded;
} accel_rocm_event_t;

accel_status_t accel_rocm_event_create(void* device, accel_event_flags_t flags,
                                       void** out_event);
void accel_rocm_event_destroy(void* event);
accel_status_t accel_rocm_event_record(void* event, void* stream);
accel_status_t accel_rocm_event_synchronize(void* event);
accel_status_t accel_rocm_event_query(void* event, bool* out_done);
accel_status_t accel_rocm_event_elapsed_ms(void* start, void* end,
                                           float* out_ms);

// ---------------------------------------------------------------------------
// Custom kernels (module.c)
// ---------------------------------------------------------------------------

accel_status_t accel_rocm_module_load(void* device, const void* image,
                                      size_t size, void** out_module);
void accel_rocm_module_unload(void* module);
accel_status_t accel_rocm_module_function(void* module, const char* name,
                                          void** out_function);
accel_status_t accel_rocm_launch(void* function, void* stream,
                                 const accel_plugin_launch_t* launch);

// ---------------------------------------------------------------------------
// Built-in ops (ops.c, gemm.c)
// ---------------------------------------------------------------------------

accel_plugin_op_rng_fn accel_rocm_op_rng;
accel_plugin_op_fill_fn accel_rocm_op_fill;
accel_plugin_op_cast_fn accel_rocm_op_cast;
accel_plugin_op_scale_fn accel_rocm_op_scale;
accel_plugin_op_axpy_fn accel_rocm_op_axpy;
accel_plugin_op_binary_fn accel_rocm_op_add;
accel_plugin_op_binary_fn accel_rocm_op_mul;
accel_plugin_op_sum_fn accel_rocm_op_sum;
accel_plugin_op_gemm_fn accel_rocm_op_gemm;
// plugin ABI 1.2: the rocBLAS workspace the core lends each GEMM (gemm.c).
accel_plugin_op_gemm_workspace_fn accel_rocm_op_gemm_workspace;
// plugin ABI 1.4: activations and bias-add (ops.c), strided-batched GEMM
// (gemm.c: rocblas_gemm_strided_batched_ex or the batched tiled kernel).
accel_plugin_op_unary_fn accel_rocm_op_unary;
accel_plugin_op_bias_add_fn accel_rocm_op_bias_add;
accel_plugin_op_gemm_batched_fn accel_rocm_op_gemm_batched;

// Launches built-in `function` with one by-value struct parameter (ops.c).
accel_status_t accel_rocm_launch_builtin(accel_rocm_device_t* device,
                                         hipFunction_t function,
                                         const char* what, void* stream,
                                         const uint32_t grid[3],
                                         const uint32_t block[3], void* args);

#endif  // ACCEL_PLUGINS_ROCM_ACCEL_ROCM_H_
