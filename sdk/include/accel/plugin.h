// SPDX-License-Identifier: MIT
//
// accel plugin ABI: the one contract between libaccel and a backend plugin.
//
// A plugin is a shared object that exports exactly one symbol,
// `accel_plugin_entry`, and is built from this header alone (standard C
// headers only; plugins never link libaccel). The core dlopen()s the plugin,
// calls the entry with its ABI major version, validates the descriptor it
// gets back, copies every function table into a zeroed full-size copy and
// fills optional or missing entries with core fallbacks, once, at load time.
//
// Versioning rules (see docs/plugin-guide.md):
// - ACCEL_PLUGIN_ABI_VERSION is a major version; the core loads exact
//   matches only. It changes only for a breaking change.
// - Every table starts with `uint32_t struct_size`, set by the plugin to
//   sizeof() of the table it was built with. Tables are append-only: new
//   entries go at the end under a "since ABI 1.N" marker, existing entries
//   never move or change signature (tests/abi checks the offsets).
// - Entries tagged "(optional)" may be NULL; the core substitutes a default.
//   Every other entry is required and a NULL one rejects the plugin.
// - Data structs the core hands to a plugin carry `struct_size` set by the
//   core; a plugin writes only the fields that fit (ACCEL_PLUGIN_HAS_FIELD).
//
// Threading: the core calls plugin entries from any thread, concurrently,
// except load/unload which it serialises. A plugin protects its own state.
#ifndef ACCEL_PLUGIN_H_
#define ACCEL_PLUGIN_H_

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Marks the entry symbol as exported even under -fvisibility=hidden.
#if defined(_WIN32)
#define ACCEL_PLUGIN_EXPORT __declspec(dllexport)
#else
#define ACCEL_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

// Major ABI version. The core loads plugins built with exactly this value.
#define ACCEL_PLUGIN_ABI_VERSION 1u

// Minor ABI version: the number of "since ABI 1.N" additions this header
// has. Informational: compatibility is decided by struct_size, not by this.
#define ACCEL_PLUGIN_ABI_MINOR 4u

// Name of the one exported symbol; pass it to dlsym().
#define ACCEL_PLUGIN_ENTRY_NAME "accel_plugin_entry"

// True when a struct whose `struct_size` is `s` (a pointer to a struct
// starting with uint32_t struct_size) is large enough to hold `field`.
#define ACCEL_PLUGIN_HAS_FIELD(s, type, field) \
  ((s)->struct_size >= offsetof(type, field) + sizeof(((type*)0)->field))

// ---------------------------------------------------------------------------
// Types shared with <accel/accel.h>. The block is identical in both headers
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

// ---------------------------------------------------------------------------
// Host services: what the core lends a plugin for its lifetime.
// ---------------------------------------------------------------------------

typedef struct accel_host accel_host_t;

// Services the core passes to `load`. Valid until `unload` returns. Every
// entry is non-NULL and thread-safe. Each plugin gets its own table, so the
// core can tag messages with the plugin's name.
struct accel_host {
  uint32_t struct_size;  // sizeof(accel_host_t) in the core that made it
  uint32_t abi_version;  // ACCEL_PLUGIN_ABI_VERSION of the core
  // -- since ABI 1.0 --
  // Records `format` as the calling thread's accel_last_error() message and
  // returns `status`, so a plugin can write
  // `return host->fail(host, ACCEL_ERROR_BACKEND, "cuMemAlloc: %s", s);`.
  accel_status_t (*fail)(const accel_host_t* host, accel_status_t status,
                         const char* format, ...)
#if defined(__GNUC__)
      __attribute__((format(printf, 3, 4)))
#endif
      ;
  // Logs a message at `level` through the core's ACCEL_LOG handling.
  void (*log)(const accel_host_t* host, accel_log_level_t level,
              const char* format, ...)
#if defined(__GNUC__)
      __attribute__((format(printf, 3, 4)))
#endif
      ;
  // Reads an environment variable the way the core does (secure_getenv).
  // Returns NULL when unset. The string belongs to the environment.
  const char* (*getenv)(const accel_host_t* host, const char* name);
  // -- since ABI 1.3 --
  // ACCEL_PLUGIN_ABI_MINOR of the core that made this table, so a newer
  // plugin can avoid what an older core lacks. Absent from a 1.0-1.2 core
  // (check ACCEL_PLUGIN_HAS_FIELD(host, accel_host_t, abi_minor) first).
  uint32_t abi_minor;
};

// ---------------------------------------------------------------------------
// Data structs exchanged with plugins.
// ---------------------------------------------------------------------------

