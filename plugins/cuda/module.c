// SPDX-License-Identifier: MIT
//
// Custom kernels: cubin, fatbin or PTX images loaded with
// cuModuleLoadDataEx, and launches through cuLaunchKernel.
//
// The core has already checked that the image is CUDA code (cuda-* target)
// but not for which SM: that is the driver's call, and its refusals are
// turned into messages a user can act on (NO_BINARY_FOR_GPU names the
// device's sm_XY; UNSUPPORTED_PTX_VERSION and JIT failures carry the
// PTX's .version and the JIT's own log).
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_cuda.h"

// Bytes of each JIT log buffer.
#define ACCEL_CUDA_JIT_LOG_SIZE 4096

// Dynamic shared memory every kernel may use without opting in.
#define ACCEL_CUDA_SHARED_DEFAULT 49152u

// Kernel arguments kept on the stack per launch; more are heap-allocated.
#define ACCEL_CUDA_LAUNCH_INLINE_ARGS 32

typedef struct accel_cuda_function accel_cuda_function_t;

// A loaded module and the function handles given out for it, which live
// until the module is unloaded (the ABI has no per-function release).
typedef struct accel_cuda_module {
  accel_cuda_device_t* device;
  CUmodule module;
  pthread_mutex_t mutex;  // guards `functions`
  accel_cuda_function_t* functions;
} accel_cuda_module_t;

struct accel_cuda_function {
  accel_cuda_function_t* next;
  accel_cuda_module_t* module;
  CUfunction function;
  // Dynamic shared memory this function has been allowed so far
  // (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, which starts at
  // 48 KiB less the static shared memory); guarded by the module's mutex.
  uint32_t shared_allowed;
  // The kernel's static shared memory (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES).
  uint32_t shared_static;
  // Parameter sizes from cuFuncGetParamInfo (num_params == UINT32_MAX when
  // the driver cannot tell); launches check their arguments against them.
  uint32_t num_params;
  uint32_t* param_sizes;
  char name[];
};

// Copies the ".version X.Y" of PTX text into `buf`, or "unknown".
static void accel_cuda_ptx_version(const char* ptx, char* buf, size_t size) {
  const char* v = strstr(ptx, ".version");
  if (v == NULL) {
    snprintf(buf, size, "unknown");
    return;
  }
  v += strlen(".version");
  while (*v == ' ' || *v == '\t') v++;
  size_t n = 0;
  while (n + 1 < size && (isdigit((unsigned char)v[n]) || v[n] == '.')) {
    buf[n] = v[n];
    n++;
  }
  buf[n] = '\0';
  if (n == 0) snprintf(buf, size, "unknown");
}

// Whether the `size` bytes at `b` start with `magic`, reading no further
// than the first mismatch (so a short NUL-terminated text is safe).
static bool accel_cuda_starts_with(const unsigned char* b, size_t size,
                                   const unsigned char magic[4]) {
  for (size_t i = 0; i < 4; i++) {
    if (i >= size || b[i] != magic[i]) return false;
  }
  return true;
}

// Whether `image` is PTX text rather than an ELF cubin or a fatbin (magic
// 0xBA55ED50, little-endian).
static bool accel_cuda_image_is_ptx(const void* image, size_t size) {
  static const unsigned char elf[4] = {0x7f, 'E', 'L', 'F'};
  static const unsigned char fatbin[4] = {0x50, 0xed, 0x55, 0xba};
  return !accel_cuda_starts_with(image, size, elf) &&
         !accel_cuda_starts_with(image, size, fatbin);
}

