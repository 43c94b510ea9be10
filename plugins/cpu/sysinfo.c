// SPDX-License-Identifier: MIT
//
// Facts about the machine, read from /proc, /sys and uname(). Every reader
// tolerates missing or odd files (containers, non-Linux procfs layouts) and
// falls back to sysconf() or a placeholder; none of them fails.
#define _GNU_SOURCE  // sched_getaffinity, CPU_COUNT_S

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#endif

#include "cpu.h"

#define ACCEL_CPU_PATH_SIZE 4096

// Where the memory limit is looked up; a test (test_cpu_sysinfo_internal)
// compiles this file with its own tree.
#ifndef ACCEL_CPU_PROC_CGROUP
#define ACCEL_CPU_PROC_CGROUP "/proc/self/cgroup"
#endif
#ifndef ACCEL_CPU_PROC_MEMINFO
#define ACCEL_CPU_PROC_MEMINFO "/proc/meminfo"
#endif
#ifndef ACCEL_CPU_CGROUP_FS
#define ACCEL_CPU_CGROUP_FS "/sys/fs/cgroup"
#endif
// How long the cgroup that sets the memory limit is remembered before the
// hierarchy is walked again (nanoseconds).
#ifndef ACCEL_CPU_CGROUP_REFRESH_NS
#define ACCEL_CPU_CGROUP_REFRESH_NS 1000000000ull
#endif

// Copies `src` into `dst` of `size` bytes, truncating, always terminated.
static void accel_cpu_copy_string(char* dst, size_t size, const char* src) {
  if (size == 0) return;
  size_t n = strlen(src);
  if (n >= size) n = size - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
}

// True when the space-separated word list `words` contains `word`.
static bool accel_cpu_has_word(const char* words, const char* word) {
  size_t len = strlen(word);
  const char* p = words;
  while ((p = strstr(p, word)) != NULL) {
    bool starts = p == words || isspace((unsigned char)p[-1]);
    bool ends = p[len] == '\0' || isspace((unsigned char)p[len]);
    if (starts && ends) return true;
    p += len;
  }
  return false;
}

// Appends `word` to the space-separated list `list` of `size` bytes if it
// fits whole.
static void accel_cpu_append_word(char* list, size_t size, const char* word) {
  size_t used = strlen(list);
  size_t need = strlen(word) + (used > 0 ? 1 : 0);
  if (used + need + 1 > size) return;
  if (used > 0) list[used++] = ' ';
  memcpy(list + used, word, strlen(word) + 1);
}