// Device properties. The core zeroes the struct, sets `struct_size` and
// calls `query_props`; the plugin fills the fields that fit. Strings are
// NUL-terminated and truncated to their arrays.
typedef struct accel_plugin_device_props {
  uint32_t struct_size;
  uint32_t type;                   // accel_device_type_t
  char name[256];                  // "NVIDIA H100 80GB HBM3"
  char vendor[64];                 // "NVIDIA", "AMD", "GenuineIntel"
  char arch[64];                   // "sm_90", "gfx90a", "x86-64-v4"
  uint64_t total_memory;           // bytes
  uint32_t compute_units;          // SMs, CUs, cores
  uint32_t max_threads_per_block;  // 1 where blocks are not threaded
  uint32_t simd_width;             // warp/wavefront size, or SIMD lanes
  accel_device_caps_t caps;        // ACCEL_DEVICE_CAP_* bits
  uint8_t uuid[16];                // all zero when unknown
  char pci_bus_id[32];             // "0000:3b:00.0", or empty
  char features[256];              // space-separated ISA/driver features
  char driver_version[64];         // driver or runtime version, or empty
  // -- since ABI 1.1 --
  // The module format this device loads, as "<format>-<target>":
  // "elf-x86_64", "elf-aarch64" (host shared objects), "cuda-sm_90",
  // "amdgcn-gfx90a". The core compares it with what a module image holds
  // and rejects a mismatch before the plugin sees the image. Empty if the
  // device loads no modules.
  char module_target[64];
  // -- since ABI 1.3 --
  // Largest single allocation mem_alloc can satisfy, in bytes (OpenCL's
  // CL_DEVICE_MAX_MEM_ALLOC_SIZE). 0 means no limit below `total_memory`.
  // The core refuses a larger buffer with a message that says so.
  uint64_t max_alloc_size;
  // Most dynamic shared (OpenCL: local) memory one launch may ask for, in
  // bytes. 0 means unknown: the core then leaves the check to the plugin.
  uint64_t max_shared_mem_bytes;
  // Alignment in bytes that the plugin offset of a kernel buffer argument
  // must have (a power of two; OpenCL's CL_DEVICE_MEM_BASE_ADDR_ALIGN / 8,
  // since a cl_mem argument at an offset is a sub-buffer). 0 or 1 means any
  // offset. The caching allocator starts every buffer on a multiple of it,
  // so offset 0 of any buffer always launches; a launch whose argument
  // offset is not a multiple fails in the core with ACCEL_ERROR_UNSUPPORTED
  // naming the alignment.
  uint32_t buffer_offset_alignment;
  // Largest grid the device launches, per dimension. 0 means unlimited
  // (the core still refuses a total block count above 2^63).
  uint32_t max_grid[3];
  // Space-separated module formats the device loads in addition to
  // `module_target`: "opencl-c" (OpenCL C source text), "spirv" (a SPIR-V
  // module), or a format of the plugin's own. The core hands an image it
  // recognises to the plugin only if its format is `module_target`'s
  // family or listed here, and an image it does not recognise only if this
  // list is non-empty (the plugin then parses it and reports a clear error
  // if it is not what it loads). Empty for 1.0-1.2 plugins.
  char module_formats[128];
  // Platform or runtime the device belongs to ("Portable Computing
  // Language", "NVIDIA CUDA"), or empty.
  char platform[64];
} accel_plugin_device_props_t;

// Row-major GEMM as the core hands it to a plugin, already validated:
// C[m x n] = alpha * op(A)[m x k] * op(B)[k x n] + beta * C, where op(X) is
// X or its transpose. Matrices are row-major with leading dimensions in
// elements; offsets are in bytes from the start of the plugin memory.
// Accumulation is f32 (or wider) for every dtype. Since ABI 1.1.
typedef struct accel_plugin_gemm {
  uint32_t struct_size;
  uint32_t a_dtype;  // accel_dtype_t; a_dtype == b_dtype
  uint32_t b_dtype;
  uint32_t c_dtype;  // == a_dtype, or F32 for F16/BF16 inputs
  uint32_t trans_a;  // 0 or 1
  uint32_t trans_b;
  accel_gemm_flags_t flags;
  uint32_t reserved0;
  uint64_t m, n, k;
  double alpha, beta;
  void* a;
  uint64_t a_offset;
  uint64_t lda;
  void* b;
  uint64_t b_offset;
  uint64_t ldb;
  void* c;
  uint64_t c_offset;
  uint64_t ldc;
  // -- since ABI 1.2 --
  // Device memory the core lends for this one GEMM, from its caching
  // allocator, when `op_gemm_workspace` asked for some: `workspace_size`
  // bytes at `workspace_offset` into the plugin memory `workspace` (the
  // offset is a multiple of 512). It belongs to the core and is valid for
  // the work `op_gemm` enqueues on its stream, in stream order: the core
  // releases it as soon as `op_gemm` returns, and only work enqueued later
  // on the same stream (which runs after this GEMM) or work that waits for
  // it can reuse it. The plugin must not keep using it for later calls.
  // NULL with size 0 when the plugin asked for none, and absent (check
  // ACCEL_PLUGIN_HAS_FIELD) from an ABI 1.1 core, which lends nothing.
  void* workspace;
  uint64_t workspace_offset;
  uint64_t workspace_size;
} accel_plugin_gemm_t;

