// SPDX-License-Identifier: MIT
//
// The "device side" of libfakecuda: which images the fake GPU accepts, and
// host versions of the kernels it can run. Test-only; it checks the CUDA
// plugin's plumbing, not NVIDIA hardware.
//
// Each host kernel reads its kernelParams exactly as the parameter list of
// the GPU kernel (plugins/cuda/kernels/ops.cu, tests/cuda/vadd.cu,
// fakecuda/add_one.cu, tools/accel-bench/kernels/empty.cu) and computes
// what the GPU computes. The element-wise kernels are grid-stride loops,
// so the order does not matter; the two sum passes are emulated per block
// and per thread (f32 per thread, the fixed shared-memory tree in f64 or
// u64) with the launch's grid, so the result is the GPU's bit for bit.
// Built with -ffp-contract=off: the kernels use __fmul_rn/__fadd_rn, never
// a fused multiply-add. Conversions are the SDK's (accel/plugin_dtype.h);
// fill and i32->bf16 round once from the double (__double2half and
// __double2bfloat16), done here by rounding to f32 "to odd" first.
#include <accel/philox.h>
#include <accel/plugin_dtype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fakecuda.h"

enum { F32, F16, BF16, I32 };  // ops.cu's dtype order (accel_dtype_t)

enum {
  OP_FILL,
  OP_CAST,
  OP_SCALE,
  OP_AXPY,
  OP_ADD,
  OP_MUL,
  OP_SUM_PARTIAL,
  OP_SUM_FINAL,
  OP_GEMM_SCALE,
  OP_RNG,
  OP_VADD,
  OP_ADD_ONE,
  OP_EMPTY
};

// The ABI 1.4 kernels: activations and bias-add.
enum { OP_UNARY = OP_EMPTY + 1, OP_BIAS_ADD };

// ops.cu's kSumThreads: its shared arrays hold exactly this many threads.
#define SUM_THREADS 256u

#define K(name, op, dt, st, n, ...)      \
  {                                      \
    name, op, dt, st, n, { __VA_ARGS__ } \
  }
