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
// ACCEL_ALLOCATOR=raw turns caching off: each buffer is one plugin
// allocation of exactly its size, returned to the plugin as soon as it is
// free and no stream can still use it. Statistics count the same way.
//
// One mutex per device guards everything here; the cache-hit path does no
// plugin call and no malloc.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph_internal.h"
#include "internal.h"
#include "trace.h"

#define ACCEL__ROUND ((size_t)512)
#define ACCEL__SMALL_REQUEST ((size_t)1 << 20)  // largest small request
#define ACCEL__SMALL_SEGMENT ((size_t)2 << 20)
#define ACCEL__LARGE_ROUND ((size_t)2 << 20)
#define ACCEL__USES_INLINE 4
// max_split_size: how much larger than an oversize request a cached block
// it reuses may be (PyTorch's kLargeBuffer).
#define ACCEL__OVERSIZE_SLACK ((size_t)20 << 20)
#define ACCEL__SPARE_MAX 4096  // recycled block records kept

// Bins: sizes in 512-byte units u. u < 64 has an exact bin each; above, bin
// 64 + (log2(u) - 6) * 32 + the next 5 bits of u.
#define ACCEL__BIN_EXACT 64u
#define ACCEL__BIN_COUNT (ACCEL__BIN_EXACT + (64u - 6u) * 32u)
#define ACCEL__BIN_WORDS ((ACCEL__BIN_COUNT + 63u) / 64u)

typedef struct accel__block accel__block_t;
typedef struct accel__segment accel__segment_t;

typedef enum accel__block_state {
  ACCEL__BLOCK_FREE = 0,     // in a bin
  ACCEL__BLOCK_ACTIVE = 1,   // a live buffer
  ACCEL__BLOCK_PENDING = 2,  // freed, waiting for stream events
} accel__block_state_t;

// One block of a segment. While ACTIVE, a buffer handle (handle.c) has the
// block as its `owner`.
struct accel__block {
  accel__segment_t* segment;
  accel__block_t* prev;  // neighbours in address order, same segment
  accel__block_t* next;
  accel__block_t* link_prev;  // bin list, pending list or spare list
  accel__block_t* link_next;
  size_t offset;
  size_t size;  // bytes of the block (the rounded request while ACTIVE)
  size_t requested;  // ACTIVE: the buffer's size as requested
  uint32_t bin;
  uint8_t state;           // accel__block_state_t
  bool split_counted;      // counted in inactive_split_bytes
  bool stream_owned;       // from the own pool of `stream`
  accel_stream_t* stream;  // allocation stream (weak reference) or NULL
  // Other streams that used the block (weak references). Slots fill in
  // order under the mutex and are read without it.
  _Atomic(accel_stream_t*) uses[ACCEL__USES_INLINE];
  accel_stream_t** more_uses;  // overflow, guarded by the mutex
  size_t more_count;
  size_t more_capacity;
  void** events;  // PENDING: plugin events recorded at free
  size_t event_count;
  size_t events_done;
};

struct accel__segment {
  void* mem;  // plugin memory handle
  size_t size;
  accel__pool_t* pool;    // owner: the device-wide pool or a stream's
  bool small;             // holds small blocks (a 2 MiB shared segment)
  bool raw;               // ACCEL_ALLOCATOR=raw: freed with its block
  accel__block_t* first;  // block at offset 0
  accel__segment_t* prev;
  accel__segment_t* next;
};

typedef struct accel__bins {
  uint64_t summary;  // bit w set when map[w] != 0
  uint64_t map[ACCEL__BIN_WORDS];
  accel__block_t* heads[ACCEL__BIN_COUNT];
} accel__bins_t;

struct accel__pool {
  accel_stream_t* stream;  // NULL for the device-wide pool
  bool alive;              // the stream is not being destroyed
  int idle;                // release pass: -1 unknown, 0 busy, 1 idle
  accel__pool_t* next;     // allocator's list of stream pools
  // A graph's private pool (graph.c): never emptied or searched by other
  // pools while the graph lives, since the graph's nodes use its memory
  // even where its blocks are free. `saved`: the capture stream's own pool.
  bool graph;
  accel__pool_t* saved;
  accel__bins_t small;
  accel__bins_t large;
};

