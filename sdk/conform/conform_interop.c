// SPDX-License-Identifier: MIT
//
// Interop checks (<accel/interop.h>, plugin ABI 1.4): every native handle
// kind either answers a handle or ACCEL_ERROR_UNSUPPORTED, the same one on
// every call, non-zero (the device kind may be an ordinal, so 0 counts
// there), distinct for distinct streams and for two devices of the
// backend (the device kind; contexts may be shared), and for memory the
// allocation plus the offset is the buffer's address where the backend
// has one; and a host range registers, copies in both directions at its
// full size, refuses an overlap and a wrong unregister, unregisters and
// registers again; and memory someone else owns wraps (ABI 1.3) without
// a copy and stays the owner's.
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
  if (!conform_native_same(ctx, out, name, s1, h1, s2, h2,
                           kind == ACCEL_NATIVE_DEVICE)) {
    return false;
  }
  // Each device is its own backend device (a context may be shared).
  uint64_t other = h1;
  if (kind == ACCEL_NATIVE_DEVICE && s1 == ACCEL_OK && ctx->peer != NULL &&
      accel_device_query_native(ctx->peer, kind, &other) == ACCEL_OK &&
      other == h1) {
    conform_report(ctx, CONFORM_FAIL,
                   "device: %s and %s both answer 0x%llx (the context "
                   "instead of the device?)",
                   accel_device_uri(ctx->device), accel_device_uri(ctx->peer),
                   (unsigned long long)h1);
    return false;
  }
  return true;
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
  // plugin.h: host_unregister "undoes host_register", so the range
  // registers again (a driver refuses pages it still locks: CUDA's
  // CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED).
  status = accel_host_register(ctx->device, p, 2 * half, 0);
  if (status != ACCEL_OK) {
    return conform_report(ctx, CONFORM_FAIL,
                          "registering the range again after its unregister "
                          "gave %s: %s (a host_unregister that leaves the "
                          "pages locked?)",
                          accel_status_string(status), accel_last_error());
  }
  status = accel_host_unregister(ctx->device, p);
  if (status != ACCEL_OK) {
    return conform_fail_status(ctx, status, "the second unregister");
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%zu bytes registered, copied both ways, "
                        "unregistered, registered again",
                        2 * half);
}

// ---------------------------------------------------------------------------
// interop.wrap: mem_wrap and mem_unwrap (ABI 1.3) through
// accel_buffer_wrap(). Memory someone else owns is wrapped at an address 3
// bytes past an aligned one (wrapped memory keeps its owner's alignment,
// accel.h): host memory where the device is host-accessible, else a range
// of another buffer found through its address. The wrapped buffer must be
// that memory, without a copy, both ways and on a stream; its address must
// be the one wrapped; releasing it must call the owner's release once and
// leave the memory (and the owner's heap) alone: mem_unwrap never frees.
// Wrapping is not allocating: eight more wraps of the same memory, held
// together and then released, must leave the device's free memory where
// it was.
// ---------------------------------------------------------------------------

enum { CONFORM_WRAP_BYTES = 65536, CONFORM_WRAP_SHIFT = 3 };

static void conform_wrap_release(void* user_data) { (*(int*)user_data)++; }

// The owner's view of the wrapped memory: `size` bytes from `at` bytes
// before the wrapped address (so the bytes around it show too), read from
// host memory or from the buffer that owns it.
typedef struct conform_wrap_owner {
  unsigned char* host;    // host-accessible: the owner's host memory
  accel_buffer_t* owner;  // otherwise: the buffer whose range is wrapped
} conform_wrap_owner_t;

static accel_status_t conform_wrap_owner_read(const conform_wrap_owner_t* o,
                                              unsigned char* out) {
  size_t n = CONFORM_WRAP_BYTES + 64;
  if (o->host != NULL) {
    memcpy(out, o->host, n);
    return ACCEL_OK;
  }
  return accel_buffer_read(o->owner, 0, out, n);
}

// Compares the owner's memory with `want`; FAIL names the first byte.
static conform_result_t conform_wrap_expect(conform_ctx_t* ctx,
                                            const conform_wrap_owner_t* o,
                                            const unsigned char* want,
                                            unsigned char* got,
                                            const char* what) {
  accel_status_t status = conform_wrap_owner_read(o, got);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, what);
  for (size_t i = 0; i < CONFORM_WRAP_BYTES + 64; i++) {
    if (got[i] != want[i]) {
      return conform_report(ctx, CONFORM_FAIL,
                            "%s: the owner's byte %zu (wrapped offset %lld) "
                            "is %u, expected %u",
                            what, i, (long long)i - CONFORM_WRAP_SHIFT, got[i],
                            want[i]);
    }
  }
  return CONFORM_PASS;
}

