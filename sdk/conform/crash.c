// SPDX-License-Identifier: MIT
//
// Names the part of the run a crash happened in. A plugin bug that kills
// the process (a segmentation fault, an abort, an illegal instruction)
// ends the run before its report line; without a name the author has only
// the last line printed, which is the check BEFORE the one that crashed,
// or the closing summary when the plugin crashed while being unloaded.
// The handler writes "accel-conform: crashed WHERE (SIGSEGV)" to stderr
// with write() (async-signal-safe), WHERE prepared before the part began
// (never built in the handler):
//   setup     "while loading the plugin and opening its devices"
//   a check   "in check NAME" (and while the objects it left are released)
//   between   "after loading the plugin, before the first check",
//             "after check NAME had ended, before the next began" (only
//             threads the plugin left running run plugin code then)
//   teardown  "while closing the devices and unloading the plugin, after
//             the last check NAME" (or "before any check ran")
// It then hands the signal on to the handler that was there before (a
// sanitizer's, which prints its own report) or to the default action, so
// the exit status stays the signal's.
//
// The handlers go in before the plugin loads. A plugin, or a library it
// loads (LLVM, under PoCL), may install its own over them; when the next
// part begins this one is put back in front and passes signals on to the
// newcomer, as when the handlers went in after loading. Until then (a
// crash in the setup) the newcomer's runs first, and one that ends an
// abort() itself (LLVM's does) leaves no line.
//
// And stops a part that never ends. Every wait the suite makes itself
// has a deadline (--timeout), but some public calls block inside the
// plugin (a staged peer copy synchronizes the stream it is queued on; a
// device_close or unload that waits for work), so a plugin whose work
// never completes could hang the run. A watchdog thread ends the process
// (exit 1, a failure) when a check, the setup or the teardown has run for
// the limit main() gives: for a check after writing its FAIL report line
// to stdout, otherwise after writing "accel-conform: hung WHERE: still
// running after N s ..." to stderr. The suite's own work between checks
// is not timed.
// sigaction and SA_* are POSIX.
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "conform.h"
#include "signal_name.h"

static const int conform_fatal_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE,
                                            SIGABRT};
enum { CONFORM_FATAL_COUNT = 5 };
// The handlers that were there when accel-conform installed its own (a
// sanitizer's, or the default), and the ones it passes a signal on to: the
// same, or a handler a plugin (or a library it loads: LLVM, under PoCL)
// installed later over this one, which conform_guard_reclaim() found.
static struct sigaction conform_original[CONFORM_FATAL_COUNT];
static struct sigaction conform_previous[CONFORM_FATAL_COUNT];
// Loops, told apart from faults a plugin's runtime handles itself: the
// handler is entered inside itself (the handler it passed the signal on to
// called this one), or the same fault repeats at the same address (that
// handler returned without mending it: LLVM's puts back the handler it
// found, this one, and returns). Each time is one step further: the
// handler there before accel-conform, then the default action. A runtime
// that mends its own faults (maps a guard page) and returns is passed
// every one of them, as before the handlers went in early.
static atomic_int conform_fatal_depth;
static volatile sig_atomic_t conform_fatal_step;
static volatile sig_atomic_t conform_fatal_sig;
static void* volatile conform_fatal_addr;
// The line to write up to the signal's name, prepared before each part of
// the run (never built in the handler), and its length; 0 while a new one
// is written.
static char conform_crash_line[320];
static volatile sig_atomic_t conform_crash_length;

// The timed part for the watchdog: the line to write when it runs past the
// limit, its length and file descriptor, and when it started (seconds of
// conform_now(); 0 when nothing is timed). The line is written only while
// `conform_watch_since` is 0; the watchdog writes it only if
// `conform_watch_since` is the same before and after it copied it.
static char conform_hang_line[640];
static size_t conform_hang_length;
static int conform_hang_fd;
static _Atomic double conform_watch_since;
static double conform_watch_limit;

// The last check that began, named by the parts after it; "" before the
// first. Main thread only.
static char conform_last_check[128];

