// SPDX-License-Identifier: MIT
//
// The OpenCL plugin's module_load below the core, driven through its
// descriptor (the built libaccel-opencl.so), for the images the core
// never hands it on a device without IL support:
// - a SPIR-V module where the device lists no "spirv" format (PoCL in
//   Debian 12 has no CL_DEVICE_IL_VERSION): ACCEL_ERROR_UNSUPPORTED
//   naming SPIR-V; where it does list it, a bare header is refused as
//   ACCEL_ERROR_INVALID_ARGUMENT;
// - a truncated SPIR-V module and binary garbage: INVALID_ARGUMENT;
// - OpenCL C source with a trailing NUL loads, and its kernel is found;
// - a module loaded again reuses the kept program: the second module
//   outlives the first's unload, eviction by eight other images leaves
//   the image loadable, and a source that fails to build fails again.
// Exits 77 when no OpenCL device opens.
#include <stdint.h>
#include <stdlib.h>

#include "opencl/test_opencl_plugin.h"
#include "test.h"
#include "test_host.h"

static bool fixture(ocl_fixture_t* fx) {
  const accel_plugin_t* desc = ocl_descriptor();
  if (desc == NULL || ocl_load(desc, fx) != ACCEL_OK) return false;
  if (!ocl_open_device(fx, 0)) {
    ocl_unload(fx);
    return false;
  }
  return true;
}

TEST(spirv_without_il_is_unsupported) {
  ocl_fixture_t fx;
  if (!fixture(&fx)) SKIP("no OpenCL device");
  accel_plugin_device_props_t props;
  memset(&props, 0, sizeof(props));
  props.struct_size = sizeof(props);
  OCL_ASSERT_OK(fx.ops->query_props(fx.device, &props));
  static const uint32_t spirv[5] = {0x07230203u, 0x00010000u, 0, 1, 0};
  void* module = NULL;
  accel_status_t s =
      fx.ops->module_load(fx.device, spirv, sizeof(spirv), &module);
  printf("  formats \"%s\": %d: %s\n", props.module_formats, (int)s,
         test_host_message);
  if (strstr(props.module_formats, "spirv") == NULL) {
    ASSERT_EQ(s, ACCEL_ERROR_UNSUPPORTED);
    ASSERT_STR_CONTAINS(test_host_message, "SPIR-V");
  } else {
    ASSERT_EQ(s, ACCEL_ERROR_INVALID_ARGUMENT);
  }
  ASSERT_NULL(module);
  ocl_unload(&fx);
}

