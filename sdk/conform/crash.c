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
//
// And stops a check that never ends. Every wait the suite makes itself
// has a deadline (--timeout), but some public calls block inside the
// plugin (a staged peer copy synchronizes the stream it is queued on),
// so a plugin whose work never completes could hang the run. A watchdog
// thread ends the process (exit 1, a failure) when one check has run
// for the limit main() gives, after writing a FAIL line naming it.
// sigaction and SA_* are POSIX.
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
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

// The running check for the watchdog: its name, and when it started
// (seconds of conform_now(); 0 between checks). The name is written only
// while `conform_check_since` is 0; the watchdog reports a name only if
// `conform_check_since` is the same before and after it read it.
static char conform_check_name[128];
static _Atomic double conform_check_since;
static double conform_check_limit;

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

static void* conform_watchdog(void* arg) {
  (void)arg;
  for (;;) {
    struct timespec nap = {1, 0};
    nanosleep(&nap, NULL);
    double since = atomic_load(&conform_check_since);
    if (since == 0 || conform_now() - since < conform_check_limit) continue;
    char line[320];
    int n = snprintf(line, sizeof(line),
                     "FAIL         %-28s  still running after %.0f s: a wait "
                     "inside the plugin that never returns? Stopping.\n",
                     conform_check_name, conform_check_limit);
    // The check ended (and the next may be writing its name) meanwhile.
    if (atomic_load(&conform_check_since) != since) continue;
    if (n > 0) {
      ssize_t ignored = write(STDOUT_FILENO, line, (size_t)n);
      (void)ignored;
    }
    _exit(1);
  }
  return NULL;
}

void conform_crash_guard_install(double limit_s) {
  conform_check_limit = limit_s;
  pthread_t watchdog;
  if (pthread_create(&watchdog, NULL, conform_watchdog, NULL) == 0) {
    pthread_detach(watchdog);
  }
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
  atomic_store(&conform_check_since, 0.0);
  if (check == NULL) return;
  snprintf(conform_check_name, sizeof(conform_check_name), "%s", check);
  atomic_store(&conform_check_since, conform_now());
  int n = snprintf(conform_crash_line, sizeof(conform_crash_line),
                   "\naccel-conform: crashed in check %s (", check);
  if (n > 0 && (size_t)n < sizeof(conform_crash_line)) {
    conform_crash_length = n;
  }
}