// Removes leading and trailing white space in place; returns the start.
static char* accel_cpu_trim(char* s) {
  while (isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
  return s;
}

// The /proc/cpuinfo values the plugin uses, each from the first line that
// has the key (the first processor's block). Heap strings or NULL.
typedef struct accel_cpu_cpuinfo {
  char* model_name;   // x86 "model name" (also some arm kernels)
  char* vendor_id;    // x86 "vendor_id"
  char* flags;        // x86 "flags"
  char* features;     // arm "Features"
  char* implementer;  // arm "CPU implementer"
  char* part;         // arm "CPU part"
} accel_cpu_cpuinfo_t;

static void accel_cpu_cpuinfo_parse_line(accel_cpu_cpuinfo_t* info,
                                         char* line) {
  char* colon = strchr(line, ':');
  if (colon == NULL) return;
  *colon = '\0';
  const char* key = accel_cpu_trim(line);
  const char* value = accel_cpu_trim(colon + 1);
  char** slot = NULL;
  if (strcmp(key, "model name") == 0) slot = &info->model_name;
  if (strcmp(key, "vendor_id") == 0) slot = &info->vendor_id;
  if (strcmp(key, "flags") == 0) slot = &info->flags;
  if (strcmp(key, "Features") == 0) slot = &info->features;
  if (strcmp(key, "CPU implementer") == 0) slot = &info->implementer;
  if (strcmp(key, "CPU part") == 0) slot = &info->part;
  if (slot != NULL && *slot == NULL && value[0] != '\0') {
    *slot = strdup(value);  // NULL on failure: treated as absent
  }
}

static void accel_cpu_cpuinfo_read(accel_cpu_cpuinfo_t* info) {
  memset(info, 0, sizeof(*info));
  FILE* file = fopen("/proc/cpuinfo", "r");
  if (file == NULL) return;
  char* line = NULL;
  size_t capacity = 0;
  while (getline(&line, &capacity, file) != -1) {
    accel_cpu_cpuinfo_parse_line(info, line);
  }
  free(line);
  fclose(file);
}

static void accel_cpu_cpuinfo_free(accel_cpu_cpuinfo_t* info) {
  free(info->model_name);
  free(info->vendor_id);
  free(info->flags);
  free(info->features);
  free(info->implementer);
  free(info->part);
}

// Name of an ARM "CPU implementer" code, or NULL.
static const char* accel_cpu_arm_implementer(const char* code) {
  static const struct {
    unsigned long code;
    const char* name;
  } kImplementers[] = {
      {0x41, "ARM"},     {0x42, "Broadcom"},  {0x43, "Cavium"},
      {0x46, "Fujitsu"}, {0x48, "HiSilicon"}, {0x4e, "NVIDIA"},
      {0x50, "Ampere"},  {0x51, "Qualcomm"},  {0x53, "Samsung"},
      {0x56, "Marvell"}, {0x61, "Apple"},     {0x69, "Intel"},
      {0xc0, "Ampere"},
  };
  char* end = NULL;
  errno = 0;
  unsigned long value = strtoul(code, &end, 0);
  if (errno != 0 || end == code) return NULL;
  for (size_t i = 0; i < sizeof(kImplementers) / sizeof(kImplementers[0]);
       i++) {
    if (kImplementers[i].code == value) return kImplementers[i].name;
  }
  return NULL;
}

// x86-64 micro-architecture level (1..4) from the cpuinfo `flags`, per the
// psABI level definitions.
static int accel_cpu_x86_level(const char* flags) {
  static const char* const kV2[] = {"cx16",   "lahf_lm", "popcnt", "pni",
                                    "sse4_1", "sse4_2",  "ssse3"};
  static const char* const kV3[] = {"avx", "avx2", "bmi1",  "bmi2", "f16c",
                                    "fma", "abm",  "movbe", "xsave"};
  static const char* const kV4[] = {"avx512f", "avx512bw", "avx512cd",
                                    "avx512dq", "avx512vl"};
  struct {
    const char* const* names;
    size_t count;
  } levels[] = {{kV2, sizeof(kV2) / sizeof(kV2[0])},
                {kV3, sizeof(kV3) / sizeof(kV3[0])},
                {kV4, sizeof(kV4) / sizeof(kV4[0])}};
  int level = 1;
  for (size_t l = 0; l < 3; l++) {
    for (size_t i = 0; i < levels[l].count; i++) {
      if (!accel_cpu_has_word(flags, levels[l].names[i])) return level;
    }
    level++;
  }
  return level;
}

#if defined(__x86_64__) && defined(__GNUC__)
// Builds a cpuinfo-style flag list from CPUID when /proc/cpuinfo is
// unreadable. Only the flags this file looks at are produced. (Not
// __builtin_cpu_supports: in a shared object it links a libgcc
// constructor, and nothing may run at dlopen time.)
static void accel_cpu_x86_flags_from_cpuid(char* flags, size_t size) {
  static const struct {
    unsigned leaf, subleaf, reg, bit;  // reg: 0 eax, 1 ebx, 2 ecx, 3 edx
    const char* name;
  } kBits[] = {
      {1, 0, 2, 0, "pni"},
      {1, 0, 2, 9, "ssse3"},
      {1, 0, 2, 12, "fma"},
      {1, 0, 2, 13, "cx16"},
      {1, 0, 2, 19, "sse4_1"},
      {1, 0, 2, 20, "sse4_2"},
      {1, 0, 2, 22, "movbe"},
      {1, 0, 2, 23, "popcnt"},
      {1, 0, 2, 26, "xsave"},
      {1, 0, 2, 28, "avx"},
      {1, 0, 2, 29, "f16c"},
      {7, 0, 1, 3, "bmi1"},
      {7, 0, 1, 5, "avx2"},
      {7, 0, 1, 8, "bmi2"},
      {7, 0, 1, 16, "avx512f"},
      {7, 0, 1, 17, "avx512dq"},
      {7, 0, 1, 28, "avx512cd"},
      {7, 0, 1, 30, "avx512bw"},
      {7, 0, 1, 31, "avx512vl"},
      {7, 0, 2, 11, "avx512_vnni"},
      {7, 0, 3, 22, "amx_bf16"},
      {7, 0, 3, 23, "avx512_fp16"},
      {7, 0, 3, 24, "amx_tile"},
      {7, 0, 3, 25, "amx_int8"},
      {7, 1, 0, 4, "avx_vnni"},
      {7, 1, 0, 5, "avx512_bf16"},
      {0x80000001u, 0, 2, 0, "lahf_lm"},
      {0x80000001u, 0, 2, 5, "abm"},
  };
  flags[0] = '\0';
  accel_cpu_append_word(flags, size, "sse sse2");
  unsigned max_leaf = __get_cpuid_max(0, NULL);
  unsigned max_ext = __get_cpuid_max(0x80000000u, NULL);
  // AVX and AVX-512 state must also be enabled by the OS (XCR0).
  unsigned regs[4] = {0};
  uint64_t xcr0 = 0;
  if (__get_cpuid(1, &regs[0], &regs[1], &regs[2], &regs[3]) &&
      (regs[2] & (1u << 27)) != 0) {  // OSXSAVE
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = ((uint64_t)hi << 32) | lo;
  }
  bool os_avx = (xcr0 & 0x6) == 0x6;
  bool os_avx512 = (xcr0 & 0xe6) == 0xe6;
  bool os_amx = (xcr0 & 0x60000) == 0x60000;  // XTILECFG and XTILEDATA
  for (size_t i = 0; i < sizeof(kBits) / sizeof(kBits[0]); i++) {
    unsigned leaf = kBits[i].leaf;
    if (leaf >= 0x80000000u ? leaf > max_ext : leaf > max_leaf) continue;
    __cpuid_count(leaf, kBits[i].subleaf, regs[0], regs[1], regs[2], regs[3]);
    if ((regs[kBits[i].reg] & (1u << kBits[i].bit)) == 0) continue;
    const char* name = kBits[i].name;
    bool amx = strncmp(name, "amx", 3) == 0;
    bool avx512 = strncmp(name, "avx512", 6) == 0;
    bool avx = avx512 || strncmp(name, "avx", 3) == 0 ||
               strcmp(name, "fma") == 0 || strcmp(name, "f16c") == 0;
    if ((avx && !os_avx) || (avx512 && !os_avx512) || (amx && !os_amx)) {
      continue;
    }
    accel_cpu_append_word(flags, size, name);
  }
}
#endif

// Fills arch, features and simd_width for an x86-64 flag list.
static void accel_cpu_describe_x86(accel_cpu_sysinfo_t* info,
                                   const char* flags) {
  static const char* const kNotable[] = {
      "sse4_2",      "avx",      "avx2",     "fma",         "f16c",
      "avx512f",     "avx512bw", "avx512vl", "avx512_vnni", "avx512_bf16",
      "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16",    "amx_int8"};
  snprintf(info->arch, sizeof(info->arch), "x86-64-v%d",
           accel_cpu_x86_level(flags));
  for (size_t i = 0; i < sizeof(kNotable) / sizeof(kNotable[0]); i++) {
    if (accel_cpu_has_word(flags, kNotable[i])) {
      accel_cpu_append_word(info->features, sizeof(info->features),
                            kNotable[i]);
    }
  }
  info->simd_width = accel_cpu_has_word(flags, "avx512f") ? 16
                     : accel_cpu_has_word(flags, "avx")   ? 8
                                                          : 4;
}

// Fills arch, features and simd_width for an aarch64 "Features" list.
// Scalable vectors (SVE) are reported as a feature; simd_width stays at
// the 128-bit NEON width because the SVE length is a run-time property.
static void accel_cpu_describe_arm(accel_cpu_sysinfo_t* info,
                                   const char* features) {
  static const struct {
    const char* cpuinfo;
    const char* name;
  } kNotable[] = {{"asimd", "neon"},      {"asimdhp", "fp16"},
                  {"asimddp", "dotprod"}, {"bf16", "bf16"},
                  {"i8mm", "i8mm"},       {"sve", "sve"},
                  {"sve2", "sve2"},       {"sme", "sme"}};
  accel_cpu_copy_string(info->arch, sizeof(info->arch), "aarch64");
  for (size_t i = 0; i < sizeof(kNotable) / sizeof(kNotable[0]); i++) {
    if (accel_cpu_has_word(features, kNotable[i].cpuinfo)) {
      accel_cpu_append_word(info->features, sizeof(info->features),
                            kNotable[i].name);
    }
  }
  info->simd_width = 4;
}

void accel_cpu_sysinfo_read(accel_cpu_sysinfo_t* info) {
  memset(info, 0, sizeof(*info));
  struct utsname uts;
  bool have_uts = uname(&uts) == 0;
  accel_cpu_copy_string(info->kernel, sizeof(info->kernel),
                        have_uts ? uts.release : "");

  accel_cpu_cpuinfo_t cpuinfo;
  accel_cpu_cpuinfo_read(&cpuinfo);
  const char* vendor = cpuinfo.vendor_id;
  if (vendor == NULL && cpuinfo.implementer != NULL) {
    vendor = accel_cpu_arm_implementer(cpuinfo.implementer);
  }
  accel_cpu_copy_string(info->vendor, sizeof(info->vendor),
                        vendor != NULL ? vendor : "unknown");

  if (cpuinfo.model_name != NULL) {
    accel_cpu_copy_string(info->name, sizeof(info->name), cpuinfo.model_name);
  } else if (cpuinfo.part != NULL) {
    snprintf(info->name, sizeof(info->name), "%s CPU part %s", info->vendor,
             cpuinfo.part);
  } else {
    accel_cpu_copy_string(info->name, sizeof(info->name),
                          have_uts ? uts.machine : "CPU");
  }

#if defined(__x86_64__)
  if (cpuinfo.flags != NULL) {
    accel_cpu_describe_x86(info, cpuinfo.flags);
  } else {
#if defined(__GNUC__)
    char flags[512];
    accel_cpu_x86_flags_from_cpuid(flags, sizeof(flags));
    accel_cpu_describe_x86(info, flags);
#else
    accel_cpu_describe_x86(info, "");
#endif
  }
#elif defined(__aarch64__)
  accel_cpu_describe_arm(info, cpuinfo.features ? cpuinfo.features : "asimd");
#else
  accel_cpu_copy_string(info->arch, sizeof(info->arch),
                        have_uts ? uts.machine : "unknown");
  info->simd_width = 1;
#endif
  (void)accel_cpu_describe_arm;  // unused on x86-64
  (void)accel_cpu_describe_x86;  // unused on aarch64
  accel_cpu_cpuinfo_free(&cpuinfo);
}

uint32_t accel_cpu_sysinfo_usable_cpus(void) {
  // Try growing masks: a fixed cpu_set_t holds only 1024 CPUs.
  for (int cpus = 1024; cpus <= (1 << 20); cpus *= 4) {
    cpu_set_t* set = CPU_ALLOC(cpus);
    if (set == NULL) break;
    size_t size = CPU_ALLOC_SIZE(cpus);
    CPU_ZERO_S(size, set);
    int rc = sched_getaffinity(0, size, set);
    int count = rc == 0 ? CPU_COUNT_S(size, set) : 0;
    int err = errno;
    CPU_FREE(set);
    if (rc == 0 && count > 0) return (uint32_t)count;
    if (rc != 0 && err != EINVAL) break;
  }
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? (uint32_t)online : 1u;
}

// Reads up to `size` - 1 bytes of the file at `path` into `text`, NUL
// terminated, with one read(): procfs and cgroup files are generated whole
// at the first read, and one open/read/close costs about half of
// fopen/fgets/fclose (6-7 against 10-14 us a file on a 2-vCPU EPYC guest,
// 2026-11-29). Returns the length, or -1 when the file cannot be read.
static ssize_t accel_cpu_read_text(const char* path, char* text, size_t size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n;
  do {
    n = read(fd, text, size - 1);
  } while (n < 0 && errno == EINTR);
  close(fd);
  if (n < 0) return -1;
  text[n] = '\0';
  return n;
}

// Reads all of `path` (a procfs file, whose size stat does not tell) into
// a new NUL-terminated heap block, at most `limit` bytes; NULL when it
// cannot be read or is longer. The caller frees it.
static char* accel_cpu_read_all(const char* path, size_t limit) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return NULL;
  size_t size = 4096, used = 0;
  char* text = malloc(size);
  while (text != NULL) {
    if (used + 1 == size) {
      char* more = size < limit ? realloc(text, 2 * size) : NULL;
      if (more == NULL) {
        free(text);
        text = NULL;
        break;
      }
      text = more;
      size *= 2;
    }
    ssize_t n = read(fd, text + used, size - 1 - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      free(text);
      text = NULL;
    } else if (n == 0) {
      text[used] = '\0';
      break;
    } else {
      used += (size_t)n;
    }
  }
  close(fd);
  return text;
}

