// SPDX-License-Identifier: MIT
//
// Timing the GEMM engines (engine.c decides which ones to time, and what
// to do with the winner). A decision is made per dtype and per size
// class, because one shape does not decide all sizes: on a 16-core AMX
// Xeon OpenBLAS won f32 at 512^3 while oneDNN was faster at 1024^3, so
// the one engine timed at 512^3 ran f32 GEMM at 1024^3 at 60-64% of the
// best engine. Each class is timed on its own representative product,
// lazily, at the first GEMM that falls in it.
//
// Timing: each engine runs warm-up products for at least
// ACCEL_CPU_TUNE_WARM_NS (OpenBLAS's threads spin for a while after a
// call, which would slow the next engine's first runs), then the best of
// ACCEL_CPU_TUNE_RUNS runs counts; a run repeats the product enough times
// to last about ACCEL_CPU_TUNE_RUN_NS, so that the small class's products
// (tens of microseconds) are not timed one clock read at a time.
//
// When another engine came within ACCEL_CPU_TUNE_CLOSE of the fastest,
// those close ones are timed again, in the same order, and each keeps the
// better of its two times. One engine's runs last a few tens of
// milliseconds, so a burst of other work during them could decide the
// class alone: on the 16-core AMX Xeon the timing once gave OpenBLAS 701
// and oneDNN 548 GFLOP/s for f32 at 1024^3, where the trials of the same
// run measured 800 and 1012. The order stays as engine.c sets it
// (OpenBLAS's spinning threads last); a clear winner costs no second pass.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "cpu.h"

#define ACCEL_CPU_TUNE_RUNS 3
#define ACCEL_CPU_TUNE_WARM_NS 60000000ull
#define ACCEL_CPU_TUNE_RUN_NS 2000000ull
#define ACCEL_CPU_TUNE_CLOSE 1.5

// The classes, by work w = m*n*k, with the product each one is timed on:
//   small   w < 2^24 (256^3)                      timed at 128^3
//   medium  2^24 <= w < 2^29 (1024*1024*512)      timed at 512^3
//   large   w >= 2^29                             timed at 1024^3
// Work, not one dimension, because the engines' costs follow it: call and
// threading overhead against too little work below 256^3 (the engines
// then differ in how they split or do not split a product), blocked
// kernels on a few blocks per thread in the middle, and at the top the
// throughput of the main kernel with every thread busy, where a slower
// start no longer matters. Each representative sits 2 to 3 octaves of
// work inside its class: a shape at a class edge differs from it by at
// most 2x in edge length. 512^3 is the product every version before the
// classes timed, so an old cache line (dtype "f32", no class) is a
// medium decision; 1024^3 is where the Xeon above showed the large-size
// behaviour. On 2 AVX2 cores the large timing costs about 0.3 s (three
// engines of 60 ms warm-up and three 15 ms products); 2048^3 would cost
// eight times the products. Non-cubic shapes of the same work fall in the
// same class: the engines block m, n and k alike once each exceeds a
// block (a few hundred), and below that the work still decides.
static const struct {
  const char* name;
  uint64_t m, n, k;
} accel_cpu_gemm_classes[ACCEL_CPU_GEMM_CLASSES] = {
    {"small", 128, 128, 128},
    {"medium", 512, 512, 512},
    {"large", 1024, 1024, 1024},
};

int accel_cpu_gemm_class(uint64_t m, uint64_t n, uint64_t k) {
  double w = (double)m * (double)n * (double)k;
  if (w < (double)(1ull << 24)) return ACCEL_CPU_GEMM_SMALL;
  if (w < (double)(1ull << 29)) return ACCEL_CPU_GEMM_MEDIUM;
  return ACCEL_CPU_GEMM_LARGE;
}

const char* accel_cpu_gemm_class_name(int cls) {
  return cls >= 0 && cls < (int)ACCEL_CPU_GEMM_CLASSES
             ? accel_cpu_gemm_classes[cls].name
             : "none";
}

