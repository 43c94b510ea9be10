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
#include "handle.h"

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
// Re-fails a plugin's failure of `what` on `device` with the plugin's
// message (the thread's last error) as "<what> on <uri>: <message>", or
// "<what>: <message>" when the message already starts with the device's
// name (interop.c). Returns `status`.
accel_status_t accel__fail_plugin(accel_status_t status, const char* what,
                                  const accel_device_t* device);

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

// Appends formatted text to the NUL-terminated `buf` of `size` bytes, whose
// first `*used` bytes are in use, and advances `*used`. Truncates at the
// end of `buf` and never forms a pointer past it (text.c).
void accel__appendf(char* buf, size_t size, size_t* used, const char* format,
                    ...) ACCEL__PRINTF(4, 5);

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
  accel__plugin_t* plugin;  // NULL for a collectives engine
  char tag[40];             // log tag when `plugin` is NULL ("comm-mpi")
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
  uint32_t abi_minor;  // accel__plugin_abi_minor() of its tables
  uint32_t device_count;    // visible devices, once probed
  uint32_t reported_count;  // what device_count() said, before any cap
  int32_t priority;
  // Loaded state.
  void* dl;                         // dlopen handle, NULL when not open
  bool dl_borrowed;  // a handle left behind by fork(): never dlclose()d
  accel_plugin_t desc;              // validated copy of the descriptor
  accel_device_ops_t ops;           // full-size copy, defaults filled
  void* state;                      // the plugin's own state from load()
  bool loaded;                      // load() succeeded; unload() owed
  bool probed;                      // device_count() ran (lazy start)
  bool has_timing;                  // event_elapsed_ms is the plugin's own
  bool has_pinned;                  // host_alloc is the plugin's own
  bool has_kernels;                 // module entries are the plugin's own
  bool has_gemm_batched;  // op_gemm_batched is its own (else ops_nn.c loops)
  accel__copy_peer_fn_t copy_peer;  // native or staged through the host
  accel_device_t** devices;         // [device_count], open devices or NULL
  uint32_t* physical;  // [device_count] the plugin's index of each visible
                       // device (ACCEL_VISIBLE_DEVICES), NULL: identity
};

// The most devices the core uses from one plugin; a plugin reporting more
// has the rest ignored (and says so in its load-report message).
#define ACCEL__MAX_PLUGIN_DEVICES 4096u

// Loads the candidate at `plugin->path` through every stage, recording the
// outcome in the report fields. Never fails the caller: the status lives in
// the plugin.
void accel__plugin_load(accel__plugin_t* plugin);

// Lazy start: counts the devices of a loaded plugin the first time they
// are needed (this starts its driver), caps the count, allocates the
// device table and applies ACCEL_VISIBLE_DEVICES. A plugin whose count
// fails keeps the status in its report and is unloaded. No-op for a plugin
// already probed or not usable. Caller holds the state lock.
void accel__plugin_probe(accel__plugin_t* plugin);
// Probes every plugin in the load report. Caller holds the state lock.
void accel__plugin_probe_all(void);

// The plugin's own index of visible device `index`.
static inline uint32_t accel__plugin_physical(const accel__plugin_t* plugin,
                                              uint32_t index) {
  return plugin->physical != NULL ? plugin->physical[index] : index;
}

// Applies ACCEL_VISIBLE_DEVICES (parsed at init) to a freshly counted
// `plugin`: fills `physical`, lowers `device_count` and records hidden
// devices (visible.c). Caller holds the state lock.
void accel__visible_apply(accel__plugin_t* plugin);
// Reads and parses ACCEL_VISIBLE_DEVICES at init; INVALID_ARGUMENT naming
// the bad entry when malformed. Caller holds the state lock.
accel_status_t accel__visible_configure(void);
// Forgets the parsed value and the hidden-device record (shutdown).
void accel__visible_reset(void);

