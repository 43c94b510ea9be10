// SPDX-License-Identifier: MIT
//
// The CPU plugin's memory limit (plugins/cpu/sysinfo.c), compiled into
// this test with its /proc and /sys paths pointed at a tree the test
// writes (CMake: ACCEL_CPU_PROC_CGROUP, ACCEL_CPU_PROC_MEMINFO,
// ACCEL_CPU_CGROUP_FS under SYSINFO_TREE, and a 300 ms
// ACCEL_CPU_CGROUP_REFRESH_NS): the smallest limit on the way to the root
// applies; a changed limit or usage of that cgroup is seen at the next
// call; a limit set on another cgroup, or the process moved, within the
// refresh time; a limit removed at once; a memory line past the first
// 8 KiB of /proc/self/cgroup still found.
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cpu.h"
#include "test.h"

#define GIB (UINT64_C(1) << 30)
#define MIB (UINT64_C(1) << 20)

// Creates every directory of `path` (mkdir -p).
static int make_dirs(const char* path) {
  char dir[1024];
  snprintf(dir, sizeof(dir), "%s", path);
  for (char* p = dir + 1; *p != '\0'; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(dir, 0755) != 0 && errno != EEXIST) return -1;
    *p = '/';
  }
  return mkdir(dir, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

// Writes `text` to SYSINFO_TREE/`rel`, creating its directories.
static int put(const char* rel, const char* text) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", SYSINFO_TREE, rel);
  char* slash = strrchr(path, '/');
  *slash = '\0';
  if (make_dirs(path) != 0) return -1;
  *slash = '/';
  FILE* f = fopen(path, "w");
  if (f == NULL) return -1;
  int rc = fputs(text, f) < 0 ? -1 : 0;
  return fclose(f) != 0 ? -1 : rc;
}

static int put_u64(const char* rel, uint64_t value) {
  char text[32];
  snprintf(text, sizeof(text), "%llu\n", (unsigned long long)value);
  return put(rel, text);
}

static void unlink_tree_file(const char* rel) {
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s", SYSINFO_TREE, rel);
  (void)remove(path);
}

// Sleeps past the refresh time of the remembered cgroup.
static void past_refresh(void) {
  uint64_t ns = ACCEL_CPU_CGROUP_REFRESH_NS + 100000000ull;
  struct timespec t = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
  nanosleep(&t, NULL);
}

// 32 GiB of RAM with 20 GiB available, a v1 memory hierarchy with the
// process in /a/b: no limit at /a/b or the root, 8 GiB at /a.
static int write_tree(void) {
  unlink_tree_file("sys/svc/memory.max");  // from an earlier run
  unlink_tree_file("sys/svc/memory.current");
  int rc = put("proc/meminfo",
               "MemTotal:       33554432 kB\n"
               "MemFree:         1000000 kB\n"
               "MemAvailable:   20971520 kB\n");
  rc |= put("proc/cgroup", "4:memory:/a/b\n3:cpuset:/\n0::/\n");
  rc |= put_u64("sys/memory/memory.limit_in_bytes",
                UINT64_C(9223372036854771712));
  rc |= put_u64("sys/memory/memory.usage_in_bytes", 5 * GIB);
  rc |= put_u64("sys/memory/a/memory.limit_in_bytes", 8 * GIB);
  rc |= put_u64("sys/memory/a/memory.usage_in_bytes", 3 * GIB);
  rc |= put_u64("sys/memory/a/b/memory.limit_in_bytes",
                UINT64_C(9223372036854771712));
  rc |= put_u64("sys/memory/a/b/memory.usage_in_bytes", 1 * GIB);
  return rc;
}