// Everything done through the wrapped buffer `w` at `address`; `want` is
// the owner's memory as it must be (updated here).
static conform_result_t conform_wrap_use(conform_ctx_t* ctx,
                                         const conform_wrap_owner_t* o,
                                         accel_buffer_t* w, uint64_t address,
                                         unsigned char* want) {
  const size_t n = CONFORM_WRAP_BYTES, s = CONFORM_WRAP_SHIFT;
  unsigned char* got = conform_alloc(ctx, n + 64);
  if (got == NULL) return conform_report(ctx, CONFORM_FAIL, "host OOM");
  uint64_t at0 = 0, at100 = 0;
  accel_status_t status = accel_buffer_query_address(w, 0, &at0);
  if (status == ACCEL_OK) status = accel_buffer_query_address(w, 100, &at100);
  if (status != ACCEL_OK) {
    return conform_fail_status(ctx, status, "address of the wrapped buffer");
  }
  if (at0 != address || at100 != address + 100) {
    return conform_report(ctx, CONFORM_FAIL,
                          "the wrapped buffer's address is 0x%llx (0x%llx at "
                          "offset 100), not the 0x%llx wrapped",
                          (unsigned long long)at0, (unsigned long long)at100,
                          (unsigned long long)address);
  }
  // Zero-copy: a read of the wrapped buffer is the owner's bytes.
  if (!conform_verify(ctx, w, want + s, n,
                      "reading the wrapped buffer against the owner's "
                      "memory (a copy, or another address?)")) {
    return CONFORM_FAIL;
  }
  // A synchronous write, then stream work: a write, a fill at the very end,
  // a copy within the buffer. Each must land in the owner's memory.
  uint64_t rng = ctx->seed + 41;
  unsigned char* bytes = conform_alloc(ctx, 1000);
  if (bytes == NULL) return conform_report(ctx, CONFORM_FAIL, "host OOM");
  conform_rand_bytes(&rng, bytes, 1000);
  status = accel_buffer_write(w, 1, bytes, 1000);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "write");
  memcpy(want + s + 1, bytes, 1000);
  conform_result_t r = conform_wrap_expect(ctx, o, want, got, "write");
  if (r != CONFORM_PASS) return r;
  accel_stream_t* stream = NULL;
  status = conform_stream(ctx, ctx->device, &stream);
  if (status == ACCEL_OK) {
    status = accel_stream_write_buffer(stream, w, 5000, bytes + 7, 993);
  }
  if (status == ACCEL_OK) {
    status = accel_stream_fill_buffer(stream, w, n - 7, 0xa5, 7);
  }
  if (status == ACCEL_OK) {
    status = accel_stream_copy_buffer(stream, w, 30001, w, 5000, 993);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "enqueue");
  status = conform_stream_sync(ctx, stream);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
  memcpy(want + s + 5000, bytes + 7, 993);
  memset(want + s + n - 7, 0xa5, 7);
  memcpy(want + s + 30001, bytes + 7, 993);
  return conform_wrap_expect(ctx, o, want, got, "stream work");
}

// The `n` bytes at `address` wrapped eight times over, all eight held,
// then released: each release runs the owner's release once, and the
// device's free memory stays where it began, while they are held and after.
// A mem_wrap that counts the bytes as allocated (the memory is the
// owner's) loses 8 * n while they are held, and after too without a
// mem_unwrap that gives them back; a loss of half that fails. A CPU
// device's free memory may be the host's, which other processes move:
// there a loss sets `*out_note` instead of failing.
static conform_result_t conform_wrap_accounting(conform_ctx_t* ctx,
                                                uint64_t address, size_t n,
                                                const char** out_note) {
  enum { ROUNDS = 8 };
  accel_buffer_t* held[ROUNDS] = {NULL};
  uint64_t free0 = 0, held_free = 0, free1 = 0, total = 0;
  int released = 0;
  accel_status_t status =
      accel_device_query_memory(ctx->device, &free0, &total);
  for (int round = 0; round < ROUNDS && status == ACCEL_OK; round++) {
    status = accel_buffer_wrap(ctx->device, address, n, conform_wrap_release,
                               &released, &held[round]);
  }
  if (status == ACCEL_OK) {
    status = accel_device_query_memory(ctx->device, &held_free, &total);
  }
  for (int round = 0; round < ROUNDS; round++) {
    accel_buffer_release(held[round]);
  }
  if (status == ACCEL_OK) {
    status = accel_device_query_memory(ctx->device, &free1, &total);
  }
  if (status != ACCEL_OK) {
    return conform_fail_status(ctx, status, "wrapping and releasing again");
  }
  if (released != ROUNDS) {
    return conform_report(ctx, CONFORM_FAIL,
                          "the owner's release ran %d times for %d wrapped "
                          "buffers released",
                          released, ROUNDS);
  }
  uint64_t lowest = held_free < free1 ? held_free : free1;
  if (lowest + (uint64_t)n * ROUNDS / 2 <= free0) {
    if (ctx->info.type != ACCEL_DEVICE_TYPE_CPU) {
      return conform_report(ctx, CONFORM_FAIL,
                            "free memory %llu before, %llu with %d wrapped "
                            "buffers of %zu bytes held and %llu after their "
                            "release: wrapped memory is its owner's, not "
                            "allocated (mem_wrap counts it)",
                            (unsigned long long)free0,
                            (unsigned long long)held_free, ROUNDS, n,
                            (unsigned long long)free1);
    }
    *out_note = "; free memory moved, as host memory does";
  }
  return CONFORM_PASS;
}