// Reads the first unsigned integer of a small file; false if the file is
// missing or does not start with a number (e.g. cgroup "max").
static bool accel_cpu_read_u64_file(const char* path, uint64_t* out_value) {
  char text[64];
  if (accel_cpu_read_text(path, text, sizeof(text)) <= 0 ||
      !isdigit((unsigned char)text[0])) {
    return false;
  }
  char* end = NULL;
  errno = 0;
  unsigned long long value = strtoull(text, &end, 10);
  if (errno != 0) return false;
  *out_value = (uint64_t)value;
  return true;
}

// Reads the "Key:   N kB" lines of /proc/meminfo for `count` keys in one
// pass, in bytes; returns a mask of the keys found (bit i: keys[i]).
static unsigned accel_cpu_meminfo(const char* const* keys, unsigned count,
                                  uint64_t* out_bytes) {
  char text[8192];  // about 1.5 KiB on Linux 6.x; the keys come first
  if (accel_cpu_read_text(ACCEL_CPU_PROC_MEMINFO, text, sizeof(text)) <= 0) {
    return 0;
  }
  unsigned found = 0, all = (1u << count) - 1u;
  for (const char* line = text; line != NULL && found != all;
       line = strchr(line, '\n')) {
    if (*line == '\n') line++;
    for (unsigned i = 0; i < count; i++) {
      size_t key_len = strlen(keys[i]);
      if (strncmp(line, keys[i], key_len) != 0 || line[key_len] != ':') {
        continue;
      }
      char* end = NULL;
      unsigned long long kib = strtoull(line + key_len + 1, &end, 10);
      if (end != line + key_len + 1) {
        out_bytes[i] = (uint64_t)kib * 1024u;
        found |= 1u << i;
      }
      break;
    }
  }
  return found;
}

