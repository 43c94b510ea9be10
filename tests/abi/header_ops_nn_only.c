// SPDX-License-Identifier: MIT
//
// <accel/ops_nn.h> compiles on its own: it comes first (it includes
// <accel/accel.h>, which includes it back at its end), and this target
// sees only libaccel's include directory.
#include <accel/ops_nn.h>

// Uses every type and function the header promises, so a missing
// declaration fails the build.
size_t abi_ops_nn_h_use_all(void);
size_t abi_ops_nn_h_use_all(void) {
  accel_activation_t act = ACCEL_ACTIVATION_SILU;
  const char* (*name)(accel_activation_t) = accel_activation_name;
  accel_status_t (*activation)(accel_stream_t*, accel_buffer_t*, size_t,
                               accel_buffer_t*, size_t, accel_dtype_t, size_t,
                               accel_activation_t) = accel_op_activation;
  accel_status_t (*bias)(accel_stream_t*, accel_buffer_t*, size_t,
                         accel_buffer_t*, size_t, accel_dtype_t, size_t,
                         size_t) = accel_op_bias_add;
  accel_status_t (*batched)(accel_stream_t*, const accel_gemm_t*, size_t,
                            size_t, size_t, size_t) =
      accel_op_gemm_strided_batched;
  return (size_t)act + (name != NULL) + (activation != NULL) + (bias != NULL) +
         (batched != NULL) + sizeof(accel_gemm_t);
}
