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
//   its device alive. Releasing more references than the program holds is
//   a bug; for buffer, stream, event and device handles the library
//   catches a retain or release of a handle whose last reference is gone,
//   even after a newer handle took its memory: the call is ignored,
//   accel_last_error() says "already released" (INVALID_ARGUMENT) and
//   ACCEL_LOG logs it at error level. Buffer calls on such a handle fail
//   with ACCEL_ERROR_INVALID_ARGUMENT; other calls on released handles are
//   undefined (see accel_buffer_release).
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
#define ACCEL_VERSION_MINOR 2
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
  ACCEL_ERROR_TIMEOUT = 12,      // a bounded wait (a collective) ran out
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
  ACCEL_DEVICE_CAP_PEER_ACCESS = 1u << 4,    // direct copies from some
                                             // peers (per pair: see
                                             // can_access_peer)
  ACCEL_DEVICE_CAP_EVENT_TIMING = 1u << 5,   // events measure elapsed time
  ACCEL_DEVICE_CAP_KERNELS = 1u << 6,        // custom modules and launches
  ACCEL_DEVICE_CAP_GRAPHS = 1u << 7,         // captured work graphs
  ACCEL_DEVICE_CAP_HOST_ACCESSIBLE = 1u << 8,  // buffer addresses are host
                                               // pointers
  // Every buffer is a device allocation of its own: the runtime leaves
  // concurrent use of disjoint ranges of one allocation undefined (OpenCL:
  // a buffer and its sub-buffers), so the caching allocator never places
  // two buffers in one allocation. Work on two streams that touches
  // disjoint ranges of one buffer at once (a kernel argument at an offset
  // is a sub-buffer) is undefined there too; order it with events.
  ACCEL_DEVICE_CAP_SEPARATE_ALLOCATIONS = 1u << 9,
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
  // Hint (cudaEventBlockingSync): a host waiting on the event may sleep
  // instead of spinning. Accepted by accel_event_create() on every device.
  // Since ABI 1.4 the core passes it to plugins of ABI 1.4 or later (an
  // older plugin never sees it); a plugin may ignore it.
  ACCEL_EVENT_BLOCKING_SYNC = 1u << 1,
  ACCEL_EVENT_FLAG_MAX_ENUM = 0x7fffffff
};

// Element type of the built-in ops. Values are stable.
typedef enum accel_dtype {
  ACCEL_DTYPE_F32 = 0,   // IEEE binary32
  ACCEL_DTYPE_F16 = 1,   // IEEE binary16
  ACCEL_DTYPE_BF16 = 2,  // bfloat16: the top 16 bits of a binary32
  ACCEL_DTYPE_I32 = 3,   // two's complement 32-bit integer
  ACCEL_DTYPE_MAX_ENUM = 0x7fffffff
} accel_dtype_t;

// GEMM flags.
typedef uint32_t accel_gemm_flags_t;
enum accel_gemm_flag_bits {
  // f32 GEMM may round its inputs to TF32 (10-bit mantissa) on hardware
  // with TF32 tensor cores. Ignored elsewhere.
  ACCEL_GEMM_ALLOW_TF32 = 1u << 0,
  ACCEL_GEMM_FLAG_MAX_ENUM = 0x7fffffff
};
#endif  // ACCEL_SHARED_TYPES_DEFINED_

// Opaque handles, owned by the core.
typedef struct accel_device accel_device_t;
typedef struct accel_buffer accel_buffer_t;
typedef struct accel_stream accel_stream_t;
typedef struct accel_event accel_event_t;
typedef struct accel_module accel_module_t;
typedef struct accel_kernel accel_kernel_t;

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

// Library version, "0.2.0". Static storage.
ACCEL_API const char* accel_version_string(void);

// ===========================================================================
// Log: where accel's diagnostics go (core and plugins alike)
// ===========================================================================

// Receives one log line: `tag` is the plugin's name ("cpu", "cuda") or
// "accel" for the core, `message` the text without prefix or newline. Both
// strings are valid only during the call. Called on the thread that logs,
// possibly several threads at once; it must not call
// accel_log_set_callback() itself (that would deadlock).
typedef void (*accel_log_fn_t)(accel_log_level_t level, const char* tag,
                               const char* message, void* user_data);

// Routes accel's log to `fn` instead of stderr; NULL restores stderr.
// Messages are filtered first by the level (ACCEL_LOG, or
// accel_log_set_level()). Once this returns no thread is still inside the
// previous callback. Thread-safe; survives accel_shutdown().
ACCEL_API void accel_log_set_callback(accel_log_fn_t fn, void* user_data);

// Sets the most verbose level logged (ACCEL_LOG_ERROR .. ACCEL_LOG_DEBUG),
// or -1 for nothing, overriding ACCEL_LOG for the rest of the process.
// Thread-safe. Returns ACCEL_ERROR_INVALID_ARGUMENT for another value.
ACCEL_API accel_status_t accel_log_set_level(int level);

// ===========================================================================
// Trace ranges: named spans of the application's own phases
// ===========================================================================

// Opens a range named `name` (copied; at most 63 bytes are kept) on the
// calling thread. With ACCEL_TRACE set it becomes a span on this thread's
// track in the trace file; where the core was built with NVTX headers it is
// also an NVTX range (nvtxRangePushA, seen by Nsight Systems and other
// NVTX tools), and where libroctx64.so loads a roctx range
// (roctxRangePushA). Ranges nest up to 64 deep per thread. Thread-safe;
// each thread has its own stack. Returns ACCEL_ERROR_INVALID_ARGUMENT for
// a NULL name or a range nested deeper than 64.
ACCEL_API accel_status_t accel_range_push(const char* name);

// Closes the calling thread's innermost range. Returns
// ACCEL_ERROR_INVALID_ARGUMENT when this thread has no open range.
ACCEL_API accel_status_t accel_range_pop(void);

// ===========================================================================
// Load report (architecture decision 8): what the core found and why each
// plugin did or did not load.
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
  // -- since accel 0.2 --
  // ABI minor the plugin was built with (1.N), derived from the sizes of
  // the tables it returned: the newest minor whose accel_plugin_t and
  // accel_device_ops_t are no larger than the plugin's. Minors that added
  // no table entry cannot be told from the one before; a plugin built
  // with ABI 1.3 or later says its own minor in accel_plugin_t.abi_minor.
  // 0 until the descriptor was read.
  uint32_t abi_minor;
} accel_plugin_report_t;

