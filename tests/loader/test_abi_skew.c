// SPDX-License-Identifier: MIT
//
// ABI skew both ways (fixtures/fx_skew.c): plugins built with the 1.0,
// 1.1, 1.2 and 1.3 table and props sizes load under this core and work,
// the entries they lack behave as documented (ops UNSUPPORTED, no
// workspace asked for, 1.3 props fields at their defaults), and the load
// report names the minor each was built with; a plugin from a newer
// header, with descriptor and ops tables larger than this core's carrying
// unknown trailing entries, loads, works, and has its tail ignored. Every
// plugin sees the core's ABI minor in its host table.
#include <accel/accel.h>
#include <accel/plugin.h>
#include <stdio.h>
#include <string.h>

#include "loader_util.h"
#include "test.h"

// The 1.3 fixture must be older than this core, the future one newer.
_Static_assert(ACCEL_PLUGIN_ABI_MINOR >= 4, "the core is ABI 1.4 or later");

// The ABI minor the load report gives `name`'s fixture: the newest whose
// tables fit its sizes; a future fixture counts as this core's own.
static uint32_t skew_want_minor(const char* name) {
  if (strcmp(name, "fxskewfuture") == 0) return ACCEL_PLUGIN_ABI_MINOR;
  return (uint32_t)(name[strlen(name) - 1] - '0');
}

// Loads only `var`'s fixture and opens its device `name`:0.
static accel_device_t* skew_open(const char* var, const char* name) {
  const char* path = lu_env_path(var);
  if (path == NULL) return NULL;
  lu_restart(path);
  accel_plugin_report_t r;
  if (lu_report_find(path, &r) != 1 || r.status != ACCEL_OK) {
    fprintf(stderr, "%s did not load: %s\n", path, r.message);
    return NULL;
  }
  if (r.abi_minor != skew_want_minor(name)) {
    fprintf(stderr, "%s: the load report says ABI 1.%u, expected 1.%u\n",
            name, r.abi_minor, skew_want_minor(name));
    return NULL;
  }
  char uri[64];
  snprintf(uri, sizeof(uri), "%s:0", name);
  accel_device_t* device = NULL;
  if (accel_device_open(uri, &device) != ACCEL_OK) return NULL;
  return device;
}

// Fill of 5 floats with 2.5 through a stream; the status of the fill.
static accel_status_t skew_fill(accel_device_t* device, bool* correct) {
  accel_buffer_t* b = NULL;
  accel_stream_t* s = NULL;
  float out[5] = {0};
  accel_status_t status = accel_buffer_create(device, sizeof(out), &b);
  if (status == ACCEL_OK) status = accel_stream_create(device, 0, &s);
  accel_status_t fill = status == ACCEL_OK
                            ? accel_op_fill(s, b, 0, ACCEL_DTYPE_F32, 5, 2.5)
                            : status;
  if (fill == ACCEL_OK) fill = accel_stream_synchronize(s);
  if (fill == ACCEL_OK) fill = accel_buffer_read(b, 0, out, sizeof(out));
  *correct = fill == ACCEL_OK;
  for (int i = 0; i < 5; i++) *correct = *correct && out[i] == 2.5f;
  accel_stream_release(s);
  accel_buffer_release(b);
  return fill;
}

// 2x2x2 f32 GEMM through a stream; the status, and whether C is right.
static accel_status_t skew_gemm(accel_device_t* device, bool* correct) {
  const float a[4] = {1, 2, 3, 4}, bm[4] = {5, 6, 7, 8};
  const float want[4] = {19, 22, 43, 50};
  float c[4] = {0};
  accel_buffer_t *ba = NULL, *bb = NULL, *bc = NULL;
  accel_stream_t* s = NULL;
  accel_status_t status = accel_buffer_create(device, 16, &ba);
  if (status == ACCEL_OK) status = accel_buffer_create(device, 16, &bb);
  if (status == ACCEL_OK) status = accel_buffer_create(device, 16, &bc);
  if (status == ACCEL_OK) status = accel_buffer_write(ba, 0, a, 16);
  if (status == ACCEL_OK) status = accel_buffer_write(bb, 0, bm, 16);
  if (status == ACCEL_OK) status = accel_stream_create(device, 0, &s);
  if (status == ACCEL_OK) {
    accel_gemm_t g;
    accel_gemm_init(&g);
    g.m = g.n = g.k = 2;
    g.a = ba, g.b = bb, g.c = bc;
    status = accel_op_gemm(s, &g);
  }
  if (status == ACCEL_OK) status = accel_stream_synchronize(s);
  if (status == ACCEL_OK) status = accel_buffer_read(bc, 0, c, 16);
  *correct = status == ACCEL_OK && memcmp(c, want, sizeof(c)) == 0;
  accel_stream_release(s);
  accel_buffer_release(ba);
  accel_buffer_release(bb);
  accel_buffer_release(bc);
  return status;
}

