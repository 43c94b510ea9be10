// SPDX-License-Identifier: MIT
//
// launch: an empty kernel (kernels/empty_cpu.c, one block, no arguments)
// through accel_kernel_launch on one stream, in microseconds per launch:
// - latency: one launch, then accel_stream_synchronize; single launches
//   of accel and the baseline alternate, each timed alone, and the
//   medians are over single launches where one takes 10 us or more
//   (bench_measure_single: the time a runtime takes to wake its worker
//   drifts faster than a trial lasts; on the CPU, trials);
// - throughput: launches back to back, one synchronisation per batch of
//   up to BENCH_LAUNCH_BATCH (which bounds the queue), per launch.
// The baseline is the raw vendor launch (architecture "Budgets": accel <= raw +
// 0.5 us). On the CPU there is no launch API below accel's: the baseline
// is the kernel function itself, found with dlsym() in the same module
// file and called on the host, so the difference is everything accel and
// the plugin add (argument packing, the queue, waking a pool thread). On
// CUDA the kernel is kernels/empty.cu, embedded as a fatbin: the accel
// side loads it with accel_module_create, the baseline with
// cuModuleLoadData and launches it with raw cuLaunchKernel on a stream of
// its own (cuda_raw.c). On OpenCL the kernel is kernels/empty.cl,
// embedded as source text: the accel side loads it with
// accel_module_create, the baseline builds it with
// clCreateProgramWithSource and launches it with raw clEnqueueNDRangeKernel
// (global and local size 1) on a queue of its own (opencl_raw.c).
//
// The module is looked up, as accel-conform does for its kernels, under
// share/accel/bench beside the installed bin/, then in bench/ next to the
// accel-bench binary (the build tree).
#include <accel/cpu_kernel.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cuda_raw.h"
#include "opencl_raw.h"

#define BENCH_LAUNCH_BUDGET_US 0.5
#define BENCH_LAUNCH_BATCH 4096u
#define BENCH_LAUNCH_KERNEL "accel_bench_empty"

#ifndef ACCEL_BENCH_CPU_KERNEL
#define ACCEL_BENCH_CPU_KERNEL "accel_bench_empty_cpu.so"
#endif
#ifndef ACCEL_BENCH_DATADIR_REL
#define ACCEL_BENCH_DATADIR_REL "../share/accel/bench"
#endif

#if defined(ACCEL_BENCH_CUDA_FATBIN)
// kernels/empty.cu, embedded by cmake/AccelEmbed.cmake.
extern const unsigned char accel_bench_empty_fatbin[];
extern const size_t accel_bench_empty_fatbin_size;
#endif
// kernels/empty.cl, embedded as text by cmake/AccelEmbed.cmake.
extern const unsigned char accel_bench_empty_cl[];
extern const size_t accel_bench_empty_cl_size;

static const char* const bench_launch_case_names[] = {"latency", "throughput",
                                                      NULL};

typedef struct bench_launch {
  accel_stream_t* stream;
  accel_kernel_t* kernel;
  accel_launch_config_t config;
  void* handle;  // the module opened directly, for the baseline
  accel_cpu_kernel_fn_t fn;
  accel_cpu_kernel_ctx_t kctx;
  bench_cuda_kernel_t* raw;  // CUDA: the same kernel loaded raw
  bench_ocl_kernel_t* ocl;   // OpenCL: the same kernel built raw
} bench_launch_t;

static bool bench_launch_sync(bench_launch_t* l) {
  if (accel_stream_synchronize(l->stream) != ACCEL_OK) {
    return bench_fail("accel_stream_synchronize: %s", accel_last_error());
  }
  return true;
}

static bool bench_launch_one(bench_launch_t* l) {
  if (accel_kernel_launch(l->kernel, l->stream, &l->config, 0, NULL) !=
      ACCEL_OK) {
    return bench_fail("accel_kernel_launch: %s", accel_last_error());
  }
  return true;
}

static bool bench_accel_latency(void* user, uint64_t iters) {
  bench_launch_t* l = user;
  for (uint64_t i = 0; i < iters; ++i) {
    if (!bench_launch_one(l) || !bench_launch_sync(l)) return false;
  }
  return true;
}

