// SPDX-License-Identifier: MIT
//
// Known failures: a file a plugin ships listing checks it is known to fail,
// each with a reason, so the suite still gates everything else.
//
//   # comment
//   <check name or glob>   <reason, the rest of the line>
//
// A listed check that fails is reported XFAIL (not a failure); one that
// passes is reported XPASS ("unexpectedly passed") and counts as a
// failure, so the list cannot go stale. An entry without a reason, or a
// line too long, makes the file invalid (accel-conform exits 2).
#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

bool conform_known_load(const char* path, conform_known_t* known, char* error,
                        size_t error_size) {
  memset(known, 0, sizeof(*known));
  FILE* file = fopen(path, "r");
  if (file == NULL) {
    snprintf(error, error_size, "%s: cannot open", path);
    return false;
  }
  char line[512];
  int number = 0;
  bool ok = true;
  while (ok && fgets(line, sizeof(line), file) != NULL) {
    number++;
    size_t len = strlen(line);
    if (len == sizeof(line) - 1 && line[len - 1] != '\n') {
      snprintf(error, error_size, "%s:%d: line too long", path, number);
      ok = false;
      break;
    }
    while (len > 0 && isspace((unsigned char)line[len - 1])) line[--len] = '\0';
    char* p = line;
    while (isspace((unsigned char)*p)) p++;
    if (*p == '\0' || *p == '#') continue;
    char* name = p;
    while (*p != '\0' && !isspace((unsigned char)*p)) p++;
    if (*p != '\0') *p++ = '\0';
    while (isspace((unsigned char)*p)) p++;
    if (*p == '\0') {
      snprintf(error, error_size, "%s:%d: '%s' has no reason", path, number,
               name);
      ok = false;
    } else if (known->count == CONFORM_MAX_KNOWN) {
      snprintf(error, error_size, "%s:%d: more than %d entries", path, number,
               CONFORM_MAX_KNOWN);
      ok = false;
    } else {
      conform_known_entry_t* e = &known->entries[known->count++];
      snprintf(e->pattern, sizeof(e->pattern), "%s", name);
      snprintf(e->reason, sizeof(e->reason), "%s", p);
    }
  }
  fclose(file);
  snprintf(known->path, sizeof(known->path), "%s", path);
  return ok;
}

const char* conform_known_reason(const conform_known_t* known,
                                 const char* name) {
  for (size_t i = 0; i < known->count; i++) {
    const conform_known_entry_t* e = &known->entries[i];
    if (strcmp(e->pattern, name) == 0 || fnmatch(e->pattern, name, 0) == 0) {
      return e->reason;
    }
  }
  return NULL;
}

void conform_known_default_path(const char* plugin_path, char* out,
                                size_t size) {
  snprintf(out, size, "%s", plugin_path);
  char* slash = strrchr(out, '/');
  char* dot = strrchr(out, '.');
  if (dot != NULL && (slash == NULL || dot > slash)) *dot = '\0';
  size_t len = strlen(out);
  snprintf(out + len, size - len, ".conform-known");
}
