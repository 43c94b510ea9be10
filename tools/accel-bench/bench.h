// SPDX-License-Identifier: MIT
//
// Internal interface of accel-bench, shared by its source files:
// - harness.c times an accel variant and its baseline, interleaved;
// - direct.c loads the device's plugin a second time, without the core, so
//   that suites can call its entries directly (the dispatch baseline);
// - baseline.c is the per-backend table of vendor baselines (memcpy on the
//   CPU; raw cuMemcpy* and cuBLAS once the CUDA plugin exists);
// - suite_*.c are the suites, listed in suites.c;
// - render_text.c, render_json.c and render_svg.c print the results;
// - main.c parses the command line and ties it together.
// Nothing here is exported; the accel side uses only the public API.
#ifndef ACCEL_TOOLS_ACCEL_BENCH_BENCH_H_
#define ACCEL_TOOLS_ACCEL_BENCH_BENCH_H_

#include <accel/accel.h>
#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#define BENCH_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define BENCH_PRINTF(f, a)
#endif

// Exit codes (documented in --help and docs/performance.md). A result
// outside its budget never changes the exit code.
enum {
  BENCH_EXIT_OK = 0,      // every selected benchmark ran
  BENCH_EXIT_FAILED = 1,  // a benchmark, or the device, failed to run
  BENCH_EXIT_USAGE = 2,   // bad command line
};

// Version of the --json document; bumped when a field changes meaning.
#define BENCH_SCHEMA_VERSION 1

// ---------------------------------------------------------------------------
// Harness (harness.c)
// ---------------------------------------------------------------------------

// How long and how often to measure one case.
typedef struct bench_plan {
  double trial_ns;      // target duration of one trial of one variant
  uint32_t trials;      // trials per variant, at most
  uint32_t min_trials;  // trials per variant, at least (even past case_ns)
  double case_ns;       // soft cap on the time one variant spends on a case
} bench_plan_t;

// Runs an operation `iters` times back to back, including whatever makes
// the work complete (a stream synchronisation). Returns false on failure
// after recording why with bench_fail().
typedef bool (*bench_run_fn_t)(void* user, uint64_t iters);

// One side of a comparison.
typedef struct bench_variant {
  bench_run_fn_t run;  // NULL: this side is not measured
  void* user;
} bench_variant_t;

// Summary of repeated trials, in nanoseconds per operation.
typedef struct bench_timing {
  double median;
  double min;
  double max;
  uint32_t trials;
  uint64_t iters;  // operations per trial
} bench_timing_t;

// Monotonic clock in nanoseconds (CLOCK_MONOTONIC).
uint64_t bench_now_ns(void);

// Records why a benchmark failed, for bench_failure(); returns false so a
// run function can write `return bench_fail("...")`.
bool bench_fail(const char* format, ...) BENCH_PRINTF(1, 2);

// The message of the last bench_fail() (or "").
const char* bench_failure(void);

// Measures `a` and `b` on one plan: one warm-up run each, an iteration
// count per variant chosen so a trial lasts about plan->trial_ns, then
// trials alternating A B, B A, A B... so that drift of a shared machine
// (another process, frequency changes) hits both sides alike. `b.run` may
// be NULL, then only `a` is measured. Returns false if a run failed.
bool bench_measure(const bench_plan_t* plan, bench_variant_t a,
                   bench_variant_t b, bench_timing_t* out_a,
                   bench_timing_t* out_b);

// Like bench_measure() for `count` (1..BENCH_MAX_VARIANTS) variants: each
// trial runs all of them, the order rotating from trial to trial (A B C,
// B C A, C A B, ...). A variant whose `run` is NULL is left out (its
// timing stays zeroed); `variants[0].run` must be set.
#define BENCH_MAX_VARIANTS 5  // accel and BENCH_CPU_GEMM_MAX engines
bool bench_measure_n(const bench_plan_t* plan, size_t count,
                     const bench_variant_t* variants, bench_timing_t* out);

