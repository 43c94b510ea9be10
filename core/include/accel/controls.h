// SPDX-License-Identifier: MIT
//
// Stream, device and allocator controls after torch.cuda: stream
// priorities, host functions in stream order, and the caching allocator's
// settings (ACCEL_ALLOC_CONF) with its oversize counters. Included at the
// end of <accel/accel.h>, whose conventions hold here too; it also
// compiles when included first.
#ifndef ACCEL_CONTROLS_H_
#define ACCEL_CONTROLS_H_

#include <accel/accel.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// ===========================================================================
// Stream priorities (cudaStreamCreateWithPriority).
//
// As on CUDA, a numerically lower priority is more urgent. Work of a more
// urgent stream is started first when work of several streams is ready;
// work already running is not preempted. Priorities are a scheduling
// hint: they never change what a program computes, only the order in which
// independent streams get the device. Streams from accel_stream_create()
// have priority 0, the backend's default. What each backend does:
// - cpu: -5 (most urgent) to 0; while a stream of priority below 0
//   exists, stream work is started in priority order whenever more is
//   ready than the thread pool is wide (docs/cpu-backend.md);
// - cuda: cuCtxGetStreamPriorityRange and cuStreamCreateWithPriority;
// - rocm: hipDeviceGetStreamPriorityRange and hipStreamCreateWithPriority
//   (HIP's range is 1 to -1: low, normal, high);
// - opencl: 1 to -1 (CL_QUEUE_PRIORITY_LOW/MED/HIGH_KHR) on a device with
//   cl_khr_priority_hints, else one priority, 0.
// ===========================================================================

// Sets `*out_least` and `*out_greatest` to the range of stream priorities
// of `device` (cuCtxGetStreamPriorityRange): `*out_greatest` is the most
// urgent, numerically lowest, so `*out_greatest` <= 0 <= `*out_least` on
// every first-party backend. Both are 0 on a backend with one priority.
// Returns ACCEL_ERROR_INVALID_ARGUMENT for a NULL argument (the outputs
// are then 0), or the plugin's error.
ACCEL_API accel_status_t accel_device_stream_priority_range(
    accel_device_t* device, int32_t* out_least, int32_t* out_greatest);

// Creates a stream on `device` with `priority`, as accel_stream_create()
// does otherwise. A priority outside the device's range is clamped to it,
// as CUDA does: below the greatest gives the greatest, above the least
// the least (on a backend with one priority, every value gives 0);
// accel_stream_priority() reports the value used. `flags` must be 0.
// Returns ACCEL_ERROR_INVALID_ARGUMENT for a NULL `device` or `out_stream`
// or unknown flags, or the plugin's error.
ACCEL_API accel_status_t accel_stream_create_with_priority(
    accel_device_t* device, accel_stream_flags_t flags, int32_t priority,
    accel_stream_t** out_stream);

// The priority `stream` was created with, after clamping (0 for streams
// from accel_stream_create(), and for NULL).
ACCEL_API int32_t accel_stream_priority(const accel_stream_t* stream);

// ===========================================================================
// Host functions in stream order (cudaLaunchHostFunc).
// ===========================================================================

// A function the backend calls on a thread of its own with the
// `user_data` given at launch.
typedef void (*accel_host_fn_t)(void* user_data);

// Enqueues a call of `fn(user_data)` on `stream`: it runs once every piece
// of work enqueued on the stream before it has finished, and work enqueued
// after it waits until it returns, as for any other stream work. It runs
// on a thread of the backend's choosing (never inside this call), at most
// once: after an asynchronous error on the stream it is not called (as
// cuLaunchHostFunc). `fn` must not call accel (it may deadlock: the work
// it would wait for may wait for it) and should return promptly, since it
// holds up the stream; `user_data` must stay valid until it has run.
// Returns ACCEL_ERROR_INVALID_ARGUMENT for a NULL `stream` or `fn`,
// ACCEL_ERROR_UNSUPPORTED when the backend cannot call host functions (a
// plugin without the ABI 1.4 entry), or the plugin's enqueue error.
ACCEL_API accel_status_t accel_stream_launch_host_func(accel_stream_t* stream,
                                                       accel_host_fn_t fn,
                                                       void* user_data);

// ===========================================================================
// Allocator settings and oversize counters.
// ===========================================================================

// The caching allocator's settings on one device, as ACCEL_ALLOC_CONF gave
// them when the device was opened (docs/environment.md), and the counters
// of "oversize" blocks: blocks of at least `max_split_size` bytes, which
// are never split and never serve a smaller request (PyTorch's
// max_split_size_mb). Caller-owned; set `struct_size` to
// sizeof(accel_allocator_info_t) first.
typedef struct accel_allocator_info {
  uint32_t struct_size;
  // Whether the allocator caches (ACCEL_ALLOCATOR is not "raw"; the
  // settings below apply to a caching allocator only).
  bool caching;
  // roundup_power2_divisions; 0 when off.
  uint32_t roundup_power2_divisions;
  // max_split_size_mb in bytes; 0 when off (blocks of any size split).
  uint64_t max_split_size;
  // memory_fraction and the cap on reserved bytes it gives (fraction times
  // the device's total memory); 0 when off or not applied.
  double memory_fraction;
  uint64_t memory_limit;
  // garbage_collection_threshold; 0 when off.
  double garbage_collection_threshold;
  // Live buffers whose block is oversize, current and peak.
  uint64_t oversize_allocations;
  uint64_t oversize_allocations_peak;
  // Segments of at least max_split_size bytes the allocator holds, current
  // and peak.
  uint64_t oversize_segments;
  uint64_t oversize_segments_peak;
} accel_allocator_info_t;

// Copies the allocator settings and oversize counters of `device` into
// `*out_info`. The peaks follow accel_device_reset_peak_memory_stats().
// Returns ACCEL_ERROR_INVALID_ARGUMENT for NULL arguments or a
// `struct_size` smaller than this first version of the struct (a larger
// one is fine: the fields this library knows are written).
ACCEL_API accel_status_t accel_device_query_allocator_info(
    accel_device_t* device, accel_allocator_info_t* out_info);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ACCEL_CONTROLS_H_
