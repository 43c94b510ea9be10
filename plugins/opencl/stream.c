// SPDX-License-Identifier: MIT
//
// Streams: one in-order command queue each. The queue has no profiling:
// on PoCL, profiling stamps every command and cost about 0.8 us per
// launch; timing events take their timestamps from 4-byte fills on a
// second, profiling queue instead (event.c), created at the first timing
// record.
//
// OpenCL reports a failed command through its event's execution status,
// through a wait's result (clFinish, clWaitForEvents) and, for commands
// after it, as the runtime chooses (the specification leaves the queue and
// its context implementation-defined once a command has terminated
// abnormally).
// Copies, fills and launches are enqueued without an event of their own
// (asking for one cost about 0.3 us per launch on PoCL); the stream keeps
// the markers and barriers that records, waits and queries enqueue until
// they are known to be complete, and the first one with a negative status,
// or a failing synchronize, becomes the stream's sticky error, reported by
// every later synchronize and query. The list is pruned of completed
// events whenever it fills, so it stays as long as the work in flight.
//
// stream_query must know whether the tail of the queue is covered by an
// event. Commands without one are counted (`untracked`, an atomic added to
// after each enqueue, so a copy or launch takes no lock); a command with
// an event reads the count before its enqueue, and since the queue is in
// order its event completes only after the commands counted by then. The
// stream keeps the largest such count (`covered`); query enqueues a marker
// only while the count is past it. A flag set and cleared under the mutex
// after each enqueue would cost a lock per copy, and could be cleared by a
// marker that two threads' enqueues had overtaken.
#define _GNU_SOURCE  // dladdr
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_opencl.h"
// After accel_opencl.h, which sets CL_TARGET_OPENCL_VERSION.
#include <CL/cl_ext.h>  // cl_khr_priority_hints

// First capacity of the pending list; it doubles only when every event in
// it is still running.
#define ACCEL_OPENCL_PENDING_MIN 64

// Creates a stream; `priority` is 0 (the device's default queue) or a
// cl_queue_priority_khr value (cl_khr_priority_hints).
static accel_status_t accel_opencl_stream_open(accel_opencl_device_t* device,
                                               accel_stream_flags_t flags,
                                               cl_uint priority,
                                               void** out_stream) {
  const accel_host_t* host = device->host;
  *out_stream = NULL;
  if (flags != 0) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "opencl:%u: unknown stream flags 0x%x", device->index,
                      (unsigned)flags);
  }
  accel_opencl_stream_t* stream = calloc(1, sizeof(*stream));
  if (stream == NULL || pthread_mutex_init(&stream->mutex, NULL) != 0) {
    free(stream);
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      "opencl:%u: stream state", device->index);
  }
  cl_int err = CL_SUCCESS;
  stream->device = device;
  if (priority == 0) {
    stream->queue =
        device->cl->clCreateCommandQueue(device->context, device->id, 0, &err);
  } else {
    const cl_queue_properties props[] = {CL_QUEUE_PRIORITY_KHR, priority, 0};
    stream->queue = device->cl->clCreateCommandQueueWithProperties(
        device->context, device->id, props, &err);
  }
  if (err != CL_SUCCESS) {
    pthread_mutex_destroy(&stream->mutex);
    free(stream);
    return accel_opencl_check(host, err,
                              priority == 0
                                  ? "clCreateCommandQueue"
                                  : "clCreateCommandQueueWithProperties");
  }
  *out_stream = stream;
  return ACCEL_OK;
}

accel_status_t accel_opencl_stream_create(void* device,
                                          accel_stream_flags_t flags,
                                          void** out_stream) {
  return accel_opencl_stream_open(device, flags, 0, out_stream);
}

