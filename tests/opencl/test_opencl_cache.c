// SPDX-License-Identifier: MIT
//
// The OpenCL plugin's program binary cache (plugins/opencl/program.c),
// in ACCEL_OPENCL_CACHE_DIR (set by CTest to a directory of the build
// tree, emptied here first). Between steps the library is shut down and
// initialised again, so the device and its built-in program are built
// anew, as in a second process:
// - the first op writes exactly one cache file; the next build reads it
//   back (the file is not rewritten: same inode, since writes go through
//   rename) and is faster;
// - a corrupt or truncated file is ignored, the op still works, and the
//   file is rewritten whole;
// - ACCEL_OPENCL_CACHE=0 writes nothing.
// Exits 77 when no opencl:0 device opens.
#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "opencl_test.h"
#include "test.h"

static const char* cache_dir(void) {
  const char* dir = getenv("ACCEL_OPENCL_CACHE_DIR");
  return dir != NULL ? dir : "";
}

// Number of *.clbin files in the cache directory; the last one's path
// goes to `path`. Removes them all first when `clear`.
static int cache_files(bool clear, char* path, size_t path_size) {
  DIR* dir = opendir(cache_dir());
  if (dir == NULL) return 0;
  int n = 0;
  for (struct dirent* e = readdir(dir); e != NULL; e = readdir(dir)) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 6, ".clbin") != 0) continue;
    snprintf(path, path_size, "%s/%s", cache_dir(), e->d_name);
    if (clear) {
      unlink(path);
    } else {
      n++;
    }
  }
  closedir(dir);
  return n;
}

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

// Opens opencl:0 in a freshly initialised library, runs one op that needs
// the built-in program, checks it and shuts the library down. Returns
// ACCEL_ERROR_NOT_FOUND (after printing why) when there is no device.
static accel_status_t run_once(double* out_ms) {
  ocl_ctx_t c;
  double t0 = now_ms();
  accel_status_t s = ocl_ctx_open(&c, "opencl:0");
  if (s != ACCEL_OK) {
    printf("  opencl:0: %s\n", accel_last_error());
    ocl_ctx_close(&c);
    accel_shutdown();
    return ACCEL_ERROR_NOT_FOUND;
  }
  float x[64], y[64], z[64];
  for (int i = 0; i < 64; i++) {
    x[i] = (float)i;
    y[i] = 0.5f * (float)i;
  }
  accel_buffer_t *bx = NULL, *by = NULL;
  s = ocl_buffer(&c, sizeof(x), x, &bx);
  if (s == ACCEL_OK) s = ocl_buffer(&c, sizeof(y), y, &by);
  if (s == ACCEL_OK) {
    s = accel_op_add(c.stream, by, 0, bx, 0, by, 0, ACCEL_DTYPE_F32, 64);
  }
  if (s == ACCEL_OK) s = ocl_read(&c, by, 0, z, sizeof(z));
  *out_ms = now_ms() - t0;
  for (int i = 0; s == ACCEL_OK && i < 64; i++) {
    if (z[i] != 1.5f * (float)i) s = ACCEL_ERROR_INTERNAL;
  }
  if (s != ACCEL_OK) printf("  op: %s\n", accel_last_error());
  accel_buffer_release(bx);
  accel_buffer_release(by);
  ocl_ctx_close(&c);
  accel_shutdown();
  return s;
}

// Whether `path` holds a whole cache file: the "OCCL" magic and a binary
// after the 24-byte header.
static bool cache_file_valid(const char* path) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return false;
  unsigned char head[4] = {0};
  bool ok = fread(head, 1, 4, f) == 4 && memcmp(head, "OCCL", 4) == 0;
  fseek(f, 0, SEEK_END);
  ok = ok && ftell(f) > 24;
  fclose(f);
  return ok;
}

TEST(cache_written_then_read) {
  if (cache_dir()[0] == '\0') SKIP("ACCEL_OPENCL_CACHE_DIR is not set");
  char path[1024] = "";
  cache_files(true, path, sizeof(path));
  double first = 0, second = 0;
  accel_status_t s = run_once(&first);
  if (s == ACCEL_ERROR_NOT_FOUND) SKIP("no opencl:0 device");
  ASSERT_OK(s);
  ASSERT_EQ(cache_files(false, path, sizeof(path)), 1);
  ASSERT(cache_file_valid(path));
  struct stat before, after;
  ASSERT_EQ(stat(path, &before), 0);
  ASSERT_OK(run_once(&second));
  ASSERT_EQ(cache_files(false, path, sizeof(path)), 1);
  ASSERT_EQ(stat(path, &after), 0);
  printf("  first build %.0f ms, from the cache %.0f ms (%s)\n", first, second,
         path);
  // Read, not rewritten: a rewrite renames a new file into place.
  ASSERT_EQ(after.st_ino, before.st_ino);
  ASSERT_EQ(after.st_size, before.st_size);
}

TEST(corrupt_cache_file_is_rewritten) {
  if (cache_dir()[0] == '\0') SKIP("ACCEL_OPENCL_CACHE_DIR is not set");
  char path[1024] = "";
  double ms = 0;
  if (cache_files(false, path, sizeof(path)) != 1) {
    accel_status_t s = run_once(&ms);
    if (s == ACCEL_ERROR_NOT_FOUND) SKIP("no opencl:0 device");
    ASSERT_OK(s);
    ASSERT_EQ(cache_files(false, path, sizeof(path)), 1);
  }
  struct stat good;
  ASSERT_EQ(stat(path, &good), 0);
  // Garbage, then a valid header whose binary is cut short.
  for (int round = 0; round < 2; round++) {
    FILE* f = NULL;
    if (round == 0) {
      f = fopen(path, "wb");
      ASSERT_NOT_NULL(f);
      fputs("not a program binary", f);
    } else {
      ASSERT_EQ(truncate(path, 200), 0);
    }
    if (f != NULL) fclose(f);
    ASSERT(!cache_file_valid(path) || round == 1);
    ASSERT_OK(run_once(&ms));
    ASSERT_EQ(cache_files(false, path, sizeof(path)), 1);
    // Rewritten whole (PoCL's binaries vary a little in size).
    struct stat now;
    ASSERT_EQ(stat(path, &now), 0);
    ASSERT_NE(now.st_ino, good.st_ino);
    ASSERT_GT(now.st_size, 200);
    ASSERT(cache_file_valid(path));
    good = now;
  }
}

TEST(cache_off_writes_nothing) {
  if (cache_dir()[0] == '\0') SKIP("ACCEL_OPENCL_CACHE_DIR is not set");
  char path[1024] = "";
  cache_files(true, path, sizeof(path));
  setenv("ACCEL_OPENCL_CACHE", "0", 1);
  double ms = 0;
  accel_status_t s = run_once(&ms);
  unsetenv("ACCEL_OPENCL_CACHE");
  if (s == ACCEL_ERROR_NOT_FOUND) SKIP("no opencl:0 device");
  ASSERT_OK(s);
  ASSERT_EQ(cache_files(false, path, sizeof(path)), 0);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
