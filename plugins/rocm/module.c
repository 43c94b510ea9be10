// SPDX-License-Identifier: MIT
//
// Custom kernels: AMD code objects or clang offload bundles loaded with
// hipModuleLoadData (which picks the bundle entry for the device), looked
// up with hipModuleGetFunction and launched with hipModuleLaunchKernel.
// Arguments become kernelParams: one pointer per argument, to the value
// bytes the core passed or to a device pointer (memory plus offset).
#include <stdlib.h>
#include <string.h>

#include "accel_rocm.h"

// Arguments handled without a heap allocation per launch.
#define ACCEL_ROCM_INLINE_ARGS 16

typedef struct accel_rocm_function accel_rocm_function_t;

// A loaded module. Function handles live as long as their module (the
// core frees none), so the module owns them in a list.
typedef struct accel_rocm_module {
  accel_rocm_device_t* device;
  hipModule_t module;
  void* image;           // a private copy, kept while the module is loaded
  pthread_mutex_t lock;  // guards `functions`
  accel_rocm_function_t* functions;
} accel_rocm_module_t;

struct accel_rocm_function {
  accel_rocm_function_t* next;
  accel_rocm_module_t* module;
  hipFunction_t function;
};

accel_status_t accel_rocm_module_load(void* device_ptr, const void* image,
                                      size_t size, void** out_module) {
  accel_rocm_device_t* device = device_ptr;
  const accel_host_t* host = device->host;
  *out_module = NULL;
  accel_rocm_module_t* module = calloc(1, sizeof(*module));
  void* copy = malloc(size);
  if (module == NULL || copy == NULL) {
    free(module);
    free(copy);
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      "%s: module of %zu bytes", device->prefix, size);
  }
  memcpy(copy, image, size);
  if (pthread_mutex_init(&module->lock, NULL) != 0) {
    free(copy);
    free(module);
    return host->fail(host, ACCEL_ERROR_INTERNAL, "%s: module lock",
                      device->prefix);
  }
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  hipError_t err = hipSuccess;
  if (status == ACCEL_OK) {
    err = device->rt->hipModuleLoadData(&module->module, copy);
    // The status reports a refused image; the sticky error must not.
    if (err != hipSuccess) accel_rocm_clear_error(device->rt);
    accel_rocm_device_leave(device, saved);
  }
  if (status != ACCEL_OK || err != hipSuccess) {
    pthread_mutex_destroy(&module->lock);
    free(copy);
    free(module);
    if (status != ACCEL_OK) return status;
    if (err == hipErrorNoBinaryForGpu || err == hipErrorInvalidImage ||
        err == hipErrorInvalidKernelFile) {
      return host->fail(host, ACCEL_ERROR_INCOMPATIBLE,
                        "%s: hipModuleLoadData: %s: the image has no code "
                        "for %s",
                        device->prefix, device->rt->hipGetErrorName(err),
                        device->arch_full);
    }
    return accel_rocm_device_fail(device, err, "hipModuleLoadData");
  }
  module->device = device;
  module->image = copy;
  *out_module = module;
  return ACCEL_OK;
}

void accel_rocm_module_unload(void* module_ptr) {
  accel_rocm_module_t* module = module_ptr;
  if (module == NULL) return;
  int saved = 0;
  if (accel_rocm_device_enter(module->device, &saved) == ACCEL_OK) {
    module->device->rt->hipModuleUnload(module->module);
    accel_rocm_device_leave(module->device, saved);
  }
  while (module->functions != NULL) {
    accel_rocm_function_t* next = module->functions->next;
    free(module->functions);
    module->functions = next;
  }
  pthread_mutex_destroy(&module->lock);
  free(module->image);
  free(module);
}

accel_status_t accel_rocm_module_function(void* module_ptr, const char* name,
                                          void** out_function) {
  accel_rocm_module_t* module = module_ptr;
  accel_rocm_device_t* device = module->device;
  *out_function = NULL;
  accel_rocm_function_t* function = calloc(1, sizeof(*function));
  if (function == NULL) {
    return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                              "%s: kernel handle", device->prefix);
  }
  hipError_t err = device->rt->hipModuleGetFunction(&function->function,
                                                    module->module, name);
  if (err != hipSuccess) {
    free(function);
    if (err == hipErrorNotFound || err == hipErrorInvalidValue ||
        err == hipErrorInvalidDeviceFunction) {
      return device->host->fail(device->host, ACCEL_ERROR_NOT_FOUND,
                                "%s: no kernel '%s' in the module (%s)",
                                device->prefix, name,
                                device->rt->hipGetErrorName(err));
    }
    return accel_rocm_device_fail(device, err, "hipModuleGetFunction");
  }
  function->module = module;
  pthread_mutex_lock(&module->lock);
  function->next = module->functions;
  module->functions = function;
  pthread_mutex_unlock(&module->lock);
  *out_function = function;
  return ACCEL_OK;
}

accel_status_t accel_rocm_launch(void* function_ptr, void* stream,
                                 const accel_plugin_launch_t* launch) {
  accel_rocm_function_t* function = function_ptr;
  accel_rocm_device_t* device = function->module->device;
  uint32_t n = launch->num_args;
  void* inline_params[ACCEL_ROCM_INLINE_ARGS];
  void* inline_ptrs[ACCEL_ROCM_INLINE_ARGS];
  void** params = inline_params;
  void** ptrs = inline_ptrs;
  if (n > ACCEL_ROCM_INLINE_ARGS) {
    params = malloc(n * sizeof(void*));
    ptrs = malloc(n * sizeof(void*));
    if (params == NULL || ptrs == NULL) {
      free(params);
      free(ptrs);
      return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                                "%s: %u kernel arguments", device->prefix, n);
    }
  }
  for (uint32_t i = 0; i < n; i++) {
    const accel_plugin_arg_t* arg = &launch->args[i];
    if (arg->kind == ACCEL_PLUGIN_ARG_BUFFER) {
      ptrs[i] = (unsigned char*)arg->mem + arg->offset;
      params[i] = &ptrs[i];
    } else {
      params[i] = (void*)arg->value;  // HIP copies the bytes at launch
    }
  }
  int saved = 0;
  accel_status_t status = accel_rocm_device_enter(device, &saved);
  if (status == ACCEL_OK) {
    hipError_t err = device->rt->hipModuleLaunchKernel(
        function->function, launch->grid[0], launch->grid[1], launch->grid[2],
        launch->block[0], launch->block[1], launch->block[2],
        launch->shared_mem_bytes, accel_rocm_stream_handle(stream),
        n > 0 ? params : NULL, NULL);
    accel_rocm_device_leave(device, saved);
    if (err != hipSuccess) {
      status = accel_rocm_device_fail(device, err, "hipModuleLaunchKernel");
    }
  }
  if (params != inline_params) {
    free(params);
    free(ptrs);
  }
  return status;
}