// Whether `device` lists cl_khr_priority_hints (and the loader can create
// a queue with properties). Asked when a priority is, not cached.
static bool accel_opencl_priority_hints(accel_opencl_device_t* device) {
  const accel_opencl_api_t* cl = device->cl;
  if (cl->clCreateCommandQueueWithProperties == NULL) return false;
  size_t size = 0;
  if (cl->clGetDeviceInfo(device->id, CL_DEVICE_EXTENSIONS, 0, NULL, &size) !=
          CL_SUCCESS ||
      size == 0) {
    return false;
  }
  char* text = malloc(size + 1);
  if (text == NULL) return false;
  bool found = false;
  if (cl->clGetDeviceInfo(device->id, CL_DEVICE_EXTENSIONS, size, text, NULL) ==
      CL_SUCCESS) {
    text[size] = '\0';
    static const char name[] = "cl_khr_priority_hints";
    for (const char* at = strstr(text, name); at != NULL && !found;
         at = strstr(at + 1, name)) {
      char after = at[sizeof(name) - 1];
      found = (at == text || at[-1] == ' ') && (after == ' ' || after == '\0');
    }
  }
  free(text);
  return found;
}

accel_status_t accel_opencl_stream_priority_range(void* device,
                                                  int32_t* out_least,
                                                  int32_t* out_greatest) {
  bool hints = accel_opencl_priority_hints(device);
  *out_least = hints ? 1 : 0;
  *out_greatest = hints ? -1 : 0;
  return ACCEL_OK;
}

accel_status_t accel_opencl_stream_create_priority(void* device,
                                                   accel_stream_flags_t flags,
                                                   int32_t priority,
                                                   void** out_stream) {
  cl_uint hint = 0;  // 0: no hint, the default (medium) queue
  if (priority != 0 && accel_opencl_priority_hints(device)) {
    hint =
        priority < 0 ? CL_QUEUE_PRIORITY_HIGH_KHR : CL_QUEUE_PRIORITY_LOW_KHR;
  }
  return accel_opencl_stream_open(device, flags, hint, out_stream);
}

// Records the failure of `event` (status < 0) as the sticky error, unless
// an earlier one is already there. Under stream->mutex.
static void accel_opencl_stream_failed(accel_opencl_stream_t* stream,
                                       cl_event event, cl_int status) {
  if (stream->error != ACCEL_OK) return;
  cl_command_type type = 0;
  stream->device->cl->clGetEventInfo(event, CL_EVENT_COMMAND_TYPE, sizeof(type),
                                     &type, NULL);
  stream->error = status == CL_OUT_OF_HOST_MEMORY ? ACCEL_ERROR_OUT_OF_MEMORY
                                                  : ACCEL_ERROR_DEVICE_LOST;
  snprintf(stream->error_message, sizeof(stream->error_message),
           "opencl:%u: an enqueued command (type 0x%x) failed: %s",
           stream->device->index, (unsigned)type,
           accel_opencl_error_name(status));
}

// Drops completed events from the pending list, noting failures; when
// `all` the whole list goes (after clFinish). Returns whether every
// remaining event is complete (i.e. the list is now empty). Under
// stream->mutex.
static bool accel_opencl_stream_prune(accel_opencl_stream_t* stream, bool all) {
  const accel_opencl_api_t* cl = stream->device->cl;
  size_t kept = 0;
  for (size_t i = 0; i < stream->pending_count; i++) {
    cl_event event = stream->pending[i];
    cl_int status = CL_QUEUED;
    if (cl->clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS,
                           sizeof(status), &status, NULL) != CL_SUCCESS) {
      status = CL_COMPLETE;  // an event we cannot ask about: forget it
    }
    if (status < 0) accel_opencl_stream_failed(stream, event, status);
    if (status <= CL_COMPLETE || all) {
      cl->clReleaseEvent(event);
    } else {
      stream->pending[kept++] = event;
    }
  }
  stream->pending_count = kept;
  return kept == 0;
}