// For operations whose time swings with the machine's state from one
// moment to the next (a launch + synchronize that waits for a runtime's
// worker thread to wake: 13 to 60 us on PoCL from one second to the next,
// so trials of many launches of one side, then the other, land in
// different states): single operations of `a` and `b` alternate (A B,
// B A, ...), each timed alone, for as many pairs as fit in the plan's
// time for one variant's trials; the results are medians, minimums and
// maximums over single operations (`iters` 1, `trials` the pairs). A
// `b.run` of NULL measures `a` alone. Returns false if a run failed.
//
// `out_diff` (may be NULL) gets the paired differences a - b: their
// median and a 95% confidence interval for it that assumes nothing about
// their distribution (order statistics of the sorted differences, as the
// sign test gives them), so a caller can tell a difference its budget
// cannot resolve from one that meets or misses it.
typedef struct bench_paired {
  double median;  // ns
  double lo, hi;  // the 95% interval, ns
  uint32_t pairs;  // 0: not measured in pairs
} bench_paired_t;
bool bench_measure_pairs(const bench_plan_t* plan, bench_variant_t a,
                         bench_variant_t b, bench_timing_t* out_a,
                         bench_timing_t* out_b, bench_paired_t* out_diff);

// bench_measure_pairs() when one operation of either side takes at least
// BENCH_PAIRS_MIN_NS (then one clock read per operation costs under 0.3%
// of it), bench_measure() otherwise. For operations that are whole on
// their own (a synchronous copy, a launch + synchronize), where a trial
// of many is only the same operation repeated.
#define BENCH_PAIRS_MIN_NS 10000.0
bool bench_measure_single(const bench_plan_t* plan, bench_variant_t a,
                          bench_variant_t b, bench_timing_t* out_a,
                          bench_timing_t* out_b,
                          bench_paired_t* out_diff);

// Fills `out` (median, min, max) from `count` samples, which it sorts.
void bench_timing_from_samples(double* samples, uint32_t count,
                               bench_timing_t* out);

// ---------------------------------------------------------------------------
// Results
// ---------------------------------------------------------------------------

// How a result is judged against its budget.
typedef enum bench_budget_kind {
  BENCH_BUDGET_NONE = 0,
  BENCH_BUDGET_MAX_DIFF,   // accel - baseline <= value (same unit)
  BENCH_BUDGET_MIN_RATIO,  // accel / baseline >= value (throughput)
  BENCH_BUDGET_MAX_ABS,    // accel <= value (same unit)
} bench_budget_kind_t;

// Whether a case ran.
typedef enum bench_outcome {
  BENCH_OUTCOME_OK = 0,
  BENCH_OUTCOME_SKIPPED,  // could not run here (memory); `note` says why
  BENCH_OUTCOME_FAILED,   // an accel or baseline call failed; `note` says
} bench_outcome_t;

typedef struct bench_result {
  const char* suite;  // static storage
  char name[64];      // case name within the suite, "h2d_pinned"
  uint64_t size;      // bytes (copies, allocations), n (GEMM); 0 if none
  const char* unit;   // "ns", "GB/s", "ms", "MB", "GFLOP/s"
  bool higher_is_better;
  bench_outcome_t outcome;
  bench_timing_t accel;  // in `unit`
  bool has_baseline;
  bench_timing_t baseline;     // in `unit`, when has_baseline
  char baseline_name[48];      // "plugin direct", "memcpy", "/bin/true"
  bench_budget_kind_t budget;  // judged on the medians
  double budget_value;
  bool informational;  // the budget is shown but not judged ("startup")
  char note[192];      // why skipped or failed, or why no baseline
} bench_result_t;

// accel / baseline medians, or NaN when there is no baseline.
double bench_result_ratio(const bench_result_t* r);

// Whether the medians meet the budget: 1 yes, 0 no, -1 not judged (no
// budget, no numbers, or no baseline where one is needed).
int bench_result_within(const bench_result_t* r);

// ---------------------------------------------------------------------------
// Run context
// ---------------------------------------------------------------------------

typedef enum bench_mode {
  BENCH_MODE_QUICK = 0,  // default: under a minute on a small CPU machine
  BENCH_MODE_FULL,       // every size, more trials
  BENCH_MODE_SMOKE,      // a few tiny cases, for the CTest smoke test
} bench_mode_t;

typedef struct bench_direct bench_direct_t;
typedef struct bench_cuda bench_cuda_t;  // cuda_raw.h
typedef struct bench_ocl bench_ocl_t;    // opencl_raw.h

