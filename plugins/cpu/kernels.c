// SPDX-License-Identifier: MIT
//
// The loops behind the built-in elementwise ops and the sum, built with
// -O3 (CMakeLists.txt) so the compiler vectorises them: plain counted
// loops, no calls per element, f16/bf16 converted to f32 in blocks of
// ACCEL_CPU_BLOCK elements on the stack.
//
// Every op is split into chunks of ACCEL_CPU_CHUNK elements run on the
// pool. Destinations may be exactly the same range as a source (z = x + z,
// an in-place cast between same-size dtypes), so the f32 and i32 loops do
// not use restrict: the compiler versions them with a run-time overlap
// check instead. The block paths read a whole block before writing it,
// which is safe for identical ranges.
//
// Sums are deterministic: each chunk sums its elements in a fixed order
// (16 f32 lanes per 256-element block, blocks added in f64), and the
// chunks' results are combined in index order, whatever thread ran them.
//
// Activations (ABI 1.4) compute in f32 with libm: GELU as
// x * erfc(-x / sqrt(2)) / 2, which equals x * (1 + erf(x / sqrt(2))) / 2
// but keeps its accuracy for negative x, where 1 + erf cancels; SiLU as
// x / (1 + exp(-x)). Bias-add walks each chunk row by row, so every row
// segment is a plain vectorisable add against the bias.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "convert.h"
#include "cpu.h"

// Elements per pool chunk (also the unit of the sum's deterministic order).
#define ACCEL_CPU_CHUNK ((uint64_t)1 << 16)
// Elements per on-stack f32 block.
#define ACCEL_CPU_BLOCK 512
// Lanes and block length of the float sum.
#define ACCEL_CPU_SUM_LANES 16
#define ACCEL_CPU_SUM_BLOCK 256

typedef struct accel_cpu_op_run {
  const accel_cpu_op_t* op;
  double* partial_f;   // SUM of floats: one per chunk
  int64_t* partial_i;  // SUM of i32: one per chunk
} accel_cpu_op_run_t;

// ---------------------------------------------------------------------------
// f32 and i32 loops
// ---------------------------------------------------------------------------

static void accel_cpu_f32_range(const accel_cpu_op_t* op, float* z,
                                const float* x, const float* y, size_t n) {
  float a = (float)op->value;
  switch (op->kind) {
    case ACCEL_CPU_OP_SCALE:
      for (size_t i = 0; i < n; i++) z[i] = a * z[i];
      break;
    case ACCEL_CPU_OP_AXPY:
      for (size_t i = 0; i < n; i++) z[i] = a * x[i] + z[i];
      break;
    case ACCEL_CPU_OP_ADD:
      for (size_t i = 0; i < n; i++) z[i] = x[i] + y[i];
      break;
    case ACCEL_CPU_OP_MUL:
      for (size_t i = 0; i < n; i++) z[i] = x[i] * y[i];
      break;
    default:
      break;
  }
}

static void accel_cpu_i32_range(const accel_cpu_op_t* op, uint32_t* z,
                                const uint32_t* x, const uint32_t* y,
                                size_t n) {
  // Unsigned arithmetic wraps modulo 2^32 without undefined behaviour.
  if (op->kind == ACCEL_CPU_OP_ADD) {
    for (size_t i = 0; i < n; i++) z[i] = x[i] + y[i];
  } else if (op->kind == ACCEL_CPU_OP_MUL) {
    for (size_t i = 0; i < n; i++) z[i] = x[i] * y[i];
  }
}

// f16/bf16 arithmetic: f32 blocks on the stack, rounded on store.
static void accel_cpu_half_range(const accel_cpu_op_t* op, uint16_t* z,
                                 const uint16_t* x, const uint16_t* y,
                                 size_t n) {
  float zf[ACCEL_CPU_BLOCK], xf[ACCEL_CPU_BLOCK], yf[ACCEL_CPU_BLOCK];
  for (size_t b = 0; b < n; b += ACCEL_CPU_BLOCK) {
    size_t m = n - b < ACCEL_CPU_BLOCK ? n - b : ACCEL_CPU_BLOCK;
    switch (op->kind) {
      case ACCEL_CPU_OP_SCALE:
        accel_cpu_to_f32_block(zf, z + b, op->dtype, m);
        accel_cpu_f32_range(op, zf, NULL, NULL, m);
        break;
      case ACCEL_CPU_OP_AXPY:
        accel_cpu_to_f32_block(zf, z + b, op->dtype, m);
        accel_cpu_to_f32_block(xf, x + b, op->dtype, m);
        accel_cpu_f32_range(op, zf, xf, NULL, m);
        break;
      default:  // ADD, MUL
        accel_cpu_to_f32_block(xf, x + b, op->dtype, m);
        accel_cpu_to_f32_block(yf, y + b, op->dtype, m);
        accel_cpu_f32_range(op, zf, xf, yf, m);
        break;
    }
    accel_cpu_from_f32_block(z + b, zf, op->dtype, m);
  }
}

