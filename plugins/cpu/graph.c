// SPDX-License-Identifier: MIT
//
// Native graphs of the CPU plugin (plugin ABI 1.4). A capturing stream
// hands every task submitted to it to its capture (stream.c) instead of
// queueing it: the graph is the list of those tasks, kept as they were
// built, arguments and all. graph_launch queues one GRAPH task that runs
// the list in order on the stream's worker, so a launch costs one task
// and one wake-up however many nodes the graph has, where enqueueing the
// same work costs a task (or an inline run) per op.
//
// A task of the list may run many times: the CALL functions of the plugin
// treat their arguments as read-only, except kernel launches, which reset
// their failure fields at each run (module.c). The core orders launches of
// one graph, so two runs of a list never overlap. The graph is reference
// counted: its handle, and each GRAPH task queued, which the worker drops
// even when a stream error makes it skip the run, so graph_destroy may
// come while runs are queued.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

struct accel_cpu_graph {
  accel_cpu_device_t* device;
  atomic_uint refs;
  accel_cpu_task_t** tasks;
  size_t count;
  size_t capacity;
  // Why the capture cannot be a graph (ACCEL_OK when it can).
  accel_status_t failed;
  const char* why;
};

accel_cpu_graph_t* accel_cpu_graph_create(accel_cpu_device_t* device) {
  accel_cpu_graph_t* graph = calloc(1, sizeof(*graph));
  if (graph == NULL) return NULL;
  graph->device = device;
  atomic_init(&graph->refs, 1);
  return graph;
}

static void accel_cpu_graph_fail(accel_cpu_graph_t* graph,
                                 accel_status_t status, const char* why) {
  if (graph->failed != ACCEL_OK) return;
  graph->failed = status;
  graph->why = why;
}

void accel_cpu_graph_add(accel_cpu_graph_t* graph, accel_cpu_task_t* task) {
  if (task->kind == ACCEL_CPU_TASK_RECORD ||
      task->kind == ACCEL_CPU_TASK_WAIT || task->kind == ACCEL_CPU_TASK_GRAPH) {
    // Never sent by the core (it enqueues these between plugin graphs).
    // Complete a record at once, so no one waits for it for ever.
    if (task->kind == ACCEL_CPU_TASK_RECORD) {
      accel_cpu_event_complete(task, ACCEL_OK, "");
      accel_cpu_event_release(task->u.event.event);
    } else if (task->kind == ACCEL_CPU_TASK_WAIT) {
      accel_cpu_event_release(task->u.event.event);
    } else {
      accel_cpu_graph_release(task->u.graph);
    }
    free(task);
    accel_cpu_graph_fail(graph, ACCEL_ERROR_UNSUPPORTED,
                         "event records, event waits and graph launches "
                         "cannot be captured");
    return;
  }
  if (graph->count == graph->capacity) {
    size_t capacity = graph->capacity != 0 ? graph->capacity * 2 : 32;
    accel_cpu_task_t** tasks = realloc(graph->tasks, capacity * sizeof(*tasks));
    if (tasks == NULL) {
      free(task);
      accel_cpu_graph_fail(graph, ACCEL_ERROR_OUT_OF_MEMORY,
                           "no host memory to capture a task");
      return;
    }
    graph->tasks = tasks;
    graph->capacity = capacity;
  }
  graph->tasks[graph->count++] = task;
}

accel_status_t accel_cpu_graph_finish(accel_cpu_graph_t* graph) {
  if (graph->failed == ACCEL_OK) return ACCEL_OK;
  const accel_host_t* host = graph->device->host;
  accel_status_t status = host->fail(host, graph->failed, "cpu:%u: capture: %s",
                                     graph->device->index, graph->why);
  accel_cpu_graph_release(graph);
  return status;
}

accel_status_t accel_cpu_graph_run(accel_cpu_device_t* device,
                                   accel_cpu_graph_t* graph, char* message,
                                   size_t message_size) {
  for (size_t i = 0; i < graph->count; i++) {
    const accel_cpu_task_t* t = graph->tasks[i];
    switch (t->kind) {
      case ACCEL_CPU_TASK_COPY:
        accel_cpu_copy_run(device->plugin, t->u.copy.dst, t->u.copy.src,
                           t->u.copy.size, t->u.copy.overlap);
        break;
      case ACCEL_CPU_TASK_FILL:
        accel_cpu_fill_run(device->plugin, t->u.fill.dst, t->u.fill.value,
                           t->u.fill.size);
        break;
      case ACCEL_CPU_TASK_CALL: {
        accel_status_t status =
            t->u.call.fn(device, t->u.call.arg, message, message_size);
        if (status != ACCEL_OK) return status;
        break;
      }
      default:
        break;  // refused by accel_cpu_graph_add
    }
  }
  return ACCEL_OK;
}

void accel_cpu_graph_release(accel_cpu_graph_t* graph) {
  if (graph == NULL || atomic_fetch_sub(&graph->refs, 1) != 1) return;
  for (size_t i = 0; i < graph->count; i++) free(graph->tasks[i]);
  free(graph->tasks);
  free(graph);
}

accel_status_t accel_cpu_graph_launch(void* graph_ptr, void* stream) {
  accel_cpu_graph_t* graph = graph_ptr;
  accel_cpu_task_t* task = accel_cpu_task_create(ACCEL_CPU_TASK_GRAPH);
  if (task == NULL) {
    const accel_host_t* host = graph->device->host;
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      "cpu:%u: cannot queue a graph launch",
                      graph->device->index);
  }
  atomic_fetch_add(&graph->refs, 1);
  task->u.graph = graph;
  accel_cpu_stream_submit(stream, task);
  return ACCEL_OK;
}

void accel_cpu_graph_destroy(void* graph) { accel_cpu_graph_release(graph); }