typedef struct bench_ctx {
  bench_mode_t mode;
  bench_plan_t plan;  // default plan for the mode
  accel_device_t* device;
  accel_device_info_t info;
  regex_t* filters;  // compiled --filter patterns (NULL: everything)
  size_t filter_count;
  const char* exe_path;    // accel-bench itself, for the spawn helper
  const char* exe_dir;     // directory holding accel-bench (and accel-info)
  bench_direct_t* direct;  // the plugin loaded directly, on first use
  bool direct_failed;      // loading it failed; `direct_error` says why
  char direct_error[256];
  bench_cuda_t* cuda;  // raw CUDA baselines, on first use (cuda_raw.h)
  bool cuda_tried;     // opening it was tried; on failure `cuda_error`
  char cuda_error[256];
  bench_ocl_t* ocl;  // raw OpenCL baselines, on first use (opencl_raw.h)
  bool ocl_tried;    // opening it was tried; on failure `ocl_error`
  char ocl_error[256];
  bench_result_t* results;
  size_t result_count;
  size_t result_capacity;
  size_t failures;  // results with BENCH_OUTCOME_FAILED
  bool progress;    // draw a progress line on stderr (a terminal)
} bench_ctx_t;

// Whether the case `suite`/`name` passes --filter.
bool bench_wanted(const bench_ctx_t* ctx, const char* suite, const char* name);

// Appends a zeroed result for `suite` (static storage) named by `format`;
// returns NULL (after printing why) when out of memory. The pointer is
// valid until the next bench_add(), which may move the results: keep an
// index (ctx->result_count - 1) to come back to one.
bench_result_t* bench_add(bench_ctx_t* ctx, const char* suite,
                          const char* format, ...) BENCH_PRINTF(3, 4);

// Marks `r` failed with bench_failure() or `why`, counting the failure.
void bench_result_fail(bench_ctx_t* ctx, bench_result_t* r, const char* why);

// Shows "suite: what" on the progress line (a no-op off a terminal).
void bench_progress(const bench_ctx_t* ctx, const char* suite,
                    const char* what);

// Formats `bytes` as "4 KiB", "64 MiB", "1 GiB" into `buf`.
const char* bench_format_size(uint64_t bytes, char* buf, size_t buf_size);

// ---------------------------------------------------------------------------
// Direct plugin access (direct.c)
// ---------------------------------------------------------------------------

// Returns the plugin of ctx->device loaded a second time by dlopen, with
// its own load() state, a minimal host table and the same device index
// opened, or NULL (the reason in ctx->direct_error). Loaded on first use,
// closed by bench_direct_close().
bench_direct_t* bench_direct_get(bench_ctx_t* ctx);
void bench_direct_close(bench_ctx_t* ctx);

// The device ops table and device handle of a direct plugin. Declared with
// void* so that files without <accel/plugin.h> can pass them around.
const void* bench_direct_ops(const bench_direct_t* direct);
void* bench_direct_device(const bench_direct_t* direct);
const char* bench_direct_path(const bench_direct_t* direct);

// The calling thread's last message from the direct plugin's host->fail.
const char* bench_direct_error(void);

// ---------------------------------------------------------------------------
// CPU GEMM baselines (cpu_gemm.c): the engines the CPU plugin chooses
// from, called directly.
// ---------------------------------------------------------------------------

// At most two BLAS libraries and oneDNN, in the case's dtype and in f32.
#define BENCH_CPU_GEMM_MAX 4

typedef struct bench_cpu_gemm bench_cpu_gemm_t;
typedef struct bench_cpu_op bench_cpu_op_t;

// Opens OpenBLAS and BLIS (or exactly ACCEL_CPU_BLAS) and oneDNN, those
// that can be; single-threaded BLAS libraries run on a pool of `width`.
// NULL (bench_fail) only when out of memory or threads.
bench_cpu_gemm_t* bench_cpu_gemm_open(uint32_t width);
void bench_cpu_gemm_close(bench_cpu_gemm_t* gemm);

// Engines opened, their names ("openblas", "blis", "blas", "onednn",
// "onednn-f32"), and those that could not be, with why ("" when none).
size_t bench_cpu_gemm_count(const bench_cpu_gemm_t* gemm);
const char* bench_cpu_gemm_name(const bench_cpu_gemm_t* gemm, size_t i);
const char* bench_cpu_gemm_missing(const bench_cpu_gemm_t* gemm);

// Prepares engine `i` for n x n x n products of `dtype` with A and B
// holding the f32 values `a` and `b` (kept by reference: valid until
// bench_cpu_op_close). A BLAS and "onednn-f32" multiply the f32 values
// whatever `dtype` (as the plugin does after converting); "onednn"
// multiplies in `dtype`. NULL with the reason in `why` when the engine has
// no optimised kernel for `dtype`, and with an empty `why` for
// "onednn-f32" on f32, which the "onednn" row already is.
bench_cpu_op_t* bench_cpu_gemm_prepare(bench_cpu_gemm_t* gemm, size_t i,
                                       accel_dtype_t dtype, size_t n,
                                       const float* a, const float* b,
                                       char* why, size_t why_size);

