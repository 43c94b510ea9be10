// SPDX-License-Identifier: MIT
//
// Per-thread state of libfakehip: the current device and the last error.
//
// The HIP runtime keeps both per host thread, and an application shares
// them with every library that calls HIP on its threads, so the ROCm plugin
// must give back the device it found current and must not leave behind an
// error it expected and handled. hip_runtime_api.h documents
// hipGetLastError as returning the last error of any HIP call on the
// thread and resetting it to hipSuccess. Before HIP 7.0 the stored value is
// the result of the last call (a later success overwrites an error); HIP
// 7.0 made it sticky, as in CUDA: it stays until hipGetLastError reads it
// (the ROCm documentation page "HIP API 7.0 changes"), hipErrorNotReady
// excepted.
// The fake follows the version it reports (FAKEHIP_VERSION).
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <stdbool.h>
#include <stdlib.h>

#include "fakehip.h"

FAKEHIP_TLS int fakehip_current;
static FAKEHIP_TLS hipError_t fakehip_last = hipSuccess;

// HIP 7.0 in hipRuntimeGetVersion's encoding.
#define FAKEHIP_STICKY_VERSION 70000000

static bool fakehip_sticky(void) {
  const char* v = getenv("FAKEHIP_VERSION");
  return v != NULL && atoi(v) >= FAKEHIP_STICKY_VERSION;
}

hipError_t fakehip_ret(hipError_t error) {
  if (!fakehip_sticky()) {
    fakehip_last = error;
  } else if (error != hipSuccess && error != hipErrorNotReady) {
    // "HIP API 7.0 changes": neither hipSuccess nor hipErrorNotReady is
    // an error that sticks.
    fakehip_last = error;
  }
  return error;
}

FAKEHIP_API hipError_t hipGetLastError(void) {
  hipError_t error = fakehip_last;
  fakehip_last = hipSuccess;
  return error;
}

FAKEHIP_API hipError_t hipPeekAtLastError(void) { return fakehip_last; }
