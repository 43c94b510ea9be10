// SPDX-License-Identifier: MIT
//
// Helpers shared by the checks: detail lines, tracked handles, bounded
// waits and deterministic random numbers.
#define _DEFAULT_SOURCE  // syscall()
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"

enum {
  CONFORM_TRACK_STREAM = 0,  // released first: waits for pending work
  CONFORM_TRACK_EVENT = 1,
  CONFORM_TRACK_KERNEL = 2,
  CONFORM_TRACK_MODULE = 3,
  CONFORM_TRACK_BUFFER = 4,
  CONFORM_TRACK_HOST = 5,
  CONFORM_TRACK_KINDS = 6,
};

conform_result_t conform_report(conform_ctx_t* ctx, conform_result_t result,
                                const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(ctx->detail, sizeof(ctx->detail), format, args);
  va_end(args);
  return result;
}

conform_result_t conform_fail_status(conform_ctx_t* ctx, accel_status_t status,
                                     const char* what) {
  return conform_report(ctx, CONFORM_FAIL, "%s: %s: %s", what,
                        accel_status_string(status), accel_last_error());
}

static void conform_track(conform_ctx_t* ctx, int kind, void* handle) {
  if (ctx->tracked_count == CONFORM_MAX_TRACKED) {
    // Out of slots: release what we have so far is unsafe mid-check, so
    // leak this one; no check creates anywhere near this many handles.
    return;
  }
  ctx->tracked[ctx->tracked_count].kind = kind;
  ctx->tracked[ctx->tracked_count].handle = handle;
  ctx->tracked_count++;
}

accel_status_t conform_buffer(conform_ctx_t* ctx, accel_device_t* device,
                              size_t size, accel_buffer_t** out_buffer) {
  accel_status_t status = accel_buffer_create(device, size, out_buffer);
  if (status == ACCEL_OK) conform_track(ctx, CONFORM_TRACK_BUFFER, *out_buffer);
  return status;
}

accel_status_t conform_stream(conform_ctx_t* ctx, accel_device_t* device,
                              accel_stream_t** out_stream) {
  accel_status_t status = accel_stream_create(device, 0, out_stream);
  if (status == ACCEL_OK) conform_track(ctx, CONFORM_TRACK_STREAM, *out_stream);
  return status;
}

accel_status_t conform_event(conform_ctx_t* ctx, accel_device_t* device,
                             accel_event_flags_t flags,
                             accel_event_t** out_event) {
  accel_status_t status = accel_event_create(device, flags, out_event);
  if (status == ACCEL_OK) conform_track(ctx, CONFORM_TRACK_EVENT, *out_event);
  return status;
}

void conform_track_stream(conform_ctx_t* ctx, accel_stream_t* stream) {
  conform_track(ctx, CONFORM_TRACK_STREAM, stream);
}

void conform_track_module(conform_ctx_t* ctx, accel_module_t* module) {
  conform_track(ctx, CONFORM_TRACK_MODULE, module);
}

void conform_track_kernel(conform_ctx_t* ctx, accel_kernel_t* kernel) {
  conform_track(ctx, CONFORM_TRACK_KERNEL, kernel);
}

void* conform_alloc(conform_ctx_t* ctx, size_t size) {
  void* p = calloc(1, size ? size : 1);
  if (p != NULL) conform_track(ctx, CONFORM_TRACK_HOST, p);
  return p;
}

void conform_release_tracked(conform_ctx_t* ctx) {
  if (ctx->hung) {
    // Work that never finished may still use these: leak them.
    ctx->tainted = true;
    ctx->tracked_count = 0;
    return;
  }
  for (int kind = 0; kind < CONFORM_TRACK_KINDS; kind++) {
    for (size_t i = ctx->tracked_count; i-- > 0;) {
      if (ctx->tracked[i].kind != kind) continue;
      void* h = ctx->tracked[i].handle;
      switch (kind) {
        case CONFORM_TRACK_STREAM:
          accel_stream_release(h);
          break;
        case CONFORM_TRACK_EVENT:
          accel_event_release(h);
          break;
        case CONFORM_TRACK_KERNEL:
          accel_kernel_release(h);
          break;
        case CONFORM_TRACK_MODULE:
          accel_module_release(h);
          break;
        case CONFORM_TRACK_BUFFER:
          accel_buffer_release(h);
          break;
        default:
          free(h);
          break;
      }
    }
  }
  ctx->tracked_count = 0;
}

