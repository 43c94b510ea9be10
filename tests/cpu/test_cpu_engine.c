// SPDX-License-Identifier: MIT
//
// The CPU plugin's choice of GEMM engine (plugins/cpu/engine.c), through
// the public API. Decisions are per dtype and size class (small, medium,
// large by m*n*k; engine_tune.c):
// - the first GEMM of a class times the engines and appends its decision
//   (`f32@small`) to $XDG_CACHE_HOME/accel/cpu-gemm.txt; the device
//   features say "auto" before and after in that run;
// - a small and a large GEMM each time their own class, once;
// - a later run (after accel_shutdown) shows the cached engines in the
//   features at open ("gemm-f32=blis/auto/auto": small, medium, large),
//   follows a line edited to another engine without timing, and reads a
//   line of the format before classes (`f32`) as the medium class's;
// - ACCEL_CPU_GEMM_RETUNE=1 times again and appends a new line;
// - ACCEL_CPU_GEMM per dtype ("f32=...,bf16=...") and per class
//   ("f32@large=...") shows in the features, and a malformed value fails
//   GEMM with ACCEL_ERROR_INVALID_ARGUMENT naming the syntax;
// - a timing taken while other threads keep the CPUs busy is used but not
//   cached, in every class (the other cases set ACCEL_CPU_TUNE_BUSY high,
//   so that a test running beside them under ctest -j does not count as
//   busy).
// Each case sets its environment before the library loads the plugin.
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

