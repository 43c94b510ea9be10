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
//   accel_cpu_event_t   event.c    markers recorded into streams
//
// Locking: the plugin, each stream and each event have one mutex. A stream
// worker holds its stream's mutex while it completes an event record, so
// the lock order is stream, then event; nothing takes them the other way.
#ifndef ACCEL_PLUGINS_CPU_CPU_H_
#define ACCEL_PLUGINS_CPU_CPU_H_

#include <accel/plugin.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Version string of the plugin; the build passes the project version.
#ifndef ACCEL_CPU_VERSION
#define ACCEL_CPU_VERSION "0.1.0"
#endif

// Bounds and default of ACCEL_CPU_DEVICES.
#define ACCEL_CPU_DEVICES_DEFAULT 1u
#define ACCEL_CPU_DEVICES_MAX 64u

// Alignment of every device allocation, in bytes (a cache line and the
// widest vector register).
#define ACCEL_CPU_ALIGNMENT 64u

// Size of the buffers that carry an asynchronous error message.
#define ACCEL_CPU_MESSAGE_SIZE 256

typedef struct accel_cpu_device accel_cpu_device_t;
typedef struct accel_cpu_stream accel_cpu_stream_t;
typedef struct accel_cpu_event accel_cpu_event_t;
typedef struct accel_cpu_task accel_cpu_task_t;

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

// Physical memory in bytes, lowered to the cgroup (v2 memory.max or v1
// memory.limit_in_bytes) limit of this process when one is set. Never 0.
uint64_t accel_cpu_sysinfo_total_memory(void);

// Memory available to this process in bytes: MemAvailable, lowered to the
// room left under the cgroup limit when one is set.
uint64_t accel_cpu_sysinfo_available_memory(void);

// ---------------------------------------------------------------------------
// Memory (memory.c). The plugin's memory handle is the 64-byte-aligned host
// address of the allocation, so kernels can use it directly.
// ---------------------------------------------------------------------------

accel_status_t accel_cpu_mem_alloc(void* device, size_t size, void** out_mem);
void accel_cpu_mem_free(void* device, void* mem);
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
} accel_cpu_task_kind_t;

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
  } u;
};

// Allocates a zeroed task of `kind`. Returns NULL when out of host memory.
accel_cpu_task_t* accel_cpu_task_create(accel_cpu_task_kind_t kind);

// Appends `task` to `stream` (not NULL: callers run NULL-stream work
// themselves) and returns at once. Takes ownership of `task`; cannot fail.
void accel_cpu_stream_submit(accel_cpu_stream_t* stream,
                             accel_cpu_task_t* task);

// device ops: stream_*.
accel_status_t accel_cpu_stream_create(void* device, accel_stream_flags_t flags,
                                       void** out_stream);
void accel_cpu_stream_destroy(void* stream);
accel_status_t accel_cpu_stream_synchronize(void* stream);
accel_status_t accel_cpu_stream_query(void* stream, bool* out_done);
accel_status_t accel_cpu_stream_wait_event(void* stream, void* event);

// ---------------------------------------------------------------------------
// Events (event.c)
// ---------------------------------------------------------------------------

// Adds a reference to `event` (held by a queued task).
void accel_cpu_event_retain(accel_cpu_event_t* event);

// Drops a reference; the last one frees the event.
void accel_cpu_event_release(accel_cpu_event_t* event);

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

#endif  // ACCEL_PLUGINS_CPU_CPU_H_
