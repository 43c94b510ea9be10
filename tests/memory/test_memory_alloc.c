// SPDX-License-Identifier: MIT
//
// The caching allocator seen through its statistics: rounding, small and
// large pools, split and merge, stats arithmetic, empty-cache, peak reset,
// the summary table, data integrity of sub-allocated buffers, and misuse.
// Every test opens cpu:0 afresh and closes it, so each starts from an empty
// allocator.
#include <stdlib.h>
#include <string.h>

#include "memory_test.h"
#include "test.h"

TEST(rounding_and_small_segments) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  accel_buffer_t *a = NULL, *b = NULL, *c = NULL, *e = NULL;
  ASSERT_OK(accel_buffer_create(d, 1, &a));
  accel_memory_stats_t s = memory_stats(d);
  ASSERT_EQ(s.struct_size, sizeof(s));
  ASSERT_EQ(s.allocated_bytes, 512);  // rounded up to 512 bytes
  ASSERT_EQ(s.requested_bytes, 1);
  ASSERT_EQ(s.reserved_bytes, 2 * MiB);  // one shared small segment
  ASSERT_EQ(s.active_blocks, 1);
  ASSERT_EQ(s.raw_allocs, 1);
  ASSERT_EQ(s.cache_misses, 1);
  ASSERT_EQ(s.cache_hits, 0);
  ASSERT_EQ(accel_buffer_size(a), 1);

  ASSERT_OK(accel_buffer_create(d, 513, &b));
  ASSERT_OK(accel_buffer_create(d, 1 * MiB, &c));  // the largest small one
  s = memory_stats(d);
  ASSERT_EQ(s.allocated_bytes, 512 + 1024 + 1 * MiB);
  ASSERT_EQ(s.requested_bytes, 1 + 513 + 1 * MiB);
  ASSERT_EQ(s.reserved_bytes, 2 * MiB);  // all three share the segment
  ASSERT_EQ(s.raw_allocs, 1);
  ASSERT_EQ(s.cache_hits, 2);

  // One byte more is large: a segment of its own, rounded to 2 MiB. The
  // rest (under 1 MiB) is not worth splitting off, so the block keeps it.
  ASSERT_OK(accel_buffer_create(d, 1 * MiB + 1, &e));
  s = memory_stats(d);
  ASSERT_EQ(s.reserved_bytes, 4 * MiB);
  ASSERT_EQ(s.raw_allocs, 2);
  ASSERT_EQ(s.allocated_bytes, 512 + 1024 + 1 * MiB + 2 * MiB);
  ASSERT_EQ(s.active_blocks, 4);

  accel_buffer_release(a);
  accel_buffer_release(b);
  accel_buffer_release(c);
  accel_buffer_release(e);
  s = memory_stats(d);
  ASSERT_EQ(s.allocated_bytes, 0);
  ASSERT_EQ(s.requested_bytes, 0);
  ASSERT_EQ(s.active_blocks, 0);
  ASSERT_EQ(s.reserved_bytes, 4 * MiB);  // cached, not given back
  ASSERT_EQ(s.raw_frees, 0);
  ASSERT_EQ(s.inactive_split_bytes, 0);  // both segments whole again
  accel_device_release(d);
}

