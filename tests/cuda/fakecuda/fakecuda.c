// SPDX-License-Identifier: MIT
//
// libfakecuda: a test-only stand-in for libcuda.so.1, loaded by the CUDA
// plugin through ACCEL_CUDA_DRIVER (and by accel-bench's raw baselines as
// libcuda.so.1 on LD_LIBRARY_PATH). It proves the plugin's plumbing, not
// NVIDIA hardware: entry points resolved with cuGetProcAddress_v2 at the
// plugin's versions, primary contexts and the per-thread context stack,
// memory, copies, streams, events, module loading and its errors, and
// launches that read kernelParams as the GPU kernels declare them.
//
// Device memory is host memory: a CUdeviceptr is a host address, every
// allocation is registered, and every copy, memset and kernel argument is
// checked against the registry (a bad range is CUDA_ERROR_INVALID_VALUE
// for a copy, an asynchronous CUDA_ERROR_ILLEGAL_ADDRESS for a kernel, as
// on a GPU). Each stream is a worker thread draining its FIFO, so ordering
// mistakes show; the legacy NULL stream runs its work at once in the
// caller. Calls that allocate, copy, load or launch return
// CUDA_ERROR_INVALID_CONTEXT when no context is current (calls on a stream
// or event handle do not need one; cuModuleGetFunction needs the module's),
// and cuMemFree waits for the
// device's streams, as the driver does. Modules: fatbins, cubins and PTX are
// checked against the fake device's SM and the JIT's PTX ISA, and kernels are
// host functions found by name in the image.
//
// Files: fakecuda.c (this: devices, contexts, memory, cuGetProcAddress),
// fakecuda_stream.c (streams, events, copies, modules, launches),
// fakecuda_kernels.c (images and host kernels), fakecublas.c (cuBLAS, its
// own library), fakecuda.h (what they share).
//
// Environment (read at each use):
//   FAKECUDA_DEVICES  devices (default 1, at most 8); 0 makes cuInit return
//                     CUDA_ERROR_NO_DEVICE
//   FAKECUDA_ARCH     compute capability as 90 for sm_90 (the default,
//                     "Fake NVIDIA H100"), 75, 120, ...
//   FAKECUDA_VERSION  cuDriverGetVersion (default 13000). It also decides
//                     what loads, as on a real driver: the newest PTX ISA
//                     the JIT takes (the PTX ISA release history: 8.0 in
//                     CUDA 12.0 ... 8.5 in 12.5 and 12.6, 8.7 in 12.8, 8.8
//                     in 12.9, 9.0 in 13.0) and cubins of ELF ABI version 8
//                     (what nvcc 12.8 and newer write) only from 12.8
//   FAKECUDA_MEMORY   bytes of memory per device (default 8 GiB)
//   FAKECUDA_PTX_MAX  newest PTX ISA the JIT takes (default: the version's)
//   FAKECUDA_STATIC_SHARED  "<kernel>:<bytes>": that kernel's static
//                     shared memory (none otherwise)
//   FAKECUDA_FAULT    a kernel name: its launches fault asynchronously
//                     (CUDA_ERROR_ILLEGAL_ADDRESS, sticky for the context
//                     until its last primary-context release)
//
// Not modelled: parallelism inside a kernel (a launch runs whole, serially,
// on its stream's thread), non-primary contexts, the per-thread
// default stream (cuGetProcAddress refuses its flag), blocking streams
// (cuStreamCreate takes only CU_STREAM_NON_BLOCKING, which the plugin
// must use), kernelParams `extra`, shared-memory limits beyond 48 KiB,
// timing resolution, compressed fatbin entries' symbol tables (their
// kernels are taken on trust), kernels other than the ones fakecuda_
// kernels.c knows (CUDA_ERROR_NOT_SUPPORTED), and performance.
#include "fakecuda.h"

#include <cudaTypedefs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FAKECUDA_STACK 16   // context stack depth per thread
#define FAKECUDA_ALIGN 256  // cuMemAlloc alignment

// ---------------------------------------------------------------------------
// Configuration and errors
// ---------------------------------------------------------------------------

static long long fakecuda_env(const char* name, long long fallback) {
  const char* v = getenv(name);
  return v != NULL && v[0] != '\0' ? strtoll(v, NULL, 10) : fallback;
}

static int fakecuda_devices(void) {
  long long n = fakecuda_env("FAKECUDA_DEVICES", 1);
  return n < 0 ? 0 : n > FAKECUDA_MAX_DEVICES ? FAKECUDA_MAX_DEVICES : (int)n;
}

