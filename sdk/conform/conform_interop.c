// SPDX-License-Identifier: MIT
//
// Interop checks (<accel/interop.h>, plugin ABI 1.4): every native handle
// kind either answers a handle or ACCEL_ERROR_UNSUPPORTED, the same one on
// every call, non-zero (the device kind may be an ordinal, so 0 counts
// there), distinct for distinct streams, and for memory the allocation
// plus the offset is the buffer's address where the backend has one; and
// a host range registers, copies in both directions at its full size,
// refuses an overlap and a wrong unregister, and unregisters.
#include <accel/interop.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

// What one kind answered (asked twice).
typedef struct conform_native {
  const char* name;
  accel_status_t status;
} conform_native_t;

// Checks two answers of kind `name` for stability and the OK/UNSUPPORTED
// rule; `zero_ok` for a kind whose handle may be 0. Writes the failure to
// the detail and returns false.
static bool conform_native_same(conform_ctx_t* ctx, conform_native_t* out,
                                const char* name, accel_status_t s1,
                                uint64_t h1, accel_status_t s2, uint64_t h2,
                                bool zero_ok) {
  out->name = name;
  out->status = s1;
  if (s1 != ACCEL_OK && s1 != ACCEL_ERROR_UNSUPPORTED) {
    conform_report(ctx, CONFORM_FAIL, "%s: %s: %s (want OK or UNSUPPORTED)",
                   name, accel_status_string(s1), accel_last_error());
    return false;
  }
  if (s1 != s2 || h1 != h2) {
    conform_report(ctx, CONFORM_FAIL,
                   "%s: not stable: %s 0x%llx, then %s 0x%llx", name,
                   accel_status_string(s1), (unsigned long long)h1,
                   accel_status_string(s2), (unsigned long long)h2);
    return false;
  }
  if (s1 == ACCEL_ERROR_UNSUPPORTED ? h1 != 0 : (h1 == 0 && !zero_ok)) {
    conform_report(ctx, CONFORM_FAIL, "%s: %s with handle 0x%llx", name,
                   accel_status_string(s1), (unsigned long long)h1);
    return false;
  }
  return true;
}

static bool conform_native_device(conform_ctx_t* ctx, conform_native_t* out,
                                  accel_native_kind_t kind, const char* name) {
  uint64_t h1 = 1, h2 = 2;
  accel_status_t s1 = accel_device_query_native(ctx->device, kind, &h1);
  accel_status_t s2 = accel_device_query_native(ctx->device, kind, &h2);
  return conform_native_same(ctx, out, name, s1, h1, s2, h2,
                             kind == ACCEL_NATIVE_DEVICE);
}

static bool conform_native_stream(conform_ctx_t* ctx, conform_native_t* out,
                                  accel_stream_t* a, accel_stream_t* b) {
  uint64_t h1 = 1, h2 = 2, other = 3;
  accel_status_t s1 = accel_stream_query_native(a, &h1);
  accel_status_t s2 = accel_stream_query_native(a, &h2);
  if (!conform_native_same(ctx, out, "stream", s1, h1, s2, h2, false)) {
    return false;
  }
  accel_status_t s3 = accel_stream_query_native(b, &other);
  if (s3 != s1 || (s1 == ACCEL_OK && other == h1)) {
    conform_report(ctx, CONFORM_FAIL,
                   "stream: two streams answer %s 0x%llx and %s 0x%llx",
                   accel_status_string(s1), (unsigned long long)h1,
                   accel_status_string(s3), (unsigned long long)other);
    return false;
  }
  return true;
}

static bool conform_native_event(conform_ctx_t* ctx, conform_native_t* out,
                                 accel_event_t* e) {
  uint64_t h1 = 1, h2 = 2;
  accel_status_t s1 = accel_event_query_native(e, &h1);
  accel_status_t s2 = accel_event_query_native(e, &h2);
  return conform_native_same(ctx, out, "event", s1, h1, s2, h2, false);
}