TEST(split_and_merge) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  accel_buffer_t *a = NULL, *b = NULL, *c = NULL, *ab = NULL;
  ASSERT_OK(accel_buffer_create(d, 4 * KiB, &a));
  ASSERT_OK(accel_buffer_create(d, 4 * KiB, &b));
  ASSERT_OK(accel_buffer_create(d, 4 * KiB, &c));
  accel_memory_stats_t s = memory_stats(d);
  ASSERT_EQ(s.reserved_bytes, 2 * MiB);
  // The free tail of the segment is split off and counted as such.
  ASSERT_EQ(s.inactive_split_bytes, 2 * MiB - 12 * KiB);

  accel_buffer_release(b);
  s = memory_stats(d);
  ASSERT_EQ(s.inactive_split_bytes, 2 * MiB - 8 * KiB);
  accel_buffer_release(a);  // merges with b's block: 8 KiB free at 0
  s = memory_stats(d);
  ASSERT_EQ(s.inactive_split_bytes, 2 * MiB - 4 * KiB);
  ASSERT_EQ(s.active_blocks, 1);

  // A request of a + b fits the merged block exactly: a hit, no new
  // segment, and best fit takes it rather than cutting the large tail.
  uint64_t hits = s.cache_hits;
  ASSERT_OK(accel_buffer_create(d, 8 * KiB, &ab));
  s = memory_stats(d);
  ASSERT_EQ(s.raw_allocs, 1);
  ASSERT_EQ(s.cache_hits, hits + 1);
  ASSERT_EQ(s.reserved_bytes, 2 * MiB);
  ASSERT_EQ(s.inactive_split_bytes, 2 * MiB - 12 * KiB);

  // Freeing everything merges the segment back into one block.
  accel_buffer_release(c);
  accel_buffer_release(ab);
  s = memory_stats(d);
  ASSERT_EQ(s.inactive_split_bytes, 0);
  ASSERT_EQ(s.active_blocks, 0);
  // A 2 MiB request is large: it does not take the small segment.
  accel_buffer_t* big = NULL;
  ASSERT_OK(accel_buffer_create(d, 2 * MiB, &big));
  s = memory_stats(d);
  ASSERT_EQ(s.raw_allocs, 2);
  ASSERT_EQ(s.reserved_bytes, 4 * MiB);
  accel_buffer_release(big);
  accel_device_release(d);
}

TEST(large_blocks_split_when_the_rest_is_big) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  accel_buffer_t *x = NULL, *y = NULL, *z = NULL, *small = NULL;
  ASSERT_OK(accel_buffer_create(d, 8 * MiB, &x));
  accel_buffer_release(x);
  // 3 MiB from the cached 8 MiB segment: split, 5 MiB left over.
  ASSERT_OK(accel_buffer_create(d, 3 * MiB, &x));
  accel_memory_stats_t s = memory_stats(d);
  ASSERT_EQ(s.raw_allocs, 1);
  ASSERT_EQ(s.allocated_bytes, 3 * MiB);
  ASSERT_EQ(s.inactive_split_bytes, 5 * MiB);
  // 4.5 MiB takes the 5 MiB rest whole (0.5 MiB is not worth a block).
  ASSERT_OK(accel_buffer_create(d, 4 * MiB + 512 * KiB, &y));
  s = memory_stats(d);
  ASSERT_EQ(s.raw_allocs, 1);
  ASSERT_EQ(s.allocated_bytes, 8 * MiB);
  ASSERT_EQ(s.inactive_split_bytes, 0);
  // Nothing large is left: a new segment, rounded up to 2 MiB.
  ASSERT_OK(accel_buffer_create(d, 3 * MiB, &z));
  s = memory_stats(d);
  ASSERT_EQ(s.raw_allocs, 2);
  ASSERT_EQ(s.reserved_bytes, 12 * MiB);
  // Small requests never take large blocks.
  accel_buffer_release(z);
  ASSERT_OK(accel_buffer_create(d, 4 * KiB, &small));
  s = memory_stats(d);
  ASSERT_EQ(s.raw_allocs, 3);
  ASSERT_EQ(s.reserved_bytes, 14 * MiB);
  accel_buffer_release(small);
  accel_buffer_release(x);
  accel_buffer_release(y);
  s = memory_stats(d);
  ASSERT_EQ(s.allocated_bytes, 0);
  ASSERT_EQ(s.inactive_split_bytes, 0);
  accel_device_release(d);
}

