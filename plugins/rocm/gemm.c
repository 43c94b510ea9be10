// SPDX-License-Identifier: MIT
//
// op_gemm: rocBLAS when it is installed (blas.c), else the plugin's own
// tiled kernel (accel_rocm_gemm in kernels/ops.hip). Both take every dtype
// combination plugin.h allows (f32; f16 and bf16 with C of the same type
// or f32), transposes and leading dimensions, accumulate in f32, and never
// read C when beta is 0.
//
// rocBLAS is column-major. A row-major C (m x n, ldc) is the column-major
// C^T (n x m, ldc), and C^T = op(B)^T op(A)^T, so the call swaps the
// operands: gemm_ex(op_b, op_a, n, m, k, B, ldb, A, lda, C, ldc), with the
// row-major leading dimensions unchanged. k = 0 (C = beta C), sizes above
// INT_MAX, and a device whose handle could not be created go to the
// kernel.
//
// Workspace (ABI 1.2): for a GEMM that goes to rocBLAS, op_gemm_workspace
// asks the core for a fixed size, and op_gemm hands the lent memory to the
// handle with rocblas_set_workspace before rocblas_gemm_ex, so rocBLAS's
// scratch comes from the core's caching allocator and shows in its
// statistics. rocBLAS has no per-call size query for gemm_ex (the device
// memory query mode only runs the call dry, which would cost a second
// call per GEMM), so the size is fixed per device: 32 MiB on gfx90a and
// gfx94x/gfx95x, where rocBLAS may run gemm_ex on hipBLASLt (the size
// used for hipBLASLt-backed paths, and cuBLAS's on Hopper), and 4 MiB
// elsewhere (Tensile's split-K partial sums). Nothing is asked for when
// k == 0, when the sizes exceed int, when rocBLAS is absent or its handle
// could not be created (the tiled kernel needs none), or when rocBLAS has
// no rocblas_set_workspace (before ROCm 5): rocBLAS then allocates its own, as
// does a core older than ABI 1.2, which lends nothing. Each stream has its
// own handle (accel_rocm_blas_slot_t, created at the stream's first GEMM;
// the device has one for GEMMs without a stream): rocBLAS-managed scratch
// belongs to a handle and is reused by its next GEMM, so a handle shared
// by two streams would let their GEMMs run over one scratch at once. The
// slot's lock is held across set_stream, set_workspace and gemm_ex, since
// threads may enqueue on one stream at once; the lent memory is only
// valid for this GEMM, so a later GEMM without one (an ABI 1.1 core) first
// returns the handle to rocBLAS-managed memory (set_workspace(NULL, 0)).
//
// Accumulation: rocblas_gemm_ex's compute type is rocblas_datatype_f32_r
// for every dtype, which rocBLAS documents as the type of the
// accumulation; the flags argument is 0 (rocblas_gemm_flags_none), since
// no rocblas_gemm_flags value trades precision (they select packing,
// atomics-free split-K and fp8 rounding; see docs/vendor-contracts.md).
//
// Strided-batched GEMM (ABI 1.4) takes the same route: one
// rocblas_gemm_strided_batched_ex (operands and strides swapped like the
// rest, C also as D, one lent workspace for the whole batch) when rocBLAS
// has it and the sizes fit int, else the tiled kernel with the members
// along grid z (accel_rocm_gemm_batched).
#include <accel/plugin_dtype.h>
#include <limits.h>
#include <string.h>

#include "accel_rocm.h"
#include "kernels/ops_impl.h"

accel_status_t accel_rocm_blas_slot_init(accel_rocm_blas_slot_t* slot) {
  slot->handle = NULL;
  slot->lent = false;
  return pthread_mutex_init(&slot->lock, NULL) == 0 ? ACCEL_OK
                                                    : ACCEL_ERROR_INTERNAL;
}

