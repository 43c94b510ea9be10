// SPDX-License-Identifier: MIT
//
// Streams of the CPU plugin: an in-order FIFO of tasks drained by one
// worker thread per stream.
//
// Progress is tracked with two counters under the stream's mutex:
// `enqueued` counts tasks ever submitted and `completed` tasks that have
// run. Since tasks run in order, "everything enqueued so far has run" is
// `completed >= enqueued-at-the-time-of-the-call`, which stays correct while
// other threads keep adding work. An idle worker spins for up to
// ACCEL_CPU_SPIN_NS on `submitted` (an atomic copy of `enqueued`) before it
// sleeps on `work_cv`, and submit signals only a sleeping worker; a
// synchronising thread likewise spins on `done` (a copy of `completed`)
// before it sleeps on `done_cv`. Back-to-back work (enqueue, synchronize,
// enqueue) then costs no futex wake-up, which on the development VM took
// 5-130 us each way: more than a 1 MiB elementwise op.
//
// The first failure of a queued task is kept (status and message) and
// reported by every later synchronize and query of the stream, as a GPU
// runtime reports a sticky fault. After a failure, data tasks are skipped
// but RECORD and WAIT tasks still run, so events complete (carrying the
// error) and nothing waiting on them hangs.
//
// Inline execution. Waking the worker costs microseconds (a futex wake-up
// across CPUs, then another to wake whoever synchronises), against ~50 ns
// for a 4 KiB memcpy. So small work submitted to an idle stream runs on
// the calling thread instead (accel_cpu_stream_inline_begin/_end, used by
// memory.c, ops.c and module.c, which pick what is small enough). "Idle"
// is `completed == enqueued` under the mutex: nothing queued, nothing
// running on the worker (a task being run, a WAIT blocked on its event) or
// inline on another thread; plus no sticky error, so that the skipping of
// data tasks after a failure stays the worker's alone. Inline work counts
// as enqueued when it starts and completed when it ends, exactly as a task
// would, so query, synchronize and events see it like queued work:
// - while it runs, `completed < enqueued`, so work that another thread
//   submits meanwhile is queued (never run inline) and the worker does not
//   start it before `inline_busy` clears: stream order is kept;
// - an event recorded after it, from any thread, completes after it, with
//   a later timestamp;
// - a failure becomes the sticky error, with the message the worker would
//   have stored ("cpu:N: <reason>").
// Inline work runs with the mutex released (`inline_busy` keeps the order
// instead), because a kernel is user code that may call accel on this
// same stream: an enqueue from it then queues behind it, a query reports
// "not done", as on the worker. Only copies and fills of up to 64 KiB
// (a memcpy of a few µs at most, no lock, no user code) keep the mutex
// from begin to end (`hold`), saving a lock round trip that is a third of
// the cost of a 4 KiB copy; other threads then wait for the mutex instead
// of the flag. A RECORD task on an idle stream completes at once in
// submit, under the mutex, exactly as the worker would run it next.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

