// SPDX-License-Identifier: MIT
//
// Module image sniffing: which backend and architecture a kernel binary is
// for, so a module built for the wrong target is rejected by the core with
// a message naming both, before a plugin sees it. The input is untrusted:
// every read goes through accel__rd*(), which checks bounds, and header
// fields are never used as offsets without checking them against `size`.
//
// Facts used (all little-endian on the wire unless the ELF says otherwise):
// - ELF: e_ident[EI_CLASS] 1/2 = 32/64-bit, e_ident[EI_DATA] 1/2 = LE/BE;
//   e_machine at 18, e_flags at 36 (ELF32) or 48 (ELF64); section headers
//   at e_shoff (32/40), e_shentsize (46/58), e_shnum (48/60), e_shstrndx
//   (50/62). EM_X86_64 62, EM_AARCH64 183, EM_CUDA 190, EM_AMDGPU 224.
// - CUDA cubins (LLVM BinaryFormat/ELF.h): e_ident[EI_ABIVERSION] 7
//   (ELFABIVERSION_CUDA_V1) keeps the SM in the low byte of e_flags
//   (EF_CUDA_SM = 0xff, 0x5a for sm_90); 8 (ELFABIVERSION_CUDA_V2, CUDA
//   12.8+ for Blackwell) keeps it in the second byte (EF_CUDA_SM_MASK =
//   0xff00, 0x6400 for sm_100); cuobjdump shows e_flags 0x5a055a for sm_90
//   and 0x6006402 for sm_100.
// - AMD code objects: e_flags & EF_AMDGPU_MACH (0xff) is the processor,
//   EF_AMDGPU_MACH_AMDGCN_* in LLVM's ELF.h (0x3f gfx90a, 0x4c gfx942).
// - CUDA fatbin: a header starting with magic 0xBA55ED50 (LE u32); in a host
//   object it sits in a section named .nv_fatbin.
// - PTX: text whose first directive is .version, with a .target sm_XX.
// - Clang offload bundle: "__CLANG_OFFLOAD_BUNDLE__", u64 entry count, then
//   per entry u64 offset, u64 size, u64 triple length and the triple.
// - SPIR-V (Khronos SPIR-V spec, 2.3 "Physical Layout"): 32-bit words in
//   either byte order, word 0 the magic 0x07230203, word 1 the version
//   0x00MMmm00, then generator, bound and schema; instructions follow, each
//   starting with (word count << 16) | opcode. OpMemoryModel (opcode 14)
//   carries the addressing model (0 Logical, 1 Physical32, 2 Physical64,
//   5348 PhysicalStorageBuffer64) and the memory model (0 Simple, 1
//   GLSL450, 2 OpenCL, 3 Vulkan).
// - An accel kernel bundle (bundle.c): "ACCELBDL" and a u32 version.
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

#define ACCEL__EM_X86_64 62
#define ACCEL__EM_AARCH64 183
#define ACCEL__EM_CUDA 190
#define ACCEL__EM_AMDGPU 224
#define ACCEL__FATBIN_MAGIC 0xBA55ED50u
#define ACCEL__BUNDLE_MAGIC "__CLANG_OFFLOAD_BUNDLE__"

// A bounded view of the image.
typedef struct accel__bytes {
  const uint8_t* p;
  size_t size;
  bool big_endian;
} accel__bytes_t;

// Reads a `width`-byte unsigned integer at `at`; false when it does not fit.
static bool accel__rd(const accel__bytes_t* b, uint64_t at, unsigned width,
                      uint64_t* out) {
  if (at > b->size || width > b->size - at) return false;
  uint64_t v = 0;
  for (unsigned i = 0; i < width; i++) {
    unsigned shift = b->big_endian ? 8 * (width - 1 - i) : 8 * i;
    v |= (uint64_t)b->p[at + i] << shift;
  }
  *out = v;
  return true;
}

static void accel__put(char* dst, size_t n, const char* format, ...)
    ACCEL__PRINTF(3, 4);

static void accel__put(char* dst, size_t n, const char* format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(dst, n, format, args);
  va_end(args);
}

// ---------------------------------------------------------------------------
// AMD GPU processors.
// ---------------------------------------------------------------------------

typedef struct accel__amdgpu_mach {
  uint8_t mach;
  const char* name;
} accel__amdgpu_mach_t;

