// SPDX-License-Identifier: MIT
//
// libFuzzer target for the module image sniffer (built with
// -DACCEL_FUZZ=ON and clang): run `fuzz_image corpus/`.
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  char target[64], desc[256];
  accel__image_describe(data, size, target, sizeof(target), desc, sizeof(desc));
  if (target[0] == '\0' || strlen(desc) >= sizeof(desc)) abort();
  return 0;
}
