// SPDX-License-Identifier: MIT
//
// Pinned host memory through the core's pool: size classes, reuse, misuse,
// async copies from and to it, and (under ACCEL_ALLOCATOR=raw, see
// tests/memory/CMakeLists.txt) no pooling at all.
#include <stdlib.h>
#include <string.h>

#include "memory_test.h"
#include "test.h"

static bool raw_mode(void) {
  const char* mode = getenv("ACCEL_ALLOCATOR");
  return mode != NULL && strcmp(mode, "raw") == 0;
}

// Reads the "cached" row of the pinned host section of the summary.
static unsigned long long cached_host_blocks(accel_device_t* d) {
  char text[8192];
  size_t length = 0;
  if (accel_device_memory_summary(d, text, sizeof(text), &length) != ACCEL_OK)
    return ~0ull;
  const char* row = strstr(text, "| cached ");
  if (row == NULL) return ~0ull;
  row = strchr(row + 2, '|');
  return row != NULL ? strtoull(row + 1, NULL, 10) : ~0ull;
}

TEST(pool_reuses_freed_blocks) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  void *p = NULL, *q = NULL, *r = NULL;
  ASSERT_OK(accel_host_alloc(d, 1000, &p));
  memset(p, 0x11, 1000);
  ASSERT_EQ((uintptr_t)p % 64, 0);
  accel_host_free(d, p);
  ASSERT_EQ(cached_host_blocks(d), raw_mode() ? 0 : 1);
  // Same size class (4 KiB): the cached block comes back.
  ASSERT_OK(accel_host_alloc(d, 3000, &q));
  memset(q, 0x22, 3000);
  if (!raw_mode()) ASSERT(q == p);
  ASSERT_EQ(cached_host_blocks(d), 0);
  // Another class does not take it.
  ASSERT_OK(accel_host_alloc(d, 100 * KiB + 1, &r));
  memset(r, 0x33, 100 * KiB + 1);
  ASSERT(r != q);
  accel_host_free(d, q);
  accel_host_free(d, r);
  ASSERT_EQ(cached_host_blocks(d), raw_mode() ? 0 : 2);
  ASSERT_OK(accel_device_empty_cache(d));
  ASSERT_EQ(cached_host_blocks(d), 0);
  accel_device_release(d);
}

TEST(many_sizes_round_trip) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  enum { kCount = 200 };
  void* ptrs[kCount] = {NULL};
  size_t sizes[kCount];
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < kCount; i++) {
      sizes[i] = (size_t)(i * 7919 % 300000) + 1;
      ASSERT_OK(accel_host_alloc(d, sizes[i], &ptrs[i]));
      memset(ptrs[i], (int)i, sizes[i]);  // the whole request is usable
    }
    for (int i = 0; i < kCount; i++) {
      ASSERT(memory_all(ptrs[i], sizes[i], (uint8_t)i));
    }
    for (int i = kCount - 1; i >= 0; i -= 2) accel_host_free(d, ptrs[i]);
    for (int i = kCount - 2; i >= 0; i -= 2) accel_host_free(d, ptrs[i]);
  }
  accel_device_release(d);
}

TEST(async_copies_through_pinned_memory) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  accel_device_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  ASSERT_OK(accel_device_query_info(d, &info));
  printf("  pinned memory cap: %s\n",
         (info.caps & ACCEL_DEVICE_CAP_PINNED_MEMORY) ? "yes" : "no");
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &stream));
  void *in = NULL, *out = NULL;
  ASSERT_OK(accel_host_alloc(d, 1 * MiB, &in));
  ASSERT_OK(accel_host_alloc(d, 1 * MiB, &out));
  memset(in, 0x5a, 1 * MiB);
  memset(out, 0, 1 * MiB);
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_stream_alloc_buffer(stream, 1 * MiB, &b));
  ASSERT_OK(accel_stream_write_buffer(stream, b, 0, in, 1 * MiB));
  ASSERT_OK(accel_stream_read_buffer(stream, b, 0, out, 1 * MiB));
  accel_buffer_release(b);  // safe: the core tracks the queued copies
  ASSERT_OK(accel_stream_synchronize(stream));
  ASSERT(memory_all(out, 1 * MiB, 0x5a));
  accel_host_free(d, in);
  accel_host_free(d, out);
  accel_stream_release(stream);
  accel_device_release(d);
}

TEST(host_memory_keeps_the_device_alive) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  void* p = NULL;
  ASSERT_OK(accel_host_alloc(d, 64, &p));
  accel_device_release(d);  // p holds the only reference now
  memset(p, 1, 64);
  accel_host_free(d, p);  // closes the device
}

TEST(misuse_is_ignored) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  void* p = NULL;
  ASSERT_OK(accel_host_alloc(d, 64, &p));
  int on_stack = 0;
  accel_host_free(d, &on_stack);     // not from the pool: warned, ignored
  accel_host_free(d, (char*)p + 8);  // interior pointer: ignored
  accel_host_free(d, p);
  accel_host_free(d, p);  // double free: warned, ignored
  accel_host_free(d, NULL);
  accel_host_free(NULL, p);
  void* q = &q;
  ASSERT_STATUS(accel_host_alloc(d, SIZE_MAX, &q), ACCEL_ERROR_OUT_OF_MEMORY);
  ASSERT_NULL(q);
  // The pool is still consistent.
  ASSERT_OK(accel_host_alloc(d, 64, &q));
  accel_host_free(d, q);
  accel_device_release(d);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
