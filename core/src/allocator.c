// SPDX-License-Identifier: MIT
//
// The device-agnostic caching allocator (architecture decision 10), one per
// device. Modelled on PyTorch's CUDA caching allocator, done once in the
// core so every plugin gets it.
//
// Memory comes from the plugin in segments: 2 MiB segments shared by small
// requests (<= 1 MiB) and segments of their own, rounded up to 2 MiB, for
// large ones. Requests are rounded up to 512 bytes, or to the device's
// `buffer_offset_alignment` where that is larger (the least common
// multiple of the two; see accel__unit): every block then starts at a
// multiple of the unit, because a segment starts at offset 0 and is cut
// only at request sizes. A segment is cut into
// blocks that stay in address order; a free block is split when the rest is
// worth keeping (>= 512 bytes in a small segment, > 1 MiB in a large one)
// and merged with free neighbours when it is freed.
//
// Free blocks live in size bins (`accel__bins_t`): 64 exact bins of 512-byte
// steps, then 32 bins per power of two, each bin sorted by size, and a
// two-level bitmap of the non-empty bins. A best-fit search looks at the
// request's own bin and then takes the head of the next non-empty one, so
// it is O(1) apart from the walk inside one bin (bins below 32 KiB hold one
// size only). Every device has a device-wide pool of bins, and every stream
// that allocates has its own.
//
// Stream-ordered reuse. The core sees every stream operation on a buffer,
// so a block knows its allocation stream and every other stream that used
// it (accel__buffer_use). When it is freed:
// - streams whose work may still touch it get a plugin event recorded
//   (events come from a per-device cache) and the block waits, off every
//   bin, until they complete: it is "pending" and is polled, never waited
//   for, when a search misses, on empty-cache and on OOM;
// - the exception is the stream the block was allocated on when it came
//   from that stream's own pool: it goes straight back there, because later
//   work on that stream runs after the work already queued. Other streams
//   get such blocks only once the stream is idle (empty-cache, OOM) or
//   destroyed (its pool then joins the device-wide one).
// Deciding whether a stream is alive needs no reference on it: the last
// release of a stream calls accel__allocator_stream_dying(), which takes
// this mutex, before the plugin stream is destroyed, so a stream whose
// count is non-zero under the mutex stays valid until the mutex is dropped.
// Buffers hold weak references (stream.c) so the struct outlives the stream.
//
// A device with ACCEL_DEVICE_CAP_SEPARATE_ALLOCATIONS (OpenCL, where
// concurrent use of a buffer and its sub-buffers is undefined even on
// disjoint bytes) gets one block per segment: a small segment is the
// rounded request rather than 2 MiB, nothing is split, and a cached block
// serves a request of at least half its size, so two buffers never share
// a plugin allocation and the waste stays below half.
//
// ACCEL_ALLOCATOR=raw turns caching off: each buffer is one plugin
// allocation of exactly its size, returned to the plugin as soon as it is
// free and no stream can still use it. Statistics count the same way.
//
// One mutex per device guards everything here; the cache-hit path does no
// plugin call and no malloc.
//
// The allocator's files and what they share: allocator_internal.h.
#include <stdlib.h>
#include <string.h>

#include "allocator_internal.h"
#include "trace.h"

// The block size for a request of `size` bytes (PyTorch's round_size):
// the unit, or with roundup_power2_divisions N the next of N equal steps
// between two powers of two (1100 KiB with N = 4 gives 1280 KiB) once the
// request is above N * 512 bytes, so that sizes that creep up in small
// steps share blocks. Callers have ruled out sizes within 2 MiB of
// SIZE_MAX.
static size_t accel__round_request(const accel__allocator_t* a, size_t size) {
  if (!a->caching) return size;
  size_t n = a->conf.roundup_divisions;
  if (n > 1 && size > ACCEL__ROUND * n && size <= SIZE_MAX / 2) {
    size_t floor = (size_t)1 << (63 - __builtin_clzll((uint64_t)size));
    size_t step = floor / n;  // n is a power of two, at most 64
    size_t rest = size & (step - 1);
    if (rest != 0) size += step - rest;
  }
  return accel__round_up(size, a->unit);
}

// ---------------------------------------------------------------------------
// Size bins
// ---------------------------------------------------------------------------

static uint32_t accel__bin_index(size_t size) {
  uint64_t u = (uint64_t)size / ACCEL__ROUND;
  if (u < ACCEL__BIN_EXACT) return (uint32_t)u;
  uint32_t fl = 63u - (uint32_t)__builtin_clzll(u);
  uint32_t sl = (uint32_t)(u >> (fl - 5u)) & 31u;
  return ACCEL__BIN_EXACT + (fl - 6u) * 32u + sl;
}

