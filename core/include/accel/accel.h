// SPDX-License-Identifier: MIT
//
// accel: one C API for every accelerator, backends loaded as plugins.
//
// Conventions that hold for every function below unless its comment says
// otherwise:
// - Thread safety: every function may be called from any thread at any time.
//   Handles may be shared between threads; the caller orders the release of
//   a handle after its last use.
// - Errors: fallible calls return accel_status_t (ACCEL_OK == 0) and, on
//   failure, set a message for the calling thread, read with
//   accel_last_error(). Codes are only ever appended; treat unknown codes as
//   failures. Library code never aborts and prints only when ACCEL_LOG asks.
// - Outputs: `out_*` pointers are required; on failure `*out_*` is set to
//   NULL (or zero) where it is a handle or count.
// - Handles are reference counted: a handle from `create`/`open`/`get`
//   starts with one reference; `retain` adds one and `release` drops one;
//   `release(NULL)` is a no-op. A child handle (buffer, stream, event) keeps
//   its device alive.
// - Initialisation: the first call that needs plugins discovers and loads
//   them (accel_init(NULL)). accel_shutdown() undoes everything.
// - Asynchronous work: stream operations return once enqueued. Their errors
//   surface at the next call that synchronises with the stream or event.
#ifndef ACCEL_ACCEL_H_
#define ACCEL_ACCEL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#if defined(ACCEL_BUILDING_LIBRARY)
#define ACCEL_API __declspec(dllexport)
#else
#define ACCEL_API __declspec(dllimport)
#endif
#else
#define ACCEL_API __attribute__((visibility("default")))
#endif

// Library version.
#define ACCEL_VERSION_MAJOR 0
#define ACCEL_VERSION_MINOR 1
#define ACCEL_VERSION_PATCH 0

// ---------------------------------------------------------------------------
// Types shared with <accel/plugin.h>. The block is identical in both headers
// and guarded so that a file may include both (tests/abi checks they agree).
// ---------------------------------------------------------------------------
#ifndef ACCEL_SHARED_TYPES_DEFINED_
#define ACCEL_SHARED_TYPES_DEFINED_
// Result of every fallible call. 0 is success. Codes are only ever appended;
// callers must treat an unknown non-zero code as a failure.
typedef enum accel_status {
  ACCEL_OK = 0,
  ACCEL_ERROR_INVALID_ARGUMENT = 1,      // the caller broke the contract
  ACCEL_ERROR_OUT_OF_MEMORY = 2,         // host memory exhausted
  ACCEL_ERROR_OUT_OF_DEVICE_MEMORY = 3,  // device memory exhausted
  ACCEL_ERROR_NOT_FOUND = 4,             // no such device, plugin or symbol
  ACCEL_ERROR_UNSUPPORTED = 5,           // valid request this device cannot do
  ACCEL_ERROR_UNAVAILABLE = 6,   // plugin present, driver/runtime/device not
  ACCEL_ERROR_INCOMPATIBLE = 7,  // ABI or version mismatch
  ACCEL_ERROR_DEVICE_LOST = 8,   // the device faulted or went away
  ACCEL_ERROR_BACKEND = 9,       // the vendor API failed
  ACCEL_ERROR_INTERNAL = 10,     // a bug in accel or a plugin
  ACCEL_ERROR_NOT_READY = 11,    // work not finished yet (e.g. elapsed time)
  ACCEL_STATUS_MAX_ENUM = 0x7fffffff
} accel_status_t;

// Severity of a log message; ACCEL_LOG picks the lowest one printed.
typedef enum accel_log_level {
  ACCEL_LOG_ERROR = 0,
  ACCEL_LOG_WARN = 1,
  ACCEL_LOG_INFO = 2,
  ACCEL_LOG_DEBUG = 3,
  ACCEL_LOG_LEVEL_MAX_ENUM = 0x7fffffff
} accel_log_level_t;

