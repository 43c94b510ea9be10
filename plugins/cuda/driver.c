// SPDX-License-Identifier: MIT
//
// Finding, checking and resolving the CUDA driver (driver.h).
//
// The order matters for the messages users see: a missing library names
// the dlerror() text; the toolkit's stub libcuda.so (which has every
// symbol but returns CUDA_ERROR_STUB_LIBRARY from cuInit) is recognised
// before anything else is resolved; a driver older than the ABI we resolve
// against is reported with both versions before cuGetProcAddress is asked
// for symbols it cannot have.
#define _GNU_SOURCE  // dladdr: the path of the library that was loaded
#include "driver.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

// Libraries tried in order when ACCEL_CUDA_DRIVER is unset: the soname the
// NVIDIA driver installs, then the development name (which on a machine
// without the driver is often the toolkit's stub).
static const char* const accel_cuda_driver_names[] = {"libcuda.so.1",
                                                      "libcuda.so"};

// Formats CUDA version numbers: 12040 -> "12.4".
static void accel_cuda_version_string(int version, char* buf, size_t size) {
  snprintf(buf, size, "%d.%d", version / 1000, (version % 1000) / 10);
}

void accel_cuda_describe(const accel_cuda_driver_t* cu, CUresult result,
                         char* buf, size_t size) {
  const char* name = NULL;
  const char* text = NULL;
  if (cu != NULL && cu->cuGetErrorName != NULL) {
    if (cu->cuGetErrorName(result, &name) != CUDA_SUCCESS) name = NULL;
  }
  if (cu != NULL && cu->cuGetErrorString != NULL) {
    if (cu->cuGetErrorString(result, &text) != CUDA_SUCCESS) text = NULL;
  }
  if (name != NULL && text != NULL) {
    snprintf(buf, size, "%s (%s)", name, text);
  } else {
    snprintf(buf, size, "CUresult %d", (int)result);
  }
}

accel_status_t accel_cuda_status(CUresult result) {
  switch (result) {
    case CUDA_SUCCESS:
      return ACCEL_OK;
    case CUDA_ERROR_OUT_OF_MEMORY:
      return ACCEL_ERROR_OUT_OF_DEVICE_MEMORY;
    case CUDA_ERROR_NOT_READY:
      return ACCEL_ERROR_NOT_READY;
    case CUDA_ERROR_INVALID_VALUE:
      return ACCEL_ERROR_INVALID_ARGUMENT;
    case CUDA_ERROR_NOT_FOUND:
      return ACCEL_ERROR_NOT_FOUND;
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_NOT_SUPPORTED:
      return ACCEL_ERROR_UNSUPPORTED;
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
      return ACCEL_ERROR_INCOMPATIBLE;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_SYSTEM_NOT_READY:
      return ACCEL_ERROR_UNAVAILABLE;
    // Sticky errors: the context is unusable until the process exits.
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
      return ACCEL_ERROR_DEVICE_LOST;
    default:
      return ACCEL_ERROR_BACKEND;
  }
}

accel_status_t accel_cuda_fail(const accel_host_t* host,
                               const accel_cuda_driver_t* cu, CUresult result,
                               const char* prefix, const char* call) {
  char text[256];
  accel_cuda_describe(cu, result, text, sizeof(text));
  return host->fail(host, accel_cuda_status(result), "%s: %s: %s", prefix, call,
                    text);
}

// dlopen()s the driver library into `cu`. Returns false with the reason in
// `message`.
static bool accel_cuda_driver_load(const accel_host_t* host,
                                   accel_cuda_driver_t* cu, char* message,
                                   size_t size) {
  const char* override = host->getenv(host, "ACCEL_CUDA_DRIVER");
  if (override != NULL && override[0] != '\0') {
    cu->library = dlopen(override, RTLD_NOW | RTLD_LOCAL);
    if (cu->library == NULL) {
      const char* why = dlerror();
      snprintf(message, size,
               "cannot load the CUDA driver named by ACCEL_CUDA_DRIVER: %s",
               why != NULL ? why : override);
      return false;
    }
    snprintf(cu->path, sizeof(cu->path), "%s", override);
    return true;
  }
  char first[256] = "";
  for (size_t i = 0;
       i < sizeof(accel_cuda_driver_names) / sizeof(accel_cuda_driver_names[0]);
       i++) {
    cu->library = dlopen(accel_cuda_driver_names[i], RTLD_NOW | RTLD_LOCAL);
    if (cu->library != NULL) {
      snprintf(cu->path, sizeof(cu->path), "%s", accel_cuda_driver_names[i]);
      return true;
    }
    const char* why = dlerror();
    if (i == 0) snprintf(first, sizeof(first), "%s", why ? why : "");
  }
  snprintf(message, size,
           "the NVIDIA driver is not installed: %s (also tried libcuda.so)",
           first);
  return false;
}

