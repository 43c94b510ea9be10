// SPDX-License-Identifier: MIT
//
// Internal interface of the CPU plugin. Nothing here is exported: the only
// public symbol of libaccel-cpu.so is accel_plugin_entry (plugin.c).
//
// Objects and the files that own them:
//   accel_cpu_plugin_t  plugin.c   state created by load(), freed by unload()
//   accel_cpu_device_t  device.c   one per opened device
//   (machine facts)     sysinfo.c  /proc, /sys and uname readers
//   device memory       memory.c   allocation, copies, memset, peer copies
//   accel_cpu_stream_t  stream.c   in-order queue run by one worker thread
//                                  (small work on an idle stream: inline)
//   accel_cpu_event_t   event.c    markers recorded into streams
//   accel_cpu_pool_t    pool.c     worker threads shared by all streams
//   accel_cpu_sched_t   schedule.c run slots: stream priorities
//   built-in ops        ops.c      enqueue side of op_fill ... op_sum
//   (op kernels)        kernels.c  the loops those ops run (-O3)
//   (conversions)       convert.c  blocked f16/bf16 <-> f32 conversions
//   GEMM                gemm.c     op_gemm on the engine engine.c chose
//   GEMM engines        engine.c   loads them, picks one per dtype and
//                                  size class; engine_tune.c times them,
//                                  engine_cache.c keeps the choice
//   BLAS loader         blas.c     dlopen()s a BLAS library
//   oneDNN              onednn.c   dlopen()s oneDNN, runs matmul primitives
//   custom kernels      module.c   CPU shared objects and launches
//
// Locking: the plugin, each stream and each event have one mutex. A stream
// worker holds its stream's mutex while it completes an event record, so
// the lock order is stream, then event; nothing takes them the other way.
#ifndef ACCEL_PLUGINS_CPU_CPU_H_
#define ACCEL_PLUGINS_CPU_CPU_H_

#include <accel/plugin.h>
#include <accel/plugin_dtype.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

// Version string of the plugin; the build passes the project version.
#ifndef ACCEL_CPU_VERSION
#define ACCEL_CPU_VERSION "0.2.0"
#endif

// Bounds and default of ACCEL_CPU_DEVICES.
#define ACCEL_CPU_DEVICES_DEFAULT 1u
#define ACCEL_CPU_DEVICES_MAX 64u

// Parses a count the CPU plugin's variables take (ACCEL_CPU_DEVICES,
// ACCEL_CPU_THREADS, ACCEL_CPU_TUNE_BUSY): decimal digits only, at most
// `digits` of them, worth 1 to `max`. False otherwise; `*out` is then
// unchanged. device.c.
bool accel_cpu_parse_count(const char* text, size_t digits, uint32_t max,
                           uint32_t* out);

// Alignment of every device allocation, in bytes (a cache line and the
// widest vector register).
#define ACCEL_CPU_ALIGNMENT 64u

// Slots of the plugin's cache of quick kernels (module.c).
#define ACCEL_CPU_QUICK_KERNELS 64u

// Size of the buffers that carry an asynchronous error message.
#define ACCEL_CPU_MESSAGE_SIZE 512

typedef struct accel_cpu_device accel_cpu_device_t;
typedef struct accel_cpu_stream accel_cpu_stream_t;
typedef struct accel_cpu_event accel_cpu_event_t;
typedef struct accel_cpu_task accel_cpu_task_t;
typedef struct accel_cpu_pool accel_cpu_pool_t;
typedef struct accel_cpu_blas accel_cpu_blas_t;
typedef struct accel_cpu_onednn accel_cpu_onednn_t;
typedef struct accel_cpu_engines accel_cpu_engines_t;
typedef struct accel_cpu_scratch accel_cpu_scratch_t;
typedef struct accel_cpu_graph accel_cpu_graph_t;

// ---------------------------------------------------------------------------
// Plugin state (plugin.c, device.c)
// ---------------------------------------------------------------------------

