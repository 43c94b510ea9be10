// SPDX-License-Identifier: MIT
//
// Shared set-up of the fuzz targets that go through the public API.
#ifndef ACCEL_FUZZ_FUZZ_COMMON_H_
#define ACCEL_FUZZ_FUZZ_COMMON_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

// libFuzzer's entry points (the optional set-up, and one input).
int LLVMFuzzerInitialize(int* argc, char*** argv);
int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

// Makes the fuzz fixture plugin (FUZZ_PLUGIN, set by fuzz/CMakeLists.txt)
// the only plugin the core finds besides its install dir, which a fuzz
// build leaves empty, and logs errors only unless ACCEL_LOG says otherwise.
// Call before any accel call.
static inline void fuzz_use_fixture_plugin(void) {
  if (setenv("ACCEL_PLUGIN_PATH", FUZZ_PLUGIN, 1) != 0 ||
      setenv("ACCEL_LOG", "error", 0) != 0) {
    perror("fuzz: setenv");
    exit(1);
  }
  unsetenv("ACCEL_BACKEND");
}

#endif  // ACCEL_FUZZ_FUZZ_COMMON_H_
