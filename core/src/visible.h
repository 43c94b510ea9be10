// SPDX-License-Identifier: MIT
//
// ACCEL_VISIBLE_DEVICES: the parsed form and its pure parser, kept apart
// from the library state so that tests and fuzzers can drive the parser
// on its own (visible_parse.c has no other dependency).
#ifndef ACCEL_CORE_VISIBLE_H_
#define ACCEL_CORE_VISIBLE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ACCEL__VISIBLE_MAX 64  // entries in one value

typedef enum accel__visible_kind {
  ACCEL__VISIBLE_BACKEND = 0,  // "cuda": every device of the backend
  ACCEL__VISIBLE_INDEX = 1,    // "cuda:1": the plugin's own index
  ACCEL__VISIBLE_UUID = 2,     // "GPU-<uuid>" or 32 hex digits
  ACCEL__VISIBLE_PCI = 3,      // "0000:3b:00.0" or "3b:00.0"
} accel__visible_kind_t;

typedef struct accel__visible_entry {
  accel__visible_kind_t kind;
  bool exclude;     // written with a leading '-'
  char backend[32];  // BACKEND and INDEX
  uint32_t index;    // INDEX
  uint8_t uuid[16];  // UUID
  uint32_t pci[4];   // PCI: domain, bus, device, function
  char text[48];     // the entry as written (truncated), for messages
} accel__visible_entry_t;

typedef struct accel__visible {
  size_t count;  // 0: no filtering
  accel__visible_entry_t entries[ACCEL__VISIBLE_MAX];
} accel__visible_t;

// Parses `text` (NULL or blank: no entries) into `*out`. On a malformed
// value returns false and writes a message naming the bad entry to `err`
// (`err_size` > 0). Never reads past the terminating NUL of `text`.
bool accel__visible_parse(const char* text, accel__visible_t* out, char* err,
                          size_t err_size);

// Parses a device name of `n` bytes: "name" or "name:index", the name 1
// to 31 characters of [a-z0-9_] (written NUL-terminated to `name`), the
// index a decimal uint32_t. Returns false if malformed. Shared with
// ACCEL_BACKEND parsing (select.c).
bool accel__device_name_parse(const char* s, size_t n, char name[32],
                              bool* out_has_index, uint32_t* out_index);

// Parses a PCI bus id ("0000:3b:00.0", "3b:00.0", any case) of `n` bytes
// into domain, bus, device and function. Returns false if malformed.
bool accel__pci_parse(const char* text, size_t n, uint32_t out[4]);

#endif  // ACCEL_CORE_VISIBLE_H_
