// SPDX-License-Identifier: MIT
//
// Custom kernels of the template plugin: modules are host shared objects
// whose kernels follow the CPU kernel ABI (<accel/cpu_kernel.h>), so the
// template runs the same test kernels as the CPU backend. A GPU backend
// replaces dlopen/dlsym with its runtime's module calls (cuModuleLoadData,
// cuModuleGetFunction) and the block loop with one launch call.
//
// Per-kernel argument state: like an OpenCL cl_kernel, whose arguments are
// set one by one (clSetKernelArg) and captured when the launch is enqueued,
// a template kernel stages its arguments in the kernel object and the
// launch copies them into its task. Two threads launching the same kernel
// at once would mix each other's arguments, so staging and capture happen
// under the kernel's mutex. That lock is the point of this file for an
// author of a handle-based backend.
//
// A launch is one task on the stream: every block of the grid runs in
// order on the stream's worker, with the launch's dynamic shared memory
// as one scratch block. A kernel fails its launch through ctx->fail.
#include <accel/cpu_kernel.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "template.h"

typedef struct template_kernel template_kernel_t;

// A module owns the kernels looked up in it (the ABI has no entry to
// release a kernel): they are freed by module_unload, which the core calls
// after the last launch of the module has completed.
typedef struct template_module {
  template_device_t* device;
  void* handle;          // dlopen()
  pthread_mutex_t lock;  // guards `kernels`
  template_kernel_t* kernels;
} template_module_t;

struct template_kernel {
  template_kernel_t* next;  // the module's list
  template_device_t* device;
  accel_cpu_kernel_fn_t fn;
  pthread_mutex_t lock;  // guards the staged arguments
  // Staged arguments (clSetKernelArg style): `count` values packed in
  // `values`, each in a 16-byte slot, grown as needed.
  uint32_t count;
  size_t capacity;
  unsigned char* values;
};

// What a queued launch carries: the geometry and its own argument copy.
typedef struct template_launch {
  accel_cpu_kernel_fn_t fn;
  uint32_t grid[3], block[3], shared_bytes, num_args;
  accel_status_t status;  // set by ctx->fail
  char message[TEMPLATE_MESSAGE_SIZE];
  void** argv;            // num_args pointers into `values`
  unsigned char* values;  // 16 bytes per argument slot
} template_launch_t;

#define TEMPLATE_ARG_SLOT 64u  // largest value argument

accel_status_t template_module_load(void* device_ptr, const void* image,
                                    size_t size, void** out_module) {
  template_device_t* device = device_ptr;
  const accel_host_t* host = device->host;
  *out_module = NULL;
  // dlopen() needs a file: write the image to a private temporary one and
  // unlink it once mapped.
  char path[] = "/tmp/accel-template-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    return host->fail(host, ACCEL_ERROR_BACKEND,
                      TEMPLATE_NAME ":%u: cannot create a module file",
                      device->index);
  }
  bool written = write(fd, image, size) == (ssize_t)size;
  close(fd);
  void* handle = written ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  const char* why = written ? dlerror() : "short write";
  unlink(path);
  if (handle == NULL) {
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      TEMPLATE_NAME ":%u: module does not load: %s",
                      device->index, why ? why : "?");
  }
  template_module_t* module = calloc(1, sizeof(*module));
  if (module == NULL) {
    dlclose(handle);
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      TEMPLATE_NAME ":%u: module state", device->index);
  }
  module->device = device;
  module->handle = handle;
  pthread_mutex_init(&module->lock, NULL);
  *out_module = module;
  return ACCEL_OK;
}

void template_module_unload(void* module_ptr) {
  template_module_t* module = module_ptr;
  while (module->kernels != NULL) {
    template_kernel_t* kernel = module->kernels;
    module->kernels = kernel->next;
    pthread_mutex_destroy(&kernel->lock);
    free(kernel->values);
    free(kernel);
  }
  pthread_mutex_destroy(&module->lock);
  dlclose(module->handle);
  free(module);
}

accel_status_t template_module_function(void* module_ptr, const char* name,
                                        void** out_function) {
  template_module_t* module = module_ptr;
  const accel_host_t* host = module->device->host;
  *out_function = NULL;
  void* symbol = dlsym(module->handle, name);
  if (symbol == NULL) {
    return host->fail(host, ACCEL_ERROR_NOT_FOUND,
                      TEMPLATE_NAME ": no kernel '%s' in the module", name);
  }
  template_kernel_t* kernel = calloc(1, sizeof(*kernel));
  if (kernel == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      TEMPLATE_NAME ": kernel state");
  }
  kernel->device = module->device;
  memcpy(&kernel->fn, &symbol, sizeof(kernel->fn));  // object to function
  pthread_mutex_init(&kernel->lock, NULL);
  pthread_mutex_lock(&module->lock);
  kernel->next = module->kernels;
  module->kernels = kernel;
  pthread_mutex_unlock(&module->lock);
  *out_function = kernel;
  return ACCEL_OK;
}

