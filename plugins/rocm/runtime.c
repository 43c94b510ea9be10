// SPDX-License-Identifier: MIT
//
// Opening the HIP runtime (see runtime.h). Nothing here runs at dlopen
// time: device_count calls accel_rocm_runtime_open on first use.
#include "runtime.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

// Sonames tried in order when ACCEL_ROCM_RUNTIME is unset: the unversioned
// development link first (whatever the system chose), then the versions
// this plugin was tested against, newest first.
static const char* const accel_rocm_runtime_names[] = {
    "libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6",
    "libamdhip64.so.5"};

// The amdgpu driver's compute device node, which every HIP runtime opens.
#define ACCEL_ROCM_KFD "/dev/kfd"

// Separate hiprtc libraries (ROCm 5.3 and later).
static const char* const accel_rocm_rtc_names[] = {
    "libhiprtc.so", "libhiprtc.so.7", "libhiprtc.so.6", "libhiprtc.so.5"};

// Copies a code address out of dlsym (POSIX guarantees this works).
static void accel_rocm_sym(void* handle, const char* name, void* out_fn,
                           size_t fn_size) {
  void* sym = dlsym(handle, name);
  memcpy(out_fn, &sym, fn_size);
}

// Appends "name (reason)" to the list in `why`.
static void accel_rocm_note(char* why, size_t why_size, const char* name,
                            const char* reason) {
  size_t used = strlen(why);
  if (used >= why_size) return;
  snprintf(why + used, why_size - used, "%s%s (%.200s)", used ? "; " : "", name,
           reason != NULL ? reason : "unknown error");
}

