// SPDX-License-Identifier: MIT
//
// CPU plugin devices through the public API. Runs with
// ACCEL_CPU_DEVICES=3 and ACCEL_CPU_MEMORY_LIMIT=256M (tests/cpu/
// CMakeLists.txt): properties, three devices, peer copies and the
// per-device memory limit.
#include <stdlib.h>
#include <string.h>

#include "cpu_test.h"
#include "test.h"

#define LIMIT ((uint64_t)256 << 20)
#define MiB ((size_t)1 << 20)

TEST(properties_are_plausible) {
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &device));
  accel_device_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  ASSERT_OK(accel_device_query_info(device, &info));
  printf("  %s: %s | %s | %s | %u CPUs | simd %u | %" PRIu64
         " bytes | kernel %s\n  features: %s\n",
         info.uri, info.name, info.vendor, info.arch, info.compute_units,
         info.simd_width, info.total_memory, info.driver_version,
         info.features);
  ASSERT_EQ(info.type, ACCEL_DEVICE_TYPE_CPU);
  ASSERT_STR_EQ(info.uri, "cpu:0");
  ASSERT_STR_EQ(info.backend, "cpu");
  ASSERT(info.name[0] != '\0');
  ASSERT(info.vendor[0] != '\0');
  ASSERT(info.arch[0] != '\0');
  ASSERT(info.driver_version[0] != '\0');
#if defined(__x86_64__)
  ASSERT(strncmp(info.arch, "x86-64-v", 8) == 0);
  ASSERT(info.arch[8] >= '1' && info.arch[8] <= '4' && info.arch[9] == '\0');
  ASSERT(info.simd_width == 4 || info.simd_width == 8 || info.simd_width == 16);
#endif
  ASSERT_GE(info.simd_width, 1);
  ASSERT_GE(info.compute_units, 1);
  // A block is one task looping over block_dim (accel/cpu_kernel.h).
  ASSERT_EQ(info.max_threads_per_block, 1024);
  ASSERT_GT(info.total_memory, 0);
  ASSERT_LE(info.total_memory, LIMIT);
  ASSERT_LE(info.free_memory, info.total_memory);
  ASSERT(info.caps & ACCEL_DEVICE_CAP_EVENT_TIMING);
  ASSERT(info.caps & ACCEL_DEVICE_CAP_F16);
  ASSERT(info.caps & ACCEL_DEVICE_CAP_BF16);
  ASSERT(info.caps & ACCEL_DEVICE_CAP_PEER_ACCESS);
  ASSERT_EQ(info.caps & ACCEL_DEVICE_CAP_PINNED_MEMORY, 0);
#if defined(__x86_64__) || defined(__aarch64__)
  ASSERT(info.caps & ACCEL_DEVICE_CAP_KERNELS);
#endif
  static const uint8_t zero_uuid[16];
  ASSERT_MEM_EQ(info.uuid, zero_uuid, sizeof(zero_uuid));
  ASSERT_STR_EQ(info.pci_bus_id, "");

  uint64_t free_bytes = 0, total = 0;
  ASSERT_OK(accel_device_query_memory(device, &free_bytes, &total));
  ASSERT_EQ(total, info.total_memory);
  ASSERT_LE(free_bytes, total);
  ASSERT_GT(free_bytes, 0);
  accel_device_release(device);
}

TEST(three_devices) {
  uint32_t count = 0, cpus = 0;
  ASSERT_OK(accel_device_count(&count));
  for (uint32_t i = 0; i < count; i++) {
    accel_device_t* device = NULL;
    ASSERT_OK(accel_device_get(i, &device));
    if (strcmp(accel_device_backend(device), "cpu") == 0) cpus++;
    accel_device_release(device);
  }
  ASSERT_EQ(cpus, 3);
  static const char* const kUris[] = {"cpu:0", "cpu:1", "cpu:2"};
  for (uint32_t i = 0; i < 3; i++) {
    accel_device_t* device = NULL;
    ASSERT_OK(accel_device_open(kUris[i], &device));
    ASSERT_STR_EQ(accel_device_uri(device), kUris[i]);
    ASSERT_EQ(accel_device_index(device), i);
    accel_device_release(device);
  }
  accel_device_t* missing = NULL;
  ASSERT_STATUS(accel_device_open("cpu:3", &missing), ACCEL_ERROR_NOT_FOUND);
  ASSERT_NULL(missing);
}