// Broad kind of device.
typedef enum accel_device_type {
  ACCEL_DEVICE_TYPE_OTHER = 0,
  ACCEL_DEVICE_TYPE_CPU = 1,
  ACCEL_DEVICE_TYPE_GPU = 2,
  ACCEL_DEVICE_TYPE_MAX_ENUM = 0x7fffffff
} accel_device_type_t;

// Capability bits reported in device properties.
typedef uint32_t accel_device_caps_t;
enum accel_device_cap_bits {
  ACCEL_DEVICE_CAP_F16 = 1u << 0,            // f16 storage and arithmetic
  ACCEL_DEVICE_CAP_BF16 = 1u << 1,           // bf16 storage and arithmetic
  ACCEL_DEVICE_CAP_TF32 = 1u << 2,           // TF32 matrix math
  ACCEL_DEVICE_CAP_PINNED_MEMORY = 1u << 3,  // real page-locked host memory
  ACCEL_DEVICE_CAP_PEER_ACCESS = 1u << 4,    // direct copies to peers
  ACCEL_DEVICE_CAP_EVENT_TIMING = 1u << 5,   // events measure elapsed time
  ACCEL_DEVICE_CAP_KERNELS = 1u << 6,        // custom modules and launches
  ACCEL_DEVICE_CAP_GRAPHS = 1u << 7,         // captured work graphs
  ACCEL_DEVICE_CAP_MAX_ENUM = 0x7fffffff
};

// Stream creation flags (none defined yet; pass 0).
typedef uint32_t accel_stream_flags_t;

// Event creation flags.
typedef uint32_t accel_event_flags_t;
enum accel_event_flag_bits {
  // The event records a timestamp so accel_event_elapsed_ms() works.
  // Without it recording is cheaper and elapsed time is refused.
  ACCEL_EVENT_TIMING = 1u << 0,
  ACCEL_EVENT_FLAG_MAX_ENUM = 0x7fffffff
};
#endif  // ACCEL_SHARED_TYPES_DEFINED_

// Opaque handles, owned by the core.
typedef struct accel_device accel_device_t;
typedef struct accel_buffer accel_buffer_t;
typedef struct accel_stream accel_stream_t;
typedef struct accel_event accel_event_t;

// ===========================================================================
// Library
// ===========================================================================

// Where a plugin candidate or search directory came from.
typedef enum accel_origin {
  ACCEL_ORIGIN_API = 0,          // accel_init() options or accel_plugin_load()
  ACCEL_ORIGIN_ENV = 1,          // ACCEL_PLUGIN_PATH
  ACCEL_ORIGIN_INSTALL_DIR = 2,  // ${libdir}/accel beside libaccel
  ACCEL_ORIGIN_MAX_ENUM = 0x7fffffff
} accel_origin_t;

// Called before the core opens each plugin candidate, with its path.
// accel-info uses it to attribute a crash to the plugin being probed.
typedef void (*accel_probe_fn_t)(const char* path, void* user_data);

// Options for accel_init(). Initialise with accel_options_init().
typedef struct accel_options {
  uint32_t struct_size;
  // Colon-separated directories or plugin files searched first, before
  // ACCEL_PLUGIN_PATH. NULL for none. Copied by accel_init().
  const char* plugin_path;
  // Skip ACCEL_PLUGIN_PATH.
  bool ignore_env_path;
  // Skip the install directory.
  bool ignore_install_dir;
  // Candidates whose real path equals one of these are reported as
  // excluded and never opened. May be NULL. Copied by accel_init().
  const char* const* exclude;
  size_t exclude_count;
  // (optional) Called before each candidate is opened.
  accel_probe_fn_t probe;
  void* probe_user_data;
} accel_options_t;

// Fills `options` with the defaults (environment and install dir searched,
// nothing excluded). Does nothing if `options` is NULL.
ACCEL_API void accel_options_init(accel_options_t* options);

// Discovers and loads plugins. `options` may be NULL for the defaults; it is
// not retained. Called implicitly with NULL by the first call that needs
// plugins, so most programs never call it.
// A plugin that fails to load never makes this fail: it is recorded in the
// load report. Returns ACCEL_ERROR_INVALID_ARGUMENT if `options` is
// malformed or if the library is already initialised with other options
// (call accel_shutdown() first), ACCEL_ERROR_OUT_OF_MEMORY.
ACCEL_API accel_status_t accel_init(const accel_options_t* options);

