// SPDX-License-Identifier: MIT
//
// Crash isolation. Probing a plugin runs its code (dlopen constructors,
// accel_plugin_entry, load(), device queries); a broken plugin can crash or
// hang there. So the parent forks a child that does all the work and sends
// back, over a pipe:
//   - a marker before each risky step, naming the plugin it is about to
//     touch (the library's probe callback, and report.c before querying a
//     plugin's devices);
//   - at the very end, the fully rendered output.
// Records are framed as <kind><decimal length>':'<payload>, so the parent
// can tell markers from output whatever the payload holds.
//
// If the child dies by a signal (or hangs past the per-probe timeout), the
// parent blames the plugin named by the last marker, adds it to the crash
// list and forks again; the next child excludes that plugin through
// accel_options_t.exclude and reports it as crashed or timed out, using the
// crash list it inherited through fork(). One fork in the common case.
#define _GNU_SOURCE  // strsignal() in older glibc headers
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "info.h"
#include "signal_name.h"

// A bound on probing rounds: each round blames one more plugin.
#define INFO_MAX_ROUNDS 64

bool info_write_all(int fd, const void* data, size_t size) {
  const char* p = data;
  while (size > 0) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= (size_t)n;
  }
  return true;
}

// Renders the whole report into a malloc'd buffer (`*out_text`, length
// `*out_size`) and returns its exit code. The library stays initialised.
static int info_render_report(const info_run_options_t* options,
                              const info_crash_t* crashes, size_t crash_count,
                              info_mark_fn_t mark, void* mark_user_data,
                              char** out_text, size_t* out_size) {
  info_collect_options_t collect = {
      .crashes = crashes,
      .crash_count = crash_count,
      .mark = mark,
      .mark_user_data = mark_user_data,
  };
  info_report_t report;
  info_report_collect(&collect, &report);
  int code = info_report_exit_code(&report);
  *out_text = NULL;
  *out_size = 0;
  FILE* mem = open_memstream(out_text, out_size);
  if (mem != NULL) {
    if (options->json) {
      info_render_json(&report, mem);
    } else {
      info_render_text(&report, &options->text, mem);
    }
    fclose(mem);
  }
  info_report_deinit(&report);
  return code;
}

int info_run_in_process(const info_run_options_t* options,
                        const info_crash_t* crashes, size_t crash_count,
                        info_mark_fn_t mark, void* mark_user_data, int out_fd) {
  char* text = NULL;
  size_t size = 0;
  int code = info_render_report(options, crashes, crash_count, mark,
                                mark_user_data, &text, &size);
  if (text == NULL || !info_write_all(out_fd, text, size)) {
    code = INFO_EXIT_PROBLEMS;
  }
  free(text);
  return code;
}

// Writes one framed record. Used from inside the loader, so it only
// formats into a stack buffer and calls write().
static void info_send(int fd, char kind, const char* data, size_t size) {
  char head[32];
  int n = snprintf(head, sizeof(head), "%c%zu:", kind, size);
  info_write_all(fd, head, (size_t)n);
  if (size > 0) info_write_all(fd, data, size);
}

static void info_child_mark(char kind, const char* path, void* user_data) {
  int fd = *(const int*)user_data;
  info_send(fd, kind, path, path != NULL ? strlen(path) : 0);
}

// The child: probe, render, send the output, exit with the report's code.
// It never returns and never runs atexit handlers or plugin unloads.
static void info_child(const info_run_options_t* options,
                       const info_crash_t* crashes, size_t crash_count,
                       int fd) {
  // A plugin that prints to stdout must not corrupt our output.
  dup2(STDERR_FILENO, STDOUT_FILENO);
  char* text = NULL;
  size_t size = 0;
  int code = info_render_report(options, crashes, crash_count, info_child_mark,
                                &fd, &text, &size);
  if (text == NULL) _exit(INFO_EXIT_PROBLEMS);
  info_send(fd, 'O', text, size);
  _exit(code);
}

// What the parent learned from one child.
typedef struct info_child_result {
  char* buffer;  // raw bytes received
  size_t size;
  size_t parsed;       // bytes of `buffer` consumed as records
  char last_kind;      // kind of the last marker, 0 if none
  char* last_path;     // its path (owned), NULL for none
  const char* output;  // the 'O' payload once complete
  size_t output_size;
  bool timed_out;
  int wstatus;
} info_child_result_t;

