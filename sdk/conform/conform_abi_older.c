// SPDX-License-Identifier: MIT
//
// The plugin under an older core (abi.older_core_*): a core built with an
// earlier <accel/plugin.h> passes the structs it knows, smaller than the
// plugin's, with their own `struct_size`. A plugin must write and read
// only the fields that fit (ACCEL_PLUGIN_HAS_FIELD). Through the plugin's
// own table (conform_direct_t), each struct is placed so that it ends
// where an inaccessible page begins: a plugin that writes or reads past
// `struct_size` faults (accel-conform reports the signal and the check),
// and the few bytes of padding before the page must keep their canary.
//   abi.older_core_props  query_props with the ABI 1.0 and 1.1 sizes
//   abi.older_core_gemm   op_gemm with the ABI 1.1 size (no workspace
//                         fields): a 2 x 3 x 4 product must come out right
//   abi.older_core_host   load given an ABI 1.0-1.2 core's host table (no
//                         abi_minor), then devices, a copy and unload
#define _DEFAULT_SOURCE  // MAP_ANONYMOUS
#include <accel/plugin.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "conform.h"

#define CONFORM_CANARY 0xcd

// `size` bytes (rounded up to 8, the rest canary) that end where a
// PROT_NONE page begins, with `struct_size` set to `size`; false when
// mapping fails. Free with conform_guarded_free().
typedef struct conform_guarded {
  unsigned char* map;
  size_t map_size;
  unsigned char* at;  // the struct
  size_t size;        // its size as the older core knows it
  size_t room;        // size rounded up to 8
} conform_guarded_t;

static bool conform_guarded_alloc(conform_guarded_t* g, size_t size) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  g->size = size;
  g->room = (size + 7) & ~(size_t)7;
  size_t data_pages = (g->room + page - 1) / page;
  g->map_size = (data_pages + 1) * page;
  void* map = mmap(NULL, g->map_size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED) return false;
  g->map = map;
  unsigned char* guard = g->map + data_pages * page;
  if (mprotect(guard, page, PROT_NONE) != 0) {
    munmap(map, g->map_size);
    return false;
  }
  g->at = guard - g->room;
  memset(g->at, 0, g->room);
  memset(g->at + size, CONFORM_CANARY, g->room - size);
  memcpy(g->at, &(uint32_t){(uint32_t)size}, sizeof(uint32_t));
  return true;
}

// Whether the padding between the struct and the guard page kept its
// canary.
static bool conform_guarded_intact(const conform_guarded_t* g) {
  for (size_t i = g->size; i < g->room; i++) {
    if (g->at[i] != CONFORM_CANARY) return false;
  }
  return true;
}

static void conform_guarded_free(conform_guarded_t* g) {
  if (g->map != NULL) munmap(g->map, g->map_size);
  g->map = NULL;
}

static conform_result_t conform_older_props(conform_ctx_t* ctx,
                                            const void* arg) {
  (void)arg;
  conform_direct_t d;
  if (conform_direct_open(ctx, &d) != CONFORM_PASS) return CONFORM_FAIL;
  static const struct {
    const char* abi;
    size_t size;
  } sizes[] = {
      {"1.0", offsetof(accel_plugin_device_props_t, module_target)},
      {"1.1", offsetof(accel_plugin_device_props_t, max_alloc_size)},
  };
  conform_result_t result = CONFORM_PASS;
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    conform_guarded_t g = {0};
    if (!conform_guarded_alloc(&g, sizes[i].size)) {
      result = conform_report(ctx, CONFORM_FAIL, "cannot map a guard page");
      break;
    }
    accel_plugin_device_props_t* props = (accel_plugin_device_props_t*)g.at;
    accel_status_t status = d.ops->query_props(d.device, props);
    bool named = memchr(props->name, '\0', sizeof(props->name)) != NULL &&
                 props->name[0] != '\0';
    bool intact = conform_guarded_intact(&g);
    conform_guarded_free(&g);
    if (status != ACCEL_OK || !named || !intact) {
      result = conform_report(
          ctx, CONFORM_FAIL,
          "query_props with an ABI %s core's struct_size %zu: %s%s%s",
          sizes[i].abi, sizes[i].size,
          status != ACCEL_OK ? accel_status_string(status) : "",
          status == ACCEL_OK && !named ? "no name written" : "",
          status == ACCEL_OK && named && !intact
              ? "wrote past struct_size (use ACCEL_PLUGIN_HAS_FIELD)"
              : "");
      break;
    }
  }
  conform_direct_close(&d);
  if (result == CONFORM_PASS) {
    result = conform_report(ctx, CONFORM_PASS,
                            "ABI 1.0 and 1.1 sizes: nothing written past them");
  }
  return result;
}

