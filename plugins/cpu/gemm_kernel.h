// SPDX-License-Identifier: MIT
//
// The own GEMM engine's parts (gemm_kernel.c: packing, blocking, threads;
// gemm_kernel_isa.c: the micro-kernels and transposing tiles of each ISA,
// and the choice among them). A part of the CPU plugin; include after
// cpu.h.
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

struct accel_cpu_gk_isa {
  const char* name;  // for the engine cache key and the log
  uint32_t mr, nr;   // micro-tile: rows (broadcast), columns (vectors)
  uint32_t kc;       // k per block, and the row stride of a packed A sliver
  uint32_t nq;       // columns of op(B) per packed block
  uint32_t width;    // floats per vector: the transposing tile's W
  accel_cpu_gk_fn_t kernel;
  accel_cpu_gk_tile_fn_t tile;
};

#endif  // ACCEL_PLUGINS_CPU_GEMM_KERNEL_H_
