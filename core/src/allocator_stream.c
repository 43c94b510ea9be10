// SPDX-License-Identifier: MIT
//
// Stream-ordered reuse in the caching allocator (the design is described
// at the top of allocator.c): the streams that used a block, the events
// its free records and the pending list that waits for them, the
// per-stream pools and a graph's private pool, and the public calls
// accel_stream_alloc_buffer and accel_buffer_record_stream.
#include <stdlib.h>

#include "allocator_internal.h"
#include "graph_internal.h"
#include "trace.h"

static accel__block_t* accel__block_of(accel_buffer_t* buffer) {
  return (accel__block_t*)buffer->owner;
}

// ---------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------

static accel_status_t accel__event_get(accel__allocator_t* a, void** out) {
  if (a->event_count > 0) {
    *out = a->events[--a->event_count];
    return ACCEL_OK;
  }
  accel_device_t* d = a->device;
  return d->ops->event_create(d->impl, 0, out);
}

static void accel__event_put(accel__allocator_t* a, void* event) {
  if (a->event_count == a->event_capacity) {
    size_t capacity = a->event_capacity ? a->event_capacity * 2 : 16;
    void** events = realloc(a->events, capacity * sizeof(*events));
    if (events == NULL) {
      a->device->ops->event_destroy(event);
      return;
    }
    a->events = events;
    a->event_capacity = capacity;
  }
  a->events[a->event_count++] = event;
}

// ---------------------------------------------------------------------------
// Pending blocks
// ---------------------------------------------------------------------------

static void accel__pending_unlink(accel__allocator_t* a, accel__block_t* b) {
  if (b->link_prev != NULL) {
    b->link_prev->link_next = b->link_next;
  } else {
    a->pending = b->link_next;
  }
  if (b->link_next != NULL) b->link_next->link_prev = b->link_prev;
  b->link_prev = b->link_next = NULL;
}

// Frees the pending blocks whose events have all completed.
void accel__process_pending(accel__allocator_t* a) {
  const accel_device_ops_t* ops = a->device->ops;
  accel__block_t* next = NULL;
  for (accel__block_t* b = a->pending; b != NULL; b = next) {
    next = b->link_next;
    while (b->events_done < b->event_count) {
      void* event = b->events[b->events_done];
      bool done = false;
      // A failed query means the stream faulted: its work is over.
      if (ops->event_query(event, &done) == ACCEL_OK && !done) break;
      accel__event_put(a, event);
      b->events_done++;
    }
    if (b->events_done < b->event_count) continue;
    accel__pending_unlink(a, b);
    free(b->events);
    b->events = NULL;
    b->event_count = b->events_done = 0;
    accel__block_free(a, b);
  }
}

// ---------------------------------------------------------------------------
// Use tracking and free
// ---------------------------------------------------------------------------

static bool accel__uses_contain(accel__block_t* b, accel_stream_t* stream) {
  for (size_t i = 0; i < ACCEL__USES_INLINE; i++) {
    accel_stream_t* s = atomic_load_explicit(&b->uses[i], memory_order_acquire);
    if (s == stream) return true;
    if (s == NULL) return false;
  }
  return false;
}

static accel_status_t accel__buffer_use_slow(accel__allocator_t* a,
                                             accel__block_t* b,
                                             accel_stream_t* stream) {
  accel_status_t status = ACCEL_OK;
  pthread_mutex_lock(&a->mutex);
  if (accel__uses_contain(b, stream)) goto done;
  for (size_t i = 0; i < b->more_count; i++) {
    if (b->more_uses[i] == stream) goto done;
  }
  for (size_t i = 0; i < ACCEL__USES_INLINE; i++) {
    if (atomic_load_explicit(&b->uses[i], memory_order_relaxed) == NULL) {
      accel__stream_weak_retain(stream);
      atomic_store_explicit(&b->uses[i], stream, memory_order_release);
      goto done;
    }
  }
  if (b->more_count == b->more_capacity) {
    size_t capacity = b->more_capacity ? b->more_capacity * 2 : 8;
    accel_stream_t** more =
        realloc(b->more_uses, capacity * sizeof(accel_stream_t*));
    if (more == NULL) {
      status = accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                           "%s: no host memory to track a buffer's streams",
                           a->device->uri);
      goto done;
    }
    b->more_uses = more;
    b->more_capacity = capacity;
  }
  accel__stream_weak_retain(stream);
  b->more_uses[b->more_count++] = stream;