// C (2 x 4) = A (2 x 3) B (3 x 4), row-major f32, through op_gemm given an
// ABI 1.1 core's struct.
static conform_result_t conform_older_gemm(conform_ctx_t* ctx,
                                           const void* arg) {
  (void)arg;
  conform_direct_t d;
  if (conform_direct_open(ctx, &d) != CONFORM_PASS) return CONFORM_FAIL;
  if (!ACCEL_PLUGIN_HAS_FIELD(d.ops, accel_device_ops_t, op_gemm) ||
      d.ops->op_gemm == NULL) {
    conform_direct_close(&d);
    return conform_report(ctx, CONFORM_UNSUPPORTED, "no op_gemm entry");
  }
  static const float a[6] = {1, 2, 3, 4, 5, 6};
  static const float b[12] = {1, 0, 2, -1, 0, 1, 1, 2, 3, -2, 0, 1};
  float want[8], c[8];
  for (int i = 0; i < 2; i++) {
    for (int j = 0; j < 4; j++) {
      float acc = 0;
      for (int p = 0; p < 3; p++) acc += a[i * 3 + p] * b[p * 4 + j];
      want[i * 4 + j] = acc;
    }
  }
  void* mem[3] = {NULL, NULL, NULL};
  void* stream = NULL;
  conform_guarded_t g = {0};
  const char* what = "setup";
  accel_status_t status = ACCEL_OK;
  static const size_t sizes[3] = {sizeof(a), sizeof(b), sizeof(c)};
  for (int i = 0; i < 3 && status == ACCEL_OK; i++) {
    status = d.ops->mem_alloc(d.device, sizes[i], &mem[i]);
  }
  if (status == ACCEL_OK) {
    status = d.ops->copy_h2d(d.device, NULL, mem[0], 0, a, sizeof(a));
  }
  if (status == ACCEL_OK) {
    status = d.ops->copy_h2d(d.device, NULL, mem[1], 0, b, sizeof(b));
  }
  if (status == ACCEL_OK) status = d.ops->stream_create(d.device, 0, &stream);
  if (status == ACCEL_OK &&
      !conform_guarded_alloc(&g, offsetof(accel_plugin_gemm_t, workspace))) {
    status = ACCEL_ERROR_OUT_OF_MEMORY;
  }
  if (status == ACCEL_OK) {
    accel_plugin_gemm_t* gemm = (accel_plugin_gemm_t*)g.at;
    gemm->a_dtype = gemm->b_dtype = gemm->c_dtype = ACCEL_DTYPE_F32;
    gemm->m = 2, gemm->n = 4, gemm->k = 3;
    gemm->alpha = 1.0, gemm->beta = 0.0;
    gemm->a = mem[0], gemm->lda = 3;
    gemm->b = mem[1], gemm->ldb = 4;
    gemm->c = mem[2], gemm->ldc = 4;
    what = "op_gemm";
    status = d.ops->op_gemm(d.device, stream, gemm);
  }
  if (status == ACCEL_OK) {
    what = "stream_synchronize";
    status = d.ops->stream_synchronize(stream);
  }
  if (status == ACCEL_OK) {
    what = "copy_d2h";
    status = d.ops->copy_d2h(d.device, NULL, c, mem[2], 0, sizeof(c));
  }
  bool intact = g.map == NULL || conform_guarded_intact(&g);
  conform_result_t result;
  if (status == ACCEL_ERROR_UNSUPPORTED && strcmp(what, "op_gemm") == 0) {
    result = conform_report(ctx, CONFORM_UNSUPPORTED, "op_gemm: %s",
                            conform_direct_message());
  } else if (status != ACCEL_OK) {
    result = conform_report(ctx, CONFORM_FAIL,
                            "%s with an ABI 1.1 core's gemm struct: %s: %s",
                            what, accel_status_string(status),
                            conform_direct_message());
  } else if (!intact) {
    result = conform_report(ctx, CONFORM_FAIL,
                            "op_gemm wrote past an ABI 1.1 core's struct_size");
  } else if (memcmp(c, want, sizeof(c)) != 0) {
    int bad = 0;
    while (bad < 7 && c[bad] == want[bad]) bad++;
    result = conform_report(ctx, CONFORM_FAIL,
                            "op_gemm with an ABI 1.1 core's struct: C[%d] is "
                            "%g, expected %g",
                            bad, (double)c[bad], (double)want[bad]);
  } else {
    result = conform_report(ctx, CONFORM_PASS,
                            "ABI 1.1 struct (%zu bytes, no workspace fields): "
                            "nothing read past it, product right",
                            (size_t)offsetof(accel_plugin_gemm_t, workspace));
  }
  if (stream != NULL) d.ops->stream_destroy(stream);
  for (int i = 0; i < 3; i++) {
    if (mem[i] != NULL) d.ops->mem_free(d.device, mem[i]);
  }
  conform_guarded_free(&g);
  conform_direct_close(&d);
  return result;
}

// The host table of each older core whose accel_host_t was smaller than
// this SDK's. A field appended to accel_host_t needs a row here for the
// minors before it (conform_direct_host_init() copies the fields that
// fit).
static const struct {
  const char* abi;
  size_t size;
} conform_older_hosts[] = {
    {"1.0-1.2", offsetof(accel_host_t, abi_minor)},
};
// Up to 1.4 only 1.3 grew accel_host_t (sdk/CHANGES.md).
_Static_assert(ACCEL_PLUGIN_ABI_MINOR == 4,
               "abi.older_core_host: did this ABI minor grow accel_host_t?");

