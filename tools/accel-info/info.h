// SPDX-License-Identifier: MIT
//
// Internal interface of accel-info, shared by its source files:
// - report.c collects what the library knows into an info_report_t;
// - render_text.c and render_json.c print a report;
// - isolate.c probes in a child process so that a crashing or hanging
//   plugin cannot take the tool down;
// - main.c parses the command line and ties it together.
// Nothing here is exported; the tool uses only the public accel API.
#ifndef ACCEL_TOOLS_ACCEL_INFO_INFO_H_
#define ACCEL_TOOLS_ACCEL_INFO_INFO_H_

#include <accel/accel.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

// Exit codes (documented in --help and docs/accel-info.md).
enum {
  INFO_EXIT_OK = 0,         // >= 1 device, no plugin failed
  INFO_EXIT_NO_DEVICE = 1,  // no usable device
  INFO_EXIT_USAGE = 2,      // bad command line
  INFO_EXIT_PROBLEMS = 3,   // devices, but a plugin failed or crashed
};

// What became of a plugin candidate, from the operator's point of view.
typedef enum info_state {
  INFO_STATE_OK = 0,       // loaded; may have 0 devices
  INFO_STATE_UNAVAILABLE,  // loaded, driver/runtime/device missing
  INFO_STATE_FAILED,       // rejected by the loader or load() failed
  INFO_STATE_CRASHED,      // killed the probing child with a signal
  INFO_STATE_TIMED_OUT,    // hung while being probed
  INFO_STATE_EXCLUDED,     // excluded by options, not opened
  INFO_STATE_SHADOWED,     // same name as an earlier plugin, not used
} info_state_t;

// A plugin that crashed or hung in an earlier probing round. The parent
// fills these in and the child inherits them through fork().
typedef struct info_crash {
  char* path;                  // real path of the plugin (owned)
  info_state_t state;          // INFO_STATE_CRASHED or INFO_STATE_TIMED_OUT
  accel_plugin_stage_t stage;  // last stage known to have been reached
  char message[160];           // "crashed while being probed (...)"
} info_crash_t;

// Marker kinds written by the child before risky work (see isolate.c).
#define INFO_MARK_OPEN 'P'     // about to open plugin <path>
#define INFO_MARK_DEVICES 'D'  // about to query the devices of <path>
#define INFO_MARK_NONE 'N'     // risky plugin work is over

// Called before risky work with a marker kind and a plugin path (NULL for
// INFO_MARK_NONE). Must be async-signal-tolerant enough to run inside the
// loader: it may only write to a file descriptor.
typedef void (*info_mark_fn_t)(char kind, const char* path, void* user_data);

// How to collect a report.
typedef struct info_collect_options {
  const info_crash_t* crashes;  // plugins to exclude and report as crashed
  size_t crash_count;
  info_mark_fn_t mark;  // (optional) progress markers
  void* mark_user_data;
} info_collect_options_t;

// One row of the plugin table. Strings borrow from the library's load
// report or from the crash list; both outlive the report.
typedef struct info_plugin {
  accel_plugin_report_t report;  // as the library gave it
  info_state_t state;
  accel_plugin_stage_t stage;  // report.stage, or the crash's stage
  accel_status_t status;       // report.status, or INTERNAL for crashes
  const char* message;         // report.message, or the crash message
} info_plugin_t;

// One device, as queried.
typedef struct info_device {
  accel_device_info_t info;
} info_device_t;

// A problem worth an exit code of 3. `plugin` is a path or NULL.
typedef struct info_error {
  const char* plugin;  // borrowed, or NULL
  char* message;       // owned
  bool from_table;     // already shown as a plugin row in text output
} info_error_t;

// A device hidden by ACCEL_VISIBLE_DEVICES. Strings borrow from the
// library.
typedef struct info_hidden {
  const char* backend;
  uint32_t index;  // the plugin's own index
  const char* reason;
} info_hidden_t;

// Everything accel-info prints. Built by info_report_collect() or, when
// the tool has nothing better, info_report_add_error() on a zeroed one.
typedef struct info_report {
  info_plugin_t* plugins;
  size_t plugin_count;
  info_device_t* devices;
  size_t device_count;
  const char** search_paths;  // borrowed from the library
  accel_origin_t* search_origins;
  size_t search_count;
  bool selected;  // a device was selected
  char selected_uri[48];
  const char* backend_env;  // ACCEL_BACKEND, NULL if unset or ignored
  accel_status_t select_status;
  char* select_error;  // owned, NULL if selection worked
  info_error_t* errors;
  size_t error_count;
  info_hidden_t* hidden;  // devices ACCEL_VISIBLE_DEVICES hides
  size_t hidden_count;
  // Collectives engines (docs/collectives.md), as the library reports
  // them; listed without opening their libraries.
  accel_plugin_report_t* engines;
  size_t engine_count;
} info_report_t;

// Discovers plugins with accel_init() (honouring `options`) and fills
// `*out` (zeroed first). Never fails: problems become report errors. The
// library stays initialised because `*out` borrows its strings.
void info_report_collect(const info_collect_options_t* options,
                         info_report_t* out);

// Appends an error with a printf-style message to `report`. `plugin` is
// borrowed. Out of memory drops the error silently.
void info_report_add_error(info_report_t* report, const char* plugin,
                           bool from_table, const char* format, ...)
    __attribute__((format(printf, 4, 5)));

// The exit code that `report` deserves (0, 1 or 3).
int info_report_exit_code(const info_report_t* report);

// Frees what `report` owns and zeroes it.
void info_report_deinit(info_report_t* report);

// "ok", "unavailable", "failed", "crashed", "timed_out" or "excluded".
const char* info_state_name(info_state_t state);

// ACCEL_BACKEND as the library reads it: NULL when unset, and also in a
// setuid or setgid process, where the library ignores the environment
// (secure_getenv), so the report never shows a value that was not used.
const char* info_backend_env(void);

// "found", "opened", "entry", "negotiated", "initialised" or "unknown".
const char* info_stage_name(accel_plugin_stage_t stage);

// "api", "env", "install_dir" or "unknown".
const char* info_origin_name(accel_origin_t origin);

// Text rendering options.
typedef struct info_text_options {
  bool verbose;  // also the search path and each plugin's origin
  bool color;    // ANSI colours (only when stdout is a terminal)
} info_text_options_t;

// Writes the human-readable report to `out`.
void info_render_text(const info_report_t* report,
                      const info_text_options_t* options, FILE* out);

// Writes the JSON document (schema_version 1) to `out`.
void info_render_json(const info_report_t* report, FILE* out);

// Command-line settings that isolate.c needs.
typedef struct info_run_options {
  bool json;
  info_text_options_t text;
  double timeout_s;  // per-probe limit; <= 0 means none
} info_run_options_t;

// Collects and renders a report in this process and writes it to file
// descriptor `out_fd`, with `mark` (optional) as the progress hook.
// Returns the exit code the report deserves.
int info_run_in_process(const info_run_options_t* options,
                        const info_crash_t* crashes, size_t crash_count,
                        info_mark_fn_t mark, void* mark_user_data, int out_fd);

// Probes in child processes, retrying without plugins that crash or hang,
// prints the result on standard output and returns the exit code.
int info_run_isolated(const info_run_options_t* options);

// Writes all of `size` bytes to `fd`, retrying on EINTR and short writes.
// Returns false on error.
bool info_write_all(int fd, const void* data, size_t size);

#endif  // ACCEL_TOOLS_ACCEL_INFO_INFO_H_
