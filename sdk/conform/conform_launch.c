// SPDX-License-Identifier: MIT
//
// Launch checks with the test kernels of sdk/conform/kernels (README.md
// there): buffer arguments at non-zero and odd offsets (refused with
// UNSUPPORTED where the device needs an aligned offset, ABI 1.3), 2D and
// 3D grids, value arguments of 1 to 24 bytes, dynamic shared memory, and
// arguments taken at enqueue, not when a queued launch runs, and (CPU-ABI
// modules only) the block context a host kernel is given and distinct
// workers and shared memory for blocks that run at the same time.
// Each check is skipped when the device runs no custom kernels or its test
// module lacks the kernel.
#include <accel/cpu_kernel.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

conform_result_t conform_launch_run(conform_ctx_t* ctx, accel_kernel_t* kernel,
                                    const uint32_t grid[3],
                                    const uint32_t block[3], uint32_t shared,
                                    size_t num_args,
                                    const accel_kernel_arg_t* args,
                                    const char* what) {
  accel_stream_t* stream = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "stream");
  accel_launch_config_t config;
  accel_launch_config_init(&config);
  memcpy(config.grid, grid, sizeof(config.grid));
  memcpy(config.block, block, sizeof(config.block));
  config.shared_mem_bytes = shared;
  status = accel_kernel_launch(kernel, stream, &config, num_args, args);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, what);
  status = conform_stream_wait(ctx, stream);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, what);
  return CONFORM_PASS;
}

