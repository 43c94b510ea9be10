// SPDX-License-Identifier: MIT
//
// Command-line helpers the tools share, on top of getopt_long() from libc
// (the one parser style of the tools). Nothing here is exported.
#ifndef ACCEL_TOOLS_COMMON_OPTIONS_H_
#define ACCEL_TOOLS_COMMON_OPTIONS_H_

#include <getopt.h>
#include <stdbool.h>

// What getopt_long() refused, worded for a usage message.
typedef struct tool_option_error {
  // "unknown option", "ambiguous option", "option needs a value" or
  // "option takes no value".
  const char* problem;
  // The option concerned: the argument as given for an unknown, ambiguous
  // or valued option ("--bogus", "--ver", "--json=1"), "-x" for a short
  // option, "--timeout" (the full name) for a missing value. Truncated to
  // fit, which only a pathological argument needs.
  char option[256];
} tool_option_error_t;

// Describes the error getopt_long() just reported by returning `c` ('?',
// or ':' for a missing value when its option string starts with ':') while
// parsing `argv` with the option table `longs`. Reads `optind` and
// `optopt`, so call it before the next getopt_long(). Use it with `opterr`
// set to 0, so that getopt_long() prints nothing of its own.
void tool_option_error(int c, char* const* argv, const struct option* longs,
                       tool_option_error_t* out);

// Parses a time limit in seconds for an option such as --timeout: a
// decimal number (strtod's forms) with nothing after it, more than 0 and
// at most 86400 (a day). False, leaving `*out` alone, for anything else.
bool tool_parse_seconds(const char* text, double* out);

// Parses a byte count for an option such as --max: decimal digits, then
// optionally K, M or G (upper or lower case; powers of 1024) and nothing
// else, at most `most`. "4K" is 4096. False, leaving `*out` alone, for a
// sign, a space, a fraction, another suffix, an overflow or a count above
// `most`.
bool tool_parse_bytes(const char* text, unsigned long long most,
                      unsigned long long* out);

#endif  // ACCEL_TOOLS_COMMON_OPTIONS_H_
