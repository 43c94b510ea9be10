// SPDX-License-Identifier: MIT
//
// Helpers shared by the loader and unit tests: restarting the library with
// a given ACCEL_PLUGIN_PATH, finding load-report entries, scratch
// directories and capturing stderr. Test-only code: failures print a line
// to stderr and return a neutral value.
#ifndef ACCEL_TESTS_LOADER_LOADER_UTIL_H_
#define ACCEL_TESTS_LOADER_LOADER_UTIL_H_

#include <accel/accel.h>
#include <stdbool.h>
#include <stddef.h>

// Path of the file or directory CMake passed in environment variable `var`
// (e.g. "ACCEL_TEST_FX_GOOD"), or NULL with a message when it is unset.
const char* lu_env_path(const char* var);

// Shuts the library down and sets ACCEL_PLUGIN_PATH to `plugin_path`
// (unsets it when NULL), so the next call initialises afresh.
void lu_restart(const char* plugin_path);

// Number of load-report entries whose path is the real path of `path`;
// copies the first into `*out` when `out` is non-NULL and one matched.
size_t lu_report_find(const char* path, accel_plugin_report_t* out);

// Number of load-report entries whose plugin name is `name`; copies the
// first into `*out` when `out` is non-NULL and one matched.
size_t lu_report_find_name(const char* name, accel_plugin_report_t* out);

// Number of load-report entries whose path starts with `dir` + "/".
size_t lu_report_count_under(const char* dir);

// Opens `uri`, writes a pattern into a new buffer, reads it back and
// compares. Returns true when all of that worked.
bool lu_roundtrip(const char* uri);

// Creates a fresh directory under $TMPDIR (or /tmp) and returns its real
// path (malloc'd; free it), or NULL. Directories left over are removed
// (lu_rmtree) at exit, so a failing test leaves nothing behind.
char* lu_tempdir(void);

// Removes the regular files and links in `dir`, then `dir`. Not recursive.
void lu_rmtree(const char* dir);

// Copies file `src` to `dst` (mode 0755). Returns true on success.
bool lu_copy(const char* src, const char* dst);

// "dir/name", malloc'd.
char* lu_join(const char* dir, const char* name);

// The directory part of `path`, malloc'd.
char* lu_dirname(const char* path);

// Real path of `path`, malloc'd, or NULL if it does not resolve.
char* lu_realpath(const char* path);

// Sends stderr to a scratch file until lu_stderr_end(). Returns a token.
int lu_stderr_begin(void);

// Restores stderr and returns what was written meanwhile (malloc'd, never
// NULL).
char* lu_stderr_end(int token);

#endif  // ACCEL_TESTS_LOADER_LOADER_UTIL_H_