accel_status_t accel_opencl_stream_enqueued(accel_opencl_stream_t* stream,
                                            cl_int err, const char* what) {
  if (err != CL_SUCCESS) {
    return accel_opencl_check(stream->device->host, err, what);
  }
  // Counted after the enqueue has returned: a mark that sees this count
  // was read after the command was in the queue (stream.c, top).
  atomic_fetch_add_explicit(&stream->untracked, 1, memory_order_release);
  return ACCEL_OK;
}

accel_status_t accel_opencl_stream_tracked(accel_opencl_stream_t* stream,
                                           cl_int err, cl_event event,
                                           uint64_t mark, const char* what) {
  if (err != CL_SUCCESS) {
    return accel_opencl_check(stream->device->host, err, what);
  }
  pthread_mutex_lock(&stream->mutex);
  if (mark > stream->covered) stream->covered = mark;
  if (stream->pending_count == stream->pending_capacity) {
    accel_opencl_stream_prune(stream, false);
  }
  if (stream->pending_count == stream->pending_capacity) {
    size_t capacity = stream->pending_capacity ? stream->pending_capacity * 2
                                               : ACCEL_OPENCL_PENDING_MIN;
    cl_event* grown = realloc(stream->pending, capacity * sizeof(*grown));
    if (grown == NULL) {
      // The command is queued; only its error tracking is lost.
      pthread_mutex_unlock(&stream->mutex);
      stream->device->cl->clReleaseEvent(event);
      return ACCEL_OK;
    }
    stream->pending = grown;
    stream->pending_capacity = capacity;
  }
  stream->pending[stream->pending_count++] = event;
  pthread_mutex_unlock(&stream->mutex);
  return ACCEL_OK;
}

// The sticky error, reported through host->fail; under stream->mutex.
static accel_status_t accel_opencl_stream_error(accel_opencl_stream_t* stream) {
  if (stream->error == ACCEL_OK) return ACCEL_OK;
  const accel_host_t* host = stream->device->host;
  return host->fail(host, stream->error, "%s", stream->error_message);
}

void accel_opencl_stream_destroy(void* stream_ptr) {
  accel_opencl_stream_t* stream = stream_ptr;
  if (stream == NULL) return;
  const accel_opencl_api_t* cl = stream->device->cl;
  cl->clFinish(stream->queue);
  if (stream->timing_queue != NULL) {
    cl->clFinish(stream->timing_queue);
    cl->clReleaseCommandQueue(stream->timing_queue);
  }
  if (stream->timing_scratch != NULL) {
    cl->clReleaseMemObject(stream->timing_scratch);
  }
  accel_opencl_stream_prune(stream, true);
  cl->clReleaseCommandQueue(stream->queue);
  free(stream->pending);
  pthread_mutex_destroy(&stream->mutex);
  free(stream);
}

accel_status_t accel_opencl_stream_synchronize(void* stream_ptr) {
  accel_opencl_stream_t* stream = stream_ptr;
  const accel_opencl_api_t* cl = stream->device->cl;
  uint64_t mark = accel_opencl_stream_mark(stream);
  // A marker waited for, not clFinish: PoCL's clFinish waits until the
  // queue is empty, so it never returns while another thread keeps the
  // stream busy; plugin.h asks for the work enqueued so far
  // (stream.synchronize_busy). On an in-order queue the marker completes
  // when everything before it has.
  cl_event marker = NULL;
  cl_int err = cl->clEnqueueMarkerWithWaitList(stream->queue, 0, NULL, &marker);
  if (err == CL_SUCCESS) err = cl->clFlush(stream->queue);
  if (marker != NULL) {
    // A failed command before it: CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST.
    cl_int waited = cl->clWaitForEvents(1, &marker);
    if (err == CL_SUCCESS) err = waited;
    cl->clReleaseEvent(marker);
  }
  pthread_mutex_lock(&stream->mutex);
  accel_opencl_stream_prune(stream, false);
  if (mark > stream->covered) stream->covered = mark;
  if (err != CL_SUCCESS && stream->error == ACCEL_OK) {
    // A command without an event of its own failed (or the queue did).
    stream->error = err == CL_OUT_OF_HOST_MEMORY ? ACCEL_ERROR_OUT_OF_MEMORY
                                                 : ACCEL_ERROR_DEVICE_LOST;
    snprintf(stream->error_message, sizeof(stream->error_message),
             "opencl:%u: a command before the synchronize failed: %s",
             stream->device->index, accel_opencl_error_name(err));
  }
  accel_status_t status = accel_opencl_stream_error(stream);
  pthread_mutex_unlock(&stream->mutex);
  return status;
}

