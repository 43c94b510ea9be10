// SPDX-License-Identifier: MIT
//
// Copy and memset checks: every direction (host to device, device to host,
// device to device, peer), synchronous and on a stream, at unaligned
// offsets and sizes (1, 3, 4095, 1 MiB + 7), overlapping copies within one
// buffer (memmove semantics), and out-of-bounds requests, which the core
// rejects without touching the buffer. Every buffer is compared in full
// with a host shadow, so a write past the requested range shows up too.
// Large sizes and offsets past 4 GiB: conform_copy_large.c.
#include <stdio.h>
#include <string.h>

#include "conform.h"

#define CONFORM_GUARD 0xa5
#define CONFORM_SLACK 64  // bytes of guard around each copied range

static const size_t conform_sizes[] = {1, 3, 4095, (1u << 20) + 7};
static const size_t conform_offsets[] = {0, 1, 7};
#define CONFORM_NSIZES (sizeof(conform_sizes) / sizeof(conform_sizes[0]))
#define CONFORM_NOFFSETS (sizeof(conform_offsets) / sizeof(conform_offsets[0]))

// A device buffer and what it should hold.
typedef struct conform_shadow {
  accel_buffer_t* buffer;
  unsigned char* expected;
  size_t size;
} conform_shadow_t;

// Creates a `size`-byte buffer on `device` filled with the guard byte, or
// random bytes when `rng` is non-NULL.
static conform_result_t conform_shadow_init(conform_ctx_t* ctx,
                                            accel_device_t* device, size_t size,
                                            uint64_t* rng,
                                            conform_shadow_t* out) {
  out->size = size;
  out->expected = conform_alloc(ctx, size);
  if (out->expected == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "out of host memory");
  }
  accel_status_t status = conform_buffer(ctx, device, size, &out->buffer);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "create");
  if (rng != NULL) {
    conform_rand_bytes(rng, out->expected, size);
    status = accel_buffer_write(out->buffer, 0, out->expected, size);
  } else {
    memset(out->expected, CONFORM_GUARD, size);
    status = accel_buffer_fill(out->buffer, 0, CONFORM_GUARD, size);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "init");
  return CONFORM_PASS;
}

static conform_result_t conform_copy_h2d_d2h(conform_ctx_t* ctx,
                                             const void* arg) {
  (void)arg;
  uint64_t rng = ctx->seed;
  for (size_t s = 0; s < CONFORM_NSIZES; s++) {
    for (size_t o = 0; o < CONFORM_NOFFSETS; o++) {
      size_t size = conform_sizes[s], off = conform_offsets[o];
      conform_shadow_t sh;
      if (conform_shadow_init(ctx, ctx->device, size + CONFORM_SLACK, NULL,
                              &sh) != CONFORM_PASS) {
        return CONFORM_FAIL;
      }
      unsigned char* src = conform_alloc(ctx, size);
      unsigned char* dst = conform_alloc(ctx, size + 2);
      if (src == NULL || dst == NULL) {
        return conform_report(ctx, CONFORM_FAIL, "out of host memory");
      }
      conform_rand_bytes(&rng, src, size);
      accel_status_t status = accel_buffer_write(sh.buffer, off, src, size);
      if (status != ACCEL_OK) return conform_fail_status(ctx, status, "write");
      memcpy(sh.expected + off, src, size);
      char what[96];
      snprintf(what, sizeof(what), "h2d %zu bytes at offset %zu", size, off);
      if (!conform_verify(ctx, sh.buffer, sh.expected, sh.size, what)) {
        return CONFORM_FAIL;
      }
      // Device to host into a guarded host range.
      memset(dst, CONFORM_GUARD, size + 2);
      status = accel_buffer_read(sh.buffer, off, dst + 1, size);
      if (status != ACCEL_OK) return conform_fail_status(ctx, status, "read");
      snprintf(what, sizeof(what), "d2h %zu bytes at offset %zu", size, off);
      if (!conform_guarded_equal(ctx, dst, src, size, CONFORM_GUARD, what)) {
        return CONFORM_FAIL;
      }
    }
  }
  return conform_report(ctx, CONFORM_PASS,
                        "sizes 1, 3, 4095, 1 MiB+7 at offsets 0, 1, 7");
}