// True when the comma-separated list `list` contains `word`.
static bool accel_cpu_has_item(const char* list, const char* word) {
  size_t len = strlen(word);
  for (const char* p = list; p != NULL; p = strchr(p, ',')) {
    if (*p == ',') p++;
    if (strncmp(p, word, len) == 0 && (p[len] == ',' || p[len] == '\0')) {
      return true;
    }
  }
  return false;
}

// The files of the cgroup whose memory limit applies: its limit and its
// usage.
typedef struct accel_cpu_cgroup_files {
  char limit[ACCEL_CPU_PATH_SIZE + 64];
  char usage[ACCEL_CPU_PATH_SIZE + 64];
} accel_cpu_cgroup_files_t;

// A limit above this is no limit (v1 writes a huge page-rounded number
// for none; v2 writes "max", which is not a number).
#define ACCEL_CPU_NO_LIMIT (UINT64_C(1) << 60)

// Finds the smallest memory limit on the path from cgroup `cgroup` up to
// the root of the hierarchy mounted at `root`, and the files of the cgroup
// that sets it (`*out`). Inside a cgroup namespace the path is "/" and
// only the root's files exist.
static bool accel_cpu_cgroup_walk(const char* root, const char* cgroup,
                                  const char* limit_file,
                                  const char* usage_file,
                                  accel_cpu_cgroup_files_t* out) {
  char dir[ACCEL_CPU_PATH_SIZE];
  snprintf(dir, sizeof(dir), "%s", cgroup);
  size_t n = strlen(dir);
  while (n > 0 && dir[n - 1] == '/') dir[--n] = '\0';
  bool found = false;
  uint64_t smallest = 0;
  for (;;) {
    char path[sizeof(out->limit)];
    uint64_t limit = 0;
    snprintf(path, sizeof(path), "%s%s/%s", root, dir, limit_file);
    if (accel_cpu_read_u64_file(path, &limit) && limit < ACCEL_CPU_NO_LIMIT &&
        (!found || limit < smallest)) {
      memcpy(out->limit, path, sizeof(path));
      snprintf(out->usage, sizeof(out->usage), "%s%s/%s", root, dir,
               usage_file);
      smallest = limit;
      found = true;
    }
    char* slash = strrchr(dir, '/');
    if (dir[0] == '\0' || slash == NULL) break;
    *slash = '\0';  // "/a/b" -> "/a" -> "" (the root)
  }
  return found;
}

