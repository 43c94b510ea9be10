// SPDX-License-Identifier: MIT
//
// Devices: every device of every platform the ICD loader lists, found at
// the first device_count, numbered in platform order then device order.
// The devices of one platform share one context, created at the first
// open of any of them, so buffers, events and copies work across them
// (ACCEL_OPENCL_CONTEXTS=device gives each device its own context, which
// the tests use to reach the cross-context paths with one platform).
// Properties are read once at open and cached.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel_opencl.h"
// After accel_opencl.h, which sets CL_TARGET_OPENCL_VERSION.
#include <CL/cl_ext.h>

// Finds platforms and devices; under plugin->mutex. On failure writes the
// reason into plugin->icd_error and leaves no device list behind.
static accel_status_t accel_opencl_discover(accel_opencl_plugin_t* plugin) {
  const accel_opencl_api_t* cl = &plugin->cl;
  const accel_host_t* host = plugin->host;
  const char* mode = host->getenv(host, "ACCEL_OPENCL_CONTEXTS");
  bool per_device = mode != NULL && strcmp(mode, "device") == 0;
  if (mode != NULL && mode[0] != '\0' && !per_device &&
      strcmp(mode, "platform") != 0) {
    snprintf(plugin->icd_error, sizeof(plugin->icd_error),
             "ACCEL_OPENCL_CONTEXTS=%s: expected 'platform' or 'device'", mode);
    return ACCEL_ERROR_INVALID_ARGUMENT;
  }
  cl_uint count = 0;
  cl_int err = cl->clGetPlatformIDs(0, NULL, &count);
  if (err == CL_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && count == 0)) {
    snprintf(plugin->icd_error, sizeof(plugin->icd_error),
             "no OpenCL platform (clGetPlatformIDs: %s)",
             accel_opencl_error_name(CL_PLATFORM_NOT_FOUND_KHR));
    return ACCEL_ERROR_UNAVAILABLE;
  }
  plugin->platforms = calloc(count, sizeof(cl_platform_id));
  if (err == CL_SUCCESS && plugin->platforms == NULL) {
    err = CL_OUT_OF_HOST_MEMORY;
  }
  if (err == CL_SUCCESS) {
    err = cl->clGetPlatformIDs(count, plugin->platforms, NULL);
  }
  if (err != CL_SUCCESS) {
    snprintf(plugin->icd_error, sizeof(plugin->icd_error),
             "clGetPlatformIDs: %s", accel_opencl_error_name(err));
    return ACCEL_ERROR_UNAVAILABLE;
  }
  plugin->platform_count = count;
  for (cl_uint p = 0; p < count; p++) {
    cl_uint n = 0;
    err = cl->clGetDeviceIDs(plugin->platforms[p], CL_DEVICE_TYPE_ALL, 0, NULL,
                             &n);
    if (err == CL_DEVICE_NOT_FOUND || n == 0) continue;  // an empty platform
    uint32_t have = plugin->device_count;
    cl_device_id* ids = realloc(plugin->device_ids, (have + n) * sizeof(*ids));
    if (ids != NULL) plugin->device_ids = ids;
    cl_platform_id* owners =
        realloc(plugin->device_platforms, (have + n) * sizeof(*owners));
    if (owners != NULL) plugin->device_platforms = owners;
    uint32_t* slots =
        realloc(plugin->device_contexts, (have + n) * sizeof(*slots));
    if (slots != NULL) plugin->device_contexts = slots;
    err = ids == NULL || owners == NULL || slots == NULL
              ? CL_OUT_OF_HOST_MEMORY
              : cl->clGetDeviceIDs(plugin->platforms[p], CL_DEVICE_TYPE_ALL, n,
                                   ids + have, NULL);
    if (err != CL_SUCCESS) {
      snprintf(plugin->icd_error, sizeof(plugin->icd_error),
               "clGetDeviceIDs: %s", accel_opencl_error_name(err));
      return ACCEL_ERROR_UNAVAILABLE;
    }
    for (cl_uint d = 0; d < n; d++) {
      owners[have + d] = plugin->platforms[p];
      slots[have + d] = per_device ? have + d : p;
    }
    plugin->device_count = have + n;
  }
  plugin->context_count = per_device ? plugin->device_count : count;
  if (plugin->context_count > 0) {
    plugin->platform_contexts =
        calloc(plugin->context_count, sizeof(cl_context));
    if (plugin->platform_contexts == NULL) {
      snprintf(plugin->icd_error, sizeof(plugin->icd_error),
               "opencl: out of host memory listing devices");
      return ACCEL_ERROR_OUT_OF_MEMORY;
    }
  }
  return ACCEL_OK;
}

