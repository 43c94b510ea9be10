// SPDX-License-Identifier: MIT
//
// The timing harness (see bench.h). Medians of interleaved trials, not
// means of one long loop: on a shared two-core machine another process
// can take the CPU for milliseconds at a time, and a median of short
// trials ignores such outliers while alternating A and B spreads any slow
// drift evenly over both sides of a ratio.
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

// Maximum number of trials per variant any plan may ask for.
#define BENCH_MAX_TRIALS 1024u

// Longest a single calibration step may grow the iteration count; keeps
// one mis-measured fast run from asking for an hour of work.
#define BENCH_MAX_GROWTH 100.0

static char bench_message[512];

uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

bool bench_fail(const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(bench_message, sizeof(bench_message), format, args);
  va_end(args);
  return false;
}

const char* bench_failure(void) { return bench_message; }

static int bench_compare_double(const void* a, const void* b) {
  double x = *(const double*)a;
  double y = *(const double*)b;
  return (x > y) - (x < y);
}

// The median of `count` (> 0) sorted values.
static double bench_median_sorted(const double* v, uint32_t count) {
  return count % 2 == 1 ? v[count / 2]
                        : (v[count / 2 - 1] + v[count / 2]) / 2.0;
}

void bench_timing_from_samples(double* samples, uint32_t count,
                               bench_timing_t* out) {
  memset(out, 0, sizeof(*out));
  if (count == 0) {
    out->median = out->min = out->max = NAN;
    return;
  }
  qsort(samples, count, sizeof(*samples), bench_compare_double);
  out->min = samples[0];
  out->max = samples[count - 1];
  out->median = bench_median_sorted(samples, count);
  out->trials = count;
}

// Runs `v` for `iters` operations; returns the elapsed nanoseconds or a
// negative value on failure.
static double bench_time(bench_variant_t v, uint64_t iters) {
  uint64_t start = bench_now_ns();
  if (!v.run(v.user, iters)) return -1.0;
  uint64_t elapsed = bench_now_ns() - start;
  return elapsed > 0 ? (double)elapsed : 1.0;
}

// Finds an iteration count for which one run of `v` lasts about
// `target_ns`; `*out_ns` is the duration of one such run. The runs here
// double as warm-up (first touch of memory, caches, lazy binding).
static bool bench_calibrate(bench_variant_t v, double target_ns,
                            uint64_t* out_iters, double* out_ns) {
  uint64_t iters = 1;
  double ns = bench_time(v, iters);  // warm-up, not trusted
  if (ns < 0) return false;
  ns = bench_time(v, iters);
  if (ns < 0) return false;
  while (ns < target_ns && iters < (UINT64_C(1) << 40)) {
    double growth = target_ns / ns * 1.1;
    if (growth > BENCH_MAX_GROWTH) growth = BENCH_MAX_GROWTH;
    if (growth < 2.0 && ns < target_ns * 0.5) growth = 2.0;
    uint64_t next = (uint64_t)ceil((double)iters * growth);
    if (next <= iters) next = iters + 1;
    iters = next;
    ns = bench_time(v, iters);
    if (ns < 0) return false;
  }
  *out_iters = iters;
  *out_ns = ns;
  return true;
}

bool bench_measure_n(const bench_plan_t* plan, size_t count,
                     const bench_variant_t* variants, bench_timing_t* out) {
  if (count > BENCH_MAX_VARIANTS) count = BENCH_MAX_VARIANTS;
  memset(out, 0, count * sizeof(*out));
  uint64_t iters[BENCH_MAX_VARIANTS] = {0};
  double slowest = 0;
  for (size_t v = 0; v < count; ++v) {
    if (variants[v].run == NULL) continue;
    double ns = 0;
    if (!bench_calibrate(variants[v], plan->trial_ns, &iters[v], &ns)) {
      return false;
    }
    if (ns > slowest) slowest = ns;
  }

  // As many trials as fit in the case's time, within [min_trials, trials].
  uint32_t trials = plan->trials;
  if (slowest > 0 && plan->case_ns / slowest < (double)trials) {
    trials = (uint32_t)(plan->case_ns / slowest);
  }
  if (trials < plan->min_trials) trials = plan->min_trials;
  if (trials < 1) trials = 1;
  if (trials > BENCH_MAX_TRIALS) trials = BENCH_MAX_TRIALS;

  double* samples = malloc(count * trials * sizeof(*samples));
  if (samples == NULL) return bench_fail("out of memory for %u trials", trials);
  bool ok = true;
  for (uint32_t t = 0; t < trials && ok; ++t) {
    // A B, B A, A B, ... for two; A B C, B C A, C A B, ... for three: each
    // side runs first equally often.
    for (size_t step = 0; step < count && ok; ++step) {
      size_t v = (t + step) % count;
      if (variants[v].run == NULL) continue;
      double ns = bench_time(variants[v], iters[v]);
      if (ns < 0) {
        ok = false;
      } else {
        samples[v * trials + t] = ns / (double)iters[v];
      }
    }
  }
  for (size_t v = 0; ok && v < count; ++v) {
    if (variants[v].run == NULL) continue;
    bench_timing_from_samples(samples + v * trials, trials, &out[v]);
    out[v].iters = iters[v];
  }
  free(samples);
  return ok;
}

