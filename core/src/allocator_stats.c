// SPDX-License-Identifier: MIT
//
// What the caching allocator reports, for memory_stats.c: its statistics
// and settings, the segments and blocks a memory snapshot shows
// (accel-memviz), and the controls on them: empty-cache and the resets of
// peaks and counters.
#include "allocator_internal.h"

// ---------------------------------------------------------------------------
// Statistics, settings, snapshots and controls
// ---------------------------------------------------------------------------

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
