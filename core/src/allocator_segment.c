// SPDX-License-Identifier: MIT
//
// The caching allocator's segments (the design is described at the top of
// allocator.c): the memory it takes from the plugin, with the checks and
// the out-of-memory handling around each plugin allocation
// (memory_fraction, garbage_collection_threshold, the wait, empty and
// retry pass, the final message), and cached segments given back.
#include <stdio.h>
#include <stdlib.h>

#include "allocator_internal.h"

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
void accel__segment_release(accel__allocator_t* a, accel__segment_t* s) {
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

// Frees every cached segment that no block uses and no stream can still
// touch; returns the bytes given back. Pending blocks are polled, never
// waited for.
uint64_t accel__release_cached(accel__allocator_t* a) {
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
accel_status_t accel__segment_new(accel__allocator_t* a, accel__pool_t* pool,
                                  size_t requested, size_t rounded, bool small,
                                  accel__block_t** out_block) {
  size_t want = rounded;
  if (a->caching) {
    if (small) {
      want = a->whole ? rounded : ACCEL__SMALL_SEGMENT;
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