// add_one over n elements starting `offset` bytes into a buffer.
static conform_result_t conform_launch_offset(conform_ctx_t* ctx,
                                              accel_kernel_t* kernel,
                                              size_t offset, bool* refused) {
  enum { N = 300, TOTAL = 1024 };
  int32_t data[TOTAL], want[TOTAL];
  for (int i = 0; i < TOTAL; i++) data[i] = want[i] = i * 3 + 1;
  size_t first = offset / sizeof(int32_t);
  for (size_t i = first; i < first + N; i++) want[i] += 1;
  accel_buffer_t* buffer = NULL;
  accel_status_t status = conform_buffer(ctx, ctx->device, sizeof(data), &buffer);
  if (status == ACCEL_OK) {
    status = accel_buffer_write(buffer, 0, data, sizeof(data));
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  conform_add_one_t launch;
  conform_add_one_init(ctx, &launch, buffer, offset, N, N);
  uint32_t align = ctx->info.buffer_offset_alignment;
  if (align > 1 && offset % align != 0) {
    accel_stream_t* stream = NULL;
    status = conform_stream(ctx, ctx->device, &stream);
    if (status == ACCEL_OK) {
      status = conform_add_one_launch(&launch, kernel, stream);
    }
    if (status != ACCEL_ERROR_UNSUPPORTED) {
      return conform_report(ctx, CONFORM_FAIL,
                            "offset %zu with buffer_offset_alignment %u gave "
                            "%s, expected ACCEL_ERROR_UNSUPPORTED",
                            offset, align, accel_status_string(status));
    }
    *refused = true;
    return CONFORM_PASS;
  }
  char what[64];
  snprintf(what, sizeof(what), "add_one at offset %zu", offset);
  conform_result_t r =
      conform_launch_run(ctx, kernel, launch.config.grid, launch.config.block,
                         0, 2, launch.args, what);
  if (r != CONFORM_PASS) return r;
  if (!conform_verify(ctx, buffer, (const unsigned char*)want, sizeof(want),
                      what)) {
    return CONFORM_FAIL;
  }
  return CONFORM_PASS;
}

static conform_result_t conform_launch_offsets(conform_ctx_t* ctx,
                                               const void* arg) {
  (void)arg;
  char path[1024] = "";
  accel_kernel_t* kernel = NULL;
  CONFORM_GET_KERNEL(ctx, CONFORM_ADD_ONE, kernel, path);
  uint32_t align = ctx->info.buffer_offset_alignment;
  size_t aligned = align > 256 ? align : 256;
  const size_t offsets[] = {aligned, 4, 12, 1000};
  int refused = 0;
  for (size_t i = 0; i < sizeof(offsets) / sizeof(offsets[0]); i++) {
    bool no = false;
    conform_result_t r = conform_launch_offset(ctx, kernel, offsets[i], &no);
    if (r != CONFORM_PASS) return r;
    refused += no;
  }
  return conform_report(ctx, CONFORM_PASS,
                        "offsets %zu, 4, 12, 1000 bytes; %d refused for "
                        "alignment %u",
                        aligned, refused, align);
}

// Two launches of one kernel queued behind work on a busy stream, the
// caller's argument array and value reused (changed) between them: each
// launch runs with the arguments it was given (CUDA copies them at
// launch), not with whatever the kernel's staged arguments hold when it
// runs.
static conform_result_t conform_launch_args_at_enqueue(conform_ctx_t* ctx,
                                                       const void* arg) {
  (void)arg;
  char path[1024] = "";
  accel_kernel_t* kernel = NULL;
  CONFORM_GET_KERNEL(ctx, CONFORM_ADD_ONE, kernel, path);
  enum { TOTAL = 512, N1 = 300, N2 = 200 };
  int32_t data[TOTAL], want1[TOTAL], want2[TOTAL];
  for (int i = 0; i < TOTAL; i++) {
    data[i] = i * 7 - 100;
    want1[i] = data[i] + (i < N1);
    want2[i] = data[i] + (i < N2);
  }
  accel_stream_t* stream = NULL;
  accel_buffer_t *b1 = NULL, *b2 = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status == ACCEL_OK)
    status = conform_buffer(ctx, ctx->device, sizeof(data), &b1);
  if (status == ACCEL_OK)
    status = conform_buffer(ctx, ctx->device, sizeof(data), &b2);
  if (status == ACCEL_OK)
    status = accel_buffer_write(b1, 0, data, sizeof(data));
  if (status == ACCEL_OK)
    status = accel_buffer_write(b2, 0, data, sizeof(data));
  if (status == ACCEL_OK) status = conform_heavy_work(ctx, stream, 20);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  // One argument array and value, changed in place between the launches.
  conform_add_one_t launch;
  conform_add_one_init(ctx, &launch, b1, 0, N1, TOTAL);
  status = conform_add_one_launch(&launch, kernel, stream);
  if (status == ACCEL_OK) {
    launch.n = N2;
    launch.args[0].buffer = b2;
    status = conform_add_one_launch(&launch, kernel, stream);
  }
  if (status != ACCEL_OK) {
    return conform_fail_status(ctx, status, CONFORM_ADD_ONE);
  }
  status = conform_stream_wait(ctx, stream);
  if (status != ACCEL_OK) {
    return conform_fail_wait(ctx, status, CONFORM_ADD_ONE);
  }
  if (!conform_verify(ctx, b1, (const unsigned char*)want1, sizeof(want1),
                      "first launch (buffer 1, n 300)") ||
      !conform_verify(ctx, b2, (const unsigned char*)want2, sizeof(want2),
                      "second launch (buffer 2, n 200)")) {
    return CONFORM_FAIL;
  }
  return conform_report(ctx, CONFORM_PASS,
                        "two queued launches kept their own arguments");
}

