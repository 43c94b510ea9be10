// SPDX-License-Identifier: MIT
//
// The trace timeline (trace.c, trace_stream.c): ACCEL_TRACE=FILE.json
// records API calls, device work per stream, allocator counters, plugin
// loads, device selection and ranges as Chrome Trace Event JSON.
//
// Instrumenting a public function is one macro at its top:
//   ACCEL__TRACE_API("accel_buffer_create");
//   ACCEL__TRACE_STREAM_API("accel_stream_fill_buffer", stream);
// With ACCEL_TRACE unset each costs one predictable branch on a global flag
// at entry and one at exit (docs/tracing.md has the measured figure).
#ifndef ACCEL_CORE_TRACE_H_
#define ACCEL_CORE_TRACE_H_

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "accel/accel.h"

// True while a trace is being recorded. Read relaxed: a call racing with
// the start of tracing may go unrecorded.
extern atomic_bool accel__trace_on;

static inline bool accel__tracing(void) {
  return __builtin_expect(
      atomic_load_explicit(&accel__trace_on, memory_order_relaxed), 0);
}

// Monotonic nanoseconds.
int64_t accel__trace_now(void);

// One API call in flight; see ACCEL__TRACE_API.
typedef struct accel__trace_scope {
  int64_t start;  // 0: not traced
  const char* name;
  accel_stream_t* stream;  // device span owner, or NULL
  int slot;                // pending device span, or -1
  bool range;              // a built-in range was forwarded (NVTX, roctx)
} accel__trace_scope_t;

void accel__trace_scope_begin(accel__trace_scope_t* scope);
void accel__trace_scope_finish(accel__trace_scope_t* scope);

static inline void accel__trace_scope_end(accel__trace_scope_t* scope) {
  if (__builtin_expect(scope->start != 0, 0)) accel__trace_scope_finish(scope);
}

// A host-thread span named `name` (a string literal) covering the rest of
// the enclosing function.
#define ACCEL__TRACE_API(name) ACCEL__TRACE_STREAM_API(name, NULL)

// As ACCEL__TRACE_API, and when `stream` is not NULL also a device span on
// the stream's track around the work the function enqueues.
// With tracing off it costs one flag load, one store (`start`, all that
// accel__trace_scope_end reads) and one compare at the return.
#define ACCEL__TRACE_STREAM_API(name, stream_)                        \
  accel__trace_scope_t accel__trace_scope_                            \
      __attribute__((cleanup(accel__trace_scope_end)));               \
  accel__trace_scope_.start = 0;                                      \
  if (accel__tracing()) {                                             \
    accel__trace_scope_ =                                             \
        (accel__trace_scope_t){0, (name), (stream_), -1, false};      \
    accel__trace_scope_begin(&accel__trace_scope_);                   \
  }

// Instant event ("ph":"i") on the calling thread; `detail` may be NULL.
void accel__trace_instant(const char* name, const char* detail);

// Counter event ("ph":"C") of a device's allocator.
void accel__trace_counter(const char* device_uri, uint64_t allocated,
                          uint64_t reserved);

// Complete event on the calling thread from `start_ns` to now; `name` is
// copied (ranges).
void accel__trace_span(const char* name, int64_t start_ns);

// Complete event on a stream track (trace_stream.c -> trace.c).
void accel__trace_device_span(uint32_t track, const char* name,
                              int64_t start_ns, int64_t end_ns);
// Names a stream track once.
void accel__trace_track_name(uint32_t track, const char* name);
// Counts an event that could not be recorded.
void accel__trace_dropped(void);

// Device spans (trace_stream.c). `begin` records the start timing event and
// returns a slot (or -1); `end` records the end event into it.
int accel__trace_stream_begin(accel_stream_t* stream, const char* name,
                              int64_t enqueue_ns);
void accel__trace_stream_end(accel_stream_t* stream, int slot);
// Turns the stream's finished pairs into spans (after a synchronize).
void accel__trace_stream_resolve(accel_stream_t* stream);
// Resolves and frees the stream's trace state (before stream_destroy).
void accel__trace_stream_release(accel_stream_t* stream);

// Forward a range to NVTX and roctx where present (trace_range.c).
void accel__range_forward_push(const char* name);
void accel__range_forward_pop(void);

// Writes the file so far as valid JSON (accel_shutdown and exit).
void accel__trace_flush(void);

#endif  // ACCEL_CORE_TRACE_H_
