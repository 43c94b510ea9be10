// SPDX-License-Identifier: MIT
//
// Reads accel_device_memory_snapshot()'s JSON (snapshot.h) with a small
// recursive-descent JSON reader: strict about syntax (RFC 8259), lenient
// about content (members it does not know are skipped, so a snapshot from
// a newer library still draws). Nesting is limited to 64 levels and
// strings are cut to their field's size.
#include "snapshot.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MEMVIZ_MAX_DEPTH 64

typedef struct memviz_cursor {
  const char* start;
  const char* p;
  const char* end;
  int depth;
  char* error;
  size_t error_size;
  bool failed;
} memviz_cursor_t;

static int memviz_fail(memviz_cursor_t* c, const char* format, ...)
    __attribute__((format(printf, 2, 3)));

// Records the first error, with the byte offset it was found at.
static int memviz_fail(memviz_cursor_t* c, const char* format, ...) {
  if (!c->failed) {
    char what[192];
    va_list args;
    va_start(args, format);
    vsnprintf(what, sizeof(what), format, args);
    va_end(args);
    snprintf(c->error, c->error_size, "%s at byte %zu", what,
             (size_t)(c->p - c->start));
    c->failed = true;
  }
  return -1;
}

static void memviz_ws(memviz_cursor_t* c) {
  while (c->p < c->end &&
         (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) {
    c->p++;
  }
}

// Whether the next character (after white space) is `ch`; consumes it.
static bool memviz_take(memviz_cursor_t* c, char ch) {
  memviz_ws(c);
  if (c->p < c->end && *c->p == ch) {
    c->p++;
    return true;
  }
  return false;
}

static int memviz_expect(memviz_cursor_t* c, char ch) {
  if (memviz_take(c, ch)) return 0;
  if (c->p >= c->end) return memviz_fail(c, "expected '%c', found the end", ch);
  return memviz_fail(c, "expected '%c', found '%c'", ch, *c->p);
}

static int memviz_hex4(memviz_cursor_t* c, unsigned* out) {
  if (c->end - c->p < 4) return memviz_fail(c, "short \\u escape");
  unsigned v = 0;
  for (int i = 0; i < 4; i++) {
    char h = *c->p++;
    v <<= 4;
    if (h >= '0' && h <= '9') {
      v |= (unsigned)(h - '0');
    } else if (h >= 'a' && h <= 'f') {
      v |= (unsigned)(h - 'a' + 10);
    } else if (h >= 'A' && h <= 'F') {
      v |= (unsigned)(h - 'A' + 10);
    } else {
      return memviz_fail(c, "bad \\u escape");
    }
  }
  *out = v;
  return 0;
}

// Appends byte `b` to `buf` (of `size`, used `*n`), dropping what does not
// fit (the NUL always does).
static void memviz_put(char* buf, size_t size, size_t* n, unsigned char b) {
  if (buf != NULL && *n + 1 < size) buf[*n] = (char)b;
  (*n)++;
}

// Reads a string into `buf` (NULL: skips it), cut to `size` - 1 bytes.
static int memviz_string(memviz_cursor_t* c, char* buf, size_t size) {
  if (memviz_expect(c, '"') != 0) return -1;
  size_t n = 0;
  for (;;) {
    if (c->p >= c->end) return memviz_fail(c, "unterminated string");
    unsigned char ch = (unsigned char)*c->p++;
    if (ch == '"') break;
    if (ch < 0x20) return memviz_fail(c, "control character in a string");
    if (ch != '\\') {
      memviz_put(buf, size, &n, ch);
      continue;
    }
    if (c->p >= c->end) return memviz_fail(c, "unterminated string");
    char e = *c->p++;
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char* at = e != '\0' ? strchr(from, e) : NULL;
    if (at != NULL) {
      memviz_put(buf, size, &n, (unsigned char)to[at - from]);
      continue;
    }
    if (e != 'u') return memviz_fail(c, "bad escape '\\%c'", e);
    unsigned u = 0;
    if (memviz_hex4(c, &u) != 0) return -1;
    if (u >= 0xd800 && u <= 0xdbff) {  // a surrogate pair
      unsigned lo = 0;
      if (c->end - c->p < 2 || c->p[0] != '\\' || c->p[1] != 'u') {
        return memviz_fail(c, "lone surrogate");
      }
      c->p += 2;
      if (memviz_hex4(c, &lo) != 0) return -1;
      if (lo < 0xdc00 || lo > 0xdfff) return memviz_fail(c, "bad surrogate");
      u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
    }
    // UTF-8.
    if (u < 0x80) {
      memviz_put(buf, size, &n, (unsigned char)u);
    } else if (u < 0x800) {
      memviz_put(buf, size, &n, (unsigned char)(0xc0 | (u >> 6)));
      memviz_put(buf, size, &n, (unsigned char)(0x80 | (u & 0x3f)));
    } else if (u < 0x10000) {
      memviz_put(buf, size, &n, (unsigned char)(0xe0 | (u >> 12)));
      memviz_put(buf, size, &n, (unsigned char)(0x80 | ((u >> 6) & 0x3f)));
      memviz_put(buf, size, &n, (unsigned char)(0x80 | (u & 0x3f)));
    } else {
      memviz_put(buf, size, &n, (unsigned char)(0xf0 | (u >> 18)));
      memviz_put(buf, size, &n, (unsigned char)(0x80 | ((u >> 12) & 0x3f)));
      memviz_put(buf, size, &n, (unsigned char)(0x80 | ((u >> 6) & 0x3f)));
      memviz_put(buf, size, &n, (unsigned char)(0x80 | (u & 0x3f)));
    }
  }
  if (buf != NULL && size > 0) buf[n < size ? n : size - 1] = '\0';
  return 0;
}

// Reads a number; `*out_whole` gets it when it is a whole number that
// fits 64 bits (digits only), and `*is_whole` says whether it was.
static int memviz_number(memviz_cursor_t* c, uint64_t* out_whole,
                         bool* is_whole) {
  memviz_ws(c);
  const char* p = c->p;
  bool whole = true, overflow = false;
  uint64_t v = 0;
  if (p < c->end && *p == '-') {
    whole = false;
    p++;
  }
  if (p >= c->end || *p < '0' || *p > '9') {
    return memviz_fail(c, "expected a value");
  }
  if (*p == '0' && p + 1 < c->end && p[1] >= '0' && p[1] <= '9') {
    return memviz_fail(c, "leading zero");
  }
  while (p < c->end && *p >= '0' && *p <= '9') {
    unsigned d = (unsigned)(*p++ - '0');
    if (v > (UINT64_MAX - d) / 10) overflow = true;
    v = v * 10 + d;
  }
  if (p < c->end && *p == '.') {
    whole = false;
    p++;
    if (p >= c->end || *p < '0' || *p > '9') {
      c->p = p;
      return memviz_fail(c, "digits expected after '.'");
    }
    while (p < c->end && *p >= '0' && *p <= '9') p++;
  }
  if (p < c->end && (*p == 'e' || *p == 'E')) {
    whole = false;
    p++;
    if (p < c->end && (*p == '+' || *p == '-')) p++;
    if (p >= c->end || *p < '0' || *p > '9') {
      c->p = p;
      return memviz_fail(c, "digits expected in an exponent");
    }
    while (p < c->end && *p >= '0' && *p <= '9') p++;
  }
  c->p = p;
  *is_whole = whole && !overflow;
  *out_whole = v;
  return 0;
}

static int memviz_literal(memviz_cursor_t* c, const char* word) {
  size_t n = strlen(word);
  if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) {
    return memviz_fail(c, "expected a value");
  }
  c->p += n;
  return 0;
}

