// SPDX-License-Identifier: MIT
//
// Helpers for the OpenCL plugin's tests, which drive the built plugin
// (ACCEL_OPENCL_PLUGIN_FILE, set by CMake) through its descriptor with the
// test host table (tests/test_host.h), without libaccel: open the plugin,
// count and open a device, and assertions that print the message the
// plugin recorded. Header-only: every definition is static.
#ifndef ACCEL_TESTS_OPENCL_TEST_OPENCL_PLUGIN_H_
#define ACCEL_TESTS_OPENCL_TEST_OPENCL_PLUGIN_H_

#include <accel/plugin.h>
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "test.h"
#include "test_host.h"

// Asserts a plugin call returned `status`, printing the plugin's message.
#define OCL_ASSERT_STATUS(call, status)                                     \
  do {                                                                      \
    int s_ = (int)(call);                                                   \
    if (s_ != (int)(status))                                                \
      TEST_FAIL_AT_("%s returned %d, expected %s (%s)", #call, s_, #status, \
                    test_host_message);                                     \
  } while (0)
#define OCL_ASSERT_OK(call) OCL_ASSERT_STATUS(call, ACCEL_OK)

// The descriptor of the built plugin, dlopened once and kept open for the
// process; NULL if it cannot be loaded.
static const accel_plugin_t* ocl_descriptor(void) {
  void* dl = dlopen(ACCEL_OPENCL_PLUGIN_FILE, RTLD_NOW | RTLD_LOCAL);
  if (dl == NULL) return NULL;
  union {
    void* p;
    accel_plugin_entry_fn_t f;
  } entry = {.p = dlsym(dl, ACCEL_PLUGIN_ENTRY_NAME)};
  return entry.p != NULL ? entry.f(ACCEL_PLUGIN_ABI_VERSION) : NULL;
}

// One loaded plugin instance and, once opened, its device 0 (or `index`).
typedef struct ocl_fixture {
  const accel_plugin_t* desc;
  const accel_device_ops_t* ops;
  void* plugin;
  uint32_t count;
  void* device;
} ocl_fixture_t;

// Loads a fresh plugin state from `desc`.
static accel_status_t ocl_load(const accel_plugin_t* desc, ocl_fixture_t* fx) {
  memset(fx, 0, sizeof(*fx));
  fx->desc = desc;
  fx->ops = desc->device_ops;
  return desc->load(&test_host, &fx->plugin);
}

// Counts devices and opens device `index`; false (with the reason
// printed) when the plugin has no such device, so the caller can SKIP.
static bool ocl_open_device(ocl_fixture_t* fx, uint32_t index) {
  accel_status_t status = fx->desc->device_count(fx->plugin, &fx->count);
  if (status != ACCEL_OK || fx->count <= index) {
    printf("  opencl: %u device(s): %s\n", fx->count,
           status != ACCEL_OK ? test_host_message : "too few");
    return false;
  }
  return fx->desc->device_open(fx->plugin, index, &fx->device) == ACCEL_OK;
}

// Closes the device (when open) and unloads the plugin state.
static void ocl_unload(ocl_fixture_t* fx) {
  if (fx->device != NULL) fx->desc->device_close(fx->device);
  if (fx->plugin != NULL) fx->desc->unload(fx->plugin);
  memset(fx, 0, sizeof(*fx));
}

#endif  // ACCEL_TESTS_OPENCL_TEST_OPENCL_PLUGIN_H_
