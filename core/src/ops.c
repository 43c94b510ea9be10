// SPDX-License-Identifier: MIT
//
// Built-in ops (architecture decision 12): the core checks streams, dtypes,
// counts, bounds and devices once, with messages that name the operand and
// the numbers, and hands the plugin only requests it can run blindly. The
// checks are a handful of compares and never allocate; the one allocation
// is a GEMM's workspace, lent from the caching allocator (ABI 1.2).
#include <accel/plugin_dtype.h>
#include <string.h>

#include "graph_internal.h"
#include "internal.h"
#include "ops_internal.h"
#include "trace.h"

size_t accel_dtype_size(accel_dtype_t dtype) {
  return accel_plugin_dtype_size((uint32_t)dtype);
}

const char* accel_dtype_name(accel_dtype_t dtype) {
  switch (dtype) {
    case ACCEL_DTYPE_F32:
      return "f32";
    case ACCEL_DTYPE_F16:
      return "f16";
    case ACCEL_DTYPE_BF16:
      return "bf16";
    case ACCEL_DTYPE_I32:
      return "i32";
    default:
      return NULL;
  }
}

void accel_gemm_init(accel_gemm_t* gemm) {
  if (gemm == NULL) return;
  memset(gemm, 0, sizeof(*gemm));
  gemm->struct_size = sizeof(*gemm);
  gemm->a_dtype = ACCEL_DTYPE_F32;
  gemm->b_dtype = ACCEL_DTYPE_F32;
  gemm->c_dtype = ACCEL_DTYPE_F32;
  gemm->alpha = 1.0;
  gemm->beta = 0.0;
}

// ---------------------------------------------------------------------------
// Checks shared by every op.
// ---------------------------------------------------------------------------

accel_status_t accel__check_stream(const char* what,
                                   const accel_stream_t* stream) {
  if (stream == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: stream is NULL",
                       what);
  }
  return ACCEL_OK;
}

accel_status_t accel__check_dtype(const char* what, const char* operand,
                                  accel_dtype_t dtype, bool float_only) {
  if (accel_dtype_size(dtype) == 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %s %d is not an accel_dtype_t (f32 0, f16 1, "
                       "bf16 2, i32 3)",
                       what, operand, (int)dtype);
  }
  if (float_only && dtype == ACCEL_DTYPE_I32) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %s is i32, but this op takes f32, f16 or bf16 "
                       "only",
                       what, operand);
  }
  return ACCEL_OK;
}

// Checks one buffer operand of `count` elements of `dtype` at `offset`:
// present, on the stream's device and, if count > 0, in bounds. Sets
// `*out_bytes` to the byte length of the range.
accel_status_t accel__check_operand(const char* what, const char* operand,
                                    const accel_stream_t* stream,
                                    const accel_buffer_t* buffer, size_t offset,
                                    accel_dtype_t dtype, size_t count,
                                    size_t* out_bytes) {
  accel_status_t live = accel__check_buffer(what, operand, buffer);
  if (live != ACCEL_OK) return live;
  if (buffer->device != stream->device) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %s buffer is on %s but the stream is on %s", what,
                       operand, buffer->device->uri, stream->device->uri);
  }
  size_t elem = accel_dtype_size(dtype);
  if (count > SIZE_MAX / elem) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %s count %zu of %s overflows size_t", what, operand,
                       count, accel_dtype_name(dtype));
  }
  *out_bytes = count * elem;
  if (offset % elem != 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %s offset %zu is not a multiple of the %zu-byte "
                       "%s element",
                       what, operand, offset, elem, accel_dtype_name(dtype));
  }
  if (count == 0) return ACCEL_OK;
  return accel__check_range(what, operand, buffer, offset, *out_bytes);
}

bool accel__overlap(const accel_buffer_t* x, size_t a, size_t na,
                    const accel_buffer_t* y, size_t b, size_t nb) {
  return x == y && na != 0 && nb != 0 && a < b + nb && b < a + na;
}