// First non-empty bin at or after `index`, or -1.
int accel__bins_next(const accel__bins_t* bins, uint32_t index) {
  uint32_t w = index / 64u;
  if (w >= ACCEL__BIN_WORDS) return -1;
  uint64_t m = bins->map[w] & (~(uint64_t)0 << (index % 64u));
  if (m != 0) return (int)(w * 64u + (uint32_t)__builtin_ctzll(m));
  uint64_t s = w + 1u < 64u ? bins->summary & (~(uint64_t)0 << (w + 1u)) : 0;
  if (s == 0) return -1;
  w = (uint32_t)__builtin_ctzll(s);
  return (int)(w * 64u + (uint32_t)__builtin_ctzll(bins->map[w]));
}

static accel__bins_t* accel__bins_of(accel__segment_t* segment) {
  return segment->small ? &segment->pool->small : &segment->pool->large;
}

void accel__bins_insert(accel__allocator_t* a, accel__block_t* b) {
  accel__bins_t* bins = accel__bins_of(b->segment);
  uint32_t i = accel__bin_index(b->size);
  accel__block_t* prev = NULL;
  accel__block_t* at = bins->heads[i];
  while (at != NULL && at->size < b->size) {  // sorted; LIFO among equals
    prev = at;
    at = at->link_next;
  }
  b->bin = i;
  b->link_prev = prev;
  b->link_next = at;
  if (at != NULL) at->link_prev = b;
  if (prev != NULL) {
    prev->link_next = b;
  } else {
    bins->heads[i] = b;
  }
  bins->map[i / 64u] |= (uint64_t)1 << (i % 64u);
  bins->summary |= (uint64_t)1 << (i / 64u);
  b->split_counted = b->prev != NULL || b->next != NULL;
  if (b->split_counted) a->stats.inactive_split_bytes += b->size;
}

void accel__bins_remove(accel__allocator_t* a, accel__block_t* b) {
  accel__bins_t* bins = accel__bins_of(b->segment);
  uint32_t i = b->bin;
  if (b->link_prev != NULL) {
    b->link_prev->link_next = b->link_next;
  } else {
    bins->heads[i] = b->link_next;
  }
  if (b->link_next != NULL) b->link_next->link_prev = b->link_prev;
  b->link_prev = b->link_next = NULL;
  if (bins->heads[i] == NULL) {
    bins->map[i / 64u] &= ~((uint64_t)1 << (i % 64u));
    if (bins->map[i / 64u] == 0) bins->summary &= ~((uint64_t)1 << (i / 64u));
  }
  if (b->split_counted) a->stats.inactive_split_bytes -= b->size;
  b->split_counted = false;
}

// Smallest free block of at least `size` bytes, or NULL.
static accel__block_t* accel__bins_find(accel__bins_t* bins, size_t size) {
  uint32_t i = accel__bin_index(size);
  for (accel__block_t* b = bins->heads[i]; b != NULL; b = b->link_next) {
    if (b->size >= size) return b;
  }
  int next = accel__bins_next(bins, i + 1u);
  return next < 0 ? NULL : bins->heads[next];
}

// ---------------------------------------------------------------------------
// Block records
// ---------------------------------------------------------------------------

// Recycled records are clean: a block's use list, events and stream are
// cleared when it stops being active, so only the geometry is stale and
// the caller sets it.
accel__block_t* accel__node_get(accel__allocator_t* a) {
  accel__block_t* b = a->spare;
  if (b == NULL) return calloc(1, sizeof(*b));
  a->spare = b->link_next;
  a->spare_count--;
  b->link_prev = b->link_next = NULL;
  return b;
}

void accel__node_put(accel__allocator_t* a, accel__block_t* b) {
  if (a->spare_count >= ACCEL__SPARE_MAX) {
    free(b);
    return;
  }
  b->link_next = a->spare;
  a->spare = b;
  a->spare_count++;
}

// ---------------------------------------------------------------------------
// Blocks
// ---------------------------------------------------------------------------