void accel_opencl_devices_release(accel_opencl_plugin_t* plugin) {
  for (uint32_t i = 0;
       plugin->platform_contexts != NULL && i < plugin->context_count; i++) {
    if (plugin->platform_contexts[i] != NULL) {
      plugin->cl.clReleaseContext(plugin->platform_contexts[i]);
    }
  }
  free(plugin->platform_contexts);
  free(plugin->platforms);
  free(plugin->device_ids);
  free(plugin->device_platforms);
  free(plugin->device_contexts);
  plugin->platform_contexts = NULL;
  plugin->platforms = NULL;
  plugin->device_ids = NULL;
  plugin->device_platforms = NULL;
  plugin->device_contexts = NULL;
  plugin->device_count = plugin->platform_count = plugin->context_count = 0;
}

accel_status_t accel_opencl_device_count(void* plugin_ptr,
                                         uint32_t* out_count) {
  accel_opencl_plugin_t* plugin = plugin_ptr;
  *out_count = 0;
  pthread_mutex_lock(&plugin->mutex);
  if (!plugin->icd_tried) {
    plugin->icd_tried = true;
    plugin->icd_status = accel_opencl_icd_open(plugin);
    if (plugin->icd_status == ACCEL_OK) {
      plugin->icd_status = accel_opencl_discover(plugin);
      if (plugin->icd_status != ACCEL_OK) {
        accel_opencl_devices_release(plugin);
        accel_opencl_icd_close(plugin);
      }
    }
  }
  accel_status_t status = plugin->icd_status;
  uint32_t count = plugin->device_count;
  pthread_mutex_unlock(&plugin->mutex);
  if (status != ACCEL_OK) {
    return plugin->host->fail(plugin->host, status, "opencl: %s",
                              plugin->icd_error);
  }
  *out_count = count;
  return ACCEL_OK;
}

// Reads a device string into `buf` (empty on failure).
static void accel_opencl_info_string(const accel_opencl_device_t* device,
                                     cl_device_info param, char* buf,
                                     size_t size) {
  char* tmp = NULL;
  size_t need = 0;
  buf[0] = '\0';
  if (device->cl->clGetDeviceInfo(device->id, param, 0, NULL, &need) !=
          CL_SUCCESS ||
      need == 0 || (tmp = malloc(need + 1)) == NULL) {
    return;
  }
  if (device->cl->clGetDeviceInfo(device->id, param, need, tmp, NULL) ==
      CL_SUCCESS) {
    tmp[need] = '\0';
    snprintf(buf, size, "%s", tmp);
  }
  free(tmp);
}

// Reads a fixed-size device value; leaves `out` (pre-zeroed) on failure.
static void accel_opencl_info(const accel_opencl_device_t* device,
                              cl_device_info param, void* out, size_t size) {
  if (device->cl->clGetDeviceInfo(device->id, param, size, out, NULL) !=
      CL_SUCCESS) {
    memset(out, 0, size);
  }
}

// Whether the space-separated `list` holds the word `word`.
static bool accel_opencl_has_word(const char* list, const char* word) {
  size_t n = strlen(word);
  for (const char* p = strstr(list, word); p != NULL; p = strstr(p + 1, word)) {
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) {
      return true;
    }
  }
  return false;
}

// Appends " word" to the features string when it fits.
static void accel_opencl_feature(char* features, size_t size,
                                 const char* word) {
  size_t len = strlen(features);
  if (len + strlen(word) + 2 > size) return;
  snprintf(features + len, size - len, "%s%s", len ? " " : "", word);
}