static bool bench_accel_throughput(void* user, uint64_t iters) {
  bench_launch_t* l = user;
  for (uint64_t i = 0; i < iters; ++i) {
    if (!bench_launch_one(l)) return false;
    if ((i + 1) % BENCH_LAUNCH_BATCH == 0 && !bench_launch_sync(l)) {
      return false;
    }
  }
  return bench_launch_sync(l);
}

static bool bench_direct_launch(void* user, uint64_t iters) {
  bench_launch_t* l = user;
  static void* const no_args[1] = {NULL};
  for (uint64_t i = 0; i < iters; ++i) l->fn(&l->kctx, no_args);
  return true;
}

static bool bench_raw_latency(void* user, uint64_t iters) {
  bench_launch_t* l = user;
  if (l->ocl != NULL) return bench_ocl_launch_latency(l->ocl, iters);
  return bench_cuda_launch_latency(l->raw, iters);
}

static bool bench_raw_throughput(void* user, uint64_t iters) {
  bench_launch_t* l = user;
  if (l->ocl != NULL) {
    return bench_ocl_launch_throughput(l->ocl, iters, BENCH_LAUNCH_BATCH);
  }
  return bench_cuda_launch_throughput(l->raw, iters, BENCH_LAUNCH_BATCH);
}

// Whether the device is a CUDA one (its kernel is embedded, not a file).
static bool bench_launch_is_cuda(const bench_ctx_t* ctx) {
  return strcmp(accel_device_backend(ctx->device), "cuda") == 0;
}

// Whether the device is an OpenCL one (its kernel is embedded source).
static bool bench_launch_is_opencl(const bench_ctx_t* ctx) {
  return strcmp(accel_device_backend(ctx->device), "opencl") == 0;
}

// Finds the empty kernel for this device; false with `why` when none.
static bool bench_launch_module_path(const bench_ctx_t* ctx, char* path,
                                     size_t size, char* why, size_t why_size) {
  if (bench_launch_is_cuda(ctx)) {
#if defined(ACCEL_BENCH_CUDA_FATBIN)
    snprintf(path, size, "kernels/empty.cu (embedded fatbin)");
    return true;
#else
    snprintf(why, why_size,
             "skipped: accel-bench was built without nvcc, so it has no "
             "empty CUDA kernel");
    return false;
#endif
  }
  if (bench_launch_is_opencl(ctx)) {
    snprintf(path, size, "kernels/empty.cl (embedded source)");
    return true;
  }
  if (ctx->info.type != ACCEL_DEVICE_TYPE_CPU) {
    snprintf(why, why_size,
             "skipped: no empty kernel for %s (module target \"%s\") in "
             "the tree yet",
             ctx->info.uri, ctx->info.module_target);
    return false;
  }
  snprintf(path, size, "%s/%s/%s", ctx->exe_dir, ACCEL_BENCH_DATADIR_REL,
           ACCEL_BENCH_CPU_KERNEL);
  if (access(path, R_OK) == 0) return true;
  snprintf(path, size, "%s/bench/%s", ctx->exe_dir, ACCEL_BENCH_CPU_KERNEL);
  if (access(path, R_OK) == 0) return true;
  snprintf(why, why_size, "%s not found in %s/%s or %s/bench",
           ACCEL_BENCH_CPU_KERNEL, ctx->exe_dir, ACCEL_BENCH_DATADIR_REL,
           ctx->exe_dir);
  return false;
}

