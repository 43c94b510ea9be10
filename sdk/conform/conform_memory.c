// SPDX-License-Identifier: MIT
//
// Memory checks: allocation and free of odd sizes, the core's zero-size
// rejection, a huge request that must fail cleanly (and leave the device
// working), and many small allocations that must not alias.
#include <stdio.h>
#include <string.h>

#include "conform.h"

static conform_result_t conform_memory_alloc_free(conform_ctx_t* ctx,
                                                  const void* arg) {
  (void)arg;
  static const size_t sizes[] = {1, 3, 64, 4095, 65536, (1u << 20) + 7};
  uint64_t rng = ctx->seed;
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    size_t size = sizes[i];
    accel_buffer_t* b = NULL;
    accel_status_t status = conform_buffer(ctx, ctx->device, size, &b);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "create");
    if (accel_buffer_size(b) != size) {
      return conform_report(ctx, CONFORM_FAIL, "size %zu reported as %zu", size,
                            accel_buffer_size(b));
    }
    unsigned char* data = conform_alloc(ctx, size);
    if (data == NULL) return conform_report(ctx, CONFORM_FAIL, "host OOM");
    conform_rand_bytes(&rng, data, size);
    status = accel_buffer_write(b, 0, data, size);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "write");
    char what[64];
    snprintf(what, sizeof(what), "%zu-byte buffer", size);
    if (!conform_verify(ctx, b, data, size, what)) return CONFORM_FAIL;
  }
  return conform_report(ctx, CONFORM_PASS, "sizes 1 to 1 MiB+7 round trip");
}

static conform_result_t conform_memory_zero_size(conform_ctx_t* ctx,
                                                 const void* arg) {
  (void)arg;
  accel_buffer_t* b = NULL;
  accel_status_t status = accel_buffer_create(ctx->device, 0, &b);
  if (status == ACCEL_OK) {
    accel_buffer_release(b);
    return conform_report(ctx, CONFORM_FAIL, "a 0-byte buffer was created");
  }
  if (status != ACCEL_ERROR_INVALID_ARGUMENT || b != NULL) {
    return conform_fail_status(ctx, status, "expected INVALID_ARGUMENT");
  }
  return conform_report(ctx, CONFORM_PASS, "rejected: %s", accel_last_error());
}

static conform_result_t conform_memory_huge(conform_ctx_t* ctx,
                                            const void* arg) {
  (void)arg;
  // Far beyond any device: 1 EiB, or 64 x the device's memory if larger.
  uint64_t huge = 1ull << 60;
  if (ctx->info.total_memory > huge / 64) huge = ctx->info.total_memory * 64;
  accel_buffer_t* b = NULL;
  accel_status_t status = accel_buffer_create(ctx->device, (size_t)huge, &b);
  if (status == ACCEL_OK) {
    accel_buffer_release(b);
    return conform_report(ctx, CONFORM_FAIL, "a %llu-byte allocation succeeded",
                          (unsigned long long)huge);
  }
  if (status != ACCEL_ERROR_OUT_OF_DEVICE_MEMORY &&
      status != ACCEL_ERROR_OUT_OF_MEMORY) {
    return conform_fail_status(ctx, status, "expected OUT_OF_DEVICE_MEMORY");
  }
  accel_status_t oom = status;
  char message[256];
  snprintf(message, sizeof(message), "%s", accel_last_error());
  if (message[0] == '\0') {
    return conform_report(ctx, CONFORM_FAIL, "%s without a message",
                          accel_status_string(status));
  }
  // The device must still work.
  unsigned char data[4096], *expected = data;
  memset(data, 0x5a, sizeof(data));
  status = conform_buffer(ctx, ctx->device, sizeof(data), &b);
  if (status != ACCEL_OK) {
    return conform_fail_status(ctx, status, "allocation after the OOM");
  }
  status = accel_buffer_write(b, 0, data, sizeof(data));
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "write");
  if (!conform_verify(ctx, b, expected, sizeof(data), "after the OOM")) {
    return CONFORM_FAIL;
  }
  return conform_report(ctx, CONFORM_PASS, "%s: %s", accel_status_string(oom),
                        message);
}

#define CONFORM_SMALL_COUNT 200

static conform_result_t conform_memory_many_small(conform_ctx_t* ctx,
                                                  const void* arg) {
  (void)arg;
  accel_buffer_t* buffers[CONFORM_SMALL_COUNT];
  for (size_t i = 0; i < CONFORM_SMALL_COUNT; i++) {
    size_t size = 1 + (i * 37) % 256;
    accel_status_t status = conform_buffer(ctx, ctx->device, size, &buffers[i]);
    if (status != ACCEL_OK) {
      return conform_fail_status(ctx, status, "small allocation");
    }
    status = accel_buffer_fill(buffers[i], 0, (uint8_t)i, size);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "fill");
  }
  unsigned char expected[256];
  for (size_t i = 0; i < CONFORM_SMALL_COUNT; i++) {
    size_t size = 1 + (i * 37) % 256;
    memset(expected, (int)(uint8_t)i, size);
    char what[64];
    snprintf(what, sizeof(what), "allocation %zu (%zu bytes)", i, size);
    if (!conform_verify(ctx, buffers[i], expected, size, what)) {
      return CONFORM_FAIL;
    }
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%d allocations of 1-256 bytes hold their own data",
                        CONFORM_SMALL_COUNT);
}

static const conform_check_t conform_memory[] = {
    {"memory.alloc_free", conform_memory_alloc_free, NULL},
    {"memory.zero_size", conform_memory_zero_size, NULL},
    {"memory.huge", conform_memory_huge, NULL},
    {"memory.many_small", conform_memory_many_small, NULL},
};

const conform_check_t* conform_memory_checks(size_t* out_count) {
  *out_count = sizeof(conform_memory) / sizeof(conform_memory[0]);
  return conform_memory;
}
