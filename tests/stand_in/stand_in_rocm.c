// SPDX-License-Identifier: MIT
//
// The ROCm side of tests/stand_in (see stand_in.h): libfakehip, named by
// ACCEL_ROCM_RUNTIME, which also holds the fake rocBLAS that
// ACCEL_ROCM_BLAS names. The runtime calls a test makes itself come from
// the library the plugin loaded, so they act on the same objects.
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <dlfcn.h>
#include <hip/hip_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "interop/dlpack_abi.h"
#include "stand_in/stand_in.h"

static struct {
  hipError_t (*set_device)(int);
  hipError_t (*malloc)(void**, size_t);
  hipError_t (*free)(void*);
  hipError_t (*memset_async)(void*, int, size_t, hipStream_t);
  hipError_t (*stream_query)(hipStream_t);
  hipError_t (*event_query)(hipEvent_t);
  hipError_t (*attributes)(hipPointerAttribute_t*, const void*);
  bool (*stream_priority)(hipStream_t, int*);
  unsigned (*event_flags)(hipEvent_t);
} hip;

static bool rocm_default_device(void) { return getenv("FAKEHIP_ARCH") == NULL; }

static bool rocm_stream_priority(uint64_t stream, int* out) {
  return hip.stream_priority((hipStream_t)(uintptr_t)stream, out);
}

static unsigned rocm_event_flags(uint64_t event) {
  return hip.event_flags((hipEvent_t)(uintptr_t)event);
}

static int rocm_mem_alloc(int device, size_t size, uint64_t* out) {
  void* p = NULL;
  hipError_t r = hip.set_device(device);
  if (r == hipSuccess) r = hip.malloc(&p, size);
  *out = (uint64_t)(uintptr_t)p;
  return (int)r;
}

static void rocm_mem_free(int device, uint64_t address) {
  if (hip.set_device(device) == hipSuccess) {
    (void)hip.free((void*)(uintptr_t)address);
  }
}

static int rocm_memset_async(int device, uint64_t address, int value,
                             size_t size, uint64_t stream) {
  hipError_t r = hip.set_device(device);
  if (r != hipSuccess) return (int)r;
  return (int)hip.memset_async((void*)(uintptr_t)address, value, size,
                               (hipStream_t)(uintptr_t)stream);
}

static int rocm_stream_query(uint64_t stream) {
  return (int)hip.stream_query((hipStream_t)(uintptr_t)stream);
}

static int rocm_event_query(uint64_t event) {
  return (int)hip.event_query((hipEvent_t)(uintptr_t)event);
}

static int rocm_pointer_owner(uint64_t address, int* out_device,
                              uint64_t* out_context) {
  hipPointerAttribute_t attr;
  memset(&attr, 0, sizeof(attr));
  hipError_t r = hip.attributes(&attr, (const void*)(uintptr_t)address);
  *out_device = attr.device;
  *out_context = 0;  // HIP has no contexts worth the name
  return (int)r;
}

// ACCEL_ROCM_BLAS names a rocBLAS (this fake): GEMMs go to it.
static bool rocm_blas_on(void) {
  const char* blas = getenv("ACCEL_ROCM_BLAS");
  return blas != NULL && blas[0] != '\0' && strcmp(blas, "none") != 0;
}

// 32 MiB on gfx90a and gfx94x (FAKEHIP_ARCH, default gfx90a), 4 MiB
// elsewhere.
static uint64_t rocm_expected_workspace(void) {
  const char* arch = getenv("FAKEHIP_ARCH");
  return arch == NULL || strncmp(arch, "gfx90a", 6) == 0 ||
                 strncmp(arch, "gfx94", 5) == 0
             ? (uint64_t)32 << 20
             : (uint64_t)4 << 20;
}

stand_in_t stand_in_backend = {
    .backend = "rocm",
    .driver_env = "ACCEL_ROCM_RUNTIME",
    .api = "HIP",
    .props =
        {
            .backend = "rocm",
            .vendor = "AMD",
            .name = "Fake AMD GPU (fakehip)",
            // gcnArchName "gfx90a:sramecc+:xnack-": features stripped.
            .arch = "gfx90a",
            .module_target = "amdgcn-gfx90a",
            .driver_version = "HIP 5.2.21153",
            .features = "gcnArchName=gfx90a:sramecc+:xnack-",
            .platform = "AMD ROCm/HIP 5.2.21153",
            .compute_units = 4,
            .max_threads_per_block = 1024,
            .simd_width = 64,
            .total_memory = (uint64_t)8 << 30,
            .max_alloc_size = (uint64_t)8 << 30,
            .max_shared_mem_bytes = 65536,
            .max_grid = {0x7fffffff, 65535, 0},
            .caps = ACCEL_DEVICE_CAP_F16 | ACCEL_DEVICE_CAP_BF16 |
                    ACCEL_DEVICE_CAP_PINNED_MEMORY |
                    ACCEL_DEVICE_CAP_EVENT_TIMING | ACCEL_DEVICE_CAP_KERNELS,
        },
    .default_device = rocm_default_device,
    .fault_env = "FAKEHIP_FAULT",
    .fill_kernel = "accel_rocm_fill",
    .fault_error = "hipErrorIllegalAddress",
    .priority_least = 1,
    .priority_greatest = -1,
    .event_blocking_sync = hipEventBlockingSync,
    .event_disable_timing = hipEventDisableTiming,
    .stream_priority = rocm_stream_priority,
    .event_flags = rocm_event_flags,
    .dlpack_type = DL_ROCM,
    .no_context = "hipCtx_t is deprecated",
    .mem_alloc = rocm_mem_alloc,
    .mem_free = rocm_mem_free,
    .memset_async = rocm_memset_async,
    .stream_query = rocm_stream_query,
    .event_query = rocm_event_query,
    .pointer_owner = rocm_pointer_owner,
    .unknown_memory = "not memory the HIP runtime knows",
    .host_memory = "is host memory",
    .blas_env = "ACCEL_ROCM_RUNTIME",
    .last_workspace_symbol = "fakehip_rocblas_last_workspace",
    .batch_gemms = 4,  // each member
    .batched_symbol = "fakehip_rocblas_strided_batched_count",
    .blas_on = rocm_blas_on,
    .expected_workspace = rocm_expected_workspace,
    .alloc_call = "hipMalloc",
    .blas_need_env = "FAKEHIP_ROCBLAS_NEED",
};

bool stand_in_bind(void* lib) {
  bool ok =
      stand_in_resolve(lib, "hipSetDevice", &hip.set_device) &&
      stand_in_resolve(lib, "hipMalloc", &hip.malloc) &&
      stand_in_resolve(lib, "hipFree", &hip.free) &&
      stand_in_resolve(lib, "hipMemsetAsync", &hip.memset_async) &&
      stand_in_resolve(lib, "hipStreamQuery", &hip.stream_query) &&
      stand_in_resolve(lib, "hipEventQuery", &hip.event_query) &&
      stand_in_resolve(lib, "hipPointerGetAttributes", &hip.attributes) &&
      stand_in_resolve(lib, "fakehip_stream_priority", &hip.stream_priority) &&
      stand_in_resolve(lib, "fakehip_event_flags", &hip.event_flags) &&
      stand_in_resolve(lib, "fakehip_host_func_count",
                       &stand_in_backend.host_func_count) &&
      stand_in_resolve(lib, "fakehip_host_registered",
                       &stand_in_backend.host_registered);
  return ok;
}
