// SPDX-License-Identifier: MIT
//
// The plugin's own GEMM engine, "accel": packed panels and a register-
// blocked micro-kernel, the way BLIS and OpenBLAS are built, with one
// difference that is the reason it exists: f16 and bf16 operands are
// converted to f32 while they are packed, so a half GEMM reads 2 bytes per
// element once and never writes an f32 copy of A or B to memory. The other
// engines need that copy (none of the Debian libraries multiplies f16 on a
// CPU without AMX), and on a 2-vCPU Emerald Rapids guest it cost 11% at
// 1024^3: the conversion runs at memory speed while the product runs from
// cache (docs/performance.md). Accumulation is f32 throughout, as on the
// other engines; C is rounded once.
//
// Micro-kernels (the first this CPU runs, from CPUID, at most the one
// ACCEL_CPU_GEMM_ISA names):
//   AVX-512    12 rows x 32 columns: 24 zmm accumulators, k blocks of 512
//              (F, and BW and VL for the 16-bit masked loads of packing)
//   AVX2+FMA    6 rows x 16 columns: 12 ymm accumulators, k blocks of 256
// Each step of k broadcasts one element of each of the tile's rows of op(A)
// and multiplies two vectors of a row of op(B). Without either ISA (or off
// x86-64) the engine is not available and the timing never sees it.
//
// Blocking (per task): op(B) in blocks of kc rows x nq columns, converted
// into slivers of NR columns, k-major (the block stays in L2: 512 KiB with
// AVX-512, 256 KiB with AVX2); op(A) in slivers of MR rows x kc with a
// fixed row stride, packed eight at a time (192 KiB, L2), each used
// against every sliver of the B block. An operand stored across that
// layout (a transposed A or B) goes through a W x W tile transposed in
// registers. An f32 C accumulates in place, once per k block (the first
// applies beta). An f16/bf16 C is rounded straight from the registers'
// tile when every k block of the B block fits half the L2 ("full k": all
// blocks of B, and of each A sliver, are packed before the kernel runs
// them in turn on one tile); past that, the k blocks' sums accumulate in
// an f32 tile of at most ACCEL_CPU_GK_MC rows, rounded after the last.
//
// Threads: the product is split into one task per pool thread, by
// columns of C (whole slivers) when there are enough of them, else by
// rows; each task packs its own B blocks and its own A slivers, so tasks
// share nothing but the inputs; except that where each task would pack
// its A slivers again for several B blocks, the tasks first pack all of
// op(A) once, together, and then read it (ACCEL_CPU_GK_A_SHARED). Below
// ACCEL_CPU_GEMM_SPLIT_FLOPS multiply-adds the product runs on the
// calling thread.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gemm_kernel.h"

// Rows of C per f32 accumulation tile, at most (before rounding up to whole
// slivers), when an f16/bf16 C takes several k blocks (the tile is
// ACCEL_CPU_GK_MC x nq floats: 1 MiB with AVX-512).
#define ACCEL_CPU_GK_MC 1024u
// Bytes of packed B (every k block) up to which an f16/bf16 C is written
// once, from the registers, instead of through an f32 tile: half the L2
// (glibc reads its size from CPUID), 1 MiB where it is not known, and
// within 128 KiB to 4 MiB whatever a hypervisor reports (the A slivers'
// scratch grows with it: 8 slivers of every k block). On the
// 2 MiB L2 of an Emerald Rapids guest (docs/performance.md), full k at
// 1024^3 (1 MiB of B) took f16 from 0.91-0.93 of oneDNN's f32 matmul to
// 0.95-0.96; at 2048^3 (2 MiB of B) it was 8-10 points slower than the
// tile, and for an f32 C (accumulated in place) it changed nothing.
size_t accel_cpu_gk_half_l2(void) {
#ifdef _SC_LEVEL2_CACHE_SIZE
  long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#else
  long l2 = 0;
#endif
  size_t half = l2 > 0 ? (size_t)l2 / 2 : (size_t)1 << 20;
  if (half < ((size_t)128 << 10)) half = (size_t)128 << 10;
  return half < ((size_t)4 << 20) ? half : (size_t)4 << 20;
}
// A slivers packed at a time (a transposed A is read across them).
#define ACCEL_CPU_GK_SLIVERS 8u
// Bytes of packed op(A) (every row, every k block) up to which A may be
// packed once, by all tasks together, before the product (accel_cpu_gk_gemm
// says when), instead of by each task for each of its B blocks: an f32 or
// f16 A of 4096 x 4096 with its padding. It is scratch kept between
// products, as the rest (gemm.c).
#define ACCEL_CPU_GK_A_SHARED ((size_t)80 << 20)
// Largest micro-tile of any kernel (for the stack buffers).
#define ACCEL_CPU_GK_TILE_MAX (12u * 32u)

