// SPDX-License-Identifier: MIT
//
// CPU devices: configuration from the environment, open/close, properties
// and memory information.
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"

bool accel_cpu_parse_count(const char* text, size_t digits, uint32_t max,
                           uint32_t* out) {
  size_t len = strlen(text);
  if (len == 0 || len > digits) return false;
  for (size_t i = 0; i < len; i++) {
    if (!isdigit((unsigned char)text[i])) return false;
  }
  unsigned long long value = strtoull(text, NULL, 10);
  if (value < 1 || value > max) return false;
  *out = (uint32_t)value;
  return true;
}

// Parses ACCEL_CPU_MEMORY_LIMIT and ACCEL_CPU_STREAM_BYTES: a positive
// decimal byte count with an optional K, M or G suffix (binary multiples,
// either case).
static bool accel_cpu_parse_bytes(const char* text, uint64_t* out_bytes) {
  if (!isdigit((unsigned char)text[0])) return false;
  char* end = NULL;
  errno = 0;
  unsigned long long value = strtoull(text, &end, 10);
  if (errno != 0) return false;
  unsigned shift = 0;
  switch (*end) {
    case '\0':
      break;
    case 'k':
    case 'K':
      shift = 10;
      break;
    case 'm':
    case 'M':
      shift = 20;
      break;
    case 'g':
    case 'G':
      shift = 30;
      break;
    default:
      return false;
  }
  if (*end != '\0' && end[1] != '\0') return false;
  if (value == 0 || value > (UINT64_MAX >> shift)) return false;
  *out_bytes = (uint64_t)value << shift;
  return true;
}

// Reads the byte-count variable `name` into `*out` (left alone when unset
// or empty, as for the core's own variables); INVALID_ARGUMENT naming it
// when malformed.
static accel_status_t accel_cpu_env_bytes(const accel_host_t* host,
                                          const char* name, uint64_t* out) {
  const char* text = host->getenv(host, name);
  if (text == NULL || text[0] == '\0' || accel_cpu_parse_bytes(text, out)) {
    return ACCEL_OK;
  }
  return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                    "%s='%s' is not a positive byte count (digits with an "
                    "optional K, M or G suffix)",
                    name, text);
}

accel_status_t accel_cpu_plugin_configure(accel_cpu_plugin_t* plugin) {
  const accel_host_t* host = plugin->host;
  accel_status_t status = ACCEL_OK;
  pthread_mutex_lock(&plugin->mutex);
  if (!plugin->configured) {
    uint32_t count = ACCEL_CPU_DEVICES_DEFAULT;
    uint64_t limit = 0, stream_bytes = 0;
    // An empty value means unset, as for the core's own variables.
    const char* devices = host->getenv(host, "ACCEL_CPU_DEVICES");
    if (devices != NULL && devices[0] != '\0' &&
        !accel_cpu_parse_count(devices, 2, ACCEL_CPU_DEVICES_MAX, &count)) {
      status = host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                          "ACCEL_CPU_DEVICES='%s' is not a number between 1 "
                          "and 64",
                          devices);
    }
    if (status == ACCEL_OK) {
      status = accel_cpu_env_bytes(host, "ACCEL_CPU_MEMORY_LIMIT", &limit);
    }
    if (status == ACCEL_OK) {
      status =
          accel_cpu_env_bytes(host, "ACCEL_CPU_STREAM_BYTES", &stream_bytes);
    }
    if (status == ACCEL_OK) {
      plugin->device_count = count;
      plugin->memory_limit = limit;
      plugin->stream_bytes = stream_bytes;
      plugin->configured = true;
      if (limit != 0) {
        host->log(host, ACCEL_LOG_INFO,
                  "memory limited to %llu bytes per device",
                  (unsigned long long)limit);
      }
    }
  }
  pthread_mutex_unlock(&plugin->mutex);
  return status;
}

accel_status_t accel_cpu_device_count(void* plugin_ptr, uint32_t* out_count) {
  accel_cpu_plugin_t* plugin = plugin_ptr;
  *out_count = 0;
  accel_status_t status = accel_cpu_plugin_configure(plugin);
  if (status != ACCEL_OK) return status;
  *out_count = plugin->device_count;  // immutable once configured
  return ACCEL_OK;
}

