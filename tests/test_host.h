// SPDX-License-Identifier: MIT
//
// A minimal host table (<accel/plugin.h>) for tests that drive a plugin
// through its entry point without libaccel, as an older or foreign core
// would: fail() keeps the formatted message in test_host_message (per
// thread) and returns the status, log() drops everything, getenv() is the
// process environment. Header-only: every definition is static.
#ifndef ACCEL_TESTS_TEST_HOST_H_
#define ACCEL_TESTS_TEST_HOST_H_

#include <accel/plugin.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

// What test_host_fail() recorded last on this thread.
static _Thread_local char test_host_message[1024];

static accel_status_t test_host_fail(const accel_host_t* host,
                                     accel_status_t status, const char* format,
                                     ...) {
  (void)host;
  va_list ap;
  va_start(ap, format);
  vsnprintf(test_host_message, sizeof(test_host_message), format, ap);
  va_end(ap);
  return status;
}

static void test_host_log(const accel_host_t* host, accel_log_level_t level,
                          const char* format, ...) {
  (void)host, (void)level, (void)format;
}

static const char* test_host_getenv(const accel_host_t* host,
                                    const char* name) {
  (void)host;
  return getenv(name);
}

static const accel_host_t test_host = {
    .struct_size = sizeof(accel_host_t),
    .abi_version = ACCEL_PLUGIN_ABI_VERSION,
    .fail = test_host_fail,
    .log = test_host_log,
    .getenv = test_host_getenv,
};

#endif  // ACCEL_TESTS_TEST_HOST_H_
