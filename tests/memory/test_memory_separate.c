// SPDX-License-Identifier: MIT
//
// The caching allocator on a device that reports
// ACCEL_DEVICE_CAP_SEPARATE_ALLOCATIONS (OpenCL): every buffer is a plugin
// allocation of its own, nothing is split, and a cached allocation serves
// only a request of at least half its size. The fx_probe fixture declares
// the capability under ACCEL_FX_PROBE_SEPARATE=1; without it the same
// requests share one 2 MiB segment, as on every other device.
#include <accel/accel.h>
#include <accel/interop.h>
#include <stdlib.h>

#include "loader_util.h"
#include "memory_test.h"
#include "test.h"

// Opens fxprobe:0 afresh, with or without the capability.
static accel_device_t* probe_device(bool separate) {
  if (separate) {
    setenv("ACCEL_FX_PROBE_SEPARATE", "1", 1);
  } else {
    unsetenv("ACCEL_FX_PROBE_SEPARATE");
  }
  lu_restart(lu_env_path("ACCEL_TEST_FX_PROBE"));
  accel_device_t* device = NULL;
  if (accel_device_open("fxprobe:0", &device) != ACCEL_OK) return NULL;
  return device;
}

static uint64_t handle_of(const accel_buffer_t* b, size_t* out_offset) {
  uint64_t handle = 0;
  *out_offset = SIZE_MAX;
  if (accel_buffer_query_native(b, &handle, out_offset) != ACCEL_OK) return 0;
  return handle;
}

TEST(capability_is_reported) {
  accel_device_t* device = probe_device(true);
  ASSERT(device != NULL);
  accel_device_info_t info = {.struct_size = sizeof(info)};
  ASSERT_OK(accel_device_query_info(device, &info));
  ASSERT((info.caps & ACCEL_DEVICE_CAP_SEPARATE_ALLOCATIONS) != 0);
  ASSERT_STR_EQ(accel_device_cap_name(ACCEL_DEVICE_CAP_SEPARATE_ALLOCATIONS),
                "separate_allocations");
  accel_device_release(device);
}

// Three small buffers: three allocations of their rounded sizes, each at
// offset 0 of its own handle.
TEST(small_buffers_never_share) {
  accel_device_t* device = probe_device(true);
  ASSERT(device != NULL);
  static const size_t sizes[3] = {1000, 4096, 5000};
  accel_buffer_t* b[3] = {NULL, NULL, NULL};
  uint64_t h[3];
  for (int i = 0; i < 3; i++) {
    ASSERT_OK(accel_buffer_create(device, sizes[i], &b[i]));
    size_t offset = 0;
    h[i] = handle_of(b[i], &offset);
    ASSERT(h[i] != 0);
    ASSERT_EQ(offset, 0);
  }
  ASSERT(h[0] != h[1] && h[1] != h[2] && h[0] != h[2]);
  accel_memory_stats_t s = memory_stats(device);
  ASSERT_EQ(s.struct_size, sizeof(s));
  ASSERT_EQ(s.raw_allocs, 3);
  ASSERT_EQ(s.reserved_bytes, 1024 + 4096 + 5120);
  ASSERT_EQ(s.allocated_bytes, 1024 + 4096 + 5120);
  ASSERT_EQ(s.inactive_split_bytes, 0);
  for (int i = 0; i < 3; i++) accel_buffer_release(b[i]);
  ASSERT_OK(accel_device_empty_cache(device));
  s = memory_stats(device);
  ASSERT_EQ(s.struct_size, sizeof(s));
  ASSERT_EQ(s.reserved_bytes, 0);
  ASSERT_EQ(s.raw_frees, 3);
  accel_device_release(device);
}

// A freed 4 KiB allocation serves 3000 bytes (at least half of it) whole,
// not 1024 (it would waste three quarters): that one gets its own.
TEST(reuse_needs_half_the_size) {
  accel_device_t* device = probe_device(true);
  ASSERT(device != NULL);
  accel_buffer_t* first = NULL;
  ASSERT_OK(accel_buffer_create(device, 4096, &first));
  size_t offset = 0;
  uint64_t h4k = handle_of(first, &offset);
  accel_buffer_release(first);

  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(device, 3000, &b));
  ASSERT_EQ(handle_of(b, &offset), h4k);
  accel_memory_stats_t s = memory_stats(device);
  ASSERT_EQ(s.struct_size, sizeof(s));
  ASSERT_EQ(s.raw_allocs, 1);
  ASSERT_EQ(s.cache_hits, 1);
  ASSERT_EQ(s.allocated_bytes, 4096);  // the whole block, never cut
  accel_buffer_release(b);

  ASSERT_OK(accel_buffer_create(device, 1024, &b));
  ASSERT(handle_of(b, &offset) != h4k);
  s = memory_stats(device);
  ASSERT_EQ(s.struct_size, sizeof(s));
  ASSERT_EQ(s.raw_allocs, 2);
  ASSERT_EQ(s.reserved_bytes, 4096 + 1024);
  accel_buffer_release(b);

  // Large requests: a 3 MiB buffer's 4 MiB segment serves 2.5 MiB but
  // not 1.5 MiB.
  ASSERT_OK(accel_buffer_create(device, 3u << 20, &b));
  uint64_t h4m = handle_of(b, &offset);
  accel_buffer_release(b);
  ASSERT_OK(accel_buffer_create(device, 5u << 19, &b));
  ASSERT_EQ(handle_of(b, &offset), h4m);
  accel_buffer_release(b);
  ASSERT_OK(accel_buffer_create(device, 3u << 19, &b));
  ASSERT(handle_of(b, &offset) != h4m);
  s = memory_stats(device);
  ASSERT_EQ(s.struct_size, sizeof(s));
  ASSERT_EQ(s.raw_allocs, 4);
  ASSERT_EQ(s.inactive_split_bytes, 0);
  accel_buffer_release(b);
  accel_device_release(device);
}

// Without the capability two small buffers are blocks of one segment.
TEST(other_devices_still_share_segments) {
  accel_device_t* device = probe_device(false);
  ASSERT(device != NULL);
  accel_buffer_t* a = NULL;
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(device, 1000, &a));
  ASSERT_OK(accel_buffer_create(device, 1000, &b));
  size_t oa = 0, ob = 0;
  ASSERT_EQ(handle_of(a, &oa), handle_of(b, &ob));
  ASSERT(oa != ob);
  accel_memory_stats_t s = memory_stats(device);
  ASSERT_EQ(s.struct_size, sizeof(s));
  ASSERT_EQ(s.raw_allocs, 1);
  accel_buffer_release(a);
  accel_buffer_release(b);
  accel_device_release(device);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