// Identity, ids and vendor warp width (uuid, PCI bus, simd_width).
static void accel_opencl_read_ids(accel_opencl_device_t* device,
                                  const char* ext) {
  accel_plugin_device_props_t* p = &device->props;
  if (accel_opencl_has_word(ext, "cl_khr_device_uuid")) {
    accel_opencl_info(device, CL_DEVICE_UUID_KHR, p->uuid, sizeof(p->uuid));
  }
  if (accel_opencl_has_word(ext, "cl_khr_pci_bus_info")) {
    cl_device_pci_bus_info_khr bus = {0};
    accel_opencl_info(device, CL_DEVICE_PCI_BUS_INFO_KHR, &bus, sizeof(bus));
    snprintf(p->pci_bus_id, sizeof(p->pci_bus_id), "%04x:%02x:%02x.%x",
             bus.pci_domain, bus.pci_bus, bus.pci_device, bus.pci_function);
  }
  cl_uint width = 0;
  if (accel_opencl_has_word(ext, "cl_nv_device_attribute_query")) {
    accel_opencl_info(device, CL_DEVICE_WARP_SIZE_NV, &width, sizeof(width));
  } else if (accel_opencl_has_word(ext, "cl_amd_device_attribute_query")) {
    accel_opencl_info(device, CL_DEVICE_WAVEFRONT_WIDTH_AMD, &width,
                      sizeof(width));
  }
  if (width == 0) {
    accel_opencl_info(device, CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, &width,
                      sizeof(width));
  }
  p->simd_width = width;
}

// Versions, extensions and what follows from them.
static void accel_opencl_read_features(accel_opencl_device_t* device,
                                       const char* ext) {
  accel_plugin_device_props_t* p = &device->props;
  char text[256];
  unsigned major = 1, minor = 0;
  accel_opencl_info_string(device, CL_DEVICE_VERSION, text, sizeof(text));
  if (sscanf(text, "OpenCL %u.%u", &major, &minor) == 2) {
    snprintf(p->arch, sizeof(p->arch), "opencl-%u.%u", major, minor);
  }
  accel_opencl_info_string(device, CL_DEVICE_OPENCL_C_VERSION, text,
                           sizeof(text));
  if (sscanf(text, "OpenCL C %u.%u", &major, &minor) == 2) {
    device->opencl_c_major = major;
    device->opencl_c_minor = minor;
  }
  device->has_fp16 = accel_opencl_has_word(ext, "cl_khr_fp16");
  device->has_fp64 = accel_opencl_has_word(ext, "cl_khr_fp64");
  accel_opencl_info_string(device, CL_DEVICE_IL_VERSION, text, sizeof(text));
  device->has_il = device->cl->clCreateProgramWithIL != NULL &&
                   (strstr(text, "SPIR-V") != NULL ||
                    accel_opencl_has_word(ext, "cl_khr_il_program"));
  cl_device_svm_capabilities svm = 0;
  accel_opencl_info(device, CL_DEVICE_SVM_CAPABILITIES, &svm, sizeof(svm));
  snprintf(text, sizeof(text), "opencl_c_%u.%u", device->opencl_c_major,
           device->opencl_c_minor);
  accel_opencl_feature(p->features, sizeof(p->features), text);
  static const char* const kExtensions[] = {
      "cl_khr_fp16",           "cl_khr_fp64",      "cl_khr_il_program",
      "cl_khr_command_buffer", "cl_khr_subgroups", "cl_khr_int64_base_atomics"};
  for (size_t i = 0; i < sizeof(kExtensions) / sizeof(kExtensions[0]); i++) {
    if (accel_opencl_has_word(ext, kExtensions[i])) {
      accel_opencl_feature(p->features, sizeof(p->features), kExtensions[i]);
    }
  }
  if (svm != 0) accel_opencl_feature(p->features, sizeof(p->features), "svm");
  if (device->has_il) {
    accel_opencl_feature(p->features, sizeof(p->features), "spirv");
  }
}

