// SPDX-License-Identifier: MIT
//
// Launches checks for CPU-ABI targets only (the CPU plugin, the template):
// blocks running at the same time, in one launch or in launches on other
// streams, must each have their own `worker` index and shared memory
// (<accel/cpu_kernel.h>). Their kernels are in the host module only
// (kernels/add_one_cpu.c), so other targets SKIP. The table of launch
// checks is in conform_launch.c.
#include <stdint.h>
#include <stdio.h>

#include "conform.h"
#include "kernels/conform_cpu_words.h"

conform_result_t conform_launch_words(conform_ctx_t* ctx, size_t bytes,
                                      uint32_t** out_host,
                                      accel_buffer_t** out_buffer) {
  *out_host = conform_alloc(ctx, bytes);
  if (*out_host == NULL) return conform_report(ctx, CONFORM_FAIL, "host OOM");
  accel_status_t status = conform_buffer(ctx, ctx->device, bytes, out_buffer);
  if (status == ACCEL_OK) status = accel_buffer_fill(*out_buffer, 0, 0, bytes);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  return CONFORM_PASS;
}

// Blocks running at the same time must have different `worker` values and
// their own shared memory (<accel/cpu_kernel.h>): launch.cpu_ctx and
// launch.shared_mem run too few blocks, too briefly, to see two at once.
// 8 x compute_units blocks each hold their worker's busy mark and their
// shared memory, filled with their index, until they see another block
// running (or 20 ms pass), then check neither was touched. A device that
// runs one block at a time never collides and passes. The kernel is in the
// host module only, so other targets SKIP.
conform_result_t conform_launch_cpu_workers(conform_ctx_t* ctx,
                                            const void* arg) {
  (void)arg;
  char path[1024] = "";
  accel_kernel_t* kernel = NULL;
  CONFORM_GET_KERNEL(ctx, "accel_conform_workers", kernel, path);
  uint32_t units = ctx->info.compute_units != 0 ? ctx->info.compute_units : 1;
  // Enough blocks for every worker to run several; capped so that a device
  // claiming a huge count does not make the check slow.
  uint32_t blocks = units < 512 ? 8 * units : 4096;
  // The header promises worker < the pool's width, which it does not
  // publish; compute_units is the CPU plugin's width. Far more slots than
  // that, so only a plainly wrong index (garbage) counts as a collision.
  uint32_t bound = units < 64 ? 1024 : 16 * units;
  uint32_t wait_us = 20000, max_lonely = 8;
  uint32_t shared = 256;
  if (ctx->info.max_shared_mem_bytes != 0 &&
      ctx->info.max_shared_mem_bytes < shared) {
    shared = 0;  // workers only; launch.shared_mem reports the limit
  }
  size_t words = CONFORM_WORKERS_BUSY + (size_t)bound;
  size_t bytes = words * sizeof(uint32_t);
  uint32_t* state = NULL;
  accel_buffer_t* buffer = NULL;
  if (conform_launch_words(ctx, bytes, &state, &buffer) != CONFORM_PASS) {
    return CONFORM_FAIL;
  }
  accel_kernel_arg_t args[4] = {
      {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = buffer},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = 4, .value = &bound},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = 4, .value = &wait_us},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = 4, .value = &max_lonely},
  };
  uint32_t grid[3] = {blocks, 1, 1}, block[3] = {1, 1, 1};
  char what[96];
  snprintf(what, sizeof(what), "%u blocks with %u bytes of shared memory",
           blocks, shared);
  conform_result_t r =
      conform_launch_run(ctx, kernel, grid, block, shared, 4, args, what);
  if (r != CONFORM_PASS) return r;
  accel_status_t status = accel_buffer_read(buffer, 0, state, bytes);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "read");
  if (state[CONFORM_WORKERS_COLLISIONS] != 0) {
    static const char* const kind[] = {
        "?",
        "a worker index at or above the bound",
        "its worker index already held by a running block",
        "its shared memory overwritten by another block",
        "its worker index taken by another block while it ran"};
    uint32_t k = state[CONFORM_WORKERS_KIND];
    return conform_report(
        ctx, CONFORM_FAIL,
        "%s: %u collision(s); first: block %u on worker %u saw %s (bound "
        "%u; <accel/cpu_kernel.h>: blocks running at the same time have "
        "different `worker` values, and shared_mem is private to its "
        "block while it runs)",
        what, state[CONFORM_WORKERS_COLLISIONS], state[CONFORM_WORKERS_BLOCK],
        state[CONFORM_WORKERS_WORKER], kind[k < 5 ? k : 0], bound);
  }
  if (state[CONFORM_WORKERS_CALLS] != blocks) {
    return conform_report(ctx, CONFORM_FAIL, "%s: %u blocks ran, expected %u",
                          what, state[CONFORM_WORKERS_CALLS], blocks);
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%s: %u ran beside another, %u waited alone; no "
                        "worker index or shared memory shared",
                        what, state[CONFORM_WORKERS_OVERLAPPED],
                        state[CONFORM_WORKERS_LONELY]);
}

