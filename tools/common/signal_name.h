// SPDX-License-Identifier: MIT
//
// The name of a signal ("SIGSEGV"), for the tools' messages. Nothing here
// is exported.
#ifndef ACCEL_TOOLS_COMMON_SIGNAL_NAME_H_
#define ACCEL_TOOLS_COMMON_SIGNAL_NAME_H_

// "SIGSEGV", "SIGABRT", ... for the usual signals, NULL for others. A
// constant string: safe to call from a signal handler.
const char* tool_signal_name(int sig);

#endif  // ACCEL_TOOLS_COMMON_SIGNAL_NAME_H_
