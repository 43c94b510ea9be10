// SPDX-License-Identifier: MIT
//
// Vendor baselines, one row per backend (see bench.h). A backend's row
// says what its accel results are compared with: on the CPU a copy is
// compared with memcpy between two allocations at the page offsets of
// accel's buffers (bench_copy_place_t in bench.h), a GEMM with
// the best engine the plugin chooses from (suite_gemm.c), an elementwise op with
// a plain C loop (loops.c) and a launch with a direct call of the kernel
// (suite_launch.c); on CUDA they are raw cuMemcpy*Async, cublasGemmEx
// and cuLaunchKernel of cuda_raw.c, which opens libcuda and cuBLAS itself;
// on OpenCL clEnqueue*Buffer, CLBlastSgemm and clEnqueueNDRangeKernel of
// opencl_raw.c.
// Where that cannot be done (no driver, a build without the CUDA toolkit)
// the results say "baseline not available: <reason>" rather than show a
// stand-in.
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "cuda_raw.h"
#include "opencl_raw.h"

// Both ends of a CPU "device" copy: two allocations at the page offsets
// of accel's buffers (bench_copy_place_t), else 64-byte aligned like the
// CPU plugin's.
typedef struct bench_memcpy_state {
  unsigned char* a;
  unsigned char* b;
  unsigned char* a_base;  // what to free
  unsigned char* b_base;
} bench_memcpy_state_t;

// `size` bytes starting `page_offset` into a page-aligned allocation;
// `*base` is the allocation.
static unsigned char* bench_memcpy_alloc(size_t size, size_t page_offset,
                                         unsigned char** base) {
  size_t rounded = (size + page_offset + 4095) & ~(size_t)4095;
  *base = aligned_alloc(4096, rounded);
  if (*base == NULL) return NULL;
  // Touch every page now so that no trial pays for first-touch faults.
  memset(*base, 1, rounded);
  return *base + page_offset;
}

static bool bench_memcpy_open(bench_ctx_t* ctx, size_t size,
                              const bench_copy_place_t* place,
                              void** out_state) {
  (void)ctx;
  *out_state = NULL;
  bench_memcpy_state_t* s = calloc(1, sizeof(*s));
  if (s == NULL) return bench_fail("memcpy baseline: out of memory");
  size_t src_offset = place->known ? place->src_page_offset % 4096 : 0;
  size_t dst_offset = place->known ? place->dst_page_offset % 4096 : 64;
  s->a = bench_memcpy_alloc(size, src_offset, &s->a_base);
  s->b = bench_memcpy_alloc(size, dst_offset, &s->b_base);
  if (s->a == NULL || s->b == NULL) {
    free(s->a_base);
    free(s->b_base);
    free(s);
    return bench_fail("memcpy baseline: cannot allocate 2 x %zu bytes", size);
  }
  *out_state = s;
  return true;
}

static bool bench_memcpy_run(void* state, bench_copy_kind_t kind, bool pinned,
                             void* host, size_t size, uint64_t iters,
                             bool async) {
  // There is no asynchronous memcpy; the CPU plugin's stream copies are
  // memcpy on a worker thread, so plain memcpy is their baseline too. The
  // suite's host buffer is used whether it is pinned or not.
  (void)async;
  (void)pinned;
  bench_memcpy_state_t* s = state;
  for (uint64_t i = 0; i < iters; ++i) {
    switch (kind) {
      case BENCH_COPY_H2D:
        memcpy(s->a, host, size);
        break;
      case BENCH_COPY_D2H:
        memcpy(host, s->a, size);
        break;
      case BENCH_COPY_D2D:
        memcpy(s->b, s->a, size);
        break;
    }
  }
  return true;
}

static void bench_memcpy_close(void* state) {
  bench_memcpy_state_t* s = state;
  if (s == NULL) return;
  free(s->a_base);
  free(s->b_base);
  free(s);
}

static const bench_copy_baseline_t bench_memcpy_baseline = {
    .name = "memcpy",
    .open = bench_memcpy_open,
    .run = bench_memcpy_run,
    .close = bench_memcpy_close,
};

#define BENCH_NO_CUDA_ELEMENTWISE \
  "not available (no raw CUDA elementwise kernels written yet)"
#define BENCH_NO_OPENCL_ELEMENTWISE \
  "not available (no raw OpenCL elementwise kernels written yet)"
#define BENCH_NO_HIP "not available (raw HIP baseline not written yet)"
#define BENCH_NO_BASELINE "not available (no baseline known for this backend)"

static const bench_baselines_t bench_baselines_table[] = {
    {
        .backend = "cpu",
        .copy = &bench_memcpy_baseline,
        .gemm = "best engine",
        .elementwise = "C loop",
        .launch = "direct call",
    },
    {
        // cuda_raw.c; each suite reports "not available: <reason>" when
        // the raw driver or cuBLAS cannot be opened.
        .backend = "cuda",
        .copy = &bench_cuda_copy_baseline,
        .gemm = "cublasGemmEx (f32 reductions, as accel)",
        .elementwise_missing = BENCH_NO_CUDA_ELEMENTWISE,
        .launch = "cuLaunchKernel",
        .alloc = "cuMemAlloc+cuMemFree",
    },
    {
        // opencl_raw.c: the direct OpenCL calls and CLBlast on a context
        // of its own; elementwise ops have no vendor routine to compare.
        .backend = "opencl",
        .copy = &bench_ocl_copy_baseline,
        .gemm = "CLBlastSgemm",
        .elementwise_missing = BENCH_NO_OPENCL_ELEMENTWISE,
        .launch = "clEnqueueNDRangeKernel",
    },
    {
        // TODO(#7): raw hipMemcpyAsync, hipBLAS, hipModuleLaunchKernel.
        .backend = "rocm",
        .copy_missing = BENCH_NO_HIP,
        .gemm_missing = BENCH_NO_HIP,
        .elementwise_missing = BENCH_NO_HIP,
        .launch_missing = BENCH_NO_HIP,
    },
};

static const bench_baselines_t bench_baselines_unknown = {
    .backend = "",
    .copy_missing = BENCH_NO_BASELINE,
    .gemm_missing = BENCH_NO_BASELINE,
    .elementwise_missing = BENCH_NO_BASELINE,
    .launch_missing = BENCH_NO_BASELINE,
};

const bench_baselines_t* bench_baselines_find(const char* backend) {
  size_t n = sizeof(bench_baselines_table) / sizeof(bench_baselines_table[0]);
  for (size_t i = 0; i < n; ++i) {
    if (strcmp(bench_baselines_table[i].backend, backend) == 0) {
      return &bench_baselines_table[i];
    }
  }
  return &bench_baselines_unknown;
}