static conform_result_t conform_copy_d2d(conform_ctx_t* ctx, const void* arg) {
  (void)arg;
  uint64_t rng = ctx->seed + 1;
  for (size_t s = 0; s < CONFORM_NSIZES; s++) {
    for (size_t o = 0; o < CONFORM_NOFFSETS; o++) {
      size_t size = conform_sizes[s], doff = conform_offsets[o];
      size_t soff = conform_offsets[(o + 1) % CONFORM_NOFFSETS];
      conform_shadow_t src, dst;
      if (conform_shadow_init(ctx, ctx->device, size + CONFORM_SLACK, &rng,
                              &src) != CONFORM_PASS ||
          conform_shadow_init(ctx, ctx->device, size + CONFORM_SLACK, NULL,
                              &dst) != CONFORM_PASS) {
        return CONFORM_FAIL;
      }
      accel_status_t status =
          accel_buffer_copy(dst.buffer, doff, src.buffer, soff, size);
      if (status != ACCEL_OK) return conform_fail_status(ctx, status, "copy");
      memcpy(dst.expected + doff, src.expected + soff, size);
      char what[96];
      snprintf(what, sizeof(what), "d2d %zu bytes, offsets %zu -> %zu", size,
               soff, doff);
      if (!conform_verify(ctx, dst.buffer, dst.expected, dst.size, what) ||
          !conform_verify(ctx, src.buffer, src.expected, src.size, what)) {
        return CONFORM_FAIL;
      }
    }
  }
  return conform_report(ctx, CONFORM_PASS,
                        "sizes 1, 3, 4095, 1 MiB+7 at offsets 0, 1, 7");
}

static conform_result_t conform_copy_overlap(conform_ctx_t* ctx,
                                             const void* arg) {
  (void)arg;
  uint64_t rng = ctx->seed + 2;
  static const struct {
    size_t dst, src, size;
  } cases[] = {{5, 0, 4000},   {0, 5, 4000},    {1, 0, 8000},   {0, 3, 8000},
               {100, 100, 64}, {4096, 0, 4097}, {0, 4096, 4097}};
  conform_shadow_t sh;
  if (conform_shadow_init(ctx, ctx->device, 8200, &rng, &sh) != CONFORM_PASS) {
    return CONFORM_FAIL;
  }
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    accel_status_t status = accel_buffer_copy(
        sh.buffer, cases[i].dst, sh.buffer, cases[i].src, cases[i].size);
    if (status != ACCEL_OK) {
      return conform_fail_status(ctx, status, "same-buffer copy");
    }
    memmove(sh.expected + cases[i].dst, sh.expected + cases[i].src,
            cases[i].size);
    char what[96];
    snprintf(what, sizeof(what), "overlapping copy %zu -> %zu, %zu bytes",
             cases[i].src, cases[i].dst, cases[i].size);
    if (!conform_verify(ctx, sh.buffer, sh.expected, sh.size, what)) {
      return CONFORM_FAIL;
    }
  }
  return conform_report(ctx, CONFORM_PASS,
                        "forward and backward overlaps behave like memmove");
}

