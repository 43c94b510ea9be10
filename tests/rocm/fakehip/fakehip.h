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

#endif  // ACCEL_TESTS_ROCM_FAKEHIP_FAKEHIP_H_