// bench_run_fn_t: `iters` products on a bench_cpu_op_t.
bool bench_cpu_op_run(void* op, uint64_t iters);
void bench_cpu_op_close(bench_cpu_op_t* op);

// ---------------------------------------------------------------------------
// Baseline thread pool (pool.c) and loops (loops.c)
// ---------------------------------------------------------------------------

typedef struct bench_pool bench_pool_t;

// Work for one thread of a pool run: part `index` of `count`.
typedef void (*bench_pool_fn_t)(void* arg, uint32_t index, uint32_t count);

// Starts `width` - 1 threads (the caller is the last one); NULL with
// bench_fail() on failure. Width 1 starts none.
bench_pool_t* bench_pool_create(uint32_t width);

// Runs fn(arg, i, width) for every i < width, i = 0 on the calling thread,
// and returns when all have returned.
void bench_pool_run(bench_pool_t* pool, bench_pool_fn_t fn, void* arg);

uint32_t bench_pool_width(const bench_pool_t* pool);

// Stops the threads and frees `pool`; NULL is ignored.
void bench_pool_destroy(bench_pool_t* pool);

// The elementwise baselines: plain loops the compiler vectorises (-O3,
// default target), one call per contiguous range of distinct arrays.
void bench_loop_add(float* restrict z, const float* restrict x,
                    const float* restrict y, size_t n);
void bench_loop_mul(float* restrict z, const float* restrict x,
                    const float* restrict y, size_t n);
void bench_loop_axpy(float* restrict y, const float* restrict x, float alpha,
                     size_t n);
void bench_loop_scale(float* x, float alpha, size_t n);
void bench_loop_fill(float* x, float value, size_t n);
// f32 to IEEE binary16 with round to nearest even, in integer operations.
void bench_loop_cast_f16(uint16_t* restrict dst, const float* restrict src,
                         size_t n);
// Sum in f32 with 16 independent lanes (so it vectorises), lanes added in
// f64 at the end.
double bench_loop_sum(const float* x, size_t n);
// x[i] = element i of the Philox stream (`seed`, block `offset`), uniform
// in [0, 1) or standard normal, as <accel/philox.h> defines it: one block
// of four values per step.
void bench_loop_rng(float* x, size_t n, uint64_t seed, uint64_t offset,
                    bool normal);

// ---------------------------------------------------------------------------
// Vendor baselines per backend (baseline.c)
// ---------------------------------------------------------------------------

// Direction of a copy.
typedef enum bench_copy_kind {
  BENCH_COPY_H2D = 0,
  BENCH_COPY_D2H,
  BENCH_COPY_D2D,
} bench_copy_kind_t;

// Where accel's two device buffers of a copy case start within a 4 KiB
// page, when their addresses are known (host-accessible devices).
// memcpy's speed depends on the distance between source and destination
// modulo 4096 ("4K aliasing": a 4 KiB memcpy from page offset 16 takes
// 64 ns to page offset 128 and 54 ns to page offset 16 on an AVX2 EPYC),
// so a baseline on host memory places its buffers at the same offsets:
// the comparison then measures accel, not where two allocators happened
// to put a buffer.
typedef struct bench_copy_place {
  bool known;
  size_t src_page_offset;  // accel's `src` buffer address % 4096
  size_t dst_page_offset;  // accel's `dst` buffer address % 4096
} bench_copy_place_t;

// The vendor's own copy routine, run on memory the baseline allocates
// itself (device memory from the vendor runtime, not from accel).
typedef struct bench_copy_baseline {
  const char* name;  // "memcpy", "cuMemcpy*Async"
  // Allocates the device-side memory for copies of `size` bytes (and the
  // host side, for a baseline that uses its own host memory), at `place`
  // where the baseline's memory is host memory.
  bool (*open)(bench_ctx_t* ctx, size_t size, const bench_copy_place_t* place,
               void** out_state);
  // Copies `size` bytes `iters` times in direction `kind` between host
  // memory (`pinned` or pageable: the suite's `host` buffer, or the
  // baseline's own of that kind) and the baseline's device memory.
  // `async`: enqueue on a stream and wait once at the end.
  bool (*run)(void* state, bench_copy_kind_t kind, bool pinned, void* host,
              size_t size, uint64_t iters, bool async);
  void (*close)(void* state);
} bench_copy_baseline_t;