// What every skew fixture must do: round trip, report the host minor,
// and leave module_target empty (it loads no modules).
static bool skew_common(accel_device_t* device, const char* uri, int minor,
                        accel_device_info_t* info) {
  if (!lu_roundtrip(uri)) return false;
  memset(info, 0, sizeof(*info));
  info->struct_size = sizeof(*info);
  if (accel_device_query_info(device, info) != ACCEL_OK) return false;
  char want[64];
  snprintf(want, sizeof(want), "skew %d host-minor %u", minor,
           ACCEL_PLUGIN_ABI_MINOR);
  if (strcmp(info->name, want) != 0) {
    fprintf(stderr, "device name '%s', expected '%s'\n", info->name, want);
    return false;
  }
  return info->module_target[0] == '\0';
}

TEST(abi_1_0_plugin) {
  accel_device_t* d = skew_open("ACCEL_TEST_FX_SKEW10", "fxskew10");
  ASSERT_NOT_NULL(d);
  accel_device_info_t info;
  ASSERT(skew_common(d, "fxskew10:0", 0, &info));
  bool correct = false;
  ASSERT_STATUS(skew_fill(d, &correct), ACCEL_ERROR_UNSUPPORTED);
  ASSERT_STATUS(skew_gemm(d, &correct), ACCEL_ERROR_UNSUPPORTED);
  ASSERT_EQ(info.max_alloc_size, 0);
  accel_device_release(d);
}

// A 1.1-or-later fixture: fill and GEMM work (from 1.2 only with the
// workspace the core lends), and max_alloc_size reads as `max_alloc`.
static bool skew_working(const char* var, const char* name, int minor,
                         uint64_t max_alloc) {
  accel_device_t* d = skew_open(var, name);
  if (d == NULL) return false;
  char uri[64];
  snprintf(uri, sizeof(uri), "%s:0", name);
  accel_device_info_t info;
  bool fill_ok = false, gemm_ok = false;
  bool ok = skew_common(d, uri, minor, &info) &&
            skew_fill(d, &fill_ok) == ACCEL_OK && fill_ok &&
            skew_gemm(d, &gemm_ok) == ACCEL_OK && gemm_ok &&
            info.max_alloc_size == max_alloc;
  if (!ok) {
    fprintf(stderr, "%s: fill %d, gemm %d, max_alloc_size %llu: %s\n", name,
            fill_ok, gemm_ok, (unsigned long long)info.max_alloc_size,
            accel_last_error());
  }
  accel_device_release(d);
  return ok;
}

TEST(abi_1_1_plugin) {
  ASSERT(skew_working("ACCEL_TEST_FX_SKEW11", "fxskew11", 1, 0));
}

// Its GEMM fails unless the core lends the workspace it asked for.
TEST(abi_1_2_plugin) {
  ASSERT(skew_working("ACCEL_TEST_FX_SKEW12", "fxskew12", 2, 0));
}

// Ops end at op_rng: no 1.4 entry; it fills a 1.3 property.
TEST(abi_1_3_plugin) {
  ASSERT(skew_working("ACCEL_TEST_FX_SKEW13", "fxskew13", 3, 1u << 20));
}

// Larger tables with unknown trailing entries; it fills a 1.3 field.
TEST(future_plugin) {
  ASSERT(skew_working("ACCEL_TEST_FX_SKEWFUTURE", "fxskewfuture", 99,
                      1u << 20));
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
