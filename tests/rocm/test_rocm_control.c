// SPDX-License-Identifier: MIT
//
// Stream and event controls of the ROCm plugin reaching the runtime
// (libfakehip through ACCEL_ROCM_RUNTIME): the priority range is HIP's
// (1 low to -1 high), a stream's priority reaches
// hipStreamCreateWithPriority (clamped by the core first),
// ACCEL_EVENT_BLOCKING_SYNC reaches hipEventCreateWithFlags as
// hipEventBlockingSync, and host functions go through hipLaunchHostFunc in
// stream order. Native handles come from accel_stream_query_native and
// accel_event_query_native; the fake's test-only accessors read what the
// runtime got. Plumbing only, not AMD hardware.
#include <accel/accel.h>
#include <accel/interop.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "test.h"

// hipEventCreateWithFlags flags (<hip/hip_runtime_api.h>).
enum { HIP_EVENT_BLOCKING_SYNC = 0x1, HIP_EVENT_DISABLE_TIMING = 0x2 };

static struct {
  bool (*stream_priority)(void* s, int* out);
  unsigned (*event_flags)(void* e);
  unsigned long (*host_funcs)(void);
} fake;

static bool fake_open(void) {
  const char* path = getenv("ACCEL_ROCM_RUNTIME");
  void* lib = path != NULL ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (lib == NULL) return false;
  void* sym[3] = {dlsym(lib, "fakehip_stream_priority"),
                  dlsym(lib, "fakehip_event_flags"),
                  dlsym(lib, "fakehip_host_func_count")};
  for (int i = 0; i < 3; i++) {
    if (sym[i] == NULL) return false;
  }
  memcpy(&fake.stream_priority, &sym[0], sizeof(sym[0]));
  memcpy(&fake.event_flags, &sym[1], sizeof(sym[1]));
  memcpy(&fake.host_funcs, &sym[2], sizeof(sym[2]));
  return true;
}

#define OPEN(device)                                         \
  do {                                                       \
    if (!fake_open()) SKIP("needs ACCEL_ROCM_RUNTIME=fake"); \
    ASSERT_OK(accel_device_open("rocm:0", &(device)));       \
  } while (0)

TEST(rocm_stream_priority_reaches_runtime) {
  accel_device_t* d = NULL;
  OPEN(d);
  int32_t least = 7, greatest = 7;
  ASSERT_OK(accel_device_stream_priority_range(d, &least, &greatest));
  ASSERT_EQ(least, 1);
  ASSERT_EQ(greatest, -1);
  static const int32_t asked[] = {-1, -9, 0, 5};
  static const int32_t got[] = {-1, -1, 0, 1};
  for (int i = 0; i < 4; i++) {
    accel_stream_t* s = NULL;
    ASSERT_OK(accel_stream_create_with_priority(d, 0, asked[i], &s));
    ASSERT_EQ(accel_stream_priority(s), got[i]);
    uint64_t native = 0;
    ASSERT_OK(accel_stream_query_native(s, &native));
    int priority = 99;
    ASSERT(fake.stream_priority((void*)(uintptr_t)native, &priority));
    ASSERT_EQ(priority, got[i]);
    accel_stream_release(s);
  }
  accel_device_release(d);
}

TEST(rocm_blocking_sync_reaches_runtime) {
  accel_device_t* d = NULL;
  OPEN(d);
  static const accel_event_flags_t flags[] = {
      0, ACCEL_EVENT_BLOCKING_SYNC, ACCEL_EVENT_TIMING,
      ACCEL_EVENT_TIMING | ACCEL_EVENT_BLOCKING_SYNC};
  static const unsigned want[] = {
      HIP_EVENT_DISABLE_TIMING,
      HIP_EVENT_DISABLE_TIMING | HIP_EVENT_BLOCKING_SYNC, 0,
      HIP_EVENT_BLOCKING_SYNC};
  accel_stream_t* s = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  for (int i = 0; i < 4; i++) {
    accel_event_t* e = NULL;
    ASSERT_OK(accel_event_create(d, flags[i], &e));
    uint64_t native = 0;
    ASSERT_OK(accel_event_query_native(e, &native));
    ASSERT_EQ(fake.event_flags((void*)(uintptr_t)native), want[i]);
    ASSERT_OK(accel_event_record(e, s));
    ASSERT_OK(accel_event_synchronize(e));
    accel_event_release(e);
  }
  accel_stream_release(s);
  accel_device_release(d);
}

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

typedef struct probe {
  const uint32_t* data;  // the fake's device memory is host memory
  uint32_t seen;
  atomic_int started;
  atomic_int release;
  atomic_int calls;
} probe_t;

static void probe_fn(void* user) {
  probe_t* p = user;
  p->seen = p->data[0];
  atomic_fetch_add(&p->calls, 1);
  atomic_store(&p->started, 1);
  for (int i = 0; i < 30000 && atomic_load(&p->release) == 0; i++) nap_ms(1);
}

static void count_fn(void* user) { atomic_fetch_add((atomic_int*)user, 1); }

TEST(rocm_host_func_in_stream_order) {
  accel_device_t* d = NULL;
  OPEN(d);
  accel_stream_t* s = NULL;
  accel_buffer_t* b = NULL;
  accel_event_t* after = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_buffer_create(d, 4096, &b));
  ASSERT_OK(accel_event_create(d, 0, &after));
  uint64_t address = 0;
  ASSERT_OK(accel_buffer_query_address(b, 0, &address));
  static probe_t p;
  memset(&p, 0, sizeof(p));
  p.data = (const uint32_t*)(uintptr_t)address;
  unsigned long before = fake.host_funcs();
  const uint32_t first = 0x11111111u, second = 0x22222222u;
  ASSERT_OK(accel_stream_write_buffer(s, b, 0, &first, 4));
  ASSERT_OK(accel_stream_launch_host_func(s, probe_fn, &p));
  ASSERT_OK(accel_stream_write_buffer(s, b, 0, &second, 4));
  ASSERT_OK(accel_event_record(after, s));
  for (int i = 0; i < 30000 && atomic_load(&p.started) == 0; i++) nap_ms(1);
  ASSERT_EQ(atomic_load(&p.started), 1);
  ASSERT_EQ(p.seen, first);
  nap_ms(20);
  bool done = true;
  ASSERT_OK(accel_event_query(after, &done));
  ASSERT(!done);
  ASSERT_EQ(p.data[0], first);
  atomic_store(&p.release, 1);
  ASSERT_OK(accel_stream_synchronize(s));
  ASSERT_EQ(p.data[0], second);
  ASSERT_EQ(atomic_load(&p.calls), 1);
  accel_stream_t* urgent = NULL;
  ASSERT_OK(accel_stream_create_with_priority(d, 0, -1, &urgent));
  static atomic_int count;
  atomic_store(&count, 0);
  for (int i = 0; i < 500; i++) {
    ASSERT_OK(
        accel_stream_launch_host_func(i % 2 ? s : urgent, count_fn, &count));
  }
  ASSERT_OK(accel_device_synchronize(d));
  ASSERT_EQ(atomic_load(&count), 500);
  ASSERT_EQ(fake.host_funcs() - before, 501);
  accel_stream_release(urgent);
  accel_event_release(after);
  accel_buffer_release(b);
  accel_stream_release(s);
  accel_device_release(d);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
