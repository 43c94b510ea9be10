// SPDX-License-Identifier: MIT
//
// --json: one document with the machine, the device, the command and every
// result (schema in docs/performance.md), through the tools' JSON writer
// (tools/common/json.c): strings are escaped, so names from the device or
// the command line cannot break the document; non-finite numbers become
// null.

#include "bench.h"
#include "json.h"

// A key and its value.
static void bench_json_str(json_writer_t* j, const char* key, const char* s) {
  json_key(j, key);
  json_string(j, s);
}

static void bench_json_num(json_writer_t* j, const char* key, double v) {
  json_key(j, key);
  json_double(j, v);
}

static void bench_json_uint(json_writer_t* j, const char* key, uint64_t v) {
  json_key(j, key);
  json_uint(j, v);
}

static void bench_json_bool(json_writer_t* j, const char* key, bool v) {
  json_key(j, key);
  json_bool(j, v);
}

static void bench_json_timing(json_writer_t* j, const bench_timing_t* t) {
  bench_json_num(j, "median", t->median);
  bench_json_num(j, "min", t->min);
  bench_json_num(j, "max", t->max);
  bench_json_uint(j, "trials", t->trials);
  bench_json_uint(j, "iterations_per_trial", t->iters);
}

static void bench_json_device(json_writer_t* j, const accel_device_info_t* d) {
  static const char* const types[] = {"other", "cpu", "gpu"};
  json_key(j, "device");
  json_begin_object(j);
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
  json_end_object(j);
}

static void bench_json_result(json_writer_t* j, const bench_result_t* r) {
  static const char* const outcomes[] = {"ok", "skipped", "failed"};
  static const char* const budgets[] = {NULL, "max_diff", "min_ratio",
                                        "max_abs"};
  json_begin_object(j);
  bench_json_str(j, "suite", r->suite);
  bench_json_str(j, "case", r->name);
  json_key(j, "size");
  if (r->size != 0) {
    json_uint(j, r->size);
  } else {
    json_null(j);
  }
  bench_json_str(j, "unit", r->unit);
  bench_json_bool(j, "higher_is_better", r->higher_is_better);
  bench_json_str(j, "outcome", outcomes[r->outcome]);
  bench_json_str(j, "note", r->note);
  json_key(j, "accel");
  json_begin_object(j);
  bench_json_timing(j, &r->accel);
  json_end_object(j);
  json_key(j, "baseline");
  if (r->has_baseline) {
    json_begin_object(j);
    bench_json_str(j, "name", r->baseline_name);
    bench_json_timing(j, &r->baseline);
    json_end_object(j);
  } else {
    json_null(j);
  }
  bench_json_num(j, "ratio", bench_result_ratio(r));
  json_key(j, "budget");
  if (r->budget != BENCH_BUDGET_NONE) {
    json_begin_object(j);
    bench_json_str(j, "kind", budgets[r->budget]);
    bench_json_num(j, "value", r->budget_value);
    bench_json_bool(j, "informational", r->informational);
    json_end_object(j);
  } else {
    json_null(j);
  }
  int within = bench_result_within(r);
  json_key(j, "within_budget");
  if (within < 0) {
    json_null(j);
  } else {
    json_bool(j, within != 0);
  }
  json_end_object(j);
}

void bench_render_json(const bench_ctx_t* ctx, const bench_run_info_t* run,
                       FILE* out) {
  json_writer_t j;
  json_writer_init(&j, out);
  json_begin_object(&j);
  bench_json_uint(&j, "schema_version", BENCH_SCHEMA_VERSION);
  bench_json_str(&j, "tool", "accel-bench");
  bench_json_str(&j, "accel_version", accel_version_string());
  bench_json_str(&j, "date", run->date);
  bench_json_str(&j, "mode", run->mode);
  json_key(&j, "command_line");
  json_begin_array(&j);
  for (int i = 0; i < run->argc; ++i) json_string(&j, run->argv[i]);
  json_end_array(&j);
  json_key(&j, "machine");
  json_begin_object(&j);
  bench_json_str(&j, "cpu_model", run->cpu_model);
  bench_json_uint(&j, "cpu_cores", run->cpu_cores);
  bench_json_str(&j, "kernel", run->kernel);
  bench_json_str(&j, "spin_env", run->spin_env);
  json_end_object(&j);
  bench_json_device(&j, &ctx->info);
  json_key(&j, "results");
  json_begin_array(&j);
  for (size_t i = 0; i < ctx->result_count; ++i) {
    bench_json_result(&j, &ctx->results[i]);
  }
  json_end_array(&j);
  json_key(&j, "pending");
  json_begin_array(&j);
  for (size_t i = 0; bench_suites[i] != NULL; ++i) {
    if (bench_suites[i]->pending == NULL) continue;
    json_begin_object(&j);
    bench_json_str(&j, "suite", bench_suites[i]->name);
    bench_json_str(&j, "reason", bench_suites[i]->pending);
    json_end_object(&j);
  }
  json_end_array(&j);
  bench_json_uint(&j, "failures", ctx->failures);
  json_end_object(&j);
}