TEST(peer_copies) {
  enum { kSize = 1 << 20 };
  accel_device_t* d[3] = {NULL};
  accel_buffer_t* b[3] = {NULL};
  for (int i = 0; i < 3; i++) {
    char uri[16];
    snprintf(uri, sizeof(uri), "cpu:%d", i);
    ASSERT_OK(accel_device_open(uri, &d[i]));
    ASSERT_OK(accel_buffer_create(d[i], kSize, &b[i]));
    ASSERT_OK(accel_buffer_fill(b[i], 0, 0, kSize));
  }
  bool can = false;
  ASSERT_OK(accel_device_can_access_peer(d[1], d[0], &can));
  ASSERT(can);
  ASSERT_OK(accel_device_can_access_peer(d[0], d[2], &can));
  ASSERT(can);
  ASSERT_OK(accel_device_can_access_peer(d[0], d[0], &can));
  ASSERT(!can);

  uint8_t* pattern = malloc(kSize);
  uint8_t* out = malloc(kSize);
  ASSERT_NOT_NULL(pattern);
  ASSERT_NOT_NULL(out);
  for (int i = 0; i < kSize; i++) pattern[i] = (uint8_t)(i * 13 + 1);
  ASSERT_OK(accel_buffer_write(b[0], 0, pattern, kSize));

  // Synchronous peer copy cpu:0 -> cpu:1.
  ASSERT_OK(accel_buffer_copy(b[1], 0, b[0], 0, kSize));
  ASSERT_OK(accel_buffer_read(b[1], 0, out, kSize));
  ASSERT_MEM_EQ(out, pattern, kSize);

  // Stream peer copies on the destination's stream: cpu:1 -> cpu:2, and
  // a partial one cpu:0 -> cpu:2 at offsets.
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_stream_create(d[2], 0, &stream));
  ASSERT_OK(accel_stream_copy_buffer(stream, b[2], 0, b[1], 0, kSize));
  ASSERT_OK(accel_stream_fill_buffer(stream, b[2], 0, 0xEE, 100));
  ASSERT_OK(accel_stream_copy_buffer(stream, b[2], 10, b[0], 20, 30));
  ASSERT_OK(accel_stream_read_buffer(stream, b[2], 0, out, kSize));
  ASSERT_OK(accel_stream_synchronize(stream));
  ASSERT(cpu_test_all(out, 10, 0xEE));
  ASSERT_MEM_EQ(out + 10, pattern + 20, 30);
  ASSERT(cpu_test_all(out + 40, 60, 0xEE));
  ASSERT_MEM_EQ(out + 100, pattern + 100, kSize - 100);

  // The stream's device must own the destination.
  ASSERT_STATUS(accel_stream_copy_buffer(stream, b[1], 0, b[2], 0, 16),
                ACCEL_ERROR_INVALID_ARGUMENT);
  accel_stream_release(stream);
  free(out);
  free(pattern);
  for (int i = 0; i < 3; i++) {
    accel_buffer_release(b[i]);
    accel_device_release(d[i]);
  }
}

TEST(memory_limit_per_device) {
  accel_device_t *d0 = NULL, *d1 = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d0));
  ASSERT_OK(accel_device_open("cpu:1", &d1));
  uint64_t free_bytes = 0, total = 0;
  ASSERT_OK(accel_device_query_memory(d0, &free_bytes, &total));
  ASSERT_EQ(total, LIMIT);

  accel_buffer_t *big = NULL, *more = NULL, *other = NULL;
  ASSERT_OK(accel_buffer_create(d0, 192 * MiB, &big));
  ASSERT_OK(accel_device_query_memory(d0, &free_bytes, &total));
  ASSERT_LE(free_bytes, LIMIT - 192 * MiB);

  ASSERT_STATUS(accel_buffer_create(d0, 128 * MiB, &more),
                ACCEL_ERROR_OUT_OF_DEVICE_MEMORY);
  ASSERT_NULL(more);
  const char* message = accel_last_error();
  printf("  message: %s\n", message);
  // The core's allocator states requested, allocated, reserved, free and
  // total; the plugin's own reason (with its exact byte counts) follows.
  ASSERT_STR_CONTAINS(message,
                      "cpu:0: out of device memory: tried to allocate "
                      "128.00 MiB; 192.00 MiB allocated; 192.00 MiB "
                      "reserved; 64.00 MiB free of 256.00 MiB total (");
  ASSERT_STR_CONTAINS(message, "134217728");  // requested, by the plugin
  ASSERT_STR_CONTAINS(message, "201326592");  // allocated, by the plugin
  ASSERT_STR_CONTAINS(message, "268435456");  // limit, by the plugin

  // The limit is per device: cpu:1 still has all of its memory.
  ASSERT_OK(accel_buffer_create(d1, 192 * MiB, &other));
  // Freeing gives the memory back: the allocator keeps it cached, and
  // gives the cache to the plugin when a request needs it.
  ASSERT_OK(accel_buffer_create(d0, 64 * MiB, &more));
  accel_buffer_release(more);
  more = NULL;
  accel_buffer_release(big);
  ASSERT_OK(accel_buffer_create(d0, 256 * MiB, &more));
  accel_buffer_release(more);
  more = NULL;
  ASSERT_STATUS(accel_buffer_create(d0, 256 * MiB + 1, &more),
                ACCEL_ERROR_OUT_OF_DEVICE_MEMORY);

  accel_buffer_release(other);
  accel_device_release(d1);
  accel_device_release(d0);
}

TEST(odd_allocation_sizes) {
  // Sizes that are not multiples of the 64-byte allocation granule.
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &device));
  for (size_t size = 1; size <= 4096; size = size * 3 + 1) {
    accel_buffer_t* buf = NULL;
    ASSERT_OK(accel_buffer_create(device, size, &buf));
    ASSERT_OK(accel_buffer_fill(buf, 0, (uint8_t)size, size));
    uint8_t out[4096];
    ASSERT_OK(accel_buffer_read(buf, 0, out, size));
    ASSERT(cpu_test_all(out, size, (uint8_t)size));
    accel_buffer_release(buf);
  }
  accel_device_release(device);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