// Finds the cgroup whose memory limit applies to this process (v2
// memory.max, else v1 memory.limit_in_bytes): false when no limit is set
// or the files are not visible.
static bool accel_cpu_cgroup_find(accel_cpu_cgroup_files_t* out) {
  // All of it: a v1 host lists a line per hierarchy, each path up to 4 KiB,
  // and the memory line may come last (a buffer of 8 KiB read once could
  // lose it).
  char* text = accel_cpu_read_all(ACCEL_CPU_PROC_CGROUP, (size_t)1 << 20);
  if (text == NULL) return false;
  char v2[ACCEL_CPU_PATH_SIZE] = "", v1[ACCEL_CPU_PATH_SIZE] = "";
  bool have_v2 = false, have_v1 = false;
  // Lines are "id:controllers:path"; v2 is "0::path".
  for (char* line = text; line != NULL && *line != '\0';) {
    char* next = strchr(line, '\n');
    if (next != NULL) *next++ = '\0';
    char* first = strchr(line, ':');
    char* second = first ? strchr(first + 1, ':') : NULL;
    if (second != NULL) {
      *second = '\0';
      if (strcmp(line, "0:") == 0) {
        have_v2 = true;
        snprintf(v2, sizeof(v2), "%s", second + 1);
      } else if (accel_cpu_has_item(first + 1, "memory")) {
        have_v1 = true;
        snprintf(v1, sizeof(v1), "%s", second + 1);
      }
    }
    line = next;
  }
  free(text);
  const char* fs = ACCEL_CPU_CGROUP_FS;
  char unified[ACCEL_CPU_PATH_SIZE], memory[ACCEL_CPU_PATH_SIZE];
  snprintf(unified, sizeof(unified), "%s/unified", fs);
  snprintf(memory, sizeof(memory), "%s/memory", fs);
  return (have_v2 &&
          (accel_cpu_cgroup_walk(fs, v2, "memory.max", "memory.current", out) ||
           accel_cpu_cgroup_walk(unified, v2, "memory.max", "memory.current",
                                 out))) ||
         (have_v1 && accel_cpu_cgroup_walk(memory, v1, "memory.limit_in_bytes",
                                           "memory.usage_in_bytes", out));
}

