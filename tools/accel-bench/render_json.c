// SPDX-License-Identifier: MIT
//
// --json: one document with the machine, the device, the command and every
// result (schema in docs/performance.md). Strings go through accel-info's
// escaper (json.c), so names from the device or the command line cannot
// break the document; non-finite numbers become null.
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "bench.h"
#include "json.h"

// A pretty-printing writer in the manner of accel-info's json.c, with
// doubles; it tracks commas so the callers below cannot get them wrong.
typedef struct bench_json {
  FILE* out;
  int depth;
  bool first[16];  // nothing written yet at this depth
  bool after_key;
} bench_json_t;

static void bench_json_item(bench_json_t* j) {
  if (j->after_key) {
    j->after_key = false;
    return;
  }
  if (j->depth == 0) return;
  fputs(j->first[j->depth] ? "\n" : ",\n", j->out);
  j->first[j->depth] = false;
  for (int i = 0; i < j->depth; ++i) fputs("  ", j->out);
}

static void bench_json_open(bench_json_t* j, char c) {
  bench_json_item(j);
  fputc(c, j->out);
  if (j->depth + 1 < (int)(sizeof(j->first) / sizeof(j->first[0]))) {
    j->first[++j->depth] = true;
  }
}

static void bench_json_close(bench_json_t* j, char c) {
  bool empty = j->first[j->depth];
  j->depth--;
  if (!empty) {
    fputc('\n', j->out);
    for (int i = 0; i < j->depth; ++i) fputs("  ", j->out);
  }
  fputc(c, j->out);
  if (j->depth == 0) fputc('\n', j->out);
}

static void bench_json_key(bench_json_t* j, const char* key) {
  bench_json_item(j);
  json_write_escaped(j->out, key);
  fputs(": ", j->out);
  j->after_key = true;
}

static void bench_json_str(bench_json_t* j, const char* key, const char* s) {
  if (key != NULL) bench_json_key(j, key);
  bench_json_item(j);
  if (s == NULL) {
    fputs("null", j->out);
  } else {
    json_write_escaped(j->out, s);
  }
}

static void bench_json_num(bench_json_t* j, const char* key, double v) {
  if (key != NULL) bench_json_key(j, key);
  bench_json_item(j);
  if (isfinite(v)) {
    fprintf(j->out, "%.6g", v);
  } else {
    fputs("null", j->out);
  }
}

static void bench_json_uint(bench_json_t* j, const char* key, uint64_t v) {
  bench_json_key(j, key);
  bench_json_item(j);
  fprintf(j->out, "%" PRIu64, v);
}

// `literal` is true, false or null. A NULL `key` writes a bare value (an
// array element, or the value of a key already written).
static void bench_json_lit(bench_json_t* j, const char* key,
                           const char* literal) {
  if (key != NULL) bench_json_key(j, key);
  bench_json_item(j);
  fputs(literal, j->out);
}

static void bench_json_timing(bench_json_t* j, const bench_timing_t* t) {
  bench_json_num(j, "median", t->median);
  bench_json_num(j, "min", t->min);
  bench_json_num(j, "max", t->max);
  bench_json_uint(j, "trials", t->trials);
  bench_json_uint(j, "iterations_per_trial", t->iters);
}

static void bench_json_device(bench_json_t* j, const accel_device_info_t* d) {
  static const char* const types[] = {"other", "cpu", "gpu"};
  bench_json_key(j, "device");
  bench_json_open(j, '{');
  bench_json_str(j, "uri", d->uri);
  bench_json_str(j, "backend", d->backend);
  bench_json_str(j, "type", (unsigned)d->type < 3 ? types[d->type] : "other");
  bench_json_str(j, "name", d->name);
  bench_json_str(j, "vendor", d->vendor);
  bench_json_str(j, "arch", d->arch);
  bench_json_uint(j, "compute_units", d->compute_units);
  bench_json_uint(j, "total_memory_bytes", d->total_memory);
  bench_json_str(j, "features", d->features);
  bench_json_str(j, "driver_version", d->driver_version);
  bench_json_close(j, '}');
}

