// SPDX-License-Identifier: MIT
//
// Raw OpenCL baselines (opencl_raw.h). The ICD loader and CLBlast are
// opened with dlopen as the plugin opens them (plugins/opencl/icd.c,
// clblast.c); the entry points are the Khronos cl_api_* typedefs of
// <CL/cl_icd.h>, and the calls are the ones the plugin makes for the same
// accel call, on a context and queue of our own.
#include "opencl_raw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if !defined(ACCEL_BENCH_OPENCL)

#define BENCH_OCL_NONE "accel-bench was built without the OpenCL headers"

static bench_ocl_t* bench_ocl_open(uint32_t index, const char* name, char* why,
                                   size_t why_size) {
  (void)index, (void)name;
  snprintf(why, why_size, BENCH_OCL_NONE);
  return NULL;
}

static void bench_ocl_close(bench_ocl_t* ocl) { (void)ocl; }

static bool bench_ocl_copy_open(bench_ctx_t* ctx, size_t size,
                                const bench_copy_place_t* place,
                                void** out_state) {
  (void)place;  // device memory: its address says nothing here
  (void)ctx, (void)size;
  *out_state = NULL;
  return bench_fail("baseline not available: " BENCH_OCL_NONE);
}

static bool bench_ocl_copy_run(void* state, bench_copy_kind_t kind,
                               bool pinned, void* host, size_t size,
                               uint64_t iters, bool async) {
  (void)state, (void)kind, (void)pinned, (void)host, (void)size;
  (void)iters, (void)async;
  return bench_fail(BENCH_OCL_NONE);
}

static void bench_ocl_copy_close(void* state) { (void)state; }

bench_ocl_kernel_t* bench_ocl_kernel_open(bench_ocl_t* ocl, const char* source,
                                          const char* name) {
  (void)ocl, (void)source, (void)name;
  bench_fail(BENCH_OCL_NONE);
  return NULL;
}

void bench_ocl_kernel_close(bench_ocl_kernel_t* k) { (void)k; }

bool bench_ocl_launch_latency(bench_ocl_kernel_t* k, uint64_t iters) {
  (void)k, (void)iters;
  return bench_fail(BENCH_OCL_NONE);
}

bool bench_ocl_launch_throughput(bench_ocl_kernel_t* k, uint64_t iters,
                                 uint32_t batch) {
  (void)k, (void)iters, (void)batch;
  return bench_fail(BENCH_OCL_NONE);
}

bench_ocl_gemm_t* bench_ocl_gemm_open(bench_ocl_t* ocl, size_t n,
                                      const float* a, const float* b) {
  (void)ocl, (void)n, (void)a, (void)b;
  bench_fail(BENCH_OCL_NONE);
  return NULL;
}

void bench_ocl_gemm_close(bench_ocl_gemm_t* g) { (void)g; }

bool bench_ocl_gemm_run(void* user, uint64_t iters) {
  (void)user, (void)iters;
  return bench_fail(BENCH_OCL_NONE);
}

#else  // ACCEL_BENCH_OPENCL

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>
#include <CL/cl_icd.h>
#include <dlfcn.h>

// Every entry point used, as X(name).
#define BENCH_OCL_SYMBOLS(X)  \
  X(clGetPlatformIDs)         \
  X(clGetDeviceIDs)           \
  X(clGetDeviceInfo)          \
  X(clCreateContext)          \
  X(clReleaseContext)         \
  X(clCreateCommandQueue)     \
  X(clReleaseCommandQueue)    \
  X(clCreateBuffer)           \
  X(clReleaseMemObject)       \
  X(clEnqueueWriteBuffer)     \
  X(clEnqueueReadBuffer)      \
  X(clEnqueueCopyBuffer)      \
  X(clEnqueueFillBuffer)      \
  X(clEnqueueMapBuffer)       \
  X(clEnqueueUnmapMemObject)  \
  X(clWaitForEvents)          \
  X(clReleaseEvent)           \
  X(clFinish)                 \
  X(clCreateProgramWithSource) \
  X(clBuildProgram)           \
  X(clReleaseProgram)         \
  X(clCreateKernel)           \
  X(clReleaseKernel)          \
  X(clEnqueueNDRangeKernel)