// State allocated by load(). `mutex` guards the configuration fields, which
// are read from the environment once, on the first successful
// device_count() or device_open().
typedef struct accel_cpu_plugin {
  const accel_host_t* host;
  pthread_mutex_t mutex;
  bool configured;
  uint32_t device_count;  // from ACCEL_CPU_DEVICES
  uint64_t memory_limit;  // from ACCEL_CPU_MEMORY_LIMIT; 0 = no limit
  uint64_t stream_bytes;  // from ACCEL_CPU_STREAM_BYTES; 0 = the default
  // Created on first use (pool.c, blas.c), freed by unload. Written once
  // under `mutex`, then read lock-free.
  _Atomic(accel_cpu_pool_t*) pool;
  _Atomic(accel_cpu_engines_t*) engines;
  // The GEMM engine chosen per dtype and size class (engine.c): 0 until
  // decided, then the engine id + 1, written once under `gemm_mutex` and
  // read lock-free.
  _Atomic uint32_t gemm_choice[3][3];
  pthread_mutex_t gemm_mutex;  // loading and timing the engines
  // f32 scratch kept between f16/bf16 GEMMs (gemm.c), or NULL.
  _Atomic(accel_cpu_scratch_t*) gemm_scratch;
  // Kernels (with their grid size) whose last launch ran quickly enough to
  // be run inline next time (module.c). A direct-mapped cache of tags, 0
  // for none; relaxed atomics, since it is only a hint.
  _Atomic uint64_t quick_kernels[ACCEL_CPU_QUICK_KERNELS];
  bool engines_tried;  // guarded by `gemm_mutex`: loading ran (and failed)
  char engines_error[ACCEL_CPU_MESSAGE_SIZE];  // why, `gemm_mutex`
  // Run slots of stream work while priorities are in use (schedule.c).
  struct accel_cpu_sched* sched;
  // GEMM engine calls running on the engine's own threads (oneDNN, a
  // threaded BLAS), which take every CPU: while it is not 0, no thread of
  // this plugin spins (see ACCEL_CPU_SPIN_NS).
  _Atomic uint32_t engine_threads;
} accel_cpu_plugin_t;

// Reads ACCEL_CPU_DEVICES and ACCEL_CPU_MEMORY_LIMIT into `plugin` unless
// that already succeeded. Returns ACCEL_ERROR_INVALID_ARGUMENT (through
// host->fail, naming the variable and value) for a malformed value; a later
// call parses again. Thread-safe.
accel_status_t accel_cpu_plugin_configure(accel_cpu_plugin_t* plugin);

// plugin ABI: device_count. Returns the configuration error, if any.
accel_status_t accel_cpu_device_count(void* plugin, uint32_t* out_count);

// ---------------------------------------------------------------------------
// Devices (device.c)
// ---------------------------------------------------------------------------

// One opened CPU device. The descriptive strings are read from the machine
// once, at open, and are immutable afterwards; `allocated` is the number of
// bytes currently allocated through mem_alloc on this device.
struct accel_cpu_device {
  accel_cpu_plugin_t* plugin;
  const accel_host_t* host;
  uint32_t index;
  uint64_t memory_limit;  // 0 = no limit
  _Atomic uint64_t allocated;
  char name[256];
  char vendor[64];
  char arch[64];
  char features[256];
  char gemm_features[96];  // "gemm-f32=... gemm-f16=... gemm-bf16=..."
  char driver_version[64];
  uint32_t simd_width;
};

// plugin ABI: device_open / device_close.
accel_status_t accel_cpu_device_open(void* plugin, uint32_t index,
                                     void** out_device);
void accel_cpu_device_close(void* device);

// device ops: query_props, mem_info, can_access_peer.
accel_status_t accel_cpu_device_query_props(void* device,
                                            accel_plugin_device_props_t* props);
accel_status_t accel_cpu_device_mem_info(void* device, uint64_t* out_free,
                                         uint64_t* out_total);
accel_status_t accel_cpu_device_can_access_peer(void* device, void* peer_device,
                                                bool* out_can);

// ---------------------------------------------------------------------------
// Machine facts (sysinfo.c). None of these fails: a missing or unreadable
// file yields a fallback (a sysconf() value, uname(), or "unknown").
// ---------------------------------------------------------------------------

// Static description of the processor, read from /proc/cpuinfo.
typedef struct accel_cpu_sysinfo {
  char name[256];
  char vendor[64];
  char arch[64];        // "x86-64-v3", "aarch64", ...
  char features[256];   // space-separated notable ISA extensions
  char kernel[64];      // uname release
  uint32_t simd_width;  // f32 lanes of the widest vector ISA
} accel_cpu_sysinfo_t;

// Fills `info` from /proc/cpuinfo and uname().
void accel_cpu_sysinfo_read(accel_cpu_sysinfo_t* info);

