// SPDX-License-Identifier: MIT
//
// launch.offset_reuse: launches whose buffer arguments sit at several
// offsets of the same buffers, one after the other on one stream. A
// backend without addresses (OpenCL) reaches an offset through a
// sub-buffer, and a plugin that keeps such views to save creating one per
// launch must look them up by buffer and offset: a view found by buffer
// alone, or by offset alone across buffers, sends a later launch to the
// memory of an earlier one. Each launch adds 1 to 64 int32 at its own
// offset: 0 and 1 to 3 times the device's buffer_offset_alignment (which
// promises that such offsets launch; 256 bytes where any offset goes),
// so the ranges may overlap; the sums tell where every launch landed.
#include <stdio.h>
#include <string.h>

#include "conform.h"

enum {
  CONFORM_VIEWS_N = 64,      // int32 per launch
  CONFORM_VIEWS_SLOTS = 4,   // offsets 0, 1, 2 and 3 times the step
  CONFORM_VIEWS_LAUNCHES = 9,
};

// The launches: (buffer, slot), in enqueue order. Slots repeat, on both
// buffers, and come back after others.
static const struct {
  int buffer, slot;
} conform_views_plan[CONFORM_VIEWS_LAUNCHES] = {
    {0, 1}, {0, 2}, {0, 1}, {1, 1}, {0, 3}, {1, 2}, {0, 0}, {1, 3}, {0, 2},
};

static conform_result_t conform_launch_offset_reuse(conform_ctx_t* ctx,
                                                    const void* arg) {
  (void)arg;
  char path[1024] = "";
  accel_kernel_t* kernel = NULL;
  CONFORM_GET_KERNEL(ctx, CONFORM_ADD_ONE, kernel, path);
  uint32_t align = ctx->info.buffer_offset_alignment;
  // Bytes between slots: the alignment, times what makes it a multiple of
  // 4 (int32 elements).
  size_t step = align > 1 ? align : 256;
  while (step % 4 != 0) step += align;
  size_t ints = (CONFORM_VIEWS_SLOTS - 1) * step / sizeof(int32_t) +
                CONFORM_VIEWS_N;
  size_t bytes = ints * sizeof(int32_t);
  int32_t* data = conform_alloc(ctx, bytes);
  int32_t* want[2] = {conform_alloc(ctx, bytes), conform_alloc(ctx, bytes)};
  conform_add_one_t* launches =
      conform_alloc(ctx, CONFORM_VIEWS_LAUNCHES * sizeof(*launches));
  if (data == NULL || want[0] == NULL || want[1] == NULL || launches == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "out of host memory");
  }
  for (size_t i = 0; i < ints; i++) data[i] = (int32_t)(i * 5) - 70;
  accel_stream_t* stream = NULL;
  accel_buffer_t* buffers[2] = {NULL, NULL};
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  for (int b = 0; b < 2 && status == ACCEL_OK; b++) {
    memcpy(want[b], data, bytes);
    status = conform_buffer(ctx, ctx->device, bytes, &buffers[b]);
    if (status == ACCEL_OK) {
      status = accel_buffer_write(buffers[b], 0, data, bytes);
    }
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  for (int l = 0; l < CONFORM_VIEWS_LAUNCHES; l++) {
    int b = conform_views_plan[l].buffer;
    size_t offset = (size_t)conform_views_plan[l].slot * step;
    conform_add_one_init(ctx, &launches[l], buffers[b], offset,
                         CONFORM_VIEWS_N, CONFORM_VIEWS_N);
    status = conform_add_one_launch(&launches[l], kernel, stream);
    if (status != ACCEL_OK) {
      char what[96];
      snprintf(what, sizeof(what),
               "launch %d: buffer %d at offset %zu (buffer_offset_alignment "
               "%u)",
               l, b, offset, align);
      return conform_fail_status(ctx, status, what);
    }
    for (size_t i = 0; i < CONFORM_VIEWS_N; i++) {
      want[b][offset / sizeof(int32_t) + i] += 1;
    }
  }
  status = conform_stream_wait(ctx, stream);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "the launches");
  for (int b = 0; b < 2; b++) {
    char what[192];
    snprintf(what, sizeof(what),
             "buffer %d after add_one launches at offsets 0..%zu of two "
             "buffers (did a launch reuse a view of another offset or "
             "buffer?)",
             b, (CONFORM_VIEWS_SLOTS - 1) * step);
    if (!conform_verify(ctx, buffers[b], (const unsigned char*)want[b], bytes,
                        what)) {
      return CONFORM_FAIL;
    }
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%d launches at offsets 0 to %zu of two buffers, "
                        "repeated, each landed at its own offset",
                        CONFORM_VIEWS_LAUNCHES,
                        (CONFORM_VIEWS_SLOTS - 1) * step);
}

static const conform_check_t conform_launch_views[] = {
    {"launch.offset_reuse", conform_launch_offset_reuse, NULL},
};

const conform_check_t* conform_launch_view_checks(size_t* out_count) {
  *out_count = sizeof(conform_launch_views) / sizeof(conform_launch_views[0]);
  return conform_launch_views;
}
