// SPDX-License-Identifier: MIT
//
// Streams of the template plugin: an in-order FIFO of tasks drained by one
// worker thread per stream, so work really runs asynchronously and in order
// as on a GPU. A real backend maps a stream to its runtime's queue (CUstream,
// hipStream_t) and most of this file disappears.
//
// Progress is two counters under the stream's mutex: `enqueued` (tasks
// submitted) and `completed` (tasks run). Work enqueued before a
// synchronize has finished once `completed` reaches the value `enqueued`
// had at the call, which stays right while other threads keep submitting.
//
// The first failure of a task is sticky: every later synchronize and query
// reports it, as a GPU runtime reports a fault. After a failure data tasks
// are skipped, but event tasks still run so nothing waiting on them hangs.
//
// A host function (launch_host_func, ABI 1.4) is one more task, so it runs
// after the work before it and the work after it waits for it, and it is
// skipped after a failure like every data task (<accel/controls.h>: it is
// not called after an asynchronous error). A real backend maps it to its
// runtime's own (cuLaunchHostFunc, hipLaunchHostFunc).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "template.h"

struct template_stream {
  template_device_t* device;
  pthread_t worker;
  pthread_mutex_t mutex;
  pthread_cond_t work_cv;  // a task arrived, or stop
  pthread_cond_t done_cv;  // a task completed
  // Guarded by `mutex`.
  template_task_t* head;
  template_task_t* tail;
  uint64_t enqueued;
  uint64_t completed;
  bool stopping;
  accel_status_t error;
  char message[TEMPLATE_MESSAGE_SIZE];
};

template_task_t* template_task_create(template_task_fn_t run) {
  template_task_t* task = calloc(1, sizeof(*task));
  if (task != NULL) task->run = run;
  return task;
}

void template_task_free(template_task_t* task) {
  if (task == NULL) return;
  free(task->owned);
  free(task);
}

static bool template_is_event_task(const template_task_t* task) {
  return task->run == template_event_complete_task ||
         task->run == template_event_wait_task;
}

accel_status_t template_submit(const accel_host_t* host, void* stream_ptr,
                               template_task_t* task) {
  template_stream_t* stream = stream_ptr;
  if (stream == NULL) {
    char message[TEMPLATE_MESSAGE_SIZE] = "";
    accel_status_t status = task->run(task, message, sizeof(message));
    template_task_free(task);
    return status == ACCEL_OK ? ACCEL_OK
                              : host->fail(host, status, "%s", message);
  }
  task->next = NULL;
  pthread_mutex_lock(&stream->mutex);
  if (stream->tail != NULL) {
    stream->tail->next = task;
  } else {
    stream->head = task;
  }
  stream->tail = task;
  stream->enqueued++;
#ifndef CONFORM_BUG_STREAM_NEVER_RUNS
  pthread_cond_signal(&stream->work_cv);
#endif  // else a deliberate bug for tests/conform/fixtures: work never runs
  pthread_mutex_unlock(&stream->mutex);
  return ACCEL_OK;
}

static void* template_stream_worker(void* arg) {
  template_stream_t* stream = arg;
  char message[TEMPLATE_MESSAGE_SIZE];
  pthread_mutex_lock(&stream->mutex);
  for (;;) {
    while (stream->head == NULL && !stream->stopping) {
      pthread_cond_wait(&stream->work_cv, &stream->mutex);
    }
    template_task_t* task = stream->head;
    if (task == NULL) break;  // stopping, and everything has run
    stream->head = task->next;
    if (stream->head == NULL) stream->tail = NULL;
    accel_status_t error = stream->error;
    // Event tasks carry the stream's sticky error into the event.
    snprintf(message, sizeof(message), "%s", stream->message);
    pthread_mutex_unlock(&stream->mutex);

    accel_status_t status = ACCEL_OK;
    if (template_is_event_task(task)) {
      task->dtype2 = (uint32_t)error;
      status = task->run(task, message, sizeof(message));
    } else if (error == ACCEL_OK) {
      message[0] = '\0';
      status = task->run(task, message, sizeof(message));
    }
    template_task_free(task);

    pthread_mutex_lock(&stream->mutex);
    if (status != ACCEL_OK && stream->error == ACCEL_OK) {
      stream->error = status;
      snprintf(stream->message, sizeof(stream->message), "%s", message);
    }
    stream->completed++;
    pthread_cond_broadcast(&stream->done_cv);
  }
  pthread_mutex_unlock(&stream->mutex);
  return NULL;
}

