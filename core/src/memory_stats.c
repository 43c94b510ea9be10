// SPDX-License-Identifier: MIT
//
// Public memory statistics and controls of a device's caching allocator
// (allocator*.c): the stats struct, the summary table, empty-cache and peak
// reset.
#include <stdio.h>
#include <string.h>

#include "internal.h"

static accel_status_t accel__check_device_arg(const char* what,
                                              const accel_device_t* device) {
  if (device == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: device is NULL",
                       what);
  }
  return ACCEL_OK;
}

accel_status_t accel_device_query_memory_stats(
    accel_device_t* device, accel_memory_stats_t* out_stats) {
  static const char what[] = "accel_device_query_memory_stats";
  accel_status_t status = accel__check_device_arg(what, device);
  if (status != ACCEL_OK) return status;
  if (out_stats == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: out_stats is NULL",
                       what);
  }
  // Callers built against an older, shorter struct get the fields that fit;
  // this is the first version, so it is also the smallest accepted.
  if (out_stats->struct_size < sizeof(accel_memory_stats_t)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: out_stats->struct_size is %u; set it to "
                       "sizeof(accel_memory_stats_t) (%zu)",
                       what, out_stats->struct_size,
                       sizeof(accel_memory_stats_t));
  }
  accel_memory_stats_t stats;
  bool caching = true;
  accel__allocator_stats(device, &stats, &caching);
  stats.struct_size = (uint32_t)sizeof(stats);
  memcpy(out_stats, &stats, sizeof(stats));
  return ACCEL_OK;
}

accel_status_t accel_device_query_allocator_info(
    accel_device_t* device, accel_allocator_info_t* out_info) {
  static const char what[] = "accel_device_query_allocator_info";
  accel_status_t status = accel__check_device_arg(what, device);
  if (status != ACCEL_OK) return status;
  if (out_info == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: out_info is NULL",
                       what);
  }
  if (out_info->struct_size < sizeof(accel_allocator_info_t)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: out_info->struct_size is %u; set it to "
                       "sizeof(accel_allocator_info_t) (%zu)",
                       what, out_info->struct_size,
                       sizeof(accel_allocator_info_t));
  }
  accel_allocator_info_t info;
  memset(&info, 0, sizeof(info));
  accel__allocator_info(device, &info);
  info.struct_size = (uint32_t)sizeof(info);
  memcpy(out_info, &info, sizeof(info));
  return ACCEL_OK;
}

accel_status_t accel_device_empty_cache(accel_device_t* device) {
  accel_status_t status =
      accel__check_device_arg("accel_device_empty_cache", device);
  if (status != ACCEL_OK) return status;
  accel__allocator_empty_cache(device);
  accel__host_pool_trim(device);
  return ACCEL_OK;
}

accel_status_t accel_device_reset_peak_memory_stats(accel_device_t* device) {
  accel_status_t status =
      accel__check_device_arg("accel_device_reset_peak_memory_stats", device);
  if (status != ACCEL_OK) return status;
  accel__allocator_reset_peaks(device);
  return ACCEL_OK;
}

accel_status_t accel_device_reset_accumulated_memory_stats(
    accel_device_t* device) {
  accel_status_t status = accel__check_device_arg(
      "accel_device_reset_accumulated_memory_stats", device);
  if (status != ACCEL_OK) return status;
  accel__allocator_reset_accumulated(device);
  return ACCEL_OK;
}

// snprintf-style appender: writes what fits, counts everything.
typedef struct accel__text {
  char* buf;
  size_t size;
  size_t length;
} accel__text_t;

static void accel__text_add(accel__text_t* t, const char* format, ...)
    ACCEL__PRINTF(2, 3);

static void accel__text_add(accel__text_t* t, const char* format, ...) {
  va_list args;
  va_start(args, format);
  char* at = t->length < t->size ? t->buf + t->length : NULL;
  size_t room = t->length < t->size ? t->size - t->length : 0;
  int n = vsnprintf(at, room, format, args);
  va_end(args);
  if (n > 0) t->length += (size_t)n;
}

// One "| name | current | peak |" row; `bytes` formats as a size.
static void accel__text_row(accel__text_t* t, const char* name, bool bytes,
                            uint64_t current, const uint64_t* peak) {
  char cur[32], pk[32] = "";
  if (bytes) {
    accel__format_bytes(cur, sizeof(cur), current);
    if (peak != NULL) accel__format_bytes(pk, sizeof(pk), *peak);
  } else {
    snprintf(cur, sizeof(cur), "%llu", (unsigned long long)current);
    if (peak != NULL) {
      snprintf(pk, sizeof(pk), "%llu", (unsigned long long)*peak);
    }
  }
  accel__text_add(t, "| %-28s | %16s | %16s |\n", name, cur, pk);
}