// From clblast_c.h (as plugins/opencl/clblast.c).
#define BENCH_CLBLAST_ROW_MAJOR 101
#define BENCH_CLBLAST_NO_TRANSPOSE 111
typedef int (*bench_clblast_sgemm_fn)(int layout, int a_transpose,
                                      int b_transpose, size_t m, size_t n,
                                      size_t k, float alpha, cl_mem a,
                                      size_t a_offset, size_t a_ld, cl_mem b,
                                      size_t b_offset, size_t b_ld, float beta,
                                      cl_mem c, size_t c_offset, size_t c_ld,
                                      cl_command_queue* queue, cl_event* event);

struct bench_ocl {
  void* library;
#define BENCH_OCL_FIELD(name) cl_api_##name name;
  BENCH_OCL_SYMBOLS(BENCH_OCL_FIELD)
#undef BENCH_OCL_FIELD
  cl_device_id device;
  cl_context context;
  cl_command_queue queue;
  void* clblast;  // libclblast, at the first GEMM
  bench_clblast_sgemm_fn sgemm;
};

static void bench_ocl_close(bench_ocl_t* ocl) {
  if (ocl == NULL) return;
  if (ocl->queue != NULL) ocl->clReleaseCommandQueue(ocl->queue);
  if (ocl->context != NULL) ocl->clReleaseContext(ocl->context);
  // The libraries stay loaded: CLBlast and PoCL keep state (program caches,
  // threads) that is not safe to unload mid-process.
  free(ocl);
}

// The device at `index` counting every device of every platform in order.
static cl_int bench_ocl_find(bench_ocl_t* ocl, uint32_t index,
                             cl_platform_id* out_platform) {
  cl_platform_id platforms[32];
  cl_uint count = 0;
  cl_int err = ocl->clGetPlatformIDs(32, platforms, &count);
  if (err != CL_SUCCESS) return err;
  if (count > 32) count = 32;
  for (cl_uint p = 0; p < count; ++p) {
    cl_device_id devices[64];
    cl_uint n = 0;
    err = ocl->clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 64, devices,
                              &n);
    if (err == CL_DEVICE_NOT_FOUND || n == 0) continue;
    if (err != CL_SUCCESS) return err;
    if (n > 64) n = 64;
    if (index < n) {
      ocl->device = devices[index];
      *out_platform = platforms[p];
      return CL_SUCCESS;
    }
    index -= n;
  }
  return CL_DEVICE_NOT_FOUND;
}

