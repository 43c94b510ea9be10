// SPDX-License-Identifier: MIT
// realpath() is an XSI extension.
#define _XOPEN_SOURCE 700
#include "loader_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char* lu_env_path(const char* var) {
  const char* value = getenv(var);
  if (value == NULL || value[0] == '\0') {
    fprintf(stderr, "  test setup: %s is not set (see CMakeLists.txt)\n", var);
    return NULL;
  }
  return value;
}

void lu_restart(const char* plugin_path) {
  accel_shutdown();
  if (plugin_path == NULL) {
    unsetenv("ACCEL_PLUGIN_PATH");
  } else {
    setenv("ACCEL_PLUGIN_PATH", plugin_path, 1);
  }
}

char* lu_realpath(const char* path) {
  char buf[PATH_MAX];
  if (realpath(path, buf) == NULL) return NULL;
  return strdup(buf);
}

// Calls `match` on every report entry; returns the number that matched and
// copies the first into `*out`.
static size_t lu_report_scan(bool (*match)(const accel_plugin_report_t*,
                                           const char*),
                             const char* key, accel_plugin_report_t* out) {
  size_t count = 0, found = 0;
  if (accel_plugin_report_count(&count) != ACCEL_OK) {
    fprintf(stderr, "  accel_plugin_report_count: %s\n", accel_last_error());
    return 0;
  }
  for (size_t i = 0; i < count; i++) {
    accel_plugin_report_t report;
    memset(&report, 0, sizeof(report));
    report.struct_size = sizeof(report);
    if (accel_plugin_report_get(i, &report) != ACCEL_OK) {
      fprintf(stderr, "  accel_plugin_report_get(%zu): %s\n", i,
              accel_last_error());
      continue;
    }
    if (!match(&report, key)) continue;
    if (found == 0 && out != NULL) *out = report;
    found++;
  }
  return found;
}

static bool lu_match_path(const accel_plugin_report_t* r, const char* path) {
  return r->path != NULL && strcmp(r->path, path) == 0;
}

static bool lu_match_name(const accel_plugin_report_t* r, const char* name) {
  return r->name != NULL && strcmp(r->name, name) == 0;
}

static bool lu_match_under(const accel_plugin_report_t* r, const char* dir) {
  size_t n = strlen(dir);
  return r->path != NULL && strncmp(r->path, dir, n) == 0 && r->path[n] == '/';
}

size_t lu_report_find(const char* path, accel_plugin_report_t* out) {
  char* real = lu_realpath(path);
  size_t found = lu_report_scan(lu_match_path, real ? real : path, out);
  free(real);
  return found;
}

size_t lu_report_find_name(const char* name, accel_plugin_report_t* out) {
  return lu_report_scan(lu_match_name, name, out);
}

size_t lu_report_count_under(const char* dir) {
  return lu_report_scan(lu_match_under, dir, NULL);
}

bool lu_roundtrip(const char* uri) {
  enum { kSize = 4096 };
  unsigned char in[kSize], out[kSize];
  for (size_t i = 0; i < kSize; i++) in[i] = (unsigned char)(i * 7 + 3);
  memset(out, 0, sizeof(out));

  accel_device_t* device = NULL;
  accel_buffer_t* buffer = NULL;
  bool ok = false;
  if (accel_device_open(uri, &device) != ACCEL_OK ||
      accel_buffer_create(device, kSize, &buffer) != ACCEL_OK ||
      accel_buffer_write(buffer, 0, in, kSize) != ACCEL_OK ||
      accel_buffer_read(buffer, 0, out, kSize) != ACCEL_OK) {
    fprintf(stderr, "  round trip on %s: %s\n", uri, accel_last_error());
  } else if (memcmp(in, out, kSize) != 0) {
    fprintf(stderr, "  round trip on %s: data differs\n", uri);
  } else {
    ok = true;
  }
  accel_buffer_release(buffer);
  accel_device_release(device);
  return ok;
}