static int memviz_skip(memviz_cursor_t* c);

// Walks an array or object, calling `member` (objects: after the key is
// read into `key`) for each element. `member` must consume the value.
typedef int (*memviz_member_fn)(memviz_cursor_t* c, const char* key,
                                size_t index, void* ctx);

static int memviz_container(memviz_cursor_t* c, bool object,
                            memviz_member_fn member, void* ctx) {
  if (memviz_expect(c, object ? '{' : '[') != 0) return -1;
  if (++c->depth > MEMVIZ_MAX_DEPTH) return memviz_fail(c, "nested too deep");
  char close = object ? '}' : ']';
  if (memviz_take(c, close)) {
    c->depth--;
    return 0;
  }
  for (size_t index = 0;; index++) {
    char key[64] = "";
    if (object) {
      if (memviz_string(c, key, sizeof(key)) != 0) return -1;
      if (memviz_expect(c, ':') != 0) return -1;
    }
    if (member(c, key, index, ctx) != 0) return -1;
    if (memviz_take(c, ',')) continue;
    if (memviz_expect(c, close) != 0) return -1;
    break;
  }
  c->depth--;
  return 0;
}

static int memviz_skip_member(memviz_cursor_t* c, const char* key, size_t index,
                              void* ctx) {
  (void)key, (void)index, (void)ctx;
  return memviz_skip(c);
}

static int memviz_skip(memviz_cursor_t* c) {
  memviz_ws(c);
  if (c->p >= c->end) return memviz_fail(c, "expected a value");
  switch (*c->p) {
    case '{':
      return memviz_container(c, true, memviz_skip_member, NULL);
    case '[':
      return memviz_container(c, false, memviz_skip_member, NULL);
    case '"':
      return memviz_string(c, NULL, 0);
    case 't':
      return memviz_literal(c, "true");
    case 'f':
      return memviz_literal(c, "false");
    case 'n':
      return memviz_literal(c, "null");
    default: {
      uint64_t v = 0;
      bool whole = false;
      return memviz_number(c, &v, &whole);
    }
  }
}

// A member that must be a whole number of bytes.
static int memviz_uint(memviz_cursor_t* c, const char* key, uint64_t* out) {
  bool whole = false;
  if (memviz_number(c, out, &whole) != 0) return -1;
  if (!whole) return memviz_fail(c, "\"%s\" is not a whole number", key);
  return 0;
}