// Seconds-per-product of the best timed run of `engine` on `g`, or a
// negative value when it failed.
static double accel_cpu_engine_time(accel_cpu_plugin_t* plugin,
                                    accel_cpu_pool_t* pool,
                                    const accel_cpu_gemm_engine_t* engine,
                                    const accel_plugin_gemm_t* g) {
  char message[ACCEL_CPU_MESSAGE_SIZE];
  uint64_t start = accel_cpu_now_ns(), warm = 0, elapsed = 0;
  do {
    if (accel_cpu_gemm_execute(plugin, pool, engine, g, message,
                               sizeof(message)) != ACCEL_OK) {
      plugin->host->log(plugin->host, ACCEL_LOG_INFO,
                        "gemm engine %s failed its timing: %s",
                        accel_cpu_engine_name(engine->id), message);
      return -1.0;
    }
    warm++;
    elapsed = accel_cpu_now_ns() - start;
  } while (elapsed < ACCEL_CPU_TUNE_WARM_NS);
  uint64_t each = elapsed / warm;
  uint64_t reps = each >= ACCEL_CPU_TUNE_RUN_NS
                      ? 1
                      : ACCEL_CPU_TUNE_RUN_NS / (each > 0 ? each : 1) + 1;
  double best = -1.0;
  for (int r = 0; r < ACCEL_CPU_TUNE_RUNS; r++) {
    uint64_t t0 = accel_cpu_now_ns();
    for (uint64_t i = 0; i < reps; i++) {
      (void)accel_cpu_gemm_execute(plugin, pool, engine, g, message,
                                   sizeof(message));
    }
    double s = (double)(accel_cpu_now_ns() - t0) * 1e-9 / (double)reps;
    if (best < 0 || s < best) best = s;
  }
  return best;
}

// Fills the operands of class `cls` in dtype index `dt` into a new
// buffer (freed by the caller) and describes the product in `g`.
static unsigned char* accel_cpu_tune_operands(int dt, int cls,
                                              accel_plugin_gemm_t* g) {
  static const uint32_t dtypes[3] = {ACCEL_DTYPE_F32, ACCEL_DTYPE_F16,
                                     ACCEL_DTYPE_BF16};
  uint64_t m = accel_cpu_gemm_classes[cls].m;
  uint64_t n = accel_cpu_gemm_classes[cls].n;
  uint64_t k = accel_cpu_gemm_classes[cls].k;
  size_t es = dt == 0 ? 4 : 2;
  size_t a = m * k * es, b = k * n * es, c = m * n * es;
  size_t bytes = (a + b + c + ACCEL_CPU_ALIGNMENT - 1) / ACCEL_CPU_ALIGNMENT *
                 ACCEL_CPU_ALIGNMENT;
  unsigned char* buf = aligned_alloc(ACCEL_CPU_ALIGNMENT, bytes);
  if (buf == NULL) return NULL;
  // A, B and C (harmlessly: beta is 0) filled in chunks of a row buffer.
  float row[1024];
  size_t total = (a + b + c) / es;
  for (size_t at = 0; at < total; at += 1024) {
    size_t count = total - at < 1024 ? total - at : 1024;
    for (size_t j = 0; j < count; j++) {
      row[j] = (float)((at + j) % 17) / 16.0f;
    }
    accel_cpu_from_f32_block(buf + at * es, row, dtypes[dt], count);
  }
  *g = (accel_plugin_gemm_t){.struct_size = sizeof(*g),
                             .a_dtype = dtypes[dt],
                             .b_dtype = dtypes[dt],
                             .c_dtype = dtypes[dt],
                             .m = m,
                             .n = n,
                             .k = k,
                             .alpha = 1.0,
                             .a = buf,
                             .lda = k,
                             .b = buf + a,
                             .ldb = n,
                             .c = buf + a + b,
                             .ldc = n};
  return buf;
}