int fakecuda_sm(void) { return (int)fakecuda_env("FAKECUDA_ARCH", 90); }

static size_t fakecuda_memory(void) {
  return (size_t)fakecuda_env("FAKECUDA_MEMORY", 8LL << 30);
}

int fakecuda_driver_version(void) {
  return (int)fakecuda_env("FAKECUDA_VERSION", 13000);
}

// The newest PTX ISA a driver of CUDA `version` JIT-compiles (the PTX ISA
// release history table), as 90 for 9.0.
static int fakecuda_ptx_of(int version) {
  static const struct {
    int cuda, ptx;
  } table[] = {{13000, 90}, {12090, 88}, {12080, 87}, {12070, 86},
               {12050, 85}, {12040, 84}, {12030, 83}, {12020, 82},
               {12010, 81}, {12000, 80}, {11080, 78}};
  for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++) {
    if (version >= table[i].cuda) {
      // A newer 13.x minor: 9.x with the same minor (9.1 in 13.1).
      if (i == 0) return 90 + (version - 13000) / 10 % 10;
      return table[i].ptx;
    }
  }
  return 70;
}

int fakecuda_ptx_max(void) {
  const char* v = getenv("FAKECUDA_PTX_MAX");
  int major = 0, minor = 0;
  if (v == NULL || sscanf(v, "%d.%d", &major, &minor) < 1) {
    return fakecuda_ptx_of(fakecuda_driver_version());
  }
  return major * 10 + minor;
}

double fakecuda_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

// The driver's names and descriptions of the errors the fake returns.
#define FAKECUDA_ERRORS(X)                                                    \
  X(CUDA_SUCCESS, "no error")                                                 \
  X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                             \
  X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                \
  X(CUDA_ERROR_NOT_INITIALIZED, "initialization error")                       \
  X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")               \
  X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                      \
  X(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid")               \
  X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                     \
  X(CUDA_ERROR_NO_BINARY_FOR_GPU,                                             \
    "no kernel image is available for execution on the device")               \
  X(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled") \
  X(CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed")                   \
  X(CUDA_ERROR_UNSUPPORTED_PTX_VERSION,                                       \
    "the provided PTX was compiled with an unsupported toolchain.")           \
  X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                     \
  X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                           \
  X(CUDA_ERROR_NOT_READY, "device not ready")                                 \
  X(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered")   \
  X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")

FAKECUDA_API CUresult cuGetErrorName(CUresult error, const char** out) {
#define FAKECUDA_NAME(code, text) \
  case code:                      \
    *out = #code;                 \
    return CUDA_SUCCESS;
  switch (error) {
    FAKECUDA_ERRORS(FAKECUDA_NAME)
    default:
      *out = NULL;
      return CUDA_ERROR_INVALID_VALUE;
  }
}

