// SPDX-License-Identifier: MIT
//
// Helpers shared by the GEMM workspace tests of the fake GPU runtimes
// (tests/stand_in/test_stand_in_workspace.c, built once per stand-in): a
// tiny f32 product whose result is known, the memory statistics of a
// device, and the fake BLAS's test-only record of the last workspace it
// was given. Header-only: every definition is static.
#ifndef ACCEL_TESTS_TEST_GEMM_WORKSPACE_H_
#define ACCEL_TESTS_TEST_GEMM_WORKSPACE_H_

#include <accel/accel.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MIB ((uint64_t)1 << 20)

// The fake BLAS's record: the last workspace pointer and size it got, and
// how many GEMMs it has queued. NULL arguments are skipped.
typedef void (*last_workspace_fn_t)(uintptr_t*, size_t*, unsigned long*);

// `symbol` from the library the environment variable `env` names (the
// path the plugin loads, so the same object), or NULL. The caller
// dlclose()s *out_lib.
static last_workspace_fn_t last_workspace_from(const char* env,
                                               const char* symbol,
                                               void** out_lib) {
  const char* path = getenv(env);
  *out_lib = path != NULL ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (*out_lib == NULL) return NULL;
  void* sym = dlsym(*out_lib, symbol);
  last_workspace_fn_t fn = NULL;
  memcpy(&fn, &sym, sizeof(fn));
  return fn;
}

// The device's memory statistics; all bits set (failing every comparison)
// when the query fails.
static accel_memory_stats_t stats_of(accel_device_t* device) {
  accel_memory_stats_t s;
  memset(&s, 0, sizeof(s));
  s.struct_size = sizeof(s);
  if (accel_device_query_memory_stats(device, &s) != ACCEL_OK) {
    memset(&s, 0xff, sizeof(s));
  }
  return s;
}

// A = [1 2 3; 4 5 6] at 0 and B = [1 0; 0 1; 1 1] at 24 of one buffer:
// A B = [4 5; 10 11].
static const float kAB[12] = {1, 2, 3, 4, 5, 6, 1, 0, 0, 1, 1, 1};
static const float kProduct[4] = {4, 5, 10, 11};

// C = A B into `c` at `c_offset`, A and B from `ab` as above. k may be 0
// (C = 0.5 C, which no BLAS runs).
static accel_gemm_t small_gemm(accel_buffer_t* ab, accel_buffer_t* c,
                               size_t c_offset, size_t k) {
  accel_gemm_t g;
  accel_gemm_init(&g);
  g.m = 2, g.n = 2, g.k = k;
  g.a = ab, g.a_offset = 0;
  g.b = ab, g.b_offset = 24;
  g.c = c, g.c_offset = c_offset;
  g.beta = k == 0 ? 0.5 : 0.0;
  return g;
}

// Whether `c` holds A B at `offset`.
static bool product_at(accel_buffer_t* c, size_t offset) {
  float got[4] = {0};
  return accel_buffer_read(c, offset, got, sizeof(got)) == ACCEL_OK &&
         memcmp(got, kProduct, sizeof(got)) == 0;
}

#endif  // ACCEL_TESTS_TEST_GEMM_WORKSPACE_H_