// Resolves every required symbol; false with the first missing name.
static bool accel_rocm_resolve(accel_rocm_runtime_t* rt, const char** missing) {
#define ACCEL_ROCM_RESOLVE(name, ret, params)                            \
  accel_rocm_sym(rt->handle, #name, (void*)&rt->name, sizeof(rt->name)); \
  if (rt->name == NULL) {                                                \
    *missing = #name;                                                    \
    return false;                                                        \
  }
  ACCEL_ROCM_HIP_SYMBOLS(ACCEL_ROCM_RESOLVE)
#undef ACCEL_ROCM_RESOLVE
  // ROCm 6 macro-maps hipGetDeviceProperties to the R0600 layout but keeps
  // exporting the R0000 one under both names below; ROCm 5 has only the
  // plain name, with the same layout (the one of our 5.x headers).
  accel_rocm_sym(rt->handle, "hipGetDevicePropertiesR0000",
                 (void*)&rt->get_props, sizeof(rt->get_props));
  if (rt->get_props == NULL) {
    accel_rocm_sym(rt->handle, "hipGetDeviceProperties", (void*)&rt->get_props,
                   sizeof(rt->get_props));
  }
  if (rt->get_props == NULL) {
    *missing = "hipGetDeviceProperties";
    return false;
  }
  return true;
}

// Resolves hiprtc from `handle`; true when every entry point is there.
static bool accel_rocm_resolve_rtc(accel_rocm_runtime_t* rt, void* handle) {
  bool all = true;
#define ACCEL_ROCM_RESOLVE(name, ret, params)                        \
  accel_rocm_sym(handle, #name, (void*)&rt->name, sizeof(rt->name)); \
  all = all && rt->name != NULL;
  ACCEL_ROCM_RTC_SYMBOLS(ACCEL_ROCM_RESOLVE)
#undef ACCEL_ROCM_RESOLVE
  return all;
}

// Finds hiprtc in the runtime itself or in a library of its own.
static void accel_rocm_open_rtc(accel_rocm_runtime_t* rt) {
  rt->has_rtc = accel_rocm_resolve_rtc(rt, rt->handle);
  for (size_t i = 0; !rt->has_rtc && i < sizeof(accel_rocm_rtc_names) /
                                             sizeof(accel_rocm_rtc_names[0]);
       i++) {
    void* handle = dlopen(accel_rocm_rtc_names[i], RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) continue;
    if (accel_rocm_resolve_rtc(rt, handle)) {
      rt->rtc_handle = handle;
      rt->has_rtc = true;
    } else {
      dlclose(handle);
    }
  }
}

// dlopen()s the runtime: the override, or the first soname that opens.
static bool accel_rocm_dlopen(const accel_host_t* host,
                              accel_rocm_runtime_t* rt, char* why,
                              size_t why_size) {
  const char* forced = host->getenv(host, "ACCEL_ROCM_RUNTIME");
  if (forced != NULL && forced[0] != '\0') {
    rt->handle = dlopen(forced, RTLD_NOW | RTLD_LOCAL);
    if (rt->handle == NULL) {
      snprintf(why, why_size,
               "HIP runtime not found: ACCEL_ROCM_RUNTIME=%s (%.300s)", forced,
               dlerror());
      return false;
    }
    snprintf(rt->path, sizeof(rt->path), "%s", forced);
    return true;
  }
  // Every HIP runtime reaches AMD GPUs through the amdgpu kernel driver's
  // compute node, /dev/kfd. Without it (every machine with no AMD GPU) no
  // runtime can find a device, so it is not loaded at all: libamdhip64
  // and the LLVM it maps cost accel-info about 16 ms and 5 MB of its
  // start-up (accel-bench's startup suite). ACCEL_ROCM_RUNTIME, above,
  // skips this check.
  if (access(ACCEL_ROCM_KFD, R_OK | W_OK) != 0) {
    int error = errno;
    char text[128];
    if (strerror_r(error, text, sizeof(text)) != 0) {
      snprintf(text, sizeof(text), "errno %d", error);
    }
    if (error == ENOENT) {
      snprintf(why, why_size,
               "no ROCm device: %s is missing (no AMD GPU, or the amdgpu "
               "kernel driver is not loaded)",
               ACCEL_ROCM_KFD);
    } else {
      snprintf(why, why_size,
               "no ROCm device usable: %s: %s (the user needs the 'render' "
               "and 'video' groups)",
               ACCEL_ROCM_KFD, text);
    }
    return false;
  }
  char tried[ACCEL_ROCM_MESSAGE_SIZE] = "";
  size_t n =
      sizeof(accel_rocm_runtime_names) / sizeof(accel_rocm_runtime_names[0]);
  for (size_t i = 0; i < n; i++) {
    rt->handle = dlopen(accel_rocm_runtime_names[i], RTLD_NOW | RTLD_LOCAL);
    if (rt->handle != NULL) {
      snprintf(rt->path, sizeof(rt->path), "%s", accel_rocm_runtime_names[i]);
      return true;
    }
    // Keep the first reason in full; the others only say "not found".
    accel_rocm_note(tried, sizeof(tried), accel_rocm_runtime_names[i],
                    i == 0 ? dlerror() : "not found");
  }
  snprintf(why, why_size, "HIP runtime not found: %s", tried);
  return false;
}

accel_status_t accel_rocm_runtime_open(const accel_host_t* host,
                                       accel_rocm_runtime_t* rt, char* why,
                                       size_t why_size) {
  why[0] = '\0';
  if (!accel_rocm_dlopen(host, rt, why, why_size)) {
    return ACCEL_ERROR_UNAVAILABLE;
  }
  const char* missing = NULL;
  if (!accel_rocm_resolve(rt, &missing)) {
    snprintf(why, why_size, "%s: HIP runtime too old or not HIP: no %s",
             rt->path, missing);
    goto fail;
  }
  // hipGetDeviceCount first: it initialises the runtime and is the call
  // that says hipErrorNoDevice when no driver or GPU is there (measured
  // with Debian's HIP 5.2.3 on a machine without an AMD GPU, where hipInit
  // says hipErrorInvalidDevice instead). plugin.h: a working runtime with
  // no device is OK with 0 devices.
  int count = 0;
  rt->started = true;
  hipError_t err = rt->hipGetDeviceCount(&count);
  if (err == hipSuccess && count > 0) err = rt->hipInit(0);
  if (err == hipErrorNoDevice) {
    snprintf(why, why_size, "no ROCm device (hipErrorNoDevice) [%s]", rt->path);
    goto fail;
  }
  if (err != hipSuccess) {
    snprintf(why, why_size, "%s: hipGetDeviceCount/hipInit: %s (%s)", rt->path,
             rt->hipGetErrorName(err), rt->hipGetErrorString(err));
    goto fail;
  }
  err = rt->hipRuntimeGetVersion(&rt->version);
  if (err != hipSuccess || rt->version < ACCEL_ROCM_RUNTIME_MIN_VERSION) {
    snprintf(why, why_size,
             "%s: HIP runtime too old: version %d, need %d (HIP 5.0)", rt->path,
             rt->version, ACCEL_ROCM_RUNTIME_MIN_VERSION);
    goto fail;
  }
  if (rt->hipDriverGetVersion(&rt->driver_version) != hipSuccess) {
    rt->driver_version = 0;
  }
  rt->device_count = count > 0 ? count : 0;
  accel_rocm_open_rtc(rt);
  rt->has_graphs = true;
#define ACCEL_ROCM_RESOLVE(name, ret, params)                            \
  accel_rocm_sym(rt->handle, #name, (void*)&rt->name, sizeof(rt->name)); \
  rt->has_graphs = rt->has_graphs && rt->name != NULL;
  ACCEL_ROCM_GRAPH_SYMBOLS(ACCEL_ROCM_RESOLVE)
#undef ACCEL_ROCM_RESOLVE
  return ACCEL_OK;

fail:
  accel_rocm_runtime_close(rt);
  return ACCEL_ERROR_UNAVAILABLE;
}

void accel_rocm_runtime_close(accel_rocm_runtime_t* rt) {
  // Once the HIP runtime has initialised, its threads, atexit handlers and
  // static allocations outlive any unload we could ask for (unloading and
  // reloading it leaks them at every cycle), so it stays mapped, as the
  // CUDA plugin keeps libcuda. Only a runtime that never started is
  // closed. Reopening finds the same mapping.
  if (rt->started) {
    rt->rtc_handle = NULL;
    rt->handle = NULL;
    return;
  }
  if (rt->rtc_handle != NULL) dlclose(rt->rtc_handle);
  if (rt->handle != NULL) dlclose(rt->handle);
  rt->rtc_handle = NULL;
  rt->handle = NULL;
}

accel_status_t accel_rocm_status(hipError_t error) {
  switch (error) {
    case hipSuccess:
      return ACCEL_OK;
    case hipErrorOutOfMemory:
      return ACCEL_ERROR_OUT_OF_DEVICE_MEMORY;
    case hipErrorNoDevice:
    case hipErrorInsufficientDriver:
      return ACCEL_ERROR_UNAVAILABLE;
    case hipErrorNotFound:
      return ACCEL_ERROR_NOT_FOUND;
    case hipErrorNotReady:
      return ACCEL_ERROR_NOT_READY;
    case hipErrorInvalidImage:
    case hipErrorNoBinaryForGpu:
    case hipErrorInvalidKernelFile:
      return ACCEL_ERROR_INCOMPATIBLE;
    case hipErrorIllegalAddress:
    case hipErrorLaunchFailure:
    case hipErrorLaunchTimeOut:
    case hipErrorAssert:
    case hipErrorECCNotCorrectable:
      return ACCEL_ERROR_DEVICE_LOST;
    default:
      return ACCEL_ERROR_BACKEND;
  }
}

accel_status_t accel_rocm_fail(const accel_host_t* host,
                               const accel_rocm_runtime_t* rt, hipError_t error,
                               const char* prefix, const char* what) {
  const char* name = rt->hipGetErrorName(error);
  const char* text = rt->hipGetErrorString(error);
  return host->fail(host, accel_rocm_status(error), "%s: %s: %s (%s)", prefix,
                    what, name != NULL ? name : "hipError?",
                    text != NULL ? text : "no description");
}