// Number of plugin candidates in the load report (initialises the library).
// The report shows device counts, so this counts every plugin's devices
// first (which starts their drivers; see "Lazy start" in the user guide).
// Returns ACCEL_ERROR_INVALID_ARGUMENT if `out_count` is NULL.
ACCEL_API accel_status_t accel_plugin_report_count(size_t* out_count);

// Copies report entry `index` into `*out_report`, whose `struct_size` the
// caller sets to sizeof(accel_plugin_report_t) (a caller built before
// `abi_minor` was appended gets the fields that fit). Returns
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

// Total number of visible devices over all usable plugins. Counts every
// plugin's devices (starting their drivers). A plugin contributes at most
// 4096 devices (the rest are ignored and its report message says so); the
// total saturates at UINT32_MAX.
ACCEL_API accel_status_t accel_device_count(uint32_t* out_count);

// Number of devices hidden by ACCEL_VISIBLE_DEVICES (counts every
// plugin's devices first).
ACCEL_API accel_status_t accel_device_hidden_count(size_t* out_count);

// Hidden device `index`: its backend, the plugin's own index for it (not
// a visible index) and why it is hidden. The strings are owned by the
// library and valid until accel_shutdown(). Returns
// ACCEL_ERROR_NOT_FOUND if `index` is out of range.
ACCEL_API accel_status_t accel_device_hidden_get(size_t index,
                                                 const char** out_backend,
                                                 uint32_t* out_index,
                                                 const char** out_reason);

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

// Opens the device the environment selects (ACCEL_BACKEND, architecture
// decision 3): an ordered, comma-separated list of "auto", "backend" or
// "backend:index"; the first usable entry wins. Unset or empty means
// "auto": the best device over all plugins, ranked by type (GPU, then
// other, then CPU; among CPU devices the native cpu backend first), then
// plugin priority, then discovery order; falling back to cpu:0 is logged
// once at info level. Only the plugins an entry needs are started: with
// ACCEL_BACKEND=cpu no GPU driver is loaded. Returns
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
  // -- since accel 0.2 --
  // The module format the device loads ("elf-x86_64", "cuda-sm_90",
  // "amdgcn-gfx90a"), or "" if it runs no custom kernels.
  char module_target[64];
  // Largest single buffer the device allocates, in bytes; 0 means no limit
  // below `total_memory`. A larger accel_buffer_create() fails.
  uint64_t max_alloc_size;
  // Most dynamic shared memory one launch may ask for; 0 means unknown.
  uint64_t max_shared_mem_bytes;
  // Alignment of a kernel buffer argument's offset; 0 or 1 means any.
  uint32_t buffer_offset_alignment;
  // Largest grid per dimension; 0 means unlimited (see
  // accel_kernel_launch()).
  uint32_t max_grid[3];
  // Space-separated module formats loaded besides `module_target`
  // ("opencl-c spirv"), or "".
  char module_formats[128];
  // Platform or runtime of the device ("Portable Computing Language"), or
  // "".
  char platform[64];
} accel_device_info_t;

// Fills `*out_info` (whose `struct_size` the caller sets to
// sizeof(accel_device_info_t)) from the plugin. A caller built against an
// older accel_device_info_t (without `module_target`, or without the
// fields after it) gets the fields that fit its `struct_size`. Returns ACCEL_ERROR_INVALID_ARGUMENT for NULL
// arguments or a `struct_size` smaller than the first version of the
// struct, or the plugin's error.
ACCEL_API accel_status_t accel_device_query_info(accel_device_t* device,
                                                 accel_device_info_t* out_info);

// Current free and total memory of `device` in bytes.
ACCEL_API accel_status_t accel_device_query_memory(accel_device_t* device,
                                                   uint64_t* out_free,
                                                   uint64_t* out_total);

// Sets `*out_can` to whether `device` can copy directly from `peer`.
// A device cannot peer with itself or with another backend's device.
// Access is per pair: ACCEL_DEVICE_CAP_PEER_ACCESS says only that some
// other device of the backend can be copied from directly (an OpenCL
// device reaches the devices of its own platform, not another
// platform's). Copies between any two devices work either way; the
// others are staged through host memory.
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

// Allocates `size` bytes on `device` from its caching allocator (see
// "Memory" below); the buffer is ready for any stream. The buffer keeps
// `device` alive. ACCEL_ERROR_INVALID_ARGUMENT if `size` is 0,
// ACCEL_ERROR_OUT_OF_DEVICE_MEMORY if the device is full even after the
// allocator gave its cache back (the message says how much was requested,
// allocated, reserved, free and total) and also, without touching the
// cache, if `size` is above the device's `max_alloc_size` (the message
// names that limit: the request can never succeed on this device, so it
// is reported as the out-of-memory a caller already handles rather than
// as a bad argument), ACCEL_ERROR_OUT_OF_MEMORY if host memory for the
// bookkeeping ran out. The buffer starts on a multiple of the device's
// `buffer_offset_alignment`.
ACCEL_API accel_status_t accel_buffer_create(accel_device_t* device,
                                             size_t size,
                                             accel_buffer_t** out_buffer);

ACCEL_API void accel_buffer_retain(accel_buffer_t* buffer);

// Drops a reference; frees the memory when the last one goes. Releasing
// the last reference while enqueued work still uses the buffer is safe:
// the core saw every stream operation on it, and the memory is reused only
// after that work completes (at once by later allocations on the stream it
// was allocated on, which run after that work anyway). Uses the core cannot
// see must be declared with accel_buffer_record_stream(). Never blocks,
// except for a buffer read by a peer copy on another device's stream, which
// waits for that stream.
//
// Releasing (or retaining) a handle whose last reference is already gone
// is a program bug, and the library catches it: the call is ignored,
// accel_last_error() says "already released" and ACCEL_LOG logs it at
// error level; every accel_buffer_*, stream, op, launch and collective
// call given that handle fails with ACCEL_ERROR_INVALID_ARGUMENT, and
// accel_buffer_size() and accel_buffer_device() return 0 and NULL. This
// holds after newer buffers reused the handle's memory too: a handle is a
// (slot, generation) pair, and a released handle never names a newer
// buffer or touches it. The guarantee lapses only once its slot has been
// reused 64 times, which takes at least 64 x 4096 (262144) buffer or
// event handles created after the release (the two share slots); then the
// handle may name a newer buffer again. Passing a
// pointer that never was a handle is undefined. Stream, event and device
// handles get the same retain/release check; other calls on a released
// stream, event or device are undefined.
ACCEL_API void accel_buffer_release(accel_buffer_t* buffer);

