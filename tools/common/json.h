// SPDX-License-Identifier: MIT
//
// The tools' JSON (accel-info --json, accel-bench --json, accel-conform
// --json) and the strings of the core's trace file (libaccel compiles
// this file too, its symbols hidden): a minimal streaming writer that
// tracks nesting and commas so that callers cannot produce malformed
// output, pretty-prints with two-space indents, and escapes strings per
// RFC 8259. Not thread-safe: a writer belongs to one thread; the escaping
// functions keep no state.
#ifndef ACCEL_TOOLS_COMMON_JSON_H_
#define ACCEL_TOOLS_COMMON_JSON_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

// Writer state. Zero it with json_writer_init(); it owns nothing.
typedef struct json_writer {
  FILE* out;
  int depth;
  bool has_items[JSON_MAX_DEPTH];  // a value was written at this level
  bool after_key;                  // the next value follows a key
} json_writer_t;

// Starts writing to `out` (borrowed).
void json_writer_init(json_writer_t* w, FILE* out);

// Opens/closes an object or array. Nesting beyond JSON_MAX_DEPTH is
// ignored (no tool nests that deep).
void json_begin_object(json_writer_t* w);
void json_end_object(json_writer_t* w);
void json_begin_array(json_writer_t* w);
void json_end_array(json_writer_t* w);

// Writes an object key; the next call writes its value.
void json_key(json_writer_t* w, const char* key);

// Values. json_string(NULL) writes null.
void json_string(json_writer_t* w, const char* s);
void json_uint(json_writer_t* w, uint64_t v);
void json_int(json_writer_t* w, int64_t v);
void json_bool(json_writer_t* w, bool v);
// `v` with six significant digits; NaN and infinities (no JSON number
// stands for them) as null.
void json_double(json_writer_t* w, double v);
void json_null(json_writer_t* w);

// Writes `s` as a quoted JSON string to `out`: '"' and '\' are escaped,
// control characters (and DEL) become \u00XX, valid UTF-8 passes through
// and each byte of an invalid UTF-8 sequence becomes \ufffd, so the result
// is always valid JSON in valid UTF-8.
void json_write_escaped(FILE* out, const char* s);

// The same quoted string into `out` (`size` bytes, NUL-terminated), for
// text that must be ready before it is written (accel-conform prepares the
// line its watchdog writes from a signal-safe context). A string that does
// not fit is cut short before the first character that would not fit, never
// inside an escape or a UTF-8 sequence, and still closed by its quote.
// Returns the length written (without the NUL); with `size` below 3 (no
// room for "") it writes at most the NUL and returns 0.
size_t json_escape_into(char* out, size_t size, const char* s);

#endif  // ACCEL_TOOLS_COMMON_JSON_H_
