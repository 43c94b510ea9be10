// SPDX-License-Identifier: MIT
//
// The OpenCL plugin's mapping after accel_shutdown, through the core. A
// host function (or a cross-context wait) has the runtime call plugin
// code on a driver thread, which still returns through a few instructions
// of it after unload saw its count fall to 0: from the first such
// callback the plugin keeps its shared object mapped (RTLD_NODELETE), so
// the core's dlclose cannot unmap code a driver thread may be in. A
// process that never registered one unloads the plugin as before (the
// first case, run first: a second accel_init loads the plugin again).
// Skips (77) without an OpenCL device.
#define _GNU_SOURCE  // RTLD_NOLOAD
#include <accel/accel.h>
#include <dlfcn.h>
#include <stdatomic.h>

#include "test.h"

static atomic_int calls;

static void count_call(void* user) {
  (void)user;
  atomic_fetch_add(&calls, 1);
}

// True while the built plugin is mapped in this process.
static bool plugin_mapped(void) {
  void* dl = dlopen(ACCEL_OPENCL_PLUGIN_FILE, RTLD_NOW | RTLD_NOLOAD);
  if (dl == NULL) return false;
  dlclose(dl);
  return true;
}

// Opens opencl:0 and a stream, runs `host_funcs` host functions and a
// fill on it, releases everything and shuts the core down. Returns false
// when the device cannot be opened; asserts through `ok` otherwise.
static bool run_and_shut_down(int host_funcs, bool* ok) {
  accel_device_t* device = NULL;
  *ok = false;
  if (accel_device_open("opencl:0", &device) != ACCEL_OK) {
    printf("  opencl:0 unusable: %s\n", accel_last_error());
    accel_shutdown();
    return false;
  }
  accel_stream_t* stream = NULL;
  accel_buffer_t* buffer = NULL;
  bool good = accel_stream_create(device, 0, &stream) == ACCEL_OK &&
              accel_buffer_create(device, 4096, &buffer) == ACCEL_OK &&
              accel_stream_fill_buffer(stream, buffer, 0, 7, 4096) == ACCEL_OK;
  for (int i = 0; good && i < host_funcs; i++) {
    good = accel_stream_launch_host_func(stream, count_call, NULL) == ACCEL_OK;
  }
  good = good && accel_stream_synchronize(stream) == ACCEL_OK;
  if (!good) printf("  %s\n", accel_last_error());
  accel_buffer_release(buffer);
  accel_stream_release(stream);
  accel_device_release(device);
  accel_shutdown();
  *ok = good && atomic_load(&calls) == host_funcs;
  return true;
}

TEST(unmapped_without_callbacks) {
  bool ok = false;
  if (!run_and_shut_down(0, &ok)) SKIP("no opencl:0 device");
  ASSERT(ok);
  ASSERT(!plugin_mapped());
}

TEST(kept_after_host_function) {
  bool ok = false;
  if (!run_and_shut_down(3, &ok)) SKIP("no opencl:0 device");
  ASSERT(ok);
  // Unloaded by the core, yet still mapped: a driver thread may be
  // returning through the callback's last instructions.
  ASSERT(plugin_mapped());
}

int main(int argc, char** argv) { return test_main(argc, argv); }
