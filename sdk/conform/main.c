// SPDX-License-Identifier: MIT
//
// accel-conform: runs the conformance suite against one plugin.
//
//   accel-conform --plugin ./libaccel-foo.so   a plugin file
//   accel-conform --backend foo                an installed backend
//
// Prints one line per check ("PASS  name  detail") and a closing
// "N passed, N failed, N skipped". Exit status: 0 all passed, 1 a check
// failed, 2 usage error, an invalid known-failures file, or the plugin
// cannot be loaded (with the load report's reason), 77 the plugin loads
// but has no usable device. Checks listed in the known-failures file
// (--known-failures FILE, or <plugin without extension>.conform-known next
// to the plugin) are reported XFAIL when they fail and XPASS (a failure)
// when they pass; see known.c. A crash is named on stderr before the
// process dies of the signal, and a check, the setup or the teardown that
// never ends is stopped (exit 1), named too: the check, or loading the
// plugin, or closing the devices and unloading it (crash.c).
// realpath() is XSI.
#define _XOPEN_SOURCE 700

#include <fnmatch.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conform.h"
#include "options.h"
#include "report.h"

#define CONFORM_EXIT_FAILED 1
#define CONFORM_EXIT_USAGE 2
#define CONFORM_EXIT_NO_DEVICE 77

typedef struct conform_args {
  const char* plugin;
  const char* backend;
  const char* reference;
  const char* filter;
  const char* kernel_dir;
  const char* known;
  bool no_known;
  uint32_t device;
  double timeout_s;
  double check_limit_s;  // 0: 10 x timeout_s + 60
  uint64_t seed;
  bool json;
  bool list;
  bool require_ops;
} conform_args_t;

static void conform_usage(FILE* out) {
  fprintf(out,
          "usage: accel-conform (--plugin PATH | --backend NAME) [options]\n"
          "  --plugin PATH      test the plugin file PATH\n"
          "  --backend NAME     test the installed backend NAME\n"
          "  --device INDEX     device index within the backend (0)\n"
          "  --reference PATH   CPU plugin used as reference for ops\n"
          "                     (default: the installed cpu plugin)\n"
          "  --filter PATTERN   run checks whose name contains PATTERN, or\n"
          "                     matches it as a glob if it has * ? [\n"
          "  --timeout SECONDS  limit for every wait (10)\n"
          "  --check-limit SECONDS  a check still running after this long\n"
          "                     stops the run as a failure (10 x timeout\n"
          "                     + 60)\n"
          "  --seed N           random seed for op inputs (1)\n"
          "  --kernel-dir DIR   where test kernels live\n"
          "  --require-ops      an unsupported built-in op is a failure\n"
          "                     (first-party plugins implement them all)\n"
          "  --known-failures FILE  checks expected to fail, with reasons\n"
          "                     (default: <plugin>.conform-known beside it)\n"
          "  --no-known-failures  ignore the plugin's known-failures file\n"
          "  --json             machine-readable output\n"
          "  --list             list the checks and exit\n"
          "exit: 0 passed, 1 failures (or XPASS), 2 usage, bad known-failures\n"
          "      file or plugin not loadable,\n"
          "      77 no usable device\n");
}

// Parses an unsigned decimal number of at most `max`: digits only (no
// sign, space or suffix), no overflow.
static bool conform_parse_unsigned(const char* s, uint64_t max,
                                   uint64_t* out) {
  if (*s < '0' || *s > '9') return false;
  uint64_t v = 0;
  for (; *s != '\0'; s++) {
    if (*s < '0' || *s > '9') return false;
    unsigned digit = (unsigned)(*s - '0');
    if (v > (max - digit) / 10) return false;
    v = v * 10 + digit;
  }
  *out = v;
  return true;
}

enum {
  CONFORM_OPT_PLUGIN = 256,
  CONFORM_OPT_BACKEND,
  CONFORM_OPT_DEVICE,
  CONFORM_OPT_REFERENCE,
  CONFORM_OPT_FILTER,
  CONFORM_OPT_TIMEOUT,
  CONFORM_OPT_CHECK_LIMIT,
  CONFORM_OPT_SEED,
  CONFORM_OPT_KERNEL_DIR,
  CONFORM_OPT_REQUIRE_OPS,
  CONFORM_OPT_KNOWN,
  CONFORM_OPT_NO_KNOWN,
  CONFORM_OPT_JSON,
  CONFORM_OPT_LIST,
};