// Size in bytes as requested at creation; 0 for NULL.
ACCEL_API size_t accel_buffer_size(const accel_buffer_t* buffer);

// The buffer's device (borrowed; retain it to keep it).
ACCEL_API accel_device_t* accel_buffer_device(const accel_buffer_t* buffer);

// Sets `*out_address` to the device address of byte `offset` of `buffer`:
// a CUdeviceptr on CUDA, a HIP device pointer on ROCm, a host pointer on
// the CPU (whose devices report ACCEL_DEVICE_CAP_HOST_ACCESSIBLE: the host
// may read and write it once the stream work that uses the buffer has
// finished). The address is valid while the buffer is alive; it is the
// caller's job to order its own use of it with accel's streams. `offset`
// may equal the size (one past the end). ACCEL_ERROR_INVALID_ARGUMENT for
// NULL arguments or an offset past the end; ACCEL_ERROR_UNSUPPORTED on a
// backend whose memory has no address (OpenCL's cl_mem). Since accel 0.2.
ACCEL_API accel_status_t accel_buffer_query_address(const accel_buffer_t* buffer,
                                                    size_t offset,
                                                    uint64_t* out_address);

// Wraps `size` bytes of device memory at `address`, owned by someone else
// (another library's allocation: a host pointer for a CPU device, a
// CUdeviceptr for CUDA, a HIP device pointer for ROCm), as a buffer of
// `device`, without copying. The buffer is an ordinary buffer for every
// call (bounds and device checks, copies, ops, launches, DLPack) and starts
// with one reference; it keeps `device` alive. Ownership: accel never
// frees the memory. When the last reference goes, accel waits for the
// streams whose work used the buffer (so release may block, unlike other
// buffers), forgets the memory and then calls `release(user_data)`, once,
// on the releasing thread; `release` may be NULL. The owner must keep the
// memory valid until then. On failure nothing is kept and `release` is
// not called. Wrapped memory is not counted in the memory statistics and
// has the owner's alignment (a launch at an offset the device cannot take
// fails as for any buffer). Thread-safe. ACCEL_ERROR_INVALID_ARGUMENT for a
// NULL device or out, a zero address or size, or an address range the
// backend rejects; ACCEL_ERROR_UNSUPPORTED on a backend that cannot wrap
// memory (OpenCL, or a plugin built without the ABI 1.3 mem_wrap entry);
// ACCEL_ERROR_OUT_OF_MEMORY if the handle cannot be allocated. Only the
// cpu backend implements it in this release. Since accel 0.2.
ACCEL_API accel_status_t accel_buffer_wrap(accel_device_t* device,
                                           uint64_t address, size_t size,
                                           void (*release)(void* user_data),
                                           void* user_data,
                                           accel_buffer_t** out_buffer);

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
// DLPack: zero-copy exchange with NumPy, PyTorch and other frameworks.
//
// The calls take and return DLPack managed tensors as `void*` (accel.h
// needs no DLPack header): a `DLManagedTensor*` when `versioned` is false
// (DLPack before 1.0, what NumPy 1.x and PyTorch 1.x exchange), a
// `DLManagedTensorVersioned*` (DLPack 1.x) when it is true. Device types:
// a cpu device is kDLCPU (1) with id 0 (one host address space), cuda:N
// is kDLCUDA (2) with id N, rocm:N is kDLROCM (10) with id N; other
// backends (OpenCL: a cl_mem has no address) have none. See docs/interop.md.
// ===========================================================================

// Sets `*out_type` and `*out_id` to the DLPack device of `device` (what a
// Python `__dlpack_device__` returns). ACCEL_ERROR_INVALID_ARGUMENT for
// NULL arguments, ACCEL_ERROR_UNSUPPORTED for a backend without a DLPack
// device type. Thread-safe.
ACCEL_API accel_status_t accel_dlpack_device(const accel_device_t* device,
                                             int32_t* out_type,
                                             int32_t* out_id);

// Lends `buffer` as a DLPack managed tensor, without copying: `ndim`
// dimensions of `shape` elements of `dtype` starting at byte `offset`,
// with `strides` in elements (NULL: compact row-major; strides must not be
// negative). The tensor's data pointer is the device address of byte
// `offset` (byte_offset is 0); its shape and strides are always filled in.
// The managed tensor holds a reference on the buffer, which its deleter
// releases: call the deleter exactly once (a consumer such as
// numpy.from_dlpack does it when it is done), and never free it
// otherwise. The consumer must order its use of the memory with accel's
// streams itself (synchronise first). ACCEL_ERROR_INVALID_ARGUMENT for
// NULL arguments, ndim outside [0, 64], an unknown dtype, negative shapes
// or strides, an offset that is not a multiple of the element size or a
// view past the end of the buffer; ACCEL_ERROR_UNSUPPORTED on a backend
// without a DLPack device (OpenCL); ACCEL_ERROR_OUT_OF_MEMORY. On failure
// `*out_managed` is NULL and the buffer's count is unchanged.
ACCEL_API accel_status_t accel_buffer_to_dlpack(accel_buffer_t* buffer,
                                                size_t offset,
                                                accel_dtype_t dtype,
                                                int32_t ndim,
                                                const int64_t* shape,
                                                const int64_t* strides,
                                                bool versioned,
                                                void** out_managed);