// EF_AMDGPU_MACH_AMDGCN_* from LLVM's include/llvm/BinaryFormat/ELF.h.
static const accel__amdgpu_mach_t accel__amdgpu_machs[] = {
    {0x20, "gfx600"},          {0x21, "gfx601"},
    {0x22, "gfx700"},          {0x23, "gfx701"},
    {0x24, "gfx702"},          {0x25, "gfx703"},
    {0x26, "gfx704"},          {0x28, "gfx801"},
    {0x29, "gfx802"},          {0x2a, "gfx803"},
    {0x2b, "gfx810"},          {0x2c, "gfx900"},
    {0x2d, "gfx902"},          {0x2e, "gfx904"},
    {0x2f, "gfx906"},          {0x30, "gfx908"},
    {0x31, "gfx909"},          {0x32, "gfx90c"},
    {0x33, "gfx1010"},         {0x34, "gfx1011"},
    {0x35, "gfx1012"},         {0x36, "gfx1030"},
    {0x37, "gfx1031"},         {0x38, "gfx1032"},
    {0x39, "gfx1033"},         {0x3a, "gfx602"},
    {0x3b, "gfx705"},          {0x3c, "gfx805"},
    {0x3d, "gfx1035"},         {0x3e, "gfx1034"},
    {0x3f, "gfx90a"},          {0x40, "gfx940"},
    {0x41, "gfx1100"},         {0x42, "gfx1013"},
    {0x43, "gfx1150"},         {0x44, "gfx1103"},
    {0x45, "gfx1036"},         {0x46, "gfx1101"},
    {0x47, "gfx1102"},         {0x48, "gfx1200"},
    {0x49, "gfx1250"},         {0x4a, "gfx1151"},
    {0x4b, "gfx941"},          {0x4c, "gfx942"},
    {0x4e, "gfx1201"},         {0x4f, "gfx950"},
    {0x51, "gfx9-generic"},    {0x52, "gfx10-1-generic"},
    {0x53, "gfx10-3-generic"}, {0x54, "gfx11-generic"},
    {0x55, "gfx1152"},         {0x58, "gfx1153"},
    {0x59, "gfx12-generic"},   {0x5f, "gfx9-4-generic"},
};

static const char* accel__amdgpu_name(uint64_t flags) {
  uint8_t mach = (uint8_t)(flags & 0xff);
  size_t n = sizeof(accel__amdgpu_machs) / sizeof(accel__amdgpu_machs[0]);
  for (size_t i = 0; i < n; i++) {
    if (accel__amdgpu_machs[i].mach == mach) return accel__amdgpu_machs[i].name;
  }
  return NULL;
}

// ---------------------------------------------------------------------------
// ELF.
// ---------------------------------------------------------------------------

// True when the ELF has a section named `name` (section headers and the
// section-name string table bounds-checked against the image).
static bool accel__elf_has_section(const accel__bytes_t* b, bool is64,
                                   const char* name) {
  uint64_t shoff = 0, shentsize = 0, shnum = 0, shstrndx = 0;
  if (!accel__rd(b, is64 ? 40 : 32, is64 ? 8 : 4, &shoff) ||
      !accel__rd(b, is64 ? 58 : 46, 2, &shentsize) ||
      !accel__rd(b, is64 ? 60 : 48, 2, &shnum) ||
      !accel__rd(b, is64 ? 62 : 50, 2, &shstrndx)) {
    return false;
  }
  uint64_t min_entsize = is64 ? 64 : 40;
  if (shoff == 0 || shnum == 0 || shentsize < min_entsize ||
      shstrndx >= shnum || shoff > b->size ||
      shnum > (b->size - shoff) / shentsize) {
    return false;
  }
  // sh_offset at 24 (64-bit) or 16 (32-bit); sh_size at 32 or 20.
  unsigned word = is64 ? 8 : 4;
  uint64_t str_hdr = shoff + shstrndx * shentsize;
  uint64_t str_off = 0, str_size = 0;
  if (!accel__rd(b, str_hdr + (is64 ? 24 : 16), word, &str_off) ||
      !accel__rd(b, str_hdr + (is64 ? 32 : 20), word, &str_size) ||
      str_off > b->size || str_size > b->size - str_off) {
    return false;
  }
  size_t len = strlen(name);
  for (uint64_t i = 0; i < shnum; i++) {
    uint64_t sh_name = 0;
    if (!accel__rd(b, shoff + i * shentsize, 4, &sh_name)) return false;
    // The name and its terminator must lie inside the string table.
    if (sh_name >= str_size || len + 1 > str_size - sh_name) continue;
    const uint8_t* s = b->p + str_off + sh_name;
    if (memcmp(s, name, len) == 0 && s[len] == '\0') return true;
  }
  return false;
}

