// SPDX-License-Identifier: MIT
//
// Streams: one CUstream each, created CU_STREAM_NON_BLOCKING so they never
// wait on (or hold up) the legacy default stream other libraries in the
// process may use. A stream also owns, once needed, the cuBLAS handle its
// GEMMs run on (gemm.c) and the scratch of its sums (ops.c).
#include <stdlib.h>

#include "accel_cuda.h"

// Creates a stream; `priority` NULL: the default priority (cuStreamCreate).
static accel_status_t accel_cuda_stream_open(accel_cuda_device_t* device,
                                             const int* priority,
                                             void** out_stream) {
  *out_stream = NULL;
  accel_cuda_stream_t* stream = calloc(1, sizeof(*stream));
  if (stream == NULL) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              "%s: stream state", device->prefix);
  }
  if (pthread_mutex_init(&stream->mutex, NULL) != 0) {
    free(stream);
    return device->host->fail(device->host, ACCEL_ERROR_INTERNAL,
                              "%s: stream mutex", device->prefix);
  }
  stream->device = device;
  accel_status_t status = accel_cuda_context_push(device, "stream_create");
  if (status == ACCEL_OK) {
    CUresult r = priority == NULL
                     ? device->cu->cuStreamCreate(&stream->stream,
                                                  CU_STREAM_NON_BLOCKING)
                     : device->cu->cuStreamCreateWithPriority(
                           &stream->stream, CU_STREAM_NON_BLOCKING, *priority);
    accel_cuda_context_pop(device);
    if (r != CUDA_SUCCESS) {
      status = accel_cuda_device_fail(
          device, r,
          priority == NULL ? "cuStreamCreate" : "cuStreamCreateWithPriority");
    }
  }
  if (status != ACCEL_OK) {
    pthread_mutex_destroy(&stream->mutex);
    free(stream);
    return status;
  }
  *out_stream = stream;
  return ACCEL_OK;
}

accel_status_t accel_cuda_stream_create(void* device_ptr,
                                        accel_stream_flags_t flags,
                                        void** out_stream) {
  (void)flags;  // none defined yet
  return accel_cuda_stream_open(device_ptr, NULL, out_stream);
}

accel_status_t accel_cuda_stream_priority_range(void* device_ptr,
                                                int32_t* out_least,
                                                int32_t* out_greatest) {
  accel_cuda_device_t* device = device_ptr;
  *out_least = *out_greatest = 0;
  accel_status_t status = accel_cuda_context_push(device, "priority_range");
  if (status != ACCEL_OK) return status;
  int least = 0, greatest = 0;
  CUresult r = device->cu->cuCtxGetStreamPriorityRange(&least, &greatest);
  accel_cuda_context_pop(device);
  if (r != CUDA_SUCCESS) {
    return accel_cuda_device_fail(device, r, "cuCtxGetStreamPriorityRange");
  }
  *out_least = least;
  *out_greatest = greatest;
  return ACCEL_OK;
}

accel_status_t accel_cuda_stream_create_priority(void* device_ptr,
                                                 accel_stream_flags_t flags,
                                                 int32_t priority,
                                                 void** out_stream) {
  (void)flags;
  int value = priority;  // the driver clamps it too
  return accel_cuda_stream_open(device_ptr, &value, out_stream);
}

// cuLaunchHostFunc: the driver runs `fn` on a thread of its own once the
// stream reaches it, and not at all after a fault in the context.
accel_status_t accel_cuda_launch_host_func(void* stream_ptr,
                                           void (*fn)(void* user), void* user) {
  accel_cuda_stream_t* stream = stream_ptr;
  accel_cuda_device_t* device = stream->device;
  accel_status_t status = accel_cuda_context_push(device, "host_func");
  if (status != ACCEL_OK) return status;
  CUresult r = device->cu->cuLaunchHostFunc(stream->stream, fn, user);
  accel_cuda_context_pop(device);
  if (r != CUDA_SUCCESS) {
    return accel_cuda_device_fail(device, r, "cuLaunchHostFunc");
  }
  return ACCEL_OK;
}

void accel_cuda_stream_destroy(void* stream_ptr) {
  accel_cuda_stream_t* stream = stream_ptr;
  if (stream == NULL) return;
  accel_cuda_device_t* device = stream->device;
  const accel_cuda_driver_t* cu = device->cu;
  if (accel_cuda_context_push(device, "stream_destroy") == ACCEL_OK) {
    // plugin.h: pending work finishes first. The handle and scratch are
    // used by that work, so they go only after it.
    (void)cu->cuStreamSynchronize(stream->stream);
    accel_cuda_gemm_release(stream);
    if (stream->scratch != 0) (void)cu->cuMemFree(stream->scratch);
    (void)cu->cuStreamDestroy(stream->stream);
    accel_cuda_context_pop(device);
  }
  pthread_mutex_destroy(&stream->mutex);
  free(stream);
}

accel_status_t accel_cuda_stream_synchronize(void* stream_ptr) {
  accel_cuda_stream_t* stream = stream_ptr;
  CUresult r = stream->device->cu->cuStreamSynchronize(stream->stream);
  if (r != CUDA_SUCCESS) {
    return accel_cuda_device_fail(stream->device, r, "cuStreamSynchronize");
  }
  return ACCEL_OK;
}

accel_status_t accel_cuda_stream_query(void* stream_ptr, bool* out_done) {
  accel_cuda_stream_t* stream = stream_ptr;
  *out_done = false;
  CUresult r = stream->device->cu->cuStreamQuery(stream->stream);
  if (r == CUDA_ERROR_NOT_READY) return ACCEL_OK;
  if (r != CUDA_SUCCESS) {
    return accel_cuda_device_fail(stream->device, r, "cuStreamQuery");
  }
  *out_done = true;
  return ACCEL_OK;
}

accel_status_t accel_cuda_stream_wait_event(void* stream_ptr, void* event_ptr) {
  accel_cuda_stream_t* stream = stream_ptr;
  const accel_cuda_event_t* event = event_ptr;
  // A CUevent of another device (context) is fine here: the driver
  // orders across devices. A never-recorded event is complete already.
  CUresult r =
      stream->device->cu->cuStreamWaitEvent(stream->stream, event->event, 0);
  if (r != CUDA_SUCCESS) {
    return accel_cuda_device_fail(stream->device, r, "cuStreamWaitEvent");
  }
  return ACCEL_OK;
}