static bool bench_launch_open(bench_ctx_t* ctx, bench_launch_t* l,
                              const char* path, bool direct) {
  memset(l, 0, sizeof(*l));
  accel_launch_config_init(&l->config);
  accel_module_t* module = NULL;
  accel_status_t s = ACCEL_OK;
#if defined(ACCEL_BENCH_CUDA_FATBIN)
  if (bench_launch_is_cuda(ctx)) {
    s = accel_module_create(ctx->device, accel_bench_empty_fatbin,
                            accel_bench_empty_fatbin_size, &module);
  } else
#endif
      if (bench_launch_is_opencl(ctx)) {
    s = accel_module_create(ctx->device, accel_bench_empty_cl,
                            accel_bench_empty_cl_size, &module);
  } else {
    s = accel_module_create_from_file(ctx->device, path, &module);
  }
  if (s == ACCEL_OK)
    s = accel_kernel_create(module, BENCH_LAUNCH_KERNEL, &l->kernel);
  accel_module_release(module);  // the kernel keeps it alive
  if (s == ACCEL_OK) s = accel_stream_create(ctx->device, 0, &l->stream);
  if (s != ACCEL_OK) return bench_fail("%s: %s", path, accel_last_error());
  if (!direct || bench_launch_is_cuda(ctx) || bench_launch_is_opencl(ctx)) {
    return true;
  }
  l->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  void* sym = l->handle != NULL ? dlsym(l->handle, BENCH_LAUNCH_KERNEL) : NULL;
  if (sym == NULL) return bench_fail("dlopen %s: %s", path, dlerror());
  memcpy(&l->fn, &sym, sizeof(l->fn));
  // What the plugin would pass for a 1 x 1 x 1 launch.
  l->kctx.struct_size = sizeof(l->kctx);
  for (int d = 0; d < 3; ++d) l->kctx.grid_dim[d] = l->kctx.block_dim[d] = 1;
  return true;
}

// CUDA: loads the same embedded kernel raw into l->raw; OpenCL: builds
// the same source raw into l->ocl. On failure leaves them NULL with the
// reason in `why`.
static void bench_launch_open_raw(bench_ctx_t* ctx, bench_launch_t* l,
                                  char* why, size_t why_size) {
  if (bench_launch_is_opencl(ctx)) {
    bench_ocl_t* ocl = bench_ocl_get(ctx);
    if (ocl == NULL) {
      snprintf(why, why_size, "%s", ctx->ocl_error);
      return;
    }
    l->ocl = bench_ocl_kernel_open(ocl, (const char*)accel_bench_empty_cl,
                                   BENCH_LAUNCH_KERNEL);
    if (l->ocl == NULL) snprintf(why, why_size, "%s", bench_failure());
    return;
  }
#if defined(ACCEL_BENCH_CUDA_FATBIN)
  bench_cuda_t* cu = bench_cuda_get(ctx);
  if (cu == NULL) {
    snprintf(why, why_size, "%s", ctx->cuda_error);
    return;
  }
  l->raw =
      bench_cuda_kernel_open(cu, accel_bench_empty_fatbin, BENCH_LAUNCH_KERNEL);
  if (l->raw == NULL) snprintf(why, why_size, "%s", bench_failure());
#else
  (void)ctx, (void)l;
  snprintf(why, why_size, "no embedded CUDA kernel");
#endif
}

static void bench_launch_close(bench_launch_t* l) {
  accel_stream_release(l->stream);
  accel_kernel_release(l->kernel);
  if (l->handle != NULL) dlclose(l->handle);
  bench_cuda_kernel_close(l->raw);
  bench_ocl_kernel_close(l->ocl);
  memset(l, 0, sizeof(*l));
}

// Latency measured in pairs (a launch + synchronize that waits for a
// runtime's worker, tens of us that swing with whether it slept): when
// the 95% interval of the paired differences straddles the budget, the
// run cannot tell whether accel meets it, so the row is shown, not
// judged, with the interval in its note. An interval wholly above or
// below the budget leaves the verdict to the medians as usual.
static void bench_launch_judge_pairs(bench_result_t* r,
                                     const bench_paired_t* diff) {
  if (!r->has_baseline || diff->pairs == 0) return;
  double lo = diff->lo / 1e3, hi = diff->hi / 1e3, mid = diff->median / 1e3;
  r->informational =
      lo <= BENCH_LAUNCH_BUDGET_US && hi > BENCH_LAUNCH_BUDGET_US;
  snprintf(r->note, sizeof(r->note),
           "%u pairs: accel - raw median %+.2f us, 95%% interval "
           "[%+.2f, %+.2f]%s",
           diff->pairs, mid, lo, hi,
           r->informational ? " straddles the budget: not resolved" : "");
}

