// SPDX-License-Identifier: MIT
//
// ABI checks: what the core recorded when it negotiated with the plugin
// (the load report), and the descriptor itself, read by calling the
// plugin's entry point again: sizes (which give the ABI minor the plugin
// was built with, 1.0 to 1.4 or newer), required entries, optional entries
// that go together, and capabilities that need an entry.
#include <accel/plugin.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

static bool conform_report_of(const char* path, accel_plugin_report_t* out) {
  size_t count = 0;
  if (accel_plugin_report_count(&count) != ACCEL_OK) return false;
  for (size_t i = 0; i < count; i++) {
    out->struct_size = sizeof(*out);
    if (accel_plugin_report_get(i, out) == ACCEL_OK &&
        strcmp(out->path, path) == 0) {
      return true;
    }
  }
  return false;
}

static bool conform_valid_name(const char* name) {
  size_t n = strlen(name);
  if (n == 0 || n > 31) return false;
  for (size_t i = 0; i < n; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) {
      return false;
    }
  }
  return true;
}

static conform_result_t conform_abi_load_report(conform_ctx_t* ctx,
                                                const void* arg) {
  (void)arg;
  accel_plugin_report_t r;
  if (!conform_report_of(ctx->plugin_path, &r)) {
    return conform_report(ctx, CONFORM_FAIL, "%s is not in the load report",
                          ctx->plugin_path);
  }
  if (r.stage != ACCEL_PLUGIN_STAGE_INITIALISED || r.status != ACCEL_OK) {
    return conform_report(ctx, CONFORM_FAIL, "stage %d, %s: %s", (int)r.stage,
                          accel_status_string(r.status), r.message);
  }
  if (r.abi_version != ACCEL_PLUGIN_ABI_VERSION) {
    return conform_report(ctx, CONFORM_FAIL, "ABI %u, expected %u",
                          r.abi_version, ACCEL_PLUGIN_ABI_VERSION);
  }
  if (!conform_valid_name(r.name)) {
    return conform_report(ctx, CONFORM_FAIL, "name '%s' is not [a-z0-9_]{1,31}",
                          r.name);
  }
  if (r.version[0] == '\0') {
    return conform_report(ctx, CONFORM_FAIL, "empty version string");
  }
  // The core's minor is not in the public API: the SDK's is that of the
  // <accel/plugin.h> this suite was built with, which ships with the core.
  return conform_report(ctx, CONFORM_PASS,
                        "%s %s, ABI %u.%u (SDK %u.%u), priority %d, %u "
                        "device(s)",
                        r.name, r.version, r.abi_version, r.abi_minor,
                        ACCEL_PLUGIN_ABI_VERSION, ACCEL_PLUGIN_ABI_MINOR,
                        r.priority, r.device_count);
}

// Names the first required device op that is NULL, or NULL if none is.
static const char* conform_missing_required(const accel_device_ops_t* ops) {
#define CONFORM_REQUIRE(field) \
  if (ops->field == NULL) return #field
  CONFORM_REQUIRE(query_props);
  CONFORM_REQUIRE(mem_info);
  CONFORM_REQUIRE(mem_alloc);
  CONFORM_REQUIRE(mem_free);
  CONFORM_REQUIRE(copy_h2d);
  CONFORM_REQUIRE(copy_d2h);
  CONFORM_REQUIRE(copy_d2d);
  CONFORM_REQUIRE(memset);
  CONFORM_REQUIRE(stream_create);
  CONFORM_REQUIRE(stream_destroy);
  CONFORM_REQUIRE(stream_synchronize);
  CONFORM_REQUIRE(stream_query);
  CONFORM_REQUIRE(stream_wait_event);
  CONFORM_REQUIRE(event_create);
  CONFORM_REQUIRE(event_destroy);
  CONFORM_REQUIRE(event_record);
  CONFORM_REQUIRE(event_synchronize);
  CONFORM_REQUIRE(event_query);
#undef CONFORM_REQUIRE
  return NULL;
}

// Reads `field` of `ops` as the core would: NULL when the plugin's table
// is too small to hold it.
#define CONFORM_OP(ops, field)                                             \
  (ACCEL_PLUGIN_HAS_FIELD((ops), accel_device_ops_t, field) ? (ops)->field \
                                                            : NULL)
#define CONFORM_SET(ops, field) (CONFORM_OP(ops, field) != NULL)

