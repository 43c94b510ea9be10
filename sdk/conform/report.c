// SPDX-License-Identifier: MIT
//
// accel-conform's report lines (see report.h). Strings in JSON go through
// the tools' escaper (tools/common/json.c): a plugin's message or build log
// in a check's detail cannot break the document, invalid UTF-8 included.
#include "report.h"

#include <stdio.h>
#include <string.h>

#include "json.h"

static const char* const conform_result_names[] = {
    "PASS", "FAIL", "SKIP", "UNSUPPORTED", "XFAIL", "XPASS"};

const char* conform_result_name(conform_result_t result) {
  size_t n = sizeof(conform_result_names) / sizeof(conform_result_names[0]);
  return (size_t)result < n ? conform_result_names[result] : "?";
}

void conform_json_begin(const char* plugin, const char* device,
                        const char* reference) {
  fputs("{\"plugin\": ", stdout);
  json_write_escaped(stdout, plugin);
  fputs(", \"device\": ", stdout);
  json_write_escaped(stdout, device);
  fputs(", \"reference\": ", stdout);
  json_write_escaped(stdout, reference);
  fputs(", \"checks\": [", stdout);
}

void conform_format_result(char* out, size_t size, bool json, bool first,
                           const char* name, conform_result_t result,
                           const char* detail) {
  if (!json) {
    snprintf(out, size, "%-11s  %-28s  %s\n", conform_result_name(result),
             name, detail);
    return;
  }
  // Each byte of the detail escapes to at most 6 ("\u00XX").
  char quoted_name[256], quoted_result[32];
  char quoted_detail[sizeof(((conform_ctx_t*)0)->detail) * 6 + 3];
  json_escape_into(quoted_name, sizeof(quoted_name), name);
  json_escape_into(quoted_result, sizeof(quoted_result),
                   conform_result_name(result));
  json_escape_into(quoted_detail, sizeof(quoted_detail), detail);
  snprintf(out, size, "%s\n  {\"name\": %s, \"result\": %s, \"detail\": %s}",
           first ? "" : ",", quoted_name, quoted_result, quoted_detail);
}

void conform_format_summary(char* out, size_t size, bool json,
                            const size_t counts[6]) {
  size_t passed = counts[CONFORM_PASS];
  size_t failed = counts[CONFORM_FAIL] + counts[CONFORM_XPASS];
  size_t skipped = counts[CONFORM_SKIP] + counts[CONFORM_UNSUPPORTED];
  size_t xfail = counts[CONFORM_XFAIL], xpass = counts[CONFORM_XPASS];
  if (json) {
    snprintf(out, size,
             "\n], \"passed\": %zu, \"failed\": %zu, \"skipped\": %zu, "
             "\"expected_failures\": %zu, \"unexpected_passes\": %zu}\n",
             passed, failed, skipped, xfail, xpass);
  } else if (xfail + xpass > 0) {
    snprintf(out, size,
             "%zu passed, %zu failed, %zu skipped, %zu expected failures, "
             "%zu unexpectedly passed\n",
             passed, failed, skipped, xfail, xpass);
  } else {
    snprintf(out, size, "%zu passed, %zu failed, %zu skipped\n", passed,
             failed, skipped);
  }
}

void conform_recap_note(conform_recap_t* recap, const char* name,
                        conform_result_t result, const char* detail) {
  if (result != CONFORM_FAIL && result != CONFORM_XPASS) return;
  if (recap->count < CONFORM_RECAP_MAX) {
    conform_format_result(recap->lines[recap->count], CONFORM_RECAP_LINE,
                          false, false, name, result, detail);
    // A line cut short still ends the line.
    size_t used = strlen(recap->lines[recap->count]);
    if (used > 0 && recap->lines[recap->count][used - 1] != '\n') {
      recap->lines[recap->count][used - 1] = '\n';
    }
  }
  recap->count++;
}

void conform_recap_write(const conform_recap_t* recap, FILE* out) {
  if (recap->count == 0) return;
  fprintf(out, "Failed checks (%zu):\n", recap->count);
  size_t kept = recap->count < CONFORM_RECAP_MAX ? recap->count
                                                 : CONFORM_RECAP_MAX;
  for (size_t i = 0; i < kept; i++) fputs(recap->lines[i], out);
  if (recap->count > kept) {
    fprintf(out, "... and %zu more (above)\n", recap->count - kept);
  }
}

void conform_hang_report(char* out, size_t size, const char* name,
                         double limit_s, bool json, bool first,
                         const size_t counts[6]) {
  char detail[160];
  snprintf(detail, sizeof(detail),
           "still running after %.0f s: a wait inside the plugin that never "
           "returns? Stopping.",
           limit_s);
  conform_format_result(out, size, json, first, name, CONFORM_FAIL, detail);
  if (!json) return;
  size_t with_it[6];
  memcpy(with_it, counts, sizeof(with_it));
  with_it[CONFORM_FAIL]++;
  size_t used = strlen(out);
  conform_format_summary(out + used, size - used, json, with_it);
}
