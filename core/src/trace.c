// SPDX-License-Identifier: MIT
//
// ACCEL_TRACE=FILE.json: a Chrome Trace Event / Perfetto timeline. Events
// are formatted when they happen into one 64 KiB buffer, which is written
// to the file whenever it fills. Every flush (accel_shutdown, exit) ends
// the file with "]" and the dropped-events counter so it is valid JSON;
// the next write seeks back over that footer. At most
// ACCEL_TRACE_MAX_EVENTS events (default 1000000) are written; later ones
// are counted as dropped.
#define _GNU_SOURCE  // syscall
#include "trace.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "json.h"

atomic_bool accel__trace_on = false;

static pthread_mutex_t accel__trace_lock = PTHREAD_MUTEX_INITIALIZER;
static FILE* accel__trace_file;
static long accel__trace_footer_at = -1;  // where the footer starts, or -1
static char accel__trace_buf[65536];
static size_t accel__trace_used;
static uint64_t accel__trace_events;
static uint64_t accel__trace_max = 1000000;
static atomic_uint_least64_t accel__trace_lost;
static int64_t accel__trace_t0;
static int accel__trace_pid;
static bool accel__trace_writing;  // ACCEL_TRACE opened a file
static bool accel__trace_ranges;   // ACCEL_TRACE_RANGES=1

int64_t accel__trace_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static unsigned accel__trace_tid(void) {
  static _Thread_local unsigned tid;
  if (tid == 0) tid = (unsigned)syscall(SYS_gettid);
  return tid;
}

// Microseconds since the trace began, as "123.456".
static void accel__trace_ts(char* dst, size_t size, int64_t ns) {
  int64_t rel = ns - accel__trace_t0;
  if (rel < 0) rel = 0;
  snprintf(dst, size, "%" PRId64 ".%03d", rel / 1000, (int)(rel % 1000));
}

// Called with the lock held: buffered text goes to the file, over the
// footer of the last flush.
static void accel__trace_write_out(void) {
  if (accel__trace_footer_at >= 0) {
    fseek(accel__trace_file, accel__trace_footer_at, SEEK_SET);
    accel__trace_footer_at = -1;
  }
  fwrite(accel__trace_buf, 1, accel__trace_used, accel__trace_file);
  accel__trace_used = 0;
}

// Appends one event object (without separator).
static void accel__trace_emit(const char* text) {
  if (!accel__trace_writing) return;  // ACCEL_TRACE_RANGES alone
  size_t n = strlen(text);
  pthread_mutex_lock(&accel__trace_lock);
  if (accel__trace_file == NULL || accel__trace_events >= accel__trace_max ||
      n + 2 > sizeof(accel__trace_buf)) {
    atomic_fetch_add(&accel__trace_lost, 1);
  } else {
    if (accel__trace_used + n + 2 > sizeof(accel__trace_buf)) {
      accel__trace_write_out();
    }
    memcpy(accel__trace_buf + accel__trace_used, ",\n", 2);
    memcpy(accel__trace_buf + accel__trace_used + 2, text, n);
    accel__trace_used += n + 2;
    accel__trace_events++;
  }
  pthread_mutex_unlock(&accel__trace_lock);
}

void accel__trace_dropped(void) { atomic_fetch_add(&accel__trace_lost, 1); }

void accel__trace_flush(void) {
  pthread_mutex_lock(&accel__trace_lock);
  if (accel__trace_file != NULL) {
    accel__trace_write_out();
    accel__trace_footer_at = ftell(accel__trace_file);
    fprintf(accel__trace_file,
            "\n],\"accel_events\":%" PRIu64 ",\"accel_dropped_events\":%" PRIu64
            "}\n",
            accel__trace_events, (uint64_t)atomic_load(&accel__trace_lost));
    fflush(accel__trace_file);
    if (ftruncate(fileno(accel__trace_file), ftell(accel__trace_file)) != 0) {
      accel__log(ACCEL_LOG_WARN, "ACCEL_TRACE: cannot truncate the file");
    }
  }
  pthread_mutex_unlock(&accel__trace_lock);
}

static void accel__trace_atexit(void) { accel__trace_flush(); }

// fork: the parent keeps the file; the child stops tracing and never
// writes to it (stdio's buffer is emptied before the fork, so the child's
// exit cannot write the parent's events a second time).
static void accel__trace_fork_prepare(void) {
  pthread_mutex_lock(&accel__trace_lock);
  if (accel__trace_file != NULL) fflush(accel__trace_file);
}

static void accel__trace_fork_parent(void) {
  pthread_mutex_unlock(&accel__trace_lock);
}

static void accel__trace_fork_child(void) {
  atomic_store(&accel__trace_on, false);
  accel__trace_writing = false;
  accel__trace_file = NULL;  // the parent's; not closed here
  accel__trace_used = 0;
  pthread_mutex_unlock(&accel__trace_lock);
}