// accel_conform_index over nx * ny * nz with `block`.
static conform_result_t conform_launch_grid(conform_ctx_t* ctx,
                                            accel_kernel_t* kernel,
                                            const uint32_t n[3],
                                            const uint32_t block[3]) {
  size_t count = (size_t)n[0] * n[1] * n[2];
  size_t bytes = count * sizeof(int32_t);
  int32_t* want = conform_alloc(ctx, bytes);
  int32_t* init = conform_alloc(ctx, bytes);
  if (want == NULL || init == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "out of host memory");
  }
  for (uint32_t z = 0; z < n[2]; z++) {
    for (uint32_t y = 0; y < n[1]; y++) {
      for (uint32_t x = 0; x < n[0]; x++) {
        want[((size_t)z * n[1] + y) * n[0] + x] =
            (int32_t)(x + (y << 10) + (z << 20));
      }
    }
  }
  memset(init, 0xff, bytes);
  accel_buffer_t* out = NULL;
  accel_status_t status = conform_buffer(ctx, ctx->device, bytes, &out);
  if (status == ACCEL_OK) status = accel_buffer_write(out, 0, init, bytes);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  uint32_t grid[3];
  for (int d = 0; d < 3; d++) grid[d] = (n[d] + block[d] - 1) / block[d];
  accel_kernel_arg_t args[4] = {
      {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = out},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = 4, .value = &n[0]},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = 4, .value = &n[1]},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = 4, .value = &n[2]},
  };
  char what[96];
  snprintf(what, sizeof(what), "grid %ux%ux%u of blocks %ux%ux%u", grid[0],
           grid[1], grid[2], block[0], block[1], block[2]);
  conform_result_t r =
      conform_launch_run(ctx, kernel, grid, block, 0, 4, args, what);
  if (r != CONFORM_PASS) return r;
  if (!conform_verify(ctx, out, (const unsigned char*)want, bytes, what)) {
    return CONFORM_FAIL;
  }
  return CONFORM_PASS;
}

static conform_result_t conform_launch_grids(conform_ctx_t* ctx,
                                             const void* arg) {
  (void)arg;
  char path[1024] = "";
  accel_kernel_t* kernel = NULL;
  CONFORM_GET_KERNEL(ctx, "accel_conform_index", kernel, path);
  static const uint32_t n2[3] = {37, 23, 1}, b2[3] = {8, 4, 1};
  static const uint32_t n3[3] = {13, 7, 5}, b3[3] = {4, 2, 2};
  conform_result_t r = conform_launch_grid(ctx, kernel, n2, b2);
  if (r == CONFORM_PASS) r = conform_launch_grid(ctx, kernel, n3, b3);
  if (r != CONFORM_PASS) return r;
  return conform_report(ctx, CONFORM_PASS, "2D 37x23 and 3D 13x7x5 indexed");
}

// The 16- and 24-byte value arguments of accel_conform_args.
typedef struct conform_pair {
  uint64_t lo, hi;
} conform_pair_t;
typedef struct conform_triple {
  uint64_t a, b, c;
} conform_triple_t;

static conform_result_t conform_launch_value_args(conform_ctx_t* ctx,
                                                  const void* arg) {
  (void)arg;
  char path[1024] = "";
  accel_kernel_t* kernel = NULL;
  CONFORM_GET_KERNEL(ctx, "accel_conform_args", kernel, path);
  uint8_t a = 0xa5;
  uint16_t b = 0xbeef;
  uint32_t c = 0xc0ffee11u;
  uint64_t d = 0xd00dfeedcafef00dull;
  conform_pair_t e = {0x0123456789abcdefull, 0xfedcba9876543210ull};
  conform_triple_t f = {0x1111222233334444ull, 0x5555666677778888ull,
                        0x99990000aaaabbbbull};
  uint64_t want[9] = {a, b, c, d, e.lo, e.hi, f.a, f.b, f.c};
  accel_buffer_t* out = NULL;
  accel_status_t status = conform_buffer(ctx, ctx->device, sizeof(want), &out);
  if (status == ACCEL_OK) status = accel_buffer_fill(out, 0, 0, sizeof(want));
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  accel_kernel_arg_t args[7] = {
      {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = out},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = 1, .value = &a},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = 2, .value = &b},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = 4, .value = &c},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = 8, .value = &d},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = sizeof(e), .value = &e},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = sizeof(f), .value = &f},
  };
  static const uint32_t one[3] = {1, 1, 1};
  conform_result_t r = conform_launch_run(ctx, kernel, one, one, 0, 7, args,
                                          "accel_conform_args");
  if (r != CONFORM_PASS) return r;
  if (!conform_verify(ctx, out, (const unsigned char*)want, sizeof(want),
                      "value arguments of 1, 2, 4, 8, 16, 24 bytes")) {
    return CONFORM_FAIL;
  }
  return conform_report(ctx, CONFORM_PASS, "1, 2, 4, 8, 16, 24 bytes");
}

