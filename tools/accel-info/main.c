// SPDX-License-Identifier: MIT
//
// accel-info: shows which plugins and devices this machine has, why a
// plugin did not load, and which device the environment selects.
// This file parses the command line and picks in-process or isolated
// probing (isolate.c); report.c collects, render_*.c print.
#include <accel/plugin.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "info.h"
#include "options.h"

static const char info_usage[] =
    "Usage: accel-info [OPTIONS]\n"
    "\n"
    "Lists the accel plugins and devices of this machine, why any plugin\n"
    "failed to load, and the device the environment selects.\n"
    "\n"
    "Options:\n"
    "  --json             print one JSON document (schema_version 1)\n"
    "  -v, --verbose      also show the plugin search path and where each\n"
    "                     plugin was found\n"
    "  --timeout SECONDS  give up on a plugin that makes no progress for\n"
    "                     this long while being probed (default 10)\n"
    "  --no-isolate       probe in this process; a crashing plugin then\n"
    "                     takes accel-info down with it\n"
    "  -h, --help         show this help and exit\n"
    "  --version          show the accel version and exit\n"
    "\n"
    "Long options may be shortened while unambiguous (--verb), and a value\n"
    "may follow '=' as well as a space (--timeout=5).\n"
    "\n"
    "Exit status:\n"
    "  0  at least one device, and no plugin failed\n"
    "  1  no usable device\n"
    "  2  usage error\n"
    "  3  devices found, but a plugin failed, crashed or timed out\n"
    "     (a plugin whose driver is missing is 'unavailable', not failed)\n"
    "\n"
    "Environment: ACCEL_PLUGIN_PATH, ACCEL_BACKEND, ACCEL_LOG (see\n"
    "docs/accel-info.md).\n";

// Reports a usage error on stderr (and, with --json, as a JSON document on
// stdout, which must always hold valid JSON) and returns exit code 2.
static int info_usage_error(const info_run_options_t* options,
                            const char* message, const char* arg) {
  fprintf(stderr, "accel-info: %s%s%s\n", message, arg != NULL ? ": " : "",
          arg != NULL ? arg : "");
  fprintf(stderr, "Try 'accel-info --help'.\n");
  if (options->json) {
    info_report_t report;
    memset(&report, 0, sizeof(report));
    report.backend_env = info_backend_env();
    report.select_status = ACCEL_ERROR_INVALID_ARGUMENT;
    report.select_error = strdup("not queried: usage error");
    info_report_add_error(&report, NULL, false, "usage: %s%s%s", message,
                          arg != NULL ? ": " : "", arg != NULL ? arg : "");
    info_render_json(&report, stdout);
    info_report_deinit(&report);
  }
  return INFO_EXIT_USAGE;
}

// The command line, as parsed.
typedef struct info_args {
  info_run_options_t run;
  bool isolate;
  bool help;
  bool version;
  const char* problem;  // the first usage error, NULL if none
  char culprit[256];    // what it is about ("" if nothing)
} info_args_t;

// Long-only options get codes past any character.
enum {
  INFO_OPT_JSON = 256,
  INFO_OPT_TIMEOUT,
  INFO_OPT_NO_ISOLATE,
  INFO_OPT_VERSION,
};

static const struct option info_options[] = {
    {"json", no_argument, NULL, INFO_OPT_JSON},
    {"verbose", no_argument, NULL, 'v'},
    {"timeout", required_argument, NULL, INFO_OPT_TIMEOUT},
    {"no-isolate", no_argument, NULL, INFO_OPT_NO_ISOLATE},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, INFO_OPT_VERSION},
    {NULL, 0, NULL, 0},
};

// Records the first usage error of the command line in `args`.
static void info_args_fail(info_args_t* args, const char* problem,
                           const char* culprit) {
  if (args->problem != NULL) return;
  args->problem = problem;
  snprintf(args->culprit, sizeof(args->culprit), "%s", culprit);
}

// Parses the command line into `args`. It reads on past a usage error, so
// that the error honours a --json given after it.
static void info_parse(int argc, char** argv, info_args_t* args) {
  memset(args, 0, sizeof(*args));
  args->run.timeout_s = 10.0;
  args->isolate = true;
  opterr = 0;  // the messages name the option, on stderr and in the JSON
  int c;
  while ((c = getopt_long(argc, argv, ":vh", info_options, NULL)) != -1) {
    switch (c) {
      case INFO_OPT_JSON:
        args->run.json = true;
        break;
      case 'v':
        args->run.text.verbose = true;
        break;
      case INFO_OPT_TIMEOUT:
        if (!tool_parse_seconds(optarg, &args->run.timeout_s)) {
          info_args_fail(
              args, "invalid --timeout (want seconds, > 0, <= 86400)", optarg);
        }
        break;
      case INFO_OPT_NO_ISOLATE:
        args->isolate = false;
        break;
      case 'h':
        args->help = true;
        break;
      case INFO_OPT_VERSION:
        args->version = true;
        break;
      default: {  // '?' or ':'
        tool_option_error_t e;
        tool_option_error(c, argv, info_options, &e);
        info_args_fail(args, e.problem, e.option);
        break;
      }
    }
  }
  if (optind < argc) info_args_fail(args, "unexpected argument", argv[optind]);
}

// Color only for a terminal, and never when NO_COLOR is set or TERM=dumb.
static bool info_want_color(void) {
  const char* term = getenv("TERM");
  const char* no_color = getenv("NO_COLOR");
  return isatty(STDOUT_FILENO) && (no_color == NULL || no_color[0] == '\0') &&
         term != NULL && strcmp(term, "dumb") != 0;
}

int main(int argc, char** argv) {
  info_args_t args;
  info_parse(argc, argv, &args);
  info_run_options_t options = args.run;
  if (args.problem != NULL) {
    return info_usage_error(&options, args.problem,
                            args.culprit[0] != '\0' ? args.culprit : NULL);
  }
  if (args.help) {
    fputs(info_usage, stdout);
    return INFO_EXIT_OK;
  }
  if (args.version) {
    printf("accel-info %s (plugin ABI %u)\n", accel_version_string(),
           (unsigned)ACCEL_PLUGIN_ABI_VERSION);
    return INFO_EXIT_OK;
  }
  options.text.color = !options.json && info_want_color();
  if (args.isolate) return info_run_isolated(&options);

  // In-process: keep stray plugin output off our stdout, as the child does.
  fflush(stdout);
  int out_fd = dup(STDOUT_FILENO);
  if (out_fd < 0) {
    out_fd = STDOUT_FILENO;
  } else {
    dup2(STDERR_FILENO, STDOUT_FILENO);
  }
  int code = info_run_in_process(&options, NULL, 0, NULL, NULL, out_fd);
  accel_shutdown();
  if (out_fd != STDOUT_FILENO) {
    dup2(out_fd, STDOUT_FILENO);
    close(out_fd);
  }
  return code;
}