double conform_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void conform_nap(unsigned* round) {
  // 20 us growing to 1 ms: quick for fast plugins, cheap for slow ones.
  long ns = 20000L << (*round < 6 ? *round : 6);
  if (ns > 1000000L) ns = 1000000L;
  struct timespec ts = {0, ns};
  nanosleep(&ts, NULL);
  (*round)++;
}

// Polls `query(handle)` until it says done; see conform.h.
accel_status_t conform_poll(conform_ctx_t* ctx, void* handle,
                                   accel_status_t (*query)(void*, bool*)) {
  double deadline = conform_now() + ctx->timeout_s;
  unsigned round = 0;
  for (;;) {
    bool done = false;
    accel_status_t status = query(handle, &done);
    if (status != ACCEL_OK) return status;
    if (done) return ACCEL_OK;
    if (conform_now() > deadline) {
      ctx->hung = true;
      return ACCEL_ERROR_NOT_READY;
    }
    conform_nap(&round);
  }
}

static accel_status_t conform_stream_query_fn(void* h, bool* done) {
  return accel_stream_query(h, done);
}

static accel_status_t conform_event_query_fn(void* h, bool* done) {
  return accel_event_query(h, done);
}

accel_status_t conform_stream_wait(conform_ctx_t* ctx, accel_stream_t* stream) {
  return conform_poll(ctx, stream, conform_stream_query_fn);
}

accel_status_t conform_event_wait(conform_ctx_t* ctx, accel_event_t* event) {
  return conform_poll(ctx, event, conform_event_query_fn);
}

// A blocking call run on a helper thread. Shared between the caller and
// the helper; whoever finishes last frees it, so a timed-out caller can
// walk away.
struct conform_call {
  pthread_mutex_t mutex;
  pthread_cond_t cond;
  atomic_bool entered;  // the helper is about to call synchronize
  atomic_int tid;       // the helper's thread id (Linux), 0 before it runs
  bool done;
  bool abandoned;
  accel_status_t status;
  char message[256];
  bool is_event;
  void* handle;
};

static void conform_call_free(conform_call_t* call) {
  pthread_cond_destroy(&call->cond);
  pthread_mutex_destroy(&call->mutex);
  free(call);
}

static void* conform_call_main(void* arg) {
  conform_call_t* call = arg;
#ifdef SYS_gettid
  atomic_store(&call->tid, (int)syscall(SYS_gettid));
#endif
  atomic_store(&call->entered, true);
  accel_status_t status = call->is_event
                              ? accel_event_synchronize(call->handle)
                              : accel_stream_synchronize(call->handle);
  pthread_mutex_lock(&call->mutex);
  call->status = status;
  snprintf(call->message, sizeof(call->message), "%s", accel_last_error());
  call->done = true;
  bool abandoned = call->abandoned;
  pthread_cond_signal(&call->cond);
  pthread_mutex_unlock(&call->mutex);
  if (abandoned) conform_call_free(call);
  return NULL;
}

conform_call_t* conform_sync_start(bool is_event, void* handle) {
  conform_call_t* call = calloc(1, sizeof(*call));
  if (call == NULL) return NULL;
  pthread_mutex_init(&call->mutex, NULL);
  pthread_cond_init(&call->cond, NULL);
  call->is_event = is_event;
  call->handle = handle;
  pthread_t thread;
  if (pthread_create(&thread, NULL, conform_call_main, call) != 0) {
    conform_call_free(call);
    return NULL;
  }
  pthread_detach(thread);
  return call;
}