// Loads a second instance of the plugin through its entry point with
// the suite's host table cut to `size` bytes (an older core's), placed so
// that it ends where an inaccessible page begins: a plugin that reads
// `abi_minor` (or anything past `struct_size`) without
// ACCEL_PLUGIN_HAS_FIELD faults in this check. Then the device under test
// is opened, asked for its properties with an ABI 1.2 core's size, given
// 64 bytes to copy there and back on a stream, and closed; the plugin is
// unloaded before the table goes, as plugin.h promises. `*out_count` gets
// the plugin's device count.
static conform_result_t conform_older_host_run(conform_ctx_t* ctx,
                                               const char* abi, size_t size,
                                               uint32_t* out_count) {
  conform_guarded_t g = {0};
  if (!conform_guarded_alloc(&g, size)) {
    return conform_report(ctx, CONFORM_FAIL, "cannot map a guard page");
  }
  accel_host_t* host = (accel_host_t*)g.at;
  conform_direct_host_init(host, size);
  conform_direct_t d;
  accel_status_t load = ACCEL_OK;
  conform_result_t r = conform_direct_open_with(ctx, &d, host, &load);
  if (r != CONFORM_PASS) {
    if (load == ACCEL_ERROR_INCOMPATIBLE) {
      r = conform_report(ctx, CONFORM_UNSUPPORTED,
                         "load refuses an ABI %s core: %s", abi,
                         conform_direct_message());
    }
    conform_guarded_free(&g);
    return r;
  }
  (void)d.desc->device_count(d.plugin, out_count);
  void *mem = NULL, *stream = NULL;
  unsigned char in[64], out[64] = {0};
  for (size_t i = 0; i < sizeof(in); i++) in[i] = (unsigned char)(i * 7 + 1);
  accel_plugin_device_props_t props;
  memset(&props, 0, sizeof(props));
  props.struct_size = offsetof(accel_plugin_device_props_t, max_alloc_size);
  const char* what = "";
  accel_status_t status = ACCEL_OK;
  // Each step runs while every one before it succeeded.
#define CONFORM_STEP(name, call) \
  do {                           \
    if (status == ACCEL_OK) {    \
      what = name;               \
      status = (call);           \
    }                            \
  } while (0)
  CONFORM_STEP("query_props", d.ops->query_props(d.device, &props));
  CONFORM_STEP("mem_alloc", d.ops->mem_alloc(d.device, sizeof(in), &mem));
  CONFORM_STEP("stream_create", d.ops->stream_create(d.device, 0, &stream));
  CONFORM_STEP("copy_h2d",
               d.ops->copy_h2d(d.device, stream, mem, 0, in, sizeof(in)));
  CONFORM_STEP("copy_d2h",
               d.ops->copy_d2h(d.device, stream, out, mem, 0, sizeof(out)));
  CONFORM_STEP("stream_synchronize", d.ops->stream_synchronize(stream));
#undef CONFORM_STEP
  if (status != ACCEL_OK) {
    r = conform_report(ctx, CONFORM_FAIL,
                       "%s with an ABI %s core's host table (%zu bytes): "
                       "%s: %s",
                       what, abi, size, accel_status_string(status),
                       conform_direct_message());
  } else if (memcmp(in, out, sizeof(in)) != 0) {
    size_t bad = 0;
    while (in[bad] == out[bad]) bad++;
    r = conform_report(ctx, CONFORM_FAIL,
                       "64 bytes copied to the device and back with an ABI "
                       "%s core's host table: byte %zu is 0x%02x, expected "
                       "0x%02x",
                       abi, bad, out[bad], in[bad]);
  }
  if (stream != NULL) d.ops->stream_destroy(stream);
  if (mem != NULL) d.ops->mem_free(d.device, mem);
  conform_direct_close(&d);
  conform_guarded_free(&g);
  return r;
}

// abi.older_core_host: the plugin under each older core's host table.
static conform_result_t conform_older_host(conform_ctx_t* ctx,
                                           const void* arg) {
  (void)arg;
  size_t n = sizeof(conform_older_hosts) / sizeof(conform_older_hosts[0]);
  uint32_t count = 0;
  for (size_t i = 0; i < n; i++) {
    conform_result_t r = conform_older_host_run(
        ctx, conform_older_hosts[i].abi, conform_older_hosts[i].size, &count);
    if (r != CONFORM_PASS) return r;
  }
  return conform_report(ctx, CONFORM_PASS,
                        "ABI %s host table (%zu bytes, no abi_minor): load, "
                        "%u device(s), open, query_props, a copy on a "
                        "stream, unload; nothing read past it",
                        conform_older_hosts[n - 1].abi,
                        conform_older_hosts[n - 1].size, count);
}

static const conform_check_t conform_abi_older[] = {
    {"abi.older_core_props", conform_older_props, NULL},
    {"abi.older_core_gemm", conform_older_gemm, NULL},
    {"abi.older_core_host", conform_older_host, NULL},
};

const conform_check_t* conform_abi_older_checks(size_t* out_count) {
  *out_count = sizeof(conform_abi_older) / sizeof(conform_abi_older[0]);
  return conform_abi_older;
}
