// SPDX-License-Identifier: MIT
//
// The HIP runtime, opened at run time. The plugin never links libamdhip64:
// on the first device_count it dlopen()s the runtime (ACCEL_ROCM_RUNTIME,
// else libamdhip64.so, .so.7, .so.6, .so.5), resolves every entry point it
// uses with dlsym into the table below (IREE's X-macro symbol table) and
// initialises it. Types and enum values come from the HIP headers the
// plugin is compiled against (<hip/hip_runtime_api.h>, C API only).
#ifndef ACCEL_PLUGINS_ROCM_RUNTIME_H_
#define ACCEL_PLUGINS_ROCM_RUNTIME_H_

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <accel/plugin.h>
#include <hip/hip_runtime_api.h>
#include <hip/hiprtc.h>
#include <stdbool.h>
#include <stddef.h>

// Oldest runtime accepted: HIP 5.0 (hipRuntimeGetVersion's encoding,
// major * 10000000 + minor * 100000 + patch).
#define ACCEL_ROCM_RUNTIME_MIN_VERSION 50000000

// Size of the buffers holding a reason or a path.
#define ACCEL_ROCM_MESSAGE_SIZE 512

// Required HIP entry points: X(name, return type, parameter list).
#define ACCEL_ROCM_HIP_SYMBOLS(X)                                             \
  X(hipInit, hipError_t, (unsigned int flags))                                \
  X(hipGetDeviceCount, hipError_t, (int* count))                              \
  X(hipRuntimeGetVersion, hipError_t, (int* version))                         \
  X(hipDriverGetVersion, hipError_t, (int* version))                          \
  X(hipGetErrorName, const char*, (hipError_t error))                         \
  X(hipGetErrorString, const char*, (hipError_t error))                       \
  X(hipSetDevice, hipError_t, (int device))                                   \
  X(hipGetDevice, hipError_t, (int* device))                                  \
  X(hipGetLastError, hipError_t, (void))                                      \
  X(hipDeviceGetAttribute, hipError_t,                                        \
    (int* value, hipDeviceAttribute_t attr, int device))                      \
  X(hipDeviceGetName, hipError_t, (char* name, int len, hipDevice_t device))  \
  X(hipDeviceGetPCIBusId, hipError_t, (char* id, int len, int device))        \
  X(hipDeviceTotalMem, hipError_t, (size_t * bytes, hipDevice_t device))      \
  X(hipMemGetInfo, hipError_t, (size_t * free_bytes, size_t * total))         \
  X(hipMalloc, hipError_t, (void** ptr, size_t size))                         \
  X(hipFree, hipError_t, (void* ptr))                                         \
  X(hipHostMalloc, hipError_t, (void** ptr, size_t size, unsigned int flags)) \
  X(hipHostFree, hipError_t, (void* ptr))                                     \
  X(hipHostRegister, hipError_t,                                              \
    (void* ptr, size_t size, unsigned int flags))                             \
  X(hipHostUnregister, hipError_t, (void* ptr))                               \
  X(hipPointerGetAttributes, hipError_t,                                      \
    (hipPointerAttribute_t * attributes, const void* ptr))                    \
  X(hipMemGetAddressRange, hipError_t,                                        \
    (hipDeviceptr_t * base, size_t* size, hipDeviceptr_t ptr))                \
  X(hipMemcpyAsync, hipError_t,                                               \
    (void* dst, const void* src, size_t size, hipMemcpyKind kind,             \
     hipStream_t stream))                                                     \
  X(hipMemcpyPeerAsync, hipError_t,                                           \
    (void* dst, int dst_device, const void* src, int src_device, size_t size, \
     hipStream_t stream))                                                     \
  X(hipMemsetAsync, hipError_t,                                               \
    (void* dst, int value, size_t size, hipStream_t stream))                  \
  X(hipDeviceCanAccessPeer, hipError_t, (int* can, int device, int peer))     \
  X(hipDeviceEnablePeerAccess, hipError_t, (int peer, unsigned int flags))    \
  X(hipStreamCreateWithFlags, hipError_t,                                     \
    (hipStream_t * stream, unsigned int flags))                               \
  X(hipStreamDestroy, hipError_t, (hipStream_t stream))                       \
  X(hipStreamSynchronize, hipError_t, (hipStream_t stream))                   \
  X(hipStreamQuery, hipError_t, (hipStream_t stream))                         \
  X(hipStreamWaitEvent, hipError_t,                                           \
    (hipStream_t stream, hipEvent_t event, unsigned int flags))               \
  X(hipStreamCreateWithPriority, hipError_t,                                  \
    (hipStream_t * stream, unsigned int flags, int priority))                 \
  X(hipDeviceGetStreamPriorityRange, hipError_t,                              \
    (int* least, int* greatest))                                              \
  X(hipLaunchHostFunc, hipError_t,                                            \
    (hipStream_t stream, hipHostFn_t fn, void* user))                         \
  X(hipEventCreateWithFlags, hipError_t,                                      \
    (hipEvent_t * event, unsigned int flags))                                 \
  X(hipEventDestroy, hipError_t, (hipEvent_t event))                          \
  X(hipEventRecord, hipError_t, (hipEvent_t event, hipStream_t stream))       \
  X(hipEventSynchronize, hipError_t, (hipEvent_t event))                      \
  X(hipEventQuery, hipError_t, (hipEvent_t event))                            \
  X(hipEventElapsedTime, hipError_t,                                          \
    (float* ms, hipEvent_t start, hipEvent_t stop))                           \
  X(hipModuleLoadData, hipError_t, (hipModule_t * module, const void* image)) \
  X(hipModuleUnload, hipError_t, (hipModule_t module))                        \
  X(hipModuleGetFunction, hipError_t,                                         \
    (hipFunction_t * function, hipModule_t module, const char* name))         \
  X(hipModuleLaunchKernel, hipError_t,                                        \
    (hipFunction_t f, unsigned int gx, unsigned int gy, unsigned int gz,      \
     unsigned int bx, unsigned int by, unsigned int bz, unsigned int shared,  \
     hipStream_t stream, void** params, void** extra))

