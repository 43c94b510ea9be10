// SPDX-License-Identifier: MIT
//
// What the loader does with odd files on the plugin path: a FIFO is
// reported and skipped without opening (dlopen would block forever), a
// library for another architecture is named as such (dlopen says "No such
// file or directory"), and symlink loops and dangling links are reported
// with their path instead of vanishing.
#include <accel/accel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loader_util.h"
#include "test.h"

static char* dir;

// The report entry whose path ends in `/name`, or NULL.
static bool entry(const char* name, accel_plugin_report_t* out) {
  size_t count = 0;
  if (accel_plugin_report_count(&count) != ACCEL_OK) return false;
  for (size_t i = 0; i < count; i++) {
    accel_plugin_report_t r = {.struct_size = sizeof(r)};
    if (accel_plugin_report_get(i, &r) != ACCEL_OK) continue;
    const char* slash = strrchr(r.path, '/');
    if (slash != NULL && strcmp(slash + 1, name) == 0) {
      *out = r;
      return true;
    }
  }
  return false;
}

// Copies the good fixture and rewrites its ELF e_machine to `machine`.
static bool foreign_copy(const char* dst, unsigned machine) {
  if (!lu_copy(lu_env_path("ACCEL_TEST_FX_GOOD"), dst)) return false;
  FILE* f = fopen(dst, "r+b");
  if (f == NULL) return false;
  unsigned char m[2] = {(unsigned char)machine, (unsigned char)(machine >> 8)};
  bool ok = fseek(f, 18, SEEK_SET) == 0 && fwrite(m, 1, 2, f) == 2;
  return fclose(f) == 0 && ok;
}

TEST(fifo_is_skipped) {
  char* fifo = lu_join(dir, "libaccel-fifo.so");
  ASSERT_EQ(mkfifo(fifo, 0644), 0);
  lu_restart(dir);
  accel_plugin_report_t r;
  ASSERT(entry("libaccel-fifo.so", &r));
  ASSERT_EQ(r.status, ACCEL_ERROR_INCOMPATIBLE);
  ASSERT_STR_CONTAINS(r.message, "a FIFO, not a regular file");
  ASSERT(lu_roundtrip("cpu:0"));
  unlink(fifo);
  free(fifo);
}

TEST(foreign_architecture_is_named) {
#if defined(__x86_64__)
  char* lib = lu_join(dir, "libaccel-arm.so");
  ASSERT(foreign_copy(lib, 183));  // EM_AARCH64
  lu_restart(dir);
  accel_plugin_report_t r;
  ASSERT(entry("libaccel-arm.so", &r));
  ASSERT_EQ(r.status, ACCEL_ERROR_INCOMPATIBLE);
  ASSERT_STR_CONTAINS(r.message, "built for aarch64, this process is x86_64");
  unlink(lib);
  free(lib);
#else
  SKIP("the foreign-architecture case is written for x86_64 hosts");
#endif
}

TEST(link_loops_and_dangling_links_are_reported) {
  char* a = lu_join(dir, "libaccel-loopa.so");
  char* b = lu_join(dir, "libaccel-loopb.so");
  char* gone = lu_join(dir, "libaccel-gone.so");
  ASSERT_EQ(symlink(b, a), 0);
  ASSERT_EQ(symlink(a, b), 0);
  ASSERT_EQ(symlink("/nonexistent/libaccel-x.so", gone), 0);
  lu_restart(dir);
  accel_plugin_report_t r;
  ASSERT(entry("libaccel-loopa.so", &r));
  ASSERT_EQ(r.status, ACCEL_ERROR_INCOMPATIBLE);
  ASSERT_STR_CONTAINS(r.message, "ELOOP");
  ASSERT_STR_CONTAINS(r.message, a);
  ASSERT(entry("libaccel-gone.so", &r));
  ASSERT_STR_CONTAINS(r.message, "No such file");
  ASSERT(lu_roundtrip("cpu:0"));
  unlink(a), unlink(b), unlink(gone);
  free(a), free(b), free(gone);
}

int main(int argc, char** argv) {
  dir = lu_tempdir();
  if (dir == NULL) return 1;
  int rc = test_main(argc, argv);
  accel_shutdown();
  lu_rmtree(dir);
  free(dir);
  return rc;
}