TEST(limit_and_its_changes) {
  ASSERT_EQ(write_tree(), 0);
  uint64_t total = 0, available = 0;
  accel_cpu_sysinfo_memory(&total, &available);
  ASSERT_EQ(total, 8 * GIB);      // the limit at /a, not 32 GiB
  ASSERT_EQ(available, 5 * GIB);  // 8 GiB less /a's 3 GiB in use

  // /a's usage and limit change: seen at the next call.
  ASSERT_EQ(put_u64("sys/memory/a/memory.usage_in_bytes", 7 * GIB), 0);
  accel_cpu_sysinfo_memory(&total, &available);
  ASSERT_EQ(available, 1 * GIB);
  ASSERT_EQ(put_u64("sys/memory/a/memory.limit_in_bytes", 12 * GIB), 0);
  accel_cpu_sysinfo_memory(&total, &available);
  ASSERT_EQ(total, 12 * GIB);
  ASSERT_EQ(available, 5 * GIB);
  accel_cpu_sysinfo_memory(&total, NULL);  // total alone
  ASSERT_EQ(total, 12 * GIB);

  // A smaller limit on /a/b: seen once the refresh time has passed.
  ASSERT_EQ(put_u64("sys/memory/a/b/memory.limit_in_bytes", 2 * GIB), 0);
  past_refresh();
  accel_cpu_sysinfo_memory(&total, &available);
  ASSERT_EQ(total, 2 * GIB);
  ASSERT_EQ(available, 1 * GIB);  // 2 GiB less /a/b's 1 GiB

  // That limit removed ("max" in v2, the huge number in v1): at once.
  ASSERT_EQ(put_u64("sys/memory/a/b/memory.limit_in_bytes",
                    UINT64_C(9223372036854771712)),
            0);
  accel_cpu_sysinfo_memory(&total, &available);
  ASSERT_EQ(total, 12 * GIB);
  ASSERT_EQ(available, 5 * GIB);

  // Moved to /c, which has no limit file: 32 GiB after the refresh.
  ASSERT_EQ(put("proc/cgroup", "4:memory:/c\n0::/\n"), 0);
  past_refresh();
  accel_cpu_sysinfo_memory(&total, &available);
  ASSERT_EQ(total, 32 * GIB);
  ASSERT_EQ(available, 20 * GIB);

  // No limit anywhere, then a v2 limit on the process's cgroup appears.
  ASSERT_EQ(put("proc/cgroup", "0::/svc\n"), 0);
  ASSERT_EQ(put("sys/svc/memory.max", "max\n"), 0);
  past_refresh();
  accel_cpu_sysinfo_memory(&total, &available);
  ASSERT_EQ(total, 32 * GIB);
  ASSERT_EQ(put_u64("sys/svc/memory.max", 512 * MIB), 0);
  ASSERT_EQ(put_u64("sys/svc/memory.current", 100 * MIB), 0);
  past_refresh();
  accel_cpu_sysinfo_memory(&total, &available);
  ASSERT_EQ(total, 512 * MIB);
  ASSERT_EQ(available, 412 * MIB);

  // Every file gone: physical memory from sysconf, never 0 or a crash.
  unlink_tree_file("proc/meminfo");
  unlink_tree_file("proc/cgroup");
  past_refresh();
  accel_cpu_sysinfo_memory(&total, &available);
  ASSERT_GT(total, 0);
}

// A v1 host with long cgroup paths: 11 hierarchies of 1000-byte paths
// before the memory line, 11 KiB in all. Read in one 8 KiB buffer, the
// memory line was lost and no limit found (32 GiB instead of /a's 8).
TEST(memory_line_past_8_kib) {
  ASSERT_EQ(write_tree(), 0);
  static char text[16384];
  char path[1001];
  memset(path, 'x', sizeof(path) - 1);
  path[0] = '/';
  path[sizeof(path) - 1] = '\0';
  size_t used = 0;
  for (int id = 13; id > 2; id--) {
    used += (size_t)snprintf(text + used, sizeof(text) - used, "%d:ctl%d:%s\n",
                             id, id, path);
  }
  snprintf(text + used, sizeof(text) - used, "2:memory:/a/b\n0::/\n");
  ASSERT_GT(strlen(text), 8192);
  ASSERT_EQ(put("proc/cgroup", text), 0);
  past_refresh();
  uint64_t total = 0, available = 0;
  accel_cpu_sysinfo_memory(&total, &available);
  ASSERT_EQ(total, 8 * GIB);
  ASSERT_EQ(available, 5 * GIB);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
