// SPDX-License-Identifier: MIT
//
// ACCEL_LOG handling: discovery decisions and warnings go to stderr only
// when the user asks, in release builds too, or to the application's own
// logger through accel_log_set_callback().
#define _GNU_SOURCE  // secure_getenv
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

// -1: not read yet. Otherwise the highest level printed (ERROR..DEBUG), or
// -2 for "nothing". Racy first reads are harmless: every thread computes
// the same value.
static atomic_int accel__log_level = -1;
// Set by accel_log_set_level(): ACCEL_LOG is no longer read.
static atomic_bool accel__log_level_forced = false;

// The application's logger. Calls hold the read lock, so once
// accel_log_set_callback() returns no thread still runs the old one.
static pthread_rwlock_t accel__log_lock = PTHREAD_RWLOCK_INITIALIZER;
static accel_log_fn_t accel__log_fn = NULL;
static void* accel__log_user_data = NULL;

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
  if (atomic_load(&accel__log_level_forced)) return;
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
  pthread_rwlock_rdlock(&accel__log_lock);
  accel_log_fn_t fn = accel__log_fn;
  if (fn != NULL) {
    fn(level, tag != NULL ? tag : "accel", line, accel__log_user_data);
    pthread_rwlock_unlock(&accel__log_lock);
    return;
  }
  pthread_rwlock_unlock(&accel__log_lock);
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

void accel_log_set_callback(accel_log_fn_t fn, void* user_data) {
  pthread_rwlock_wrlock(&accel__log_lock);
  accel__log_fn = fn;
  accel__log_user_data = fn != NULL ? user_data : NULL;
  pthread_rwlock_unlock(&accel__log_lock);
}

accel_status_t accel_log_set_level(int level) {
  if (level < -1 || level > (int)ACCEL_LOG_DEBUG) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_log_set_level: level %d is not -1 (nothing), "
                       "ACCEL_LOG_ERROR .. ACCEL_LOG_DEBUG",
                       level);
  }
  atomic_store(&accel__log_level_forced, true);
  atomic_store(&accel__log_level, level == -1 ? -2 : level);
  return ACCEL_OK;
}
