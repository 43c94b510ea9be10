// SPDX-License-Identifier: MIT
//
// The ICD loader: libOpenCL.so.1 (or the library ACCEL_OPENCL_ICD names)
// opened with dlopen at the first device_count, never at plugin load, and
// every entry point of ACCEL_OPENCL_FUNCS resolved with dlsym. The plugin
// links no OpenCL library, so a machine without one still loads it and
// reports why it has no device. Also the names of OpenCL error codes and
// their mapping onto accel statuses.
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "accel_opencl.h"

// The Khronos loader's name, stable across OpenCL versions.
#define ACCEL_OPENCL_ICD_DEFAULT "libOpenCL.so.1"

accel_status_t accel_opencl_icd_open(accel_opencl_plugin_t* plugin) {
  const accel_host_t* host = plugin->host;
  const char* named = host->getenv(host, "ACCEL_OPENCL_ICD");
  const char* path =
      named != NULL && named[0] != '\0' ? named : ACCEL_OPENCL_ICD_DEFAULT;
  // RTLD_LOCAL keeps the loader's symbols away from other plugins.
  // RTLD_NODELETE keeps a working loader mapped after unload: ICD loaders
  // and the drivers they open keep process-wide state (the platform list,
  // driver threads, atexit handlers) and are not written to be unloaded
  // and loaded again; a later load of the plugin reuses the same one.
  void* icd = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (icd == NULL) {
    const char* why = dlerror();
    snprintf(plugin->icd_error, sizeof(plugin->icd_error),
             "no OpenCL ICD loader (%s%s: %s)",
             path == named ? "ACCEL_OPENCL_ICD=" : "", path,
             why != NULL ? why : "unknown dlopen error");
    return ACCEL_ERROR_UNAVAILABLE;
  }
  memset(&plugin->cl, 0, sizeof(plugin->cl));
  // POSIX allows converting dlsym's void* to a function pointer; the
  // union keeps -Wpedantic quiet about the ISO C restriction.
#define ACCEL_OPENCL_RESOLVE(name)                                          \
  {                                                                         \
    union {                                                                 \
      void* p;                                                              \
      cl_api_##name f;                                                      \
    } sym = {.p = dlsym(icd, #name)};                                       \
    if (sym.p == NULL && required) {                                        \
      snprintf(plugin->icd_error, sizeof(plugin->icd_error),                \
               "%s is not a usable OpenCL ICD loader: no %s", path, #name); \
      dlclose(icd);                                                         \
      return ACCEL_ERROR_UNAVAILABLE;                                       \
    }                                                                       \
    plugin->cl.name = sym.f;                                                \
  }
  bool required = true;
  ACCEL_OPENCL_FUNCS(ACCEL_OPENCL_RESOLVE)
  required = false;
  ACCEL_OPENCL_FUNCS_OPTIONAL(ACCEL_OPENCL_RESOLVE)
#undef ACCEL_OPENCL_RESOLVE
  plugin->icd = icd;
  host->log(host, ACCEL_LOG_DEBUG, "ICD loader %s opened", path);
  return ACCEL_OK;
}

void accel_opencl_icd_close(accel_opencl_plugin_t* plugin) {
  if (plugin->icd != NULL) dlclose(plugin->icd);
  plugin->icd = NULL;
  memset(&plugin->cl, 0, sizeof(plugin->cl));
}

// Every error code of OpenCL 3.0 and the loader's extensions, with name.
#define ACCEL_OPENCL_ERRORS(X)                         \
  X(0, CL_SUCCESS)                                     \
  X(-1, CL_DEVICE_NOT_FOUND)                           \
  X(-2, CL_DEVICE_NOT_AVAILABLE)                       \
  X(-3, CL_COMPILER_NOT_AVAILABLE)                     \
  X(-4, CL_MEM_OBJECT_ALLOCATION_FAILURE)              \
  X(-5, CL_OUT_OF_RESOURCES)                           \
  X(-6, CL_OUT_OF_HOST_MEMORY)                         \
  X(-7, CL_PROFILING_INFO_NOT_AVAILABLE)               \
  X(-8, CL_MEM_COPY_OVERLAP)                           \
  X(-9, CL_IMAGE_FORMAT_MISMATCH)                      \
  X(-10, CL_IMAGE_FORMAT_NOT_SUPPORTED)                \
  X(-11, CL_BUILD_PROGRAM_FAILURE)                     \
  X(-12, CL_MAP_FAILURE)                               \
  X(-13, CL_MISALIGNED_SUB_BUFFER_OFFSET)              \
  X(-14, CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST) \
  X(-15, CL_COMPILE_PROGRAM_FAILURE)                   \
  X(-16, CL_LINKER_NOT_AVAILABLE)                      \
  X(-17, CL_LINK_PROGRAM_FAILURE)                      \
  X(-18, CL_DEVICE_PARTITION_FAILED)                   \
  X(-19, CL_KERNEL_ARG_INFO_NOT_AVAILABLE)             \
  X(-30, CL_INVALID_VALUE)                             \
  X(-31, CL_INVALID_DEVICE_TYPE)                       \
  X(-32, CL_INVALID_PLATFORM)                          \
  X(-33, CL_INVALID_DEVICE)                            \
  X(-34, CL_INVALID_CONTEXT)                           \
  X(-35, CL_INVALID_QUEUE_PROPERTIES)                  \
  X(-36, CL_INVALID_COMMAND_QUEUE)                     \
  X(-37, CL_INVALID_HOST_PTR)                          \
  X(-38, CL_INVALID_MEM_OBJECT)                        \
  X(-39, CL_INVALID_IMAGE_FORMAT_DESCRIPTOR)           \
  X(-40, CL_INVALID_IMAGE_SIZE)                        \
  X(-41, CL_INVALID_SAMPLER)                           \
  X(-42, CL_INVALID_BINARY)                            \
  X(-43, CL_INVALID_BUILD_OPTIONS)                     \
  X(-44, CL_INVALID_PROGRAM)                           \
  X(-45, CL_INVALID_PROGRAM_EXECUTABLE)                \
  X(-46, CL_INVALID_KERNEL_NAME)                       \
  X(-47, CL_INVALID_KERNEL_DEFINITION)                 \
  X(-48, CL_INVALID_KERNEL)                            \
  X(-49, CL_INVALID_ARG_INDEX)                         \
  X(-50, CL_INVALID_ARG_VALUE)                         \
  X(-51, CL_INVALID_ARG_SIZE)                          \
  X(-52, CL_INVALID_KERNEL_ARGS)                       \
  X(-53, CL_INVALID_WORK_DIMENSION)                    \
  X(-54, CL_INVALID_WORK_GROUP_SIZE)                   \
  X(-55, CL_INVALID_WORK_ITEM_SIZE)                    \
  X(-56, CL_INVALID_GLOBAL_OFFSET)                     \
  X(-57, CL_INVALID_EVENT_WAIT_LIST)                   \
  X(-58, CL_INVALID_EVENT)                             \
  X(-59, CL_INVALID_OPERATION)                         \
  X(-60, CL_INVALID_GL_OBJECT)                         \
  X(-61, CL_INVALID_BUFFER_SIZE)                       \
  X(-62, CL_INVALID_MIP_LEVEL)                         \
  X(-63, CL_INVALID_GLOBAL_WORK_SIZE)                  \
  X(-64, CL_INVALID_PROPERTY)                          \
  X(-65, CL_INVALID_IMAGE_DESCRIPTOR)                  \
  X(-66, CL_INVALID_COMPILER_OPTIONS)                  \
  X(-67, CL_INVALID_LINKER_OPTIONS)                    \
  X(-68, CL_INVALID_DEVICE_PARTITION_COUNT)            \
  X(-69, CL_INVALID_PIPE_SIZE)                         \
  X(-70, CL_INVALID_DEVICE_QUEUE)                      \
  X(-71, CL_INVALID_SPEC_ID)                           \
  X(-72, CL_MAX_SIZE_RESTRICTION_EXCEEDED)             \
  X(-1000, CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR)     \
  X(-1001, CL_PLATFORM_NOT_FOUND_KHR)

const char* accel_opencl_error_name(cl_int err) {
  switch (err) {
#define ACCEL_OPENCL_ERROR_CASE(code, name) \
  case code:                                \
    return #name;
    ACCEL_OPENCL_ERRORS(ACCEL_OPENCL_ERROR_CASE)
#undef ACCEL_OPENCL_ERROR_CASE
    default:
      break;
  }
  static _Thread_local char unknown[32];
  snprintf(unknown, sizeof(unknown), "CL error %d", (int)err);
  return unknown;
}

// The accel status for an OpenCL error (see accel_opencl.h).
static accel_status_t accel_opencl_status(cl_int err) {
  switch (err) {
    case CL_MEM_OBJECT_ALLOCATION_FAILURE:
    case CL_OUT_OF_RESOURCES:
      return ACCEL_ERROR_OUT_OF_DEVICE_MEMORY;
    case CL_OUT_OF_HOST_MEMORY:
      return ACCEL_ERROR_OUT_OF_MEMORY;
    case CL_DEVICE_NOT_FOUND:
    case CL_DEVICE_NOT_AVAILABLE:
    case CL_COMPILER_NOT_AVAILABLE:
    case CL_LINKER_NOT_AVAILABLE:
      return ACCEL_ERROR_UNAVAILABLE;
    case CL_BUILD_PROGRAM_FAILURE:
    case CL_COMPILE_PROGRAM_FAILURE:
    case CL_LINK_PROGRAM_FAILURE:
    case CL_INVALID_BINARY:
    case CL_INVALID_BUILD_OPTIONS:
    case CL_INVALID_KERNEL_NAME:
    case CL_INVALID_BUFFER_SIZE:
    case CL_INVALID_VALUE:
    case CL_INVALID_WORK_GROUP_SIZE:
    case CL_INVALID_WORK_ITEM_SIZE:
    case CL_INVALID_GLOBAL_WORK_SIZE:
    case CL_INVALID_ARG_SIZE:
    case CL_INVALID_ARG_INDEX:
    case CL_INVALID_ARG_VALUE:
    case CL_INVALID_KERNEL_ARGS:
    case CL_MISALIGNED_SUB_BUFFER_OFFSET:
      return ACCEL_ERROR_INVALID_ARGUMENT;
    case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST:
      return ACCEL_ERROR_DEVICE_LOST;
    default:
      break;
  }
  // Other CL_INVALID_* codes name a handle or state the plugin produced.
  return err <= CL_INVALID_VALUE && err >= -72 ? ACCEL_ERROR_INTERNAL
                                               : ACCEL_ERROR_BACKEND;
}

accel_status_t accel_opencl_check(const accel_host_t* host, cl_int err,
                                  const char* what) {
  if (err == CL_SUCCESS) return ACCEL_OK;
  return host->fail(host, accel_opencl_status(err), "%s: %s", what,
                    accel_opencl_error_name(err));
}
