// SPDX-License-Identifier: MIT
//
// Custom kernels on OpenCL: a module is a cl_program built from OpenCL C
// source text or, on devices that take IL, from SPIR-V; a function is a
// cl_kernel with its own mutex; a launch sets the arguments and enqueues
// the kernel on the stream's queue.
//
// Launch mapping (plugin.h): global size = grid * block, local size =
// block, in three dimensions. Buffer arguments are the buffer itself at
// offset 0, or a sub-buffer starting at the offset (accel_opencl_mem_view;
// the core guarantees buffer_offset_alignment). Value arguments of any
// size go to clSetKernelArg as they are. shared_mem_bytes > 0 appends one
// __local argument of that size after the user's arguments. The kernel's
// mutex is held from the first clSetKernelArg to the enqueue, so threads
// launching one kernel with different arguments do not mix them.
//
// Functions belong to their module: module_function returns the same
// function for the same name, and module_unload frees them all. Modules
// of the same image share one program (kept below), each with kernels
// of its own.
#include <stdlib.h>
#include <string.h>

#include "builtins.h"

// Arguments prepared on the stack up to this many; the heap beyond.
#define ACCEL_OPENCL_STACK_ARGS 16

// SPIR-V magic number, first word of a module (either byte order).
#define ACCEL_OPENCL_SPIRV_MAGIC 0x07230203u
#define ACCEL_OPENCL_SPIRV_MAGIC_SWAPPED 0x03022307u

typedef struct accel_opencl_function accel_opencl_function_t;

typedef struct accel_opencl_module {
  accel_opencl_device_t* device;
  cl_program program;
  pthread_mutex_t mutex;  // guards `functions`
  accel_opencl_function_t* functions;
} accel_opencl_module_t;

struct accel_opencl_function {
  accel_opencl_module_t* module;
  accel_opencl_function_t* next;
  accel_opencl_kernel_t kernel;
  cl_uint num_args;  // as declared in the source
  char name[];
};

// Whether `image` looks like OpenCL C source: no NUL byte except
// trailing ones, and no control characters other than whitespace.
static bool accel_opencl_is_text(const unsigned char* image, size_t size) {
  while (size > 0 && image[size - 1] == '\0') size--;
  if (size == 0) return false;
  for (size_t i = 0; i < size; i++) {
    unsigned char c = image[i];
    if (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' &&
        c != '\v') {
      return false;
    }
  }
  return true;
}

// Programs kept by image: a module loaded again (the same bytes) reuses
// the program built for it, retained, instead of building it anew. That
// saves the JIT (or the cached binary's build) and the memory a runtime
// may keep per build: PoCL 3.1 keeps about 1.5 KiB for every
// clBuildProgram until its context goes (a raw OpenCL loop shows it).
// The last ACCEL_OPENCL_KEPT images stay built after their modules
// unload; device close releases them. Builds run outside the mutex.

// A retained program for `image`, or NULL.
static cl_program accel_opencl_kept_find(accel_opencl_device_t* d,
                                         const void* image, size_t size) {
  cl_program program = NULL;
  pthread_mutex_lock(&d->mutex);
  for (int i = 0; i < ACCEL_OPENCL_KEPT; i++) {
    struct accel_opencl_kept* k = &d->kept[i];
    if (k->image != NULL && k->size == size &&
        memcmp(k->image, image, size) == 0) {
      d->cl->clRetainProgram(k->program);
      k->used = ++d->kept_clock;
      program = k->program;
      break;
    }
  }
  pthread_mutex_unlock(&d->mutex);
  return program;
}

// Keeps `program` (built from `image`) in the least recently used slot;
// nothing when memory for the copy is short.
static void accel_opencl_kept_add(accel_opencl_device_t* d, const void* image,
                                  size_t size, cl_program program) {
  unsigned char* copy = malloc(size);
  if (copy == NULL) return;
  memcpy(copy, image, size);
  d->cl->clRetainProgram(program);
  pthread_mutex_lock(&d->mutex);
  struct accel_opencl_kept* slot = &d->kept[0];
  for (int i = 1; i < ACCEL_OPENCL_KEPT; i++) {
    if (d->kept[i].used < slot->used) slot = &d->kept[i];
  }
  struct accel_opencl_kept old = *slot;
  *slot = (struct accel_opencl_kept){copy, size, program, ++d->kept_clock};
  pthread_mutex_unlock(&d->mutex);
  if (old.image != NULL) {
    d->cl->clReleaseProgram(old.program);
    free(old.image);
  }
}