struct accel__allocator {
  pthread_mutex_t mutex;
  accel_device_t* device;
  bool caching;
  size_t unit;            // requests round up to this (accel__unit)
  uint64_t total_memory;  // from mem_info at open; 0 if unknown
  accel__alloc_conf_t conf;  // ACCEL_ALLOC_CONF at open
  uint64_t limit;            // memory_fraction * total_memory, or 0
  size_t max_split;          // conf.max_split_size, SIZE_MAX when off
  // Oversize blocks (at least max_split, large pool): live buffers and
  // segments, current and peak.
  uint64_t oversize_allocs, oversize_allocs_peak;
  uint64_t oversize_segments, oversize_segments_peak;
  accel__pool_t global;
  accel__pool_t* pools;  // stream pools
  accel__segment_t* segments;
  accel__block_t* pending;
  accel__block_t* spare;
  size_t spare_count;
  void** events;  // idle plugin events, created with flags 0
  size_t event_count;
  size_t event_capacity;
  accel_memory_stats_t stats;
};

static accel__block_t* accel__block_of(accel_buffer_t* buffer) {
  return (accel__block_t*)buffer->owner;
}

static size_t accel__round_up(size_t size, size_t unit) {
  return (size + unit - 1) / unit * unit;  // callers rule out overflow
}

#define ACCEL__PEAK(a, cur, peak) \
  if ((a)->stats.cur > (a)->stats.peak) (a)->stats.peak = (a)->stats.cur

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

