// SPDX-License-Identifier: MIT
//
// Names the check a crash happened in. A plugin bug that kills the process
// (a segmentation fault, an abort, an illegal instruction) ends the run
// before its report line; without a name the author has only the last
// line printed, which is the check BEFORE the one that crashed. The
// handler writes "accel-conform: crashed in check NAME (SIGSEGV)" to
// stderr with write() (async-signal-safe), then hands the signal on to
// the handler that was there before (a sanitizer's, which prints its own
// report) or to the default action, so the exit status stays the
// signal's.
// sigaction and SA_* are POSIX.
#define _POSIX_C_SOURCE 200809L

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "conform.h"
#include "signal_name.h"

static const int conform_fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE,
                                            SIGABRT};
enum { CONFORM_FATAL_COUNT = 5 };
static struct sigaction conform_previous[CONFORM_FATAL_COUNT];
// The line to write, prepared before each check (never built in the
// handler) and its length; 0 between checks.
static char conform_crash_line[320];
static volatile sig_atomic_t conform_crash_length;

static void conform_on_fatal(int sig, siginfo_t* info, void* context) {
  size_t length = (size_t)conform_crash_length;
  if (length > 0) {
    const char* name = tool_signal_name(sig);
    if (name == NULL) name = "a fatal signal";
    ssize_t ignored = write(STDERR_FILENO, conform_crash_line, length);
    ignored = write(STDERR_FILENO, name, strlen(name));
    ignored = write(STDERR_FILENO, ")\n", 2);
    (void)ignored;
    conform_crash_length = 0;  // once, however the signal is passed on
  }
  for (int i = 0; i < CONFORM_FATAL_COUNT; i++) {
    if (conform_fatal_signals[i] != sig) continue;
    const struct sigaction* old = &conform_previous[i];
    if ((old->sa_flags & SA_SIGINFO) != 0 && old->sa_sigaction != NULL) {
      old->sa_sigaction(sig, info, context);
      return;
    }
    if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN &&
        old->sa_handler != NULL) {
      old->sa_handler(sig);
      return;
    }
  }
  // The default action: returning re-runs the faulting instruction (or, for
  // a raised signal, this re-raise) with the default disposition.
  signal(sig, SIG_DFL);
  raise(sig);
}

void conform_crash_guard_install(void) {
  struct sigaction action;
  memset(&action, 0, sizeof(action));
  action.sa_sigaction = conform_on_fatal;
  action.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&action.sa_mask);
  for (int i = 0; i < CONFORM_FATAL_COUNT; i++) {
    sigaction(conform_fatal_signals[i], &action, &conform_previous[i]);
  }
}

void conform_crash_guard_check(const char* check) {
  conform_crash_length = 0;
  if (check == NULL) return;
  int n = snprintf(conform_crash_line, sizeof(conform_crash_line),
                   "\naccel-conform: crashed in check %s (", check);
  if (n > 0 && (size_t)n < sizeof(conform_crash_line)) {
    conform_crash_length = n;
  }
}
