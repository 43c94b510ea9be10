// SPDX-License-Identifier: MIT
//
// JSON writer and string escaper (see json.h).
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

void json_writer_init(json_writer_t* w, FILE* out) {
  w->out = out;
  w->depth = 0;
  w->has_items[0] = false;
  w->after_key = false;
}

static void json_indent(json_writer_t* w) {
  fputc('\n', w->out);
  for (int i = 0; i < w->depth; ++i) fputs("  ", w->out);
}

// Emits the separator that precedes a value or key at the current level.
static void json_before_item(json_writer_t* w) {
  if (w->after_key) {
    w->after_key = false;
    return;
  }
  if (w->depth == 0) return;
  if (w->has_items[w->depth]) fputc(',', w->out);
  w->has_items[w->depth] = true;
  json_indent(w);
}

static void json_open(json_writer_t* w, char c) {
  json_before_item(w);
  fputc(c, w->out);
  if (w->depth + 1 < JSON_MAX_DEPTH) {
    w->depth++;
    w->has_items[w->depth] = false;
  }
}

static void json_close(json_writer_t* w, char c) {
  bool had_items = w->has_items[w->depth];
  if (w->depth > 0) w->depth--;
  if (had_items) json_indent(w);
  fputc(c, w->out);
  if (w->depth == 0) fputc('\n', w->out);
}

void json_begin_object(json_writer_t* w) { json_open(w, '{'); }
void json_end_object(json_writer_t* w) { json_close(w, '}'); }
void json_begin_array(json_writer_t* w) { json_open(w, '['); }
void json_end_array(json_writer_t* w) { json_close(w, ']'); }

void json_key(json_writer_t* w, const char* key) {
  json_before_item(w);
  json_write_escaped(w->out, key);
  fputs(": ", w->out);
  w->after_key = true;
}

void json_string(json_writer_t* w, const char* s) {
  json_before_item(w);
  if (s == NULL) {
    fputs("null", w->out);
  } else {
    json_write_escaped(w->out, s);
  }
}

void json_uint(json_writer_t* w, uint64_t v) {
  json_before_item(w);
  fprintf(w->out, "%" PRIu64, v);
}

void json_int(json_writer_t* w, int64_t v) {
  json_before_item(w);
  fprintf(w->out, "%" PRId64, v);
}

void json_bool(json_writer_t* w, bool v) {
  json_before_item(w);
  fputs(v ? "true" : "false", w->out);
}

void json_double(json_writer_t* w, double v) {
  json_before_item(w);
  if (isfinite(v)) {
    fprintf(w->out, "%.6g", v);
  } else {
    fputs("null", w->out);
  }
}

void json_null(json_writer_t* w) {
  json_before_item(w);
  fputs("null", w->out);
}

// Length of the valid UTF-8 sequence starting at `s`, or 0 if invalid.
// Rejects overlong forms, surrogates and code points above U+10FFFF.
static size_t json_utf8_length(const unsigned char* s) {
  unsigned char c = s[0];
  size_t n;
  uint32_t cp;
  if (c < 0x80) return 1;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
    cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  for (size_t i = 1; i < n; ++i) {
    // A NUL terminator fails this test too, so we never read past it.
    if ((s[i] & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (s[i] & 0x3f);
  }
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000)) return 0;
  if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

// The escaped form of the character at `p` into `piece` (room for 7
// bytes): returns its length, and in `*used` the bytes of `p` it stands for.
static size_t json_escape_step(const unsigned char* p, char* piece,
                               size_t* used) {
  unsigned char c = *p;
  *used = 1;
  if (c == '"' || c == '\\') {
    piece[0] = '\\';
    piece[1] = (char)c;
    return 2;
  }
  if (c < 0x20 || c == 0x7f) {
    return (size_t)snprintf(piece, 7, "\\u%04x", c);
  }
  size_t n = json_utf8_length(p);
  if (n == 0) {
    memcpy(piece, "\\ufffd", 6);
    return 6;
  }
  memcpy(piece, p, n);
  *used = n;
  return n;
}

void json_write_escaped(FILE* out, const char* s) {
  const unsigned char* p = (const unsigned char*)s;
  fputc('"', out);
  while (*p != '\0') {
    char piece[8];
    size_t used;
    fwrite(piece, 1, json_escape_step(p, piece, &used), out);
    p += used;
  }
  fputc('"', out);
}

size_t json_escape_into(char* out, size_t size, const char* s) {
  if (size < 3) {
    if (size > 0) out[0] = '\0';
    return 0;
  }
  const unsigned char* p = (const unsigned char*)s;
  size_t n = 0;
  out[n++] = '"';
  while (*p != '\0') {
    char piece[8];
    size_t used;
    size_t len = json_escape_step(p, piece, &used);
    if (n + len + 2 > size) break;  // room for the quote and the NUL
    memcpy(out + n, piece, len);
    n += len;
    p += used;
  }
  out[n++] = '"';
  out[n] = '\0';
  return n;
}