static void accel__describe_cuda_elf(const accel__bytes_t* b, uint64_t flags,
                                     char* target, size_t target_size,
                                     char* desc, size_t desc_size) {
  uint64_t abi = 0;
  accel__rd(b, 8, 1, &abi);  // e_ident[EI_ABIVERSION]; 16 bytes are known
  unsigned sm;
  if (abi == 8) {
    sm = (unsigned)((flags >> 8) & 0xff);
  } else if (abi == 7) {
    sm = (unsigned)(flags & 0xff);
  } else {
    // Unknown ABI version: take whichever byte looks like an SM number.
    sm = (unsigned)(flags & 0xff) >= 10 ? (unsigned)(flags & 0xff)
                                        : (unsigned)((flags >> 8) & 0xff);
  }
  if (sm == 0) {
    accel__put(target, target_size, "cuda-unknown");
    accel__put(desc, desc_size,
               "a CUDA cubin for an unknown SM (e_flags 0x%llx)",
               (unsigned long long)flags);
    return;
  }
  accel__put(target, target_size, "cuda-sm_%u", sm);
  accel__put(desc, desc_size, "a CUDA cubin for sm_%u (cuda-sm_%u)", sm, sm);
}

// Describes an ELF image; false if it is too broken to be one.
static bool accel__describe_elf(accel__bytes_t* b, char* target,
                                size_t target_size, char* desc,
                                size_t desc_size) {
  uint64_t cls = 0, data = 0;
  if (!accel__rd(b, 4, 1, &cls) || !accel__rd(b, 5, 1, &data)) return false;
  if ((cls != 1 && cls != 2) || (data != 1 && data != 2)) return false;
  bool is64 = cls == 2;
  b->big_endian = data == 2;
  uint64_t machine = 0, flags = 0;
  if (!accel__rd(b, 18, 2, &machine) ||
      !accel__rd(b, is64 ? 48 : 36, 4, &flags)) {
    return false;
  }
  const char* bits = is64 ? "64-bit" : "32-bit";
  switch (machine) {
    case ACCEL__EM_X86_64:
    case ACCEL__EM_AARCH64: {
      const char* arch = machine == ACCEL__EM_X86_64 ? "x86_64" : "aarch64";
      // A 32-bit or big-endian object cannot run on a 64-bit LE host even
      // with the right e_machine: give it a target no device loads.
      if (!is64 || b->big_endian) {
        accel__put(target, target_size, "elf-%s-%s%s", arch, bits,
                   b->big_endian ? "-be" : "");
      } else {
        accel__put(target, target_size, "elf-%s", arch);
      }
      bool fatbin = accel__elf_has_section(b, is64, ".nv_fatbin");
      accel__put(desc, desc_size, "a %s %s ELF object%s (%s)", bits, arch,
                 fatbin ? " with embedded CUDA code (.nv_fatbin)" : "", target);
      return true;
    }
    case ACCEL__EM_CUDA:
      accel__describe_cuda_elf(b, flags, target, target_size, desc, desc_size);
      return true;
    case ACCEL__EM_AMDGPU: {
      const char* name = accel__amdgpu_name(flags);
      if (name != NULL) {
        accel__put(target, target_size, "amdgcn-%s", name);
        accel__put(desc, desc_size, "an AMD GPU code object for %s (%s)", name,
                   target);
      } else {
        accel__put(target, target_size, "amdgcn-unknown");
        accel__put(desc, desc_size,
                   "an AMD GPU code object for an unknown processor "
                   "(EF_AMDGPU_MACH 0x%02x)",
                   (unsigned)(flags & 0xff));
      }
      return true;
    }
    default:
      accel__put(target, target_size, "elf-machine-%u", (unsigned)machine);
      accel__put(desc, desc_size, "a %s ELF object for machine %u (%s)", bits,
                 (unsigned)machine, target);
      return true;
  }
}