void accel_opencl_modules_release(accel_opencl_device_t* device) {
  for (int i = 0; i < ACCEL_OPENCL_KEPT; i++) {
    struct accel_opencl_kept* k = &device->kept[i];
    if (k->image == NULL) continue;
    device->cl->clReleaseProgram(k->program);
    free(k->image);
    k->image = NULL;
  }
}

accel_status_t accel_opencl_module_load(void* device, const void* image,
                                        size_t size, void** out_module) {
  accel_opencl_device_t* d = device;
  const accel_host_t* host = d->host;
  *out_module = NULL;
  accel_opencl_module_t* module = calloc(1, sizeof(*module));
  if (module == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "module_load");
  }
  if (pthread_mutex_init(&module->mutex, NULL) != 0) {
    free(module);
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "module_load: mutex");
  }
  module->device = d;
  module->program = accel_opencl_kept_find(d, image, size);
  if (module->program != NULL) {
    *out_module = module;
    return ACCEL_OK;
  }
  uint32_t magic = 0;
  if (size >= 4) memcpy(&magic, image, sizeof(magic));
  accel_status_t status;
  if (magic == ACCEL_OPENCL_SPIRV_MAGIC ||
      magic == ACCEL_OPENCL_SPIRV_MAGIC_SWAPPED) {
    if (size % 4 != 0 || size < 20) {
      status = host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                          "module_load: a SPIR-V module of %zu bytes is "
                          "truncated (it needs a 20-byte header and whole "
                          "32-bit words)",
                          size);
    } else {
      status = accel_opencl_program_build_il(
          d, image, size, "module_load (SPIR-V)", &module->program);
    }
  } else if (accel_opencl_is_text(image, size)) {
    status =
        accel_opencl_program_build(d, image, size, NULL, false,
                                   "module_load (OpenCL C)", &module->program);
  } else {
    status = host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                        "module_load: the image is neither OpenCL C source "
                        "text nor a SPIR-V module (%s loads those two)",
                        d->props.name);
  }
  if (status != ACCEL_OK) {
    pthread_mutex_destroy(&module->mutex);
    free(module);
    return status;
  }
  accel_opencl_kept_add(d, image, size, module->program);
  *out_module = module;
  return ACCEL_OK;
}

void accel_opencl_module_unload(void* module) {
  accel_opencl_module_t* m = module;
  if (m == NULL) return;
  const accel_opencl_api_t* cl = m->device->cl;
  for (accel_opencl_function_t* f = m->functions; f != NULL;) {
    accel_opencl_function_t* next = f->next;
    cl->clReleaseKernel(f->kernel.kernel);
    pthread_mutex_destroy(&f->kernel.mutex);
    free(f);
    f = next;
  }
  cl->clReleaseProgram(m->program);
  pthread_mutex_destroy(&m->mutex);
  free(m);
}

// Creates the function `name` of `m`; the caller holds m->mutex.
static accel_status_t accel_opencl_function_create(
    accel_opencl_module_t* m, const char* name, accel_opencl_function_t** out) {
  const accel_opencl_api_t* cl = m->device->cl;
  const accel_host_t* host = m->device->host;
  cl_int err = CL_SUCCESS;
  cl_kernel kernel = cl->clCreateKernel(m->program, name, &err);
  if (err == CL_INVALID_KERNEL_NAME) {
    return host->fail(host, ACCEL_ERROR_NOT_FOUND,
                      "module_function: no kernel named '%s' in the module",
                      name);
  }
  if (err != CL_SUCCESS) return accel_opencl_check(host, err, name);
  cl_uint num_args = 0;
  err = cl->clGetKernelInfo(kernel, CL_KERNEL_NUM_ARGS, sizeof(num_args),
                            &num_args, NULL);
  size_t len = strlen(name);
  accel_opencl_function_t* f = NULL;
  if (err == CL_SUCCESS) f = calloc(1, sizeof(*f) + len + 1);
  if (f == NULL || pthread_mutex_init(&f->kernel.mutex, NULL) != 0) {
    free(f);
    cl->clReleaseKernel(kernel);
    return err != CL_SUCCESS ? accel_opencl_check(host, err, "clGetKernelInfo")
                             : host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                                          "module_function: %s", name);
  }
  f->module = m;
  f->kernel.kernel = kernel;
  f->num_args = num_args;
  memcpy(f->name, name, len + 1);
  *out = f;
  return ACCEL_OK;
}

