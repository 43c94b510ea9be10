// SPDX-License-Identifier: MIT
//
// <accel/plugin_dtype.h> compiles on its own: it comes first, and this
// target sees only the SDK include directory (not libaccel's), as a
// third-party plugin build does.
#include <accel/plugin_dtype.h>

// Uses every function the header promises, so a missing definition fails
// the build.
float abi_plugin_dtype_h_use_all(void);
float abi_plugin_dtype_h_use_all(void) {
  return accel_plugin_f16_to_f32(accel_plugin_f32_to_f16(1.0f)) +
         accel_plugin_bf16_to_f32(accel_plugin_f32_to_bf16(1.0f)) +
         (float)accel_plugin_f64_to_i32_sat(1.0) +
         accel_plugin_f16_to_f32(accel_plugin_f64_to_f16(1.0)) +
         accel_plugin_bf16_to_f32(accel_plugin_f64_to_bf16(1.0)) +
         (float)accel_plugin_f64_to_f32_odd_bits(1.0) +
         (float)accel_plugin_dtype_size(0);
}