// Adopts the DLPack managed tensor `managed` as a buffer without copying
// (through accel_buffer_wrap): its bytes, from data + byte_offset, on
// `device`, or when `device` is NULL on the device accel maps the tensor's
// DLPack device to (kDLCPU and kDLCUDAHost: cpu:0; kDLCUDA N: cuda:N;
// kDLROCM N: rocm:N), opened for the call. On success accel owns
// `managed`: its deleter is called exactly once, after the buffer's last
// reference is gone and the streams that used it have finished. On
// failure the caller still owns it (the deleter is not called). The
// tensor must be compact row-major (dimensions of size 1 may have any
// stride), non-empty, of int, uint, float, bfloat or bool elements of
// whole bytes with one lane, and (versioned) DLPack 1.x and not read-only.
// Returns ACCEL_ERROR_INVALID_ARGUMENT for NULL arguments, a malformed or
// empty tensor, or a `device` that does not match the tensor's DLPack
// device; ACCEL_ERROR_UNSUPPORTED for a strided view, an unsupported
// dtype, a read-only tensor, a DLPack device accel does not address, or a
// backend that cannot wrap memory; ACCEL_ERROR_INCOMPATIBLE for another
// DLPack major version; the statuses of accel_device_open() and
// accel_buffer_wrap(). Thread-safe.
ACCEL_API accel_status_t accel_buffer_from_dlpack(void* managed,
                                                  bool versioned,
                                                  accel_device_t* device,
                                                  accel_buffer_t** out_buffer);

// ===========================================================================
// Memory: caching allocator and statistics (architecture decision 10).
//
// Every device has one caching allocator in the core, whatever the backend.
// Requests are rounded up to 512 bytes. Requests of up to 1 MiB share 2 MiB
// segments; larger ones get segments of their own, rounded up to 2 MiB.
// A freed block stays cached for the next request that fits (best fit,
// split and merged with its free neighbours) instead of going back to the
// plugin. The allocator is stream-ordered: a freed block is reused at once
// by later work on the stream it was allocated on, and by anything else
// only after all work that streams queued on it has completed (checked
// with events, never waited for). When the device reports out of memory,
// the allocator gives every unused cached segment back and retries once.
//
// ACCEL_ALLOCATOR=raw (read when a device is opened) turns caching off:
// every buffer is its own plugin allocation of exactly its size, returned
// as soon as it is free and no stream can still use it. Use it with
// sanitizers and memory debuggers. Statistics count the same either way.
// ===========================================================================

// Allocates `size` bytes on the device of `stream` for use in stream order
// on `stream`: the memory may be a block freed from `stream` whose earlier
// work has not finished yet, which is safe for work enqueued on `stream`
// from now on. Use it on another stream only after synchronising with
// `stream` (an event, or accel_stream_synchronize()). The buffer keeps the
// device alive. Returns the statuses of accel_buffer_create(), and
// ACCEL_ERROR_INVALID_ARGUMENT for a NULL `stream` or `out_buffer` or a
// `size` of 0.
ACCEL_API accel_status_t accel_stream_alloc_buffer(accel_stream_t* stream,
                                                   size_t size,
                                                   accel_buffer_t** out_buffer);

// Declares that work on `stream` uses `buffer` in a way the core cannot
// see (for example a kernel of another library given the buffer's device
// address), so that freeing the buffer waits for the work `stream` has
// enqueued when the last reference goes. Stream operations of this API are
// tracked without it. `stream` may be on another device of the buffer's
// backend. Returns ACCEL_ERROR_INVALID_ARGUMENT for NULL arguments or
// another backend's stream, ACCEL_ERROR_OUT_OF_MEMORY if the record cannot
// be stored.
ACCEL_API accel_status_t accel_buffer_record_stream(accel_buffer_t* buffer,
                                                    accel_stream_t* stream);

// Memory statistics of one device (like torch.cuda.memory_stats()).
// Caller-owned; set `struct_size` to sizeof(accel_memory_stats_t) first.
// Byte counts include the allocator's rounding. "Peak" fields are the
// highest value since the device was opened or the last
// accel_device_reset_peak_memory_stats(); the other counters only grow.
typedef struct accel_memory_stats {
  uint32_t struct_size;
  // Bytes of live buffers (block sizes), current and peak.
  uint64_t allocated_bytes;
  uint64_t allocated_bytes_peak;
  // Bytes the allocator holds from the plugin (segments), current and peak.
  uint64_t reserved_bytes;
  uint64_t reserved_bytes_peak;
  // Blocks that are live buffers, or freed but not yet reusable because
  // stream work queued on them had not finished when the allocator last
  // looked (it looks when a request misses the cache, and on empty-cache),
  // current and peak.
  uint64_t active_blocks;
  uint64_t active_blocks_peak;
  // Bytes live buffers asked for, before rounding.
  uint64_t requested_bytes;
  // Plugin allocations and frees (segments).
  uint64_t raw_allocs;
  uint64_t raw_frees;
  // Allocations served from the cache, and those that needed a new segment.
  uint64_t cache_hits;
  uint64_t cache_misses;
  // Times an allocation emptied the cache and retried after the device ran
  // out of memory, and allocations that failed even then.
  uint64_t oom_retries;
  uint64_t ooms;
  // Free bytes in segments that are partly in use (fragmentation).
  uint64_t inactive_split_bytes;
} accel_memory_stats_t;

// Copies the statistics of `device` into `*out_stats`. Returns
// ACCEL_ERROR_INVALID_ARGUMENT for NULL arguments or a `struct_size`
// smaller than this first version of the struct (a larger one is fine: the
// fields this library knows are written).
ACCEL_API accel_status_t accel_device_query_memory_stats(
    accel_device_t* device, accel_memory_stats_t* out_stats);

// Writes a human-readable table of the statistics of `device` (like
// torch.cuda.memory_summary()), including pinned host memory, snprintf
// style: at most `size` bytes including a terminating NUL go to `buf`, and
// `*out_length` is the full length without the NUL, so a caller may ask
// with `buf` NULL and `size` 0 first. Returns ACCEL_ERROR_INVALID_ARGUMENT
// for a NULL `device` or `out_length`, or a NULL `buf` with a non-zero
// `size`.
ACCEL_API accel_status_t accel_device_memory_summary(accel_device_t* device,
                                                     char* buf, size_t size,
                                                     size_t* out_length);

// Gives every cached segment that holds no live buffer back to the plugin,
// and the cached pinned host blocks too (like torch.cuda.empty_cache()).
// Blocks still waiting for stream work, and blocks of a stream that is not
// idle, are skipped, never waited for. Live buffers are unaffected.
// Returns ACCEL_ERROR_INVALID_ARGUMENT for a NULL `device`.
ACCEL_API accel_status_t accel_device_empty_cache(accel_device_t* device);

// Sets every peak statistic of `device` to its current value. Returns
// ACCEL_ERROR_INVALID_ARGUMENT for a NULL `device`.
ACCEL_API accel_status_t
accel_device_reset_peak_memory_stats(accel_device_t* device);