// Looks up a bootstrap symbol with dlsym; false with a message if absent.
static bool accel_cuda_driver_sym(accel_cuda_driver_t* cu, const char* name,
                                  void** out, char* message, size_t size) {
  *out = dlsym(cu->library, name);
  if (*out == NULL) {
    snprintf(message, size, "%s is not a CUDA driver: no %s", cu->path, name);
    return false;
  }
  return true;
}

// Replaces cu->path with the real file behind `symbol`, when dladdr knows.
static void accel_cuda_driver_locate(accel_cuda_driver_t* cu, void* symbol) {
  Dl_info info;
  if (dladdr(symbol, &info) != 0 && info.dli_fname != NULL &&
      info.dli_fname[0] != '\0') {
    snprintf(cu->path, sizeof(cu->path), "%s", info.dli_fname);
  }
}

// Resolves one table entry: cuGetProcAddress for `name` at `version`, or
// dlsym of `exported` when the driver does not give it.
static void* accel_cuda_driver_resolve(accel_cuda_driver_t* cu,
                                       const char* name, int version,
                                       const char* exported) {
  void* fn = NULL;
  CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (cu->cuGetProcAddress != NULL &&
      cu->cuGetProcAddress(name, &fn, version,
                           CU_GET_PROC_ADDRESS_LEGACY_STREAM,
                           &found) == CUDA_SUCCESS &&
      found == CU_GET_PROC_ADDRESS_SUCCESS && fn != NULL) {
    return fn;
  }
  return dlsym(cu->library, exported);
}

