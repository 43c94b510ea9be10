// SPDX-License-Identifier: MIT
//
// Core-internal declarations shared between the files of libaccel. Symbols
// here are `accel__` and never exported (hidden visibility).
#ifndef ACCEL_CORE_INTERNAL_H_
#define ACCEL_CORE_INTERNAL_H_

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accel/accel.h"
#include "accel/plugin.h"

#if defined(__GNUC__)
#define ACCEL__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define ACCEL__PRINTF(f, a)
#endif

// ---------------------------------------------------------------------------
// Errors and logging (error.c, log.c)
// ---------------------------------------------------------------------------

// Records a message for accel_last_error() on this thread; returns `status`.
accel_status_t accel__fail(accel_status_t status, const char* format, ...)
    ACCEL__PRINTF(2, 3);
accel_status_t accel__vfail(accel_status_t status, const char* format,
                            va_list args);

// Logs to stderr when ACCEL_LOG enables `level`. `tag` names the plugin,
// or NULL for the core.
void accel__log(accel_log_level_t level, const char* format, ...)
    ACCEL__PRINTF(2, 3);
void accel__vlog(accel_log_level_t level, const char* tag, const char* format,
                 va_list args);
bool accel__log_enabled(accel_log_level_t level);
// Re-reads ACCEL_LOG (at init).
void accel__log_configure(void);

// Reads an environment variable with secure_getenv where available.
const char* accel__getenv(const char* name);

// ---------------------------------------------------------------------------
// Plugins (loader.c)
// ---------------------------------------------------------------------------

typedef struct accel__plugin accel__plugin_t;

// Core-level dispatch for operations whose fallback needs core handles.
typedef accel_status_t (*accel__copy_peer_fn_t)(accel__plugin_t* plugin,
                                                void* dst_device, void* stream,
                                                void* dst, size_t dst_offset,
                                                void* src_device,
                                                const void* src,
                                                size_t src_offset, size_t size);

// The host-services table lent to one plugin; `plugin` lets the callbacks
// tag messages with the plugin's name.
typedef struct accel__host {
  accel_host_t host;
  accel__plugin_t* plugin;
} accel__host_t;

// One candidate plugin: its load-report entry and, once loaded, its tables.
struct accel__plugin {
  accel__host_t host;  // handed to the plugin's load()
  // Load report.
  char* path;
  char* source;
  accel_origin_t origin;
  accel_plugin_stage_t stage;
  accel_status_t status;
  char* message;
  char* name;
  char* version;
  uint32_t abi_version;
  uint32_t device_count;
  int32_t priority;
  // Loaded state.
  void* dl;                         // dlopen handle, NULL when not open
  accel_plugin_t desc;              // validated copy of the descriptor
  accel_device_ops_t ops;           // full-size copy, defaults filled
  void* state;                      // the plugin's own state from load()
  bool loaded;                      // load() succeeded; unload() owed
  bool has_timing;                  // event_elapsed_ms is the plugin's own
  bool has_pinned;                  // host_alloc is the plugin's own
  bool has_kernels;                 // module entries are the plugin's own
  accel__copy_peer_fn_t copy_peer;  // native or staged through the host
  accel_device_t** devices;         // [device_count], open devices or NULL
};

// Loads the candidate at `plugin->path` through every stage, recording the
// outcome in the report fields. Never fails the caller: the status lives in
// the plugin.
void accel__plugin_load(accel__plugin_t* plugin);

// Unloads and dlcloses a plugin (no devices may be open) and frees it.
void accel__plugin_destroy(accel__plugin_t* plugin);

// Fills `host` for `plugin` (host.c).
void accel__host_init(accel__host_t* host, accel__plugin_t* plugin);

// ---------------------------------------------------------------------------
// Library state (init.c)
// ---------------------------------------------------------------------------

typedef struct accel__search_entry {
  char* path;
  accel_origin_t origin;
} accel__search_entry_t;

typedef struct accel__state {
  pthread_mutex_t lock;  // guards everything below and device open/close
  atomic_bool initialised;
  accel__plugin_t** plugins;
  size_t plugin_count;
  size_t plugin_capacity;
  accel__search_entry_t* search;
  size_t search_count;
  bool custom_options;  // initialised with non-default options
} accel__state_t;

extern accel__state_t accel__state;

// Initialises with default options unless already initialised.
accel_status_t accel__ensure_init(void);

// Appends a candidate to the report; takes ownership of nothing. Returns
// the new entry or NULL (out of memory, already recorded as failure).
// Caller holds the lock.
accel__plugin_t* accel__state_add(const char* path, const char* source,
                                  accel_origin_t origin);

// Finds the usable-or-not plugin that owns `name` (the first entry with that
// name that was not shadowed by an earlier one). Caller holds the lock.
accel__plugin_t* accel__state_find(const char* name);

// Copies `s`, or returns NULL when out of memory.
char* accel__strdup(const char* s);

// ---------------------------------------------------------------------------
// Handles
// ---------------------------------------------------------------------------

struct accel_device {
  atomic_uint refs;
  accel__plugin_t* plugin;
  const accel_device_ops_t* ops;  // &plugin->ops
  uint32_t index;
  void* impl;
  char uri[48];
};

struct accel_buffer {
  atomic_uint refs;
  accel_device_t* device;
  void* impl;
  size_t size;
};

struct accel_stream {
  atomic_uint refs;
  accel_device_t* device;
  void* impl;
};

struct accel_event {
  atomic_uint refs;
  accel_device_t* device;
  void* impl;
  accel_event_flags_t flags;
  atomic_bool recorded;
};

// Opens device `index` of `plugin`, returning a new reference. Caller holds
// the state lock.
accel_status_t accel__device_open_locked(accel__plugin_t* plugin,
                                         uint32_t index,
                                         accel_device_t** out_device);

// Checks that [offset, offset + size) lies within `buffer`; `what` names
// the call and the operand in the message.
accel_status_t accel__check_range(const char* what, const char* operand,
                                  const accel_buffer_t* buffer, size_t offset,
                                  size_t size);

// Copies between devices of different plugins through host memory.
accel_status_t accel__copy_staged(accel_buffer_t* dst, size_t dst_offset,
                                  accel_buffer_t* src, size_t src_offset,
                                  size_t size);

#endif  // ACCEL_CORE_INTERNAL_H_
