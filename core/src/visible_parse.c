// SPDX-License-Identifier: MIT
//
// The ACCEL_VISIBLE_DEVICES parser: a pure function from a string to a
// list of entries or an error naming the bad entry. Untrusted input: every
// read is bounded by the entry's length.
#include <stdio.h>
#include <string.h>

#include "visible.h"

static int accel__hex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// Reads 1 to `max` hex digits of `s[*i..n)` into `*out`.
static bool accel__hex_field(const char* s, size_t n, size_t* i, size_t max,
                             uint32_t* out) {
  uint32_t v = 0;
  size_t digits = 0;
  while (*i < n && accel__hex(s[*i]) >= 0) {
    if (++digits > max) return false;
    v = v * 16u + (uint32_t)accel__hex(s[(*i)++]);
  }
  *out = v;
  return digits > 0;
}

bool accel__pci_parse(const char* s, size_t n, uint32_t out[4]) {
  uint32_t f[4] = {0, 0, 0, 0};
  size_t colons = 0;
  for (size_t i = 0; i < n; i++) colons += s[i] == ':';
  if (colons != 1 && colons != 2) return false;
  size_t i = 0;
  if (colons == 2) {
    if (!accel__hex_field(s, n, &i, 8, &f[0]) || i >= n || s[i++] != ':') {
      return false;
    }
  }
  if (!accel__hex_field(s, n, &i, 2, &f[1]) || i >= n || s[i++] != ':') {
    return false;
  }
  if (!accel__hex_field(s, n, &i, 2, &f[2]) || i >= n || s[i++] != '.') {
    return false;
  }
  if (!accel__hex_field(s, n, &i, 1, &f[3]) || i != n) return false;
  if (f[2] > 0x1f || f[3] > 7) return false;
  memcpy(out, f, sizeof(f));
  return true;
}

// 32 hex digits, dashes allowed between them, after an optional "GPU-".
static bool accel__uuid_parse(const char* s, size_t n, uint8_t out[16]) {
  size_t i = 0;
  if (n >= 4 && memcmp(s, "GPU-", 4) == 0) i = 4;
  size_t digits = 0;
  uint8_t bytes[16];
  for (; i < n; i++) {
    if (s[i] == '-') continue;
    int h = accel__hex(s[i]);
    if (h < 0 || digits == 32) return false;
    if (digits % 2 == 0) {
      bytes[digits / 2] = (uint8_t)(h << 4);
    } else {
      bytes[digits / 2] |= (uint8_t)h;
    }
    digits++;
  }
  if (digits != 32) return false;
  memcpy(out, bytes, sizeof(bytes));
  return true;
}

bool accel__device_name_parse(const char* s, size_t n, char name[32],
                              bool* out_has_index, uint32_t* out_index) {
  *out_has_index = false;
  *out_index = 0;
  size_t i = 0;
  while (i < n && ((s[i] >= 'a' && s[i] <= 'z') ||
                   (s[i] >= '0' && s[i] <= '9') || s[i] == '_')) {
    i++;
  }
  if (i == 0 || i > 31) return false;
  memcpy(name, s, i);
  name[i] = '\0';
  if (i == n) return true;
  if (s[i] != ':' || i + 1 == n || n - i - 1 > 10) return false;
  uint64_t v = 0;
  for (size_t j = i + 1; j < n; j++) {
    if (s[j] < '0' || s[j] > '9') return false;
    v = v * 10u + (uint64_t)(s[j] - '0');
  }
  if (v > UINT32_MAX) return false;
  *out_has_index = true;
  *out_index = (uint32_t)v;
  return true;
}

static bool accel__backend_parse(const char* s, size_t n,
                                 accel__visible_entry_t* e) {
  bool has_index = false;
  if (!accel__device_name_parse(s, n, e->backend, &has_index, &e->index)) {
    return false;
  }
  e->kind = has_index ? ACCEL__VISIBLE_INDEX : ACCEL__VISIBLE_BACKEND;
  return true;
}

static bool accel__entry_parse(const char* s, size_t n,
                               accel__visible_entry_t* e) {
  memset(e, 0, sizeof(*e));
  snprintf(e->text, sizeof(e->text), "%.*s", (int)n, s);
  if (n > 0 && s[0] == '-') {
    e->exclude = true;
    s++, n--;
  }
  if (n == 0) return false;
  // Order matters: "0000:01:00.0" starts like a backend named "0000".
  if (accel__backend_parse(s, n, e)) return true;
  if (accel__pci_parse(s, n, e->pci)) {
    e->kind = ACCEL__VISIBLE_PCI;
    return true;
  }
  if (accel__uuid_parse(s, n, e->uuid)) {
    e->kind = ACCEL__VISIBLE_UUID;
    return true;
  }
  return false;
}

bool accel__visible_parse(const char* text, accel__visible_t* out, char* err,
                          size_t err_size) {
  out->count = 0;
  err[0] = '\0';
  if (text == NULL) return true;
  bool blank = true;
  for (const char* c = text; *c != '\0'; c++) {
    if (*c != ' ' && *c != '\t') blank = false;
  }
  if (blank) return true;
  for (const char* p = text;;) {
    const char* end = strchr(p, ',');
    size_t n = end != NULL ? (size_t)(end - p) : strlen(p);
    const char* s = p;
    while (n > 0 && (*s == ' ' || *s == '\t')) s++, n--;
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    if (out->count == ACCEL__VISIBLE_MAX) {
      snprintf(err, err_size, "more than %d entries", ACCEL__VISIBLE_MAX);
      return false;
    }
    if (!accel__entry_parse(s, n, &out->entries[out->count])) {
      snprintf(err, err_size,
               "malformed entry '%.*s' (entry %zu); expected backend, "
               "backend:index, a UUID (GPU-... or 32 hex digits) or a PCI "
               "bus id (0000:3b:00.0), optionally after '-' to exclude",
               (int)(n < 48 ? n : 48), s, out->count + 1);
      out->count = 0;
      return false;
    }
    out->count++;
    if (end == NULL) return true;
    p = end + 1;
  }
}