static void bench_launch_run(bench_ctx_t* ctx) {
  static const bench_run_fn_t accel_fns[2] = {bench_accel_latency,
                                              bench_accel_throughput};
  static const bench_run_fn_t raw_fns[2] = {bench_raw_latency,
                                            bench_raw_throughput};
  // Indices, not pointers: bench_add() may move the results.
  size_t row[2] = {SIZE_MAX, SIZE_MAX};
  for (int k = 0; k < 2; ++k) {
    if (!bench_wanted(ctx, "launch", bench_launch_case_names[k])) continue;
    bench_result_t* r =
        bench_add(ctx, "launch", "%s", bench_launch_case_names[k]);
    if (r == NULL) return;
    r->unit = "us";
    r->budget = BENCH_BUDGET_MAX_DIFF;
    r->budget_value = BENCH_LAUNCH_BUDGET_US;
    row[k] = ctx->result_count - 1;
  }
  bench_result_t* rows[2] = {NULL, NULL};
  for (int k = 0; k < 2; ++k) {
    if (row[k] != SIZE_MAX) rows[k] = &ctx->results[row[k]];
  }
  if (rows[0] == NULL && rows[1] == NULL) return;
  const bench_baselines_t* bl =
      bench_baselines_find(accel_device_backend(ctx->device));
  char path[4096 + 128], why[192];
  bool ok = (ctx->info.caps & ACCEL_DEVICE_CAP_KERNELS) != 0;
  if (!ok) {
    snprintf(why, sizeof(why), "skipped: %s runs no custom kernels",
             ctx->info.uri);
  } else {
    ok = bench_launch_module_path(ctx, path, sizeof(path), why, sizeof(why));
  }
  bool skipped = !ok;
  bench_launch_t l;
  memset(&l, 0, sizeof(l));
  if (ok && !bench_launch_open(ctx, &l, path, bl->launch != NULL)) {
    snprintf(why, sizeof(why), "%s", bench_failure());
    ok = false;
  }
  // CUDA and OpenCL: the raw side, or why there is none.
  bool cuda = bench_launch_is_cuda(ctx) || bench_launch_is_opencl(ctx);
  char raw_why[sizeof(ctx->cuda_error)] = "";
  if (ok && cuda) bench_launch_open_raw(ctx, &l, raw_why, sizeof(raw_why));
  for (int k = 0; k < 2; ++k) {
    bench_result_t* r = rows[k];
    if (r == NULL) continue;
    if (!ok) {
      if (skipped) {
        r->outcome = BENCH_OUTCOME_SKIPPED;
        snprintf(r->note, sizeof(r->note), "%s", why);
      } else {
        bench_result_fail(ctx, r, why);
      }
      continue;
    }
    bench_progress(ctx, "launch", r->name);
    bench_variant_t a = {accel_fns[k], &l};
    bench_variant_t b = {bl->launch != NULL ? bench_direct_launch : NULL, &l};
    if (cuda) b.run = l.raw != NULL || l.ocl != NULL ? raw_fns[k] : NULL;
    if (b.run != NULL) {
      snprintf(r->baseline_name, sizeof(r->baseline_name), "%s%s", bl->launch,
               cuda ? "" : " (dlsym)");
    } else if (cuda && bl->launch != NULL) {
      snprintf(r->note, sizeof(r->note), "baseline not available: %.160s",
               raw_why);
    } else {
      snprintf(r->note, sizeof(r->note), "baseline %s", bl->launch_missing);
    }
    // Latency: single launches of each side alternate (see
    // bench_measure_pairs); throughput: trials of many launches.
    bench_paired_t diff = {0};
    bool measured = k == 0 ? bench_measure_single(&ctx->plan, a, b, &r->accel,
                                                  &r->baseline, &diff)
                           : bench_measure(&ctx->plan, a, b, &r->accel,
                                           &r->baseline);
    if (!measured) {
      bench_result_fail(ctx, r, NULL);
      continue;
    }
    bench_timing_t* t[2] = {&r->accel, &r->baseline};
    for (int i = 0; i < 2; ++i) {
      t[i]->median /= 1e3;
      t[i]->min /= 1e3;
      t[i]->max /= 1e3;
    }
    r->has_baseline = b.run != NULL;
    bench_launch_judge_pairs(r, &diff);
  }
  bench_launch_close(&l);
}

const bench_suite_t bench_suite_launch = {
    .name = "launch",
    .summary =
        "empty kernel: launch + sync latency and back-to-back throughput "
        "vs the raw launch (us; budget <= raw + 0.5 us)",
    .cases = bench_launch_case_names,
    .sizes_quick = "-",
    .sizes_full = "-",
    .run = bench_launch_run,
};
