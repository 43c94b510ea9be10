// SPDX-License-Identifier: MIT
//
// What the caching allocator's files share: its constants, its records
// and the functions one file calls in another. The design is described at
// the top of allocator.c; the files are
//   allocator.c          lifetime and settings, size bins, block records,
//                        split and merge, allocation
//   allocator_segment.c  segments: memory from the plugin and back, and
//                        out of memory
//   allocator_stream.c   stream-ordered reuse: use tracking, free, pending
//                        blocks, stream pools and graph pools
//   allocator_stats.c    statistics, settings and snapshots
// The functions declared here are called with the allocator's mutex held.
#ifndef ACCEL_CORE_ALLOCATOR_INTERNAL_H_
#define ACCEL_CORE_ALLOCATOR_INTERNAL_H_

#include "internal.h"

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
  // Caching without sharing (ACCEL_DEVICE_CAP_SEPARATE_ALLOCATIONS): a
  // segment holds one block, which is never split; a cached one serves a
  // request of at least half its size.
  bool whole;
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

static inline size_t accel__round_up(size_t size, size_t unit) {
  return (size + unit - 1) / unit * unit;  // callers rule out overflow
}

#define ACCEL__PEAK(a, cur, peak) \
  if ((a)->stats.cur > (a)->stats.peak) (a)->stats.peak = (a)->stats.cur

// Whether a block of `b->size` bytes is oversize: at least max_split, in a
// segment of its own (the small pool's 2 MiB segments never are).
static inline bool accel__oversize(const accel__allocator_t* a,
                                   const accel__block_t* b) {
  return !b->segment->small && b->size >= a->max_split;
}

// Size bins and block records (allocator.c).

// First non-empty bin of `bins` at or after `index`, or -1.
int accel__bins_next(const accel__bins_t* bins, uint32_t index);
// Puts free block `b` into its pool's bins, and takes it out again.
void accel__bins_insert(accel__allocator_t* a, accel__block_t* b);
void accel__bins_remove(accel__allocator_t* a, accel__block_t* b);
// A block record, recycled or new (NULL without host memory), and its
// return to the spare list.
accel__block_t* accel__node_get(accel__allocator_t* a);
void accel__node_put(accel__allocator_t* a, accel__block_t* b);
// Makes a block that no stream uses any more free: merges it with free
// neighbours and bins it, or gives a raw segment back.
void accel__block_free(accel__allocator_t* a, accel__block_t* b);

// Segments (allocator_segment.c).

// Gives a segment whose only block is free (and out of the bins) back to
// the plugin.
void accel__segment_release(accel__allocator_t* a, accel__segment_t* s);
// Frees every cached segment no block uses and no stream can still touch;
// returns the bytes given back.
uint64_t accel__release_cached(accel__allocator_t* a);
// A new segment in `pool` for a block of `rounded` bytes, out of memory
// handled; `*out_block` is its single free block, in no bin.
accel_status_t accel__segment_new(accel__allocator_t* a, accel__pool_t* pool,
                                  size_t requested, size_t rounded, bool small,
                                  accel__block_t** out_block);

// Stream-ordered reuse (allocator_stream.c).

// Frees the pending blocks whose events have all completed.
void accel__process_pending(accel__allocator_t* a);

#endif  // ACCEL_CORE_ALLOCATOR_INTERNAL_H_
