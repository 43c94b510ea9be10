// SPDX-License-Identifier: MIT
//
// accel interop: the backend's own objects behind accel handles (a
// CUstream, a cl_mem, ...), for handing accel's work and memory to another
// library, and host memory the caller owns registered for fast copies
// (cudaHostRegister). Wrapping memory owned elsewhere and DLPack are in
// <accel/accel.h>. See docs/interop.md for examples and the ownership
// rules of each kind of handle.
//
// The conventions of <accel/accel.h> hold here too (thread safety,
// accel_last_error(), `out_*` set to zero on failure).
#ifndef ACCEL_INTEROP_H_
#define ACCEL_INTEROP_H_

#include <accel/accel.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// ===========================================================================
// Native handles.
//
// Each call returns the backend object as an integer: a pointer handle
// (CUcontext, CUstream, cl_mem, ...) cast through uintptr_t, or a device
// ordinal or address. The object stays accel's: never release, destroy or
// free it, and do not use it after the accel handle it came from is
// released. What each backend returns (ACCEL_ERROR_UNSUPPORTED where the
// backend has no such object, with a message that says so):
//
//   kind     cpu           cuda              rocm          opencl
//   device   -             CUdevice          hipDevice_t   cl_device_id
//   context  -             primary CUcontext -             cl_context
//   stream   -             CUstream          hipStream_t   cl_command_queue
//   event    -             CUevent           hipEvent_t    cl_event (latest
//                                                          record, or 0)
//   buffer   host pointer  CUdeviceptr       device ptr    cl_mem
//
// A plugin built before plugin ABI 1.4 answers ACCEL_ERROR_UNSUPPORTED for
// every kind. Since accel 0.2.
// ===========================================================================

// What accel_device_query_native() returns. Values are stable.
typedef enum accel_native_kind {
  // The device: a CUdevice or hipDevice_t ordinal (0 is a valid one), a
  // cl_device_id.
  ACCEL_NATIVE_DEVICE = 0,
  // The context accel runs the device's work in: CUDA's primary context
  // (shared with the runtime API and every library that uses it), the
  // cl_context (shared by the devices of one OpenCL platform).
  ACCEL_NATIVE_CONTEXT = 1,
  ACCEL_NATIVE_KIND_MAX_ENUM = 0x7fffffff
} accel_native_kind_t;

// Sets `*out_handle` to the backend's device (ACCEL_NATIVE_DEVICE) or
// context (ACCEL_NATIVE_CONTEXT) of `device`, valid while `device` is
// open. Returns ACCEL_ERROR_INVALID_ARGUMENT for NULL arguments or another
// kind, ACCEL_ERROR_UNSUPPORTED where the backend has no such object.
ACCEL_API accel_status_t accel_device_query_native(accel_device_t* device,
                                                   accel_native_kind_t kind,
                                                   uint64_t* out_handle);

// Sets `*out_handle` to the backend queue accel enqueues `stream`'s work on
// (CUstream, hipStream_t, an in-order cl_command_queue), valid while
// `stream` is alive. Work another library enqueues there is ordered with
// accel's work on `stream` in both directions, and
// accel_stream_synchronize() waits for it too. The caching allocator does
// not see it: a buffer used there and nowhere else on the stream needs
// accel_buffer_record_stream() before its release. Returns
// ACCEL_ERROR_INVALID_ARGUMENT for NULL arguments, ACCEL_ERROR_UNSUPPORTED
// on the CPU (its streams are accel's own worker threads).
ACCEL_API accel_status_t accel_stream_query_native(accel_stream_t* stream,
                                                   uint64_t* out_handle);

// Sets `*out_handle` to the backend event behind `event` (CUevent,
// hipEvent_t), valid while `event` is alive. On OpenCL, where each record
// makes a new cl_event, it is the cl_event of the latest record (0 if
// never recorded), valid until the next record or the event's release:
// clRetainEvent() it to keep it longer. Returns
// ACCEL_ERROR_INVALID_ARGUMENT for NULL arguments, ACCEL_ERROR_UNSUPPORTED
// on the CPU.
ACCEL_API accel_status_t accel_event_query_native(accel_event_t* event,
                                                  uint64_t* out_handle);

// Sets `*out_handle` to the backend allocation holding `buffer` and
// `*out_offset` to the byte offset of the buffer's first byte in it: the
// caching allocator places many buffers in one allocation (with
// ACCEL_ALLOCATOR=raw, or for a wrapped buffer, the offset is 0). The
// allocation is a host pointer on the CPU, a CUdeviceptr on CUDA, a HIP
// device pointer on ROCm (accel_buffer_query_address() gives the address
// with the offset added), a cl_mem on OpenCL (pass `*out_offset` as the
// offset of clEnqueueReadBuffer and the like). Valid while the buffer is
// alive; the bytes outside [offset, offset + size) are other buffers'.
// Order its use with accel's streams yourself. Returns
// ACCEL_ERROR_INVALID_ARGUMENT for NULL arguments or a released buffer,
// ACCEL_ERROR_UNSUPPORTED for a plugin built before ABI 1.4.
ACCEL_API accel_status_t accel_buffer_query_native(const accel_buffer_t* buffer,
                                                   uint64_t* out_handle,
                                                   size_t* out_offset);

// ===========================================================================
// Host memory registration.
//
// accel_host_register() makes existing host memory (a NumPy array, a
// framework's tensor, a ring buffer) as fast to copy from and to as memory
// from accel_host_alloc(): CUDA page-locks it (cuMemHostRegister), ROCm
// too (hipHostRegister). The CPU and OpenCL backends only record the
// range (the CPU has nothing to lock; OpenCL has no way to pin memory it
// did not allocate), so copies work as before. The memory stays the
// caller's: accel never frees it, and the caller keeps it valid and
// mapped until accel_host_unregister() returns. Copies that use it must
// have finished (synchronise their streams) before it is unregistered.
// A registration keeps `device` alive until it is unregistered.
// ===========================================================================

// Registers `size` bytes of host memory at `ptr` with `device`. `flags`
// must be 0. A range may be registered once per backend: overlapping a
// range registered on any device of the same backend is refused.
// Returns ACCEL_ERROR_INVALID_ARGUMENT for a NULL device or ptr, a `size`
// of 0, a range that wraps around, non-zero `flags`, an overlap, or a
// range the driver refuses (memory it already pins, such as
// accel_host_alloc()'s); ACCEL_ERROR_OUT_OF_MEMORY when the record cannot
// be stored or the driver cannot lock that much; other driver failures as
// ACCEL_ERROR_BACKEND. On failure nothing is registered.
ACCEL_API accel_status_t accel_host_register(accel_device_t* device, void* ptr,
                                             size_t size, uint32_t flags);

// Undoes accel_host_register() of the range starting at `ptr` on
// `device`. Returns ACCEL_ERROR_INVALID_ARGUMENT for NULL arguments or a
// `ptr` that is not the start of a range registered on `device` (the
// message says whether it is inside one, or registered on another
// device).
ACCEL_API accel_status_t accel_host_unregister(accel_device_t* device,
                                               void* ptr);

// Sets `*out_registered` to whether all `size` bytes at `ptr` lie inside
// one range registered on `device`. Returns ACCEL_ERROR_INVALID_ARGUMENT
// for NULL arguments or a `size` of 0.
ACCEL_API accel_status_t accel_host_query_registered(accel_device_t* device,
                                                     const void* ptr,
                                                     size_t size,
                                                     bool* out_registered);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ACCEL_INTEROP_H_
