// SPDX-License-Identifier: MIT
//
// Interop of the ROCm plugin on libfakehip (two fake devices): the native
// handles are the runtime's own objects (the device ordinal, a hipStream_t
// that orders work the test enqueues itself with accel's, a hipEvent_t,
// the device pointer of the allocation; no context: UNSUPPORTED); memory
// from hipMalloc wraps as an accel buffer after the plugin's
// hipPointerGetAttributes and hipMemGetAddressRange checks, which refuse
// another device's memory, host memory and ranges past an allocation;
// DLPack export and import of kDLROCM tensors; and host registration
// through hipHostRegister. Run at HIP 5.2 and 6.3 (FAKEHIP_VERSION): ROCm 6
// renumbered hipMemoryType and answers "unregistered" for unknown memory
// where ROCm 5 fails. This proves the plugin's plumbing, not AMD hardware.
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <accel/interop.h>
#include <dlfcn.h>
#include <hip/hip_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "interop/dlpack_abi.h"
#include "test.h"

static struct {
  hipError_t (*set_device)(int);
  hipError_t (*malloc)(void**, size_t);
  hipError_t (*free)(void*);
  hipError_t (*memset_async)(void*, int, size_t, hipStream_t);
  hipError_t (*stream_query)(hipStream_t);
  hipError_t (*event_query)(hipEvent_t);
  hipError_t (*attributes)(hipPointerAttribute_t*, const void*);
  bool (*registered)(const void*, size_t);
} hip;

static bool fake_open(void) {
  const char* path = getenv("ACCEL_ROCM_RUNTIME");
  void* lib = path != NULL ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (lib == NULL) return false;
  *(void**)&hip.set_device = dlsym(lib, "hipSetDevice");
  *(void**)&hip.malloc = dlsym(lib, "hipMalloc");
  *(void**)&hip.free = dlsym(lib, "hipFree");
  *(void**)&hip.memset_async = dlsym(lib, "hipMemsetAsync");
  *(void**)&hip.stream_query = dlsym(lib, "hipStreamQuery");
  *(void**)&hip.event_query = dlsym(lib, "hipEventQuery");
  *(void**)&hip.attributes = dlsym(lib, "hipPointerGetAttributes");
  *(void**)&hip.registered = dlsym(lib, "fakehip_host_registered");
  return hip.set_device && hip.malloc && hip.free && hip.memset_async &&
         hip.stream_query && hip.event_query && hip.attributes &&
         hip.registered;
}

#define OPEN_OR_SKIP(uri, out)                                           \
  do {                                                                   \
    if (!fake_open()) SKIP("ACCEL_ROCM_RUNTIME does not name the fake"); \
    ASSERT_OK(accel_device_open(uri, out));                              \
  } while (0)

#define HIP_OK(call) ASSERT_EQ((int)(call), (int)hipSuccess)

TEST(handles_are_the_runtimes) {
  accel_device_t* d1 = NULL;
  OPEN_OR_SKIP("rocm:1", &d1);
  uint64_t dev = 9, ctx = 7;
  ASSERT_OK(accel_device_query_native(d1, ACCEL_NATIVE_DEVICE, &dev));
  ASSERT_EQ(dev, 1);
  ASSERT_STATUS(accel_device_query_native(d1, ACCEL_NATIVE_CONTEXT, &ctx),
                ACCEL_ERROR_UNSUPPORTED);
  ASSERT_EQ(ctx, 0);
  ASSERT_STR_CONTAINS(accel_last_error(), "hipCtx_t is deprecated");
  int32_t type = 0, id = 0;
  ASSERT_OK(accel_dlpack_device(d1, &type, &id));
  ASSERT_EQ(type, DL_ROCM);
  ASSERT_EQ(id, 1);
  accel_stream_t* s = NULL;
  accel_event_t* e = NULL;
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_stream_create(d1, 0, &s));
  ASSERT_OK(accel_event_create(d1, 0, &e));
  ASSERT_OK(accel_buffer_create(d1, 4096, &b));
  uint64_t stream = 0, event = 0, mem = 0, address = 0;
  size_t offset = 0;
  ASSERT_OK(accel_stream_query_native(s, &stream));
  ASSERT_OK(accel_event_query_native(e, &event));
  ASSERT_OK(accel_buffer_query_native(b, &mem, &offset));
  ASSERT_OK(accel_buffer_query_address(b, 0, &address));
  ASSERT_EQ(mem + offset, address);
  hipPointerAttribute_t attr;
  HIP_OK(hip.attributes(&attr, (void*)(uintptr_t)mem));
  ASSERT_EQ(attr.device, 1);
  // accel fills, the test's memset on the native stream overwrites half,
  // accel reads: one order, the stream's.
  unsigned char out[4096];
  ASSERT_OK(accel_stream_fill_buffer(s, b, 0, 0x22, sizeof(out)));
  HIP_OK(hip.set_device(1));
  HIP_OK(hip.memset_async((void*)(uintptr_t)address, 0xcd, 1000,
                          (hipStream_t)(uintptr_t)stream));
  ASSERT_OK(accel_stream_read_buffer(s, b, 0, out, sizeof(out)));
  ASSERT_OK(accel_event_record(e, s));
  ASSERT_OK(accel_event_synchronize(e));
  ASSERT_EQ(out[999], 0xcd);
  ASSERT_EQ(out[1000], 0x22);
  HIP_OK(hip.event_query((hipEvent_t)(uintptr_t)event));
  ASSERT_OK(accel_stream_synchronize(s));
  HIP_OK(hip.stream_query((hipStream_t)(uintptr_t)stream));
  accel_buffer_release(b);
  accel_event_release(e);
  accel_stream_release(s);
  accel_device_release(d1);
}