FAKECUDA_API CUresult cuGetErrorString(CUresult error, const char** out) {
#define FAKECUDA_TEXT(code, text) \
  case code:                      \
    *out = text;                  \
    return CUDA_SUCCESS;
  switch (error) {
    FAKECUDA_ERRORS(FAKECUDA_TEXT)
    default:
      *out = NULL;
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// ---------------------------------------------------------------------------
// Driver and devices
// ---------------------------------------------------------------------------

static atomic_bool fakecuda_initialized;

FAKECUDA_API CUresult cuInit(unsigned int flags) {
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (fakecuda_devices() == 0) return CUDA_ERROR_NO_DEVICE;
  atomic_store(&fakecuda_initialized, true);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDriverGetVersion(int* version) {
  if (version == NULL) return CUDA_ERROR_INVALID_VALUE;
  *version = fakecuda_driver_version();
  return CUDA_SUCCESS;
}

// CUDA_SUCCESS if cuInit succeeded and `dev` is a device.
static CUresult fakecuda_device(CUdevice dev) {
  if (!atomic_load(&fakecuda_initialized)) return CUDA_ERROR_NOT_INITIALIZED;
  return dev >= 0 && dev < fakecuda_devices() ? CUDA_SUCCESS
                                              : CUDA_ERROR_INVALID_DEVICE;
}

FAKECUDA_API CUresult cuDeviceGetCount(int* count) {
  if (!atomic_load(&fakecuda_initialized)) return CUDA_ERROR_NOT_INITIALIZED;
  *count = fakecuda_devices();
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceGet(CUdevice* out, int ordinal) {
  CUresult r = fakecuda_device(ordinal);
  if (r == CUDA_SUCCESS) *out = ordinal;
  return r;
}

FAKECUDA_API CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  CUresult r = fakecuda_device(dev);
  if (r != CUDA_SUCCESS) return r;
  if (name == NULL || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  int sm = fakecuda_sm();
  if (sm == 90) {
    snprintf(name, (size_t)len, "Fake NVIDIA H100");
  } else {
    snprintf(name, (size_t)len, "Fake NVIDIA GPU sm_%d", sm);
  }
  return CUDA_SUCCESS;
}

int fakecuda_shared_optin(void) {
  int sm = fakecuda_sm();
  if (sm == 90 || sm == 100) return 232448;
  if (sm == 80) return 166912;
  if (sm >= 86) return 101376;
  return 65536;  // sm_75
}

FAKECUDA_API CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attr,
                                           CUdevice dev) {
  CUresult r = fakecuda_device(dev);
  if (r != CUDA_SUCCESS) return r;
  switch (attr) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = fakecuda_sm() / 10;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = fakecuda_sm() % 10;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = 132;  // as an H100 SXM
      break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
      *value = 32;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
      *value = FAKECUDA_MAX_THREADS;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
      *value = 0x7fffffff;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
      *value = 65535;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
      *value = FAKECUDA_MAX_SHARED;
      break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
      *value = fakecuda_shared_optin();
      break;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
      *value = 1;
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  CUresult r = fakecuda_device(dev);
  if (r == CUDA_SUCCESS) *bytes = fakecuda_memory();
  return r;
}

FAKECUDA_API CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  CUresult r = fakecuda_device(dev);
  if (r != CUDA_SUCCESS) return r;
  memset(uuid->bytes, 0, sizeof(uuid->bytes));
  memcpy(uuid->bytes, "fakecuda", 8);
  uuid->bytes[15] = (char)dev;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceGetPCIBusId(char* id, int len, CUdevice dev) {
  CUresult r = fakecuda_device(dev);
  if (r != CUDA_SUCCESS) return r;
  if (id == NULL || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  snprintf(id, (size_t)len, "0000:%02X:00.0", 0x18 + dev);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuDeviceCanAccessPeer(int* can, CUdevice dev,
                                            CUdevice peer) {
  CUresult r = fakecuda_device(dev);
  if (r == CUDA_SUCCESS) r = fakecuda_device(peer);
  if (r == CUDA_SUCCESS) *can = dev != peer;
  return r;
}

// ---------------------------------------------------------------------------
// Primary contexts and the per-thread context stack
// ---------------------------------------------------------------------------

pthread_mutex_t fakecuda_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUctx_st fakecuda_ctx[FAKECUDA_MAX_DEVICES] = {
    {.device = 0}, {.device = 1}, {.device = 2}, {.device = 3},
    {.device = 4}, {.device = 5}, {.device = 6}, {.device = 7}};
static _Thread_local CUcontext fakecuda_stack[FAKECUDA_STACK];
static _Thread_local int fakecuda_depth;

FAKECUDA_API CUcontext fakecuda_current(void) {
  return fakecuda_depth > 0 ? fakecuda_stack[fakecuda_depth - 1] : NULL;
}

// The current context, or CUDA_ERROR_INVALID_CONTEXT.
CUresult fakecuda_need(CUcontext* out) {
  *out = fakecuda_current();
  return *out != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

// Whether `ctx` is a retained primary context.
bool fakecuda_ctx_live(CUcontext ctx) {
  bool live = false;
  pthread_mutex_lock(&fakecuda_ctx_lock);
  for (int i = 0; i < FAKECUDA_MAX_DEVICES; i++) {
    if (ctx == &fakecuda_ctx[i] && ctx->refs > 0) live = true;
  }
  pthread_mutex_unlock(&fakecuda_ctx_lock);
  return live;
}

FAKECUDA_API CUresult cuDevicePrimaryCtxRetain(CUcontext* out, CUdevice dev) {
  CUresult r = fakecuda_device(dev);
  if (r != CUDA_SUCCESS) return r;
  pthread_mutex_lock(&fakecuda_ctx_lock);
  CUcontext ctx = &fakecuda_ctx[dev];
  ctx->refs++;
  pthread_mutex_unlock(&fakecuda_ctx_lock);
  *out = ctx;
  return CUDA_SUCCESS;
}

static int fakecuda_blocks_on(int device);

FAKECUDA_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  CUresult r = fakecuda_device(dev);
  if (r != CUDA_SUCCESS) return r;
  pthread_mutex_lock(&fakecuda_ctx_lock);
  CUcontext ctx = &fakecuda_ctx[dev];
  if (ctx->refs == 0) {
    r = CUDA_ERROR_INVALID_CONTEXT;
  } else if (--ctx->refs == 0) {
    // The driver destroys the context here; what the plugin left in it
    // is a leak (the fake's tests fail on this line).
    int blocks = fakecuda_blocks_on(dev);
    if (ctx->streams != NULL || ctx->modules != 0 || ctx->events != 0 ||
        blocks != 0) {
      fprintf(stderr,
              "fakecuda: leak: cuda:%d's primary context released with "
              "%s%d module(s), %d event(s), %d allocation(s)\n",
              dev, ctx->streams != NULL ? "stream(s), " : "", ctx->modules,
              ctx->events, blocks);
    }
    fakecuda_legacy_stop(ctx);
    atomic_store(&ctx->error, CUDA_SUCCESS);
    for (int i = 0; i < FAKECUDA_MAX_DEVICES; i++) {
      atomic_store(&ctx->peer[i], false);
      atomic_store(&fakecuda_ctx[i].peer[dev], false);
    }
  }
  pthread_mutex_unlock(&fakecuda_ctx_lock);
  return r;
}

FAKECUDA_API CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  if (!fakecuda_ctx_live(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (fakecuda_depth == FAKECUDA_STACK) return CUDA_ERROR_INVALID_VALUE;
  fakecuda_stack[fakecuda_depth++] = ctx;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuCtxPopCurrent_v2(CUcontext* out) {
  if (fakecuda_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
  CUcontext ctx = fakecuda_stack[--fakecuda_depth];
  if (out != NULL) *out = ctx;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuCtxEnablePeerAccess(CUcontext peer,
                                            unsigned int flags) {
  CUcontext ctx;
  CUresult r = fakecuda_need(&ctx);
  if (r != CUDA_SUCCESS) return r;
  if (flags != 0 || peer == ctx) return CUDA_ERROR_INVALID_VALUE;
  if (!fakecuda_ctx_live(peer)) return CUDA_ERROR_INVALID_CONTEXT;
  if (atomic_exchange(&ctx->peer[peer->device], true)) {
    return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  }
  return CUDA_SUCCESS;
}

// ---------------------------------------------------------------------------
// Memory: host memory, every block registered
// ---------------------------------------------------------------------------

typedef struct fakecuda_block {
  struct fakecuda_block* next;
  uintptr_t base;
  size_t size;
  int device;  // -1 for page-locked host memory
} fakecuda_block_t;

static pthread_mutex_t fakecuda_mem_lock = PTHREAD_MUTEX_INITIALIZER;
static fakecuda_block_t* fakecuda_blocks;           // guarded
static size_t fakecuda_used[FAKECUDA_MAX_DEVICES];  // guarded

// The block holding `bytes` at `p`, or NULL. Caller holds the lock.
static fakecuda_block_t* fakecuda_block_at(uintptr_t p, size_t bytes) {
  for (fakecuda_block_t* b = fakecuda_blocks; b != NULL; b = b->next) {
    if (p >= b->base && p - b->base < b->size) {
      return bytes <= b->size - (p - b->base) ? b : NULL;
    }
  }
  return NULL;
}

int fakecuda_device_of(uintptr_t p, size_t bytes) {
  pthread_mutex_lock(&fakecuda_mem_lock);
  fakecuda_block_t* b = fakecuda_block_at(p, bytes);
  int device = b != NULL ? b->device : -2;
  pthread_mutex_unlock(&fakecuda_mem_lock);
  return device;
}

FAKECUDA_API bool fakecuda_range_ok(CUcontext ctx, uintptr_t p, size_t bytes) {
  if (bytes == 0) return true;
  int device = fakecuda_device_of(p, bytes);
  return device >= 0 &&
         (device == ctx->device || atomic_load(&ctx->peer[device]));
}

// Live allocations of `device`.
static int fakecuda_blocks_on(int device) {
  int n = 0;
  pthread_mutex_lock(&fakecuda_mem_lock);
  for (fakecuda_block_t* b = fakecuda_blocks; b != NULL; b = b->next) {
    n += b->device == device;
  }
  pthread_mutex_unlock(&fakecuda_mem_lock);
  return n;
}

static CUresult fakecuda_register(void* raw, size_t size, int device) {
  fakecuda_block_t* b = malloc(sizeof(*b));
  if (b == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  b->base = (uintptr_t)raw;
  b->size = size;
  b->device = device;
  pthread_mutex_lock(&fakecuda_mem_lock);
  b->next = fakecuda_blocks;
  fakecuda_blocks = b;
  pthread_mutex_unlock(&fakecuda_mem_lock);
  return CUDA_SUCCESS;
}

// Unregisters the block starting at `p` of `device` (-1: host) and frees
// its memory; false if there is none.
static bool fakecuda_unregister(uintptr_t p, int device) {
  pthread_mutex_lock(&fakecuda_mem_lock);
  fakecuda_block_t** at = &fakecuda_blocks;
  while (*at != NULL && !((*at)->base == p && (*at)->device == device)) {
    at = &(*at)->next;
  }
  fakecuda_block_t* b = *at;
  if (b != NULL) {
    *at = b->next;
    if (device >= 0) fakecuda_used[device] -= b->size;
  }
  pthread_mutex_unlock(&fakecuda_mem_lock);
  if (b == NULL) return false;
  free((void*)b->base);
  free(b);
  return true;
}

FAKECUDA_API CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total) {
  CUcontext ctx;
  CUresult r = fakecuda_need(&ctx);
  if (r != CUDA_SUCCESS) return r;
  *total = fakecuda_memory();
  pthread_mutex_lock(&fakecuda_mem_lock);
  size_t used = fakecuda_used[ctx->device];
  pthread_mutex_unlock(&fakecuda_mem_lock);
  *free_bytes = used < *total ? *total - used : 0;
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemAlloc_v2(CUdeviceptr* out, size_t size) {
  CUcontext ctx;
  CUresult r = fakecuda_need(&ctx);
  if (r != CUDA_SUCCESS) return r;
  if (out == NULL || size == 0) return CUDA_ERROR_INVALID_VALUE;
  size_t total = fakecuda_memory();
  pthread_mutex_lock(&fakecuda_mem_lock);
  bool room = size <= total && fakecuda_used[ctx->device] <= total - size;
  if (room) fakecuda_used[ctx->device] += size;
  pthread_mutex_unlock(&fakecuda_mem_lock);
  void* raw = NULL;
  if (room && posix_memalign(&raw, FAKECUDA_ALIGN, size) == 0 &&
      fakecuda_register(raw, size, ctx->device) == CUDA_SUCCESS) {
    *out = (CUdeviceptr)(uintptr_t)raw;
    return CUDA_SUCCESS;
  }
  free(raw);
  if (room) {
    pthread_mutex_lock(&fakecuda_mem_lock);
    fakecuda_used[ctx->device] -= size;
    pthread_mutex_unlock(&fakecuda_mem_lock);
  }
  return CUDA_ERROR_OUT_OF_MEMORY;
}

FAKECUDA_API CUresult cuMemFree_v2(CUdeviceptr p) {
  CUcontext ctx;
  CUresult r = fakecuda_need(&ctx);
  if (r != CUDA_SUCCESS) return r;
  int device = fakecuda_device_of((uintptr_t)p, 1);
  if (device < 0) return CUDA_ERROR_INVALID_VALUE;
  // cuMemFree waits for the device: work still queued may use the block.
  fakecuda_ctx_drain(&fakecuda_ctx[device]);
  return fakecuda_unregister((uintptr_t)p, device) ? CUDA_SUCCESS
                                                   : CUDA_ERROR_INVALID_VALUE;
}

FAKECUDA_API CUresult cuMemHostAlloc(void** out, size_t size,
                                     unsigned int flags) {
  CUcontext ctx;
  CUresult r = fakecuda_need(&ctx);
  if (r != CUDA_SUCCESS) return r;
  if (out == NULL || size == 0 || (flags & ~0xfu) != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *out = NULL;
  if (posix_memalign(out, 4096, size) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (fakecuda_register(*out, size, -1) != CUDA_SUCCESS) {
    free(*out);
    *out = NULL;
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuMemFreeHost(void* p) {
  CUcontext ctx;
  CUresult r = fakecuda_need(&ctx);
  if (r != CUDA_SUCCESS) return r;
  return fakecuda_unregister((uintptr_t)p, -1) ? CUDA_SUCCESS
                                               : CUDA_ERROR_INVALID_VALUE;
}

// ---------------------------------------------------------------------------
// Registered host memory (cuMemHostRegister) and pointer attributes
// ---------------------------------------------------------------------------

typedef struct fakecuda_hostreg {
  struct fakecuda_hostreg* next;
  uintptr_t base;
  size_t size;
  CUcontext ctx;  // current at registration
} fakecuda_hostreg_t;

static fakecuda_hostreg_t* fakecuda_hostregs;  // guarded by fakecuda_mem_lock

// The registration holding `p`, or NULL. Caller holds the lock.
static fakecuda_hostreg_t* fakecuda_hostreg_at(uintptr_t p) {
  for (fakecuda_hostreg_t* r = fakecuda_hostregs; r != NULL; r = r->next) {
    if (p >= r->base && p - r->base < r->size) return r;
  }
  return NULL;
}

FAKECUDA_API CUresult cuMemHostRegister_v2(void* p, size_t size,
                                           unsigned int flags) {
  CUcontext ctx;
  CUresult r = fakecuda_need(&ctx);
  if (r != CUDA_SUCCESS) return r;
  // PORTABLE, DEVICEMAP, IOMEMORY, READ_ONLY.
  if (p == NULL || size == 0 || (flags & ~0xfu) != 0 ||
      (uintptr_t)p > UINTPTR_MAX - size) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  fakecuda_hostreg_t* reg = malloc(sizeof(*reg));
  if (reg == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
  uintptr_t base = (uintptr_t)p;
  pthread_mutex_lock(&fakecuda_mem_lock);
  r = CUDA_SUCCESS;
  for (fakecuda_hostreg_t* o = fakecuda_hostregs; o != NULL; o = o->next) {
    if (base < o->base + o->size && o->base < base + size) {
      r = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    }
  }
  // The fake's device memory is host memory too: registering it, or
  // cuMemHostAlloc's memory, is what the driver refuses.
  for (fakecuda_block_t* b = fakecuda_blocks; b != NULL; b = b->next) {
    if (base < b->base + b->size && b->base < base + size) {
      r = b->device < 0 ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
                        : CUDA_ERROR_INVALID_VALUE;
    }
  }
  if (r == CUDA_SUCCESS) {
    *reg = (fakecuda_hostreg_t){fakecuda_hostregs, base, size, ctx};
    fakecuda_hostregs = reg;
    reg = NULL;
  }
  pthread_mutex_unlock(&fakecuda_mem_lock);
  free(reg);
  return r;
}

FAKECUDA_API CUresult cuMemHostUnregister(void* p) {
  CUcontext ctx;
  CUresult r = fakecuda_need(&ctx);
  if (r != CUDA_SUCCESS) return r;
  pthread_mutex_lock(&fakecuda_mem_lock);
  fakecuda_hostreg_t** at = &fakecuda_hostregs;
  while (*at != NULL && (*at)->base != (uintptr_t)p) at = &(*at)->next;
  fakecuda_hostreg_t* reg = *at;
  if (reg != NULL) *at = reg->next;
  pthread_mutex_unlock(&fakecuda_mem_lock);
  free(reg);
  return reg != NULL ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

// Test-only (not CUDA API): whether all `size` bytes at `p` are inside one
// cuMemHostRegister registration.
FAKECUDA_API bool fakecuda_host_registered(const void* p, size_t size) {
  pthread_mutex_lock(&fakecuda_mem_lock);
  fakecuda_hostreg_t* reg = fakecuda_hostreg_at((uintptr_t)p);
  bool in = reg != NULL && size <= reg->size - ((uintptr_t)p - reg->base);
  pthread_mutex_unlock(&fakecuda_mem_lock);
  return in;
}

// A registration still there when the process ends was never undone.
__attribute__((destructor)) static void fakecuda_hostreg_leaks(void) {
  int n = 0;
  for (fakecuda_hostreg_t* r = fakecuda_hostregs; r != NULL; r = r->next) n++;
  if (n != 0) {
    fprintf(stderr,
            "fakecuda: leak: %d host registration(s) never unregistered "
            "(cuMemHostUnregister)\n",
            n);
  }
}

// Copies the attribute value of `size` bytes into `data`.
static CUresult fakecuda_attr_put(void* data, const void* value, size_t size) {
  memcpy(data, value, size);
  return CUDA_SUCCESS;
}

FAKECUDA_API CUresult cuPointerGetAttribute(void* data,
                                            CUpointer_attribute attribute,
                                            CUdeviceptr ptr) {
  if (data == NULL) return CUDA_ERROR_INVALID_VALUE;
  uintptr_t p = (uintptr_t)ptr;
  // What the driver knows of `p`: a block (device memory, or cuMemHostAlloc
  // memory: device -1) or a registration; anything else is not CUDA's.
  bool found = false;
  int device = 0;
  unsigned int type = CU_MEMORYTYPE_HOST;
  uintptr_t base = 0;
  size_t size = 0;
  CUcontext ctx = NULL;
  pthread_mutex_lock(&fakecuda_mem_lock);
  fakecuda_block_t* b = fakecuda_block_at(p, 1);
  fakecuda_hostreg_t* reg = b == NULL ? fakecuda_hostreg_at(p) : NULL;
  if (b != NULL) {
    found = true;
    device = b->device >= 0 ? b->device : 0;
    type = b->device >= 0 ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    base = b->base;
    size = b->size;
    ctx = &fakecuda_ctx[device];
  } else if (reg != NULL) {
    found = true;
    device = reg->ctx->device;
    base = reg->base;
    size = reg->size;
    ctx = reg->ctx;
  }
  pthread_mutex_unlock(&fakecuda_mem_lock);
  if (!found) return CUDA_ERROR_INVALID_VALUE;
  switch (attribute) {
    case CU_POINTER_ATTRIBUTE_CONTEXT:
      return fakecuda_attr_put(data, &ctx, sizeof(ctx));
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      return fakecuda_attr_put(data, &type, sizeof(type));
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
      // Device and host memory share one address space in the fake.
      return fakecuda_attr_put(data, &ptr, sizeof(ptr));
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      return fakecuda_attr_put(data, &device, sizeof(device));
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: {
      CUdeviceptr start = (CUdeviceptr)base;
      return fakecuda_attr_put(data, &start, sizeof(start));
    }
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
      return fakecuda_attr_put(data, &size, sizeof(size));
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
}

// ---------------------------------------------------------------------------
// cuGetProcAddress: name, the CUDA version that introduced this ABI of it,
// the function. Asked for version V, the newest entry not above V answers.
// ---------------------------------------------------------------------------

typedef void (*fakecuda_fn_t)(void);

// The original cuEventElapsedTime (fakecuda_stream.c), which cuda.h 13
// renames to _v2.
#undef cuEventElapsedTime
CUresult CUDAAPI cuEventElapsedTime(float* ms, CUevent start, CUevent end);

#define FAKECUDA_PROCS(X)                                           \
  X(cuInit, 2000, cuInit)                                           \
  X(cuDriverGetVersion, 2020, cuDriverGetVersion)                   \
  X(cuGetErrorName, 6000, cuGetErrorName)                           \
  X(cuGetErrorString, 6000, cuGetErrorString)                       \
  X(cuGetProcAddress, 12000, cuGetProcAddress_v2)                   \
  X(cuDeviceGetCount, 2000, cuDeviceGetCount)                       \
  X(cuDeviceGet, 2000, cuDeviceGet)                                 \
  X(cuDeviceGetName, 2000, cuDeviceGetName)                         \
  X(cuDeviceGetAttribute, 2000, cuDeviceGetAttribute)               \
  X(cuDeviceTotalMem, 3020, cuDeviceTotalMem_v2)                    \
  X(cuDeviceGetUuid, 11040, cuDeviceGetUuid_v2)                     \
  X(cuDeviceGetPCIBusId, 4010, cuDeviceGetPCIBusId)                 \
  X(cuDeviceCanAccessPeer, 4000, cuDeviceCanAccessPeer)             \
  X(cuDevicePrimaryCtxRetain, 7000, cuDevicePrimaryCtxRetain)       \
  X(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2) \
  X(cuCtxPushCurrent, 4000, cuCtxPushCurrent_v2)                    \
  X(cuCtxPopCurrent, 4000, cuCtxPopCurrent_v2)                      \
  X(cuCtxEnablePeerAccess, 4000, cuCtxEnablePeerAccess)             \
  X(cuMemGetInfo, 3020, cuMemGetInfo_v2)                            \
  X(cuMemAlloc, 3020, cuMemAlloc_v2)                                \
  X(cuMemFree, 3020, cuMemFree_v2)                                  \
  X(cuMemHostAlloc, 2020, cuMemHostAlloc)                           \
  X(cuMemFreeHost, 2000, cuMemFreeHost)                             \
  X(cuMemHostRegister, 6050, cuMemHostRegister_v2)                  \
  X(cuMemHostUnregister, 4000, cuMemHostUnregister)                 \
  X(cuPointerGetAttribute, 4000, cuPointerGetAttribute)             \
  X(cuMemcpyHtoD, 3020, cuMemcpyHtoD_v2)                            \
  X(cuMemcpyDtoH, 3020, cuMemcpyDtoH_v2)                            \
  X(cuMemcpyDtoD, 3020, cuMemcpyDtoD_v2)                            \
  X(cuMemcpyPeer, 4000, cuMemcpyPeer)                               \
  X(cuMemcpyHtoDAsync, 3020, cuMemcpyHtoDAsync_v2)                  \
  X(cuMemcpyDtoHAsync, 3020, cuMemcpyDtoHAsync_v2)                  \
  X(cuMemcpyDtoDAsync, 3020, cuMemcpyDtoDAsync_v2)                  \
  X(cuMemcpyPeerAsync, 4000, cuMemcpyPeerAsync)                     \
  X(cuMemsetD8, 3020, cuMemsetD8_v2)                                \
  X(cuMemsetD8Async, 3020, cuMemsetD8Async)                         \
  X(cuStreamCreate, 2000, cuStreamCreate)                           \
  X(cuStreamDestroy, 4000, cuStreamDestroy_v2)                      \
  X(cuStreamSynchronize, 2000, cuStreamSynchronize)                 \
  X(cuStreamQuery, 2000, cuStreamQuery)                             \
  X(cuStreamWaitEvent, 3020, cuStreamWaitEvent)                     \
  X(cuEventCreate, 2000, cuEventCreate)                             \
  X(cuEventDestroy, 4000, cuEventDestroy_v2)                        \
  X(cuEventRecord, 2000, cuEventRecord)                             \
  X(cuEventSynchronize, 2000, cuEventSynchronize)                   \
  X(cuEventQuery, 2000, cuEventQuery)                               \
  X(cuEventElapsedTime, 2000, cuEventElapsedTime)                   \
  X(cuEventElapsedTime, 12080, cuEventElapsedTime_v2)               \
  X(cuModuleLoadData, 2000, cuModuleLoadData)                       \
  X(cuModuleLoadDataEx, 2010, cuModuleLoadDataEx)                   \
  X(cuModuleUnload, 2000, cuModuleUnload)                           \
  X(cuModuleGetFunction, 2000, cuModuleGetFunction)                 \
  X(cuFuncSetAttribute, 9000, cuFuncSetAttribute)                   \
  X(cuFuncGetAttribute, 2020, cuFuncGetAttribute)                   \
  X(cuFuncGetParamInfo, 12040, cuFuncGetParamInfo)                  \
  X(cuLaunchKernel, 4000, cuLaunchKernel)

// Each entry has the signature of cudaTypedefs.h's PFN_<name>_v<version>.
#define FAKECUDA_CHECK(name, version, fn)                                     \
  _Static_assert(                                                             \
      __builtin_types_compatible_p(__typeof__(&fn), PFN_##name##_v##version), \
      #fn);
FAKECUDA_PROCS(FAKECUDA_CHECK)

static const struct {
  const char* name;
  int version;
  fakecuda_fn_t fn;
} fakecuda_procs[] = {
#define FAKECUDA_PROC(name, version, fn) {#name, version, (fakecuda_fn_t)&fn},
    FAKECUDA_PROCS(FAKECUDA_PROC)};

FAKECUDA_API CUresult
cuGetProcAddress_v2(const char* symbol, void** pfn, int version,
                    cuuint64_t flags, CUdriverProcAddressQueryResult* status) {
  // A version above the driver's is an error; the per-thread default
  // stream flag is not modelled.
  if (symbol == NULL || pfn == NULL || (flags & ~(cuuint64_t)1) != 0 ||
      version > fakecuda_env("FAKECUDA_VERSION", 13000)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *pfn = NULL;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  int best = -1;
  for (size_t i = 0; i < sizeof(fakecuda_procs) / sizeof(fakecuda_procs[0]);
       i++) {
    if (strcmp(fakecuda_procs[i].name, symbol) != 0) continue;
    found = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
    if (fakecuda_procs[i].version <= version &&
        (best < 0 ||
         fakecuda_procs[i].version > fakecuda_procs[best].version)) {
      best = (int)i;
    }
  }
  if (best >= 0) {
    found = CU_GET_PROC_ADDRESS_SUCCESS;
    memcpy(pfn, &fakecuda_procs[best].fn, sizeof(*pfn));
  }
  // Not found is CUDA_SUCCESS with *pfn NULL, as the driver documents.
  if (status != NULL) *status = found;
  return CUDA_SUCCESS;
}