void accel_rocm_blas_slot_deinit(accel_rocm_device_t* device,
                                 accel_rocm_blas_slot_t* slot, bool pool) {
  const accel_rocm_blas_t* blas = &device->plugin->blas;
  if (slot->handle != NULL && pool) {
    // Lent memory is gone with its GEMM: hand the handle back to
    // rocBLAS-managed memory before another stream gets it.
    if (slot->lent && blas->set_workspace(slot->handle, NULL, 0) != 0) {
      pool = false;
    }
    pthread_mutex_lock(&device->mutex);
    size_t room = sizeof(device->blas_pool) / sizeof(device->blas_pool[0]);
    if (pool && device->blas_pooled < room) {
      device->blas_pool[device->blas_pooled++] = slot->handle;
      slot->handle = NULL;
    }
    pthread_mutex_unlock(&device->mutex);
  }
  if (slot->handle != NULL) {
    blas->destroy_handle(slot->handle);
    slot->handle = NULL;
  }
  pthread_mutex_destroy(&slot->lock);
}

void accel_rocm_blas_pool_drain(accel_rocm_device_t* device) {
  for (uint32_t i = 0; i < device->blas_pooled; i++) {
    device->plugin->blas.destroy_handle(device->blas_pool[i]);
  }
  device->blas_pooled = 0;
}

// The rocBLAS datatype of an accel dtype (F32, F16 or BF16).
static int accel_rocm_blas_type(uint32_t dtype) {
  return dtype == ACCEL_DTYPE_F16    ? ACCEL_ROCM_BLAS_F16
         : dtype == ACCEL_DTYPE_BF16 ? ACCEL_ROCM_BLAS_BF16
                                     : ACCEL_ROCM_BLAS_F32;
}

// Workspace per rocBLAS GEMM (see the top of this file).
#define ACCEL_ROCM_WORKSPACE_LARGE (32u << 20)
#define ACCEL_ROCM_WORKSPACE_DEFAULT (4u << 20)

static uint64_t accel_rocm_gemm_workspace_bytes(
    const accel_rocm_device_t* device) {
  const char* arch = device->arch;
  bool large = strcmp(arch, "gfx90a") == 0 || strncmp(arch, "gfx94", 5) == 0 ||
               strncmp(arch, "gfx95", 5) == 0;
  return large ? ACCEL_ROCM_WORKSPACE_LARGE : ACCEL_ROCM_WORKSPACE_DEFAULT;
}

// Whether rocBLAS can take a GEMM of these sizes (else the kernel runs it).
static bool accel_rocm_gemm_blas_fits(uint64_t m, uint64_t n, uint64_t k,
                                      uint64_t lda, uint64_t ldb,
                                      uint64_t ldc) {
  return k != 0 && m <= INT_MAX && n <= INT_MAX && k <= INT_MAX &&
         lda <= INT_MAX && ldb <= INT_MAX && ldc <= INT_MAX;
}

accel_status_t accel_rocm_op_gemm_workspace(void* device_ptr,
                                            const accel_plugin_gemm_t* g,
                                            uint64_t* out_bytes) {
  accel_rocm_device_t* device = device_ptr;
  *out_bytes = 0;
  if (!accel_rocm_gemm_blas_fits(g->m, g->n, g->k, g->lda, g->ldb, g->ldc)) {
    return ACCEL_OK;
  }
  const accel_rocm_blas_t* blas = accel_rocm_blas_get(device->plugin);
  if (blas == NULL || blas->set_workspace == NULL) return ACCEL_OK;
  if (!atomic_load(&device->blas_failed))
    *out_bytes = accel_rocm_gemm_workspace_bytes(device);
  return ACCEL_OK;
}

// rocblas_status_memory_error: a user-owned workspace was too small.
#define ACCEL_ROCM_BLAS_MEMORY_ERROR 5

// One rocblas_gemm_ex of `g` on `handle`, operands swapped for row-major
// (see the top of this file). Returns the rocblas_status.
static int accel_rocm_gemm_ex(const accel_rocm_blas_t* blas,
                              accel_rocm_blas_handle_t handle,
                              const accel_rocm_gemm_args_t* g, int ab, int c) {
  return blas->gemm_ex(
      handle, g->trans_b ? ACCEL_ROCM_BLAS_OP_T : ACCEL_ROCM_BLAS_OP_N,
      g->trans_a ? ACCEL_ROCM_BLAS_OP_T : ACCEL_ROCM_BLAS_OP_N, (int)g->n,
      (int)g->m, (int)g->k, &g->alpha, g->b, ab, (int)g->ldb, g->a, ab,
      (int)g->lda, &g->beta, g->c, c, (int)g->ldc, g->c, c, (int)g->ldc,
      ACCEL_ROCM_BLAS_F32, ACCEL_ROCM_BLAS_ALGO_STANDARD, 0, 0);
}