// Cuts `b` (out of the bins) down to `size` bytes when the rest is worth a
// block of its own; the rest goes into the bins.
static void accel__block_split(accel__allocator_t* a, accel__block_t* b,
                               size_t size) {
  accel__segment_t* s = b->segment;
  size_t rest = b->size - size;
  if (s->raw || a->whole ||
      (s->small ? rest < a->unit : rest <= ACCEL__SMALL_REQUEST))
    return;
  // max_split_size: an oversize request keeps its whole block.
  if (!s->small && size >= a->max_split) return;
  accel__block_t* r = accel__node_get(a);
  if (r == NULL) return;  // keep the block whole
  r->segment = s;
  r->split_counted = false;
  r->offset = b->offset + size;
  r->size = rest;
  r->state = ACCEL__BLOCK_FREE;
  r->prev = b;
  r->next = b->next;
  if (b->next != NULL) b->next->prev = r;
  b->next = r;
  b->size = size;
  accel__bins_insert(a, r);
}

// Makes a no longer used block free: merges it with free neighbours and
// bins it, or gives a raw segment back at once.
void accel__block_free(accel__allocator_t* a, accel__block_t* b) {
  accel__segment_t* s = b->segment;
  b->state = ACCEL__BLOCK_FREE;
  a->stats.active_blocks--;
  accel__block_t* p = b->prev;
  if (p != NULL && p->state == ACCEL__BLOCK_FREE) {
    accel__bins_remove(a, p);
    b->offset = p->offset;
    b->size += p->size;
    b->prev = p->prev;
    if (b->prev != NULL) b->prev->next = b;
    accel__node_put(a, p);
  }
  accel__block_t* n = b->next;
  if (n != NULL && n->state == ACCEL__BLOCK_FREE) {
    accel__bins_remove(a, n);
    b->size += n->size;
    b->next = n->next;
    if (b->next != NULL) b->next->prev = b;
    accel__node_put(a, n);
  }
  if (b->prev == NULL) s->first = b;
  if (s->raw && !s->pool->graph) {
    accel__segment_release(a, s);
  } else {
    accel__bins_insert(a, b);
  }
}

// ---------------------------------------------------------------------------
// Allocation
// ---------------------------------------------------------------------------

static accel__pool_t* accel__stream_pool(accel__allocator_t* a,
                                         accel_stream_t* stream) {
  if (stream->pool != NULL) return stream->pool;
  accel__pool_t* pool = calloc(1, sizeof(*pool));
  if (pool == NULL) return &a->global;  // share the device-wide pool
  pool->stream = stream;
  pool->alive = true;
  pool->idle = -1;
  pool->next = a->pools;
  a->pools = pool;
  stream->pool = pool;
  return pool;
}

// With separate allocations a cached block, which is never split, serves
// only a request of at least half its size. Then
// max_split_size (PyTorch's get_free_block): a request below it never
// takes (and splits) an oversize cached block, and an oversize request
// takes a cached block only if that wastes less than 20 MiB. `b` is the
// smallest fitting block of its bins, so when it fails, every larger one
// there fails too.
static accel__block_t* accel__split_rule(const accel__allocator_t* a,
                                         accel__block_t* b, size_t size) {
  if (b != NULL && a->whole && b->size / 2 > size) return NULL;
  if (b == NULL || b->segment->small) return b;
  if (size < a->max_split) return b->size < a->max_split ? b : NULL;
  return b->size - size < ACCEL__OVERSIZE_SLACK ? b : NULL;
}

static accel__block_t* accel__find(accel__allocator_t* a, accel__pool_t* pool,
                                   size_t size, bool small) {
  accel__block_t* b = accel__split_rule(
      a, accel__bins_find(small ? &pool->small : &pool->large, size), size);
  if (b == NULL && pool != &a->global && !pool->graph) {
    b = accel__split_rule(
        a, accel__bins_find(small ? &a->global.small : &a->global.large, size),
        size);
  }
  return b;
}

// Refuses a request above the device's largest single allocation (ABI
// 1.3 max_alloc_size) before any plugin call: no cache flush can make it
// fit, so an out-of-memory message about free memory would mislead.
static accel_status_t accel__check_max_alloc(const accel__allocator_t* a,
                                             size_t size) {
  uint64_t most = a->device->max_alloc_size;
  size_t rounded = accel__round_request(a, size);
  if (most == 0 || (size <= most && rounded <= most)) return ACCEL_OK;
  char req[32], max[32];
  accel__format_bytes(req, sizeof(req), size);
  accel__format_bytes(max, sizeof(max), most);
  return accel__fail(ACCEL_ERROR_OUT_OF_DEVICE_MEMORY,
                     "%s: cannot allocate %s (%zu bytes%s): the device's "
                     "largest single allocation is %s (%llu bytes, "
                     "max_alloc_size)",
                     a->device->uri, req, size,
                     size <= most ? ", rounded up to the allocation unit" : "",
                     max, (unsigned long long)most);
}

