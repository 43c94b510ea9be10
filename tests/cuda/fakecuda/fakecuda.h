// SPDX-License-Identifier: MIT
//
// Shared by the files of libfakecuda and libfakecublas (tests/cuda/
// fakecuda): a test-only stand-in for the CUDA driver and cuBLAS. See the
// top of fakecuda.c for what it models and what it does not.
#ifndef ACCEL_TESTS_CUDA_FAKECUDA_FAKECUDA_H_
#define ACCEL_TESTS_CUDA_FAKECUDA_FAKECUDA_H_

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Exports an entry point (the libraries are built with hidden visibility).
#define FAKECUDA_API __attribute__((visibility("default")))

// ---------------------------------------------------------------------------
// Exported by libfakecuda for libfakecublas (not CUDA API).
// ---------------------------------------------------------------------------

// The context current on the calling thread, or NULL.
FAKECUDA_API CUcontext fakecuda_current(void);

// Whether `bytes` bytes at device address `p` lie inside one live device
// allocation that `ctx`'s device may touch (its own, or a peer's whose
// access `ctx` enabled). Zero bytes are always fine.
FAKECUDA_API bool fakecuda_range_ok(CUcontext ctx, uintptr_t p, size_t bytes);

// Runs `fn(arg)` on `stream` after the work queued before it (NULL: the
// legacy stream, which the fake runs at once in the caller), then frees
// `arg` with free(). `fn` returning false is a device fault: the context
// gets the sticky CUDA_ERROR_ILLEGAL_ADDRESS. `ctx` must be current and
// own `stream`. On failure `arg` is freed and nothing runs.
FAKECUDA_API CUresult fakecuda_enqueue(CUcontext ctx, CUstream stream,
                                       bool (*fn)(void* arg), void* arg);

// ---------------------------------------------------------------------------
// Internal to libfakecuda: driver state (fakecuda.c) shared with streams,
// events, copies and modules (fakecuda_stream.c).
// ---------------------------------------------------------------------------

#define FAKECUDA_MAX_DEVICES 8
#define FAKECUDA_MAX_SHARED 49152  // shared memory per block without opt-in

// Shared memory per block a kernel may opt in to (cuFuncSetAttribute) on
// the fake device's SM, as the real parts: 227 KiB on sm_90 and sm_100.
int fakecuda_shared_optin(void);
#define FAKECUDA_MAX_THREADS 1024  // threads per block

// A primary context (the only kind the fake has), one per device.
struct CUctx_st {
  int device;
  int refs;          // primary retains; guarded by fakecuda_ctx_lock
  atomic_int error;  // sticky asynchronous error (CUresult)
  atomic_bool peer[FAKECUDA_MAX_DEVICES];  // access to device i enabled
  CUstream streams;     // live streams; guarded by fakecuda_ctx_lock
  CUstream legacy;      // the NULL stream, started at first use; guarded
  int modules, events;  // live counts; guarded by fakecuda_ctx_lock
};

// Guards contexts, their stream lists and the module registry. A stream
// worker never takes it, so holding it while waiting for a stream is safe.
extern pthread_mutex_t fakecuda_ctx_lock;

// FAKECUDA_ARCH (90 for sm_90), FAKECUDA_PTX_MAX (90 for 9.0; by default
// what FAKECUDA_VERSION's JIT takes) and FAKECUDA_VERSION (13000).
int fakecuda_sm(void);
int fakecuda_ptx_max(void);
int fakecuda_driver_version(void);

// First driver that loads cubins of ELF ABI version 8 (nvcc 12.8+).
#define FAKECUDA_ELF_ABI8_DRIVER 12080

// CLOCK_MONOTONIC in milliseconds, for event timing.
double fakecuda_now_ms(void);

// The current context in `*out`, or CUDA_ERROR_INVALID_CONTEXT.
CUresult fakecuda_need(CUcontext* out);

// Whether `ctx` is a retained primary context.
bool fakecuda_ctx_live(CUcontext ctx);

// The device whose memory holds `bytes` bytes at `p`; -1 for page-locked
// host memory, -2 for anything else.
int fakecuda_device_of(uintptr_t p, size_t bytes);

