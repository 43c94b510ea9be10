// SPDX-License-Identifier: MIT
//
// accel-bench: measures accel against the library or call it wraps, in the
// same process and run (see docs/performance.md). This file parses the
// command line, opens the device, runs the wanted suites and hands the
// results to a renderer.
#include <accel/plugin.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cuda_raw.h"
#include "opencl_raw.h"
#include "options.h"

static const char bench_usage[] =
    "Usage: accel-bench [OPTIONS]\n"
    "\n"
    "Measures accel against its baseline (the plugin called directly,\n"
    "memcpy, the vendor library) in one run, as medians of interleaved\n"
    "trials, and prints the ratio and the budget of each result.\n"
    "\n"
    "Options:\n"
    "  --full             every size and more trials (copies up to 1 GiB,\n"
    "                     GEMM up to 4096^3 on CPUs, 8192^3 elsewhere)\n"
    "  --smoke            a few tiny cases with short trials (for tests)\n"
    "  --filter LIST      run only cases whose 'suite/case/size' matches one\n"
    "                     of the comma-separated extended regexes (an\n"
    "                     invalid regex matches as a plain substring);\n"
    "                     may be repeated\n"
    "  --device URI       device to measure, e.g. cpu:0 or cuda:1 (default:\n"
    "                     the one ACCEL_BACKEND selects)\n"
    "  --json             print one JSON document instead of the table\n"
    "  --plot FILE.svg    also draw copy bandwidth and GEMM throughput\n"
    "                     against size into FILE.svg\n"
    "  --list             list the suites and cases, then exit\n"
    "  -h, --help         show this help and exit\n"
    "  --version          show the accel version and exit\n"
    "\n"
    "Long options may be shortened while unambiguous (--smo), and a value\n"
    "may follow '=' as well as a space (--device=cpu:0).\n"
    "\n"
    "Without --full or --smoke the quick suite runs (under a minute on a\n"
    "small CPU machine). Budgets are reported, never enforced.\n"
    "\n"
    "Exit status:\n"
    "  0  every selected benchmark ran (whatever the numbers)\n"
    "  1  a benchmark, the device or an output file failed\n"
    "  2  usage error\n";

typedef struct bench_args {
  bench_mode_t mode;
  const char* device;
  const char* plot;
  bool json;
  bool list;
  bool help;
  bool version;
  const char* filters[64];  // comma lists as given
  size_t filter_lists;
} bench_args_t;

static int bench_usage_error(const char* message, const char* arg) {
  fprintf(stderr, "accel-bench: %s%s%s\n", message, arg != NULL ? ": " : "",
          arg != NULL ? arg : "");
  fprintf(stderr, "Try 'accel-bench --help'.\n");
  return BENCH_EXIT_USAGE;
}

// Long-only options get codes past any character.
enum {
  BENCH_OPT_FULL = 256,
  BENCH_OPT_SMOKE,
  BENCH_OPT_FILTER,
  BENCH_OPT_DEVICE,
  BENCH_OPT_JSON,
  BENCH_OPT_PLOT,
  BENCH_OPT_LIST,
  BENCH_OPT_VERSION,
};

static const struct option bench_options[] = {
    {"full", no_argument, NULL, BENCH_OPT_FULL},
    {"smoke", no_argument, NULL, BENCH_OPT_SMOKE},
    {"filter", required_argument, NULL, BENCH_OPT_FILTER},
    {"device", required_argument, NULL, BENCH_OPT_DEVICE},
    {"json", no_argument, NULL, BENCH_OPT_JSON},
    {"plot", required_argument, NULL, BENCH_OPT_PLOT},
    {"list", no_argument, NULL, BENCH_OPT_LIST},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, BENCH_OPT_VERSION},
    {NULL, 0, NULL, 0},
};