// The batch of a strided-batched GEMM (since ABI 1.4): `count` GEMMs of the
// shape in the accel_plugin_gemm_t passed with it, GEMM `i` reading A at
// `a_offset + i * stride_a` bytes, B at `b_offset + i * stride_b` and C at
// `c_offset + i * stride_c` (the core has checked every one lies inside its
// memory). Strides are in bytes, may be 0 for A or B (one matrix shared by
// the whole batch) but never for C, and C regions never overlap.
typedef struct accel_plugin_gemm_batch {
  uint32_t struct_size;
  uint32_t reserved0;
  uint64_t count;     // >= 1
  uint64_t stride_a;  // bytes
  uint64_t stride_b;
  uint64_t stride_c;
} accel_plugin_gemm_batch_t;

// Kind of one kernel argument.
typedef enum accel_plugin_arg_kind {
  ACCEL_PLUGIN_ARG_VALUE = 0,   // `size` bytes copied from `value`
  ACCEL_PLUGIN_ARG_BUFFER = 1,  // device memory `mem` plus `offset`
  ACCEL_PLUGIN_ARG_KIND_MAX_ENUM = 0x7fffffff
} accel_plugin_arg_kind_t;

// One kernel argument as the core passes it. Buffers arrive as the plugin's
// own memory handle and a byte offset; the plugin turns them into whatever
// its kernels take (a device pointer, a host pointer). Handle-based
// runtimes (OpenCL) pass `mem` itself at offset 0 and a sub-buffer
// starting at `offset` otherwise; such a device reports the alignment a
// sub-buffer origin needs in `buffer_offset_alignment`, and the core never
// passes an offset that is not a multiple of it (since ABI 1.3).
typedef struct accel_plugin_arg {
  uint32_t kind;  // accel_plugin_arg_kind_t
  uint32_t size;  // bytes of `value` for ACCEL_PLUGIN_ARG_VALUE
  const void* value;
  void* mem;
  uint64_t offset;
} accel_plugin_arg_t;

// Launch geometry and arguments for `launch`. `shared_mem_bytes` is the
// dynamic shared memory of the launch: on CUDA and HIP the kernel's extern
// __shared__ array; on OpenCL one extra `__local` pointer argument of that
// size, appended after the user's arguments (none when it is 0). The core
// has checked the grid against `max_grid` and the total block count
// against 2^63, and `shared_mem_bytes` against `max_shared_mem_bytes`.
typedef struct accel_plugin_launch {
  uint32_t struct_size;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_mem_bytes;
  uint32_t num_args;
  const accel_plugin_arg_t* args;
} accel_plugin_launch_t;

// ---------------------------------------------------------------------------
// Function types of the built-in op entries (ABI 1.1 and 1.2), so a plugin
// declares its implementations as `accel_plugin_op_fill_fn my_fill;`
// instead of repeating each prototype. They name exactly the types of the
// accel_device_ops_t members below; adding them changed no ABI.
// ---------------------------------------------------------------------------
typedef accel_status_t accel_plugin_op_fill_fn(void* device, void* stream,
                                               void* dst, uint64_t dst_offset,
                                               uint32_t dtype, uint64_t count,
                                               double value);
typedef accel_status_t accel_plugin_op_cast_fn(
    void* device, void* stream, void* dst, uint64_t dst_offset,
    uint32_t dst_dtype, const void* src, uint64_t src_offset,
    uint32_t src_dtype, uint64_t count);
typedef accel_status_t accel_plugin_op_scale_fn(void* device, void* stream,
                                                void* x, uint64_t x_offset,
                                                uint32_t dtype, uint64_t count,
                                                double alpha);
typedef accel_status_t accel_plugin_op_axpy_fn(void* device, void* stream,
                                               void* y, uint64_t y_offset,
                                               const void* x, uint64_t x_offset,
                                               uint32_t dtype, uint64_t count,
                                               double alpha);
// op_add and op_mul.
typedef accel_status_t accel_plugin_op_binary_fn(
    void* device, void* stream, void* z, uint64_t z_offset, const void* x,
    uint64_t x_offset, const void* y, uint64_t y_offset, uint32_t dtype,
    uint64_t count);
typedef accel_status_t accel_plugin_op_sum_fn(void* device, void* stream,
                                              void* out, uint64_t out_offset,
                                              const void* x, uint64_t x_offset,
                                              uint32_t dtype, uint64_t count);