// Rejects an input that overlaps the output without being the very same
// range (elementwise ops may run in place, not on shifted data).
static accel_status_t accel__check_alias(const char* what, const char* out_name,
                                         const accel_buffer_t* out,
                                         size_t out_offset, size_t out_bytes,
                                         const char* in_name,
                                         const accel_buffer_t* in,
                                         size_t in_offset, size_t in_bytes) {
  if (!accel__overlap(out, out_offset, out_bytes, in, in_offset, in_bytes)) {
    return ACCEL_OK;
  }
  if (out_offset == in_offset && out_bytes == in_bytes) return ACCEL_OK;
  return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                     "%s: %s [%zu, %zu) partially overlaps %s [%zu, %zu) in "
                     "the same buffer; use identical or disjoint ranges",
                     what, out_name, out_offset, out_offset + out_bytes,
                     in_name, in_offset, in_offset + in_bytes);
}

// A plugin's UNSUPPORTED (often the core's stub, which cannot know the
// device) gets the call and the device put in front of its message. Only
// on the failure path.
accel_status_t accel__op_result(const char* what,
                                const accel_stream_t* stream,
                                accel_status_t status) {
  if (status != ACCEL_ERROR_UNSUPPORTED) return status;
  char reason[512];
  const char* message = accel_last_error();
  size_t len = strnlen(message, sizeof(reason) - 1);
  memcpy(reason, message, len);
  reason[len] = '\0';
  return accel__fail(status, "%s: %s: %s", what, stream->device->uri,
                     len != 0 ? reason : "not supported by this backend");
}

accel_status_t accel__use(accel_stream_t* stream, accel_buffer_t* a,
                          accel_buffer_t* b, accel_buffer_t* c) {
  accel_status_t status = accel__buffer_use(a, stream);
  if (status == ACCEL_OK && b != NULL && b != a) {
    status = accel__buffer_use(b, stream);
  }
  if (status == ACCEL_OK && c != NULL && c != a && c != b) {
    status = accel__buffer_use(c, stream);
  }
  return status;
}

// ---------------------------------------------------------------------------
// Elementwise ops and reductions.
// ---------------------------------------------------------------------------

// One buffer operand of an elementwise op.
typedef struct accel__operand {
  const char* name;        // "dst", "x", ...
  const char* dtype_name;  // the dtype argument to check, or NULL if an
                           // earlier operand shares it
  accel_buffer_t* buffer;
  size_t offset;
  accel_dtype_t dtype;
  size_t bytes;  // set by accel__check_elementwise
} accel__operand_t;

// Checks an elementwise op over `count` elements: the stream, each named
// dtype (`float_only` rejects I32), each operand (device, alignment,
// bounds), that no input partially overlaps the output `ops[0]`, then
// notes the stream's use of the buffers. At most three operands.
static accel_status_t accel__check_elementwise(const char* what,
                                               accel_stream_t* stream,
                                               bool float_only, size_t count,
                                               accel__operand_t* ops,
                                               size_t n) {
  accel_status_t status = accel__check_stream(what, stream);
  for (size_t i = 0; i < n && status == ACCEL_OK; i++) {
    if (ops[i].dtype_name != NULL) {
      status =
          accel__check_dtype(what, ops[i].dtype_name, ops[i].dtype, float_only);
    }
  }
  for (size_t i = 0; i < n && status == ACCEL_OK; i++) {
    status =
        accel__check_operand(what, ops[i].name, stream, ops[i].buffer,
                             ops[i].offset, ops[i].dtype, count, &ops[i].bytes);
  }
  for (size_t i = 1; i < n && status == ACCEL_OK; i++) {
    status = accel__check_alias(what, ops[0].name, ops[0].buffer, ops[0].offset,
                                ops[0].bytes, ops[i].name, ops[i].buffer,
                                ops[i].offset, ops[i].bytes);
  }
  if (status == ACCEL_OK && count != 0) {
    status = accel__use(stream, ops[0].buffer, n > 1 ? ops[1].buffer : NULL,
                        n > 2 ? ops[2].buffer : NULL);
  }
  return status;
}

