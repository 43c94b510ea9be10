// SPDX-License-Identifier: MIT
//
// <accel/interop.h> compiles on its own: it comes first, and this target
// sees only libaccel's include directory.
#include <accel/interop.h>

// Uses every type the header adds, so a missing definition fails the
// build.
size_t abi_interop_h_use_all(void);
size_t abi_interop_h_use_all(void) {
  accel_native_kind_t kind = ACCEL_NATIVE_CONTEXT;
  return (size_t)kind + (size_t)ACCEL_NATIVE_DEVICE;
}
