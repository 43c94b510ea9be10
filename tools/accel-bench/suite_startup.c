// SPDX-License-Identifier: MIT
//
// startup: wall time and peak memory of accel-info as a child process,
// with whatever plugins its installation has, against /bin/true spawned
// the same way, so the cost of fork/exec and of the dynamic loader shows
// as the baseline. The budgets (architecture "Budgets": <= 20 ms, <= 10 MB on a
// machine with no GPU) are printed for information only: the figure
// depends on the machine far more than on accel.
#define _DEFAULT_SOURCE  // wait4() and ru_maxrss are BSD, not POSIX
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define BENCH_STARTUP_BUDGET_MS 20.0
#define BENCH_STARTUP_BUDGET_MB 10.0
#define BENCH_TRUE_PATH "/bin/true"

static const char* const bench_startup_cases[] = {"accel-info",
                                                  "accel-info_json", NULL};

// Why a helper process: ru_maxrss is the peak of the process over its
// whole life, exec included, and a child made by fork() starts with a copy
// of its parent's resident anonymous pages (vfork() children even report
// the parent's peak). Spawned from accel-bench, which has just moved
// gigabytes, every child would report accel-bench's size. So accel-bench
// starts a fresh copy of itself (bench_startup_helper) which, being small,
// forks and execs the program under test, times it from fork to wait4 and
// writes "<status> <ns> <maxrss KiB>" to its stdout for us to read.

int bench_startup_helper(int argc, char** argv) {
  if (argc < 1) return 2;
  int devnull = open("/dev/null", O_RDWR);
  if (devnull < 0) return 1;
  uint64_t start = bench_now_ns();
  pid_t pid = fork();
  if (pid == 0) {
    dup2(devnull, STDIN_FILENO);
    dup2(devnull, STDOUT_FILENO);
    dup2(devnull, STDERR_FILENO);
    execv(argv[0], argv);
    _exit(127);
  }
  if (pid < 0) return 1;
  int status = 0;
  struct rusage usage;
  memset(&usage, 0, sizeof(usage));
  pid_t got;
  do {
    got = wait4(pid, &status, 0, &usage);
  } while (got < 0 && errno == EINTR);
  uint64_t elapsed = bench_now_ns() - start;
  if (got < 0) return 1;
  // The exit status, or minus the signal that killed it.
  int code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  printf("%d %llu %ld\n", code, (unsigned long long)elapsed,
         (long)usage.ru_maxrss);
  return fflush(stdout) == 0 ? 0 : 1;
}

// Runs `argv` through the helper (`self` is accel-bench's own path) and
// returns its wall time and peak resident memory (of it and any children
// it waited for).
static bool bench_spawn(const char* self, char* const* argv, double* out_ms,
                        double* out_mb) {
  char* helper_argv[8];
  size_t n = 0;
  static char helper_flag[] = BENCH_STARTUP_HELPER_FLAG;
  helper_argv[n++] = (char*)self;
  helper_argv[n++] = helper_flag;
  for (size_t i = 0; argv[i] != NULL && n + 1 < 8; ++i) {
    helper_argv[n++] = argv[i];
  }
  helper_argv[n] = NULL;
  int fds[2];
  if (pipe(fds) != 0) return bench_fail("pipe: %s", strerror(errno));
  fflush(NULL);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    execv(self, helper_argv);
    _exit(127);
  }
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return bench_fail("fork: %s", strerror(errno));
  }
  char line[128] = "";
  FILE* in = fdopen(fds[0], "r");
  bool got_line = in != NULL && fgets(line, sizeof(line), in) != NULL;
  if (in != NULL) {
    fclose(in);
  } else {
    close(fds[0]);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  int code = 0;
  unsigned long long ns = 0;
  long maxrss = 0;
  if (!got_line || sscanf(line, "%d %llu %ld", &code, &ns, &maxrss) != 3) {
    return bench_fail("the spawn helper (%s %s) failed", self,
                      BENCH_STARTUP_HELPER_FLAG);
  }
  // accel-info exits 1 (no device) or 3 (a plugin failed) on machines
  // where that is true; that is still a start-up to measure. 127 is a
  // failed exec, 2 a usage error, a negative code a crash.
  if (code < 0) return bench_fail("%s died by signal %d", argv[0], -code);
  if (code == 127 || code == 2) {
    return bench_fail("%s exited with %d", argv[0], code);
  }
  *out_ms = (double)ns / 1e6;
  *out_mb = (double)maxrss * 1024.0 / 1e6;  // Linux reports KiB
  return true;
}

