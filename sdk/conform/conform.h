// SPDX-License-Identifier: MIT
//
// accel-conform: the conformance suite for accel backend plugins. One
// executable runs a registry of checks, grouped by area in conform_*.c,
// against one device of one plugin, through the public API only (the core's
// validation is part of what a user sees). Built-in ops are compared with
// the CPU plugin and with a double-precision host reference (dtype.c).
//
// A check returns one result and writes a one-line detail. Handles and host
// memory a check creates are tracked in the context and released by the
// runner after the check, unless a call timed out: then the work may still
// reference them, so they are leaked on purpose and the process skips
// accel_shutdown() at exit (`tainted`).
#ifndef ACCEL_SDK_CONFORM_CONFORM_H_
#define ACCEL_SDK_CONFORM_CONFORM_H_

#include <accel/accel.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Outcome of one check. UNSUPPORTED counts as skipped in the summary.
typedef enum conform_result {
  CONFORM_PASS = 0,
  CONFORM_FAIL = 1,
  CONFORM_SKIP = 2,
  CONFORM_UNSUPPORTED = 3,
  // Only as reported by the runner for a check in the known-failures file:
  CONFORM_XFAIL = 4,  // failed, as listed
  CONFORM_XPASS = 5,  // listed, but passed: counts as a failure
} conform_result_t;

#define CONFORM_MAX_TRACKED 1024

// What the runner hands every check.
typedef struct conform_ctx {
  accel_device_t* device;     // the device under test
  accel_device_t* peer;       // another device of the backend, or NULL
  accel_device_t* reference;  // the CPU plugin's device, or NULL
  accel_device_info_t info;   // `device`'s properties
  const char* plugin_path;    // real path of the plugin under test
  const char* kernel_dir;     // where test kernels live, or NULL
  double timeout_s;           // per blocking wait
  uint64_t seed;
  bool require_ops;  // --require-ops: every built-in op is claimed
  bool tainted;  // a wait timed out: leak, and skip accel_shutdown()
  bool hung;     // a wait timed out in the current check
  char detail[512];
  char sync_message[256];  // accel_last_error() of a failed timed sync
  // Tracked for release after the check.
  size_t tracked_count;
  struct {
    int kind;
    void* handle;
  } tracked[CONFORM_MAX_TRACKED];
} conform_ctx_t;

typedef conform_result_t (*conform_fn_t)(conform_ctx_t* ctx, const void* arg);

// One registered check. `name` is "area.what[.detail]".
typedef struct conform_check {
  const char* name;
  conform_fn_t fn;
  const void* arg;
} conform_check_t;

// Registry (registry.c): every check in run order.
size_t conform_check_count(void);
const conform_check_t* conform_check_get(size_t index);

// Areas (conform_<area>.c). Each returns its table and count.
const conform_check_t* conform_abi_checks(size_t* out_count);
// The plugin given an older core's smaller structs (conform_abi_older.c).
const conform_check_t* conform_abi_older_checks(size_t* out_count);
const conform_check_t* conform_device_checks(size_t* out_count);
const conform_check_t* conform_memory_checks(size_t* out_count);
const conform_check_t* conform_copy_checks(size_t* out_count);
const conform_check_t* conform_copy_large_checks(size_t* out_count);
const conform_check_t* conform_stream_checks(size_t* out_count);
const conform_check_t* conform_event_checks(size_t* out_count);
// Every op enqueued behind busy work and queued writes (conform_order.c).
const conform_check_t* conform_order_checks(size_t* out_count);
const conform_check_t* conform_ops_checks(size_t* out_count);
// Activations, bias-add, strided-batched GEMM (conform_ops_nn.c).
const conform_check_t* conform_ops_nn_checks(size_t* out_count);
// NaN payloads, signed zeros and i32 limits through fill, cast, add
// (conform_specials.c).
const conform_check_t* conform_specials_checks(size_t* out_count);
const conform_check_t* conform_kernel_checks(size_t* out_count);
const conform_check_t* conform_launch_checks(size_t* out_count);
const conform_check_t* conform_launch_view_checks(size_t* out_count);
const conform_check_t* conform_sync_checks(size_t* out_count);
const conform_check_t* conform_threads_checks(size_t* out_count);
const conform_check_t* conform_round_checks(size_t* out_count);
const conform_check_t* conform_resource_checks(size_t* out_count);
const conform_check_t* conform_resource_cycle_checks(size_t* out_count);
// The GEMM workspace lent through the plugin's table (conform_workspace.c).
const conform_check_t* conform_workspace_checks(size_t* out_count);
const conform_check_t* conform_rng_checks(size_t* out_count);
const conform_check_t* conform_graph_checks(size_t* out_count);
// A captured memset and copies, launched twice (conform_graph_bytes.c).
const conform_check_t* conform_graph_bytes_checks(size_t* out_count);
// Stream priorities, host functions, blocking-sync events (conform_control.c).
const conform_check_t* conform_control_checks(size_t* out_count);
const conform_check_t* conform_interop_checks(size_t* out_count);
// Last: a failed kernel may leave a GPU context unusable.
const conform_check_t* conform_error_checks(size_t* out_count);

