// SPDX-License-Identifier: MIT
//
// The disk cache of GEMM engine decisions (engine.c): a text file of
// lines `key<TAB>dtype@class<TAB>engine` ("f32@large"; before the size
// classes, `key<TAB>dtype<TAB>engine`, which engine.c reads as the medium
// class's), appended to and read from the start;
// the last matching line wins, so a retune overrides older lines without
// rewriting the file. Each line is appended with one write() on an
// O_APPEND descriptor, so processes tuning at the same time interleave
// whole lines. A line that does not parse is ignored; a file that cannot
// be read or written only costs a retune.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cpu.h"

void accel_cpu_gemm_cache_path(const accel_host_t* host, char* path,
                               size_t size) {
  const char* xdg = host->getenv(host, "XDG_CACHE_HOME");
  const char* home = host->getenv(host, "HOME");
  path[0] = '\0';
  // The XDG base directory rules ignore a relative XDG_CACHE_HOME.
  if (xdg != NULL && xdg[0] == '/') {
    snprintf(path, size, "%s/accel/cpu-gemm.txt", xdg);
  } else if (home != NULL && home[0] == '/') {
    snprintf(path, size, "%s/.cache/accel/cpu-gemm.txt", home);
  }
}

// How many distinct keys a prefix lookup compares; more count as
// ambiguous.
#define ACCEL_CPU_GEMM_CACHE_KEYS 16

// The engine id named at the end of a cache line, or -1.
static int accel_cpu_gemm_cache_engine(const char* engine) {
  return accel_cpu_engine_id(engine, strcspn(engine, "\r\n"));
}

// Largest cache file read; a longer one (a decade of retunes) costs a
// retune, as an unreadable one does.
#define ACCEL_CPU_GEMM_CACHE_MAX ((long)1 << 20)

char* accel_cpu_gemm_cache_read(const char* path) {
  if (path[0] == '\0') return NULL;
  FILE* f = fopen(path, "r");
  if (f == NULL) return NULL;
  char* text = NULL;
  long size = -1;
  if (fseek(f, 0, SEEK_END) == 0) size = ftell(f);
  if (size >= 0 && size <= ACCEL_CPU_GEMM_CACHE_MAX &&
      fseek(f, 0, SEEK_SET) == 0) {
    text = malloc((size_t)size + 1);
  }
  if (text != NULL) {
    size_t got = fread(text, 1, (size_t)size, f);
    text[got] = '\0';
  }
  fclose(f);
  return text;
}

int accel_cpu_gemm_cache_find(const char* text, const char* key,
                              bool prefix_only, const char* field,
                              const char* legacy) {
  if (text == NULL) return -1;
  // The last decision of each full key that matches. A prefix can match
  // several keys (the same CPU with OpenBLAS threaded in one process and
  // limited to one thread in another): it answers only when they agree.
  struct {
    uint64_t hash;
    int id;
  } keys[ACCEL_CPU_GEMM_CACHE_KEYS];
  size_t nkeys = 0;
  bool ambiguous = false;
  size_t key_len = strlen(key);
  const char* next = text;
  while (*next != '\0') {
    const char* line = next;
    size_t line_len = strcspn(line, "\n");
    next = line[line_len] == '\n' ? line + line_len + 1 : line + line_len;
    const char* tab1 = memchr(line, '\t', line_len);
    if (tab1 == NULL) continue;
    const char* tab2 =
        memchr(tab1 + 1, '\t', line_len - (size_t)(tab1 + 1 - line));
    if (tab2 == NULL) continue;
    size_t len = (size_t)(tab1 - line);
    bool match = prefix_only ? len >= key_len && !strncmp(line, key, key_len)
                             : len == key_len && !strncmp(line, key, key_len);
    size_t dlen = (size_t)(tab2 - tab1 - 1);
    if (!match || !(accel_cpu_name_is(tab1 + 1, dlen, field) ||
                    accel_cpu_name_is(tab1 + 1, dlen, legacy))) {
      continue;
    }
    int id = accel_cpu_gemm_cache_engine(tab2 + 1);
    if (id < 0) continue;
    uint64_t hash = 1469598103934665603ull;  // FNV-1a of the full key
    for (size_t i = 0; i < len; i++) {
      hash = (hash ^ (unsigned char)line[i]) * 1099511628211ull;
    }
    size_t k = 0;
    while (k < nkeys && keys[k].hash != hash) k++;
    if (k == nkeys) {
      if (nkeys == ACCEL_CPU_GEMM_CACHE_KEYS) {
        ambiguous = true;
        continue;
      }
      keys[nkeys++].hash = hash;
    }
    keys[k].id = id;
  }
  if (nkeys == 0 || ambiguous) return -1;
  for (size_t k = 1; k < nkeys; k++) {
    if (keys[k].id != keys[0].id) return -1;
  }
  return keys[0].id;
}

// Creates the directory of `path` and, when missing, its parent (the
// ~/.cache of a fresh account).
static void accel_cpu_gemm_cache_mkdir(const char* path) {
  char dir[1024];
  snprintf(dir, sizeof(dir), "%s", path);
  char* slash = strrchr(dir, '/');
  if (slash == NULL || slash == dir) return;
  *slash = '\0';
  if (mkdir(dir, 0755) == 0 || errno == EEXIST) return;
  char* parent = strrchr(dir, '/');
  if (parent == NULL || parent == dir) return;
  *parent = '\0';
  (void)mkdir(dir, 0755);
  *parent = '/';
  (void)mkdir(dir, 0755);
}

bool accel_cpu_gemm_cache_store(const char* path, const char* key,
                                const char* field, accel_cpu_engine_id_t id) {
  char line[1024];
  int len = snprintf(line, sizeof(line), "%s\t%s\t%s\n", key, field,
                     accel_cpu_engine_name(id));
  if (len <= 0 || (size_t)len >= sizeof(line)) return false;
  accel_cpu_gemm_cache_mkdir(path);
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = write(fd, line, (size_t)len) == (ssize_t)len;
  close(fd);
  return ok;
}