// Fills device->props and the cached fields once, at open.
static void accel_opencl_read_props(accel_opencl_device_t* device,
                                    bool shares_context) {
  accel_plugin_device_props_t* p = &device->props;
  p->struct_size = sizeof(*p);
  cl_device_type type = 0;
  accel_opencl_info(device, CL_DEVICE_TYPE, &type, sizeof(type));
  p->type = (type & CL_DEVICE_TYPE_GPU)   ? ACCEL_DEVICE_TYPE_GPU
            : (type & CL_DEVICE_TYPE_CPU) ? ACCEL_DEVICE_TYPE_CPU
                                          : ACCEL_DEVICE_TYPE_OTHER;
  accel_opencl_info_string(device, CL_DEVICE_NAME, p->name, sizeof(p->name));
  accel_opencl_info_string(device, CL_DEVICE_VENDOR, p->vendor,
                           sizeof(p->vendor));
  accel_opencl_info_string(device, CL_DRIVER_VERSION, p->driver_version,
                           sizeof(p->driver_version));
  device->cl->clGetPlatformInfo(device->platform, CL_PLATFORM_NAME,
                                sizeof(p->platform) - 1, p->platform, NULL);
  cl_ulong u64 = 0;
  accel_opencl_info(device, CL_DEVICE_GLOBAL_MEM_SIZE, &u64, sizeof(u64));
  p->total_memory = u64;
  accel_opencl_info(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, &u64, sizeof(u64));
  p->max_alloc_size = u64;
  accel_opencl_info(device, CL_DEVICE_LOCAL_MEM_SIZE, &u64, sizeof(u64));
  p->max_shared_mem_bytes = u64;
  cl_uint u32 = 0;
  accel_opencl_info(device, CL_DEVICE_MAX_COMPUTE_UNITS, &u32, sizeof(u32));
  p->compute_units = u32;
  accel_opencl_info(device, CL_DEVICE_MEM_BASE_ADDR_ALIGN, &u32, sizeof(u32));
  device->base_addr_align = u32 >= 8 ? u32 / 8 : 1;  // bits to bytes
  p->buffer_offset_alignment = device->base_addr_align;
  size_t sz = 0;
  accel_opencl_info(device, CL_DEVICE_MAX_WORK_GROUP_SIZE, &sz, sizeof(sz));
  p->max_threads_per_block = sz > UINT32_MAX ? UINT32_MAX : (uint32_t)sz;
  accel_opencl_info(device, CL_DEVICE_PROFILING_TIMER_RESOLUTION, &sz,
                    sizeof(sz));
  device->timer_resolution_ns = sz;
  // A global size is a size_t per dimension, and grid * block (two 32-bit
  // values) always fits one: OpenCL sets no grid limit of its own.
  p->max_grid[0] = p->max_grid[1] = p->max_grid[2] = 0;

  size_t ext_size = 0;
  device->cl->clGetDeviceInfo(device->id, CL_DEVICE_EXTENSIONS, 0, NULL,
                              &ext_size);
  char* ext = calloc(1, ext_size + 1);
  if (ext != NULL) {
    accel_opencl_info_string(device, CL_DEVICE_EXTENSIONS, ext, ext_size + 1);
    accel_opencl_read_ids(device, ext);
    accel_opencl_read_features(device, ext);
    free(ext);
  }
  cl_command_queue_properties queue = 0;
  accel_opencl_info(device, CL_DEVICE_QUEUE_PROPERTIES, &queue, sizeof(queue));
  // Kernel arguments at an offset are sub-buffers, and concurrent use of
  // a buffer and its sub-buffers is undefined even on disjoint bytes
  // (OpenCL 3.0, clCreateSubBuffer): every buffer gets a cl_mem of its
  // own, so streams working on different buffers never share one.
  p->caps = ACCEL_DEVICE_CAP_PINNED_MEMORY |
            ACCEL_DEVICE_CAP_SEPARATE_ALLOCATIONS;
  if (queue & CL_QUEUE_PROFILING_ENABLE)
    p->caps |= ACCEL_DEVICE_CAP_EVENT_TIMING;
  if (shares_context) p->caps |= ACCEL_DEVICE_CAP_PEER_ACCESS;
  cl_bool compiler = CL_FALSE;
  accel_opencl_info(device, CL_DEVICE_COMPILER_AVAILABLE, &compiler,
                    sizeof(compiler));
  // Built-in ops keep bf16 as 16-bit words and compute in f32, so every
  // device has it; f16 arithmetic needs cl_khr_fp16.
  p->caps |= ACCEL_DEVICE_CAP_BF16;
  if (device->has_fp16) p->caps |= ACCEL_DEVICE_CAP_F16;
  if (compiler) {
    p->caps |= ACCEL_DEVICE_CAP_KERNELS;
    snprintf(p->module_target, sizeof(p->module_target), "opencl-c");
    snprintf(p->module_formats, sizeof(p->module_formats), "opencl-c%s",
             device->has_il ? " spirv" : "");
  }
}