// Which cgroup sets the limit, found by walking the hierarchy (about 10
// files, 60 us a call on a 2-vCPU EPYC guest) at most once per
// ACCEL_CPU_CGROUP_REFRESH_NS; in between only that cgroup's limit and
// usage are read, so a changed value is seen at once and a limit set on
// another cgroup (a container resized from above, the process moved)
// within the refresh time. Under `mutex`, taken with trylock: a caller
// that finds it held (another thread walking, or a child forked while a
// thread held it) walks uncached rather than wait.
static struct {
  pthread_mutex_t mutex;
  bool valid;    // `walked_ns`, `limited` and `files` are set
  bool limited;  // a limit was found; `files` are its cgroup's
  uint64_t walked_ns;
  accel_cpu_cgroup_files_t files;
} accel_cpu_cgroup_cache = {.mutex = PTHREAD_MUTEX_INITIALIZER};

uint64_t accel_cpu_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

// The memory limit of this process's cgroup and the usage it applies to
// (0 when unreadable). False when no limit is set or the files are not
// visible.
static bool accel_cpu_cgroup_memory(uint64_t* out_limit, uint64_t* out_usage) {
  uint64_t now = accel_cpu_now_ns();
  bool locked = pthread_mutex_trylock(&accel_cpu_cgroup_cache.mutex) == 0;
  accel_cpu_cgroup_files_t found;
  const accel_cpu_cgroup_files_t* files = NULL;
  bool limited = false;
  if (locked && accel_cpu_cgroup_cache.valid &&
      now - accel_cpu_cgroup_cache.walked_ns < ACCEL_CPU_CGROUP_REFRESH_NS) {
    limited = accel_cpu_cgroup_cache.limited;
    files = &accel_cpu_cgroup_cache.files;
    // The remembered limit removed: walk again now.
    if (limited && (!accel_cpu_read_u64_file(files->limit, out_limit) ||
                    *out_limit >= ACCEL_CPU_NO_LIMIT)) {
      files = NULL;
    }
  }
  if (files == NULL) {
    limited = accel_cpu_cgroup_find(&found);
    files = &found;
    if (limited && !accel_cpu_read_u64_file(files->limit, out_limit)) {
      limited = false;  // gone since the walk read it
    }
    if (locked) {
      accel_cpu_cgroup_cache.valid = true;
      accel_cpu_cgroup_cache.limited = limited;
      accel_cpu_cgroup_cache.walked_ns = now;
      if (limited) accel_cpu_cgroup_cache.files = found;
    }
  }
  if (limited && !accel_cpu_read_u64_file(files->usage, out_usage)) {
    *out_usage = 0;
  }
  if (locked) pthread_mutex_unlock(&accel_cpu_cgroup_cache.mutex);
  return limited;
}