// One GEMM, split into tasks.
typedef struct accel_cpu_gk_job {
  const accel_cpu_gk_isa_t* isa;
  const accel_plugin_gemm_t* g;
  float alpha, beta;
  size_t es;         // bytes per element of A and B
  size_t es_c;       // of C
  uint32_t kc;       // k per block (every block but the last)
  uint64_t kblocks;  // number of k blocks
  bool full_k;       // every k block packed at once, C written once
  bool c32;          // an f16/bf16 C over several k blocks, not full_k
  bool split_n;      // tasks take columns of C, else rows
  // op(A) packed before the product (ACCEL_CPU_GK_A_SHARED), or NULL: for
  // k block b, sliver s (rows s * MR ..) at a_shared + (b * slivers + s) *
  // MR * isa->kc.
  float* a_shared;
  uint64_t slivers;  // of all of op(A): ceil(m / MR)
  uint64_t units;    // column slivers (NR) or row slivers (MR) in all
  uint64_t tasks;
  unsigned char* scratch;
  size_t b_bytes;     // of a task's scratch, for its packed B block
  size_t a_block;     // floats of a task's scratch per k block for the A
                      // slivers it packs (0 when a_shared holds them)
  size_t task_bytes;  // scratch per task
} accel_cpu_gk_job_t;

// Packs rows [i0, i0 + rows) of op(A), columns [p0, p0 + kc), as slivers
// of MR rows, each row isa->kc floats after the last (sliver s at
// ap + s * MR * isa->kc); rows from `rows` up to the last sliver's end are
// zero. A transposed A is read a group of W rows of k at a time across
// every sliver, so that each of those rows is read in order.
static void accel_cpu_gk_pack_a(const accel_cpu_gk_job_t* j, uint64_t i0,
                                uint32_t rows, uint64_t p0, uint32_t kc,
                                float* ap) {
  const accel_plugin_gemm_t* g = j->g;
  const accel_cpu_gk_isa_t* isa = j->isa;
  const unsigned char* a = g->a;
  const uint32_t mr = isa->mr;
  const uint32_t padded = (rows + mr - 1) / mr * mr;
  if (!g->trans_a) {  // stored m x k: row i is contiguous in k
    for (uint32_t i = 0; i < rows; i++) {
      accel_cpu_to_f32_block(ap + (size_t)i * isa->kc,
                             a + ((i0 + i) * g->lda + p0) * j->es, g->a_dtype,
                             kc);
    }
    for (uint32_t i = rows; i < padded; i++) {
      memset(ap + (size_t)i * isa->kc, 0, kc * sizeof(float));
    }
    return;
  }
  // Stored k x m: W x W tiles, transposed. Row i of the group is at
  // ap + i * isa->kc whichever sliver holds it, so the tiles need not
  // follow sliver boundaries: each reads whole lines of W rows once (with
  // lda a multiple of 4 KiB those rows share an L1 set, and tiles of one
  // sliver's width read each line again after it was evicted: 18% of a
  // transposed product). The rows from `rows` up to `padded` are zero.
  const uint32_t w = isa->width;
  const size_t stride = g->lda * j->es;
  for (uint32_t k = 0; k < kc; k += w) {
    uint32_t kk = kc - k < w ? kc - k : w;
    const unsigned char* src = a + ((p0 + k) * g->lda + i0) * j->es;
    for (uint32_t i = 0; i < padded; i += w) {
      uint32_t cols = i < rows ? (rows - i < w ? rows - i : w) : 0;
      if (i + 2 * w < rows) {  // two tiles ahead: the loads miss otherwise
        for (uint32_t x = 0; x < kk; x++) {
          __builtin_prefetch(src + x * stride + (i + 2 * w) * j->es, 0, 3);
        }
      }
      isa->tile(cols > 0 ? src + i * j->es : src, stride, g->a_dtype,
                cols > 0 ? kk : 0, cols, ap + (size_t)i * isa->kc + k, isa->kc,
                padded - i < w ? padded - i : w, kk);
    }
  }
}

