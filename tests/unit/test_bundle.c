// SPDX-License-Identifier: MIT
//
// The kernel bundle format (accel_bundle_write, accel_bundle_parse) and
// accel_image_describe, with untrusted input: truncated bundles, entries
// that overlap, point outside the file or into the table, huge counts,
// bad tags and versions are refused cleanly, never read out of bounds.
#include <accel/accel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

static const char* const kTags[] = {"elf-x86_64", "cuda-fatbin", "opencl-c"};
static const char kA[] = "first image";
static const char kB[] = "the second image, longer";
static const char kC[] = "__kernel void f() {}";

// A three-entry bundle, malloc'd.
static unsigned char* make(size_t* out_size) {
  const void* images[] = {kA, kB, kC};
  size_t sizes[] = {sizeof(kA), sizeof(kB), sizeof(kC) - 1};
  if (accel_bundle_write(3, kTags, images, sizes, NULL, 0, out_size) !=
      ACCEL_OK) {
    return NULL;
  }
  unsigned char* out = malloc(*out_size);
  if (out != NULL && accel_bundle_write(3, kTags, images, sizes, out,
                                        *out_size, out_size) != ACCEL_OK) {
    free(out);
    return NULL;
  }
  return out;
}

static void put32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static accel_status_t parse(const unsigned char* b, size_t size) {
  accel_bundle_entry_t entries[ACCEL_BUNDLE_MAX_ENTRIES];
  size_t count = 0;
  return accel_bundle_parse(b, size, ACCEL_BUNDLE_MAX_ENTRIES, entries,
                            &count);
}

TEST(round_trip) {
  size_t size = 0;
  unsigned char* b = make(&size);
  ASSERT_NOT_NULL(b);
  accel_bundle_entry_t entries[ACCEL_BUNDLE_MAX_ENTRIES];
  size_t count = 0;
  ASSERT_OK(accel_bundle_parse(b, size, ACCEL_BUNDLE_MAX_ENTRIES, entries,
                               &count));
  ASSERT_EQ(count, 3u);
  ASSERT_STR_EQ(entries[1].target, "cuda-fatbin");
  ASSERT_EQ(entries[1].size, sizeof(kB));
  ASSERT_MEM_EQ(b + entries[1].offset, kB, sizeof(kB));
  ASSERT_MEM_EQ(b + entries[2].offset, kC, sizeof(kC) - 1);
  ASSERT_EQ(entries[0].offset % 64, 0u);
  char target[64], desc[256];
  ASSERT_OK(accel_image_describe(b, size, target, sizeof(target), desc,
                                 sizeof(desc)));
  ASSERT_STR_EQ(target, "accel-bundle");
  // Too little room for the entries.
  ASSERT_STATUS(accel_bundle_parse(b, size, 2, entries, &count),
                ACCEL_ERROR_INVALID_ARGUMENT);
  free(b);
}

TEST(every_truncation_is_refused) {
  size_t size = 0;
  unsigned char* b = make(&size);
  ASSERT_NOT_NULL(b);
  for (size_t n = 0; n < size; n++) {
    // A fresh copy of exactly n bytes, so ASan sees any overread.
    unsigned char* cut = malloc(n != 0 ? n : 1);
    ASSERT_NOT_NULL(cut);
    memcpy(cut, b, n);
    ASSERT_STATUS(parse(cut, n), ACCEL_ERROR_INVALID_ARGUMENT);
    free(cut);
  }
  free(b);
}

TEST(bad_headers_and_entries) {
  size_t size = 0;
  unsigned char* b = make(&size);
  ASSERT_NOT_NULL(b);
  unsigned char* m = malloc(size);
  ASSERT_NOT_NULL(m);
  // Huge and zero counts.
  memcpy(m, b, size);
  put32(m + 12, 0xffffffffu);
  ASSERT_STATUS(parse(m, size), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "entries; a bundle holds 1 to 64");
  put32(m + 12, 0);
  ASSERT_STATUS(parse(m, size), ACCEL_ERROR_INVALID_ARGUMENT);
  // Another version.
  memcpy(m, b, size);
  put32(m + 8, 2);
  ASSERT_STATUS(parse(m, size), ACCEL_ERROR_INCOMPATIBLE);
  // Entry 1 overlapping entry 0.
  memcpy(m, b, size);
  put64(m + 16 + 80 + 64, 0);
  uint64_t off0 = 0;
  for (int i = 0; i < 8; i++) off0 |= (uint64_t)m[16 + 64 + i] << (8 * i);
  put64(m + 16 + 80 + 64, off0 + 1);
  ASSERT_STATUS(parse(m, size), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "overlap");
  // An offset + size that wraps around 2^64, and one into the table.
  memcpy(m, b, size);
  put64(m + 16 + 64, UINT64_MAX - 7);
  put64(m + 16 + 72, 16);
  ASSERT_STATUS(parse(m, size), ACCEL_ERROR_INVALID_ARGUMENT);
  memcpy(m, b, size);
  put64(m + 16 + 64, 16);
  ASSERT_STATUS(parse(m, size), ACCEL_ERROR_INVALID_ARGUMENT);
  // Size 0, and a size past the end.
  memcpy(m, b, size);
  put64(m + 16 + 72, 0);
  ASSERT_STATUS(parse(m, size), ACCEL_ERROR_INVALID_ARGUMENT);
  memcpy(m, b, size);
  put64(m + 16 + 2 * 80 + 72, UINT64_MAX);
  ASSERT_STATUS(parse(m, size), ACCEL_ERROR_INVALID_ARGUMENT);
  // Tags: not terminated, empty, odd characters, bytes after the NUL.
  memcpy(m, b, size);
  memset(m + 16, 'a', 64);
  ASSERT_STATUS(parse(m, size), ACCEL_ERROR_INVALID_ARGUMENT);
  memcpy(m, b, size);
  m[16] = '\0';
  ASSERT_STATUS(parse(m, size), ACCEL_ERROR_INVALID_ARGUMENT);
  memcpy(m, b, size);
  m[16] = '\n';
  ASSERT_STATUS(parse(m, size), ACCEL_ERROR_INVALID_ARGUMENT);
  memcpy(m, b, size);
  m[16 + 60] = 'x';
  ASSERT_STATUS(parse(m, size), ACCEL_ERROR_INVALID_ARGUMENT);
  // The unmodified copy still parses.
  memcpy(m, b, size);
  ASSERT_OK(parse(m, size));
  free(m);
  free(b);
}