// sizeof(accel_device_ops_t) in the header of each ABI 1.N: everything
// before the first entry 1.N+1 appended (plugin.h's "since ABI" markers),
// and the whole table for the newest minor this SDK has. Tables are
// append-only and a plugin sets `struct_size` to sizeof at build time, so
// its size is one of these, or larger when built with a newer header.
static const struct {
  uint32_t minor;
  size_t size;
} conform_ops_sizes[] = {
    {0, offsetof(accel_device_ops_t, op_fill)},
    {1, offsetof(accel_device_ops_t, op_gemm_workspace)},
    {2, offsetof(accel_device_ops_t, mem_address)},
    {3, offsetof(accel_device_ops_t, native_handle)},
    {4, sizeof(accel_device_ops_t)},
};
// A minor appended to <accel/plugin.h> needs its row above, and its
// optional entries and groups in conform_abi_optional() and
// conform_abi_group_split() (until 2026-11-29 this check knew 1.0-1.2 and
// called every 1.3 and 1.4 table 1.2).
_Static_assert(ACCEL_PLUGIN_ABI_MINOR == 4,
               "accel-conform's abi.tables does not know this ABI minor");

#define CONFORM_OPS_SIZES \
  (sizeof(conform_ops_sizes) / sizeof(conform_ops_sizes[0]))
#define CONFORM_OPS_NEWER (ACCEL_PLUGIN_ABI_MINOR + 1)

// The newest ABI minor whose whole table fits in `size` bytes, and in
// `*out_extra` the bytes past it: 0 for a released header; entries of the
// next minor for a header taken while that minor was being appended to (a
// plugin built then keeps loading, and keeps passing);
// CONFORM_OPS_NEWER for a table past this SDK's. -1 for a size that is
// not a whole number of entries.
static int conform_ops_minor(size_t size, size_t* out_extra) {
  *out_extra = 0;
  if (size % sizeof(accel_plugin_op_fill_fn*) != 0) return -1;
  size_t last = conform_ops_sizes[CONFORM_OPS_SIZES - 1].size;
  if (size > last) {
    *out_extra = size - last;
    return CONFORM_OPS_NEWER;
  }
  size_t i = CONFORM_OPS_SIZES - 1;
  while (i > 0 && conform_ops_sizes[i].size > size) i--;
  *out_extra = size - conform_ops_sizes[i].size;
  return (int)conform_ops_sizes[i].minor;
}

// Optional entries that plugin.h says go together ("Must be set with",
// "Set with"), or that the loader takes only together. Writes the first
// group set in part to `out` and returns true; false when none is.
static bool conform_abi_group_split(const accel_device_ops_t* ops, char* out,
                                    size_t out_size) {
  static const char refused[] = "the core refuses to load such a plugin";
  const struct {
    const char* names[4];  // NULL after the last
    bool set[4];
    const char* effect;
  } groups[] = {
      {{"host_alloc", "host_free"},
       {CONFORM_SET(ops, host_alloc), CONFORM_SET(ops, host_free)},
       refused},
      {{"module_load", "module_unload", "module_function", "launch"},
       {CONFORM_SET(ops, module_load), CONFORM_SET(ops, module_unload),
        CONFORM_SET(ops, module_function), CONFORM_SET(ops, launch)},
       refused},
      // -- ABI 1.4 --
      {{"host_register", "host_unregister"},
       {CONFORM_SET(ops, host_register), CONFORM_SET(ops, host_unregister)},
       refused},
      {{"stream_priority_range", "stream_create_priority"},
       {CONFORM_SET(ops, stream_priority_range),
        CONFORM_SET(ops, stream_create_priority)},
       refused},
      // Not refused: the core would replay this plugin's graphs, surely
      // not what its author meant.
      {{"stream_begin_capture", "stream_end_capture", "graph_launch",
        "graph_destroy"},
       {CONFORM_SET(ops, stream_begin_capture),
        CONFORM_SET(ops, stream_end_capture), CONFORM_SET(ops, graph_launch),
        CONFORM_SET(ops, graph_destroy)},
       "the core ignores them and replays its own record of each graph"},
  };
  for (size_t g = 0; g < sizeof(groups) / sizeof(groups[0]); g++) {
    size_t n = 0, set = 0;
    while (n < 4 && groups[g].names[n] != NULL) set += groups[g].set[n++];
    if (set == 0 || set == n) continue;
    char all[128] = "", unset[128] = "";
    for (size_t i = 0; i < n; i++) {
      const char* sep = i == 0 ? "" : i + 1 < n ? ", " : " and ";
      size_t len = strlen(all);
      snprintf(all + len, sizeof(all) - len, "%s%s", sep, groups[g].names[i]);
      if (groups[g].set[i]) continue;
      len = strlen(unset);
      snprintf(unset + len, sizeof(unset) - len, "%s%s", len ? " " : "",
               groups[g].names[i]);
    }
    snprintf(out, out_size, "%s must be set together, but NULL here: %s; %s",
             all, unset, groups[g].effect);
    return true;
  }
  return false;
}