// Unloads and dlcloses a plugin (no devices may be open) and frees it.
void accel__plugin_destroy(accel__plugin_t* plugin);

// Checks that `path` is a regular file and, if it is an ELF library, that
// it was built for this process's machine and word size (plugin_file.c).
// On failure writes why to `why` and returns false.
bool accel__plugin_file_check(const char* path, char* why, size_t why_size);

// Fills `host` for `plugin` (host.c); `plugin` may be NULL (an engine),
// and the caller then sets `host->tag`.
void accel__host_init(accel__host_t* host, accel__plugin_t* plugin);

// Writes the install plugin folder ("accel" beside the file libaccel was
// loaded from) to `out`; false when it cannot be found (init.c).
bool accel__install_plugin_dir(char* out, size_t size);

// Unloads the collectives engines at accel_shutdown (comm_engine.c).
void accel__engines_shutdown(void);

// The ABI minor a plugin was built with (host.c), from the `struct_size`
// of the accel_device_ops_t it returned: the newest 1.N whose table is no
// larger than the plugin's (accel_plugin_t has not grown since 1.0).
uint32_t accel__plugin_abi_minor(uint32_t ops_size);

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

// The records behind buffer, stream, event and device handles (handle.c):
// a handle is a (slot, generation) pair that is also a plain pointer to
// its record. accel__handle_new returns a zeroed record of at least `size`
// bytes (up to 1024) or NULL when out of memory; accel__handle_free zeroes
// it and moves its slot to the next generation, so the released handle
// never names a newer record: accel__handle_current() is then false for
// it (and its count reads zero until the slot is reused). Create handles
// only with accel__handle_new and free them only with accel__handle_free,
// never with calloc/free; check a handle a caller passes in with
// accel__refs_step (retain/release) or accel__check_buffer (buffers)
// before reading anything else of it.
void* accel__handle_new(size_t size);
void accel__handle_free(void* record);
// accel__handle_current() is inline in handle.h.
// fork(): takes (true) or drops (false) the handle mutex in the prepare and
// parent handlers; the child handler calls accel__handle_fork_child, which
// also gives the child its own copy of the records (fork.c).
void accel__handle_fork_lock(bool lock);
void accel__handle_fork_child(void);

// Adds one to (`up`) or takes one from the `refs` of `handle` unless it is
// released (zero, or a stale handle whose slot moved on); returns the
// count before, so 0 means refused.
static inline unsigned accel__refs_step(const void* handle, atomic_uint* refs,
                                        bool up) {
  if (!accel__handle_current(handle)) return 0;
  unsigned n = atomic_load_explicit(refs, memory_order_relaxed);
  do {
    if (n == 0) return 0;
  } while (!atomic_compare_exchange_weak_explicit(
      refs, &n, up ? n + 1 : n - 1, memory_order_acq_rel,
      memory_order_relaxed));
  return n;
}

// Reports a retain or release (`what`) of a released `kind` handle: sets
// accel_last_error() (INVALID_ARGUMENT) and logs it at error level. The
// call it reports is ignored.
void accel__handle_dead(const char* what, const char* kind,
                        const void* handle);

typedef struct accel__allocator accel__allocator_t;
typedef struct accel__pool accel__pool_t;
typedef struct accel__host_pool accel__host_pool_t;