// z = act(x) over `n` f32 elements (z may be x).
static void accel_cpu_unary_f32(uint32_t act, float* z, const float* x,
                                size_t n) {
  switch (act) {
    case ACCEL_PLUGIN_UNARY_GELU:
      for (size_t i = 0; i < n; i++) {
        z[i] = 0.5f * x[i] * erfcf(-x[i] * 0.70710678118654752f);
      }
      break;
    case ACCEL_PLUGIN_UNARY_SILU:
      for (size_t i = 0; i < n; i++) z[i] = x[i] / (1.0f + expf(-x[i]));
      break;
    default:  // RELU: -0 and NaN pass through (x < 0 is false for both)
      for (size_t i = 0; i < n; i++) z[i] = x[i] < 0.0f ? 0.0f : x[i];
      break;
  }
}

static void accel_cpu_unary_range(const accel_cpu_op_t* op, void* z,
                                  const void* x, size_t n) {
  if (op->dtype == ACCEL_DTYPE_F32) {
    accel_cpu_unary_f32(op->unary, z, x, n);
    return;
  }
  float f[ACCEL_CPU_BLOCK];
  for (size_t b = 0; b < n; b += ACCEL_CPU_BLOCK) {
    size_t m = n - b < ACCEL_CPU_BLOCK ? n - b : ACCEL_CPU_BLOCK;
    accel_cpu_to_f32_block(f, (const uint16_t*)x + b, op->dtype, m);
    accel_cpu_unary_f32(op->unary, f, f, m);
    accel_cpu_from_f32_block((uint16_t*)z + b, f, op->dtype, m);
  }
}

// Elements [begin, begin + n) of y += bias broadcast over rows: one add
// per row segment, with the loops of ADD (z = x + y, z and x the same).
static void accel_cpu_bias_range(const accel_cpu_op_t* op, uint64_t begin,
                                 unsigned char* z, size_t n) {
  accel_cpu_op_t add = *op;
  add.kind = ACCEL_CPU_OP_ADD;
  size_t es = accel_plugin_dtype_size(op->dtype);
  uint64_t col = begin % op->cols;
  for (size_t i = 0; i < n;) {
    size_t len = op->cols - col < n - i ? (size_t)(op->cols - col) : n - i;
    unsigned char* y = z + i * es;
    const unsigned char* bias = (const unsigned char*)op->x + col * es;
    if (op->dtype == ACCEL_DTYPE_F32) {
      accel_cpu_f32_range(&add, (float*)y, (const float*)y, (const float*)bias,
                          len);
    } else if (op->dtype == ACCEL_DTYPE_I32) {
      accel_cpu_i32_range(&add, (uint32_t*)y, (const uint32_t*)y,
                          (const uint32_t*)bias, len);
    } else {
      accel_cpu_half_range(&add, (uint16_t*)y, (const uint16_t*)y,
                           (const uint16_t*)bias, len);
    }
    i += len;
    col = 0;
  }
}

static void accel_cpu_fill_range(const accel_cpu_op_t* op, void* z, size_t n) {
  switch (op->dtype) {
    case ACCEL_DTYPE_F32: {
      float v = (float)op->value, *d = z;
      for (size_t i = 0; i < n; i++) d[i] = v;
      break;
    }
    case ACCEL_DTYPE_I32: {
      int32_t v = accel_cpu_f64_to_i32(op->value), *d = z;
      for (size_t i = 0; i < n; i++) d[i] = v;
      break;
    }
    default: {
      uint16_t v = op->dtype == ACCEL_DTYPE_F16
                       ? accel_cpu_f64_to_f16(op->value)
                       : accel_cpu_f64_to_bf16(op->value);
      uint16_t* d = z;
      for (size_t i = 0; i < n; i++) d[i] = v;
      break;
    }
  }
}

