// SPDX-License-Identifier: MIT
//
// The CUDA side of tests/stand_in (see stand_in.h): libfakecuda, named by
// ACCEL_CUDA_DRIVER, and libfakecublas, named by ACCEL_CUDA_CUBLAS. The
// driver calls a test makes itself come from the library the plugin
// loaded, so they act on the same objects.
#include <cuda.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "interop/dlpack_abi.h"
#include "stand_in/stand_in.h"

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
  bool (*stream_priority)(CUstream, int*);
  unsigned (*event_flags)(CUevent);
} cu;

// Runs in `device`'s primary context: 0 once pushed, with `*out_ctx`.
static CUresult cuda_enter(int device, CUcontext* out_ctx) {
  CUresult r = cu.retain(out_ctx, device);
  if (r != CUDA_SUCCESS) return r;
  r = cu.push(*out_ctx);
  if (r != CUDA_SUCCESS) cu.release(device);
  return r;
}

static void cuda_leave(int device) {
  cu.pop(NULL);
  cu.release(device);
}

static bool cuda_default_device(void) {
  return getenv("FAKECUDA_ARCH") == NULL;
}

static bool cuda_stream_priority(uint64_t stream, int* out) {
  return cu.stream_priority((CUstream)(uintptr_t)stream, out);
}

static unsigned cuda_event_flags(uint64_t event) {
  return cu.event_flags((CUevent)(uintptr_t)event);
}

static int cuda_primary_context(int device, uint64_t* out) {
  CUcontext ctx = NULL;
  CUresult r = cu.retain(&ctx, device);
  if (r == CUDA_SUCCESS) r = cu.release(device);
  *out = (uint64_t)(uintptr_t)ctx;
  return (int)r;
}

static int cuda_mem_alloc(int device, size_t size, uint64_t* out) {
  CUcontext ctx = NULL;
  CUdeviceptr p = 0;
  CUresult r = cuda_enter(device, &ctx);
  if (r == CUDA_SUCCESS) {
    r = cu.alloc(&p, size);
    cuda_leave(device);
  }
  *out = (uint64_t)p;
  return (int)r;
}

static void cuda_mem_free(int device, uint64_t address) {
  CUcontext ctx = NULL;
  if (cuda_enter(device, &ctx) != CUDA_SUCCESS) return;
  (void)cu.free((CUdeviceptr)address);
  cuda_leave(device);
}

static int cuda_memset_async(int device, uint64_t address, int value,
                             size_t size, uint64_t stream) {
  CUcontext ctx = NULL;
  CUresult r = cuda_enter(device, &ctx);
  if (r != CUDA_SUCCESS) return (int)r;
  r = cu.memset_async((CUdeviceptr)address, (unsigned char)value, size,
                      (CUstream)(uintptr_t)stream);
  cuda_leave(device);
  return (int)r;
}

static int cuda_stream_query(uint64_t stream) {
  return (int)cu.stream_query((CUstream)(uintptr_t)stream);
}

static int cuda_event_query(uint64_t event) {
  return (int)cu.event_query((CUevent)(uintptr_t)event);
}

static int cuda_pointer_owner(uint64_t address, int* out_device,
                              uint64_t* out_context) {
  CUcontext owner = NULL;
  CUresult r = cu.attribute(out_device, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                            (CUdeviceptr)address);
  if (r == CUDA_SUCCESS) {
    r = cu.attribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT,
                     (CUdeviceptr)address);
  }
  *out_context = (uint64_t)(uintptr_t)owner;
  return (int)r;
}

static bool cuda_blas_on(void) {
  const char* path = getenv("ACCEL_CUDA_CUBLAS");
  void* lib = path != NULL ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (lib != NULL) dlclose(lib);
  return lib != NULL;
}

// 32 MiB on sm_90 and newer (FAKECUDA_ARCH, default 90), 4 MiB before.
static uint64_t cuda_expected_workspace(void) {
  const char* arch = getenv("FAKECUDA_ARCH");
  return (arch == NULL || atoi(arch) >= 90) ? (uint64_t)32 << 20
                                            : (uint64_t)4 << 20;
}

