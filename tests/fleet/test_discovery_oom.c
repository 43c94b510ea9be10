// SPDX-License-Identifier: MIT
//
// A host allocation failure during discovery fails accel_init with "out of
// memory during discovery" and leaves the library uninitialised, so the
// next call discovers again and finds cpu. Allocation failure is injected
// by defining malloc, calloc and realloc in this executable (they take
// precedence over libc's for every library): the Nth call made from
// libaccel's own code fails; calls from libc, the loader and plugins never
// do, so only the core's handling is under test.
#define _GNU_SOURCE
#include <accel/accel.h>
#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loader_util.h"
#include "test.h"

extern void* __libc_malloc(size_t size);
extern void* __libc_calloc(size_t n, size_t size);
extern void* __libc_realloc(void* p, size_t size);

// The build hides symbols by default; these must be seen by libaccel.
#define TEST_EXPORT __attribute__((visibility("default")))

static uintptr_t core_lo, core_hi;  // libaccel's mapped range
static long fail_at = -1;           // countdown; 0 fails, <0 never
static long core_calls;

static int find_core(struct dl_phdr_info* info, size_t size, void* data) {
  (void)size, (void)data;
  if (strstr(info->dlpi_name, "libaccel.so") == NULL) return 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD) continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    uintptr_t hi = lo + ph->p_memsz;
    if (core_lo == 0 || lo < core_lo) core_lo = lo;
    if (hi > core_hi) core_hi = hi;
  }
  return 1;
}

static bool should_fail(void* caller) {
  uintptr_t at = (uintptr_t)caller;
  if (at < core_lo || at >= core_hi) return false;
  core_calls++;
  return fail_at >= 0 && fail_at-- == 0;
}

TEST_EXPORT void* malloc(size_t size) {
  if (should_fail(__builtin_return_address(0))) return NULL;
  return __libc_malloc(size);
}

TEST_EXPORT void* calloc(size_t n, size_t size) {
  if (should_fail(__builtin_return_address(0))) return NULL;
  return __libc_calloc(n, size);
}

TEST_EXPORT void* realloc(void* p, size_t size) {
  if (should_fail(__builtin_return_address(0))) return NULL;
  return __libc_realloc(p, size);
}

TEST(every_failure_is_retryable) {
  dl_iterate_phdr(find_core, NULL);
  ASSERT_NE(core_hi, 0);
  lu_restart(lu_env_path("ACCEL_TEST_FX_GOOD"));
  core_calls = 0;
  ASSERT_OK(accel_init(NULL));
  long total = core_calls;
  ASSERT_GT(total, 3);
  int failures = 0;
  for (long n = 0; n < total + 2; n++) {
    lu_restart(lu_env_path("ACCEL_TEST_FX_GOOD"));
    fail_at = n;
    accel_status_t status = accel_init(NULL);
    fail_at = -1;
    if (status != ACCEL_OK) {
      failures++;
      ASSERT_EQ(status, ACCEL_ERROR_OUT_OF_MEMORY);
      ASSERT_STR_CONTAINS(accel_last_error(), "out of memory during "
                                              "discovery");
    }
    // Whatever happened, the library now finds cpu and the fixture.
    ASSERT(lu_roundtrip("cpu:0"));
    ASSERT(lu_roundtrip("fxgood:0"));
  }
  ASSERT_GT(failures, 0);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