done:
  pthread_mutex_unlock(&a->mutex);
  return status;
}

accel_status_t accel__buffer_use(accel_buffer_t* buffer,
                                 accel_stream_t* stream) {
  if (buffer->wrapped) return accel__wrapped_use(buffer, stream);
  accel__block_t* b = accel__block_of(buffer);
  if (stream == b->stream || accel__uses_contain(b, stream)) return ACCEL_OK;
  return accel__buffer_use_slow(buffer->device->allocator, b, stream);
}

// Makes `block` wait for the work `stream` has queued so far: records an
// event, or (if that fails) waits for the stream. Caller holds the mutex;
// `stream` is alive and on this device.
static void accel__block_fence(accel__allocator_t* a, accel__block_t* b,
                               accel_stream_t* stream, size_t capacity) {
  const accel_device_ops_t* ops = a->device->ops;
  void* event = NULL;
  if (b->events == NULL && capacity > 0) {
    b->events = malloc(capacity * sizeof(void*));
  }
  if (b->events != NULL && accel__event_get(a, &event) == ACCEL_OK) {
    if (ops->event_record(event, stream->impl) == ACCEL_OK) {
      b->events[b->event_count++] = event;
      return;
    }
    accel__event_put(a, event);
  }
  // No event: fall back to waiting, so reuse is never early.
  (void)ops->stream_synchronize(stream->impl);
}

// Whether the free of `b` must wait for `s`; `owned` skips the stream whose
// own pool the block came from.
static bool accel__needs_fence(const accel__block_t* b, accel_stream_t* s) {
  return s != NULL && !(s == b->stream && b->stream_owned);
}

void accel__allocator_free(accel_buffer_t* buffer) {
  accel_device_t* device = buffer->device;
  accel__allocator_t* a = device->allocator;
  accel__block_t* b = accel__block_of(buffer);
  // The last reference is gone, so no thread adds uses any more: the use
  // list can be read and detached without the mutex.
  accel_stream_t* streams[ACCEL__USES_INLINE + 1];
  size_t n = 0;
  if (b->stream != NULL) streams[n++] = b->stream;
  for (size_t i = 0; i < ACCEL__USES_INLINE; i++) {
    accel_stream_t* s = atomic_load_explicit(&b->uses[i], memory_order_acquire);
    if (s == NULL) break;
    streams[n++] = s;
    atomic_store_explicit(&b->uses[i], NULL, memory_order_relaxed);
  }
  accel_stream_t** more = b->more_uses;
  size_t more_count = b->more_count;
  b->more_uses = NULL;
  b->more_count = b->more_capacity = 0;
  size_t total = n + more_count;
  // Streams of other devices (peer copies read the buffer): wait for them
  // here, outside the mutex, since their events belong to their device.
  for (size_t i = 0; i < total; i++) {
    accel_stream_t* s = i < n ? streams[i] : more[i - n];
    if (s->device != device && accel__stream_try_retain(s)) {
      (void)s->device->ops->stream_synchronize(s->impl);
      accel_stream_release(s);
    }
  }

  pthread_mutex_lock(&a->mutex);
  for (size_t i = 0; i < total; i++) {
    accel_stream_t* s = i < n ? streams[i] : more[i - n];
    // A live count under the mutex keeps the plugin stream valid until we
    // unlock (see the top of allocator.c); a dead stream's work is done.
    if (s->device == device && accel__needs_fence(b, s) &&
        atomic_load(&s->refs) > 0) {
      accel__block_fence(a, b, s, total);
    }
  }
  a->stats.allocated_bytes -= b->size;
  if (accel__oversize(a, b)) a->oversize_allocs--;
  accel__trace_counter(a->device->uri, a->stats.allocated_bytes,
                       a->stats.reserved_bytes);
  a->stats.requested_bytes -= buffer->size;
  b->stream = NULL;
  b->stream_owned = false;
  if (b->event_count > 0) {
    b->state = ACCEL__BLOCK_PENDING;
    b->link_prev = NULL;
    b->link_next = a->pending;
    if (a->pending != NULL) a->pending->link_prev = b;
    a->pending = b;
  } else {
    free(b->events);
    b->events = NULL;
    accel__block_free(a, b);
  }
  pthread_mutex_unlock(&a->mutex);

  for (size_t i = 0; i < total; i++) {
    accel__stream_weak_release(i < n ? streams[i] : more[i - n]);
  }
  free(more);
}