accel_status_t accel_cpu_device_open(void* plugin_ptr, uint32_t index,
                                     void** out_device) {
  accel_cpu_plugin_t* plugin = plugin_ptr;
  const accel_host_t* host = plugin->host;
  *out_device = NULL;
  accel_status_t status = accel_cpu_plugin_configure(plugin);
  if (status != ACCEL_OK) return status;
  if (index >= plugin->device_count) {
    return host->fail(host, ACCEL_ERROR_NOT_FOUND,
                      "cpu:%u: backend cpu has %u device(s)", index,
                      plugin->device_count);
  }
  accel_cpu_device_t* device = calloc(1, sizeof(*device));
  if (device == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "cpu:%u: device state",
                      index);
  }
  device->plugin = plugin;
  device->host = host;
  device->index = index;
  device->memory_limit = plugin->memory_limit;
  atomic_init(&device->allocated, 0);

  accel_cpu_sysinfo_t info;
  accel_cpu_sysinfo_read(&info);
  memcpy(device->name, info.name, sizeof(device->name));
  memcpy(device->vendor, info.vendor, sizeof(device->vendor));
  memcpy(device->arch, info.arch, sizeof(device->arch));
  memcpy(device->features, info.features, sizeof(device->features));
  memcpy(device->driver_version, info.kernel, sizeof(device->driver_version));
  device->simd_width = info.simd_width;
  accel_cpu_gemm_features(plugin, info.name, device->gemm_features,
                          sizeof(device->gemm_features));
  host->log(host, ACCEL_LOG_DEBUG, "device %u: %s (%s, %s)", index, device->name,
            device->arch, device->features);
  *out_device = device;
  return ACCEL_OK;
}

void accel_cpu_device_close(void* device_ptr) {
  accel_cpu_device_t* device = device_ptr;
  if (device == NULL) return;
  uint64_t leaked = atomic_load(&device->allocated);
  if (leaked != 0) {
    device->host->log(device->host, ACCEL_LOG_WARN,
                      "device %u: closed with %llu bytes still allocated",
                      device->index, (unsigned long long)leaked);
  }
  free(device);
}

// Writes `src` into the props string field `dst` of `size` bytes when the
// field fits in the caller's struct. Truncates; always NUL-terminates.
#define ACCEL_CPU_PROPS_STRING(props, field, src)                            \
  do {                                                                       \
    if (ACCEL_PLUGIN_HAS_FIELD(props, accel_plugin_device_props_t, field)) { \
      size_t n_ = strlen(src);                                               \
      if (n_ >= sizeof((props)->field)) n_ = sizeof((props)->field) - 1;     \
      memcpy((props)->field, (src), n_);                                     \
      (props)->field[n_] = '\0';                                             \
    }                                                                        \
  } while (0)

// Writes a scalar props field when it fits in the caller's struct.
#define ACCEL_CPU_PROPS_SET(props, field, value)                           \
  do {                                                                     \
    if (ACCEL_PLUGIN_HAS_FIELD(props, accel_plugin_device_props_t, field)) \
      (props)->field = (value);                                            \
  } while (0)

// Total memory of a device: physical memory (within the cgroup limit),
// lowered to ACCEL_CPU_MEMORY_LIMIT when set; and, when `out_available` is
// not NULL, the host memory available (sysinfo.c), read in the same pass.
static uint64_t accel_cpu_device_total(const accel_cpu_device_t* device,
                                       uint64_t* out_available) {
  uint64_t total = 0;
  accel_cpu_sysinfo_memory(&total, out_available);
  if (device->memory_limit != 0 && device->memory_limit < total) {
    total = device->memory_limit;
  }
  return total;
}

// Module format of this host, as the core compares it with images.
#if defined(__x86_64__)
#define ACCEL_CPU_MODULE_TARGET "elf-x86_64"
#elif defined(__aarch64__)
#define ACCEL_CPU_MODULE_TARGET "elf-aarch64"
#else
#define ACCEL_CPU_MODULE_TARGET ""
#endif

