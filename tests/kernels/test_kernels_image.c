// SPDX-License-Identifier: MIT
//
// The module image sniffer (core/src/image.c, compiled into this test):
// known images give the documented targets, and a deterministic fuzz smoke
// run feeds it thousands of random, truncated and mutated ELF, PTX, fatbin
// and bundle images, each in a heap block of exactly its size, so the ASan
// build catches any read out of bounds. Device URI parsing gets the same
// treatment through accel_device_open().
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"
#include "kernels_test.h"
#include "test.h"

#define FUZZ_ITERATIONS 20000

static void put16(unsigned char* p, uint16_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

// An ELF64 LE image of `machine` with three sections: null, .nv_fatbin
// (when `fatbin_section`) or .text, and .shstrtab. Returns its size (<=
// 512).
static size_t make_elf64(unsigned char* out, uint16_t machine, uint32_t flags,
                         uint8_t abi, bool fatbin_section) {
  memset(out, 0, 512);
  memcpy(out, "\177ELF", 4);
  out[4] = 2;
  out[5] = 1;
  out[6] = 1;
  out[8] = abi;
  put16(out + 16, 3);  // ET_DYN
  put16(out + 18, machine);
  put32(out + 20, 1);
  put32(out + 48, flags);
  put16(out + 52, 64);
  // String table at 64.
  static const char names[] = "\0.nv_fatbin\0.shstrtab\0.text";
  memcpy(out + 64, names, sizeof(names));
  // Section headers at 128: 3 x 64 bytes.
  put64(out + 40, 128);  // e_shoff
  put16(out + 58, 64);   // e_shentsize
  put16(out + 60, 3);    // e_shnum
  put16(out + 62, 2);    // e_shstrndx
  unsigned char* sh1 = out + 128 + 64;
  put32(sh1, fatbin_section ? 1 : 22);  // sh_name
  unsigned char* sh2 = out + 128 + 128;
  put32(sh2, 12);                  // ".shstrtab"
  put64(sh2 + 24, 64);             // sh_offset
  put64(sh2 + 32, sizeof(names));  // sh_size
  return 128 + 3 * 64;
}

// Describes `size` bytes of `data` from an exact-size heap copy.
static void describe(const void* data, size_t size, char* target,
                     size_t target_size, char* desc, size_t desc_size) {
  void* copy = malloc(size != 0 ? size : 1);
  if (copy == NULL) return;
  memcpy(copy, data, size);
  accel__image_describe(copy, size, target, target_size, desc, desc_size);
  free(copy);
}

static bool expect_target(const void* data, size_t size, const char* want,
                          const char* desc_part) {
  char target[64], desc[256];
  describe(data, size, target, sizeof(target), desc, sizeof(desc));
  if (strcmp(target, want) != 0 ||
      (desc_part != NULL && strstr(desc, desc_part) == NULL)) {
    fprintf(stderr, "  got %s (%s), want %s (%s)\n", target, desc, want,
            desc_part != NULL ? desc_part : "");
    return false;
  }
  return true;
}

TEST(known_images) {
  unsigned char elf[512];
  size_t n = make_elf64(elf, 62, 0, 0, false);
  ASSERT(expect_target(elf, n, "elf-x86_64", "64-bit x86_64 ELF object"));
  n = make_elf64(elf, 62, 0, 0, true);
  ASSERT(expect_target(elf, n, "elf-x86_64", ".nv_fatbin"));
  n = make_elf64(elf, 183, 0, 0, false);
  ASSERT(expect_target(elf, n, "elf-aarch64", NULL));
  // CUDA: SM in the low byte for ELFABIVERSION_CUDA_V1 (7), in the second
  // byte for V2 (8); values as cuobjdump prints them.
  const struct {
    uint32_t flags;
    uint8_t abi;
    const char* target;
  } cuda[] = {
      {0x460546, 7, "cuda-sm_70"},   {0x500550, 7, "cuda-sm_80"},
      {0x560556, 7, "cuda-sm_86"},   {0x5a055a, 7, "cuda-sm_90"},
      {0x6006402, 8, "cuda-sm_100"}, {0x6007802, 8, "cuda-sm_120"},
      {0x6007902, 8, "cuda-sm_121"}, {0x5a055a, 0, "cuda-sm_90"},
      {0, 7, "cuda-unknown"},
  };
  for (size_t i = 0; i < sizeof(cuda) / sizeof(cuda[0]); i++) {
    n = make_elf64(elf, 190, cuda[i].flags, cuda[i].abi, false);
    ASSERT(expect_target(elf, n, cuda[i].target, NULL));
  }
  // AMD: EF_AMDGPU_MACH in the low byte; feature bits above it ignored.
  const struct {
    uint32_t flags;
    const char* target;
  } amd[] = {
      {0x30, "amdgcn-gfx908"},       {0x3f, "amdgcn-gfx90a"},
      {0x54c, "amdgcn-gfx942"},      {0x41, "amdgcn-gfx1100"},
      {0x4e, "amdgcn-gfx1201"},      {0x2f, "amdgcn-gfx906"},
      {0x36, "amdgcn-gfx1030"},      {0x4f, "amdgcn-gfx950"},
      {0x51, "amdgcn-gfx9-generic"}, {0xee, "amdgcn-unknown"},
  };
  for (size_t i = 0; i < sizeof(amd) / sizeof(amd[0]); i++) {
    n = make_elf64(elf, 224, amd[i].flags, 3, false);
    ASSERT(expect_target(elf, n, amd[i].target, NULL));
  }
  // A 32-bit or big-endian host object has a target no device loads.
  n = make_elf64(elf, 62, 0, 0, false);
  elf[4] = 1;
  ASSERT(expect_target(elf, n, "elf-x86_64-32-bit", NULL));
  n = make_elf64(elf, 0, 0, 0, false);
  elf[5] = 2;
  elf[19] = 62;  // big-endian e_machine 62
  ASSERT(expect_target(elf, n, "elf-x86_64-64-bit-be", NULL));

  static const char ptx[] =
      "  /* header */ // comment\n\t.version 7.8\n.target sm_90a\n"
      ".address_size 64\n";
  ASSERT(expect_target(ptx, sizeof(ptx) - 1, "cuda-ptx-sm_90a", NULL));
  static const char ptx_no_target[] = ".version 7.0\n.address_size 64\n";
  ASSERT(expect_target(ptx_no_target, sizeof(ptx_no_target) - 1, "cuda-ptx",
                       NULL));
  static const char not_ptx[] = "// only a comment\n";
  ASSERT(expect_target(not_ptx, sizeof(not_ptx) - 1, "unknown", NULL));

  unsigned char fatbin[32] = {0};
  put32(fatbin, 0xBA55ED50u);
  ASSERT(expect_target(fatbin, sizeof(fatbin), "cuda-fatbin", NULL));
  ASSERT(expect_target(fatbin, 4, "cuda-fatbin", NULL));
  ASSERT(expect_target(fatbin, 3, "unknown", NULL));

  unsigned char bundle[128] = {0};
  memcpy(bundle, "__CLANG_OFFLOAD_BUNDLE__", 24);
  put64(bundle + 24, 1);
  static const char triple[] = "hipv4-amdgcn-amd-amdhsa--gfx90a";
  put64(bundle + 32, 100);  // offset
  put64(bundle + 40, 0);    // size
  put64(bundle + 48, sizeof(triple) - 1);
  memcpy(bundle + 56, triple, sizeof(triple) - 1);
  ASSERT(expect_target(bundle, sizeof(bundle), "amdgcn-bundle", triple));

  ASSERT(expect_target("", 0, "unknown", "no data"));
  ASSERT(expect_target("\x01\x02\x03", 3, "unknown", "01 02 03"));
  // Too short to be the ELF it claims.
  n = make_elf64(elf, 62, 0, 0, false);
  ASSERT(expect_target(elf, 15, "unknown", NULL));
  ASSERT(expect_target(elf, 19, "unknown", NULL));
  // e_flags (48..51) is the last field needed; no section table is fine.
  ASSERT(expect_target(elf, 52, "elf-x86_64", NULL));
}

// Small buffers truncate, never overflow.
TEST(small_outputs) {
  unsigned char elf[512];
  size_t n = make_elf64(elf, 224, 0x3f, 3, false);
  char target[4], desc[8];
  describe(elf, n, target, sizeof(target), desc, sizeof(desc));
  ASSERT_STR_EQ(target, "amd");
  ASSERT_EQ(strlen(desc), 7);
}

// Applies one random mutation to `buf` of `*size` bytes (capacity `cap`).
static void mutate(kt_rng_t* rng, unsigned char* buf, size_t* size,
                   size_t cap) {
  switch (kt_next(rng) % 6) {
    case 0:  // flip a byte
      if (*size) buf[kt_next(rng) % *size] ^= (unsigned char)kt_next(rng);
      break;
    case 1:  // truncate
      if (*size) *size = kt_next(rng) % *size;
      break;
    case 2:  // an extreme value in a header field
      if (*size >= 8) {
        size_t at = kt_next(rng) % (*size - 7);
        uint64_t v = kt_next(rng) & 1 ? UINT64_MAX : kt_next(rng) % 4096;
        size_t width = (size_t)1 << (kt_next(rng) % 4);
        for (size_t i = 0; i < width; i++)
          buf[at + i] = (unsigned char)(v >> (8 * i));
      }
      break;
    case 3:  // grow with random bytes
      while (*size < cap && kt_next(rng) % 8)
        buf[(*size)++] = (unsigned char)kt_next(rng);
      break;
    case 4:  // a field of the ELF header specifically
      if (*size >= 64) {
        static const size_t fields[] = {4, 5, 8, 18, 40, 48, 58, 60, 62};
        size_t at = fields[kt_next(rng) % 9];
        buf[at] = (unsigned char)kt_next(rng);
        buf[at + 1] = (unsigned char)kt_next(rng);
      }
      break;
    default:  // a section header field
      if (*size >= 320) {
        size_t at = 128 + kt_next(rng) % 192;
        buf[at] = (unsigned char)(kt_next(rng) & 1 ? 0xff : kt_next(rng));
      }
      break;
  }
}

TEST(fuzz_smoke_images) {
  enum { CAP = 1024 };
  unsigned char seeds[6][CAP];
  size_t seed_sizes[6];
  seed_sizes[0] = make_elf64(seeds[0], 62, 0, 0, true);
  seed_sizes[1] = make_elf64(seeds[1], 190, 0x5a055a, 7, false);
  seed_sizes[2] = make_elf64(seeds[2], 224, 0x3f, 3, true);
  static const char ptx[] = "// c\n.version 8.0\n.target sm_80\n";
  memcpy(seeds[3], ptx, sizeof(ptx) - 1);
  seed_sizes[3] = sizeof(ptx) - 1;
  memset(seeds[4], 0, 128);
  memcpy(seeds[4], "__CLANG_OFFLOAD_BUNDLE__", 24);
  put64(seeds[4] + 24, 3);
  put64(seeds[4] + 48, 31);
  memcpy(seeds[4] + 56, "hipv4-amdgcn-amd-amdhsa--gfx90a", 31);
  seed_sizes[4] = 128;
  memset(seeds[5], 0, 64);
  put32(seeds[5], 0xBA55ED50u);
  seed_sizes[5] = 64;

  // Every prefix of every seed.
  char target[64], desc[256];
  for (int s = 0; s < 6; s++) {
    for (size_t len = 0; len <= seed_sizes[s]; len++) {
      describe(seeds[s], len, target, sizeof(target), desc, sizeof(desc));
      ASSERT(strlen(target) < sizeof(target));
    }
  }
  kt_rng_t rng = {0x5eed};
  unsigned char buf[CAP];
  for (int i = 0; i < FUZZ_ITERATIONS; i++) {
    int s = (int)(kt_next(&rng) % 7);
    size_t size;
    if (s == 6) {  // pure noise, sometimes behind an ELF magic
      size = kt_next(&rng) % 200;
      for (size_t j = 0; j < size; j++) buf[j] = (unsigned char)kt_next(&rng);
      if (size >= 4 && kt_next(&rng) % 2) memcpy(buf, "\177ELF", 4);
    } else {
      size = seed_sizes[s];
      memcpy(buf, seeds[s], size);
    }
    int rounds = 1 + (int)(kt_next(&rng) % 4);
    for (int r = 0; r < rounds; r++) mutate(&rng, buf, &size, CAP);
    describe(buf, size, target, sizeof(target), desc, sizeof(desc));
    ASSERT(target[0] != '\0');
    ASSERT(strlen(desc) < sizeof(desc));
  }
}

// accel_device_open() parses URIs from callers: random and mutated names
// must give a status, never a crash, and never open a device that is not
// "<backend>" or "<backend>:<n>" spelled exactly (cpu, or a GPU backend on
// a GPU node).
TEST(fuzz_smoke_uris) {
  static const char* const seeds[] = {
      "cpu:0",          "cpu", "cpu:1", "cuda:0", "cpu:00", "cpu:-1",
      "cpu:4294967296", ":0",  "cpu:",  "auto"};
  kt_rng_t rng = {77};
  char uri[80];
  for (int i = 0; i < 3000; i++) {
    const char* seed = seeds[kt_next(&rng) % 10];
    size_t len = strlen(seed);
    memcpy(uri, seed, len + 1);
    int edits = (int)(kt_next(&rng) % 4);
    for (int e = 0; e < edits; e++) {
      uint64_t r = kt_next(&rng);
      if (r % 3 == 0 && len + 1 < sizeof(uri)) {
        uri[len++] = (char)(1 + kt_next(&rng) % 255);  // append
        uri[len] = '\0';
      } else if (r % 3 == 1 && len > 0) {
        uri[kt_next(&rng) % len] = (char)(1 + kt_next(&rng) % 255);
      } else if (len > 0) {
        uri[--len] = '\0';
      }
    }
    accel_device_t* device = NULL;
    accel_status_t s = accel_device_open(uri, &device);
    if (s == ACCEL_OK) {
      const char* backend = accel_device_backend(device);
      size_t n = strlen(backend);
      ASSERT(strncmp(uri, backend, n) == 0);
      ASSERT(uri[n] == '\0' ||
             (uri[n] == ':' && uri[n + 1] >= '0' && uri[n + 1] <= '9'));
      accel_device_release(device);
    } else {
      ASSERT_NULL(device);
      ASSERT(accel_last_error()[0] != '\0');
    }
  }
  accel_device_t* device = (accel_device_t*)1;
  ASSERT(accel_device_open(NULL, &device) != ACCEL_OK);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