// Number of CPUs this process may run on (its affinity mask), at least 1.
uint32_t accel_cpu_sysinfo_usable_cpus(void);

// Sets `*out_total` to physical memory in bytes, lowered to the cgroup
// (v2 memory.max or v1 memory.limit_in_bytes) limit of this process when
// one is set, never 0; and `*out_available`, when not NULL, to the memory
// available to this process: MemAvailable, lowered to the room left under
// that limit. Reads /proc/meminfo and the limiting cgroup's limit and
// usage at every call; which cgroup that is (a walk of the hierarchy) is
// found again at most once a second. Thread-safe.
void accel_cpu_sysinfo_memory(uint64_t* out_total, uint64_t* out_available);

// Threads of the whole machine that are runnable now besides the caller,
// the fewest of three looks 1 ms apart (/proc/loadavg's running count,
// which includes this process's other threads); 0 when unreadable.
uint32_t accel_cpu_sysinfo_other_runnable(void);

// Names the calling thread (`top -H`, `perf sched`, gdb): "accel-stream"
// for stream workers, "accel-pool" for pool helpers. At most 15
// characters; best effort, never fails.
void accel_cpu_thread_name(const char* name);

// ---------------------------------------------------------------------------
// Memory (memory.c). The plugin's memory handle is the 64-byte-aligned host
// address of the allocation, so kernels can use it directly.
// ---------------------------------------------------------------------------

accel_status_t accel_cpu_mem_alloc(void* device, size_t size, void** out_mem);
void accel_cpu_mem_free(void* device, void* mem);
// plugin ABI 1.3: mem_address. The memory is host memory, so the address is
// a host pointer (ACCEL_DEVICE_CAP_HOST_ACCESSIBLE).
accel_status_t accel_cpu_mem_address(void* device, void* mem, uint64_t offset,
                                     uint64_t* out_address);
// plugin ABI 1.3: mem_wrap/mem_unwrap. A wrapped handle is the caller's
// host pointer itself (no header, any alignment); it never reaches
// accel_cpu_mem_free and does not count against ACCEL_CPU_MEMORY_LIMIT.
accel_status_t accel_cpu_mem_wrap(void* device, uint64_t address, size_t size,
                                  void** out_mem);
void accel_cpu_mem_unwrap(void* device, void* mem);
// plugin ABI 1.4: native_handle. Memory is its host pointer; the CPU has no
// native device, context, stream or event (UNSUPPORTED, saying so).
accel_status_t accel_cpu_native_handle(void* device, uint32_t kind,
                                       void* object, uint64_t* out_handle);
accel_status_t accel_cpu_copy_h2d(void* device, void* stream, void* dst,
                                  size_t dst_offset, const void* src,
                                  size_t size);
accel_status_t accel_cpu_copy_d2h(void* device, void* stream, void* dst,
                                  const void* src, size_t src_offset,
                                  size_t size);
accel_status_t accel_cpu_copy_d2d(void* device, void* stream, void* dst,
                                  size_t dst_offset, const void* src,
                                  size_t src_offset, size_t size);
accel_status_t accel_cpu_copy_peer(void* device, void* stream, void* dst,
                                   size_t dst_offset, void* src_device,
                                   const void* src, size_t src_offset,
                                   size_t size);
accel_status_t accel_cpu_memset(void* device, void* stream, void* dst,
                                size_t offset, uint8_t value, size_t size);

// ---------------------------------------------------------------------------
// Tasks and streams (stream.c)
// ---------------------------------------------------------------------------

// What a queued task does.
typedef enum accel_cpu_task_kind {
  ACCEL_CPU_TASK_COPY = 0,    // memcpy, or memmove when `overlap`
  ACCEL_CPU_TASK_FILL = 1,    // memset
  ACCEL_CPU_TASK_RECORD = 2,  // completes generation `gen` of `event`
  ACCEL_CPU_TASK_WAIT = 3,    // blocks until generation `gen` completes
  ACCEL_CPU_TASK_CALL = 4,    // runs `call.fn` (ops, GEMM, launches)
  ACCEL_CPU_TASK_GRAPH = 5,   // runs the tasks of `graph` (graph.c)
} accel_cpu_task_kind_t;