static void accel_cpu_cast_range(const accel_cpu_op_t* op, void* z,
                                 const void* x, size_t n) {
  size_t dsize = accel_plugin_dtype_size(op->dtype);
  if (op->dtype == op->src_dtype) {
    if (z != x) memcpy(z, x, n * dsize);
    return;
  }
  if (op->src_dtype == ACCEL_DTYPE_I32 && op->dtype == ACCEL_DTYPE_BF16) {
    // One rounding straight from the integer (via f32 it could be two).
    const int32_t* s = x;
    uint16_t* d = z;
    int32_t tmp[ACCEL_CPU_BLOCK];
    for (size_t b = 0; b < n; b += ACCEL_CPU_BLOCK) {
      size_t m = n - b < ACCEL_CPU_BLOCK ? n - b : ACCEL_CPU_BLOCK;
      memcpy(tmp, s + b, m * sizeof(int32_t));
      for (size_t i = 0; i < m; i++) d[b + i] = accel_cpu_i32_to_bf16(tmp[i]);
    }
    return;
  }
  // Every other pair goes through f32 exactly once: f16, bf16 and i32 to
  // f32 are exact or a single rounding, and so is f32 to the destination.
  size_t ssize = accel_plugin_dtype_size(op->src_dtype);
  float f[ACCEL_CPU_BLOCK];
  for (size_t b = 0; b < n; b += ACCEL_CPU_BLOCK) {
    size_t m = n - b < ACCEL_CPU_BLOCK ? n - b : ACCEL_CPU_BLOCK;
    accel_cpu_to_f32_block(f, (const unsigned char*)x + b * ssize,
                           op->src_dtype, m);
    accel_cpu_from_f32_block((unsigned char*)z + b * dsize, f, op->dtype, m);
  }
}

// Sum of `n` floats in a fixed order: 16 f32 lanes per block, blocks in
// f64.
static double accel_cpu_sum_f32(const float* x, size_t n) {
  double total = 0;
  size_t b = 0;
  for (; b + ACCEL_CPU_SUM_BLOCK <= n; b += ACCEL_CPU_SUM_BLOCK) {
    float lane[ACCEL_CPU_SUM_LANES] = {0};
    for (size_t i = 0; i < ACCEL_CPU_SUM_BLOCK; i += ACCEL_CPU_SUM_LANES) {
      for (size_t j = 0; j < ACCEL_CPU_SUM_LANES; j++) lane[j] += x[b + i + j];
    }
    // Pairwise over the lanes.
    for (size_t w = ACCEL_CPU_SUM_LANES / 2; w > 0; w /= 2) {
      for (size_t j = 0; j < w; j++) lane[j] += lane[j + w];
    }
    total += lane[0];
  }
  for (; b < n; b++) total += x[b];
  return total;
}

static void accel_cpu_sum_range(accel_cpu_op_run_t* run, uint64_t index,
                                const void* x, size_t n) {
  const accel_cpu_op_t* op = run->op;
  if (op->dtype == ACCEL_DTYPE_I32) {
    const int32_t* s = x;
    int64_t acc = 0;
    for (size_t i = 0; i < n; i++) acc += s[i];
    run->partial_i[index] = acc;
    return;
  }
  if (op->dtype == ACCEL_DTYPE_F32) {
    run->partial_f[index] = accel_cpu_sum_f32(x, n);
    return;
  }
  // Block size is a multiple of the sum block, so the order matches f32.
  float f[ACCEL_CPU_BLOCK];
  double total = 0;
  for (size_t b = 0; b < n; b += ACCEL_CPU_BLOCK) {
    size_t m = n - b < ACCEL_CPU_BLOCK ? n - b : ACCEL_CPU_BLOCK;
    accel_cpu_to_f32_block(f, (const uint16_t*)x + b, op->dtype, m);
    total += accel_cpu_sum_f32(f, m);
  }
  run->partial_f[index] = total;
}

