// SPDX-License-Identifier: MIT
//
// Inline execution (plugins/cpu/stream.c) from inside the CPU plugin: this
// test compiles the plugin's sources in and drives its internal interface
// (cpu.h) with a host table of its own, so it can do what the public API
// cannot: make queued or inline work fail, and hold inline work open while
// other threads submit.
//
// Checked: after a failure (queued or inline) small work is skipped, not
// run inline, and the sticky error and its message stay; work submitted
// by another thread during inline work (a task, an event record) waits for
// it; a busy stream, or one waiting on an unfinished event, refuses inline
// work. And spinning: no thread spins while a GEMM engine runs on its own
// threads (engine_threads), neither accel_cpu_spin_while nor a thread
// synchronising with such work.
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu.h"
#include "engine.h"

ACCEL_PLUGIN_EXPORT const accel_plugin_t* accel_plugin_entry(uint32_t host_abi);

enum { kBytes = 4096, kPauseMs = 30 };

#include "test_host.h"

// test.h's ASSERT_OK and ASSERT_STATUS print these; libaccel, which
// defines them, is not linked here.
static const char* accel_last_error(void) { return test_host_message; }

static const char* accel_status_string(accel_status_t status) {
  static _Thread_local char text[32];
  snprintf(text, sizeof(text), "status %d", (int)status);
  return text;
}

#include "test.h"

static void sleep_ms(int ms) {
  struct timespec t = {0, (long)ms * 1000000L};
  nanosleep(&t, NULL);
}

typedef struct fixture {
  const accel_plugin_t* desc;
  void* plugin;
  accel_cpu_device_t* device;
  accel_cpu_stream_t* stream;
  unsigned char* mem;  // kBytes of device memory, zeroed
  unsigned char src[kBytes];
} fixture_t;

static accel_status_t fixture_init(fixture_t* f) {
  memset(f, 0, sizeof(*f));
  memset(f->src, 0x5A, sizeof(f->src));
  f->desc = accel_plugin_entry(ACCEL_PLUGIN_ABI_VERSION);
  if (f->desc == NULL) return ACCEL_ERROR_INCOMPATIBLE;
  accel_status_t s = f->desc->load(&test_host, &f->plugin);
  void* device = NULL;
  void* stream = NULL;
  void* mem = NULL;
  if (s == ACCEL_OK) s = f->desc->device_open(f->plugin, 0, &device);
  f->device = device;
  if (s == ACCEL_OK) s = accel_cpu_stream_create(device, 0, &stream);
  f->stream = stream;
  if (s == ACCEL_OK) s = accel_cpu_mem_alloc(device, kBytes, &mem);
  f->mem = mem;
  if (s == ACCEL_OK) s = accel_cpu_memset(device, NULL, mem, 0, 0, kBytes);
  return s;
}

static void fixture_deinit(fixture_t* f) {
  if (f->stream != NULL) accel_cpu_stream_destroy(f->stream);
  if (f->mem != NULL) accel_cpu_mem_free(f->device, f->mem);
  if (f->device != NULL) f->desc->device_close(f->device);
  if (f->plugin != NULL) f->desc->unload(f->plugin);
}

static bool all_bytes(const unsigned char* p, size_t n, unsigned char value) {
  for (size_t i = 0; i < n; i++) {
    if (p[i] != value) return false;
  }
  return true;
}

// A CALL task body that fails, as a kernel or op running out of memory
// would.
static accel_status_t fail_call(accel_cpu_device_t* device, void* arg,
                                char* message, size_t size) {
  (void)device;
  (void)arg;
  snprintf(message, size, "injected failure");
  return ACCEL_ERROR_BACKEND;
}

// Enqueues small work of every inline kind on `f->stream`, each of which
// would change f->mem if it ran.
static accel_status_t enqueue_small(fixture_t* f) {
  accel_status_t s =
      accel_cpu_copy_h2d(f->device, f->stream, f->mem, 0, f->src, kBytes);
  if (s == ACCEL_OK) {
    s = accel_cpu_memset(f->device, f->stream, f->mem, 0, 0x33, 64);
  }
  if (s == ACCEL_OK) {
    s = accel_cpu_op_fill(f->device, f->stream, f->mem, 128, ACCEL_DTYPE_F32,
                          16, 1.0);
  }
  return s;
}