// ---------------------------------------------------------------------------
// Stream pools
// ---------------------------------------------------------------------------

void accel__allocator_stream_dying(accel_stream_t* stream) {
  accel__allocator_t* a = stream->device->allocator;
  pthread_mutex_lock(&a->mutex);
  if (stream->pool != NULL) stream->pool->alive = false;
  pthread_mutex_unlock(&a->mutex);
}

// Makes the blocks of `pool` everyone's: takes them out of the pool's bins
// (the bins are found through the segment's pool), re-homes the segments
// to the device-wide pool, bins them again and unlinks `pool`, which the
// caller frees. Mutex held.
static void accel__pool_dissolve(accel__allocator_t* a, accel__pool_t* pool) {
  accel__block_t* moved = NULL;
  accel__bins_t* bins[2] = {&pool->small, &pool->large};
  for (int k = 0; k < 2; k++) {
    for (int i = accel__bins_next(bins[k], 0); i >= 0;
         i = accel__bins_next(bins[k], 0)) {
      accel__block_t* b = bins[k]->heads[i];
      accel__bins_remove(a, b);
      b->link_next = moved;
      moved = b;
    }
  }
  for (accel__segment_t* s = a->segments; s != NULL; s = s->next) {
    if (s->pool == pool) s->pool = &a->global;
  }
  while (moved != NULL) {
    accel__block_t* b = moved;
    moved = b->link_next;
    b->link_next = NULL;
    accel__bins_insert(a, b);
  }
  accel__pool_t** link = &a->pools;
  while (*link != pool) link = &(*link)->next;
  *link = pool->next;
}

void accel__allocator_stream_dead(accel_stream_t* stream) {
  accel__allocator_t* a = stream->device->allocator;
  pthread_mutex_lock(&a->mutex);
  accel__pool_t* pool = stream->pool;
  if (pool != NULL) {
    // The stream's work is done: its blocks are everyone's now.
    accel__pool_dissolve(a, pool);
    stream->pool = NULL;
  }
  pthread_mutex_unlock(&a->mutex);
  free(pool);
}

// ---------------------------------------------------------------------------
// Graph pools (graph.c): a pool that is the capture stream's own pool
// during a capture, so the capture's stream-ordered allocations (and GEMM
// workspaces) come from it, are reused in stream order within the capture,
// and never fall back to, or return to, the device-wide pool while the
// graph lives.
// ---------------------------------------------------------------------------

accel__pool_t* accel__allocator_pool_begin(accel_stream_t* stream) {
  accel__allocator_t* a = stream->device->allocator;
  accel__pool_t* pool = calloc(1, sizeof(*pool));
  if (pool == NULL) return NULL;
  pool->stream = stream;  // its blocks are the capture stream's own
  pool->alive = true;
  pool->idle = -1;
  pool->graph = true;
  pthread_mutex_lock(&a->mutex);
  pool->saved = stream->pool;
  stream->pool = pool;
  pool->next = a->pools;
  a->pools = pool;
  pthread_mutex_unlock(&a->mutex);
  return pool;
}

