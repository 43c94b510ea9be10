// SPDX-License-Identifier: MIT
//
// Kernel bundles: one file holding the same kernels for several targets
// (a CPU shared object, a CUDA fatbin, AMD code objects, OpenCL C, SPIR-V),
// from which accel_module_create() picks the image that fits the device.
//
// Format, version 1 (all integers little-endian; documented for users in
// docs/user-guide.md):
//   header, 16 bytes:  char magic[8] = "ACCELBDL"; u32 version = 1;
//                      u32 entry_count (1 to ACCEL_BUNDLE_MAX_ENTRIES)
//   entries, 80 bytes each, right after the header:
//                      char target[64] (NUL-padded, at least one NUL, of
//                      [A-Za-z0-9._+-], not empty); u64 offset; u64 size
//   images:            `size` (> 0) bytes at `offset` from the start of
//                      the file, each after the entry table, inside the
//                      file and overlapping no other image.
// The input is untrusted: every field is checked against the data size
// before it is used, and sums are computed so they cannot overflow.
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define ACCEL__BUNDLE_MAGIC "ACCELBDL"
#define ACCEL__BUNDLE_VERSION 1u
#define ACCEL__BUNDLE_HEADER 16u
#define ACCEL__BUNDLE_ENTRY 80u
#define ACCEL__BUNDLE_IMAGE_ALIGN 64u  // where the writer puts each image

static uint64_t accel__le(const uint8_t* p, unsigned width) {
  uint64_t v = 0;
  for (unsigned i = 0; i < width; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

static void accel__put_le(uint8_t* p, uint64_t v, unsigned width) {
  for (unsigned i = 0; i < width; i++) p[i] = (uint8_t)(v >> (8 * i));
}

// True when `s` (`n` bytes) is a valid target tag: 1-63 characters of
// [A-Za-z0-9._+-] followed by NULs.
static bool accel__tag_valid(const char* s, size_t n) {
  size_t len = strnlen(s, n);
  if (len == 0 || len >= n) return false;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '+' ||
              c == '-';
    if (!ok) return false;
  }
  for (size_t i = len; i < n; i++) {
    if (s[i] != '\0') return false;
  }
  return true;
}

accel_status_t accel_bundle_parse(const void* data, size_t size,
                                  size_t capacity,
                                  accel_bundle_entry_t* entries,
                                  size_t* out_count) {
  static const char what[] = "kernel bundle";
  if (out_count != NULL) *out_count = 0;
  if (data == NULL || out_count == NULL || (capacity > 0 && entries == NULL)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_bundle_parse: data and out_count are required, "
                       "and entries when capacity > 0");
  }
  const uint8_t* p = data;
  if (size < ACCEL__BUNDLE_HEADER || memcmp(p, ACCEL__BUNDLE_MAGIC, 8) != 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %zu bytes without the 16-byte ACCELBDL header",
                       what, size);
  }
  uint64_t version = accel__le(p + 8, 4), count = accel__le(p + 12, 4);
  if (version != ACCEL__BUNDLE_VERSION) {
    return accel__fail(ACCEL_ERROR_INCOMPATIBLE,
                       "%s: version %llu; this library reads version %u",
                       what, (unsigned long long)version,
                       ACCEL__BUNDLE_VERSION);
  }
  if (count == 0 || count > ACCEL_BUNDLE_MAX_ENTRIES) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %llu entries; a bundle holds 1 to %d", what,
                       (unsigned long long)count, ACCEL_BUNDLE_MAX_ENTRIES);
  }
  uint64_t table_end = ACCEL__BUNDLE_HEADER + count * ACCEL__BUNDLE_ENTRY;
  if (table_end > size) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %llu entries need %llu bytes of table, but the "
                       "bundle is %zu bytes (truncated?)",
                       what, (unsigned long long)count,
                       (unsigned long long)table_end, size);
  }
  if (count > capacity) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_bundle_parse: the bundle has %llu entries, "
                       "room for %zu",
                       (unsigned long long)count, capacity);
  }
  for (uint64_t i = 0; i < count; i++) {
    const uint8_t* e = p + ACCEL__BUNDLE_HEADER + i * ACCEL__BUNDLE_ENTRY;
    accel_bundle_entry_t* out = &entries[i];
    memcpy(out->target, e, sizeof(out->target));
    out->offset = accel__le(e + 64, 8);
    out->size = accel__le(e + 72, 8);
    if (!accel__tag_valid(out->target, sizeof(out->target))) {
      out->target[sizeof(out->target) - 1] = '\0';
      return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: entry %llu has an invalid target tag (want 1 "
                         "to 63 characters of [A-Za-z0-9._+-])",
                         what, (unsigned long long)i);
    }
    if (out->size == 0 || out->offset < table_end || out->offset > size ||
        out->size > size - out->offset) {
      return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: entry %llu (%s) claims %llu bytes at offset "
                         "%llu, outside the %zu-byte bundle's data area "
                         "(from %llu)",
                         what, (unsigned long long)i, out->target,
                         (unsigned long long)out->size,
                         (unsigned long long)out->offset, size,
                         (unsigned long long)table_end);
    }
    for (uint64_t j = 0; j < i; j++) {
      const accel_bundle_entry_t* o = &entries[j];
      if (out->offset < o->offset + o->size &&
          o->offset < out->offset + out->size) {
        return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: entries %llu (%s) and %llu (%s) overlap",
                           what, (unsigned long long)j, o->target,
                           (unsigned long long)i, out->target);
      }
    }
  }
  *out_count = (size_t)count;
  return ACCEL_OK;
}

