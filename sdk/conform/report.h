// SPDX-License-Identifier: MIT
//
// accel-conform's output (report.c): a line per check and the closing
// counts, as text or as one JSON document on standard output. Each line is
// formatted into a buffer before it is written, so the watchdog (crash.c)
// can hold the line of the running check ready and write it from its
// signal-safe context. Not thread-safe: the main thread formats; the
// watchdog only writes a line prepared for it.
#ifndef ACCEL_SDK_CONFORM_REPORT_H_
#define ACCEL_SDK_CONFORM_REPORT_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "conform.h"

// The name a result is reported by: "PASS", "FAIL", ... ("?" for a value
// outside conform_result_t).
const char* conform_result_name(conform_result_t result);

// --json: writes the document's opening to stdout, up to the "checks"
// array (plugin path, device URI, reference device URI or "host").
void conform_json_begin(const char* plugin, const char* device,
                        const char* reference);

// One check's report into `out` (`size` bytes, cut short to fit): its text
// line, or its JSON object (after a comma unless it is the `first`).
void conform_format_result(char* out, size_t size, bool json, bool first,
                           const char* name, conform_result_t result,
                           const char* detail);

// The run's closing into `out`: the counts line, or the end of the JSON
// document with the counts. `counts` is indexed by conform_result_t.
void conform_format_summary(char* out, size_t size, bool json,
                            const size_t counts[6]);

// The failed checks of a text run, repeated after the last check so that
// they are in the tail of a long log (CI keeps a log's head and tail).
// Holds the first CONFORM_RECAP_MAX failures, each line cut to
// CONFORM_RECAP_LINE bytes, and counts the rest.
enum { CONFORM_RECAP_MAX = 8, CONFORM_RECAP_LINE = 320 };
typedef struct conform_recap {
  char lines[CONFORM_RECAP_MAX][CONFORM_RECAP_LINE];
  size_t count;  // failures seen, kept or not
} conform_recap_t;

// Notes a check's result in `recap`; only FAIL and XPASS are kept.
void conform_recap_note(conform_recap_t* recap, const char* name,
                        conform_result_t result, const char* detail);

// Writes the recap to `out` (nothing when no check failed).
void conform_recap_write(const conform_recap_t* recap, FILE* out);

// The line the watchdog writes to stdout if check `name` is still running
// after `limit_s`: its FAIL report, and in JSON the rest of the document
// (the counts so far, this check failed), so the output stays whole.
void conform_hang_report(char* out, size_t size, const char* name,
                         double limit_s, bool json, bool first,
                         const size_t counts[6]);

#endif  // ACCEL_SDK_CONFORM_REPORT_H_