TEST(small_work_after_a_queued_failure_is_skipped) {
  fixture_t f;
  ASSERT_OK(fixture_init(&f));
  accel_cpu_task_t* task = accel_cpu_task_create_call(fail_call, 0);
  ASSERT_NOT_NULL(task);
  accel_cpu_stream_submit(f.stream, task);
  ASSERT_STATUS(accel_cpu_stream_synchronize(f.stream), ACCEL_ERROR_BACKEND);
  ASSERT_STR_EQ(test_host_message, "cpu:0: injected failure");
  // The stream is idle but failed: small work is queued and skipped, as
  // before inline execution existed, never run on this thread.
  ASSERT_OK(enqueue_small(&f));
  ASSERT_STATUS(accel_cpu_stream_synchronize(f.stream), ACCEL_ERROR_BACKEND);
  ASSERT_STR_EQ(test_host_message, "cpu:0: injected failure");
  ASSERT(all_bytes(f.mem, kBytes, 0));
  bool done = false;
  ASSERT_STATUS(accel_cpu_stream_query(f.stream, &done), ACCEL_ERROR_BACKEND);
  ASSERT(done);
  // An event recorded now carries the error.
  void* event = NULL;
  ASSERT_OK(accel_cpu_event_create(f.device, 0, &event));
  ASSERT_OK(accel_cpu_event_record(event, f.stream));
  ASSERT_STATUS(accel_cpu_event_synchronize(event), ACCEL_ERROR_BACKEND);
  ASSERT_STR_EQ(test_host_message, "cpu:0: injected failure");
  accel_cpu_event_destroy(event);
  fixture_deinit(&f);
}

TEST(failing_inline_work_is_the_sticky_error) {
  fixture_t f;
  ASSERT_OK(fixture_init(&f));
  void* before = NULL;
  ASSERT_OK(accel_cpu_event_create(f.device, 0, &before));
  ASSERT_OK(accel_cpu_event_record(before, f.stream));
  ASSERT(accel_cpu_stream_inline_begin(f.stream, false));
  accel_cpu_stream_inline_end(f.stream, false, ACCEL_ERROR_OUT_OF_MEMORY,
                              "inline failure");
  bool done = false;
  ASSERT_STATUS(accel_cpu_stream_query(f.stream, &done),
                ACCEL_ERROR_OUT_OF_MEMORY);
  ASSERT(done);
  ASSERT_STR_EQ(test_host_message, "cpu:0: inline failure");
  // An event recorded before it is clean; one recorded after carries it.
  ASSERT_OK(accel_cpu_event_synchronize(before));
  void* after = NULL;
  ASSERT_OK(accel_cpu_event_create(f.device, 0, &after));
  ASSERT_OK(accel_cpu_event_record(after, f.stream));
  ASSERT_STATUS(accel_cpu_event_synchronize(after), ACCEL_ERROR_OUT_OF_MEMORY);
  // Later small work is skipped; the first error stays.
  ASSERT(!accel_cpu_stream_inline_begin(f.stream, true));
  ASSERT_OK(enqueue_small(&f));
  accel_cpu_task_t* task = accel_cpu_task_create_call(fail_call, 0);
  ASSERT_NOT_NULL(task);
  accel_cpu_stream_submit(f.stream, task);
  ASSERT_STATUS(accel_cpu_stream_synchronize(f.stream),
                ACCEL_ERROR_OUT_OF_MEMORY);
  ASSERT_STR_EQ(test_host_message, "cpu:0: inline failure");
  ASSERT(all_bytes(f.mem, kBytes, 0));
  accel_cpu_event_destroy(after);
  accel_cpu_event_destroy(before);
  fixture_deinit(&f);
}

static accel_status_t set_flag_call(accel_cpu_device_t* device, void* arg,
                                    char* message, size_t size) {
  (void)device;
  (void)message;
  (void)size;
  int* flag = *(int**)arg;
  __atomic_store_n(flag, 1, __ATOMIC_RELEASE);
  return ACCEL_OK;
}

typedef struct submitter {
  fixture_t* f;
  void* event;
  int flag;
} submitter_t;