struct accel_device {
  atomic_uint refs;
  accel__plugin_t* plugin;
  const accel_device_ops_t* ops;  // &plugin->ops
  uint32_t index;
  void* impl;
  char uri[48];
  // Queried once at open so launches and module loads need no plugin call.
  uint32_t max_threads_per_block;  // 0 when the plugin did not say
  char module_target[64];          // "" when the device loads no modules
  // -- ABI 1.3 properties; zero (no limit) for 1.0-1.2 plugins --
  char module_formats[128];   // space-separated extra formats, or ""
  uint64_t max_alloc_size;    // largest single plugin allocation
  uint64_t max_shared_mem_bytes;
  uint32_t buffer_offset_alignment;  // 0 or 1: any offset
  uint32_t max_grid[3];
  // ACCEL_DEVICE_CAP_HOST_ACCESSIBLE: buffer addresses are host pointers.
  bool host_accessible;
  // ACCEL_DEVICE_CAP_SEPARATE_ALLOCATIONS: one mem_alloc per buffer.
  bool separate_allocations;
  // Created at open, destroyed at close (allocator.c, host_pool.c).
  accel__allocator_t* allocator;
  accel__host_pool_t* host_pool;
  // Default random generator (rng.c): the seed XOR its default value, so
  // the zeroed device starts at the default seed, and the offset in blocks.
  _Atomic uint64_t rng_seed_xor;
  _Atomic uint64_t rng_offset;
  // Live streams of the device (stream_control.c, under its lock).
  accel_stream_t* live_streams;
};

// A buffer is a block of the device's caching allocator: `impl` is the
// plugin allocation (segment) holding it and `base` its offset there. The
// handle is a record of handle.c; `owner` is the allocator's block record
// (allocator.c) or, for memory the core did not allocate
// (accel_buffer_wrap, `wrapped`), a record of buffer_wrap.c. A released
// buffer reads as all zeroes: check `refs` (accel__check_buffer) before
// looking at anything else of a handle a caller passed in.
struct accel_buffer {
  atomic_uint refs;
  bool wrapped;
  accel_device_t* device;
  void* impl;   // plugin memory handle of the segment
  size_t base;  // byte offset of the buffer within `impl`
  size_t size;  // bytes requested; bounds are checked against this
  void* owner;  // allocator block or wrap record
};

// Whether the non-NULL `buffer` was released: a stale handle (its slot
// moved on) or a count of zero.
static inline bool accel__buffer_released(const accel_buffer_t* buffer) {
  return !accel__handle_current(buffer) ||
         atomic_load_explicit(&buffer->refs, memory_order_relaxed) == 0;
}

// Checks that `buffer` is non-NULL and not released; otherwise
// INVALID_ARGUMENT with "`what`: `operand` buffer is NULL" or "`what`: the
// `operand` buffer was already released" (buffer.c). Every call that takes
// a buffer from the user checks this before reading any other field
// (accel__check_range, accel__check_operand and accel__check_matrix do).
accel_status_t accel__check_buffer(const char* what, const char* operand,
                                   const accel_buffer_t* buffer);

// `refs` counts the user's references; the plugin stream is destroyed when
// it reaches zero. `weak` keeps the struct itself alive for buffers that
// remember the stream used them (one weak reference is held by all strong
// ones together), so a free can tell a dead stream from a live one.
struct accel_stream {
  atomic_uint refs;
  atomic_uint weak;
  accel_device_t* device;
  void* impl;
  accel__pool_t* pool;  // the allocator's pool for this stream, or NULL
  _Atomic(void*) trace;  // trace_stream.c's state while tracing, or NULL
  // Set once the plugin stream is destroyed (its work done), for holders
  // of weak references that wait for it (module.c).
  atomic_bool destroyed;
  _Atomic(void*) capture;  // the graph it is capturing (graph.c), or NULL
  // Links in the device's list of live streams (stream_control.c).
  accel_stream_t* live_prev;
  accel_stream_t* live_next;
  int32_t priority;  // as created (stream_control.c), 0 by default
};

// Creates a stream for accel_stream_create (`priority` NULL: the plugin's
// stream_create) and accel_stream_create_with_priority (stream_control.c:
// stream_create_priority with `*priority`, already in the device's range).
// `what` names the public call in messages.
accel_status_t accel__stream_open(const char* what, accel_device_t* device,
                                  accel_stream_flags_t flags,
                                  const int32_t* priority,
                                  accel_stream_t** out_stream);

