// SPDX-License-Identifier: MIT
//
// accel_range_push / accel_range_pop: a per-thread stack of named ranges,
// written to the trace file as spans and forwarded to NVTX v3 (when the
// core was built with its headers: ACCEL_HAVE_NVTX) and to roctx (when
// libroctx64.so loads). NVTX v3 is header-only: its first call looks for
// an injection library named by NVTX_INJECTION64_PATH and is a no-op
// without one.
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "trace.h"

#if defined(ACCEL_HAVE_NVTX)
#include "nvtx.h"
#endif

#define ACCEL__RANGE_DEPTH 64

typedef struct accel__range {
  char name[64];
  int64_t start;  // 0 when the trace was off at push
} accel__range_t;

static _Thread_local accel__range_t accel__ranges[ACCEL__RANGE_DEPTH];
static _Thread_local int accel__range_depth;

// roctx, resolved once.
static pthread_once_t accel__roctx_once = PTHREAD_ONCE_INIT;
static int (*accel__roctx_push)(const char*);
static int (*accel__roctx_pop)(void);

static void accel__roctx_load(void) {
  void* dl = dlopen("libroctx64.so", RTLD_NOW | RTLD_LOCAL);
  if (dl == NULL) return;  // no ROCm tracer library: ranges skip roctx
  *(void**)&accel__roctx_push = dlsym(dl, "roctxRangePushA");
  *(void**)&accel__roctx_pop = dlsym(dl, "roctxRangePop");
  if (accel__roctx_push == NULL || accel__roctx_pop == NULL) {
    accel__roctx_push = NULL;
    accel__roctx_pop = NULL;
    dlclose(dl);
  }
}

void accel__range_forward_push(const char* name) {
#if defined(ACCEL_HAVE_NVTX)
  nvtxRangePushA(name);
#endif
  pthread_once(&accel__roctx_once, accel__roctx_load);
  if (accel__roctx_push != NULL) accel__roctx_push(name);
}

void accel__range_forward_pop(void) {
#if defined(ACCEL_HAVE_NVTX)
  nvtxRangePop();
#endif
  pthread_once(&accel__roctx_once, accel__roctx_load);
  if (accel__roctx_pop != NULL) accel__roctx_pop();
}

accel_status_t accel_range_push(const char* name) {
  if (name == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_range_push: name is NULL");
  }
  if (accel__range_depth == ACCEL__RANGE_DEPTH) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_range_push: '%.63s' would nest deeper than %d "
                       "ranges on this thread",
                       name, ACCEL__RANGE_DEPTH);
  }
  accel__range_t* r = &accel__ranges[accel__range_depth++];
  snprintf(r->name, sizeof(r->name), "%s", name);
  r->start = accel__tracing() ? accel__trace_now() : 0;
  accel__range_forward_push(r->name);
  return ACCEL_OK;
}

accel_status_t accel_range_pop(void) {
  if (accel__range_depth == 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_range_pop: no range is open on this thread");
  }
  accel__range_t* r = &accel__ranges[--accel__range_depth];
  accel__range_forward_pop();
  if (r->start != 0) accel__trace_span(r->name, r->start);
  return ACCEL_OK;
}