accel_status_t accel_bundle_write(size_t count, const char* const* targets,
                                  const void* const* images,
                                  const size_t* sizes, void* out,
                                  size_t capacity, size_t* out_size) {
  static const char what[] = "accel_bundle_write";
  if (out_size != NULL) *out_size = 0;
  if (targets == NULL || images == NULL || sizes == NULL || out_size == NULL ||
      (out == NULL && capacity > 0)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: targets, images, sizes and out_size are "
                       "required",
                       what);
  }
  if (count == 0 || count > ACCEL_BUNDLE_MAX_ENTRIES) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %zu entries; a bundle holds 1 to %d", what, count,
                       ACCEL_BUNDLE_MAX_ENTRIES);
  }
  uint64_t total = ACCEL__BUNDLE_HEADER + count * ACCEL__BUNDLE_ENTRY;
  for (size_t i = 0; i < count; i++) {
    char tag[64] = {0};
    if (targets[i] == NULL || strlen(targets[i]) >= sizeof(tag) ||
        images[i] == NULL || sizes[i] == 0) {
      return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: entry %zu needs a target of 1 to 63 "
                         "characters and a non-empty image",
                         what, i);
    }
    memcpy(tag, targets[i], strlen(targets[i]));
    if (!accel__tag_valid(tag, sizeof(tag))) {
      return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: entry %zu: target '%s' is not 1 to 63 "
                         "characters of [A-Za-z0-9._+-]",
                         what, i, targets[i]);
    }
    total = (total + ACCEL__BUNDLE_IMAGE_ALIGN - 1) /
            ACCEL__BUNDLE_IMAGE_ALIGN * ACCEL__BUNDLE_IMAGE_ALIGN;
    if (sizes[i] > SIZE_MAX / 2 || total + sizes[i] > SIZE_MAX / 2) {
      return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: the images are too large for one bundle", what);
    }
    total += sizes[i];
  }
  *out_size = (size_t)total;
  if (out == NULL) return ACCEL_OK;  // size query
  if (capacity < total) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: the bundle needs %llu bytes, out has %zu", what,
                       (unsigned long long)total, capacity);
  }
  uint8_t* p = out;
  memset(p, 0, (size_t)total);
  memcpy(p, ACCEL__BUNDLE_MAGIC, 8);
  accel__put_le(p + 8, ACCEL__BUNDLE_VERSION, 4);
  accel__put_le(p + 12, count, 4);
  uint64_t at = ACCEL__BUNDLE_HEADER + count * ACCEL__BUNDLE_ENTRY;
  for (size_t i = 0; i < count; i++) {
    at = (at + ACCEL__BUNDLE_IMAGE_ALIGN - 1) / ACCEL__BUNDLE_IMAGE_ALIGN *
         ACCEL__BUNDLE_IMAGE_ALIGN;
    uint8_t* e = p + ACCEL__BUNDLE_HEADER + i * ACCEL__BUNDLE_ENTRY;
    memcpy(e, targets[i], strlen(targets[i]));
    accel__put_le(e + 64, at, 8);
    accel__put_le(e + 72, sizes[i], 8);
    memcpy(p + at, images[i], sizes[i]);
    at += sizes[i];
  }
  return ACCEL_OK;
}

accel_status_t accel_image_describe(const void* image, size_t size,
                                    char* target, size_t target_size,
                                    char* description,
                                    size_t description_size) {
  if (image == NULL || target == NULL || target_size == 0 ||
      description == NULL || description_size == 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_image_describe: image, target and description "
                       "(with sizes > 0) are required");
  }
  accel__image_describe(image, size, target, target_size, description,
                        description_size);
  return ACCEL_OK;
}