accel_status_t accel_cuda_module_load_image(accel_cuda_device_t* device,
                                            const void* image, const char* what,
                                            CUmodule* out_module) {
  const accel_host_t* host = device->host;
  char* error_log = calloc(2, ACCEL_CUDA_JIT_LOG_SIZE);
  if (error_log == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "%s: %s: JIT logs",
                      device->prefix, what);
  }
  char* info_log = error_log + ACCEL_CUDA_JIT_LOG_SIZE;
  CUjit_option options[] = {
      CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
      CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log, (void*)(uintptr_t)ACCEL_CUDA_JIT_LOG_SIZE,
                    info_log, (void*)(uintptr_t)ACCEL_CUDA_JIT_LOG_SIZE};
  CUresult r = device->cu->cuModuleLoadDataEx(
      out_module, image, (unsigned)(sizeof(options) / sizeof(options[0])),
      options, values);
  accel_status_t status = ACCEL_OK;
  if (r == CUDA_SUCCESS) {
    if (info_log[0] != '\0') {
      host->log(host, ACCEL_LOG_DEBUG, "%s: %s: JIT: %s", device->prefix, what,
                info_log);
    }
  } else if (r == CUDA_ERROR_NO_BINARY_FOR_GPU) {
    status = host->fail(host, ACCEL_ERROR_UNSUPPORTED,
                        "%s: %s: module has no code for %s (%s): it holds "
                        "neither %s machine code nor PTX the driver can "
                        "compile for it",
                        device->prefix, what, device->arch, device->name,
                        device->arch);
  } else {
    char text[256];
    accel_cuda_describe(device->cu, r, text, sizeof(text));
    char version[16] = "";
    bool ptx = accel_cuda_image_is_ptx(image, 4);
    if (ptx) accel_cuda_ptx_version(image, version, sizeof(version));
    const accel_cuda_driver_t* cu = device->cu;
    if (r == CUDA_ERROR_UNSUPPORTED_PTX_VERSION) {
      status = host->fail(host, ACCEL_ERROR_INCOMPATIBLE,
                          "%s: %s: PTX needs a newer driver: the module's "
                          "PTX ISA %s is newer than driver CUDA %d.%d "
                          "compiles; update the NVIDIA driver or build the "
                          "PTX with an older toolkit (%s)",
                          device->prefix, what, version, cu->version / 1000,
                          (cu->version % 1000) / 10, text);
    } else {
      status = host->fail(
          host, accel_cuda_status(r), "%s: %s: cuModuleLoadDataEx: %s%s%s%s%s",
          device->prefix, what, text, ptx ? "; PTX ISA " : "",
          ptx ? version : "", error_log[0] ? "; JIT log: " : "", error_log);
    }
  }
  free(error_log);
  return status;
}

accel_status_t accel_cuda_module_load(void* device_ptr, const void* image,
                                      size_t size, void** out_module) {
  accel_cuda_device_t* device = device_ptr;
  const accel_host_t* host = device->host;
  *out_module = NULL;
  accel_cuda_module_t* module = calloc(1, sizeof(*module));
  // PTX must reach the driver NUL-terminated; the caller's bytes need not
  // be, so text images are copied.
  char* text = NULL;
  if (module != NULL && accel_cuda_image_is_ptx(image, size)) {
    text = malloc(size + 1);
    if (text != NULL) {
      memcpy(text, image, size);
      text[size] = '\0';
    }
  }
  if (module == NULL || (accel_cuda_image_is_ptx(image, size) && !text)) {
    free(module);
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "%s: module state",
                      device->prefix);
  }
  if (pthread_mutex_init(&module->mutex, NULL) != 0) {
    free(text);
    free(module);
    return host->fail(host, ACCEL_ERROR_INTERNAL, "%s: module mutex",
                      device->prefix);
  }
  module->device = device;
  accel_status_t status = accel_cuda_context_push(device, "module_load");
  if (status == ACCEL_OK) {
    status = accel_cuda_module_load_image(
        device, text != NULL ? (const void*)text : image, "module_load",
        &module->module);
    accel_cuda_context_pop(device);
  }
  free(text);
  if (status != ACCEL_OK) {
    pthread_mutex_destroy(&module->mutex);
    free(module);
    return status;
  }
  *out_module = module;
  return ACCEL_OK;
}

void accel_cuda_module_unload(void* module_ptr) {
  accel_cuda_module_t* module = module_ptr;
  if (module == NULL) return;
  accel_cuda_device_t* device = module->device;
  if (accel_cuda_context_push(device, "module_unload") == ACCEL_OK) {
    (void)device->cu->cuModuleUnload(module->module);
    accel_cuda_context_pop(device);
  }
  for (accel_cuda_function_t* f = module->functions; f != NULL;) {
    accel_cuda_function_t* next = f->next;
    free(f->param_sizes);
    free(f);
    f = next;
  }
  pthread_mutex_destroy(&module->mutex);
  free(module);
}

// Most kernel parameters read with cuFuncGetParamInfo.
#define ACCEL_CUDA_MAX_PARAMS 1024

// Reads the parameter sizes of `function` into `f` (the caller pushed the
// context). Without cuFuncGetParamInfo, or if it fails other than at the
// end of the list, `f` records that the sizes are unknown.
static void accel_cuda_function_params(const accel_cuda_device_t* device,
                                       accel_cuda_function_t* f,
                                       CUfunction function) {
  const accel_cuda_driver_t* cu = device->cu;
  f->num_params = UINT32_MAX;
  f->param_sizes = NULL;
  if (cu->cuFuncGetParamInfo == NULL) return;
  uint32_t sizes[64];
  uint32_t n = 0;
  for (; n < ACCEL_CUDA_MAX_PARAMS; n++) {
    size_t offset = 0, size = 0;
    CUresult r = cu->cuFuncGetParamInfo(function, n, &offset, &size);
    if (r == CUDA_ERROR_INVALID_VALUE) break;  // past the last parameter
    if (r != CUDA_SUCCESS || n >= 64) return;  // unknown: not checked
    sizes[n] = (uint32_t)size;
  }
  f->param_sizes = malloc((n > 0 ? n : 1) * sizeof(*f->param_sizes));
  if (f->param_sizes == NULL) return;
  if (n > 0) memcpy(f->param_sizes, sizes, n * sizeof(*sizes));
  f->num_params = n;
}