// Sets the accumulated counters of `device` (raw_allocs, raw_frees,
// cache_hits, cache_misses, oom_retries, ooms) to zero, like
// torch.cuda.reset_accumulated_memory_stats(); current and peak values
// are untouched. Returns ACCEL_ERROR_INVALID_ARGUMENT for a NULL `device`.
ACCEL_API accel_status_t
accel_device_reset_accumulated_memory_stats(accel_device_t* device);

// Writes the caching allocator's state as JSON (like
// torch.cuda.memory_snapshot()), snprintf style as
// accel_device_memory_summary(): {"device": uri, "segments": [{"size",
// "kind" ("small" or "large"), "stream" (an opaque id string of the
// owning stream, or null for the device-wide pool), "blocks": [{"offset",
// "size", "requested" (bytes the live buffer asked for, else 0), "state"
// ("free", "active", "pending": freed, waiting for stream work), "stream"
// (allocation stream id or null)}]}]}. A consistent snapshot taken under
// the allocator's lock. Same errors as accel_device_memory_summary().
ACCEL_API accel_status_t accel_device_memory_snapshot(accel_device_t* device,
                                                      char* buf, size_t size,
                                                      size_t* out_length);

// ===========================================================================
// Host memory.
//
// Copies between a buffer and host memory from accel_host_alloc() are truly
// asynchronous on backends with ACCEL_DEVICE_CAP_PINNED_MEMORY: the device
// reads or writes the page-locked memory directly while the caller goes on.
// Other host memory ("pageable") is fine for stream copies too, with one
// contract on every backend: the memory stays valid (and, as a source,
// unchanged) until the stream reaches the copy, i.e. until a later
// synchronisation with the stream or an event recorded after the copy. The
// CPU plugin reads or writes it when the stream reaches the copy; a GPU
// backend may stage it through a pinned bounce buffer, which can make the
// enqueue wait; neither gives the memory back early.
// ===========================================================================

// Allocates `size` bytes of host memory suited to fast transfers with
// `device`: page-locked where the plugin supports it
// (ACCEL_DEVICE_CAP_PINNED_MEMORY), otherwise ordinary 64-byte-aligned
// memory. Blocks are pooled by the core, since pinning is slow: a freed
// block is kept for a later request of its size class (at most 25% larger
// than asked for; ACCEL_ALLOCATOR=raw turns this off and
// accel_device_empty_cache() gives the cache back). The memory keeps
// `device` alive until freed. Free it with accel_host_free() on the same
// device. Returns ACCEL_ERROR_INVALID_ARGUMENT for NULL arguments or a
// `size` of 0, ACCEL_ERROR_OUT_OF_MEMORY (or the plugin's status) when the
// memory cannot be had even after giving the cache back.
ACCEL_API accel_status_t accel_host_alloc(accel_device_t* device, size_t size,
                                          void** out_ptr);

// Frees memory from accel_host_alloc() on `device`. No enqueued work may
// still use it: synchronise with the streams that copy from or to it
// first. NULL `ptr` is a no-op; a pointer that is not live memory from
// accel_host_alloc() on `device` is ignored with a warning in the log.
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

// Makes later work on `stream` wait for all work enqueued on `other` so
// far (torch.cuda.Stream.wait_stream): an internal event is recorded on
// `other` and waited on by `stream`, then released (the wait still
// completes). `other` may be on another device of the same backend;
// another backend is ACCEL_ERROR_INVALID_ARGUMENT. Waiting on itself is a
// no-op. Does not block the host.
ACCEL_API accel_status_t accel_stream_wait_stream(accel_stream_t* stream,
                                                  accel_stream_t* other);

// Blocks until all work enqueued so far on every live stream of `device`
// has finished (torch.cuda.synchronize). Streams created or released by
// other threads during the call may or may not be waited for. Returns the
// first error of a stream's synchronize (all are still waited for);
// ACCEL_ERROR_INVALID_ARGUMENT if `device` is NULL.
ACCEL_API accel_status_t accel_device_synchronize(accel_device_t* device);

// Enqueues a copy of `size` bytes from host `src` to `dst` at `dst_offset`.
// `src` must stay valid and unchanged until the stream reaches the copy
// (see "Host memory" for pinned and pageable memory). `dst` must be on the
// stream's device.
ACCEL_API accel_status_t accel_stream_write_buffer(accel_stream_t* stream,
                                                   accel_buffer_t* dst,
                                                   size_t dst_offset,
                                                   const void* src,
                                                   size_t size);

// Enqueues a copy of `size` bytes from `src` at `src_offset` to host `dst`.
// `dst` must stay valid until the stream reaches the copy; read it only
// after synchronising (see "Host memory"). `src` must be on the stream's
// device.
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
// ACCEL_EVENT_TIMING on the same device: end minus start, negative when
// `end` completed first (as cuEventElapsedTime). ACCEL_ERROR_NOT_READY if
// either has not completed, ACCEL_ERROR_INVALID_ARGUMENT if either lacks
// timing or was never recorded.
ACCEL_API accel_status_t accel_event_elapsed_ms(accel_event_t* start,
                                                accel_event_t* end,
                                                float* out_ms);

// ===========================================================================
// Built-in ops (architecture decision 12): portable kernels every first-party
// backend implements, checked against the CPU plugin by the conformance
// suite. Each is enqueued on `stream` and returns once enqueued, like a
// kernel launch; errors of the work surface at the next synchronisation.
// Buffers must be on the stream's device. Offsets are in bytes and must be
// multiples of the element size; counts are elements of `dtype`. An input
// may be the output itself (the same range) but must not partially overlap
// it. The core validates dtypes, counts, alignment, overlap and bounds and
// returns ACCEL_ERROR_INVALID_ARGUMENT with a message naming the operand;
// a backend without the op returns ACCEL_ERROR_UNSUPPORTED. A count of 0
// is valid and enqueues nothing. F16/BF16 arithmetic is done in f32 and
// rounded to nearest even on store.
// ===========================================================================

// Size in bytes of one element of `dtype`, or 0 for an unknown value.
ACCEL_API size_t accel_dtype_size(accel_dtype_t dtype);

// Short name of `dtype` ("f32", "f16", "bf16", "i32"), or NULL if unknown.
// Static storage.
ACCEL_API const char* accel_dtype_name(accel_dtype_t dtype);

