// SPDX-License-Identifier: MIT
//
// Datatypes and reduction operators. f32 and i32 use MPI's own; MPI has no
// f16 or bf16, so both travel as a 2-byte contiguous type and reduce
// through user operations that combine each pair in f32 and round the
// result once to the 16-bit type (what NCCL does for each step), with the
// conversions of <accel/plugin_dtype.h>.
#include <accel/plugin_dtype.h>
#include <stdint.h>
#include <string.h>

#include "accel_mpi.h"

static float accel_mpi_combine(float a, float b, int op) {
  switch (op) {
    case ACCEL_COMM_ENGINE_OP_SUM:
      return a + b;
    case ACCEL_COMM_ENGINE_OP_PROD:
      return a * b;
    case ACCEL_COMM_ENGINE_OP_MIN:
      return b < a ? b : a;  // NaN in `a` is kept, as MPI_MIN's C `<` does
    default:
      return b > a ? b : a;
  }
}

// inout[i] = in[i] (op) inout[i] for `n` 16-bit values.
static void accel_mpi_half_apply(const void* in, void* inout, int n,
                                 bool bf16, int op) {
  const unsigned char* a = in;
  unsigned char* b = inout;
  for (int i = 0; i < n; i++) {
    uint16_t x, y;
    memcpy(&x, a + 2 * (size_t)i, 2);
    memcpy(&y, b + 2 * (size_t)i, 2);
    float fx = bf16 ? accel_plugin_bf16_to_f32(x) : accel_plugin_f16_to_f32(x);
    float fy = bf16 ? accel_plugin_bf16_to_f32(y) : accel_plugin_f16_to_f32(y);
    float r = accel_mpi_combine(fx, fy, op);
    uint16_t z = bf16 ? accel_plugin_f32_to_bf16(r) : accel_plugin_f32_to_f16(r);
    memcpy(b + 2 * (size_t)i, &z, 2);
  }
}

// One user function per (dtype, op), since MPI passes neither.
#define ACCEL_MPI_HALF_FN(name, bf16, op)                                \
  static void name(void* in, void* inout, int* len, MPI_Datatype* type) { \
    (void)type;                                                          \
    accel_mpi_half_apply(in, inout, *len, bf16, op);                     \
  }
ACCEL_MPI_HALF_FN(accel_mpi_f16_sum, false, ACCEL_COMM_ENGINE_OP_SUM)
ACCEL_MPI_HALF_FN(accel_mpi_f16_prod, false, ACCEL_COMM_ENGINE_OP_PROD)
ACCEL_MPI_HALF_FN(accel_mpi_f16_min, false, ACCEL_COMM_ENGINE_OP_MIN)
ACCEL_MPI_HALF_FN(accel_mpi_f16_max, false, ACCEL_COMM_ENGINE_OP_MAX)
ACCEL_MPI_HALF_FN(accel_mpi_bf16_sum, true, ACCEL_COMM_ENGINE_OP_SUM)
ACCEL_MPI_HALF_FN(accel_mpi_bf16_prod, true, ACCEL_COMM_ENGINE_OP_PROD)
ACCEL_MPI_HALF_FN(accel_mpi_bf16_min, true, ACCEL_COMM_ENGINE_OP_MIN)
ACCEL_MPI_HALF_FN(accel_mpi_bf16_max, true, ACCEL_COMM_ENGINE_OP_MAX)

static MPI_User_function* const accel_mpi_half_fns[2][4] = {
    {accel_mpi_f16_sum, accel_mpi_f16_prod, accel_mpi_f16_min,
     accel_mpi_f16_max},
    {accel_mpi_bf16_sum, accel_mpi_bf16_prod, accel_mpi_bf16_min,
     accel_mpi_bf16_max},
};

int accel_mpi_half_ops_create(accel_mpi_engine_t* e) {
  int rc = e->mpi.MPI_Type_contiguous(2, e->mpi.type_byte, &e->mpi.type_half);
  if (rc == MPI_SUCCESS) rc = e->mpi.MPI_Type_commit(&e->mpi.type_half);
  for (int t = 0; t < 2 && rc == MPI_SUCCESS; t++) {
    for (int op = 0; op < 4 && rc == MPI_SUCCESS; op++) {
      rc = e->mpi.MPI_Op_create(accel_mpi_half_fns[t][op], 1,
                                &e->mpi.half_ops[t][op]);
    }
  }
  return rc;
}

void accel_mpi_half_ops_free(accel_mpi_engine_t* e) {
  for (int t = 0; t < 2; t++) {
    for (int op = 0; op < 4; op++) e->mpi.MPI_Op_free(&e->mpi.half_ops[t][op]);
  }
  e->mpi.MPI_Type_free(&e->mpi.type_half);
}

MPI_Datatype accel_mpi_type(accel_mpi_engine_t* e, uint32_t dtype) {
  switch (dtype) {
    case ACCEL_DTYPE_F32:
      return e->mpi.type_float;
    case ACCEL_DTYPE_I32:
      return e->mpi.type_int32;
    default:
      return e->mpi.type_half;  // F16, BF16 (the core checked the dtype)
  }
}

MPI_Op accel_mpi_op(accel_mpi_engine_t* e, uint32_t dtype, uint32_t op) {
  if (dtype == ACCEL_DTYPE_F16 || dtype == ACCEL_DTYPE_BF16) {
    return e->mpi.half_ops[dtype == ACCEL_DTYPE_BF16][op & 3];
  }
  switch (op) {
    case ACCEL_COMM_ENGINE_OP_SUM:
      return e->mpi.op_sum;
    case ACCEL_COMM_ENGINE_OP_PROD:
      return e->mpi.op_prod;
    case ACCEL_COMM_ENGINE_OP_MIN:
      return e->mpi.op_min;
    default:
      return e->mpi.op_max;
  }
}