// Packs rows [p0, p0 + kc) of op(B), columns [j0, j0 + nq), as slivers of
// NR columns (sliver s at bp + s * kc * NR, k-major); columns from nq up to
// the last sliver's end are zero.
static void accel_cpu_gk_pack_b(const accel_cpu_gk_job_t* j, uint64_t p0,
                                uint32_t kc, uint64_t j0, uint32_t nq,
                                float* bp) {
  const accel_plugin_gemm_t* g = j->g;
  const uint32_t nr = j->isa->nr;
  const unsigned char* b = g->b;
  if (!g->trans_b) {  // stored k x n: a row of op(B) is contiguous
    j->isa->rows(b + (p0 * g->ldb + j0) * j->es, g->ldb * j->es, g->b_dtype, kc,
                 nq, bp);
    return;
  }
  // Stored n x k: a column of op(B) is contiguous in k. W columns by W
  // values of k at a time, transposed into the sliver's rows (columns
  // from nq up are zero: their tile rows are not read).
  const uint32_t w = j->isa->width;
  const size_t stride = g->ldb * j->es;
  for (uint32_t x = 0; x < nq || x % nr != 0; x += w) {
    uint32_t cols = x < nq ? (nq - x < w ? nq - x : w) : 0;
    const unsigned char* src =
        cols > 0 ? b + ((j0 + x) * g->ldb + p0) * j->es : b;
    float* d = bp + (size_t)(x / nr) * kc * nr + x % nr;
    for (uint32_t k = 0; k < kc; k += w) {
      uint32_t kk = kc - k < w ? kc - k : w;
      j->isa->tile(cols > 0 ? src + k * j->es : src, stride, g->b_dtype, cols,
                   kk, d + (size_t)k * nr, nr, kk, w);
    }
  }
}

// The depth of k block `blk` (the last may be shorter).
static inline uint32_t accel_cpu_gk_kc(const accel_cpu_gk_job_t* j,
                                       uint64_t blk) {
  uint64_t p0 = blk * j->kc;
  return (uint32_t)(j->g->k - p0 < j->kc ? j->g->k - p0 : j->kc);
}

// Packs task `t`'s share of op(A) into j->a_shared, every k block: whole
// groups of slivers (eight for a transposed A, read across them).
static void accel_cpu_gk_pack_task(void* ctx, uint64_t t, uint32_t worker) {
  (void)worker;
  const accel_cpu_gk_job_t* j = ctx;
  const uint32_t mr = j->isa->mr;
  const uint64_t per = j->g->trans_a ? ACCEL_CPU_GK_SLIVERS : 1;
  const uint64_t groups = (j->slivers + per - 1) / per;
  const size_t a_sliver = (size_t)mr * j->isa->kc;
  for (uint64_t q = groups * t / j->tasks; q < groups * (t + 1) / j->tasks;
       q++) {
    uint64_t i0 = q * per * mr;
    uint32_t rows =
        (uint32_t)(j->g->m - i0 < per * mr ? j->g->m - i0 : per * mr);
    for (uint64_t blk = 0; blk < j->kblocks; blk++) {
      accel_cpu_gk_pack_a(
          j, i0, rows, blk * j->kc, accel_cpu_gk_kc(j, blk),
          j->a_shared + (blk * j->slivers + q * per) * a_sliver);
    }
  }
}