// Consumes complete records from the buffer. Returns true when progress
// (a new record) was seen.
static bool info_parse_records(info_child_result_t* r) {
  bool progress = false;
  while (r->output == NULL && r->parsed < r->size) {
    const char* p = r->buffer + r->parsed;
    const char* end = r->buffer + r->size;
    const char* colon = memchr(p, ':', (size_t)(end - p));
    if (colon == NULL) break;
    char* num_end = NULL;
    unsigned long long len = strtoull(p + 1, &num_end, 10);
    if (num_end != colon || len > (size_t)(end - colon - 1)) break;
    const char* payload = colon + 1;
    if (p[0] == 'O') {
      r->output = payload;
      r->output_size = (size_t)len;
    } else {
      free(r->last_path);
      r->last_kind = p[0];
      r->last_path = len > 0 ? strndup(payload, (size_t)len) : NULL;
    }
    r->parsed = (size_t)(payload + len - r->buffer);
    progress = true;
  }
  return progress;
}

static double info_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

// Reads the child's records until EOF, the complete output, or no progress
// for `timeout_s`; then reaps the child (killing it on a timeout).
static void info_watch_child(pid_t pid, int fd, double timeout_s,
                             info_child_result_t* r) {
  size_t capacity = 0;
  double deadline = info_now() + timeout_s;
  while (r->output == NULL) {
    int wait_ms = -1;
    if (timeout_s > 0) {
      double left = deadline - info_now();
      wait_ms = left <= 0 ? 0 : (int)(left * 1000.0) + 1;
    }
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int n = poll(&pfd, 1, wait_ms);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      // No progress in time. The child may already be gone while a
      // descendant holds the pipe open; only then is it not a hang.
      if (waitpid(pid, &r->wstatus, WNOHANG) == pid) return;
      r->timed_out = true;
      kill(pid, SIGKILL);
      break;
    }
    if (n < 0) break;
    if (r->size + 4096 > capacity) {
      size_t grown = capacity == 0 ? 16384 : capacity * 2;
      char* b = realloc(r->buffer, grown);
      if (b == NULL) break;
      r->buffer = b;
      capacity = grown;
    }
    ssize_t got = read(fd, r->buffer + r->size, capacity - r->size);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // EOF: the child exited or died
    r->size += (size_t)got;
    if (info_parse_records(r)) deadline = info_now() + timeout_s;
  }
  while (waitpid(pid, &r->wstatus, 0) < 0 && errno == EINTR) {
  }
}

// "SIGSEGV" for the usual signals, else strsignal()'s description.
static const char* info_signal_name(int sig) {
  const char* name = tool_signal_name(sig);
  if (name == NULL) name = strsignal(sig);
  return name != NULL ? name : "unknown signal";
}

// Describes how the child ended, for messages.
static void info_describe_end(const info_child_result_t* r, double timeout_s,
                              char* buf, size_t size) {
  if (r->timed_out) {
    snprintf(buf, size, "no progress for %g s, killed", timeout_s);
  } else if (WIFSIGNALED(r->wstatus)) {
    int sig = WTERMSIG(r->wstatus);
    snprintf(buf, size, "signal %d, %s", sig, info_signal_name(sig));
  } else if (WIFEXITED(r->wstatus)) {
    snprintf(buf, size, "exited with status %d", WEXITSTATUS(r->wstatus));
  } else {
    snprintf(buf, size, "wait status %#x", (unsigned)r->wstatus);
  }
}

// The crash list the parent builds across rounds.
typedef struct info_crash_list {
  info_crash_t items[INFO_MAX_ROUNDS];
  size_t count;
} info_crash_list_t;

// Adds the plugin the last marker names. Returns false if the failure
// cannot be pinned on a plugin not already blamed.
static bool info_blame(info_crash_list_t* list, const info_child_result_t* r,
                       double timeout_s) {
  if (r->last_path == NULL || r->last_kind == INFO_MARK_NONE ||
      list->count == INFO_MAX_ROUNDS) {
    return false;
  }
  char* real = realpath(r->last_path, NULL);
  if (real == NULL) real = strdup(r->last_path);
  if (real == NULL) return false;
  for (size_t i = 0; i < list->count; ++i) {
    if (strcmp(list->items[i].path, real) == 0) {
      free(real);
      return false;
    }
  }
  info_crash_t* c = &list->items[list->count++];
  c->path = real;
  c->state = r->timed_out ? INFO_STATE_TIMED_OUT : INFO_STATE_CRASHED;
  c->stage = r->last_kind == INFO_MARK_DEVICES ? ACCEL_PLUGIN_STAGE_INITIALISED
                                               : ACCEL_PLUGIN_STAGE_FOUND;
  char how[96];
  info_describe_end(r, timeout_s, how, sizeof(how));
  snprintf(c->message, sizeof(c->message), "%s while being probed (%s)",
           r->timed_out              ? "timed out"
           : WIFSIGNALED(r->wstatus) ? "crashed"
                                     : "exited",
           how);
  return true;
}