// Under a sanitizer (ASan, TSan, UBSan that halts), the runtime ends the
// process itself when it reports an error or cannot go on (TSan unable to
// map its shadow memory): no signal, so no crash line. Its death callback
// names the part of the run instead and prints the stack that got there,
// which the runtime's own one-line reasons ("failed to allocate ... bytes")
// leave out. Weak: absent outside a sanitized build.
extern void __sanitizer_set_death_callback(void (*callback)(void))
    __attribute__((weak, visibility("default")));
extern void __sanitizer_print_stack_trace(void)
    __attribute__((weak, visibility("default")));
static char conform_stop_line[400];
static volatile sig_atomic_t conform_stop_length;

static void conform_on_fatal(int sig, siginfo_t* info, void* context) {
  int depth = atomic_fetch_add(&conform_fatal_depth, 1);
  bool fault = info != NULL && info->si_code > 0;  // from the kernel
  bool again = depth > 0 || (fault && sig == conform_fatal_sig &&
                             info->si_addr == conform_fatal_addr);
  if (fault) {
    conform_fatal_sig = sig;
    conform_fatal_addr = info->si_addr;
  }
  int step = again ? conform_fatal_step + 1 : 0;
  conform_fatal_step = step;
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
  // First to the handler found last, then (a loop) to the one there before
  // accel-conform, then the default action.
  for (int i = 0; i < CONFORM_FATAL_COUNT && step < 2; i++) {
    if (conform_fatal_signals[i] != sig) continue;
    const struct sigaction* old =
        step == 0 ? &conform_previous[i] : &conform_original[i];
    if ((old->sa_flags & SA_SIGINFO) != 0 && old->sa_sigaction != NULL) {
      old->sa_sigaction(sig, info, context);
      atomic_fetch_sub(&conform_fatal_depth, 1);
      return;
    }
    if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN &&
        old->sa_handler != NULL) {
      old->sa_handler(sig);
      atomic_fetch_sub(&conform_fatal_depth, 1);
      return;
    }
  }
  // The default action: returning re-runs the faulting instruction (or, for
  // a raised signal, this re-raise) with the default disposition.
  signal(sig, SIG_DFL);
  raise(sig);
  atomic_fetch_sub(&conform_fatal_depth, 1);
}

static void conform_on_sanitizer_death(void) {
  size_t length = (size_t)conform_stop_length;
  if (length > 0) {
    ssize_t ignored = write(STDERR_FILENO, conform_stop_line, length);
    (void)ignored;
    conform_stop_length = 0;
  }
  __sanitizer_print_stack_trace();
}

// Prepares the line the death callback writes, naming `where`.
static void conform_guard_name_stop(const char* where) {
  conform_stop_length = 0;
  int n = snprintf(conform_stop_line, sizeof(conform_stop_line),
                   "\naccel-conform: the sanitizer stopped the run %s, "
                   "here:\n",
                   where);
  if (n > 0 && (size_t)n < sizeof(conform_stop_line)) {
    conform_stop_length = n;
  }
}

// After main() returned: a leak report comes then.
static void conform_guard_at_exit(void) {
  conform_guard_name_stop("at exit, after the run ended");
}

static void conform_guard_action(struct sigaction* action) {
  memset(action, 0, sizeof(*action));
  action->sa_sigaction = conform_on_fatal;
  action->sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&action->sa_mask);
}

// Puts this handler back in front of one that was installed over it since
// (the handlers go in before the plugin loads, and a library the plugin
// loads may install its own: LLVM's, under PoCL, ends an abort() without
// calling this one), passing signals on to it. A signal that arrives while
// `conform_previous` is rewritten goes to the newcomer's handler.
static void conform_guard_reclaim(void) {
  struct sigaction action;
  conform_guard_action(&action);
  for (int i = 0; i < CONFORM_FATAL_COUNT; i++) {
    struct sigaction now;
    if (sigaction(conform_fatal_signals[i], NULL, &now) != 0) continue;
    if ((now.sa_flags & SA_SIGINFO) != 0 &&
        now.sa_sigaction == conform_on_fatal) {
      continue;
    }
    conform_previous[i] = now;
    sigaction(conform_fatal_signals[i], &action, NULL);
  }
}

