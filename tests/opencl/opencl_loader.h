// SPDX-License-Identifier: MIT
//
// The OpenCL entry points that tests call beside accel, from the ICD
// loader the plugin opens too (libOpenCL.so.1), so the native handles
// accel returns are objects they accept (tests/interop/test_native_opencl.c,
// tests/opencl/test_opencl_launch.c). Header-only: every definition is
// static.
#ifndef ACCEL_TESTS_OPENCL_OPENCL_LOADER_H_
#define ACCEL_TESTS_OPENCL_OPENCL_LOADER_H_

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>
#include <dlfcn.h>
#include <stdbool.h>

typedef struct ocl_loader {
  void* lib;
  cl_int (*read)(cl_command_queue, cl_mem, cl_bool, size_t, size_t, void*,
                 cl_uint, const cl_event*, cl_event*);
  cl_int (*write)(cl_command_queue, cl_mem, cl_bool, size_t, size_t,
                  const void*, cl_uint, const cl_event*, cl_event*);
  cl_int (*mem_info)(cl_mem, cl_mem_info, size_t, void*, size_t*);
  cl_int (*queue_info)(cl_command_queue, cl_command_queue_info, size_t, void*,
                       size_t*);
  cl_int (*event_info)(cl_event, cl_event_info, size_t, void*, size_t*);
  cl_int (*device_info)(cl_device_id, cl_device_info, size_t, void*, size_t*);
  cl_int (*platform_info)(cl_platform_id, cl_platform_info, size_t, void*,
                          size_t*);
  cl_int (*wait)(cl_uint, const cl_event*);
} ocl_loader_t;

// Opens the ICD loader and resolves every entry of `l`; false when the
// loader or one of them is missing. The loader stays open.
static bool ocl_loader_open(ocl_loader_t* l) {
  l->lib = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
  if (l->lib == NULL) return false;
  *(void**)&l->read = dlsym(l->lib, "clEnqueueReadBuffer");
  *(void**)&l->write = dlsym(l->lib, "clEnqueueWriteBuffer");
  *(void**)&l->mem_info = dlsym(l->lib, "clGetMemObjectInfo");
  *(void**)&l->queue_info = dlsym(l->lib, "clGetCommandQueueInfo");
  *(void**)&l->event_info = dlsym(l->lib, "clGetEventInfo");
  *(void**)&l->device_info = dlsym(l->lib, "clGetDeviceInfo");
  *(void**)&l->platform_info = dlsym(l->lib, "clGetPlatformInfo");
  *(void**)&l->wait = dlsym(l->lib, "clWaitForEvents");
  return l->read && l->write && l->mem_info && l->queue_info &&
         l->event_info && l->device_info && l->platform_info && l->wait;
}

#endif  // ACCEL_TESTS_OPENCL_OPENCL_LOADER_H_