accel_status_t accel_cpu_device_query_props(
    void* device_ptr, accel_plugin_device_props_t* props) {
  const accel_cpu_device_t* device = device_ptr;
  // F16 and BF16 are storage formats the CPU kernels convert in software;
  // PEER_ACCESS: see plugin.c. KERNELS: module.c. No PINNED_MEMORY.
  accel_device_caps_t caps = ACCEL_DEVICE_CAP_F16 | ACCEL_DEVICE_CAP_BF16 |
                             ACCEL_DEVICE_CAP_PEER_ACCESS |
                             ACCEL_DEVICE_CAP_EVENT_TIMING |
                             ACCEL_DEVICE_CAP_HOST_ACCESSIBLE;
  if (ACCEL_CPU_MODULE_TARGET[0] != '\0') caps |= ACCEL_DEVICE_CAP_KERNELS;
  // The GEMM engines as known at open (engine.c): fixed for the device's
  // life, so the string never changes between two queries.
  char features[sizeof(device->features) + sizeof(device->gemm_features)];
  snprintf(features, sizeof(features), "%.255s%s%.95s", device->features,
           device->features[0] ? " " : "", device->gemm_features);
  ACCEL_CPU_PROPS_SET(props, type, ACCEL_DEVICE_TYPE_CPU);
  ACCEL_CPU_PROPS_STRING(props, name, device->name);
  ACCEL_CPU_PROPS_STRING(props, vendor, device->vendor);
  ACCEL_CPU_PROPS_STRING(props, arch, device->arch);
  ACCEL_CPU_PROPS_SET(props, total_memory,
                      accel_cpu_device_total(device, NULL));
  ACCEL_CPU_PROPS_SET(props, compute_units,
                      accel_cpu_pool_configured_width(device->plugin));
  // A block is one task looping over its block_dim (cpu_kernel.h); the
  // limit only lets CUDA-style launch configurations through.
  ACCEL_CPU_PROPS_SET(props, max_threads_per_block, 1024u);
  ACCEL_CPU_PROPS_SET(props, simd_width, device->simd_width);
  ACCEL_CPU_PROPS_SET(props, caps, caps);
  // uuid stays zero (unknown) and pci_bus_id empty: the core zeroed them.
  ACCEL_CPU_PROPS_STRING(props, features, features);
  ACCEL_CPU_PROPS_STRING(props, driver_version, device->driver_version);
  ACCEL_CPU_PROPS_STRING(props, module_target, ACCEL_CPU_MODULE_TARGET);
  // ABI 1.3. Buffer arguments are host pointers: any offset works. The
  // grid limit is CUDA's, so a launch tuned here also fits a GPU, and a
  // grid of ~2^96 blocks (which would never finish) is refused by the
  // core. Shared memory and single allocations have no limit below memory.
  ACCEL_CPU_PROPS_SET(props, buffer_offset_alignment, 1u);
  if (ACCEL_PLUGIN_HAS_FIELD(props, accel_plugin_device_props_t, max_grid)) {
    props->max_grid[0] = 0x7fffffffu;
    props->max_grid[1] = 65535u;
    props->max_grid[2] = 65535u;
  }
  return ACCEL_OK;
}

accel_status_t accel_cpu_device_mem_info(void* device_ptr, uint64_t* out_free,
                                         uint64_t* out_total) {
  accel_cpu_device_t* device = device_ptr;
  uint64_t free_bytes = 0;
  uint64_t total = accel_cpu_device_total(device, &free_bytes);
  if (device->memory_limit != 0) {
    uint64_t allocated = atomic_load(&device->allocated);
    uint64_t room =
        allocated < device->memory_limit ? device->memory_limit - allocated : 0;
    if (room < free_bytes) free_bytes = room;
  }
  if (free_bytes > total) free_bytes = total;
  *out_free = free_bytes;
  *out_total = total;
  return ACCEL_OK;
}

accel_status_t accel_cpu_device_can_access_peer(void* device, void* peer_device,
                                                bool* out_can) {
  // Every cpu device shares the host's address space.
  *out_can = device != peer_device;
  return ACCEL_OK;
}