// The buffer's allocation: stable, and where the memory has an address,
// allocation + offset is that address.
static bool conform_native_memory(conform_ctx_t* ctx, conform_native_t* out,
                                  accel_buffer_t* b) {
  uint64_t h1 = 1, h2 = 2, address = 0;
  size_t o1 = 1, o2 = 2;
  accel_status_t s1 = accel_buffer_query_native(b, &h1, &o1);
  accel_status_t s2 = accel_buffer_query_native(b, &h2, &o2);
  if (!conform_native_same(ctx, out, "memory", s1, h1, s2, h2, false)) {
    return false;
  }
  if (o1 != o2 || (s1 != ACCEL_OK && o1 != 0)) {
    conform_report(ctx, CONFORM_FAIL, "memory: offsets %zu then %zu", o1, o2);
    return false;
  }
  if (s1 == ACCEL_OK &&
      accel_buffer_query_address(b, 0, &address) == ACCEL_OK &&
      h1 + o1 != address) {
    conform_report(ctx, CONFORM_FAIL,
                   "memory: allocation 0x%llx + offset %zu is not the "
                   "buffer's address 0x%llx",
                   (unsigned long long)h1, o1, (unsigned long long)address);
    return false;
  }
  // An offset into the buffer moves the address by as much.
  uint64_t inside = 0;
  if (s1 == ACCEL_OK && address != 0 &&
      accel_buffer_query_address(b, 100, &inside) == ACCEL_OK &&
      inside != address + 100) {
    conform_report(ctx, CONFORM_FAIL,
                   "memory: the address at offset 100 is 0x%llx, not the "
                   "buffer's 0x%llx + 100",
                   (unsigned long long)inside, (unsigned long long)address);
    return false;
  }
  return true;
}

static conform_result_t conform_interop_native(conform_ctx_t* ctx,
                                               const void* arg) {
  (void)arg;
  accel_stream_t* stream = NULL;
  accel_stream_t* other = NULL;
  accel_event_t* event = NULL;
  accel_buffer_t* buffer = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status == ACCEL_OK) status = conform_stream(ctx, ctx->device, &other);
  if (status == ACCEL_OK) status = conform_event(ctx, ctx->device, 0, &event);
  if (status == ACCEL_OK)
    status = conform_buffer(ctx, ctx->device, 4096, &buffer);
  if (status == ACCEL_OK) status = accel_event_record(event, stream);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  conform_native_t kinds[5];
  if (!conform_native_device(ctx, &kinds[0], ACCEL_NATIVE_DEVICE, "device") ||
      !conform_native_device(ctx, &kinds[1], ACCEL_NATIVE_CONTEXT, "context") ||
      !conform_native_stream(ctx, &kinds[2], stream, other) ||
      !conform_native_event(ctx, &kinds[3], event) ||
      !conform_native_memory(ctx, &kinds[4], buffer)) {
    return CONFORM_FAIL;
  }
  status = conform_stream_sync(ctx, stream);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
  char have[128] = "";
  size_t used = 0;
  for (size_t i = 0; i < 5; i++) {
    if (kinds[i].status != ACCEL_OK) continue;
    int n = snprintf(have + used, sizeof(have) - used, "%s%s",
                     used > 0 ? ", " : "", kinds[i].name);
    if (n > 0 && (size_t)n < sizeof(have) - used) used += (size_t)n;
  }
  if (used == 0) {
    return conform_report(ctx, CONFORM_UNSUPPORTED,
                          "every kind is UNSUPPORTED (no native objects)");
  }
  return conform_report(ctx, CONFORM_PASS, "stable handles: %s", have);
}