// Measures `argv` and /bin/true alternately, `trials` times each, into a
// time result and a memory result.
static bool bench_startup_measure(const char* self, char* const* argv,
                                  uint32_t trials, bench_result_t* time,
                                  bench_result_t* memory) {
  static char true_path[] = BENCH_TRUE_PATH;
  char* true_argv[] = {true_path, NULL};
  double* s = malloc(4 * trials * sizeof(*s));
  if (s == NULL) return bench_fail("out of memory");
  double *ms = s, *mb = s + trials, *true_ms = s + 2 * trials,
         *true_mb = s + 3 * trials;
  // One unmeasured run of each warms the page cache and the loader.
  bool ok = bench_spawn(self, argv, &ms[0], &mb[0]) &&
            bench_spawn(self, true_argv, &true_ms[0], &true_mb[0]);
  for (uint32_t t = 0; t < trials && ok; ++t) {
    if (t % 2 == 0) {
      ok = bench_spawn(self, argv, &ms[t], &mb[t]) &&
           bench_spawn(self, true_argv, &true_ms[t], &true_mb[t]);
    } else {
      ok = bench_spawn(self, true_argv, &true_ms[t], &true_mb[t]) &&
           bench_spawn(self, argv, &ms[t], &mb[t]);
    }
  }
  if (ok) {
    bench_timing_from_samples(ms, trials, &time->accel);
    bench_timing_from_samples(true_ms, trials, &time->baseline);
    bench_timing_from_samples(mb, trials, &memory->accel);
    bench_timing_from_samples(true_mb, trials, &memory->baseline);
    time->has_baseline = memory->has_baseline = true;
  }
  free(s);
  return ok;
}

static void bench_startup_run(bench_ctx_t* ctx) {
  uint32_t trials = ctx->mode == BENCH_MODE_FULL    ? 21
                    : ctx->mode == BENCH_MODE_SMOKE ? 1
                                                    : 9;
  char info[4096];
  snprintf(info, sizeof(info), "%s/accel-info", ctx->exe_dir);
  for (size_t i = 0; bench_startup_cases[i] != NULL; ++i) {
    const char* name = bench_startup_cases[i];
    if (!bench_wanted(ctx, "startup", name)) continue;
    bench_result_t* time = bench_add(ctx, "startup", "%s", name);
    bench_result_t* memory =
        time ? bench_add(ctx, "startup", "%s", name) : NULL;
    if (memory == NULL) return;
    time = memory - 1;  // bench_add may have moved the array
    time->unit = "ms";
    time->budget_value = BENCH_STARTUP_BUDGET_MS;
    memory->unit = "MB";
    memory->budget_value = BENCH_STARTUP_BUDGET_MB;
    for (bench_result_t* r = time; r <= memory; ++r) {
      r->budget = BENCH_BUDGET_MAX_ABS;
      r->informational = true;
      snprintf(r->baseline_name, sizeof(r->baseline_name), BENCH_TRUE_PATH);
    }
    if (access(info, X_OK) != 0) {
      bench_result_fail(ctx, time, "accel-info not found beside accel-bench");
      bench_result_fail(ctx, memory, time->note);
      continue;
    }
    static char json_flag[] = "--json";
    char* argv[] = {info, i == 1 ? json_flag : NULL, NULL};
    bench_progress(ctx, "startup", name);
    if (!bench_startup_measure(ctx->exe_path, argv, trials, time, memory)) {
      bench_result_fail(ctx, time, NULL);
      bench_result_fail(ctx, memory, NULL);
    }
  }
}

const bench_suite_t bench_suite_startup = {
    .name = "startup",
    .summary =
        "accel-info (and --json) as a child process vs /bin/true "
        "(ms, peak MB; budget <= 20 ms, <= 10 MB, information only)",
    .cases = bench_startup_cases,
    .sizes_quick = "-",
    .sizes_full = "-",
    .run = bench_startup_run,
};
