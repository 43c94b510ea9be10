// SPDX-License-Identifier: MIT
//
// accel: neural-network ops, part of the built-in ops of <accel/accel.h>
// (which includes this header at its end): activations, a bias-add
// broadcast and strided-batched GEMM. The rules of the built-in ops banner
// in accel.h hold here too: enqueued on `stream` and returned once
// enqueued; buffers on the stream's device; offsets in bytes, multiples of
// the element size; the core validates dtypes, counts, alignment, overlap
// and bounds (ACCEL_ERROR_INVALID_ARGUMENT naming the operand); a backend
// without the op returns ACCEL_ERROR_UNSUPPORTED; F16/BF16 compute in f32
// and round to nearest even once, on store.
//
// Every first-party backend (cpu, cuda, rocm, opencl) implements them
// (plugin ABI 1.4: op_unary, op_bias_add, op_gemm_batched) and accel-conform
// checks them (ops.relu.*, ops.gelu.*, ops.silu.*, ops.bias_add.*,
// ops.gemm_batched.*). A plugin built before ABI 1.4 returns
// ACCEL_ERROR_UNSUPPORTED for the activations and the bias-add, and its
// strided-batched GEMM runs as one GEMM per batch member.
#ifndef ACCEL_OPS_NN_H_
#define ACCEL_OPS_NN_H_

#include <accel/accel.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// ===========================================================================
// Activations
// ===========================================================================

// Element-wise activation functions. Values are stable (they are the
// plugin ABI's accel_plugin_unary_op_t).
typedef enum accel_activation {
  // max(x, 0): exact; -0 stays -0 and NaN stays NaN.
  ACCEL_ACTIVATION_RELU = 0,
  // x * (1 + erf(x / sqrt(2))) / 2, the exact (erf) form of GELU, as
  // torch.nn.functional.gelu(approximate="none").
  ACCEL_ACTIVATION_GELU = 1,
  // x / (1 + exp(-x)) (SiLU, "swish").
  ACCEL_ACTIVATION_SILU = 2,
  ACCEL_ACTIVATION_MAX_ENUM = 0x7fffffff
} accel_activation_t;

// Short name of `activation` ("relu", "gelu", "silu"), or NULL if unknown.
// Static storage.
ACCEL_API const char* accel_activation_name(accel_activation_t activation);

// dst[i] = activation(src[i]) for i < count. Float dtypes only (F32, F16,
// BF16). `dst` and `src` may be the same range (in place) but must not
// partially overlap. GELU and SiLU are accurate to a few f32 ulp (the
// backend's erf/erfc and exp); ReLU is exact. ACCEL_ERROR_INVALID_ARGUMENT
// for an unknown `activation`, an I32 or unknown dtype, buffers on another
// device, misaligned offsets, ranges out of bounds or partially
// overlapping; ACCEL_ERROR_UNSUPPORTED when the backend has no activations
// (a plugin built before ABI 1.4). A count of 0 enqueues nothing.
ACCEL_API accel_status_t accel_op_activation(
    accel_stream_t* stream, accel_buffer_t* dst, size_t dst_offset,
    accel_buffer_t* src, size_t src_offset, accel_dtype_t dtype, size_t count,
    accel_activation_t activation);

// ===========================================================================
// Bias-add
// ===========================================================================

// y[r * cols + c] += bias[c] for r < rows and c < cols: a row-major
// rows x cols matrix (packed rows) plus a row broadcast down it, as after
// a linear layer. F32, F16, BF16 (added in f32, rounded once) and I32
// (wraps modulo 2^32). `bias` holds `cols` elements and must not overlap
// `y`. ACCEL_ERROR_INVALID_ARGUMENT for an unknown dtype, rows * cols
// overflowing size_t, buffers on another device, misaligned offsets,
// either range out of bounds, or overlap; ACCEL_ERROR_UNSUPPORTED as for
// accel_op_activation(). rows or cols of 0 enqueues nothing.
ACCEL_API accel_status_t accel_op_bias_add(accel_stream_t* stream,
                                           accel_buffer_t* y, size_t y_offset,
                                           accel_buffer_t* bias,
                                           size_t bias_offset,
                                           accel_dtype_t dtype, size_t rows,
                                           size_t cols);

// ===========================================================================
// Strided-batched GEMM
// ===========================================================================

// `batch_count` GEMMs of the shape, dtypes, flags, alpha and beta in
// `gemm` (an accel_gemm_t as accel_op_gemm() takes it, set up with
// accel_gemm_init()), as cublasGemmStridedBatchedEx: GEMM i reads A at
// gemm->a_offset + i * stride_a elements of a_dtype, B at gemm->b_offset
// + i * stride_b elements and writes C at gemm->c_offset + i * stride_c
// elements of c_dtype, each matrix with the leading dimension in `gemm`.
//
// A stride of 0 for A or B shares one matrix across the batch (a weight
// applied to every member). C matrices must not overlap one another (so
// stride_c is not 0 when batch_count > 1), but may interleave: C_i at
// column offset i * n of a wider matrix with ldc = batch_count * n is
// fine. The C matrices, as a whole, must not overlap the A matrices or
// the B matrices in the same buffer. Every member must lie inside its
// buffer; all arithmetic is checked for overflow.
//
// Runs as one backend call (cuBLAS, rocBLAS, CLBlast strided-batched, or
// the backend's own batched kernel) where the backend has one, else as
// one GEMM per member on `stream`, in order; either way any GEMM
// workspace is lent once, for the whole batch. batch_count 0, m 0 or n 0
// enqueues nothing; k 0 gives C = beta * C for every member.
// ACCEL_ERROR_INVALID_ARGUMENT as accel_op_gemm() for the shape, and for
// overlapping C matrices, a member out of bounds or a stride that
// overflows; ACCEL_ERROR_OUT_OF_DEVICE_MEMORY naming the workspace as for
// accel_op_gemm().
ACCEL_API accel_status_t accel_op_gemm_strided_batched(
    accel_stream_t* stream, const accel_gemm_t* gemm, size_t batch_count,
    size_t stride_a, size_t stride_b, size_t stride_c);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // ACCEL_OPS_NN_H_
