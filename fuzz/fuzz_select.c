// SPDX-License-Identifier: MIT
//
// libFuzzer target: device names and ACCEL_BACKEND lists (core/src/select.c)
// through the public API, accel_device_select() and accel_device_open(),
// with the fuzz fixture plugin as the only plugin ("fuzzfx", three
// devices). Any input must give a device or an error with a message, and
// never crash.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <accel/accel.h>

#include "fuzz_common.h"

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  fuzz_use_fixture_plugin();
  return 0;
}

// Opening must either give a device or fail with a message.
static void fuzz_check(accel_status_t status, accel_device_t* device) {
  if (status == ACCEL_OK) {
    if (device == NULL) abort();
    accel_device_release(device);
  } else if (device != NULL || accel_last_error()[0] == '\0') {
    abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char* spec = malloc(size + 1);
  if (spec == NULL) return 0;
  memcpy(spec, data, size);
  spec[size] = '\0';
  accel_device_t* device = NULL;
  fuzz_check(accel_device_select(spec, &device), device);
  device = NULL;
  fuzz_check(accel_device_open(spec, &device), device);
  free(spec);
  return 0;
}