#define FILL(D, d) K("accel_cuda_fill_" #D, OP_FILL, d, d, 3, 8, 8, 8)
#define CAST(D, d, S, s) \
  K("accel_cuda_cast_" #D "_" #S, OP_CAST, d, s, 3, 8, 8, 8)
#define CASTS(D, d)                                                   \
  CAST(D, d, f32, F32), CAST(D, d, f16, F16), CAST(D, d, bf16, BF16), \
      CAST(D, d, i32, I32)
#define FLOAT_OPS(D, d)                                       \
  K("accel_cuda_scale_" #D, OP_SCALE, d, d, 3, 8, 8, 4),      \
      K("accel_cuda_axpy_" #D, OP_AXPY, d, d, 4, 8, 8, 8, 4), \
      K("accel_cuda_gemm_scale_" #D, OP_GEMM_SCALE, d, d, 5, 8, 8, 8, 8, 4)
#define BINARY_OPS(D, d)                                                 \
  K("accel_cuda_add_" #D, OP_ADD, d, d, 4, 8, 8, 8, 8),                  \
      K("accel_cuda_mul_" #D, OP_MUL, d, d, 4, 8, 8, 8, 8),              \
      K("accel_cuda_sum_partial_" #D, OP_SUM_PARTIAL, d, d, 3, 8, 8, 8), \
      K("accel_cuda_sum_final_" #D, OP_SUM_FINAL, d, d, 3, 8, 8, 4)

static const fakecuda_kernel_t fakecuda_kernels[] = {
    FILL(f32, F32),
    FILL(f16, F16),
    FILL(bf16, BF16),
    FILL(i32, I32),
    CASTS(f32, F32),
    CASTS(f16, F16),
    CASTS(bf16, BF16),
    CASTS(i32, I32),
    FLOAT_OPS(f32, F32),
    FLOAT_OPS(f16, F16),
    FLOAT_OPS(bf16, BF16),
    BINARY_OPS(f32, F32),
    BINARY_OPS(f16, F16),
    BINARY_OPS(bf16, BF16),
    BINARY_OPS(i32, I32),
    K("accel_cuda_rng", OP_RNG, 0, 0, 8, 8, 8, 4, 4, 8, 8, 4, 4),
    K("accel_cuda_unary_f32", OP_UNARY, F32, F32, 4, 8, 8, 8, 4),
    K("accel_cuda_unary_f16", OP_UNARY, F16, F16, 4, 8, 8, 8, 4),
    K("accel_cuda_unary_bf16", OP_UNARY, BF16, BF16, 4, 8, 8, 8, 4),
    K("accel_cuda_bias_add_f32", OP_BIAS_ADD, F32, F32, 4, 8, 8, 8, 8),
    K("accel_cuda_bias_add_f16", OP_BIAS_ADD, F16, F16, 4, 8, 8, 8, 8),
    K("accel_cuda_bias_add_bf16", OP_BIAS_ADD, BF16, BF16, 4, 8, 8, 8, 8),
    K("accel_cuda_bias_add_i32", OP_BIAS_ADD, I32, I32, 4, 8, 8, 8, 8),
    K("vadd", OP_VADD, F32, F32, 4, 8, 8, 8, 4),
    K("accel_conform_add_one", OP_ADD_ONE, I32, I32, 2, 8, 4),
    K("accel_bench_empty", OP_EMPTY, 0, 0, 0, 0),
};
_Static_assert(sizeof(fakecuda_kernels) / sizeof(fakecuda_kernels[0]) == 53 + 3,
               "the plugin's 53 built-in kernels and three test kernels");

const fakecuda_kernel_t* fakecuda_kernel_find(const char* name) {
  for (size_t i = 0; i < sizeof(fakecuda_kernels) / sizeof(fakecuda_kernels[0]);
       i++) {
    if (strcmp(fakecuda_kernels[i].name, name) == 0)
      return &fakecuda_kernels[i];
  }
  return fakecuda_conform_find(name);
}

// ---------------------------------------------------------------------------
// Elements
// ---------------------------------------------------------------------------

static size_t es(int dt) { return dt == F16 || dt == BF16 ? 2 : 4; }

static float ld(const void* p, int dt, uint64_t i) {
  const unsigned char* b = (const unsigned char*)p + i * es(dt);
  uint16_t h;
  int32_t v;
  float f;
  switch (dt) {
    case F32:
      memcpy(&f, b, 4);
      return f;
    case F16:
      memcpy(&h, b, 2);
      return accel_plugin_f16_to_f32(h);
    case BF16:
      memcpy(&h, b, 2);
      return accel_plugin_bf16_to_f32(h);
    default:
      memcpy(&v, b, 4);
      return (float)v;  // nearest even, as the GPU's (float)v
  }
}

static void st(void* p, int dt, uint64_t i, float f) {
  unsigned char* b = (unsigned char*)p + i * es(dt);
  uint16_t h;
  int32_t v;
  switch (dt) {
    case F32:
      memcpy(b, &f, 4);
      return;
    case F16:
      h = accel_plugin_f32_to_f16(f);
      memcpy(b, &h, 2);
      return;
    case BF16:
      h = accel_plugin_f32_to_bf16(f);
      memcpy(b, &h, 2);
      return;
    default:
      v = accel_plugin_f64_to_i32_sat((double)f);
      memcpy(b, &v, 4);
      return;
  }
}

// ops.cu's E::from_double: one rounding from the double.
static void st_double(void* p, int dt, uint64_t i, double d) {
  switch (dt) {
    case F32:
      st(p, dt, i, (float)d);
      return;
    case F16:
    case BF16: {
      uint16_t h = dt == F16 ? accel_plugin_f64_to_f16(d)
                             : accel_plugin_f64_to_bf16(d);
      memcpy((unsigned char*)p + 2 * i, &h, 2);
      return;
    }
    default: {
      int32_t v = accel_plugin_f64_to_i32_sat(d);
      memcpy((unsigned char*)p + 4 * i, &v, 4);
      return;
    }
  }
}

// kernelParams[k] as each parameter type.
static uintptr_t arg_ptr(void* const* p, int k) {
  uint64_t v;
  memcpy(&v, p[k], 8);
  return (uintptr_t)v;
}
static uint64_t arg_u64(void* const* p, int k) {
  uint64_t v;
  memcpy(&v, p[k], 8);
  return v;
}
static uint32_t arg_u32(void* const* p, int k) {
  uint32_t v;
  memcpy(&v, p[k], 4);
  return v;
}
static float arg_f32(void* const* p, int k) {
  float v;
  memcpy(&v, p[k], 4);
  return v;
}
static double arg_f64(void* const* p, int k) {
  double v;
  memcpy(&v, p[k], 8);
  return v;
}

// Whether `count` elements of `dt` at `p` are addressable from `ctx`.
static bool ok(CUcontext ctx, uintptr_t p, uint64_t count, size_t size) {
  return count == 0 ||
         (count <= SIZE_MAX / size && fakecuda_range_ok(ctx, p, count * size));
}

// ---------------------------------------------------------------------------
// The two-pass sum, per block and thread as ops.cu computes it
// ---------------------------------------------------------------------------

// sum_partial: block b, thread t accumulates x[b*256 + t + k*stride] in f32
// (i32: u64), then the block's tree adds shared[t] += shared[t + s].
static void sum_partial(const fakecuda_kernel_t* k, void* partial,
                        const void* x, uint64_t n, unsigned blocks) {
  uint64_t stride = (uint64_t)blocks * SUM_THREADS;
  for (unsigned b = 0; b < blocks; b++) {
    double f[SUM_THREADS];
    uint64_t u[SUM_THREADS];
    for (unsigned t = 0; t < SUM_THREADS; t++) {
      float acc = 0.0f;
      uint64_t iacc = 0;
      for (uint64_t i = (uint64_t)b * SUM_THREADS + t; i < n; i += stride) {
        if (k->dt == I32) {
          int32_t v;
          memcpy(&v, (const unsigned char*)x + 4 * i, 4);
          iacc += (uint64_t)(int64_t)v;
        } else {
          acc = acc + ld(x, k->dt, i);
        }
      }
      f[t] = (double)acc;
      u[t] = iacc;
    }
    for (unsigned s = SUM_THREADS / 2; s > 0; s /= 2) {
      for (unsigned t = 0; t < s; t++) {
        f[t] += f[t + s];
        u[t] += u[t + s];
      }
    }
    unsigned char* out = (unsigned char*)partial + 8 * (size_t)b;
    if (k->dt == I32) {
      memcpy(out, &u[0], 8);
    } else {
      memcpy(out, &f[0], 8);
    }
  }
}

// sum_final: one block; thread t adds partial[t + k*256], then the tree.
static void sum_final(const fakecuda_kernel_t* k, void* out,
                      const void* partial, unsigned blocks) {
  double f[SUM_THREADS];
  uint64_t u[SUM_THREADS];
  for (unsigned t = 0; t < SUM_THREADS; t++) {
    f[t] = 0.0;
    u[t] = 0;
    for (unsigned i = t; i < blocks; i += SUM_THREADS) {
      double d;
      uint64_t v;
      memcpy(&d, (const unsigned char*)partial + 8 * (size_t)i, 8);
      memcpy(&v, (const unsigned char*)partial + 8 * (size_t)i, 8);
      f[t] += d;
      u[t] += v;
    }
  }
  for (unsigned s = SUM_THREADS / 2; s > 0; s /= 2) {
    for (unsigned t = 0; t < s; t++) {
      f[t] += f[t + s];
      u[t] += u[t + s];
    }
  }
  if (k->dt == I32) {
    int32_t v = (int32_t)(uint32_t)u[0];
    memcpy(out, &v, 4);
  } else {
    st_double(out, k->dt, 0, f[0]);
  }
}

// ---------------------------------------------------------------------------
// Launch
// ---------------------------------------------------------------------------

// The element-wise ops: z, x, y and n per op, checked, then a plain loop
// (a grid-stride loop visits every index once, in any order).
static bool run_elementwise(const fakecuda_kernel_t* k, CUcontext c,
                            void* const* p) {
  uintptr_t z = arg_ptr(p, 0), x = 0, y = 0;
  uint64_t n;
  size_t zs = es(k->dt), xs = es(k->st);
  switch (k->op) {
    case OP_FILL:
    case OP_SCALE:
      n = arg_u64(p, 1);
      if (!ok(c, z, n, zs)) return false;
      break;
    case OP_CAST:
    case OP_AXPY:
      x = arg_ptr(p, 1), n = arg_u64(p, 2);
      if (!ok(c, z, n, zs) || !ok(c, x, n, xs)) return false;
      break;
    default:  // add, mul
      x = arg_ptr(p, 1), y = arg_ptr(p, 2), n = arg_u64(p, 3);
      if (!ok(c, z, n, zs) || !ok(c, x, n, zs) || !ok(c, y, n, zs)) {
        return false;
      }
      break;
  }
  void* zp = (void*)z;
  const void* xp = (const void*)x;
  const void* yp = (const void*)y;
  for (uint64_t i = 0; i < n; i++) {
    switch (k->op) {
      case OP_FILL:
        st_double(zp, k->dt, i, arg_f64(p, 2));
        break;
      case OP_CAST:
        if (k->dt == BF16 && k->st == I32) {
          int32_t v;
          memcpy(&v, (const unsigned char*)xp + 4 * i, 4);
          st_double(zp, BF16, i, (double)v);
        } else {
          st(zp, k->dt, i, ld(xp, k->st, i));
        }
        break;
      case OP_SCALE:
        st(zp, k->dt, i, arg_f32(p, 2) * ld(zp, k->dt, i));
        break;
      case OP_AXPY: {
        float prod = arg_f32(p, 3) * ld(xp, k->dt, i);
        st(zp, k->dt, i, prod + ld(zp, k->dt, i));
        break;
      }
      default:
        if (k->dt == I32) {  // wraps modulo 2^32
          uint32_t a, b, r;
          memcpy(&a, (const unsigned char*)xp + 4 * i, 4);
          memcpy(&b, (const unsigned char*)yp + 4 * i, 4);
          r = k->op == OP_ADD ? a + b : a * b;
          memcpy((unsigned char*)zp + 4 * i, &r, 4);
        } else {
          float a = ld(xp, k->dt, i), b = ld(yp, k->dt, i);
          st(zp, k->dt, i, k->op == OP_ADD ? a + b : a * b);
        }
        break;
    }
  }
  return true;
}

// accel_cuda_unary_*(z, x, n, op): ops.cu's activations in f32 (GELU
// through erfc, SiLU through exp; libm's, so within a few ulp of the
// GPU's), rounded once on store.
static bool run_unary(const fakecuda_kernel_t* k, CUcontext c, void* const* p) {
  uintptr_t z = arg_ptr(p, 0), x = arg_ptr(p, 1);
  uint64_t n = arg_u64(p, 2);
  uint32_t op = arg_u32(p, 3);
  if (!ok(c, z, n, es(k->dt)) || !ok(c, x, n, es(k->dt))) return false;
  for (uint64_t i = 0; i < n; i++) {
    float v = ld((const void*)x, k->dt, i), r;
    if (op == 1) {  // ACCEL_PLUGIN_UNARY_GELU
      r = 0.5f * v * erfcf(-v * 0.70710678f);
    } else if (op == 2) {  // ACCEL_PLUGIN_UNARY_SILU
      r = v / (1.0f + expf(-v));
    } else {
      r = v < 0.0f ? 0.0f : v;
    }
    st((void*)z, k->dt, i, r);
  }
  return true;
}

// accel_cuda_bias_add_*(y, bias, cols, n): y[i] += bias[i % cols], f32
// add (i32 wraps).
static bool run_bias_add(const fakecuda_kernel_t* k, CUcontext c,
                         void* const* p) {
  uintptr_t y = arg_ptr(p, 0), bias = arg_ptr(p, 1);
  uint64_t cols = arg_u64(p, 2), n = arg_u64(p, 3);
  if (cols == 0 || !ok(c, y, n, es(k->dt)) ||
      !ok(c, bias, n < cols ? n : cols, es(k->dt))) {
    return false;
  }
  for (uint64_t i = 0; i < n; i++) {
    if (k->dt == I32) {
      uint32_t a, b;
      memcpy(&a, (const unsigned char*)y + 4 * i, 4);
      memcpy(&b, (const unsigned char*)bias + 4 * (i % cols), 4);
      a += b;
      memcpy((unsigned char*)y + 4 * i, &a, 4);
    } else {
      st((void*)y, k->dt, i,
         ld((const void*)y, k->dt, i) + ld((const void*)bias, k->dt, i % cols));
    }
  }
  return true;
}

bool fakecuda_kernel_run(const fakecuda_kernel_t* k, CUcontext c,
                         void* const* p, const unsigned grid[3],
                         const unsigned block[3], unsigned shared) {
  if (k->op >= FAKECUDA_OP_CONFORM) {
    return fakecuda_conform_run(k, c, p, grid, block, shared);
  }
  // Threads sharing one x index (grid and block y, z) all run the body.
  uint64_t copies = (uint64_t)grid[1] * grid[2] * block[1] * block[2];
  uint64_t threads = (uint64_t)grid[0] * block[0];
  switch (k->op) {
    case OP_SUM_PARTIAL: {
      uintptr_t partial = arg_ptr(p, 0), x = arg_ptr(p, 1);
      uint64_t n = arg_u64(p, 2);
      if (block[0] != SUM_THREADS || !ok(c, partial, grid[0], 8) ||
          !ok(c, x, n, es(k->dt))) {
        return false;
      }
      sum_partial(k, (void*)partial, (const void*)x, n, grid[0]);
      return true;
    }
    case OP_SUM_FINAL: {
      uintptr_t out = arg_ptr(p, 0), partial = arg_ptr(p, 1);
      uint32_t blocks = arg_u32(p, 2);
      if (block[0] != SUM_THREADS || !ok(c, out, 1, es(k->dt)) ||
          !ok(c, partial, blocks, 8)) {
        return false;
      }
      sum_final(k, (void*)out, (const void*)partial, blocks);
      return true;
    }
    case OP_GEMM_SCALE: {
      uintptr_t cp = arg_ptr(p, 0);
      uint64_t m = arg_u64(p, 1), n = arg_u64(p, 2), ldc = arg_u64(p, 3);
      float beta = arg_f32(p, 4);
      if (m != 0 && n != 0 && !ok(c, cp, (m - 1) * ldc + n, es(k->dt))) {
        return false;
      }
      for (uint64_t i = 0; i < m * n; i++) {
        uint64_t at = (i / n) * ldc + i % n;
        float v = beta == 0.0f ? 0.0f : beta * ld((void*)cp, k->dt, at);
        st((void*)cp, k->dt, at, v);
      }
      return true;
    }
    case OP_VADD: {  // if (i < n) z[i] = x[i] + y[i]
      uint64_t n = arg_u32(p, 3), count = n < threads ? n : threads;
      uintptr_t z = arg_ptr(p, 0), x = arg_ptr(p, 1), y = arg_ptr(p, 2);
      if (!ok(c, z, count, 4) || !ok(c, x, count, 4) || !ok(c, y, count, 4)) {
        return false;
      }
      for (uint64_t i = 0; i < count; i++) {
        st((void*)z, F32, i, ld((void*)x, F32, i) + ld((void*)y, F32, i));
      }
      return true;
    }
    case OP_ADD_ONE: {  // if (i < n) data[i] += 1
      uint64_t n = arg_u32(p, 1), count = n < threads ? n : threads;
      uintptr_t data = arg_ptr(p, 0);
      if (!ok(c, data, count, 4)) return false;
      for (uint64_t i = 0; i < count; i++) {
        int32_t v;
        memcpy(&v, (unsigned char*)data + 4 * i, 4);
        v = (int32_t)((uint32_t)v + (uint32_t)copies);
        memcpy((unsigned char*)data + 4 * i, &v, 4);
      }
      return true;
    }
    case OP_RNG: {  // accel_cuda_rng: <accel/philox.h>, as the GPU runs it
      uintptr_t z = arg_ptr(p, 0);
      uint64_t n = arg_u64(p, 1);
      uint32_t kind = arg_u32(p, 2), dtype = arg_u32(p, 3);
      size_t size = dtype == F16 || dtype == BF16 ? 2 : 4;
      if (!ok(c, z, n, size)) return false;
      for (uint64_t i = 0; i < n; i++) {
        accel_philox_block_t b = accel_philox_at(arg_u64(p, 4), arg_u64(p, 5),
                                                 i / 4);
        uint32_t v = accel_philox_element(b, (uint32_t)(i % 4), kind, dtype,
                                          arg_f32(p, 6), arg_f32(p, 7));
        if (size == 2) {
          uint16_t h = (uint16_t)v;
          memcpy((unsigned char*)z + 2 * i, &h, 2);
        } else {
          memcpy((unsigned char*)z + 4 * i, &v, 4);
        }
      }
      return true;
    }
    case OP_EMPTY:
      return true;
    case OP_UNARY:
      return run_unary(k, c, p);
    case OP_BIAS_ADD:
      return run_bias_add(k, c, p);
    default:
      return run_elementwise(k, c, p);
  }
}

// ---------------------------------------------------------------------------
// Images: fatbin (magic 0xBA55ED50), cubin (ELF, EM_CUDA) or PTX text
// ---------------------------------------------------------------------------

#define FATBIN_MAGIC 0xBA55ED50u
#define FATBIN_PTX 1
#define FATBIN_ELF 2
#define FATBIN_COMPRESSED 0xA000u  // flag bits of LZ4 (0x2000), zstd (0x8000)

static uint64_t rd(const unsigned char* p, unsigned width) {
  uint64_t v = 0;
  for (unsigned i = 0; i < width; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

// The SM of a cubin: the low byte of e_flags for ELF ABI version 7, the
// second byte for 8 (CUDA 12.8+), as core/src/image.c reads it.
static int elf_sm(const unsigned char* p) {
  uint64_t flags = rd(p + 48, 4);
  if (p[8] == 8) return (int)((flags >> 8) & 0xff);
  if (p[8] == 7) return (int)(flags & 0xff);
  return (flags & 0xff) >= 10 ? (int)(flags & 0xff)
                              : (int)((flags >> 8) & 0xff);
}

// Bytes of a 64-bit ELF: the end of its header tables and sections.
static size_t elf_size(const unsigned char* p) {
  uint64_t shoff = rd(p + 0x28, 8), shentsize = rd(p + 0x3a, 2);
  uint64_t shnum = rd(p + 0x3c, 2);
  uint64_t end = shoff + shentsize * shnum;
  uint64_t ph_end = rd(p + 0x20, 8) + rd(p + 0x36, 2) * rd(p + 0x38, 2);
  if (ph_end > end) end = ph_end;
  for (uint64_t i = 0; i < shnum && shentsize >= 64; i++) {
    const unsigned char* sh = p + shoff + i * shentsize;
    if (rd(sh + 4, 4) == 8) continue;  // SHT_NOBITS
    uint64_t sec_end = rd(sh + 0x18, 8) + rd(sh + 0x20, 8);
    if (sec_end > end) end = sec_end;
  }
  return (size_t)end;
}

// A cubin can run on a device of the same major SM and a minor >= its own.
static bool sass_runs(int code, int sm) {
  return code / 10 == sm / 10 && code % 10 <= sm % 10;
}

// Whether this driver loads an ELF of ABI version `abi` (EI_ABIVERSION).
static bool elf_abi_loads(int abi) {
  return abi < 8 || fakecuda_driver_version() >= FAKECUDA_ELF_ABI8_DRIVER;
}

// Reads "X.Y" into X*10+Y; -1 if absent.
static int version_at(const char* s) {
  int major = 0, minor = 0;
  if (sscanf(s, "%d.%d", &major, &minor) != 2) return -1;
  return major * 10 + minor;
}

static CUresult check_ptx(const char* text, int sm, int ptx_max,
                          fakecuda_image_t* out, char* log, size_t log_size) {
  const char* v = strstr(text, ".version");
  const char* t = strstr(text, ".target");
  int version = v != NULL ? version_at(v + 8) : -1;
  int target = -1;
  if (t != NULL) {
    t += 7;
    while (*t == ' ' || *t == '\t') t++;
    if (sscanf(t, "sm_%d", &target) != 1) target = -1;
  }
  if (version < 0 || target < 0) {
    snprintf(log, log_size,
             "ptxas fatal   : (fakecuda) no .version or .target sm_XY");
    return CUDA_ERROR_INVALID_PTX;
  }
  if (version > ptx_max) {
    // What the driver reports for PTX from a newer toolkit.
    snprintf(log, log_size,
             "ptxas application ptx input; fatal   : Unsupported .version "
             "%d.%d; current version is '%d.%d'",
             version / 10, version % 10, ptx_max / 10, ptx_max % 10);
    return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
  }
  if (target > sm) {
    // The JIT cannot compile down: ptxas's error, CUDA_ERROR_INVALID_PTX.
    snprintf(log, log_size,
             "ptxas application ptx input; error   : SM version specified "
             "by .target is higher than default SM version assumed");
    return CUDA_ERROR_INVALID_PTX;
  }
  out->size = strlen(text) + 1;
  out->code_off = 0;
  out->code_size = out->size;
  out->code_kind = FAKECUDA_CODE_PTX;
  snprintf(out->what, sizeof(out->what), "PTX %d.%d for sm_%d", version / 10,
           version % 10, target);
  return CUDA_SUCCESS;
}

// Picks the best entry of a fatbin: SASS the device runs (the newest),
// else PTX it can compile (the newest target not above it).
static CUresult check_fatbin(const unsigned char* p, int sm, int ptx_max,
                             fakecuda_image_t* out, char* log,
                             size_t log_size) {
  size_t header = (size_t)rd(p + 6, 2);
  size_t total = header + (size_t)rd(p + 8, 8);
  size_t elf_at = 0, ptx_at = 0;
  int elf_sm_best = -1, ptx_sm_best = -1;
  for (size_t at = header; at + 64 <= total;) {
    const unsigned char* e = p + at;
    uint64_t kind = rd(e, 2), hsize = rd(e + 4, 4), size = rd(e + 8, 8);
    int arch = (int)rd(e + 28, 4);
    if (hsize < 64 || hsize > total - at || size > total - at - hsize) break;
    // An uncompressed ELF entry shows its ABI version; a driver older than
    // 12.8 skips version 8 (it does not know the format).
    bool plain = (rd(e + 40, 8) & FATBIN_COMPRESSED) == 0 && rd(e + 56, 8) == 0;
    bool abi_ok = !plain || size < 16 || elf_abi_loads(e[hsize + 8]);
    if (kind == FATBIN_ELF && abi_ok && sass_runs(arch, sm) &&
        arch > elf_sm_best) {
      elf_sm_best = arch, elf_at = at;
    } else if (kind == FATBIN_PTX && arch <= sm && arch > ptx_sm_best) {
      ptx_sm_best = arch, ptx_at = at;
    }
    at += hsize + size;
  }
  out->size = total;
  size_t at = elf_sm_best >= 0 ? elf_at : ptx_at;
  if (elf_sm_best < 0 && ptx_sm_best < 0) {
    snprintf(log, log_size,
             "(fakecuda) the fatbin has no SASS or PTX for sm_%d", sm);
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  const unsigned char* e = p + at;
  out->code_off = at + (size_t)rd(e + 4, 4);
  out->code_size = (size_t)rd(e + 8, 8);
  bool compressed = (rd(e + 40, 8) & FATBIN_COMPRESSED) != 0 || rd(e + 56, 8);
  if (elf_sm_best >= 0) {
    out->code_kind = compressed ? FAKECUDA_CODE_OPAQUE : FAKECUDA_CODE_ELF;
    snprintf(out->what, sizeof(out->what), "sm_%d SASS from a fatbin",
             elf_sm_best);
    return CUDA_SUCCESS;
  }
  int version = (int)rd(e + 26, 2) * 10 + (int)rd(e + 24, 2);
  if (version > ptx_max) {
    snprintf(log, log_size,
             "(fakecuda) the fatbin's PTX %d.%d is newer than the JIT's %d.%d",
             version / 10, version % 10, ptx_max / 10, ptx_max % 10);
    return CUDA_ERROR_UNSUPPORTED_PTX_VERSION;
  }
  out->code_kind = compressed ? FAKECUDA_CODE_OPAQUE : FAKECUDA_CODE_PTX;
  snprintf(out->what, sizeof(out->what), "PTX %d.%d for sm_%d from a fatbin",
           version / 10, version % 10, ptx_sm_best);
  return CUDA_SUCCESS;
}

CUresult fakecuda_image_check(const unsigned char* image, int sm, int ptx_max,
                              fakecuda_image_t* out, char* log,
                              size_t log_size) {
  memset(out, 0, sizeof(*out));
  log[0] = '\0';
  if (rd(image, 4) == FATBIN_MAGIC) {
    return check_fatbin(image, sm, ptx_max, out, log, log_size);
  }
  if (memcmp(image, "\177ELF", 4) == 0) {
    if (image[4] != 2 || image[5] != 1 || rd(image + 18, 2) != 190) {
      snprintf(log, log_size, "(fakecuda) not a 64-bit EM_CUDA ELF");
      return CUDA_ERROR_INVALID_IMAGE;
    }
    if (!elf_abi_loads(image[8])) {
      snprintf(log, log_size,
               "(fakecuda) a cubin of ELF ABI version %d needs a CUDA 12.8 "
               "driver",
               image[8]);
      return CUDA_ERROR_INVALID_IMAGE;
    }
    int code = elf_sm(image);
    if (!sass_runs(code, sm)) return CUDA_ERROR_NO_BINARY_FOR_GPU;
    out->size = elf_size(image);
    out->code_size = out->size;
    out->code_kind = FAKECUDA_CODE_ELF;
    snprintf(out->what, sizeof(out->what), "a cubin for sm_%d", code);
    return CUDA_SUCCESS;
  }
  return check_ptx((const char*)image, sm, ptx_max, out, log, log_size);
}

// Whether the ELF's symbol table has a defined function `name`. Every
// offset is checked against the ELF's size.
static bool elf_has(const unsigned char* p, size_t size, const char* name) {
  if (size < 64) return false;
  uint64_t shoff = rd(p + 0x28, 8), shentsize = rd(p + 0x3a, 2);
  uint64_t shnum = rd(p + 0x3c, 2);
  if (shentsize < 64 || shoff > size || shnum > (size - shoff) / shentsize) {
    return false;
  }
  size_t len = strlen(name);
  for (uint64_t i = 0; i < shnum; i++) {
    const unsigned char* sh = p + shoff + i * shentsize;
    if (rd(sh + 4, 4) != 2) continue;  // SHT_SYMTAB
    uint64_t off = rd(sh + 0x18, 8), bytes = rd(sh + 0x20, 8);
    uint64_t link = rd(sh + 0x28, 4);
    if (off > size || bytes > size - off || link >= shnum) continue;
    const unsigned char* strh = p + shoff + link * shentsize;
    uint64_t str = rd(strh + 0x18, 8), str_size = rd(strh + 0x20, 8);
    if (str > size || str_size > size - str) continue;
    for (uint64_t s = 0; s + 24 <= bytes; s += 24) {
      const unsigned char* sym = p + off + s;
      uint64_t at = rd(sym, 4);
      if ((sym[4] & 0xf) != 2 || rd(sym + 6, 2) == 0) continue;  // STT_FUNC
      if (at < str_size && len < str_size - at &&
          memcmp(p + str + at, name, len + 1) == 0) {
        return true;
      }
    }
  }
  return false;
}

// Whether PTX text declares `.entry name(`.
static bool ptx_has(const char* text, size_t size, const char* name) {
  size_t len = strlen(name);
  for (const char* e = text; (e = strstr(e, ".entry")) != NULL; e += 6) {
    const char* n = e + 6;
    while (*n == ' ' || *n == '\t') n++;
    if ((size_t)(n - text) + len < size && strncmp(n, name, len) == 0 &&
        (n[len] == '(' || n[len] == ' ' || n[len] == '\n')) {
      return true;
    }
  }
  return false;
}

bool fakecuda_image_has(const unsigned char* image,
                        const fakecuda_image_t* info, const char* name) {
  const unsigned char* code = image + info->code_off;
  switch (info->code_kind) {
    case FAKECUDA_CODE_ELF:
      return elf_has(code, info->code_size, name);
    case FAKECUDA_CODE_PTX:
      // Inside a fatbin the text may lack its NUL: look no further.
      if (memchr(code, '\0', info->code_size) == NULL) return true;
      return ptx_has((const char*)code, info->code_size, name);
    default:
      return true;
  }
}
