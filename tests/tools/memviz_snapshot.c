// SPDX-License-Identifier: MIT
//
// Writes an allocator snapshot of cpu:0 with blocks in every state to the
// file named by argv[1], for memviz_check.py: live buffers (allocated),
// freed ones kept in the cache (cached), and one freed while a stream's
// work on it may still run (inactive: "pending" until the allocator looks
// again, which a snapshot never makes it do).
#include <stdio.h>
#include <stdlib.h>

#include "accel/accel.h"

#define CHECK(call)                                                   \
  do {                                                                \
    accel_status_t s_ = (call);                                       \
    if (s_ != ACCEL_OK) {                                             \
      fprintf(stderr, "%s: %s: %s\n", #call, accel_status_string(s_), \
              accel_last_error());                                    \
      return 1;                                                       \
    }                                                                 \
  } while (0)

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: memviz_snapshot OUT.json\n");
    return 2;
  }
  accel_device_t* d = NULL;
  accel_stream_t* s = NULL;
  accel_buffer_t *small = NULL, *freed = NULL, *large = NULL, *busy = NULL;
  accel_buffer_t* owned = NULL;
  CHECK(accel_device_open("cpu:0", &d));
  CHECK(accel_stream_create(d, 0, &s));
  CHECK(accel_buffer_create(d, 100 << 10, &small));
  CHECK(accel_buffer_create(d, 300 << 10, &freed));
  CHECK(accel_buffer_create(d, 3 << 20, &large));
  CHECK(accel_buffer_create(d, 8 << 20, &busy));
  CHECK(accel_stream_alloc_buffer(s, 5 << 20, &owned));
  accel_buffer_release(freed);  // cached
  CHECK(accel_stream_fill_buffer(s, busy, 0, 1, 8 << 20));
  accel_buffer_release(busy);  // pending: the fill may still run
  size_t length = 0;
  CHECK(accel_device_memory_snapshot(d, NULL, 0, &length));
  char* text = malloc(length + 1);
  if (text == NULL) return 1;
  CHECK(accel_device_memory_snapshot(d, text, length + 1, &length));
  FILE* out = fopen(argv[1], "w");
  if (out == NULL || fwrite(text, 1, length, out) != length ||
      fclose(out) != 0) {
    perror(argv[1]);
    return 1;
  }
  free(text);
  CHECK(accel_stream_synchronize(s));
  accel_buffer_release(owned);
  accel_buffer_release(small);
  accel_buffer_release(large);
  accel_stream_release(s);
  accel_device_release(d);
  accel_shutdown();
  return 0;
}
