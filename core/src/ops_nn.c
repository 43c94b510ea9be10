// SPDX-License-Identifier: MIT
//
// Neural-network ops (<accel/ops_nn.h>, plugin ABI 1.4): activations,
// bias-add and strided-batched GEMM. As in ops.c, the core checks every
// operand once (for a batch: every member, with overflow-checked
// arithmetic) and hands the plugin only requests it can run blindly.
//
// op_unary and op_bias_add are optional plugin entries: a plugin without
// them gets a stub that returns UNSUPPORTED. op_gemm_batched is optional
// too, but its absence is not a refusal: the core then runs the batch as
// one op_gemm per member on the stream, in order, which is correct for
// every ABI 1.1-1.3 plugin (just slower), and lends any GEMM workspace
// once for the whole batch, as it does for a native batched call.
#include <string.h>

#include "graph_internal.h"
#include "internal.h"
#include "ops_internal.h"
#include "trace.h"

// ---------------------------------------------------------------------------
// Defaults for the optional ABI 1.4 op entries (bound once, at load).
// ---------------------------------------------------------------------------

static accel_status_t accel__default_op_unary(
    void* device, void* stream, void* dst, uint64_t dst_offset, const void* src,
    uint64_t src_offset, uint32_t dtype, uint64_t count, uint32_t op) {
  (void)device, (void)stream, (void)dst, (void)dst_offset, (void)src;
  (void)src_offset, (void)dtype, (void)count, (void)op;
  return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                     "activations are not implemented by this backend (the "
                     "optional plugin ABI 1.4 entry op_unary)");
}

static accel_status_t accel__default_op_bias_add(
    void* device, void* stream, void* y, uint64_t y_offset, const void* bias,
    uint64_t bias_offset, uint32_t dtype, uint64_t rows, uint64_t cols) {
  (void)device, (void)stream, (void)y, (void)y_offset, (void)bias;
  (void)bias_offset, (void)dtype, (void)rows, (void)cols;
  return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                     "bias-add is not implemented by this backend (the "
                     "optional plugin ABI 1.4 entry op_bias_add)");
}

// Never called: without the plugin's own entry the core loops over
// op_gemm (has_gemm_batched is false). It keeps the table free of NULLs.
static accel_status_t accel__default_op_gemm_batched(
    void* device, void* stream, const accel_plugin_gemm_t* gemm,
    const accel_plugin_gemm_batch_t* batch) {
  (void)device, (void)stream, (void)gemm, (void)batch;
  return accel__fail(ACCEL_ERROR_INTERNAL, "op_gemm_batched stub called");
}

void accel__ops_nn_bind(accel__plugin_t* plugin, accel_device_ops_t* o) {
  plugin->has_gemm_batched = o->op_gemm_batched != NULL;
  if (o->op_unary == NULL) o->op_unary = accel__default_op_unary;
  if (o->op_bias_add == NULL) o->op_bias_add = accel__default_op_bias_add;
  if (o->op_gemm_batched == NULL) {
    o->op_gemm_batched = accel__default_op_gemm_batched;
  }
}

// ---------------------------------------------------------------------------
// Activations and bias-add
// ---------------------------------------------------------------------------

const char* accel_activation_name(accel_activation_t activation) {
  switch (activation) {
    case ACCEL_ACTIVATION_RELU:
      return "relu";
    case ACCEL_ACTIVATION_GELU:
      return "gelu";
    case ACCEL_ACTIVATION_SILU:
      return "silu";
    default:
      return NULL;
  }
}

