// SPDX-License-Identifier: MIT
//
// Checks on a plugin file before dlopen(), so that what dlopen() would do
// badly is refused with a clear reason: a FIFO or device file would block
// every program in open(), and a library built for another architecture
// is reported by glibc as "No such file or directory".
//
// The file is checked through its own descriptor, then dlopen()ed by path:
// it could be swapped in between. That is acceptable because plugins are
// trusted code (loading one runs it); the check is there for mistakes,
// not for attackers.
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

typedef struct accel__machine {
  uint16_t id;
  const char* name;
} accel__machine_t;

static const accel__machine_t accel__machines[] = {
    {EM_386, "i386"},       {EM_X86_64, "x86_64"},   {EM_ARM, "arm"},
    {EM_AARCH64, "aarch64"}, {EM_PPC, "ppc"},         {EM_PPC64, "ppc64"},
    {EM_S390, "s390x"},     {EM_RISCV, "riscv"},     {EM_MIPS, "mips"},
    {EM_SPARCV9, "sparc64"}, {258 /* EM_LOONGARCH */, "loongarch"},
};

#if defined(__x86_64__)
#define ACCEL__EM EM_X86_64
#elif defined(__i386__)
#define ACCEL__EM EM_386
#elif defined(__aarch64__)
#define ACCEL__EM EM_AARCH64
#elif defined(__arm__)
#define ACCEL__EM EM_ARM
#elif defined(__powerpc64__)
#define ACCEL__EM EM_PPC64
#elif defined(__s390x__)
#define ACCEL__EM EM_S390
#elif defined(__riscv)
#define ACCEL__EM EM_RISCV
#else
#define ACCEL__EM 0  // unknown: the machine check is skipped
#endif

static const char* accel__machine_name(uint16_t id, char* buf, size_t n) {
  for (size_t i = 0; i < sizeof(accel__machines) / sizeof(*accel__machines);
       i++) {
    if (accel__machines[i].id == id) return accel__machines[i].name;
  }
  snprintf(buf, n, "ELF machine %u", (unsigned)id);
  return buf;
}

static const char* accel__file_kind(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Compares the ELF header in `head` (`n` bytes) with this process.
static bool accel__elf_check(const unsigned char* head, size_t n, char* why,
                             size_t why_size) {
  if (n < 20 || memcmp(head, ELFMAG, SELFMAG) != 0) return true;  // dlopen
  uint16_t machine;
  if (head[EI_DATA] == ELFDATA2LSB) {
    machine = (uint16_t)(head[18] | (head[19] << 8));
  } else {
    machine = (uint16_t)((head[18] << 8) | head[19]);
  }
  int bits = head[EI_CLASS] == ELFCLASS64 ? 64 : 32;
  char a[32], b[32];
  if (ACCEL__EM != 0 && machine != ACCEL__EM) {
    snprintf(why, why_size,
             "built for %s, this process is %s; install the plugin built "
             "for this machine",
             accel__machine_name(machine, a, sizeof(a)),
             accel__machine_name(ACCEL__EM, b, sizeof(b)));
    return false;
  }
  if (bits != (int)(sizeof(void*) * 8)) {
    snprintf(why, why_size, "a %d-bit library, this process is %d-bit", bits,
             (int)(sizeof(void*) * 8));
    return false;
  }
  return true;
}

bool accel__plugin_file_check(const char* path, char* why, size_t why_size) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer.
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, why_size, "cannot open: %s", strerror(errno));
    return false;
  }
  struct stat st;
  bool ok = fstat(fd, &st) == 0;
  if (!ok) {
    snprintf(why, why_size, "cannot stat: %s", strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    snprintf(why, why_size, "%s, not a regular file; skipped without "
             "loading", accel__file_kind(st.st_mode));
    ok = false;
  } else {
    unsigned char head[64];
    ssize_t n = pread(fd, head, sizeof(head), 0);
    ok = accel__elf_check(head, n > 0 ? (size_t)n : 0, why, why_size);
  }
  close(fd);
  return ok;
}
