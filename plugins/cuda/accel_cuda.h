// SPDX-License-Identifier: MIT
//
// Internal interface of the CUDA plugin. Nothing here is exported: the only
// public symbol of libaccel-cuda.so is accel_plugin_entry (plugin.c).
//
// Objects and the files that own them:
//   accel_cuda_driver_t  driver.c  libcuda, resolved at the first
//                                  device_count (never at dlopen time)
//   accel_cuda_plugin_t  plugin.c  state created by load(), freed by unload()
//   accel_cuda_device_t  device.c  a primary context and cached properties
//   device memory        memory.c  allocation, pinned memory, copies, memset,
//                                  peer access and peer copies
//   accel_cuda_stream_t  stream.c  a non-blocking CUstream (+ cuBLAS handle)
//   accel_cuda_event_t   event.c   a CUevent
//   custom kernels       module.c  cuModuleLoadDataEx, launches
//   built-in ops         ops.c     the embedded fatbin (kernels/ops.cu)
//   GEMM                 gemm.c    cuBLAS, opened at the first GEMM
//   interop              interop.c addresses, wrapped memory, native
//                                  handles, host registration
//   graphs               graph.c   stream capture and CUDA graphs
//
// Every driver call that needs a context runs between
// accel_cuda_context_push and _pop, so the plugin never changes which
// context is current on the caller's thread.
//
// Locking: the plugin mutex guards the driver and cuBLAS loading; each
// device mutex guards its lazily loaded ops module and peer-access cache;
// each stream mutex guards its lazily created cuBLAS handle and sum
// scratch, and is held across a GEMM's cublasSetWorkspace and cublasGemmEx
// (the workspace changes per GEMM). Never more than one of them is held at
// a time, except stream then device (gemm.c, ops.c), never the other way.
#ifndef ACCEL_PLUGINS_CUDA_ACCEL_CUDA_H_
#define ACCEL_PLUGINS_CUDA_ACCEL_CUDA_H_

#include <accel/plugin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "driver.h"

// Version string of the plugin; the build passes the project version.
#ifndef ACCEL_CUDA_VERSION
#define ACCEL_CUDA_VERSION "0.2.0"
#endif

// Devices beyond this are not exposed (the peer-access cache is a fixed
// array per device).
#define ACCEL_CUDA_MAX_DEVICES 64u

// Size of the buffers that carry a reason to report later.
#define ACCEL_CUDA_MESSAGE_SIZE 512

typedef struct accel_cuda_device accel_cuda_device_t;
typedef struct accel_cuda_blas accel_cuda_blas_t;

// ---------------------------------------------------------------------------
// Plugin state (plugin.c, device.c)
// ---------------------------------------------------------------------------

// State allocated by load(). `mutex` guards the one-time driver and cuBLAS
// loading; once `driver_ready` / `blas` are published they are read
// lock-free.
typedef struct accel_cuda_plugin {
  const accel_host_t* host;
  pthread_mutex_t mutex;
  bool driver_tried;                           // guarded by `mutex`
  accel_status_t driver_status;                // outcome of the attempt
  char driver_error[ACCEL_CUDA_MESSAGE_SIZE];  // its reason
  uint32_t device_count;                       // valid when driver_status is OK
  accel_cuda_driver_t driver;                  // valid when driver_status is OK
  _Atomic(accel_cuda_blas_t*) blas;  // gemm.c, NULL until the first GEMM
  bool blas_tried;                   // guarded by `mutex`
  char blas_error[ACCEL_CUDA_MESSAGE_SIZE];  // why cuBLAS is unavailable
} accel_cuda_plugin_t;

// plugin ABI: device_count. Opens the driver at the first call (driver.c)
// and returns the same answer afterwards: ACCEL_ERROR_UNAVAILABLE with the
// reason, or ACCEL_OK with the number of devices (0 when the driver sees
// none). Thread-safe.
accel_status_t accel_cuda_device_count(void* plugin, uint32_t* out_count);

// ---------------------------------------------------------------------------
// Devices (device.c)
// ---------------------------------------------------------------------------

// Idle cuBLAS handles a device keeps (more are destroyed).
#define ACCEL_CUDA_BLAS_POOL 16

// Kernels of the embedded ops module (ops.c), indexed by
// accel_cuda_kernel_t.
#define ACCEL_CUDA_KERNEL_COUNT 53