#define ACCEL_CUDA_DRIVER_RESOLVE(name, version, exported)                    \
  if (ok) {                                                                   \
    void* fn_ = accel_cuda_driver_resolve(cu, #name, version, exported);      \
    if (fn_ == NULL) {                                                        \
      snprintf(message, size,                                                 \
               "the CUDA driver %s (CUDA %s) lacks %s (ABI of CUDA %d.%d)",   \
               cu->path, have, #name, version / 1000, (version % 1000) / 10); \
      ok = false;                                                             \
    } else {                                                                  \
      memcpy(&cu->name, &fn_, sizeof(fn_));                                   \
    }                                                                         \
  }

// Resolves every table entry. False with a message naming the first
// missing one.
static bool accel_cuda_driver_resolve_all(accel_cuda_driver_t* cu,
                                          const char* have, char* message,
                                          size_t size) {
  bool ok = true;
  ACCEL_CUDA_DRIVER_SYMBOLS(ACCEL_CUDA_DRIVER_RESOLVE)
  if (ok && cu->version >= 12040) {
    void* fn = accel_cuda_driver_resolve(cu, "cuFuncGetParamInfo", 12040,
                                         "cuFuncGetParamInfo");
    memcpy(&cu->cuFuncGetParamInfo, &fn, sizeof(fn));
  }
  return ok;
}

// The first Linux driver branch of a CUDA version (the CUDA toolkit
// release notes' table of minimum driver versions).
static const char* accel_cuda_driver_branch(int version) {
  return version >= 13000   ? "R580"
         : version >= 12080 ? "R570"
         : version >= 12040 ? "R550"
         : version >= 12020 ? "R535"
                            : "R525";
}

// Runs cuInit and checks the version. Returns the status for
// accel_cuda_driver_open.
static accel_status_t accel_cuda_driver_start(accel_cuda_driver_t* cu,
                                              bool* out_no_device,
                                              char* message, size_t size) {
  CUresult r = cu->cuInit(0);
  if (r == CUDA_ERROR_STUB_LIBRARY) {
    void* init = NULL;
    memcpy(&init, &cu->cuInit, sizeof(init));
    accel_cuda_driver_locate(cu, init);
    snprintf(message, size,
             "the CUDA driver library found is the toolkit's stub (%s); "
             "install the NVIDIA driver",
             cu->path);
    return ACCEL_ERROR_UNAVAILABLE;
  }
  if (r == CUDA_ERROR_NO_DEVICE) {
    // plugin.h: a working driver with no device is OK with 0 devices.
    snprintf(message, size, "the CUDA driver (%s) sees no device", cu->path);
    *out_no_device = true;
    return ACCEL_OK;
  }
  if (r != CUDA_SUCCESS) {
    char text[256];
    accel_cuda_describe(cu, r, text, sizeof(text));
    snprintf(message, size, "cuInit failed in %s: %s", cu->path, text);
    return ACCEL_ERROR_UNAVAILABLE;
  }
  int version = 0;
  r = cu->cuDriverGetVersion(&version);
  if (r != CUDA_SUCCESS) {
    char text[256];
    accel_cuda_describe(cu, r, text, sizeof(text));
    snprintf(message, size, "cuDriverGetVersion failed in %s: %s", cu->path,
             text);
    return ACCEL_ERROR_UNAVAILABLE;
  }
  cu->version = version;
  char have[16], need[16];
  accel_cuda_version_string(version, have, sizeof(have));
  accel_cuda_version_string(ACCEL_CUDA_DRIVER_MIN_VERSION, need, sizeof(need));
  if (version < ACCEL_CUDA_DRIVER_MIN_VERSION) {
    snprintf(message, size,
             "the CUDA driver is too old: %s supports CUDA %s, the plugin "
             "needs CUDA %s or newer (its kernels are built by CUDA %d.%d); "
             "install NVIDIA driver branch %s or newer",
             cu->path, have, need, CUDA_VERSION / 1000,
             CUDA_VERSION % 1000 / 10,
             accel_cuda_driver_branch(ACCEL_CUDA_DRIVER_MIN_VERSION));
    return ACCEL_ERROR_UNAVAILABLE;
  }
  if (!accel_cuda_driver_resolve_all(cu, have, message, size)) {
    return ACCEL_ERROR_UNAVAILABLE;
  }
  return ACCEL_OK;
}

accel_status_t accel_cuda_driver_open(const accel_host_t* host,
                                      accel_cuda_driver_t* cu,
                                      bool* out_no_device, char* message,
                                      size_t message_size) {
  *out_no_device = false;
  message[0] = '\0';
  if (!accel_cuda_driver_load(host, cu, message, message_size)) {
    return ACCEL_ERROR_UNAVAILABLE;
  }
  void* init = NULL;
  void* get_version = NULL;
  void* error_name = NULL;
  void* error_string = NULL;
  bool ok = accel_cuda_driver_sym(cu, "cuInit", &init, message, message_size) &&
            accel_cuda_driver_sym(cu, "cuDriverGetVersion", &get_version,
                                  message, message_size) &&
            accel_cuda_driver_sym(cu, "cuGetErrorName", &error_name, message,
                                  message_size) &&
            accel_cuda_driver_sym(cu, "cuGetErrorString", &error_string,
                                  message, message_size);
  if (!ok) {
    accel_cuda_driver_close(cu);
    return ACCEL_ERROR_UNAVAILABLE;
  }
  // dlsym returns void*; copying the bits is the portable conversion.
  memcpy(&cu->cuInit, &init, sizeof(init));
  memcpy(&cu->cuDriverGetVersion, &get_version, sizeof(get_version));
  memcpy(&cu->cuGetErrorName, &error_name, sizeof(error_name));
  memcpy(&cu->cuGetErrorString, &error_string, sizeof(error_string));
  // Absent before CUDA 12.0; the version check below then refuses.
  void* proc = dlsym(cu->library, "cuGetProcAddress_v2");
  memcpy(&cu->cuGetProcAddress, &proc, sizeof(proc));

  accel_status_t status =
      accel_cuda_driver_start(cu, out_no_device, message, message_size);
  if (status != ACCEL_OK || *out_no_device) {
    accel_cuda_driver_close(cu);
  }
  return status;
}

void accel_cuda_driver_close(accel_cuda_driver_t* cu) {
  // Only a driver that never initialised is unloaded (see driver.h).
  if (cu->library != NULL && cu->version == 0) dlclose(cu->library);
  cu->library = NULL;
}