static conform_result_t conform_launch_shared(conform_ctx_t* ctx,
                                              const void* arg) {
  (void)arg;
  char path[1024] = "";
  accel_kernel_t* kernel = NULL;
  CONFORM_GET_KERNEL(ctx, "accel_conform_shared", kernel, path);
  enum { N = 64, BLOCKS = 5 };
  uint32_t shared = N * sizeof(int32_t);
  if (ctx->info.max_shared_mem_bytes != 0 &&
      ctx->info.max_shared_mem_bytes < shared) {
    return conform_report(ctx, CONFORM_SKIP,
                          "max_shared_mem_bytes %llu < %u",
                          (unsigned long long)ctx->info.max_shared_mem_bytes,
                          shared);
  }
  int32_t want[N * BLOCKS];
  for (int b = 0; b < BLOCKS; b++) {
    for (int t = 0; t < N; t++) want[b * N + t] = b * 1000 + (N - 1 - t);
  }
  accel_buffer_t* out = NULL;
  accel_status_t status = conform_buffer(ctx, ctx->device, sizeof(want), &out);
  if (status == ACCEL_OK) status = accel_buffer_fill(out, 0, 0, sizeof(want));
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  uint32_t n = N;
  accel_kernel_arg_t args[2] = {
      {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = out},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = 4, .value = &n},
  };
  uint32_t grid[3] = {BLOCKS, 1, 1}, block[3] = {1, 1, 1};
  conform_result_t r = conform_launch_run(ctx, kernel, grid, block, shared, 2,
                                          args, "accel_conform_shared");
  if (r != CONFORM_PASS) return r;
  if (!conform_verify(ctx, out, (const unsigned char*)want, sizeof(want),
                      "dynamic shared memory")) {
    return CONFORM_FAIL;
  }
  return conform_report(ctx, CONFORM_PASS, "%d blocks, %u bytes each", BLOCKS,
                        shared);
}

