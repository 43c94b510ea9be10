// SPDX-License-Identifier: MIT
//
// accel_alloc_bench: the cost of a cache-hit allocation and free through
// the core (accel_buffer_create + accel_buffer_release on cpu:0) against a
// raw allocation from the CPU plugin itself (its mem_alloc + mem_free,
// called directly after dlopen, no core involved), and against the core
// with caching off (ACCEL_ALLOCATOR=raw). The budget: a cache hit
// costs at most 100 ns per pair.
//
// Each figure is the median over --trials runs of --pairs pairs, with the
// fastest and slowest run, in nanoseconds per pair.
//
//   accel_alloc_bench [--pairs N] [--trials T] [--size BYTES]
//                     [--only cached|plugin|raw] --plugin PATH
//
// --only runs one measurement (for profilers); its figure is printed alone.
#include <accel/accel.h>
#include <accel/plugin.h>
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_TRIALS 101

typedef struct figure {
  double median, min, max;
} figure_t;

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static figure_t summarise(double* ns, int trials) {
  qsort(ns, (size_t)trials, sizeof(double), compare_doubles);
  figure_t f = {ns[trials / 2], ns[0], ns[trials - 1]};
  if (trials % 2 == 0) f.median = (ns[trials / 2 - 1] + ns[trials / 2]) / 2;
  return f;
}

// --- through the core -------------------------------------------------------

static int bench_core(accel_device_t* device, size_t size, long pairs,
                      int trials, figure_t* out) {
  double ns[MAX_TRIALS];
  accel_buffer_t* buffer = NULL;
  for (long i = 0; i < pairs / 10 + 1; i++) {  // warm up
    if (accel_buffer_create(device, size, &buffer) != ACCEL_OK) return 1;
    accel_buffer_release(buffer);
  }
  for (int t = 0; t < trials; t++) {
    double t0 = now_ns();
    for (long i = 0; i < pairs; i++) {
      if (accel_buffer_create(device, size, &buffer) != ACCEL_OK) return 1;
      accel_buffer_release(buffer);
    }
    ns[t] = (now_ns() - t0) / (double)pairs;
  }
  *out = summarise(ns, trials);
  return 0;
}

// --- the plugin alone -------------------------------------------------------

static char plugin_message[512];

static accel_status_t host_fail(const accel_host_t* host, accel_status_t status,
                                const char* format, ...) {
  (void)host;
  va_list args;
  va_start(args, format);
  vsnprintf(plugin_message, sizeof(plugin_message), format, args);
  va_end(args);
  return status;
}

static void host_log(const accel_host_t* host, accel_log_level_t level,
                     const char* format, ...) {
  (void)host;
  (void)level;
  (void)format;
}

static const char* host_getenv(const accel_host_t* host, const char* name) {
  (void)host;
  return getenv(name);
}

static int bench_plugin(const char* path, size_t size, long pairs, int trials,
                        figure_t* out) {
  void* dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (dl == NULL) {
    fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
    return 1;
  }
  accel_plugin_entry_fn_t entry = NULL;
  *(void**)&entry = dlsym(dl, ACCEL_PLUGIN_ENTRY_NAME);
  const accel_plugin_t* desc =
      entry != NULL ? entry(ACCEL_PLUGIN_ABI_VERSION) : NULL;
  accel_host_t host = {.struct_size = sizeof(accel_host_t),
                       .abi_version = ACCEL_PLUGIN_ABI_VERSION,
                       .fail = host_fail,
                       .log = host_log,
                       .getenv = host_getenv};
  void *state = NULL, *device = NULL;
  int rc = 1;
  if (desc == NULL || desc->load(&host, &state) != ACCEL_OK) {
    fprintf(stderr, "%s: no usable plugin: %s\n", path, plugin_message);
    dlclose(dl);
    return 1;
  }
  uint32_t count = 0;
  if (desc->device_count(state, &count) != ACCEL_OK || count == 0 ||
      desc->device_open(state, 0, &device) != ACCEL_OK) {
    fprintf(stderr, "%s: no device: %s\n", path, plugin_message);
    goto done;
  }
  const accel_device_ops_t* ops = desc->device_ops;
  double ns[MAX_TRIALS];
  void* mem = NULL;
  for (long i = 0; i < pairs / 10 + 1; i++) {
    if (ops->mem_alloc(device, size, &mem) != ACCEL_OK) goto close;
    ops->mem_free(device, mem);
  }
  for (int t = 0; t < trials; t++) {
    double t0 = now_ns();
    for (long i = 0; i < pairs; i++) {
      if (ops->mem_alloc(device, size, &mem) != ACCEL_OK) goto close;
      ops->mem_free(device, mem);
    }
    ns[t] = (now_ns() - t0) / (double)pairs;
  }
  *out = summarise(ns, trials);
  rc = 0;
close:
  desc->device_close(device);
done:
  desc->unload(state);
  dlclose(dl);
  return rc;
}