// Unloads every plugin and frees all core state, so leak checkers see a
// clean exit. Handles still alive are a caller bug: their plugins stay
// loaded (a warning is logged) so those handles do not dangle, and the
// memory is reclaimed by process exit. The library may be initialised again
// afterwards. Not safe to call concurrently with other accel calls.
ACCEL_API void accel_shutdown(void);

// Message describing the calling thread's most recent failure, or "" if
// none. Owned by the library; valid until the thread's next accel call.
ACCEL_API const char* accel_last_error(void);

// Name of a status code ("ACCEL_ERROR_NOT_FOUND"), or "ACCEL_ERROR_UNKNOWN"
// for a code this library does not know. Never NULL; static storage.
ACCEL_API const char* accel_status_string(accel_status_t status);

// Library version, "0.1.0". Static storage.
ACCEL_API const char* accel_version_string(void);

// ===========================================================================
// Load report (DESIGN decision 8): what the core found and why each plugin
// did or did not load.
// ===========================================================================

// How far loading a candidate got.
typedef enum accel_plugin_stage {
  ACCEL_PLUGIN_STAGE_FOUND = 0,        // file found on the search path
  ACCEL_PLUGIN_STAGE_OPENED = 1,       // dlopen succeeded
  ACCEL_PLUGIN_STAGE_ENTRY = 2,        // accel_plugin_entry resolved, called
  ACCEL_PLUGIN_STAGE_NEGOTIATED = 3,   // descriptor and tables validated
  ACCEL_PLUGIN_STAGE_INITIALISED = 4,  // load() succeeded, devices counted
  ACCEL_PLUGIN_STAGE_MAX_ENUM = 0x7fffffff
} accel_plugin_stage_t;

// One candidate plugin. Strings are owned by the library and stay valid
// until accel_shutdown(); none is NULL (unknown ones are "").
typedef struct accel_plugin_report {
  uint32_t struct_size;
  const char* path;    // real path of the file
  const char* source;  // the search-path entry it came from
  accel_origin_t origin;
  accel_plugin_stage_t stage;
  // ACCEL_OK: usable (possibly with 0 devices). ACCEL_ERROR_UNAVAILABLE:
  // loaded, but its driver, runtime or device is missing.
  // ACCEL_ERROR_NOT_FOUND: deliberately not used, not broken: at stage
  // FOUND it was excluded by accel_options_t; at stage ENTRY it is
  // shadowed by an earlier candidate with the same name. Other codes: the
  // plugin is broken and `message` says why.
  accel_status_t status;
  const char* message;   // why, when status != ACCEL_OK; else ""
  const char* name;      // plugin name, once the entry ran
  const char* version;   // plugin version string, once the entry ran
  uint32_t abi_version;  // ABI the plugin was built with, 0 if unknown
  uint32_t device_count;
  int32_t priority;
} accel_plugin_report_t;

// Number of plugin candidates in the load report (initialises the library).
// Returns ACCEL_ERROR_INVALID_ARGUMENT if `out_count` is NULL.
ACCEL_API accel_status_t accel_plugin_report_count(size_t* out_count);

// Copies report entry `index` into `*out_report`, whose `struct_size` the
// caller sets to sizeof(accel_plugin_report_t). Returns
// ACCEL_ERROR_NOT_FOUND if `index` is out of range,
// ACCEL_ERROR_INVALID_ARGUMENT for NULL or an unset `struct_size`.
ACCEL_API accel_status_t
accel_plugin_report_get(size_t index, accel_plugin_report_t* out_report);

// Number of entries in the plugin search path, in search order.
ACCEL_API accel_status_t accel_search_path_count(size_t* out_count);

// Search-path entry `index`: the directory or file and where it came from.
// `*out_path` is owned by the library and valid until accel_shutdown().
// Returns ACCEL_ERROR_NOT_FOUND if `index` is out of range.
ACCEL_API accel_status_t accel_search_path_get(size_t index,
                                               const char** out_path,
                                               accel_origin_t* out_origin);

