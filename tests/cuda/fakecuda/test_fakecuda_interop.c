// SPDX-License-Identifier: MIT
//
// Interop of the CUDA plugin on libfakecuda (two fake devices): the native
// handles are the driver's own objects (the device ordinal, the primary
// context, a CUstream that orders work the test enqueues itself with
// accel's, a CUevent, the CUdeviceptr of the allocation); memory from
// cuMemAlloc wraps as an accel buffer after the plugin's
// cuPointerGetAttribute checks, which refuse another device's memory,
// host memory and ranges past an allocation; DLPack export and import of
// kDLCUDA tensors; and host registration through cuMemHostRegister. The
// driver calls come from the library ACCEL_CUDA_DRIVER names, the object
// the plugin loaded. This proves the plugin's plumbing, not NVIDIA
// hardware.
#include <accel/interop.h>
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interop/dlpack_abi.h"
#include "test.h"

// The fake driver's entry points the test calls itself.
static struct {
  CUresult (*retain)(CUcontext*, CUdevice);
  CUresult (*release)(CUdevice);
  CUresult (*push)(CUcontext);
  CUresult (*pop)(CUcontext*);
  CUresult (*alloc)(CUdeviceptr*, size_t);
  CUresult (*free)(CUdeviceptr);
  CUresult (*memset_async)(CUdeviceptr, unsigned char, size_t, CUstream);
  CUresult (*stream_query)(CUstream);
  CUresult (*event_query)(CUevent);
  CUresult (*attribute)(void*, CUpointer_attribute, CUdeviceptr);
  bool (*registered)(const void*, size_t);
} cu;

static bool fake_open(void) {
  const char* path = getenv("ACCEL_CUDA_DRIVER");
  void* lib = path != NULL ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (lib == NULL) return false;
  *(void**)&cu.retain = dlsym(lib, "cuDevicePrimaryCtxRetain");
  *(void**)&cu.release = dlsym(lib, "cuDevicePrimaryCtxRelease_v2");
  *(void**)&cu.push = dlsym(lib, "cuCtxPushCurrent_v2");
  *(void**)&cu.pop = dlsym(lib, "cuCtxPopCurrent_v2");
  *(void**)&cu.alloc = dlsym(lib, "cuMemAlloc_v2");
  *(void**)&cu.free = dlsym(lib, "cuMemFree_v2");
  *(void**)&cu.memset_async = dlsym(lib, "cuMemsetD8Async");
  *(void**)&cu.stream_query = dlsym(lib, "cuStreamQuery");
  *(void**)&cu.event_query = dlsym(lib, "cuEventQuery");
  *(void**)&cu.attribute = dlsym(lib, "cuPointerGetAttribute");
  *(void**)&cu.registered = dlsym(lib, "fakecuda_host_registered");
  return cu.retain && cu.release && cu.push && cu.pop && cu.alloc && cu.free &&
         cu.memset_async && cu.stream_query && cu.event_query && cu.attribute &&
         cu.registered;
}

// Opens cuda:`index` of the fake, or skips.
#define OPEN_OR_SKIP(index, out)                                         \
  do {                                                                   \
    if (!fake_open()) SKIP("ACCEL_CUDA_DRIVER does not name the fake");  \
    ASSERT_OK(accel_device_open(index == 0 ? "cuda:0" : "cuda:1", out)); \
  } while (0)

#define CU_OK(call) ASSERT_EQ((int)(call), (int)CUDA_SUCCESS)

// cuMemAlloc on device `dev` inside its primary context.
static CUresult fake_alloc(CUdevice dev, size_t size, CUdeviceptr* out) {
  CUcontext ctx = NULL;
  CUresult r = cu.retain(&ctx, dev);
  if (r == CUDA_SUCCESS) r = cu.push(ctx);
  if (r == CUDA_SUCCESS) {
    r = cu.alloc(out, size);
    cu.pop(NULL);
  }
  cu.release(dev);
  return r;
}

static void fake_free(CUdevice dev, CUdeviceptr p) {
  CUcontext ctx = NULL;
  if (cu.retain(&ctx, dev) != CUDA_SUCCESS) return;
  if (cu.push(ctx) == CUDA_SUCCESS) {
    (void)cu.free(p);
    cu.pop(NULL);
  }
  cu.release(dev);
}