// Body of a CALL task, run on the stream's worker with the arguments the
// enqueuing side stored in `arg`. On failure it writes a message (without
// the "cpu:N: " prefix, which the stream adds) into `message`.
typedef accel_status_t (*accel_cpu_call_fn_t)(accel_cpu_device_t* device,
                                              void* arg, char* message,
                                              size_t message_size);

// One unit of stream work. Owned by the stream from enqueue until it has
// run; RECORD and WAIT tasks hold a reference on their event.
struct accel_cpu_task {
  accel_cpu_task_t* next;  // FIFO link, owned by the stream
  accel_cpu_task_kind_t kind;
  union {
    struct {
      void* dst;
      const void* src;
      size_t size;
      bool overlap;
    } copy;
    struct {
      void* dst;
      size_t size;
      uint8_t value;
    } fill;
    struct {
      accel_cpu_event_t* event;
      uint64_t gen;
      // RECORD only: link in the event's list of pending records, guarded
      // by the event's mutex.
      accel_cpu_task_t* next_pending;
    } event;
    struct {
      accel_cpu_call_fn_t fn;
      void* arg;  // `arg_size` bytes allocated with the task, 64-aligned
    } call;
    accel_cpu_graph_t* graph;  // GRAPH: holds a reference
  } u;
};

// Allocates a zeroed task of `kind`. Returns NULL when out of host memory.
accel_cpu_task_t* accel_cpu_task_create(accel_cpu_task_kind_t kind);

// Allocates a CALL task running `fn` with `arg_size` zeroed bytes of
// arguments at task->u.call.arg, freed with the task. NULL when out of
// host memory.
accel_cpu_task_t* accel_cpu_task_create_call(accel_cpu_call_fn_t fn,
                                             size_t arg_size);

// Appends `task` to `stream` (not NULL: callers run NULL-stream work
// themselves) and returns at once. Takes ownership of `task`; cannot fail.
void accel_cpu_stream_submit(accel_cpu_stream_t* stream,
                             accel_cpu_task_t* task);

// Inline execution (see stream.c): small work may run on the calling
// thread when `stream` is idle (nothing queued or running, no error).
// Returns true when it is: the work now counts as enqueued, other
// threads' work queues behind it, and the caller runs it and then calls
// accel_cpu_stream_inline_end() with the same `hold`. Returns false
// otherwise (nothing changed): the caller queues a task instead. With
// `hold` the stream's mutex stays locked until then: only for work of a
// few microseconds that runs no user code and takes no lock (memcpy,
// memset). Callers use it only for work whose length they can bound.
bool accel_cpu_stream_inline_begin(accel_cpu_stream_t* stream, bool hold);

// Ends inline work begun by accel_cpu_stream_inline_begin(): counts it
// completed and, when `status` is not ACCEL_OK, makes `reason` (without
// the "cpu:N: " prefix) the stream's sticky error, as for a failing
// queued task. `held` is the `hold` given to begin.
void accel_cpu_stream_inline_end(accel_cpu_stream_t* stream, bool held,
                                 accel_status_t status, const char* reason);

// Copies and fills of at most ACCEL_CPU_INLINE_BYTES run inline on an idle
// stream (memory.c); up to ACCEL_CPU_INLINE_HOLD_BYTES with the stream's
// mutex held throughout. Chosen with accel-bench's stream copies
// (`--filter copy/.*_async`) on the 2-vCPU development VM, as % of memcpy:
//   size       queued     inline
//   4 KiB      16-23%     72-74% (55-67% with two lock round trips)
//   16 KiB     25-35%     86-100%
//   64 KiB     63-80%     97-98%
//   256 KiB    68-94%     97-114%
//   1 MiB      60-80%     97-102%
//   4 MiB      66-132%    (split across the pool either way)
// Queued, each copy pays for a task, the queue and a cross-CPU wake-up of
// the worker, which then reads data the caller's core has in its cache.
// Up to 1 MiB a copy is at most ~25 us of the caller's time, less than one
// wake-up round trip here (20-130 us). From 4 MiB copies are split across
// the pool, and inline they gained a few points at most (within the noise:
// 74-140% against 66-132% queued) while the caller would block for 85 us
// or more.
#define ACCEL_CPU_INLINE_BYTES ((size_t)1 << 20)
#define ACCEL_CPU_INLINE_HOLD_BYTES ((size_t)64 << 10)
// Elementwise ops of at most this many elements run inline (ops.c), on
// the calling thread and the pool's helpers: 1 Mi elements (4 MiB of f32
// per operand, about 0.2-1 ms of work on 2 cores). Inline work loses no
// parallelism (the caller takes the stream worker's place in the pool
// job) and saves the hand-off to the worker and the wake-up of whoever
// synchronises. Chosen with accel-bench (`--full --filter
// 'elementwise/(add|scale|sum)/(1048576|4194304)$'`), two alternating
// runs each on the 2-vCPU development VM at load 13-14 (so noisy),
// accel / threaded loop: with 64 Ki elements (the earlier window) 1 MiB
// ops 93-221%, 4 MiB 25-248%; with 1 Mi, 1 MiB 89-426%, 4 MiB 73-112%,
// median better and the spread narrower. Earlier, at 1 Ki elements: 12 us
// queued against 0.27 us inline per enqueue + synchronize.
#define ACCEL_CPU_INLINE_ELEMENTS ((uint64_t)1 << 20)