// Parses argv into `args`; returns -1 on success or an exit code.
static int bench_parse(int argc, char** argv, bench_args_t* args) {
  bool full = false, smoke = false;
  opterr = 0;  // the messages below name the option
  int c;
  int index = -1;
  while ((c = getopt_long(argc, argv, ":h", bench_options, &index)) != -1) {
    // An empty value ("--device=", "--plot ''") is a usage error for every
    // option that takes one.
    if (index >= 0 && bench_options[index].has_arg && optarg[0] == '\0') {
      char option[64];
      snprintf(option, sizeof(option), "--%s", bench_options[index].name);
      return bench_usage_error("empty value for", option);
    }
    index = -1;
    switch (c) {
      case BENCH_OPT_FULL:
        full = true;
        break;
      case BENCH_OPT_SMOKE:
        smoke = true;
        break;
      case BENCH_OPT_FILTER:
        if (args->filter_lists == sizeof(args->filters) / sizeof(char*)) {
          return bench_usage_error("too many --filter options", NULL);
        }
        args->filters[args->filter_lists++] = optarg;
        break;
      case BENCH_OPT_DEVICE:
        args->device = optarg;
        break;
      case BENCH_OPT_JSON:
        args->json = true;
        break;
      case BENCH_OPT_PLOT:
        args->plot = optarg;
        break;
      case BENCH_OPT_LIST:
        args->list = true;
        break;
      case 'h':
        args->help = true;
        break;
      case BENCH_OPT_VERSION:
        args->version = true;
        break;
      default: {  // '?' or ':'
        tool_option_error_t e;
        tool_option_error(c, argv, bench_options, &e);
        return bench_usage_error(e.problem, e.option);
      }
    }
  }
  if (optind < argc) {
    return bench_usage_error("unexpected argument", argv[optind]);
  }
  if (full && smoke) {
    return bench_usage_error("--full and --smoke exclude each other", NULL);
  }
  args->mode = full    ? BENCH_MODE_FULL
               : smoke ? BENCH_MODE_SMOKE
                       : BENCH_MODE_QUICK;
  return -1;
}

// Compiles the --filter lists into ctx->filters; false on out of memory.
static bool bench_compile_filters(const bench_args_t* args, bench_ctx_t* ctx) {
  size_t count = 0;
  for (size_t i = 0; i < args->filter_lists; ++i) {
    count++;
    for (const char* p = args->filters[i]; *p; ++p) count += *p == ',';
  }
  if (count == 0) return true;
  ctx->filters = calloc(count, sizeof(*ctx->filters));
  if (ctx->filters == NULL) return false;
  for (size_t i = 0; i < args->filter_lists; ++i) {
    const char* p = args->filters[i];
    while (true) {
      size_t n = strcspn(p, ",");
      char pattern[512];
      char quoted[1024];
      snprintf(pattern, sizeof(pattern), "%.*s", (int)n, p);
      regex_t* re = &ctx->filters[ctx->filter_count];
      if (pattern[0] != '\0') {
        if (regcomp(re, pattern, REG_EXTENDED | REG_NOSUB) != 0) {
          // Not a valid regex: match it as text, every character quoted.
          size_t q = 0;
          for (const char* c = pattern; *c && q + 3 < sizeof(quoted); ++c) {
            if (strchr(".[]{}()\\*+?|^$", *c) != NULL) quoted[q++] = '\\';
            quoted[q++] = *c;
          }
          quoted[q] = '\0';
          if (regcomp(re, quoted, REG_EXTENDED | REG_NOSUB) != 0) return false;
        }
        ctx->filter_count++;
      }
      if (p[n] == '\0') break;
      p += n + 1;
    }
  }
  return true;
}

static void bench_list(FILE* out) {
  fputs("Suites (quick sizes; --full sizes):\n", out);
  for (size_t i = 0; bench_suites[i] != NULL; ++i) {
    const bench_suite_t* s = bench_suites[i];
    fprintf(out, "  %-12s %s\n", s->name, s->summary);
    if (s->pending != NULL) fprintf(out, "  %-12s %s\n", "", s->pending);
    fprintf(out, "  %-12s cases:", "");
    for (size_t c = 0; s->cases[c] != NULL; ++c) {
      fprintf(out, " %s", s->cases[c]);
    }
    fprintf(out, "\n  %-12s sizes: %s; %s\n", "", s->sizes_quick,
            s->sizes_full);
  }
  // Whether the raw CUDA baselines (cuda_raw.c) can run here: this opens
  // libcuda and device 0, as `--device cuda:0` would.
  char why[256];
  bench_cuda_t* cu = bench_cuda_open(0, why, sizeof(why));
  fprintf(out, "Raw CUDA baselines (cuda:0): %s%s\n",
          cu != NULL ? "available" : "not available: ", cu != NULL ? "" : why);
  bench_cuda_close(cu);
}

