// SPDX-License-Identifier: MIT
//
// Streams: one CUstream each, created CU_STREAM_NON_BLOCKING so they never
// wait on (or hold up) the legacy default stream other libraries in the
// process may use. A stream also owns, once needed, the cuBLAS handle its
// GEMMs run on (gemm.c) and the scratch of its sums (ops.c).
#include <stdlib.h>

#include "accel_cuda.h"

accel_status_t accel_cuda_stream_create(void* device_ptr,
                                        accel_stream_flags_t flags,
                                        void** out_stream) {
  accel_cuda_device_t* device = device_ptr;
  (void)flags;  // none defined yet
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
    CUresult r =
        device->cu->cuStreamCreate(&stream->stream, CU_STREAM_NON_BLOCKING);
    accel_cuda_context_pop(device);
    if (r != CUDA_SUCCESS) {
      status = accel_cuda_device_fail(device, r, "cuStreamCreate");
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