// device ops: stream_*.
accel_status_t accel_cpu_stream_create(void* device, accel_stream_flags_t flags,
                                       void** out_stream);
// plugin ABI 1.4: stream priorities (schedule.c has the scheduling) and
// host functions, which run as CALL tasks on the stream's worker (never
// inline: a host function is user code of unknown length).
accel_status_t accel_cpu_stream_priority_range(void* device, int32_t* out_least,
                                               int32_t* out_greatest);
accel_status_t accel_cpu_stream_create_priority(void* device,
                                                accel_stream_flags_t flags,
                                                int32_t priority,
                                                void** out_stream);
accel_status_t accel_cpu_launch_host_func(void* stream, void (*fn)(void* user),
                                          void* user);
void accel_cpu_stream_destroy(void* stream);
// plugin ABI 1.4: native graphs (graph.c). While a stream captures, every
// COPY, FILL and CALL task submitted to it goes to the capture's list
// instead of the queue (and nothing runs inline); graph_launch queues one
// GRAPH task that runs the list in order on the worker, so a launch of a
// graph of any length costs the enqueue of one task.
accel_status_t accel_cpu_stream_begin_capture(void* stream);
accel_status_t accel_cpu_stream_end_capture(void* stream, void** out_graph);
accel_status_t accel_cpu_graph_launch(void* graph, void* stream);
void accel_cpu_graph_destroy(void* graph);
accel_status_t accel_cpu_stream_synchronize(void* stream);
accel_status_t accel_cpu_stream_query(void* stream, bool* out_done);
accel_status_t accel_cpu_stream_wait_event(void* stream, void* event);

// Graphs (graph.c) for stream.c: a new, empty capture (NULL when out of
// host memory); adding a submitted task to one (taking it; a RECORD or
// WAIT task, which the core never sends, is completed at once and marks
// the capture failed); checking a finished capture (a failed one is
// released, with the reason through host->fail); running one; dropping a
// reference.
accel_cpu_graph_t* accel_cpu_graph_create(accel_cpu_device_t* device);
void accel_cpu_graph_add(accel_cpu_graph_t* graph, accel_cpu_task_t* task);
accel_status_t accel_cpu_graph_finish(accel_cpu_graph_t* graph);
accel_status_t accel_cpu_graph_run(accel_cpu_device_t* device,
                                   accel_cpu_graph_t* graph, char* message,
                                   size_t message_size);
void accel_cpu_graph_release(accel_cpu_graph_t* graph);

// ---------------------------------------------------------------------------
// Events (event.c)
// ---------------------------------------------------------------------------

// Adds a reference to `event` (held by a queued task).
void accel_cpu_event_retain(accel_cpu_event_t* event);

// Drops a reference; the last one frees the event.
void accel_cpu_event_release(accel_cpu_event_t* event);

// CLOCK_MONOTONIC in nanoseconds: event timestamps, and how long a kernel
// launch took (module.c). Thread-safe.
uint64_t accel_cpu_now_ns(void);

// Runs a RECORD task on a worker: marks generation `task->u.event.gen`
// complete, stamps the time for timing events and stores `status` and
// `message` (the stream's first error so far) as the record's outcome.
void accel_cpu_event_complete(accel_cpu_task_t* task, accel_status_t status,
                              const char* message);

// Runs a WAIT task on a worker: blocks until generation `gen` of `event`
// has completed.
void accel_cpu_event_wait(accel_cpu_event_t* event, uint64_t gen);