// Fetches the lines of `rows` runs of `bytes` bytes, `stride` bytes apart
// from `p`: the rows of C, or of the f32 tile, that a tile of sums will be
// added to (the write hint compiles to prefetcht0 without PRFCHW;
// prefetchw, out of line, was slower).
static void accel_cpu_gk_prefetch(const void* p, size_t stride, uint32_t rows,
                                  size_t bytes) {
  for (uint32_t i = 0; i < rows; i++) {
    const char* r = (const char*)p + i * stride;
    for (size_t x = 0; x < bytes; x += 64) __builtin_prefetch(r + x, 1, 3);
    __builtin_prefetch(r + bytes - 1, 1, 3);
  }
}

static void accel_cpu_gk_task(void* ctx, uint64_t t, uint32_t worker) {
  (void)worker;
  const accel_cpu_gk_job_t* j = ctx;
  const accel_plugin_gemm_t* g = j->g;
  const accel_cpu_gk_isa_t* isa = j->isa;
  const uint32_t mr = isa->mr, nr = isa->nr;
  uint64_t lo = j->units * t / j->tasks, hi = j->units * (t + 1) / j->tasks;
  uint64_t m0 = 0, m1 = g->m, n0 = 0, n1 = g->n;
  if (j->split_n) {
    n0 = lo * nr;
    n1 = hi * nr < g->n ? hi * nr : g->n;
  } else {
    m0 = lo * mr;
    m1 = hi * mr < g->m ? hi * mr : g->m;
  }
  if (m0 >= m1 || n0 >= n1) return;
  // Scratch: `step` packed B blocks, `step` groups of A slivers, two
  // tiles, the f32 rows.
  unsigned char* s = j->scratch + j->task_bytes * t;
  const uint64_t step = j->full_k ? j->kblocks : 1;  // k blocks per pass
  const size_t b_block = j->b_bytes / sizeof(float);
  const size_t a_block = j->a_block;
  const size_t a_sliver = (size_t)mr * isa->kc;
  float* bp = (float*)s;
  float* ap = (float*)(s + j->b_bytes * step);
  float* acc = ap + a_block * step;
  float* part = acc + ACCEL_CPU_GK_TILE_MAX;
  float* c32 = part + ACCEL_CPU_GK_TILE_MAX;
  // Rows of A packed at a time: a transposed A eight slivers (each of its
  // rows is then read in order), a plain one one sliver, which stays in
  // L1 for the kernel calls that follow (eight at once measured 2-8%
  // slower for f32).
  const uint32_t group = g->trans_a ? ACCEL_CPU_GK_SLIVERS * mr : mr;
  const uint32_t tile = mr * nr;
  // Through an f32 tile, the rows go in chunks of at most
  // ACCEL_CPU_GK_MC (rounded up to whole slivers), as even as can be: each
  // chunk packs every B block again, and 2048 rows in chunks of 1020 left
  // a third of 8 rows that did so for less than one sliver.
  uint64_t mc = m1 - m0;
  if (j->c32) {
    uint64_t chunks = (mc + ACCEL_CPU_GK_MC - 1) / ACCEL_CPU_GK_MC;
    mc = ((mc + chunks - 1) / chunks + mr - 1) / mr * mr;
  }
  for (uint64_t jq = n0; jq < n1; jq += isa->nq) {
    uint32_t nq = (uint32_t)(n1 - jq < isa->nq ? n1 - jq : isa->nq);
    for (uint64_t ic = m0; ic < m1; ic += mc) {
      uint64_t ie = m1 - ic < mc ? m1 : ic + mc;
      for (uint64_t blk = 0; blk < j->kblocks; blk += step) {
        accel_cpu_gk_out_t out = {
            .ldc = g->ldc * j->es_c,
            .dtype = g->c_dtype,
            .alpha = j->alpha,
            .beta = j->beta,
            .first = blk == 0,
            .last = blk + step == j->kblocks,
            .ld32 = isa->nq,
        };
        // An f16/bf16 C is written on the last pass only, where its lines
        // are usually cold: they are fetched while the kernel runs (f16 at
        // 1024^3 and 2048^3 about 5% faster in accel-bench; for an f32 C,
        // first written on the first pass, it changed nothing). So are the
        // f32 tile's rows on each pass after the first: a whole tile of
        // up to 1 MiB passes through L2 between two visits of a row, and
        // half the time of the store went in waiting for them (f16
        // 1024^3 and 2048^3 1-2% faster).
        const bool round_c = g->c_dtype != ACCEL_DTYPE_F32 && out.last;
        for (uint64_t b = 0; b < step; b++) {
          uint64_t p0 = (blk + b) * j->kc;
          accel_cpu_gk_pack_b(j, p0, accel_cpu_gk_kc(j, blk + b), jq, nq,
                              bp + b * b_block);
        }
        for (uint64_t ig = ic; ig < ie; ig += group) {
          uint32_t rows = (uint32_t)(ie - ig < group ? ie - ig : group);
          // Where k block blk + b of this group is: packed before the
          // product, or here.
          const float* ag = ap;
          size_t a_step = a_block;
          if (j->a_shared != NULL) {
            ag = j->a_shared + (blk * j->slivers + ig / mr) * a_sliver;
            a_step = j->slivers * a_sliver;
          }
          for (uint64_t b = 0; b < step && j->a_shared == NULL; b++) {
            accel_cpu_gk_pack_a(j, ig, rows, (blk + b) * j->kc,
                                accel_cpu_gk_kc(j, blk + b), ap + b * a_block);
          }
          for (uint32_t i = 0; i < rows; i += mr) {
            uint32_t mv = rows - i < mr ? rows - i : mr;
            for (uint32_t x = 0; x < nq; x += nr) {
              uint32_t nv = nq - x < nr ? nq - x : nr;
              out.c =
                  (unsigned char*)g->c + ((ig + i) * g->ldc + jq + x) * j->es_c;
              out.c32 = j->c32 ? c32 + (ig + i - ic) * isa->nq + x : NULL;
              if (round_c) {
                accel_cpu_gk_prefetch(out.c, out.ldc, mv, nv * j->es_c);
              }
              if (out.c32 != NULL && !out.first) {
                accel_cpu_gk_prefetch(out.c32, isa->nq * sizeof(float), mv,
                                      nv * sizeof(float));
              }
              for (uint64_t b = 0; b < step; b++) {
                uint32_t kc = accel_cpu_gk_kc(j, blk + b);
                isa->kernel(kc, ag + b * a_step + (size_t)i * isa->kc,
                            bp + b * b_block + (size_t)x * kc,
                            b == 0 ? acc : part);
                if (b > 0) {
                  for (uint32_t e = 0; e < tile; e++) acc[e] += part[e];
                }
              }
              isa->store(acc, mv, nv, &out);
            }
          }
        }
      }
    }
  }
}