// Loads one more plugin from `path` after initialisation and adds it to the
// load report. Returns ACCEL_OK if the plugin is usable, otherwise the
// status recorded in its report entry (ACCEL_ERROR_NOT_FOUND for a missing
// file, ACCEL_ERROR_INCOMPATIBLE for a bad plugin, ...). A path that is
// already loaded returns ACCEL_OK and loads nothing.
ACCEL_API accel_status_t accel_plugin_load(const char* path);

// ===========================================================================
// Devices. Named "backend:index" ("cpu:0", "cuda:1"). Each physical device
// has one accel_device_t; every open returns a new reference to it.
// ===========================================================================

// Total number of devices over all usable plugins.
ACCEL_API accel_status_t accel_device_count(uint32_t* out_count);

// Opens the `index`-th device over all plugins, in load-report order.
// Returns ACCEL_ERROR_NOT_FOUND if `index` >= accel_device_count().
ACCEL_API accel_status_t accel_device_get(uint32_t index,
                                          accel_device_t** out_device);

// Opens the device named `uri`: "backend:index" or "backend" (index 0).
// Returns ACCEL_ERROR_INVALID_ARGUMENT for a malformed name,
// ACCEL_ERROR_NOT_FOUND for an unknown backend or index, and the plugin's
// status (e.g. ACCEL_ERROR_UNAVAILABLE) with the load report's reason when
// the backend exists but cannot be used.
ACCEL_API accel_status_t accel_device_open(const char* uri,
                                           accel_device_t** out_device);

// Opens the device the environment selects (ACCEL_BACKEND, DESIGN
// decision 3): an ordered, comma-separated list of "auto", "backend" or
// "backend:index"; the first usable entry wins. Unset or empty means
// "auto": the first device of the usable plugin with the highest priority,
// falling back to cpu:0 (logged once at info level). Returns
// ACCEL_ERROR_INVALID_ARGUMENT for a malformed value (the message lists the
// known backends), and when no entry is usable, the status of the last
// entry with every entry's reason in the message.
ACCEL_API accel_status_t accel_device_default(accel_device_t** out_device);

// Like accel_device_default() for an explicit selection string `spec`
// instead of ACCEL_BACKEND. NULL or "" means "auto".
ACCEL_API accel_status_t accel_device_select(const char* spec,
                                             accel_device_t** out_device);

ACCEL_API void accel_device_retain(accel_device_t* device);
ACCEL_API void accel_device_release(accel_device_t* device);

// The device's name, "cuda:1". Owned by the device. Never NULL for a
// non-NULL device; "" for NULL.
ACCEL_API const char* accel_device_uri(const accel_device_t* device);

// The device's backend name, "cuda". Owned by the device.
ACCEL_API const char* accel_device_backend(const accel_device_t* device);

// The device's index within its backend.
ACCEL_API uint32_t accel_device_index(const accel_device_t* device);

// Device properties. Caller-owned; set `struct_size` before querying.
typedef struct accel_device_info {
  uint32_t struct_size;
  accel_device_type_t type;
  char uri[48];      // "cuda:1"
  char backend[32];  // "cuda"
  uint32_t index;
  char name[256];
  char vendor[64];
  char arch[64];          // "sm_90", "gfx90a", "x86-64-v4"
  uint64_t total_memory;  // bytes
  uint64_t free_memory;   // bytes, at the time of the query
  uint32_t compute_units;
  uint32_t max_threads_per_block;
  uint32_t simd_width;  // warp/wavefront size or SIMD lanes
  accel_device_caps_t caps;
  uint8_t uuid[16];
  char pci_bus_id[32];
  char features[256];
  char driver_version[64];
} accel_device_info_t;

// Fills `*out_info` (whose `struct_size` the caller sets to
// sizeof(accel_device_info_t)) from the plugin. Returns
// ACCEL_ERROR_INVALID_ARGUMENT for NULL arguments or a `struct_size` that
// is too small, or the plugin's error.
ACCEL_API accel_status_t accel_device_query_info(accel_device_t* device,
                                                 accel_device_info_t* out_info);

