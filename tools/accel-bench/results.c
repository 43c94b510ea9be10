// SPDX-License-Identifier: MIT
//
// The run context's helpers: the --filter test, the result list, budget
// verdicts, the progress line and size formatting (see bench.h).
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

bool bench_wanted(const bench_ctx_t* ctx, const char* suite, const char* name) {
  if (ctx->filter_count == 0) return true;
  char full[160];
  snprintf(full, sizeof(full), "%s/%s", suite, name);
  for (size_t i = 0; i < ctx->filter_count; ++i) {
    if (regexec(&ctx->filters[i], full, 0, NULL, 0) == 0) return true;
  }
  return false;
}

bench_result_t* bench_add(bench_ctx_t* ctx, const char* suite,
                          const char* format, ...) {
  if (ctx->result_count == ctx->result_capacity) {
    size_t capacity = ctx->result_capacity ? 2 * ctx->result_capacity : 64;
    bench_result_t* grown =
        realloc(ctx->results, capacity * sizeof(*ctx->results));
    if (grown == NULL) {
      fprintf(stderr, "accel-bench: out of memory for results\n");
      ctx->failures++;
      return NULL;
    }
    ctx->results = grown;
    ctx->result_capacity = capacity;
  }
  bench_result_t* r = &ctx->results[ctx->result_count++];
  memset(r, 0, sizeof(*r));
  r->suite = suite;
  r->accel.median = r->accel.min = r->accel.max = NAN;
  r->baseline.median = r->baseline.min = r->baseline.max = NAN;
  va_list args;
  va_start(args, format);
  vsnprintf(r->name, sizeof(r->name), format, args);
  va_end(args);
  return r;
}

void bench_result_fail(bench_ctx_t* ctx, bench_result_t* r, const char* why) {
  r->outcome = BENCH_OUTCOME_FAILED;
  snprintf(r->note, sizeof(r->note), "%s", why != NULL ? why : bench_failure());
  ctx->failures++;
}

double bench_result_ratio(const bench_result_t* r) {
  if (r->outcome != BENCH_OUTCOME_OK || !r->has_baseline) return NAN;
  if (!(r->baseline.median > 0)) return NAN;
  return r->accel.median / r->baseline.median;
}

int bench_result_within(const bench_result_t* r) {
  if (r->outcome != BENCH_OUTCOME_OK || isnan(r->accel.median)) return -1;
  switch (r->budget) {
    case BENCH_BUDGET_MAX_DIFF:
      if (!r->has_baseline) return -1;
      return r->accel.median - r->baseline.median <= r->budget_value;
    case BENCH_BUDGET_MIN_RATIO: {
      double ratio = bench_result_ratio(r);
      return isnan(ratio) ? -1 : ratio >= r->budget_value;
    }
    case BENCH_BUDGET_MAX_ABS:
      return r->accel.median <= r->budget_value;
    case BENCH_BUDGET_NONE:
      break;
  }
  return -1;
}

void bench_progress(const bench_ctx_t* ctx, const char* suite,
                    const char* what) {
  if (!ctx->progress) return;
  // \r and "erase to end of line" redraw one line in place; NULL clears it.
  if (suite == NULL) {
    fputs("\r\033[K", stderr);
  } else {
    fprintf(stderr, "\r\033[Kaccel-bench: %s: %s", suite, what);
  }
  fflush(stderr);
}

const char* bench_format_size(uint64_t bytes, char* buf, size_t buf_size) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  size_t u = 0;
  uint64_t v = bytes;
  // Exact binary multiples print as integers; anything else keeps bytes.
  while (u + 1 < sizeof(units) / sizeof(units[0]) && v >= 1024 &&
         v % 1024 == 0) {
    v /= 1024;
    u++;
  }
  snprintf(buf, buf_size, "%" PRIu64 " %s", v, units[u]);
  return buf;
}