typedef accel_status_t accel_plugin_op_gemm_fn(void* device, void* stream,
                                               const accel_plugin_gemm_t* gemm);
typedef accel_status_t accel_plugin_op_gemm_workspace_fn(
    void* device, const accel_plugin_gemm_t* gemm, uint64_t* out_bytes);
typedef accel_status_t accel_plugin_op_rng_fn(
    void* device, void* stream, void* dst, uint64_t dst_offset, uint32_t dtype,
    uint64_t count, uint32_t distribution, uint64_t seed, uint64_t offset,
    double a, double b);

// Element-wise activations of op_unary (since ABI 1.4). Values are stable.
typedef enum accel_plugin_unary_op {
  ACCEL_PLUGIN_UNARY_RELU = 0,  // max(x, 0); -0 stays -0, NaN stays NaN
  ACCEL_PLUGIN_UNARY_GELU = 1,  // x * (1 + erf(x / sqrt(2))) / 2 (exact)
  ACCEL_PLUGIN_UNARY_SILU = 2,  // x / (1 + exp(-x))
  ACCEL_PLUGIN_UNARY_MAX_ENUM = 0x7fffffff
} accel_plugin_unary_op_t;

// Function types of the ABI 1.4 op entries.
typedef accel_status_t accel_plugin_op_unary_fn(
    void* device, void* stream, void* dst, uint64_t dst_offset,
    const void* src, uint64_t src_offset, uint32_t dtype, uint64_t count,
    uint32_t op);
typedef accel_status_t accel_plugin_op_bias_add_fn(
    void* device, void* stream, void* y, uint64_t y_offset, const void* bias,
    uint64_t bias_offset, uint32_t dtype, uint64_t rows, uint64_t cols);
typedef accel_status_t accel_plugin_op_gemm_batched_fn(
    void* device, void* stream, const accel_plugin_gemm_t* gemm,
    const accel_plugin_gemm_batch_t* batch);

