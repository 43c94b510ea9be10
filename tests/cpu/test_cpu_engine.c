// SPDX-License-Identifier: MIT
//
// The CPU plugin's choice of GEMM engine (plugins/cpu/engine.c), through
// the public API:
// - the first GEMM times the engines and appends its decision to
//   $XDG_CACHE_HOME/accel/cpu-gemm.txt; the device features say "auto"
//   before and after in that run;
// - a later run (after accel_shutdown) shows the cached engine in the
//   features at open, and follows a line edited to another engine;
// - ACCEL_CPU_GEMM_RETUNE=1 times again and appends a new line;
// - ACCEL_CPU_GEMM per dtype ("f32=...,bf16=...") shows in the features,
//   and a malformed value fails GEMM with ACCEL_ERROR_INVALID_ARGUMENT.
// - a timing taken while other threads keep the CPUs busy is used but not
//   cached (the other cases set ACCEL_CPU_TUNE_BUSY high, so that a test
//   running beside them under ctest -j does not count as busy);
// Each case sets its environment before the library loads the plugin.
// Exits 77 when fewer than two engines are installed.
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include <accel/accel.h>

static char cache_dir[256];
static char cache_file[300];

// Sets the environment every case shares: this test's cache, and no
// busy-machine rule unless `busy_rule`.
static void common_env(bool busy_rule) {
  setenv("XDG_CACHE_HOME", cache_dir, 1);
  if (busy_rule) {
    unsetenv("ACCEL_CPU_TUNE_BUSY");
  } else {
    setenv("ACCEL_CPU_TUNE_BUSY", "100000", 1);
  }
}

// Features of cpu:0 ("" when it cannot be opened).
static void features(char* out, size_t size) {
  accel_device_t* device = NULL;
  accel_device_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  out[0] = '\0';
  if (accel_device_open("cpu:0", &device) == ACCEL_OK &&
      accel_device_query_info(device, &info) == ACCEL_OK) {
    snprintf(out, size, "%s", info.features);
  }
  accel_device_release(device);
}

// One small f32 GEMM on cpu:0; returns its status. Writes the features
// seen before and after into `before` and `after` when not NULL.
static accel_status_t small_gemm(char* before, char* after, size_t size) {
  accel_device_t* device = NULL;
  accel_stream_t* stream = NULL;
  accel_buffer_t* buf = NULL;
  accel_device_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  accel_status_t s = accel_device_open("cpu:0", &device);
  if (s == ACCEL_OK) s = accel_stream_create(device, 0, &stream);
  if (s == ACCEL_OK) s = accel_buffer_create(device, 3 * 16 * 16 * 4, &buf);
  if (s == ACCEL_OK) s = accel_device_query_info(device, &info);
  if (s == ACCEL_OK && before != NULL) {
    snprintf(before, size, "%s", info.features);
  }
  accel_gemm_t g;
  accel_gemm_init(&g);
  g.m = g.n = g.k = 16, g.a = g.b = g.c = buf;
  g.lda = g.ldb = g.ldc = 16;
  g.b_offset = 16 * 16 * 4, g.c_offset = 2 * 16 * 16 * 4;
  if (s == ACCEL_OK) s = accel_op_gemm(stream, &g);
  if (s == ACCEL_OK) s = accel_stream_synchronize(stream);
  if (s == ACCEL_OK && after != NULL) {
    s = accel_device_query_info(device, &info);
    snprintf(after, size, "%s", info.features);
  }
  accel_buffer_release(buf);
  accel_stream_release(stream);
  accel_device_release(device);
  accel_shutdown();
  return s;
}

// Lines of the cache file, and the key and engine of its last f32 line.
static int cache_lines(char* key, size_t key_size, char* engine,
                       size_t engine_size) {
  FILE* f = fopen(cache_file, "r");
  if (f == NULL) return 0;
  char line[1024];
  int n = 0;
  while (fgets(line, sizeof(line), f) != NULL) {
    n++;
    char* t1 = strchr(line, '\t');
    if (t1 == NULL || strncmp(t1, "\tf32\t", 5) != 0) continue;
    *t1 = '\0';
    snprintf(key, key_size, "%.1000s", line);
    snprintf(engine, engine_size, "%s", t1 + 5);
    engine[strcspn(engine, "\n")] = '\0';
  }
  fclose(f);
  return n;
}