accel_status_t accel_op_fill(accel_stream_t* stream, accel_buffer_t* dst,
                             size_t dst_offset, accel_dtype_t dtype,
                             size_t count, double value) {
  ACCEL__TRACE_STREAM_API("accel_op_fill", stream);
  static const char what[] = "accel_op_fill";
  accel__operand_t ops[] = {{"dst", "dtype", dst, dst_offset, dtype, 0}};
  accel_status_t status =
      accel__check_elementwise(what, stream, false, count, ops, 1);
  if (status != ACCEL_OK || count == 0) return status;
  if (accel__capturing(stream)) {
    return accel__graph_op_fill(stream, dst, dst_offset, dtype, count, value);
  }
  accel_device_t* d = stream->device;
  status = d->ops->op_fill(d->impl, stream->impl, accel__buffer_mem(dst),
                           accel__buffer_offset(dst, dst_offset),
                           (uint32_t)dtype, count, value);
  return status == ACCEL_OK ? ACCEL_OK : accel__op_result(what, stream, status);
}

accel_status_t accel_op_cast(accel_stream_t* stream, accel_buffer_t* dst,
                             size_t dst_offset, accel_dtype_t dst_dtype,
                             accel_buffer_t* src, size_t src_offset,
                             accel_dtype_t src_dtype, size_t count) {
  ACCEL__TRACE_STREAM_API("accel_op_cast", stream);
  static const char what[] = "accel_op_cast";
  // In place only when every element stays where it is (the alias check).
  accel__operand_t ops[] = {
      {"dst", "dst_dtype", dst, dst_offset, dst_dtype, 0},
      {"src", "src_dtype", src, src_offset, src_dtype, 0}};
  accel_status_t status =
      accel__check_elementwise(what, stream, false, count, ops, 2);
  if (status != ACCEL_OK || count == 0) return status;
  if (accel__capturing(stream)) {
    return accel__graph_op_cast(stream, dst, dst_offset, dst_dtype, src,
                                src_offset, src_dtype, count);
  }
  accel_device_t* d = stream->device;
  status = d->ops->op_cast(d->impl, stream->impl, accel__buffer_mem(dst),
                           accel__buffer_offset(dst, dst_offset),
                           (uint32_t)dst_dtype, accel__buffer_mem(src),
                           accel__buffer_offset(src, src_offset),
                           (uint32_t)src_dtype, count);
  return status == ACCEL_OK ? ACCEL_OK : accel__op_result(what, stream, status);
}

accel_status_t accel_op_scale(accel_stream_t* stream, accel_buffer_t* x,
                              size_t x_offset, accel_dtype_t dtype,
                              size_t count, double alpha) {
  ACCEL__TRACE_STREAM_API("accel_op_scale", stream);
  static const char what[] = "accel_op_scale";
  accel__operand_t ops[] = {{"x", "dtype", x, x_offset, dtype, 0}};
  accel_status_t status =
      accel__check_elementwise(what, stream, true, count, ops, 1);
  if (status != ACCEL_OK || count == 0) return status;
  if (accel__capturing(stream)) {
    return accel__graph_op_scale(stream, x, x_offset, dtype, count, alpha);
  }
  accel_device_t* d = stream->device;
  status = d->ops->op_scale(d->impl, stream->impl, accel__buffer_mem(x),
                            accel__buffer_offset(x, x_offset), (uint32_t)dtype,
                            count, alpha);
  return status == ACCEL_OK ? ACCEL_OK : accel__op_result(what, stream, status);
}

accel_status_t accel_op_axpy(accel_stream_t* stream, accel_buffer_t* y,
                             size_t y_offset, accel_buffer_t* x,
                             size_t x_offset, accel_dtype_t dtype, size_t count,
                             double alpha) {
  ACCEL__TRACE_STREAM_API("accel_op_axpy", stream);
  static const char what[] = "accel_op_axpy";
  accel__operand_t ops[] = {{"y", "dtype", y, y_offset, dtype, 0},
                            {"x", NULL, x, x_offset, dtype, 0}};
  accel_status_t status =
      accel__check_elementwise(what, stream, true, count, ops, 2);
  if (status != ACCEL_OK || count == 0) return status;
  if (accel__capturing(stream)) {
    return accel__graph_op_axpy(stream, y, y_offset, x, x_offset, dtype,
                                count, alpha);
  }
  accel_device_t* d = stream->device;
  status = d->ops->op_axpy(
      d->impl, stream->impl, accel__buffer_mem(y),
      accel__buffer_offset(y, y_offset), accel__buffer_mem(x),
      accel__buffer_offset(x, x_offset), (uint32_t)dtype, count, alpha);
  return status == ACCEL_OK ? ACCEL_OK : accel__op_result(what, stream, status);
}