static void bench_json_result(bench_json_t* j, const bench_result_t* r) {
  static const char* const outcomes[] = {"ok", "skipped", "failed"};
  static const char* const budgets[] = {NULL, "max_diff", "min_ratio",
                                        "max_abs"};
  bench_json_open(j, '{');
  bench_json_str(j, "suite", r->suite);
  bench_json_str(j, "case", r->name);
  if (r->size != 0) {
    bench_json_uint(j, "size", r->size);
  } else {
    bench_json_lit(j, "size", "null");
  }
  bench_json_str(j, "unit", r->unit);
  bench_json_lit(j, "higher_is_better", r->higher_is_better ? "true" : "false");
  bench_json_str(j, "outcome", outcomes[r->outcome]);
  bench_json_str(j, "note", r->note);
  bench_json_key(j, "accel");
  bench_json_open(j, '{');
  bench_json_timing(j, &r->accel);
  bench_json_close(j, '}');
  bench_json_key(j, "baseline");
  if (r->has_baseline) {
    bench_json_open(j, '{');
    bench_json_str(j, "name", r->baseline_name);
    bench_json_timing(j, &r->baseline);
    bench_json_close(j, '}');
  } else {
    bench_json_lit(j, NULL, "null");
  }
  bench_json_num(j, "ratio", bench_result_ratio(r));
  bench_json_key(j, "budget");
  if (r->budget != BENCH_BUDGET_NONE) {
    bench_json_open(j, '{');
    bench_json_str(j, "kind", budgets[r->budget]);
    bench_json_num(j, "value", r->budget_value);
    bench_json_lit(j, "informational", r->informational ? "true" : "false");
    bench_json_close(j, '}');
  } else {
    bench_json_lit(j, NULL, "null");
  }
  int within = bench_result_within(r);
  bench_json_lit(j, "within_budget",
                 within < 0 ? "null"
                 : within   ? "true"
                            : "false");
  bench_json_close(j, '}');
}

void bench_render_json(const bench_ctx_t* ctx, const bench_run_info_t* run,
                       FILE* out) {
  bench_json_t j;
  memset(&j, 0, sizeof(j));
  j.out = out;
  bench_json_open(&j, '{');
  bench_json_uint(&j, "schema_version", BENCH_SCHEMA_VERSION);
  bench_json_str(&j, "tool", "accel-bench");
  bench_json_str(&j, "accel_version", accel_version_string());
  bench_json_str(&j, "date", run->date);
  bench_json_str(&j, "mode", run->mode);
  bench_json_key(&j, "command_line");
  bench_json_open(&j, '[');
  for (int i = 0; i < run->argc; ++i) bench_json_str(&j, NULL, run->argv[i]);
  bench_json_close(&j, ']');
  bench_json_key(&j, "machine");
  bench_json_open(&j, '{');
  bench_json_str(&j, "cpu_model", run->cpu_model);
  bench_json_uint(&j, "cpu_cores", run->cpu_cores);
  bench_json_str(&j, "kernel", run->kernel);
  bench_json_str(&j, "spin_env", run->spin_env);
  bench_json_close(&j, '}');
  bench_json_device(&j, &ctx->info);
  bench_json_key(&j, "results");
  bench_json_open(&j, '[');
  for (size_t i = 0; i < ctx->result_count; ++i) {
    bench_json_result(&j, &ctx->results[i]);
  }
  bench_json_close(&j, ']');
  bench_json_key(&j, "pending");
  bench_json_open(&j, '[');
  for (size_t i = 0; bench_suites[i] != NULL; ++i) {
    if (bench_suites[i]->pending == NULL) continue;
    bench_json_open(&j, '{');
    bench_json_str(&j, "suite", bench_suites[i]->name);
    bench_json_str(&j, "reason", bench_suites[i]->pending);
    bench_json_close(&j, '}');
  }
  bench_json_close(&j, ']');
  bench_json_uint(&j, "failures", ctx->failures);
  bench_json_close(&j, '}');
}