// Submits, from another thread, a task setting `flag`, then small work,
// then an event record.
static void* submitter_main(void* p) {
  submitter_t* s = p;
  accel_cpu_task_t* task =
      accel_cpu_task_create_call(set_flag_call, sizeof(int*));
  if (task != NULL) {
    int* flag = &s->flag;
    memcpy(task->u.call.arg, &flag, sizeof(flag));
    accel_cpu_stream_submit(s->f->stream, task);
  }
  enqueue_small(s->f);
  accel_cpu_event_record(s->event, s->f->stream);
  return NULL;
}

TEST(work_submitted_during_inline_work_waits_for_it) {
  fixture_t f;
  ASSERT_OK(fixture_init(&f));
  submitter_t s = {.f = &f};
  ASSERT_OK(accel_cpu_event_create(f.device, ACCEL_EVENT_TIMING, &s.event));
  // Inline work "runs" on this thread from here to inline_end.
  ASSERT(accel_cpu_stream_inline_begin(f.stream, false));
  pthread_t thread;
  ASSERT_EQ(pthread_create(&thread, NULL, submitter_main, &s), 0);
  ASSERT_EQ(pthread_join(thread, NULL), 0);
  sleep_ms(kPauseMs);
  // The other thread's work queued (not inline) and the worker has not
  // started it.
  ASSERT_EQ(__atomic_load_n(&s.flag, __ATOMIC_ACQUIRE), 0);
  ASSERT(all_bytes(f.mem, kBytes, 0));
  bool done = true;
  ASSERT_OK(accel_cpu_event_query(s.event, &done));
  ASSERT(!done);
  ASSERT_OK(accel_cpu_stream_query(f.stream, &done));
  ASSERT(!done);
  accel_cpu_stream_inline_end(f.stream, false, ACCEL_OK, NULL);
  ASSERT_OK(accel_cpu_event_synchronize(s.event));
  ASSERT_OK(accel_cpu_stream_synchronize(f.stream));
  ASSERT_EQ(__atomic_load_n(&s.flag, __ATOMIC_ACQUIRE), 1);
  unsigned char want[kBytes];
  memset(want, 0x5A, sizeof(want));
  memset(want, 0x33, 64);
  float one = 1.0f;
  for (int i = 0; i < 16; i++) memcpy(want + 128 + 4 * i, &one, 4);
  ASSERT_MEM_EQ(f.mem, want, kBytes);
  accel_cpu_event_destroy(s.event);
  fixture_deinit(&f);
}

typedef struct gate {
  int open;
  int entered;
} gate_t;

static accel_status_t gate_call(accel_cpu_device_t* device, void* arg,
                                char* message, size_t size) {
  (void)device;
  (void)message;
  (void)size;
  gate_t* gate = *(gate_t**)arg;
  __atomic_store_n(&gate->entered, 1, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&gate->open, __ATOMIC_ACQUIRE)) sleep_ms(1);
  return ACCEL_OK;
}

static void submit_gate(accel_cpu_stream_t* stream, gate_t* gate) {
  accel_cpu_task_t* task =
      accel_cpu_task_create_call(gate_call, sizeof(gate_t*));
  if (task == NULL) abort();
  memcpy(task->u.call.arg, &gate, sizeof(gate));
  accel_cpu_stream_submit(stream, task);
}

