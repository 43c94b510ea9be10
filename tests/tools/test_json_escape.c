// SPDX-License-Identifier: MIT
//
// Unit tests for accel-info's JSON writer and string escaper
// (tools/accel-info/json.c): escapes, UTF-8 handling, commas and nesting.
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