// Checks the ABI 1.4 stream-control entries of a plugin's table and fills
// the missing ones with defaults (stream_control.c): one priority, and
// host functions that are UNSUPPORTED. Returns NULL, or why the table is
// refused (stream_priority_range and stream_create_priority must be set
// together).
const char* accel__control_bind(accel_device_ops_t* ops);

// Adds `stream` to / removes it from its device's live streams, for
// accel_device_synchronize() (stream_control.c). Cannot fail.
void accel__stream_live_add(accel_stream_t* stream);
void accel__stream_live_remove(accel_stream_t* stream);

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

// The type (CPU, GPU, other) of visible device `index` of `plugin`, read
// from its properties through the open handle or a short-lived plugin
// device. Caller holds the state lock.
accel_status_t accel__device_type_locked(accel__plugin_t* plugin,
                                         uint32_t index,
                                         accel_device_type_t* out_type);

// The plugin memory behind `buffer` and the plugin offset of `offset`
// bytes into it. Every plugin call that takes a buffer goes through these,
// so a buffer placed inside a larger plugin allocation (the caching
// allocator) needs only these two changed.
static inline void* accel__buffer_mem(const accel_buffer_t* buffer) {
  return buffer->impl;
}
static inline uint64_t accel__buffer_offset(const accel_buffer_t* buffer,
                                            size_t offset) {
  return (uint64_t)buffer->base + (uint64_t)offset;
}

// Built-in op checks shared by ops.c and rng.c (ops.c). check_operand:
// `buffer` is non-NULL and on the stream's device, `offset` is a multiple
// of the `dtype` element and, for count > 0, `count` elements fit; sets
// `*out_bytes`. op_result: puts the call and the device in front of an
// UNSUPPORTED message; returns `status`.
accel_status_t accel__check_operand(const char* what, const char* operand,
                                    const accel_stream_t* stream,
                                    const accel_buffer_t* buffer, size_t offset,
                                    accel_dtype_t dtype, size_t count,
                                    size_t* out_bytes);
accel_status_t accel__op_result(const char* what,
                                const accel_stream_t* stream,
                                accel_status_t status);

// Checks that `buffer` passes accel__check_buffer, `size` is not 0 and
// [offset, offset + size) lies within it; `what` names the call and the
// operand in the message. Inline, as every synchronous copy makes it: the
// passing case costs a few compares, and only a failure leaves for
// accel__range_fail (buffer.c), which words the error.
accel_status_t accel__range_fail(const char* what, const char* operand,
                                 const accel_buffer_t* buffer, size_t offset,
                                 size_t size);
static inline accel_status_t accel__check_range(const char* what,
                                                const char* operand,
                                                const accel_buffer_t* buffer,
                                                size_t offset, size_t size) {
  if (__builtin_expect(buffer != NULL && !accel__buffer_released(buffer) &&
                           size != 0 && size <= buffer->size &&
                           offset <= buffer->size - size,
                       1)) {
    return ACCEL_OK;
  }
  return accel__range_fail(what, operand, buffer, offset, size);
}

// Copies between devices of different plugins through host memory.
accel_status_t accel__copy_staged(accel_buffer_t* dst, size_t dst_offset,
                                  accel_buffer_t* src, size_t src_offset,
                                  size_t size);

// ---------------------------------------------------------------------------
// Kernels (image.c, module.c)
// ---------------------------------------------------------------------------

// Sniffs the format of the module image `image` of `size` bytes (untrusted:
// never reads outside it). Writes the target it holds to `target`
// ("elf-x86_64", "elf-aarch64", "cuda-sm_90", "cuda-fatbin",
// "cuda-ptx-sm_80", "amdgcn-gfx90a", "amdgcn-bundle", "spirv",
// "accel-bundle" or "unknown") and a
// human-readable description that names the target to `description`. Both
// are always NUL-terminated (truncated to their sizes, which must be > 0).
void accel__image_describe(const void* image, size_t size, char* target,
                           size_t target_size, char* description,
                           size_t description_size);