// Captures the last record of `event` for stream_wait_event: returns its
// generation, or 0 when there is nothing to wait for (never recorded, or
// the last record already completed).
uint64_t accel_cpu_event_pending_gen(accel_cpu_event_t* event);

// device ops: event_*.
accel_status_t accel_cpu_event_create(void* device, accel_event_flags_t flags,
                                      void** out_event);
void accel_cpu_event_destroy(void* event);
accel_status_t accel_cpu_event_record(void* event, void* stream);
accel_status_t accel_cpu_event_synchronize(void* event);
accel_status_t accel_cpu_event_query(void* event, bool* out_done);
accel_status_t accel_cpu_event_elapsed_ms(void* start, void* end,
                                          float* out_ms);

// ---------------------------------------------------------------------------
// Thread pool (pool.c)
// ---------------------------------------------------------------------------

// Bounds of ACCEL_CPU_THREADS.
#define ACCEL_CPU_THREADS_MAX 1024u

// One chunk of a parallel loop: runs chunk `index` of `ctx`'s work on the
// participant `worker` (0 .. accel_cpu_pool_width() - 1, unique among the
// threads running chunks of the same loop at the same time).
typedef void (*accel_cpu_pool_fn_t)(void* ctx, uint64_t index, uint32_t worker);

// Returns the plugin's pool, creating it (and its threads) on first use.
// ACCEL_ERROR_INVALID_ARGUMENT naming ACCEL_CPU_THREADS when that variable
// is malformed (checked again on every call until it succeeds). Thread-safe.
accel_status_t accel_cpu_pool_get(accel_cpu_plugin_t* plugin,
                                  accel_cpu_pool_t** out_pool);

// Joins the pool's threads and frees it. NULL is ignored. Called by unload.
void accel_cpu_pool_destroy(accel_cpu_pool_t* pool);

// Number of threads that run chunks: the helpers plus the caller. 1 for a
// NULL pool.
uint32_t accel_cpu_pool_width(const accel_cpu_pool_t* pool);

// Runs `fn(ctx, i, worker)` for every i < `count` on the pool and the
// calling thread, and returns when all have run. Each thread starts on
// its own contiguous range of chunks, in order, and then helps with the
// others' (pool.c); which thread runs which chunk is not specified. A
// NULL pool, or a pool of width 1, runs everything on the caller, in
// order. Never fails.
void accel_cpu_pool_run(accel_cpu_pool_t* pool, uint64_t count,
                        accel_cpu_pool_fn_t fn, void* ctx);

// How long an idle pool helper or stream worker spins on new work before
// it sleeps (pool.c, stream.c): a futex wake-up across CPUs costs 5-130 us
// on the development VM, more than a 1 MiB elementwise op, so work that
// arrives back to back is taken without one. Short enough that an idle
// process gives its CPUs back almost at once.
//
// No thread spins while a GEMM engine runs on its own threads
// (accel_cpu_engine_enter): those threads take every CPU, and one more
// runnable thread beside them cost oneDNN's AMX bf16 GEMM a third of its
// speed at 1024^3 on a 16-core Xeon (a synchronising thread's 50 us spin
// per GEMM; docs/performance.md), while a wake-up costs a GEMM little.
#ifndef ACCEL_CPU_SPIN_NS  // tests/cpu's cpu_spin_internal sets it to 20 ms
#define ACCEL_CPU_SPIN_NS 50000ull
#endif

// Spins (with a pause hint) while `*word` equals `value`, for at most
// `budget_ns`, and not at all while `*quiet` (the plugin's
// engine_threads) is not 0. Returns true when the word changed, false on
// time out or when spinning stopped for `quiet`.
bool accel_cpu_spin_while(const _Atomic uint64_t* word, uint64_t value,
                          uint64_t budget_ns, const _Atomic uint32_t* quiet);

// Whether a thread may spin now: no GEMM engine runs on its own threads.
static inline bool accel_cpu_may_spin(const _Atomic uint32_t* quiet) {
  return atomic_load_explicit(quiet, memory_order_relaxed) == 0;
}

// Brackets a GEMM engine call that runs on the engine's own threads
// (oneDNN, a threaded BLAS), during which no plugin thread spins.
static inline void accel_cpu_engine_enter(accel_cpu_plugin_t* plugin) {
  atomic_fetch_add_explicit(&plugin->engine_threads, 1, memory_order_relaxed);
}
static inline void accel_cpu_engine_leave(accel_cpu_plugin_t* plugin) {
  atomic_fetch_sub_explicit(&plugin->engine_threads, 1, memory_order_relaxed);
}