TEST(truncated_spirv_and_garbage_are_refused) {
  ocl_fixture_t fx;
  if (!fixture(&fx)) SKIP("no OpenCL device");
  static const uint32_t spirv[2] = {0x07230203u, 0x00010000u};
  void* module = NULL;
  OCL_ASSERT_STATUS(
      fx.ops->module_load(fx.device, spirv, sizeof(spirv), &module),
      ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(test_host_message, "truncated");
  static const unsigned char garbage[] = {0x7f, 'E', 'L', 'F', 0, 0, 1, 2};
  OCL_ASSERT_STATUS(
      fx.ops->module_load(fx.device, garbage, sizeof(garbage), &module),
      ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(test_host_message, "OpenCL C");
  ASSERT_NULL(module);
  ocl_unload(&fx);
}

TEST(source_with_trailing_nul_loads) {
  ocl_fixture_t fx;
  if (!fixture(&fx)) SKIP("no OpenCL device");
  static const char source[] =
      "kernel void twice(global int* p) { p[get_global_id(0)] *= 2; }\n";
  void* module = NULL;
  OCL_ASSERT_OK(
      fx.ops->module_load(fx.device, source, sizeof(source), &module));
  void* function = NULL;
  void* again = NULL;
  OCL_ASSERT_OK(fx.ops->module_function(module, "twice", &function));
  OCL_ASSERT_OK(fx.ops->module_function(module, "twice", &again));
  ASSERT(function == again);  // one function per name
  OCL_ASSERT_STATUS(fx.ops->module_function(module, "thrice", &again),
                    ACCEL_ERROR_NOT_FOUND);
  fx.ops->module_unload(module);
  ocl_unload(&fx);
}

// Runs put(p, v) over 64 ints of `mem` from `module` and reads them back.
static bool put_and_check(ocl_fixture_t* fx, void* module, void* mem,
                          int32_t v) {
  void* function = NULL;
  void* stream = NULL;
  if (fx->ops->module_function(module, "put", &function) != ACCEL_OK ||
      fx->ops->stream_create(fx->device, 0, &stream) != ACCEL_OK) {
    return false;
  }
  accel_plugin_arg_t args[2] = {
      {.kind = ACCEL_PLUGIN_ARG_BUFFER, .mem = mem, .offset = 0},
      {.kind = ACCEL_PLUGIN_ARG_VALUE, .size = sizeof(v), .value = &v},
  };
  accel_plugin_launch_t launch = {.struct_size = sizeof(launch),
                                  .grid = {1, 1, 1},
                                  .block = {64, 1, 1},
                                  .num_args = 2,
                                  .args = args};
  int32_t got[64];
  bool ok = fx->ops->launch(function, stream, &launch) == ACCEL_OK &&
            fx->ops->copy_d2h(fx->device, stream, got, mem, 0,
                              sizeof(got)) == ACCEL_OK &&
            fx->ops->stream_synchronize(stream) == ACCEL_OK;
  fx->ops->stream_destroy(stream);
  for (int i = 0; ok && i < 64; i++) ok = got[i] == v;
  return ok;
}

TEST(same_image_reuses_the_kept_program) {
  ocl_fixture_t fx;
  if (!fixture(&fx)) SKIP("no OpenCL device");
  static const char source[] =
      "kernel void put(global int* p, int v) { p[get_global_id(0)] = v; }\n";
  void* mem = NULL;
  OCL_ASSERT_OK(fx.ops->mem_alloc(fx.device, 256, &mem));
  void *a = NULL, *b = NULL;
  OCL_ASSERT_OK(fx.ops->module_load(fx.device, source, sizeof(source), &a));
  OCL_ASSERT_OK(fx.ops->module_load(fx.device, source, sizeof(source), &b));
  ASSERT(put_and_check(&fx, a, mem, 7));
  fx.ops->module_unload(a);  // b shares the program and must keep it
  ASSERT(put_and_check(&fx, b, mem, 9));
  fx.ops->module_unload(b);
  // Eight other images take every kept slot; the first still loads.
  for (int i = 0; i < 8; i++) {
    char other[128];
    int n = snprintf(other, sizeof(other),
                     "kernel void put(global int* p, int v) "
                     "{ p[get_global_id(0)] = v + %d - %d; }\n",
                     i, i);
    void* m = NULL;
    OCL_ASSERT_OK(fx.ops->module_load(fx.device, other, (size_t)n, &m));
    ASSERT(put_and_check(&fx, m, mem, 20 + i));
    fx.ops->module_unload(m);
  }
  OCL_ASSERT_OK(fx.ops->module_load(fx.device, source, sizeof(source), &a));
  ASSERT(put_and_check(&fx, a, mem, 11));
  fx.ops->module_unload(a);
  // A failed build is not kept: the same error, with its log, again.
  static const char broken[] = "kernel void put(global int* p) { p[0] = ; }";
  for (int i = 0; i < 2; i++) {
    void* m = NULL;
    OCL_ASSERT_STATUS(
        fx.ops->module_load(fx.device, broken, sizeof(broken) - 1, &m),
        ACCEL_ERROR_INVALID_ARGUMENT);
    ASSERT_NULL(m);
  }
  fx.ops->mem_free(fx.device, mem);
  ocl_unload(&fx);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