TEST(busy_or_waiting_streams_refuse_inline_work) {
  fixture_t f;
  ASSERT_OK(fixture_init(&f));
  void* other_ptr = NULL;
  ASSERT_OK(accel_cpu_stream_create(f.device, 0, &other_ptr));
  accel_cpu_stream_t* other = other_ptr;
  void* event = NULL;
  ASSERT_OK(accel_cpu_event_create(f.device, 0, &event));
  gate_t gate = {0, 0};
  submit_gate(f.stream, &gate);
  ASSERT_OK(accel_cpu_event_record(event, f.stream));
  ASSERT_OK(accel_cpu_stream_wait_event(other, event));
  while (!__atomic_load_n(&gate.entered, __ATOMIC_ACQUIRE)) sleep_ms(1);
  // Running work, a queued record, a pending wait: no inline work.
  ASSERT(!accel_cpu_stream_inline_begin(f.stream, false));
  ASSERT(!accel_cpu_stream_inline_begin(f.stream, true));
  ASSERT(!accel_cpu_stream_inline_begin(other, false));
  ASSERT(!accel_cpu_stream_inline_begin(other, true));
  // Small work on `other` queues behind the wait.
  ASSERT_OK(accel_cpu_copy_h2d(f.device, other, f.mem, 0, f.src, kBytes));
  sleep_ms(kPauseMs);
  ASSERT(all_bytes(f.mem, kBytes, 0));
  __atomic_store_n(&gate.open, 1, __ATOMIC_RELEASE);
  ASSERT_OK(accel_cpu_stream_synchronize(other));
  ASSERT(all_bytes(f.mem, kBytes, 0x5A));
  ASSERT_OK(accel_cpu_stream_synchronize(f.stream));
  // Idle again: inline work is accepted, in both modes, and counted.
  ASSERT(accel_cpu_stream_inline_begin(f.stream, true));
  accel_cpu_stream_inline_end(f.stream, true, ACCEL_OK, NULL);
  ASSERT(accel_cpu_stream_inline_begin(f.stream, false));
  bool done = true;
  ASSERT_OK(accel_cpu_stream_query(f.stream, &done));
  ASSERT(!done);
  accel_cpu_stream_inline_end(f.stream, false, ACCEL_OK, NULL);
  ASSERT_OK(accel_cpu_stream_query(f.stream, &done));
  ASSERT(done);
  accel_cpu_event_destroy(event);
  accel_cpu_stream_destroy(other);
  fixture_deinit(&f);
}

// ---------------------------------------------------------------------------
// Spinning while a GEMM engine runs on its own threads
// ---------------------------------------------------------------------------

static uint64_t thread_cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

TEST(spin_stops_while_an_engine_runs) {
  _Atomic uint64_t word = 0;
  _Atomic uint32_t quiet = 1;
  // A second's budget, but an engine is running: back at once.
  uint64_t start = accel_cpu_now_ns();
  ASSERT(!accel_cpu_spin_while(&word, 0, 1000000000u, &quiet));
  ASSERT(accel_cpu_now_ns() - start < 100000000u);
  // Quiet: it spins the budget out (the word never changes).
  atomic_store(&quiet, 0);
  start = accel_cpu_now_ns();
  ASSERT(!accel_cpu_spin_while(&word, 0, 20000000u, &quiet));
  ASSERT(accel_cpu_now_ns() - start >= 20000000u);
  // A word that changed is seen either way.
  atomic_store(&word, 1);
  ASSERT(accel_cpu_spin_while(&word, 0, 20000000u, &quiet));
  atomic_store(&quiet, 1);
  ASSERT(accel_cpu_spin_while(&word, 0, 20000000u, &quiet));
}

// A CALL task that takes 5 ms.
static accel_status_t sleep_call(accel_cpu_device_t* device, void* arg,
                                 char* message, size_t size) {
  (void)device;
  (void)arg;
  (void)message;
  (void)size;
  sleep_ms(5);
  return ACCEL_OK;
}