accel_status_t accel_opencl_module_function(void* module, const char* name,
                                            void** out_function) {
  accel_opencl_module_t* m = module;
  *out_function = NULL;
  pthread_mutex_lock(&m->mutex);
  accel_opencl_function_t* f = m->functions;
  while (f != NULL && strcmp(f->name, name) != 0) f = f->next;
  accel_status_t status = ACCEL_OK;
  if (f == NULL) {
    status = accel_opencl_function_create(m, name, &f);
    if (status == ACCEL_OK) {
      f->next = m->functions;
      m->functions = f;
    }
  }
  pthread_mutex_unlock(&m->mutex);
  if (status == ACCEL_OK) *out_function = f;
  return status;
}

// Turns the launch's arguments into kernel arguments; buffer arguments
// become cl_mem views in `views` (released by the caller, NULL-filled).
static accel_status_t accel_opencl_launch_args(
    accel_opencl_function_t* f, const accel_plugin_launch_t* launch,
    accel_opencl_karg_t* kargs, cl_mem* views) {
  accel_opencl_device_t* d = f->module->device;
  for (uint32_t i = 0; i < launch->num_args; i++) {
    const accel_plugin_arg_t* arg = &launch->args[i];
    if (arg->kind == ACCEL_PLUGIN_ARG_BUFFER) {
      accel_status_t status =
          accel_opencl_mem_view(d, arg->mem, arg->offset, &views[i]);
      if (status != ACCEL_OK) return status;  // mem_view said why
      kargs[i].size = sizeof(cl_mem);
      kargs[i].value = &views[i];
    } else {
      kargs[i].size = arg->size;
      kargs[i].value = arg->value;
    }
  }
  if (launch->shared_mem_bytes > 0) {
    kargs[launch->num_args].size = launch->shared_mem_bytes;
    kargs[launch->num_args].value = NULL;  // __local
  }
  return ACCEL_OK;
}

accel_status_t accel_opencl_launch(void* function, void* stream,
                                   const accel_plugin_launch_t* launch) {
  accel_opencl_function_t* f = function;
  const accel_host_t* host = f->module->device->host;
  const accel_opencl_api_t* cl = f->module->device->cl;
  uint32_t count = launch->num_args + (launch->shared_mem_bytes > 0 ? 1 : 0);
  if (count != f->num_args) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "launch of %s: the kernel takes %u arguments, the "
                      "launch gives %u%s",
                      f->name, f->num_args, count,
                      launch->shared_mem_bytes > 0
                          ? " (one of them the __local argument that "
                            "shared_mem_bytes appends)"
                          : "");
  }
  accel_opencl_karg_t stack_args[ACCEL_OPENCL_STACK_ARGS];
  cl_mem stack_views[ACCEL_OPENCL_STACK_ARGS];
  accel_opencl_karg_t* kargs = stack_args;
  cl_mem* views = stack_views;
  if (count > ACCEL_OPENCL_STACK_ARGS) {
    kargs = malloc(count * sizeof(*kargs));
    views = calloc(count, sizeof(*views));
    if (kargs == NULL || views == NULL) {
      free(kargs);
      free(views);
      return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                        "launch of %s: %u arguments", f->name, count);
    }
  } else {
    memset(stack_views, 0, sizeof(stack_views));
  }
  accel_status_t status = accel_opencl_launch_args(f, launch, kargs, views);
  if (status == ACCEL_OK) {
    size_t global[3], local[3];
    for (int i = 0; i < 3; i++) {
      global[i] = (size_t)launch->grid[i] * launch->block[i];
      local[i] = launch->block[i];
    }
    status = accel_opencl_kernel_run(stream, &f->kernel, kargs, count, 3,
                                     global, local, f->name);
  }
  // A view stays alive for the enqueued command after this release.
  for (uint32_t i = 0; i < launch->num_args; i++) {
    if (views[i] != NULL) cl->clReleaseMemObject(views[i]);
  }
  if (kargs != stack_args) {
    free(kargs);
    free(views);
  }
  return status;
}