struct accel_cpu_stream {
  accel_cpu_device_t* device;
  int32_t priority;  // ACCEL_CPU_PRIORITY_GREATEST .. 0 (schedule.c)
  pthread_t worker;
  pthread_mutex_t mutex;
  pthread_cond_t work_cv;  // signalled when a task arrives or on stop
  pthread_cond_t done_cv;  // broadcast when `wake_at` is reached
  // Everything below is guarded by `mutex`.
  accel_cpu_task_t* head;
  accel_cpu_task_t* tail;
  uint64_t enqueued;
  uint64_t completed;
  bool inline_busy;  // inline work runs on a caller's thread (see above)
  accel_cpu_graph_t* capture;  // tasks go here while set (graph.c)
  bool stopping;
  bool worker_sleeping;  // the worker waits in work_cv (not spinning)
  // The lowest `completed` count a synchronizer sleeping in done_cv waits
  // for, 0 when none sleeps: it is woken once, at its target, not after
  // every task (a wake-up per 4 MiB copy cost the worker 4% in the kernel
  // and woke the waiter's CPU for nothing).
  uint64_t wake_at;
  // Copies of `enqueued` and `completed`, written under `mutex`, read
  // without it by spinning threads.
  _Atomic uint64_t submitted;
  _Atomic uint64_t done;
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

// Runs a RECORD task: completes its event with the stream's error so far.
// Mutex held (lock order: stream, then event), so that the event completes
// together with the stream's count: once either is seen finished, so is
// the other. Frees the task.
static void accel_cpu_stream_record(accel_cpu_stream_t* stream,
                                    accel_cpu_task_t* task) {
  accel_cpu_event_complete(task, stream->error, stream->message);
  accel_cpu_event_release(task->u.event.event);
  free(task);
}

// Wakes the synchronizers once the count they wait for is reached
// (mutex held).
static void accel_cpu_stream_wake_syncs(accel_cpu_stream_t* stream) {
  if (stream->wake_at != 0 && stream->completed >= stream->wake_at) {
    stream->wake_at = 0;  // those still short set it again
    pthread_cond_broadcast(&stream->done_cv);
  }
}

// Increments `*counter` (enqueued or completed; mutex held) and its
// atomic copy `*copy`, which spinning threads read without the mutex.
static void accel_cpu_stream_count(uint64_t* counter, _Atomic uint64_t* copy) {
  ++*counter;
  atomic_store_explicit(copy, *counter, memory_order_release);
}

void accel_cpu_stream_submit(accel_cpu_stream_t* stream,
                             accel_cpu_task_t* task) {
  task->next = NULL;
  pthread_mutex_lock(&stream->mutex);
  if (stream->capture != NULL) {
    accel_cpu_graph_add(stream->capture, task);
    pthread_mutex_unlock(&stream->mutex);
    return;
  }
  if (task->kind == ACCEL_CPU_TASK_RECORD &&
      stream->completed == stream->enqueued) {
    // Idle: the worker would run it next, the same way. A sticky error
    // does not matter here: the record carries it either way.
    accel_cpu_stream_count(&stream->enqueued, &stream->submitted);
    accel_cpu_stream_record(stream, task);
    accel_cpu_stream_count(&stream->completed, &stream->done);
    pthread_mutex_unlock(&stream->mutex);
    return;
  }
  if (stream->tail != NULL) {
    stream->tail->next = task;
  } else {
    stream->head = task;
  }
  stream->tail = task;
  accel_cpu_stream_count(&stream->enqueued, &stream->submitted);
  if (stream->worker_sleeping) pthread_cond_signal(&stream->work_cv);
  pthread_mutex_unlock(&stream->mutex);
}

bool accel_cpu_stream_inline_begin(accel_cpu_stream_t* stream, bool hold) {
  pthread_mutex_lock(&stream->mutex);
  bool idle = stream->completed == stream->enqueued &&
              stream->error == ACCEL_OK && !stream->stopping &&
              stream->capture == NULL;
  if (!idle) {
    pthread_mutex_unlock(&stream->mutex);
    return false;
  }
  accel_cpu_stream_count(&stream->enqueued, &stream->submitted);
  if (!hold) {
    stream->inline_busy = true;
    pthread_mutex_unlock(&stream->mutex);
  }
  return true;
}

// Stores the first failure as the stream's sticky error. Mutex held.
static void accel_cpu_stream_fail(accel_cpu_stream_t* stream,
                                  accel_status_t status, const char* reason) {
  if (status == ACCEL_OK || stream->error != ACCEL_OK) return;
  stream->error = status;
  snprintf(stream->message, sizeof(stream->message), "cpu:%u: %.480s",
           stream->device->index, reason);
}

void accel_cpu_stream_inline_end(accel_cpu_stream_t* stream, bool held,
                                 accel_status_t status, const char* reason) {
  if (!held) pthread_mutex_lock(&stream->mutex);
  accel_cpu_stream_fail(stream, status, reason);
  accel_cpu_stream_count(&stream->completed, &stream->done);
  if (!held) {
    stream->inline_busy = false;
    // Work queued meanwhile waits for the worker, which waits for us.
    if (stream->head != NULL || stream->stopping) {
      pthread_cond_signal(&stream->work_cv);
    }
    accel_cpu_stream_wake_syncs(stream);
  }
  pthread_mutex_unlock(&stream->mutex);
}

// Runs one task other than RECORD on the worker of a stream of `device`.
// `failed` says whether the stream already has an error, in which case
// data tasks are skipped. Returns the task's own status; a failing CALL
// task writes its reason into `out_message`. Releases the event reference
// of WAIT tasks.
static accel_status_t accel_cpu_task_run(accel_cpu_device_t* device,
                                         accel_cpu_task_t* task, bool failed,
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
      break;  // accel_cpu_stream_record, under the mutex
    case ACCEL_CPU_TASK_WAIT:
      accel_cpu_event_wait(task->u.event.event, task->u.event.gen);
      accel_cpu_event_release(task->u.event.event);
      break;
    case ACCEL_CPU_TASK_GRAPH: {
      accel_status_t status =
          failed ? ACCEL_OK
                 : accel_cpu_graph_run(device, task->u.graph, out_message,
                                       ACCEL_CPU_MESSAGE_SIZE);
      accel_cpu_graph_release(task->u.graph);
      return status;
    }
  }
  return ACCEL_OK;
}