// Shared memory is private to its block while it runs (<accel/cpu_kernel.h>)
// against blocks of launches on other streams too: a plugin that hands
// every launch one static scratch buffer, or allocates it a size rounded
// down (the neighbour's bytes then run into it), passed launch.cpu_workers,
// whose blocks are all of one launch. 4 streams each launch 4 blocks of
// accel_conform_shared_tag with 100 bytes (not a multiple of 64) of shared
// memory, tagged with the stream's number; every block holds its bytes
// until a block beside it runs (or 20 ms pass) and then checks them.
conform_result_t conform_launch_shared_streams(conform_ctx_t* ctx,
                                               const void* arg) {
  (void)arg;
  enum { STREAMS = 4, BLOCKS = 4 };
  char path[1024] = "";
  accel_kernel_t* kernel = NULL;
  CONFORM_GET_KERNEL(ctx, "accel_conform_shared_tag", kernel, path);
  uint32_t shared = 100;
  if (ctx->info.max_shared_mem_bytes != 0 &&
      ctx->info.max_shared_mem_bytes < shared) {
    return conform_report(ctx, CONFORM_UNSUPPORTED,
                          "max_shared_mem_bytes %llu < %u",
                          (unsigned long long)ctx->info.max_shared_mem_bytes,
                          shared);
  }
  size_t bytes = CONFORM_TAG_WORDS * sizeof(uint32_t);
  uint32_t* state = NULL;
  accel_buffer_t* buffer = NULL;
  if (conform_launch_words(ctx, bytes, &state, &buffer) != CONFORM_PASS) {
    return CONFORM_FAIL;
  }
  accel_stream_t* streams[STREAMS] = {NULL};
  accel_status_t status = ACCEL_OK;
  for (int i = 0; i < STREAMS && status == ACCEL_OK; i++) {
    status = conform_stream(ctx, ctx->device, &streams[i]);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "streams");
  uint32_t tags[STREAMS], wait_us = 20000, max_lonely = 8;
  for (int i = 0; i < STREAMS && status == ACCEL_OK; i++) {
    tags[i] = (uint32_t)i + 1;
    accel_kernel_arg_t args[4] = {
        {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = buffer},
        {.kind = ACCEL_KERNEL_ARG_VALUE, .size = 4, .value = &tags[i]},
        {.kind = ACCEL_KERNEL_ARG_VALUE, .size = 4, .value = &wait_us},
        {.kind = ACCEL_KERNEL_ARG_VALUE, .size = 4, .value = &max_lonely},
    };
    accel_launch_config_t config;
    accel_launch_config_init(&config);
    config.grid[0] = BLOCKS;
    config.shared_mem_bytes = shared;
    status = accel_kernel_launch(kernel, streams[i], &config, 4, args);
  }
  accel_status_t launched = status;
  for (int i = 0; i < STREAMS && streams[i] != NULL; i++) {
    accel_status_t waited = conform_stream_wait(ctx, streams[i]);
    if (waited != ACCEL_OK) return conform_fail_wait(ctx, waited, "launch");
  }
  if (launched != ACCEL_OK) return conform_fail_status(ctx, launched, "launch");
  status = accel_buffer_read(buffer, 0, state, bytes);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "read");
  if (state[CONFORM_TAG_COLLISIONS] != 0) {
    uint32_t first = state[CONFORM_TAG_FIRST];
    return conform_report(
        ctx, CONFORM_FAIL,
        "%d streams x %d blocks with %u bytes of shared memory: %u block(s) "
        "found their shared memory changed while they ran; first: block %u "
        "of stream %u found 0x%08x at byte %u (<accel/cpu_kernel.h>: "
        "shared_mem is private to its block while it runs; a buffer shared "
        "by launches, or smaller than shared_mem_bytes?)",
        STREAMS, BLOCKS, shared, state[CONFORM_TAG_COLLISIONS],
        first & 0xffffu, first >> 16, state[CONFORM_TAG_FOUND],
        state[CONFORM_TAG_WORD]);
  }
  if (state[CONFORM_TAG_CALLS] != STREAMS * BLOCKS) {
    return conform_report(ctx, CONFORM_FAIL, "%u blocks ran, expected %d",
                          state[CONFORM_TAG_CALLS], STREAMS * BLOCKS);
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%d streams x %d blocks with %u bytes of shared "
                        "memory: %u ran beside another, %u waited alone; "
                        "none saw its bytes change",
                        STREAMS, BLOCKS, shared,
                        state[CONFORM_TAG_OVERLAPPED],
                        state[CONFORM_TAG_LONELY]);
}