// The registration part of interop.host_register, once `p` (2 * `half`
// bytes) is registered: lookups, an overlap, and a round trip through a
// buffer from the first half into the second.
static conform_result_t conform_interop_registered(conform_ctx_t* ctx,
                                                   unsigned char* p,
                                                   size_t half) {
  size_t n = 2 * half;
  bool in = false, past = true;
  accel_status_t status =
      accel_host_query_registered(ctx->device, p + 16, 64, &in);
  if (status == ACCEL_OK) {
    status = accel_host_query_registered(ctx->device, p, n + 1, &past);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "query");
  if (!in || past) {
    return conform_report(ctx, CONFORM_FAIL,
                          "query: inside the range %s, one byte past it %s",
                          in ? "yes" : "no", past ? "yes" : "no");
  }
  status = accel_host_register(ctx->device, p + half, n, 0);
  if (status != ACCEL_ERROR_INVALID_ARGUMENT) {
    if (status == ACCEL_OK) (void)accel_host_unregister(ctx->device, p + half);
    return conform_report(ctx, CONFORM_FAIL,
                          "an overlapping registration gave %s, not "
                          "INVALID_ARGUMENT",
                          accel_status_string(status));
  }
  accel_stream_t* stream = NULL;
  accel_buffer_t* buffer = NULL;
  uint64_t rng = ctx->seed + 40;
  conform_rand_bytes(&rng, p, half);
  memset(p + half, 0, half);
  status = conform_stream(ctx, ctx->device, &stream);
  if (status == ACCEL_OK)
    status = conform_buffer(ctx, ctx->device, half, &buffer);
  if (status == ACCEL_OK) {
    status = accel_stream_write_buffer(stream, buffer, 0, p, half);
  }
  if (status == ACCEL_OK) {
    status = accel_stream_read_buffer(stream, buffer, 0, p + half, half);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "copies");
  status = conform_stream_sync(ctx, stream);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "copies");
  for (size_t i = 0; i < half; i++) {
    if (p[half + i] != p[i]) {
      return conform_report(ctx, CONFORM_FAIL,
                            "round trip through registered memory: byte %zu "
                            "is %u, expected %u",
                            i, p[half + i], p[i]);
    }
  }
  return CONFORM_PASS;
}

static conform_result_t conform_interop_host_register(conform_ctx_t* ctx,
                                                      const void* arg) {
  (void)arg;
  const size_t half = (size_t)1 << 20;
  unsigned char* p = conform_alloc(ctx, 2 * half);
  if (p == NULL) return conform_report(ctx, CONFORM_FAIL, "host OOM");
  accel_status_t status = accel_host_register(ctx->device, p, 2 * half, 0);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "register");
  conform_result_t result = conform_interop_registered(ctx, p, half);
  // Whatever happened, the range goes (it holds the device open).
  accel_status_t inner = accel_host_unregister(ctx->device, p + 1);
  status = accel_host_unregister(ctx->device, p);
  if (result != CONFORM_PASS) return result;
  if (inner != ACCEL_ERROR_INVALID_ARGUMENT) {
    return conform_report(ctx, CONFORM_FAIL,
                          "unregister inside the range gave %s, not "
                          "INVALID_ARGUMENT",
                          accel_status_string(inner));
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "unregister");
  bool in = true;
  status = accel_host_query_registered(ctx->device, p, 1, &in);
  accel_status_t again = accel_host_unregister(ctx->device, p);
  if (status != ACCEL_OK || in || again != ACCEL_ERROR_INVALID_ARGUMENT) {
    return conform_report(ctx, CONFORM_FAIL,
                          "after unregister: still registered %s, a second "
                          "unregister gave %s",
                          in ? "yes" : "no", accel_status_string(again));
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%zu bytes registered, copied both ways, "
                        "unregistered",
                        2 * half);
}

static const conform_check_t conform_interop[] = {
    {"interop.native_handles", conform_interop_native, NULL},
    {"interop.host_register", conform_interop_host_register, NULL},
};

const conform_check_t* conform_interop_checks(size_t* out_count) {
  *out_count = sizeof(conform_interop) / sizeof(conform_interop[0]);
  return conform_interop;
}
