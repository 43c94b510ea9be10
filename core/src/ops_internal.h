// SPDX-License-Identifier: MIT
//
// Checks and helpers shared by the built-in op files of the core: ops.c
// (elementwise ops, sum, GEMM) and ops_nn.c (activations, bias-add,
// strided-batched GEMM). Every check returns ACCEL_OK or
// ACCEL_ERROR_INVALID_ARGUMENT with a message that starts with `what`
// (the public function's name) and names the operand and the numbers.
#ifndef ACCEL_CORE_OPS_INTERNAL_H_
#define ACCEL_CORE_OPS_INTERNAL_H_

#include <stdbool.h>
#include <stddef.h>

#include "internal.h"

// `stream` is not NULL.
accel_status_t accel__check_stream(const char* what,
                                   const accel_stream_t* stream);

// `dtype` is an accel_dtype_t and, with `float_only`, not I32. `operand`
// says which dtype argument it is ("dtype", "src_dtype").
accel_status_t accel__check_dtype(const char* what, const char* operand,
                                  accel_dtype_t dtype, bool float_only);

// True when byte ranges [a, a + na) and [b, b + nb) of the same buffer
// intersect (never for different buffers or empty ranges).
bool accel__overlap(const accel_buffer_t* x, size_t a, size_t na,
                    const accel_buffer_t* y, size_t b, size_t nb);

// Tells the allocator that `stream` is about to enqueue work on each of
// the (up to three, possibly repeated or NULL) buffers, so freeing one
// waits for that work. Cheap when the stream is already known.
accel_status_t accel__use(accel_stream_t* stream, accel_buffer_t* a,
                          accel_buffer_t* b, accel_buffer_t* c);

// One GEMM matrix as stored: `rows` x `cols` elements of `dtype`, rows `ld`
// elements apart.
typedef struct accel__matrix {
  const char* name;  // "A", "B", "C"
  accel_buffer_t* buffer;
  size_t offset;
  size_t rows, cols, ld;
  accel_dtype_t dtype;
  size_t bytes;  // extent from `offset`, filled by accel__check_matrix
} accel__matrix_t;

// Resolves a leading dimension of 0 to "packed" and checks the matrix lies
// within its buffer on the stream's device; sets `m->bytes`.
accel_status_t accel__check_matrix(const char* what,
                                   const accel_stream_t* stream,
                                   accel__matrix_t* m);

// Checks `gemm` as accel_op_gemm() takes it (stream, descriptor size,
// dtypes, flags, each matrix, C overlapping neither A nor B) and fills
// the three matrices. Notes no buffer use.
accel_status_t accel__gemm_check(const char* what, accel_stream_t* stream,
                                 const accel_gemm_t* gemm, accel__matrix_t* a,
                                 accel__matrix_t* b, accel__matrix_t* c);

// Fills the plugin's GEMM descriptor from a checked `gemm`, without a
// workspace.
void accel__gemm_params(const accel_gemm_t* gemm, const accel__matrix_t* a,
                        const accel__matrix_t* b, const accel__matrix_t* c,
                        accel_plugin_gemm_t* p);

// Lends the GEMM `p` the workspace the plugin asks for (ABI 1.2) from the
// caching allocator, bound to `stream`; sets `*out_workspace` (NULL when
// none is wanted, else released by the caller once the GEMM is enqueued)
// and the workspace fields of `p`.
accel_status_t accel__gemm_workspace(const char* what, accel_stream_t* stream,
                                     accel_plugin_gemm_t* p,
                                     accel_buffer_t** out_workspace);

// At load (loader.c): fills the ABI 1.4 op entries a plugin left NULL with
// stubs and records whether op_gemm_batched is its own (ops_nn.c), so that
// strided-batched GEMM loops over op_gemm otherwise.
void accel__ops_nn_bind(accel__plugin_t* plugin, accel_device_ops_t* ops);

#endif  // ACCEL_CORE_OPS_INTERNAL_H_