// ---------------------------------------------------------------------------
// Test kernels (conform_kernel.c; sdk/conform/kernels/README.md)
// ---------------------------------------------------------------------------

// Loads the first test module the device accepts and looks up kernel
// `name` in it (both tracked). `path` receives the module file tried
// last ("" when there was none). NOT_FOUND when there is no module or no
// such kernel in it.
accel_status_t conform_kernel_get(conform_ctx_t* ctx, const char* name,
                                  accel_kernel_t** out_kernel, char* path,
                                  size_t path_size);

// The test kernel every module holds: accel_conform_add_one(int32_t*
// data, uint32_t n) adds 1 to data[i] for each global thread index i < n.
#define CONFORM_ADD_ONE "accel_conform_add_one"

// One launch of CONFORM_ADD_ONE: configuration and arguments together, so
// a check can change `n` or `args[0]` (buffer, offset) and launch again.
// `args[1]` points at `n`: the struct must stay where
// conform_add_one_init() set it up (no copies).
typedef struct conform_add_one {
  uint32_t n;
  accel_launch_config_t config;
  accel_kernel_arg_t args[2];
} conform_add_one_t;

// Sets up `launch` over the first `n` int32 from `offset` bytes into
// `buffer`, with a grid of blocks of 64 threads (fewer where the device's
// blocks are smaller) that covers `count` >= `n` elements, so `n` may
// grow up to `count` between launches.
void conform_add_one_init(conform_ctx_t* ctx, conform_add_one_t* launch,
                          accel_buffer_t* buffer, size_t offset, uint32_t n,
                          uint32_t count);

// Enqueues `launch` of `kernel` on `stream`; returns the launch status.
accel_status_t conform_add_one_launch(const conform_add_one_t* launch,
                                      accel_kernel_t* kernel,
                                      accel_stream_t* stream);

// Both in one: add_one on `stream` over the first `n` int32 of `buffer`.
accel_status_t conform_launch_add_one(conform_ctx_t* ctx, accel_kernel_t* kernel,
                                      accel_stream_t* stream,
                                      accel_buffer_t* buffer, uint32_t n);

// The result for a conform_kernel_get() failure: UNSUPPORTED without the
// kernels capability, SKIP without a module or that kernel, else FAIL.
conform_result_t conform_kernel_missing(conform_ctx_t* ctx,
                                        accel_status_t status,
                                        const char* name, const char* path);

// In a check: looks up test kernel `name` into `kernel` (path: a char
// array) or returns conform_kernel_missing()'s result.
#define CONFORM_GET_KERNEL(ctx, name, kernel, path)                         \
  do {                                                                      \
    accel_status_t s_ =                                                     \
        conform_kernel_get(ctx, name, &kernel, path, sizeof(path));         \
    if (s_ != ACCEL_OK) return conform_kernel_missing(ctx, s_, name, path); \
  } while (0)