// Whether a block of `b->size` bytes is oversize: at least max_split, in a
// segment of its own (the small pool's 2 MiB segments never are).
static bool accel__oversize(const accel__allocator_t* a,
                            const accel__block_t* b) {
  return !b->segment->small && b->size >= a->max_split;
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
static int accel__bins_next(const accel__bins_t* bins, uint32_t index) {
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

static void accel__bins_insert(accel__allocator_t* a, accel__block_t* b) {
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

static void accel__bins_remove(accel__allocator_t* a, accel__block_t* b) {
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
// Block records and events
// ---------------------------------------------------------------------------

// Recycled records are clean: a block's use list, events and stream are
// cleared when it stops being active, so only the geometry is stale and
// the caller sets it.
static accel__block_t* accel__node_get(accel__allocator_t* a) {
  accel__block_t* b = a->spare;
  if (b == NULL) return calloc(1, sizeof(*b));
  a->spare = b->link_next;
  a->spare_count--;
  b->link_prev = b->link_next = NULL;
  return b;
}

static void accel__node_put(accel__allocator_t* a, accel__block_t* b) {
  if (a->spare_count >= ACCEL__SPARE_MAX) {
    free(b);
    return;
  }
  b->link_next = a->spare;
  a->spare = b;
  a->spare_count++;
}

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
// Segments
// ---------------------------------------------------------------------------

static void accel__segment_unlink(accel__allocator_t* a, accel__segment_t* s) {
  if (s->prev != NULL) {
    s->prev->next = s->next;
  } else {
    a->segments = s->next;
  }
  if (s->next != NULL) s->next->prev = s->prev;
}

// Gives a segment whose only block is free (and out of the bins) back to
// the plugin.
static void accel__segment_release(accel__allocator_t* a, accel__segment_t* s) {
  accel__segment_unlink(a, s);
  a->device->ops->mem_free(a->device->impl, s->mem);
  a->stats.reserved_bytes -= s->size;
  if (!s->small && s->size >= a->max_split) a->oversize_segments--;
  a->stats.raw_frees++;
  accel__node_put(a, s->first);
  free(s);
}

// Whether the stream owning `pool` has finished all its work, asked once
// per release pass. A stream being destroyed counts as busy.
static bool accel__pool_idle(accel__pool_t* pool) {
  if (pool->graph) return false;
  if (pool->stream == NULL) return true;
  if (pool->idle < 0) {
    bool done = false;
    pool->idle = pool->alive &&
                 pool->stream->device->ops->stream_query(pool->stream->impl,
                                                         &done) == ACCEL_OK &&
                 done;
  }
  return pool->idle == 1;
}

static void accel__process_pending(accel__allocator_t* a);

// Frees every cached segment that no block uses and no stream can still
// touch; returns the bytes given back. Pending blocks are polled, never
// waited for.
static uint64_t accel__release_cached(accel__allocator_t* a) {
  accel__process_pending(a);
  for (accel__pool_t* p = a->pools; p != NULL; p = p->next) p->idle = -1;
  uint64_t freed = 0;
  accel__segment_t* next = NULL;
  for (accel__segment_t* s = a->segments; s != NULL; s = next) {
    next = s->next;
    accel__block_t* b = s->first;
    if (b->state != ACCEL__BLOCK_FREE || b->next != NULL ||
        !accel__pool_idle(s->pool)) {
      continue;
    }
    accel__bins_remove(a, b);
    freed += s->size;
    accel__segment_release(a, s);
  }
  return freed;
}

void accel__format_bytes(char* out, size_t n, uint64_t bytes) {
  static const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) {
    snprintf(out, n, "%llu bytes", (unsigned long long)bytes);
    return;
  }
  double value = (double)bytes / 1024.0;
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < sizeof(units) / sizeof(units[0])) {
    value /= 1024.0;
    unit++;
  }
  snprintf(out, n, "%.2f %s", value, units[unit]);
}

// The final out-of-memory error, worded like PyTorch's.
static accel_status_t accel__fail_oom(accel__allocator_t* a, size_t requested,
                                      const char* reason) {
  accel_device_t* d = a->device;
  uint64_t free_bytes = 0, total_bytes = 0;
  if (d->ops->mem_info(d->impl, &free_bytes, &total_bytes) != ACCEL_OK) {
    free_bytes = total_bytes = 0;
  }
  char req[32], alloc[32], res[32], fr[32], tot[32];
  accel__format_bytes(req, sizeof(req), requested);
  accel__format_bytes(alloc, sizeof(alloc), a->stats.allocated_bytes);
  accel__format_bytes(res, sizeof(res), a->stats.reserved_bytes);
  accel__format_bytes(fr, sizeof(fr), free_bytes);
  accel__format_bytes(tot, sizeof(tot), total_bytes);
  return accel__fail(ACCEL_ERROR_OUT_OF_DEVICE_MEMORY,
                     "%s: out of device memory: tried to allocate %s; %s "
                     "allocated; %s reserved; %s free of %s total (%s)",
                     d->uri, req, alloc, res, fr, tot, reason);
}

// Before the out-of-memory retry: waits for the work that still holds
// freed memory, as PyTorch's allocator does, so the cache can be emptied
// of it. Pending blocks wait for their events; blocks back in a live
// stream's own pool wait for that stream (a pool's stream is valid while
// `alive`, under the mutex).
static void accel__wait_for_freed(accel__allocator_t* a) {
  const accel_device_ops_t* ops = a->device->ops;
  for (accel__block_t* b = a->pending; b != NULL; b = b->link_next) {
    for (size_t i = b->events_done; i < b->event_count; i++) {
      (void)ops->event_synchronize(b->events[i]);  // a fault ends it too
    }
  }
  for (accel__pool_t* p = a->pools; p != NULL; p = p->next) {
    if (p->alive && p->stream != NULL) {
      (void)ops->stream_synchronize(p->stream->impl);
    }
  }
}

// Gets `want` bytes from the plugin, or `need` (<= want) if `want` is too
// much. On device OOM waits for work that holds freed blocks, frees the
// cache and tries once more.
static accel_status_t accel__raw_alloc(accel__allocator_t* a, size_t want,
                                       size_t need, size_t requested,
                                       void** out_mem, size_t* out_size) {
  accel_device_t* d = a->device;
  char reason[512] = "";
  if (a->total_memory != 0 && need > a->total_memory) {
    // Hopeless: do not ask the plugin (or empty the cache) for it.
    char total[32];
    accel__format_bytes(total, sizeof(total), a->total_memory);
    snprintf(reason, sizeof(reason), "more than the device's %s", total);
    a->stats.ooms++;
    return accel__fail_oom(a, requested, reason);
  }
  // garbage_collection_threshold: above that share of the cap, give the
  // cached segments back before asking for more.
  uint64_t cap = a->limit != 0 ? a->limit : a->total_memory;
  if (a->conf.gc_threshold != 0 && cap != 0 &&
      (double)(a->stats.reserved_bytes + need) >
          a->conf.gc_threshold * (double)cap) {
    accel__release_cached(a);
  }
  for (int attempt = 0; attempt < 2; attempt++) {
    size_t sizes[2] = {want, need};
    for (int k = 0; k < (need < want ? 2 : 1); k++) {
      if (a->limit != 0 && a->stats.reserved_bytes + sizes[k] > a->limit) {
        // memory_fraction: out of memory as far as this process goes.
        char limit[32];
        accel__format_bytes(limit, sizeof(limit), a->limit);
        snprintf(reason, sizeof(reason),
                 "ACCEL_ALLOC_CONF memory_fraction %g caps reserved memory "
                 "at %s",
                 a->conf.memory_fraction, limit);
        continue;
      }
      accel_status_t status = d->ops->mem_alloc(d->impl, sizes[k], out_mem);
      if (status == ACCEL_OK) {
        *out_size = sizes[k];
        return ACCEL_OK;
      }
      if (status != ACCEL_ERROR_OUT_OF_DEVICE_MEMORY) return status;
      snprintf(reason, sizeof(reason), "%s", accel_last_error());
    }
    if (attempt == 0) {
      a->stats.oom_retries++;
      accel__wait_for_freed(a);
      accel__release_cached(a);
    }
  }
  a->stats.ooms++;
  return accel__fail_oom(a, requested, reason);
}

// Allocates a new segment for a block of `rounded` bytes in `pool` and
// returns its single free block (in no bin).
static accel_status_t accel__segment_new(accel__allocator_t* a,
                                         accel__pool_t* pool, size_t requested,
                                         size_t rounded, bool small,
                                         accel__block_t** out_block) {
  size_t want = rounded;
  if (a->caching) {
    if (small) {
      want = ACCEL__SMALL_SEGMENT;
    } else if (rounded <= SIZE_MAX - ACCEL__LARGE_ROUND) {
      want = accel__round_up(rounded, ACCEL__LARGE_ROUND);
    }
    // Never ask for a segment above the largest single allocation; the
    // request itself fits (accel__check_max_alloc).
    uint64_t most = a->device->max_alloc_size;
    if (most != 0 && want > most) want = (size_t)(most / a->unit * a->unit);
  }
  accel__segment_t* s = calloc(1, sizeof(*s));
  accel__block_t* b = accel__node_get(a);
  if (s == NULL || b == NULL) {
    free(s);
    if (b != NULL) accel__node_put(a, b);
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                       "%s: no host memory for allocator records",
                       a->device->uri);
  }
  accel_status_t status =
      accel__raw_alloc(a, want, rounded, requested, &s->mem, &s->size);
  if (status != ACCEL_OK) {
    free(s);
    accel__node_put(a, b);
    return status;
  }
  s->pool = pool;
  s->small = small;
  s->raw = !a->caching;
  s->first = b;
  s->next = a->segments;
  if (a->segments != NULL) a->segments->prev = s;
  a->segments = s;
  a->stats.raw_allocs++;
  a->stats.reserved_bytes += s->size;
  ACCEL__PEAK(a, reserved_bytes, reserved_bytes_peak);
  if (!small && s->size >= a->max_split &&
      ++a->oversize_segments > a->oversize_segments_peak) {
    a->oversize_segments_peak = a->oversize_segments;
  }
  b->segment = s;
  b->offset = 0;
  b->size = s->size;
  b->prev = b->next = NULL;
  b->state = ACCEL__BLOCK_FREE;
  b->split_counted = false;
  *out_block = b;
  return ACCEL_OK;
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
  if (s->raw || (s->small ? rest < a->unit : rest <= ACCEL__SMALL_REQUEST))
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
static void accel__block_free(accel__allocator_t* a, accel__block_t* b) {
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
static void accel__process_pending(accel__allocator_t* a) {
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

// max_split_size (PyTorch's get_free_block): a request below it never
// takes (and splits) an oversize cached block, and an oversize request
// takes a cached block only if that wastes less than 20 MiB. `b` is the
// smallest fitting block of its bins, so when it fails, every larger one
// there fails too.
static accel__block_t* accel__split_rule(const accel__allocator_t* a,
                                         accel__block_t* b, size_t size) {
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
    // unlock (see the top of this file); a dead stream's work is done.
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
  accel__log(ACCEL_LOG_DEBUG, "%s: %s allocator", device->uri,
             a->caching ? "caching" : "raw");
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
// Public API: stream-ordered allocation, statistics and controls
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

void accel__allocator_stats(accel_device_t* device,
                            accel_memory_stats_t* out_stats,
                            bool* out_caching) {
  accel__allocator_t* a = device->allocator;
  pthread_mutex_lock(&a->mutex);
  *out_stats = a->stats;
  *out_caching = a->caching;
  pthread_mutex_unlock(&a->mutex);
}

void accel__allocator_empty_cache(accel_device_t* device) {
  accel__allocator_t* a = device->allocator;
  pthread_mutex_lock(&a->mutex);
  accel__release_cached(a);
  pthread_mutex_unlock(&a->mutex);
}

void accel__allocator_reset_peaks(accel_device_t* device) {
  accel__allocator_t* a = device->allocator;
  pthread_mutex_lock(&a->mutex);
  a->stats.allocated_bytes_peak = a->stats.allocated_bytes;
  a->stats.reserved_bytes_peak = a->stats.reserved_bytes;
  a->stats.active_blocks_peak = a->stats.active_blocks;
  a->oversize_allocs_peak = a->oversize_allocs;
  a->oversize_segments_peak = a->oversize_segments;
  pthread_mutex_unlock(&a->mutex);
}

void accel__allocator_reset_accumulated(accel_device_t* device) {
  accel__allocator_t* a = device->allocator;
  pthread_mutex_lock(&a->mutex);
  a->stats.raw_allocs = 0;
  a->stats.raw_frees = 0;
  a->stats.cache_hits = 0;
  a->stats.cache_misses = 0;
  a->stats.oom_retries = 0;
  a->stats.ooms = 0;
  pthread_mutex_unlock(&a->mutex);
}

void accel__allocator_info(accel_device_t* device,
                           accel_allocator_info_t* out) {
  accel__allocator_t* a = device->allocator;
  pthread_mutex_lock(&a->mutex);
  out->caching = a->caching;
  out->roundup_power2_divisions = a->conf.roundup_divisions;
  out->max_split_size = a->max_split != SIZE_MAX ? a->max_split : 0;
  out->memory_fraction = a->limit != 0 ? a->conf.memory_fraction : 0;
  out->memory_limit = a->limit;
  out->garbage_collection_threshold = a->conf.gc_threshold;
  out->oversize_allocations = a->oversize_allocs;
  out->oversize_allocations_peak = a->oversize_allocs_peak;
  out->oversize_segments = a->oversize_segments;
  out->oversize_segments_peak = a->oversize_segments_peak;
  pthread_mutex_unlock(&a->mutex);
}

void accel__allocator_visit(accel_device_t* device,
                            void (*fn)(void* ctx,
                                       const accel__snapshot_item_t* item),
                            void* ctx) {
  static const char* const states[] = {"free", "active", "pending"};
  accel__allocator_t* a = device->allocator;
  pthread_mutex_lock(&a->mutex);
  for (accel__segment_t* s = a->segments; s != NULL; s = s->next) {
    accel__snapshot_item_t seg = {.is_segment = true,
                                  .size = s->size,
                                  .state = s->small ? "small" : "large",
                                  .stream = s->pool->stream};
    fn(ctx, &seg);
    for (accel__block_t* b = s->first; b != NULL; b = b->next) {
      accel__snapshot_item_t blk = {
          .offset = b->offset,
          .size = b->size,
          .requested = b->state == ACCEL__BLOCK_ACTIVE ? b->requested : 0,
          .state = b->state <= ACCEL__BLOCK_PENDING ? states[b->state] : "?",
          .stream = b->stream};
      fn(ctx, &blk);
    }
  }
  pthread_mutex_unlock(&a->mutex);
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