accel_status_t accel__allocator_alloc(accel_device_t* device,
                                      accel_stream_t* stream, size_t size,
                                      accel_buffer_t** out_buffer) {
  accel__allocator_t* a = device->allocator;
  *out_buffer = NULL;
  if (size > SIZE_MAX - ACCEL__LARGE_ROUND) {
    char req[32];
    accel__format_bytes(req, sizeof(req), size);
    return accel__fail(ACCEL_ERROR_OUT_OF_DEVICE_MEMORY,
                       "%s: out of device memory: tried to allocate %s (%zu "
                       "bytes), more than any device holds",
                       device->uri, req, size);
  }
  accel_status_t limit = accel__check_max_alloc(a, size);
  if (limit != ACCEL_OK) return limit;
  accel_buffer_t* buffer = accel__handle_new(sizeof(*buffer));
  if (buffer == NULL) {
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                       "%s: no host memory for a buffer handle", device->uri);
  }
  size_t rounded = accel__round_request(a, size);
  bool small = rounded <= ACCEL__SMALL_REQUEST;
  accel__block_t* b = NULL;
  pthread_mutex_lock(&a->mutex);
  accel__pool_t* pool = &a->global;
  if (a->caching) {
    if (stream != NULL) pool = accel__stream_pool(a, stream);
    b = accel__find(a, pool, rounded, small);
    if (b == NULL && a->pending != NULL) {
      accel__process_pending(a);
      b = accel__find(a, pool, rounded, small);
    }
  } else if (a->pending != NULL) {
    accel__process_pending(a);
  }
  if (b != NULL) {
    accel__bins_remove(a, b);
    a->stats.cache_hits++;
  } else {
    accel_status_t status =
        accel__segment_new(a, pool, size, rounded, small, &b);
    if (status != ACCEL_OK) {
      pthread_mutex_unlock(&a->mutex);
      accel__handle_free(buffer);
      return status;
    }
    a->stats.cache_misses++;
  }
  accel__block_split(a, b, rounded);
  b->state = ACCEL__BLOCK_ACTIVE;
  b->stream = stream;
  b->stream_owned = stream != NULL && b->segment->pool->stream == stream;
  a->stats.allocated_bytes += b->size;
  accel__trace_counter(device->uri, a->stats.allocated_bytes,
                       a->stats.reserved_bytes);
  a->stats.requested_bytes += size;
  a->stats.active_blocks++;
  ACCEL__PEAK(a, allocated_bytes, allocated_bytes_peak);
  ACCEL__PEAK(a, active_blocks, active_blocks_peak);
  if (accel__oversize(a, b) && ++a->oversize_allocs > a->oversize_allocs_peak) {
    a->oversize_allocs_peak = a->oversize_allocs;
  }
  b->requested = size;
  atomic_store_explicit(&buffer->refs, 1, memory_order_relaxed);
  buffer->device = device;
  buffer->impl = b->segment->mem;
  buffer->base = b->offset;
  buffer->size = size;
  buffer->owner = b;
  pthread_mutex_unlock(&a->mutex);
  if (stream != NULL) accel__stream_weak_retain(stream);
  accel_device_retain(device);
  *out_buffer = buffer;
  return ACCEL_OK;
}

// ---------------------------------------------------------------------------
// Lifetime
// ---------------------------------------------------------------------------

// The rounding unit: a multiple of 512 (the bins count in 512-byte steps)
// and of the device's buffer_offset_alignment, so every block can be a
// kernel argument at offset 0. Their least common multiple, which for a
// power of two is simply the larger. A unit above 2 MiB (the large-segment
// granule, which also keeps rounding from overflowing) is not honoured:
// buffers are then 512-aligned and launches at other offsets fail.
static size_t accel__unit(const accel_device_t* device) {
  uint64_t align = device->buffer_offset_alignment;
  if (align <= 1) return ACCEL__ROUND;
  uint64_t x = align, y = ACCEL__ROUND;
  while (y != 0) {
    uint64_t t = x % y;
    x = y;
    y = t;
  }
  uint64_t unit = align / x * ACCEL__ROUND;
  if (unit > ACCEL__LARGE_ROUND) {
    accel__log(ACCEL_LOG_WARN,
               "%s: buffer_offset_alignment %llu needs a %llu-byte unit, "
               "above the allocator's %zu; buffers are aligned to %zu bytes",
               device->uri, (unsigned long long)align,
               (unsigned long long)unit, ACCEL__LARGE_ROUND, ACCEL__ROUND);
    return ACCEL__ROUND;
  }
  return (size_t)unit;
}