char* lu_join(const char* dir, const char* name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char* path = malloc(n);
  if (path != NULL) snprintf(path, n, "%s/%s", dir, name);
  return path;
}

char* lu_dirname(const char* path) {
  char* dir = strdup(path);
  char* slash = dir ? strrchr(dir, '/') : NULL;
  if (slash == dir) {
    slash[1] = '\0';
  } else if (slash != NULL) {
    *slash = '\0';
  }
  return dir;
}

// Scratch directories still to remove at exit, so a test that fails
// half-way leaves nothing behind.
enum { kMaxTempdirs = 64 };
static char* lu_tempdirs[kMaxTempdirs];
static int lu_tempdir_count;

static void lu_tempdirs_cleanup(void) {
  for (int i = 0; i < lu_tempdir_count; i++) {
    lu_rmtree(lu_tempdirs[i]);
    free(lu_tempdirs[i]);
  }
  lu_tempdir_count = 0;
}

char* lu_tempdir(void) {
  const char* base = getenv("TMPDIR");
  if (base == NULL || base[0] == '\0') base = "/tmp";
  char* templ = lu_join(base, "accel-test-XXXXXX");
  if (templ == NULL || mkdtemp(templ) == NULL) {
    perror("  mkdtemp");
    free(templ);
    return NULL;
  }
  char* real = lu_realpath(templ);
  free(templ);
  if (real != NULL && lu_tempdir_count < kMaxTempdirs) {
    if (lu_tempdir_count == 0) atexit(lu_tempdirs_cleanup);
    lu_tempdirs[lu_tempdir_count++] = strdup(real);
  }
  return real;
}

void lu_rmtree(const char* dir) {
  if (dir == NULL) return;
  DIR* d = opendir(dir);
  if (d != NULL) {
    struct dirent* e;
    while ((e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
        continue;
      }
      char* path = lu_join(dir, e->d_name);
      if (path != NULL) unlink(path);
      free(path);
    }
    closedir(d);
  }
  rmdir(dir);
}

bool lu_copy(const char* src, const char* dst) {
  int in = open(src, O_RDONLY);
  int out = open(dst, O_WRONLY | O_CREAT | O_TRUNC, 0755);
  bool ok = in >= 0 && out >= 0;
  char buf[65536];
  while (ok) {
    ssize_t n = read(in, buf, sizeof(buf));
    if (n == 0) break;
    ok = n > 0 && write(out, buf, (size_t)n) == n;
  }
  if (in >= 0) close(in);
  if (out >= 0 && close(out) != 0) ok = false;
  if (!ok) fprintf(stderr, "  copy %s -> %s failed\n", src, dst);
  return ok;
}

// The scratch file behind the current capture; captures do not nest.
static FILE* lu_capture_file;

int lu_stderr_begin(void) {
  fflush(stderr);
  lu_capture_file = tmpfile();
  int saved = dup(STDERR_FILENO);
  if (lu_capture_file == NULL || saved < 0) return -1;
  dup2(fileno(lu_capture_file), STDERR_FILENO);
  return saved;
}

char* lu_stderr_end(int token) {
  fflush(stderr);
  if (token >= 0) {
    dup2(token, STDERR_FILENO);
    close(token);
  }
  char* text = NULL;
  size_t size = 0;
  if (lu_capture_file != NULL) {
    long end =
        (fseek(lu_capture_file, 0, SEEK_END) == 0) ? ftell(lu_capture_file) : 0;
    size = end > 0 ? (size_t)end : 0;
    text = malloc(size + 1);
    rewind(lu_capture_file);
    if (text != NULL) size = fread(text, 1, size, lu_capture_file);
    fclose(lu_capture_file);
    lu_capture_file = NULL;
  }
  if (text == NULL) {
    text = calloc(1, 1);
  } else {
    text[size] = '\0';
  }
  return text;
}