static void* accel_cpu_stream_worker(void* arg) {
  accel_cpu_stream_t* stream = arg;
  char reason[ACCEL_CPU_MESSAGE_SIZE] = "";
  accel_cpu_device_t* device = stream->device;
  accel_cpu_thread_priority = stream->priority;  // orders its pool jobs
  accel_cpu_thread_name("accel-stream");
  pthread_mutex_lock(&stream->mutex);
  for (;;) {
    // Work queued behind inline work waits for it to finish.
    while ((stream->head == NULL && !stream->stopping) || stream->inline_busy) {
      uint64_t seen = stream->enqueued;
      if (!stream->inline_busy) {
        pthread_mutex_unlock(&stream->mutex);
        bool woken =
            accel_cpu_spin_while(&stream->submitted, seen, ACCEL_CPU_SPIN_NS,
                                 &device->plugin->engine_threads);
        pthread_mutex_lock(&stream->mutex);
        if (woken) continue;
        if (stream->head != NULL || stream->stopping) continue;
      }
      stream->worker_sleeping = true;
      pthread_cond_wait(&stream->work_cv, &stream->mutex);
      stream->worker_sleeping = false;
    }
    accel_cpu_task_t* task = stream->head;
    if (task == NULL) break;  // stopping and drained
    stream->head = task->next;
    if (stream->head == NULL) stream->tail = NULL;
    accel_status_t status = ACCEL_OK;
    if (task->kind == ACCEL_CPU_TASK_RECORD) {
      accel_cpu_stream_record(stream, task);
    } else {
      bool failed = stream->error != ACCEL_OK;
      pthread_mutex_unlock(&stream->mutex);
      strcpy(reason, "queued work failed");
      // Work that runs takes a run slot while priorities are in use; a
      // wait takes none (schedule.c).
      bool slot = !failed && task->kind != ACCEL_CPU_TASK_WAIT &&
                  accel_cpu_sched_enter(device->plugin, stream->priority);
      status = accel_cpu_task_run(device, task, failed, reason);
      accel_cpu_sched_leave(device->plugin, slot);
      free(task);
      pthread_mutex_lock(&stream->mutex);
    }
    accel_cpu_stream_fail(stream, status, reason);
    accel_cpu_stream_count(&stream->completed, &stream->done);
    accel_cpu_stream_wake_syncs(stream);
  }
  pthread_mutex_unlock(&stream->mutex);
  return NULL;
}