static conform_result_t conform_copy_stream(conform_ctx_t* ctx,
                                            const void* arg) {
  (void)arg;
  uint64_t rng = ctx->seed + 3;
  accel_stream_t* stream = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "stream");
  for (size_t s = 0; s < CONFORM_NSIZES; s++) {
    size_t size = conform_sizes[s];
    size_t off = conform_offsets[s % CONFORM_NOFFSETS];
    conform_shadow_t a, b;
    if (conform_shadow_init(ctx, ctx->device, size + CONFORM_SLACK, NULL, &a) !=
            CONFORM_PASS ||
        conform_shadow_init(ctx, ctx->device, size + CONFORM_SLACK, NULL, &b) !=
            CONFORM_PASS) {
      return CONFORM_FAIL;
    }
    unsigned char* src = conform_alloc(ctx, size);
    unsigned char* back = conform_alloc(ctx, size);
    if (src == NULL || back == NULL) {
      return conform_report(ctx, CONFORM_FAIL, "out of host memory");
    }
    conform_rand_bytes(&rng, src, size);
    // h2d, d2d, memset and d2h in one stream, no synchronisation between,
    // behind a few ms of work: a copy run at once instead of in stream
    // order then sees the buffers before the earlier copies, also when
    // this thread is scheduled late (a loaded machine let a read run at
    // once pass when the short copies ahead of it had already finished).
    status = conform_heavy_work(ctx, stream, 2);
    if (status == ACCEL_OK) {
      status = accel_stream_write_buffer(stream, a.buffer, off, src, size);
    }
    if (status == ACCEL_OK) {
      status = accel_stream_copy_buffer(stream, b.buffer, off + 1, a.buffer,
                                        off, size);
    }
    if (status == ACCEL_OK) {
      status =
          accel_stream_fill_buffer(stream, a.buffer, off, 0x3c, size / 2 + 1);
    }
    if (status == ACCEL_OK) {
      status = accel_stream_read_buffer(stream, b.buffer, off + 1, back, size);
    }
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "enqueue");
    status = conform_stream_wait(ctx, stream);
    if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
    memcpy(a.expected + off, src, size);
    memcpy(b.expected + off + 1, src, size);
    memset(a.expected + off, 0x3c, size / 2 + 1);
    if (memcmp(back, src, size) != 0) {
      return conform_report(ctx, CONFORM_FAIL,
                            "stream read of %zu bytes differs from what was "
                            "written",
                            size);
    }
    char what[96];
    snprintf(what, sizeof(what), "stream copies of %zu bytes", size);
    if (!conform_verify(ctx, a.buffer, a.expected, a.size, what) ||
        !conform_verify(ctx, b.buffer, b.expected, b.size, what)) {
      return CONFORM_FAIL;
    }
  }
  return conform_report(ctx, CONFORM_PASS,
                        "write, copy, fill, read in order on one stream");
}

static conform_result_t conform_copy_bounds(conform_ctx_t* ctx,
                                            const void* arg) {
  (void)arg;
  uint64_t rng = ctx->seed + 4;
  conform_shadow_t a, b;
  if (conform_shadow_init(ctx, ctx->device, 256, &rng, &a) != CONFORM_PASS ||
      conform_shadow_init(ctx, ctx->device, 128, &rng, &b) != CONFORM_PASS) {
    return CONFORM_FAIL;
  }
  unsigned char host[512];
  memset(host, 0, sizeof(host));
  struct {
    const char* what;
    accel_status_t status;
  } cases[] = {
      {"write past the end", accel_buffer_write(a.buffer, 255, host, 2)},
      {"write at offset SIZE_MAX",
       accel_buffer_write(a.buffer, SIZE_MAX, host, 1)},
      {"read past the end", accel_buffer_read(a.buffer, 200, host, 57)},
      {"copy past the source end",
       accel_buffer_copy(a.buffer, 0, b.buffer, 1, 128)},
      {"copy past the destination end",
       accel_buffer_copy(b.buffer, 100, a.buffer, 0, 29)},
      {"fill past the end", accel_buffer_fill(a.buffer, 1, 0, 256)},
      {"zero-size write", accel_buffer_write(a.buffer, 0, host, 0)},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    if (cases[i].status != ACCEL_ERROR_INVALID_ARGUMENT) {
      return conform_report(ctx, CONFORM_FAIL,
                            "%s: %s, expected "
                            "ACCEL_ERROR_INVALID_ARGUMENT",
                            cases[i].what,
                            accel_status_string(cases[i].status));
    }
  }
  if (!conform_verify(ctx, a.buffer, a.expected, a.size, "after rejects") ||
      !conform_verify(ctx, b.buffer, b.expected, b.size, "after rejects")) {
    return CONFORM_FAIL;
  }
  return conform_report(ctx, CONFORM_PASS,
                        "7 out-of-bounds requests rejected, buffers intact");
}