// One opened device: its primary context, retained at open and released
// at close, and properties read once at open.
struct accel_cuda_device {
  accel_cuda_plugin_t* plugin;
  const accel_host_t* host;
  const accel_cuda_driver_t* cu;
  uint32_t index;
  CUdevice dev;
  CUcontext ctx;
  char prefix[16];  // "cuda:N", for messages
  int sm_major, sm_minor;
  char name[256];
  char arch[16];  // "sm_90"
  uint64_t total_memory;
  uint32_t sms, warp_size, max_threads_per_block;
  // Shared memory per block: without opt-in (48 KiB) and the most a kernel
  // may opt in to (227 KiB on sm_90), 0 when the driver does not say.
  uint32_t max_shared, max_shared_optin;
  // CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X/Y/Z (0 when the driver does not say).
  uint32_t max_grid[3];
  uint8_t uuid[16];
  char pci_bus_id[32];
  accel_device_caps_t caps;
  // Guards everything below.
  pthread_mutex_t mutex;
  // Ops module, loaded at the first op (ops.c). `ops_ready` is set once
  // `ops_kernels` is complete; `ops_status` keeps a failure.
  atomic_bool ops_ready;
  bool ops_tried;
  accel_status_t ops_status;
  CUmodule ops_module;
  CUfunction ops_kernels[ACCEL_CUDA_KERNEL_COUNT];
  // Peer access of this context to device i's memory: 0 not tried yet,
  // 1 enabled, 2 refused (copies still work, staged by the driver).
  uint8_t peer_state[ACCEL_CUDA_MAX_DEVICES];
  // cuBLAS handles of destroyed streams, kept for the next stream's first
  // GEMM: cublasDestroy synchronises the whole device, so it runs only at
  // device close (gemm.c).
  void* blas_pool[ACCEL_CUDA_BLAS_POOL];
  uint32_t blas_pooled;
  // Written once at open: the plugin's own CU_STREAM_NON_BLOCKING stream
  // for work without a stream ("now"), waited for before returning. Never
  // the legacy default stream, which in the primary context the
  // application shares would also wait for (and hold up) its blocking
  // streams.
  CUstream sync_stream;
};

// The CUstream of `stream`, or the device's own for NULL ("now").
CUstream accel_cuda_stream_of(const accel_cuda_device_t* device, void* stream);

// plugin ABI: device_open / device_close.
accel_status_t accel_cuda_device_open(void* plugin, uint32_t index,
                                      void** out_device);
void accel_cuda_device_close(void* device);

// device ops: query_props, mem_info, can_access_peer.
accel_status_t accel_cuda_device_query_props(
    void* device, accel_plugin_device_props_t* props);
accel_status_t accel_cuda_device_mem_info(void* device, uint64_t* out_free,
                                          uint64_t* out_total);
accel_status_t accel_cuda_device_can_access_peer(void* device,
                                                 void* peer_device,
                                                 bool* out_can);

// Makes the device's primary context current on this thread, saving the
// previous one for _pop. Fails (through host->fail, naming `what`) only if
// the driver does.
accel_status_t accel_cuda_context_push(accel_cuda_device_t* device,
                                       const char* what);

// Restores the context current before the matching _push.
void accel_cuda_context_pop(accel_cuda_device_t* device);

// Records a failed driver call `call` on `device` ("cuda:N: call: ...")
// and returns the mapped status.
accel_status_t accel_cuda_device_fail(const accel_cuda_device_t* device,
                                      CUresult result, const char* call);

// ---------------------------------------------------------------------------
// Memory (memory.c). A memory handle is the CUdeviceptr itself.
// ---------------------------------------------------------------------------

// The device pointer of a memory handle plus a byte offset.
static inline CUdeviceptr accel_cuda_ptr(const void* mem, uint64_t offset) {
  return (CUdeviceptr)(uintptr_t)mem + (CUdeviceptr)offset;
}

accel_status_t accel_cuda_mem_alloc(void* device, size_t size, void** out_mem);
void accel_cuda_mem_free(void* device, void* mem);
accel_status_t accel_cuda_host_alloc(void* device, size_t size, void** out_ptr);
void accel_cuda_host_free(void* device, void* ptr);
accel_status_t accel_cuda_copy_h2d(void* device, void* stream, void* dst,
                                   size_t dst_offset, const void* src,
                                   size_t size);
accel_status_t accel_cuda_copy_d2h(void* device, void* stream, void* dst,
                                   const void* src, size_t src_offset,
                                   size_t size);
accel_status_t accel_cuda_copy_d2d(void* device, void* stream, void* dst,
                                   size_t dst_offset, const void* src,
                                   size_t src_offset, size_t size);
accel_status_t accel_cuda_copy_peer(void* device, void* stream, void* dst,
                                    size_t dst_offset, void* src_device,
                                    const void* src, size_t src_offset,
                                    size_t size);