__attribute__((constructor)) static void accel__trace_start(void) {
  const char* ranges = accel__getenv("ACCEL_TRACE_RANGES");
  accel__trace_ranges = ranges != NULL && strcmp(ranges, "1") == 0;
  accel__trace_t0 = accel__trace_now();
  const char* path = accel__getenv("ACCEL_TRACE");
  if (path == NULL || path[0] == '\0') {
    if (accel__trace_ranges) atomic_store(&accel__trace_on, true);
    return;
  }
  const char* max = accel__getenv("ACCEL_TRACE_MAX_EVENTS");
  if (max != NULL && max[0] != '\0') accel__trace_max = strtoull(max, NULL, 10);
  accel__trace_file = fopen(path, "w");
  if (accel__trace_file == NULL) {
    accel__log(ACCEL_LOG_WARN, "ACCEL_TRACE: cannot open %s; not tracing",
               path);
    return;
  }
  accel__trace_pid = (int)getpid();
  accel__trace_writing = true;
  fprintf(accel__trace_file,
          "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
          "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
          "\"args\":{\"name\":\"accel\"}}",
          accel__trace_pid);
  atexit(accel__trace_atexit);
  pthread_atfork(accel__trace_fork_prepare, accel__trace_fork_parent,
                 accel__trace_fork_child);
  atomic_store(&accel__trace_on, true);
}

static void accel__trace_complete(const char* name, unsigned tid,
                                  int64_t start_ns, int64_t end_ns) {
  char esc[192], ts[32], dur[32], text[384];
  json_escape_into(esc, sizeof(esc), name);
  accel__trace_ts(ts, sizeof(ts), start_ns);
  int64_t d = end_ns > start_ns ? end_ns - start_ns : 0;
  snprintf(dur, sizeof(dur), "%" PRId64 ".%03d", d / 1000, (int)(d % 1000));
  snprintf(text, sizeof(text),
           "{\"name\":%s,\"ph\":\"X\",\"pid\":%d,\"tid\":%u,\"ts\":%s,"
           "\"dur\":%s}",
           esc, accel__trace_pid, tid, ts, dur);
  accel__trace_emit(text);
}

void accel__trace_span(const char* name, int64_t start_ns) {
  accel__trace_complete(name, accel__trace_tid(), start_ns, accel__trace_now());
}

void accel__trace_device_span(uint32_t track, const char* name,
                              int64_t start_ns, int64_t end_ns) {
  accel__trace_complete(name, track, start_ns, end_ns);
}

void accel__trace_track_name(uint32_t track, const char* name) {
  char esc[192], text[320];
  json_escape_into(esc, sizeof(esc), name);
  snprintf(text, sizeof(text),
           "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%u,"
           "\"args\":{\"name\":%s}}",
           accel__trace_pid, track, esc);
  accel__trace_emit(text);
}

void accel__trace_instant(const char* name, const char* detail) {
  if (!accel__tracing()) return;
  char esc[96], desc[256], ts[32], text[512];
  json_escape_into(esc, sizeof(esc), name);
  json_escape_into(desc, sizeof(desc), detail != NULL ? detail : "");
  accel__trace_ts(ts, sizeof(ts), accel__trace_now());
  snprintf(text, sizeof(text),
           "{\"name\":%s,\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%u,"
           "\"ts\":%s,\"args\":{\"detail\":%s}}",
           esc, accel__trace_pid, accel__trace_tid(), ts, desc);
  accel__trace_emit(text);
}

void accel__trace_counter(const char* device_uri, uint64_t allocated,
                          uint64_t reserved) {
  if (!accel__tracing()) return;
  char name[96], esc[128], ts[32], text[320];
  snprintf(name, sizeof(name), "%s memory", device_uri);
  json_escape_into(esc, sizeof(esc), name);
  accel__trace_ts(ts, sizeof(ts), accel__trace_now());
  snprintf(text, sizeof(text),
           "{\"name\":%s,\"ph\":\"C\",\"pid\":%d,\"ts\":%s,"
           "\"args\":{\"allocated\":%" PRIu64 ",\"reserved\":%" PRIu64 "}}",
           esc, accel__trace_pid, ts, allocated, reserved);
  accel__trace_emit(text);
}

void accel__trace_scope_begin(accel__trace_scope_t* scope) {
  scope->start = accel__trace_now();
  if (scope->stream != NULL && accel__trace_ranges) {
    accel__range_forward_push(scope->name);
    scope->range = true;
  }
  if (scope->stream != NULL && accel__trace_writing) {
    scope->slot =
        accel__trace_stream_begin(scope->stream, scope->name, scope->start);
  }
}

void accel__trace_scope_finish(accel__trace_scope_t* scope) {
  if (scope->slot >= 0) accel__trace_stream_end(scope->stream, scope->slot);
  if (scope->range) accel__range_forward_pop();
  accel__trace_span(scope->name, scope->start);
}
