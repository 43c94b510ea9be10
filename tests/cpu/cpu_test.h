// SPDX-License-Identifier: MIT
//
// Helpers shared by the CPU plugin tests (tests/cpu). Public API only.
#ifndef ACCEL_TESTS_CPU_CPU_TEST_H_
#define ACCEL_TESTS_CPU_CPU_TEST_H_

#include <accel/accel.h>
#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

// Size of the buffers used to make a stream busy for a while: each fill of
// one is tens of milliseconds of memory traffic, far more than enqueueing.
#define CPU_TEST_BIG ((size_t)64 << 20)

// Milliseconds on the monotonic clock.
static inline double cpu_test_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

// Threads of this process now, from /proc/self/task; 0 when unreadable.
static inline int cpu_test_threads(void) {
  DIR* dir = opendir("/proc/self/task");
  if (dir == NULL) return 0;
  int n = 0;
  for (struct dirent* e = readdir(dir); e != NULL; e = readdir(dir)) {
    if (e->d_name[0] != '.') n++;
  }
  closedir(dir);
  return n;
}

// True when all `size` bytes at `p` equal `value`.
static inline bool cpu_test_all(const void* p, size_t size, uint8_t value) {
  const uint8_t* bytes = p;
  for (size_t i = 0; i < size; i++) {
    if (bytes[i] != value) return false;
  }
  return true;
}

// Enqueues `count` fills of all of `buffer` on `stream`, with the values
// first, first + 1, ..., so the last fill leaves first + count - 1.
static inline accel_status_t cpu_test_busy(accel_stream_t* stream,
                                           accel_buffer_t* buffer, int count,
                                           uint8_t first) {
  for (int i = 0; i < count; i++) {
    accel_status_t status = accel_stream_fill_buffer(
        stream, buffer, 0, (uint8_t)(first + i), accel_buffer_size(buffer));
    if (status != ACCEL_OK) return status;
  }
  return ACCEL_OK;
}

#endif  // ACCEL_TESTS_CPU_CPU_TEST_H_