// A member that is a string or null ("" then).
static int memviz_text(memviz_cursor_t* c, const char* key, char* buf,
                       size_t size) {
  memviz_ws(c);
  if (c->p < c->end && *c->p == 'n') {
    buf[0] = '\0';
    return memviz_literal(c, "null");
  }
  if (c->p >= c->end || *c->p != '"') {
    return memviz_fail(c, "\"%s\" is not a string", key);
  }
  return memviz_string(c, buf, size);
}

static int memviz_block_member(memviz_cursor_t* c, const char* key,
                               size_t index, void* ctx) {
  (void)index;
  memviz_block_t* b = ctx;
  if (strcmp(key, "offset") == 0) return memviz_uint(c, key, &b->offset);
  if (strcmp(key, "size") == 0) return memviz_uint(c, key, &b->size);
  if (strcmp(key, "requested") == 0) return memviz_uint(c, key, &b->requested);
  if (strcmp(key, "state") == 0) {
    return memviz_text(c, key, b->state, sizeof(b->state));
  }
  if (strcmp(key, "stream") == 0) {
    return memviz_text(c, key, b->stream, sizeof(b->stream));
  }
  return memviz_skip(c);
}

// Grows `*array` (of `*count` items of `item` bytes) by one zeroed item.
static void* memviz_grow(memviz_cursor_t* c, void** array, size_t* count,
                         size_t item) {
  void* grown = realloc(*array, (*count + 1) * item);
  if (grown == NULL) {
    memviz_fail(c, "out of memory");
    return NULL;
  }
  *array = grown;
  void* at = (char*)grown + *count * item;
  memset(at, 0, item);
  (*count)++;
  return at;
}

static int memviz_block_element(memviz_cursor_t* c, const char* key,
                                size_t index, void* ctx) {
  (void)key, (void)index;
  memviz_segment_t* s = ctx;
  memviz_block_t* b =
      memviz_grow(c, (void**)&s->blocks, &s->block_count, sizeof(*b));
  if (b == NULL) return -1;
  return memviz_container(c, true, memviz_block_member, b);
}

static int memviz_segment_member(memviz_cursor_t* c, const char* key,
                                 size_t index, void* ctx) {
  (void)index;
  memviz_segment_t* s = ctx;
  if (strcmp(key, "size") == 0) return memviz_uint(c, key, &s->size);
  if (strcmp(key, "kind") == 0) {
    return memviz_text(c, key, s->kind, sizeof(s->kind));
  }
  if (strcmp(key, "stream") == 0) {
    return memviz_text(c, key, s->stream, sizeof(s->stream));
  }
  if (strcmp(key, "blocks") == 0) {
    return memviz_container(c, false, memviz_block_element, s);
  }
  return memviz_skip(c);
}

static int memviz_segment_element(memviz_cursor_t* c, const char* key,
                                  size_t index, void* ctx) {
  (void)key, (void)index;
  memviz_snapshot_t* snap = ctx;
  memviz_segment_t* s =
      memviz_grow(c, (void**)&snap->segments, &snap->segment_count, sizeof(*s));
  if (s == NULL) return -1;
  return memviz_container(c, true, memviz_segment_member, s);
}

typedef struct memviz_top {
  memviz_snapshot_t* snap;
  bool has_segments;
} memviz_top_t;

static int memviz_top_member(memviz_cursor_t* c, const char* key, size_t index,
                             void* ctx) {
  (void)index;
  memviz_top_t* top = ctx;
  if (strcmp(key, "device") == 0) {
    return memviz_text(c, key, top->snap->device, sizeof(top->snap->device));
  }
  if (strcmp(key, "segments") == 0) {
    top->has_segments = true;
    return memviz_container(c, false, memviz_segment_element, top->snap);
  }
  return memviz_skip(c);
}

int memviz_parse(const char* text, size_t size, memviz_snapshot_t* out,
                 char* error, size_t error_size) {
  memset(out, 0, sizeof(*out));
  error[0] = '\0';
  memviz_cursor_t c = {.start = text,
                       .p = text,
                       .end = text + size,
                       .error = error,
                       .error_size = error_size};
  memviz_top_t top = {.snap = out, .has_segments = false};
  memviz_ws(&c);
  if (c.p >= c.end || *c.p != '{') {
    memviz_fail(&c, "not a snapshot: expected a JSON object");
  } else if (memviz_container(&c, true, memviz_top_member, &top) == 0) {
    memviz_ws(&c);
    if (c.p != c.end) {
      memviz_fail(&c, "text after the JSON value");
    } else if (!top.has_segments) {
      memviz_fail(&c, "not a snapshot: no \"segments\" member");
    }
  }
  if (c.failed) {
    memviz_free(out);
    return -1;
  }
  return 0;
}

void memviz_free(memviz_snapshot_t* snapshot) {
  for (size_t i = 0; i < snapshot->segment_count; i++) {
    free(snapshot->segments[i].blocks);
  }
  free(snapshot->segments);
  memset(snapshot, 0, sizeof(*snapshot));
}
