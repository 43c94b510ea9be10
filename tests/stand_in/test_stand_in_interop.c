// SPDX-License-Identifier: MIT
//
// Interop of a GPU plugin on its stand-in with two devices
// (cuda_fake_interop, rocm_fake_interop and rocm_fake_interop_60300000;
// the adapter is stand_in.h): the native handles are the driver's own
// objects (the device ordinal, the primary context where the API has one,
// a stream that orders work the test enqueues itself with accel's, an
// event, the device pointer of the allocation); memory from cuMemAlloc/
// hipMalloc wraps as an accel buffer after the plugin's checks
// (cuPointerGetAttribute; hipPointerGetAttributes and
// hipMemGetAddressRange), which refuse another device's memory, host
// memory and ranges past an allocation; DLPack export and import of
// kDLCUDA/kDLROCM tensors; and host registration through
// cuMemHostRegister/hipHostRegister (a registration never undone is a leak
// the stand-in reports). ROCm runs at HIP 5.2 and 6.3 (FAKEHIP_VERSION):
// ROCm 6 renumbered hipMemoryType and answers "unregistered" for unknown
// memory where ROCm 5 fails. This proves the plugins' plumbing, not GPU
// hardware.
#include <accel/interop.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interop/dlpack_abi.h"
#include "stand_in/stand_in.h"
#include "test.h"

// Opens device `index` of the stand-in into `out`, or skips.
#define OPEN_OR_SKIP(fake, index, out)                                    \
  do {                                                                    \
    (fake) = stand_in_open();                                             \
    if ((fake) == NULL) {                                                 \
      SKIP("%s does not name the stand-in", stand_in_backend.driver_env); \
    }                                                                     \
    ASSERT_OK(accel_device_open(stand_in_uri(fake, index), (out)));       \
  } while (0)

// A vendor call returned success (0 in both APIs).
#define VENDOR_OK(call) ASSERT_EQ((call), 0)

TEST(device_and_context_are_the_drivers) {
  const stand_in_t* fake = NULL;
  accel_device_t* d1 = NULL;
  OPEN_OR_SKIP(fake, 1, &d1);
  uint64_t dev = 9, ctx = 7;
  ASSERT_OK(accel_device_query_native(d1, ACCEL_NATIVE_DEVICE, &dev));
  ASSERT_EQ(dev, 1);
  if (fake->primary_context != NULL) {
    ASSERT_OK(accel_device_query_native(d1, ACCEL_NATIVE_CONTEXT, &ctx));
    uint64_t primary = 0;
    VENDOR_OK(fake->primary_context(1, &primary));
    ASSERT_EQ(ctx, primary);
  } else {
    ASSERT_STATUS(accel_device_query_native(d1, ACCEL_NATIVE_CONTEXT, &ctx),
                  ACCEL_ERROR_UNSUPPORTED);
    ASSERT_EQ(ctx, 0);
    ASSERT_STR_CONTAINS(accel_last_error(), fake->no_context);
  }
  int32_t type = 0, id = 0;
  ASSERT_OK(accel_dlpack_device(d1, &type, &id));
  ASSERT_EQ(type, fake->dlpack_type);
  ASSERT_EQ(id, 1);
  accel_device_release(d1);
}

// On each device: accel fills, the test's own memset on the native stream
// overwrites the first `split` bytes, accel reads: one order, the stream's.
TEST(native_stream_orders_work_with_accel) {
  for (int index = 0; index < 2; index++) {
    const stand_in_t* fake = NULL;
    accel_device_t* d = NULL;
    OPEN_OR_SKIP(fake, index, &d);
    accel_stream_t* s = NULL;
    accel_event_t* e = NULL;
    accel_buffer_t* b = NULL;
    ASSERT_OK(accel_stream_create(d, 0, &s));
    ASSERT_OK(accel_event_create(d, 0, &e));
    ASSERT_OK(accel_buffer_create(d, 4096, &b));
    uint64_t stream = 0, event = 0, mem = 0, address = 0;
    size_t offset = 0;
    ASSERT_OK(accel_stream_query_native(s, &stream));
    ASSERT_OK(accel_event_query_native(e, &event));
    ASSERT_OK(accel_buffer_query_native(b, &mem, &offset));
    ASSERT_OK(accel_buffer_query_address(b, 0, &address));
    ASSERT_EQ(mem + offset, address);
    int ordinal = -1;
    uint64_t owner = 0, ctx = 0;
    VENDOR_OK(fake->pointer_owner(mem, &ordinal, &owner));
    ASSERT_EQ(ordinal, index);
    if (fake->primary_context != NULL) {
      ASSERT_OK(accel_device_query_native(d, ACCEL_NATIVE_CONTEXT, &ctx));
      ASSERT_EQ(owner, ctx);
    }
    const size_t split = index == 0 ? 2048 : 1000;
    const int fill = index == 0 ? 0x11 : 0x22, over = index == 0 ? 0xab : 0xcd;
    unsigned char out[4096];
    ASSERT_OK(accel_stream_fill_buffer(s, b, 0, fill, sizeof(out)));
    VENDOR_OK(fake->memset_async(index, address, over, split, stream));
    ASSERT_OK(accel_stream_read_buffer(s, b, 0, out, sizeof(out)));
    ASSERT_OK(accel_event_record(e, s));
    ASSERT_OK(accel_event_synchronize(e));
    ASSERT_EQ(out[0], over);
    ASSERT_EQ(out[split - 1], over);
    ASSERT_EQ(out[split], fill);
    VENDOR_OK(fake->event_query(event));
    ASSERT_OK(accel_stream_synchronize(s));
    VENDOR_OK(fake->stream_query(stream));
    accel_buffer_release(b);
    accel_event_release(e);
    accel_stream_release(s);
    accel_device_release(d);
  }
}