// Loads `size` bytes at `image` (already sniffed as `target`, described by
// `description`) on `device` after checking that the device loads that
// format; the plugin's module handle goes to `*out_impl` (module.c).
accel_status_t accel__module_load_image(const char* what,
                                        accel_device_t* device,
                                        const void* image, size_t size,
                                        const char* target,
                                        const char* description,
                                        void** out_impl);

// Length of the "<family>" part of a "<family>-<rest>" target (module.c).
size_t accel__family_len(const char* target);

// What `device` loads, for messages: "elf-x86_64", or the target and its
// module formats ("fxcl-test, opencl-c, spirv") (module.c).
void accel__device_loads(const accel_device_t* device, char* out, size_t n);

// Picks the image of the kernel bundle at `image` that fits `device` and
// loads it (bundle.c): exact `module_target` first, then the same family,
// then the formats in `module_formats`, trying each until the plugin
// loads one.
accel_status_t accel__bundle_load(const char* what, accel_device_t* device,
                                  const void* image, size_t size,
                                  void** out_impl);

// ---------------------------------------------------------------------------
// Memory: the caching allocator (allocator*.c) and pinned host memory pool
// (host_pool.c). Architecture decision 10.
// ---------------------------------------------------------------------------

// Creates the allocator of a freshly opened `device` (reads ACCEL_ALLOCATOR)
// and stores it in `device->allocator`. Caller holds the state lock.
accel_status_t accel__allocator_create(accel_device_t* device);

// Frees every cached segment and the allocator of `device`, at close (no
// buffer or stream of the device is alive any more).
void accel__allocator_destroy(accel_device_t* device);

// Whether `device`'s allocator caches (ACCEL_ALLOCATOR is not "raw").
bool accel__allocator_caching(const accel_device_t* device);

// Allocates a buffer of `size` bytes on `device` for use on `stream` (NULL
// for accel_buffer_create). On success `*out_buffer` has one reference and
// holds a reference on `device`.
accel_status_t accel__allocator_alloc(accel_device_t* device,
                                      accel_stream_t* stream, size_t size,
                                      accel_buffer_t** out_buffer);

// Returns the memory of `buffer`, whose last reference is gone, to its
// pool. Work that streams enqueued on it before this call finishes before
// the memory is reused. Does not release the device reference.
void accel__allocator_free(accel_buffer_t* buffer);

// Records that `stream` enqueues work on `buffer`, so that freeing the
// buffer waits for that work. Call it before enqueuing. Cheap when the
// stream is already known. Returns ACCEL_ERROR_OUT_OF_MEMORY only when a
// new entry cannot be stored (then do not enqueue).
accel_status_t accel__buffer_use(accel_buffer_t* buffer,
                                 accel_stream_t* stream);

// Wrapped buffers (buffer_wrap.c): the accel__buffer_use and last-release
// paths for a buffer whose `wrapped` is set.
accel_status_t accel__wrapped_use(accel_buffer_t* buffer,
                                  accel_stream_t* stream);
void accel__wrapped_free(accel_buffer_t* buffer);

// Reads the statistics and mode, gives unused cached segments back, resets
// the peaks (memory_stats.c has the public calls).
void accel__allocator_stats(accel_device_t* device,
                            accel_memory_stats_t* out_stats, bool* out_caching);
void accel__allocator_empty_cache(accel_device_t* device);
void accel__allocator_reset_peaks(accel_device_t* device);
void accel__allocator_reset_accumulated(accel_device_t* device);
// Fills everything of `*out` but `struct_size`: the settings in force and
// the oversize counters (memory_stats.c has the public call).
void accel__allocator_info(accel_device_t* device,
                           accel_allocator_info_t* out);