// The first "model name" (x86) or "Processor"/"cpu model" line of
// /proc/cpuinfo, or "unknown".
static void bench_cpu_model(char* buf, size_t size) {
  snprintf(buf, size, "unknown");
  FILE* f = fopen("/proc/cpuinfo", "r");
  if (f == NULL) return;
  char line[512];
  while (fgets(line, sizeof(line), f) != NULL) {
    if (strncmp(line, "model name", 10) != 0 &&
        strncmp(line, "Processor", 9) != 0 &&
        strncmp(line, "cpu model", 9) != 0) {
      continue;
    }
    const char* colon = strchr(line, ':');
    if (colon == NULL) continue;
    colon++;
    while (*colon == ' ' || *colon == '\t') colon++;
    snprintf(buf, size, "%.*s", (int)strcspn(colon, "\n"), colon);
    break;
  }
  fclose(f);
}

// The running executable and its directory (where accel-info is).
static void bench_exe_path(const char* argv0, char* path, char* dir,
                           size_t size) {
  ssize_t n = readlink("/proc/self/exe", path, size - 1);
  if (n > 0) {
    path[n] = '\0';
  } else {
    snprintf(path, size, "%s", argv0);
  }
  snprintf(dir, size, "%s", path);
  char* slash = strrchr(dir, '/');
  if (slash != NULL) {
    *slash = '\0';
  } else {
    snprintf(dir, size, ".");
  }
}

// Opens the device; returns -1 or an exit code after printing why.
static int bench_open_device(const bench_args_t* args, bench_ctx_t* ctx) {
  accel_status_t s = args->device != NULL
                         ? accel_device_open(args->device, &ctx->device)
                         : accel_device_default(&ctx->device);
  if (s == ACCEL_OK) {
    memset(&ctx->info, 0, sizeof(ctx->info));
    ctx->info.struct_size = sizeof(ctx->info);
    s = accel_device_query_info(ctx->device, &ctx->info);
  }
  if (s == ACCEL_OK) return -1;
  fprintf(stderr, "accel-bench: device %s: %s: %s\n",
          args->device != NULL ? args->device : "(default)",
          accel_status_string(s), accel_last_error());
  // A malformed URI is the user's mistake; a missing device is not.
  return args->device != NULL && s == ACCEL_ERROR_INVALID_ARGUMENT
             ? BENCH_EXIT_USAGE
             : BENCH_EXIT_FAILED;
}

static void bench_plan_for(bench_mode_t mode, bench_plan_t* plan) {
  switch (mode) {
    case BENCH_MODE_FULL:
      *plan = (bench_plan_t){
          .trial_ns = 5e6, .trials = 21, .min_trials = 5, .case_ns = 1e9};
      break;
    case BENCH_MODE_SMOKE:
      *plan = (bench_plan_t){
          .trial_ns = 5e4, .trials = 3, .min_trials = 3, .case_ns = 1e7};
      break;
    case BENCH_MODE_QUICK:
      *plan = (bench_plan_t){
          .trial_ns = 4e6, .trials = 15, .min_trials = 5, .case_ns = 2.5e8};
      break;
  }
}

// Runs every suite and renders; returns the exit code.
static int bench_run(const bench_args_t* args, bench_ctx_t* ctx,
                     bench_run_info_t* run) {
  for (size_t i = 0; bench_suites[i] != NULL; ++i) {
    if (bench_suites[i]->run != NULL) bench_suites[i]->run(ctx);
  }
  bench_direct_close(ctx);
  bench_cuda_release(ctx);
  bench_ocl_release(ctx);
  bench_progress(ctx, NULL, NULL);
  // Again, for what the suites loaded: the CPU plugin names its BLAS in
  // `features` only after the first GEMM. Kept as it was on failure.
  accel_device_info_t after;
  memset(&after, 0, sizeof(after));
  after.struct_size = sizeof(after);
  if (accel_device_query_info(ctx->device, &after) == ACCEL_OK) {
    ctx->info = after;
  }
  if (args->json) {
    bench_render_json(ctx, run, stdout);
  } else {
    bench_render_text(ctx, run, stdout);
  }
  int code = ctx->failures > 0 ? BENCH_EXIT_FAILED : BENCH_EXIT_OK;
  if (args->plot != NULL && !bench_render_svg(ctx, run, args->plot)) {
    fprintf(stderr, "accel-bench: cannot write %s\n", args->plot);
    code = BENCH_EXIT_FAILED;
  }
  if (fflush(stdout) != 0) code = BENCH_EXIT_FAILED;
  return code;
}

