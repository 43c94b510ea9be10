// SPDX-License-Identifier: MIT
//
// Events of the CPU plugin, with CUDA semantics.
//
// Each event_record gives the event a new generation number and queues a
// RECORD task carrying it; the generation is complete once that task has
// run. Records queued but not yet run are kept in `pending` (linked through
// the tasks themselves), so "has generation g completed?" is exact even
// when records on different streams complete out of order. Query and
// synchronize look at the last generation at the time of the call, and
// stream_wait_event captures it at enqueue time. An event never recorded
// (generation 0) is complete.
//
// Queued RECORD and WAIT tasks hold a reference, so event_destroy may come
// while they are pending; the last reference frees the event.
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu.h"

struct accel_cpu_event {
  accel_cpu_device_t* device;
  accel_event_flags_t flags;
  atomic_uint refs;
  pthread_mutex_t mutex;
  pthread_cond_t cv;  // broadcast whenever a record completes
  // Everything below is guarded by `mutex`.
  uint64_t recorded;          // last generation handed out; 0 = never
  accel_cpu_task_t* pending;  // RECORD tasks queued, not yet run
  uint64_t done;              // newest generation that has completed
  // Records completed so far, written under `mutex`, read without it by
  // a synchronising thread that spins (see accel_cpu_event_synchronize).
  _Atomic uint64_t completions;
  uint64_t time_ns;           // CLOCK_MONOTONIC when `done` completed
  accel_status_t error;       // outcome of `done`: its stream's error
  char message[ACCEL_CPU_MESSAGE_SIZE];
};

void accel_cpu_event_retain(accel_cpu_event_t* event) {
  atomic_fetch_add(&event->refs, 1);
}

void accel_cpu_event_release(accel_cpu_event_t* event) {
  if (atomic_fetch_sub(&event->refs, 1) != 1) return;
  pthread_cond_destroy(&event->cv);
  pthread_mutex_destroy(&event->mutex);
  free(event);
}

// Whether generation `gen` is queued and has not run. Mutex held.
static bool accel_cpu_event_is_pending(const accel_cpu_event_t* event,
                                       uint64_t gen) {
  for (const accel_cpu_task_t* t = event->pending; t != NULL;
       t = t->u.event.next_pending) {
    if (t->u.event.gen == gen) return true;
  }
  return false;
}

void accel_cpu_event_complete(accel_cpu_task_t* task, accel_status_t status,
                              const char* message) {
  accel_cpu_event_t* event = task->u.event.event;
  uint64_t gen = task->u.event.gen;
  uint64_t now = (event->flags & ACCEL_EVENT_TIMING) ? accel_cpu_now_ns() : 0;
  pthread_mutex_lock(&event->mutex);
  accel_cpu_task_t** link = &event->pending;
  while (*link != NULL && *link != task) link = &(*link)->u.event.next_pending;
  if (*link == task) *link = task->u.event.next_pending;
  // An older record finishing after a newer one changes nothing visible.
  if (gen > event->done) {
    event->done = gen;
    event->time_ns = now;
    event->error = status;
    if (status != ACCEL_OK) {
      memcpy(event->message, message, sizeof(event->message));
    }
  }
  atomic_fetch_add_explicit(&event->completions, 1, memory_order_release);
  pthread_cond_broadcast(&event->cv);
  pthread_mutex_unlock(&event->mutex);
}

void accel_cpu_event_wait(accel_cpu_event_t* event, uint64_t gen) {
  pthread_mutex_lock(&event->mutex);
  while (accel_cpu_event_is_pending(event, gen)) {
    pthread_cond_wait(&event->cv, &event->mutex);
  }
  pthread_mutex_unlock(&event->mutex);
}

uint64_t accel_cpu_event_pending_gen(accel_cpu_event_t* event) {
  pthread_mutex_lock(&event->mutex);
  uint64_t gen = event->recorded;
  if (gen != 0 && !accel_cpu_event_is_pending(event, gen)) gen = 0;
  pthread_mutex_unlock(&event->mutex);
  return gen;
}

accel_status_t accel_cpu_event_create(void* device_ptr,
                                      accel_event_flags_t flags,
                                      void** out_event) {
  accel_cpu_device_t* device = device_ptr;
  const accel_host_t* host = device->host;
  *out_event = NULL;
  if ((flags & ~(accel_event_flags_t)(ACCEL_EVENT_TIMING |
                                      ACCEL_EVENT_BLOCKING_SYNC)) != 0) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "cpu:%u: unknown event flags 0x%x", device->index,
                      (unsigned)flags);
  }
  accel_cpu_event_t* event = calloc(1, sizeof(*event));
  if (event == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "cpu:%u: event state",
                      device->index);
  }
  event->device = device;
  event->flags = flags;
  atomic_init(&event->refs, 1);
  atomic_init(&event->completions, 0);
  int rc = pthread_mutex_init(&event->mutex, NULL);
  if (rc != 0) goto fail_mutex;
  rc = pthread_cond_init(&event->cv, NULL);
  if (rc != 0) goto fail_cv;
  *out_event = event;
  return ACCEL_OK;

fail_cv:
  pthread_mutex_destroy(&event->mutex);
fail_mutex:
  free(event);
  return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                    "cpu:%u: cannot create an event (pthread error %d)",
                    device->index, rc);
}

void accel_cpu_event_destroy(void* event) {
  if (event != NULL) accel_cpu_event_release(event);
}