accel_status_t accel_op_activation(accel_stream_t* stream, accel_buffer_t* dst,
                                   size_t dst_offset, accel_buffer_t* src,
                                   size_t src_offset, accel_dtype_t dtype,
                                   size_t count,
                                   accel_activation_t activation) {
  ACCEL__TRACE_STREAM_API("accel_op_activation", stream);
  static const char what[] = "accel_op_activation";
  size_t dst_bytes = 0, src_bytes = 0;
  accel_status_t status = accel__check_stream(what, stream);
  if (status == ACCEL_OK && accel_activation_name(activation) == NULL) {
    status = accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: activation %d is not an accel_activation_t "
                         "(relu 0, gelu 1, silu 2)",
                         what, (int)activation);
  }
  if (status == ACCEL_OK) {
    status = accel__check_dtype(what, "dtype", dtype, true);
  }
  if (status == ACCEL_OK) {
    status = accel__check_operand(what, "dst", stream, dst, dst_offset, dtype,
                                  count, &dst_bytes);
  }
  if (status == ACCEL_OK) {
    status = accel__check_operand(what, "src", stream, src, src_offset, dtype,
                                  count, &src_bytes);
  }
  // In place is fine; shifted data is not (elements would be read after
  // being written, in an order no backend promises).
  if (status == ACCEL_OK &&
      accel__overlap(dst, dst_offset, dst_bytes, src, src_offset, src_bytes) &&
      dst_offset != src_offset) {
    status = accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: dst [%zu, %zu) partially overlaps src [%zu, "
                         "%zu) in the same buffer; use identical or disjoint "
                         "ranges",
                         what, dst_offset, dst_offset + dst_bytes, src_offset,
                         src_offset + src_bytes);
  }
  if (status == ACCEL_OK && count != 0) {
    status = accel__use(stream, dst, src, NULL);
  }
  if (status != ACCEL_OK || count == 0) return status;
  if (accel__capturing(stream)) {
    return accel__graph_op_unary(stream, dst, dst_offset, src, src_offset,
                                 dtype, count, (uint32_t)activation);
  }
  accel_device_t* d = stream->device;
  status = d->ops->op_unary(d->impl, stream->impl, accel__buffer_mem(dst),
                            accel__buffer_offset(dst, dst_offset),
                            accel__buffer_mem(src),
                            accel__buffer_offset(src, src_offset),
                            (uint32_t)dtype, count, (uint32_t)activation);
  return status == ACCEL_OK ? ACCEL_OK : accel__op_result(what, stream, status);
}

accel_status_t accel_op_bias_add(accel_stream_t* stream, accel_buffer_t* y,
                                 size_t y_offset, accel_buffer_t* bias,
                                 size_t bias_offset, accel_dtype_t dtype,
                                 size_t rows, size_t cols) {
  ACCEL__TRACE_STREAM_API("accel_op_bias_add", stream);
  static const char what[] = "accel_op_bias_add";
  size_t y_bytes = 0, bias_bytes = 0;
  accel_status_t status = accel__check_stream(what, stream);
  if (status == ACCEL_OK) {
    status = accel__check_dtype(what, "dtype", dtype, false);
  }
  if (status == ACCEL_OK && cols != 0 && rows > SIZE_MAX / cols) {
    status = accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: rows %zu x cols %zu overflows size_t", what, rows,
                         cols);
  }
  size_t total = status == ACCEL_OK ? rows * cols : 0;
  if (status == ACCEL_OK) {
    status = accel__check_operand(what, "y", stream, y, y_offset, dtype, total,
                                  &y_bytes);
  }
  // The bias is read only when there is something to add it to.
  if (status == ACCEL_OK) {
    status = accel__check_operand(what, "bias", stream, bias, bias_offset,
                                  dtype, total != 0 ? cols : 0, &bias_bytes);
  }
  if (status == ACCEL_OK &&
      accel__overlap(y, y_offset, y_bytes, bias, bias_offset, bias_bytes)) {
    status = accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: y [%zu, %zu) overlaps bias [%zu, %zu) in the "
                         "same buffer",
                         what, y_offset, y_offset + y_bytes, bias_offset,
                         bias_offset + bias_bytes);
  }
  if (status == ACCEL_OK && total != 0) {
    status = accel__use(stream, y, bias, NULL);
  }
  if (status != ACCEL_OK || total == 0) return status;
  if (accel__capturing(stream)) {
    return accel__graph_op_bias_add(stream, y, y_offset, bias, bias_offset,
                                    dtype, rows, cols);
  }
  accel_device_t* d = stream->device;
  status = d->ops->op_bias_add(
      d->impl, stream->impl, accel__buffer_mem(y),
      accel__buffer_offset(y, y_offset), accel__buffer_mem(bias),
      accel__buffer_offset(bias, bias_offset), (uint32_t)dtype, rows, cols);
  return status == ACCEL_OK ? ACCEL_OK : accel__op_result(what, stream, status);
}

// ---------------------------------------------------------------------------
// Strided-batched GEMM
// ---------------------------------------------------------------------------