// ---------------------------------------------------------------------------
// Device operations.
//
// Handles are the plugin's own: `device` comes from `device_open`, `mem`
// from `mem_alloc`, `stream` from `stream_create`, `event` from
// `event_create`. The core has already checked every argument (non-NULL
// handles, offsets and sizes within bounds, sizes non-zero, matching
// devices) before it calls an entry.
//
// Copies and memset take a `stream`: NULL means "run it now and return when
// it is done"; otherwise the plugin enqueues the work in stream order and
// returns at once. Host pointers given to an enqueued operation stay valid
// until the stream reaches it (the caller's promise, passed on by the core).
// Errors of enqueued work surface at the next stream_synchronize,
// stream_query, event_synchronize or event_query on that stream.
// ---------------------------------------------------------------------------
typedef struct accel_device_ops {
  uint32_t struct_size;  // sizeof(accel_device_ops_t) at plugin build time
  // -- since ABI 1.0 --
  // Fills `props` (see accel_plugin_device_props_t). Required.
  accel_status_t (*query_props)(void* device,
                                accel_plugin_device_props_t* props);
  // Current free and total device memory in bytes. Required.
  accel_status_t (*mem_info)(void* device, uint64_t* out_free,
                             uint64_t* out_total);
  // Allocates `size` (> 0) bytes of device memory. Returns
  // ACCEL_ERROR_OUT_OF_DEVICE_MEMORY when the device is full. Required.
  accel_status_t (*mem_alloc)(void* device, size_t size, void** out_mem);
  // Frees memory from mem_alloc. Never fails. Required.
  void (*mem_free)(void* device, void* mem);
  // (optional) Allocates `size` bytes of page-locked host memory. NULL means
  // the core uses ordinary aligned host memory and reports no pinned cap.
  accel_status_t (*host_alloc)(void* device, size_t size, void** out_ptr);
  // (optional) Frees memory from host_alloc. Must be set with host_alloc.
  void (*host_free)(void* device, void* ptr);
  // Copies `size` bytes from host `src` to `dst` + `dst_offset`. Required.
  accel_status_t (*copy_h2d)(void* device, void* stream, void* dst,
                             size_t dst_offset, const void* src, size_t size);
  // Copies `size` bytes from `src` + `src_offset` to host `dst`. Required.
  accel_status_t (*copy_d2h)(void* device, void* stream, void* dst,
                             const void* src, size_t src_offset, size_t size);
  // Copies between two allocations of this device. Regions may overlap only
  // if they are the same allocation, in which case it behaves like memmove.
  // Required.
  accel_status_t (*copy_d2d)(void* device, void* stream, void* dst,
                             size_t dst_offset, const void* src,
                             size_t src_offset, size_t size);
  // (optional) Copies from `src` on `src_device` (another device of this
  // plugin) to `dst` on `device`, enqueued on `stream` of `device`. NULL
  // means the core stages the copy through host memory.
  accel_status_t (*copy_peer)(void* device, void* stream, void* dst,
                              size_t dst_offset, void* src_device,
                              const void* src, size_t src_offset, size_t size);
  // (optional) Whether `device` can copy directly from `peer_device`. NULL
  // means "no".
  accel_status_t (*can_access_peer)(void* device, void* peer_device,
                                    bool* out_can);
  // Sets `size` bytes at `dst` + `offset` to `value`. Required.
  accel_status_t (*memset)(void* device, void* stream, void* dst, size_t offset,
                           uint8_t value, size_t size);

  // Creates an in-order asynchronous stream. Required.
  accel_status_t (*stream_create)(void* device, accel_stream_flags_t flags,
                                  void** out_stream);
  // Destroys a stream after its pending work has finished. Required.
  void (*stream_destroy)(void* stream);
  // Blocks until all work enqueued so far has finished; reports the first
  // asynchronous error of that work. Several threads may wait on one
  // stream at once, and each returns (sync.many_waiters). Required.
  accel_status_t (*stream_synchronize)(void* stream);
  // Sets `*out_done` to whether all enqueued work has finished. Required.
  accel_status_t (*stream_query)(void* stream, bool* out_done);
  // Makes work enqueued later on `stream` wait until `event`'s most recent
  // record (as of this call) completes. An event never recorded is already
  // complete. `event` may belong to another device of this plugin. Required.
  accel_status_t (*stream_wait_event)(void* stream, void* event);

  // Creates an event. Required.
  accel_status_t (*event_create)(void* device, accel_event_flags_t flags,
                                 void** out_event);
  // Destroys an event. Pending waits on it still complete. Required.
  void (*event_destroy)(void* event);
  // Captures the work enqueued on `stream` so far; the event completes when
  // that work has. Re-recording replaces the previous capture. Required.
  accel_status_t (*event_record)(void* event, void* stream);
  // Blocks until the event's last record has completed; several threads
  // may wait at once, and each returns. Required.
  accel_status_t (*event_synchronize)(void* event);
  // Sets `*out_done` to whether the event's last record has completed.
  // Required.
  accel_status_t (*event_query)(void* event, bool* out_done);
  // (optional) Milliseconds between two completed timing events: end
  // minus start, negative when `end` completed first (accel-conform's
  // event.elapsed checks both orders). Returns ACCEL_ERROR_NOT_READY if
  // either has not completed. NULL means events cannot time and the core
  // returns ACCEL_ERROR_UNSUPPORTED.
  accel_status_t (*event_elapsed_ms)(void* start, void* end, float* out_ms);

  // (optional) Loads a module from a target binary image. NULL means the
  // device runs no custom kernels (ACCEL_ERROR_UNSUPPORTED). The image is
  // of `module_target`'s family, or (since ABI 1.3) of a format listed in
  // `module_formats`, or of a format the core does not recognise when that
  // list is non-empty. A plugin that compiles (OpenCL C) puts the build
  // log in its ACCEL_ERROR_INVALID_ARGUMENT message. The core keeps no
  // reference to `image` after the call.
  accel_status_t (*module_load)(void* device, const void* image, size_t size,
                                void** out_module);
  // (optional) Unloads a module. Must be set with module_load.
  void (*module_unload)(void* module);
  // (optional) Looks up a kernel by name; ACCEL_ERROR_NOT_FOUND if absent.
  accel_status_t (*module_function)(void* module, const char* name,
                                    void** out_function);
  // (optional) Enqueues `function` on `stream` with `launch`. `launch`
  // and what it points to (the arguments, their values) are valid during
  // the call only: the plugin takes the arguments at enqueue, so a queued
  // launch runs with those it was given (accel-conform's
  // launch.args_at_enqueue), as cuLaunchKernel does.
  accel_status_t (*launch)(void* function, void* stream,
                           const accel_plugin_launch_t* launch);

  // -- since ABI 1.1 --
  // Built-in portable ops (architecture decision 12). Each is (optional): NULL
  // makes the core return ACCEL_ERROR_UNSUPPORTED. Every op is enqueued on
  // `stream` (never NULL) like a kernel. Offsets are bytes into the plugin
  // memory, counts are elements, `dtype` is an accel_dtype_t. The core has
  // checked dtypes and bounds; count is never 0. Float ops on F16/BF16
  // compute in f32 and round to nearest even on store.
  //
  // (optional) dst[i] = value converted to `dtype` (round to nearest even;
  // I32 truncates toward zero and saturates), i < count.
  accel_status_t (*op_fill)(void* device, void* stream, void* dst,
                            uint64_t dst_offset, uint32_t dtype, uint64_t count,
                            double value);
  // (optional) dst[i] = (dst_dtype)src[i]. Float to I32 truncates toward
  // zero and saturates (NaN gives 0); I32 to float rounds to nearest even.
  accel_status_t (*op_cast)(void* device, void* stream, void* dst,
                            uint64_t dst_offset, uint32_t dst_dtype,
                            const void* src, uint64_t src_offset,
                            uint32_t src_dtype, uint64_t count);
  // (optional) x[i] = alpha * x[i]. Float dtypes only.
  accel_status_t (*op_scale)(void* device, void* stream, void* x,
                             uint64_t x_offset, uint32_t dtype, uint64_t count,
                             double alpha);
  // (optional) y[i] = alpha * x[i] + y[i]. Float dtypes only.
  accel_status_t (*op_axpy)(void* device, void* stream, void* y,
                            uint64_t y_offset, const void* x, uint64_t x_offset,
                            uint32_t dtype, uint64_t count, double alpha);
  // (optional) z[i] = x[i] + y[i]. I32 wraps modulo 2^32.
  accel_status_t (*op_add)(void* device, void* stream, void* z,
                           uint64_t z_offset, const void* x, uint64_t x_offset,
                           const void* y, uint64_t y_offset, uint32_t dtype,
                           uint64_t count);
  // (optional) z[i] = x[i] * y[i]. I32 wraps modulo 2^32.
  accel_status_t (*op_mul)(void* device, void* stream, void* z,
                           uint64_t z_offset, const void* x, uint64_t x_offset,
                           const void* y, uint64_t y_offset, uint32_t dtype,
                           uint64_t count);
  // (optional) out[0] = sum of x[i], i < count. Floats accumulate in at
  // least f32 (the order is unspecified; pairwise or blocked summation is
  // expected: one running f32 total over millions of elements ends whole
  // percent off, which accel-conform's round.sum.f32 fails) and store as
  // `dtype`; I32 accumulates exactly in 64 bits and stores the low 32
  // bits.
  accel_status_t (*op_sum)(void* device, void* stream, void* out,
                           uint64_t out_offset, const void* x,
                           uint64_t x_offset, uint32_t dtype, uint64_t count);
  // (optional) Row-major GEMM, see accel_plugin_gemm_t. m, n > 0; k may be
  // 0 (C = beta * C). Since ABI 1.2 `gemm` carries the workspace that
  // op_gemm_workspace asked for.
  accel_status_t (*op_gemm)(void* device, void* stream,
                            const accel_plugin_gemm_t* gemm);

  // -- since ABI 1.2 --
  // (optional) Sets `*out_bytes` to the device memory `op_gemm` wants as
  // workspace for `gemm` (0 for none). The core calls it just before
  // `op_gemm`, with the same validated `gemm` (its workspace fields not yet
  // set), allocates that many bytes from its caching allocator on the
  // GEMM's stream, passes them in `gemm->workspace` and takes them back
  // when `op_gemm` returns (see accel_plugin_gemm_t), so the memory shows
  // in the core's statistics and an out-of-memory empties the cache and
  // retries. NULL means the plugin never wants any. Called from any thread;
  // it must not enqueue work. A failure (for example
  // ACCEL_ERROR_UNSUPPORTED for a GEMM `op_gemm` would refuse) fails the
  // GEMM with that status before anything is allocated.
  accel_status_t (*op_gemm_workspace)(void* device,
                                      const accel_plugin_gemm_t* gemm,
                                      uint64_t* out_bytes);

  // -- since ABI 1.3 --
  // (optional) Sets `*out_address` to the device address of byte `offset`
  // of `mem` (a CUdeviceptr, a HIP device pointer, a host pointer on the
  // CPU), valid until `mem` is freed. NULL, or ACCEL_ERROR_UNSUPPORTED,
  // means the memory has no address (handle-based runtimes: OpenCL). A
  // device that sets ACCEL_DEVICE_CAP_HOST_ACCESSIBLE promises the address
  // is a host pointer the host may read and write once the stream work
  // that touches it has finished.
  accel_status_t (*mem_address)(void* device, void* mem, uint64_t offset,
                                uint64_t* out_address);
  // (optional) Sets `*out_mem` to a memory handle for `size` bytes at
  // device address `address` (as mem_address reports them: a CUdeviceptr,
  // a HIP device pointer, a host pointer on the CPU) that this plugin did
  // not allocate, for example memory another library owns. The handle is
  // used like one from mem_alloc (copies, ops, launches, mem_address) but
  // is never passed to mem_free: the core calls mem_unwrap once no stream
  // work uses it any more, and the memory itself stays the owner's. NULL,
  // or ACCEL_ERROR_UNSUPPORTED, means the backend cannot wrap memory
  // (handle-based runtimes: OpenCL); ACCEL_ERROR_INVALID_ARGUMENT for an
  // address the plugin can tell is not its device's.
  accel_status_t (*mem_wrap)(void* device, uint64_t address, size_t size,
                             void** out_mem);
  // (optional) Forgets a handle from mem_wrap. Never frees the memory.
  void (*mem_unwrap)(void* device, void* mem);
  // (optional) dst[i] = element `i` of the counter-based random stream
  // (`seed`, `offset`) in `distribution` (0 bits, 1 uniform, 2 normal),
  // i < count, exactly as <accel/philox.h> defines it: Philox4x32-10 with
  // counter offset + i / 4 and key `seed`, word i % 4; uniform in [a, b),
  // normal with mean `a` and standard deviation `b`, computed in f32 and
  // rounded once to `dtype`; bits store the raw word as I32. Every backend
  // runs that header's code, so the bytes are identical on every device.
  // The core has checked that bits come with I32 and uniform and normal
  // with F32, F16 or BF16, and that `a` and `b` are finite with a finite
  // f32 difference. NULL makes the core return ACCEL_ERROR_UNSUPPORTED.
  accel_status_t (*op_rng)(void* device, void* stream, void* dst,
                           uint64_t dst_offset, uint32_t dtype, uint64_t count,
                           uint32_t distribution, uint64_t seed,
                           uint64_t offset, double a, double b);

  // -- since ABI 1.4 --
  // (optional) Sets `*out_handle` to the backend's own object behind one of
  // this plugin's handles, as an integer (pointers cast through uintptr_t):
  // `kind` is an accel_plugin_native_kind_t and `object` the plugin handle
  // of that kind (NULL for DEVICE and CONTEXT, which describe `device`).
  // The object stays the plugin's: the caller must not release it, and it
  // is valid as long as the accel handle is. NULL, or
  // ACCEL_ERROR_UNSUPPORTED, means the backend has no such object (the
  // CPU has no native stream).
  accel_status_t (*native_handle)(void* device, uint32_t kind, void* object,
                                  uint64_t* out_handle);
  // (optional) Page-locks `size` bytes of existing host memory at `ptr`
  // (cudaHostRegister) so copies from and to it run at pinned speed. The
  // memory stays the caller's. NULL means the core only records the range
  // (copies still work, at pageable speed).
  accel_status_t (*host_register)(void* device, void* ptr, size_t size);
  // (optional) Undoes host_register. Must be set with host_register.
  void (*host_unregister)(void* device, void* ptr);
  // (optional) Enqueues `fn(user)` on `stream`: it runs on a thread of the
  // plugin's choosing once the work enqueued before it has finished, and
  // work enqueued after it waits until it returns. `fn` must not call
  // accel or the plugin. NULL makes the core return
  // ACCEL_ERROR_UNSUPPORTED.
  accel_status_t (*launch_host_func)(void* stream, void (*fn)(void* user),
                                     void* user);
  // (optional) The range of stream priorities: `*out_greatest` is the most
  // urgent, numerically lowest as on CUDA (for example -5 to 0). NULL
  // means streams have one priority, 0.
  accel_status_t (*stream_priority_range)(void* device, int32_t* out_least,
                                          int32_t* out_greatest);
  // (optional) stream_create with a priority inside stream_priority_range
  // (the core clamps it). Must be set with stream_priority_range.
  accel_status_t (*stream_create_priority)(void* device,
                                           accel_stream_flags_t flags,
                                           int32_t priority,
                                           void** out_stream);
  // (optional) Starts recording `stream`: until stream_end_capture, the
  // copies, memsets, ops and launches the core enqueues on it are
  // recorded, not run. Host functions, event records and waits, peer
  // copies, child graphs and random fills from the device's generator are
  // never enqueued on a capturing stream: the core runs them itself
  // between the plugin's graphs. The core calls it only on an idle
  // stream, and during capture calls nothing that would wait for the
  // stream. NULL means the core replays its own record
  // of a graph call by call (correct, without the saving).
  accel_status_t (*stream_begin_capture)(void* stream);
  // (optional) Ends recording and returns the work as a graph that
  // graph_launch runs on any stream of the device, any number of times.
  // Set with stream_begin_capture, graph_launch and graph_destroy.
  accel_status_t (*stream_end_capture)(void* stream, void** out_graph);
  // (optional) Enqueues one run of `graph` on `stream`, in stream order.
  // The core orders the launches of one graph (a launch on another stream
  // waits for the previous one), so two runs of a graph never overlap.
  accel_status_t (*graph_launch)(void* graph, void* stream);
  // (optional) Destroys a graph once its enqueued runs have finished.
  void (*graph_destroy)(void* graph);
  // (optional) y = act(x) element-wise for an accel_plugin_unary_op_t
  // `op`, float dtypes only (f16/bf16 compute in f32, round once). dst and
  // src may be the same range (in place). NULL: UNSUPPORTED.
  accel_plugin_op_unary_fn* op_unary;
  // (optional) y[r * cols + c] += bias[c] for r < rows, c < cols (a
  // row-major rows x cols matrix plus a broadcast row). Float dtypes and
  // I32 (wraps). NULL: UNSUPPORTED.
  accel_plugin_op_bias_add_fn* op_bias_add;
  // (optional) Strided-batched GEMM (cublasGemmStridedBatchedEx). NULL
  // means the core runs `batch->count` op_gemm calls, which is correct
  // but slower. The workspace in `gemm`, if any, serves the whole batch.
  accel_plugin_op_gemm_batched_fn* op_gemm_batched;
} accel_device_ops_t;

