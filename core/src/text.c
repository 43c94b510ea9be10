// SPDX-License-Identifier: MIT
//
// Appending to fixed-size message buffers. `snprintf(buf + used, size -
// used, ...)` forms a pointer past the buffer once `used` (the length the
// text would have had) exceeds `size`; UBSan aborts on that. This helper
// clamps instead, so a long list is truncated, never overrun.
#include <stdio.h>

#include "internal.h"

void accel__appendf(char* buf, size_t size, size_t* used, const char* format,
                    ...) {
  if (size == 0) return;
  size_t at = *used < size ? *used : size - 1;
  va_list args;
  va_start(args, format);
  int n = vsnprintf(buf + at, size - at, format, args);
  va_end(args);
  if (n > 0) {
    size_t total = at + (size_t)n;
    *used = total < size ? total : size - 1;
  }
}