// ---------------------------------------------------------------------------
// Helpers (util.c)
// ---------------------------------------------------------------------------

// Writes the detail line and returns `result`.
conform_result_t conform_report(conform_ctx_t* ctx, conform_result_t result,
                                const char* format, ...)
    __attribute__((format(printf, 3, 4)));

// FAIL with "<what>: <STATUS>: <accel_last_error()>".
conform_result_t conform_fail_status(conform_ctx_t* ctx, accel_status_t status,
                                     const char* what);

// Tracked handle creation; on failure they return the status and leave the
// message in accel_last_error(). Released by the runner after the check.
accel_status_t conform_buffer(conform_ctx_t* ctx, accel_device_t* device,
                              size_t size, accel_buffer_t** out_buffer);
accel_status_t conform_stream(conform_ctx_t* ctx, accel_device_t* device,
                              accel_stream_t** out_stream);
accel_status_t conform_event(conform_ctx_t* ctx, accel_device_t* device,
                             accel_event_flags_t flags,
                             accel_event_t** out_event);
// Launch helpers (conform_launch.c, conform_launch_cpu.c).
// Runs `kernel` once on a fresh stream and waits for it. On failure the
// detail is written and FAIL returned; CONFORM_PASS otherwise.
conform_result_t conform_launch_run(conform_ctx_t* ctx, accel_kernel_t* kernel,
                                    const uint32_t grid[3],
                                    const uint32_t block[3], uint32_t shared,
                                    size_t num_args,
                                    const accel_kernel_arg_t* args,
                                    const char* what);
// The record of a CPU test kernel: `bytes` of host memory for the read
// back (`*out_host`) and a tracked buffer of as many zero bytes
// (`*out_buffer`). Reported FAIL on error.
conform_result_t conform_launch_words(conform_ctx_t* ctx, size_t bytes,
                                      uint32_t** out_host,
                                      accel_buffer_t** out_buffer);
void conform_track_module(conform_ctx_t* ctx, accel_module_t* module);
// Tracks a stream the check created itself (accel_stream_create_with_priority).
void conform_track_stream(conform_ctx_t* ctx, accel_stream_t* stream);
void conform_track_kernel(conform_ctx_t* ctx, accel_kernel_t* kernel);

// The plugin under test opened a second time through its own entry point
// and table (direct.c), with a host table of the suite's: `ops` and
// `device` are the device under test's. conform_direct_open returns PASS,
// or FAIL with the detail written; conform_direct_close undoes whatever
// was opened (also after a failed open). The plugin's last host->fail
// message on the calling thread is conform_direct_message().
typedef struct conform_direct {
  void* handle;
  const struct accel_plugin* desc;
  const struct accel_device_ops* ops;
  void* plugin;
  void* device;
} conform_direct_t;
conform_result_t conform_direct_open(conform_ctx_t* ctx, conform_direct_t* d);
// The same with `host` (which must stay valid until conform_direct_close):
// `*out_load` (may be NULL) gets load's status, ACCEL_OK when it was not
// reached. conform_direct_host_init() writes the suite's host table, cut
// to the first `size` bytes (an older core's), into `host`.
struct accel_host;
conform_result_t conform_direct_open_with(conform_ctx_t* ctx,
                                          conform_direct_t* d,
                                          const struct accel_host* host,
                                          accel_status_t* out_load);
void conform_direct_host_init(struct accel_host* host, size_t size);
void conform_direct_close(conform_direct_t* d);
const char* conform_direct_message(void);
// The device's properties as the plugin itself reports them: query_props
// through its table into `*props`, zeroed first with this suite's
// struct_size (the core's device info may differ: it drops caps whose
// entries are missing and fills a total_memory of 0 from mem_info).
struct accel_plugin_device_props;
accel_status_t conform_direct_props(const conform_direct_t* d,
                                    struct accel_plugin_device_props* props);

// Zeroed host memory freed after the check (aborts nothing: NULL on OOM).
void* conform_alloc(conform_ctx_t* ctx, size_t size);

