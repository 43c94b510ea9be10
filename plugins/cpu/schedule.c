// SPDX-License-Identifier: MIT
//
// Stream priorities of the CPU plugin: the run-slot gate (cpu.h).
//
// Every stream has its own worker thread, so streams never wait for each
// other's turn unless the machine runs out of cores; then the kernel's
// scheduler shares the cores out evenly and a priority would mean
// nothing. The gate gives priorities their meaning the way a GPU does:
// while an urgent stream (priority below 0) exists, at most `slots` tasks
// (the pool's width, one per core the plugin uses) run at once, and a free
// slot goes to the most urgent waiting stream, the oldest request first
// among equals. Running tasks are never preempted. RECORD and WAIT tasks
// take no slot, so a stream blocked on another stream's event never holds
// one (no wait can deadlock on the gate); inline work (small copies, fills
// and ops run by the enqueuing thread) takes none either.
//
// Without an urgent stream the gate is off: enter() is one relaxed atomic
// load and nothing else changes, so programs that never ask for a
// priority schedule exactly as before. A task that waits for another
// stream's task by other means than an event (a kernel spinning on memory
// another stream writes) may wait forever while the gate is on and more
// streams are busy than there are slots; CUDA gives no forward-progress
// promise across streams either (docs/cpu-backend.md).
#include <stdlib.h>

#include "cpu.h"

_Thread_local int32_t accel_cpu_thread_priority;

// One worker waiting for a slot, on its own stack.
struct accel_cpu_sched_waiter {
  accel_cpu_sched_waiter_t* next;
  int32_t priority;
};

bool accel_cpu_sched_init(accel_cpu_sched_t* sched) {
  if (pthread_mutex_init(&sched->mutex, NULL) != 0) return false;
  if (pthread_cond_init(&sched->cv, NULL) != 0) {
    pthread_mutex_destroy(&sched->mutex);
    return false;
  }
  atomic_init(&sched->urgent, 0);
  sched->running = 0;
  sched->slots = 0;
  sched->waiters = NULL;
  return true;
}

void accel_cpu_sched_deinit(accel_cpu_sched_t* sched) {
  pthread_cond_destroy(&sched->cv);
  pthread_mutex_destroy(&sched->mutex);
}

void accel_cpu_sched_stream_add(accel_cpu_plugin_t* plugin, int32_t priority) {
  if (priority >= 0) return;
  accel_cpu_sched_t* sched = plugin->sched;
  pthread_mutex_lock(&sched->mutex);
  if (sched->slots == 0) {
    // The pool's width, whether or not the pool runs yet.
    sched->slots = accel_cpu_pool_configured_width(plugin);
    if (sched->slots == 0) sched->slots = 1;
  }
  atomic_fetch_add_explicit(&sched->urgent, 1, memory_order_relaxed);
  pthread_mutex_unlock(&sched->mutex);
}

void accel_cpu_sched_stream_remove(accel_cpu_plugin_t* plugin,
                                   int32_t priority) {
  if (priority >= 0) return;
  accel_cpu_sched_t* sched = plugin->sched;
  pthread_mutex_lock(&sched->mutex);
  // The last urgent stream gone: the gate opens for every waiter.
  if (atomic_fetch_sub_explicit(&sched->urgent, 1, memory_order_relaxed) == 1) {
    pthread_cond_broadcast(&sched->cv);
  }
  pthread_mutex_unlock(&sched->mutex);
}

// Inserts `w` behind every waiter at least as urgent (so requests of one
// priority are served in order). Mutex held.
static void accel_cpu_sched_insert(accel_cpu_sched_t* sched,
                                   accel_cpu_sched_waiter_t* w) {
  accel_cpu_sched_waiter_t** at = &sched->waiters;
  while (*at != NULL && (*at)->priority <= w->priority) at = &(*at)->next;
  w->next = *at;
  *at = w;
}

bool accel_cpu_sched_enter(accel_cpu_plugin_t* plugin, int32_t priority) {
  accel_cpu_sched_t* sched = plugin->sched;
  if (atomic_load_explicit(&sched->urgent, memory_order_relaxed) == 0) {
    return false;
  }
  pthread_mutex_lock(&sched->mutex);
  accel_cpu_sched_waiter_t self = {.next = NULL, .priority = priority};
  accel_cpu_sched_insert(sched, &self);
  bool held = false;
  for (;;) {
    if (atomic_load_explicit(&sched->urgent, memory_order_relaxed) == 0) {
      break;  // the gate opened: run without a slot
    }
    if (sched->waiters == &self && sched->running < sched->slots) {
      sched->running++;
      held = true;
      break;
    }
    pthread_cond_wait(&sched->cv, &sched->mutex);
  }
  // `self` may not be the head when the gate opened.
  accel_cpu_sched_waiter_t** at = &sched->waiters;
  while (*at != &self) at = &(*at)->next;
  *at = self.next;
  // The next waiter may take a slot that is still free.
  if (sched->waiters != NULL) pthread_cond_broadcast(&sched->cv);
  pthread_mutex_unlock(&sched->mutex);
  return held;
}

void accel_cpu_sched_leave(accel_cpu_plugin_t* plugin, bool held) {
  if (!held) return;
  accel_cpu_sched_t* sched = plugin->sched;
  pthread_mutex_lock(&sched->mutex);
  sched->running--;
  if (sched->waiters != NULL) pthread_cond_broadcast(&sched->cv);
  pthread_mutex_unlock(&sched->mutex);
}
