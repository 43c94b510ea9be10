// SPDX-License-Identifier: MIT
//
// ACCEL_ALLOC_CONF (after PYTORCH_CUDA_ALLOC_CONF): comma-separated
// key:value settings of the caching allocator, read when a device is
// opened. The parser is strict (unknown keys, bad numbers and out-of-range
// values are errors naming the item), and a malformed setting is ignored
// as a whole with a warning, as a bad ACCEL_ALLOCATOR is.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

// Parses one number of `item` (NUL-terminated) into `*out`.
static bool accel__conf_number(const char* text, double* out) {
  if (text[0] == '\0') return false;
  char* end = NULL;
  errno = 0;
  double v = strtod(text, &end);
  if (errno != 0 || *end != '\0' || !(v == v)) return false;
  *out = v;
  return true;
}

// Applies `key` = `value` to `conf`; false with `why` set otherwise.
static bool accel__conf_item(accel__alloc_conf_t* conf, const char* key,
                             const char* value, char* why, size_t why_size) {
  double v = 0;
  if (!accel__conf_number(value, &v)) {
    snprintf(why, why_size, "'%s' is not a number (for %s)", value, key);
    return false;
  }
  if (strcmp(key, "memory_fraction") == 0) {
    if (!(v > 0 && v <= 1)) {
      snprintf(why, why_size, "memory_fraction %s is not in (0, 1]", value);
      return false;
    }
    conf->memory_fraction = v;
  } else if (strcmp(key, "garbage_collection_threshold") == 0) {
    if (!(v > 0 && v < 1)) {
      snprintf(why, why_size,
               "garbage_collection_threshold %s is not in (0, 1)", value);
      return false;
    }
    conf->gc_threshold = v;
  } else if (strcmp(key, "max_split_size_mb") == 0) {
    if (!(v >= 1 && v <= 1048576) || v != (double)(uint64_t)v) {
      snprintf(why, why_size,
               "max_split_size_mb %s is not a whole number of MiB in [1, "
               "1048576]",
               value);
      return false;
    }
    conf->max_split_size = (uint64_t)v << 20;
  } else if (strcmp(key, "roundup_power2_divisions") == 0) {
    uint64_t n = (uint64_t)v;
    if (!(v >= 1 && v <= 64) || v != (double)n || (n & (n - 1)) != 0) {
      snprintf(why, why_size,
               "roundup_power2_divisions %s is not a power of two in [1, 64]",
               value);
      return false;
    }
    conf->roundup_divisions = (uint32_t)n;
  } else {
    snprintf(why, why_size,
             "unknown key '%s' (known: memory_fraction, "
             "garbage_collection_threshold, max_split_size_mb, "
             "roundup_power2_divisions)",
             key);
    return false;
  }
  return true;
}

bool accel__alloc_conf_parse(const char* text, accel__alloc_conf_t* out,
                             char* why, size_t why_size) {
  memset(out, 0, sizeof(*out));
  why[0] = '\0';
  if (text == NULL) return true;
  char item[128];
  const char* p = text;
  while (*p != '\0') {
    const char* comma = strchr(p, ',');
    size_t len = comma != NULL ? (size_t)(comma - p) : strlen(p);
    if (len == 0 || len >= sizeof(item)) {
      snprintf(why, why_size, "%s item at offset %zu",
               len == 0 ? "empty" : "over-long", (size_t)(p - text));
      return false;
    }
    memcpy(item, p, len);
    item[len] = '\0';
    char* colon = strchr(item, ':');
    if (colon == NULL) {
      snprintf(why, why_size, "'%s' is not key:value", item);
      return false;
    }
    *colon = '\0';
    if (!accel__conf_item(out, item, colon + 1, why, why_size)) return false;
    p += len;
    if (*p == ',' && *++p == '\0') {
      snprintf(why, why_size, "trailing comma");
      return false;
    }
  }
  return true;
}