// Reads ACCEL_ALLOC_CONF into `a` (see alloc_conf.c): a malformed setting
// is ignored with a warning; memory_fraction needs a known total.
static void accel__alloc_conf_read(accel__allocator_t* a) {
  const char* text = accel__getenv("ACCEL_ALLOC_CONF");
  char why[256];
  if (!accel__alloc_conf_parse(text, &a->conf, why, sizeof(why))) {
    accel__log(ACCEL_LOG_WARN, "ACCEL_ALLOC_CONF='%s': %s; %s ignores it",
               text, why, a->device->uri);
    memset(&a->conf, 0, sizeof(a->conf));
    return;
  }
  if (a->caching && a->conf.max_split_size != 0 &&
      a->conf.max_split_size <= SIZE_MAX) {
    a->max_split = (size_t)a->conf.max_split_size;
  }
  if (a->conf.memory_fraction != 0 && a->total_memory == 0) {
    accel__log(ACCEL_LOG_WARN,
               "ACCEL_ALLOC_CONF: %s reports no total memory; "
               "memory_fraction is not applied",
               a->device->uri);
  }
  a->limit = (uint64_t)(a->conf.memory_fraction * (double)a->total_memory);
}

accel_status_t accel__allocator_create(accel_device_t* device) {
  accel__allocator_t* a = calloc(1, sizeof(*a));
  if (a == NULL) {
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "%s: allocator state",
                       device->uri);
  }
  pthread_mutex_init(&a->mutex, NULL);
  a->device = device;
  a->caching = true;
  a->whole = device->separate_allocations;
  a->unit = accel__unit(device);
  a->max_split = SIZE_MAX;
  a->global.alive = true;
  a->stats.struct_size = sizeof(a->stats);
  uint64_t free_bytes = 0;
  if (device->ops->mem_info(device->impl, &free_bytes, &a->total_memory) !=
      ACCEL_OK) {
    a->total_memory = 0;
  }
  const char* mode = accel__getenv("ACCEL_ALLOCATOR");
  if (mode != NULL && strcmp(mode, "raw") == 0) {
    a->caching = false;
  } else if (mode != NULL && mode[0] != '\0' && strcmp(mode, "caching") != 0) {
    accel__log(ACCEL_LOG_WARN,
               "ACCEL_ALLOCATOR='%s' is not 'caching' or 'raw'; %s uses "
               "caching",
               mode, device->uri);
  }
  accel__alloc_conf_read(a);
  accel__log(ACCEL_LOG_DEBUG, "%s: %s allocator%s", device->uri,
             a->caching ? "caching" : "raw",
             a->caching && a->whole ? ", one allocation per buffer" : "");
  device->allocator = a;
  return ACCEL_OK;
}

void accel__allocator_destroy(accel_device_t* device) {
  accel__allocator_t* a = device->allocator;
  if (a == NULL) return;
  const accel_device_ops_t* ops = device->ops;
  // Every stream of the device is gone, so pending events are complete or
  // about to be; wait for them anyway before the memory goes.
  for (accel__block_t* b = a->pending; b != NULL; b = b->link_next) {
    for (size_t i = b->events_done; i < b->event_count; i++) {
      (void)ops->event_synchronize(b->events[i]);
      ops->event_destroy(b->events[i]);
    }
    free(b->events);
  }
  while (a->segments != NULL) {
    accel__segment_t* s = a->segments;
    a->segments = s->next;
    ops->mem_free(device->impl, s->mem);
    accel__block_t* next = NULL;
    for (accel__block_t* b = s->first; b != NULL; b = next) {
      next = b->next;
      free(b->more_uses);
      free(b);
    }
    free(s);
  }
  while (a->pools != NULL) {
    accel__pool_t* p = a->pools;
    a->pools = p->next;
    free(p);
  }
  while (a->spare != NULL) {
    accel__block_t* b = a->spare;
    a->spare = b->link_next;
    free(b);
  }
  for (size_t i = 0; i < a->event_count; i++) ops->event_destroy(a->events[i]);
  free(a->events);
  pthread_mutex_destroy(&a->mutex);
  free(a);
  device->allocator = NULL;
}

bool accel__allocator_caching(const accel_device_t* device) {
  return device->allocator->caching;
}

void accel__allocator_fork_lock(accel_device_t* device, bool lock) {
  accel__allocator_t* a = device->allocator;
  if (a == NULL) return;
  if (lock) {
    pthread_mutex_lock(&a->mutex);
  } else {
    pthread_mutex_unlock(&a->mutex);
  }
}