accel_status_t accel_opencl_stream_timing_queue(accel_opencl_stream_t* stream,
                                                cl_command_queue* out_queue,
                                                cl_mem* out_scratch) {
  accel_opencl_device_t* device = stream->device;
  const accel_opencl_api_t* cl = device->cl;
  cl_int err = CL_SUCCESS;
  const char* what = "clCreateCommandQueue (timing queue)";
  pthread_mutex_lock(&stream->mutex);
  if (stream->timing_queue == NULL) {
    stream->timing_queue = cl->clCreateCommandQueue(
        device->context, device->id, CL_QUEUE_PROFILING_ENABLE, &err);
    if (err != CL_SUCCESS) stream->timing_queue = NULL;
  }
  if (err == CL_SUCCESS && stream->timing_scratch == NULL) {
    what = "clCreateBuffer (timestamp scratch)";
    stream->timing_scratch =
        cl->clCreateBuffer(device->context, CL_MEM_READ_WRITE, 4, NULL, &err);
    if (err != CL_SUCCESS) stream->timing_scratch = NULL;
  }
  *out_queue = stream->timing_queue;
  *out_scratch = stream->timing_scratch;
  pthread_mutex_unlock(&stream->mutex);
  return accel_opencl_check(device->host, err, what);
}

accel_status_t accel_opencl_stream_query(void* stream_ptr, bool* out_done) {
  accel_opencl_stream_t* stream = stream_ptr;
  const accel_opencl_api_t* cl = stream->device->cl;
  *out_done = false;
  // Submit what is queued so that it can finish without a synchronize.
  cl_int err = cl->clFlush(stream->queue);
  if (err != CL_SUCCESS) {
    return accel_opencl_check(stream->device->host, err, "clFlush");
  }
  uint64_t mark = accel_opencl_stream_mark(stream);
  pthread_mutex_lock(&stream->mutex);
  bool untracked = mark > stream->covered;
  pthread_mutex_unlock(&stream->mutex);
  if (untracked) {
    // Work without an event is at the tail: a marker stands for it.
    cl_event marker = NULL;
    err = cl->clEnqueueMarkerWithWaitList(stream->queue, 0, NULL, &marker);
    if (err == CL_SUCCESS) cl->clFlush(stream->queue);
    accel_status_t status = accel_opencl_stream_tracked(
        stream, err, marker, mark, "clEnqueueMarkerWithWaitList");
    if (status != ACCEL_OK) return status;
  }
  pthread_mutex_lock(&stream->mutex);
  bool done = accel_opencl_stream_prune(stream, false);
  accel_status_t status = accel_opencl_stream_error(stream);
  pthread_mutex_unlock(&stream->mutex);
  *out_done = done;
  return status;
}

// ---------------------------------------------------------------------------
// Host functions (launch_host_func). OpenCL has no host commands, so three
// commands stand for one: a marker, which completes once the work before
// it has; a callback on the marker's completion, which calls the function
// (on the runtime's callback thread) and then completes a user event; and
// a barrier waiting for that user event, so the work after it waits until
// the function has returned. If the work before failed, the marker's
// status is negative: the function is not called and the user event takes
// the failure, which then reaches the barrier and the stream's sticky
// error.
// ---------------------------------------------------------------------------

typedef struct accel_opencl_host_call {
  const accel_opencl_api_t* cl;
  void (*fn)(void* user);
  void* user;
  cl_event gate;  // the user event the barrier waits for
  // Its relays count unload waits for; its host-call thread and queue.
  accel_opencl_plugin_t* plugin;
  struct accel_opencl_host_call* next;  // plugin->host_queue
} accel_opencl_host_call_t;

