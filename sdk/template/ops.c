// SPDX-License-Identifier: MIT
//
// Built-in ops of the template plugin (ABI 1.1, the ABI 1.3 random fills
// and the ABI 1.4 activations and bias-add): plain loops over host memory,
// written for clarity, not speed. They are the template's reference of
// what each op computes (see <accel/plugin.h>):
// - F16 and BF16 are loaded as f32, computed in f32 and rounded to nearest
//   even on store, with the SDK's conversions (<accel/plugin_dtype.h>);
// - I32 arithmetic wraps modulo 2^32; float to I32 truncates toward zero
//   and saturates, NaN gives 0;
// - sum accumulates in double, GEMM in double (a simple triple loop; a
//   real backend calls cuBLAS, rocBLAS or a tuned kernel here);
// - the activations compute in double with libm and round once (GELU as
//   x * erfc(-x / sqrt(2)) / 2, the exact form without the cancellation
//   of 1 + erf(x / sqrt(2)) for negative x); a device computes them in f32
//   (plugin.h), a few ulp away, well within accel-conform's tolerance;
// - the random fills (op_rng, ABI 1.3) run <accel/philox.h>, the code
//   every backend runs, element by element, so the bytes are those of
//   every other device; the build turns floating-point contraction off
//   (-ffp-contract=off), as that header asks.
// The plugin leaves op_gemm_batched (ABI 1.4) NULL: the core then runs a
// strided-batched GEMM as one op_gemm per member.
// Each op is queued on the stream as one task, like a kernel launch.
#include <accel/philox.h>
#include <accel/plugin_dtype.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "template.h"

