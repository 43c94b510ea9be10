// SPDX-License-Identifier: MIT
//
// Copies where size-dependent paths live: tens of MiB (a backend that
// splits a big copy across threads, stages it through pinned buffers in
// chunks, or switches to non-temporal stores above a cache-sized
// threshold must still move every byte, head and tail included, and
// overlapping moves in one buffer must still behave like memmove) and byte
// offsets past 2 and 4 GiB (an offset kept in 32 bits lands 4 GiB lower).
#include <stdio.h>
#include <string.h>

#include "conform.h"

// Runs `call`; on failure the check fails with its status and `what`.
#define CONFORM_STEP(call, what)                                         \
  do {                                                                   \
    accel_status_t step_ = (call);                                       \
    if (step_ != ACCEL_OK) return conform_fail_status(ctx, step_, what); \
  } while (0)

// Whether one more allocation of `size` bytes (of `count` alike) fits the
// device: under its largest allocation, with a quarter to spare of what
// is free. Otherwise reports UNSUPPORTED naming `what`.
static bool conform_large_fits(conform_ctx_t* ctx, uint64_t size, int count,
                               const char* what) {
  uint64_t limit = ctx->info.max_alloc_size != 0 ? ctx->info.max_alloc_size
                                                 : ctx->info.total_memory;
  uint64_t free_bytes = 0, total = 0;
  if (accel_device_query_memory(ctx->device, &free_bytes, &total) != ACCEL_OK) {
    free_bytes = 0;
  }
  uint64_t need = size * (uint64_t)count;
  if (size <= SIZE_MAX && limit >= size && free_bytes >= need + need / 4) {
    return true;
  }
  conform_report(ctx, CONFORM_UNSUPPORTED,
                 "needs %s: largest allocation %llu MiB, %llu MiB free", what,
                 (unsigned long long)(limit >> 20),
                 (unsigned long long)(free_bytes >> 20));
  return false;
}

// Sizes of copy.large: past a 4 MiB split and a cache-sized streaming
// threshold, odd so no piece comes out whole.
#define CONFORM_LARGE_MAX (((size_t)64 << 20) + 61)  // the largest size
static const size_t conform_large_sizes[] = {((size_t)4 << 20) + 13,
                                             CONFORM_LARGE_MAX};
#define CONFORM_LARGE_PAD 8192  // bytes around the copied ranges

// One size of copy.large on buffers `a` and `c` (shadows `sa`, `sc`, of
// `n` bytes each): a write to `a` at 4093, a read of `a` at 1 between two
// guard bytes, a copy from `a` at 4093 to `c` at 7, and a fill of `c` at
// 61, synchronous or on `stream`; then both buffers compared in full.
static conform_result_t conform_large_once(conform_ctx_t* ctx,
                                           accel_stream_t* stream,
                                           accel_buffer_t* a, accel_buffer_t* c,
                                           unsigned char* sa, unsigned char* sc,
                                           size_t n, const unsigned char* data,
                                           unsigned char* got, size_t size) {
  char what[96];
  const char* how = stream != NULL ? "stream" : "synchronous";
  accel_status_t status =
      stream != NULL ? accel_stream_write_buffer(stream, a, 4093, data, size)
                     : accel_buffer_write(a, 4093, data, size);
  memcpy(sa + 4093, data, size);
  got[0] = got[size + 1] = 0x5a;
  if (status == ACCEL_OK) {
    status = stream != NULL
                 ? accel_stream_read_buffer(stream, a, 1, got + 1, size)
                 : accel_buffer_read(a, 1, got + 1, size);
  }
  if (status == ACCEL_OK) {
    status = stream != NULL
                 ? accel_stream_copy_buffer(stream, c, 7, a, 4093, size)
                 : accel_buffer_copy(c, 7, a, 4093, size);
  }
  memcpy(sc + 7, sa + 4093, size);
  if (status == ACCEL_OK) {
    status = stream != NULL
                 ? accel_stream_fill_buffer(stream, c, 61, 0xc3, size - 100)
                 : accel_buffer_fill(c, 61, 0xc3, size - 100);
  }
  memset(sc + 61, 0xc3, size - 100);
  snprintf(what, sizeof(what), "%s copies of %zu bytes", how, size);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, what);
  if (stream != NULL) {
    status = conform_stream_wait(ctx, stream);
    if (status != ACCEL_OK) return conform_fail_wait(ctx, status, what);
  }
  snprintf(what, sizeof(what), "%s read of %zu bytes at offset 1", how,
           size);
  if (!conform_guarded_equal(ctx, got, sa + 1, size, 0x5a, what)) {
    return CONFORM_FAIL;
  }
  snprintf(what, sizeof(what), "%s write at 4093 of %zu bytes", how, size);
  if (!conform_verify(ctx, a, sa, n, what)) return CONFORM_FAIL;
  snprintf(what, sizeof(what), "%s copy to 7 and fill at 61 of %zu bytes", how,
           size);
  if (!conform_verify(ctx, c, sc, n, what)) return CONFORM_FAIL;
  return CONFORM_PASS;
}

