// SPDX-License-Identifier: MIT
//
// accel-info: shows which plugins and devices this machine has, why a
// plugin did not load, and which device the environment selects.
// This file parses the command line and picks in-process or isolated
// probing (isolate.c); report.c collects, render_*.c print.
#include <accel/plugin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "info.h"

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
    "Exit status:\n"
    "  0  at least one device, and no plugin failed\n"
    "  1  no usable device\n"
    "  2  usage error\n"
    "  3  devices found, but a plugin failed, crashed or timed out\n"
    "     (a plugin whose driver is missing is 'unavailable', not failed)\n"
    "\n"
    "Environment: ACCEL_PLUGIN_PATH, ACCEL_BACKEND, ACCEL_LOG (see\n"
    "docs/accel-info.md).\n";

// Parses a timeout in seconds: a positive decimal number up to a day.
static bool info_parse_timeout(const char* s, double* out) {
  char* end = NULL;
  double v = strtod(s, &end);
  if (end == s || *end != '\0' || !(v > 0.0) || v > 86400.0) return false;
  *out = v;
  return true;
}

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

// Color only for a terminal, and never when NO_COLOR is set or TERM=dumb.
static bool info_want_color(void) {
  const char* term = getenv("TERM");
  const char* no_color = getenv("NO_COLOR");
  return isatty(STDOUT_FILENO) && (no_color == NULL || no_color[0] == '\0') &&
         term != NULL && strcmp(term, "dumb") != 0;
}

int main(int argc, char** argv) {
  info_run_options_t options = {.timeout_s = 10.0};
  bool isolate = true;
  bool help = false;
  bool version = false;
  const char* bad = NULL;
  const char* bad_arg = NULL;
  // --json is looked for first so that a usage error can honour it.
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--json") == 0) options.json = true;
  }
  for (int i = 1; i < argc && bad == NULL; ++i) {
    const char* a = argv[i];
    if (strcmp(a, "--json") == 0) {
      continue;
    } else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
      options.text.verbose = true;
    } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      help = true;
    } else if (strcmp(a, "--version") == 0) {
      version = true;
    } else if (strcmp(a, "--no-isolate") == 0) {
      isolate = false;
    } else if (strcmp(a, "--timeout") == 0 ||
               strncmp(a, "--timeout=", 10) == 0) {
      const char* value = a[9] == '=' ? a + 10 : NULL;
      if (value == NULL && i + 1 < argc) value = argv[++i];
      if (value == NULL) {
        bad = "--timeout needs a value in seconds";
      } else if (!info_parse_timeout(value, &options.timeout_s)) {
        bad = "invalid --timeout (want seconds, > 0, <= 86400)";
        bad_arg = value;
      }
    } else if (a[0] == '-') {
      bad = "unknown option";
      bad_arg = a;
    } else {
      bad = "unexpected argument";
      bad_arg = a;
    }
  }
  if (bad != NULL) return info_usage_error(&options, bad, bad_arg);
  if (help) {
    fputs(info_usage, stdout);
    return INFO_EXIT_OK;
  }
  if (version) {
    printf("accel-info %s (plugin ABI %u)\n", accel_version_string(),
           (unsigned)ACCEL_PLUGIN_ABI_VERSION);
    return INFO_EXIT_OK;
  }
  options.text.color = !options.json && info_want_color();
  if (isolate) return info_run_isolated(&options);

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