int accel_cpu_tune_again(const double* first, int count, bool* again) {
  int best = -1, close = 0;
  for (int i = 0; i < count; i++) {
    if (first[i] > 0 && (best < 0 || first[i] < first[best])) best = i;
  }
  for (int i = 0; i < count; i++) {
    again[i] = best >= 0 && first[i] > 0 &&
               first[i] <= first[best] * ACCEL_CPU_TUNE_CLOSE;
    close += again[i];
  }
  if (close < 2) {
    for (int i = 0; i < count; i++) again[i] = false;
    return 0;
  }
  return close;
}

int accel_cpu_tune_winner(const double* first, const double* again, int count) {
  int best = -1;
  double best_s = 0;
  for (int i = 0; i < count; i++) {
    double s = first[i];
    if (again[i] > 0 && (!(s > 0) || again[i] < s)) s = again[i];
    if (s > 0 && (best < 0 || s < best_s)) best = i, best_s = s;
  }
  return best;
}

int accel_cpu_engine_tune(accel_cpu_plugin_t* plugin, accel_cpu_pool_t* pool,
                          int dt, int cls,
                          const accel_cpu_gemm_engine_t* candidates,
                          int count) {
  accel_plugin_gemm_t g;
  unsigned char* buf = accel_cpu_tune_operands(dt, cls, &g);
  if (buf == NULL) return -1;
  double flop = 2.0 * (double)g.m * (double)g.n * (double)g.k;
  double first[ACCEL_CPU_ENGINE_COUNT] = {0},
         again[ACCEL_CPU_ENGINE_COUNT] = {0};
  bool redo[ACCEL_CPU_ENGINE_COUNT] = {false};
  for (int i = 0; i < count; i++) {
    first[i] = accel_cpu_engine_time(plugin, pool, &candidates[i], &g);
  }
  (void)accel_cpu_tune_again(first, count, redo);
  for (int i = 0; i < count; i++) {
    again[i] = redo[i] ? accel_cpu_engine_time(plugin, pool, &candidates[i], &g)
                       : -1.0;
  }
  int best_i = accel_cpu_tune_winner(first, again, count);
  free(buf);
  char report[512] = "";
  for (int i = 0; i < count; i++) {
    size_t used = strlen(report);
    snprintf(report + used, sizeof(report) - used, "%s%s %.1f",
             used ? ", " : "", accel_cpu_engine_name(candidates[i].id),
             first[i] > 0 ? flop / first[i] * 1e-9 : 0.0);
    used = strlen(report);
    if (again[i] > 0) {
      snprintf(report + used, sizeof(report) - used, " then %.1f",
               flop / again[i] * 1e-9);
    }
  }
  plugin->host->log(
      plugin->host, ACCEL_LOG_INFO,
      "gemm-%s@%s timed at %llux%llux%llu (GFLOP/s): %s -> %s",
      accel_cpu_gemm_dtype_name(dt), accel_cpu_gemm_class_name(cls),
      (unsigned long long)g.m, (unsigned long long)g.n, (unsigned long long)g.k,
      report,
      best_i >= 0 ? accel_cpu_engine_name(candidates[best_i].id) : "none");
  return best_i;
}

// How many other runnable threads make the machine too busy for a timing
// to be cached: ACCEL_CPU_TUNE_BUSY, else a quarter of the usable CPUs
// (at least 1). Timings taken while other work competes for the cores
// can pick the wrong engine by far: on a 16-core Xeon, oneDNN's AMX bf16
// kernel (6x OpenBLAS on converted data when quiet) lost the timings taken
// inside accel-conform runs on PoCL (16 PoCL threads in the process), and
// the cached choice then held in every later process.
uint32_t accel_cpu_tune_busy_threshold(const accel_host_t* host) {
  const char* text = host->getenv(host, "ACCEL_CPU_TUNE_BUSY");
  uint32_t busy = 0;
  if (text != NULL && text[0] != '\0') {
    if (accel_cpu_parse_count(text, 10, UINT32_MAX, &busy)) return busy;
    host->log(host, ACCEL_LOG_WARN,
              "ACCEL_CPU_TUNE_BUSY='%s' is not a positive count; ignored",
              text);
  }
  uint32_t cpus = accel_cpu_sysinfo_usable_cpus();
  return cpus / 4 > 1 ? cpus / 4 : 1;
}
