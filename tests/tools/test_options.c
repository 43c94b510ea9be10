// SPDX-License-Identifier: MIT
//
// tools/common/options.c: which option, and which problem, a usage message
// names for each way getopt_long() refuses a command line.
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "options.h"
#include "test.h"

enum { OPT_JSON = 256, OPT_TIMEOUT };

static const struct option longs[] = {
    {"json", no_argument, NULL, OPT_JSON},
    {"timeout", required_argument, NULL, OPT_TIMEOUT},
    {"verbose", no_argument, NULL, 'v'},
    {"version", no_argument, NULL, 'V'},  // 'V' is no short option
    {"output", required_argument, NULL, 'o'},
    {NULL, 0, NULL, 0},
};

// Parses "prog" and `args` (NULL-terminated) with opterr 0 up to the first
// refusal, and describes it in `out`. Returns false if there was none.
static bool refusal(const char* const* args, tool_option_error_t* out) {
  char* argv[16];
  int argc = 0;
  argv[argc++] = (char*)"prog";
  for (size_t i = 0; args[i] != NULL && argc < 15; i++) {
    argv[argc++] = (char*)args[i];
  }
  argv[argc] = NULL;
  optind = 0;  // glibc: start again from scratch
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":vo:", longs, NULL)) != -1) {
    if (c == '?' || c == ':') {
      tool_option_error(c, argv, longs, out);
      return true;
    }
  }
  return false;
}

#define EXPECT(want_problem, want_option, ...) \
  do {                                         \
    const char* args_[] = {__VA_ARGS__, NULL}; \
    tool_option_error_t e_;                    \
    ASSERT(refusal(args_, &e_));               \
    ASSERT_STR_EQ(e_.problem, want_problem);   \
    ASSERT_STR_EQ(e_.option, want_option);     \
  } while (0)

TEST(unknown_long) {
  EXPECT("unknown option", "--bogus", "--bogus");
  EXPECT("unknown option", "--bogus=1", "--json", "--bogus=1");
  EXPECT("unknown option", "--bogus", "--timeout", "5", "--bogus");
}

TEST(unknown_short) {
  EXPECT("unknown option", "-x", "-x");
  EXPECT("unknown option", "-x", "-vx");
  // Inside a cluster getopt_long() has not moved past the argument yet:
  // argv[optind - 1] is the one before it.
  EXPECT("unknown option", "-x", "-xv");
  EXPECT("unknown option", "-x", "--json", "-xv");
  EXPECT("unknown option", "-x", "--timeout=3", "-xv");
  // The code of a long-only option is still no short option.
  EXPECT("unknown option", "-V", "-V");
}

TEST(ambiguous) {
  EXPECT("ambiguous option", "--ver", "--ver");
  EXPECT("ambiguous option", "--v=1", "--v=1");
  // Abbreviations that are not ambiguous are accepted.
  const char* ok[] = {"--verb", "--vers", "--js", "--tim=1",
                      "--out",  "x",      NULL};
  tool_option_error_t e;
  ASSERT(!refusal(ok, &e));
}

TEST(missing_value) {
  EXPECT("option needs a value", "--timeout", "--timeout");
  EXPECT("option needs a value", "--timeout", "--json", "--tim");
  EXPECT("option needs a value", "--output", "--output");
  EXPECT("option needs a value", "-o", "-o");
  EXPECT("option needs a value", "-o", "-vo");
}

TEST(value_not_wanted) {
  EXPECT("option takes no value", "--json=1", "--json=1");
  EXPECT("option takes no value", "--js=", "--js=");
  EXPECT("option takes no value", "--verbose=yes", "--verbose=yes");
}

// Byte counts: digits and one binary suffix, nothing else, within `most`.
TEST(byte_counts) {
  unsigned long long v = 0;
  ASSERT(tool_parse_bytes("4K", 1ull << 40, &v));
  ASSERT_EQ(v, 4096);
  ASSERT(tool_parse_bytes("256m", 1ull << 40, &v));
  ASSERT_EQ(v, 256ull << 20);
  ASSERT(tool_parse_bytes("3G", 1ull << 40, &v));
  ASSERT_EQ(v, 3ull << 30);
  ASSERT(tool_parse_bytes("17", 1ull << 40, &v));
  ASSERT_EQ(v, 17);
  ASSERT(tool_parse_bytes("1024", 1024, &v));  // the limit itself
  ASSERT(tool_parse_bytes("1K", 1024, &v));
  v = 99;
  static const char* const bad[] = {
      "", "K", "-4K", "+4K", " 4K", "4K ", "4.5K", "4KB", "4T", "0x10",
      "1025", "2K",  // above the limit of 1024
      "18446744073709551616",  // 2^64
      "99999999999999999999G"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    if (tool_parse_bytes(bad[i], 1024, &v)) printf("  took '%s'\n", bad[i]);
    ASSERT(!tool_parse_bytes(bad[i], 1024, &v));
  }
  ASSERT_EQ(v, 99);  // untouched by every refusal
  ASSERT(!tool_parse_bytes("17179869184G", ~0ull, &v));  // 2^64 bytes
  ASSERT(tool_parse_bytes("17179869183G", ~0ull, &v));
  ASSERT_EQ(v, 17179869183ull << 30);
  ASSERT(tool_parse_bytes("18446744073709551615", ~0ull, &v));
  ASSERT_EQ(v, ~0ull);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
