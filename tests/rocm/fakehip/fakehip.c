// SPDX-License-Identifier: MIT
//
// libfakehip: a test-only stand-in for libamdhip64, loaded by the ROCm
// plugin through ACCEL_ROCM_RUNTIME. It proves the plugin's plumbing (symbol
// resolution, error mapping, streams, events, launches with kernelParams,
// the hiprtc JIT cache), not AMD hardware: device memory is host memory,
// every stream is a worker thread running its FIFO, and "kernels" are host
// functions found by name. The module loader accepts the plugin's embedded
// offload bundle when it has an entry for the fake GPU's processor, AMD
// ELF code objects, and the tagged blobs this library's fake hiprtc
// "compiles"; the host versions of the built-in kernels run the same
// element code as the GPU ones (plugins/rocm/kernels/ops_impl.h), reading
// the same by-value struct parameter.
//
// Environment:
//   FAKEHIP_DEVICES  number of devices (default 1); 0 makes hipInit and
//                    hipGetDeviceCount return hipErrorNoDevice
//   FAKEHIP_ARCH     gcnArchName (default "gfx90a:sramecc+:xnack-")
//   FAKEHIP_VERSION  hipRuntimeGetVersion (default 50221153, HIP 5.2);
//                    from 70000000 (HIP 7.0) the last error is sticky
//                    until hipGetLastError reads it (fakehip_thread.c)
//   FAKEHIP_RTC_FAIL when set, hiprtcCompileProgram fails with a log
//   FAKEHIP_FAULT    a kernel name: its launches fault asynchronously
//                    (hipErrorIllegalAddress at the next synchronisation)
//   FAKEHIP_ROCBLAS_NEED  bytes of workspace every rocBLAS GEMM needs: with
//                    a smaller user-owned workspace, rocblas_gemm_ex
//                    returns rocblas_status_memory_error
//   FAKEHIP_BLAS_DELAY_MS  each rocBLAS GEMM sleeps this long when it runs
// gemm_ex refuses (rocblas_status_internal_error) a GEMM on a handle's own
// workspace while a GEMM queued on another stream still uses it.
// It also exports a minimal rocBLAS (handles, set_stream, set_workspace,
// gemm_ex, column-major as the real one), for the plugin's rocBLAS path via
// ACCEL_ROCM_BLAS=<this library>. gemm_ex writes over the first and last
// 4 KiB of the workspace set on the handle when it runs, as rocBLAS's
// kernels would, so a workspace freed or reused before the GEMM ran shows
// (ASan reports a freed one; a reused one corrupts its new owner's data).
// The test-only fakehip_rocblas_last_workspace() reports the workspace of
// the last gemm_ex queued and how many were.
// hiprtc lives in fakehip_rtc.c; libfakehip-nortc.so is built without it.
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include "fakehip.h"

#include <hip/hip_runtime_api.h>
#include <hip/hiprtc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/ops_impl.h"

#define FAKEHIP_TOTAL ((size_t)8 << 30)  // bytes per fake device
#define FAKEHIP_HEADER 256               // bytes before each allocation
#define FAKEHIP_MAX_PARAMS 8
#define FAKEHIP_MAX_DEVICES 16
#define FAKEHIP_BUNDLE_MAGIC "__CLANG_OFFLOAD_BUNDLE__"

// ---------------------------------------------------------------------------
// Configuration and devices
// ---------------------------------------------------------------------------

static pthread_mutex_t fakehip_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t fakehip_allocated;  // guarded by fakehip_lock

static int fakehip_devices(void) {
  const char* v = getenv("FAKEHIP_DEVICES");
  return v != NULL && v[0] != '\0' ? atoi(v) : 1;
}

static const char* fakehip_arch(void) {
  const char* v = getenv("FAKEHIP_ARCH");
  return v != NULL && v[0] != '\0' ? v : "gfx90a:sramecc+:xnack-";
}

static double fakehip_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

FAKEHIP_API hipError_t hipInit(unsigned int flags) {
  (void)flags;
  return fakehip_ret(fakehip_devices() > 0 ? hipSuccess : hipErrorNoDevice);
}

FAKEHIP_API hipError_t hipGetDeviceCount(int* count) {
  int n = fakehip_devices();
  *count = n > 0 ? n : 0;
  return fakehip_ret(n > 0 ? hipSuccess : hipErrorNoDevice);
}

