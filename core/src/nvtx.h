// SPDX-License-Identifier: MIT
//
// <nvtx3/nvToolsExt.h> included with the warnings of its header-only
// implementation silenced (pedantic, unused static functions and
// parameters), for trace_range.c and the tests' NVTX injection library.
#ifndef ACCEL_CORE_NVTX_H_
#define ACCEL_CORE_NVTX_H_

#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#endif
#include <nvtx3/nvToolsExt.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif

#endif  // ACCEL_CORE_NVTX_H_