// One launch of accel_conform_ctx over `grid` blocks of `block` with
// `shared` bytes of dynamic shared memory; every block's record must say
// what <accel/cpu_kernel.h> promises.
static conform_result_t conform_launch_ctx_once(conform_ctx_t* ctx,
                                                accel_kernel_t* kernel,
                                                const uint32_t grid[3],
                                                const uint32_t block[3],
                                                uint32_t shared) {
  enum { WORDS = 13 };
  uint32_t blocks = grid[0] * grid[1] * grid[2];
  size_t bytes = (size_t)blocks * WORDS * sizeof(uint32_t);
  uint32_t* rec = NULL;
  accel_buffer_t* out = NULL;
  if (conform_launch_words(ctx, bytes, &rec, &out) != CONFORM_PASS) {
    return CONFORM_FAIL;
  }
  accel_kernel_arg_t args[4] = {
      {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = out},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = 4, .value = &grid[0]},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = 4, .value = &grid[1]},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = 4, .value = &blocks},
  };
  char what[96];
  snprintf(what, sizeof(what), "grid %ux%ux%u of blocks %ux%ux%u, %u shared",
           grid[0], grid[1], grid[2], block[0], block[1], block[2], shared);
  conform_result_t r =
      conform_launch_run(ctx, kernel, grid, block, shared, 4, args, what);
  if (r != CONFORM_PASS) return r;
  accel_status_t status = accel_buffer_read(out, 0, rec, bytes);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "read");
  static const char* const field[] = {
      "calls",        "block_idx[0]", "block_idx[1]", "block_idx[2]",
      "grid_dim[0]",  "grid_dim[1]",  "grid_dim[2]",  "block_dim[0]",
      "block_dim[1]", "block_dim[2]", "struct_size",  "shared_mem % 64",
      "shared_mem_bytes"};
  uint32_t min_size =
      (uint32_t)(offsetof(accel_cpu_kernel_ctx_t, worker) + sizeof(uint32_t));
  for (uint32_t b = 0; b < blocks; b++) {
    const uint32_t* got = rec + (size_t)b * WORDS;
    uint32_t want[WORDS] = {1,
                            b % grid[0],
                            b / grid[0] % grid[1],
                            b / (grid[0] * grid[1]),
                            grid[0],
                            grid[1],
                            grid[2],
                            block[0],
                            block[1],
                            block[2],
                            got[10],
                            shared != 0 ? 0u : 0xffffffffu,
                            shared};
    if (got[10] < min_size) want[10] = min_size;
    for (int w = 0; w < WORDS; w++) {
      if (got[w] == want[w]) continue;
      return conform_report(
          ctx, CONFORM_FAIL,
          "%s: block (%u, %u, %u) saw %s %u, expected %s%u "
          "(<accel/cpu_kernel.h>: every block runs once, grid_dim and "
          "block_dim are the launch's, shared_mem is 64-byte aligned with "
          "the launch's size, NULL and 0 without)",
          what, want[1], want[2], want[3], field[w], got[w],
          w == 10 ? "at least " : "", want[w]);
    }
  }
  return CONFORM_PASS;
}

// The context of a CPU-ABI kernel (<accel/cpu_kernel.h>); the kernel is in
// the host test module only, so other targets SKIP.
static conform_result_t conform_launch_cpu_ctx(conform_ctx_t* ctx,
                                               const void* arg) {
  (void)arg;
  char path[1024] = "";
  accel_kernel_t* kernel = NULL;
  CONFORM_GET_KERNEL(ctx, "accel_conform_ctx", kernel, path);
  static const uint32_t g3[3] = {3, 2, 2}, b3[3] = {5, 3, 2};
  static const uint32_t g1[3] = {4, 1, 1}, b1[3] = {1, 1, 1};
  uint32_t shared = 100;  // not a multiple of 64
  if (ctx->info.max_shared_mem_bytes != 0 &&
      ctx->info.max_shared_mem_bytes < shared) {
    shared = 0;
  }
  conform_result_t r = conform_launch_ctx_once(ctx, kernel, g3, b3, shared);
  if (r == CONFORM_PASS) r = conform_launch_ctx_once(ctx, kernel, g1, b1, 0);
  if (r != CONFORM_PASS) return r;
  return conform_report(ctx, CONFORM_PASS,
                        "3x2x2 blocks of 5x3x2 with %u bytes of shared "
                        "memory, 4 blocks without",
                        shared);
}

// conform_launch_cpu.c
conform_result_t conform_launch_cpu_workers(conform_ctx_t* ctx,
                                            const void* arg);
conform_result_t conform_launch_shared_streams(conform_ctx_t* ctx,
                                               const void* arg);

static const conform_check_t conform_launches[] = {
    {"launch.offsets", conform_launch_offsets, NULL},
    {"launch.grids", conform_launch_grids, NULL},
    {"launch.value_args", conform_launch_value_args, NULL},
    {"launch.shared_mem", conform_launch_shared, NULL},
    {"launch.args_at_enqueue", conform_launch_args_at_enqueue, NULL},
    {"launch.cpu_ctx", conform_launch_cpu_ctx, NULL},
    {"launch.cpu_workers", conform_launch_cpu_workers, NULL},
    {"launch.shared_streams", conform_launch_shared_streams, NULL},
};

const conform_check_t* conform_launch_checks(size_t* out_count) {
  *out_count = sizeof(conform_launches) / sizeof(conform_launches[0]);
  return conform_launches;
}