// Current free and total memory of `device` in bytes.
ACCEL_API accel_status_t accel_device_query_memory(accel_device_t* device,
                                                   uint64_t* out_free,
                                                   uint64_t* out_total);

// Sets `*out_can` to whether `device` can copy directly from `peer`.
// A device cannot peer with itself or with another backend's device.
ACCEL_API accel_status_t accel_device_can_access_peer(accel_device_t* device,
                                                      accel_device_t* peer,
                                                      bool* out_can);

// Short name of a capability bit ("f16", "event_timing"), or NULL for an
// unknown or multi-bit value. Static storage.
ACCEL_API const char* accel_device_cap_name(accel_device_caps_t cap);

// ===========================================================================
// Buffers: device memory. Copies check bounds and devices and name both
// sides on a mismatch. The synchronous calls below return when the work is
// done; they do not wait for unrelated stream work.
// ===========================================================================

// Allocates `size` bytes on `device`. ACCEL_ERROR_INVALID_ARGUMENT if `size`
// is 0, ACCEL_ERROR_OUT_OF_DEVICE_MEMORY if the device is full.
ACCEL_API accel_status_t accel_buffer_create(accel_device_t* device,
                                             size_t size,
                                             accel_buffer_t** out_buffer);

ACCEL_API void accel_buffer_retain(accel_buffer_t* buffer);

// Drops a reference; frees the memory when the last one goes. The caller
// must not release the last reference while enqueued work still uses the
// buffer (synchronise the stream first).
ACCEL_API void accel_buffer_release(accel_buffer_t* buffer);

// Size in bytes as requested at creation; 0 for NULL.
ACCEL_API size_t accel_buffer_size(const accel_buffer_t* buffer);

// The buffer's device (borrowed; retain it to keep it).
ACCEL_API accel_device_t* accel_buffer_device(const accel_buffer_t* buffer);

// Copies `size` bytes from host `src` into `buffer` at `offset`.
// ACCEL_ERROR_INVALID_ARGUMENT for NULL pointers, `size` 0, or a range past
// the end of the buffer.
ACCEL_API accel_status_t accel_buffer_write(accel_buffer_t* buffer,
                                            size_t offset, const void* src,
                                            size_t size);

// Copies `size` bytes from `buffer` at `offset` to host `dst`.
ACCEL_API accel_status_t accel_buffer_read(accel_buffer_t* buffer,
                                           size_t offset, void* dst,
                                           size_t size);

// Copies `size` bytes between buffers. Buffers on different devices of one
// backend use a peer copy (direct or staged through the host); buffers of
// different backends are staged through the host.
ACCEL_API accel_status_t accel_buffer_copy(accel_buffer_t* dst,
                                           size_t dst_offset,
                                           accel_buffer_t* src,
                                           size_t src_offset, size_t size);

// Sets `size` bytes of `buffer` at `offset` to `value`.
ACCEL_API accel_status_t accel_buffer_fill(accel_buffer_t* buffer,
                                           size_t offset, uint8_t value,
                                           size_t size);

// ===========================================================================
// Host memory.
// ===========================================================================

// Allocates `size` bytes of host memory suited to fast transfers with
// `device`: page-locked where the plugin supports it
// (ACCEL_DEVICE_CAP_PINNED_MEMORY), otherwise ordinary 64-byte-aligned
// memory. Free with accel_host_free() on the same device.
ACCEL_API accel_status_t accel_host_alloc(accel_device_t* device, size_t size,
                                          void** out_ptr);

// Frees memory from accel_host_alloc(). NULL `ptr` is a no-op.
ACCEL_API void accel_host_free(accel_device_t* device, void* ptr);

// ===========================================================================
// Streams: in-order asynchronous queues of work on one device.
// ===========================================================================

// Creates a stream on `device`. `flags` must be 0.
ACCEL_API accel_status_t accel_stream_create(accel_device_t* device,
                                             accel_stream_flags_t flags,
                                             accel_stream_t** out_stream);