// Enqueues add or mul: the two differ only in the table entry they call.
static accel_status_t accel__op_binary(const char* what, bool mul,
                                       accel_stream_t* stream,
                                       accel_buffer_t* z, size_t z_offset,
                                       accel_buffer_t* x, size_t x_offset,
                                       accel_buffer_t* y, size_t y_offset,
                                       accel_dtype_t dtype, size_t count) {
  accel__operand_t ops[] = {{"z", "dtype", z, z_offset, dtype, 0},
                            {"x", NULL, x, x_offset, dtype, 0},
                            {"y", NULL, y, y_offset, dtype, 0}};
  accel_status_t status =
      accel__check_elementwise(what, stream, false, count, ops, 3);
  if (status != ACCEL_OK || count == 0) return status;
  if (accel__capturing(stream)) {
    return accel__graph_op_binary(stream, mul, z, z_offset, x, x_offset, y,
                                  y_offset, dtype, count);
  }
  accel_device_t* d = stream->device;
  status = (mul ? d->ops->op_mul : d->ops->op_add)(
      d->impl, stream->impl, accel__buffer_mem(z),
      accel__buffer_offset(z, z_offset), accel__buffer_mem(x),
      accel__buffer_offset(x, x_offset), accel__buffer_mem(y),
      accel__buffer_offset(y, y_offset), (uint32_t)dtype, count);
  return status == ACCEL_OK ? ACCEL_OK : accel__op_result(what, stream, status);
}

accel_status_t accel_op_add(accel_stream_t* stream, accel_buffer_t* z,
                            size_t z_offset, accel_buffer_t* x, size_t x_offset,
                            accel_buffer_t* y, size_t y_offset,
                            accel_dtype_t dtype, size_t count) {
  ACCEL__TRACE_STREAM_API("accel_op_add", stream);
  return accel__op_binary("accel_op_add", false, stream, z, z_offset, x,
                          x_offset, y, y_offset, dtype, count);
}

accel_status_t accel_op_mul(accel_stream_t* stream, accel_buffer_t* z,
                            size_t z_offset, accel_buffer_t* x, size_t x_offset,
                            accel_buffer_t* y, size_t y_offset,
                            accel_dtype_t dtype, size_t count) {
  ACCEL__TRACE_STREAM_API("accel_op_mul", stream);
  return accel__op_binary("accel_op_mul", true, stream, z, z_offset, x,
                          x_offset, y, y_offset, dtype, count);
}