static conform_result_t conform_interop_wrap(conform_ctx_t* ctx,
                                             const void* arg) {
  (void)arg;
  const size_t n = CONFORM_WRAP_BYTES, s = CONFORM_WRAP_SHIFT;
  bool host = (ctx->info.caps & ACCEL_DEVICE_CAP_HOST_ACCESSIBLE) != 0;
  conform_wrap_owner_t o = {NULL, NULL};
  unsigned char* want = conform_alloc(ctx, n + 64);
  int* released = conform_alloc(ctx, sizeof(int));
  if (want == NULL || released == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "host OOM");
  }
  uint64_t rng = ctx->seed + 42, base = 0;
  conform_rand_bytes(&rng, want, n + 64);
  accel_status_t status = conform_buffer(ctx, ctx->device, n + 64, &o.owner);
  if (status == ACCEL_OK)
    status = accel_buffer_query_address(o.owner, 0, &base);
  if (status == ACCEL_ERROR_UNSUPPORTED) {
    return conform_report(ctx, CONFORM_UNSUPPORTED,
                          "buffers have no address (mem_address)");
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  if (host) {
    o.host = conform_alloc(ctx, n + 64);  // calloc: 16-byte aligned
    if (o.host == NULL) return conform_report(ctx, CONFORM_FAIL, "host OOM");
    memcpy(o.host, want, n + 64);
    base = (uint64_t)(uintptr_t)o.host;
  } else {
    status = accel_buffer_write(o.owner, 0, want, n + 64);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "write");
  }
  uint64_t address = base + s;
  accel_buffer_t* w = NULL;
  status = accel_buffer_wrap(ctx->device, address, n, conform_wrap_release,
                             released, &w);
  if (status == ACCEL_ERROR_UNSUPPORTED) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "mem_wrap: %s",
                          accel_last_error());
  }
  if (status != ACCEL_OK) {
    return conform_report(ctx, CONFORM_FAIL,
                          "wrapping %zu bytes of %s at 0x%llx (3 bytes past "
                          "an aligned address; wrapped memory keeps its "
                          "owner's alignment) gave %s: %s",
                          n, host ? "host memory" : "a buffer's range",
                          (unsigned long long)address,
                          accel_status_string(status), accel_last_error());
  }
  conform_result_t r = conform_wrap_use(ctx, &o, w, address, want);
  accel_buffer_release(w);  // the core unwraps, then calls the release
  if (r != CONFORM_PASS) return r;
  if (*released != 1) {
    return conform_report(ctx, CONFORM_FAIL,
                          "the owner's release ran %d times, not once, when "
                          "the wrapped buffer went",
                          *released);
  }
  // mem_unwrap forgets the handle: the memory stays the owner's, untouched.
  unsigned char* got = conform_alloc(ctx, n + 64);
  if (got == NULL) return conform_report(ctx, CONFORM_FAIL, "host OOM");
  r = conform_wrap_expect(ctx, &o, want, got, "after the release");
  if (r != CONFORM_PASS) return r;
  const char* note = "";
  r = conform_wrap_accounting(ctx, address, n, &note);
  if (r != CONFORM_PASS) return r;
  return conform_report(ctx, CONFORM_PASS,
                        "%zu bytes of %s wrapped at an odd address, used "
                        "without a copy and released%s",
                        n, host ? "host memory" : "another buffer", note);
}

static const conform_check_t conform_interop[] = {
    {"interop.native_handles", conform_interop_native, NULL},
    {"interop.host_register", conform_interop_host_register, NULL},
    {"interop.wrap", conform_interop_wrap, NULL},
};

const conform_check_t* conform_interop_checks(size_t* out_count) {
  *out_count = sizeof(conform_interop) / sizeof(conform_interop[0]);
  return conform_interop;
}
