// SPDX-License-Identifier: MIT
//
// What the trace instrumentation costs (docs/tracing.md).
//
// 1. Off: the ACCEL__TRACE_API macro from core/src/trace.h, compiled here
//    exactly as in the core, around an empty function, against the same
//    function without it, with tracing off (the flag is this program's
//    copy). Prints the difference per call.
// 2. Per event: N accel_event_query() calls on cpu:0 through libaccel.
//    Run once without and once with ACCEL_TRACE=FILE.json; the difference
//    per call is the cost of one recorded span.
//
// usage: accel_trace_overhead [--calls N]
#include <accel/accel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace.h"

// This program's stand-ins for the core's: tracing stays off, so the
// scope functions are never called.
atomic_bool accel__trace_on = false;
int64_t accel__trace_now(void) { return 1; }
void accel__trace_scope_begin(accel__trace_scope_t* scope) { (void)scope; }
void accel__trace_scope_finish(accel__trace_scope_t* scope) { (void)scope; }

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

__attribute__((noinline)) static int plain_call(int x) {
  __asm__ volatile("" : "+r"(x));
  return x + 1;
}

__attribute__((noinline)) static int traced_call(int x) {
  ACCEL__TRACE_API("bench");
  __asm__ volatile("" : "+r"(x));
  return x + 1;
}

// Best of five runs of `calls` calls, in ns per call.
static double time_calls(int (*fn)(int), long calls) {
  double best = 1e30;
  for (int run = 0; run < 5; run++) {
    int x = 0;
    double t0 = now_ns();
    for (long i = 0; i < calls; i++) x = fn(x);
    double t = (now_ns() - t0) / (double)calls;
    if (x == -1) printf("%d\n", x);  // keeps x alive
    if (t < best) best = t;
  }
  return best;
}

int main(int argc, char** argv) {
  long calls = 100000000;
  if (argc == 3 && strcmp(argv[1], "--calls") == 0) calls = atol(argv[2]);
  if (calls <= 0) {
    fprintf(stderr, "usage: %s [--calls N]\n", argv[0]);
    return 2;
  }
  double plain = time_calls(plain_call, calls);
  double traced = time_calls(traced_call, calls);
  printf("macro, tracing off: %.3f ns/call (plain %.3f, traced %.3f)\n",
         traced - plain, plain, traced);

  accel_device_t* dev = NULL;
  accel_stream_t* stream = NULL;
  accel_event_t* event = NULL;
  if (accel_device_open("cpu:0", &dev) != ACCEL_OK ||
      accel_stream_create(dev, 0, &stream) != ACCEL_OK ||
      accel_event_create(dev, 0, &event) != ACCEL_OK ||
      accel_event_record(event, stream) != ACCEL_OK ||
      accel_stream_synchronize(stream) != ACCEL_OK) {
    fprintf(stderr, "cpu:0: %s\n", accel_last_error());
    return 1;
  }
  long queries = calls / 100 > 0 ? calls / 100 : 1;
  bool done = false;
  double t0 = now_ns();
  for (long i = 0; i < queries; i++) accel_event_query(event, &done);
  double t = (now_ns() - t0) / (double)queries;
  printf("accel_event_query, ACCEL_TRACE %s: %.1f ns/call (%ld calls)\n",
         getenv("ACCEL_TRACE") != NULL ? "set" : "unset", t, queries);
  accel_event_release(event);
  accel_stream_release(stream);
  accel_device_release(dev);
  accel_shutdown();
  return done ? 0 : 1;
}