// Parses ACCEL_CPU_THREADS for device properties without creating the pool:
// the value when set and valid, otherwise the usable CPU count.
uint32_t accel_cpu_pool_configured_width(accel_cpu_plugin_t* plugin);

// Byte ranges below this are copied or filled by the calling thread alone:
// splitting them costs more in wake-ups than it saves.
#define ACCEL_CPU_PARALLEL_BYTES ((size_t)4 << 20)

// Copies or fills `size` bytes (at least ACCEL_CPU_PARALLEL_BYTES) across
// the plugin's pool when it exists or can be created, else on the calling
// thread (pool.c).
void accel_cpu_copy_large(accel_cpu_plugin_t* plugin, void* dst,
                          const void* src, size_t size);
void accel_cpu_fill_large(accel_cpu_plugin_t* plugin, void* dst,
                          uint8_t value, size_t size);

// Copies (memmove when `overlap`) or fills `size` bytes, splitting large
// ranges across the pool. Inline: a small synchronous copy is a memcpy of
// tens of ns, so every call on its way counts.
static inline void accel_cpu_copy_run(accel_cpu_plugin_t* plugin, void* dst,
                                      const void* src, size_t size,
                                      bool overlap) {
  if (overlap) {
    memmove(dst, src, size);  // same allocation: keep memmove's ordering
  } else if (size < ACCEL_CPU_PARALLEL_BYTES) {
    memcpy(dst, src, size);
  } else {
    accel_cpu_copy_large(plugin, dst, src, size);
  }
}
static inline void accel_cpu_fill_run(accel_cpu_plugin_t* plugin, void* dst,
                                      uint8_t value, size_t size) {
  if (size < ACCEL_CPU_PARALLEL_BYTES) {
    memset(dst, value, size);
  } else {
    accel_cpu_fill_large(plugin, dst, value, size);
  }
}

// ---------------------------------------------------------------------------
// Stream priorities (schedule.c)
//
// CUDA's convention: numerically lower is more urgent, from
// ACCEL_CPU_PRIORITY_GREATEST to ACCEL_CPU_PRIORITY_LEAST (0, the default).
// While a stream more urgent than 0 exists, the stream workers of the
// plugin start a task (a copy, a fill or a CALL: RECORD and WAIT tasks
// never wait here) only with one of `width` run slots, `width` being the
// pool's: when more work is ready than the pool has threads, the most
// urgent stream's task starts first (the oldest request among equals) and
// work already running is never preempted, as a GPU's block scheduler
// does. Without such a stream the gate is one relaxed atomic load. The
// pool's job queue is ordered the same way (pool.c): helpers join the most
// urgent job first.
// ---------------------------------------------------------------------------

#define ACCEL_CPU_PRIORITY_LEAST 0
#define ACCEL_CPU_PRIORITY_GREATEST (-5)

// The priority of the stream whose worker is the calling thread (0 on any
// other thread), read by the pool to order its jobs.
extern _Thread_local int32_t accel_cpu_thread_priority;

// The plugin-wide run-slot gate.
typedef struct accel_cpu_sched_waiter accel_cpu_sched_waiter_t;
typedef struct accel_cpu_sched {
  pthread_mutex_t mutex;
  pthread_cond_t cv;        // broadcast when a slot frees or the gate opens
  _Atomic uint32_t urgent;  // live streams more urgent than 0
  uint32_t running;         // tasks holding a slot (mutex)
  uint32_t slots;           // the pool's width, read at first use (mutex)
  accel_cpu_sched_waiter_t* waiters;  // sorted, most urgent first (mutex)
} accel_cpu_sched_t;

// Initialises and destroys the gate (load, unload). Init returns false
// when a pthread object cannot be created.
bool accel_cpu_sched_init(accel_cpu_sched_t* sched);
void accel_cpu_sched_deinit(accel_cpu_sched_t* sched);

// Counts a stream of `priority` in and out (stream create and destroy):
// streams more urgent than 0 turn the gate on.
void accel_cpu_sched_stream_add(accel_cpu_plugin_t* plugin, int32_t priority);
void accel_cpu_sched_stream_remove(accel_cpu_plugin_t* plugin,
                                   int32_t priority);

