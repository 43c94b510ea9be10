// SPDX-License-Identifier: MIT
//
// libFuzzer target: the ACCEL_VISIBLE_DEVICES parser
// (core/src/visible_parse.c, a pure function, compiled in). Any input must
// either parse into at most ACCEL__VISIBLE_MAX well-formed entries or fail
// with a message, and never read past the string.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "visible.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char* text = malloc(size + 1);
  if (text == NULL) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  static accel__visible_t parsed;
  char err[256];
  err[0] = '\0';
  bool ok = accel__visible_parse(text, &parsed, err, sizeof(err));
  free(text);
  if (!ok) {
    if (err[0] == '\0' || strlen(err) >= sizeof(err)) abort();
    return 0;
  }
  if (parsed.count > ACCEL__VISIBLE_MAX) abort();
  for (size_t i = 0; i < parsed.count; i++) {
    const accel__visible_entry_t* e = &parsed.entries[i];
    if (e->kind > ACCEL__VISIBLE_PCI ||
        strnlen(e->backend, sizeof(e->backend)) >= sizeof(e->backend) ||
        strnlen(e->text, sizeof(e->text)) >= sizeof(e->text)) {
      abort();
    }
    if (e->kind == ACCEL__VISIBLE_PCI && (e->pci[2] > 0x1f || e->pci[3] > 7)) {
      abort();
    }
  }
  return 0;
}