bool bench_measure(const bench_plan_t* plan, bench_variant_t a,
                   bench_variant_t b, bench_timing_t* out_a,
                   bench_timing_t* out_b) {
  bench_variant_t variants[2] = {a, b};
  bench_timing_t out[2];
  if (out_b == NULL) variants[1].run = NULL;
  bool ok = bench_measure_n(plan, 2, variants, out);
  *out_a = out[0];
  if (out_b != NULL) *out_b = out[1];
  return ok;
}

// Most pairs bench_measure_pairs() takes.
#define BENCH_MAX_PAIRS 20000u

// The median of the `n` differences in `d` (sorted here) and its 95%
// interval: with k = floor((n - 1.96 sqrt(n)) / 2), the k-th smallest and
// k-th largest differences (the sign test's interval, normal
// approximation; for n < 6, the smallest and largest).
static void bench_paired_from(double* d, uint32_t n, bench_paired_t* out) {
  qsort(d, n, sizeof(*d), bench_compare_double);
  out->pairs = n;
  out->median = bench_median_sorted(d, n);
  double k = floor(((double)n - 1.96 * sqrt((double)n)) / 2.0);
  uint32_t i = k > 0 ? (uint32_t)k : 0;
  out->lo = d[i];
  out->hi = d[n - 1 - i];
}

bool bench_measure_pairs(const bench_plan_t* plan, bench_variant_t a,
                         bench_variant_t b, bench_timing_t* out_a,
                         bench_timing_t* out_b, bench_paired_t* out_diff) {
  memset(out_a, 0, sizeof(*out_a));
  if (out_b != NULL) memset(out_b, 0, sizeof(*out_b));
  if (out_diff != NULL) memset(out_diff, 0, sizeof(*out_diff));
  if (out_b == NULL) b.run = NULL;
  bench_variant_t v[2] = {a, b};
  // Warm-up, and the cost of one operation to size the run.
  double one = 0;
  for (int i = 0; i < 2; i++) {
    if (v[i].run == NULL) continue;
    for (int w = 0; w < 3; w++) {
      double ns = bench_time(v[i], 1);
      if (ns < 0) return false;
      if (ns > one) one = ns;
    }
  }
  // As many pairs as the trials' time holds, at least as many as trials,
  // within the case's time (at least min_trials).
  double budget = plan->trial_ns * (double)plan->trials;
  if (budget > plan->case_ns) budget = plan->case_ns;
  double fit = one > 0 ? budget / one : BENCH_MAX_PAIRS;
  if (fit < plan->trials) {
    fit = one > 0 ? fmin((double)plan->trials, plan->case_ns / one)
                  : plan->trials;
  }
  uint32_t pairs = (uint32_t)fmin(fit, BENCH_MAX_PAIRS);
  if (pairs < plan->min_trials) pairs = plan->min_trials;
  if (pairs < 1) pairs = 1;
  double* samples = malloc(3 * (size_t)pairs * sizeof(*samples));
  if (samples == NULL) return bench_fail("out of memory for %u pairs", pairs);
  bool ok = true;
  for (uint32_t t = 0; t < pairs && ok; t++) {
    for (uint32_t step = 0; step < 2 && ok; step++) {
      uint32_t i = (t + step) % 2;
      if (v[i].run == NULL) continue;
      double ns = bench_time(v[i], 1);
      if (ns < 0) ok = false;
      samples[i * pairs + t] = ns;
    }
  }
  if (ok && b.run != NULL && out_diff != NULL) {
    double* diff = samples + 2 * (size_t)pairs;
    for (uint32_t t = 0; t < pairs; t++) {
      diff[t] = samples[t] - samples[pairs + t];
    }
    bench_paired_from(diff, pairs, out_diff);
  }
  if (ok) {
    bench_timing_from_samples(samples, pairs, out_a);
    out_a->iters = 1;
    if (b.run != NULL) {
      bench_timing_from_samples(samples + pairs, pairs, out_b);
      out_b->iters = 1;
    }
  }
  free(samples);
  return ok;
}

bool bench_measure_single(const bench_plan_t* plan, bench_variant_t a,
                          bench_variant_t b, bench_timing_t* out_a,
                          bench_timing_t* out_b, bench_paired_t* out_diff) {
  if (out_diff != NULL) memset(out_diff, 0, sizeof(*out_diff));
  bench_variant_t v[2] = {a, out_b != NULL ? b : (bench_variant_t){0}};
  double slowest = 0;
  for (int i = 0; i < 2; i++) {
    if (v[i].run == NULL) continue;
    for (int w = 0; w < 2; w++) {  // the first is a warm-up
      double ns = bench_time(v[i], 1);
      if (ns < 0) return false;
      if (w == 1 && ns > slowest) slowest = ns;
    }
  }
  return slowest >= BENCH_PAIRS_MIN_NS
             ? bench_measure_pairs(plan, a, b, out_a, out_b, out_diff)
             : bench_measure(plan, a, b, out_a, out_b);
}