TEST(device_and_context_are_the_drivers) {
  accel_device_t* d1 = NULL;
  OPEN_OR_SKIP(1, &d1);
  uint64_t dev = 9, ctx = 0;
  ASSERT_OK(accel_device_query_native(d1, ACCEL_NATIVE_DEVICE, &dev));
  ASSERT_EQ(dev, 1);
  ASSERT_OK(accel_device_query_native(d1, ACCEL_NATIVE_CONTEXT, &ctx));
  CUcontext primary = NULL;
  CU_OK(cu.retain(&primary, 1));
  CU_OK(cu.release(1));
  ASSERT_EQ(ctx, (uint64_t)(uintptr_t)primary);
  int32_t type = 0, id = 0;
  ASSERT_OK(accel_dlpack_device(d1, &type, &id));
  ASSERT_EQ(type, DL_CUDA);
  ASSERT_EQ(id, 1);
  accel_device_release(d1);
}

TEST(native_stream_orders_work_with_accel) {
  accel_device_t* d = NULL;
  OPEN_OR_SKIP(0, &d);
  accel_stream_t* s = NULL;
  accel_event_t* e = NULL;
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_event_create(d, 0, &e));
  ASSERT_OK(accel_buffer_create(d, 4096, &b));
  uint64_t stream = 0, event = 0, mem = 0, ctx = 0, address = 0;
  size_t offset = 0;
  ASSERT_OK(accel_stream_query_native(s, &stream));
  ASSERT_OK(accel_event_query_native(e, &event));
  ASSERT_OK(accel_buffer_query_native(b, &mem, &offset));
  ASSERT_OK(accel_device_query_native(d, ACCEL_NATIVE_CONTEXT, &ctx));
  ASSERT_OK(accel_buffer_query_address(b, 0, &address));
  ASSERT_EQ(mem + offset, address);
  int ordinal = -1;
  CUcontext owner = NULL;
  CU_OK(cu.attribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, mem));
  CU_OK(cu.attribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, mem));
  ASSERT_EQ(ordinal, 0);
  ASSERT_EQ((uint64_t)(uintptr_t)owner, ctx);
  // accel fills, the test's own memset on the native stream overwrites
  // half, accel reads: one order, the stream's.
  unsigned char out[4096];
  ASSERT_OK(accel_stream_fill_buffer(s, b, 0, 0x11, 4096));
  CU_OK(cu.push((CUcontext)(uintptr_t)ctx));
  CU_OK(cu.memset_async((CUdeviceptr)address, 0xab, 2048,
                        (CUstream)(uintptr_t)stream));
  CU_OK(cu.pop(NULL));
  ASSERT_OK(accel_stream_read_buffer(s, b, 0, out, sizeof(out)));
  ASSERT_OK(accel_event_record(e, s));
  ASSERT_OK(accel_event_synchronize(e));
  ASSERT_EQ(out[0], 0xab);
  ASSERT_EQ(out[2047], 0xab);
  ASSERT_EQ(out[2048], 0x11);
  CU_OK(cu.event_query((CUevent)(uintptr_t)event));
  ASSERT_OK(accel_stream_synchronize(s));
  CU_OK(cu.stream_query((CUstream)(uintptr_t)stream));
  accel_buffer_release(b);
  accel_event_release(e);
  accel_stream_release(s);
  accel_device_release(d);
}

static int wrap_releases;
static void wrap_release(void* user) {
  (void)user;
  wrap_releases++;
}