static bench_ocl_t* bench_ocl_open(uint32_t index, const char* name, char* why,
                                   size_t why_size) {
  bench_ocl_t* ocl = calloc(1, sizeof(*ocl));
  if (ocl == NULL) {
    snprintf(why, why_size, "out of memory");
    return NULL;
  }
  ocl->library = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (ocl->library == NULL) {
    snprintf(why, why_size, "the OpenCL ICD loader is not installed: %s",
             dlerror());
    free(ocl);
    return NULL;
  }
#define BENCH_OCL_LOAD(sym)                                              \
  *(void**)&ocl->sym = dlsym(ocl->library, #sym);                        \
  if (ocl->sym == NULL) {                                                \
    snprintf(why, why_size, "libOpenCL.so.1 has no %s", #sym);           \
    bench_ocl_close(ocl);                                                \
    return NULL;                                                         \
  }
  BENCH_OCL_SYMBOLS(BENCH_OCL_LOAD)
#undef BENCH_OCL_LOAD
  cl_platform_id platform = NULL;
  cl_int err = bench_ocl_find(ocl, index, &platform);
  char found[256] = "";
  if (err == CL_SUCCESS) {
    ocl->clGetDeviceInfo(ocl->device, CL_DEVICE_NAME, sizeof(found) - 1, found,
                         NULL);
    if (strcmp(found, name) != 0) err = CL_DEVICE_NOT_FOUND;
  }
  if (err != CL_SUCCESS) {
    snprintf(why, why_size, "no OpenCL device %u named \"%.100s\" (%d%s%.60s)",
             (unsigned)index, name, (int)err, found[0] ? ", found " : "",
             found);
    bench_ocl_close(ocl);
    return NULL;
  }
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   (cl_context_properties)platform, 0};
  ocl->context = ocl->clCreateContext(props, 1, &ocl->device, NULL, NULL, &err);
  if (err == CL_SUCCESS) {
    ocl->queue =
        ocl->clCreateCommandQueue(ocl->context, ocl->device, 0, &err);
  }
  if (err != CL_SUCCESS) {
    snprintf(why, why_size, "clCreateContext/clCreateCommandQueue: %d",
             (int)err);
    bench_ocl_close(ocl);
    return NULL;
  }
  return ocl;
}

// ---------------------------------------------------------------------------
// Copies
// ---------------------------------------------------------------------------

typedef struct bench_ocl_copy {
  bench_ocl_t* ocl;
  cl_mem a, b;       // device ends: H2D writes and D2H reads `a`
  cl_mem host_mem;   // the pinned host buffer, kept mapped at `pinned`
  void* pinned;
  void* pageable;
} bench_ocl_copy_t;

static void bench_ocl_copy_close(void* state) {
  bench_ocl_copy_t* s = state;
  if (s == NULL) return;
  bench_ocl_t* ocl = s->ocl;
  if (s->pinned != NULL) {
    ocl->clEnqueueUnmapMemObject(ocl->queue, s->host_mem, s->pinned, 0, NULL,
                                 NULL);
    ocl->clFinish(ocl->queue);
  }
  if (s->host_mem != NULL) ocl->clReleaseMemObject(s->host_mem);
  if (s->a != NULL) ocl->clReleaseMemObject(s->a);
  if (s->b != NULL) ocl->clReleaseMemObject(s->b);
  free(s->pageable);
  free(s);
}

static bool bench_ocl_copy_open(bench_ctx_t* ctx, size_t size,
                                const bench_copy_place_t* place,
                                void** out_state) {
  (void)place;  // device memory: its address says nothing here
  *out_state = NULL;
  bench_ocl_t* ocl = bench_ocl_get(ctx);
  if (ocl == NULL) return bench_fail("baseline not available: %s", ctx->ocl_error);
  bench_ocl_copy_t* s = calloc(1, sizeof(*s));
  if (s == NULL) return bench_fail("raw OpenCL copy: out of memory");
  s->ocl = ocl;
  cl_int err = CL_SUCCESS;
  const char* what = "clCreateBuffer";
  s->a = ocl->clCreateBuffer(ocl->context, CL_MEM_READ_WRITE, size, NULL, &err);
  if (err == CL_SUCCESS) {
    s->b =
        ocl->clCreateBuffer(ocl->context, CL_MEM_READ_WRITE, size, NULL, &err);
  }
  if (err == CL_SUCCESS) {
    s->host_mem = ocl->clCreateBuffer(
        ocl->context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, size, NULL,
        &err);
  }
  if (err == CL_SUCCESS) {
    what = "clEnqueueMapBuffer";
    s->pinned = ocl->clEnqueueMapBuffer(
        ocl->queue, s->host_mem, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, size,
        0, NULL, NULL, &err);
  }
  // Touch every byte now so that no trial pays for first use.
  unsigned char five = 5, six = 6;
  if (err == CL_SUCCESS) {
    what = "clEnqueueFillBuffer";
    err = ocl->clEnqueueFillBuffer(ocl->queue, s->a, &five, 1, 0, size, 0,
                                   NULL, NULL);
  }
  if (err == CL_SUCCESS) {
    err = ocl->clEnqueueFillBuffer(ocl->queue, s->b, &six, 1, 0, size, 0, NULL,
                                   NULL);
  }
  if (err == CL_SUCCESS) err = ocl->clFinish(ocl->queue);
  s->pageable = err == CL_SUCCESS ? malloc(size) : NULL;
  if (err != CL_SUCCESS || s->pageable == NULL) {
    bench_ocl_copy_close(s);
    return bench_fail("raw OpenCL copy of %zu bytes: %s: %d", size,
                      err != CL_SUCCESS ? what : "malloc", (int)err);
  }
  memset(s->pinned, 4, size);
  memset(s->pageable, 3, size);
  *out_state = s;
  return true;
}

static bool bench_ocl_copy_run(void* state, bench_copy_kind_t kind,
                               bool pinned, void* host, size_t size,
                               uint64_t iters, bool async) {
  (void)host;  // the baseline's own host memory of the same kind
  bench_ocl_copy_t* s = state;
  bench_ocl_t* ocl = s->ocl;
  void* h = pinned ? s->pinned : s->pageable;
  cl_bool block = async ? CL_FALSE : CL_TRUE;
  cl_int err = CL_SUCCESS;
  const char* what = "";
  for (uint64_t i = 0; i < iters && err == CL_SUCCESS; ++i) {
    switch (kind) {
      case BENCH_COPY_H2D:
        what = "clEnqueueWriteBuffer";
        err = ocl->clEnqueueWriteBuffer(ocl->queue, s->a, block, 0, size, h, 0,
                                        NULL, NULL);
        break;
      case BENCH_COPY_D2H:
        what = "clEnqueueReadBuffer";
        err = ocl->clEnqueueReadBuffer(ocl->queue, s->a, block, 0, size, h, 0,
                                       NULL, NULL);
        break;
      case BENCH_COPY_D2D: {
        what = "clEnqueueCopyBuffer";
        cl_event event = NULL;
        err = ocl->clEnqueueCopyBuffer(ocl->queue, s->a, s->b, 0, 0, size, 0,
                                       NULL, async ? NULL : &event);
        if (err == CL_SUCCESS && event != NULL) {
          err = ocl->clWaitForEvents(1, &event);
          ocl->clReleaseEvent(event);
        }
        break;
      }
    }
  }
  if (err == CL_SUCCESS && async) {
    what = "clFinish";
    err = ocl->clFinish(ocl->queue);
  }
  if (err != CL_SUCCESS) return bench_fail("raw %s: %d", what, (int)err);
  return true;
}

// ---------------------------------------------------------------------------
// Launch
// ---------------------------------------------------------------------------

struct bench_ocl_kernel {
  bench_ocl_t* ocl;
  cl_program program;
  cl_kernel kernel;
};

bench_ocl_kernel_t* bench_ocl_kernel_open(bench_ocl_t* ocl, const char* source,
                                          const char* name) {
  bench_ocl_kernel_t* k = calloc(1, sizeof(*k));
  if (k == NULL) {
    bench_fail("raw OpenCL kernel: out of memory");
    return NULL;
  }
  k->ocl = ocl;
  cl_int err = CL_SUCCESS;
  const char* what = "clCreateProgramWithSource";
  k->program =
      ocl->clCreateProgramWithSource(ocl->context, 1, &source, NULL, &err);
  if (err == CL_SUCCESS) {
    what = "clBuildProgram";
    err = ocl->clBuildProgram(k->program, 1, &ocl->device, "", NULL, NULL);
  }
  if (err == CL_SUCCESS) {
    what = "clCreateKernel";
    k->kernel = ocl->clCreateKernel(k->program, name, &err);
  }
  if (err != CL_SUCCESS) {
    bench_ocl_kernel_close(k);
    bench_fail("raw %s (%s): %d", what, name, (int)err);
    return NULL;
  }
  return k;
}

void bench_ocl_kernel_close(bench_ocl_kernel_t* k) {
  if (k == NULL) return;
  if (k->kernel != NULL) k->ocl->clReleaseKernel(k->kernel);
  if (k->program != NULL) k->ocl->clReleaseProgram(k->program);
  free(k);
}

static cl_int bench_ocl_launch_one(bench_ocl_kernel_t* k) {
  static const size_t one[1] = {1};
  return k->ocl->clEnqueueNDRangeKernel(k->ocl->queue, k->kernel, 1, NULL, one,
                                        one, 0, NULL, NULL);
}

bool bench_ocl_launch_latency(bench_ocl_kernel_t* k, uint64_t iters) {
  for (uint64_t i = 0; i < iters; ++i) {
    cl_int err = bench_ocl_launch_one(k);
    if (err == CL_SUCCESS) err = k->ocl->clFinish(k->ocl->queue);
    if (err != CL_SUCCESS) return bench_fail("raw launch: %d", (int)err);
  }
  return true;
}

bool bench_ocl_launch_throughput(bench_ocl_kernel_t* k, uint64_t iters,
                                 uint32_t batch) {
  cl_int err = CL_SUCCESS;
  for (uint64_t i = 0; i < iters && err == CL_SUCCESS; ++i) {
    err = bench_ocl_launch_one(k);
    if (err == CL_SUCCESS && (i + 1) % batch == 0) {
      err = k->ocl->clFinish(k->ocl->queue);
    }
  }
  if (err == CL_SUCCESS) err = k->ocl->clFinish(k->ocl->queue);
  if (err != CL_SUCCESS) return bench_fail("raw launch: %d", (int)err);
  return true;
}

// ---------------------------------------------------------------------------
// GEMM
// ---------------------------------------------------------------------------

struct bench_ocl_gemm {
  bench_ocl_t* ocl;
  size_t n;
  cl_mem a, b, c;
};

void bench_ocl_gemm_close(bench_ocl_gemm_t* g) {
  if (g == NULL) return;
  if (g->a != NULL) g->ocl->clReleaseMemObject(g->a);
  if (g->b != NULL) g->ocl->clReleaseMemObject(g->b);
  if (g->c != NULL) g->ocl->clReleaseMemObject(g->c);
  free(g);
}

// Opens CLBlast as the plugin does; false with bench_fail() when it cannot.
static bool bench_ocl_clblast(bench_ocl_t* ocl) {
  if (ocl->sgemm != NULL) return true;
  const char* name = getenv("ACCEL_OPENCL_CLBLAST");
  if (name == NULL || name[0] == '\0') name = "libclblast.so.1";
  if (ocl->clblast == NULL) ocl->clblast = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (ocl->clblast == NULL) return bench_fail("CLBlast: %s", dlerror());
  *(void**)&ocl->sgemm = dlsym(ocl->clblast, "CLBlastSgemm");
  if (ocl->sgemm == NULL) return bench_fail("%s has no CLBlastSgemm", name);
  return true;
}

bench_ocl_gemm_t* bench_ocl_gemm_open(bench_ocl_t* ocl, size_t n,
                                      const float* a, const float* b) {
  if (!bench_ocl_clblast(ocl)) return NULL;
  bench_ocl_gemm_t* g = calloc(1, sizeof(*g));
  if (g == NULL) {
    bench_fail("raw OpenCL gemm: out of memory");
    return NULL;
  }
  g->ocl = ocl;
  g->n = n;
  size_t bytes = n * n * sizeof(float);
  cl_int err = CL_SUCCESS;
  cl_mem* mems[3] = {&g->a, &g->b, &g->c};
  for (int i = 0; i < 3 && err == CL_SUCCESS; ++i) {
    *mems[i] =
        ocl->clCreateBuffer(ocl->context, CL_MEM_READ_WRITE, bytes, NULL, &err);
  }
  if (err == CL_SUCCESS) {
    err = ocl->clEnqueueWriteBuffer(ocl->queue, g->a, CL_TRUE, 0, bytes, a, 0,
                                    NULL, NULL);
  }
  if (err == CL_SUCCESS) {
    err = ocl->clEnqueueWriteBuffer(ocl->queue, g->b, CL_TRUE, 0, bytes, b, 0,
                                    NULL, NULL);
  }
  float zero = 0.0f;
  if (err == CL_SUCCESS) {
    err = ocl->clEnqueueFillBuffer(ocl->queue, g->c, &zero, sizeof(zero), 0,
                                   bytes, 0, NULL, NULL);
  }
  if (err == CL_SUCCESS) err = ocl->clFinish(ocl->queue);
  if (err != CL_SUCCESS) {
    bench_ocl_gemm_close(g);
    bench_fail("raw OpenCL gemm %zu buffers: %d", n, (int)err);
    return NULL;
  }
  return g;
}

bool bench_ocl_gemm_run(void* user, uint64_t iters) {
  bench_ocl_gemm_t* g = user;
  bench_ocl_t* ocl = g->ocl;
  size_t n = g->n;
  for (uint64_t i = 0; i < iters; ++i) {
    cl_event event = NULL;
    int err = ocl->sgemm(BENCH_CLBLAST_ROW_MAJOR, BENCH_CLBLAST_NO_TRANSPOSE,
                         BENCH_CLBLAST_NO_TRANSPOSE, n, n, n, 1.0f, g->a, 0, n,
                         g->b, 0, n, 0.0f, g->c, 0, n, &ocl->queue, &event);
    if (event != NULL) ocl->clReleaseEvent(event);
    if (err == 0) err = ocl->clFinish(ocl->queue);
    if (err != 0) return bench_fail("raw CLBlastSgemm %zu: %d", n, err);
  }
  return true;
}

#endif  // ACCEL_BENCH_OPENCL

const bench_copy_baseline_t bench_ocl_copy_baseline = {
    .name = "clEnqueue*Buffer",
    .open = bench_ocl_copy_open,
    .run = bench_ocl_copy_run,
    .close = bench_ocl_copy_close,
};

bench_ocl_t* bench_ocl_get(bench_ctx_t* ctx) {
  if (ctx->ocl == NULL && !ctx->ocl_tried) {
    ctx->ocl_tried = true;
    ctx->ocl = bench_ocl_open(accel_device_index(ctx->device), ctx->info.name,
                              ctx->ocl_error, sizeof(ctx->ocl_error));
  }
  return ctx->ocl;
}

void bench_ocl_release(bench_ctx_t* ctx) {
  bench_ocl_close(ctx->ocl);
  ctx->ocl = NULL;
}