// Sub-allocated buffers must not overlap: write a distinct pattern into
// many buffers that share segments, through every copy path, and read all
// of them back.
TEST(sub_allocated_buffers_keep_their_data) {
  enum { kCount = 64 };
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &stream));
  accel_buffer_t* bufs[kCount] = {NULL};
  size_t sizes[kCount];
  unsigned seed = 12345;
  for (int i = 0; i < kCount; i++) {
    seed = seed * 1103515245u + 12345u;
    sizes[i] = 1 + (seed >> 8) % (96 * KiB);
    if (i % 3 == 0) {
      ASSERT_OK(accel_stream_alloc_buffer(stream, sizes[i], &bufs[i]));
    } else {
      ASSERT_OK(accel_buffer_create(d, sizes[i], &bufs[i]));
    }
  }
  accel_memory_stats_t s = memory_stats(d);
  ASSERT_LT(s.raw_allocs, kCount);  // they do share segments
  for (int i = 0; i < kCount; i++) {
    if (i % 2 == 0) {
      ASSERT_OK(accel_buffer_fill(bufs[i], 0, (uint8_t)i, sizes[i]));
    } else {
      ASSERT_OK(
          accel_stream_fill_buffer(stream, bufs[i], 0, (uint8_t)i, sizes[i]));
    }
  }
  ASSERT_OK(accel_stream_synchronize(stream));
  uint8_t* host = malloc(96 * KiB);
  ASSERT_NOT_NULL(host);
  for (int i = 0; i < kCount; i++) {
    memset(host, 0xee, sizes[i]);
    ASSERT_OK(accel_buffer_read(bufs[i], 0, host, sizes[i]));
    if (!memory_all(host, sizes[i], (uint8_t)i)) {
      free(host);
      ASSERT(!"a buffer was overwritten by a neighbour");
    }
  }
  // Copies with offsets between two sub-allocated buffers.
  size_t n = sizes[1] < sizes[2] ? sizes[1] : sizes[2];
  if (n > 1) {
    ASSERT_OK(accel_buffer_copy(bufs[1], 1, bufs[2], 0, n - 1));
    ASSERT_OK(accel_buffer_read(bufs[1], 0, host, n));
    ASSERT_EQ(host[0], 1);
    ASSERT(memory_all(host + 1, n - 1, 2));
    ASSERT_OK(accel_stream_copy_buffer(stream, bufs[2], 0, bufs[1], 0, 1));
    ASSERT_OK(accel_stream_write_buffer(stream, bufs[2], n - 1, "\x7f", 1));
    ASSERT_OK(accel_stream_read_buffer(stream, bufs[2], 0, host, n));
    ASSERT_OK(accel_stream_synchronize(stream));
    ASSERT_EQ(host[0], 1);
    ASSERT_EQ(host[n - 1], 0x7f);
  }
  free(host);
  for (int i = 0; i < kCount; i++) accel_buffer_release(bufs[i]);
  accel_stream_release(stream);
  accel_device_release(d);
}

// Random sequences of allocations and frees against a model: with small
// requests every block is exactly the rounded request.
TEST(stats_arithmetic) {
  enum { kSlots = 48, kSteps = 2000 };
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  accel_buffer_t* slots[kSlots] = {NULL};
  uint64_t requested = 0, allocated = 0, active = 0, peak = 0, peak_active = 0;
  uint64_t creates = 0;
  unsigned seed = 777;
  for (int step = 0; step < kSteps; step++) {
    seed = seed * 1103515245u + 12345u;
    int i = (int)((seed >> 4) % kSlots);
    if (slots[i] == NULL) {
      size_t size = 1 + (seed >> 12) % (200 * KiB);
      ASSERT_OK(accel_buffer_create(d, size, &slots[i]));
      creates++;
      requested += size;
      allocated += (size + 511) / 512 * 512;
      active++;
      if (allocated > peak) peak = allocated;
      if (active > peak_active) peak_active = active;
    } else {
      size_t size = accel_buffer_size(slots[i]);
      accel_buffer_release(slots[i]);
      slots[i] = NULL;
      requested -= size;
      allocated -= (size + 511) / 512 * 512;
      active--;
    }
    accel_memory_stats_t s = memory_stats(d);
    ASSERT_EQ(s.requested_bytes, requested);
    ASSERT_EQ(s.allocated_bytes, allocated);
    ASSERT_EQ(s.active_blocks, active);
    ASSERT_EQ(s.allocated_bytes_peak, peak);
    ASSERT_EQ(s.active_blocks_peak, peak_active);
    ASSERT_EQ(s.cache_hits + s.cache_misses, creates);
    ASSERT_EQ(s.cache_misses, s.raw_allocs);
    ASSERT_EQ(s.reserved_bytes, (s.raw_allocs - s.raw_frees) * 2 * MiB);
    ASSERT_LE(s.allocated_bytes + s.inactive_split_bytes, s.reserved_bytes);
    ASSERT_GE(s.reserved_bytes_peak, s.reserved_bytes);
  }
  accel_memory_stats_t s = memory_stats(d);
  printf("  %llu creates: %llu hits, %llu segments\n",
         (unsigned long long)creates, (unsigned long long)s.cache_hits,
         (unsigned long long)s.raw_allocs);
  ASSERT_GT(s.cache_hits, s.cache_misses * 10);  // the cache works
  for (int i = 0; i < kSlots; i++) accel_buffer_release(slots[i]);
  s = memory_stats(d);
  ASSERT_EQ(s.allocated_bytes, 0);
  ASSERT_EQ(s.requested_bytes, 0);
  ASSERT_EQ(s.inactive_split_bytes, 0);
  accel_device_release(d);
}