// ---------------------------------------------------------------------------
// Text and bundle formats.
// ---------------------------------------------------------------------------

// Skips whitespace and // or /* */ comments from `i`; returns the index
// of the first other byte (or `size`).
static size_t accel__skip_blank(const uint8_t* p, size_t size, size_t i) {
  while (i < size) {
    uint8_t c = p[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' ||
        c == '\v') {
      i++;
    } else if (c == '/' && i + 1 < size && p[i + 1] == '/') {
      while (i < size && p[i] != '\n') i++;
    } else if (c == '/' && i + 1 < size && p[i + 1] == '*') {
      i += 2;
      while (i + 1 < size && !(p[i] == '*' && p[i + 1] == '/')) i++;
      i = i + 1 < size ? i + 2 : size;
    } else {
      break;
    }
  }
  return i;
}

static bool accel__is_word(uint8_t c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_';
}

// Finds `needle` in p[from, size) at a token start; returns its index or
// `size`.
static size_t accel__find(const uint8_t* p, size_t size, size_t from,
                          const char* needle) {
  size_t len = strlen(needle);
  for (size_t i = from; i < size && len <= size - i; i++) {
    if (memcmp(p + i, needle, len) == 0 &&
        (i == 0 || !accel__is_word(p[i - 1]))) {
      return i;
    }
  }
  return size;
}

// Describes PTX text; false if `b` is not PTX.
static bool accel__describe_ptx(const accel__bytes_t* b, char* target,
                                size_t target_size, char* desc,
                                size_t desc_size) {
  static const char version[] = ".version";
  size_t i = accel__skip_blank(b->p, b->size, 0);
  if (b->size - i < sizeof(version) - 1 ||
      memcmp(b->p + i, version, sizeof(version) - 1) != 0) {
    return false;
  }
  // The .target directive follows .version; look a bounded distance, since
  // kernels of many megabytes follow.
  size_t limit = b->size - i > 4096 ? i + 4096 : b->size;
  size_t t = accel__find(b->p, limit, i, ".target");
  char arch[32] = "";
  if (t < limit) {
    size_t j = t + 7;
    while (j < limit && (b->p[j] == ' ' || b->p[j] == '\t')) j++;
    size_t n = 0;
    while (j < limit && accel__is_word(b->p[j]) && n + 1 < sizeof(arch)) {
      arch[n++] = (char)b->p[j++];
    }
    arch[n] = '\0';
  }
  if (strncmp(arch, "sm_", 3) == 0 && arch[3] != '\0') {
    accel__put(target, target_size, "cuda-ptx-%s", arch);
    accel__put(desc, desc_size, "PTX for %s (%s)", arch, target);
  } else {
    accel__put(target, target_size, "cuda-ptx");
    accel__put(desc, desc_size, "PTX without a .target sm_XX (cuda-ptx)");
  }
  return true;
}

// Describes a clang offload bundle, listing up to a few of its triples.
static void accel__describe_bundle(const accel__bytes_t* b, char* target,
                                   size_t target_size, char* desc,
                                   size_t desc_size) {
  accel__put(target, target_size, "amdgcn-bundle");
  char list[160] = "";
  size_t used = 0;
  uint64_t count = 0;
  uint64_t at = sizeof(ACCEL__BUNDLE_MAGIC) - 1;
  if (accel__rd(b, at, 8, &count)) {
    at += 8;
    for (uint64_t i = 0; i < count && i < 4; i++) {
      uint64_t len = 0;
      if (!accel__rd(b, at + 16, 8, &len)) break;
      at += 24;
      if (at > b->size || len > b->size - at) break;
      size_t take = len < 63 ? (size_t)len : 63;
      int w =
          snprintf(list + used, sizeof(list) - used, "%s%.*s",
                   used != 0 ? ", " : "", (int)take, (const char*)(b->p + at));
      if (w < 0 || (size_t)w >= sizeof(list) - used) break;
      used += (size_t)w;
      at += len;
    }
  }
  // Triples come from the file: keep only printable characters.
  for (size_t i = 0; i < used; i++) {
    if (list[i] < 0x20 || list[i] > 0x7e) list[i] = '?';
  }
  accel__put(desc, desc_size, "a clang offload bundle%s%s (amdgcn-bundle)",
             used != 0 ? " of " : "", list);
}