static void* conform_watchdog(void* arg) {
  (void)arg;
  for (;;) {
    struct timespec nap = {1, 0};
    nanosleep(&nap, NULL);
    double since = atomic_load(&conform_watch_since);
    if (since == 0 || conform_now() - since < conform_watch_limit) continue;
    char line[sizeof(conform_hang_line)];
    size_t length = conform_hang_length;
    int fd = conform_hang_fd;
    if (length > sizeof(line)) continue;
    memcpy(line, conform_hang_line, length);
    // The part ended (and the next may be writing its line) meanwhile.
    if (atomic_load(&conform_watch_since) != since) continue;
    ssize_t ignored = write(fd, line, length);
    (void)ignored;
    _exit(1);
  }
  return NULL;
}

// Names what runs next, untimed: a crash writes "accel-conform: crashed
// `where` (" and the signal's name.
static void conform_guard_arm(const char* where) {
  conform_guard_reclaim();
  conform_crash_length = 0;
  atomic_store(&conform_watch_since, 0.0);
  int n = snprintf(conform_crash_line, sizeof(conform_crash_line),
                   "\naccel-conform: crashed %s (", where);
  if (n > 0 && (size_t)n < sizeof(conform_crash_line)) {
    conform_crash_length = n;
  }
  conform_guard_name_stop(where);
}

// Times what conform_guard_arm() named: once it has run for the limit, the
// watchdog writes the line `format` makes to `fd`.
__attribute__((format(printf, 2, 3))) static void conform_guard_time(
    int fd, const char* format, ...) {
  va_list ap;
  va_start(ap, format);
  int n = vsnprintf(conform_hang_line, sizeof(conform_hang_line), format, ap);
  va_end(ap);
  conform_hang_length = n > 0 && (size_t)n < sizeof(conform_hang_line)
                            ? (size_t)n
                            : sizeof(conform_hang_line) - 1;
  conform_hang_fd = fd;
  atomic_store(&conform_watch_since, conform_now());
}

// Names and times the setup or the teardown: the watchdog's line is the
// crash line with "hung" for "crashed", on stderr too.
static void conform_guard_arm_phase(const char* where) {
  conform_guard_arm(where);
  conform_guard_time(STDERR_FILENO,
                     "accel-conform: hung %s: still running after %.0f s (a "
                     "plugin call that never returns?). Stopping.\n",
                     where, conform_watch_limit);
}

void conform_crash_guard_install(double limit_s) {
  // The handlers there now are passed each signal; conform_guard_arm()
  // puts this one in front of them.
  for (int i = 0; i < CONFORM_FATAL_COUNT; i++) {
    sigaction(conform_fatal_signals[i], NULL, &conform_original[i]);
  }
  conform_watch_limit = limit_s;
  conform_last_check[0] = '\0';
  conform_guard_arm_phase("while loading the plugin and opening its devices");
  if (__sanitizer_set_death_callback != NULL &&
      __sanitizer_print_stack_trace != NULL) {
    __sanitizer_set_death_callback(conform_on_sanitizer_death);
    atexit(conform_guard_at_exit);
  }
  pthread_t watchdog;
  if (pthread_create(&watchdog, NULL, conform_watchdog, NULL) == 0) {
    pthread_detach(watchdog);
  }
}

void conform_crash_guard_check(const char* check, const char* hang_report) {
  char where[sizeof(conform_last_check) + 64];
  if (check == NULL) {
    if (conform_last_check[0] == '\0') {
      snprintf(where, sizeof(where), "%s",
               "after loading the plugin, before the first check");
    } else {
      snprintf(where, sizeof(where),
               "after check %s had ended, before the next began",
               conform_last_check);
    }
    conform_guard_arm(where);
    return;
  }
  snprintf(conform_last_check, sizeof(conform_last_check), "%s", check);
  snprintf(where, sizeof(where), "in check %s", check);
  conform_guard_arm(where);
  conform_guard_time(STDOUT_FILENO, "%s", hang_report);
}

void conform_crash_guard_teardown(void) {
  char where[sizeof(conform_last_check) + 96];
  const char* what = "while closing the devices and unloading the plugin";
  if (conform_last_check[0] == '\0') {
    snprintf(where, sizeof(where), "%s, before any check ran", what);
  } else {
    snprintf(where, sizeof(where), "%s, after the last check %s", what,
             conform_last_check);
  }
  conform_guard_arm_phase(where);
}