// Releases everything tracked (or leaks it when the check hung).
void conform_release_tracked(conform_ctx_t* ctx);

// Polls accel_stream_query / accel_event_query until done, an error, or
// `ctx->timeout_s`. Returns ACCEL_OK, the query's error, or
// ACCEL_ERROR_NOT_READY on timeout (and marks the check hung).
accel_status_t conform_stream_wait(conform_ctx_t* ctx, accel_stream_t* stream);
// The same for any query of that shape: a plugin's own stream_query or
// event_query on its handle (conform_direct_t).
accel_status_t conform_poll(conform_ctx_t* ctx, void* handle,
                            accel_status_t (*query)(void*, bool*));
accel_status_t conform_event_wait(conform_ctx_t* ctx, accel_event_t* event);

// Runs accel_stream_synchronize / accel_event_synchronize on a helper
// thread with the same deadline, so a plugin that never completes makes the
// check fail instead of hanging. NOT_READY on timeout (check marked hung).
accel_status_t conform_stream_sync(conform_ctx_t* ctx, accel_stream_t* stream);
accel_status_t conform_event_sync(conform_ctx_t* ctx, accel_event_t* event);

// The two halves of conform_stream_sync / conform_event_sync, for checks
// that keep several waits in flight: conform_sync_start runs
// accel_event_synchronize (is_event) or accel_stream_synchronize on
// `handle` on a helper thread (NULL when no thread or memory);
// conform_sync_finish waits for it until `deadline` (conform_now()'s
// clock) and returns its status, or NOT_READY past the deadline (the
// check is marked hung and the helper abandoned).
typedef struct conform_call conform_call_t;
conform_call_t* conform_sync_start(bool is_event, void* handle);
// Whether the helper of `call` is asleep inside its synchronize call (its
// thread's state in /proc/self/task/<tid>/stat is S or D), or has
// returned. Where procfs cannot say: whether it has reached the call.
bool conform_sync_blocked(conform_call_t* call);
accel_status_t conform_sync_finish(conform_ctx_t* ctx, conform_call_t* call,
                                   double deadline);

// FAIL for a failed conform_*_wait/_sync: "<what>: did not complete within
// N s" on timeout, else "<what>: <STATUS>: <message>".
conform_result_t conform_fail_wait(conform_ctx_t* ctx, accel_status_t status,
                                   const char* what);

// Checks a device-to-host read into a guarded host range: `host` holds
// `guard`, then `size` bytes that must equal `want`, then `guard`. On a
// mismatch writes "<what>: host byte N is X, expected Y" (N is -1 or
// `size` for a guard) to the detail and returns false.
bool conform_guarded_equal(conform_ctx_t* ctx, const unsigned char* host,
                           const unsigned char* want, size_t size,
                           unsigned char guard, const char* what);

// Op outputs with a tail: a tracked buffer of `size` + CONFORM_TAIL_BYTES
// bytes on `device`, its first `size` bytes from `init` and the tail
// CONFORM_TAIL_BYTE, so that an op writing past its last element (a
// vector loop's tail rounded up) shows. Returns the first failing status.
#define CONFORM_TAIL_BYTES 256u
#define CONFORM_TAIL_BYTE 0x3c
accel_status_t conform_buffer_tailed(conform_ctx_t* ctx, accel_device_t* device,
                                     const void* init, size_t size,
                                     accel_buffer_t** out_buffer);
// Reads the tail of a buffer from conform_buffer_tailed(`size` as given
// there). On a read error or a changed byte writes "<what>: ..." (which
// byte past the output, its value) to the detail and returns false.
bool conform_tail_intact(conform_ctx_t* ctx, accel_buffer_t* buffer,
                         size_t size, const char* what);

// Reads all of `buffer` and compares it with `expected` (`size` bytes, the
// buffer's size). On a mismatch writes "<what>: byte N is X, expected Y"
// (or the read's error) to the detail and returns false.
bool conform_verify(conform_ctx_t* ctx, accel_buffer_t* buffer,
                    const unsigned char* expected, size_t size,
                    const char* what);

