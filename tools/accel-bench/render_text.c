// SPDX-License-Identifier: MIT
//
// The default output: one table per suite, a row per result with the
// accel and baseline medians and their spread over trials, the comparison
// the budget is about (a difference for times, a percentage for
// bandwidths) and the verdict, which is information, never an error.
#include <math.h>
#include <string.h>

#include "bench.h"

// Prints `v` with about three significant digits.
static const char* bench_text_num(double v, char* buf, size_t size) {
  double a = fabs(v);
  if (isnan(v)) {
    snprintf(buf, size, "-");
  } else if (a >= 100.0) {
    snprintf(buf, size, "%.0f", v);
  } else if (a >= 10.0) {
    snprintf(buf, size, "%.1f", v);
  } else if (a < 0.1 && a > 0) {
    snprintf(buf, size, "%.3f", v);  // a few ns, in us
  } else {
    snprintf(buf, size, "%.2f", v);
  }
  return buf;
}

// "12.3 [11.9..13.0]": median and the range over trials.
static const char* bench_text_timing(const bench_timing_t* t, char* buf,
                                     size_t size) {
  char m[32], lo[32], hi[32];
  if (isnan(t->median)) {
    snprintf(buf, size, "-");
  } else {
    snprintf(buf, size, "%s [%s..%s]", bench_text_num(t->median, m, 32),
             bench_text_num(t->min, lo, 32), bench_text_num(t->max, hi, 32));
  }
  return buf;
}

// The comparison column: accel/baseline in percent where higher is better,
// accel - baseline otherwise.
static const char* bench_text_compare(const bench_result_t* r, char* buf,
                                      size_t size) {
  double ratio = bench_result_ratio(r);
  char n[32];
  if (isnan(ratio)) {
    snprintf(buf, size, "-");
  } else if (r->higher_is_better) {
    snprintf(buf, size, "%.1f%%", 100.0 * ratio);
  } else {
    double diff = r->accel.median - r->baseline.median;
    snprintf(buf, size, "%s%s %s", diff >= 0 ? "+" : "",
             bench_text_num(diff, n, sizeof(n)), r->unit);
  }
  return buf;
}

static const char* bench_text_budget(const bench_result_t* r, char* buf,
                                     size_t size) {
  char n[32];
  switch (r->budget) {
    case BENCH_BUDGET_MAX_DIFF:
      snprintf(buf, size, "<= +%s %s", bench_text_num(r->budget_value, n, 32),
               r->unit);
      break;
    case BENCH_BUDGET_MIN_RATIO:
      snprintf(buf, size, ">= %.0f%%", 100.0 * r->budget_value);
      break;
    case BENCH_BUDGET_MAX_ABS:
      snprintf(buf, size, "<= %s %s", bench_text_num(r->budget_value, n, 32),
               r->unit);
      break;
    case BENCH_BUDGET_NONE:
      snprintf(buf, size, "-");
      break;
  }
  return buf;
}

static const char* bench_text_verdict(const bench_result_t* r) {
  if (r->outcome == BENCH_OUTCOME_FAILED) return "FAILED";
  if (r->outcome == BENCH_OUTCOME_SKIPPED) return "skipped";
  int within = bench_result_within(r);
  if (within < 0) return "-";
  if (r->informational) return within ? "ok (info)" : "over (info)";
  return within ? "ok" : "OVER BUDGET";
}

static void bench_text_suite(const bench_ctx_t* ctx, const char* suite,
                             FILE* out) {
  const bench_suite_t* s = NULL;
  for (size_t i = 0; bench_suites[i] != NULL; ++i) {
    if (strcmp(bench_suites[i]->name, suite) == 0) s = bench_suites[i];
  }
  fprintf(out, "\n%s: %s\n", suite, s != NULL ? s->summary : "");
  fprintf(out, "  %-20s %8s %6s  %-24s %-24s %-12s %-12s %s\n", "CASE", "SIZE",
          "UNIT", "ACCEL median [min..max]", "BASELINE", "VS BASE", "BUDGET",
          "VERDICT");
  const char* last_baseline = NULL;
  for (size_t i = 0; i < ctx->result_count; ++i) {
    const bench_result_t* r = &ctx->results[i];
    if (r->suite != suite) continue;
    char size[32] = "-", a[64], b[64], cmp[32], budget[32];
    if (r->size != 0 && strcmp(r->suite, "gemm") == 0) {
      snprintf(size, sizeof(size), "%llu", (unsigned long long)r->size);
    } else if (r->size != 0) {
      bench_format_size(r->size, size, sizeof(size));
    }
    fprintf(
        out, "  %-20s %8s %6s  %-24s %-24s %-12s %-12s %s\n", r->name, size,
        r->unit, bench_text_timing(&r->accel, a, sizeof(a)),
        r->has_baseline ? bench_text_timing(&r->baseline, b, sizeof(b)) : "n/a",
        bench_text_compare(r, cmp, sizeof(cmp)),
        bench_text_budget(r, budget, sizeof(budget)), bench_text_verdict(r));
    if (r->note[0] != '\0') fprintf(out, "  %20s note: %s\n", "", r->note);
    if (r->baseline_name[0] != '\0') last_baseline = r->baseline_name;
  }
  if (last_baseline != NULL) {
    fprintf(out, "  (baseline: %s)\n", last_baseline);
  }
}

void bench_render_text(const bench_ctx_t* ctx, const bench_run_info_t* run,
                       FILE* out) {
  fprintf(out, "accel-bench %s, %s suite, %s\n", accel_version_string(),
          run->mode, run->date);
  fprintf(out, "device %s: %s; CPU %s, %u cores; Linux %s\n", ctx->info.uri,
          ctx->info.name, run->cpu_model, run->cpu_cores, run->kernel);
  fputs(
      "Medians of interleaved A/B trials, [min..max] over trials. Budgets "
      "are\nreported for information; they never change the exit "
      "status.\n",
      out);
  fprintf(out, "Idle library threads: %s\n", run->spin_env);
  // Suites in run order, each once, in the order their results appear.
  for (size_t s = 0; bench_suites[s] != NULL; ++s) {
    const char* name = bench_suites[s]->name;
    for (size_t i = 0; i < ctx->result_count; ++i) {
      if (strcmp(ctx->results[i].suite, name) == 0) {
        bench_text_suite(ctx, ctx->results[i].suite, out);
        break;
      }
    }
  }
  bool header = false;
  for (size_t s = 0; bench_suites[s] != NULL; ++s) {
    if (bench_suites[s]->pending == NULL) continue;
    if (!header) fputs("\nNot measured yet:\n", out);
    header = true;
    fprintf(out, "  %-12s %s\n", bench_suites[s]->name,
            bench_suites[s]->pending);
  }
  if (ctx->result_count == 0) fputs("\nNo case matched --filter.\n", out);
  if (ctx->failures > 0) {
    fprintf(out, "\n%zu benchmark(s) FAILED to run; see the notes above.\n",
            ctx->failures);
  }
}