// dst[i] = value converted to `dtype`, for i < count. Float conversion
// rounds to nearest even; I32 truncates toward zero and saturates.
ACCEL_API accel_status_t accel_op_fill(accel_stream_t* stream,
                                       accel_buffer_t* dst, size_t dst_offset,
                                       accel_dtype_t dtype, size_t count,
                                       double value);

// dst[i] = (dst_dtype)src[i]: any pair of dtypes. Float to I32 truncates
// toward zero and saturates (NaN gives 0). The ranges must not overlap
// unless they are identical and the dtypes have the same size.
ACCEL_API accel_status_t accel_op_cast(accel_stream_t* stream,
                                       accel_buffer_t* dst, size_t dst_offset,
                                       accel_dtype_t dst_dtype,
                                       accel_buffer_t* src, size_t src_offset,
                                       accel_dtype_t src_dtype, size_t count);

// x[i] = alpha * x[i]. Float dtypes only.
ACCEL_API accel_status_t accel_op_scale(accel_stream_t* stream,
                                        accel_buffer_t* x, size_t x_offset,
                                        accel_dtype_t dtype, size_t count,
                                        double alpha);

// y[i] = alpha * x[i] + y[i]. Float dtypes only.
ACCEL_API accel_status_t accel_op_axpy(accel_stream_t* stream,
                                       accel_buffer_t* y, size_t y_offset,
                                       accel_buffer_t* x, size_t x_offset,
                                       accel_dtype_t dtype, size_t count,
                                       double alpha);

// z[i] = x[i] + y[i]. I32 wraps modulo 2^32.
ACCEL_API accel_status_t accel_op_add(accel_stream_t* stream, accel_buffer_t* z,
                                      size_t z_offset, accel_buffer_t* x,
                                      size_t x_offset, accel_buffer_t* y,
                                      size_t y_offset, accel_dtype_t dtype,
                                      size_t count);

// z[i] = x[i] * y[i]. I32 wraps modulo 2^32.
ACCEL_API accel_status_t accel_op_mul(accel_stream_t* stream, accel_buffer_t* z,
                                      size_t z_offset, accel_buffer_t* x,
                                      size_t x_offset, accel_buffer_t* y,
                                      size_t y_offset, accel_dtype_t dtype,
                                      size_t count);

// out[0] = sum of x[i] for i < count, stored as `dtype` at `out_offset`.
// Floats accumulate in at least f32 (pairwise or blocked: the order is
// unspecified); I32 sums exactly in 64 bits and stores the low 32 bits.
// count 0 stores 0.
ACCEL_API accel_status_t accel_op_sum(accel_stream_t* stream,
                                      accel_buffer_t* out, size_t out_offset,
                                      accel_buffer_t* x, size_t x_offset,
                                      accel_dtype_t dtype, size_t count);

// One row-major GEMM: C[m x n] = alpha * op(A) * op(B) + beta * C, where
// op(A) is m x k and op(B) is k x n. Initialise with accel_gemm_init().
typedef struct accel_gemm {
  uint32_t struct_size;
  accel_dtype_t a_dtype;  // F32, F16 or BF16; b_dtype must match
  accel_dtype_t b_dtype;
  accel_dtype_t c_dtype;  // == a_dtype, or F32 with F16/BF16 inputs
  bool trans_a;           // A is stored k x m and used transposed
  bool trans_b;           // B is stored n x k and used transposed
  accel_gemm_flags_t flags;
  size_t m, n, k;
  double alpha, beta;  // beta == 0 ignores C's old contents (even NaN)
  accel_buffer_t* a;
  size_t a_offset;  // bytes
  size_t lda;       // elements between rows of A as stored; >= its columns
  accel_buffer_t* b;
  size_t b_offset;
  size_t ldb;
  accel_buffer_t* c;
  size_t c_offset;
  size_t ldc;
} accel_gemm_t;

// Fills `gemm` with defaults: f32, no transposes, alpha 1, beta 0, no
// flags, everything else 0. Leading dimensions of 0 mean "packed" (the
// number of stored columns). Does nothing if `gemm` is NULL.
ACCEL_API void accel_gemm_init(accel_gemm_t* gemm);

// Enqueues `gemm` on `stream`. A, B and C must be on the stream's device;
// C must not overlap A or B. m or n of 0 enqueues nothing; k of 0 gives
// C = beta * C. ACCEL_ERROR_INVALID_ARGUMENT for bad shapes, leading
// dimensions, dtype combinations or buffers too small for the stated
// shape (the message gives the bytes needed and available). A backend
// whose GEMM needs scratch memory (cuBLAS) gets it from the caching
// allocator of the stream's device, on `stream`, for that GEMM only: it
// shows as reserved memory in accel_device_query_memory_stats() and is
// reused by the stream's next GEMM. ACCEL_ERROR_OUT_OF_DEVICE_MEMORY,
// naming the GEMM workspace, when even an emptied cache cannot hold it.
ACCEL_API accel_status_t accel_op_gemm(accel_stream_t* stream,
                                       const accel_gemm_t* gemm);

// ===========================================================================
// Random numbers: counter-based Philox4x32-10 fills, bit-identical on
// every backend. A fill is a pure function of (`seed`, `rng_offset`) and
// the element index, defined exactly in <accel/philox.h>: element i uses
// the Philox block with counter rng_offset + i / 4 and key `seed`, word
// i % 4. `rng_offset` counts blocks of four elements, so a fill of `count`
// elements uses ceil(count / 4) blocks and the next independent fill
// starts at rng_offset + ceil(count / 4) (what the device generator below
// does). Values are computed in f32 without contraction or library
// functions and rounded once to `dtype`, so cpu, opencl, cuda and rocm
// write the same bytes (checked by the tests and accel-conform; the CUDA
// and ROCm kernels have run only on this project's stand-in drivers, not
// on GPU hardware). The fills are enqueued on `stream` like accel_op_fill
// and take its operand checks: `dst` on the stream's device, `dst_offset`
// a multiple of the element size, the range in bounds; count 0 enqueues
// nothing. A backend without the op returns ACCEL_ERROR_UNSUPPORTED.
// ===========================================================================