// ---------------------------------------------------------------------------
// SPIR-V and source text.
// ---------------------------------------------------------------------------

#define ACCEL__SPIRV_MAGIC 0x07230203u
#define ACCEL__SPIRV_OP_MEMORY_MODEL 14u
// OpMemoryModel comes after capabilities, extensions and imports; look no
// further than this many instructions for it.
#define ACCEL__SPIRV_SCAN 4096u

static const char* accel__spirv_addressing(uint64_t v) {
  switch (v) {
    case 0:
      return "Logical";
    case 1:
      return "Physical32";
    case 2:
      return "Physical64";
    case 5348:
      return "PhysicalStorageBuffer64";
    default:
      return "an unknown addressing model";
  }
}

static const char* accel__spirv_memory(uint64_t v) {
  switch (v) {
    case 0:
      return "Simple";
    case 1:
      return "GLSL450";
    case 2:
      return "OpenCL";
    case 3:
      return "Vulkan";
    default:
      return "unknown";
  }
}

// Describes a SPIR-V module; false if `b` does not start with the magic.
static bool accel__describe_spirv(accel__bytes_t* b, char* target,
                                  size_t target_size, char* desc,
                                  size_t desc_size) {
  uint64_t magic = 0, version = 0;
  b->big_endian = false;
  if (!accel__rd(b, 0, 4, &magic)) return false;
  if (magic != ACCEL__SPIRV_MAGIC) {
    b->big_endian = true;
    if (!accel__rd(b, 0, 4, &magic) || magic != ACCEL__SPIRV_MAGIC) {
      return false;
    }
  }
  accel__put(target, target_size, "spirv");
  if (!accel__rd(b, 4, 4, &version) || b->size < 20) {
    accel__put(desc, desc_size, "a truncated SPIR-V module (spirv)");
    return true;
  }
  unsigned major = (unsigned)((version >> 16) & 0xff);
  unsigned minor = (unsigned)((version >> 8) & 0xff);
  char model[96] = "";
  uint64_t at = 20;
  for (unsigned n = 0; n < ACCEL__SPIRV_SCAN; n++) {
    uint64_t word = 0;
    if (!accel__rd(b, at, 4, &word)) break;
    uint64_t count = word >> 16;
    if (count == 0) break;  // malformed: would not advance
    if ((word & 0xffff) == ACCEL__SPIRV_OP_MEMORY_MODEL && count >= 3) {
      uint64_t addressing = 0, memory = 0;
      if (accel__rd(b, at + 4, 4, &addressing) &&
          accel__rd(b, at + 8, 4, &memory)) {
        accel__put(model, sizeof(model), ", %s addressing, %s memory model",
                   accel__spirv_addressing(addressing),
                   accel__spirv_memory(memory));
      }
      break;
    }
    at += 4 * count;
  }
  accel__put(desc, desc_size, "a SPIR-V %u.%u module (%s-endian%s) (spirv)",
             major, minor, b->big_endian ? "big" : "little", model);
  return true;
}

// True when the first bytes of `b` read as text: no NUL, few control
// characters (UTF-8 bytes above 0x7f count as text).
static bool accel__looks_text(const accel__bytes_t* b) {
  size_t n = b->size < 4096 ? b->size : 4096;
  size_t odd = 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t c = b->p[i];
    if (c == 0) return false;
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' &&
        c != '\v') {
      odd++;
    }
  }
  return odd * 20 <= n;  // at most 5%
}