void accel__allocator_pool_end(accel_stream_t* stream, accel__pool_t* pool) {
  accel__allocator_t* a = stream->device->allocator;
  pthread_mutex_lock(&a->mutex);
  stream->pool = pool->saved;
  pool->saved = NULL;
  pool->stream = NULL;  // the blocks hold their stream themselves
  pthread_mutex_unlock(&a->mutex);
}

void accel__allocator_pool_release(accel_device_t* device,
                                   accel__pool_t* pool) {
  accel__allocator_t* a = device->allocator;
  pthread_mutex_lock(&a->mutex);
  accel__segment_t* next = NULL;
  for (accel__segment_t* s = a->segments; s != NULL; s = next) {
    next = s->next;
    if (s->pool != pool) continue;
    accel__block_t* first = s->first;
    if (s->raw && first->state == ACCEL__BLOCK_FREE && first->next == NULL) {
      accel__bins_remove(a, first);  // raw: kept only for the graph
      accel__segment_release(a, s);
      continue;
    }
    // A live block is no longer from its stream's own pool: its free must
    // wait for that stream's work like any other block's.
    for (accel__block_t* b = first; b != NULL; b = b->next) {
      b->stream_owned = false;
    }
  }
  accel__pool_dissolve(a, pool);
  pthread_mutex_unlock(&a->mutex);
  free(pool);
}

uint64_t accel__allocator_pool_bytes(accel_device_t* device,
                                     const accel__pool_t* pool) {
  accel__allocator_t* a = device->allocator;
  uint64_t bytes = 0;
  pthread_mutex_lock(&a->mutex);
  for (accel__segment_t* s = a->segments; s != NULL; s = s->next) {
    if (s->pool == pool) bytes += s->size;
  }
  pthread_mutex_unlock(&a->mutex);
  return bytes;
}

bool accel__allocator_in_pool(const accel_buffer_t* buffer,
                              const accel__pool_t* pool) {
  if (buffer->wrapped) return false;
  accel__allocator_t* a = buffer->device->allocator;
  pthread_mutex_lock(&a->mutex);
  bool in = accel__block_of((accel_buffer_t*)buffer)->segment->pool == pool;
  pthread_mutex_unlock(&a->mutex);
  return in;
}

// ---------------------------------------------------------------------------
// Public API: stream-ordered allocation
// ---------------------------------------------------------------------------

accel_status_t accel_stream_alloc_buffer(accel_stream_t* stream, size_t size,
                                         accel_buffer_t** out_buffer) {
  ACCEL__TRACE_API("accel_stream_alloc_buffer");
  if (out_buffer != NULL) *out_buffer = NULL;
  if (stream == NULL || out_buffer == NULL || size == 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_stream_alloc_buffer: stream, a non-zero size "
                       "and out_buffer are required");
  }
  // During a capture the stream's pool is the graph's (graph.c).
  accel_status_t status =
      accel__allocator_alloc(stream->device, stream, size, out_buffer);
  if (status == ACCEL_OK && accel__capturing(stream)) {
    accel__graph_note_alloc(stream, *out_buffer);
  }
  return status;
}

accel_status_t accel_buffer_record_stream(accel_buffer_t* buffer,
                                          accel_stream_t* stream) {
  if (buffer == NULL || stream == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_buffer_record_stream: buffer and stream are "
                       "required");
  }
  accel_status_t live =
      accel__check_buffer("accel_buffer_record_stream", "given", buffer);
  if (live != ACCEL_OK) return live;
  if (buffer->device->plugin != stream->device->plugin) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_buffer_record_stream: the buffer is on %s but "
                       "the stream is on %s, another backend",
                       buffer->device->uri, stream->device->uri);
  }
  return accel__buffer_use(buffer, stream);
}