accel_status_t accel_op_sum(accel_stream_t* stream, accel_buffer_t* out,
                            size_t out_offset, accel_buffer_t* x,
                            size_t x_offset, accel_dtype_t dtype,
                            size_t count) {
  ACCEL__TRACE_STREAM_API("accel_op_sum", stream);
  static const char what[] = "accel_op_sum";
  size_t out_bytes = 0, x_bytes = 0;
  accel_status_t status = accel__check_stream(what, stream);
  if (status == ACCEL_OK) {
    status = accel__check_dtype(what, "dtype", dtype, false);
  }
  // The result is always written, even for count 0.
  if (status == ACCEL_OK) {
    status = accel__check_operand(what, "out", stream, out, out_offset, dtype,
                                  1, &out_bytes);
  }
  if (status == ACCEL_OK) {
    status = accel__check_operand(what, "x", stream, x, x_offset, dtype, count,
                                  &x_bytes);
  }
  if (status == ACCEL_OK &&
      accel__overlap(out, out_offset, out_bytes, x, x_offset, x_bytes)) {
    status = accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: out [%zu, %zu) overlaps x [%zu, %zu)", what,
                         out_offset, out_offset + out_bytes, x_offset,
                         x_offset + x_bytes);
  }
  if (status == ACCEL_OK) {
    status = accel__use(stream, out, count != 0 ? x : NULL, NULL);
  }
  if (status != ACCEL_OK) return status;
  if (accel__capturing(stream)) {
    return accel__graph_op_sum(stream, out, out_offset, x, x_offset, dtype,
                               count);
  }
  accel_device_t* d = stream->device;
  if (count == 0) {
    // The sum of nothing is 0 in every dtype: a fill, which every plugin
    // can do as a memset of zero bytes.
    status = d->ops->memset(d->impl, stream->impl, accel__buffer_mem(out),
                            (size_t)accel__buffer_offset(out, out_offset), 0,
                            out_bytes);
  } else {
    status = d->ops->op_sum(
        d->impl, stream->impl, accel__buffer_mem(out),
        accel__buffer_offset(out, out_offset), accel__buffer_mem(x),
        accel__buffer_offset(x, x_offset), (uint32_t)dtype, count);
  }
  return status == ACCEL_OK ? ACCEL_OK : accel__op_result(what, stream, status);
}

// ---------------------------------------------------------------------------
// GEMM.
// ---------------------------------------------------------------------------

accel_status_t accel__check_matrix(const char* what,
                                   const accel_stream_t* stream,
                                   accel__matrix_t* m) {
  accel_status_t live = accel__check_buffer(what, m->name, m->buffer);
  if (live != ACCEL_OK) return live;
  if (m->buffer->device != stream->device) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %s buffer is on %s but the stream is on %s", what,
                       m->name, m->buffer->device->uri, stream->device->uri);
  }
  if (m->ld == 0) m->ld = m->cols != 0 ? m->cols : 1;
  if (m->ld < m->cols) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: ld%c is %zu but %s has %zu columns as stored (%zu "
                       "x %zu); use 0 for packed rows",
                       what, (char)(m->name[0] - 'A' + 'a'), m->ld, m->name,
                       m->cols, m->rows, m->cols);
  }
  m->bytes = 0;
  size_t elem = accel_dtype_size(m->dtype);
  if (m->offset % elem != 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %s offset %zu is not a multiple of the %zu-byte "
                       "%s element",
                       what, m->name, m->offset, elem,
                       accel_dtype_name(m->dtype));
  }
  if (m->rows == 0 || m->cols == 0) return ACCEL_OK;
  // (rows - 1) * ld + cols elements, each step checked for overflow.
  size_t elems = 0;
  if (m->rows - 1 > (SIZE_MAX - m->cols) / m->ld ||
      (elems = (m->rows - 1) * m->ld + m->cols) > SIZE_MAX / elem) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %s (%zu x %zu, ld %zu) overflows size_t", what,
                       m->name, m->rows, m->cols, m->ld);
  }
  m->bytes = elems * elem;
  size_t size = m->buffer->size;
  if (m->offset > size || m->bytes > size - m->offset) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %s (%zu x %zu %s, ld %zu) needs %zu bytes from "
                       "offset %zu but the buffer has %zu",
                       what, m->name, m->rows, m->cols,
                       accel_dtype_name(m->dtype), m->ld, m->bytes, m->offset,
                       m->offset < size ? size - m->offset : 0);
  }
  return ACCEL_OK;
}

// Checks the dtype combination: A and B alike and floating point; C the
// same, or F32 for F16/BF16 inputs.
static accel_status_t accel__check_gemm_dtypes(const char* what,
                                               const accel_gemm_t* g) {
  accel_status_t status = accel__check_dtype(what, "a_dtype", g->a_dtype, true);
  if (status == ACCEL_OK) {
    status = accel__check_dtype(what, "b_dtype", g->b_dtype, true);
  }
  if (status == ACCEL_OK) {
    status = accel__check_dtype(what, "c_dtype", g->c_dtype, true);
  }
  if (status != ACCEL_OK) return status;
  if (g->b_dtype != g->a_dtype) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: a_dtype is %s but b_dtype is %s; they must match",
                       what, accel_dtype_name(g->a_dtype),
                       accel_dtype_name(g->b_dtype));
  }
  if (g->c_dtype != g->a_dtype && g->c_dtype != ACCEL_DTYPE_F32) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: c_dtype %s with %s inputs; C must be %s or f32",
                       what, accel_dtype_name(g->c_dtype),
                       accel_dtype_name(g->a_dtype),
                       accel_dtype_name(g->a_dtype));
  }
  return ACCEL_OK;
}