// ---------------------------------------------------------------------------
// Picking an image for a device.
// ---------------------------------------------------------------------------

// Appends `s` to the list in `out`, separated by ", ".
static void accel__append(char* out, size_t n, const char* s) {
  size_t used = strlen(out);
  const char* parts[2] = {used != 0 ? ", " : "", s};
  for (int k = 0; k < 2; k++) {
    size_t len = strlen(parts[k]);
    if (len > n - 1 - used) len = n - 1 - used;  // truncate
    memcpy(out + used, parts[k], len);
    used += len;
    out[used] = '\0';
  }
}

// Orders the entries of a bundle for `device` into `order` (indexes):
// exact module_target, then same family (host ELF only exactly), then
// each of module_formats in the device's order. Returns how many fit.
static size_t accel__bundle_order(const accel_device_t* device,
                                  const accel_bundle_entry_t* entries,
                                  size_t count, size_t* order) {
  bool taken[ACCEL_BUNDLE_MAX_ENTRIES] = {false};
  size_t n = 0;
  const char* want = device->module_target;
  size_t want_fam = accel__family_len(want);
  for (int pass = 0; pass < 2 && want[0] != '\0'; pass++) {
    for (size_t i = 0; i < count; i++) {
      const char* tag = entries[i].target;
      bool fits = pass == 0 ? strcmp(tag, want) == 0
                            : accel__family_len(tag) == want_fam &&
                                  memcmp(tag, want, want_fam) == 0 &&
                                  strncmp(want, "elf", want_fam) != 0;
      if (fits && !taken[i]) {
        taken[i] = true;
        order[n++] = i;
      }
    }
  }
  // Formats: word by word, in the device's order of preference.
  const char* f = device->module_formats;
  while (*f != '\0') {
    while (*f == ' ') f++;
    size_t len = strcspn(f, " ");
    for (size_t i = 0; len != 0 && i < count; i++) {
      const char* tag = entries[i].target;
      bool fits = (strlen(tag) == len || accel__family_len(tag) == len) &&
                  memcmp(tag, f, len) == 0;
      if (fits && !taken[i]) {
        taken[i] = true;
        order[n++] = i;
      }
    }
    f += len;
  }
  return n;
}

accel_status_t accel__bundle_load(const char* what, accel_device_t* device,
                                  const void* image, size_t size,
                                  void** out_impl) {
  accel_bundle_entry_t entries[ACCEL_BUNDLE_MAX_ENTRIES];
  size_t count = 0;
  accel_status_t status = accel_bundle_parse(
      image, size, ACCEL_BUNDLE_MAX_ENTRIES, entries, &count);
  if (status != ACCEL_OK) {
    char reason[512];
    snprintf(reason, sizeof(reason), "%s", accel_last_error());
    return accel__fail(status, "%s: %s", what, reason);
  }
  size_t order[ACCEL_BUNDLE_MAX_ENTRIES];
  size_t n = accel__bundle_order(device, entries, count, order);
  char held[1024] = "", loads[256];
  for (size_t i = 0; i < count; i++) {
    accel__append(held, sizeof(held), entries[i].target);
  }
  accel__device_loads(device, loads, sizeof(loads));
  if (n == 0) {
    return accel__fail(ACCEL_ERROR_INCOMPATIBLE,
                       "%s: the kernel bundle holds %s; %s loads %s", what,
                       held, device->uri, loads);
  }
  char tried[2048] = "";
  for (size_t k = 0; k < n; k++) {
    const accel_bundle_entry_t* e = &entries[order[k]];
    const uint8_t* p = (const uint8_t*)image + e->offset;
    char target[64], description[256];
    accel__image_describe(p, (size_t)e->size, target, sizeof(target),
                          description, sizeof(description));
    if (strcmp(target, "accel-bundle") == 0) {
      status = accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                           "a bundle inside a bundle is not loaded");
    } else {
      status = accel__module_load_image(what, device, p, (size_t)e->size,
                                        target, description, out_impl);
    }
    if (status == ACCEL_OK) {
      accel__log(ACCEL_LOG_DEBUG, "%s: loaded the %s image of a bundle on %s",
                 what, e->target, device->uri);
      return ACCEL_OK;
    }
    char line[600];
    snprintf(line, sizeof(line), "[%s: %.500s]", e->target,
             accel_last_error());
    accel__append(tried, sizeof(tried), line);
  }
  return accel__fail(status,
                     "%s: no image of the kernel bundle (holding %s) loaded "
                     "on %s: %s",
                     what, held, device->uri, tried);
}