TEST(cuMemAlloc_memory_wraps_after_the_drivers_checks) {
  accel_device_t* d0 = NULL;
  accel_device_t* d1 = NULL;
  OPEN_OR_SKIP(0, &d0);
  ASSERT_OK(accel_device_open("cuda:1", &d1));
  CUdeviceptr p = 0;
  CU_OK(fake_alloc(0, 8192, &p));
  // The fake's device memory is host memory: the test looks at it directly.
  unsigned char* raw = (unsigned char*)(uintptr_t)p;
  memset(raw, 0, 8192);
  accel_buffer_t* b = NULL;
  // Refused: another device's memory, past the allocation's end, memory
  // CUDA does not know, page-locked host memory.
  ASSERT_STATUS(accel_buffer_wrap(d1, p, 8192, wrap_release, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "memory of CUDA device 0");
  ASSERT_STATUS(accel_buffer_wrap(d0, p + 4096, 4097, wrap_release, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "run past the end");
  static unsigned char host[4096];
  ASSERT_STATUS(accel_buffer_wrap(d0, (uint64_t)(uintptr_t)host, 100,
                                  wrap_release, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "not memory the CUDA driver knows");
  ASSERT_OK(accel_host_register(d0, host, sizeof(host), 0));
  ASSERT_STATUS(accel_buffer_wrap(d0, (uint64_t)(uintptr_t)host, 100,
                                  wrap_release, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "page-locked host memory");
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
  fake_free(0, p);
  accel_device_release(d1);
  accel_device_release(d0);
}

static int tensor_deletes;
static void tensor_delete(dl_managed_t* self) {
  (void)self;
  tensor_deletes++;
}

TEST(dlpack_kDLCUDA_both_ways) {
  accel_device_t* d1 = NULL;
  OPEN_OR_SKIP(1, &d1);
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(d1, 64 * sizeof(float), &b));
  float in[64];
  for (int i = 0; i < 64; i++) in[i] = (float)i * 0.5f;
  ASSERT_OK(accel_buffer_write(b, 0, in, sizeof(in)));
  int64_t shape[2] = {8, 8};
  // Export (versioned): the tensor is on (kDLCUDA, 1) at the address.
  void* managed = NULL;
  ASSERT_OK(accel_buffer_to_dlpack(b, 8 * sizeof(float), ACCEL_DTYPE_F32, 1,
                                   shape, NULL, true, &managed));
  dl_versioned_t* v = managed;
  uint64_t address = 0;
  ASSERT_OK(accel_buffer_query_address(b, 8 * sizeof(float), &address));
  ASSERT_EQ(v->dl_tensor.device.device_type, DL_CUDA);
  ASSERT_EQ(v->dl_tensor.device.device_id, 1);
  ASSERT_EQ((uint64_t)(uintptr_t)v->dl_tensor.data, address);
  // Import it back (no device given): a wrapped buffer on cuda:1.
  accel_buffer_t* w = NULL;
  ASSERT_OK(accel_buffer_from_dlpack(managed, true, NULL, &w));
  ASSERT_STR_EQ(accel_device_uri(accel_buffer_device(w)), "cuda:1");
  float got[8];
  ASSERT_OK(accel_buffer_read(w, 0, got, sizeof(got)));
  ASSERT_MEM_EQ(got, in + 8, sizeof(got));
  accel_buffer_release(b);  // the tensor (and so `w`) keeps the memory
  ASSERT_OK(accel_buffer_read(w, 0, got, sizeof(got)));
  ASSERT_MEM_EQ(got, in + 8, sizeof(got));
  accel_buffer_release(w);  // runs the export's deleter
  // Refused: the tensor's device does not match the one given.
  accel_device_t* d0 = NULL;
  ASSERT_OK(accel_device_open("cuda:0", &d0));
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

TEST(dlpack_import_of_another_librarys_cuda_tensor) {
  accel_device_t* d = NULL;
  OPEN_OR_SKIP(0, &d);
  CUdeviceptr p = 0;
  CU_OK(fake_alloc(0, 256 * sizeof(int32_t), &p));
  int32_t* raw = (int32_t*)(uintptr_t)p;  // host memory in the fake
  for (int i = 0; i < 256; i++) raw[i] = i;
  int64_t shape[2] = {16, 16};
  int64_t strides[2] = {16, 1};
  dl_managed_t m = {
      .dl_tensor = {.data = raw,
                    .device = {DL_CUDA, 0},
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
  fake_free(0, p);
  accel_device_release(d);
}

TEST(host_register_page_locks_with_the_driver) {
  accel_device_t* d0 = NULL;
  accel_device_t* d1 = NULL;
  OPEN_OR_SKIP(0, &d0);
  ASSERT_OK(accel_device_open("cuda:1", &d1));
  size_t n = (size_t)1 << 20;
  unsigned char* host = malloc(2 * n);
  ASSERT_NOT_NULL(host);
  ASSERT(!cu.registered(host, 2 * n));
  ASSERT_OK(accel_host_register(d0, host, 2 * n, 0));
  ASSERT(cu.registered(host, 2 * n));
  // Once per backend: cuda:1 may not register it again.
  ASSERT_STATUS(accel_host_register(d1, host + n, 16, 0),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "already registered on cuda:0");
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
  ASSERT(!cu.registered(host, 1));
  // Memory the driver already pins (accel_host_alloc's) is refused.
  void* pinned = NULL;
  ASSERT_OK(accel_host_alloc(d0, 4096, &pinned));
  ASSERT_STATUS(accel_host_register(d0, pinned, 4096, 0),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "already page-locks");
  bool in = true;
  ASSERT_OK(accel_host_query_registered(d0, pinned, 1, &in));
  ASSERT(!in);  // a refused registration is not recorded
  accel_host_free(d0, pinned);
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