TEST(write_refuses_bad_input) {
  const void* images[] = {kA};
  size_t sizes[] = {sizeof(kA)};
  size_t size = 0;
  const char* bad[] = {"has space"};
  ASSERT_STATUS(accel_bundle_write(1, bad, images, sizes, NULL, 0, &size),
                ACCEL_ERROR_INVALID_ARGUMENT);
  const char* empty[] = {""};
  ASSERT_STATUS(accel_bundle_write(1, empty, images, sizes, NULL, 0, &size),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_bundle_write(0, kTags, images, sizes, NULL, 0, &size),
                ACCEL_ERROR_INVALID_ARGUMENT);
  size_t zero[] = {0};
  ASSERT_STATUS(accel_bundle_write(1, kTags, images, zero, NULL, 0, &size),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_OK(accel_bundle_write(1, kTags, images, sizes, NULL, 0, &size));
  unsigned char small[64];
  ASSERT_STATUS(
      accel_bundle_write(1, kTags, images, sizes, small, sizeof(small), &size),
      ACCEL_ERROR_INVALID_ARGUMENT);
}

TEST(describe_spirv_and_opencl_c) {
  char target[64], desc[256];
  // OpCapability Addresses; OpMemoryModel Physical64 OpenCL.
  uint32_t le[] = {0x07230203u, 0x00010500u, 0, 1, 0, (2u << 16) | 17u, 4u,
                   (3u << 16) | 14u, 2u, 2u};
  ASSERT_OK(accel_image_describe(le, sizeof(le), target, sizeof(target), desc,
                                 sizeof(desc)));
  ASSERT_STR_EQ(target, "spirv");
  ASSERT_STR_EQ(desc,
                "a SPIR-V 1.5 module (little-endian, Physical64 addressing, "
                "OpenCL memory model) (spirv)");
  // The same module byte-swapped.
  uint32_t be[sizeof(le) / 4];
  for (size_t i = 0; i < sizeof(le) / 4; i++) {
    uint32_t v = le[i];
    be[i] = (v >> 24) | ((v >> 8) & 0xff00u) | ((v << 8) & 0xff0000u) |
            (v << 24);
  }
  ASSERT_OK(accel_image_describe(be, sizeof(be), target, sizeof(target), desc,
                                 sizeof(desc)));
  ASSERT_STR_EQ(target, "spirv");
  ASSERT_STR_CONTAINS(desc, "SPIR-V 1.5 module (big-endian, Physical64");
  // A word count of 0 must not loop, a count past the end must not read.
  le[5] = 17u;
  ASSERT_OK(accel_image_describe(le, sizeof(le), target, sizeof(target), desc,
                                 sizeof(desc)));
  ASSERT_STR_EQ(target, "spirv");
  le[5] = (0xffffu << 16) | 17u;
  ASSERT_OK(accel_image_describe(le, sizeof(le), target, sizeof(target), desc,
                                 sizeof(desc)));
  ASSERT_STR_EQ(desc, "a SPIR-V 1.5 module (little-endian) (spirv)");
  ASSERT_OK(accel_image_describe(le, 8, target, sizeof(target), desc,
                                 sizeof(desc)));
  ASSERT_STR_EQ(desc, "a truncated SPIR-V module (spirv)");
  static const char cl[] =
      "/* adds */\n__kernel void vadd(__global float* x) { x[0] += 1; }";
  ASSERT_OK(accel_image_describe(cl, sizeof(cl) - 1, target, sizeof(target),
                                 desc, sizeof(desc)));
  ASSERT_STR_EQ(target, "unknown");
  ASSERT_STR_CONTAINS(desc, "looks like OpenCL C source (first kernel 'vadd')");
  static const char cl2[] = "kernel void add_one(global int* p) { *p += 1; }";
  ASSERT_OK(accel_image_describe(cl2, sizeof(cl2) - 1, target, sizeof(target),
                                 desc, sizeof(desc)));
  ASSERT_STR_CONTAINS(desc, "first kernel 'add_one'");
  static const char text[] = "hello world\nsecond line";
  ASSERT_OK(accel_image_describe(text, sizeof(text) - 1, target,
                                 sizeof(target), desc, sizeof(desc)));
  ASSERT_STR_EQ(desc,
                "23 bytes of text of an unknown format (starting \"hello "
                "world\")");
  ASSERT_STATUS(accel_image_describe(NULL, 1, target, sizeof(target), desc,
                                     sizeof(desc)),
                ACCEL_ERROR_INVALID_ARGUMENT);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