// What native_handle returns for each kind (since ABI 1.4).
typedef enum accel_plugin_native_kind {
  // CUdevice, hipDevice_t (as integers), cl_device_id.
  ACCEL_PLUGIN_NATIVE_DEVICE = 0,
  // CUcontext (the primary context), cl_context. HIP has none a plugin
  // should hand out (hipCtx_t is deprecated): ACCEL_ERROR_UNSUPPORTED.
  ACCEL_PLUGIN_NATIVE_CONTEXT = 1,
  // CUstream, hipStream_t, cl_command_queue; `object` is a plugin stream.
  ACCEL_PLUGIN_NATIVE_STREAM = 2,
  // CUevent, hipEvent_t, the cl_event of the latest record (0 if never
  // recorded); `object` is a plugin event.
  ACCEL_PLUGIN_NATIVE_EVENT = 3,
  // The allocation: CUdeviceptr, HIP pointer, cl_mem, host pointer on the
  // CPU; `object` is plugin memory.
  ACCEL_PLUGIN_NATIVE_MEMORY = 4,
  ACCEL_PLUGIN_NATIVE_KIND_MAX_ENUM = 0x7fffffff
} accel_plugin_native_kind_t;

// Smallest device-ops table the core accepts: everything up to and
// including `event_query` (the required part of ABI 1.0).
#define ACCEL_DEVICE_OPS_MIN_SIZE              \
  (offsetof(accel_device_ops_t, event_query) + \
   sizeof(((accel_device_ops_t*)0)->event_query))

