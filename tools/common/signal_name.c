// SPDX-License-Identifier: MIT
//
// tool_signal_name(): a switch over the signals a tool is likely to report
// (a plugin's crash, a timeout's kill), so that handlers can name them
// without strsignal(), which is not async-signal-safe.
#define _XOPEN_SOURCE 700  // SIGSYS, SIGTRAP, SIGXCPU, SIGXFSZ

#include "signal_name.h"

#include <signal.h>
#include <stddef.h>

const char* tool_signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGILL:
      return "SIGILL";
    case SIGFPE:
      return "SIGFPE";
    case SIGABRT:
      return "SIGABRT";
    case SIGTRAP:
      return "SIGTRAP";
    case SIGSYS:
      return "SIGSYS";
    case SIGKILL:
      return "SIGKILL";
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGQUIT:
      return "SIGQUIT";
    case SIGHUP:
      return "SIGHUP";
    case SIGPIPE:
      return "SIGPIPE";
    case SIGALRM:
      return "SIGALRM";
    case SIGUSR1:
      return "SIGUSR1";
    case SIGUSR2:
      return "SIGUSR2";
    case SIGXCPU:
      return "SIGXCPU";
    case SIGXFSZ:
      return "SIGXFSZ";
    default:
      return NULL;
  }
}