stand_in_t stand_in_backend = {
    .backend = "cuda",
    .driver_env = "ACCEL_CUDA_DRIVER",
    .api = "CUDA",
    .props =
        {
            .backend = "cuda",
            .vendor = "NVIDIA",
            .name = "Fake NVIDIA H100",
            .arch = "sm_90",
            .module_target = "cuda-sm_90",
            .driver_version = "CUDA 13.0",
            .features = "cc=9.0",
            .platform = "NVIDIA CUDA 13.0",
            .pci_bus_id = "0000:18:00.0",
            .uuid_prefix = "fakecuda",
            .compute_units = 132,
            .max_threads_per_block = 1024,
            .simd_width = 32,
            .total_memory = (uint64_t)8 << 30,
            .max_alloc_size = (uint64_t)8 << 30,
            .max_shared_mem_bytes = 232448,
            .max_grid = {0x7fffffff, 65535, 65535},
            .caps = ACCEL_DEVICE_CAP_F16 | ACCEL_DEVICE_CAP_BF16 |
                    ACCEL_DEVICE_CAP_TF32 | ACCEL_DEVICE_CAP_PINNED_MEMORY |
                    ACCEL_DEVICE_CAP_EVENT_TIMING | ACCEL_DEVICE_CAP_KERNELS,
        },
    .default_device = cuda_default_device,
    .fault_env = "FAKECUDA_FAULT",
    .fill_kernel = "accel_cuda_fill_f32",
    .fault_error = "CUDA_ERROR_ILLEGAL_ADDRESS",
    .fault_call = "cuStreamSynchronize",
    .fault_is_sticky = true,
    .priority_least = 0,
    .priority_greatest = -5,
    .event_blocking_sync = CU_EVENT_BLOCKING_SYNC,
    .event_disable_timing = CU_EVENT_DISABLE_TIMING,
    .stream_priority = cuda_stream_priority,
    .event_flags = cuda_event_flags,
    .host_funcs_stop_at_fault = true,
    .dlpack_type = DL_CUDA,
    .primary_context = cuda_primary_context,
    .mem_alloc = cuda_mem_alloc,
    .mem_free = cuda_mem_free,
    .memset_async = cuda_memset_async,
    .stream_query = cuda_stream_query,
    .event_query = cuda_event_query,
    .pointer_owner = cuda_pointer_owner,
    .pinned_register_refused = true,
    .unknown_memory = "not memory the CUDA driver knows",
    .host_memory = "page-locked host memory",
    .blas_env = "ACCEL_CUDA_CUBLAS",
    .last_workspace_symbol = "fakecublas_last_workspace",
    .batch_gemms = 1,  // one call
    .batched_symbol = "fakecublas_strided_batched_count",
    .blas_on = cuda_blas_on,
    .expected_workspace = cuda_expected_workspace,
    .memory_env = "FAKECUDA_MEMORY",
    .alloc_call = "cuMemAlloc",
    .plugin_env = "CUDA_TEST_PLUGIN",
};

bool stand_in_bind(void* lib) {
  bool ok =
      stand_in_resolve(lib, "cuDevicePrimaryCtxRetain", &cu.retain) &&
      stand_in_resolve(lib, "cuDevicePrimaryCtxRelease_v2", &cu.release) &&
      stand_in_resolve(lib, "cuCtxPushCurrent_v2", &cu.push) &&
      stand_in_resolve(lib, "cuCtxPopCurrent_v2", &cu.pop) &&
      stand_in_resolve(lib, "cuMemAlloc_v2", &cu.alloc) &&
      stand_in_resolve(lib, "cuMemFree_v2", &cu.free) &&
      stand_in_resolve(lib, "cuMemsetD8Async", &cu.memset_async) &&
      stand_in_resolve(lib, "cuStreamQuery", &cu.stream_query) &&
      stand_in_resolve(lib, "cuEventQuery", &cu.event_query) &&
      stand_in_resolve(lib, "cuPointerGetAttribute", &cu.attribute) &&
      stand_in_resolve(lib, "fakecuda_stream_priority", &cu.stream_priority) &&
      stand_in_resolve(lib, "fakecuda_event_flags", &cu.event_flags) &&
      stand_in_resolve(lib, "fakecuda_host_func_count",
                       &stand_in_backend.host_func_count) &&
      stand_in_resolve(lib, "fakecuda_host_registered",
                       &stand_in_backend.host_registered);
  return ok;
}
