// SPDX-License-Identifier: MIT
//
// libFuzzer target: kernel bundles (core/src/bundle.c) through the public
// API. accel_bundle_parse() on arbitrary bytes must either fail with a
// message or give entries that lie inside the data, after the table and
// apart from each other; a bundle written back from those entries with
// accel_bundle_write() must parse to the same tags and bytes.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <accel/accel.h>

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static accel_bundle_entry_t fuzz_entries[ACCEL_BUNDLE_MAX_ENTRIES];
static accel_bundle_entry_t fuzz_again[ACCEL_BUNDLE_MAX_ENTRIES];

// Writes the `count` parsed entries of `bundle` into a new bundle and
// checks it parses back to the same tags and bytes.
static void fuzz_round_trip(const uint8_t* bundle, size_t count) {
  const char* targets[ACCEL_BUNDLE_MAX_ENTRIES];
  const void* images[ACCEL_BUNDLE_MAX_ENTRIES];
  size_t sizes[ACCEL_BUNDLE_MAX_ENTRIES];
  for (size_t i = 0; i < count; i++) {
    targets[i] = fuzz_entries[i].target;
    images[i] = bundle + fuzz_entries[i].offset;
    sizes[i] = (size_t)fuzz_entries[i].size;
  }
  size_t total = 0;
  if (accel_bundle_write(count, targets, images, sizes, NULL, 0, &total) !=
      ACCEL_OK) {
    abort();
  }
  uint8_t* out = malloc(total);
  if (out == NULL) return;
  size_t again = 0;
  if (accel_bundle_write(count, targets, images, sizes, out, total, &total) !=
          ACCEL_OK ||
      accel_bundle_parse(out, total, ACCEL_BUNDLE_MAX_ENTRIES, fuzz_again,
                         &again) != ACCEL_OK ||
      again != count) {
    abort();
  }
  for (size_t i = 0; i < count; i++) {
    if (strcmp(fuzz_again[i].target, fuzz_entries[i].target) != 0 ||
        fuzz_again[i].size != fuzz_entries[i].size ||
        memcmp(out + fuzz_again[i].offset, images[i], sizes[i]) != 0) {
      abort();
    }
  }
  free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // A heap copy of exactly `size` bytes, so ASan sees any read past it.
  uint8_t* bundle = malloc(size ? size : 1);
  if (bundle == NULL) return 0;
  if (size) memcpy(bundle, data, size);
  size_t count = 0;
  accel_status_t status = accel_bundle_parse(
      bundle, size, ACCEL_BUNDLE_MAX_ENTRIES, fuzz_entries, &count);
  if (status != ACCEL_OK) {
    if (count != 0 || accel_last_error()[0] == '\0') abort();
    free(bundle);
    return 0;
  }
  if (count == 0 || count > ACCEL_BUNDLE_MAX_ENTRIES) abort();
  for (size_t i = 0; i < count; i++) {
    const accel_bundle_entry_t* e = &fuzz_entries[i];
    if (e->size == 0 || e->offset > size || e->size > size - e->offset ||
        strnlen(e->target, sizeof(e->target)) == 0 ||
        strnlen(e->target, sizeof(e->target)) >= sizeof(e->target)) {
      abort();
    }
  }
  fuzz_round_trip(bundle, count);
  free(bundle);
  return 0;
}
