// SPDX-License-Identifier: MIT
//
// Streams of the CPU plugin: an in-order FIFO of tasks drained by one
// worker thread per stream.
//
// Progress is tracked with two counters under the stream's mutex:
// `enqueued` counts tasks ever submitted and `completed` tasks that have
// run. Since tasks run in order, "everything enqueued so far has run" is
// `completed >= enqueued-at-the-time-of-the-call`, which stays correct while
// other threads keep adding work. Nobody spins: the worker sleeps on
// `work_cv` and synchronising threads on `done_cv`.
//
// The first failure of a queued task is kept (status and message) and
// reported by every later synchronize and query of the stream, as a GPU
// runtime reports a sticky fault. After a failure, data tasks are skipped
// but RECORD and WAIT tasks still run, so events complete (carrying the
// error) and nothing waiting on them hangs.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

struct accel_cpu_stream {
  accel_cpu_device_t* device;
  pthread_t worker;
  pthread_mutex_t mutex;
  pthread_cond_t work_cv;  // signalled when a task arrives or on stop
  pthread_cond_t done_cv;  // broadcast when a task completes
  // Everything below is guarded by `mutex`.
  accel_cpu_task_t* head;
  accel_cpu_task_t* tail;
  uint64_t enqueued;
  uint64_t completed;
  bool stopping;
  accel_status_t error;
  char message[ACCEL_CPU_MESSAGE_SIZE];
};

accel_cpu_task_t* accel_cpu_task_create(accel_cpu_task_kind_t kind) {
  accel_cpu_task_t* task = calloc(1, sizeof(*task));
  if (task != NULL) task->kind = kind;
  return task;
}

accel_cpu_task_t* accel_cpu_task_create_call(accel_cpu_call_fn_t fn,
                                             size_t arg_size) {
  // One allocation: the task, padding to a cache line, then the arguments.
  size_t head = (sizeof(accel_cpu_task_t) + ACCEL_CPU_ALIGNMENT - 1) &
                ~(size_t)(ACCEL_CPU_ALIGNMENT - 1);
  if (arg_size > SIZE_MAX - head - ACCEL_CPU_ALIGNMENT) return NULL;
  size_t total = (head + arg_size + ACCEL_CPU_ALIGNMENT - 1) &
                 ~(size_t)(ACCEL_CPU_ALIGNMENT - 1);
  accel_cpu_task_t* task = aligned_alloc(ACCEL_CPU_ALIGNMENT, total);
  if (task == NULL) return NULL;
  memset(task, 0, total);
  task->kind = ACCEL_CPU_TASK_CALL;
  task->u.call.fn = fn;
  task->u.call.arg = (unsigned char*)task + head;
  return task;
}

accel_cpu_device_t* accel_cpu_stream_device(accel_cpu_stream_t* stream) {
  return stream->device;
}

void accel_cpu_stream_submit(accel_cpu_stream_t* stream,
                             accel_cpu_task_t* task) {
  task->next = NULL;
  pthread_mutex_lock(&stream->mutex);
  if (stream->tail != NULL) {
    stream->tail->next = task;
  } else {
    stream->head = task;
  }
  stream->tail = task;
  stream->enqueued++;
  pthread_cond_signal(&stream->work_cv);
  pthread_mutex_unlock(&stream->mutex);
}

// Runs one task on the worker of a stream of `device`. `failed` says
// whether the stream already has an error; `status` and `message` carry it
// to RECORD tasks. Returns the task's own status; a failing CALL task
// writes its reason into `out_message`. Releases the event reference of
// RECORD and WAIT tasks.
static accel_status_t accel_cpu_task_run(accel_cpu_device_t* device,
                                         accel_cpu_task_t* task, bool failed,
                                         accel_status_t status,
                                         const char* message,
                                         char* out_message) {
  switch (task->kind) {
    case ACCEL_CPU_TASK_COPY:
      if (failed) break;
      accel_cpu_copy_run(device->plugin, task->u.copy.dst, task->u.copy.src,
                         task->u.copy.size, task->u.copy.overlap);
      break;
    case ACCEL_CPU_TASK_FILL:
      if (failed) break;
      accel_cpu_fill_run(device->plugin, task->u.fill.dst, task->u.fill.value,
                         task->u.fill.size);
      break;
    case ACCEL_CPU_TASK_CALL:
      if (failed) break;
      return task->u.call.fn(device, task->u.call.arg, out_message,
                             ACCEL_CPU_MESSAGE_SIZE);
    case ACCEL_CPU_TASK_RECORD:
      accel_cpu_event_complete(task, status, message);
      accel_cpu_event_release(task->u.event.event);
      break;
    case ACCEL_CPU_TASK_WAIT:
      accel_cpu_event_wait(task->u.event.event, task->u.event.gen);
      accel_cpu_event_release(task->u.event.event);
      break;
  }
  return ACCEL_OK;
}