accel_status_t template_stream_create(void* device_ptr,
                                      accel_stream_flags_t flags,
                                      void** out_stream) {
  template_device_t* device = device_ptr;
  (void)flags;  // none defined yet; the core rejects non-zero flags
  *out_stream = NULL;
  template_stream_t* stream = calloc(1, sizeof(*stream));
  if (stream == NULL) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              TEMPLATE_NAME ":%u: stream", device->index);
  }
  stream->device = device;
  pthread_mutex_init(&stream->mutex, NULL);
  pthread_cond_init(&stream->work_cv, NULL);
  pthread_cond_init(&stream->done_cv, NULL);
  if (pthread_create(&stream->worker, NULL, template_stream_worker, stream) !=
      0) {
    pthread_cond_destroy(&stream->done_cv);
    pthread_cond_destroy(&stream->work_cv);
    pthread_mutex_destroy(&stream->mutex);
    free(stream);
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              TEMPLATE_NAME
                              ":%u: cannot start a stream "
                              "worker thread",
                              device->index);
  }
  *out_stream = stream;
  return ACCEL_OK;
}

void template_stream_destroy(void* stream_ptr) {
  template_stream_t* stream = stream_ptr;
  if (stream == NULL) return;
  pthread_mutex_lock(&stream->mutex);
  stream->stopping = true;  // the worker drains the queue, then exits
  pthread_cond_signal(&stream->work_cv);
  pthread_mutex_unlock(&stream->mutex);
  pthread_join(stream->worker, NULL);
  pthread_cond_destroy(&stream->done_cv);
  pthread_cond_destroy(&stream->work_cv);
  pthread_mutex_destroy(&stream->mutex);
  free(stream);
}

// Reports the stream's sticky error, if any; called with `mutex` held.
static accel_status_t template_stream_error(template_stream_t* stream) {
  if (stream->error == ACCEL_OK) return ACCEL_OK;
  const accel_host_t* host = stream->device->host;
  return host->fail(host, stream->error, "%s", stream->message);
}

accel_status_t template_stream_synchronize(void* stream_ptr) {
  template_stream_t* stream = stream_ptr;
  pthread_mutex_lock(&stream->mutex);
  uint64_t target = stream->enqueued;
  while (stream->completed < target) {
    pthread_cond_wait(&stream->done_cv, &stream->mutex);
  }
  accel_status_t status = template_stream_error(stream);
  pthread_mutex_unlock(&stream->mutex);
  return status;
}

accel_status_t template_stream_query(void* stream_ptr, bool* out_done) {
  template_stream_t* stream = stream_ptr;
  pthread_mutex_lock(&stream->mutex);
  *out_done = stream->completed >= stream->enqueued;
  accel_status_t status = template_stream_error(stream);
  pthread_mutex_unlock(&stream->mutex);
  return status;
}

accel_status_t template_stream_wait_event(void* stream_ptr, void* event_ptr) {
  template_stream_t* stream = stream_ptr;
  template_event_t* event = event_ptr;
  uint64_t gen = template_event_pending_gen(event);
  if (gen == 0) return ACCEL_OK;  // nothing pending: no need to wait
  template_task_t* task = template_task_create(template_event_wait_task);
  if (task == NULL) {
    const accel_host_t* host = stream->device->host;
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      TEMPLATE_NAME ":%u: wait task", stream->device->index);
  }
  template_event_retain(event);
  task->event = event;
  task->gen = gen;
  return template_submit(stream->device->host, stream, task);
}

// Task: `host_fn(dst)`. It runs on the stream's worker without the
// stream's mutex held, never on the thread that enqueued it (that thread
// may hold a lock the function takes), so a function that blocks holds up
// this stream only.
static accel_status_t template_host_func_task(template_task_t* task,
                                              char* message, size_t size) {
  (void)message;
  (void)size;
  task->host_fn(task->dst);
  return ACCEL_OK;
}

accel_status_t template_launch_host_func(void* stream_ptr,
                                         void (*fn)(void* user), void* user) {
  template_stream_t* stream = stream_ptr;
  const accel_host_t* host = stream->device->host;
  template_task_t* task = template_task_create(template_host_func_task);
  if (task == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      TEMPLATE_NAME ":%u: host function task",
                      stream->device->index);
  }
  task->host_fn = fn;
  task->dst = user;
  // `stream` is never NULL here (the core passes a stream of this plugin),
  // so template_submit queues the task and never runs it inline.
  return template_submit(host, stream, task);
}