accel_status_t accel_cpu_event_record(void* event_ptr, void* stream) {
  accel_cpu_event_t* event = event_ptr;
  accel_cpu_task_t* task = accel_cpu_task_create(ACCEL_CPU_TASK_RECORD);
  if (task == NULL) {
    const accel_host_t* host = event->device->host;
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      "cpu:%u: cannot queue an event record",
                      event->device->index);
  }
  accel_cpu_event_retain(event);
  task->u.event.event = event;
  pthread_mutex_lock(&event->mutex);
  task->u.event.gen = ++event->recorded;
  task->u.event.next_pending = event->pending;
  event->pending = task;
  pthread_mutex_unlock(&event->mutex);
  accel_cpu_stream_submit(stream, task);
  return ACCEL_OK;
}

// Reports the outcome of the completed record: its stream's first error,
// or ACCEL_OK. Mutex held.
static accel_status_t accel_cpu_event_report(accel_cpu_event_t* event) {
  if (event->error == ACCEL_OK) return ACCEL_OK;
  const accel_host_t* host = event->device->host;
  return host->fail(host, event->error, "%s", event->message);
}

accel_status_t accel_cpu_event_synchronize(void* event_ptr) {
  accel_cpu_event_t* event = event_ptr;
  pthread_mutex_lock(&event->mutex);
  uint64_t gen = event->recorded;
  if (gen != 0 && (event->flags & ACCEL_EVENT_BLOCKING_SYNC) == 0) {
    // Spin a little first, as stream_synchronize does: short work
    // completes without a futex wake-up. ACCEL_EVENT_BLOCKING_SYNC
    // (cudaEventBlockingSync) sleeps at once instead, leaving the CPU to
    // the work.
    const _Atomic uint32_t* quiet = &event->device->plugin->engine_threads;
    uint64_t start = accel_cpu_now_ns();
    while (accel_cpu_event_is_pending(event, gen) &&
           accel_cpu_may_spin(quiet)) {
      uint64_t spent = accel_cpu_now_ns() - start;
      if (spent >= ACCEL_CPU_SPIN_NS) break;
      uint64_t seen =
          atomic_load_explicit(&event->completions, memory_order_relaxed);
      pthread_mutex_unlock(&event->mutex);
      accel_cpu_spin_while(&event->completions, seen,
                           ACCEL_CPU_SPIN_NS - spent, quiet);
      pthread_mutex_lock(&event->mutex);
    }
  }
  while (gen != 0 && accel_cpu_event_is_pending(event, gen)) {
    pthread_cond_wait(&event->cv, &event->mutex);
  }
  accel_status_t status = gen != 0 ? accel_cpu_event_report(event) : ACCEL_OK;
  pthread_mutex_unlock(&event->mutex);
  return status;
}

accel_status_t accel_cpu_event_query(void* event_ptr, bool* out_done) {
  accel_cpu_event_t* event = event_ptr;
  pthread_mutex_lock(&event->mutex);
  uint64_t gen = event->recorded;
  *out_done = gen == 0 || !accel_cpu_event_is_pending(event, gen);
  accel_status_t status =
      gen != 0 && *out_done ? accel_cpu_event_report(event) : ACCEL_OK;
  pthread_mutex_unlock(&event->mutex);
  return status;
}

// The state of an event's last record, read at one instant.
typedef struct accel_cpu_event_snapshot {
  bool recorded;
  bool done;
  uint64_t time_ns;
} accel_cpu_event_snapshot_t;

static accel_cpu_event_snapshot_t accel_cpu_event_snap(
    accel_cpu_event_t* event) {
  accel_cpu_event_snapshot_t snap = {0};
  pthread_mutex_lock(&event->mutex);
  uint64_t gen = event->recorded;
  snap.recorded = gen != 0;
  snap.done = gen != 0 && !accel_cpu_event_is_pending(event, gen);
  snap.time_ns = event->time_ns;  // once done, `done` == `gen`
  pthread_mutex_unlock(&event->mutex);
  return snap;
}

accel_status_t accel_cpu_event_elapsed_ms(void* start_ptr, void* end_ptr,
                                          float* out_ms) {
  accel_cpu_event_t* events[2] = {start_ptr, end_ptr};
  static const char* const kRoles[2] = {"start", "end"};
  const accel_host_t* host = events[0]->device->host;
  *out_ms = 0.0f;
  // Misuse (INVALID_ARGUMENT) is reported before NOT_READY.
  for (int i = 0; i < 2; i++) {
    if ((events[i]->flags & ACCEL_EVENT_TIMING) == 0) {
      return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                        "cpu:%u: %s event was created without "
                        "ACCEL_EVENT_TIMING",
                        events[i]->device->index, kRoles[i]);
    }
  }
  accel_cpu_event_snapshot_t snaps[2] = {accel_cpu_event_snap(events[0]),
                                         accel_cpu_event_snap(events[1])};
  for (int i = 0; i < 2; i++) {
    if (!snaps[i].recorded) {
      return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                        "cpu:%u: %s event was never recorded",
                        events[i]->device->index, kRoles[i]);
    }
  }
  for (int i = 0; i < 2; i++) {
    if (!snaps[i].done) {
      return host->fail(host, ACCEL_ERROR_NOT_READY,
                        "cpu:%u: %s event has not completed",
                        events[i]->device->index, kRoles[i]);
    }
  }
  uint64_t t0 = snaps[0].time_ns, t1 = snaps[1].time_ns;
  double ns = t1 >= t0 ? (double)(t1 - t0) : -(double)(t0 - t1);
  *out_ms = (float)(ns / 1e6);
  return ACCEL_OK;
}