static int compare_u64(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

// While an engine runs on its own threads, a thread that synchronises
// sleeps at once. Run in cpu_spin_internal, where ACCEL_CPU_SPIN_NS is
// 20 ms: a waiter that spun would burn about the 5 ms the work takes; one
// that sleeps takes microseconds (a median of 21 waits, since a sanitizer
// or a loaded machine can slow any single one). With the ordinary 50 us
// spin the two differ too little to tell apart on a loaded machine, so
// that build skips.
TEST(synchronize_sleeps_while_an_engine_runs) {
  if (ACCEL_CPU_SPIN_NS < 10000000ull) {
    SKIP("needs the 20 ms spin of cpu_spin_internal");
  }
  fixture_t f;
  ASSERT_OK(fixture_init(&f));
  enum { kWaits = 21 };
  uint64_t cpu[kWaits];
  accel_cpu_engine_enter(f.device->plugin);  // an engine runs throughout
  for (int i = 0; i < kWaits; i++) {
    accel_cpu_task_t* task = accel_cpu_task_create_call(sleep_call, 0);
    ASSERT(task != NULL);
    accel_cpu_stream_submit(f.stream, task);
    uint64_t start = thread_cpu_ns();
    ASSERT_OK(accel_cpu_stream_synchronize(f.stream));
    cpu[i] = thread_cpu_ns() - start;
  }
  accel_cpu_engine_leave(f.device->plugin);
  qsort(cpu, kWaits, sizeof(cpu[0]), compare_u64);
  printf("  CPU time of a synchronize: median %.1f us, %.1f to %.1f us\n",
         (double)cpu[kWaits / 2] / 1e3, (double)cpu[0] / 1e3,
         (double)cpu[kWaits - 1] / 1e3);
  ASSERT(cpu[kWaits / 2] < 1000000u);  // 1 ms of the 5 the work takes
  fixture_deinit(&f);
}

// Runs GEMMs of `dtype` (n x n x n, on `f`'s stream) until the plugin's
// engine_threads is seen raised while one runs, at most 50; whether it was.
static bool engine_threads_seen(fixture_t* f, uint32_t dtype, uint64_t n) {
  accel_cpu_plugin_t* plugin = f->device->plugin;
  size_t elem = dtype == ACCEL_DTYPE_F32 ? 4 : 2, bytes = n * n * elem;
  void* mem = NULL;
  if (accel_cpu_mem_alloc(f->device, 3 * bytes, &mem) != ACCEL_OK) return false;
  memset(mem, 0, 3 * bytes);
  accel_plugin_gemm_t g;
  memset(&g, 0, sizeof(g));
  g.struct_size = sizeof(g);
  g.a_dtype = g.b_dtype = g.c_dtype = dtype;
  g.m = g.n = g.k = n;
  g.alpha = 1.0;
  g.a = g.b = g.c = mem;
  g.b_offset = bytes;
  g.c_offset = 2 * bytes;
  g.lda = g.ldb = g.ldc = n;
  bool seen = false;
  for (int i = 0; i < 50 && !seen; i++) {
    if (accel_cpu_op_gemm(f->device, f->stream, &g) != ACCEL_OK) break;
    bool done = false;
    while (!done && !seen) {
      seen = atomic_load(&plugin->engine_threads) != 0;
      if (accel_cpu_stream_query(f->stream, &done) != ACCEL_OK) break;
    }
    accel_cpu_stream_synchronize(f->stream);
  }
  accel_cpu_mem_free(f->device, mem);
  return seen;
}

// The engines that run on their own threads raise engine_threads while
// they run: oneDNN (f32 here) and a threaded BLAS (OpenBLAS's pthread
// build, on bf16 converted to f32). Skips what is not installed.
TEST(gemm_engines_raise_engine_threads) {
  setenv("ACCEL_CPU_GEMM", "f32=onednn,bf16=openblas", 1);
  fixture_t f;
  ASSERT_OK(fixture_init(&f));
  accel_cpu_pool_t* pool = NULL;
  ASSERT_OK(accel_cpu_pool_get(f.device->plugin, &pool));
  accel_plugin_gemm_t probe = {
      .struct_size = sizeof(probe), .m = 256, .n = 256, .k = 256};
  accel_cpu_gemm_engine_t onednn = {0}, openblas = {0};
  probe.a_dtype = probe.b_dtype = probe.c_dtype = ACCEL_DTYPE_F32;
  bool have_onednn = accel_cpu_gemm_engine_get(f.device->plugin, pool, &probe,
                                               &onednn) == ACCEL_OK;
  probe.a_dtype = probe.b_dtype = probe.c_dtype = ACCEL_DTYPE_BF16;
  bool have_openblas = accel_cpu_gemm_engine_get(f.device->plugin, pool,
                                                 &probe, &openblas) ==
                           ACCEL_OK &&
                       openblas.blas != NULL && openblas.blas->threaded;
  if (!have_onednn && !have_openblas) {
    unsetenv("ACCEL_CPU_GEMM");
    fixture_deinit(&f);
    SKIP("neither oneDNN nor a threaded OpenBLAS loads here");
  }
  if (have_onednn) ASSERT(engine_threads_seen(&f, ACCEL_DTYPE_F32, 256));
  if (have_openblas) ASSERT(engine_threads_seen(&f, ACCEL_DTYPE_BF16, 256));
  unsetenv("ACCEL_CPU_GEMM");
  printf("  checked:%s%s\n", have_onednn ? " onednn" : "",
         have_openblas ? " openblas (threaded)" : "");
  ASSERT_EQ(atomic_load(&f.device->plugin->engine_threads), 0);
  fixture_deinit(&f);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
