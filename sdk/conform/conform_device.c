// SPDX-License-Identifier: MIT
//
// Device checks: enumeration through the core (every index opens, one past
// the end does not) and the properties a user reads.
#include <stdio.h>
#include <string.h>

#include "conform.h"

static conform_result_t conform_device_enumerate(conform_ctx_t* ctx,
                                                 const void* arg) {
  (void)arg;
  const char* backend = accel_device_backend(ctx->device);
  uint32_t n = 0;
  char uri[64];
  for (;; n++) {
    snprintf(uri, sizeof(uri), "%s:%u", backend, n);
    accel_device_t* d = NULL;
    accel_status_t status = accel_device_open(uri, &d);
    if (status == ACCEL_ERROR_NOT_FOUND) break;
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, uri);
    char got[64];
    snprintf(got, sizeof(got), "%s", accel_device_uri(d));
    bool same_index = accel_device_index(d) == n;
    accel_device_release(d);
    if (strcmp(got, uri) != 0 || !same_index) {
      return conform_report(ctx, CONFORM_FAIL, "%s opened as %s", uri, got);
    }
    if (n == 1024) {
      return conform_report(ctx, CONFORM_FAIL, "more than 1024 devices");
    }
  }
  if (n == 0) return conform_report(ctx, CONFORM_FAIL, "no device opens");
  return conform_report(ctx, CONFORM_PASS, "%u device(s); %s is NOT_FOUND", n,
                        uri);
}

static conform_result_t conform_device_props(conform_ctx_t* ctx,
                                             const void* arg) {
  (void)arg;
  accel_device_info_t info = {.struct_size = sizeof(info)};
  accel_status_t status = accel_device_query_info(ctx->device, &info);
  if (status != ACCEL_OK) {
    return conform_fail_status(ctx, status, "accel_device_query_info");
  }
  if (info.name[0] == '\0' || info.arch[0] == '\0' || info.vendor[0] == '\0') {
    return conform_report(ctx, CONFORM_FAIL,
                          "name '%s', vendor '%s', arch '%s': none may be "
                          "empty",
                          info.name, info.vendor, info.arch);
  }
  if (strcmp(info.uri, accel_device_uri(ctx->device)) != 0) {
    return conform_report(ctx, CONFORM_FAIL, "uri '%s', expected '%s'",
                          info.uri, accel_device_uri(ctx->device));
  }
  if (info.total_memory == 0 || info.compute_units == 0 ||
      info.max_threads_per_block == 0) {
    return conform_report(ctx, CONFORM_FAIL,
                          "total_memory %llu, compute_units %u, "
                          "max_threads_per_block %u: none may be 0",
                          (unsigned long long)info.total_memory,
                          info.compute_units, info.max_threads_per_block);
  }
  if (info.type != ACCEL_DEVICE_TYPE_CPU &&
      info.type != ACCEL_DEVICE_TYPE_GPU &&
      info.type != ACCEL_DEVICE_TYPE_OTHER) {
    return conform_report(ctx, CONFORM_FAIL, "unknown device type %d",
                          (int)info.type);
  }
  return conform_report(ctx, CONFORM_PASS, "%s (%s, %s), %u units, %llu MiB",
                        info.name, info.vendor, info.arch, info.compute_units,
                        (unsigned long long)(info.total_memory >> 20));
}

static conform_result_t conform_device_memory(conform_ctx_t* ctx,
                                              const void* arg) {
  (void)arg;
  uint64_t free_bytes = 0, total = 0;
  accel_status_t status =
      accel_device_query_memory(ctx->device, &free_bytes, &total);
  if (status != ACCEL_OK) {
    return conform_fail_status(ctx, status, "accel_device_query_memory");
  }
  if (total == 0 || free_bytes > total) {
    return conform_report(ctx, CONFORM_FAIL,
                          "free %llu, total %llu: need 0 < total, free <= "
                          "total",
                          (unsigned long long)free_bytes,
                          (unsigned long long)total);
  }
  return conform_report(ctx, CONFORM_PASS, "%llu of %llu MiB free",
                        (unsigned long long)(free_bytes >> 20),
                        (unsigned long long)(total >> 20));
}

static const conform_check_t conform_device[] = {
    {"device.enumerate", conform_device_enumerate, NULL},
    {"device.props", conform_device_props, NULL},
    {"device.memory_info", conform_device_memory, NULL},
};

const conform_check_t* conform_device_checks(size_t* out_count) {
  *out_count = sizeof(conform_device) / sizeof(conform_device[0]);
  return conform_device;
}