FAKEHIP_API hipError_t hipRuntimeGetVersion(int* version) {
  const char* v = getenv("FAKEHIP_VERSION");
  *version = v != NULL && v[0] != '\0' ? atoi(v) : 50221153;
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipDriverGetVersion(int* version) {
  return fakehip_ret(hipRuntimeGetVersion(version));
}

FAKEHIP_API const char* hipGetErrorName(hipError_t error) {
  switch (error) {
    case hipSuccess:
      return "hipSuccess";
    case hipErrorInvalidValue:
      return "hipErrorInvalidValue";
    case hipErrorOutOfMemory:
      return "hipErrorOutOfMemory";
    case hipErrorNoDevice:
      return "hipErrorNoDevice";
    case hipErrorInvalidDevice:
      return "hipErrorInvalidDevice";
    case hipErrorNoBinaryForGpu:
      return "hipErrorNoBinaryForGpu";
    case hipErrorInvalidImage:
      return "hipErrorInvalidImage";
    case hipErrorNotFound:
      return "hipErrorNotFound";
    case hipErrorNotReady:
      return "hipErrorNotReady";
    case hipErrorInvalidHandle:
      return "hipErrorInvalidHandle";
    case hipErrorIllegalAddress:
      return "hipErrorIllegalAddress";
    default:
      return "hipErrorUnknown";
  }
}

FAKEHIP_API const char* hipGetErrorString(hipError_t error) {
  return error == hipSuccess ? "no error" : "fakehip error";
}

static bool fakehip_valid(int device) {
  return device >= 0 && device < fakehip_devices();
}

FAKEHIP_API hipError_t hipSetDevice(int device) {
  if (!fakehip_valid(device)) return fakehip_ret(hipErrorInvalidDevice);
  fakehip_current = device;
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipGetDevice(int* device) {
  *device = fakehip_current;
  return fakehip_ret(hipSuccess);
}

// Peer access enabled from each device to each other (as the runtime, per
// process): enabling twice is hipErrorPeerAccessAlreadyEnabled.
static bool fakehip_peer_on[FAKEHIP_MAX_DEVICES][FAKEHIP_MAX_DEVICES];

FAKEHIP_API hipError_t hipDeviceGetAttribute(int* value,
                                             hipDeviceAttribute_t attr,
                                             int device) {
  if (!fakehip_valid(device)) return fakehip_ret(hipErrorInvalidDevice);
  switch (attr) {
    case hipDeviceAttributeMultiprocessorCount:
      *value = 4;
      return fakehip_ret(hipSuccess);
    case hipDeviceAttributeMaxThreadsPerBlock:
      *value = 1024;
      return fakehip_ret(hipSuccess);
    case hipDeviceAttributeWarpSize:
      *value = 64;
      return fakehip_ret(hipSuccess);
    default:
      return fakehip_ret(hipErrorInvalidValue);
  }
}

// ROCm 5's hipGetDeviceProperties (the R0000 layout of these headers).
FAKEHIP_API hipError_t hipGetDeviceProperties(hipDeviceProp_t* props,
                                              int device) {
  if (!fakehip_valid(device)) return fakehip_ret(hipErrorInvalidDevice);
  memset(props, 0, sizeof(*props));
  snprintf(props->name, sizeof(props->name), "Fake AMD GPU (fakehip)");
  snprintf(props->gcnArchName, sizeof(props->gcnArchName), "%s",
           fakehip_arch());
  props->totalGlobalMem = FAKEHIP_TOTAL;
  props->multiProcessorCount = 4;
  props->maxThreadsPerBlock = 1024;
  props->warpSize = 64;
  props->sharedMemPerBlock = 65536;  // LDS per workgroup on CDNA/RDNA
  props->maxGridSize[0] = 0x7fffffff;
  props->maxGridSize[1] = 65535;
  props->maxGridSize[2] = 65535;
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipDeviceGetName(char* name, int len,
                                        hipDevice_t device) {
  if (!fakehip_valid(device) || len <= 0)
    return fakehip_ret(hipErrorInvalidValue);
  snprintf(name, (size_t)len, "Fake AMD GPU (fakehip)");
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipDeviceGetPCIBusId(char* id, int len, int device) {
  if (!fakehip_valid(device) || len <= 0)
    return fakehip_ret(hipErrorInvalidValue);
  snprintf(id, (size_t)len, "0000:%02x:00.0", device);
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipDeviceTotalMem(size_t* bytes, hipDevice_t device) {
  if (!fakehip_valid(device)) return fakehip_ret(hipErrorInvalidDevice);
  *bytes = FAKEHIP_TOTAL;
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipDeviceCanAccessPeer(int* can, int device, int peer) {
  if (!fakehip_valid(device) || !fakehip_valid(peer)) {
    return fakehip_ret(hipErrorInvalidDevice);
  }
  *can = device != peer;
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipDeviceEnablePeerAccess(int peer, unsigned int flags) {
  (void)flags;
  int self = fakehip_current;
  if (!fakehip_valid(peer) || peer == self || peer >= FAKEHIP_MAX_DEVICES ||
      self >= FAKEHIP_MAX_DEVICES) {
    return fakehip_ret(hipErrorInvalidDevice);
  }
  pthread_mutex_lock(&fakehip_lock);
  bool was = fakehip_peer_on[self][peer];
  fakehip_peer_on[self][peer] = true;
  pthread_mutex_unlock(&fakehip_lock);
  return fakehip_ret(was ? hipErrorPeerAccessAlreadyEnabled : hipSuccess);
}

// ---------------------------------------------------------------------------
// Memory: host memory behind a header recording the size
// ---------------------------------------------------------------------------

// Device allocations and host registrations, with the device current
// when they were made: what hipPointerGetAttributes and
// hipMemGetAddressRange answer from.
typedef struct fakehip_range {
  struct fakehip_range* next;
  uintptr_t base;
  size_t size;
  int device;
} fakehip_range_t;

static fakehip_range_t* fakehip_allocs;    // guarded by fakehip_lock
static fakehip_range_t* fakehip_hostregs;  // guarded by fakehip_lock

// Records a range (best effort: without memory the queries miss it).
static void fakehip_range_add(fakehip_range_t** list, void* p, size_t size,
                              int device) {
  fakehip_range_t* r = malloc(sizeof(*r));
  if (r == NULL) return;
  pthread_mutex_lock(&fakehip_lock);
  *r = (fakehip_range_t){*list, (uintptr_t)p, size, device};
  *list = r;
  pthread_mutex_unlock(&fakehip_lock);
}

// Forgets the range starting at `p`; false if there is none.
static bool fakehip_range_remove(fakehip_range_t** list, void* p) {
  pthread_mutex_lock(&fakehip_lock);
  fakehip_range_t** at = list;
  while (*at != NULL && (*at)->base != (uintptr_t)p) at = &(*at)->next;
  fakehip_range_t* r = *at;
  if (r != NULL) *at = r->next;
  pthread_mutex_unlock(&fakehip_lock);
  free(r);
  return r != NULL;
}

// A copy of the range of `list` holding `p`; false if none does.
static bool fakehip_range_find(fakehip_range_t* const* list, uintptr_t p,
                               fakehip_range_t* out) {
  bool found = false;
  pthread_mutex_lock(&fakehip_lock);
  for (const fakehip_range_t* r = *list; r != NULL && !found; r = r->next) {
    if (p >= r->base && p - r->base < r->size) {
      *out = *r;
      found = true;
    }
  }
  pthread_mutex_unlock(&fakehip_lock);
  return found;
}

// hipMemoryType values of the runtime the fake pretends to be: ROCm 6
// renumbered them and added Unregistered (0).
static int fakehip_memory_type(bool device) {
  int version = 0;
  hipRuntimeGetVersion(&version);
  if (version >= 60000000) return device ? 2 : 1;
  return device ? 1 : 0;
}

FAKEHIP_API hipError_t hipPointerGetAttributes(hipPointerAttribute_t* attr,
                                               const void* ptr) {
  if (attr == NULL) return fakehip_ret(hipErrorInvalidValue);
  memset(attr, 0, sizeof(*attr));
  fakehip_range_t r;
  bool device = fakehip_range_find(&fakehip_allocs, (uintptr_t)ptr, &r);
  if (!device && !fakehip_range_find(&fakehip_hostregs, (uintptr_t)ptr, &r)) {
    int version = 0;
    hipRuntimeGetVersion(&version);
    // ROCm 6 answers "unregistered" (0) with success; ROCm 5 fails.
    attr->device = -1;
    return fakehip_ret(version >= 60000000 ? hipSuccess : hipErrorInvalidValue);
  }
  attr->memoryType = (enum hipMemoryType)fakehip_memory_type(device);
  attr->device = r.device;
  attr->devicePointer = (void*)ptr;
  attr->hostPointer = device ? NULL : (void*)ptr;
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipMemGetAddressRange(hipDeviceptr_t* base, size_t* size,
                                             hipDeviceptr_t ptr) {
  fakehip_range_t r;
  if (base == NULL || size == NULL ||
      !fakehip_range_find(&fakehip_allocs, (uintptr_t)ptr, &r)) {
    return fakehip_ret(hipErrorNotFound);
  }
  *base = (hipDeviceptr_t)r.base;
  *size = r.size;
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipHostRegister(void* ptr, size_t size,
                                       unsigned int flags) {
  if (ptr == NULL || size == 0 || (flags & ~0xfu) != 0 ||
      (uintptr_t)ptr > UINTPTR_MAX - size) {
    return fakehip_ret(hipErrorInvalidValue);
  }
  uintptr_t p = (uintptr_t)ptr;
  bool overlap = false;
  pthread_mutex_lock(&fakehip_lock);
  for (const fakehip_range_t* r = fakehip_hostregs; r != NULL; r = r->next) {
    overlap = overlap || (p < r->base + r->size && r->base < p + size);
  }
  pthread_mutex_unlock(&fakehip_lock);
  if (overlap) return fakehip_ret(hipErrorHostMemoryAlreadyRegistered);
  fakehip_range_add(&fakehip_hostregs, ptr, size, fakehip_current);
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipHostUnregister(void* ptr) {
  return fakehip_ret(fakehip_range_remove(&fakehip_hostregs, ptr)
                         ? hipSuccess
                         : hipErrorHostMemoryNotRegistered);
}

// Test-only (not HIP API): whether all `size` bytes at `p` are inside one
// hipHostRegister registration.
FAKEHIP_API bool fakehip_host_registered(const void* p, size_t size) {
  fakehip_range_t r;
  return fakehip_range_find(&fakehip_hostregs, (uintptr_t)p, &r) &&
         size <= r.size - ((uintptr_t)p - r.base);
}

// A registration still there when the process ends was never undone.
__attribute__((destructor)) static void fakehip_hostreg_leaks(void) {
  int n = 0;
  for (fakehip_range_t* r = fakehip_hostregs; r != NULL; r = r->next) n++;
  if (n != 0) {
    fprintf(stderr,
            "fakehip: leak: %d host registration(s) never unregistered "
            "(hipHostUnregister)\n",
            n);
  }
}

FAKEHIP_API hipError_t hipMemGetInfo(size_t* free_bytes, size_t* total) {
  pthread_mutex_lock(&fakehip_lock);
  *free_bytes = FAKEHIP_TOTAL - fakehip_allocated;
  pthread_mutex_unlock(&fakehip_lock);
  *total = FAKEHIP_TOTAL;
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipMalloc(void** ptr, size_t size) {
  *ptr = NULL;
  pthread_mutex_lock(&fakehip_lock);
  bool room = size <= FAKEHIP_TOTAL - fakehip_allocated;
  if (room) fakehip_allocated += size;
  pthread_mutex_unlock(&fakehip_lock);
  void* block = NULL;
  if (!room || posix_memalign(&block, FAKEHIP_HEADER,
                              FAKEHIP_HEADER + (size ? size : 1)) != 0) {
    if (room) {
      pthread_mutex_lock(&fakehip_lock);
      fakehip_allocated -= size;
      pthread_mutex_unlock(&fakehip_lock);
    }
    return fakehip_ret(hipErrorOutOfMemory);
  }
  memcpy(block, &size, sizeof(size));
  *ptr = (unsigned char*)block + FAKEHIP_HEADER;
  fakehip_range_add(&fakehip_allocs, *ptr, size ? size : 1, fakehip_current);
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipFree(void* ptr) {
  if (ptr == NULL) return fakehip_ret(hipSuccess);
  fakehip_range_remove(&fakehip_allocs, ptr);
  unsigned char* block = (unsigned char*)ptr - FAKEHIP_HEADER;
  size_t size;
  memcpy(&size, block, sizeof(size));
  pthread_mutex_lock(&fakehip_lock);
  fakehip_allocated -= size;
  pthread_mutex_unlock(&fakehip_lock);
  free(block);
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipHostMalloc(void** ptr, size_t size,
                                     unsigned int flags) {
  (void)flags;
  *ptr = NULL;
  if (posix_memalign(ptr, 4096, size ? size : 1) != 0) {
    return fakehip_ret(hipErrorOutOfMemory);
  }
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipHostFree(void* ptr) {
  free(ptr);
  return fakehip_ret(hipSuccess);
}

// ---------------------------------------------------------------------------
// Kernels: host versions, found by name
// ---------------------------------------------------------------------------

typedef void (*fakehip_kernel_fn_t)(void* const* params, const unsigned grid[3],
                                    const unsigned block[3]);

typedef struct fakehip_kernel {
  const char* name;
  unsigned num_params;
  size_t param_size[FAKEHIP_MAX_PARAMS];
  fakehip_kernel_fn_t fn;
} fakehip_kernel_t;

static void fakehip_fill(void* const* p, const unsigned* g, const unsigned* b) {
  (void)g, (void)b;
  const accel_rocm_op_args_t* a = p[0];
  for (accel_rocm_u64_t i = 0; i < a->count; i++) accel_rocm_fill_at(a, i);
}

static void fakehip_cast(void* const* p, const unsigned* g, const unsigned* b) {
  (void)g, (void)b;
  const accel_rocm_op_args_t* a = p[0];
  for (accel_rocm_u64_t i = 0; i < a->count; i++) accel_rocm_cast_at(a, i);
}

static void fakehip_ewise(void* const* p, const unsigned* g,
                          const unsigned* b) {
  (void)g, (void)b;
  const accel_rocm_op_args_t* a = p[0];
  for (accel_rocm_u64_t i = 0; i < a->count; i++) accel_rocm_ewise_at(a, i);
}

// One partial result per block, over the block's chunk (as the kernel).
static void fakehip_sum_partial(void* const* p, const unsigned* g,
                                const unsigned* b) {
  (void)b;
  const accel_rocm_op_args_t* a = p[0];
  accel_rocm_u64_t chunk = accel_rocm_sum_chunk(a);
  for (unsigned blk = 0; blk < g[0]; blk++) {
    accel_rocm_u64_t lo = (accel_rocm_u64_t)blk * chunk;
    accel_rocm_u64_t hi = lo + chunk < a->count ? lo + chunk : a->count;
    double f = 0;
    long long s = 0;
    for (accel_rocm_u64_t i = lo; i < hi; i++) {
      if (a->dtype == ACCEL_ROCM_I32) {
        s += ((const int32_t*)a->x)[i];
      } else {
        f += accel_rocm_load(a->x, a->dtype, i);
      }
    }
    if (a->dtype == ACCEL_ROCM_I32) {
      ((long long*)a->partial)[blk] = s;
    } else {
      ((double*)a->partial)[blk] = f;
    }
  }
}

static void fakehip_sum_final(void* const* p, const unsigned* g,
                              const unsigned* b) {
  (void)g, (void)b;
  const accel_rocm_op_args_t* a = p[0];
  double f = 0;
  long long s = 0;
  for (unsigned blk = 0; blk < a->blocks; blk++) {
    if (a->dtype == ACCEL_ROCM_I32) {
      s += ((const long long*)a->partial)[blk];
    } else {
      f += ((const double*)a->partial)[blk];
    }
  }
  accel_rocm_sum_store(a, f, s);
}

static void fakehip_gemm(void* const* p, const unsigned* g, const unsigned* b) {
  (void)g, (void)b;
  const accel_rocm_gemm_args_t* a = p[0];
  for (accel_rocm_u64_t row = 0; row < a->m; row++) {
    for (accel_rocm_u64_t col = 0; col < a->n; col++) {
      float acc = 0.0f;
      for (accel_rocm_u64_t k = 0; k < a->k; k++) {
        acc += accel_rocm_gemm_a(a, row, k) * accel_rocm_gemm_b(a, k, col);
      }
      accel_rocm_gemm_store(a, row, col, acc);
    }
  }
}

// accel_rocm_rng: every Philox block, with the GPU's element code.
static void fakehip_rng(void* const* p, const unsigned* g, const unsigned* b) {
  (void)g, (void)b;
  const accel_rocm_rng_args_t* r = p[0];
  for (accel_rocm_u64_t k = 0; k < (r->count + 3) / 4; k++) {
    accel_rocm_rng_block(r, k);
  }
}

// ABI 1.4: activations, bias-add and the batched tiled GEMM, with the
// GPU kernels' element code (ops_impl.h).
static void fakehip_unary(void* const* p, const unsigned* g,
                          const unsigned* b) {
  (void)g, (void)b;
  const accel_rocm_nn_args_t* a = p[0];
  for (accel_rocm_u64_t i = 0; i < a->count; i++) accel_rocm_unary_at(a, i);
}

static void fakehip_bias_add(void* const* p, const unsigned* g,
                             const unsigned* b) {
  (void)g, (void)b;
  const accel_rocm_nn_args_t* a = p[0];
  for (accel_rocm_u64_t i = 0; i < a->count; i++) accel_rocm_bias_add_at(a, i);
}

static void fakehip_gemm_batched(void* const* p, const unsigned* g,
                                 const unsigned* b) {
  const accel_rocm_gemm_batch_args_t* a = p[0];
  for (accel_rocm_u64_t i = 0; i < a->count; i++) {
    accel_rocm_gemm_args_t member = accel_rocm_gemm_member(a, i);
    void* params[] = {&member};
    fakehip_gemm(params, g, b);
  }
}

// What the launch being run may read or report: its dynamic shared memory
// and whether its kernel trapped (a stream's worker, or the caller for the
// null stream, runs one launch at a time; fakehip_task_run sets them).
static FAKEHIP_TLS unsigned fakehip_launch_shared;
static FAKEHIP_TLS bool fakehip_launch_trapped;

// accel-conform's test kernel: data[i] += 1 for global index i < n.
static void fakehip_add_one(void* const* p, const unsigned* g,
                            const unsigned* b) {
  int32_t* data = *(int32_t* const*)p[0];
  uint32_t n = *(const uint32_t*)p[1];
  uint64_t threads = (uint64_t)g[0] * b[0];
  for (uint64_t i = 0; i < threads && i < n; i++) data[i] += 1;
}

static const fakehip_kernel_t fakehip_kernels[] = {
    {"accel_rocm_fill", 1, {sizeof(accel_rocm_op_args_t)}, fakehip_fill},
    {"accel_rocm_cast", 1, {sizeof(accel_rocm_op_args_t)}, fakehip_cast},
    {"accel_rocm_ewise", 1, {sizeof(accel_rocm_op_args_t)}, fakehip_ewise},
    {"accel_rocm_sum_partial",
     1,
     {sizeof(accel_rocm_op_args_t)},
     fakehip_sum_partial},
    {"accel_rocm_sum_final",
     1,
     {sizeof(accel_rocm_op_args_t)},
     fakehip_sum_final},
    {"accel_rocm_gemm", 1, {sizeof(accel_rocm_gemm_args_t)}, fakehip_gemm},
    {"accel_rocm_rng", 1, {sizeof(accel_rocm_rng_args_t)}, fakehip_rng},
    {"accel_conform_add_one",
     2,
     {sizeof(int32_t*), sizeof(uint32_t)},
     fakehip_add_one},
    {"accel_rocm_unary", 1, {sizeof(accel_rocm_nn_args_t)}, fakehip_unary},
    {"accel_rocm_bias_add",
     1,
     {sizeof(accel_rocm_nn_args_t)},
     fakehip_bias_add},
    {"accel_rocm_gemm_batched",
     1,
     {sizeof(accel_rocm_gemm_batch_args_t)},
     fakehip_gemm_batched},
};

// ---------------------------------------------------------------------------
// Events and streams
// ---------------------------------------------------------------------------

struct ihipEvent_t {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  unsigned flags;
  int refs;           // the handle plus queued tasks
  uint64_t recorded;  // generation of the last record
  uint64_t done;      // generation completed
  double time_ms;
  // Sticky: recorded on a stream after its work faulted. HIP reports a
  // device fault to every later call; queries of such an event at least.
  hipError_t error;
};

typedef enum {
  FAKEHIP_COPY,
  FAKEHIP_SET,
  FAKEHIP_LAUNCH,
  FAKEHIP_CALL,
  FAKEHIP_RECORD,
  FAKEHIP_WAIT,
  FAKEHIP_GRAPH,  // runs the tasks of `body` (a graph launch)
  FAKEHIP_STOP
} fakehip_task_kind_t;

typedef struct fakehip_body fakehip_body_t;

typedef struct fakehip_task {
  struct fakehip_task* next;
  fakehip_task_kind_t kind;
  void* dst;
  const void* src;
  size_t size;
  int value;
  hipEvent_t event;
  uint64_t gen;
  const fakehip_kernel_t* kernel;
  unsigned grid[3], block[3];
  unsigned shared;                   // dynamic shared memory bytes
  void* params[FAKEHIP_MAX_PARAMS];  // copies of the kernel's parameters
  void (*call)(void* arg);           // FAKEHIP_CALL: call(params[0])
  fakehip_body_t* body;              // FAKEHIP_GRAPH: holds a reference
} fakehip_task_t;

struct ihipStream_t {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  fakehip_task_t *head, *tail;
  // Tasks ever queued and tasks run; they run in order, so the first
  // `completed` of them are done. hipStreamSynchronize waits for the count
  // queued when it is called, not for an empty stream (work other threads
  // queue meanwhile is not waited for, as on a GPU).
  uint64_t enqueued, completed;
  hipError_t error;  // sticky asynchronous error (FAKEHIP_FAULT)
  pthread_t worker;
  // While capturing, submitted work goes to `capture` instead (guarded by
  // `mutex`); a call illegal in a capture invalidates it.
  fakehip_body_t* capture;
  bool capture_invalid;
};

static void fakehip_event_release(hipEvent_t e) {
  pthread_mutex_lock(&e->mutex);
  bool last = --e->refs == 0;
  pthread_mutex_unlock(&e->mutex);
  if (last) {
    pthread_mutex_destroy(&e->mutex);
    pthread_cond_destroy(&e->cond);
    free(e);
  }
}

static void fakehip_body_run(const fakehip_body_t* body);
static void fakehip_host_call_run(void* arg);
static void fakehip_body_release(fakehip_body_t* body);

// Runs `t`, leaving what it owns.
static void fakehip_task_exec(const fakehip_task_t* t) {
  switch (t->kind) {
    case FAKEHIP_COPY:
      memmove(t->dst, t->src, t->size);
      break;
    case FAKEHIP_SET:
      memset(t->dst, t->value, t->size);
      break;
    case FAKEHIP_LAUNCH:
      fakehip_launch_shared = t->shared;
      fakehip_launch_trapped = false;
      t->kernel->fn(t->params, t->grid, t->block);
      break;
    case FAKEHIP_CALL:
      t->call(t->params[0]);
      break;
    case FAKEHIP_RECORD:
      pthread_mutex_lock(&t->event->mutex);
      if (t->gen > t->event->done) {
        t->event->done = t->gen;
        t->event->time_ms = fakehip_now_ms();
      }
      pthread_cond_broadcast(&t->event->cond);
      pthread_mutex_unlock(&t->event->mutex);
      break;
    case FAKEHIP_WAIT:
      pthread_mutex_lock(&t->event->mutex);
      while (t->event->done < t->gen) {
        pthread_cond_wait(&t->event->cond, &t->event->mutex);
      }
      pthread_mutex_unlock(&t->event->mutex);
      break;
    case FAKEHIP_GRAPH:
      fakehip_body_run(t->body);
      break;
    case FAKEHIP_STOP:
      break;
  }
}

// Frees what `t` owns (not `t`).
static void fakehip_task_clear(fakehip_task_t* t) {
  if (t->event != NULL) fakehip_event_release(t->event);
  if (t->body != NULL) fakehip_body_release(t->body);
  for (int i = 0; i < FAKEHIP_MAX_PARAMS; i++) free(t->params[i]);
}

static void fakehip_task_run(fakehip_task_t* t) {
  fakehip_task_exec(t);
  fakehip_task_clear(t);
}

static void* fakehip_worker(void* arg) {
  hipStream_t s = arg;
  for (;;) {
    pthread_mutex_lock(&s->mutex);
    while (s->head == NULL) pthread_cond_wait(&s->cond, &s->mutex);
    fakehip_task_t* t = s->head;
    pthread_mutex_unlock(&s->mutex);
    bool stop = t->kind == FAKEHIP_STOP;
    // FAKEHIP_FAULT=<kernel>: that kernel "faults" (an illegal address),
    // reported by the next synchronising call, as on a GPU.
    const char* fault = getenv("FAKEHIP_FAULT");
    bool faults = t->kind == FAKEHIP_LAUNCH && fault != NULL &&
                  strcmp(fault, t->kernel->name) == 0;
    if (faults) t->kind = FAKEHIP_STOP;  // frees the task, runs nothing
    if (t->kind == FAKEHIP_RECORD) {
      // An event recorded after a fault completes with it.
      pthread_mutex_lock(&s->mutex);
      hipError_t error = s->error;
      pthread_mutex_unlock(&s->mutex);
      pthread_mutex_lock(&t->event->mutex);
      if (error != hipSuccess) t->event->error = error;
      pthread_mutex_unlock(&t->event->mutex);
    }
    // After a fault HIP calls no host function (hipLaunchHostFunc).
    pthread_mutex_lock(&s->mutex);
    bool failed = s->error != hipSuccess;
    pthread_mutex_unlock(&s->mutex);
    if (failed && t->kind == FAKEHIP_CALL && t->call == fakehip_host_call_run) {
      fakehip_task_clear(t);
    } else {
      fakehip_launch_trapped = false;
      fakehip_task_run(t);
    }
    // accel_conform_fail traps, as FAKEHIP_FAULT's kernels fault; so does
    // a graph whose launch node traps.
    if ((t->kind == FAKEHIP_LAUNCH || t->kind == FAKEHIP_GRAPH) &&
        fakehip_launch_trapped) {
      faults = true;
    }
    pthread_mutex_lock(&s->mutex);
    if (faults && s->error == hipSuccess) s->error = hipErrorIllegalAddress;
    s->head = t->next;
    if (s->head == NULL) s->tail = NULL;
    s->completed++;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->mutex);
    free(t);
    if (stop) return NULL;
  }
}

static hipError_t fakehip_capture_add(hipStream_t s, fakehip_task_t* t);

// Runs `t` now for the null stream, else queues it (or, on a capturing
// stream, records it). Takes ownership.
static hipError_t fakehip_submit(hipStream_t s, fakehip_task_t* t) {
  if (s == NULL) {
    fakehip_task_run(t);
    free(t);
    return hipSuccess;
  }
  pthread_mutex_lock(&s->mutex);
  if (s->capture != NULL) {
    hipError_t err = fakehip_capture_add(s, t);
    pthread_mutex_unlock(&s->mutex);
    return err;
  }
  if (s->tail != NULL) {
    s->tail->next = t;
  } else {
    s->head = t;
  }
  s->tail = t;
  s->enqueued++;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->mutex);
  return hipSuccess;
}

static fakehip_task_t* fakehip_task(fakehip_task_kind_t kind) {
  fakehip_task_t* t = calloc(1, sizeof(*t));
  if (t != NULL) t->kind = kind;
  return t;
}

FAKEHIP_API hipError_t hipStreamCreateWithFlags(hipStream_t* out,
                                                unsigned int flags) {
  (void)flags;
  hipStream_t s = calloc(1, sizeof(*s));
  if (s == NULL) return fakehip_ret(hipErrorOutOfMemory);
  pthread_mutex_init(&s->mutex, NULL);
  pthread_cond_init(&s->cond, NULL);
  if (pthread_create(&s->worker, NULL, fakehip_worker, s) != 0) {
    free(s);
    return fakehip_ret(hipErrorOutOfMemory);
  }
  *out = s;
  return fakehip_ret(hipSuccess);
}

static bool fakehip_capture_illegal(hipStream_t s);

FAKEHIP_API hipError_t hipStreamSynchronize(hipStream_t s) {
  if (fakehip_capture_illegal(s)) {
    return fakehip_ret(hipErrorStreamCaptureUnsupported);
  }
  if (s == NULL)
    return fakehip_ret(hipSuccess);  // null-stream work ran synchronously
  // "all operations on the specified stream": those queued before the call.
  pthread_mutex_lock(&s->mutex);
  uint64_t target = s->enqueued;
  while (s->completed < target) pthread_cond_wait(&s->cond, &s->mutex);
  hipError_t error = s->error;
  pthread_mutex_unlock(&s->mutex);
  return fakehip_ret(error);
}

FAKEHIP_API hipError_t hipStreamDestroy(hipStream_t s) {
  if (s == NULL) return fakehip_ret(hipErrorInvalidHandle);
  fakehip_task_t* t = fakehip_task(FAKEHIP_STOP);
  if (t == NULL) return fakehip_ret(hipErrorOutOfMemory);
  fakehip_body_t* capture = s->capture;  // a capture never ended
  s->capture = NULL;
  if (capture != NULL) fakehip_body_release(capture);
  fakehip_submit(s, t);
  pthread_join(s->worker, NULL);
  pthread_mutex_destroy(&s->mutex);
  pthread_cond_destroy(&s->cond);
  free(s);
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipStreamQuery(hipStream_t s) {
  if (fakehip_capture_illegal(s)) {
    return fakehip_ret(hipErrorStreamCaptureUnsupported);
  }
  if (s == NULL) return fakehip_ret(hipSuccess);
  pthread_mutex_lock(&s->mutex);
  bool pending = s->completed < s->enqueued;  // at this moment
  hipError_t error = s->error;
  pthread_mutex_unlock(&s->mutex);
  return fakehip_ret(pending ? hipErrorNotReady : error);
}

FAKEHIP_API hipError_t hipEventCreateWithFlags(hipEvent_t* out,
                                               unsigned int flags) {
  hipEvent_t e = calloc(1, sizeof(*e));
  if (e == NULL) return fakehip_ret(hipErrorOutOfMemory);
  pthread_mutex_init(&e->mutex, NULL);
  pthread_cond_init(&e->cond, NULL);
  e->flags = flags;
  e->refs = 1;
  *out = e;
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipEventDestroy(hipEvent_t e) {
  if (e == NULL) return fakehip_ret(hipErrorInvalidHandle);
  fakehip_event_release(e);
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipEventRecord(hipEvent_t e, hipStream_t s) {
  fakehip_task_t* t = fakehip_task(FAKEHIP_RECORD);
  if (t == NULL) return fakehip_ret(hipErrorOutOfMemory);
  pthread_mutex_lock(&e->mutex);
  t->gen = ++e->recorded;
  e->refs++;
  pthread_mutex_unlock(&e->mutex);
  t->event = e;
  return fakehip_ret(fakehip_submit(s, t));
}

FAKEHIP_API hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e,
                                          unsigned int flags) {
  (void)flags;
  fakehip_task_t* t = fakehip_task(FAKEHIP_WAIT);
  if (t == NULL) return fakehip_ret(hipErrorOutOfMemory);
  pthread_mutex_lock(&e->mutex);
  t->gen = e->recorded;
  e->refs++;
  pthread_mutex_unlock(&e->mutex);
  t->event = e;
  return fakehip_ret(fakehip_submit(s, t));
}

FAKEHIP_API hipError_t hipEventSynchronize(hipEvent_t e) {
  // The record current at the call ("waiting for all previous work in the
  // stream specified when event was recorded"), not a re-record made
  // meanwhile by another thread.
  pthread_mutex_lock(&e->mutex);
  uint64_t gen = e->recorded;
  while (e->done < gen) pthread_cond_wait(&e->cond, &e->mutex);
  hipError_t error = e->error;
  pthread_mutex_unlock(&e->mutex);
  return fakehip_ret(error);
}

FAKEHIP_API hipError_t hipEventQuery(hipEvent_t e) {
  pthread_mutex_lock(&e->mutex);
  bool done = e->done >= e->recorded;
  hipError_t error = e->error;
  pthread_mutex_unlock(&e->mutex);
  return fakehip_ret(done ? error : hipErrorNotReady);
}

FAKEHIP_API hipError_t hipEventElapsedTime(float* ms, hipEvent_t start,
                                           hipEvent_t stop) {
  if ((start->flags & hipEventDisableTiming) ||
      (stop->flags & hipEventDisableTiming)) {
    return fakehip_ret(hipErrorInvalidHandle);
  }
  if (hipEventQuery(start) != hipSuccess || hipEventQuery(stop) != hipSuccess) {
    return fakehip_ret(hipErrorNotReady);
  }
  pthread_mutex_lock(&start->mutex);
  double t0 = start->time_ms;
  pthread_mutex_unlock(&start->mutex);
  pthread_mutex_lock(&stop->mutex);
  double t1 = stop->time_ms;
  pthread_mutex_unlock(&stop->mutex);
  *ms = (float)(t1 - t0);
  return fakehip_ret(hipSuccess);
}

// ---------------------------------------------------------------------------
// Copies and memset
// ---------------------------------------------------------------------------

static hipError_t fakehip_copy(void* dst, const void* src, size_t size,
                               hipStream_t s) {
  fakehip_task_t* t = fakehip_task(FAKEHIP_COPY);
  if (t == NULL) return hipErrorOutOfMemory;
  t->dst = dst;
  t->src = src;
  t->size = size;
  return fakehip_submit(s, t);
}

FAKEHIP_API hipError_t hipMemcpyAsync(void* dst, const void* src, size_t size,
                                      hipMemcpyKind kind, hipStream_t s) {
  (void)kind;
  // hip_runtime_api.h: "src and dst must not overlap". A GPU copy engine
  // moving overlapping ranges corrupts them; the fake refuses instead.
  const unsigned char* d = dst;
  const unsigned char* from = src;
  if (size > 0 && d < from + size && from < d + size) {
    return fakehip_ret(hipErrorInvalidValue);
  }
  return fakehip_ret(fakehip_copy(dst, src, size, s));
}

FAKEHIP_API hipError_t hipMemcpyPeerAsync(void* dst, int dst_device,
                                          const void* src, int src_device,
                                          size_t size, hipStream_t s) {
  if (!fakehip_valid(dst_device) || !fakehip_valid(src_device)) {
    return fakehip_ret(hipErrorInvalidDevice);
  }
  return fakehip_ret(fakehip_copy(dst, src, size, s));
}

FAKEHIP_API hipError_t hipMemsetAsync(void* dst, int value, size_t size,
                                      hipStream_t s) {
  fakehip_task_t* t = fakehip_task(FAKEHIP_SET);
  if (t == NULL) return fakehip_ret(hipErrorOutOfMemory);
  t->dst = dst;
  t->value = value;
  t->size = size;
  return fakehip_ret(fakehip_submit(s, t));
}

// ---------------------------------------------------------------------------
// Modules
// ---------------------------------------------------------------------------

struct ihipModule_t {
  const void* image;
  size_t size;
};

struct ihipModuleSymbol_t {
  const fakehip_kernel_t* kernel;
};

static uint64_t fakehip_u64(const unsigned char* p) {
  uint64_t v;
  memcpy(&v, p, sizeof(v));
  return v;
}

// Size of a bundle: the end of its furthest entry.
static size_t fakehip_bundle_size(const unsigned char* p) {
  size_t at = sizeof(FAKEHIP_BUNDLE_MAGIC) - 1;
  uint64_t count = fakehip_u64(p + at), end = at + 8;
  at += 8;
  for (uint64_t i = 0; i < count && i < 64; i++) {
    uint64_t off = fakehip_u64(p + at), size = fakehip_u64(p + at + 8);
    uint64_t len = fakehip_u64(p + at + 16);
    if (off + size > end) end = off + size;
    at += 24 + len;
    if (at > end) end = at;
  }
  return (size_t)end;
}

// Size of a 64-bit ELF: its section header table ends it.
static size_t fakehip_elf_size(const unsigned char* p) {
  uint64_t shoff = fakehip_u64(p + 0x28);
  uint16_t shentsize, shnum;
  memcpy(&shentsize, p + 0x3a, 2);
  memcpy(&shnum, p + 0x3c, 2);
  return (size_t)(shoff + (uint64_t)shentsize * shnum);
}

static bool fakehip_contains(const void* hay, size_t size, const char* needle) {
  size_t n = strlen(needle);
  const unsigned char* p = hay;
  for (size_t i = 0; i + n <= size; i++) {
    if (p[i] == (unsigned char)needle[0] && memcmp(p + i, needle, n) == 0) {
      return true;
    }
  }
  return false;
}

FAKEHIP_API hipError_t hipModuleLoadData(hipModule_t* out, const void* image) {
  const unsigned char* p = image;
  char arch[64];
  snprintf(arch, sizeof(arch), "%s", fakehip_arch());
  char* colon = strchr(arch, ':');
  if (colon != NULL) *colon = '\0';
  size_t size;
  if (memcmp(p, FAKEHIP_BUNDLE_MAGIC, sizeof(FAKEHIP_BUNDLE_MAGIC) - 1) == 0) {
    size = fakehip_bundle_size(p);
    char triple[96];
    snprintf(triple, sizeof(triple), "amdgcn-amd-amdhsa--%s", arch);
    if (!fakehip_contains(p, size, triple))
      return fakehip_ret(hipErrorNoBinaryForGpu);
  } else if (memcmp(p, "\177ELF", 4) == 0 && p[4] == 2) {
    size = fakehip_elf_size(p);
  } else if (memcmp(p, FAKEHIP_RTC_MAGIC, sizeof(FAKEHIP_RTC_MAGIC) - 1) == 0) {
    // FAKEHIP_RTC_MAGIC, the arch line, then the NUL-terminated source.
    const char* at = (const char*)p + sizeof(FAKEHIP_RTC_MAGIC) - 1;
    const char* nl = strchr(at, '\n');
    if (nl == NULL || (size_t)(nl - at) != strlen(fakehip_arch()) ||
        memcmp(at, fakehip_arch(), (size_t)(nl - at)) != 0) {
      return fakehip_ret(hipErrorNoBinaryForGpu);
    }
    size = (size_t)(nl - (const char*)p) + strlen(nl) + 1;
  } else {
    return fakehip_ret(hipErrorInvalidImage);
  }
  hipModule_t m = calloc(1, sizeof(*m));
  void* copy = malloc(size);
  if (m == NULL || copy == NULL) {
    free(m);
    free(copy);
    return fakehip_ret(hipErrorOutOfMemory);
  }
  memcpy(copy, image, size);  // HIP copies the image too
  m->image = copy;
  m->size = size;
  *out = m;
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipModuleUnload(hipModule_t m) {
  free((void*)m->image);
  free(m);
  return fakehip_ret(hipSuccess);
}

// Functions are static, one per known kernel, and never written (several
// threads may look them up at once).
static const struct ihipModuleSymbol_t fakehip_symbols[] = {
    {&fakehip_kernels[0]}, {&fakehip_kernels[1]}, {&fakehip_kernels[2]},
    {&fakehip_kernels[3]}, {&fakehip_kernels[4]}, {&fakehip_kernels[5]},
    {&fakehip_kernels[6]}, {&fakehip_kernels[7]}, {&fakehip_kernels[8]},
    {&fakehip_kernels[9]}, {&fakehip_kernels[10]}};
_Static_assert(sizeof(fakehip_symbols) / sizeof(fakehip_symbols[0]) ==
                   sizeof(fakehip_kernels) / sizeof(fakehip_kernels[0]),
               "one symbol per kernel");

// accel-conform's other test kernels (sdk/conform/kernels/add_one_rocm.hip):
// launch.grids, launch.value_args, launch.shared_mem and error.sticky run
// on the stand-in with these host versions. Each is a kernel of its own
// table, so the built-in kernels above keep their indices.

// accel_conform_index(out, nx, ny, nz): every global (x, y, z) inside.
static void fakehip_conform_index(void* const* p, const unsigned* g,
                                  const unsigned* b) {
  int32_t* out = *(int32_t* const*)p[0];
  uint64_t n[3] = {*(const uint32_t*)p[1], *(const uint32_t*)p[2],
                   *(const uint32_t*)p[3]};
  uint64_t reach[3];
  for (int d = 0; d < 3; d++) {
    uint64_t threads = (uint64_t)g[d] * b[d];
    reach[d] = threads < n[d] ? threads : n[d];
  }
  for (uint64_t z = 0; z < reach[2]; z++) {
    for (uint64_t y = 0; y < reach[1]; y++) {
      for (uint64_t x = 0; x < reach[0]; x++) {
        out[(z * n[1] + y) * n[0] + x] =
            (int32_t)(uint32_t)(x + (y << 10) + (z << 20));
      }
    }
  }
}

// accel_conform_args(out, u8, u16, u32, u64, 16 bytes, 24 bytes).
static void fakehip_conform_args(void* const* p, const unsigned* g,
                                 const unsigned* b) {
  (void)g, (void)b;
  uint64_t* out = *(uint64_t* const*)p[0];
  out[0] = *(const uint8_t*)p[1];
  out[1] = *(const uint16_t*)p[2];
  out[2] = *(const uint32_t*)p[3];
  memcpy(&out[3], p[4], 8);
  memcpy(&out[4], p[5], 16);
  memcpy(&out[6], p[6], 24);
}

// accel_conform_shared(out, n) with n ints of dynamic shared memory per
// block; -1 where the launch gave less (the GPU would read past it).
static void fakehip_conform_shared(void* const* p, const unsigned* g,
                                   const unsigned* b) {
  (void)b;
  int32_t* out = *(int32_t* const*)p[0];
  uint64_t n = *(const uint32_t*)p[1];
  bool enough = fakehip_launch_shared >= n * sizeof(int32_t);
  for (uint64_t blk = 0; blk < g[0]; blk++) {
    for (uint64_t t = 0; t < n; t++) {
      out[blk * n + t] = enough ? (int32_t)(blk * 1000 + (n - 1 - t)) : -1;
    }
  }
}

// accel_conform_fail(flag): traps (__builtin_trap), so writes nothing here.
static void fakehip_conform_fail(void* const* p, const unsigned* g,
                                 const unsigned* b) {
  (void)p, (void)g, (void)b;
  fakehip_launch_trapped = true;
}

static const fakehip_kernel_t fakehip_conform_kernels[] = {
    {"accel_conform_index",
     4,
     {sizeof(int32_t*), 4, 4, 4},
     fakehip_conform_index},
    {"accel_conform_args",
     7,
     {sizeof(uint64_t*), 1, 2, 4, 8, 16, 24},
     fakehip_conform_args},
    {"accel_conform_shared",
     2,
     {sizeof(int32_t*), 4},
     fakehip_conform_shared},
    {"accel_conform_fail", 1, {sizeof(int32_t*)}, fakehip_conform_fail},
};
static const struct ihipModuleSymbol_t fakehip_conform_symbols[] = {
    {&fakehip_conform_kernels[0]},
    {&fakehip_conform_kernels[1]},
    {&fakehip_conform_kernels[2]},
    {&fakehip_conform_kernels[3]}};
_Static_assert(sizeof(fakehip_conform_symbols) /
                       sizeof(fakehip_conform_symbols[0]) ==
                   sizeof(fakehip_conform_kernels) /
                       sizeof(fakehip_conform_kernels[0]),
               "one symbol per conformance kernel");

FAKEHIP_API hipError_t hipModuleGetFunction(hipFunction_t* out, hipModule_t m,
                                            const char* name) {
  size_t n = sizeof(fakehip_kernels) / sizeof(fakehip_kernels[0]);
  for (size_t i = 0; i < n; i++) {
    if (strcmp(fakehip_kernels[i].name, name) == 0 &&
        fakehip_contains(m->image, m->size, name)) {
      *out = (hipFunction_t)&fakehip_symbols[i];
      return fakehip_ret(hipSuccess);
    }
  }
  n = sizeof(fakehip_conform_kernels) / sizeof(fakehip_conform_kernels[0]);
  for (size_t i = 0; i < n; i++) {
    if (strcmp(fakehip_conform_kernels[i].name, name) == 0 &&
        fakehip_contains(m->image, m->size, name)) {
      *out = (hipFunction_t)&fakehip_conform_symbols[i];
      return fakehip_ret(hipSuccess);
    }
  }
  return fakehip_ret(hipErrorNotFound);
}

FAKEHIP_API hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned int gx,
                                             unsigned int gy, unsigned int gz,
                                             unsigned int bx, unsigned int by,
                                             unsigned int bz,
                                             unsigned int shared, hipStream_t s,
                                             void** params, void** extra) {
  if (extra != NULL || (params == NULL && f->kernel->num_params > 0)) {
    return fakehip_ret(hipErrorInvalidValue);
  }
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 ||
      (uint64_t)bx * by * bz > 1024) {
    return fakehip_ret(hipErrorInvalidValue);
  }
  fakehip_task_t* t = fakehip_task(FAKEHIP_LAUNCH);
  if (t == NULL) return fakehip_ret(hipErrorOutOfMemory);
  t->kernel = f->kernel;
  t->grid[0] = gx, t->grid[1] = gy, t->grid[2] = gz;
  t->block[0] = bx, t->block[1] = by, t->block[2] = bz;
  t->shared = shared;
  // Parameters are copied at launch, as HIP does.
  for (unsigned i = 0; i < f->kernel->num_params; i++) {
    t->params[i] = malloc(f->kernel->param_size[i]);
    if (t->params[i] == NULL) {
      for (unsigned j = 0; j < i; j++) free(t->params[j]);
      free(t);
      return fakehip_ret(hipErrorOutOfMemory);
    }
    memcpy(t->params[i], params[i], f->kernel->param_size[i]);
  }
  return fakehip_ret(fakehip_submit(s, t));
}

// ---------------------------------------------------------------------------
// rocBLAS: column-major gemm_ex on the handle's stream (rocblas-types.h
// values: operation none 111, transpose 112; f16 150, f32 151, bf16 168)
// ---------------------------------------------------------------------------

typedef struct fakehip_blas {
  hipStream_t stream;
  void* workspace;  // rocblas_set_workspace; NULL: rocBLAS-managed
  size_t workspace_size;
  // GEMMs queued on the handle's own (rocBLAS-managed) workspace and not
  // yet run, and the stream they were queued on (under fakehip_blas_lock).
  // rocBLAS keeps one such workspace per handle and reuses it for every
  // GEMM: two streams running GEMMs on it at once would share the scratch.
  int managed_pending;
  hipStream_t managed_stream;
} fakehip_blas_t;

// Bytes written at each end of a GEMM's workspace when it runs.
#define FAKEHIP_BLAS_SCRIBBLE 4096u

// The workspace of the last gemm_ex queued (fakehip_rocblas_last_workspace).
static pthread_mutex_t fakehip_blas_lock = PTHREAD_MUTEX_INITIALIZER;
static uintptr_t fakehip_blas_last_ptr;
static size_t fakehip_blas_last_size;
static unsigned long fakehip_blas_gemms;

// Test-only, not rocBLAS: the workspace in effect for the last
// rocblas_gemm_ex queued (0 and 0 for rocBLAS-managed memory), and the
// number of gemm_ex calls queued so far. Any pointer may be NULL.
FAKEHIP_API void fakehip_rocblas_last_workspace(uintptr_t* out_ptr,
                                                size_t* out_size,
                                                unsigned long* out_gemms) {
  pthread_mutex_lock(&fakehip_blas_lock);
  if (out_ptr != NULL) *out_ptr = fakehip_blas_last_ptr;
  if (out_size != NULL) *out_size = fakehip_blas_last_size;
  if (out_gemms != NULL) *out_gemms = fakehip_blas_gemms;
  pthread_mutex_unlock(&fakehip_blas_lock);
}

typedef struct fakehip_gemm_ex {
  bool trans_a, trans_b;
  int m, n, k, lda, ldb, ldc;
  float alpha, beta;
  const void* a;
  const void* b;
  void* c;
  accel_rocm_u32_t ab_dtype, c_dtype;
  unsigned char* workspace;  // in effect when queued; NULL if none was set
  size_t workspace_size;
  fakehip_blas_t* managed;  // the handle, when on its own workspace
} fakehip_gemm_ex_t;

static int fakehip_blas_dtype(int t, accel_rocm_u32_t* out) {
  switch (t) {
    case 150:
      *out = ACCEL_ROCM_F16;
      return 0;
    case 151:
      *out = ACCEL_ROCM_F32;
      return 0;
    case 168:
      *out = ACCEL_ROCM_BF16;
      return 0;
    default:
      return -1;
  }
}

FAKEHIP_API int rocblas_create_handle(void** handle) {
  *handle = calloc(1, sizeof(fakehip_blas_t));
  return *handle != NULL ? 0 : 5;  // rocblas_status_memory_error
}

// rocblas_destroy_handle frees the handle's device memory (hipFree, which
// synchronises the device); the fake counts the calls.
static unsigned long fakehip_blas_destroys;  // guarded by fakehip_blas_lock

// Test-only, not rocBLAS: rocblas_destroy_handle calls so far.
FAKEHIP_API unsigned long fakehip_rocblas_destroy_count(void) {
  pthread_mutex_lock(&fakehip_blas_lock);
  unsigned long n = fakehip_blas_destroys;
  pthread_mutex_unlock(&fakehip_blas_lock);
  return n;
}

FAKEHIP_API int rocblas_destroy_handle(void* handle) {
  pthread_mutex_lock(&fakehip_blas_lock);
  fakehip_blas_destroys++;
  pthread_mutex_unlock(&fakehip_blas_lock);
  free(handle);
  return 0;
}

FAKEHIP_API int rocblas_set_stream(void* handle, hipStream_t stream) {
  ((fakehip_blas_t*)handle)->stream = stream;
  return 0;
}

// rocblas_set_workspace: device memory the handle uses from now on; NULL
// with size 0 returns it to rocBLAS-managed memory. Refuses (as
// rocblas_status_invalid_pointer, 3) a NULL with a size or a pointer not
// from hipMalloc's 256-byte alignment.
FAKEHIP_API int rocblas_set_workspace(void* handle, void* addr, size_t size) {
  if (handle == NULL) return 1;  // rocblas_status_invalid_handle
  if ((addr == NULL) != (size == 0) || ((uintptr_t)addr & 255u) != 0) {
    return 3;
  }
  ((fakehip_blas_t*)handle)->workspace = addr;
  ((fakehip_blas_t*)handle)->workspace_size = size;
  return 0;
}

static void fakehip_gemm_ex_run(void* arg) {
  const fakehip_gemm_ex_t* g = arg;
  // FAKEHIP_BLAS_DELAY_MS: each GEMM takes at least this long, so tests
  // can queue work while one is still running.
  const char* delay = getenv("FAKEHIP_BLAS_DELAY_MS");
  if (delay != NULL) {
    long ms = atol(delay);
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
  }
  if (g->workspace_size != 0) {
    size_t n = g->workspace_size < FAKEHIP_BLAS_SCRIBBLE
                   ? g->workspace_size
                   : FAKEHIP_BLAS_SCRIBBLE;
    memset(g->workspace, 0xa5, n);
    memset(g->workspace + g->workspace_size - n, 0x5a, n);
  }
  for (int j = 0; j < g->n; j++) {
    for (int i = 0; i < g->m; i++) {
      float acc = 0.0f;
      for (int l = 0; l < g->k; l++) {
        size_t ai = g->trans_a ? (size_t)l + (size_t)i * g->lda
                               : (size_t)i + (size_t)l * g->lda;
        size_t bi = g->trans_b ? (size_t)j + (size_t)l * g->ldb
                               : (size_t)l + (size_t)j * g->ldb;
        acc += accel_rocm_load(g->a, g->ab_dtype, ai) *
               accel_rocm_load(g->b, g->ab_dtype, bi);
      }
      size_t ci = (size_t)i + (size_t)j * g->ldc;
      float r = g->alpha * acc;
      if (g->beta != 0.0f) r += g->beta * accel_rocm_load(g->c, g->c_dtype, ci);
      accel_rocm_store(g->c, g->c_dtype, ci, r);
    }
  }
  if (g->managed != NULL) {
    pthread_mutex_lock(&fakehip_blas_lock);
    g->managed->managed_pending--;
    pthread_mutex_unlock(&fakehip_blas_lock);
  }
}

FAKEHIP_API int rocblas_gemm_ex(void* handle, int trans_a, int trans_b, int m,
                                int n, int k, const void* alpha, const void* a,
                                int a_type, int lda, const void* b, int b_type,
                                int ldb, const void* beta, const void* c,
                                int c_type, int ldc, void* d, int d_type,
                                int ldd, int compute_type, int algo,
                                int32_t solution_index, uint32_t flags) {
  (void)algo, (void)solution_index, (void)flags;
  fakehip_gemm_ex_t g = {
      .trans_a = trans_a == 112,
      .trans_b = trans_b == 112,
      .m = m,
      .n = n,
      .k = k,
      .lda = lda,
      .ldb = ldb,
      .ldc = ldc,
      .alpha = *(const float*)alpha,
      .beta = *(const float*)beta,
      .a = a,
      .b = b,
      .c = d,
      .workspace = ((fakehip_blas_t*)handle)->workspace,
      .workspace_size = ((fakehip_blas_t*)handle)->workspace_size};
  accel_rocm_u32_t bt = 0;
  if (fakehip_blas_dtype(a_type, &g.ab_dtype) != 0 ||
      fakehip_blas_dtype(b_type, &bt) != 0 || bt != g.ab_dtype ||
      fakehip_blas_dtype(c_type, &g.c_dtype) != 0 || c_type != d_type ||
      c != d || ldc != ldd || compute_type != 151 || m < 0 || n < 0 || k < 0 ||
      (trans_a != 111 && trans_a != 112) ||
      (trans_b != 111 && trans_b != 112)) {
    return 2;  // rocblas_status_not_implemented
  }
  // A user-owned workspace never grows: a GEMM needing more than it holds
  // fails (FAKEHIP_ROCBLAS_NEED: the bytes every GEMM needs).
  const char* need = getenv("FAKEHIP_ROCBLAS_NEED");
  if (need != NULL && g.workspace != NULL &&
      strtoull(need, NULL, 10) > g.workspace_size) {
    return 5;  // rocblas_status_memory_error
  }
  fakehip_task_t* t = fakehip_task(FAKEHIP_CALL);
  if (t == NULL || (t->params[0] = malloc(sizeof(g))) == NULL) {
    free(t);
    return 5;
  }
  fakehip_blas_t* h = handle;
  pthread_mutex_lock(&fakehip_blas_lock);
  if (g.workspace == NULL) {
    if (h->managed_pending > 0 && h->managed_stream != h->stream) {
      pthread_mutex_unlock(&fakehip_blas_lock);
      free(t->params[0]);
      free(t);
      fprintf(stderr,
              "fakehip: rocBLAS handle's own workspace used by GEMMs on two "
              "streams at once\n");
      return 6;  // rocblas_status_internal_error
    }
    h->managed_pending++;
    h->managed_stream = h->stream;
    g.managed = h;
  }
  pthread_mutex_unlock(&fakehip_blas_lock);
  memcpy(t->params[0], &g, sizeof(g));
  t->call = fakehip_gemm_ex_run;
  pthread_mutex_lock(&fakehip_blas_lock);
  fakehip_blas_last_ptr = (uintptr_t)g.workspace;
  fakehip_blas_last_size = g.workspace_size;
  fakehip_blas_gemms++;
  pthread_mutex_unlock(&fakehip_blas_lock);
  fakehip_submit(((fakehip_blas_t*)handle)->stream, t);
  return 0;
}

// ---------------------------------------------------------------------------
// Stream priorities and host functions
// ---------------------------------------------------------------------------

// HIP's range: low 1, normal 0, high -1.
#define FAKEHIP_PRIORITY_LEAST 1
#define FAKEHIP_PRIORITY_GREATEST (-1)

// The priority each stream made by hipStreamCreateWithPriority got (after
// clamping), newest last: test-only bookkeeping, guarded by the lock.
#define FAKEHIP_PRIORITY_SLOTS 256
static pthread_mutex_t fakehip_priority_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  hipStream_t stream;
  int priority;
} fakehip_priorities[FAKEHIP_PRIORITY_SLOTS];
static unsigned fakehip_priority_count;      // entries ever written
static unsigned long fakehip_host_funcs_run;  // guarded by the lock too

FAKEHIP_API hipError_t hipDeviceGetStreamPriorityRange(int* least,
                                                       int* greatest) {
  if (least != NULL) *least = FAKEHIP_PRIORITY_LEAST;
  if (greatest != NULL) *greatest = FAKEHIP_PRIORITY_GREATEST;
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipStreamCreateWithPriority(hipStream_t* out,
                                                   unsigned int flags,
                                                   int priority) {
  // Clamped into the range, as HIP documents.
  if (priority < FAKEHIP_PRIORITY_GREATEST) priority = FAKEHIP_PRIORITY_GREATEST;
  if (priority > FAKEHIP_PRIORITY_LEAST) priority = FAKEHIP_PRIORITY_LEAST;
  hipError_t err = hipStreamCreateWithFlags(out, flags);
  if (err != hipSuccess) return err;
  pthread_mutex_lock(&fakehip_priority_lock);
  unsigned slot = fakehip_priority_count++ % FAKEHIP_PRIORITY_SLOTS;
  fakehip_priorities[slot].stream = *out;
  fakehip_priorities[slot].priority = priority;
  pthread_mutex_unlock(&fakehip_priority_lock);
  return fakehip_ret(hipSuccess);
}

// Test-only, not HIP: the priority `s` got from hipStreamCreateWithPriority
// into `*out`; false when it was not made so.
FAKEHIP_API bool fakehip_stream_priority(hipStream_t s, int* out) {
  bool found = false;
  pthread_mutex_lock(&fakehip_priority_lock);
  unsigned n = fakehip_priority_count < FAKEHIP_PRIORITY_SLOTS
                   ? fakehip_priority_count
                   : FAKEHIP_PRIORITY_SLOTS;
  for (unsigned k = 0; k < n && !found; k++) {
    unsigned slot = (fakehip_priority_count - 1 - k) % FAKEHIP_PRIORITY_SLOTS;
    if (fakehip_priorities[slot].stream == s) {
      *out = fakehip_priorities[slot].priority;
      found = true;
    }
  }
  pthread_mutex_unlock(&fakehip_priority_lock);
  return found;
}

// Test-only, not HIP: the flags `e` was created with.
FAKEHIP_API unsigned fakehip_event_flags(hipEvent_t e) {
  return e != NULL ? e->flags : 0;
}

// Test-only, not HIP: host functions run so far.
FAKEHIP_API unsigned long fakehip_host_func_count(void) {
  pthread_mutex_lock(&fakehip_priority_lock);
  unsigned long n = fakehip_host_funcs_run;
  pthread_mutex_unlock(&fakehip_priority_lock);
  return n;
}

typedef struct fakehip_host_call {
  hipHostFn_t fn;
  void* user;
} fakehip_host_call_t;

// A FAKEHIP_CALL task's body; its argument is freed with the task.
static void fakehip_host_call_run(void* arg) {
  fakehip_host_call_t* call = arg;
  call->fn(call->user);
  pthread_mutex_lock(&fakehip_priority_lock);
  fakehip_host_funcs_run++;
  pthread_mutex_unlock(&fakehip_priority_lock);
}

FAKEHIP_API hipError_t hipLaunchHostFunc(hipStream_t s, hipHostFn_t fn,
                                         void* user) {
  if (fn == NULL) return fakehip_ret(hipErrorInvalidValue);
  fakehip_task_t* t = fakehip_task(FAKEHIP_CALL);
  fakehip_host_call_t* call = malloc(sizeof(*call));
  if (t == NULL || call == NULL) {
    free(t);
    free(call);
    return fakehip_ret(hipErrorOutOfMemory);
  }
  call->fn = fn;
  call->user = user;
  t->call = fakehip_host_call_run;
  t->params[0] = call;
  return fakehip_ret(fakehip_submit(s, t));
}

// rocblas_gemm_strided_batched_ex: each member as rocblas_gemm_ex (the
// same checks, queued in order; each counts for
// fakehip_rocblas_last_workspace), D the same as C. Strides in elements.
static unsigned long fakehip_blas_batched;  // guarded by fakehip_blas_lock

// Test-only, not rocBLAS: rocblas_gemm_strided_batched_ex calls that
// queued their whole batch.
FAKEHIP_API unsigned long fakehip_rocblas_strided_batched_count(void) {
  pthread_mutex_lock(&fakehip_blas_lock);
  unsigned long n = fakehip_blas_batched;
  pthread_mutex_unlock(&fakehip_blas_lock);
  return n;
}

FAKEHIP_API int rocblas_gemm_strided_batched_ex(
    void* handle, int trans_a, int trans_b, int m, int n, int k,
    const void* alpha, const void* a, int a_type, int lda, int64_t stride_a,
    const void* b, int b_type, int ldb, int64_t stride_b, const void* beta,
    const void* c, int c_type, int ldc, int64_t stride_c, void* d, int d_type,
    int ldd, int64_t stride_d, int batch_count, int compute_type, int algo,
    int32_t solution_index, uint32_t flags) {
  accel_rocm_u32_t at = 0, ct = 0;
  if (batch_count < 0 || c != d || stride_c != stride_d ||
      fakehip_blas_dtype(a_type, &at) != 0 ||
      fakehip_blas_dtype(c_type, &ct) != 0) {
    return 2;  // rocblas_status_not_implemented
  }
  int64_t ea = at == ACCEL_ROCM_F32 ? 4 : 2, ec = ct == ACCEL_ROCM_F32 ? 4 : 2;
  for (int i = 0; i < batch_count; i++) {
    int rc = rocblas_gemm_ex(handle, trans_a, trans_b, m, n, k, alpha,
                             (const char*)a + i * stride_a * ea, a_type, lda,
                             (const char*)b + i * stride_b * ea, b_type, ldb,
                             beta, (const char*)c + i * stride_c * ec, c_type,
                             ldc, (char*)d + i * stride_d * ec, d_type, ldd,
                             compute_type, algo, solution_index, flags);
    if (rc != 0) return rc;
  }
  pthread_mutex_lock(&fakehip_blas_lock);
  fakehip_blas_batched++;
  pthread_mutex_unlock(&fakehip_blas_lock);
  return 0;
}

// ---------------------------------------------------------------------------
// Stream capture and graphs, as libfakecuda models them (see there): a
// capturing stream appends the tasks submitted to it to its capture; the
// hipGraph_t is that list, and a launch of an executable graph queues one
// task that runs the list in order, leaving the tasks for the next launch.
// Event records and waits on a capturing stream, hipStreamSynchronize and
// hipStreamQuery of it are refused (hipErrorStreamCaptureUnsupported) and
// invalidate the capture (its end: hipErrorStreamCaptureInvalidated).
// Every capture behaves as relaxed. FAKEHIP_FAULT does not reach kernels
// run inside a graph.
// ---------------------------------------------------------------------------

struct fakehip_body {
  int refs;  // the graph, each executable graph and each queued launch
  fakehip_task_t** tasks;
  size_t count, capacity;
};

struct ihipGraph {
  fakehip_body_t* body;
};

struct hipGraphExec {
  fakehip_body_t* body;
};

static pthread_mutex_t fakehip_graph_lock = PTHREAD_MUTEX_INITIALIZER;
static int fakehip_graphs_live;  // graphs and executable graphs, guarded

// Test-only, not HIP: graphs and executable graphs not destroyed yet.
FAKEHIP_API int fakehip_graph_count(void) {
  pthread_mutex_lock(&fakehip_graph_lock);
  int n = fakehip_graphs_live;
  pthread_mutex_unlock(&fakehip_graph_lock);
  return n;
}

static void fakehip_body_retain(fakehip_body_t* body) {
  pthread_mutex_lock(&fakehip_graph_lock);
  body->refs++;
  pthread_mutex_unlock(&fakehip_graph_lock);
}

static void fakehip_body_release(fakehip_body_t* body) {
  pthread_mutex_lock(&fakehip_graph_lock);
  bool last = --body->refs == 0;
  pthread_mutex_unlock(&fakehip_graph_lock);
  if (!last) return;
  for (size_t i = 0; i < body->count; i++) {
    fakehip_task_clear(body->tasks[i]);
    free(body->tasks[i]);
  }
  free(body->tasks);
  free(body);
}

// Runs a graph's nodes; fakehip_launch_trapped says whether one trapped
// (the launch of the graph then faults, as a node's trap does on a GPU).
static void fakehip_body_run(const fakehip_body_t* body) {
  bool trapped = false;
  for (size_t i = 0; i < body->count; i++) {
    fakehip_task_exec(body->tasks[i]);
    if (body->tasks[i]->kind == FAKEHIP_LAUNCH && fakehip_launch_trapped) {
      trapped = true;
    }
  }
  fakehip_launch_trapped = trapped;
}

static void fakehip_graphs_count(int delta) {
  pthread_mutex_lock(&fakehip_graph_lock);
  fakehip_graphs_live += delta;
  pthread_mutex_unlock(&fakehip_graph_lock);
}

static hipError_t fakehip_capture_add(hipStream_t s, fakehip_task_t* t) {
  fakehip_body_t* body = s->capture;
  hipError_t err = hipSuccess;
  if (t->kind == FAKEHIP_RECORD || t->kind == FAKEHIP_WAIT ||
      t->kind == FAKEHIP_GRAPH) {
    if (t->kind == FAKEHIP_RECORD) {
      fakehip_task_exec(t);  // completes the record: no one waits for ever
    }
    err = hipErrorStreamCaptureUnsupported;
  } else if (s->capture_invalid) {
    err = hipErrorStreamCaptureInvalidated;
  } else if (body->count == body->capacity) {
    size_t capacity = body->capacity != 0 ? body->capacity * 2 : 16;
    fakehip_task_t** tasks = realloc(body->tasks, capacity * sizeof(*tasks));
    if (tasks == NULL) {
      err = hipErrorOutOfMemory;
    } else {
      body->tasks = tasks;
      body->capacity = capacity;
    }
  }
  if (err != hipSuccess) {
    s->capture_invalid = true;
    fakehip_task_clear(t);
    free(t);
    return err;
  }
  t->next = NULL;
  body->tasks[body->count++] = t;
  return hipSuccess;
}

static bool fakehip_capture_illegal(hipStream_t s) {
  if (s == NULL) return false;
  pthread_mutex_lock(&s->mutex);
  bool capturing = s->capture != NULL;
  if (capturing) s->capture_invalid = true;
  pthread_mutex_unlock(&s->mutex);
  return capturing;
}

FAKEHIP_API hipError_t hipStreamBeginCapture(hipStream_t s,
                                             hipStreamCaptureMode mode) {
  if (s == NULL) return fakehip_ret(hipErrorStreamCaptureUnsupported);
  if (mode != hipStreamCaptureModeGlobal &&
      mode != hipStreamCaptureModeThreadLocal &&
      mode != hipStreamCaptureModeRelaxed) {
    return fakehip_ret(hipErrorInvalidValue);
  }
  fakehip_body_t* body = calloc(1, sizeof(*body));
  if (body == NULL) return fakehip_ret(hipErrorOutOfMemory);
  body->refs = 1;
  pthread_mutex_lock(&s->mutex);
  bool busy = s->capture != NULL;
  if (!busy) {
    s->capture = body;
    s->capture_invalid = false;
  }
  pthread_mutex_unlock(&s->mutex);
  if (busy) {
    free(body);
    return fakehip_ret(hipErrorIllegalState);
  }
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipStreamEndCapture(hipStream_t s, hipGraph_t* out) {
  if (s == NULL || out == NULL) return fakehip_ret(hipErrorInvalidValue);
  *out = NULL;
  pthread_mutex_lock(&s->mutex);
  fakehip_body_t* body = s->capture;
  bool invalid = s->capture_invalid;
  s->capture = NULL;
  s->capture_invalid = false;
  pthread_mutex_unlock(&s->mutex);
  if (body == NULL) return fakehip_ret(hipErrorStreamCaptureUnmatched);
  hipGraph_t g = invalid ? NULL : calloc(1, sizeof(*g));
  if (g == NULL) {
    fakehip_body_release(body);
    return fakehip_ret(invalid ? hipErrorStreamCaptureInvalidated
                               : hipErrorOutOfMemory);
  }
  g->body = body;
  fakehip_graphs_count(1);
  *out = g;
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipGraphInstantiate(hipGraphExec_t* out, hipGraph_t g,
                                           hipGraphNode_t* error_node,
                                           char* log, size_t log_size) {
  (void)error_node, (void)log, (void)log_size;
  if (out == NULL || g == NULL) return fakehip_ret(hipErrorInvalidValue);
  hipGraphExec_t x = calloc(1, sizeof(*x));
  if (x == NULL) return fakehip_ret(hipErrorOutOfMemory);
  fakehip_body_retain(g->body);
  x->body = g->body;
  fakehip_graphs_count(1);
  *out = x;
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipGraphLaunch(hipGraphExec_t x, hipStream_t s) {
  if (x == NULL) return fakehip_ret(hipErrorInvalidValue);
  fakehip_task_t* t = fakehip_task(FAKEHIP_GRAPH);
  if (t == NULL) return fakehip_ret(hipErrorOutOfMemory);
  fakehip_body_retain(x->body);
  t->body = x->body;
  return fakehip_ret(fakehip_submit(s, t));
}

FAKEHIP_API hipError_t hipGraphExecDestroy(hipGraphExec_t x) {
  if (x == NULL) return fakehip_ret(hipErrorInvalidValue);
  fakehip_body_release(x->body);  // launches in flight keep it
  free(x);
  fakehip_graphs_count(-1);
  return fakehip_ret(hipSuccess);
}

FAKEHIP_API hipError_t hipGraphDestroy(hipGraph_t g) {
  if (g == NULL) return fakehip_ret(hipErrorInvalidValue);
  fakehip_body_release(g->body);
  free(g);
  fakehip_graphs_count(-1);
  return fakehip_ret(hipSuccess);
}

// A graph still there when the process ends was never destroyed.
__attribute__((destructor)) static void fakehip_graph_leaks(void) {
  if (fakehip_graphs_live != 0) {
    fprintf(stderr,
            "fakehip: leak: %d graph(s) or executable graph(s) never "
            "destroyed (hipGraphDestroy, hipGraphExecDestroy)\n",
            fakehip_graphs_live);
  }
}