// Fills `count` elements of `dtype` (f32, f16 or bf16) at `dst_offset`
// with uniform values in [`low`, `high`): the f32 value low + (high -
// low) * u, u = (word >> 8) * 2^-24, rounded once to `dtype` (where an
// f16 or bf16 value may round up to `high`). ACCEL_ERROR_INVALID_ARGUMENT
// for an i32 `dtype`, a non-finite bound, `low` > `high`, or bounds whose
// f32 difference overflows.
ACCEL_API accel_status_t accel_op_rng_uniform(accel_stream_t* stream,
                                              accel_buffer_t* dst,
                                              size_t dst_offset,
                                              accel_dtype_t dtype, size_t count,
                                              uint64_t seed,
                                              uint64_t rng_offset, double low,
                                              double high);

// Fills `count` elements of `dtype` (f32, f16 or bf16) with normal values
// of mean `mean` and standard deviation `std` (Box-Muller on the block's
// word pairs with accel's own fixed ln, sqrt, sin and cos; tails are cut
// near 5.77 standard deviations). ACCEL_ERROR_INVALID_ARGUMENT for an i32
// `dtype`, a non-finite `mean` or `std`, or a negative `std`.
ACCEL_API accel_status_t accel_op_rng_normal(accel_stream_t* stream,
                                             accel_buffer_t* dst,
                                             size_t dst_offset,
                                             accel_dtype_t dtype, size_t count,
                                             uint64_t seed, uint64_t rng_offset,
                                             double mean, double std);

// Fills `count` i32 elements with the raw 32-bit Philox words.
ACCEL_API accel_status_t accel_op_rng_bits(accel_stream_t* stream,
                                           accel_buffer_t* dst,
                                           size_t dst_offset, size_t count,
                                           uint64_t seed, uint64_t rng_offset);

// The device's default generator (torch.cuda's default generator): a seed
// and an offset in blocks, starting at seed 67280421310721 and offset 0
// when the device is opened.
//
// Sets the seed to `seed` and the offset to 0. Seeding while another
// thread fills from the generator gives that fill either state.
// ACCEL_ERROR_INVALID_ARGUMENT if `device` is NULL.
ACCEL_API accel_status_t accel_device_manual_seed(accel_device_t* device,
                                                  uint64_t seed);

// Reads the default generator's seed and offset (both out-pointers must be
// non-NULL). ACCEL_ERROR_INVALID_ARGUMENT otherwise.
ACCEL_API accel_status_t accel_device_rng_state_get(accel_device_t* device,
                                                    uint64_t* out_seed,
                                                    uint64_t* out_offset);

// Restores a state from accel_device_rng_state_get() (or any seed and
// offset). ACCEL_ERROR_INVALID_ARGUMENT if `device` is NULL.
ACCEL_API accel_status_t accel_device_rng_state_set(accel_device_t* device,
                                                    uint64_t seed,
                                                    uint64_t offset);

// accel_op_rng_uniform(), _normal() and _bits() from the default generator
// of the stream's device: each takes the current seed and offset and
// advances the offset by ceil(count / 4) atomically, so concurrent fills
// get disjoint blocks. A fill that fails its checks does not advance it.
ACCEL_API accel_status_t accel_op_random_uniform(accel_stream_t* stream,
                                                 accel_buffer_t* dst,
                                                 size_t dst_offset,
                                                 accel_dtype_t dtype,
                                                 size_t count, double low,
                                                 double high);
ACCEL_API accel_status_t accel_op_random_normal(accel_stream_t* stream,
                                                accel_buffer_t* dst,
                                                size_t dst_offset,
                                                accel_dtype_t dtype,
                                                size_t count, double mean,
                                                double std);
ACCEL_API accel_status_t accel_op_random_bits(accel_stream_t* stream,
                                              accel_buffer_t* dst,
                                              size_t dst_offset, size_t count);

// ===========================================================================
// Custom kernels: a module is a target binary (CUDA cubin, fatbin or PTX;
// AMD code object; CPU shared object, see <accel/cpu_kernel.h>) loaded on
// one device; a kernel is a function looked up in it by name.
// ===========================================================================

// Loads a module from `size` bytes at `image` (copied; the caller may free
// it afterwards). An image built for another backend or architecture is
// ACCEL_ERROR_INCOMPATIBLE with a message naming what the image holds and
// what the device wants ("holds an AMD code object (gfx90a); cpu:0 loads
// elf-x86_64"). A device may load formats besides its target (the
// `module_formats` of accel_device_info_t, such as "opencl-c spirv"); an
// image the library does not recognise (OpenCL C source) goes only to a
// device that lists some, and the plugin reports a build failure as
// ACCEL_ERROR_INVALID_ARGUMENT with its build log.
//
// `image` may be a kernel bundle (see accel_bundle_write()): the library
// tries the bundle's images that fit the device, the exact
// `module_target` first, then others of its family (a fatbin or PTX for a
// CUDA device), then the formats in `module_formats` in the device's
// order, until the plugin loads one. ACCEL_ERROR_INCOMPATIBLE, listing
// what the bundle holds and what the device loads, when none fits; the
// last plugin error, naming every image tried, when none loads;
// ACCEL_ERROR_INVALID_ARGUMENT for a malformed bundle.
// ACCEL_ERROR_UNSUPPORTED if the device runs no kernels.
ACCEL_API accel_status_t accel_module_create(accel_device_t* device,
                                             const void* image, size_t size,
                                             accel_module_t** out_module);

// Like accel_module_create() with the contents of the file at `path`.
// ACCEL_ERROR_NOT_FOUND if it cannot be read; ACCEL_ERROR_INVALID_ARGUMENT
// if it is not a regular file (a directory, FIFO or device such as
// /dev/zero is refused before anything is read), empty or larger than
// 1 GiB.
ACCEL_API accel_status_t accel_module_create_from_file(
    accel_device_t* device, const char* path, accel_module_t** out_module);

// Adds a reference to `module`. NULL is ignored.
ACCEL_API void accel_module_retain(accel_module_t* module);

// Drops a reference; the module is unloaded once no kernel from it is
// alive and no launch of it is pending: the final release blocks until
// launches still queued on any stream have finished. NULL is ignored.
ACCEL_API void accel_module_release(accel_module_t* module);

// Looks up the kernel called `name` in `module`. ACCEL_ERROR_NOT_FOUND
// with the name in the message if there is none. The kernel keeps the
// module alive.
ACCEL_API accel_status_t accel_kernel_create(accel_module_t* module,
                                             const char* name,
                                             accel_kernel_t** out_kernel);