// The optional entries `ops` sets, space-separated into `out` in table
// order (one name for a group set together); returns how many.
static unsigned conform_abi_optional(const accel_device_ops_t* ops, char* out,
                                     size_t out_size) {
  const struct {
    const char* name;
    bool set;
  } entries[] = {
#define CONFORM_ENTRY(field) {#field, CONFORM_SET(ops, field)}
      CONFORM_ENTRY(host_alloc),
      CONFORM_ENTRY(copy_peer),
      CONFORM_ENTRY(can_access_peer),
      CONFORM_ENTRY(event_elapsed_ms),
      CONFORM_ENTRY(module_load),
      // -- ABI 1.1 --
      CONFORM_ENTRY(op_fill),
      CONFORM_ENTRY(op_cast),
      CONFORM_ENTRY(op_scale),
      CONFORM_ENTRY(op_axpy),
      CONFORM_ENTRY(op_add),
      CONFORM_ENTRY(op_mul),
      CONFORM_ENTRY(op_sum),
      CONFORM_ENTRY(op_gemm),
      // -- ABI 1.2 --
      CONFORM_ENTRY(op_gemm_workspace),
      // -- ABI 1.3 --
      CONFORM_ENTRY(mem_address),
      CONFORM_ENTRY(mem_wrap),
      CONFORM_ENTRY(mem_unwrap),
      CONFORM_ENTRY(op_rng),
      // -- ABI 1.4 --
      CONFORM_ENTRY(native_handle),
      CONFORM_ENTRY(host_register),
      CONFORM_ENTRY(launch_host_func),
      CONFORM_ENTRY(stream_priority_range),
      CONFORM_ENTRY(stream_begin_capture),
      CONFORM_ENTRY(op_unary),
      CONFORM_ENTRY(op_bias_add),
      CONFORM_ENTRY(op_gemm_batched),
#undef CONFORM_ENTRY
  };
  unsigned count = 0;
  out[0] = '\0';
  for (size_t i = 0; i < sizeof(entries) / sizeof(entries[0]); i++) {
    if (!entries[i].set) continue;
    count++;
    size_t len = strlen(out);
    snprintf(out + len, out_size - len, "%s%s", len ? " " : "",
             entries[i].name);
  }
  return count;
}

// The descriptor from `entry` and its device ops, against plugin.h.
static conform_result_t conform_abi_descriptor(conform_ctx_t* ctx,
                                               accel_plugin_entry_fn_t entry) {
  const accel_plugin_t* d = entry ? entry(ACCEL_PLUGIN_ABI_VERSION) : NULL;
  const accel_device_ops_t* ops = d ? d->device_ops : NULL;
  const accel_plugin_t* other =
      entry ? entry(ACCEL_PLUGIN_ABI_VERSION + 1) : NULL;
  const char* missing = NULL;
  char text[400];
  if (entry == NULL || d == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "no descriptor from %s",
                          ACCEL_PLUGIN_ENTRY_NAME);
  }
  if (entry(ACCEL_PLUGIN_ABI_VERSION) != d) {
    return conform_report(ctx, CONFORM_FAIL,
                          "the entry returns a different descriptor on "
                          "each call (it must be static)");
  }
  if (d->abi_version != ACCEL_PLUGIN_ABI_VERSION ||
      d->struct_size < ACCEL_PLUGIN_MIN_SIZE || ops == NULL ||
      ops->struct_size < ACCEL_DEVICE_OPS_MIN_SIZE) {
    return conform_report(ctx, CONFORM_FAIL,
                          "descriptor ABI %u, %u bytes; device ops %u "
                          "bytes",
                          d->abi_version, d->struct_size,
                          ops ? ops->struct_size : 0);
  }
  if (other != NULL && other->abi_version != ACCEL_PLUGIN_ABI_VERSION + 1) {
    return conform_report(ctx, CONFORM_FAIL,
                          "the entry serves ABI %u with an ABI %u "
                          "descriptor (it must return NULL)",
                          ACCEL_PLUGIN_ABI_VERSION + 1, other->abi_version);
  }
  size_t extra = 0;
  int minor = conform_ops_minor(ops->struct_size, &extra);
  if (minor < 0) {
    return conform_report(ctx, CONFORM_FAIL,
                          "device ops %u bytes: not a whole number of "
                          "entries; struct_size must be "
                          "sizeof(accel_device_ops_t)",
                          ops->struct_size);
  }
  if ((missing = conform_missing_required(ops)) != NULL) {
    return conform_report(ctx, CONFORM_FAIL, "required entry %s is NULL",
                          missing);
  }
  if (conform_abi_group_split(ops, text, sizeof(text))) {
    return conform_report(ctx, CONFORM_FAIL, "%s", text);
  }
  unsigned optional = conform_abi_optional(ops, text, sizeof(text));
  char abi[160];
  if (minor == CONFORM_OPS_NEWER) {
    snprintf(abi, sizeof(abi),
             "newer than ABI 1.%u: entries past %zu bytes not checked",
             ACCEL_PLUGIN_ABI_MINOR, sizeof(accel_device_ops_t));
  } else if (extra > 0) {
    snprintf(abi, sizeof(abi),
             "ABI 1.%d and %zu entries of 1.%d: a header from before 1.%d "
             "was complete",
             minor, extra / sizeof(accel_plugin_op_fill_fn*), minor + 1,
             minor + 1);
  } else {
    snprintf(abi, sizeof(abi), "ABI 1.%d", minor);
  }
  return conform_report(ctx, CONFORM_PASS,
                        "descriptor %u bytes, device ops %u bytes (%s); %u "
                        "optional: %s",
                        d->struct_size, ops->struct_size, abi, optional,
                        optional ? text : "none");
}

