// SPDX-License-Identifier: MIT
#include "xml.h"

void xml_text(FILE* out, const char* text) {
  for (const char* p = text; *p != '\0'; p++) {
    switch (*p) {
      case '&':
        fputs("&amp;", out);
        break;
      case '<':
        fputs("&lt;", out);
        break;
      case '>':
        fputs("&gt;", out);
        break;
      case '"':
        fputs("&quot;", out);
        break;
      case '\'':
        fputs("&apos;", out);
        break;
      default:
        fputc((unsigned char)*p < 0x20 ? ' ' : *p, out);
        break;
    }
  }
}