static int releases;
static void count_release(void* user) {
  (void)user;
  releases++;
}

TEST(hipMalloc_memory_wraps_after_the_runtimes_checks) {
  accel_device_t* d0 = NULL;
  accel_device_t* d1 = NULL;
  OPEN_OR_SKIP("rocm:0", &d0);
  ASSERT_OK(accel_device_open("rocm:1", &d1));
  void* p = NULL;
  HIP_OK(hip.set_device(0));
  HIP_OK(hip.malloc(&p, 8192));
  memset(p, 0, 8192);  // host memory in the fake
  uint64_t at = (uint64_t)(uintptr_t)p;
  accel_buffer_t* b = NULL;
  ASSERT_STATUS(accel_buffer_wrap(d1, at, 8192, count_release, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "memory of HIP device 0");
  ASSERT_STATUS(accel_buffer_wrap(d0, at + 8000, 200, count_release, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "run past the end");
  static unsigned char host[4096];
  uint64_t host_at = (uint64_t)(uintptr_t)host;
  ASSERT_STATUS(accel_buffer_wrap(d0, host_at, 64, count_release, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "not memory the HIP runtime knows");
  ASSERT_OK(accel_host_register(d0, host, sizeof(host), 0));
  ASSERT_STATUS(accel_buffer_wrap(d0, host_at, 64, count_release, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "is host memory");
  ASSERT_OK(accel_host_unregister(d0, host));
  ASSERT_EQ(releases, 0);
  ASSERT_OK(accel_buffer_wrap(d0, at + 4096, 4096, count_release, NULL, &b));
  ASSERT_OK(accel_buffer_fill(b, 0, 0x77, 4096));
  const unsigned char* raw = p;
  ASSERT_EQ(raw[4095], 0);
  ASSERT_EQ(raw[4096], 0x77);
  ASSERT_EQ(raw[8191], 0x77);
  accel_buffer_release(b);
  ASSERT_EQ(releases, 1);
  HIP_OK(hip.free(p));
  accel_device_release(d1);
  accel_device_release(d0);
}

TEST(dlpack_kDLROCM_both_ways) {
  accel_device_t* d1 = NULL;
  OPEN_OR_SKIP("rocm:1", &d1);
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
  ASSERT_EQ(m->dl_tensor.device.device_type, DL_ROCM);
  ASSERT_EQ(m->dl_tensor.device.device_id, 1);
  accel_buffer_t* w = NULL;
  ASSERT_OK(accel_buffer_from_dlpack(managed, false, NULL, &w));
  ASSERT_STR_EQ(accel_device_uri(accel_buffer_device(w)), "rocm:1");
  accel_buffer_release(b);
  float got[32];
  ASSERT_OK(accel_buffer_read(w, 0, got, sizeof(got)));
  ASSERT_MEM_EQ(got, in, sizeof(in));
  accel_buffer_release(w);
  accel_device_release(d1);
}

TEST(host_register_page_locks_with_the_runtime) {
  accel_device_t* d = NULL;
  OPEN_OR_SKIP("rocm:0", &d);
  size_t n = (size_t)1 << 20;
  unsigned char* host = malloc(2 * n);
  ASSERT_NOT_NULL(host);
  ASSERT_OK(accel_host_register(d, host, 2 * n, 0));
  ASSERT(hip.registered(host, 2 * n));
  accel_stream_t* s = NULL;
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_buffer_create(d, n, &b));
  for (size_t i = 0; i < n; i++) host[i] = (unsigned char)(i * 3 + 1);
  ASSERT_OK(accel_stream_write_buffer(s, b, 0, host, n));
  ASSERT_OK(accel_stream_read_buffer(s, b, 0, host + n, n));
  ASSERT_OK(accel_stream_synchronize(s));
  ASSERT_MEM_EQ(host, host + n, n);
  ASSERT_OK(accel_host_unregister(d, host));
  ASSERT(!hip.registered(host, 1));
  accel_buffer_release(b);
  accel_stream_release(s);
  accel_device_release(d);
  free(host);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