static conform_result_t conform_abi_tables(conform_ctx_t* ctx,
                                           const void* arg) {
  (void)arg;
  void* handle = dlopen(ctx->plugin_path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "dlopen: %s", dlerror());
  }
  accel_plugin_entry_fn_t entry = NULL;
  void* sym = dlsym(handle, ACCEL_PLUGIN_ENTRY_NAME);
  memcpy(&entry, &sym, sizeof(entry));  // object to function pointer
  conform_result_t result = conform_abi_descriptor(ctx, entry);
  dlclose(handle);
  return result;
}

// Capabilities that promise an entry: claiming one without it is a bug.
// The caps are the plugin's own, from query_props through its table
// (direct.c): the core's device info drops pinned_memory, event_timing
// and kernels when their entries are missing, so a claim read there never
// shows (until 2026-11-29 this check read them there and could not fail).
static const char* conform_abi_caps_broken(accel_device_caps_t caps,
                                           const accel_device_ops_t* ops) {
  const struct {
    accel_device_caps_t cap;
    bool has_entry;
    const char* what;
  } rules[] = {
      {ACCEL_DEVICE_CAP_EVENT_TIMING, CONFORM_OP(ops, event_elapsed_ms) != NULL,
       "event_timing without event_elapsed_ms"},
      {ACCEL_DEVICE_CAP_KERNELS, CONFORM_OP(ops, module_load) != NULL,
       "kernels without module_load"},
      {ACCEL_DEVICE_CAP_PINNED_MEMORY, CONFORM_OP(ops, host_alloc) != NULL,
       "pinned_memory without host_alloc"},
      {ACCEL_DEVICE_CAP_PEER_ACCESS, CONFORM_OP(ops, copy_peer) != NULL,
       "peer_access without copy_peer"},
      // plugin.h, mem_address: a host-accessible device promises its
      // buffer addresses are host pointers, so it must be able to give them.
      {ACCEL_DEVICE_CAP_HOST_ACCESSIBLE, CONFORM_OP(ops, mem_address) != NULL,
       "host_accessible without mem_address"},
  };
  for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
    if ((caps & rules[i].cap) && !rules[i].has_entry) return rules[i].what;
  }
  return NULL;
}

static conform_result_t conform_abi_caps(conform_ctx_t* ctx, const void* arg) {
  (void)arg;
  conform_direct_t d;
  if (conform_direct_open(ctx, &d) != CONFORM_PASS) return CONFORM_FAIL;
  accel_plugin_device_props_t props;
  accel_status_t status = conform_direct_props(&d, &props);
  conform_result_t result = CONFORM_PASS;
  const char* broken = NULL;
  if (status != ACCEL_OK) {
    result =
        conform_report(ctx, CONFORM_FAIL, "query_props: %s: %s",
                       accel_status_string(status), conform_direct_message());
  } else if ((broken = conform_abi_caps_broken(props.caps, d.ops)) != NULL) {
    result = conform_report(
        ctx, CONFORM_FAIL, "query_props claims %s (the entry is NULL)", broken);
  } else {
    char list[256] = "";
    for (uint32_t bit = 0; bit < 32; bit++) {
      const char* name =
          (props.caps >> bit) & 1u ? accel_device_cap_name(1u << bit) : NULL;
      size_t len = strlen(list);
      if (name) snprintf(list + len, sizeof(list) - len, " %s", name);
    }
    result =
        conform_report(ctx, CONFORM_PASS, "caps:%s", list[0] ? list : " none");
  }
  conform_direct_close(&d);
  return result;
}

static const conform_check_t conform_abi[] = {
    {"abi.load_report", conform_abi_load_report, NULL},
    {"abi.tables", conform_abi_tables, NULL},
    {"abi.caps_entries", conform_abi_caps, NULL},
};

const conform_check_t* conform_abi_checks(size_t* out_count) {
  *out_count = sizeof(conform_abi) / sizeof(conform_abi[0]);
  return conform_abi;
}