ACCEL_API void accel_stream_retain(accel_stream_t* stream);

// Drops a reference. Releasing the last one waits for pending work.
ACCEL_API void accel_stream_release(accel_stream_t* stream);

// The stream's device (borrowed).
ACCEL_API accel_device_t* accel_stream_device(const accel_stream_t* stream);

// Blocks until all work enqueued on `stream` so far has finished. Returns
// the first asynchronous error of that work.
ACCEL_API accel_status_t accel_stream_synchronize(accel_stream_t* stream);

// Sets `*out_done` to whether all enqueued work has finished, without
// blocking. Returns an asynchronous error if one occurred.
ACCEL_API accel_status_t accel_stream_query(accel_stream_t* stream,
                                            bool* out_done);

// Makes later work on `stream` wait for `event`'s most recent record. The
// event may be on another device of the same backend; a different backend
// is ACCEL_ERROR_INVALID_ARGUMENT naming both devices.
ACCEL_API accel_status_t accel_stream_wait_event(accel_stream_t* stream,
                                                 accel_event_t* event);

// Enqueues a copy of `size` bytes from host `src` to `dst` at `dst_offset`.
// `src` must stay valid and unchanged until the stream reaches the copy.
// `dst` must be on the stream's device.
ACCEL_API accel_status_t accel_stream_write_buffer(accel_stream_t* stream,
                                                   accel_buffer_t* dst,
                                                   size_t dst_offset,
                                                   const void* src,
                                                   size_t size);

// Enqueues a copy of `size` bytes from `src` at `src_offset` to host `dst`.
// `dst` must stay valid until the stream reaches the copy; read it only
// after synchronising. `src` must be on the stream's device.
ACCEL_API accel_status_t accel_stream_read_buffer(accel_stream_t* stream,
                                                  accel_buffer_t* src,
                                                  size_t src_offset, void* dst,
                                                  size_t size);

// Enqueues a copy between buffers. `dst` must be on the stream's device;
// `src` may be on another device of the same backend (a peer copy).
ACCEL_API accel_status_t accel_stream_copy_buffer(
    accel_stream_t* stream, accel_buffer_t* dst, size_t dst_offset,
    accel_buffer_t* src, size_t src_offset, size_t size);

// Enqueues setting `size` bytes of `dst` at `offset` to `value`.
ACCEL_API accel_status_t accel_stream_fill_buffer(accel_stream_t* stream,
                                                  accel_buffer_t* dst,
                                                  size_t offset, uint8_t value,
                                                  size_t size);

// ===========================================================================
// Events: markers in a stream that can be waited on and timed.
// ===========================================================================

// Creates an event on `device`. `flags` is 0 or ACCEL_EVENT_TIMING;
// ACCEL_ERROR_UNSUPPORTED if the device cannot time events.
ACCEL_API accel_status_t accel_event_create(accel_device_t* device,
                                            accel_event_flags_t flags,
                                            accel_event_t** out_event);

ACCEL_API void accel_event_retain(accel_event_t* event);
ACCEL_API void accel_event_release(accel_event_t* event);

// Records `event` at the current end of `stream`; both on one device.
ACCEL_API accel_status_t accel_event_record(accel_event_t* event,
                                            accel_stream_t* stream);

// Blocks until the event's last record completes. An event never recorded
// is complete.
ACCEL_API accel_status_t accel_event_synchronize(accel_event_t* event);

// Sets `*out_done` to whether the event's last record has completed.
ACCEL_API accel_status_t accel_event_query(accel_event_t* event,
                                           bool* out_done);

// Milliseconds between `start` and `end`, both recorded with
// ACCEL_EVENT_TIMING on the same device. ACCEL_ERROR_NOT_READY if either
// has not completed, ACCEL_ERROR_INVALID_ARGUMENT if either lacks timing
// or was never recorded.
ACCEL_API accel_status_t accel_event_elapsed_ms(accel_event_t* start,
                                                accel_event_t* end,
                                                float* out_ms);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ACCEL_ACCEL_H_
