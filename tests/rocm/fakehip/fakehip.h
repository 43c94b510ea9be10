// SPDX-License-Identifier: MIT
//
// Shared by the files of libfakehip (tests/rocm/fakehip).
#ifndef ACCEL_TESTS_ROCM_FAKEHIP_FAKEHIP_H_
#define ACCEL_TESTS_ROCM_FAKEHIP_FAKEHIP_H_

// Exports a HIP entry point (the library is built with hidden visibility).
#define FAKEHIP_API __attribute__((visibility("default")))

// First line of the blobs the fake hiprtc produces; the arch follows on
// the next line, then the NUL-terminated source.
#define FAKEHIP_RTC_MAGIC "FAKEHIP-RTC-CODE-OBJECT\n"

#include <hip/hip_runtime_api.h>

// The calling thread's current device (hipSetDevice; 0 until set).
// The stand-in's thread-locals use the initial-exec TLS model: the library
// is dlopen()ed, and with the default (general dynamic) model every access
// goes through __tls_get_addr, whose interception in GCC 12's
// ThreadSanitizer mis-sizes a dynamic TLS block that glibc allocated with
// malloc (google/sanitizers#1409) and dies asking for 544 TB of shadow
// memory. A few bytes fit glibc's static TLS surplus for dlopen().
#define FAKEHIP_TLS _Thread_local __attribute__((tls_model("initial-exec")))
extern FAKEHIP_TLS int fakehip_current;

// Records `error` as the calling thread's last error and returns it. Below
// HIP 7.0 (FAKEHIP_VERSION) the last error is the last call's result, so a
// success resets it; from 7.0 it is sticky: a success (or
// hipErrorNotReady) leaves an earlier error in place until hipGetLastError
// reads it.
hipError_t fakehip_ret(hipError_t error);

#endif  // ACCEL_TESTS_ROCM_FAKEHIP_FAKEHIP_H_