// sysconf(`name`) pages in bytes, 0 when unknown.
static uint64_t accel_cpu_pages_bytes(int name) {
  long pages = sysconf(name);
  long page_size = sysconf(_SC_PAGESIZE);
  return pages > 0 && page_size > 0 ? (uint64_t)pages * (uint64_t)page_size : 0;
}

void accel_cpu_sysinfo_memory(uint64_t* out_total, uint64_t* out_available) {
  static const char* const keys[2] = {"MemTotal", "MemAvailable"};
  uint64_t bytes[2] = {0, 0};
  unsigned found =
      accel_cpu_meminfo(keys, out_available != NULL ? 2 : 1, bytes);
  uint64_t total = (found & 1u) && bytes[0] != 0
                       ? bytes[0]
                       : accel_cpu_pages_bytes(_SC_PHYS_PAGES);
  if (total == 0) total = UINT64_C(1) << 30;
  uint64_t available =
      (found & 2u) ? bytes[1] : accel_cpu_pages_bytes(_SC_AVPHYS_PAGES);
  uint64_t limit = 0, usage = 0;
  if (accel_cpu_cgroup_memory(&limit, &usage)) {
    if (limit > 0 && limit < total) total = limit;
    uint64_t room = usage < limit ? limit - usage : 0;
    if (room < available) available = room;
  }
  *out_total = total;
  if (out_available != NULL) *out_available = available;
}

uint32_t accel_cpu_sysinfo_other_runnable(void) {
  uint32_t fewest = UINT32_MAX;
  for (int look = 0; look < 3; look++) {
    if (look > 0) nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
    FILE* f = fopen("/proc/loadavg", "r");
    if (f == NULL) return 0;
    unsigned running = 0, total = 0;
    int n = fscanf(f, "%*s %*s %*s %u/%u", &running, &total);
    fclose(f);
    if (n != 2) return 0;
    uint32_t others = running > 0 ? running - 1 : 0;  // less the caller
    if (others < fewest) fewest = others;
  }
  return fewest;
}

void accel_cpu_thread_name(const char* name) {
  (void)pthread_setname_np(pthread_self(), name);
}
