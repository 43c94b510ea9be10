// SPDX-License-Identifier: MIT
//
// The CUDA driver API as the plugin uses it: a table of entry points
// resolved at run time from libcuda, never linked (architecture decision 7).
//
// Every entry is listed once in ACCEL_CUDA_DRIVER_SYMBOLS with the CUDA
// version of the ABI the plugin was written against. The function pointer
// type is cudaTypedefs.h's PFN_<name>_v<version>, so a wrong version does
// not compile, and cuGetProcAddress is asked for exactly that version:
// cuMemAlloc at 3020 is cuMemAlloc_v2, cuEventElapsedTime at 2000 the
// original one, whatever newer variants the driver also has (CUDA 13
// renamed cuEventElapsedTime to _v2 in its headers). The third column is
// the exported name of that version, used when the driver predates
// cuGetProcAddress_v2 or does not know the symbol.
//
// cuda.h #defines many of these names to their versioned ones
// (cuMemAlloc -> cuMemAlloc_v2); the table's members go through the same
// macros in their declaration and at every use, so `cu->cuMemAlloc(...)`
// reads as the API and means the member declared for it.
#ifndef ACCEL_PLUGINS_CUDA_DRIVER_H_
#define ACCEL_PLUGINS_CUDA_DRIVER_H_

#include <accel/plugin.h>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdbool.h>

// Oldest driver the plugin accepts, in cuDriverGetVersion's encoding. The
// table is resolved against CUDA 12.0 (the first driver with
// cuGetProcAddress_v2), but the built-in kernels are compiled by this
// toolkit's nvcc (CUDA_VERSION of its cuda.h), and what nvcc writes loads
// only on drivers that new: a CUDA 13 toolkit's PTX is ISA 9.0 (JIT from a
// 13.0 driver) and its cubins use ELF ABI version 8 (12.8 drivers and
// newer), and NVIDIA's compatibility rule is that a 13.x toolkit's code
// needs a 13.x driver (R580+). So the minimum is the toolkit's major.0
// from CUDA 13, 12.8 for a 12.8/12.9 toolkit (ABI 8 cubins) and 12.0
// before. An older driver is reported as too old, naming the branch.
#if CUDA_VERSION >= 13000
#define ACCEL_CUDA_DRIVER_MIN_VERSION (CUDA_VERSION / 1000 * 1000)
#elif CUDA_VERSION >= 12080
#define ACCEL_CUDA_DRIVER_MIN_VERSION 12080
#else
#define ACCEL_CUDA_DRIVER_MIN_VERSION 12000
#endif

// X(name, version, exported name of that version)
#define ACCEL_CUDA_DRIVER_SYMBOLS(X)                                  \
  X(cuDeviceGetCount, 2000, "cuDeviceGetCount")                       \
  X(cuDeviceGet, 2000, "cuDeviceGet")                                 \
  X(cuDeviceGetName, 2000, "cuDeviceGetName")                         \
  X(cuDeviceGetAttribute, 2000, "cuDeviceGetAttribute")               \
  X(cuDeviceTotalMem, 3020, "cuDeviceTotalMem_v2")                    \
  X(cuDeviceGetUuid, 11040, "cuDeviceGetUuid_v2")                     \
  X(cuDeviceGetPCIBusId, 4010, "cuDeviceGetPCIBusId")                 \
  X(cuDeviceCanAccessPeer, 4000, "cuDeviceCanAccessPeer")             \
  X(cuDevicePrimaryCtxRetain, 7000, "cuDevicePrimaryCtxRetain")       \
  X(cuDevicePrimaryCtxRelease, 11000, "cuDevicePrimaryCtxRelease_v2") \
  X(cuCtxPushCurrent, 4000, "cuCtxPushCurrent_v2")                    \
  X(cuCtxPopCurrent, 4000, "cuCtxPopCurrent_v2")                      \
  X(cuCtxEnablePeerAccess, 4000, "cuCtxEnablePeerAccess")             \
  X(cuMemGetInfo, 3020, "cuMemGetInfo_v2")                            \
  X(cuMemAlloc, 3020, "cuMemAlloc_v2")                                \
  X(cuMemFree, 3020, "cuMemFree_v2")                                  \
  X(cuMemHostAlloc, 2020, "cuMemHostAlloc")                           \
  X(cuMemFreeHost, 2000, "cuMemFreeHost")                             \
  X(cuMemHostRegister, 6050, "cuMemHostRegister_v2")                  \
  X(cuMemHostUnregister, 4000, "cuMemHostUnregister")                 \
  X(cuPointerGetAttribute, 4000, "cuPointerGetAttribute")             \
  X(cuMemcpyHtoD, 3020, "cuMemcpyHtoD_v2")                            \
  X(cuMemcpyDtoH, 3020, "cuMemcpyDtoH_v2")                            \
  X(cuMemcpyDtoD, 3020, "cuMemcpyDtoD_v2")                            \
  X(cuMemcpyPeer, 4000, "cuMemcpyPeer")                               \
  X(cuMemcpyHtoDAsync, 3020, "cuMemcpyHtoDAsync_v2")                  \
  X(cuMemcpyDtoHAsync, 3020, "cuMemcpyDtoHAsync_v2")                  \
  X(cuMemcpyDtoDAsync, 3020, "cuMemcpyDtoDAsync_v2")                  \
  X(cuMemcpyPeerAsync, 4000, "cuMemcpyPeerAsync")                     \
  X(cuMemsetD8, 3020, "cuMemsetD8_v2")                                \
  X(cuMemsetD8Async, 3020, "cuMemsetD8Async")                         \
  X(cuStreamCreate, 2000, "cuStreamCreate")                           \
  X(cuStreamDestroy, 4000, "cuStreamDestroy_v2")                      \
  X(cuStreamSynchronize, 2000, "cuStreamSynchronize")                 \
  X(cuStreamQuery, 2000, "cuStreamQuery")                             \
  X(cuStreamWaitEvent, 3020, "cuStreamWaitEvent")                     \
  X(cuStreamCreateWithPriority, 5050, "cuStreamCreateWithPriority")   \
  X(cuCtxGetStreamPriorityRange, 5050, "cuCtxGetStreamPriorityRange") \
  X(cuLaunchHostFunc, 10000, "cuLaunchHostFunc")                      \
  X(cuStreamBeginCapture, 10010, "cuStreamBeginCapture_v2")          \
  X(cuStreamEndCapture, 10000, "cuStreamEndCapture")                  \
  X(cuGraphInstantiateWithFlags, 11040, "cuGraphInstantiateWithFlags") \
  X(cuGraphLaunch, 10000, "cuGraphLaunch")                            \
  X(cuGraphExecDestroy, 10000, "cuGraphExecDestroy")                  \
  X(cuGraphDestroy, 10000, "cuGraphDestroy")                          \
  X(cuEventCreate, 2000, "cuEventCreate")                             \
  X(cuEventDestroy, 4000, "cuEventDestroy_v2")                        \
  X(cuEventRecord, 2000, "cuEventRecord")                             \
  X(cuEventSynchronize, 2000, "cuEventSynchronize")                   \
  X(cuEventQuery, 2000, "cuEventQuery")                               \
  X(cuEventElapsedTime, 2000, "cuEventElapsedTime")                   \
  X(cuModuleLoadDataEx, 2010, "cuModuleLoadDataEx")                   \
  X(cuModuleUnload, 2000, "cuModuleUnload")                           \
  X(cuModuleGetFunction, 2000, "cuModuleGetFunction")                 \
  X(cuFuncSetAttribute, 9000, "cuFuncSetAttribute")                   \
  X(cuFuncGetAttribute, 2020, "cuFuncGetAttribute")                   \
  X(cuLaunchKernel, 4000, "cuLaunchKernel")