TEST(empty_cache_keeps_live_segments) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  accel_buffer_t *keep = NULL, *big = NULL, *tmp = NULL;
  ASSERT_OK(accel_buffer_create(d, 4 * KiB, &keep));
  ASSERT_OK(accel_buffer_create(d, 4 * KiB, &tmp));
  ASSERT_OK(accel_buffer_create(d, 16 * MiB, &big));
  accel_buffer_release(big);
  accel_buffer_release(tmp);
  accel_memory_stats_t s = memory_stats(d);
  ASSERT_EQ(s.reserved_bytes, 18 * MiB);
  ASSERT_OK(accel_device_empty_cache(d));
  s = memory_stats(d);
  // The large segment went back; the small one still holds `keep`.
  ASSERT_EQ(s.reserved_bytes, 2 * MiB);
  ASSERT_EQ(s.raw_frees, 1);
  ASSERT_EQ(s.allocated_bytes, 4 * KiB);
  ASSERT_OK(accel_buffer_fill(keep, 0, 0x3c, 4 * KiB));
  accel_buffer_release(keep);
  ASSERT_OK(accel_device_empty_cache(d));
  s = memory_stats(d);
  ASSERT_EQ(s.reserved_bytes, 0);
  ASSERT_EQ(s.raw_frees, 2);
  ASSERT_EQ(s.reserved_bytes_peak, 18 * MiB);
  // The next allocation is a miss again.
  ASSERT_OK(accel_buffer_create(d, 4 * KiB, &keep));
  s = memory_stats(d);
  ASSERT_EQ(s.raw_allocs, 3);
  accel_buffer_release(keep);
  accel_device_release(d);
}

TEST(peak_reset) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  accel_buffer_t *a = NULL, *b = NULL;
  ASSERT_OK(accel_buffer_create(d, 6 * MiB, &a));
  ASSERT_OK(accel_buffer_create(d, 1 * KiB, &b));
  accel_buffer_release(a);
  accel_memory_stats_t s = memory_stats(d);
  ASSERT_EQ(s.allocated_bytes_peak, 6 * MiB + 1 * KiB);
  ASSERT_EQ(s.active_blocks_peak, 2);
  ASSERT_EQ(s.reserved_bytes_peak, 8 * MiB);
  ASSERT_OK(accel_device_empty_cache(d));
  ASSERT_OK(accel_device_reset_peak_memory_stats(d));
  s = memory_stats(d);
  ASSERT_EQ(s.allocated_bytes_peak, 1 * KiB);
  ASSERT_EQ(s.active_blocks_peak, 1);
  ASSERT_EQ(s.reserved_bytes_peak, 2 * MiB);
  // Cumulative counters are not peaks: they stay.
  ASSERT_EQ(s.raw_allocs, 2);
  ASSERT_EQ(s.raw_frees, 1);
  accel_buffer_release(b);
  accel_device_release(d);
}