static conform_result_t conform_copy_peer(conform_ctx_t* ctx, const void* arg) {
  (void)arg;
  bool claimed = (ctx->info.caps & ACCEL_DEVICE_CAP_PEER_ACCESS) != 0;
  if (ctx->peer == NULL) {
    return conform_report(ctx, CONFORM_SKIP, "only one device%s",
                          claimed ? " (peer_access claimed)" : "");
  }
  bool can = false;
  accel_status_t status =
      accel_device_can_access_peer(ctx->device, ctx->peer, &can);
  if (status != ACCEL_OK) {
    return conform_fail_status(ctx, status, "can_access_peer");
  }
  if (claimed && !can) {
    return conform_report(ctx, CONFORM_FAIL,
                          "claims peer_access but can copy directly from "
                          "no other device (%s included)",
                          accel_device_uri(ctx->peer));
  }
  uint64_t rng = ctx->seed + 5;
  accel_stream_t* stream = NULL;
  status = conform_stream(ctx, ctx->device, &stream);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "stream");
  for (size_t s = 0; s < CONFORM_NSIZES; s++) {
    size_t size = conform_sizes[s];
    conform_shadow_t src, dst;
    if (conform_shadow_init(ctx, ctx->peer, size + CONFORM_SLACK, &rng, &src) !=
            CONFORM_PASS ||
        conform_shadow_init(ctx, ctx->device, 2 * size + CONFORM_SLACK, NULL,
                            &dst) != CONFORM_PASS) {
      return CONFORM_FAIL;
    }
    status = accel_buffer_copy(dst.buffer, 3, src.buffer, 1, size);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "copy");
    status = accel_stream_copy_buffer(stream, dst.buffer, size + 5, src.buffer,
                                      0, size);
    if (status != ACCEL_OK) {
      return conform_fail_status(ctx, status, "stream copy");
    }
    status = conform_stream_wait(ctx, stream);
    if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
    memcpy(dst.expected + 3, src.expected + 1, size);
    memcpy(dst.expected + size + 5, src.expected, size);
    char what[96];
    snprintf(what, sizeof(what), "peer copy of %zu bytes from %s", size,
             accel_device_uri(ctx->peer));
    if (!conform_verify(ctx, dst.buffer, dst.expected, dst.size, what)) {
      return CONFORM_FAIL;
    }
  }
  return conform_report(ctx, CONFORM_PASS, "from %s, %s",
                        accel_device_uri(ctx->peer),
                        can ? "direct" : "staged by the core");
}

// A peer copy in stream order: the peer's stream runs heavy work, then
// writes new bytes over the whole source buffer and records `ready`; the
// device's stream waits for `ready` and copies the first 4 KiB of the
// source over. The copy must read the new bytes. One that reads the source
// when it is enqueued (the core's copy staged through the host, for
// plugins without copy_peer, did so until 2026-11-30, ahead of the
// stream's wait) reads the stale ones. A try counts only when `ready` was
// still pending as the copy was enqueued; otherwise it is repeated behind
// more work (8 tries, then SKIP). Plugins without peer access run it too:
// the core stages the copy. A wrong result fails whatever the timing.
static conform_result_t conform_copy_peer_order(conform_ctx_t* ctx,
                                                const void* arg) {
  (void)arg;
  if (ctx->peer == NULL) {
    return conform_report(ctx, CONFORM_SKIP, "only one device");
  }
  enum { BYTES = 8 << 20, USED = 4096, STALE = 0x07 };
  accel_stream_t* producer = NULL;
  accel_stream_t* consumer = NULL;
  accel_event_t* ready = NULL;
  accel_buffer_t* src = NULL;
  accel_buffer_t* dst = NULL;
  unsigned char* fresh = conform_alloc(ctx, BYTES);
  unsigned char* want = conform_alloc(ctx, USED);
  if (fresh == NULL || want == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "host OOM");
  }
  accel_status_t status = conform_stream(ctx, ctx->peer, &producer);
  if (status == ACCEL_OK) status = conform_stream(ctx, ctx->device, &consumer);
  if (status == ACCEL_OK) status = conform_event(ctx, ctx->peer, 0, &ready);
  if (status == ACCEL_OK) status = conform_buffer(ctx, ctx->peer, BYTES, &src);
  if (status == ACCEL_OK) status = conform_buffer(ctx, ctx->device, USED, &dst);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  int rounds = 2;
  for (int t = 0; t < 8; t++, rounds *= 2) {
    for (size_t i = 0; i < BYTES; i++) fresh[i] = (unsigned char)(i * 7 + t + 1);
    memcpy(want, fresh, USED);
    status = accel_buffer_fill(src, 0, STALE, BYTES);
    if (status == ACCEL_OK) status = accel_buffer_fill(dst, 0, 0xa5, USED);
    if (status == ACCEL_OK) status = conform_heavy_work(ctx, producer, rounds);
    if (status == ACCEL_OK) {
      status = accel_stream_write_buffer(producer, src, 0, fresh, BYTES);
    }
    if (status == ACCEL_OK) status = accel_event_record(ready, producer);
    if (status == ACCEL_OK) status = accel_stream_wait_event(consumer, ready);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "enqueue");
    bool early = true;
    status = accel_event_query(ready, &early);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "query");
    status = accel_stream_copy_buffer(consumer, dst, 0, src, 0, USED);
    if (status != ACCEL_OK) {
      return conform_fail_status(ctx, status, "peer copy on a stream");
    }
    status = conform_stream_wait(ctx, consumer);
    if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
    status = conform_stream_wait(ctx, producer);
    if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
    char what[160];
    snprintf(what, sizeof(what),
             "a copy from %s enqueued behind a wait for the event recorded "
             "after new bytes were written there (stream order)",
             accel_device_uri(ctx->peer));
    if (!conform_verify(ctx, dst, want, USED, what)) return CONFORM_FAIL;
    if (!early) {
      return conform_report(ctx, CONFORM_PASS,
                            "the copy from %s read the bytes written before "
                            "the event it waited for (try %d)",
                            accel_device_uri(ctx->peer), t + 1);
    }
  }
  return conform_report(ctx, CONFORM_SKIP,
                        "the producer's work always finished before the "
                        "copy was enqueued (up to %d rounds of copies)",
                        rounds / 2);
}

