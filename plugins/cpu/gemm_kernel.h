// SPDX-License-Identifier: MIT
//
// The own GEMM engine's parts (gemm_kernel.c: packing, blocking, threads;
// gemm_kernel_isa.c: the micro-kernels, transposing tiles, row packing and
// tile stores of each ISA, and the choice among them). A part of the CPU
// plugin; include after cpu.h.
#ifndef ACCEL_PLUGINS_CPU_GEMM_KERNEL_H_
#define ACCEL_PLUGINS_CPU_GEMM_KERNEL_H_

#include <string.h>

#include "convert.h"
#include "cpu.h"

// acc[MR * NR] = op(A) sliver x op(B) sliver over `kc` steps: `ap` holds
// MR rows of the A sliver at the ISA's row stride (its kc), `bp` holds kc
// rows of NR floats.
typedef void (*accel_cpu_gk_fn_t)(uint64_t kc, const float* restrict ap,
                                  const float* restrict bp,
                                  float* restrict acc);

// Transposes while converting, for the operands stored across the packed
// layout (a transposed A, a transposed B): reads `rows` (<= W) rows of
// `cols` (<= W) elements of `dtype`, `stride` bytes apart from `src`, as a
// W x W tile of f32 (zeros outside), and stores its first `dst_rows`
// columns as rows `dst_stride` floats apart at `dst`, `len` floats each.
// W is the ISA's vector width in floats (16 or 8).
typedef void (*accel_cpu_gk_tile_fn_t)(const unsigned char* src,
                                       size_t stride, uint32_t dtype,
                                       uint32_t rows, uint32_t cols,
                                       float* dst, size_t dst_stride,
                                       uint32_t dst_rows, uint32_t len);

// Packs `kc` rows of a stored-k-major operand (a plain B): row k of `nq`
// elements of `dtype` at `src + k * stride`, as slivers of NR columns
// (sliver s at `dst + s * kc * NR`, k-major); the columns from `nq` up to
// the last sliver's end are zero.
typedef void (*accel_cpu_gk_rows_fn_t)(const unsigned char* src,
                                       size_t stride, uint32_t dtype,
                                       uint32_t kc, uint32_t nq, float* dst);

// Where a tile of sums goes, and how (accel_cpu_gk_store_fn_t).
typedef struct accel_cpu_gk_out {
  unsigned char* c;  // C at the tile's first element
  size_t ldc;        // bytes from one row of C to the next
  uint32_t dtype;    // of C
  float alpha, beta;
  bool first, last;  // the tile holds the first and/or the last k block
  float* c32;        // an f16/bf16 C's f32 partial sums at the tile, or
                     // NULL (then the tile is first and last)
  size_t ld32;       // floats from one row of c32 to the next
} accel_cpu_gk_out_t;

// Adds `mv` rows of `nv` (<= NR) sums, NR floats apart at `acc`, into C:
// an f32 C in place (first: alpha * sum + beta * C, C not read when beta
// is 0; later: C + alpha * sum); an f16/bf16 C through c32 (first: alpha
// * sum + beta * C; later: c32 + alpha * sum), rounded into C on the last
// k block and kept in c32 before it.
typedef void (*accel_cpu_gk_store_fn_t)(const float* acc, uint32_t mv,
                                        uint32_t nv,
                                        const accel_cpu_gk_out_t* o);

struct accel_cpu_gk_isa {
  const char* name;  // for the engine cache key and the log
  uint32_t mr, nr;   // micro-tile: rows (broadcast), columns (vectors)
  uint32_t kc;       // k per block, and the row stride of a packed A sliver
  uint32_t nq;       // columns of op(B) per packed block
  uint32_t width;    // floats per vector: the transposing tile's W
  accel_cpu_gk_fn_t kernel;
  accel_cpu_gk_tile_fn_t tile;
  accel_cpu_gk_rows_fn_t rows;
  accel_cpu_gk_store_fn_t store;
};

// Half the L2 of a core in bytes (gemm_kernel.c: glibc's figure from
// CPUID, 1 MiB where it is not known, within 128 KiB to 4 MiB): what a
// packed B may take. Thread-safe.
size_t accel_cpu_gk_half_l2(void);

#endif  // ACCEL_PLUGINS_CPU_GEMM_KERNEL_H_