// When nothing better can be done: a report made of the crash list and
// `problem`, printed by the parent, which never loaded a plugin.
static int info_report_fallback(const info_run_options_t* options,
                                const info_crash_list_t* list,
                                const char* problem) {
  info_report_t report;
  memset(&report, 0, sizeof(report));
  info_plugin_t plugins[INFO_MAX_ROUNDS];
  memset(plugins, 0, sizeof(plugins));
  for (size_t i = 0; i < list->count; ++i) {
    const info_crash_t* c = &list->items[i];
    info_plugin_t* p = &plugins[i];
    p->report.struct_size = sizeof(p->report);
    p->report.path = c->path;
    p->report.source = "";
    p->report.name = "";
    p->report.version = "";
    p->report.message = c->message;
    p->state = c->state;
    p->stage = c->stage;
    p->status = ACCEL_ERROR_INTERNAL;
    p->message = c->message;
    info_report_add_error(&report, c->path, true, "%s", c->message);
  }
  report.plugins = list->count > 0 ? plugins : NULL;
  report.plugin_count = list->count;
  report.backend_env = info_backend_env();
  report.select_status = ACCEL_ERROR_INTERNAL;
  report.select_error = strdup("not queried: probing failed");
  info_report_add_error(&report, NULL, false, "%s", problem);
  if (options->json) {
    info_render_json(&report, stdout);
  } else {
    info_render_text(&report, &options->text, stdout);
  }
  fflush(stdout);
  report.plugins = NULL;  // on the stack
  info_report_deinit(&report);
  return INFO_EXIT_PROBLEMS;
}

int info_run_isolated(const info_run_options_t* options) {
  info_crash_list_t list = {.count = 0};
  int code = INFO_EXIT_PROBLEMS;
  char problem[512] = "";
  fflush(NULL);  // nothing buffered may be written twice
  for (int round = 0; round < INFO_MAX_ROUNDS; ++round) {
    int fds[2];
    if (pipe(fds) != 0) {
      snprintf(problem, sizeof(problem), "pipe: %s", strerror(errno));
      break;
    }
    pid_t pid = fork();
    if (pid < 0) {
      snprintf(problem, sizeof(problem), "fork: %s", strerror(errno));
      close(fds[0]);
      close(fds[1]);
      break;
    }
    if (pid == 0) {
      close(fds[0]);
      // Keep the pipe from leaking into anything a plugin might exec.
      fcntl(fds[1], F_SETFD, FD_CLOEXEC);
      info_child(options, list.items, list.count, fds[1]);
    }
    close(fds[1]);
    info_child_result_t r;
    memset(&r, 0, sizeof(r));
    info_watch_child(pid, fds[0], options->timeout_s, &r);
    close(fds[0]);
    bool done = false;
    if (r.output != NULL && WIFEXITED(r.wstatus)) {
      info_write_all(STDOUT_FILENO, r.output, r.output_size);
      code = WEXITSTATUS(r.wstatus);
      done = true;
    } else if (!info_blame(&list, &r, options->timeout_s)) {
      char how[96];
      info_describe_end(&r, options->timeout_s, how, sizeof(how));
      snprintf(problem, sizeof(problem),
               "the probing process failed outside any plugin probe (%s)", how);
      done = true;
    }
    free(r.last_path);
    free(r.buffer);
    if (done) break;
  }
  if (problem[0] == '\0' && code == INFO_EXIT_PROBLEMS &&
      list.count == INFO_MAX_ROUNDS) {
    snprintf(problem, sizeof(problem), "gave up after %d probing rounds",
             INFO_MAX_ROUNDS);
  }
  if (problem[0] != '\0') code = info_report_fallback(options, &list, problem);
  for (size_t i = 0; i < list.count; ++i) free(list.items[i].path);
  return code;
}