// One rocblas_gemm_strided_batched_ex of the batch `b` (strides already
// in elements), swapped like accel_rocm_gemm_ex.
static int accel_rocm_gemm_strided_ex(const accel_rocm_blas_t* blas,
                                      accel_rocm_blas_handle_t handle,
                                      const accel_rocm_gemm_batch_args_t* b,
                                      int ab, int c) {
  const accel_rocm_gemm_args_t* g = &b->g;
  return blas->gemm_strided_batched_ex(
      handle, g->trans_b ? ACCEL_ROCM_BLAS_OP_T : ACCEL_ROCM_BLAS_OP_N,
      g->trans_a ? ACCEL_ROCM_BLAS_OP_T : ACCEL_ROCM_BLAS_OP_N, (int)g->n,
      (int)g->m, (int)g->k, &g->alpha, g->b, ab, (int)g->ldb,
      (int64_t)b->stride_b, g->a, ab, (int)g->lda, (int64_t)b->stride_a,
      &g->beta, g->c, c, (int)g->ldc, (int64_t)b->stride_c, g->c, c,
      (int)g->ldc, (int64_t)b->stride_c, (int)b->count, ACCEL_ROCM_BLAS_F32,
      ACCEL_ROCM_BLAS_ALGO_STANDARD, 0, 0);
}

// The rocBLAS call of `g`, or of the batch `b` (strides in elements) when
// not NULL.
static int accel_rocm_gemm_blas_call(const accel_rocm_blas_t* blas,
                                     accel_rocm_blas_handle_t handle,
                                     const accel_rocm_gemm_args_t* g,
                                     const accel_rocm_gemm_batch_args_t* b,
                                     int ab, int c) {
  return b != NULL ? accel_rocm_gemm_strided_ex(blas, handle, b, ab, c)
                   : accel_rocm_gemm_ex(blas, handle, g, ab, c);
}

// Enqueues `g` (or the batch `batch`, strides in elements, whose `g` it
// is) on rocBLAS, with the workspace `gemm` carries. Returns
// ACCEL_ERROR_UNSUPPORTED, without recording a message, when rocBLAS
// cannot take it, so the caller falls back to the kernel.
static accel_status_t accel_rocm_gemm_blas(
    accel_rocm_device_t* device, void* stream, const accel_rocm_gemm_args_t* g,
    const accel_rocm_gemm_batch_args_t* batch,
    const accel_plugin_gemm_t* gemm) {
  if (!accel_rocm_gemm_blas_fits(g->m, g->n, g->k, g->lda, g->ldb, g->ldc) ||
      (batch != NULL && batch->count > INT_MAX)) {
    return ACCEL_ERROR_UNSUPPORTED;
  }
  const accel_rocm_blas_t* blas = accel_rocm_blas_get(device->plugin);
  if (blas == NULL ||
      (batch != NULL && blas->gemm_strided_batched_ex == NULL)) {
    return ACCEL_ERROR_UNSUPPORTED;
  }
  accel_rocm_blas_slot_t* slot =
      stream != NULL ? &((accel_rocm_stream_t*)stream)->blas : &device->blas;
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  if (status != ACCEL_OK) return status;
  pthread_mutex_lock(&slot->lock);
  if (slot->handle == NULL) {
    pthread_mutex_lock(&device->mutex);
    if (device->blas_pooled > 0) {
      slot->handle = device->blas_pool[--device->blas_pooled];
    }
    pthread_mutex_unlock(&device->mutex);
  }
  if (slot->handle == NULL && !atomic_load(&device->blas_failed)) {
    int rc = blas->create_handle(&slot->handle);
    if (rc != 0) {
      slot->handle = NULL;
      atomic_store(&device->blas_failed, true);
      device->host->log(device->host, ACCEL_LOG_WARN,
                        "%s: rocblas_create_handle failed (%d); GEMM uses "
                        "the tiled kernel",
                        device->prefix, rc);
    }
  }
  if (slot->handle == NULL) {
    pthread_mutex_unlock(&slot->lock);
    accel_rocm_device_leave(device, saved);
    return ACCEL_ERROR_UNSUPPORTED;
  }
  int ab = accel_rocm_blas_type(g->ab_dtype);
  int c = accel_rocm_blas_type(g->c_dtype);
  const char* call = "rocblas_set_stream";
  int rc = blas->set_stream(slot->handle, accel_rocm_stream_handle(stream));
  if (rc == 0 && blas->set_workspace != NULL) {
    void* workspace = NULL;
    size_t workspace_size = 0;
    if (ACCEL_PLUGIN_HAS_FIELD(gemm, accel_plugin_gemm_t, workspace_size) &&
        gemm->workspace != NULL && gemm->workspace_size != 0) {
      workspace = (unsigned char*)gemm->workspace + gemm->workspace_offset;
      workspace_size = (size_t)gemm->workspace_size;
    }
    // Lent memory is set for every GEMM (it changes); without any, only
    // undo an earlier GEMM's (NULL, 0 frees what rocBLAS itself holds).
    if (workspace != NULL || slot->lent) {
      call = "rocblas_set_workspace";
      rc = blas->set_workspace(slot->handle, workspace, workspace_size);
      // On failure the handle's state is unknown: reset it next time.
      slot->lent = rc != 0 || workspace != NULL;
    }
  }
  if (rc == 0) {
    call =
        batch != NULL ? "rocblas_gemm_strided_batched_ex" : "rocblas_gemm_ex";
    rc = accel_rocm_gemm_blas_call(blas, slot->handle, g, batch, ab, c);
    if (rc == ACCEL_ROCM_BLAS_MEMORY_ERROR && slot->lent &&
        blas->set_workspace(slot->handle, NULL, 0) == 0) {
      // A user-owned workspace never grows: this GEMM wanted more than
      // the fixed size lent. rocBLAS manages its own memory for it.
      slot->lent = false;
      device->host->log(device->host, ACCEL_LOG_WARN,
                        "%s: rocBLAS needs more than the %llu-byte workspace "
                        "lent for this GEMM; it allocates its own",
                        device->prefix,
                        (unsigned long long)gemm->workspace_size);
      rc = accel_rocm_gemm_blas_call(blas, slot->handle, g, batch, ab, c);
    }
  }
  pthread_mutex_unlock(&slot->lock);
  accel_rocm_device_leave(device, saved);
  if (rc != 0) {
    return device->host->fail(device->host, ACCEL_ERROR_BACKEND,
                              "%s: %s failed with rocblas_status %d",
                              device->prefix, call, rc);
  }
  return ACCEL_OK;
}