bool conform_sync_blocked(conform_call_t* call) {
  if (!atomic_load(&call->entered)) return false;
  pthread_mutex_lock(&call->mutex);
  bool done = call->done;
  pthread_mutex_unlock(&call->mutex);
  int tid = atomic_load(&call->tid);
  if (done || tid == 0) return true;
  char path[64], stat[512];
  snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
  FILE* f = fopen(path, "r");
  if (f == NULL) return true;  // no procfs: entered is all there is
  size_t n = fread(stat, 1, sizeof(stat) - 1, f);
  fclose(f);
  stat[n] = '\0';
  // "tid (comm) S ...": the state follows the last ')'.
  const char* close = strrchr(stat, ')');
  if (close == NULL || close[1] != ' ') return true;
  return close[2] == 'S' || close[2] == 'D';
}

accel_status_t conform_sync_finish(conform_ctx_t* ctx, conform_call_t* call,
                                   double deadline) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  double whole = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9 +
                 (deadline - conform_now());
  ts.tv_sec = (time_t)whole;
  ts.tv_nsec = (long)((whole - (double)ts.tv_sec) * 1e9);
  pthread_mutex_lock(&call->mutex);
  while (!call->done) {
    if (pthread_cond_timedwait(&call->cond, &call->mutex, &ts) != 0 &&
        !call->done) {
      call->abandoned = true;  // the helper frees it if it ever returns
      pthread_mutex_unlock(&call->mutex);
      ctx->hung = true;
      return ACCEL_ERROR_NOT_READY;
    }
  }
  pthread_mutex_unlock(&call->mutex);
  accel_status_t status = call->status;
  if (status != ACCEL_OK) {
    // accel_last_error() is per thread: keep the helper's message.
    snprintf(ctx->sync_message, sizeof(ctx->sync_message), "%s", call->message);
  }
  conform_call_free(call);
  return status;
}

static accel_status_t conform_timed_sync(conform_ctx_t* ctx, bool is_event,
                                         void* handle) {
  ctx->sync_message[0] = '\0';
  conform_call_t* call = conform_sync_start(is_event, handle);
  if (call == NULL) return ACCEL_ERROR_OUT_OF_MEMORY;
  return conform_sync_finish(ctx, call, conform_now() + ctx->timeout_s);
}

conform_result_t conform_fail_wait(conform_ctx_t* ctx, accel_status_t status,
                                   const char* what) {
  if (status == ACCEL_ERROR_NOT_READY && ctx->hung) {
    return conform_report(ctx, CONFORM_FAIL, "%s: did not complete within %g s",
                          what, ctx->timeout_s);
  }
  const char* message =
      ctx->sync_message[0] ? ctx->sync_message : accel_last_error();
  return conform_report(ctx, CONFORM_FAIL, "%s: %s: %s", what,
                        accel_status_string(status), message);
}

accel_status_t conform_stream_sync(conform_ctx_t* ctx, accel_stream_t* stream) {
  return conform_timed_sync(ctx, false, stream);
}

accel_status_t conform_event_sync(conform_ctx_t* ctx, accel_event_t* event) {
  return conform_timed_sync(ctx, true, event);
}

