// SPDX-License-Identifier: MIT
//
// getopt_long() leaves its errors in `optind` and `optopt`; this turns
// them back into the option the user typed. With `opterr` 0 a tool words
// its own messages (accel-info must also put them in its JSON document).
#include "options.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The entry of `longs` that `given` (the text after "--", up to any '=')
// names exactly or abbreviates; NULL when none does. `*out_count` is the
// number of entries it abbreviates (1 for an exact name).
static const struct option* tool_option_find(const struct option* longs,
                                             const char* given,
                                             size_t* out_count) {
  size_t len = strcspn(given, "=");
  const struct option* found = NULL;
  *out_count = 0;
  for (const struct option* o = longs; o->name != NULL; o++) {
    if (strncmp(o->name, given, len) != 0) continue;
    if (o->name[len] == '\0') {
      *out_count = 1;
      return o;
    }
    found = o;
    ++*out_count;
  }
  return *out_count == 1 ? found : NULL;
}

void tool_option_error(int c, char* const* argv, const struct option* longs,
                       tool_option_error_t* out) {
  // A long option, and a short one that ends its argument, has been
  // consumed: argv[optind - 1] is it. An unknown short option inside a
  // cluster ("-xv") has not, so short options are named from `optopt`.
  const char* arg = optind > 0 ? argv[optind - 1] : "";
  bool is_long = strncmp(arg, "--", 2) == 0 && arg[2] != '\0';
  size_t count = 0;
  const struct option* o =
      is_long ? tool_option_find(longs, arg + 2, &count) : NULL;
  if (c == ':') {
    out->problem = "option needs a value";
    if (is_long && o != NULL) {
      snprintf(out->option, sizeof(out->option), "--%s", o->name);
    } else {
      snprintf(out->option, sizeof(out->option), "-%c", optopt);
    }
  } else if (optopt == 0) {
    // An unknown or ambiguous long option (getopt_long() zeroes optopt).
    out->problem = is_long && count > 1 ? "ambiguous option" : "unknown option";
    snprintf(out->option, sizeof(out->option), "%s", arg);
  } else if (is_long && o != NULL && o->val == optopt &&
             o->has_arg == no_argument && strchr(arg, '=') != NULL) {
    out->problem = "option takes no value";
    snprintf(out->option, sizeof(out->option), "%s", arg);
  } else {
    out->problem = "unknown option";
    snprintf(out->option, sizeof(out->option), "-%c", optopt);
  }
}

bool tool_parse_seconds(const char* text, double* out) {
  char* end = NULL;
  double v = strtod(text, &end);
  if (end == text || *end != '\0' || !(v > 0.0) || v > 86400.0) return false;
  *out = v;
  return true;
}

bool tool_parse_bytes(const char* text, unsigned long long most,
                      unsigned long long* out) {
  unsigned long long v = 0;
  const char* p = text;
  if (*p < '0' || *p > '9') return false;  // no sign, space or empty text
  for (; *p >= '0' && *p <= '9'; p++) {
    unsigned digit = (unsigned)(*p - '0');
    if (digit > most || v > (most - digit) / 10) return false;
    v = v * 10 + digit;
  }
  unsigned shift = 0;
  switch (*p) {
    case 'K': case 'k': shift = 10; p++; break;
    case 'M': case 'm': shift = 20; p++; break;
    case 'G': case 'g': shift = 30; p++; break;
    default: break;
  }
  if (*p != '\0' || v > most >> shift) return false;
  *out = v << shift;
  return true;
}