// Converts the element stride of `m` to bytes in `*out_stride` and checks
// that the last of `count` (> 0) members lies inside the buffer (the first
// was checked with the shape). Sets `*out_end` to the end of the last
// member: the batch's matrices span [m->offset, *out_end).
static accel_status_t accel__check_member_bounds(const char* what,
                                                 const accel__matrix_t* m,
                                                 size_t stride, size_t count,
                                                 size_t* out_stride,
                                                 size_t* out_end) {
  size_t elem = accel_dtype_size(m->dtype);
  char name = (char)(m->name[0] - 'A' + 'a');
  if (stride > SIZE_MAX / elem) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: stride_%c %zu elements of %s overflows size_t",
                       what, name, stride, accel_dtype_name(m->dtype));
  }
  *out_stride = stride * elem;
  *out_end = m->offset + m->bytes;
  if (m->bytes == 0) return ACCEL_OK;  // nothing of it is touched
  size_t last = count - 1;
  size_t size = m->buffer->size;
  if (*out_stride != 0 && last > (SIZE_MAX - m->offset) / *out_stride) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %s of batch member %zu is at offset %zu + %zu x "
                       "%zu bytes, which overflows size_t",
                       what, m->name, last, m->offset, last, *out_stride);
  }
  size_t at = m->offset + last * *out_stride;
  if (at > size || m->bytes > size - at) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %s of batch member %zu (%zu x %zu %s, ld %zu, "
                       "stride_%c %zu elements) needs %zu bytes from offset "
                       "%zu but the buffer has %zu",
                       what, m->name, last, m->rows, m->cols,
                       accel_dtype_name(m->dtype), m->ld, name, stride,
                       m->bytes, at, at < size ? size - at : 0);
  }
  *out_end = at + m->bytes;
  return ACCEL_OK;
}

// Whether two of `count` C matrices `stride` (> 0) elements apart share an
// element. Member 0 holds {r * ld + c : r < rows, c < cols} (ld >= cols),
// so members i < j overlap exactly when d = (j - i) * stride is within
// cols - 1 of r * ld for some r < rows. Only d below the extent
// (rows - 1) * ld + cols can, so the loop runs over whichever is fewer:
// the members whose distance is below the extent, or the rows.
static bool accel__members_overlap(size_t rows, size_t cols, size_t ld,
                                   size_t stride, size_t count) {
  size_t extent = (rows - 1) * ld + cols;  // checked by accel__check_matrix
  if (stride >= extent) return false;
  size_t near = (extent - 1) / stride;  // members closer than the extent
  if (near > count - 1) near = count - 1;
  if (near <= rows) {
    for (size_t k = 1; k <= near; k++) {
      size_t d = k * stride, r = d / ld, rem = d % ld;
      if (rem < cols || (ld - rem < cols && r + 1 < rows)) return true;
    }
    return false;
  }
  for (size_t r = 0; r < rows; r++) {
    // The largest member k with k * stride <= r * ld + cols - 1, and
    // whether it also reaches r * ld - (cols - 1).
    size_t hi = r * ld + cols - 1, k = hi / stride;
    if (k > count - 1) k = count - 1;
    if (k >= 1 && k * stride + (cols - 1) >= r * ld) return true;
  }
  return false;
}

// The batch as one op_gemm per member, for plugins without
// op_gemm_batched. Stream order runs them one after the other, so they
// share the workspace in `p`.
static accel_status_t accel__gemm_batched_loop(
    accel_device_t* d, void* stream, const accel_plugin_gemm_t* p,
    const accel_plugin_gemm_batch_t* batch) {
  accel_status_t status = ACCEL_OK;
  accel_plugin_gemm_t member = *p;
  for (uint64_t i = 0; i < batch->count && status == ACCEL_OK; i++) {
    member.a_offset = p->a_offset + i * batch->stride_a;
    member.b_offset = p->b_offset + i * batch->stride_b;
    member.c_offset = p->c_offset + i * batch->stride_c;
    status = d->ops->op_gemm(d->impl, stream, &member);
  }
  return status;
}

// The batch on plugin stream `stream`: the plugin's own entry, or the loop.
// Also what a captured batch runs at each launch (graph_record.c).
static accel_status_t accel__gemm_batched_run(
    accel_device_t* d, void* stream, const accel_plugin_gemm_t* p,
    const accel_plugin_gemm_batch_t* batch) {
  return d->plugin->has_gemm_batched
             ? d->ops->op_gemm_batched(d->impl, stream, p, batch)
             : accel__gemm_batched_loop(d, stream, p, batch);
}