TEST(decision_is_cached_and_followed) {
  common_env(false);
  unsetenv("ACCEL_CPU_GEMM");
  unsetenv("ACCEL_CPU_GEMM_RETUNE");
  char before[512], after[512], key[1024] = "", engine[32] = "";
  accel_status_t s = small_gemm(before, after, sizeof(before));
  if (s == ACCEL_ERROR_UNSUPPORTED) SKIP("no GEMM engine installed");
  ASSERT_OK(s);
  ASSERT_STR_CONTAINS(before, "gemm-f32=auto");
  ASSERT_STR_EQ(after, before);
  int lines = cache_lines(key, sizeof(key), engine, sizeof(engine));
  printf("  %d line(s); f32 on %s for %s\n", lines, engine, key);
  ASSERT_EQ(lines, 1);
  // The next run names the cached engine at open.
  char want[64], f[512];
  snprintf(want, sizeof(want), "gemm-f32=%s", engine);
  features(f, sizeof(f));
  accel_shutdown();
  ASSERT_STR_CONTAINS(f, want);
  // A decision edited to another loaded engine is followed.
  const char* other = NULL;
  if (strcmp(engine, "onednn") != 0 && strstr(key, "onednn-") != NULL) {
    other = "onednn";
  } else if (strcmp(engine, "openblas") != 0 && strstr(key, "openblas-")) {
    other = "openblas";
  }
  if (other == NULL) SKIP("only one engine installed");
  FILE* file = fopen(cache_file, "a");
  ASSERT(file != NULL);
  fprintf(file, "%s\tf32\t%s\n", key, other);
  fclose(file);
  snprintf(want, sizeof(want), "gemm-f32=%s", other);
  ASSERT_OK(small_gemm(before, after, sizeof(before)));
  ASSERT_STR_CONTAINS(before, want);
  ASSERT_STR_EQ(after, before);
  ASSERT_EQ(cache_lines(key, sizeof(key), engine, sizeof(engine)), 2);
  ASSERT_STR_EQ(engine, other);
  // A retune times again and appends what it found.
  setenv("ACCEL_CPU_GEMM_RETUNE", "1", 1);
  ASSERT_OK(small_gemm(NULL, NULL, 0));
  unsetenv("ACCEL_CPU_GEMM_RETUNE");
  ASSERT_EQ(cache_lines(key, sizeof(key), engine, sizeof(engine)), 3);
}

// Two cached keys for this CPU and thread count (the libraries reported
// differently in two processes) that disagree: the features cannot know
// which one this process will find, so they say auto, not either engine.
TEST(disagreeing_cached_keys_show_auto) {
  common_env(false);
  unsetenv("ACCEL_CPU_GEMM");
  unsetenv("ACCEL_CPU_GEMM_RETUNE");
  char before[512], after[512], key[1024] = "", engine[32] = "";
  accel_status_t s = small_gemm(before, after, sizeof(before));
  if (s == ACCEL_ERROR_UNSUPPORTED) SKIP("no GEMM engine installed");
  ASSERT_OK(s);
  ASSERT(cache_lines(key, sizeof(key), engine, sizeof(engine)) >= 1);
  const char* other = strcmp(engine, "blis") != 0 ? "blis" : "openblas";
  FILE* file = fopen(cache_file, "a");
  ASSERT(file != NULL);
  // The same prefix (CPU model, threads) with other library descriptions.
  fprintf(file, "%s-other-threading\tf32\t%s\n", key, other);
  fclose(file);
  char f[512];
  features(f, sizeof(f));
  accel_shutdown();
  printf("  features: %s\n", f);
  ASSERT_STR_CONTAINS(f, "gemm-f32=auto");
  // Once they agree again, the engine is named.
  file = fopen(cache_file, "a");
  ASSERT(file != NULL);
  fprintf(file, "%s-other-threading\tf32\t%s\n", key, engine);
  fclose(file);
  char want[64];
  snprintf(want, sizeof(want), "gemm-f32=%s", engine);
  features(f, sizeof(f));
  accel_shutdown();
  ASSERT_STR_CONTAINS(f, want);
}