// The GEMM suite calls several libraries in turn (accel's engine and
// OpenBLAS, BLIS and oneDNN directly), interleaved. After a call their
// idle threads keep the CPUs: libgomp's spin before sleeping (oneDNN,
// BLIS's OpenMP build), OpenBLAS's yield loop for 2^28 cycles (about 0.1
// s). Whatever runs next then shares the cores with them: on 2 vCPUs,
// 30% of the run went to sched_yield and 16% to libgomp's spin, and
// medians swung by 2x. A program using one engine never sees this, so
// the bench makes idle threads sleep at once (passive OpenMP, the
// shortest OpenBLAS timeout), the same for accel's side and the direct
// calls, before any of those libraries is loaded. A value the user set is
// kept. Writes what was set and what was kept into `out`.
static void bench_quiet_spinners(char* out, size_t size) {
  static const char* const vars[][2] = {{"OMP_WAIT_POLICY", "PASSIVE"},
                                        {"OPENBLAS_THREAD_TIMEOUT", "4"}};
  out[0] = '\0';
  for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
    const char* had = getenv(vars[i][0]);
    bool set = had == NULL && setenv(vars[i][0], vars[i][1], 0) == 0;
    size_t used = strlen(out);
    snprintf(out + used, size - used, "%s%s=%s (%s)", used ? ", " : "",
             vars[i][0], set ? vars[i][1] : (had ? had : "unset"),
             set ? "set by accel-bench" : "the user's");
  }
}

int main(int argc, char** argv) {
  // Before anything else, so that the helper stays small (suite_startup.c).
  if (argc >= 2 && strcmp(argv[1], BENCH_STARTUP_HELPER_FLAG) == 0) {
    return bench_startup_helper(argc - 2, argv + 2);
  }
  bench_args_t args;
  memset(&args, 0, sizeof(args));
  int code = bench_parse(argc, argv, &args);
  if (code >= 0) return code;
  if (args.help) {
    fputs(bench_usage, stdout);
    return BENCH_EXIT_OK;
  }
  if (args.version) {
    printf("accel-bench %s (plugin ABI %u)\n", accel_version_string(),
           (unsigned)ACCEL_PLUGIN_ABI_VERSION);
    return BENCH_EXIT_OK;
  }
  if (args.list) {
    bench_list(stdout);
    return BENCH_EXIT_OK;
  }

  char spin_env[160];
  bench_quiet_spinners(spin_env, sizeof(spin_env));
  bench_ctx_t ctx;
  memset(&ctx, 0, sizeof(ctx));
  ctx.mode = args.mode;
  bench_plan_for(args.mode, &ctx.plan);
  ctx.progress = isatty(STDERR_FILENO);
  char exe_path[4096], exe_dir[4096];
  bench_exe_path(argv[0], exe_path, exe_dir, sizeof(exe_path));
  ctx.exe_path = exe_path;
  ctx.exe_dir = exe_dir;

  char cpu[256], date[32] = "unknown";
  bench_cpu_model(cpu, sizeof(cpu));
  struct utsname uts;
  time_t now = time(NULL);
  struct tm tm;
  if (gmtime_r(&now, &tm) != NULL) {
    strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", &tm);
  }
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  static const char* const modes[] = {"quick", "full", "smoke"};
  bench_run_info_t run = {
      .date = date,
      .cpu_model = cpu,
      .cpu_cores = cores > 0 ? (uint32_t)cores : 0,
      .kernel = uname(&uts) == 0 ? uts.release : "unknown",
      .mode = modes[args.mode],
      .argc = argc,
      .argv = argv,
      .spin_env = spin_env,
  };

  if (!bench_compile_filters(&args, &ctx)) {
    fprintf(stderr, "accel-bench: out of memory\n");
    code = BENCH_EXIT_FAILED;
  } else {
    code = bench_open_device(&args, &ctx);
    if (code < 0) code = bench_run(&args, &ctx, &run);
  }
  for (size_t i = 0; i < ctx.filter_count; ++i) regfree(&ctx.filters[i]);
  free(ctx.filters);
  free(ctx.results);
  accel_device_release(ctx.device);
  accel_shutdown();
  return code;
}