static void* accel_cpu_stream_worker(void* arg) {
  accel_cpu_stream_t* stream = arg;
  char message[ACCEL_CPU_MESSAGE_SIZE] = "";
  char reason[ACCEL_CPU_MESSAGE_SIZE] = "";
  accel_cpu_device_t* device = stream->device;
  pthread_mutex_lock(&stream->mutex);
  for (;;) {
    while (stream->head == NULL && !stream->stopping) {
      pthread_cond_wait(&stream->work_cv, &stream->mutex);
    }
    accel_cpu_task_t* task = stream->head;
    if (task == NULL) break;  // stopping and drained
    stream->head = task->next;
    if (stream->head == NULL) stream->tail = NULL;
    accel_status_t status = ACCEL_OK;
    if (task->kind == ACCEL_CPU_TASK_RECORD) {
      // Cheap, and run under the stream's mutex (lock order: stream, then
      // event) so that the event completes together with the stream's
      // count: once either is seen finished, so is the other.
      status = accel_cpu_task_run(device, task, stream->error != ACCEL_OK,
                                  stream->error, stream->message, reason);
      free(task);
    } else {
      accel_status_t error = stream->error;
      if (error != ACCEL_OK) {
        memcpy(message, stream->message, sizeof(message));
      }
      pthread_mutex_unlock(&stream->mutex);
      strcpy(reason, "queued work failed");
      status = accel_cpu_task_run(device, task, error != ACCEL_OK, error,
                                  message, reason);
      free(task);
      pthread_mutex_lock(&stream->mutex);
    }
    if (status != ACCEL_OK && stream->error == ACCEL_OK) {
      stream->error = status;
      snprintf(stream->message, sizeof(stream->message), "cpu:%u: %.480s",
               device->index, reason);
    }
    stream->completed++;
    pthread_cond_broadcast(&stream->done_cv);
  }
  pthread_mutex_unlock(&stream->mutex);
  return NULL;
}

accel_status_t accel_cpu_stream_create(void* device_ptr,
                                       accel_stream_flags_t flags,
                                       void** out_stream) {
  accel_cpu_device_t* device = device_ptr;
  const accel_host_t* host = device->host;
  *out_stream = NULL;
  if (flags != 0) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "cpu:%u: unknown stream flags 0x%x", device->index,
                      (unsigned)flags);
  }
  accel_cpu_stream_t* stream = calloc(1, sizeof(*stream));
  if (stream == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "cpu:%u: stream state",
                      device->index);
  }
  stream->device = device;
  int rc = pthread_mutex_init(&stream->mutex, NULL);
  if (rc != 0) goto fail_mutex;
  rc = pthread_cond_init(&stream->work_cv, NULL);
  if (rc != 0) goto fail_work_cv;
  rc = pthread_cond_init(&stream->done_cv, NULL);
  if (rc != 0) goto fail_done_cv;
  rc = pthread_create(&stream->worker, NULL, accel_cpu_stream_worker, stream);
  if (rc != 0) goto fail_worker;
  *out_stream = stream;
  return ACCEL_OK;

fail_worker:
  pthread_cond_destroy(&stream->done_cv);
fail_done_cv:
  pthread_cond_destroy(&stream->work_cv);
fail_work_cv:
  pthread_mutex_destroy(&stream->mutex);
fail_mutex:
  free(stream);
  return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                    "cpu:%u: cannot create a stream (pthread error %d)",
                    device->index, rc);
}

void accel_cpu_stream_destroy(void* stream_ptr) {
  accel_cpu_stream_t* stream = stream_ptr;
  if (stream == NULL) return;
  // The worker drains the queue before it sees `stopping`.
  pthread_mutex_lock(&stream->mutex);
  stream->stopping = true;
  pthread_cond_signal(&stream->work_cv);
  pthread_mutex_unlock(&stream->mutex);
  pthread_join(stream->worker, NULL);
  pthread_cond_destroy(&stream->done_cv);
  pthread_cond_destroy(&stream->work_cv);
  pthread_mutex_destroy(&stream->mutex);
  free(stream);
}

// Returns the stream's sticky error through host->fail, or ACCEL_OK.
// Called with the mutex held.
static accel_status_t accel_cpu_stream_report(accel_cpu_stream_t* stream) {
  if (stream->error == ACCEL_OK) return ACCEL_OK;
  const accel_host_t* host = stream->device->host;
  return host->fail(host, stream->error, "%s", stream->message);
}

accel_status_t accel_cpu_stream_synchronize(void* stream_ptr) {
  accel_cpu_stream_t* stream = stream_ptr;
  pthread_mutex_lock(&stream->mutex);
  uint64_t target = stream->enqueued;
  while (stream->completed < target) {
    pthread_cond_wait(&stream->done_cv, &stream->mutex);
  }
  accel_status_t status = accel_cpu_stream_report(stream);
  pthread_mutex_unlock(&stream->mutex);
  return status;
}

accel_status_t accel_cpu_stream_query(void* stream_ptr, bool* out_done) {
  accel_cpu_stream_t* stream = stream_ptr;
  pthread_mutex_lock(&stream->mutex);
  *out_done = stream->completed >= stream->enqueued;
  accel_status_t status = accel_cpu_stream_report(stream);
  pthread_mutex_unlock(&stream->mutex);
  return status;
}

accel_status_t accel_cpu_stream_wait_event(void* stream_ptr, void* event_ptr) {
  accel_cpu_stream_t* stream = stream_ptr;
  accel_cpu_event_t* event = event_ptr;
  // Capture the event's last record now; if it has already completed (or
  // never happened) there is nothing to wait for.
  uint64_t gen = accel_cpu_event_pending_gen(event);
  if (gen == 0) return ACCEL_OK;
  accel_cpu_task_t* task = accel_cpu_task_create(ACCEL_CPU_TASK_WAIT);
  if (task == NULL) {
    const accel_host_t* host = stream->device->host;
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      "cpu:%u: cannot queue an event wait",
                      stream->device->index);
  }
  accel_cpu_event_retain(event);
  task->u.event.event = event;
  task->u.event.gen = gen;
  accel_cpu_stream_submit(stream, task);
  return ACCEL_OK;
}
