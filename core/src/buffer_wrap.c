// SPDX-License-Identifier: MIT
//
// Wrapped buffers: memory another library owns, adopted as an accel buffer
// through the plugin's mem_wrap (ABI 1.3). The core never frees such
// memory; when the last reference goes it waits for the streams that used
// the buffer, unwraps the plugin handle and calls the owner's `release`.
//
// A wrapped buffer's handle (handle.c) has a record of this file as its
// `owner`, not an allocator block: the owner's release callback and the
// list of the streams that used the buffer, held by weak references as the
// allocator's blocks hold them. Released records wait on a free list for
// the next wrap; the handle itself is retired by accel_buffer_release, so
// a double release is caught exactly as for allocator buffers.
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"

typedef struct accel__wrapped {
  void (*release)(void* user_data);
  void* user_data;
  pthread_mutex_t mutex;  // guards `uses`
  accel_stream_t** uses;  // streams that enqueued work on the buffer
  size_t use_count;
  size_t use_capacity;
  struct accel__wrapped* next_free;
} accel__wrapped_t;

static pthread_mutex_t accel__wrapped_free_mutex = PTHREAD_MUTEX_INITIALIZER;
static accel__wrapped_t* accel__wrapped_free_list;

static accel__wrapped_t* accel__wrapped_get(void) {
  pthread_mutex_lock(&accel__wrapped_free_mutex);
  accel__wrapped_t* w = accel__wrapped_free_list;
  if (w != NULL) accel__wrapped_free_list = w->next_free;
  pthread_mutex_unlock(&accel__wrapped_free_mutex);
  if (w != NULL) return w;
  w = calloc(1, sizeof(*w));
  if (w != NULL && pthread_mutex_init(&w->mutex, NULL) != 0) {
    free(w);
    w = NULL;
  }
  return w;
}

static void accel__wrapped_put(accel__wrapped_t* w) {
  pthread_mutex_lock(&accel__wrapped_free_mutex);
  w->next_free = accel__wrapped_free_list;
  accel__wrapped_free_list = w;
  pthread_mutex_unlock(&accel__wrapped_free_mutex);
}

accel_status_t accel_buffer_wrap(accel_device_t* device, uint64_t address,
                                 size_t size, void (*release)(void* user_data),
                                 void* user_data, accel_buffer_t** out_buffer) {
  if (out_buffer != NULL) *out_buffer = NULL;
  if (device == NULL || out_buffer == NULL || size == 0 || address == 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_buffer_wrap: device, a non-zero address, a "
                       "non-zero size and out_buffer are required");
  }
  accel__wrapped_t* w = accel__wrapped_get();
  accel_buffer_t* buffer = accel__handle_new(sizeof(*buffer));
  if (w == NULL || buffer == NULL) {
    if (w != NULL) accel__wrapped_put(w);
    accel__handle_free(buffer);
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                       "accel_buffer_wrap: no host memory for the handle");
  }
  void* mem = NULL;
  accel_status_t status =
      device->ops->mem_wrap(device->impl, address, size, &mem);
  if (status != ACCEL_OK) {
    status = accel__fail_plugin(status, "accel_buffer_wrap", device);
    accel__wrapped_put(w);
    accel__handle_free(buffer);
    return status;
  }
  w->release = release;
  w->user_data = user_data;
  w->use_count = 0;
  w->next_free = NULL;
  buffer->device = device;
  buffer->impl = mem;
  buffer->base = 0;
  buffer->size = size;
  buffer->wrapped = true;
  buffer->owner = w;
  accel_device_retain(device);
  atomic_store_explicit(&buffer->refs, 1, memory_order_release);
  *out_buffer = buffer;
  return ACCEL_OK;
}

accel_status_t accel__wrapped_use(accel_buffer_t* buffer,
                                  accel_stream_t* stream) {
  accel__wrapped_t* w = buffer->owner;
  accel_status_t status = ACCEL_OK;
  pthread_mutex_lock(&w->mutex);
  for (size_t i = 0; i < w->use_count; i++) {
    if (w->uses[i] == stream) goto done;
  }
  if (w->use_count == w->use_capacity) {
    size_t capacity = w->use_capacity ? w->use_capacity * 2 : 4;
    accel_stream_t** uses = realloc(w->uses, capacity * sizeof(*uses));
    if (uses == NULL) {
      status = accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                           "%s: no host memory to track a wrapped buffer's "
                           "streams",
                           buffer->device->uri);
      goto done;
    }
    w->uses = uses;
    w->use_capacity = capacity;
  }
  accel__stream_weak_retain(stream);
  w->uses[w->use_count++] = stream;
done:
  pthread_mutex_unlock(&w->mutex);
  return status;
}

void accel__wrapped_free(accel_buffer_t* buffer) {
  accel__wrapped_t* w = buffer->owner;
  accel_device_t* device = buffer->device;
  // The last reference is gone, so no thread adds uses any more. A stream
  // whose count already reached zero has finished its work.
  for (size_t i = 0; i < w->use_count; i++) {
    accel_stream_t* s = w->uses[i];
    if (accel__stream_try_retain(s)) {
      (void)s->device->ops->stream_synchronize(s->impl);
      accel_stream_release(s);
    }
    accel__stream_weak_release(s);
  }
  w->use_count = 0;
  device->ops->mem_unwrap(device->impl, buffer->impl);
  buffer->impl = NULL;
  void (*release)(void*) = w->release;
  void* user_data = w->user_data;
  w->release = NULL;
  w->user_data = NULL;
  accel__wrapped_put(w);
  if (release != NULL) release(user_data);
}
