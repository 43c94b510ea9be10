// SPDX-License-Identifier: MIT
//
// Element types for the op checks: sizes, names, and exact conversions
// between the stored formats and double. The conversions are the SDK's
// (<accel/plugin_dtype.h>), which define the ABI's rounding rules; the
// host reference never calls into the plugin under test.
#include <accel/plugin_dtype.h>

#include "conform.h"

double conform_load(const void* p, accel_dtype_t dtype, size_t i) {
  switch (dtype) {
    case ACCEL_DTYPE_F32:
      return ((const float*)p)[i];
    case ACCEL_DTYPE_F16:
      return accel_plugin_f16_to_f32(((const uint16_t*)p)[i]);
    case ACCEL_DTYPE_BF16:
      return accel_plugin_bf16_to_f32(((const uint16_t*)p)[i]);
    default:
      return ((const int32_t*)p)[i];
  }
}

void conform_store(void* p, accel_dtype_t dtype, size_t i, double v) {
  switch (dtype) {
    case ACCEL_DTYPE_F32:
      ((float*)p)[i] = (float)v;
      break;
    case ACCEL_DTYPE_F16:
      ((uint16_t*)p)[i] = accel_plugin_f64_to_f16(v);
      break;
    case ACCEL_DTYPE_BF16:
      ((uint16_t*)p)[i] = accel_plugin_f64_to_bf16(v);
      break;
    default:
      ((int32_t*)p)[i] = accel_plugin_f64_to_i32_sat(v);
      break;
  }
}
