// SPDX-License-Identifier: MIT
//
// XML text for the tools' SVG output (accel-bench --plot, accel-memviz):
// one escaping rule (tools/common, beside the JSON writer).
#ifndef ACCEL_TOOLS_COMMON_XML_H_
#define ACCEL_TOOLS_COMMON_XML_H_

#include <stdio.h>

// Writes `text` to `out` with XML's five special characters escaped and
// control characters (not allowed in XML 1.0) written as spaces.
void xml_text(FILE* out, const char* text);

#endif  // ACCEL_TOOLS_COMMON_XML_H_