// ---------------------------------------------------------------------------

static void print_figure(const char* what, figure_t f) {
  printf("  %-46s %8.1f ns  [%.1f, %.1f]\n", what, f.median, f.min, f.max);
}

int main(int argc, char** argv) {
  long pairs = 1000000;
  int trials = 11;
  size_t size = 256;
  const char* plugin = NULL;
  const char* only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--pairs") == 0 && i + 1 < argc) {
      pairs = strtol(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--trials") == 0 && i + 1 < argc) {
      trials = (int)strtol(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
      size = (size_t)strtoull(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      only = argv[++i];
    } else if (strcmp(argv[i], "--plugin") == 0 && i + 1 < argc) {
      plugin = argv[++i];
    } else {
      fprintf(stderr,
              "usage: %s [--pairs N] [--trials T] [--size BYTES] "
              "[--only cached|plugin|raw] --plugin PATH/libaccel-cpu.so\n",
              argv[0]);
      return 2;
    }
  }
  if (plugin == NULL || pairs < 1 || trials < 1 || trials > MAX_TRIALS ||
      size == 0) {
    fprintf(stderr,
            "%s: --plugin is required; pairs >= 1, 1 <= trials <= "
            "101, size >= 1\n",
            argv[0]);
    return 2;
  }

  if (only != NULL) {
    figure_t f;
    int rc = 1;
    accel_device_t* device = NULL;
    if (strcmp(only, "plugin") == 0) {
      rc = bench_plugin(plugin, size, pairs, trials, &f);
    } else if (strcmp(only, "cached") == 0 || strcmp(only, "raw") == 0) {
      if (strcmp(only, "raw") == 0) setenv("ACCEL_ALLOCATOR", "raw", 1);
      rc = accel_device_open("cpu:0", &device) != ACCEL_OK ||
           bench_core(device, size, pairs, trials, &f) != 0;
      accel_device_release(device);
      accel_shutdown();
    } else {
      fprintf(stderr, "%s: --only takes cached, plugin or raw\n", argv[0]);
      return 2;
    }
    if (rc != 0) return 1;
    print_figure(only, f);
    return 0;
  }

  figure_t cached, raw_plugin, core_raw;
  accel_device_t* device = NULL;
  if (accel_device_open("cpu:0", &device) != ACCEL_OK ||
      bench_core(device, size, pairs, trials, &cached) != 0) {
    fprintf(stderr, "cpu:0 through the core: %s\n", accel_last_error());
    return 1;
  }
  accel_memory_stats_t stats;
  memset(&stats, 0, sizeof(stats));
  stats.struct_size = sizeof(stats);
  accel_device_query_memory_stats(device, &stats);
  accel_device_release(device);  // closes it: the next open re-reads the env
  if (bench_plugin(plugin, size, pairs, trials, &raw_plugin) != 0) return 1;
  setenv("ACCEL_ALLOCATOR", "raw", 1);
  if (accel_device_open("cpu:0", &device) != ACCEL_OK ||
      bench_core(device, size, pairs, trials, &core_raw) != 0) {
    fprintf(stderr, "cpu:0 with ACCEL_ALLOCATOR=raw: %s\n", accel_last_error());
    return 1;
  }
  accel_device_release(device);
  accel_shutdown();

  printf(
      "accel_alloc_bench: %zu-byte buffers on cpu:0, %ld pairs x %d "
      "trials\n",
      size, pairs, trials);
  printf("  (median [fastest, slowest] trial, per alloc+free pair)\n");
  print_figure("caching allocator hit (core create+release)", cached);
  print_figure("raw plugin mem_alloc+mem_free (no core)", raw_plugin);
  print_figure("core with ACCEL_ALLOCATOR=raw", core_raw);
  printf("  cache hits: %llu of %llu allocations\n",
         (unsigned long long)stats.cache_hits,
         (unsigned long long)(stats.cache_hits + stats.cache_misses));
  printf("  ratio cache hit / raw plugin: %.2f\n",
         cached.median / raw_plugin.median);
  printf("  budget: cache hit <= 100 ns per pair: %s\n",
         cached.median <= 100.0 ? "met" : "NOT met");
  return 0;
}