// ---------------------------------------------------------------------------
// The plugin descriptor, returned by accel_plugin_entry.
// ---------------------------------------------------------------------------
typedef struct accel_plugin {
  uint32_t abi_version;  // ACCEL_PLUGIN_ABI_VERSION the plugin was built with
  uint32_t struct_size;  // sizeof(accel_plugin_t) at plugin build time
  // -- since ABI 1.0 --
  const char* name;     // short id used in device URIs: [a-z0-9_]{1,31}
  const char* version;  // the plugin's own version, "1.2.0"
  // Preference for ACCEL_BACKEND=auto among devices of the same type (a
  // GPU device outranks every CPU device whatever the plugin's priority;
  // since ABI 1.3): higher wins. First-party values: cuda 300, rocm 200,
  // opencl 100, cpu 0.
  int32_t priority;
  // Initialises the plugin. Must not touch the vendor driver (that happens
  // on first use, in device_count). `host` stays valid until `unload`.
  // `*out_plugin` is the plugin's state, passed to the entries below. A
  // failure is recorded in the load report with its message. Required.
  accel_status_t (*load)(const accel_host_t* host, void** out_plugin);
  // Releases everything `load` and later calls created. Required.
  void (*unload)(void* plugin);
  // Number of usable devices. A missing driver or runtime is
  // ACCEL_ERROR_UNAVAILABLE with the reason as message; a working driver
  // with no device is ACCEL_OK with 0. Required.
  accel_status_t (*device_count)(void* plugin, uint32_t* out_count);
  // Opens device `index` (< device_count). The core opens each device at
  // most once at a time. Required.
  accel_status_t (*device_open)(void* plugin, uint32_t index,
                                void** out_device);
  // Closes a device opened by device_open. Required.
  void (*device_close)(void* device);
  // Device operations shared by every device of this plugin. Required.
  const accel_device_ops_t* device_ops;
} accel_plugin_t;

// Smallest descriptor the core accepts (ABI 1.0).
#define ACCEL_PLUGIN_MIN_SIZE             \
  (offsetof(accel_plugin_t, device_ops) + \
   sizeof(((accel_plugin_t*)0)->device_ops))

// Type of the exported entry. Returns a descriptor in static storage that
// stays valid until the plugin is unloaded, or NULL when the plugin cannot
// serve `host_abi` (the core reports the mismatch).
typedef const accel_plugin_t* (*accel_plugin_entry_fn_t)(uint32_t host_abi);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ACCEL_PLUGIN_H_