#define ACCEL_CUDA_DRIVER_MEMBER(name, version, exported) \
  PFN_##name##_v##version name;

// The resolved driver. Written once by accel_cuda_driver_open, immutable
// afterwards.
typedef struct accel_cuda_driver {
  void* library;   // dlopen handle of libcuda
  char path[256];  // the file that was loaded, for messages
  int version;     // cuDriverGetVersion: 12040 is CUDA 12.4
  // Bootstrap entries, found with dlsym.
  PFN_cuInit_v2000 cuInit;
  PFN_cuDriverGetVersion_v2020 cuDriverGetVersion;
  PFN_cuGetErrorName_v6000 cuGetErrorName;
  PFN_cuGetErrorString_v6000 cuGetErrorString;
  PFN_cuGetProcAddress_v12000 cuGetProcAddress;
  ACCEL_CUDA_DRIVER_SYMBOLS(ACCEL_CUDA_DRIVER_MEMBER)
  // Optional: cuFuncGetParamInfo (CUDA 12.4 drivers and newer), NULL when
  // the driver lacks it; launches then cannot check argument sizes.
  PFN_cuFuncGetParamInfo_v12040 cuFuncGetParamInfo;
} accel_cuda_driver_t;

// Opens the driver into `cu` (zeroed by the caller): the library named by
// the ACCEL_CUDA_DRIVER variable when set (read through `host`), otherwise
// libcuda.so.1 then libcuda.so; cuInit; the version check; and every
// entry of the table. On failure returns ACCEL_ERROR_UNAVAILABLE with the
// reason in `message` (missing library with the dlerror() text, the
// toolkit's stub, a driver too old, a missing entry point, cuInit's
// error), leaves nothing open, and `cu` must not be used. A driver that
// works but sees no device (CUDA_ERROR_NO_DEVICE) returns ACCEL_OK with
// `*out_no_device` set, the reason in `message` and the library closed.
// Not thread-safe: the plugin calls it once, under its mutex.
accel_status_t accel_cuda_driver_open(const accel_host_t* host,
                                      accel_cuda_driver_t* cu,
                                      bool* out_no_device, char* message,
                                      size_t message_size);

// Closes what accel_cuda_driver_open opened. Once cuInit has succeeded the
// library stays loaded for the life of the process: libcuda keeps worker
// threads that outlive every context, and neither NVIDIA nor other loaders
// (IREE, PyTorch) ever unload it. NULL library is ignored.
void accel_cuda_driver_close(accel_cuda_driver_t* cu);

// Maps a driver error to an accel status: OUT_OF_MEMORY to
// OUT_OF_DEVICE_MEMORY, NOT_READY to NOT_READY, sticky faults (illegal
// address, launch failure, ECC, ...) to DEVICE_LOST, a missing or
// unusable driver to UNAVAILABLE, INVALID_VALUE to INVALID_ARGUMENT,
// NOT_FOUND to NOT_FOUND, NO_BINARY_FOR_GPU and NOT_SUPPORTED to
// UNSUPPORTED, UNSUPPORTED_PTX_VERSION to INCOMPATIBLE, and everything
// else to BACKEND.
accel_status_t accel_cuda_status(CUresult result);

// Records "<prefix>: <call>: CUDA_ERROR_X (description)" through
// host->fail with the mapped status and returns that status.
accel_status_t accel_cuda_fail(const accel_host_t* host,
                               const accel_cuda_driver_t* cu, CUresult result,
                               const char* prefix, const char* call);

// Writes "CUDA_ERROR_X (description)" for `result` into `buf`.
void accel_cuda_describe(const accel_cuda_driver_t* cu, CUresult result,
                         char* buf, size_t size);

#endif  // ACCEL_PLUGINS_CUDA_DRIVER_H_