// ACCEL_CPU_BLAS naming an OpenBLAS (or BLIS) puts it under its own
// engine name, so ACCEL_CPU_GEMM=openblas reaches it; an engine that did
// not load is refused with the engines that did.
TEST(named_blas_keeps_its_engine_name) {
  common_env(false);
  unsetenv("ACCEL_CPU_GEMM_RETUNE");
  setenv("ACCEL_CPU_BLAS", "libopenblas.so.0", 1);
  setenv("ACCEL_CPU_GEMM", "f32=openblas", 1);
  accel_status_t s = small_gemm(NULL, NULL, 0);
  if (s == ACCEL_ERROR_UNSUPPORTED &&
      strstr(accel_last_error(), "libopenblas.so.0 (") != NULL) {
    unsetenv("ACCEL_CPU_BLAS");
    unsetenv("ACCEL_CPU_GEMM");
    SKIP("OpenBLAS is not installed");
  }
  printf("  f32=openblas with ACCEL_CPU_BLAS=libopenblas.so.0: %s\n",
         accel_status_string(s));
  ASSERT_OK(s);
  setenv("ACCEL_CPU_GEMM", "f32=blis", 1);
  s = small_gemm(NULL, NULL, 0);
  printf("  f32=blis: %s\n", accel_last_error());
  unsetenv("ACCEL_CPU_BLAS");
  unsetenv("ACCEL_CPU_GEMM");
  ASSERT_STATUS(s, ACCEL_ERROR_UNSUPPORTED);
  ASSERT_STR_CONTAINS(accel_last_error(), "loaded: openblas-");
}

TEST(forced_engines_show_and_bad_values_fail) {
  common_env(false);
  setenv("ACCEL_CPU_GEMM", "f32=onednn,bf16=blis", 1);
  char f[512];
  features(f, sizeof(f));
  accel_shutdown();
  printf("  features: %s\n", f);
  ASSERT_STR_CONTAINS(f, "gemm-f32=onednn");
  ASSERT_STR_CONTAINS(f, "gemm-bf16=blis");
  static const char* const bad[] = {"fastest", "f32=onednn,", "f64=blis",
                                    "f32:onednn", "=onednn"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    setenv("ACCEL_CPU_GEMM", bad[i], 1);
    accel_status_t s = small_gemm(NULL, NULL, 0);
    printf("  ACCEL_CPU_GEMM=%s: %s\n", bad[i], accel_status_string(s));
    ASSERT_STATUS(s, ACCEL_ERROR_INVALID_ARGUMENT);
  }
  unsetenv("ACCEL_CPU_GEMM");
}

static atomic_bool spin_stop;

static void* spin(void* arg) {
  (void)arg;
  while (!atomic_load_explicit(&spin_stop, memory_order_relaxed)) {
  }
  return NULL;
}

TEST(busy_machine_decision_not_cached) {
  common_env(true);
  unsetenv("ACCEL_CPU_GEMM");
  char key[1024] = "", engine[32] = "";
  int lines = cache_lines(key, sizeof(key), engine, sizeof(engine));
  // Twice as many spinning threads as CPUs: the machine is busy however
  // many cores it has.
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int n = cpus > 0 && cpus < 32 ? (int)cpus * 2 : 64;
  pthread_t spinners[64];
  atomic_store(&spin_stop, false);
  int started = 0;
  for (int i = 0; i < n; i++) {
    if (pthread_create(&spinners[i], NULL, spin, NULL) == 0) started++;
  }
  nanosleep(&(struct timespec){.tv_nsec = 20000000}, NULL);
  setenv("ACCEL_CPU_GEMM_RETUNE", "1", 1);
  accel_status_t s = small_gemm(NULL, NULL, 0);
  unsetenv("ACCEL_CPU_GEMM_RETUNE");
  atomic_store(&spin_stop, true);
  for (int i = 0; i < started; i++) pthread_join(spinners[i], NULL);
  if (s == ACCEL_ERROR_UNSUPPORTED) SKIP("no GEMM engine installed");
  ASSERT_OK(s);
  ASSERT_EQ(started, n);
  int after = cache_lines(key, sizeof(key), engine, sizeof(engine));
  printf("  %d spinning threads: %d cache line(s) before, %d after\n", n,
         lines, after);
  ASSERT_EQ(after, lines);
}

int main(int argc, char** argv) {
  snprintf(cache_dir, sizeof(cache_dir), "/tmp/accel-cpu-engine-XXXXXX");
  if (mkdtemp(cache_dir) == NULL) return 1;
  snprintf(cache_file, sizeof(cache_file), "%s/accel/cpu-gemm.txt",
           cache_dir);
  int rc = test_main(argc, argv);
  accel_shutdown();
  unlink(cache_file);
  char dir[300];
  snprintf(dir, sizeof(dir), "%s/accel", cache_dir);
  rmdir(dir);
  rmdir(cache_dir);
  return rc;
}