// Calls the function (unless the work before failed), completes the gate
// and frees the call.
static void accel_opencl_host_call_run(accel_opencl_host_call_t* call,
                                       cl_int status) {
  if (status >= 0) call->fn(call->user);
  call->cl->clSetUserEventStatus(call->gate, status < 0 ? status : CL_COMPLETE);
  call->cl->clReleaseEvent(call->gate);
  atomic_uint* relays = &call->plugin->relays;
  free(call);
  atomic_fetch_sub(relays, 1);  // last: unload may proceed
}

void accel_opencl_callback_pending(accel_opencl_plugin_t* plugin) {
  static atomic_bool kept;
  if (!atomic_exchange(&kept, true)) {
    // The object is already loaded (this code runs from it): RTLD_NOLOAD
    // only finds it and adds NODELETE, and the dlclose drops the extra
    // reference the dlopen took. If either fails the plugin is unmapped at
    // unload as before (the window is a few instructions wide).
    Dl_info info;
    if (dladdr(&kept, &info) != 0 && info.dli_fname != NULL) {
      void* self =
          dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
      if (self != NULL) dlclose(self);
    }
  }
  atomic_fetch_add(&plugin->relays, 1);
}

// True on a thread inside clSetEventCallback for a host function. A
// runtime may run the callback right there when the marker has already
// completed (PoCL does, on an idle queue): the function would then run
// inside launch_host_func, on the caller's thread, which controls.h rules
// out ("never inside this call"; accel-conform's control.host_func.idle).
// Such calls go to the plugin's host-call thread instead, in order.
static _Thread_local bool accel_opencl_setting_callback;

static void* accel_opencl_host_call_thread(void* data) {
  accel_opencl_plugin_t* plugin = data;
  pthread_mutex_lock(&plugin->host_mutex);
  for (;;) {
    accel_opencl_host_call_t* call = plugin->host_queue;
    if (call == NULL) {
      if (plugin->host_stop) break;
      pthread_cond_wait(&plugin->host_cond, &plugin->host_mutex);
      continue;
    }
    plugin->host_queue = call->next;
    if (plugin->host_queue == NULL) plugin->host_last = NULL;
    pthread_mutex_unlock(&plugin->host_mutex);
    accel_opencl_host_call_run(call, CL_COMPLETE);
    pthread_mutex_lock(&plugin->host_mutex);
  }
  pthread_mutex_unlock(&plugin->host_mutex);
  return NULL;
}

// Queues `call` for the host-call thread, starting it the first time;
// false when no thread can be had.
static bool accel_opencl_host_call_queue(accel_opencl_host_call_t* call) {
  accel_opencl_plugin_t* plugin = call->plugin;
  pthread_mutex_lock(&plugin->host_mutex);
  if (!plugin->host_thread_started) {
    plugin->host_thread_started =
        pthread_create(&plugin->host_thread, NULL,
                       accel_opencl_host_call_thread, plugin) == 0;
  }
  bool queued = plugin->host_thread_started;
  if (queued) {
    call->next = NULL;
    if (plugin->host_last != NULL) {
      plugin->host_last->next = call;
    } else {
      plugin->host_queue = call;
    }
    plugin->host_last = call;
    pthread_cond_signal(&plugin->host_cond);
  }
  pthread_mutex_unlock(&plugin->host_mutex);
  return queued;
}

static void CL_CALLBACK accel_opencl_host_call_fire(cl_event marker,
                                                    cl_int status, void* data) {
  (void)marker;
  accel_opencl_host_call_t* call = data;
  if (accel_opencl_setting_callback && status >= 0 &&
      accel_opencl_host_call_queue(call)) {
    return;
  }
  // On the runtime's callback thread; or, with no thread to be had, here:
  // late is better than never.
  accel_opencl_host_call_run(call, status);
}