static const struct option conform_options[] = {
    {"plugin", required_argument, NULL, CONFORM_OPT_PLUGIN},
    {"backend", required_argument, NULL, CONFORM_OPT_BACKEND},
    {"device", required_argument, NULL, CONFORM_OPT_DEVICE},
    {"reference", required_argument, NULL, CONFORM_OPT_REFERENCE},
    {"filter", required_argument, NULL, CONFORM_OPT_FILTER},
    {"timeout", required_argument, NULL, CONFORM_OPT_TIMEOUT},
    {"check-limit", required_argument, NULL, CONFORM_OPT_CHECK_LIMIT},
    {"seed", required_argument, NULL, CONFORM_OPT_SEED},
    {"kernel-dir", required_argument, NULL, CONFORM_OPT_KERNEL_DIR},
    {"require-ops", no_argument, NULL, CONFORM_OPT_REQUIRE_OPS},
    {"known-failures", required_argument, NULL, CONFORM_OPT_KNOWN},
    {"no-known-failures", no_argument, NULL, CONFORM_OPT_NO_KNOWN},
    {"json", no_argument, NULL, CONFORM_OPT_JSON},
    {"list", no_argument, NULL, CONFORM_OPT_LIST},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

// Reports a bad option value on stderr; returns false.
static bool conform_bad_value(const char* option, const char* value,
                              const char* want) {
  fprintf(stderr, "accel-conform: bad value for --%s: '%s' (%s)\n", option,
          value, want);
  return false;
}

static bool conform_parse(int argc, char** argv, conform_args_t* args) {
  args->timeout_s = 10.0;
  args->seed = 1;
  opterr = 0;  // the messages below name the option
  int c;
  int index = -1;
  while ((c = getopt_long(argc, argv, ":h", conform_options, &index)) != -1) {
    const char* name = index >= 0 ? conform_options[index].name : "";
    uint64_t number = 0;
    switch (c) {
      case CONFORM_OPT_PLUGIN:
        args->plugin = optarg;
        break;
      case CONFORM_OPT_BACKEND:
        args->backend = optarg;
        break;
      case CONFORM_OPT_DEVICE:
        if (!conform_parse_unsigned(optarg, UINT32_MAX, &number)) {
          return conform_bad_value(name, optarg, "a device index");
        }
        args->device = (uint32_t)number;
        break;
      case CONFORM_OPT_REFERENCE:
        args->reference = optarg;
        break;
      case CONFORM_OPT_FILTER:
        args->filter = optarg;
        break;
      case CONFORM_OPT_TIMEOUT:
        if (!tool_parse_seconds(optarg, &args->timeout_s)) {
          return conform_bad_value(name, optarg,
                                   "seconds, more than 0, at most a day");
        }
        break;
      case CONFORM_OPT_CHECK_LIMIT:
        if (!tool_parse_seconds(optarg, &args->check_limit_s)) {
          return conform_bad_value(name, optarg,
                                   "seconds, more than 0, at most a day");
        }
        break;
      case CONFORM_OPT_SEED:
        if (!conform_parse_unsigned(optarg, UINT64_MAX, &args->seed)) {
          return conform_bad_value(name, optarg,
                                   "an unsigned 64-bit decimal number");
        }
        break;
      case CONFORM_OPT_KERNEL_DIR:
        args->kernel_dir = optarg;
        break;
      case CONFORM_OPT_REQUIRE_OPS:
        args->require_ops = true;
        break;
      case CONFORM_OPT_KNOWN:
        args->known = optarg;
        break;
      case CONFORM_OPT_NO_KNOWN:
        args->no_known = true;
        break;
      case CONFORM_OPT_JSON:
        args->json = true;
        break;
      case CONFORM_OPT_LIST:
        args->list = true;
        break;
      case 'h':
        conform_usage(stdout);
        exit(0);
      default: {  // '?' or ':' (see the option string)
        tool_option_error_t error;
        tool_option_error(c, argv, conform_options, &error);
        fprintf(stderr, "accel-conform: %s: %s\n", error.problem,
                error.option);
        return false;
      }
    }
    index = -1;
  }
  if (optind < argc) {
    fprintf(stderr, "accel-conform: unexpected argument: %s\n", argv[optind]);
    return false;
  }
  if (!args->list && (args->plugin == NULL) == (args->backend == NULL)) {
    fprintf(stderr, "accel-conform: give exactly one of --plugin, --backend\n");
    return false;
  }
  return true;
}

static bool conform_selected(const conform_args_t* args, const char* name) {
  if (args->filter == NULL) return true;
  if (strpbrk(args->filter, "*?[") != NULL) {
    return fnmatch(args->filter, name, 0) == 0;
  }
  return strstr(name, args->filter) != NULL;
}

// Finds the load-report entry of the plugin under test: by real path for
// --plugin, by name (first initialised one) for --backend.
static bool conform_find_report(const conform_args_t* args,
                                const char* real_plugin,
                                accel_plugin_report_t* out) {
  size_t count = 0;
  if (accel_plugin_report_count(&count) != ACCEL_OK) return false;
  for (size_t i = 0; i < count; i++) {
    accel_plugin_report_t r = {.struct_size = sizeof(r)};
    if (accel_plugin_report_get(i, &r) != ACCEL_OK) continue;
    bool match = args->plugin != NULL
                     ? strcmp(r.path, real_plugin) == 0
                     : strcmp(r.name, args->backend) == 0 &&
                           r.stage == ACCEL_PLUGIN_STAGE_INITIALISED;
    if (match) {
      *out = r;
      return true;
    }
  }
  return false;
}

static const char* const conform_stage_names[] = {"found", "opened", "entry",
                                                  "negotiated", "initialised"};

// Loads the plugin and opens the devices. Returns an exit status other
// than 0 when the suite cannot run.
static int conform_setup(const conform_args_t* args, conform_ctx_t* ctx,
                         char* real_plugin, accel_plugin_report_t* report) {
  accel_options_t options;
  accel_options_init(&options);
  char path[2 * PATH_MAX + 2] = "";
  if (args->plugin != NULL) {
    if (realpath(args->plugin, real_plugin) == NULL) {
      fprintf(stderr, "accel-conform: cannot open %s\n", args->plugin);
      return CONFORM_EXIT_USAGE;
    }
    // The plugin first, so it shadows an installed one of the same name;
    // the install dir stays searched for the reference CPU plugin.
    snprintf(path, sizeof(path), "%s%s%s", real_plugin,
             args->reference ? ":" : "",
             args->reference ? args->reference : "");
    options.plugin_path = path;
    options.ignore_env_path = true;
  } else if (args->reference != NULL) {
    options.plugin_path = args->reference;
  }
  accel_status_t status = accel_init(&options);
  if (status != ACCEL_OK) {
    fprintf(stderr, "accel-conform: accel_init: %s: %s\n",
            accel_status_string(status), accel_last_error());
    return CONFORM_EXIT_USAGE;
  }
  if (!conform_find_report(args, real_plugin, report)) {
    fprintf(stderr, "accel-conform: %s %s was not loaded (see accel-info)\n",
            args->plugin ? "plugin" : "backend",
            args->plugin ? args->plugin : args->backend);
    return CONFORM_EXIT_USAGE;
  }
  if (report->status == ACCEL_ERROR_UNAVAILABLE ||
      (report->status == ACCEL_OK && report->device_count == 0)) {
    printf("accel-conform: %s: no usable device%s%s\n", report->path,
           report->message[0] ? ": " : "", report->message);
    return CONFORM_EXIT_NO_DEVICE;
  }
  if (report->status != ACCEL_OK) {
    fprintf(stderr, "accel-conform: %s cannot be loaded: stage %s, %s: %s\n",
            report->path,
            report->stage <= ACCEL_PLUGIN_STAGE_INITIALISED
                ? conform_stage_names[report->stage]
                : "?",
            accel_status_string(report->status), report->message);
    return CONFORM_EXIT_USAGE;
  }
  if (args->device >= report->device_count) {
    fprintf(stderr, "accel-conform: %s has %u device(s); no index %u\n",
            report->name, report->device_count, args->device);
    return CONFORM_EXIT_USAGE;
  }
  char uri[64];
  snprintf(uri, sizeof(uri), "%s:%u", report->name, args->device);
  status = accel_device_open(uri, &ctx->device);
  if (status != ACCEL_OK) {
    fprintf(stderr, "accel-conform: open %s: %s: %s\n", uri,
            accel_status_string(status), accel_last_error());
    return CONFORM_EXIT_NO_DEVICE;
  }
  ctx->info.struct_size = sizeof(ctx->info);
  accel_device_query_info(ctx->device, &ctx->info);  // checked by a check
  // The peer: the first other device this one can copy from directly, or
  // else the first other device that opens (peer access is per pair: an
  // OpenCL plugin can list devices of two platforms).
  for (uint32_t i = 0; i < report->device_count; i++) {
    accel_device_t* candidate = NULL;
    snprintf(uri, sizeof(uri), "%s:%u", report->name, i);
    if (i == args->device || accel_device_open(uri, &candidate) != ACCEL_OK) {
      continue;
    }
    bool can = false;
    if (accel_device_can_access_peer(ctx->device, candidate, &can) !=
        ACCEL_OK) {
      can = false;
    }
    if (ctx->peer == NULL || can) {
      if (ctx->peer != NULL) accel_device_release(ctx->peer);
      ctx->peer = candidate;
      if (can) break;
    } else {
      accel_device_release(candidate);
    }
  }
  if (strcmp(report->name, "cpu") != 0 &&
      accel_device_open("cpu:0", &ctx->reference) != ACCEL_OK) {
    ctx->reference = NULL;  // ops are then checked against the host only
  }
  return 0;
}

// Default kernel directory: share/accel/conform beside bin/, as installed,
// or the build tree's folder next to the binary.
static void conform_default_kernel_dir(char* out, size_t size) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  out[0] = '\0';
  if (n <= 0) return;
  exe[n] = '\0';
  char* slash = strrchr(exe, '/');
  if (slash == NULL) return;
  *slash = '\0';
  snprintf(out, size, "%s/../share/accel/conform", exe);
  if (access(out, R_OK) != 0) snprintf(out, size, "%s/conform", exe);
}