static conform_result_t conform_copy_large(conform_ctx_t* ctx,
                                           const void* arg) {
  const size_t n = CONFORM_LARGE_MAX + CONFORM_LARGE_PAD;
  if (!conform_large_fits(ctx, n, 2, "two buffers of 64 MiB + 8 KiB")) {
    return CONFORM_UNSUPPORTED;
  }
  accel_stream_t* stream = NULL;
  if (arg != NULL)
    CONFORM_STEP(conform_stream(ctx, ctx->device, &stream), "stream");
  accel_buffer_t *a = NULL, *c = NULL;
  CONFORM_STEP(conform_buffer(ctx, ctx->device, n, &a), "buffer");
  CONFORM_STEP(conform_buffer(ctx, ctx->device, n, &c), "buffer");
  unsigned char* sa = conform_alloc(ctx, n);
  unsigned char* sc = conform_alloc(ctx, n);
  unsigned char* data = conform_alloc(ctx, CONFORM_LARGE_MAX);
  unsigned char* got = conform_alloc(ctx, CONFORM_LARGE_MAX + 2);
  if (sa == NULL || sc == NULL || data == NULL || got == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "out of host memory");
  }
  uint64_t rng = ctx->seed + 12;
  conform_rand_bytes(&rng, sa, n);
  conform_rand_bytes(&rng, sc, n);
  CONFORM_STEP(accel_buffer_write(a, 0, sa, n), "init");
  CONFORM_STEP(accel_buffer_write(c, 0, sc, n), "init");
  size_t count = sizeof(conform_large_sizes) / sizeof(conform_large_sizes[0]);
  for (size_t i = 0; i < count; i++) {
    conform_rand_bytes(&rng, data, conform_large_sizes[i]);
    conform_result_t r = conform_large_once(ctx, stream, a, c, sa, sc, n, data,
                                            got, conform_large_sizes[i]);
    if (r != CONFORM_PASS) return r;
  }
  return conform_report(ctx, CONFORM_PASS,
                        "writes, reads, copies and fills of 4 MiB + 13 and "
                        "64 MiB + 61 bytes at odd offsets");
}

// Byte offsets past a line of 2 or 4 GiB (`arg`), in one buffer of the
// line + 64 KiB where the device can allocate it: a plugin or kernel that
// keeps an offset in 32 bits lands 4 GiB lower, on the window at the
// start of the same buffer, which is compared in full afterwards as well
// as the window past the line; one that keeps it in a signed 32-bit
// integer goes wrong past 2 GiB. Past 2 GiB, memsets with odd ends also
// reach the path a backend may take for fills near the end of its
// largest buffers (OpenCL: a 4-byte pattern with the head and tail
// copied).
#define CONFORM_WINDOW 65536u
static const uint64_t conform_2g = (uint64_t)1 << 31;
static const uint64_t conform_4g = (uint64_t)1 << 32;