// Element `i` of `p` as a double (exact for every dtype).
static double template_load(const void* p, uint32_t dtype, uint64_t i) {
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

// Stores `v` as element `i` of `p`, rounding to nearest even.
static void template_store(void* p, uint32_t dtype, uint64_t i, double v) {
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

// ---------------------------------------------------------------------------
// Tasks. Arguments: `dst` (output), `src`, `src2` (inputs), `count`,
// `dtype` (`dtype2`: the source dtype of a cast), `value` (scalar).
// ---------------------------------------------------------------------------

static accel_status_t template_fill_op_task(template_task_t* t, char* m,
                                            size_t n) {
  (void)m;
  (void)n;
  for (uint64_t i = 0; i < t->count; i++) {
    template_store(t->dst, t->dtype, i, t->value);
  }
  return ACCEL_OK;
}

static accel_status_t template_cast_task(template_task_t* t, char* m,
                                         size_t n) {
  (void)m;
  (void)n;
  // In place (same range, same element size) is allowed: read element i
  // before writing it.
  for (uint64_t i = 0; i < t->count; i++) {
    template_store(t->dst, t->dtype, i, template_load(t->src, t->dtype2, i));
  }
  return ACCEL_OK;
}

static accel_status_t template_scale_task(template_task_t* t, char* m,
                                          size_t n) {
  (void)m;
  (void)n;
  float alpha = (float)t->value;
  for (uint64_t i = 0; i < t->count; i++) {
    float x = (float)template_load(t->dst, t->dtype, i);
    template_store(t->dst, t->dtype, i, alpha * x);
  }
  return ACCEL_OK;
}

static accel_status_t template_axpy_task(template_task_t* t, char* m,
                                         size_t n) {
  (void)m;
  (void)n;
  float alpha = (float)t->value;
#ifdef CONFORM_BUG_WRONG_OP
  alpha = 1.0f;  // deliberate bug for tests/conform/fixtures: ignore alpha
#endif
  for (uint64_t i = 0; i < t->count; i++) {
    float x = (float)template_load(t->src, t->dtype, i);
    float y = (float)template_load(t->dst, t->dtype, i);
    template_store(t->dst, t->dtype, i, alpha * x + y);
  }
  return ACCEL_OK;
}

// z = x + y (`value` 0) or z = x * y (`value` 1).
static accel_status_t template_binary_task(template_task_t* t, char* m,
                                           size_t n) {
  (void)m;
  (void)n;
  bool mul = t->value != 0.0;
  for (uint64_t i = 0; i < t->count; i++) {
    if (t->dtype == ACCEL_DTYPE_I32) {
      uint32_t x = (uint32_t)((const int32_t*)t->src)[i];
      uint32_t y = (uint32_t)((const int32_t*)t->src2)[i];
#ifdef CONFORM_BUG_WRONG_OP
      uint32_t z = mul ? x * y : x - y;  // deliberate bug: add subtracts
#else
      uint32_t z = mul ? x * y : x + y;  // wraps modulo 2^32
#endif
      memcpy((int32_t*)t->dst + i, &z, sizeof(z));
      continue;
    }
    float x = (float)template_load(t->src, t->dtype, i);
    float y = (float)template_load(t->src2, t->dtype, i);
#ifdef CONFORM_BUG_WRONG_OP
    template_store(t->dst, t->dtype, i, mul ? x * y : x - y);
#else
    template_store(t->dst, t->dtype, i, mul ? x * y : x + y);
#endif
  }
  return ACCEL_OK;
}

static accel_status_t template_sum_task(template_task_t* t, char* m, size_t n) {
  (void)m;
  (void)n;
  if (t->dtype == ACCEL_DTYPE_I32) {
    int64_t sum = 0;
    for (uint64_t i = 0; i < t->count; i++) sum += ((const int32_t*)t->src)[i];
    uint32_t low = (uint32_t)(uint64_t)sum;  // the low 32 bits
    memcpy(t->dst, &low, sizeof(low));
    return ACCEL_OK;
  }
  double sum = 0.0;
  for (uint64_t i = 0; i < t->count; i++) {
    sum += template_load(t->src, t->dtype, i);
  }
  template_store(t->dst, t->dtype, 0, sum);
  return ACCEL_OK;
}

// The template's reference GEMM: C = alpha * op(A) * op(B) + beta * C with
// a double accumulator. O(m n k) and unblocked: correct, not fast.
static accel_status_t template_gemm_task(template_task_t* t, char* m,
                                         size_t n) {
  (void)m;
  (void)n;
  const accel_plugin_gemm_t* g = &t->gemm;
  const char* a = (const char*)g->a + g->a_offset;
  const char* b = (const char*)g->b + g->b_offset;
  char* c = (char*)g->c + g->c_offset;
  uint64_t lda = g->lda ? g->lda : (g->trans_a ? g->m : g->k);
  uint64_t ldb = g->ldb ? g->ldb : (g->trans_b ? g->k : g->n);
  uint64_t ldc = g->ldc ? g->ldc : g->n;
  for (uint64_t i = 0; i < g->m; i++) {
    for (uint64_t j = 0; j < g->n; j++) {
      double acc = 0.0;
      for (uint64_t p = 0; p < g->k; p++) {
        uint64_t ia = g->trans_a ? p * lda + i : i * lda + p;
        uint64_t ib = g->trans_b ? j * ldb + p : p * ldb + j;
        acc +=
            template_load(a, g->a_dtype, ia) * template_load(b, g->b_dtype, ib);
      }
      double out = g->alpha * acc;
      if (g->beta != 0.0) {
        out += g->beta * template_load(c, g->c_dtype, i * ldc + j);
      }
      template_store(c, g->c_dtype, i * ldc + j, out);
    }
  }
  return ACCEL_OK;
}

// dst = act(src), act an accel_plugin_unary_op_t in `dtype2`; in place
// works (element i is read before it is written).
static accel_status_t template_unary_task(template_task_t* t, char* m,
                                          size_t n) {
  (void)m;
  (void)n;
  for (uint64_t i = 0; i < t->count; i++) {
    double x = template_load(t->src, t->dtype, i), y;
    switch (t->dtype2) {
      case ACCEL_PLUGIN_UNARY_GELU:
        y = 0.5 * x * erfc(-x * 0.70710678118654752440);
        break;
      case ACCEL_PLUGIN_UNARY_SILU:
        y = x / (1.0 + exp(-x));
        break;
      default:  // RELU: -0 and NaN pass through
        y = x < 0.0 ? 0.0 : x;
        break;
    }
    template_store(t->dst, t->dtype, i, y);
  }
  return ACCEL_OK;
}

// dst[r * cols + c] += src[c], with `count` rows and `value` cols.
static accel_status_t template_bias_add_task(template_task_t* t, char* m,
                                             size_t n) {
  (void)m;
  (void)n;
  uint64_t cols = (uint64_t)t->value;
  for (uint64_t i = 0; i < t->count * cols; i++) {
    if (t->dtype == ACCEL_DTYPE_I32) {
      uint32_t y = (uint32_t)((const int32_t*)t->dst)[i];
      uint32_t b = (uint32_t)((const int32_t*)t->src)[i % cols];
      uint32_t z = y + b;  // wraps modulo 2^32
      memcpy((int32_t*)t->dst + i, &z, sizeof(z));
      continue;
    }
    float y = (float)template_load(t->dst, t->dtype, i);
    float b = (float)template_load(t->src, t->dtype, i % cols);
    template_store(t->dst, t->dtype, i, y + b);
  }
  return ACCEL_OK;
}

// dst[i] = element i of the random stream (`rng.seed`, `rng.offset`): word
// i % 4 of the Philox block at counter offset + i / 4, transformed by the
// header (bits, uniform in [a, b), normal with mean a and std b) and
// stored as `dtype` (16 bits for f16 and bf16, 32 otherwise).
static accel_status_t template_rng_task(template_task_t* t, char* m, size_t n) {
  (void)m;
  (void)n;
  size_t size = accel_plugin_dtype_size(t->dtype);
  unsigned char* dst = t->dst;
  for (uint64_t block = 0; block < (t->count + 3) / 4; block++) {
    accel_philox_block_t words =
        accel_philox_at(t->rng.seed, t->rng.offset, block);
    for (uint32_t j = 0; j < 4 && block * 4 + j < t->count; j++) {
      accel_philox_u32_t v = accel_philox_element(words, j, t->rng.distribution,
                                                  t->dtype, t->rng.a, t->rng.b);
      unsigned char* at = dst + (block * 4 + j) * size;
      if (size == 2) {
        uint16_t half = (uint16_t)v;
        memcpy(at, &half, sizeof(half));
      } else {
        uint32_t word = v;
        memcpy(at, &word, sizeof(word));
      }
    }
  }
  return ACCEL_OK;
}

// ---------------------------------------------------------------------------
// Entries
// ---------------------------------------------------------------------------

// Creates a task for `fn` or reports the host allocation failure.
static template_task_t* template_op_task(template_device_t* device,
                                         template_task_fn_t fn) {
  template_task_t* task = template_task_create(fn);
  if (task == NULL) {
    device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                       TEMPLATE_NAME ":%u: op task", device->index);
  }
  return task;
}

accel_status_t template_op_fill(void* device, void* stream, void* dst,
                                uint64_t dst_offset, uint32_t dtype,
                                uint64_t count, double value) {
  template_task_t* t = template_op_task(device, template_fill_op_task);
  if (t == NULL) return ACCEL_ERROR_OUT_OF_MEMORY;
  t->dst = (char*)dst + dst_offset;
  t->dtype = dtype;
  t->count = count;
  t->value = value;
  return template_submit(((template_device_t*)device)->host, stream, t);
}

accel_status_t template_op_cast(void* device, void* stream, void* dst,
                                uint64_t dst_offset, uint32_t dst_dtype,
                                const void* src, uint64_t src_offset,
                                uint32_t src_dtype, uint64_t count) {
  template_task_t* t = template_op_task(device, template_cast_task);
  if (t == NULL) return ACCEL_ERROR_OUT_OF_MEMORY;
  t->dst = (char*)dst + dst_offset;
  t->src = (const char*)src + src_offset;
  t->dtype = dst_dtype;
  t->dtype2 = src_dtype;
  t->count = count;
  return template_submit(((template_device_t*)device)->host, stream, t);
}

accel_status_t template_op_scale(void* device, void* stream, void* x,
                                 uint64_t x_offset, uint32_t dtype,
                                 uint64_t count, double alpha) {
  template_task_t* t = template_op_task(device, template_scale_task);
  if (t == NULL) return ACCEL_ERROR_OUT_OF_MEMORY;
  t->dst = (char*)x + x_offset;
  t->dtype = dtype;
  t->count = count;
  t->value = alpha;
  return template_submit(((template_device_t*)device)->host, stream, t);
}

accel_status_t template_op_axpy(void* device, void* stream, void* y,
                                uint64_t y_offset, const void* x,
                                uint64_t x_offset, uint32_t dtype,
                                uint64_t count, double alpha) {
  template_task_t* t = template_op_task(device, template_axpy_task);
  if (t == NULL) return ACCEL_ERROR_OUT_OF_MEMORY;
  t->dst = (char*)y + y_offset;
  t->src = (const char*)x + x_offset;
  t->dtype = dtype;
  t->count = count;
  t->value = alpha;
  return template_submit(((template_device_t*)device)->host, stream, t);
}

static accel_status_t template_binary(void* device, void* stream, void* z,
                                      uint64_t z_offset, const void* x,
                                      uint64_t x_offset, const void* y,
                                      uint64_t y_offset, uint32_t dtype,
                                      uint64_t count, bool mul) {
  template_task_t* t = template_op_task(device, template_binary_task);
  if (t == NULL) return ACCEL_ERROR_OUT_OF_MEMORY;
  t->dst = (char*)z + z_offset;
  t->src = (const char*)x + x_offset;
  t->src2 = (const char*)y + y_offset;
  t->dtype = dtype;
  t->count = count;
  t->value = mul ? 1.0 : 0.0;
  return template_submit(((template_device_t*)device)->host, stream, t);
}

accel_status_t template_op_add(void* device, void* stream, void* z,
                               uint64_t z_offset, const void* x,
                               uint64_t x_offset, const void* y,
                               uint64_t y_offset, uint32_t dtype,
                               uint64_t count) {
  return template_binary(device, stream, z, z_offset, x, x_offset, y, y_offset,
                         dtype, count, false);
}

accel_status_t template_op_mul(void* device, void* stream, void* z,
                               uint64_t z_offset, const void* x,
                               uint64_t x_offset, const void* y,
                               uint64_t y_offset, uint32_t dtype,
                               uint64_t count) {
  return template_binary(device, stream, z, z_offset, x, x_offset, y, y_offset,
                         dtype, count, true);
}

accel_status_t template_op_sum(void* device, void* stream, void* out,
                               uint64_t out_offset, const void* x,
                               uint64_t x_offset, uint32_t dtype,
                               uint64_t count) {
  template_task_t* t = template_op_task(device, template_sum_task);
  if (t == NULL) return ACCEL_ERROR_OUT_OF_MEMORY;
  t->dst = (char*)out + out_offset;
  t->src = (const char*)x + x_offset;
  t->dtype = dtype;
  t->count = count;
  return template_submit(((template_device_t*)device)->host, stream, t);
}

accel_status_t template_op_gemm(void* device, void* stream,
                                const accel_plugin_gemm_t* gemm) {
  template_task_t* t = template_op_task(device, template_gemm_task);
  if (t == NULL) return ACCEL_ERROR_OUT_OF_MEMORY;
  // Copy only what the core's struct holds; the rest stays zero.
  size_t n =
      gemm->struct_size < sizeof(t->gemm) ? gemm->struct_size : sizeof(t->gemm);
  memcpy(&t->gemm, gemm, n);
  return template_submit(((template_device_t*)device)->host, stream, t);
}

accel_status_t template_op_unary(void* device, void* stream, void* dst,
                                 uint64_t dst_offset, const void* src,
                                 uint64_t src_offset, uint32_t dtype,
                                 uint64_t count, uint32_t op) {
  template_task_t* t = template_op_task(device, template_unary_task);
  if (t == NULL) return ACCEL_ERROR_OUT_OF_MEMORY;
  t->dst = (char*)dst + dst_offset;
  t->src = (const char*)src + src_offset;
  t->dtype = dtype;
  t->dtype2 = op;
  t->count = count;
  return template_submit(((template_device_t*)device)->host, stream, t);
}

accel_status_t template_op_bias_add(void* device, void* stream, void* y,
                                    uint64_t y_offset, const void* bias,
                                    uint64_t bias_offset, uint32_t dtype,
                                    uint64_t rows, uint64_t cols) {
  template_task_t* t = template_op_task(device, template_bias_add_task);
  if (t == NULL) return ACCEL_ERROR_OUT_OF_MEMORY;
  t->dst = (char*)y + y_offset;
  t->src = (const char*)bias + bias_offset;
  t->dtype = dtype;
  t->count = rows;
  t->value = (double)cols;  // exact: cols * element size fits in memory
  return template_submit(((template_device_t*)device)->host, stream, t);
}

accel_status_t template_op_rng(void* device_ptr, void* stream, void* dst,
                               uint64_t dst_offset, uint32_t dtype,
                               uint64_t count, uint32_t distribution,
                               uint64_t seed, uint64_t offset, double a,
                               double b) {
  template_device_t* device = device_ptr;
  // The core has checked these (bits with I32, uniform and normal with a
  // float dtype); a distribution or dtype added after this plugin was
  // written is refused rather than filled wrongly.
  if (distribution > ACCEL_PHILOX_NORMAL ||
      accel_plugin_dtype_size(dtype) == 0 ||
      (distribution == ACCEL_PHILOX_BITS) != (dtype == ACCEL_DTYPE_I32)) {
    return device->host->fail(device->host, ACCEL_ERROR_UNSUPPORTED,
                              TEMPLATE_NAME
                              ":%u: random fill of distribution %u in "
                              "dtype %u",
                              device->index, (unsigned)distribution,
                              (unsigned)dtype);
  }
  template_task_t* t = template_op_task(device, template_rng_task);
  if (t == NULL) return ACCEL_ERROR_OUT_OF_MEMORY;
  t->dst = (char*)dst + dst_offset;
  t->dtype = dtype;
  t->count = count;
  t->rng.seed = seed;
  t->rng.offset = offset;
  t->rng.distribution = distribution;
  // The header computes in f32 from the f32 values of the parameters.
  t->rng.a = (float)a;
  t->rng.b = (float)b;
  return template_submit(device->host, stream, t);
}