// ACCEL_ALLOC_CONF settings (alloc_conf.c); zero means "not set".
typedef struct accel__alloc_conf {
  double memory_fraction;      // cap on reserved bytes, share of the total
  double gc_threshold;         // give cached segments back above this share
  uint64_t max_split_size;     // bytes: larger blocks are never split
  uint32_t roundup_divisions;  // steps per power of two when rounding
} accel__alloc_conf_t;

// Parses `text` (NULL: nothing set) into `*out`. False on a malformed
// setting, with the reason in `why`.
bool accel__alloc_conf_parse(const char* text, accel__alloc_conf_t* out,
                             char* why, size_t why_size);

// One segment or block as accel__allocator_visit() reports it. `stream`
// is the owning or allocating stream (an identity only), NULL for the
// device-wide pool.
typedef struct accel__snapshot_item {
  bool is_segment;
  size_t offset;     // block: byte offset in its segment
  size_t size;       // bytes
  size_t requested;  // active block: bytes the buffer asked for, else 0
  const char* state;  // segment: "small" or "large"; block: "free",
                      // "active" or "pending"
  const void* stream;
} accel__snapshot_item_t;

// Calls `fn` for every segment of `device`'s allocator, each followed by
// its blocks in address order, under the allocator's lock: `fn` must not
// call into the allocator.
void accel__allocator_visit(accel_device_t* device,
                            void (*fn)(void* ctx,
                                       const accel__snapshot_item_t* item),
                            void* ctx);

// Formats `bytes` as "512 bytes", "1.50 KiB", "2.00 GiB" into `out`.
void accel__format_bytes(char* out, size_t n, uint64_t bytes);

// Stream lifetime hooks, called by accel_stream_release() when the last
// reference goes: `dying` before the plugin stream is destroyed, `dead`
// after (its work is done, so its cached blocks become everyone's).
void accel__allocator_stream_dying(accel_stream_t* stream);
void accel__allocator_stream_dead(accel_stream_t* stream);

// Adds a strong reference unless the count already reached zero; returns
// whether it did. The caller holds a weak reference.
bool accel__stream_try_retain(accel_stream_t* stream);
// Weak references (stream.c): keep the struct, not the plugin stream.
void accel__stream_weak_retain(accel_stream_t* stream);
void accel__stream_weak_release(accel_stream_t* stream);
// For a holder of a weak reference (modules, graphs): waits until the
// work the stream has queued so far has finished (its errors are left to
// the stream's own calls) or, for a stream whose last reference is gone,
// until its destruction, which waits for that work, is over; returns at
// once when the calling thread is inside that stream's own release (a
// capture discarded by it), whose stream_destroy waits for the work later.
void accel__stream_drain_weak(accel_stream_t* stream);
// Whether the stream's release has finished (its work is done).
bool accel__stream_gone(const accel_stream_t* stream);

// fork() handling (fork.c): take (`lock`) or drop the allocator's and the
// host pool's mutex of `device`, so that fork() happens while no other
// thread is inside them. The forking thread holds them in the child too.
void accel__allocator_fork_lock(accel_device_t* device, bool lock);
void accel__host_pool_fork_lock(accel_device_t* device, bool lock);
// Registers the fork handlers once (at init).
void accel__fork_register(void);

// In a child after fork(): the dlopen handle of the plugin file `path` that
// a plugin left behind by fork() holds (still its; never to be closed), or
// NULL. Only the loader calls it, under the state lock.
void* accel__fork_handle(const char* path);

// Creates and destroys the pinned host memory pool of `device`.
accel_status_t accel__host_pool_create(accel_device_t* device);
void accel__host_pool_destroy(accel_device_t* device);
// Frees the pool's cached, unused host blocks.
void accel__host_pool_trim(accel_device_t* device);
// Reads the pool's counters, for the memory summary.
void accel__host_pool_counts(accel_device_t* device, uint64_t* out_used_count,
                             uint64_t* out_used_bytes,
                             uint64_t* out_cached_count,
                             uint64_t* out_cached_bytes);

#endif  // ACCEL_CORE_INTERNAL_H_