static conform_result_t conform_copy_above(conform_ctx_t* ctx,
                                           const void* arg) {
  const uint64_t line = *(const uint64_t*)arg;
  const unsigned gib = (unsigned)(line >> 30);
  const uint64_t size = line + CONFORM_WINDOW;
  char need[64];
  snprintf(need, sizeof(need), "one allocation of %u GiB + 64 KiB", gib);
  if (!conform_large_fits(ctx, size, 1, need)) return CONFORM_UNSUPPORTED;
  accel_buffer_t* b = NULL;
  accel_status_t status = conform_buffer(ctx, ctx->device, (size_t)size, &b);
  if (status == ACCEL_ERROR_OUT_OF_DEVICE_MEMORY ||
      status == ACCEL_ERROR_OUT_OF_MEMORY) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "%s: %s: %s", need,
                          accel_status_string(status), accel_last_error());
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "buffer");
  accel_stream_t* stream = NULL;
  CONFORM_STEP(conform_stream(ctx, ctx->device, &stream), "stream");
  // Shadows of the low window [0, 64 KiB) and the high one [line, +64 KiB).
  unsigned char* lo = conform_alloc(ctx, CONFORM_WINDOW);
  unsigned char* hi = conform_alloc(ctx, CONFORM_WINDOW);
  unsigned char* data = conform_alloc(ctx, 3 * 4096);
  unsigned char* got = conform_alloc(ctx, CONFORM_WINDOW);
  if (lo == NULL || hi == NULL || data == NULL || got == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "out of host memory");
  }
  uint64_t rng = ctx->seed + 11;
  for (size_t i = 0; i < 3 * 4096; i++) {
    data[i] = (unsigned char)conform_rand(&rng);
  }
  const size_t h = (size_t)line;
  CONFORM_STEP(accel_buffer_fill(b, 0, 0xa5, CONFORM_WINDOW), "fill low");
  CONFORM_STEP(accel_buffer_fill(b, h, 0x5a, CONFORM_WINDOW), "fill high");
  memset(lo, 0xa5, CONFORM_WINDOW);
  memset(hi, 0x5a, CONFORM_WINDOW);
  // Synchronous write high, then low at the same offset modulo the line.
  CONFORM_STEP(accel_buffer_write(b, h + 8, data, 4096), "write high");
  memcpy(hi + 8, data, 4096);
  CONFORM_STEP(accel_buffer_write(b, 8, data + 4096, 4096), "write low");
  memcpy(lo + 8, data + 4096, 4096);
  CONFORM_STEP(accel_buffer_fill(b, h + 8192, 0x3c, 256), "memset high");
  memset(hi + 8192, 0x3c, 256);
  // Device to device both ways across the line.
  CONFORM_STEP(accel_buffer_copy(b, 16384, b, h + 8, 4096), "copy down");
  memcpy(lo + 16384, hi + 8, 4096);
  CONFORM_STEP(accel_buffer_copy(b, h + 24576, b, 8, 4096), "copy up");
  memcpy(hi + 24576, lo + 8, 4096);
  // The stream paths, and a built-in op (a kernel on most devices).
  CONFORM_STEP(
      accel_stream_write_buffer(stream, b, h + 32768 + 4, data + 8192, 4096),
      "stream write high");
  memcpy(hi + 32768 + 4, data + 8192, 4096);
  CONFORM_STEP(accel_stream_fill_buffer(stream, b, h + 40960 + 3, 0x77, 100),
               "stream memset high");
  memset(hi + 40960 + 3, 0x77, 100);
  const char* op = "";
  status = accel_op_fill(stream, b, h + 49152, ACCEL_DTYPE_F32, 1024, 1.5);
  if (status == ACCEL_OK) {
    const float v = 1.5f;
    for (size_t i = 0; i < 1024; i++) memcpy(hi + 49152 + 4 * i, &v, 4);
    op = ", op_fill";
  } else if (status != ACCEL_ERROR_UNSUPPORTED) {
    return conform_fail_status(ctx, status, "op_fill high");
  }
  status = conform_stream_wait(ctx, stream);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
  CONFORM_STEP(accel_stream_read_buffer(stream, b, h + 8, got, 4096),
               "stream read high");
  status = conform_stream_wait(ctx, stream);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
  if (memcmp(got, hi + 8, 4096) != 0) {
    return conform_report(ctx, CONFORM_FAIL,
                          "stream read of 4 KiB at %u GiB + 8 did not give "
                          "what was written there",
                          gib);
  }
  for (int w = 0; w < 2; w++) {
    const unsigned char* want = w == 0 ? lo : hi;
    CONFORM_STEP(accel_buffer_read(b, w == 0 ? 0 : h, got, CONFORM_WINDOW),
                 "read window");
    for (size_t i = 0; i < CONFORM_WINDOW; i++) {
      if (got[i] != want[i]) {
        return conform_report(
            ctx, CONFORM_FAIL,
            "byte %zu of the window at %s is 0x%02x, expected 0x%02x (an "
            "offset kept in 32 bits, or a fill's head or tail near the end "
            "of the buffer, gone wrong)",
            i, w == 0 ? "offset 0" : "the line", got[i], want[i]);
      }
    }
  }
  return conform_report(ctx, CONFORM_PASS,
                        "writes, reads, memset, copies across %u GiB, "
                        "stream copies%s at offsets past %u GiB",
                        gib, op, gib);
}