static accel_status_t accel__check_gemm_overlap(const char* what,
                                                const accel__matrix_t* c,
                                                const accel__matrix_t* in) {
  if (!accel__overlap(c->buffer, c->offset, c->bytes, in->buffer, in->offset,
                      in->bytes)) {
    return ACCEL_OK;
  }
  return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                     "%s: C [%zu, %zu) overlaps %s [%zu, %zu) in the same "
                     "buffer",
                     what, c->offset, c->offset + c->bytes, in->name,
                     in->offset, in->offset + in->bytes);
}

// Lends the GEMM `p` the workspace the plugin asks for (ABI 1.2): a buffer
// of the caching allocator bound to `stream`, like accel_stream_alloc_buffer,
// so it shows in the statistics, an out-of-memory empties the cache and
// retries, and freeing it right after the GEMM is enqueued returns it to
// the stream's pool for the stream's later work. Sets `*out_workspace`
// (NULL when none is wanted) and the workspace fields of `p`.
accel_status_t accel__gemm_workspace(const char* what, accel_stream_t* stream,
                                     accel_plugin_gemm_t* p,
                                     accel_buffer_t** out_workspace) {
  *out_workspace = NULL;
  accel_device_t* d = stream->device;
  uint64_t bytes = 0;
  accel_status_t status = d->ops->op_gemm_workspace(d->impl, p, &bytes);
  if (status != ACCEL_OK || bytes == 0) return status;
  if ((uint64_t)(size_t)bytes != bytes) {
    return accel__fail(ACCEL_ERROR_OUT_OF_DEVICE_MEMORY,
                       "%s: %s: the backend asked for a GEMM workspace of "
                       "%llu bytes, more than size_t holds",
                       what, d->uri, (unsigned long long)bytes);
  }
  status = accel__allocator_alloc(d, stream, (size_t)bytes, out_workspace);
  if (status != ACCEL_OK) {
    // Say what the memory was for; the allocator's message says why not.
    char reason[768];
    const char* message = accel_last_error();
    size_t len = strnlen(message, sizeof(reason) - 1);
    memcpy(reason, message, len);
    reason[len] = '\0';
    char size[32];
    accel__format_bytes(size, sizeof(size), bytes);
    return accel__fail(status,
                       "%s: the GEMM workspace of %llu bytes (%s) the backend "
                       "asked for: %s",
                       what, (unsigned long long)bytes, size, reason);
  }
  p->workspace = accel__buffer_mem(*out_workspace);
  p->workspace_offset = accel__buffer_offset(*out_workspace, 0);
  p->workspace_size = bytes;
  return ACCEL_OK;
}

