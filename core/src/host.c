// SPDX-License-Identifier: MIT
//
// The host-services table the core lends each plugin.
#include "internal.h"

static accel__plugin_t* accel__host_plugin(const accel_host_t* host) {
  // accel__host_t starts with its accel_host_t.
  return host != NULL ? ((const accel__host_t*)host)->plugin : NULL;
}

static accel_status_t accel__host_fail(const accel_host_t* host,
                                       accel_status_t status,
                                       const char* format, ...) {
  (void)host;
  va_list args;
  va_start(args, format);
  accel__vfail(status, format, args);
  va_end(args);
  return status;
}

static void accel__host_log(const accel_host_t* host, accel_log_level_t level,
                            const char* format, ...) {
  accel__plugin_t* plugin = accel__host_plugin(host);
  const char* tag = "plugin";
  if (plugin != NULL && plugin->name != NULL && plugin->name[0] != '\0') {
    tag = plugin->name;
  } else if (plugin == NULL && ((const accel__host_t*)host)->tag[0] != '\0') {
    tag = ((const accel__host_t*)host)->tag;
  }
  va_list args;
  va_start(args, format);
  accel__vlog(level, tag, format, args);
  va_end(args);
}

static const char* accel__host_getenv(const accel_host_t* host,
                                      const char* name) {
  (void)host;
  return name != NULL ? accel__getenv(name) : NULL;
}

void accel__host_init(accel__host_t* host, accel__plugin_t* plugin) {
  host->host.struct_size = sizeof(accel_host_t);
  host->host.abi_version = ACCEL_PLUGIN_ABI_VERSION;
  host->host.abi_minor = ACCEL_PLUGIN_ABI_MINOR;
  host->host.fail = accel__host_fail;
  host->host.log = accel__host_log;
  host->host.getenv = accel__host_getenv;
  host->plugin = plugin;
  host->tag[0] = '\0';
}

// Where each minor's additions end: a table that reaches past the last
// entry of "since ABI 1.N" was built with 1.N or later. accel_plugin_t has
// had no addition since 1.0, so device_ops decides. A table larger than
// the newest one listed here comes from a newer minor than the list
// knows, which can only be this core's own (the header it was built
// with) or later: ACCEL_PLUGIN_ABI_MINOR. A minor that appended nothing
// to device_ops cannot be told from the one before it.
#define ACCEL__ENDS_AFTER(type, field) \
  (offsetof(type, field) + sizeof(((type*)0)->field))

uint32_t accel__plugin_abi_minor(uint32_t ops_size) {
  static const struct {
    size_t size;
    uint32_t minor;
  } sizes[] = {
      {ACCEL__ENDS_AFTER(accel_device_ops_t, op_rng), 3},
      {ACCEL__ENDS_AFTER(accel_device_ops_t, op_gemm_workspace), 2},
      {ACCEL__ENDS_AFTER(accel_device_ops_t, op_gemm), 1},
  };
  if (ops_size > sizes[0].size) return ACCEL_PLUGIN_ABI_MINOR;
  for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
    if (ops_size >= sizes[i].size) return sizes[i].minor;
  }
  return 0;
}