// Describes text: OpenCL C source (a `__kernel` or `kernel void`) names
// its first kernel; other text quotes its first line. The target stays
// "unknown": source is handed only to a device that lists a format.
static void accel__describe_text(const accel__bytes_t* b, char* desc,
                                 size_t desc_size) {
  size_t limit = b->size < ((size_t)1 << 20) ? b->size : ((size_t)1 << 20);
  size_t k = accel__find(b->p, limit, 0, "__kernel");
  size_t skip = 8;
  if (k == limit) {
    k = accel__find(b->p, limit, 0, "kernel");
    skip = 6;
    // "kernel" must be followed by blanks and "void" to count.
    size_t v = k + skip;
    while (v < limit && (b->p[v] == ' ' || b->p[v] == '\t')) v++;
    if (k == limit || v == k + skip || limit - v < 4 ||
        memcmp(b->p + v, "void", 4) != 0) {
      k = limit;
    }
  }
  if (k < limit) {
    // The kernel's name: the word before the first '(' after the keyword.
    size_t paren = k + skip;
    while (paren < limit && paren - k < 512 && b->p[paren] != '(') paren++;
    size_t end = paren;
    while (end > k + skip && (b->p[end - 1] == ' ' || b->p[end - 1] == '\t'))
      end--;
    size_t start = end;
    while (start > k + skip && accel__is_word(b->p[start - 1])) start--;
    int len = (int)(end - start < 64 ? end - start : 64);
    if (paren < limit && len > 0) {
      accel__put(desc, desc_size,
                 "%zu bytes of text that looks like OpenCL C source "
                 "(first kernel '%.*s') (unknown format: only a device "
                 "that lists a module format such as opencl-c loads it)",
                 b->size, len, (const char*)(b->p + start));
    } else {
      accel__put(desc, desc_size,
                 "%zu bytes of text that looks like OpenCL C source "
                 "(unknown format: only a device that lists a module "
                 "format such as opencl-c loads it)",
                 b->size);
    }
    return;
  }
  char line[41];
  size_t i = accel__skip_blank(b->p, b->size, 0), n = 0;
  while (i < b->size && n + 1 < sizeof(line) && b->p[i] != '\n' &&
         b->p[i] != '\r') {
    uint8_t c = b->p[i++];
    line[n++] = (c >= 0x20 && c <= 0x7e) ? (char)c : '?';
  }
  line[n] = '\0';
  accel__put(desc, desc_size,
             "%zu bytes of text of an unknown format (starting \"%s\")",
             b->size, line);
}

void accel__image_describe(const void* image, size_t size, char* target,
                           size_t target_size, char* description,
                           size_t description_size) {
  accel__bytes_t b = {(const uint8_t*)image, image != NULL ? size : 0, false};
  target[0] = '\0';
  description[0] = '\0';
  uint64_t magic = 0;
  if (b.size >= 16 && memcmp(b.p, "\177ELF", 4) == 0 &&
      accel__describe_elf(&b, target, target_size, description,
                          description_size)) {
    return;
  }
  b.big_endian = false;
  if (accel__rd(&b, 0, 4, &magic) && magic == ACCEL__FATBIN_MAGIC) {
    accel__put(target, target_size, "cuda-fatbin");
    accel__put(description, description_size, "a CUDA fatbin (cuda-fatbin)");
    return;
  }
  size_t blen = sizeof(ACCEL__BUNDLE_MAGIC) - 1;
  if (b.size >= blen && memcmp(b.p, ACCEL__BUNDLE_MAGIC, blen) == 0) {
    accel__describe_bundle(&b, target, target_size, description,
                           description_size);
    return;
  }
  if (accel__describe_ptx(&b, target, target_size, description,
                          description_size)) {
    return;
  }
  if (accel__describe_spirv(&b, target, target_size, description,
                            description_size)) {
    return;
  }
  b.big_endian = false;
  if (b.size >= 12 && memcmp(b.p, "ACCELBDL", 8) == 0) {
    uint64_t version = 0;
    accel__rd(&b, 8, 4, &version);
    accel__put(target, target_size, "accel-bundle");
    accel__put(description, description_size,
               "an accel kernel bundle, version %u (accel-bundle)",
               (unsigned)version);
    return;
  }
  if (b.size != 0 && accel__looks_text(&b)) {
    accel__put(target, target_size, "unknown");
    accel__describe_text(&b, description, description_size);
    return;
  }
  char head[3 * 8 + 1] = "";
  static const char hex[] = "0123456789abcdef";
  size_t h = 0;
  for (size_t i = 0; i < b.size && i < 8; i++) {
    if (i != 0) head[h++] = ' ';
    head[h++] = hex[b.p[i] >> 4];
    head[h++] = hex[b.p[i] & 0xf];
  }
  head[h] = '\0';
  accel__put(target, target_size, "unknown");
  if (b.size == 0) {
    accel__put(description, description_size, "no data (unknown format)");
  } else {
    accel__put(description, description_size,
               "%zu bytes of an unknown format (starting %s)", b.size, head);
  }
}
