// SPDX-License-Identifier: MIT
//
// Unit tests for the tools' JSON writer and string escaper
// (tools/common/json.c): escapes, UTF-8 handling, strings escaped into a
// buffer and cut short, numbers, commas and nesting.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "test.h"

// Runs `json_write_escaped(s)` and returns the output (static buffer).
static const char* escape(const char* s) {
  static char buf[512];
  FILE* f = fmemopen(buf, sizeof(buf), "w");
  if (f == NULL) return "";
  json_write_escaped(f, s);
  fclose(f);
  return buf;
}

TEST(escape_plain_and_specials) {
  ASSERT_STR_EQ(escape(""), "\"\"");
  ASSERT_STR_EQ(escape("cpu:0"), "\"cpu:0\"");
  ASSERT_STR_EQ(escape("a\"b\\c/d"), "\"a\\\"b\\\\c/d\"");
}

TEST(escape_control_characters) {
  ASSERT_STR_EQ(escape("\n\t\r\x01\x1f\x7f"),
                "\"\\u000a\\u0009\\u000d\\u0001\\u001f\\u007f\"");
}

TEST(escape_passes_valid_utf8) {
  ASSERT_STR_EQ(escape("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
                "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
}

TEST(escape_replaces_invalid_utf8) {
  // Stray byte, overlong NUL, surrogate, truncated sequence at the end.
  ASSERT_STR_EQ(escape("a\xff"), "\"a\\ufffd\"");
  ASSERT_STR_EQ(escape("\xc0\x80"), "\"\\ufffd\\ufffd\"");
  ASSERT_STR_EQ(escape("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");
  ASSERT_STR_EQ(escape("x\xe2\x82"), "\"x\\ufffd\\ufffd\"");
  ASSERT_STR_EQ(escape("\xf4\x90\x80\x80"),  // above U+10FFFF
                "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
}

// json_escape_into() writes what json_write_escaped() writes.
TEST(escape_into_matches_stream) {
  static const char* const cases[] = {
      "", "cpu:0", "a\"b\\c", "\n\x01\x7f", "caf\xc3\xa9 \xf0\x9f\x98\x80",
      "a\xff", "\xc0\x80", "x\xe2\x82"};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char buf[128];
    size_t n = json_escape_into(buf, sizeof(buf), cases[i]);
    ASSERT_STR_EQ(buf, escape(cases[i]));
    ASSERT_EQ(n, strlen(buf));
  }
}

// Cut short before a whole escape or UTF-8 sequence, still quoted.
TEST(escape_into_cuts_whole_characters) {
  char buf[8];
  ASSERT_EQ(json_escape_into(buf, sizeof(buf), "abcdefgh"), 7u);
  ASSERT_STR_EQ(buf, "\"abcde\"");
  ASSERT_EQ(json_escape_into(buf, sizeof(buf), "ab\ncd"), 4u);
  ASSERT_STR_EQ(buf, "\"ab\"");  // \u000a would not fit
  ASSERT_EQ(json_escape_into(buf, sizeof(buf), "a\xe2\x82\xac"), 6u);
  ASSERT_STR_EQ(buf, "\"a\xe2\x82\xac\"");
  ASSERT_EQ(json_escape_into(buf, 6, "a\xe2\x82\xac"), 3u);
  ASSERT_STR_EQ(buf, "\"a\"");  // not the euro sign's first bytes
  ASSERT_EQ(json_escape_into(buf, 3, "abc"), 2u);
  ASSERT_STR_EQ(buf, "\"\"");
  buf[0] = 'x';
  ASSERT_EQ(json_escape_into(buf, 2, "abc"), 0u);
  ASSERT_EQ(buf[0], '\0');
}

TEST(writer_doubles) {
  char buf[128];
  FILE* f = fmemopen(buf, sizeof(buf), "w");
  ASSERT_NOT_NULL(f);
  json_writer_t w;
  json_writer_init(&w, f);
  json_begin_array(&w);
  json_double(&w, 0.5);
  json_double(&w, 1234567.0);
  json_double(&w, 0.0 / 0.0);
  json_double(&w, -1.0 / 0.0);
  json_end_array(&w);
  fclose(f);
  ASSERT_STR_EQ(buf, "[\n  0.5,\n  1.23457e+06,\n  null,\n  null\n]\n");
}

TEST(writer_commas_and_nesting) {
  char buf[512];
  FILE* f = fmemopen(buf, sizeof(buf), "w");
  ASSERT_NOT_NULL(f);
  json_writer_t w;
  json_writer_init(&w, f);
  json_begin_object(&w);
  json_key(&w, "n");
  json_uint(&w, 18446744073709551615ull);
  json_key(&w, "a");
  json_begin_array(&w);
  json_int(&w, -5);
  json_null(&w);
  json_bool(&w, true);
  json_string(&w, NULL);
  json_end_array(&w);
  json_key(&w, "e");
  json_begin_array(&w);
  json_end_array(&w);
  json_key(&w, "o");
  json_begin_object(&w);
  json_end_object(&w);
  json_end_object(&w);
  fclose(f);
  ASSERT_STR_EQ(buf,
                "{\n"
                "  \"n\": 18446744073709551615,\n"
                "  \"a\": [\n"
                "    -5,\n"
                "    null,\n"
                "    true,\n"
                "    null\n"
                "  ],\n"
                "  \"e\": [],\n"
                "  \"o\": {}\n"
                "}\n");
}

int main(int argc, char** argv) { return test_main(argc, argv); }