// Largest grid y (rows of tiles per launch); the kernel loops over more.
#define ACCEL_ROCM_GEMM_MAX_GRID_Y 65535u
// Largest grid x (columns of tiles).
#define ACCEL_ROCM_GEMM_MAX_GRID_X 0x7fffffffu

// Checks the dtype combination and builds the kernel arguments of `gemm`
// (pointers offset); ACCEL_ERROR_UNSUPPORTED through host->fail otherwise.
static accel_status_t accel_rocm_gemm_args(accel_rocm_device_t* device,
                                           const accel_plugin_gemm_t* gemm,
                                           accel_rocm_gemm_args_t* g,
                                           uint32_t grid[3]) {
  const accel_host_t* host = device->host;
  bool half_in =
      gemm->a_dtype == ACCEL_DTYPE_F16 || gemm->a_dtype == ACCEL_DTYPE_BF16;
  if ((gemm->a_dtype != ACCEL_DTYPE_F32 && !half_in) ||
      gemm->b_dtype != gemm->a_dtype ||
      (gemm->c_dtype != gemm->a_dtype &&
       !(half_in && gemm->c_dtype == ACCEL_DTYPE_F32))) {
    return host->fail(host, ACCEL_ERROR_UNSUPPORTED,
                      "%s: gemm: unsupported dtypes a=%u b=%u c=%u",
                      device->prefix, (unsigned)gemm->a_dtype,
                      (unsigned)gemm->b_dtype, (unsigned)gemm->c_dtype);
  }
  uint64_t col_tiles =
      (gemm->n + ACCEL_ROCM_GEMM_TILE - 1) / ACCEL_ROCM_GEMM_TILE;
  uint64_t row_tiles =
      (gemm->m + ACCEL_ROCM_GEMM_TILE - 1) / ACCEL_ROCM_GEMM_TILE;
  if (col_tiles > ACCEL_ROCM_GEMM_MAX_GRID_X) {
    return host->fail(host, ACCEL_ERROR_UNSUPPORTED,
                      "%s: gemm: n = %llu is too large", device->prefix,
                      (unsigned long long)gemm->n);
  }
  *g = (accel_rocm_gemm_args_t){
      .a = (const unsigned char*)gemm->a + gemm->a_offset,
      .b = (const unsigned char*)gemm->b + gemm->b_offset,
      .c = (unsigned char*)gemm->c + gemm->c_offset,
      .m = gemm->m,
      .n = gemm->n,
      .k = gemm->k,
      .lda = gemm->lda,
      .ldb = gemm->ldb,
      .ldc = gemm->ldc,
      .alpha = (float)gemm->alpha,
      .beta = (float)gemm->beta,
      .ab_dtype = gemm->a_dtype,
      .c_dtype = gemm->c_dtype,
      .trans_a = gemm->trans_a != 0,
      .trans_b = gemm->trans_b != 0};
  grid[0] = (uint32_t)col_tiles;
  grid[1] = (uint32_t)(row_tiles < ACCEL_ROCM_GEMM_MAX_GRID_Y
                           ? row_tiles
                           : ACCEL_ROCM_GEMM_MAX_GRID_Y);
  grid[2] = 1;
  return ACCEL_OK;
}