accel_status_t accel_cuda_memset(void* device, void* stream, void* dst,
                                 size_t offset, uint8_t value, size_t size);

// ---------------------------------------------------------------------------
// Interop (interop.c): device addresses and wrapped memory (ABI 1.3),
// native handles and host registration (ABI 1.4). A wrapped handle is the
// CUdeviceptr, checked with cuPointerGetAttribute first.
// ---------------------------------------------------------------------------

accel_status_t accel_cuda_mem_address(void* device, void* mem, uint64_t offset,
                                      uint64_t* out_address);
accel_status_t accel_cuda_mem_wrap(void* device, uint64_t address, size_t size,
                                   void** out_mem);
void accel_cuda_mem_unwrap(void* device, void* mem);
accel_status_t accel_cuda_native_handle(void* device, uint32_t kind,
                                        void* object, uint64_t* out_handle);
accel_status_t accel_cuda_host_register(void* device, void* ptr, size_t size);
void accel_cuda_host_unregister(void* device, void* ptr);

// ---------------------------------------------------------------------------
// Streams (stream.c) and events (event.c)
// ---------------------------------------------------------------------------

// A stream: a CU_STREAM_NON_BLOCKING CUstream, and what GEMMs and sums on
// it create lazily (guarded by `mutex`, freed by stream_destroy).
typedef struct accel_cuda_stream {
  accel_cuda_device_t* device;
  CUstream stream;
  pthread_mutex_t mutex;
  void* blas_handle;  // cublasHandle_t bound to `stream` (gemm.c)
  // Its own cuBLAS workspace, allocated only for a core older than ABI 1.2
  // (a newer core lends one with each GEMM).
  CUdeviceptr workspace;
  CUdeviceptr scratch;  // per-block partial sums (ops.c)
} accel_cuda_stream_t;

accel_status_t accel_cuda_stream_create(void* device,
                                        accel_stream_flags_t flags,
                                        void** out_stream);
void accel_cuda_stream_destroy(void* stream);
accel_status_t accel_cuda_stream_synchronize(void* stream);
accel_status_t accel_cuda_stream_query(void* stream, bool* out_done);
accel_status_t accel_cuda_stream_wait_event(void* stream, void* event);
// plugin ABI 1.4: stream priorities (cuCtxGetStreamPriorityRange,
// cuStreamCreateWithPriority) and host functions (cuLaunchHostFunc).
accel_status_t accel_cuda_stream_priority_range(void* device,
                                                int32_t* out_least,
                                                int32_t* out_greatest);
accel_status_t accel_cuda_stream_create_priority(void* device,
                                                 accel_stream_flags_t flags,
                                                 int32_t priority,
                                                 void** out_stream);
accel_status_t accel_cuda_launch_host_func(void* stream, void (*fn)(void* user),
                                           void* user);
// plugin ABI 1.4: native graphs (graph.c): stream capture in relaxed mode
// (cuStreamBeginCapture), a CUgraph instantiated at the end of the capture
// (cuStreamEndCapture, cuGraphInstantiateWithFlags) and launched with
// cuGraphLaunch. Never run on GPU hardware: only on tests/cuda/fakecuda.
accel_status_t accel_cuda_stream_begin_capture(void* stream);
accel_status_t accel_cuda_stream_end_capture(void* stream, void** out_graph);
accel_status_t accel_cuda_graph_launch(void* graph, void* stream);
void accel_cuda_graph_destroy(void* graph);

// An event and whether it was created with ACCEL_EVENT_TIMING.
typedef struct accel_cuda_event {
  accel_cuda_device_t* device;
  CUevent event;
  bool timing;
  // Set by the first successful record: cuEventElapsedTime on a
  // never-recorded event is CUDA_ERROR_INVALID_HANDLE, which the plugin
  // reports as the CPU plugin does (INVALID_ARGUMENT) instead.
  _Atomic bool recorded;
} accel_cuda_event_t;

accel_status_t accel_cuda_event_create(void* device, accel_event_flags_t flags,
                                       void** out_event);
void accel_cuda_event_destroy(void* event);
accel_status_t accel_cuda_event_record(void* event, void* stream);
accel_status_t accel_cuda_event_synchronize(void* event);
accel_status_t accel_cuda_event_query(void* event, bool* out_done);
accel_status_t accel_cuda_event_elapsed_ms(void* start, void* end,
                                           float* out_ms);

// ---------------------------------------------------------------------------
// Custom kernels (module.c)
// ---------------------------------------------------------------------------

accel_status_t accel_cuda_module_load(void* device, const void* image,
                                      size_t size, void** out_module);
