// SPDX-License-Identifier: MIT
//
// ACCEL_LOG handling: discovery decisions and warnings go to stderr only
// when the user asks, in release builds too.
#define _GNU_SOURCE  // secure_getenv
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

// -1: not read yet. Otherwise the highest level printed (ERROR..DEBUG), or
// -2 for "nothing". Racy first reads are harmless: every thread computes
// the same value.
static atomic_int accel__log_level = -1;

const char* accel__getenv(const char* name) {
#if defined(__GLIBC__)
  return secure_getenv(name);
#else
  return getenv(name);
#endif
}

static int accel__log_parse(const char* value) {
  static const char* const names[] = {"error", "warn", "info", "debug"};
  if (value == NULL || value[0] == '\0') return -2;
  for (int i = 0; i < 4; i++) {
    if (strcmp(value, names[i]) == 0) return i;
  }
  if (strcmp(value, "warning") == 0) return ACCEL_LOG_WARN;
  if (strcmp(value, "off") == 0 || strcmp(value, "none") == 0) return -2;
  fprintf(stderr,
          "accel[warn]: ignoring ACCEL_LOG='%s'; expected error, warn, info "
          "or debug\n",
          value);
  return ACCEL_LOG_WARN;
}

void accel__log_configure(void) {
  atomic_store(&accel__log_level, accel__log_parse(accel__getenv("ACCEL_LOG")));
}

bool accel__log_enabled(accel_log_level_t level) {
  int current = atomic_load(&accel__log_level);
  if (current == -1) {
    accel__log_configure();
    current = atomic_load(&accel__log_level);
  }
  return current >= 0 && (int)level <= current;
}

void accel__vlog(accel_log_level_t level, const char* tag, const char* format,
                 va_list args) {
  static const char* const names[] = {"error", "warn", "info", "debug"};
  if (!accel__log_enabled(level)) return;
  // One fprintf per line keeps lines from different threads whole.
  char line[1200];
  vsnprintf(line, sizeof(line), format, args);
  const char* name = (unsigned)level < 4 ? names[level] : "log";
  if (tag != NULL) {
    fprintf(stderr, "accel[%s] %s: %s\n", name, tag, line);
  } else {
    fprintf(stderr, "accel[%s]: %s\n", name, line);
  }
}

void accel__log(accel_log_level_t level, const char* format, ...) {
  va_list args;
  va_start(args, format);
  accel__vlog(level, NULL, format, args);
  va_end(args);
}