// The context of the device's slot, created at the first open; under
// plugin->mutex. Sets *out_shared when other devices use it too.
static cl_int accel_opencl_context(accel_opencl_plugin_t* plugin,
                                   uint32_t index, cl_context* out,
                                   bool* out_shared) {
  uint32_t slot = plugin->device_contexts[index];
  cl_device_id* ids = malloc(plugin->device_count * sizeof(*ids));
  if (ids == NULL) return CL_OUT_OF_HOST_MEMORY;
  cl_uint n = 0;
  for (uint32_t i = 0; i < plugin->device_count; i++) {
    if (plugin->device_contexts[i] == slot) ids[n++] = plugin->device_ids[i];
  }
  cl_int err = CL_SUCCESS;
  if (plugin->platform_contexts[slot] == NULL) {
    cl_context_properties props[] = {
        CL_CONTEXT_PLATFORM,
        (cl_context_properties)plugin->device_platforms[index], 0};
    plugin->platform_contexts[slot] =
        plugin->cl.clCreateContext(props, n, ids, NULL, NULL, &err);
  }
  free(ids);
  *out = plugin->platform_contexts[slot];
  *out_shared = n > 1;
  return err;
}

accel_status_t accel_opencl_device_open(void* plugin_ptr, uint32_t index,
                                        void** out_device) {
  accel_opencl_plugin_t* plugin = plugin_ptr;
  const accel_host_t* host = plugin->host;
  *out_device = NULL;
  if (index >= plugin->device_count) {
    return host->fail(host, ACCEL_ERROR_NOT_FOUND, "opencl:%u: no such device",
                      index);
  }
  accel_opencl_device_t* device = calloc(1, sizeof(*device));
  if (device == NULL || pthread_mutex_init(&device->mutex, NULL) != 0) {
    free(device);
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "opencl:%u: state",
                      index);
  }
  device->plugin = plugin;
  device->cl = &plugin->cl;
  device->host = host;
  device->index = index;
  device->platform = plugin->device_platforms[index];
  device->id = plugin->device_ids[index];
  atomic_init(&device->allocated, 0);
  bool shared = false;
  pthread_mutex_lock(&plugin->mutex);
  cl_int err = accel_opencl_context(plugin, index, &device->context, &shared);
  pthread_mutex_unlock(&plugin->mutex);
  accel_status_t status = accel_opencl_check(host, err, "clCreateContext");
  if (status == ACCEL_OK) {
    device->sync_queue =
        device->cl->clCreateCommandQueue(device->context, device->id, 0, &err);
    status = accel_opencl_check(host, err, "clCreateCommandQueue");
  }
  if (status != ACCEL_OK) {
    pthread_mutex_destroy(&device->mutex);
    free(device);
    return status;
  }
  accel_opencl_read_props(device, shared);
  *out_device = device;
  return ACCEL_OK;
}

void accel_opencl_device_close(void* device_ptr) {
  accel_opencl_device_t* device = device_ptr;
  if (device == NULL) return;
  accel_opencl_builtins_release(device);
  accel_opencl_modules_release(device);
  // The core frees pinned blocks before closing; any left are released
  // with the context at unload.
  device->cl->clFinish(device->sync_queue);
  device->cl->clReleaseCommandQueue(device->sync_queue);
  pthread_mutex_destroy(&device->mutex);
  free(device);
}

accel_status_t accel_opencl_device_query_props(
    void* device_ptr, accel_plugin_device_props_t* props) {
  accel_opencl_device_t* device = device_ptr;
  uint32_t size = props->struct_size;
  size_t n = size < sizeof(*props) ? size : sizeof(*props);
  memcpy(props, &device->props, n);
  props->struct_size = size;
  return ACCEL_OK;
}

// OpenCL has no free-memory query: the free figure is the global memory
// size less what this plugin has allocated on the device, which ignores
// other processes and the runtime's own use.
accel_status_t accel_opencl_device_mem_info(void* device_ptr,
                                            uint64_t* out_free,
                                            uint64_t* out_total) {
  accel_opencl_device_t* device = device_ptr;
  uint64_t total = device->props.total_memory;
  uint64_t used = atomic_load(&device->allocated);
  *out_total = total;
  *out_free = used < total ? total - used : 0;
  return ACCEL_OK;
}

accel_status_t accel_opencl_device_can_access_peer(void* device_ptr,
                                                   void* peer_ptr,
                                                   bool* out_can) {
  accel_opencl_device_t* device = device_ptr;
  accel_opencl_device_t* peer = peer_ptr;
  *out_can = device->context == peer->context;
  return ACCEL_OK;
}