// ctx->fail of a template launch: the first failure wins.
static void template_kernel_fail(const accel_cpu_kernel_ctx_t* ctx,
                                 int32_t status, const char* message) {
  template_launch_t* launch = ctx->fail_state;
  if (launch->status != ACCEL_OK) return;
  launch->status = status != 0 ? (accel_status_t)status : ACCEL_ERROR_BACKEND;
  snprintf(launch->message, sizeof(launch->message), "kernel failed: %s",
           message ? message : "(no message)");
}

static accel_status_t template_launch_task(template_task_t* task,
                                           char* message, size_t size) {
  template_launch_t* l = task->dst;  // freed with the task (`owned`)
  void* shared = NULL;
  if (l->shared_bytes != 0) {
    size_t bytes = ((size_t)l->shared_bytes + 63u) & ~(size_t)63u;
    shared = aligned_alloc(64, bytes);
    if (shared == NULL) {
      snprintf(message, size, "launch: no host memory for %u bytes of shared",
               l->shared_bytes);
      return ACCEL_ERROR_OUT_OF_MEMORY;
    }
  }
  accel_cpu_kernel_ctx_t ctx = {.struct_size = sizeof(ctx),
                                .shared_mem = shared,
                                .shared_mem_bytes = l->shared_bytes,
                                .fail = template_kernel_fail,
                                .fail_state = l};
  memcpy(ctx.grid_dim, l->grid, sizeof(ctx.grid_dim));
  memcpy(ctx.block_dim, l->block, sizeof(ctx.block_dim));
  for (uint32_t z = 0; z < l->grid[2] && l->status == ACCEL_OK; z++) {
    for (uint32_t y = 0; y < l->grid[1]; y++) {
      for (uint32_t x = 0; x < l->grid[0]; x++) {
        ctx.block_idx[0] = x;
        ctx.block_idx[1] = y;
        ctx.block_idx[2] = z;
        l->fn(&ctx, (void* const*)l->argv);
      }
    }
  }
  free(shared);
  accel_status_t status = l->status;
  if (status != ACCEL_OK) snprintf(message, size, "%s", l->message);
  return status;
}

// Stages the launch's arguments in the kernel object, as clSetKernelArg
// would. The kernel's mutex is held.
static bool template_stage_args(template_kernel_t* k,
                                const accel_plugin_launch_t* launch) {
  size_t need = (size_t)launch->num_args * TEMPLATE_ARG_SLOT;
  if (need > k->capacity) {
    unsigned char* grown = realloc(k->values, need);
    if (grown == NULL) return false;
    k->values = grown;
    k->capacity = need;
  }
  for (uint32_t i = 0; i < launch->num_args; i++) {
    const accel_plugin_arg_t* a = &launch->args[i];
    unsigned char* slot = k->values + (size_t)i * TEMPLATE_ARG_SLOT;
    memset(slot, 0, TEMPLATE_ARG_SLOT);
    if (a->kind == ACCEL_PLUGIN_ARG_BUFFER) {
      void* address = (char*)a->mem + a->offset;
      memcpy(slot, &address, sizeof(address));
    } else {
      memcpy(slot, a->value, a->size);
    }
  }
  k->count = launch->num_args;
  return true;
}

accel_status_t template_launch(void* function, void* stream,
                               const accel_plugin_launch_t* launch) {
  template_kernel_t* k = function;
  const accel_host_t* host = k->device->host;
  for (uint32_t i = 0; i < launch->num_args; i++) {
    if (launch->args[i].kind == ACCEL_PLUGIN_ARG_VALUE &&
        launch->args[i].size > TEMPLATE_ARG_SLOT) {
      return host->fail(host, ACCEL_ERROR_UNSUPPORTED,
                        TEMPLATE_NAME ": argument %u has %u bytes; at most "
                                      "%u",
                        i, launch->args[i].size, TEMPLATE_ARG_SLOT);
    }
  }
  size_t slots = (size_t)launch->num_args * TEMPLATE_ARG_SLOT;
  size_t argv_bytes = (size_t)launch->num_args * sizeof(void*);
  template_launch_t* l = calloc(1, sizeof(*l) + argv_bytes + slots);
  template_task_t* task = template_task_create(template_launch_task);
  if (l == NULL || task == NULL) {
    free(l);
    free(task);
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      TEMPLATE_NAME ": launch task");
  }
  l->fn = k->fn;
  memcpy(l->grid, launch->grid, sizeof(l->grid));
  memcpy(l->block, launch->block, sizeof(l->block));
  l->shared_bytes = launch->shared_mem_bytes;
  l->num_args = launch->num_args;
  l->argv = (void**)(l + 1);
  l->values = (unsigned char*)(l + 1) + argv_bytes;
  pthread_mutex_lock(&k->lock);
  bool staged = template_stage_args(k, launch);
  if (staged) memcpy(l->values, k->values, slots);  // capture at enqueue
  pthread_mutex_unlock(&k->lock);
  if (!staged) {
    free(l);
    free(task);
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      TEMPLATE_NAME ": kernel arguments");
  }
  for (uint32_t i = 0; i < l->num_args; i++) {
    l->argv[i] = l->values + (size_t)i * TEMPLATE_ARG_SLOT;
  }
  task->dst = l;
  task->owned = l;  // freed with the task, also when an error skips it
  return template_submit(host, stream, task);
}