bool accel_opencl_host_calls_init(accel_opencl_plugin_t* plugin) {
  if (pthread_mutex_init(&plugin->host_mutex, NULL) != 0) return false;
  if (pthread_cond_init(&plugin->host_cond, NULL) != 0) {
    pthread_mutex_destroy(&plugin->host_mutex);
    return false;
  }
  plugin->host_queue = plugin->host_last = NULL;
  plugin->host_thread_started = plugin->host_stop = false;
  return true;
}

void accel_opencl_host_calls_close(accel_opencl_plugin_t* plugin) {
  pthread_mutex_lock(&plugin->host_mutex);
  plugin->host_stop = true;
  pthread_cond_signal(&plugin->host_cond);
  bool started = plugin->host_thread_started;
  pthread_mutex_unlock(&plugin->host_mutex);
  if (started) pthread_join(plugin->host_thread, NULL);
  pthread_cond_destroy(&plugin->host_cond);
  pthread_mutex_destroy(&plugin->host_mutex);
}

accel_status_t accel_opencl_launch_host_func(void* stream_ptr,
                                             void (*fn)(void* user),
                                             void* user) {
  accel_opencl_stream_t* stream = stream_ptr;
  accel_opencl_device_t* device = stream->device;
  const accel_opencl_api_t* cl = device->cl;
  accel_opencl_host_call_t* call = malloc(sizeof(*call));
  if (call == NULL) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              "opencl:%u: host function", device->index);
  }
  cl_int err = CL_SUCCESS;
  call->cl = cl;
  call->fn = fn;
  call->user = user;
  call->plugin = device->plugin;
  call->next = NULL;
  call->gate = cl->clCreateUserEvent(device->context, &err);
  if (err != CL_SUCCESS) {
    free(call);
    return accel_opencl_check(device->host, err, "clCreateUserEvent");
  }
  cl_event gate = call->gate;
  cl_event marker = NULL;
  uint64_t mark = accel_opencl_stream_mark(stream);
  err = cl->clEnqueueMarkerWithWaitList(stream->queue, 0, NULL, &marker);
  if (err != CL_SUCCESS) {
    cl->clReleaseEvent(gate);
    free(call);
    return accel_opencl_check(device->host, err,
                              "clEnqueueMarkerWithWaitList (host function)");
  }
  cl->clRetainEvent(gate);  // the callback's reference
  accel_opencl_callback_pending(call->plugin);
  accel_opencl_setting_callback = true;
  err = cl->clSetEventCallback(marker, CL_COMPLETE, accel_opencl_host_call_fire,
                               call);
  accel_opencl_setting_callback = false;
  if (err != CL_SUCCESS) {
    atomic_fetch_sub(&call->plugin->relays, 1);
    cl->clReleaseEvent(gate);
    cl->clReleaseEvent(gate);
    free(call);
    accel_opencl_stream_tracked(stream, CL_SUCCESS, marker, mark, "marker");
    return accel_opencl_check(device->host, err,
                              "clSetEventCallback (host function)");
  }
  // The marker's failure is the stream's too; the barrier holds up the
  // work after the function.
  accel_opencl_stream_tracked(stream, CL_SUCCESS, marker, mark,
                              "clEnqueueMarkerWithWaitList");
  cl_event barrier = NULL;
  mark = accel_opencl_stream_mark(stream);
  err = cl->clEnqueueBarrierWithWaitList(stream->queue, 1, &gate, &barrier);
  cl->clReleaseEvent(gate);
  accel_status_t status = accel_opencl_stream_tracked(
      stream, err, err == CL_SUCCESS ? barrier : NULL, mark,
      "clEnqueueBarrierWithWaitList (host function)");
  // Submitted now, so the function runs without a synchronize.
  if (status == ACCEL_OK) {
    status =
        accel_opencl_check(device->host, cl->clFlush(stream->queue), "clFlush");
  }
  return status;
}
