// SPDX-License-Identifier: MIT
//
// Device spans of the trace: each traced stream operation is bracketed by
// a pair of the backend's timing events, recorded on the stream. They are
// resolved lazily (at accel_stream_synchronize, when the stream's slots
// run out, and at stream release) against an anchor event whose host time
// is known, and written on a track per stream, "<device> stream N".
// Backends whose events cannot time get host-side spans instead, from the
// enqueue call to the synchronize that saw the work done, and their track
// name says so.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "trace.h"

// Operations in flight per stream between two resolutions. When they run
// out the stream is synchronised and resolved early (documented).
#define ACCEL__TRACE_SLOTS 256

typedef enum { SLOT_FREE, SLOT_OPEN, SLOT_ENDED } accel__slot_state_t;

typedef struct accel__trace_slot {
  accel__slot_state_t state;
  const char* name;
  int64_t enqueue_ns;
  bool timed;   // both events recorded
  void* start;  // plugin timing events, created on first use and reused
  void* end;
} accel__trace_slot_t;

typedef struct accel__trace_stream {
  pthread_mutex_t lock;
  uint32_t track;
  bool timing;
  void* anchor;       // plugin event whose completion time is anchor_ns
  int64_t anchor_ns;  // 0: anchor not recorded yet
  uint32_t count;     // slots used since the last full resolution
  accel__trace_slot_t slots[ACCEL__TRACE_SLOTS];
} accel__trace_stream_t;

static atomic_uint accel__trace_stream_serial;

static accel__trace_stream_t* accel__trace_state(accel_stream_t* stream) {
  accel__trace_stream_t* st = atomic_load(&stream->trace);
  if (st != NULL) return st;
  st = calloc(1, sizeof(*st));
  if (st == NULL) return NULL;
  pthread_mutex_init(&st->lock, NULL);
  st->timing = stream->device->plugin->has_timing;
  uint32_t n = atomic_fetch_add(&accel__trace_stream_serial, 1) + 1;
  st->track = 0x40000000u + n;
  void* expected = NULL;
  if (!atomic_compare_exchange_strong(&stream->trace, &expected, st)) {
    pthread_mutex_destroy(&st->lock);
    free(st);
    return expected;
  }
  char name[128];
  snprintf(name, sizeof(name), "%s stream %u%s", stream->device->uri, n,
           st->timing ? ""
                      : " (host-timed: enqueue to synchronize, no timing "
                        "events)");
  accel__trace_track_name(st->track, name);
  return st;
}

// Creates `*event` if needed and records it on the stream.
static bool accel__trace_mark(accel_stream_t* stream, void** event) {
  accel_device_t* d = stream->device;
  if (*event == NULL &&
      d->ops->event_create(d->impl, ACCEL_EVENT_TIMING, event) != ACCEL_OK) {
    *event = NULL;
    return false;
  }
  return d->ops->event_record(*event, stream->impl) == ACCEL_OK;
}

// Device time of `event` on the host clock, or `fallback`.
static int64_t accel__trace_when(accel__trace_stream_t* st,
                                 accel_stream_t* stream, bool timed,
                                 void* event, int64_t fallback) {
  float ms = 0;
  if (!timed || stream->device->ops->event_elapsed_ms(st->anchor, event, &ms) !=
                    ACCEL_OK) {
    return fallback;
  }
  return st->anchor_ns + (int64_t)((double)ms * 1e6);
}

// Writes every ended slot; called with st->lock held after the stream's
// work is done. Device times are clamped into [enqueue, now].
static void accel__trace_resolve_locked(accel__trace_stream_t* st,
                                        accel_stream_t* stream) {
  int64_t now = accel__trace_now();
  bool all_free = true;
  for (uint32_t i = 0; i < st->count; i++) {
    accel__trace_slot_t* s = &st->slots[i];
    if (s->state != SLOT_ENDED) {
      all_free = all_free && s->state == SLOT_FREE;
      continue;
    }
    int64_t start =
        accel__trace_when(st, stream, s->timed, s->start, s->enqueue_ns);
    int64_t end = accel__trace_when(st, stream, s->timed, s->end, now);
    // Both ends into [enqueue, now]: a backend's timestamps can lag
    // (OpenCL stamps through a side queue), so neither end may leave the
    // window the host saw the work in.
    if (start < s->enqueue_ns) start = s->enqueue_ns;
    if (end > now) end = now;
    if (start > now) start = now;
    if (end < start) end = start;
    accel__trace_device_span(st->track, s->name, start, end);
    s->state = SLOT_FREE;
  }
  if (all_free) {
    st->count = 0;
    st->anchor_ns = 0;  // re-anchor while the stream is idle
  }
}

int accel__trace_stream_begin(accel_stream_t* stream, const char* name,
                              int64_t enqueue_ns) {
  accel__trace_stream_t* st = accel__trace_state(stream);
  if (st == NULL) {
    accel__trace_dropped();
    return -1;
  }
  pthread_mutex_lock(&st->lock);
  if (st->count == ACCEL__TRACE_SLOTS &&
      stream->device->ops->stream_synchronize(stream->impl) == ACCEL_OK) {
    accel__trace_resolve_locked(st, stream);
  }
  int slot = -1;
  if (st->count < ACCEL__TRACE_SLOTS) {
    if (st->timing && st->anchor_ns == 0 &&
        accel__trace_mark(stream, &st->anchor) &&
        stream->device->ops->event_synchronize(st->anchor) == ACCEL_OK) {
      st->anchor_ns = accel__trace_now();
    }
    slot = (int)st->count++;
    accel__trace_slot_t* s = &st->slots[slot];
    s->state = SLOT_OPEN;
    s->name = name;
    s->enqueue_ns = enqueue_ns;
    s->timed = st->timing && st->anchor_ns != 0 &&
               accel__trace_mark(stream, &s->start);
  } else {
    accel__trace_dropped();
  }
  pthread_mutex_unlock(&st->lock);
  return slot;
}

void accel__trace_stream_end(accel_stream_t* stream, int slot) {
  accel__trace_stream_t* st = atomic_load(&stream->trace);
  if (st == NULL) return;
  pthread_mutex_lock(&st->lock);
  accel__trace_slot_t* s = &st->slots[slot];
  if (s->timed) s->timed = accel__trace_mark(stream, &s->end);
  s->state = SLOT_ENDED;
  pthread_mutex_unlock(&st->lock);
}

void accel__trace_stream_resolve(accel_stream_t* stream) {
  accel__trace_stream_t* st = atomic_load(&stream->trace);
  if (st == NULL) return;
  pthread_mutex_lock(&st->lock);
  accel__trace_resolve_locked(st, stream);
  pthread_mutex_unlock(&st->lock);
}

void accel__trace_stream_release(accel_stream_t* stream) {
  accel__trace_stream_t* st = atomic_load(&stream->trace);
  if (st == NULL) return;
  const accel_device_ops_t* ops = stream->device->ops;
  if (st->count > 0 && ops->stream_synchronize(stream->impl) == ACCEL_OK) {
    accel__trace_resolve_locked(st, stream);
  }
  for (uint32_t i = 0; i < ACCEL__TRACE_SLOTS; i++) {
    if (st->slots[i].start != NULL) ops->event_destroy(st->slots[i].start);
    if (st->slots[i].end != NULL) ops->event_destroy(st->slots[i].end);
  }
  if (st->anchor != NULL) ops->event_destroy(st->anchor);
  pthread_mutex_destroy(&st->lock);
  free(st);
  atomic_store(&stream->trace, NULL);
}
