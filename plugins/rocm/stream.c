// SPDX-License-Identifier: MIT
//
// Streams: one non-blocking hipStream_t each (so the null stream, used for
// "now" copies, never serialises with them), plus a small device scratch
// the sum kernels use in stream order.
#include <stdlib.h>

#include "accel_rocm.h"
#include "kernels/ops_impl.h"

hipStream_t accel_rocm_stream_handle(void* stream) {
  return stream != NULL ? ((accel_rocm_stream_t*)stream)->stream : NULL;
}

// Creates a stream; `priority` NULL: the default (hipStreamCreateWithFlags).
static accel_status_t accel_rocm_stream_open(accel_rocm_device_t* device,
                                             const int* priority,
                                             void** out_stream) {
  const accel_rocm_runtime_t* rt = device->rt;
  *out_stream = NULL;
  accel_rocm_stream_t* stream = calloc(1, sizeof(*stream));
  if (stream == NULL) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              "%s: stream state", device->prefix);
  }
  if (accel_rocm_blas_slot_init(&stream->blas) != ACCEL_OK) {
    free(stream);
    return device->host->fail(device->host, ACCEL_ERROR_INTERNAL,
                              "%s: stream mutex", device->prefix);
  }
  stream->device = device;
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  if (status != ACCEL_OK) {
    pthread_mutex_destroy(&stream->blas.lock);
    free(stream);
    return status;
  }
  const char* what = priority == NULL ? "hipStreamCreateWithFlags"
                                      : "hipStreamCreateWithPriority";
  hipError_t err =
      priority == NULL
          ? rt->hipStreamCreateWithFlags(&stream->stream, hipStreamNonBlocking)
          : rt->hipStreamCreateWithPriority(&stream->stream,
                                            hipStreamNonBlocking, *priority);
  if (err == hipSuccess) {
    what = "hipMalloc(stream scratch)";
    err = rt->hipMalloc(&stream->scratch, ACCEL_ROCM_SUM_SCRATCH);
    if (err != hipSuccess) rt->hipStreamDestroy(stream->stream);
  }
  if (err != hipSuccess) accel_rocm_clear_error(rt);
  accel_rocm_device_leave(device, saved);
  if (err != hipSuccess) {
    pthread_mutex_destroy(&stream->blas.lock);
    free(stream);
    return accel_rocm_device_fail(device, err, what);
  }
  *out_stream = stream;
  return ACCEL_OK;
}

accel_status_t accel_rocm_stream_create(void* device_ptr,
                                        accel_stream_flags_t flags,
                                        void** out_stream) {
  (void)flags;  // none defined
  return accel_rocm_stream_open(device_ptr, NULL, out_stream);
}

accel_status_t accel_rocm_stream_priority_range(void* device_ptr,
                                                int32_t* out_least,
                                                int32_t* out_greatest) {
  accel_rocm_device_t* device = device_ptr;
  *out_least = *out_greatest = 0;
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  if (status != ACCEL_OK) return status;
  int least = 0, greatest = 0;
  hipError_t err =
      device->rt->hipDeviceGetStreamPriorityRange(&least, &greatest);
  if (err != hipSuccess) accel_rocm_clear_error(device->rt);
  accel_rocm_device_leave(device, saved);
  if (err != hipSuccess) {
    return accel_rocm_device_fail(device, err,
                                  "hipDeviceGetStreamPriorityRange");
  }
  *out_least = least;
  *out_greatest = greatest;
  return ACCEL_OK;
}

accel_status_t accel_rocm_stream_create_priority(void* device_ptr,
                                                 accel_stream_flags_t flags,
                                                 int32_t priority,
                                                 void** out_stream) {
  (void)flags;
  int value = priority;  // HIP clamps it too
  return accel_rocm_stream_open(device_ptr, &value, out_stream);
}

// hipLaunchHostFunc: the runtime calls `fn` on a thread of its own once
// the stream reaches it.
accel_status_t accel_rocm_launch_host_func(void* stream_ptr,
                                           void (*fn)(void* user), void* user) {
  accel_rocm_stream_t* stream = stream_ptr;
  accel_rocm_device_t* device = stream->device;
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  if (status != ACCEL_OK) return status;
  hipError_t err = device->rt->hipLaunchHostFunc(stream->stream, fn, user);
  if (err != hipSuccess) accel_rocm_clear_error(device->rt);
  accel_rocm_device_leave(device, saved);
  if (err != hipSuccess) {
    return accel_rocm_device_fail(device, err, "hipLaunchHostFunc");
  }
  return ACCEL_OK;
}

void accel_rocm_stream_destroy(void* stream_ptr) {
  accel_rocm_stream_t* stream = stream_ptr;
  if (stream == NULL) return;
  accel_rocm_device_t* device = stream->device;
  const accel_rocm_runtime_t* rt = device->rt;
  // The contract: destroy after pending work. hipStreamDestroy does not
  // wait, and the scratch may still be in use, so synchronise first.
  int saved = 0;
  if (accel_rocm_device_enter(device, &saved) == ACCEL_OK) {
    rt->hipStreamSynchronize(stream->stream);
    accel_rocm_blas_slot_deinit(device, &stream->blas, true);
    rt->hipFree(stream->scratch);
    rt->hipStreamDestroy(stream->stream);
    accel_rocm_device_leave(device, saved);
  } else {
    pthread_mutex_destroy(&stream->blas.lock);
  }
  free(stream);
}

accel_status_t accel_rocm_stream_synchronize(void* stream_ptr) {
  accel_rocm_stream_t* stream = stream_ptr;
  hipError_t err = stream->device->rt->hipStreamSynchronize(stream->stream);
  return err == hipSuccess ? ACCEL_OK
                           : accel_rocm_device_fail(stream->device, err,
                                                    "hipStreamSynchronize");
}

accel_status_t accel_rocm_stream_query(void* stream_ptr, bool* out_done) {
  accel_rocm_stream_t* stream = stream_ptr;
  *out_done = false;
  hipError_t err = stream->device->rt->hipStreamQuery(stream->stream);
  if (err == hipErrorNotReady) return ACCEL_OK;
  if (err != hipSuccess) {
    return accel_rocm_device_fail(stream->device, err, "hipStreamQuery");
  }
  *out_done = true;
  return ACCEL_OK;
}

accel_status_t accel_rocm_stream_wait_event(void* stream_ptr, void* event_ptr) {
  accel_rocm_stream_t* stream = stream_ptr;
  accel_rocm_event_t* event = event_ptr;
  if (!atomic_load(&event->recorded)) return ACCEL_OK;  // already complete
  hipError_t err =
      stream->device->rt->hipStreamWaitEvent(stream->stream, event->event, 0);
  return err == hipSuccess ? ACCEL_OK
                           : accel_rocm_device_fail(stream->device, err,
                                                    "hipStreamWaitEvent");
}
