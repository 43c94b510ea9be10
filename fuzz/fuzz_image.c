// SPDX-License-Identifier: MIT
//
// libFuzzer target: the core's module image sniffer (core/src/image.c,
// compiled in) on arbitrary bytes. It must stay inside the image and always
// write a target and a NUL-terminated description.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char target[64], desc[256];
  // A heap copy of exactly `size` bytes, so ASan sees any read past it.
  uint8_t* image = malloc(size ? size : 1);
  if (image == NULL) return 0;
  if (size) memcpy(image, data, size);
  accel__image_describe(image, size, target, sizeof(target), desc,
                        sizeof(desc));
  free(image);
  if (target[0] == '\0' || strlen(target) >= sizeof(target) ||
      strlen(desc) >= sizeof(desc)) {
    abort();
  }
  return 0;
}