// What a backend's accel results are compared with. An entry left NULL has
// its reason in the matching `*_missing` string, which the results show:
// a baseline that does not exist is never replaced by a stand-in.
typedef struct bench_baselines {
  const char* backend;
  const bench_copy_baseline_t* copy;
  const char* copy_missing;
  // GEMM: on the CPU cblas_sgemm of the BLAS the plugin loaded (found and
  // called in suite_gemm.c, since it depends on the plugin's choice).
  const char* gemm;
  const char* gemm_missing;
  // Elementwise ops: plain C loops (loops.c), host memory only.
  const char* elementwise;
  const char* elementwise_missing;
  // Launch: the kernel function called directly through dlsym on the CPU
  // (suite_launch.c); raw cuLaunchKernel on CUDA (cuda_raw.c), raw
  // clEnqueueNDRangeKernel on OpenCL (opencl_raw.c).
  const char* launch;
  const char* launch_missing;
  // Alloc: a second baseline beside the plugin's own mem_alloc+mem_free,
  // the vendor allocator called raw (cuMemAlloc+cuMemFree on CUDA); NULL
  // where the plugin's entries are the vendor call (the CPU).
  const char* alloc;
} bench_baselines_t;

// The baselines for `backend` ("cpu"); never NULL: an unknown backend gets
// an entry whose every baseline is missing, with the reason.
const bench_baselines_t* bench_baselines_find(const char* backend);

// ---------------------------------------------------------------------------
// Suites (suites.c, suite_*.c)
// ---------------------------------------------------------------------------

typedef struct bench_suite {
  const char* name;
  const char* summary;  // one line for --list
  // Case names, without sizes, for --list.
  const char* const* cases;
  // What sizes the cases take per mode, for --list ("4 KiB .. 64 MiB").
  const char* sizes_quick;
  const char* sizes_full;
  // Why the suite cannot run yet ("pending issue 3"), or NULL.
  const char* pending;
  // Runs the wanted cases, appending results. A failed case is recorded in
  // its result; the suite goes on with the others.
  void (*run)(bench_ctx_t* ctx);
} bench_suite_t;

// First argument that turns accel-bench into the startup suite's spawn
// helper: `accel-bench --internal-spawn-helper PROGRAM [ARGS...]` runs
// PROGRAM and prints "<exit code or -signal> <ns> <maxrss KiB>".
#define BENCH_STARTUP_HELPER_FLAG "--internal-spawn-helper"
int bench_startup_helper(int argc, char** argv);

extern const bench_suite_t bench_suite_dispatch;
extern const bench_suite_t bench_suite_alloc;
extern const bench_suite_t bench_suite_copy;
extern const bench_suite_t bench_suite_startup;
extern const bench_suite_t bench_suite_gemm;
extern const bench_suite_t bench_suite_elementwise;
extern const bench_suite_t bench_suite_launch;
extern const bench_suite_t bench_suite_graph;

// Every suite in run order; NULL-terminated.
extern const bench_suite_t* const bench_suites[];

// ---------------------------------------------------------------------------
// Output (render_*.c)
// ---------------------------------------------------------------------------

// Facts about the run, gathered once by main.c.
typedef struct bench_run_info {
  const char* date;  // ISO 8601, UTC
  const char* cpu_model;
  uint32_t cpu_cores;
  const char* kernel;
  const char* mode;  // "quick", "full", "smoke"
  int argc;
  char** argv;
  // The waiting policies accel-bench set for the libraries it compares
  // ("OMP_WAIT_POLICY=PASSIVE OPENBLAS_THREAD_TIMEOUT=4"), and those the
  // user had set already; see bench_quiet_spinners() in main.c.
  const char* spin_env;
} bench_run_info_t;

void bench_render_text(const bench_ctx_t* ctx, const bench_run_info_t* run,
                       FILE* out);
void bench_render_json(const bench_ctx_t* ctx, const bench_run_info_t* run,
                       FILE* out);
// Returns false (with errno set by stdio) if the file could not be written.
bool bench_render_svg(const bench_ctx_t* ctx, const bench_run_info_t* run,
                      const char* path);

#endif  // ACCEL_TOOLS_ACCEL_BENCH_BENCH_H_
