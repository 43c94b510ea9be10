// SPDX-License-Identifier: MIT
//
// <accel/comm.h> compiles on its own, included first: it brings in
// <accel/accel.h> itself, and <accel/accel.h> includes it back without
// harm.
#include <accel/comm.h>

// Uses the types and calls the header promises, so a missing declaration
// fails the build.
size_t abi_comm_h_use_all(void);
size_t abi_comm_h_use_all(void) {
  accel_comm_options_t options;
  accel_comm_options_init(&options);
  accel_comm_t* comm = NULL;
  accel_reduce_op_t op = ACCEL_REDUCE_MAX;
  accel_status_t (*group)(void) = accel_comm_group_start;
  return sizeof(options) + (comm == NULL) + (size_t)op + (group != NULL) +
         (options.device == NULL);
}