static int wrap_releases;
static void wrap_release(void* user) {
  (void)user;
  wrap_releases++;
}

TEST(driver_memory_wraps_after_the_drivers_checks) {
  const stand_in_t* fake = NULL;
  accel_device_t* d0 = NULL;
  accel_device_t* d1 = NULL;
  OPEN_OR_SKIP(fake, 0, &d0);
  ASSERT_OK(accel_device_open(stand_in_uri(fake, 1), &d1));
  uint64_t p = 0;
  VENDOR_OK(fake->mem_alloc(0, 8192, &p));
  // The fake's device memory is host memory: the test looks at it directly.
  unsigned char* raw = (unsigned char*)(uintptr_t)p;
  memset(raw, 0, 8192);
  accel_buffer_t* b = NULL;
  // Refused: another device's memory, past the allocation's end, memory
  // the driver does not know, page-locked host memory.
  char foreign[128];
  snprintf(foreign, sizeof(foreign), "memory of %s device 0", fake->api);
  ASSERT_STATUS(accel_buffer_wrap(d1, p, 8192, wrap_release, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), foreign);
  ASSERT_STATUS(accel_buffer_wrap(d0, p + 4096, 4097, wrap_release, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "run past the end");
  ASSERT_STATUS(accel_buffer_wrap(d0, p + 8000, 200, wrap_release, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "run past the end");
  static unsigned char host[4096];
  ASSERT_STATUS(accel_buffer_wrap(d0, (uint64_t)(uintptr_t)host, 100,
                                  wrap_release, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), fake->unknown_memory);
  ASSERT_OK(accel_host_register(d0, host, sizeof(host), 0));
  ASSERT_STATUS(accel_buffer_wrap(d0, (uint64_t)(uintptr_t)host, 100,
                                  wrap_release, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), fake->host_memory);
  ASSERT_OK(accel_host_unregister(d0, host));
  ASSERT_EQ(wrap_releases, 0);
  // An interior range wraps; accel's work lands in the owner's memory.
  ASSERT_OK(accel_buffer_wrap(d0, p + 1024, 4096, wrap_release, NULL, &b));
  uint64_t mem = 0, address = 0;
  size_t offset = 1;
  ASSERT_OK(accel_buffer_query_native(b, &mem, &offset));
  ASSERT_EQ(mem, p + 1024);
  ASSERT_EQ(offset, 0);
  ASSERT_OK(accel_buffer_query_address(b, 16, &address));
  ASSERT_EQ(address, p + 1040);
  ASSERT_OK(accel_buffer_fill(b, 0, 0x5c, 4096));
  ASSERT_EQ(raw[1023], 0);
  ASSERT_EQ(raw[1024], 0x5c);
  ASSERT_EQ(raw[1024 + 4095], 0x5c);
  accel_buffer_release(b);
  ASSERT_EQ(wrap_releases, 1);
  // So does one that ends where the allocation does.
  ASSERT_OK(accel_buffer_wrap(d0, p + 4096, 4096, wrap_release, NULL, &b));
  ASSERT_OK(accel_buffer_fill(b, 0, 0x77, 4096));
  ASSERT_EQ(raw[4095], 0x5c);
  ASSERT_EQ(raw[4096], 0x77);
  ASSERT_EQ(raw[8191], 0x77);
  accel_buffer_release(b);
  ASSERT_EQ(wrap_releases, 2);
  fake->mem_free(0, p);
  accel_device_release(d1);
  accel_device_release(d0);
}

static int tensor_deletes;
static void tensor_delete(dl_managed_t* self) {
  (void)self;
  tensor_deletes++;
}

// Versioned, from an offset: the tensor is on (device type, 1) at the
// address, and imports back as a wrapped buffer on device 1.
TEST(dlpack_both_ways) {
  const stand_in_t* fake = NULL;
  accel_device_t* d1 = NULL;
  OPEN_OR_SKIP(fake, 1, &d1);
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(d1, 64 * sizeof(float), &b));
  float in[64];
  for (int i = 0; i < 64; i++) in[i] = (float)i * 0.5f;
  ASSERT_OK(accel_buffer_write(b, 0, in, sizeof(in)));
  int64_t shape[2] = {8, 8};
  void* managed = NULL;
  ASSERT_OK(accel_buffer_to_dlpack(b, 8 * sizeof(float), ACCEL_DTYPE_F32, 1,
                                   shape, NULL, true, &managed));
  dl_versioned_t* v = managed;
  uint64_t address = 0;
  ASSERT_OK(accel_buffer_query_address(b, 8 * sizeof(float), &address));
  ASSERT_EQ(v->dl_tensor.device.device_type, fake->dlpack_type);
  ASSERT_EQ(v->dl_tensor.device.device_id, 1);
  ASSERT_EQ((uint64_t)(uintptr_t)v->dl_tensor.data, address);
  // Import it back (no device given): a wrapped buffer on device 1.
  accel_buffer_t* w = NULL;
  ASSERT_OK(accel_buffer_from_dlpack(managed, true, NULL, &w));
  ASSERT_STR_EQ(accel_device_uri(accel_buffer_device(w)),
                stand_in_uri(fake, 1));
  float got[8];
  ASSERT_OK(accel_buffer_read(w, 0, got, sizeof(got)));
  ASSERT_MEM_EQ(got, in + 8, sizeof(got));
  accel_buffer_release(b);  // the tensor (and so `w`) keeps the memory
  ASSERT_OK(accel_buffer_read(w, 0, got, sizeof(got)));
  ASSERT_MEM_EQ(got, in + 8, sizeof(got));
  accel_buffer_release(w);  // runs the export's deleter
  // Refused: the tensor's device does not match the one given.
  accel_device_t* d0 = NULL;
  ASSERT_OK(accel_device_open(stand_in_uri(fake, 0), &d0));
  ASSERT_OK(accel_buffer_create(d1, 64, &b));
  ASSERT_OK(accel_buffer_to_dlpack(b, 0, ACCEL_DTYPE_F32, 1, shape, NULL, false,
                                   &managed));
  ASSERT_STATUS(accel_buffer_from_dlpack(managed, false, d0, &w),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ((dl_managed_t*)managed)->deleter(managed);
  accel_buffer_release(b);
  accel_device_release(d0);
  accel_device_release(d1);
}

// Unversioned, the whole buffer, read back after the exporter released it.
TEST(dlpack_unversioned_both_ways) {
  const stand_in_t* fake = NULL;
  accel_device_t* d1 = NULL;
  OPEN_OR_SKIP(fake, 1, &d1);
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(d1, 32 * sizeof(float), &b));
  float in[32];
  for (int i = 0; i < 32; i++) in[i] = (float)i + 0.25f;
  ASSERT_OK(accel_buffer_write(b, 0, in, sizeof(in)));
  int64_t shape[1] = {32};
  void* managed = NULL;
  ASSERT_OK(accel_buffer_to_dlpack(b, 0, ACCEL_DTYPE_F32, 1, shape, NULL, false,
                                   &managed));
  dl_managed_t* m = managed;
  ASSERT_EQ(m->dl_tensor.device.device_type, fake->dlpack_type);
  ASSERT_EQ(m->dl_tensor.device.device_id, 1);
  accel_buffer_t* w = NULL;
  ASSERT_OK(accel_buffer_from_dlpack(managed, false, NULL, &w));
  ASSERT_STR_EQ(accel_device_uri(accel_buffer_device(w)),
                stand_in_uri(fake, 1));
  accel_buffer_release(b);
  float got[32];
  ASSERT_OK(accel_buffer_read(w, 0, got, sizeof(got)));
  ASSERT_MEM_EQ(got, in, sizeof(in));
  accel_buffer_release(w);
  accel_device_release(d1);
}

TEST(dlpack_import_of_another_librarys_tensor) {
  const stand_in_t* fake = NULL;
  accel_device_t* d = NULL;
  OPEN_OR_SKIP(fake, 0, &d);
  uint64_t p = 0;
  VENDOR_OK(fake->mem_alloc(0, 256 * sizeof(int32_t), &p));
  int32_t* raw = (int32_t*)(uintptr_t)p;  // host memory in the fake
  for (int i = 0; i < 256; i++) raw[i] = i;
  int64_t shape[2] = {16, 16};
  int64_t strides[2] = {16, 1};
  dl_managed_t m = {
      .dl_tensor = {.data = raw,
                    .device = {fake->dlpack_type, 0},
                    .ndim = 2,
                    .dtype = {DL_INT, 32, 1},
                    .shape = shape,
                    .strides = strides,
                    .byte_offset = 16 * sizeof(int32_t)},
      .manager_ctx = NULL,
      .deleter = tensor_delete,
  };
  tensor_deletes = 0;
  accel_buffer_t* b = NULL;
  // 16 x 16 from byte offset 64 runs past the 1 KiB allocation: refused
  // by the driver's range check, and the deleter is not called.
  ASSERT_STATUS(accel_buffer_from_dlpack(&m, false, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "run past the end");
  ASSERT_EQ(tensor_deletes, 0);
  shape[0] = 15;
  ASSERT_OK(accel_buffer_from_dlpack(&m, false, NULL, &b));
  ASSERT_EQ(accel_buffer_size(b), 15 * 16 * sizeof(int32_t));
  int32_t first = -1;
  ASSERT_OK(accel_buffer_read(b, 0, &first, sizeof(first)));
  ASSERT_EQ(first, 16);
  ASSERT_OK(accel_buffer_fill(b, 0, 0, sizeof(int32_t)));
  ASSERT_EQ(raw[16], 0);
  ASSERT_EQ(tensor_deletes, 0);
  accel_buffer_release(b);
  ASSERT_EQ(tensor_deletes, 1);
  fake->mem_free(0, p);
  accel_device_release(d);
}

TEST(host_register_page_locks_with_the_driver) {
  const stand_in_t* fake = NULL;
  accel_device_t* d0 = NULL;
  accel_device_t* d1 = NULL;
  OPEN_OR_SKIP(fake, 0, &d0);
  ASSERT_OK(accel_device_open(stand_in_uri(fake, 1), &d1));
  size_t n = (size_t)1 << 20;
  unsigned char* host = malloc(2 * n);
  ASSERT_NOT_NULL(host);
  ASSERT(!fake->host_registered(host, 2 * n));
  ASSERT_OK(accel_host_register(d0, host, 2 * n, 0));
  ASSERT(fake->host_registered(host, 2 * n));
  // Once per backend: device 1 may not register it again.
  char again[128];
  snprintf(again, sizeof(again), "already registered on %s",
           stand_in_uri(fake, 0));
  ASSERT_STATUS(accel_host_register(d1, host + n, 16, 0),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), again);
  // Copies from and to registered memory.
  accel_stream_t* s = NULL;
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_stream_create(d0, 0, &s));
  ASSERT_OK(accel_buffer_create(d0, n, &b));
  for (size_t i = 0; i < n; i++) host[i] = (unsigned char)(i * 31 + 7);
  ASSERT_OK(accel_stream_write_buffer(s, b, 0, host, n));
  ASSERT_OK(accel_stream_read_buffer(s, b, 0, host + n, n));
  ASSERT_OK(accel_stream_synchronize(s));
  ASSERT_MEM_EQ(host, host + n, n);
  ASSERT_OK(accel_host_unregister(d0, host));
  ASSERT(!fake->host_registered(host, 1));
  // Memory the driver already pins (accel_host_alloc's) is refused, where
  // the stand-in says so (libfakehip registers it again).
  if (fake->pinned_register_refused) {
    void* pinned = NULL;
    ASSERT_OK(accel_host_alloc(d0, 4096, &pinned));
    ASSERT_STATUS(accel_host_register(d0, pinned, 4096, 0),
                  ACCEL_ERROR_INVALID_ARGUMENT);
    ASSERT_STR_CONTAINS(accel_last_error(), "already page-locks");
    bool in = true;
    ASSERT_OK(accel_host_query_registered(d0, pinned, 1, &in));
    ASSERT(!in);  // a refused registration is not recorded
    accel_host_free(d0, pinned);
  }
  accel_buffer_release(b);
  accel_stream_release(s);
  accel_device_release(d1);
  accel_device_release(d0);
  free(host);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