accel_status_t accel_cuda_module_function(void* module_ptr, const char* name,
                                          void** out_function) {
  accel_cuda_module_t* module = module_ptr;
  accel_cuda_device_t* device = module->device;
  const accel_host_t* host = device->host;
  *out_function = NULL;
  accel_status_t status = ACCEL_OK;
  pthread_mutex_lock(&module->mutex);
  accel_cuda_function_t* f = module->functions;
  while (f != NULL && strcmp(f->name, name) != 0) f = f->next;
  if (f == NULL) {
    CUfunction function = NULL;
    int shared_static = 0;
    // The module's context is made current: the driver documents no
    // exception for handle lookups, so none is relied on.
    CUresult r = device->cu->cuCtxPushCurrent(device->ctx);
    if (r == CUDA_SUCCESS) {
      r = device->cu->cuModuleGetFunction(&function, module->module, name);
      if (r == CUDA_SUCCESS) {
        r = device->cu->cuFuncGetAttribute(
            &shared_static, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function);
      }
      accel_cuda_context_pop(device);
    }
    size_t len = strlen(name);
    if (r == CUDA_ERROR_NOT_FOUND) {
      status = host->fail(host, ACCEL_ERROR_NOT_FOUND,
                          "%s: module has no kernel named '%s' (C++ "
                          "kernels need extern \"C\" or the mangled name)",
                          device->prefix, name);
    } else if (r != CUDA_SUCCESS) {
      status = accel_cuda_device_fail(device, r, "cuModuleGetFunction");
    } else if ((f = malloc(sizeof(*f) + len + 1)) == NULL) {
      status = host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                          "%s: function handle", device->prefix);
    } else {
      f->module = module;
      f->function = function;
      f->shared_static = shared_static > 0 ? (uint32_t)shared_static : 0;
      f->num_params = UINT32_MAX;
      f->param_sizes = NULL;
      if (device->cu->cuCtxPushCurrent(device->ctx) == CUDA_SUCCESS) {
        accel_cuda_function_params(device, f, function);
        accel_cuda_context_pop(device);
      }
      f->shared_allowed = f->shared_static < ACCEL_CUDA_SHARED_DEFAULT
                              ? ACCEL_CUDA_SHARED_DEFAULT - f->shared_static
                              : 0;
      memcpy(f->name, name, len + 1);
      f->next = module->functions;
      module->functions = f;
    }
  }
  pthread_mutex_unlock(&module->mutex);
  if (status == ACCEL_OK) *out_function = f;
  return status;
}

// Checks the launch's arguments against the kernel's parameters where the
// driver says what they are (cuFuncGetParamInfo): the count, a buffer
// for each pointer-sized parameter, and each value's size.
static accel_status_t accel_cuda_launch_check(
    const accel_cuda_function_t* f, const accel_plugin_launch_t* launch) {
  const accel_cuda_device_t* device = f->module->device;
  const accel_host_t* host = device->host;
  if (f->num_params == UINT32_MAX) return ACCEL_OK;
  if (launch->num_args != f->num_params) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "%s: launch of %s: %u arguments; the kernel takes %u",
                      device->prefix, f->name, (unsigned)launch->num_args,
                      (unsigned)f->num_params);
  }
  for (uint32_t i = 0; i < f->num_params; i++) {
    const accel_plugin_arg_t* arg = &launch->args[i];
    uint32_t size = arg->kind == ACCEL_PLUGIN_ARG_BUFFER
                        ? (uint32_t)sizeof(CUdeviceptr)
                        : arg->size;
    if (size != f->param_sizes[i]) {
      return host->fail(
          host, ACCEL_ERROR_INVALID_ARGUMENT,
          "%s: launch of %s: argument %u is %s of %u bytes; the kernel's "
          "parameter %u is %u bytes",
          device->prefix, f->name, (unsigned)i,
          arg->kind == ACCEL_PLUGIN_ARG_BUFFER ? "a buffer (device pointer)"
                                               : "a value",
          (unsigned)size, (unsigned)i, (unsigned)f->param_sizes[i]);
    }
  }
  return ACCEL_OK;
}