static void accel_cpu_op_chunk(void* ctx, uint64_t index, uint32_t worker) {
  (void)worker;
  accel_cpu_op_run_t* run = ctx;
  const accel_cpu_op_t* op = run->op;
  uint64_t begin = index * ACCEL_CPU_CHUNK;
  size_t n = (size_t)(op->count - begin < ACCEL_CPU_CHUNK ? op->count - begin
                                                          : ACCEL_CPU_CHUNK);
  size_t zs = accel_plugin_dtype_size(op->dtype);
  size_t xs = op->kind == ACCEL_CPU_OP_CAST
                  ? accel_plugin_dtype_size(op->src_dtype)
                  : zs;
  unsigned char* z = (unsigned char*)op->z + begin * zs;
  if (op->kind == ACCEL_CPU_OP_BIAS_ADD) {  // x is the bias row, not offset
    accel_cpu_bias_range(op, begin, z, n);
    return;
  }
  const unsigned char* x =
      op->x != NULL ? (const unsigned char*)op->x + begin * xs : NULL;
  const unsigned char* y =
      op->y != NULL ? (const unsigned char*)op->y + begin * zs : NULL;
  switch (op->kind) {
    case ACCEL_CPU_OP_FILL:
      accel_cpu_fill_range(op, z, n);
      return;
    case ACCEL_CPU_OP_CAST:
      accel_cpu_cast_range(op, z, x, n);
      return;
    case ACCEL_CPU_OP_SUM:
      accel_cpu_sum_range(run, index, x, n);
      return;
    case ACCEL_CPU_OP_UNARY:
      accel_cpu_unary_range(op, z, x, n);
      return;
    default:
      break;
  }
  if (op->dtype == ACCEL_DTYPE_F32) {
    accel_cpu_f32_range(op, (float*)z, (const float*)x, (const float*)y, n);
  } else if (op->dtype == ACCEL_DTYPE_I32) {
    accel_cpu_i32_range(op, (uint32_t*)z, (const uint32_t*)x,
                        (const uint32_t*)y, n);
  } else {
    accel_cpu_half_range(op, (uint16_t*)z, (const uint16_t*)x,
                         (const uint16_t*)y, n);
  }
}

// Stores the combined sum as the op's dtype.
static void accel_cpu_sum_store(const accel_cpu_op_run_t* run,
                                uint64_t chunks) {
  const accel_cpu_op_t* op = run->op;
  if (op->dtype == ACCEL_DTYPE_I32) {
    uint64_t total = 0;  // wraps like the 64-bit sum's low 32 bits
    for (uint64_t i = 0; i < chunks; i++) total += (uint64_t)run->partial_i[i];
    uint32_t low = (uint32_t)total;
    memcpy(op->z, &low, sizeof(low));
    return;
  }
  double total = 0;
  for (uint64_t i = 0; i < chunks; i++) total += run->partial_f[i];
  if (op->dtype == ACCEL_DTYPE_F32) {
    float f = (float)total;
    memcpy(op->z, &f, sizeof(f));
  } else {
    uint16_t h = op->dtype == ACCEL_DTYPE_F16 ? accel_cpu_f64_to_f16(total)
                                              : accel_cpu_f64_to_bf16(total);
    memcpy(op->z, &h, sizeof(h));
  }
}

accel_status_t accel_cpu_op_execute(accel_cpu_pool_t* pool,
                                    const accel_cpu_op_t* op, char* message,
                                    size_t message_size) {
  uint64_t chunks = (op->count + ACCEL_CPU_CHUNK - 1) / ACCEL_CPU_CHUNK;
  accel_cpu_op_run_t run = {.op = op};
  double partial_f[64];
  int64_t partial_i[64];
  void* heap = NULL;
  if (op->kind == ACCEL_CPU_OP_SUM) {
    run.partial_f = partial_f;
    run.partial_i = partial_i;
    if (chunks > 64) {
      heap = malloc((size_t)chunks * sizeof(double));
      if (heap == NULL) {
        snprintf(message, message_size,
                 "sum of %llu elements: out of host memory for partial sums",
                 (unsigned long long)op->count);
        return ACCEL_ERROR_OUT_OF_MEMORY;
      }
      run.partial_f = heap;
      run.partial_i = heap;
    }
  }
  accel_cpu_pool_run(pool, chunks, accel_cpu_op_chunk, &run);
  if (op->kind == ACCEL_CPU_OP_SUM) accel_cpu_sum_store(&run, chunks);
  free(heap);
  return ACCEL_OK;
}