// Called by a stream worker of `priority` before it starts a task: waits
// for a run slot while the gate is on and returns whether it took one,
// which accel_cpu_sched_leave() gives back after the task.
bool accel_cpu_sched_enter(accel_cpu_plugin_t* plugin, int32_t priority);
void accel_cpu_sched_leave(accel_cpu_plugin_t* plugin, bool held);

// ---------------------------------------------------------------------------
// Built-in ops (ops.c, kernels.c, gemm.c)
// ---------------------------------------------------------------------------

// Declared with the SDK's op function types (<accel/plugin.h>).
// Counter-based random fill (rng.c, ABI 1.3).
accel_plugin_op_rng_fn accel_cpu_op_rng;
accel_plugin_op_fill_fn accel_cpu_op_fill;
accel_plugin_op_cast_fn accel_cpu_op_cast;
accel_plugin_op_scale_fn accel_cpu_op_scale;
accel_plugin_op_axpy_fn accel_cpu_op_axpy;
accel_plugin_op_binary_fn accel_cpu_op_add;
accel_plugin_op_binary_fn accel_cpu_op_mul;
accel_plugin_op_sum_fn accel_cpu_op_sum;
accel_plugin_op_gemm_fn accel_cpu_op_gemm;
// ABI 1.4: activations and bias-add (ops.c, kernels.c), strided-batched
// GEMM (gemm.c).
accel_plugin_op_unary_fn accel_cpu_op_unary;
accel_plugin_op_bias_add_fn accel_cpu_op_bias_add;
accel_plugin_op_gemm_batched_fn accel_cpu_op_gemm_batched;

// Frees the GEMM scratch block the plugin kept (gemm.c). NULL is ignored.
// Called by unload.
void accel_cpu_scratch_destroy(accel_cpu_scratch_t* scratch);

// Elementwise op codes shared by ops.c and kernels.c.
typedef enum accel_cpu_op_kind {
  ACCEL_CPU_OP_FILL = 0,
  ACCEL_CPU_OP_CAST = 1,
  ACCEL_CPU_OP_SCALE = 2,
  ACCEL_CPU_OP_AXPY = 3,
  ACCEL_CPU_OP_ADD = 4,
  ACCEL_CPU_OP_MUL = 5,
  ACCEL_CPU_OP_SUM = 6,
  ACCEL_CPU_OP_UNARY = 7,     // z = act(x), act an accel_plugin_unary_op_t
  ACCEL_CPU_OP_BIAS_ADD = 8,  // z[r * cols + c] += x[c]
} accel_cpu_op_kind_t;

// Arguments of one elementwise op, stored in its CALL task. Pointers are
// already offset; `value` holds the fill value or alpha.
typedef struct accel_cpu_op {
  accel_cpu_op_kind_t kind;
  uint32_t dtype;      // of `z` (the destination)
  uint32_t src_dtype;  // CAST only
  uint64_t count;
  void* z;  // destination (x for SCALE, y for AXPY, out for SUM)
  const void* x;  // source (the bias row for BIAS_ADD, not offset)
  const void* y;
  double value;
  uint32_t unary;  // UNARY: the accel_plugin_unary_op_t
  uint64_t cols;   // BIAS_ADD: elements per row (count is rows * cols)
} accel_cpu_op_t;

// Runs `op` over `pool` (kernels.c). Fails only when a large sum cannot
// allocate its partial results, with the reason in `message`.
accel_status_t accel_cpu_op_execute(accel_cpu_pool_t* pool,
                                    const accel_cpu_op_t* op, char* message,
                                    size_t message_size);

// BLAS, oneDNN and the GEMM engines: engine.h.
#include "engine.h"

// ---------------------------------------------------------------------------
// Custom kernels (module.c)
// ---------------------------------------------------------------------------

accel_status_t accel_cpu_module_load(void* device, const void* image,
                                     size_t size, void** out_module);
void accel_cpu_module_unload(void* module);
accel_status_t accel_cpu_module_function(void* module, const char* name,
                                         void** out_function);
accel_status_t accel_cpu_launch(void* function, void* stream,
                                const accel_plugin_launch_t* launch);

// Returns the device a stream belongs to (stream.c).
accel_cpu_device_t* accel_cpu_stream_device(accel_cpu_stream_t* stream);

#endif  // ACCEL_PLUGINS_CPU_CPU_H_