accel_status_t accel__gemm_check(const char* what, accel_stream_t* stream,
                                 const accel_gemm_t* gemm, accel__matrix_t* a,
                                 accel__matrix_t* b, accel__matrix_t* c) {
  accel_status_t status = accel__check_stream(what, stream);
  if (status != ACCEL_OK) return status;
  if (gemm == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: gemm is NULL", what);
  }
  if (gemm->struct_size < sizeof(accel_gemm_t)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: gemm->struct_size is %u, expected %zu; initialise "
                       "it with accel_gemm_init()",
                       what, gemm->struct_size, sizeof(accel_gemm_t));
  }
  status = accel__check_gemm_dtypes(what, gemm);
  if (status != ACCEL_OK) return status;
  if ((gemm->flags & ~(accel_gemm_flags_t)ACCEL_GEMM_ALLOW_TF32) != 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: unknown flags 0x%x",
                       what, gemm->flags);
  }
  size_t m = gemm->m, n = gemm->n, k = gemm->k;
  *a = (accel__matrix_t){"A",
                         gemm->a,
                         gemm->a_offset,
                         gemm->trans_a ? k : m,
                         gemm->trans_a ? m : k,
                         gemm->lda,
                         gemm->a_dtype,
                         0};
  *b = (accel__matrix_t){"B",
                         gemm->b,
                         gemm->b_offset,
                         gemm->trans_b ? n : k,
                         gemm->trans_b ? k : n,
                         gemm->ldb,
                         gemm->b_dtype,
                         0};
  *c = (accel__matrix_t){"C", gemm->c,   gemm->c_offset, m,
                         n,   gemm->ldc, gemm->c_dtype,  0};
  status = accel__check_matrix(what, stream, a);
  if (status == ACCEL_OK) status = accel__check_matrix(what, stream, b);
  if (status == ACCEL_OK) status = accel__check_matrix(what, stream, c);
  if (status == ACCEL_OK) status = accel__check_gemm_overlap(what, c, a);
  if (status == ACCEL_OK) status = accel__check_gemm_overlap(what, c, b);
  return status;
}

void accel__gemm_params(const accel_gemm_t* gemm, const accel__matrix_t* a,
                        const accel__matrix_t* b, const accel__matrix_t* c,
                        accel_plugin_gemm_t* p) {
  p->struct_size = sizeof(*p);
  p->a_dtype = (uint32_t)gemm->a_dtype;
  p->b_dtype = (uint32_t)gemm->b_dtype;
  p->c_dtype = (uint32_t)gemm->c_dtype;
  p->trans_a = gemm->trans_a ? 1u : 0u;
  p->trans_b = gemm->trans_b ? 1u : 0u;
  p->flags = gemm->flags;
  p->reserved0 = 0;
  p->m = gemm->m;
  p->n = gemm->n;
  p->k = gemm->k;
  p->alpha = gemm->alpha;
  p->beta = gemm->beta;
  p->a = accel__buffer_mem(a->buffer);
  p->a_offset = accel__buffer_offset(a->buffer, a->offset);
  p->lda = a->ld;
  p->b = accel__buffer_mem(b->buffer);
  p->b_offset = accel__buffer_offset(b->buffer, b->offset);
  p->ldb = b->ld;
  p->c = accel__buffer_mem(c->buffer);
  p->c_offset = accel__buffer_offset(c->buffer, c->offset);
  p->ldc = c->ld;
  p->workspace = NULL;
  p->workspace_offset = 0;
  p->workspace_size = 0;
}

accel_status_t accel_op_gemm(accel_stream_t* stream, const accel_gemm_t* gemm) {
  ACCEL__TRACE_STREAM_API("accel_op_gemm", stream);
  static const char what[] = "accel_op_gemm";
  accel__matrix_t a, b, c;
  accel_status_t status = accel__gemm_check(what, stream, gemm, &a, &b, &c);
  if (status != ACCEL_OK || gemm->m == 0 || gemm->n == 0) return status;
  status = accel__use(stream, c.buffer, gemm->k != 0 ? a.buffer : NULL,
                      gemm->k != 0 ? b.buffer : NULL);
  if (status != ACCEL_OK) return status;
  accel_plugin_gemm_t p;
  accel__gemm_params(gemm, &a, &b, &c, &p);
  accel_buffer_t* workspace = NULL;
  status = accel__gemm_workspace(what, stream, &p, &workspace);
  if (status == ACCEL_OK) {
    accel_device_t* d = stream->device;
    status = accel__capturing(stream)
                 ? accel__graph_op_gemm(stream, &p, gemm, workspace)
                 : d->ops->op_gemm(d->impl, stream->impl, &p);
  }
  // Back to the stream's pool at once: only work enqueued after the GEMM
  // on this stream can reuse it (allocator_stream.c, stream-ordered reuse).
  accel_buffer_release(workspace);
  return status == ACCEL_OK ? ACCEL_OK : accel__op_result(what, stream, status);
}