// Lets `f` use `bytes` of dynamic shared memory. A kernel's dynamic
// allowance (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) starts at
// 48 KiB less its static shared memory; more takes an opt-in with
// cuFuncSetAttribute, and static + dynamic must fit the device's opt-in
// limit (CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 227 KiB on
// sm_90). The allowance only grows, so it is set once per new maximum. The
// caller pushed the context.
static accel_status_t accel_cuda_shared_allow(accel_cuda_function_t* f,
                                              uint32_t bytes) {
  accel_cuda_module_t* module = f->module;
  accel_cuda_device_t* device = module->device;
  uint32_t limit = device->max_shared_optin;
  uint64_t total = (uint64_t)f->shared_static + bytes;
  if (limit != 0 && total > limit) {
    return device->host->fail(
        device->host, ACCEL_ERROR_INVALID_ARGUMENT,
        "%s: launch of %s: %u bytes of dynamic shared memory per block "
        "beside the kernel's %u bytes of static shared memory; %s (%s) "
        "allows at most %u bytes per block in all",
        device->prefix, f->name, bytes, f->shared_static, device->arch,
        device->name, limit);
  }
  CUresult r = CUDA_SUCCESS;
  pthread_mutex_lock(&module->mutex);
  if (f->shared_allowed < bytes) {
    r = device->cu->cuFuncSetAttribute(
        f->function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
        (int)bytes);
    if (r == CUDA_SUCCESS) f->shared_allowed = bytes;
  }
  pthread_mutex_unlock(&module->mutex);
  if (r != CUDA_SUCCESS) {
    return accel_cuda_device_fail(device, r, "cuFuncSetAttribute");
  }
  return ACCEL_OK;
}

accel_status_t accel_cuda_launch(void* function_ptr, void* stream_ptr,
                                 const accel_plugin_launch_t* launch) {
  accel_cuda_function_t* f = function_ptr;
  accel_cuda_stream_t* stream = stream_ptr;
  accel_cuda_device_t* device = f->module->device;
  uint32_t n = launch->num_args;
  // cuLaunchKernel copies the argument values before it returns, so
  // per-launch storage for the device pointers is enough.
  void* params_inline[ACCEL_CUDA_LAUNCH_INLINE_ARGS];
  CUdeviceptr ptrs_inline[ACCEL_CUDA_LAUNCH_INLINE_ARGS];
  void** params = params_inline;
  CUdeviceptr* ptrs = ptrs_inline;
  if (n > ACCEL_CUDA_LAUNCH_INLINE_ARGS) {
    params = malloc(n * sizeof(*params));
    ptrs = malloc(n * sizeof(*ptrs));
    if (params == NULL || ptrs == NULL) {
      free(params);
      free(ptrs);
      return device->host->fail(device->host, ACCEL_ERROR_OUT_OF_MEMORY,
                                "%s: launch arguments", device->prefix);
    }
  }
  for (uint32_t i = 0; i < n; i++) {
    const accel_plugin_arg_t* arg = &launch->args[i];
    if (arg->kind == ACCEL_PLUGIN_ARG_BUFFER) {
      ptrs[i] = accel_cuda_ptr(arg->mem, arg->offset);
      params[i] = &ptrs[i];
    } else {
      params[i] = (void*)arg->value;
    }
  }
  accel_status_t status = accel_cuda_launch_check(f, launch);
  if (status == ACCEL_OK) status = accel_cuda_context_push(device, "launch");
  if (status == ACCEL_OK) {
    status = accel_cuda_shared_allow(f, launch->shared_mem_bytes);
    if (status != ACCEL_OK) accel_cuda_context_pop(device);
  }
  if (status == ACCEL_OK) {
    CUstream cs = accel_cuda_stream_of(device, stream);
    CUresult r = device->cu->cuLaunchKernel(
        f->function, launch->grid[0], launch->grid[1], launch->grid[2],
        launch->block[0], launch->block[1], launch->block[2],
        launch->shared_mem_bytes, cs, n > 0 ? params : NULL, NULL);
    if (r == CUDA_SUCCESS && stream == NULL)
      r = device->cu->cuStreamSynchronize(cs);
    if (r != CUDA_SUCCESS) {
      char call[300];
      snprintf(call, sizeof(call),
               "cuLaunchKernel(%s, grid %ux%ux%u, block "
               "%ux%ux%u, %u bytes shared)",
               f->name, launch->grid[0], launch->grid[1], launch->grid[2],
               launch->block[0], launch->block[1], launch->block[2],
               launch->shared_mem_bytes);
      status = accel_cuda_device_fail(device, r, call);
    }
    accel_cuda_context_pop(device);
  }
  if (params != params_inline) {
    free(params);
    free(ptrs);
  }
  return status;
}