TEST(summary_table) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(d, 3 * MiB, &b));
  size_t length = 0;
  ASSERT_OK(accel_device_memory_summary(d, NULL, 0, &length));
  ASSERT_GT(length, 100);
  char* text = malloc(length + 1);
  ASSERT_NOT_NULL(text);
  size_t again = 0;
  memset(text, 'x', length + 1);
  ASSERT_OK(accel_device_memory_summary(d, text, length + 1, &again));
  ASSERT_EQ(again, length);
  ASSERT_EQ(strlen(text), length);
  printf("%s", text);
  ASSERT_STR_CONTAINS(text, "cpu:0");
  ASSERT_STR_CONTAINS(text, "caching allocator");
  ASSERT_STR_CONTAINS(text, "allocated memory");
  ASSERT_STR_CONTAINS(text, "4.00 MiB");  // 3 MiB rounded to a 4 MiB block
  ASSERT_STR_CONTAINS(text, "reserved memory");
  ASSERT_STR_CONTAINS(text, "OOM retries");
  ASSERT_STR_CONTAINS(text, "pinned host memory");
  // Truncation: snprintf semantics.
  char small[16];
  memset(small, 'x', sizeof(small));
  ASSERT_OK(accel_device_memory_summary(d, small, sizeof(small), &again));
  ASSERT_EQ(again, length);
  ASSERT_EQ(strlen(small), sizeof(small) - 1);
  ASSERT(strncmp(small, text, sizeof(small) - 1) == 0);
  free(text);
  accel_buffer_release(b);
  accel_device_release(d);
}

TEST(misuse) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &stream));
  accel_buffer_t* b = (accel_buffer_t*)&b;
  ASSERT_STATUS(accel_stream_alloc_buffer(NULL, 16, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_NULL(b);
  b = (accel_buffer_t*)&b;
  ASSERT_STATUS(accel_stream_alloc_buffer(stream, 0, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_NULL(b);
  ASSERT_STATUS(accel_stream_alloc_buffer(stream, 16, NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_stream_alloc_buffer(stream, SIZE_MAX, &b),
                ACCEL_ERROR_OUT_OF_DEVICE_MEMORY);
  ASSERT_STR_CONTAINS(accel_last_error(), "cpu:0: out of device memory");
  ASSERT_NULL(b);

  ASSERT_OK(accel_buffer_create(d, 16, &b));
  ASSERT_STATUS(accel_buffer_record_stream(NULL, stream),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_buffer_record_stream(b, NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_OK(accel_buffer_record_stream(b, stream));
  ASSERT_OK(accel_buffer_record_stream(b, stream));  // twice is fine

  accel_memory_stats_t s;
  memset(&s, 0, sizeof(s));
  ASSERT_STATUS(accel_device_query_memory_stats(d, &s),
                ACCEL_ERROR_INVALID_ARGUMENT);  // struct_size 0
  ASSERT_STR_CONTAINS(accel_last_error(), "struct_size");
  s.struct_size = sizeof(s) - 8;
  ASSERT_STATUS(accel_device_query_memory_stats(d, &s),
                ACCEL_ERROR_INVALID_ARGUMENT);
  s.struct_size = sizeof(s);
  ASSERT_STATUS(accel_device_query_memory_stats(NULL, &s),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_device_query_memory_stats(d, NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  // A newer caller's larger struct gets the fields this library knows.
  struct {
    accel_memory_stats_t stats;
    uint64_t later_field;
  } bigger;
  memset(&bigger, 0xab, sizeof(bigger));
  bigger.stats.struct_size = sizeof(bigger);
  ASSERT_OK(accel_device_query_memory_stats(d, &bigger.stats));
  ASSERT_EQ(bigger.stats.struct_size, sizeof(accel_memory_stats_t));
  ASSERT_EQ(bigger.stats.active_blocks, 1);
  ASSERT_EQ(bigger.later_field, 0xababababababababull);

  size_t length = 1;
  char text[8];
  ASSERT_STATUS(accel_device_memory_summary(NULL, text, sizeof(text), &length),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(length, 0);
  ASSERT_STATUS(accel_device_memory_summary(d, text, sizeof(text), NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_device_memory_summary(d, NULL, 8, &length),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_device_empty_cache(NULL), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_device_reset_peak_memory_stats(NULL),
                ACCEL_ERROR_INVALID_ARGUMENT);
  accel_buffer_release(b);
  accel_stream_release(stream);
  accel_device_release(d);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
