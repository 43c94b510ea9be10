// SPDX-License-Identifier: MIT
//
// Events of the template plugin. Each record gets a generation number; a
// RECORD task on the stream marks its generation complete (and stamps the
// time), and the event is complete once the latest generation has been
// marked. Waiting on an event from another stream queues a WAIT task that
// blocks that stream's worker until the generation captured at the call is
// complete. Tasks hold references, so destroying an event with work still
// pending is safe.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "template.h"

struct template_event {
  template_device_t* device;
  accel_event_flags_t flags;
  _Atomic uint32_t refs;
  pthread_mutex_t mutex;
  pthread_cond_t cond;  // broadcast when a generation completes
  // Guarded by `mutex`.
  uint64_t recorded;   // latest generation recorded (0: never)
  uint64_t completed;  // latest generation completed
  uint64_t time_ns;    // CLOCK_MONOTONIC at the latest completion
  accel_status_t status;
  char message[TEMPLATE_MESSAGE_SIZE];
};

static uint64_t template_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void template_event_retain(template_event_t* event) {
  atomic_fetch_add(&event->refs, 1);
}

void template_event_release(template_event_t* event) {
  if (atomic_fetch_sub(&event->refs, 1) != 1) return;
  pthread_cond_destroy(&event->cond);
  pthread_mutex_destroy(&event->mutex);
  free(event);
}

accel_status_t template_event_complete_task(template_task_t* task,
                                            char* message, size_t size) {
  template_event_t* event = task->event;
  (void)size;
  pthread_mutex_lock(&event->mutex);
#ifndef CONFORM_BUG_EVENTS_NEVER_COMPLETE
  // Records on different streams may complete out of order: keep the
  // newest, so an older record never makes the event look incomplete.
  if (task->gen > event->completed) {
    event->completed = task->gen;
    if (event->flags & ACCEL_EVENT_TIMING) event->time_ns = template_now_ns();
    event->status = (accel_status_t)task->dtype2;
    snprintf(event->message, sizeof(event->message), "%s", message);
    pthread_cond_broadcast(&event->cond);
  }
#else
  (void)message;  // deliberate bug for tests/conform/fixtures
  (void)template_now_ns;
#endif
  pthread_mutex_unlock(&event->mutex);
  template_event_release(event);
  return ACCEL_OK;
}

accel_status_t template_event_wait_task(template_task_t* task, char* message,
                                        size_t size) {
  template_event_t* event = task->event;
  (void)message;
  (void)size;
  pthread_mutex_lock(&event->mutex);
  while (event->completed < task->gen) {
    pthread_cond_wait(&event->cond, &event->mutex);
  }
  pthread_mutex_unlock(&event->mutex);
  template_event_release(event);
  return ACCEL_OK;
}

uint64_t template_event_pending_gen(template_event_t* event) {
  pthread_mutex_lock(&event->mutex);
  uint64_t gen = event->completed < event->recorded ? event->recorded : 0;
  pthread_mutex_unlock(&event->mutex);
  return gen;
}

accel_status_t template_event_create(void* device_ptr,
                                     accel_event_flags_t flags,
                                     void** out_event) {
  template_device_t* device = device_ptr;
  *out_event = NULL;
  template_event_t* event = calloc(1, sizeof(*event));
  if (event == NULL) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              TEMPLATE_NAME ":%u: event", device->index);
  }
  event->device = device;
  event->flags = flags;
  atomic_init(&event->refs, 1);
  pthread_mutex_init(&event->mutex, NULL);
  pthread_cond_init(&event->cond, NULL);
  *out_event = event;
  return ACCEL_OK;
}

void template_event_destroy(void* event) {
  if (event != NULL) template_event_release(event);
}

accel_status_t template_event_record(void* event_ptr, void* stream) {
  template_event_t* event = event_ptr;
  template_task_t* task = template_task_create(template_event_complete_task);
  if (task == NULL) {
    return event->device->host->fail(
        event->device->host, ACCEL_ERROR_OUT_OF_MEMORY,
        TEMPLATE_NAME ":%u: record task", event->device->index);
  }
  pthread_mutex_lock(&event->mutex);
  task->gen = ++event->recorded;
  pthread_mutex_unlock(&event->mutex);
  template_event_retain(event);
  task->event = event;
  return template_submit(event->device->host, stream, task);
}

// Reports the outcome of the completed record; called with `mutex` held.
static accel_status_t template_event_outcome(template_event_t* event) {
  if (event->status == ACCEL_OK) return ACCEL_OK;
  const accel_host_t* host = event->device->host;
  return host->fail(host, event->status, "%s", event->message);
}

accel_status_t template_event_synchronize(void* event_ptr) {
  template_event_t* event = event_ptr;
  pthread_mutex_lock(&event->mutex);
  uint64_t target = event->recorded;
  while (event->completed < target) {
    pthread_cond_wait(&event->cond, &event->mutex);
  }
  accel_status_t status = template_event_outcome(event);
  pthread_mutex_unlock(&event->mutex);
  return status;
}

accel_status_t template_event_query(void* event_ptr, bool* out_done) {
  template_event_t* event = event_ptr;
  pthread_mutex_lock(&event->mutex);
  *out_done = event->completed >= event->recorded;
  accel_status_t status = *out_done ? template_event_outcome(event) : ACCEL_OK;
  pthread_mutex_unlock(&event->mutex);
  return status;
}

// Reads the completion time of `event`, or fails when it cannot time.
static accel_status_t template_event_time(template_event_t* event,
                                          uint64_t* out_ns) {
  const accel_host_t* host = event->device->host;
  pthread_mutex_lock(&event->mutex);
  bool timing = (event->flags & ACCEL_EVENT_TIMING) != 0;
  bool recorded = event->recorded != 0;
  bool done = event->completed >= event->recorded;
  *out_ns = event->time_ns;
  pthread_mutex_unlock(&event->mutex);
  if (!timing || !recorded) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      TEMPLATE_NAME ": event %s",
                      !timing ? "was created without "
                                "ACCEL_EVENT_TIMING"
                              : "was never recorded");
  }
  if (!done) {
    return host->fail(host, ACCEL_ERROR_NOT_READY,
                      TEMPLATE_NAME ": event has not completed yet");
  }
  return ACCEL_OK;
}

accel_status_t template_event_elapsed_ms(void* start, void* end,
                                         float* out_ms) {
  uint64_t t0 = 0, t1 = 0;
  accel_status_t status = template_event_time(start, &t0);
  if (status == ACCEL_OK) status = template_event_time(end, &t1);
  if (status != ACCEL_OK) return status;
  *out_ms = (float)(((double)t1 - (double)t0) / 1e6);
  return ACCEL_OK;
}
