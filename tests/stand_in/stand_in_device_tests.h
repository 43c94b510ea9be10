// SPDX-License-Identifier: MIT
//
// Device tests both GPU stand-ins pass (see stand_in.h), included by each
// backend's own device test, which adds what only its stand-in can do
// (tests/cuda/fakecuda/test_fakecuda.c as cuda_fake,
// tests/rocm/test_rocm_fake.c as rocm_fake): the properties the plugin
// reads from the driver, and an asynchronous kernel fault mapped to
// DEVICE_LOST at the next synchronisation. Both skip where the stand-in
// runs another device than its default. TEST()s register per translation
// unit (tests/test.h), so these are included, not linked.
#ifndef ACCEL_TESTS_STAND_IN_STAND_IN_DEVICE_TESTS_H_
#define ACCEL_TESTS_STAND_IN_STAND_IN_DEVICE_TESTS_H_

#include <accel/accel.h>
#include <stdlib.h>
#include <string.h>

#include "stand_in/stand_in.h"
#include "test.h"

// The stand-in into `fake` and device 0 into `device`, or skips.
#define STAND_IN_OPEN_DEFAULT(fake, device)                               \
  do {                                                                    \
    (fake) = stand_in_open();                                             \
    if ((fake) == NULL) {                                                 \
      SKIP("%s does not name the stand-in", stand_in_backend.driver_env); \
    }                                                                     \
    if (!(fake)->default_device()) SKIP("not the default device");        \
    ASSERT_OK(accel_device_open(stand_in_uri(fake, 0), &(device)));       \
  } while (0)

// Fills 1024 f32 on a new stream and synchronises; returns the status.
static accel_status_t stand_in_fill_once(accel_device_t* device) {
  accel_stream_t* stream = NULL;
  accel_buffer_t* buffer = NULL;
  accel_status_t st = accel_stream_create(device, 0, &stream);
  if (!st) st = accel_buffer_create(device, 4096, &buffer);
  if (!st) st = accel_op_fill(stream, buffer, 0, ACCEL_DTYPE_F32, 1024, 2.0);
  if (!st) st = accel_stream_synchronize(stream);
  float v = 0;
  if (!st) st = accel_buffer_read(buffer, 4092, &v, sizeof(v));
  if (!st && v != 2.0f) st = ACCEL_ERROR_INTERNAL;
  accel_buffer_release(buffer);
  accel_stream_release(stream);
  return st;
}

TEST(props) {
  const stand_in_t* fake = NULL;
  accel_device_t* device = NULL;
  STAND_IN_OPEN_DEFAULT(fake, device);
  const stand_in_props_t* want = &fake->props;
  accel_device_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  ASSERT_OK(accel_device_query_info(device, &info));
  ASSERT_STR_EQ(info.backend, want->backend);
  ASSERT_STR_EQ(info.vendor, want->vendor);
  ASSERT_STR_EQ(info.name, want->name);
  ASSERT_STR_EQ(info.arch, want->arch);
  ASSERT_STR_EQ(info.module_target, want->module_target);
  ASSERT_STR_CONTAINS(info.driver_version, want->driver_version);
  ASSERT_STR_CONTAINS(info.features, want->features);
  if (want->pci_bus_id != NULL) {
    ASSERT_STR_EQ(info.pci_bus_id, want->pci_bus_id);
  }
  if (want->uuid_prefix != NULL) {
    ASSERT_MEM_EQ(info.uuid, want->uuid_prefix, strlen(want->uuid_prefix));
  }
  ASSERT_EQ(info.compute_units, want->compute_units);
  ASSERT_EQ(info.max_threads_per_block, want->max_threads_per_block);
  ASSERT_EQ(info.simd_width, want->simd_width);
  ASSERT_EQ(info.total_memory, want->total_memory);
  // ABI 1.3 properties: the whole memory, the shared memory limit, any
  // offset, the driver's grid limits, the platform.
  ASSERT_EQ(info.max_alloc_size, want->max_alloc_size);
  ASSERT_EQ(info.max_shared_mem_bytes, want->max_shared_mem_bytes);
  ASSERT_EQ(info.buffer_offset_alignment, 0);
  for (int i = 0; i < 3; i++) {
    if (want->max_grid[i] != 0) ASSERT_EQ(info.max_grid[i], want->max_grid[i]);
  }
  ASSERT_STR_EQ(info.platform, want->platform);
  ASSERT_EQ(info.caps & want->caps, want->caps);
  accel_device_release(device);
}

TEST(async_fault_is_device_lost) {
  const stand_in_t* fake = NULL;
  accel_device_t* device = NULL;
  STAND_IN_OPEN_DEFAULT(fake, device);
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &stream));
  accel_buffer_t* buffer = NULL;
  ASSERT_OK(accel_buffer_create(device, 4096, &buffer));
  // The stand-in reads its fault variable at each launch (libfakecuda) or
  // when the kernel runs (libfakehip): the fill is queued fine and its
  // fault shows at the next synchronisation, as on a GPU.
  setenv(fake->fault_env, fake->fill_kernel, 1);
  accel_status_t launched =
      accel_op_fill(stream, buffer, 0, ACCEL_DTYPE_F32, 1024, 1.0);
  accel_status_t synced = accel_stream_synchronize(stream);
  unsetenv(fake->fault_env);
  ASSERT_OK(launched);
  ASSERT_EQ(synced, ACCEL_ERROR_DEVICE_LOST);
  printf("  %s\n", accel_last_error());
  ASSERT_STR_CONTAINS(accel_last_error(), fake->fault_error);
  if (fake->fault_call != NULL) {
    ASSERT_STR_CONTAINS(accel_last_error(), fake->fault_call);
  }
  // Sticky where the stand-in models it: the device stays lost for later
  // work.
  if (fake->fault_is_sticky) {
    ASSERT_EQ(accel_op_fill(stream, buffer, 0, ACCEL_DTYPE_F32, 1, 1.0),
              ACCEL_ERROR_DEVICE_LOST);
  }
  accel_buffer_release(buffer);
  accel_stream_release(stream);
  accel_device_release(device);
  // The last release ends the lost device; a new one works.
  ASSERT_OK(accel_device_open(stand_in_uri(fake, 0), &device));
  ASSERT_OK(stand_in_fill_once(device));
  accel_device_release(device);
}

#endif  // ACCEL_TESTS_STAND_IN_STAND_IN_DEVICE_TESTS_H_