accel_status_t accel_device_memory_summary(accel_device_t* device, char* buf,
                                           size_t size, size_t* out_length) {
  static const char what[] = "accel_device_memory_summary";
  if (out_length != NULL) *out_length = 0;
  accel_status_t status = accel__check_device_arg(what, device);
  if (status != ACCEL_OK) return status;
  if (out_length == NULL || (buf == NULL && size != 0)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: out_length is required, and buf unless size is 0",
                       what);
  }
  accel_memory_stats_t s;
  bool caching = true;
  accel__allocator_stats(device, &s, &caching);
  uint64_t host_used = 0, host_used_bytes = 0, host_cached = 0,
           host_cached_bytes = 0;
  accel__host_pool_counts(device, &host_used, &host_used_bytes, &host_cached,
                          &host_cached_bytes);

  static const char rule[] =
      "|==============================================================="
      "=====|\n";
  static const char line[] =
      "|---------------------------------------------------------------"
      "-----|\n";
  accel__text_t t = {.buf = buf, .size = size, .length = 0};
  accel__text_add(&t, "%s", rule);
  accel__text_add(&t, "| %-66s |\n", "accel memory summary");
  char title[128];
  snprintf(title, sizeof(title), "device %s, %s allocator", device->uri,
           caching ? "caching" : "raw (ACCEL_ALLOCATOR=raw)");
  accel__text_add(&t, "| %-66s |\n", title);
  accel__text_add(&t, "%s", rule);
  accel__text_add(&t, "| %-28s | %16s | %16s |\n", "metric", "current", "peak");
  accel__text_add(&t, "%s", line);
  accel__text_row(&t, "allocated memory", true, s.allocated_bytes,
                  &s.allocated_bytes_peak);
  accel__text_row(&t, "reserved memory", true, s.reserved_bytes,
                  &s.reserved_bytes_peak);
  accel__text_row(&t, "active blocks", false, s.active_blocks,
                  &s.active_blocks_peak);
  accel__text_row(&t, "requested memory", true, s.requested_bytes, NULL);
  accel__text_row(&t, "inactive split memory", true, s.inactive_split_bytes,
                  NULL);
  accel_allocator_info_t info;
  memset(&info, 0, sizeof(info));
  accel__allocator_info(device, &info);
  if (info.max_split_size != 0) {
    accel__text_row(&t, "oversize allocations", false,
                    info.oversize_allocations, &info.oversize_allocations_peak);
    accel__text_row(&t, "oversize segments", false, info.oversize_segments,
                    &info.oversize_segments_peak);
  }
  accel__text_add(&t, "%s", line);
  accel__text_add(&t, "| %-28s | %16s | %16s |\n", "event", "count", "");
  accel__text_add(&t, "%s", line);
  accel__text_row(&t, "raw allocations", false, s.raw_allocs, NULL);
  accel__text_row(&t, "raw frees", false, s.raw_frees, NULL);
  accel__text_row(&t, "cache hits", false, s.cache_hits, NULL);
  accel__text_row(&t, "cache misses", false, s.cache_misses, NULL);
  accel__text_row(&t, "OOM retries", false, s.oom_retries, NULL);
  accel__text_row(&t, "OOMs", false, s.ooms, NULL);
  accel__text_add(&t, "%s", line);
  accel__text_add(&t, "| %-28s | %16s | %16s |\n", "pinned host memory",
                  "blocks", "bytes");
  accel__text_add(&t, "%s", line);
  char used_text[32], cached_text[32];
  accel__format_bytes(used_text, sizeof(used_text), host_used_bytes);
  accel__format_bytes(cached_text, sizeof(cached_text), host_cached_bytes);
  accel__text_add(&t, "| %-28s | %16llu | %16s |\n", "in use",
                  (unsigned long long)host_used, used_text);
  accel__text_add(&t, "| %-28s | %16llu | %16s |\n", "cached",
                  (unsigned long long)host_cached, cached_text);
  accel__text_add(&t, "%s", rule);
  *out_length = t.length;
  return ACCEL_OK;
}

// Writes one segment or block of the snapshot (see accel__allocator_visit).
typedef struct accel__snapshot {
  accel__text_t text;
  size_t segments;
  size_t blocks;  // of the current segment
} accel__snapshot_t;

static void accel__snapshot_item(void* ctx, const accel__snapshot_item_t* it) {
  accel__snapshot_t* s = ctx;
  char stream[32] = "null";
  if (it->stream != NULL) {
    snprintf(stream, sizeof(stream), "\"%p\"", it->stream);
  }
  if (it->is_segment) {
    accel__text_add(&s->text,
                    "%s\n    {\"size\": %zu, \"kind\": \"%s\", "
                    "\"stream\": %s, \"blocks\": [",
                    s->segments == 0 ? "" : "]},", it->size, it->state,
                    stream);
    s->segments++;
    s->blocks = 0;
    return;
  }
  accel__text_add(&s->text,
                  "%s\n      {\"offset\": %zu, \"size\": %zu, "
                  "\"requested\": %zu, \"state\": \"%s\", "
                  "\"stream\": %s}",
                  s->blocks == 0 ? "" : ",", it->offset, it->size,
                  it->requested, it->state, stream);
  s->blocks++;
}

accel_status_t accel_device_memory_snapshot(accel_device_t* device, char* buf,
                                            size_t size, size_t* out_length) {
  static const char what[] = "accel_device_memory_snapshot";
  if (out_length != NULL) *out_length = 0;
  accel_status_t status = accel__check_device_arg(what, device);
  if (status != ACCEL_OK) return status;
  if (out_length == NULL || (buf == NULL && size != 0)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: out_length is required, and buf unless size is 0",
                       what);
  }
  accel__snapshot_t s = {.text = {.buf = buf, .size = size, .length = 0}};
  accel__text_add(&s.text, "{\"device\": \"%s\", \"segments\": [",
                  device->uri);
  accel__allocator_visit(device, accel__snapshot_item, &s);
  accel__text_add(&s.text, "%s]}\n", s.segments == 0 ? "" : "\n    ]}\n  ");
  *out_length = s.text.length;
  return ACCEL_OK;
}