// Enqueues `rounds` copies of several MiB back and forth between two fresh
// buffers on `stream`: work long enough that a later stream or event
// really has to wait for it. Returns the enqueue status.
accel_status_t conform_heavy_work(conform_ctx_t* ctx, accel_stream_t* stream,
                                  int rounds);

// Deterministic pseudo-random numbers (splitmix64).
uint64_t conform_rand(uint64_t* state);
// Uniform in [lo, hi).
double conform_rand_range(uint64_t* state, double lo, double hi);
void conform_rand_bytes(uint64_t* state, void* dst, size_t size);

// Seconds since an arbitrary epoch (CLOCK_MONOTONIC).
double conform_now(void);

// ---------------------------------------------------------------------------
// Known failures (known.c)
// ---------------------------------------------------------------------------

#define CONFORM_MAX_KNOWN 256

typedef struct conform_known_entry {
  char pattern[128];  // a check name or an fnmatch() glob
  char reason[256];
} conform_known_entry_t;

typedef struct conform_known {
  char path[1024];
  size_t count;
  conform_known_entry_t entries[CONFORM_MAX_KNOWN];
} conform_known_t;

// Parses a known-failures file ("<check or glob> <reason>" lines, #
// comments). False with a message in `error` when it cannot be read or an
// entry has no reason.
bool conform_known_load(const char* path, conform_known_t* known, char* error,
                        size_t error_size);
// The reason `name` is listed with, or NULL.
const char* conform_known_reason(const conform_known_t* known,
                                 const char* name);
// The default file of a plugin: its path with the extension replaced by
// ".conform-known" (libaccel-foo.so -> libaccel-foo.conform-known).
void conform_known_default_path(const char* plugin_path, char* out,
                                size_t size);

// ---------------------------------------------------------------------------
// Element types (dtype.c)
// ---------------------------------------------------------------------------

// Element `i` of `p` as a double; stores round to nearest even, I32
// truncates toward zero and saturates (NaN gives 0).
double conform_load(const void* p, accel_dtype_t dtype, size_t i);
void conform_store(void* p, accel_dtype_t dtype, size_t i, double v);

// ---------------------------------------------------------------------------
// Crashes (crash.c)
// ---------------------------------------------------------------------------

// Crash naming (crash.c). Handlers for SIGSEGV, SIGBUS, SIGILL, SIGFPE
// and SIGABRT write one line naming the part of the run that was going
// on to stderr, "accel-conform: crashed in check NAME (SIGSEGV)" for a
// check, and then pass the signal on (to a sanitizer's handler or the
// default action), so the process still dies of it. A watchdog thread
// stops a check, the setup or the teardown that has run for `limit_s`
// seconds, naming it, and ends the process with status 1. The lines are
// prepared by the calls below, never in the handler. Called from the main
// thread only, in this order.

// Installs the handlers and starts the watchdog, before the plugin is
// loaded: what follows is named "while loading the plugin and opening its
// devices", and stopped with "accel-conform: hung while loading ...: still
// running after N s" on stderr.
void conform_crash_guard_install(double limit_s);

// Names the check `check` (a copy is kept), from its start until the
// objects it left are released: past the limit the watchdog writes
// `hang_report` (copied; its FAIL report line, "FAIL <name> still running
// after N s", and with --json the rest of the document) to stdout. NULL
// after the setup and after each check (`hang_report` unused): the
// suite's own work then is untimed, and a crash (on a thread the plugin
// left running) is named "after loading the plugin, before the first
// check" or "after check NAME had ended, before the next began".
void conform_crash_guard_check(const char* check, const char* hang_report);

// Names and times the teardown (releasing the devices, accel_shutdown()
// closing them and unloading the plugins, and the exit after it): "while
// closing the devices and unloading the plugin, after the last check
// NAME" (or "before any check ran"), "hung ..." on stderr as for the setup.
void conform_crash_guard_teardown(void);

#endif  // ACCEL_SDK_CONFORM_CONFORM_H_