// hiprtc entry points, all or none (optional: JIT of the built-in kernels).
// ROCm 5.2 exports them from libamdhip64; 5.3 and later from libhiprtc.
#define ACCEL_ROCM_RTC_SYMBOLS(X)                                           \
  X(hiprtcGetErrorString, const char*, (hiprtcResult result))               \
  X(hiprtcCreateProgram, hiprtcResult,                                      \
    (hiprtcProgram * prog, const char* src, const char* name, int nheaders, \
     const char** headers, const char** include_names))                     \
  X(hiprtcCompileProgram, hiprtcResult,                                     \
    (hiprtcProgram prog, int nopts, const char** opts))                     \
  X(hiprtcGetProgramLogSize, hiprtcResult,                                  \
    (hiprtcProgram prog, size_t * size))                                    \
  X(hiprtcGetProgramLog, hiprtcResult, (hiprtcProgram prog, char* log))     \
  X(hiprtcGetCodeSize, hiprtcResult, (hiprtcProgram prog, size_t * size))   \
  X(hiprtcGetCode, hiprtcResult, (hiprtcProgram prog, char* code))          \
  X(hiprtcDestroyProgram, hiprtcResult, (hiprtcProgram * prog))

// Graph entry points, all or none (optional: native graphs, plugin ABI
// 1.4; every HIP 5 runtime has them, but a runtime without them still
// loads, and the core then replays its graphs).
#define ACCEL_ROCM_GRAPH_SYMBOLS(X)                                        \
  X(hipStreamBeginCapture, hipError_t,                                     \
    (hipStream_t stream, hipStreamCaptureMode mode))                       \
  X(hipStreamEndCapture, hipError_t, (hipStream_t stream, hipGraph_t* g)) \
  X(hipGraphInstantiate, hipError_t,                                       \
    (hipGraphExec_t * exec, hipGraph_t graph, hipGraphNode_t * error_node, \
     char* log, size_t log_size))                                          \
  X(hipGraphLaunch, hipError_t, (hipGraphExec_t exec, hipStream_t stream)) \
  X(hipGraphExecDestroy, hipError_t, (hipGraphExec_t exec))                \
  X(hipGraphDestroy, hipError_t, (hipGraph_t graph))

// hipGetDeviceProperties in the R0000 layout (ROCm 5's hipDeviceProp_t).
typedef hipError_t (*accel_rocm_props_fn_t)(hipDeviceProp_t* props, int device);

// An opened runtime. Immutable once accel_rocm_runtime_open succeeded.
typedef struct accel_rocm_runtime {
  void* handle;      // of the HIP runtime
  void* rtc_handle;  // of a separate libhiprtc, or NULL
  // The runtime's initialisation has run (hipGetDeviceCount was called):
  // from then on it is never dlclosed, see accel_rocm_runtime_close().
  bool started;
  char path[ACCEL_ROCM_MESSAGE_SIZE];
  int version;         // hipRuntimeGetVersion
  int driver_version;  // hipDriverGetVersion
  int device_count;
#define ACCEL_ROCM_FIELD(name, ret, params) ret(*name) params;
  ACCEL_ROCM_HIP_SYMBOLS(ACCEL_ROCM_FIELD)
  ACCEL_ROCM_RTC_SYMBOLS(ACCEL_ROCM_FIELD)
  ACCEL_ROCM_GRAPH_SYMBOLS(ACCEL_ROCM_FIELD)
#undef ACCEL_ROCM_FIELD
  // hipGetDevicePropertiesR0000 (ROCm 6+) or hipGetDeviceProperties
  // (ROCm 5): both fill the R0000 layout; used only for gcnArchName.
  accel_rocm_props_fn_t get_props;
  bool has_rtc;  // every hiprtc entry point resolved
  bool has_graphs;  // every graph entry point resolved
} accel_rocm_runtime_t;

// Opens, resolves and initialises the runtime into `rt` (zeroed by the
// caller). On failure returns ACCEL_ERROR_UNAVAILABLE, with the reason in
// `why`: the dlerror() text of each name tried, a missing entry point, a
// runtime older than HIP 5.0, or "no ROCm device (hipErrorNoDevice)"; `rt`
// then holds nothing to close. Reads ACCEL_ROCM_RUNTIME through `host`.
accel_status_t accel_rocm_runtime_open(const accel_host_t* host,
                                       accel_rocm_runtime_t* rt, char* why,
                                       size_t why_size);

// Unloads a runtime opened by accel_rocm_runtime_open. NULL handles are
// ignored.
void accel_rocm_runtime_close(accel_rocm_runtime_t* rt);

// Maps a HIP error to a status: out of memory, no device (UNAVAILABLE),
// not found, not ready, bad image (INCOMPATIBLE), faults (DEVICE_LOST),
// everything else BACKEND.
accel_status_t accel_rocm_status(hipError_t error);

// Records "<prefix>: <what>: <hipErrorName> (<description>)" through
// host->fail and returns the mapped status.
accel_status_t accel_rocm_fail(const accel_host_t* host,
                               const accel_rocm_runtime_t* rt, hipError_t error,
                               const char* prefix, const char* what);

#endif  // ACCEL_PLUGINS_ROCM_RUNTIME_H_