static conform_result_t conform_memset_check(conform_ctx_t* ctx,
                                             const void* arg) {
  bool on_stream = arg != NULL;
  accel_stream_t* stream = NULL;
  if (on_stream) {
    accel_status_t status = conform_stream(ctx, ctx->device, &stream);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "stream");
  }
  uint64_t rng = ctx->seed + 6;
  for (size_t s = 0; s < CONFORM_NSIZES; s++) {
    for (size_t o = 0; o < CONFORM_NOFFSETS; o++) {
      size_t size = conform_sizes[s], off = conform_offsets[o];
      // Values from 0x80 up too: a pattern built from a sign-extended or
      // masked byte goes wrong only there.
      uint8_t value = (uint8_t)(0x11 * (s + 1) + (o == 0 ? 0 : 0x80 + o));
      conform_shadow_t sh;
      if (conform_shadow_init(ctx, ctx->device, size + CONFORM_SLACK, &rng,
                              &sh) != CONFORM_PASS) {
        return CONFORM_FAIL;
      }
      accel_status_t status =
          on_stream
              ? accel_stream_fill_buffer(stream, sh.buffer, off, value, size)
              : accel_buffer_fill(sh.buffer, off, value, size);
      if (status != ACCEL_OK) return conform_fail_status(ctx, status, "fill");
      if (on_stream) {
        status = conform_stream_wait(ctx, stream);
        if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
      }
      memset(sh.expected + off, value, size);
      char what[96];
      snprintf(what, sizeof(what), "memset of %zu bytes at offset %zu", size,
               off);
      if (!conform_verify(ctx, sh.buffer, sh.expected, sh.size, what)) {
        return CONFORM_FAIL;
      }
    }
  }
  return conform_report(ctx, CONFORM_PASS,
                        "sizes 1, 3, 4095, 1 MiB+7 at offsets 0, 1, 7");
}

static const int conform_on_stream = 1;

static const conform_check_t conform_copy[] = {
    {"copy.h2d_d2h", conform_copy_h2d_d2h, NULL},
    {"copy.d2d", conform_copy_d2d, NULL},
    {"copy.d2d_overlap", conform_copy_overlap, NULL},
    {"copy.stream", conform_copy_stream, NULL},
    {"copy.bounds", conform_copy_bounds, NULL},
    {"copy.peer", conform_copy_peer, NULL},
    {"copy.peer_stream_order", conform_copy_peer_order, NULL},
    {"memset.sync", conform_memset_check, NULL},
    {"memset.stream", conform_memset_check, &conform_on_stream},
};

const conform_check_t* conform_copy_checks(size_t* out_count) {
  *out_count = sizeof(conform_copy) / sizeof(conform_copy[0]);
  return conform_copy;
}