// Checks the batch beyond member 0 (which accel__gemm_check did) and fills
// `batch` with byte strides.
static accel_status_t accel__check_batch(
    const char* what, const accel__matrix_t* a, const accel__matrix_t* b,
    const accel__matrix_t* c, size_t count, size_t stride_a, size_t stride_b,
    size_t stride_c, accel_plugin_gemm_batch_t* batch) {
  size_t sa = 0, sb = 0, sc = 0, a_end = 0, b_end = 0, c_end = 0;
  accel_status_t status =
      accel__check_member_bounds(what, a, stride_a, count, &sa, &a_end);
  if (status == ACCEL_OK) {
    status = accel__check_member_bounds(what, b, stride_b, count, &sb, &b_end);
  }
  if (status == ACCEL_OK) {
    status = accel__check_member_bounds(what, c, stride_c, count, &sc, &c_end);
  }
  if (status != ACCEL_OK) return status;
  if (c->bytes != 0 && count > 1 &&
      (stride_c == 0 ||
       accel__members_overlap(c->rows, c->cols, c->ld, stride_c, count))) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: the C matrices of the batch overlap (%zu members "
                       "of %zu x %zu, ldc %zu, stride_c %zu elements); every "
                       "member needs its own C",
                       what, count, c->rows, c->cols, c->ld, stride_c);
  }
  const accel__matrix_t* in[2] = {a, b};
  size_t in_end[2] = {a_end, b_end};
  for (int i = 0; i < 2; i++) {
    if (accel__overlap(c->buffer, c->offset, c_end - c->offset, in[i]->buffer,
                       in[i]->offset,
                       in[i]->bytes != 0 ? in_end[i] - in[i]->offset : 0)) {
      return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: the C matrices [%zu, %zu) overlap the %s "
                         "matrices [%zu, %zu) in the same buffer",
                         what, c->offset, c_end, in[i]->name, in[i]->offset,
                         in_end[i]);
    }
  }
  batch->struct_size = sizeof(*batch);
  batch->reserved0 = 0;
  batch->count = count;
  batch->stride_a = sa;
  batch->stride_b = sb;
  batch->stride_c = sc;
  return ACCEL_OK;
}

accel_status_t accel_op_gemm_strided_batched(accel_stream_t* stream,
                                             const accel_gemm_t* gemm,
                                             size_t batch_count,
                                             size_t stride_a, size_t stride_b,
                                             size_t stride_c) {
  ACCEL__TRACE_STREAM_API("accel_op_gemm_strided_batched", stream);
  static const char what[] = "accel_op_gemm_strided_batched";
  accel__matrix_t a, b, c;
  accel_plugin_gemm_batch_t batch;
  accel_status_t status = accel__gemm_check(what, stream, gemm, &a, &b, &c);
  if (status != ACCEL_OK || batch_count == 0) return status;
  status = accel__check_batch(what, &a, &b, &c, batch_count, stride_a, stride_b,
                              stride_c, &batch);
  if (status != ACCEL_OK || gemm->m == 0 || gemm->n == 0) return status;
  status = accel__use(stream, c.buffer, gemm->k != 0 ? a.buffer : NULL,
                      gemm->k != 0 ? b.buffer : NULL);
  if (status != ACCEL_OK) return status;
  accel_plugin_gemm_t p;
  accel__gemm_params(gemm, &a, &b, &c, &p);
  // One member's workspace serves the whole batch (plugin.h).
  accel_buffer_t* workspace = NULL;
  status = accel__gemm_workspace(what, stream, &p, &workspace);
  if (status == ACCEL_OK) {
    accel_device_t* d = stream->device;
    status = accel__capturing(stream)
                 ? accel__graph_op_gemm_batched(stream, &p, &batch, gemm,
                                                workspace,
                                                accel__gemm_batched_run)
                 : accel__gemm_batched_run(d, stream->impl, &p, &batch);
  }
  // Back to the stream's pool once enqueued, as for accel_op_gemm.
  accel_buffer_release(workspace);
  return status == ACCEL_OK ? ACCEL_OK : accel__op_result(what, stream, status);
}