ACCEL_API void accel_kernel_retain(accel_kernel_t* kernel);
ACCEL_API void accel_kernel_release(accel_kernel_t* kernel);

// Kind of one kernel argument.
typedef enum accel_kernel_arg_kind {
  ACCEL_KERNEL_ARG_VALUE = 0,   // `size` bytes copied from `value`
  ACCEL_KERNEL_ARG_BUFFER = 1,  // the device address of `buffer` + `offset`
  ACCEL_KERNEL_ARG_KIND_MAX_ENUM = 0x7fffffff
} accel_kernel_arg_kind_t;

// Largest value argument, in bytes. CUDA has long limited all of a
// kernel's parameters together to 4 KiB, so no single value above that
// can launch everywhere; larger data belongs in a buffer.
#define ACCEL_KERNEL_ARG_VALUE_MAX 4096

// One kernel argument. Values are copied at launch, so they may live on
// the caller's stack.
typedef struct accel_kernel_arg {
  accel_kernel_arg_kind_t kind;
  uint32_t size;
  const void* value;
  accel_buffer_t* buffer;
  size_t offset;
} accel_kernel_arg_t;

// Grid and block geometry of a launch. Initialise with
// accel_launch_config_init(): grid and block 1 x 1 x 1, no shared memory.
typedef struct accel_launch_config {
  uint32_t struct_size;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_mem_bytes;  // dynamic shared memory per block
} accel_launch_config_t;

ACCEL_API void accel_launch_config_init(accel_launch_config_t* config);

// Enqueues `kernel` on `stream` with `config` and `num_args` arguments.
// Buffers must be on the stream's device, which must be the kernel's.
// ACCEL_ERROR_INVALID_ARGUMENT for a zero dimension, a block larger than
// the device's max_threads_per_block, a grid dimension above the device's
// `max_grid` (where it is not 0), more than 2^63 blocks in all,
// `shared_mem_bytes` above the device's `max_shared_mem_bytes` (where it
// is not 0), a value argument larger than ACCEL_KERNEL_ARG_VALUE_MAX,
// NULL arguments or out-of-range buffer offsets. ACCEL_ERROR_UNSUPPORTED
// for a buffer argument whose offset within its device allocation is not a
// multiple of the device's `buffer_offset_alignment` (offset 0 of every
// buffer always is; the message names the alignment and the offset).
ACCEL_API accel_status_t
accel_kernel_launch(accel_kernel_t* kernel, accel_stream_t* stream,
                    const accel_launch_config_t* config, size_t num_args,
                    const accel_kernel_arg_t* args);

// ===========================================================================
// Kernel bundles: one file holding the same kernels for several targets,
// from which accel_module_create() picks the image that fits a device. The
// format (version 1, little-endian) is described in docs/user-guide.md;
// the `accel-bundle` tool builds and lists bundles.
// ===========================================================================

// Most images one bundle holds.
#define ACCEL_BUNDLE_MAX_ENTRIES 64

// One image of a bundle: its target tag ("elf-x86_64", "cuda-fatbin",
// "spirv", "opencl-c") and where its bytes lie in the bundle.
typedef struct accel_bundle_entry {
  char target[64];  // NUL-terminated
  uint64_t offset;  // from the start of the bundle
  uint64_t size;    // bytes, > 0
} accel_bundle_entry_t;

// Checks the bundle of `size` bytes at `data` (untrusted: every field is
// checked against `size`) and copies its entries into `entries`, room for
// `capacity` (ACCEL_BUNDLE_MAX_ENTRIES always suffices); `*out_count` gets
// their number. ACCEL_ERROR_INVALID_ARGUMENT for NULL arguments, too
// small a `capacity`, or a malformed bundle (truncated, a bad tag, an
// image outside the data area or overlapping another, too many entries);
// ACCEL_ERROR_INCOMPATIBLE for a bundle version this library does not
// read. Thread-safe; does not initialise the library.
ACCEL_API accel_status_t accel_bundle_parse(const void* data, size_t size,
                                            size_t capacity,
                                            accel_bundle_entry_t* entries,
                                            size_t* out_count);

// Builds a bundle of `count` images: image i is `sizes[i]` bytes at
// `images[i]`, tagged `targets[i]` (1 to 63 characters of
// [A-Za-z0-9._+-]). Sets `*out_size` to the bundle's size; with `out`
// NULL (and `capacity` 0) only that, otherwise it writes the bundle to
// `out`, which has `capacity` bytes. The caller owns everything.
// ACCEL_ERROR_INVALID_ARGUMENT for NULL arrays, 0 or more than
// ACCEL_BUNDLE_MAX_ENTRIES images, an empty image, a bad tag or too small
// a `capacity`. Thread-safe; does not initialise the library.
ACCEL_API accel_status_t accel_bundle_write(size_t count,
                                            const char* const* targets,
                                            const void* const* images,
                                            const size_t* sizes, void* out,
                                            size_t capacity, size_t* out_size);

// Says what the `size` bytes at `image` hold, as accel_module_create()
// sees them: the target to `target` ("elf-x86_64", "cuda-sm_90",
// "cuda-fatbin", "cuda-ptx-sm_80", "amdgcn-gfx90a", "spirv",
// "accel-bundle", or "unknown" for what it does not recognise, OpenCL C
// source included) and a sentence to `description`. Both are
// NUL-terminated, truncated to their sizes. ACCEL_ERROR_INVALID_ARGUMENT
// for NULL pointers or zero sizes of the outputs. Thread-safe; does not
// initialise the library.
ACCEL_API accel_status_t accel_image_describe(const void* image, size_t size,
                                              char* target,
                                              size_t target_size,
                                              char* description,
                                              size_t description_size);

#ifdef __cplusplus
}  // extern "C"
#endif

// Collectives (communicators, all-reduce and the rest) have their own
// header, part of this one.
#include <accel/comm.h>
// Neural-network ops: activations, bias-add, strided-batched GEMM.
#include <accel/ops_nn.h>
// Graphs: capture a stream's work and launch it again.
#include <accel/graph.h>

// Stream priorities, host functions, allocator settings and counters.
#include <accel/controls.h>

#endif  // ACCEL_ACCEL_H_