accel_status_t accel_cpu_gk_gemm(accel_cpu_plugin_t* plugin,
                                 accel_cpu_pool_t* pool,
                                 const accel_cpu_gk_isa_t* isa,
                                 const accel_plugin_gemm_t* g, char* message,
                                 size_t size) {
  accel_cpu_gk_job_t j = {
      .isa = isa,
      .g = g,
      .alpha = (float)g->alpha,
      .beta = (float)g->beta,
      .es = accel_plugin_dtype_size(g->a_dtype),
      .es_c = accel_plugin_dtype_size(g->c_dtype),
  };
  j.kblocks = (g->k + isa->kc - 1) / isa->kc;
  j.kc = (uint32_t)((g->k + j.kblocks - 1) / j.kblocks);  // balanced blocks
  uint64_t width = accel_cpu_pool_width(pool);
  bool split = (double)g->m * (double)g->n * (double)g->k >=
               (double)ACCEL_CPU_GEMM_SPLIT_FLOPS;
  uint64_t tasks = split && width > 1 ? width : 1;
  uint64_t cols = (g->n + isa->nr - 1) / isa->nr;
  uint64_t rows = (g->m + isa->mr - 1) / isa->mr;
  j.split_n = cols >= tasks || cols >= rows;
  j.units = j.split_n ? cols : rows;
  j.tasks = tasks < j.units ? tasks : j.units;
  uint64_t cols_b = (g->n + isa->nr - 1) / isa->nr * isa->nr;
  if (cols_b > isa->nq) cols_b = isa->nq;
  j.b_bytes = accel_cpu_f32_bytes((uint64_t)j.kc * cols_b);
  // An f16/bf16 C over several k blocks: with every block of B packed at
  // once, C is rounded straight from the registers; past half the L2,
  // the f32 tile takes the partial sums.
  j.full_k = g->c_dtype != ACCEL_DTYPE_F32 && j.kblocks > 1 &&
             j.b_bytes * j.kblocks <= accel_cpu_gk_half_l2();
  j.c32 = g->c_dtype != ACCEL_DTYPE_F32 && j.kblocks > 1 && !j.full_k;
  uint64_t step = j.full_k ? j.kblocks : 1;
  // op(A) packed once before the product, all tasks together, when each
  // task would otherwise pack its rows of A again for each of its B
  // blocks: from 2 blocks a task where packing converts or transposes,
  // from 3 for a plain f32 A (a copy). Measured on 2 threads of a Zen 5
  // guest, each product alternating with the old path in one process
  // (docs/performance.md): f16 1024^3 -0.2 to +3.7%, 2048^3 +3.0 to
  // +4.2%, 4096^3 +3.5 to +5.0%; f32 2048^3 -0.2 to +2.3%, 4096^3 +1.4 to
  // +4.0%; but f32 1024^3 (2 blocks a task) slower in 6 runs of 7.
  j.slivers = rows;
  uint64_t task_cols =
      j.split_n ? (j.units + j.tasks - 1) / j.tasks * isa->nr : g->n;
  uint64_t task_blocks = (task_cols + isa->nq - 1) / isa->nq;
  bool copy_a = g->a_dtype == ACCEL_DTYPE_F32 && !g->trans_a;
  size_t shared = 0;
  if (task_blocks >= (copy_a ? 3u : 2u) &&
      rows * isa->mr * isa->kc * j.kblocks <=
          ACCEL_CPU_GK_A_SHARED / sizeof(float)) {
    shared = accel_cpu_f32_bytes(rows * isa->mr * isa->kc * j.kblocks);
  }
  // Scratch per task, sized by the product (a small GEMM takes little):
  // `step` B blocks; `step` groups of the A slivers packed at a time (rows
  // isa->kc apart), unless A is packed before the product; two tiles, the
  // f32 rows.
  uint64_t rows_c32 = j.c32 ? ACCEL_CPU_GK_MC + isa->mr - 1 : 0;  // a chunk
  if (rows_c32 > g->m) rows_c32 = g->m;
  j.a_block = shared > 0 ? 0
                         : (size_t)(g->trans_a ? ACCEL_CPU_GK_SLIVERS : 1) *
                               isa->mr * isa->kc;
  j.task_bytes = j.b_bytes * step +
                 accel_cpu_f32_bytes(j.a_block * step +
                                     2 * ACCEL_CPU_GK_TILE_MAX +
                                     rows_c32 * isa->nq);
  accel_cpu_scratch_t* scratch =
      accel_cpu_scratch_take(plugin, shared + j.task_bytes * j.tasks);
  if (scratch == NULL) {
    snprintf(message, size, "gemm: out of host memory for packed panels");
    return ACCEL_ERROR_OUT_OF_MEMORY;
  }
  j.scratch = scratch->data + shared;
  if (shared > 0) {
    j.a_shared = (float*)scratch->data;
    accel_cpu_pool_run(j.tasks > 1 ? pool : NULL, j.tasks,
                       accel_cpu_gk_pack_task, &j);
  }
  accel_cpu_pool_run(j.tasks > 1 ? pool : NULL, j.tasks, accel_cpu_gk_task, &j);
  accel_cpu_scratch_give(plugin, scratch);
  return ACCEL_OK;
}