void accel_cuda_module_unload(void* module);
accel_status_t accel_cuda_module_function(void* module, const char* name,
                                          void** out_function);
accel_status_t accel_cuda_launch(void* function, void* stream,
                                 const accel_plugin_launch_t* launch);

// Loads `image` (cubin, fatbin, or PTX, which must be NUL-terminated) into
// the current context with JIT logs, turning NO_BINARY_FOR_GPU,
// UNSUPPORTED_PTX_VERSION and JIT errors into messages for `device`.
// The caller has pushed the device's context. Used by module.c and ops.c.
accel_status_t accel_cuda_module_load_image(accel_cuda_device_t* device,
                                            const void* image, const char* what,
                                            CUmodule* out_module);

// ---------------------------------------------------------------------------
// Built-in ops (ops.c) and GEMM (gemm.c)
// ---------------------------------------------------------------------------

// Indices into device->ops_kernels; ops.c holds the matching names.
typedef enum accel_cuda_kernel {
  ACCEL_CUDA_K_FILL = 0,          // + dtype (4)
  ACCEL_CUDA_K_CAST = 4,          // + dst * 4 + src (16)
  ACCEL_CUDA_K_SCALE = 20,        // + dtype, floats only (3)
  ACCEL_CUDA_K_AXPY = 23,         // (3)
  ACCEL_CUDA_K_ADD = 26,          // + dtype (4)
  ACCEL_CUDA_K_MUL = 30,          // (4)
  ACCEL_CUDA_K_SUM_PARTIAL = 34,  // (4)
  ACCEL_CUDA_K_SUM_FINAL = 38,    // (4)
  ACCEL_CUDA_K_GEMM_SCALE = 42,   // + dtype, floats only (3)
  ACCEL_CUDA_K_RNG = 45,          // every dtype and distribution (1)
  ACCEL_CUDA_K_UNARY = 46,        // + dtype, floats only (3; ABI 1.4)
  ACCEL_CUDA_K_BIAS_ADD = 49,     // + dtype (4; ABI 1.4)
  ACCEL_CUDA_K_END = 53,
} accel_cuda_kernel_t;

// Launches ops kernel `kernel` on `stream` over `count` elements (1-D
// grid-stride geometry chosen here) with `params` as cuLaunchKernel's
// kernelParams. Loads the ops module on first use. `what` names the op in
// messages.
accel_status_t accel_cuda_ops_launch(accel_cuda_stream_t* stream,
                                     accel_cuda_kernel_t kernel, uint64_t count,
                                     void** params, const char* what);

accel_plugin_op_fill_fn accel_cuda_op_fill;
accel_plugin_op_rng_fn accel_cuda_op_rng;
accel_plugin_op_cast_fn accel_cuda_op_cast;
accel_plugin_op_scale_fn accel_cuda_op_scale;
accel_plugin_op_axpy_fn accel_cuda_op_axpy;
accel_plugin_op_binary_fn accel_cuda_op_add;
accel_plugin_op_binary_fn accel_cuda_op_mul;
accel_plugin_op_sum_fn accel_cuda_op_sum;
accel_plugin_op_gemm_fn accel_cuda_op_gemm;
accel_plugin_op_gemm_workspace_fn accel_cuda_op_gemm_workspace;
// ABI 1.4: activations and bias-add (ops.c), strided-batched GEMM
// (gemm.c, cublasGemmStridedBatchedEx).
accel_plugin_op_unary_fn accel_cuda_op_unary;
accel_plugin_op_bias_add_fn accel_cuda_op_bias_add;
accel_plugin_op_gemm_batched_fn accel_cuda_op_gemm_batched;

// Frees the ops module of `device` (device_close; context pushed).
void accel_cuda_ops_unload(accel_cuda_device_t* device);

// Destroys the cuBLAS handle and own workspace of `stream`, if any
// (stream_destroy, after the stream has drained; context pushed).
void accel_cuda_gemm_release(accel_cuda_stream_t* stream);
// Destroys the device's pooled cuBLAS handles (device close; the context is
// current).
void accel_cuda_gemm_pool_drain(accel_cuda_device_t* device);

// Unloads cuBLAS, if it was loaded (unload).
void accel_cuda_blas_destroy(accel_cuda_blas_t* blas);

// The embedded ops fatbin (ops_fatbin.c, generated at build time).
extern const unsigned char accel_cuda_ops_fatbin[];
extern const size_t accel_cuda_ops_fatbin_size;

#endif  // ACCEL_PLUGINS_CUDA_ACCEL_CUDA_H_