// Creates a stream of `priority` (already in range).
static accel_status_t accel_cpu_stream_open(accel_cpu_device_t* device,
                                            accel_stream_flags_t flags,
                                            int32_t priority,
                                            void** out_stream) {
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
  stream->priority = priority;
  int rc = pthread_mutex_init(&stream->mutex, NULL);
  if (rc != 0) goto fail_mutex;
  rc = pthread_cond_init(&stream->work_cv, NULL);
  if (rc != 0) goto fail_work_cv;
  rc = pthread_cond_init(&stream->done_cv, NULL);
  if (rc != 0) goto fail_done_cv;
  rc = pthread_create(&stream->worker, NULL, accel_cpu_stream_worker, stream);
  if (rc != 0) goto fail_worker;
  accel_cpu_sched_stream_add(device->plugin, priority);
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

accel_status_t accel_cpu_stream_create(void* device, accel_stream_flags_t flags,
                                       void** out_stream) {
  return accel_cpu_stream_open(device, flags, ACCEL_CPU_PRIORITY_LEAST,
                               out_stream);
}

accel_status_t accel_cpu_stream_priority_range(void* device, int32_t* out_least,
                                               int32_t* out_greatest) {
  (void)device;
  *out_least = ACCEL_CPU_PRIORITY_LEAST;
  *out_greatest = ACCEL_CPU_PRIORITY_GREATEST;
  return ACCEL_OK;
}

accel_status_t accel_cpu_stream_create_priority(void* device,
                                                accel_stream_flags_t flags,
                                                int32_t priority,
                                                void** out_stream) {
  // The core clamps; so does the plugin, for a caller that does not.
  if (priority < ACCEL_CPU_PRIORITY_GREATEST) {
    priority = ACCEL_CPU_PRIORITY_GREATEST;
  }
  if (priority > ACCEL_CPU_PRIORITY_LEAST) priority = ACCEL_CPU_PRIORITY_LEAST;
  return accel_cpu_stream_open(device, flags, priority, out_stream);
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
  accel_cpu_sched_stream_remove(stream->device->plugin, stream->priority);
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
  if (stream->completed < target) {
    // Spin a little first: short work completes without a wake-up.
    const _Atomic uint32_t* quiet = &stream->device->plugin->engine_threads;
    uint64_t seen = stream->completed;
    pthread_mutex_unlock(&stream->mutex);
    uint64_t start = accel_cpu_now_ns();
    while (accel_cpu_now_ns() - start < ACCEL_CPU_SPIN_NS && seen < target &&
           accel_cpu_may_spin(quiet)) {
      if (accel_cpu_spin_while(&stream->done, seen, ACCEL_CPU_SPIN_NS,
                               quiet)) {
        seen = atomic_load_explicit(&stream->done, memory_order_acquire);
      }
    }
    pthread_mutex_lock(&stream->mutex);
  }
  while (stream->completed < target) {
    if (stream->wake_at == 0 || target < stream->wake_at) {
      stream->wake_at = target;
    }
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

// A host function's CALL task: `fn(user)`, skipped (by the worker) after a
// failure, as every data task is.
typedef struct accel_cpu_host_call {
  void (*fn)(void* user);
  void* user;
} accel_cpu_host_call_t;

static accel_status_t accel_cpu_host_call_run(accel_cpu_device_t* device,
                                              void* arg, char* message,
                                              size_t message_size) {
  (void)device, (void)message, (void)message_size;
  const accel_cpu_host_call_t* call = arg;
  call->fn(call->user);
  return ACCEL_OK;
}

accel_status_t accel_cpu_launch_host_func(void* stream_ptr,
                                          void (*fn)(void* user), void* user) {
  accel_cpu_stream_t* stream = stream_ptr;
  accel_cpu_task_t* task = accel_cpu_task_create_call(
      accel_cpu_host_call_run, sizeof(accel_cpu_host_call_t));
  if (task == NULL) {
    const accel_host_t* host = stream->device->host;
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      "cpu:%u: cannot queue a host function",
                      stream->device->index);
  }
  accel_cpu_host_call_t* call = task->u.call.arg;
  call->fn = fn;
  call->user = user;
  accel_cpu_stream_submit(stream, task);
  return ACCEL_OK;
}

// ---------------------------------------------------------------------------
// Capture (plugin ABI 1.4; the graphs themselves are in graph.c)
// ---------------------------------------------------------------------------

accel_status_t accel_cpu_stream_begin_capture(void* stream_ptr) {
  accel_cpu_stream_t* stream = stream_ptr;
  const accel_host_t* host = stream->device->host;
  accel_cpu_graph_t* graph = accel_cpu_graph_create(stream->device);
  if (graph == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      "cpu:%u: no host memory to capture a graph",
                      stream->device->index);
  }
  pthread_mutex_lock(&stream->mutex);
  bool busy = stream->capture != NULL;
  if (!busy) stream->capture = graph;
  pthread_mutex_unlock(&stream->mutex);
  if (busy) {
    accel_cpu_graph_release(graph);
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "cpu:%u: the stream is capturing already",
                      stream->device->index);
  }
  return ACCEL_OK;
}

accel_status_t accel_cpu_stream_end_capture(void* stream_ptr,
                                            void** out_graph) {
  accel_cpu_stream_t* stream = stream_ptr;
  *out_graph = NULL;
  pthread_mutex_lock(&stream->mutex);
  accel_cpu_graph_t* graph = stream->capture;
  stream->capture = NULL;
  pthread_mutex_unlock(&stream->mutex);
  if (graph == NULL) {
    const accel_host_t* host = stream->device->host;
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "cpu:%u: the stream is not capturing",
                      stream->device->index);
  }
  accel_status_t status = accel_cpu_graph_finish(graph);
  if (status == ACCEL_OK) *out_graph = graph;
  return status;
}
