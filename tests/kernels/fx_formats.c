// SPDX-License-Identifier: MIT
//
// Fixture: a handle-based device in the manner of an OpenCL plugin (ABI
// 1.3), built on the loader fixtures' host-memory plugin. It loads
// "opencl-c" and "spirv" besides its own target "fxcl-test", requires
// buffer argument offsets aligned to FX_ALIGN bytes (default 128), and
// reports a largest allocation of 64 MiB, 32 KiB of shared memory per
// launch and a grid of at most 1024 blocks in x (y and z unlimited). It
// records the last image it was handed and the last launch's buffer
// offsets for the test to read through fx_formats_last() (a test-only
// export beside the entry point).
//
// Built twice: as "fxformats" and, with FX_PROPS_1_2, as "fxformats12",
// which fills only the properties an ABI 1.2 plugin knows (module_target
// the host's ELF target, nothing after it).
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "fixture_common.h"

#if defined(FX_PROPS_1_2)
#define FX_NAME "fxformats12"
// A target the test can make an image for: a host ELF header.
#if defined(__aarch64__)
#define FX_TARGET "elf-aarch64"
#else
#define FX_TARGET "elf-x86_64"
#endif
#else
#define FX_NAME "fxformats"
#define FX_TARGET "fxcl-test"
#endif

static accel_plugin_t fx_plugin;
static accel_device_ops_t fx_ops;
static const accel_host_t* fx_the_host;

// What the test reads back.
static unsigned char* fx_last_image;
static size_t fx_last_size;
static uint64_t fx_last_offsets[8];
static uint32_t fx_last_args;

ACCEL_PLUGIN_EXPORT void fx_formats_last(const void** image, size_t* size,
                                         const uint64_t** offsets,
                                         uint32_t* num_args) {
  *image = fx_last_image;
  *size = fx_last_size;
  *offsets = fx_last_offsets;
  *num_args = fx_last_args;
}

static accel_status_t fx_query_props(void* device,
                                     accel_plugin_device_props_t* props) {
  fx_the_host = fx_host(device);
  props->type = ACCEL_DEVICE_TYPE_OTHER;
  strcpy(props->name, "accel formats fixture");
  strcpy(props->vendor, "accel");
  strcpy(props->arch, "fx");
  props->total_memory = 1ull << 30;
  props->compute_units = 1;
  props->max_threads_per_block = 256;
  props->caps = ACCEL_DEVICE_CAP_KERNELS;
  strcpy(props->module_target, FX_TARGET);
#if !defined(FX_PROPS_1_2)
  if (!ACCEL_PLUGIN_HAS_FIELD(props, accel_plugin_device_props_t, platform)) {
    return ACCEL_OK;
  }
  const char* align = fx_the_host->getenv(fx_the_host, "FX_ALIGN");
  props->buffer_offset_alignment =
      align != NULL ? (uint32_t)strtoul(align, NULL, 10) : 128u;
  props->max_alloc_size = 64ull << 20;
  props->max_shared_mem_bytes = 32768;
  props->max_grid[0] = 1024;
  strcpy(props->module_formats, "opencl-c spirv");
  strcpy(props->platform, "accel fixture platform");
#endif
  return ACCEL_OK;
}

// A module is a copy of its image.
typedef struct fx_module {
  size_t size;
  unsigned char bytes[];
} fx_module_t;

static accel_status_t fx_module_load(void* device, const void* image,
                                     size_t size, void** out_module) {
  const accel_host_t* host = fx_host(device);
  static const char fails[] = "BUILD_FAILS";
  for (size_t i = 0; i + sizeof(fails) - 1 <= size; i++) {
    if (memcmp((const char*)image + i, fails, sizeof(fails) - 1) == 0) {
      return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                        "fixture: build failed: error: BUILD_FAILS");
    }
  }
  fx_module_t* module = malloc(sizeof(*module) + size);
  unsigned char* copy = malloc(size);
  if (module == NULL || copy == NULL) {
    free(module);
    free(copy);
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "fixture: no memory");
  }
  module->size = size;
  memcpy(module->bytes, image, size);
  memcpy(copy, image, size);
  free(fx_last_image);
  fx_last_image = copy;
  fx_last_size = size;
  *out_module = module;
  return ACCEL_OK;
}

static void fx_module_unload(void* module) { free(module); }

static accel_status_t fx_module_function(void* module, const char* name,
                                         void** out_function) {
  (void)name;
  *out_function = module;
  return ACCEL_OK;
}

static accel_status_t fx_launch(void* function, void* stream,
                                const accel_plugin_launch_t* launch) {
  (void)function;
  (void)stream;
  fx_last_args = launch->num_args;
  for (uint32_t i = 0; i < launch->num_args && i < 8; i++) {
    fx_last_offsets[i] = launch->args[i].offset;
  }
  return ACCEL_OK;
}

static void fx_unload_all(void* plugin) {
  free(fx_last_image);
  fx_last_image = NULL;
  fx_last_size = 0;
  free(plugin);  // fixture_common's state is one malloc'd block
}

ACCEL_PLUGIN_EXPORT const accel_plugin_t* accel_plugin_entry(
    uint32_t host_abi) {
  if (host_abi != ACCEL_PLUGIN_ABI_VERSION) return NULL;
  fx_plugin_init(&fx_plugin, &fx_ops, FX_NAME);
  fx_plugin.unload = fx_unload_all;
  fx_ops.query_props = fx_query_props;
  fx_ops.module_load = fx_module_load;
  fx_ops.module_unload = fx_module_unload;
  fx_ops.module_function = fx_module_function;
  fx_ops.launch = fx_launch;
#if defined(FX_PROPS_1_2)
  // The device_ops table an ABI 1.2 build returns: up to op_gemm_workspace.
  fx_ops.struct_size =
      (uint32_t)(offsetof(accel_device_ops_t, op_gemm_workspace) +
                 sizeof(fx_ops.op_gemm_workspace));
#endif
  return &fx_plugin;
}
