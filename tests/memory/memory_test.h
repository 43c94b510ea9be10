// SPDX-License-Identifier: MIT
//
// Helpers shared by the caching allocator tests (tests/memory). Public API
// only.
#ifndef ACCEL_TESTS_MEMORY_MEMORY_TEST_H_
#define ACCEL_TESTS_MEMORY_MEMORY_TEST_H_

#include <accel/accel.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

// Size of a buffer whose fills keep a CPU stream busy for tens of ms.
#define MEMORY_TEST_BUSY ((size_t)64 << 20)

// The statistics of `device`, or all zero (and struct_size 0) on failure.
static inline accel_memory_stats_t memory_stats(accel_device_t* device) {
  accel_memory_stats_t stats;
  memset(&stats, 0, sizeof(stats));
  stats.struct_size = sizeof(stats);
  if (accel_device_query_memory_stats(device, &stats) != ACCEL_OK) {
    memset(&stats, 0, sizeof(stats));
  }
  return stats;
}

// True when all `size` bytes at `p` equal `value`.
static inline bool memory_all(const void* p, size_t size, uint8_t value) {
  const uint8_t* bytes = p;
  for (size_t i = 0; i < size; i++) {
    if (bytes[i] != value) return false;
  }
  return true;
}

// Enqueues `count` fills of all of `buffer` on `stream`.
static inline accel_status_t memory_busy(accel_stream_t* stream,
                                         accel_buffer_t* buffer, int count) {
  for (int i = 0; i < count; i++) {
    accel_status_t status = accel_stream_fill_buffer(
        stream, buffer, 0, (uint8_t)i, accel_buffer_size(buffer));
    if (status != ACCEL_OK) return status;
  }
  return ACCEL_OK;
}

#endif  // ACCEL_TESTS_MEMORY_MEMORY_TEST_H_