accel_status_t accel_rocm_op_gemm(void* device_ptr, void* stream,
                                  const accel_plugin_gemm_t* gemm) {
  accel_rocm_device_t* device = device_ptr;
  accel_rocm_gemm_args_t g;
  uint32_t grid[3];
  accel_status_t status = accel_rocm_gemm_args(device, gemm, &g, grid);
  if (status != ACCEL_OK) return status;
  status = accel_rocm_gemm_blas(device, stream, &g, NULL, gemm);
  if (status != ACCEL_ERROR_UNSUPPORTED) return status;
  const accel_rocm_builtin_t* b = NULL;
  status = accel_rocm_builtin_get(device, &b);
  if (status != ACCEL_OK) return status;
  uint32_t block[3] = {ACCEL_ROCM_GEMM_TILE, ACCEL_ROCM_GEMM_TILE, 1};
  return accel_rocm_launch_builtin(device, b->gemm, "gemm", stream, grid, block,
                                   &g);
}

// Largest grid z of the batched kernel (members per launch); it loops.
#define ACCEL_ROCM_GEMM_MAX_GRID_Z 65535u

accel_status_t accel_rocm_op_gemm_batched(
    void* device_ptr, void* stream, const accel_plugin_gemm_t* gemm,
    const accel_plugin_gemm_batch_t* batch) {
  accel_rocm_device_t* device = device_ptr;
  accel_rocm_gemm_batch_args_t b = {.count = batch->count,
                                    .stride_a = batch->stride_a,
                                    .stride_b = batch->stride_b,
                                    .stride_c = batch->stride_c};
  uint32_t grid[3];
  accel_status_t status = accel_rocm_gemm_args(device, gemm, &b.g, grid);
  if (status != ACCEL_OK) return status;
  size_t ea = accel_plugin_dtype_size(gemm->a_dtype);
  size_t ec = accel_plugin_dtype_size(gemm->c_dtype);
  if (b.stride_a % ea == 0 && b.stride_b % ea == 0 && b.stride_c % ec == 0) {
    // rocBLAS takes strides in elements.
    accel_rocm_gemm_batch_args_t elems = b;
    elems.stride_a /= ea, elems.stride_b /= ea, elems.stride_c /= ec;
    status = accel_rocm_gemm_blas(device, stream, &b.g, &elems, gemm);
    if (status != ACCEL_ERROR_UNSUPPORTED) return status;
  }
  const accel_rocm_builtin_t* bi = NULL;
  status = accel_rocm_builtin_get(device, &bi);
  if (status != ACCEL_OK) return status;
  grid[2] = (uint32_t)(b.count < ACCEL_ROCM_GEMM_MAX_GRID_Z
                           ? b.count
                           : ACCEL_ROCM_GEMM_MAX_GRID_Z);
  uint32_t block[3] = {ACCEL_ROCM_GEMM_TILE, ACCEL_ROCM_GEMM_TILE, 1};
  return accel_rocm_launch_builtin(device, bi->gemm_batched, "gemm_batched",
                                   stream, grid, block, &b);
}