// Overlapping moves within one buffer of 24 MiB + 8 KiB (memmove
// semantics, plugin.h): a shift of 1 MiB + 3 bytes forward and back over
// 16 MiB + 5 (a backend may split it into ordered pieces) and of 5 and 7
// bytes over 8 MiB + 1 (where pieces would be tiny: a temporary), each
// synchronous and then all four on a stream; the buffer compared in full.
static conform_result_t conform_copy_large_overlap(conform_ctx_t* ctx,
                                                   const void* arg) {
  (void)arg;
  const size_t n = ((size_t)24 << 20) + 8192;
  if (!conform_large_fits(ctx, n, 1, "a buffer of 24 MiB + 8 KiB")) {
    return CONFORM_UNSUPPORTED;
  }
  static const struct {
    size_t dst, src, size;
  } moves[] = {{(1u << 20) + 3, 0, (16u << 20) + 5},
               {0, (1u << 20) + 3, (16u << 20) + 5},
               {5, 0, (8u << 20) + 1},
               {0, 7, (8u << 20) + 1}};
  accel_stream_t* stream = NULL;
  accel_buffer_t* b = NULL;
  CONFORM_STEP(conform_stream(ctx, ctx->device, &stream), "stream");
  CONFORM_STEP(conform_buffer(ctx, ctx->device, n, &b), "buffer");
  unsigned char* shadow = conform_alloc(ctx, n);
  if (shadow == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "out of host memory");
  }
  uint64_t rng = ctx->seed + 13;
  conform_rand_bytes(&rng, shadow, n);
  CONFORM_STEP(accel_buffer_write(b, 0, shadow, n), "init");
  char what[96];
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < sizeof(moves) / sizeof(moves[0]); i++) {
      accel_status_t status =
          pass == 0 ? accel_buffer_copy(b, moves[i].dst, b, moves[i].src,
                                        moves[i].size)
                    : accel_stream_copy_buffer(stream, b, moves[i].dst, b,
                                               moves[i].src, moves[i].size);
      memmove(shadow + moves[i].dst, shadow + moves[i].src, moves[i].size);
      snprintf(what, sizeof(what), "%s move of %zu bytes from %zu to %zu",
               pass == 0 ? "synchronous" : "stream", moves[i].size,
               moves[i].src, moves[i].dst);
      if (status != ACCEL_OK) return conform_fail_status(ctx, status, what);
      if (pass == 0 && !conform_verify(ctx, b, shadow, n, what)) {
        return CONFORM_FAIL;
      }
    }
  }
  accel_status_t status = conform_stream_wait(ctx, stream);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
  if (!conform_verify(ctx, b, shadow, n, "four stream moves")) {
    return CONFORM_FAIL;
  }
  return conform_report(ctx, CONFORM_PASS,
                        "shifts of 1 MiB + 3 over 16 MiB + 5 and of 5 and 7 "
                        "over 8 MiB + 1, both ways, behave like memmove");
}

static const int conform_on_stream = 1;

static const conform_check_t conform_copy_large_table[] = {
    {"copy.large", conform_copy_large, NULL},
    {"copy.large_stream", conform_copy_large, &conform_on_stream},
    {"copy.large_overlap", conform_copy_large_overlap, NULL},
    {"copy.above_2gib", conform_copy_above, &conform_2g},
    {"copy.above_4gib", conform_copy_above, &conform_4g},
};

const conform_check_t* conform_copy_large_checks(size_t* out_count) {
  *out_count =
      sizeof(conform_copy_large_table) / sizeof(conform_copy_large_table[0]);
  return conform_copy_large_table;
}