uint64_t conform_rand(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

double conform_rand_range(uint64_t* state, double lo, double hi) {
  double u = (double)(conform_rand(state) >> 11) * (1.0 / 9007199254740992.0);
  return lo + (hi - lo) * u;
}

void conform_rand_bytes(uint64_t* state, void* dst, size_t size) {
  unsigned char* p = dst;
  for (size_t i = 0; i < size; i++) {
    if (i % 8 == 0) {
      uint64_t r = conform_rand(state);
      size_t n = size - i < 8 ? size - i : 8;
      memcpy(p + i, &r, n);
    }
  }
}

bool conform_guarded_equal(conform_ctx_t* ctx, const unsigned char* host,
                           const unsigned char* want, size_t size,
                           unsigned char guard, const char* what) {
  for (size_t i = 0; i < size + 2; i++) {
    unsigned char w = i == 0 || i == size + 1 ? guard : want[i - 1];
    if (host[i] != w) {
      conform_report(ctx, CONFORM_FAIL,
                     "%s: host byte %zd is 0x%02x, expected 0x%02x", what,
                     (ptrdiff_t)i - 1, host[i], w);
      return false;
    }
  }
  return true;
}

accel_status_t conform_buffer_tailed(conform_ctx_t* ctx, accel_device_t* device,
                                     const void* init, size_t size,
                                     accel_buffer_t** out_buffer) {
  unsigned char tail[CONFORM_TAIL_BYTES];
  memset(tail, CONFORM_TAIL_BYTE, sizeof(tail));
  accel_status_t status =
      conform_buffer(ctx, device, size + sizeof(tail), out_buffer);
  if (status == ACCEL_OK && size > 0) {
    status = accel_buffer_write(*out_buffer, 0, init, size);
  }
  if (status == ACCEL_OK) {
    status = accel_buffer_write(*out_buffer, size, tail, sizeof(tail));
  }
  return status;
}

bool conform_tail_intact(conform_ctx_t* ctx, accel_buffer_t* buffer,
                         size_t size, const char* what) {
  unsigned char tail[CONFORM_TAIL_BYTES];
  accel_status_t status = accel_buffer_read(buffer, size, tail, sizeof(tail));
  if (status != ACCEL_OK) {
    conform_report(ctx, CONFORM_FAIL, "%s: read back: %s: %s", what,
                   accel_status_string(status), accel_last_error());
    return false;
  }
  for (size_t i = 0; i < sizeof(tail); i++) {
    if (tail[i] != CONFORM_TAIL_BYTE) {
      conform_report(ctx, CONFORM_FAIL,
                     "%s: byte %zu past the output's end is 0x%02x, was "
                     "0x%02x: the op wrote past its last element",
                     what, i, tail[i], CONFORM_TAIL_BYTE);
      return false;
    }
  }
  return true;
}

bool conform_verify(conform_ctx_t* ctx, accel_buffer_t* buffer,
                    const unsigned char* expected, size_t size,
                    const char* what) {
  unsigned char* got = conform_alloc(ctx, size);
  if (got == NULL) {
    conform_report(ctx, CONFORM_FAIL, "%s: out of host memory", what);
    return false;
  }
  accel_status_t status = accel_buffer_read(buffer, 0, got, size);
  if (status != ACCEL_OK) {
    conform_report(ctx, CONFORM_FAIL, "%s: read back: %s: %s", what,
                   accel_status_string(status), accel_last_error());
    return false;
  }
  for (size_t i = 0; i < size; i++) {
    if (got[i] != expected[i]) {
      conform_report(ctx, CONFORM_FAIL,
                     "%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i,
                     size, got[i], expected[i]);
      return false;
    }
  }
  return true;
}

accel_status_t conform_heavy_work(conform_ctx_t* ctx, accel_stream_t* stream,
                                  int rounds) {
  const size_t size = 8u << 20;
  accel_device_t* device = accel_stream_device(stream);
  accel_buffer_t* a = NULL;
  accel_buffer_t* b = NULL;
  accel_status_t status = conform_buffer(ctx, device, size, &a);
  if (status == ACCEL_OK) status = conform_buffer(ctx, device, size, &b);
  if (status == ACCEL_OK)
    status = accel_stream_fill_buffer(stream, a, 0, 1, size);
  for (int i = 0; status == ACCEL_OK && i < rounds; i++) {
    status = i % 2 ? accel_stream_copy_buffer(stream, a, 0, b, 0, size)
                   : accel_stream_copy_buffer(stream, b, 0, a, 0, size);
  }
  return status;
}