// Waits until every stream of `ctx`, the legacy one included, is idle
// (cuMemFree).
void fakecuda_ctx_drain(CUcontext ctx);

// Stops the legacy stream of `ctx` after its work (the context's end).
// The caller holds fakecuda_ctx_lock.
void fakecuda_legacy_stop(CUcontext ctx);

// ---------------------------------------------------------------------------
// Internal to libfakecuda: images and host kernels (fakecuda_kernels.c).
// ---------------------------------------------------------------------------

#define FAKECUDA_MAX_PARAMS 8

// A kernel the fake can run on the host: one of the plugin's built-in ops
// (plugins/cuda/kernels/ops.cu), the GPU test's vadd, accel-conform's
// add_one or accel-bench's empty kernel, with its parameter sizes.
typedef struct fakecuda_kernel {
  const char* name;
  uint8_t op, dt, st;  // operation, element types (fakecuda_kernels.c)
  uint8_t num_params;
  uint8_t param_size[FAKECUDA_MAX_PARAMS];
} fakecuda_kernel_t;

// The kernel named `name`, or NULL.
const fakecuda_kernel_t* fakecuda_kernel_find(const char* name);

// Runs `kernel` over the grid with `params` (pointers to each argument, as
// cuLaunchKernel's kernelParams) and `shared` bytes of dynamic shared
// memory for `ctx`. False when it would touch memory `ctx` cannot (the GPU
// would fault), its launch geometry breaks the kernel's assumptions or the
// kernel traps; nothing is written then.
bool fakecuda_kernel_run(const fakecuda_kernel_t* kernel, CUcontext ctx,
                         void* const* params, const unsigned grid[3],
                         const unsigned block[3], unsigned shared);

// accel-conform's test kernels other than add_one (fakecuda_conform.c):
// their `op`s, lookup by name (NULL if unknown) and host versions, which
// fakecuda_kernel_find and fakecuda_kernel_run hand on to.
enum {
  FAKECUDA_OP_CONFORM = 200,
  FAKECUDA_OP_CONFORM_INDEX = FAKECUDA_OP_CONFORM,
  FAKECUDA_OP_CONFORM_ARGS,
  FAKECUDA_OP_CONFORM_SHARED,
  FAKECUDA_OP_CONFORM_SPIN,
  FAKECUDA_OP_CONFORM_FAIL
};
const fakecuda_kernel_t* fakecuda_conform_find(const char* name);
bool fakecuda_conform_run(const fakecuda_kernel_t* kernel, CUcontext ctx,
                          void* const* params, const unsigned grid[3],
                          const unsigned block[3], unsigned shared);

// What a loadable image holds for the fake device.
typedef struct fakecuda_image {
  size_t size;       // bytes of the whole image (the module copies them)
  size_t code_off;   // the chosen code: ELF or PTX text, or opaque
  size_t code_size;  //   (compressed), inside the image
  int code_kind;     // FAKECUDA_CODE_*
  char what[96];     // for the JIT info log
} fakecuda_image_t;

enum { FAKECUDA_CODE_ELF = 1, FAKECUDA_CODE_PTX, FAKECUDA_CODE_OPAQUE };

// Checks `image` (a fatbin, a cubin or NUL-terminated PTX) for a device of
// compute capability `sm` (90 for 9.0) and a JIT taking PTX ISA up to
// `ptx_max` (90 for 9.0). Returns CUDA_SUCCESS with `*out` filled, or the
// driver's error with a JIT error log line in `log`.
CUresult fakecuda_image_check(const unsigned char* image, int sm, int ptx_max,
                              fakecuda_image_t* out, char* log,
                              size_t log_size);

// Whether the chosen code of a checked image (copied at `image`) defines
// the kernel `name`; opaque (compressed) code is taken on trust.
bool fakecuda_image_has(const unsigned char* image,
                        const fakecuda_image_t* info, const char* name);

#endif  // ACCEL_TESTS_CUDA_FAKECUDA_FAKECUDA_H_
