// SPDX-License-Identifier: MIT
//
// libFuzzer target: module images through the core, accel_module_create()
// on arbitrary bytes. The first byte picks one of the fuzz fixture
// plugin's devices (fuzz_plugin.c: elf-x86_64 only; cuda-sm_90 with
// OpenCL C and SPIR-V; amdgcn-gfx90a with cuda); the rest is the image.
// The plugin records an image without loading it, so this exercises only
// the core's sniffing, target checks and bundle handling. An accepted image
// must give a module, a rejected one an error with a message.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <accel/accel.h>

#include "fuzz_common.h"

#define FUZZ_DEVICES 3

static accel_device_t* fuzz_devices[FUZZ_DEVICES];

int LLVMFuzzerInitialize(int* argc, char*** argv) {
  (void)argc;
  (void)argv;
  fuzz_use_fixture_plugin();
  for (int i = 0; i < FUZZ_DEVICES; i++) {
    char name[16];
    snprintf(name, sizeof(name), "fuzzfx:%d", i);
    if (accel_device_open(name, &fuzz_devices[i]) != ACCEL_OK) {
      fprintf(stderr, "fuzz_module: %s: %s\n", name, accel_last_error());
      exit(1);
    }
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  accel_device_t* device = fuzz_devices[data[0] % FUZZ_DEVICES];
  size -= 1;
  // A heap copy of exactly the image, so ASan sees any read past it.
  uint8_t* image = malloc(size);
  if (image == NULL) return 0;
  memcpy(image, data + 1, size);
  accel_module_t* module = NULL;
  accel_status_t status = accel_module_create(device, image, size, &module);
  free(image);
  if (status == ACCEL_OK) {
    if (module == NULL) abort();
    accel_kernel_t* kernel = NULL;
    if (accel_kernel_create(module, "fuzz", &kernel) == ACCEL_OK) abort();
    accel_module_release(module);
  } else if (module != NULL || accel_last_error()[0] == '\0') {
    abort();
  }
  return 0;
}