// One f32 GEMM of m x n x k on cpu:0 (zeroed operands); returns its
// status. Writes the features seen before and after into `before` and
// `after` when not NULL.
static accel_status_t run_gemm(uint64_t m, uint64_t n, uint64_t k, char* before,
                               char* after, size_t size) {
  accel_device_t* device = NULL;
  accel_stream_t* stream = NULL;
  accel_buffer_t* buf = NULL;
  accel_device_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  size_t count = (size_t)(m * k + k * n + m * n);
  accel_status_t s = accel_device_open("cpu:0", &device);
  if (s == ACCEL_OK) s = accel_stream_create(device, 0, &stream);
  if (s == ACCEL_OK) s = accel_buffer_create(device, count * 4, &buf);
  if (s == ACCEL_OK) s = accel_device_query_info(device, &info);
  if (s == ACCEL_OK && before != NULL) {
    snprintf(before, size, "%s", info.features);
  }
  if (s == ACCEL_OK) {
    s = accel_op_fill(stream, buf, 0, ACCEL_DTYPE_F32, count, 0.0);
  }
  accel_gemm_t g;
  accel_gemm_init(&g);
  g.m = m, g.n = n, g.k = k, g.a = g.b = g.c = buf;
  g.lda = k, g.ldb = n, g.ldc = n;
  g.b_offset = m * k * 4, g.c_offset = (m * k + k * n) * 4;
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

// Shapes of each class: small (16^3), medium (256^3, the lowest medium
// work) and large (1024 x 1024 x 512, the lowest large work).
static accel_status_t small_gemm(char* before, char* after, size_t size) {
  return run_gemm(16, 16, 16, before, after, size);
}

static accel_status_t medium_gemm(void) {
  return run_gemm(256, 256, 256, NULL, NULL, 0);
}

static accel_status_t large_gemm(void) {
  return run_gemm(1024, 1024, 512, NULL, NULL, 0);
}

// Lines of the cache file; `*matching` (when not NULL) counts those whose
// second field is `field`, and `key`, `engine` receive the last one's.
static int cache_scan(const char* field, int* matching, char* key,
                      size_t key_size, char* engine, size_t engine_size) {
  if (matching != NULL) *matching = 0;
  FILE* f = fopen(cache_file, "r");
  if (f == NULL) return 0;
  char line[1024], tag[32];
  snprintf(tag, sizeof(tag), "\t%s\t", field);
  int n = 0;
  while (fgets(line, sizeof(line), f) != NULL) {
    n++;
    char* t1 = strchr(line, '\t');
    if (t1 == NULL || strncmp(t1, tag, strlen(tag)) != 0) continue;
    if (matching != NULL) (*matching)++;
    *t1 = '\0';
    snprintf(key, key_size, "%.1000s", line);
    snprintf(engine, engine_size, "%s", t1 + strlen(tag));
    engine[strcspn(engine, "\n")] = '\0';
  }
  fclose(f);
  return n;
}

// Lines of the cache file, and the key and engine of its last f32@small
// line.
static int cache_lines(char* key, size_t key_size, char* engine,
                       size_t engine_size) {
  return cache_scan("f32@small", NULL, key, key_size, engine, engine_size);
}

// Appends `key<TAB>field<TAB>engine` to the cache file.
static void cache_append(const char* key, const char* field,
                         const char* engine) {
  FILE* file = fopen(cache_file, "a");
  if (file == NULL) return;
  fprintf(file, "%s\t%s\t%s\n", key, field, engine);
  fclose(file);
}

// A loaded engine other than `engine`, judging by the cache `key`; NULL
// when there is none.
static const char* other_engine(const char* key, const char* engine) {
  if (strcmp(engine, "onednn") != 0 && strstr(key, "onednn-") != NULL) {
    return "onednn";
  }
  if (strcmp(engine, "openblas") != 0 && strstr(key, "openblas-") != NULL) {
    return "openblas";
  }
  if (strcmp(engine, "blis") != 0 && strstr(key, "blis-") != NULL) {
    return "blis";
  }
  return NULL;
}

// Times a small f32 GEMM with no override and an empty cache, leaving one
// f32@small line: its cache key, the engine it picked and another loaded
// engine. False (with the reason printed) when that fails; `*out_skip`
// says why the test cannot go on (no engine, or only one).
static bool first_small_decision(char* key, size_t key_size, char* engine,
                                 size_t engine_size, const char** out_other,
                                 const char** out_skip) {
  common_env(false);
  unsetenv("ACCEL_CPU_GEMM");
  unsetenv("ACCEL_CPU_GEMM_RETUNE");
  unlink(cache_file);
  accel_status_t s = small_gemm(NULL, NULL, 0);
  if (s == ACCEL_ERROR_UNSUPPORTED) {
    *out_skip = "no GEMM engine installed";
    return true;
  }
  if (s != ACCEL_OK) {
    printf("  small GEMM: %s: %s\n", accel_status_string(s),
           accel_last_error());
    return false;
  }
  int lines = cache_lines(key, key_size, engine, engine_size);
  if (lines != 1) {
    printf("  %d cache line(s) after the first GEMM, expected 1\n", lines);
    return false;
  }
  *out_other = other_engine(key, engine);
  if (*out_other == NULL) *out_skip = "only one engine installed";
  return true;
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
  printf("  %d line(s); f32@small on %s for %s\n", lines, engine, key);
  ASSERT_EQ(lines, 1);
  // The next run names the cached engine at open, for the small class.
  char want[64], f[512];
  snprintf(want, sizeof(want), "gemm-f32=%s/auto/auto ", engine);
  features(f, sizeof(f));
  accel_shutdown();
  ASSERT_STR_CONTAINS(f, want);
  // A decision edited to another loaded engine is followed.
  const char* other = other_engine(key, engine);
  if (other == NULL) SKIP("only one engine installed");
  cache_append(key, "f32@small", other);
  snprintf(want, sizeof(want), "gemm-f32=%s/auto/auto ", other);
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

// A small and a large GEMM each time their own class, once per cache: a
// second GEMM of either class, in this process or the next, times nothing.
TEST(small_and_large_time_their_own_class) {
  common_env(false);
  unsetenv("ACCEL_CPU_GEMM");
  unsetenv("ACCEL_CPU_GEMM_RETUNE");
  unlink(cache_file);
  char key[1024] = "", engine[32] = "";
  int small = 0, large = 0, medium = 0;
  accel_status_t s = small_gemm(NULL, NULL, 0);
  if (s == ACCEL_ERROR_UNSUPPORTED) SKIP("no GEMM engine installed");
  ASSERT_OK(s);
  ASSERT_EQ(
      cache_scan("f32@small", &small, key, sizeof(key), engine, sizeof(engine)),
      1);
  ASSERT_EQ(small, 1);
  ASSERT_OK(large_gemm());
  int lines =
      cache_scan("f32@large", &large, key, sizeof(key), engine, sizeof(engine));
  printf("  after a small and a large GEMM: %d line(s); f32@large on %s\n",
         lines, engine);
  ASSERT_EQ(lines, 2);
  ASSERT_EQ(large, 1);
  ASSERT_OK(small_gemm(NULL, NULL, 0));
  ASSERT_OK(large_gemm());
  ASSERT_EQ(cache_scan("f32@medium", &medium, key, sizeof(key), engine,
                       sizeof(engine)),
            2);
  ASSERT_EQ(medium, 0);
}

// A cached decision of one class is used without timing and shows in the
// features; classes that agree show as one engine.
TEST(cached_class_decision_is_used_without_timing) {
  char key[1024] = "", engine[32] = "";
  const char *other = NULL, *skip = NULL;
  ASSERT(first_small_decision(key, sizeof(key), engine, sizeof(engine), &other,
                              &skip));
  if (skip != NULL) SKIP("%s", skip);
  cache_append(key, "f32@medium", engine);
  cache_append(key, "f32@large", other);
  char before[512], after[512], want[96];
  snprintf(want, sizeof(want), "gemm-f32=%s/%s/%s ", engine, engine, other);
  ASSERT_OK(run_gemm(1024, 1024, 512, before, after, sizeof(before)));
  printf("  features: %s\n", before);
  ASSERT_STR_CONTAINS(before, want);
  ASSERT_STR_EQ(after, before);
  ASSERT_EQ(cache_lines(key, sizeof(key), engine, sizeof(engine)), 3);
  // The same engine in every class is named once.
  cache_append(key, "f32@large", engine);
  snprintf(want, sizeof(want), "gemm-f32=%s ", engine);
  ASSERT_OK(run_gemm(1024, 1024, 512, before, NULL, sizeof(before)));
  ASSERT_STR_CONTAINS(before, want);
  ASSERT_EQ(cache_lines(key, sizeof(key), engine, sizeof(engine)), 4);
}

// A line of the format before classes (`key<TAB>f32<TAB>engine`) still
// parses: it was timed at 512^3 and applies to the medium class, whose
// GEMMs then time nothing; the other classes are timed.
TEST(old_format_line_applies_to_medium) {
  char key[1024] = "", engine[32] = "";
  const char *other = NULL, *skip = NULL;
  ASSERT(first_small_decision(key, sizeof(key), engine, sizeof(engine), &other,
                              &skip));
  if (skip != NULL) SKIP("%s", skip);
  // Only the old line: the small class's decision goes.
  unlink(cache_file);
  cache_append(key, "f32", other);
  char f[512], want[96];
  snprintf(want, sizeof(want), "gemm-f32=auto/%s/auto ", other);
  features(f, sizeof(f));
  accel_shutdown();
  printf("  features: %s\n", f);
  ASSERT_STR_CONTAINS(f, want);
  ASSERT_OK(medium_gemm());
  ASSERT_EQ(cache_lines(key, sizeof(key), engine, sizeof(engine)), 1);
  // A small GEMM is timed; its line does not replace the old one.
  ASSERT_OK(small_gemm(NULL, NULL, 0));
  ASSERT_EQ(cache_lines(key, sizeof(key), engine, sizeof(engine)), 2);
  ASSERT_OK(medium_gemm());
  ASSERT_EQ(cache_lines(key, sizeof(key), engine, sizeof(engine)), 2);
  // A later medium line wins over the old one, and the reverse.
  cache_append(key, "f32@medium", engine);
  snprintf(want, sizeof(want), "/%s/auto ", engine);
  features(f, sizeof(f));
  accel_shutdown();
  ASSERT_STR_CONTAINS(f, want);
  cache_append(key, "f32", other);
  snprintf(want, sizeof(want), "/%s/auto ", other);
  features(f, sizeof(f));
  accel_shutdown();
  ASSERT_STR_CONTAINS(f, want);
}

// Two cached keys for this CPU and thread count (the libraries reported
// differently in two processes) that disagree: the features cannot know
// which one this process will find, so they say auto, not either engine.
TEST(disagreeing_cached_keys_show_auto) {
  common_env(false);
  unsetenv("ACCEL_CPU_GEMM");
  unsetenv("ACCEL_CPU_GEMM_RETUNE");
  unlink(cache_file);
  char before[512], after[512], key[1024] = "", engine[32] = "";
  accel_status_t s = small_gemm(before, after, sizeof(before));
  if (s == ACCEL_ERROR_UNSUPPORTED) SKIP("no GEMM engine installed");
  ASSERT_OK(s);
  ASSERT(cache_lines(key, sizeof(key), engine, sizeof(engine)) >= 1);
  const char* other = strcmp(engine, "blis") != 0 ? "blis" : "openblas";
  // The same prefix (CPU model, threads) with other library descriptions.
  char other_key[1100];
  snprintf(other_key, sizeof(other_key), "%s-other-threading", key);
  cache_append(other_key, "f32@small", other);
  char f[512];
  features(f, sizeof(f));
  accel_shutdown();
  printf("  features: %s\n", f);
  ASSERT_STR_CONTAINS(f, "gemm-f32=auto ");
  // Once they agree again, the engine is named.
  cache_append(other_key, "f32@small", engine);
  char want[64];
  snprintf(want, sizeof(want), "gemm-f32=%s/auto/auto ", engine);
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
  setenv("ACCEL_CPU_GEMM", "f32=onednn,f16=accel,bf16=blis", 1);
  char f[512];
  features(f, sizeof(f));
  accel_shutdown();
  printf("  features: %s\n", f);
  ASSERT_STR_CONTAINS(f, "gemm-f32=onednn ");
  ASSERT_STR_CONTAINS(f, "gemm-f16=accel ");
  ASSERT_STR_CONTAINS(f, "gemm-bf16=blis");
  // A class named on its own wins over its dtype, in either order.
  setenv("ACCEL_CPU_GEMM", "f32@large=onednn,f32=openblas,bf16@small=blis", 1);
  features(f, sizeof(f));
  accel_shutdown();
  printf("  features: %s\n", f);
  ASSERT_STR_CONTAINS(f, "gemm-f32=openblas/openblas/onednn ");
  ASSERT_STR_CONTAINS(f, "gemm-bf16=blis/auto/auto");
  static const char* const bad[] = {"fastest",
                                    "f32=onednn,",
                                    "f64=blis",
                                    "f32:onednn",
                                    "=onednn",
                                    "f32@huge=onednn",
                                    "f32@=onednn",
                                    "f32@large",
                                    "f32@large=",
                                    "@large=onednn",
                                    "f32@large@small=blis",
                                    "f32=blis,,f16=blis",
                                    "f32@Large=blis",
                                    "f32@large=fastest"};
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    setenv("ACCEL_CPU_GEMM", bad[i], 1);
    accel_status_t s = small_gemm(NULL, NULL, 0);
    printf("  ACCEL_CPU_GEMM=%s: %s\n", bad[i], accel_status_string(s));
    ASSERT_STATUS(s, ACCEL_ERROR_INVALID_ARGUMENT);
    ASSERT_STR_CONTAINS(accel_last_error(), bad[i]);
    ASSERT_STR_CONTAINS(accel_last_error(), "dtype@class=engine");
  }
  unsetenv("ACCEL_CPU_GEMM");
}

// One 32 x 32 x 32 GEMM of `dtype` on cpu:0 with A all 1 and B all 2, so
// every element of C is exactly 64; returns its status (ACCEL_ERROR_INTERNAL
// for a wrong element).
static accel_status_t half_gemm(accel_dtype_t dtype) {
  enum { N = 32 };
  accel_device_t* device = NULL;
  accel_stream_t* stream = NULL;
  accel_buffer_t* buf = NULL;
  size_t bytes = N * N * 2;
  accel_status_t s = accel_device_open("cpu:0", &device);
  if (s == ACCEL_OK) s = accel_stream_create(device, 0, &stream);
  if (s == ACCEL_OK) s = accel_buffer_create(device, 3 * bytes, &buf);
  if (s == ACCEL_OK) s = accel_op_fill(stream, buf, 0, dtype, N * N, 1.0);
  if (s == ACCEL_OK) s = accel_op_fill(stream, buf, bytes, dtype, N * N, 2.0);
  accel_gemm_t g;
  accel_gemm_init(&g);
  g.a_dtype = g.b_dtype = g.c_dtype = dtype;
  g.m = g.n = g.k = N, g.a = g.b = g.c = buf;
  g.lda = g.ldb = g.ldc = N;
  g.b_offset = bytes, g.c_offset = 2 * bytes;
  if (s == ACCEL_OK) s = accel_op_gemm(stream, &g);
  float c[N * N];
  accel_buffer_t* c32 = NULL;
  if (s == ACCEL_OK) s = accel_buffer_create(device, sizeof(c), &c32);
  if (s == ACCEL_OK) {
    s = accel_op_cast(stream, c32, 0, ACCEL_DTYPE_F32, buf, 2 * bytes, dtype,
                      N * N);
  }
  if (s == ACCEL_OK) s = accel_stream_read_buffer(stream, c32, 0, c, sizeof(c));
  if (s == ACCEL_OK) s = accel_stream_synchronize(stream);
  for (size_t i = 0; s == ACCEL_OK && i < N * N; i++) {
    if (c[i] != 64.0f) s = ACCEL_ERROR_INTERNAL;
  }
  accel_buffer_release(c32);
  accel_buffer_release(buf);
  accel_stream_release(stream);
  accel_device_release(device);
  accel_shutdown();
  return s;
}

static char timing_line[512];

// Keeps the bf16 small-class timing line of the log.
static void keep_timing_line(accel_log_level_t level, const char* tag,
                             const char* message, void* user_data) {
  (void)level;
  (void)tag;
  (void)user_data;
  if (strstr(message, "gemm-bf16@small timed") != NULL) {
    snprintf(timing_line, sizeof(timing_line), "%s", message);
  }
}

// onednn-f32 (f16/bf16 converted, then oneDNN's f32 matmul): forced, it
// shows in the features and multiplies right; timed, it is a candidate
// beside oneDNN's own bf16 kernel when oneDNN won f32. Where the CPU has
// AVX512-BF16 or AMX (oneDNN has its own bf16 kernel there), the bf16
// timing must list it.
TEST(onednn_f32_route_for_half) {
  common_env(false);
  unsetenv("ACCEL_CPU_GEMM_RETUNE");
  setenv("ACCEL_CPU_GEMM", "f32=onednn,f16=onednn-f32,bf16=onednn-f32", 1);
  unlink(cache_file);
  char f[512];
  features(f, sizeof(f));
  accel_shutdown();
  printf("  features: %s\n", f);
  ASSERT_STR_CONTAINS(f, "gemm-f16=onednn-f32 ");
  ASSERT_STR_CONTAINS(f, "gemm-bf16=onednn-f32");
  accel_status_t s = half_gemm(ACCEL_DTYPE_BF16);
  if (s == ACCEL_ERROR_UNSUPPORTED) {
    unsetenv("ACCEL_CPU_GEMM");
    SKIP("oneDNN is not installed: %s", accel_last_error());
  }
  ASSERT_OK(s);
  ASSERT_OK(half_gemm(ACCEL_DTYPE_F16));
  // Timed, with oneDNN the f32 engine.
  setenv("ACCEL_CPU_GEMM", "f32=onednn", 1);
  setenv("ACCEL_CPU_GEMM_RETUNE", "1", 1);
  timing_line[0] = '\0';
  accel_log_set_callback(keep_timing_line, NULL);
  ASSERT_OK(accel_log_set_level(ACCEL_LOG_INFO));
  s = half_gemm(ACCEL_DTYPE_BF16);
  accel_log_set_level(-1);
  accel_log_set_callback(NULL, NULL);
  unsetenv("ACCEL_CPU_GEMM");
  unsetenv("ACCEL_CPU_GEMM_RETUNE");
  ASSERT_OK(s);
  printf("  %s\n", timing_line);
  ASSERT_STR_CONTAINS(timing_line, "onednn");
  if (strstr(f, "avx512_bf16") != NULL || strstr(f, "amx_bf16") != NULL) {
    ASSERT_STR_CONTAINS(timing_line, "onednn-f32");
  }
}

static atomic_bool spin_stop;

static void* spin(void* arg) {
  (void)arg;
  while (!atomic_load_explicit(&spin_stop, memory_order_relaxed)) {
  }
  return NULL;
}

// In every class: a small and a large GEMM, each timed while busy.
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
  accel_status_t s_large = s == ACCEL_OK ? large_gemm() : s;
  unsetenv("ACCEL_CPU_GEMM_RETUNE");
  atomic_store(&spin_stop, true);
  for (int i = 0; i < started; i++) pthread_join(spinners[i], NULL);
  if (s == ACCEL_ERROR_UNSUPPORTED) SKIP("no GEMM engine installed");
  ASSERT_OK(s);
  ASSERT_OK(s_large);
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