int main(int argc, char** argv) {
  conform_args_t args = {0};
  if (!conform_parse(argc, argv, &args)) {
    conform_usage(stderr);
    return CONFORM_EXIT_USAGE;
  }
  size_t total = conform_check_count();
  if (args.list) {
    for (size_t i = 0; i < total; i++) {
      const conform_check_t* c = conform_check_get(i);
      if (conform_selected(&args, c->name)) printf("%s\n", c->name);
    }
    return 0;
  }

  // Named from before the plugin loads: a plugin can crash or hang in
  // load, device_open or query_props as well as in a check. A check that
  // blocks past every wait's deadline, many times over, is stuck in the
  // plugin: 10 x --timeout + 60 s (160 s by default); the setup and the
  // teardown get as long.
  const double check_limit = args.check_limit_s > 0
                                 ? args.check_limit_s
                                 : 10.0 * args.timeout_s + 60.0;
  conform_crash_guard_install(check_limit);
  static conform_ctx_t ctx;  // large; static keeps it off the stack
  static char real_plugin[PATH_MAX];
  accel_plugin_report_t report = {0};
  int rc = conform_setup(&args, &ctx, real_plugin, &report);
  if (rc != 0) {
    conform_crash_guard_teardown();
    accel_shutdown();
    return rc;
  }
  conform_crash_guard_check(NULL, NULL);
  ctx.plugin_path = report.path;
  ctx.timeout_s = args.timeout_s;
  ctx.seed = args.seed;
  ctx.require_ops = args.require_ops;
  static char kernel_dir[PATH_MAX + 32];
  if (args.kernel_dir != NULL) {
    snprintf(kernel_dir, sizeof(kernel_dir), "%s", args.kernel_dir);
  } else {
    conform_default_kernel_dir(kernel_dir, sizeof(kernel_dir));
  }
  ctx.kernel_dir = kernel_dir;

  static conform_known_t known;
  static char known_path[PATH_MAX + 32];
  char known_error[512] = "";
  if (args.known != NULL) {
    snprintf(known_path, sizeof(known_path), "%s", args.known);
  } else if (!args.no_known) {
    conform_known_default_path(report.path, known_path, sizeof(known_path));
    if (access(known_path, F_OK) != 0) known_path[0] = '\0';
  }
  if (known_path[0] != '\0' &&
      !conform_known_load(known_path, &known, known_error,
                          sizeof(known_error))) {
    fprintf(stderr, "accel-conform: known failures: %s\n", known_error);
    conform_crash_guard_teardown();
    accel_device_release(ctx.reference);
    accel_device_release(ctx.peer);
    accel_device_release(ctx.device);
    accel_shutdown();
    return CONFORM_EXIT_USAGE;
  }

  if (args.json) {
    conform_json_begin(report.path, accel_device_uri(ctx.device),
                       ctx.reference ? accel_device_uri(ctx.reference)
                                     : "host");
  } else {
    printf("accel-conform: %s (%s %s) on %s, reference %s\n", report.path,
           report.name, report.version, accel_device_uri(ctx.device),
           ctx.reference ? accel_device_uri(ctx.reference) : "host");
    if (known.path[0] != '\0') {
      printf("accel-conform: %zu known failure(s) from %s\n", known.count,
             known.path);
    }
  }
  fflush(stdout);

  size_t counts[6] = {0};
  static conform_recap_t recap;
  bool first = true;
  for (size_t i = 0; i < total; i++) {
    const conform_check_t* check = conform_check_get(i);
    if (!conform_selected(&args, check->name)) continue;
    ctx.detail[0] = '\0';
    ctx.hung = false;
    char hang[640];
    conform_hang_report(hang, sizeof(hang), check->name, check_limit,
                        args.json, first, counts);
    conform_crash_guard_check(check->name, hang);
    conform_result_t result = check->fn(&ctx, check->arg);
    conform_release_tracked(&ctx);
    conform_crash_guard_check(NULL, NULL);
    if (result == CONFORM_UNSUPPORTED && args.require_ops &&
        strncmp(check->name, "ops.", 4) == 0) {
      char detail[sizeof(ctx.detail)];
      snprintf(detail, sizeof(detail), "%s", ctx.detail);
      result = conform_report(&ctx, CONFORM_FAIL, "required op: %s", detail);
    }
    const char* reason = conform_known_reason(&known, check->name);
    if (reason != NULL && result == CONFORM_FAIL) {
      char detail[sizeof(ctx.detail)];
      snprintf(detail, sizeof(detail), "%s", ctx.detail);
      result = conform_report(&ctx, CONFORM_XFAIL, "known (%.200s): %s", reason,
                              detail);
    } else if (reason != NULL && result == CONFORM_PASS) {
      result = conform_report(&ctx, CONFORM_XPASS,
                              "unexpectedly passed; listed as known failure: "
                              "%.200s",
                              reason);
    }
    counts[result]++;
    static char line[sizeof(ctx.detail) * 6 + 512];
    conform_format_result(line, sizeof(line), args.json, first, check->name,
                          result, ctx.detail);
    fputs(line, stdout);
    fflush(stdout);
    conform_recap_note(&recap, check->name, result, ctx.detail);
    first = false;
  }
  if (!args.json) conform_recap_write(&recap, stdout);
  char summary[256];
  conform_format_summary(summary, sizeof(summary), args.json, counts);
  fputs(summary, stdout);
  fflush(stdout);
  size_t failed = counts[CONFORM_FAIL] + counts[CONFORM_XPASS];
  rc = failed > 0 ? CONFORM_EXIT_FAILED : 0;
  if (ctx.tainted) {
    // Work that never completed still holds handles; shutting down would
    // wait for it forever. Leave without running accel's teardown.
    fflush(stderr);
    _exit(rc);
  }
  conform_crash_guard_teardown();
  accel_device_release(ctx.reference);
  accel_device_release(ctx.peer);
  accel_device_release(ctx.device);
  accel_shutdown();
  return rc;
}
