// SPDX-License-Identifier: MIT
//
// ABI checks: what the core recorded when it negotiated with the plugin
// (the load report), and the descriptor itself, read by calling the
// plugin's entry point again: sizes (which give the ABI minor the plugin
// was built with), required entries, optional entries set in pairs, and
// capabilities that need an entry.
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
  return conform_report(ctx, CONFORM_PASS,
                        "%s %s, ABI %u, priority %d, %u device(s)", r.name,
                        r.version, r.abi_version, r.priority, r.device_count);
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

static conform_result_t conform_abi_tables(conform_ctx_t* ctx,
                                           const void* arg) {
  (void)arg;
  void* handle = dlopen(ctx->plugin_path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    return conform_report(ctx, CONFORM_FAIL, "dlopen: %s", dlerror());
  }
  conform_result_t result = CONFORM_PASS;
  accel_plugin_entry_fn_t entry = NULL;
  void* sym = dlsym(handle, ACCEL_PLUGIN_ENTRY_NAME);
  memcpy(&entry, &sym, sizeof(entry));  // object to function pointer
  const accel_plugin_t* d = entry ? entry(ACCEL_PLUGIN_ABI_VERSION) : NULL;
  const accel_device_ops_t* ops = d ? d->device_ops : NULL;
  const accel_plugin_t* other =
      entry ? entry(ACCEL_PLUGIN_ABI_VERSION + 1) : NULL;
  const char* missing = NULL;
  size_t ops_1_1 = offsetof(accel_device_ops_t, op_fill);
  size_t ops_1_2 = offsetof(accel_device_ops_t, op_gemm_workspace);
  if (entry == NULL || d == NULL) {
    result = conform_report(ctx, CONFORM_FAIL, "no descriptor from %s",
                            ACCEL_PLUGIN_ENTRY_NAME);
  } else if (entry(ACCEL_PLUGIN_ABI_VERSION) != d) {
    result = conform_report(ctx, CONFORM_FAIL,
                            "the entry returns a different descriptor on "
                            "each call (it must be static)");
  } else if (d->abi_version != ACCEL_PLUGIN_ABI_VERSION ||
             d->struct_size < ACCEL_PLUGIN_MIN_SIZE || ops == NULL ||
             ops->struct_size < ACCEL_DEVICE_OPS_MIN_SIZE) {
    result = conform_report(ctx, CONFORM_FAIL,
                            "descriptor ABI %u, %u bytes; device ops %u "
                            "bytes",
                            d->abi_version, d->struct_size,
                            ops ? ops->struct_size : 0);
  } else if (other != NULL &&
             other->abi_version != ACCEL_PLUGIN_ABI_VERSION + 1) {
    result = conform_report(ctx, CONFORM_FAIL,
                            "the entry serves ABI %u with an ABI %u "
                            "descriptor (it must return NULL)",
                            ACCEL_PLUGIN_ABI_VERSION + 1, other->abi_version);
  } else if ((missing = conform_missing_required(ops)) != NULL) {
    result =
        conform_report(ctx, CONFORM_FAIL, "required entry %s is NULL", missing);
  } else if ((CONFORM_OP(ops, host_alloc) == NULL) !=
             (CONFORM_OP(ops, host_free) == NULL)) {
    result = conform_report(ctx, CONFORM_FAIL,
                            "host_alloc and host_free must be set together");
  } else if ((CONFORM_OP(ops, module_load) == NULL) !=
                 (CONFORM_OP(ops, module_unload) == NULL) ||
             (CONFORM_OP(ops, module_load) == NULL) !=
                 (CONFORM_OP(ops, module_function) == NULL) ||
             (CONFORM_OP(ops, module_load) == NULL) !=
                 (CONFORM_OP(ops, launch) == NULL)) {
    result = conform_report(ctx, CONFORM_FAIL,
                            "module_load, module_unload, module_function and "
                            "launch must be set together");
  } else if ((CONFORM_OP(ops, stream_begin_capture) == NULL) !=
                 (CONFORM_OP(ops, stream_end_capture) == NULL) ||
             (CONFORM_OP(ops, stream_begin_capture) == NULL) !=
                 (CONFORM_OP(ops, graph_launch) == NULL) ||
             (CONFORM_OP(ops, stream_begin_capture) == NULL) !=
                 (CONFORM_OP(ops, graph_destroy) == NULL)) {
    // The core would replay this plugin's graphs: not an error there, but
    // surely not what its author meant (plugin.h: set them together).
    result = conform_report(ctx, CONFORM_FAIL,
                            "stream_begin_capture, stream_end_capture, "
                            "graph_launch and graph_destroy must be set "
                            "together");
  } else {
    unsigned optional = 0;
    const char* names[] = {
        "host_alloc",       "copy_peer",        "can_access_peer",
        "event_elapsed_ms", "module_load",      "op_fill",
        "op_cast",          "op_scale",         "op_axpy",
        "op_add",           "op_mul",           "op_sum",
        "op_gemm",          "op_gemm_workspace"};
    const bool set[] = {CONFORM_OP(ops, host_alloc) != NULL,
                        CONFORM_OP(ops, copy_peer) != NULL,
                        CONFORM_OP(ops, can_access_peer) != NULL,
                        CONFORM_OP(ops, event_elapsed_ms) != NULL,
                        CONFORM_OP(ops, module_load) != NULL,
                        CONFORM_OP(ops, op_fill) != NULL,
                        CONFORM_OP(ops, op_cast) != NULL,
                        CONFORM_OP(ops, op_scale) != NULL,
                        CONFORM_OP(ops, op_axpy) != NULL,
                        CONFORM_OP(ops, op_add) != NULL,
                        CONFORM_OP(ops, op_mul) != NULL,
                        CONFORM_OP(ops, op_sum) != NULL,
                        CONFORM_OP(ops, op_gemm) != NULL,
                        CONFORM_OP(ops, op_gemm_workspace) != NULL};
    char list[256] = "";
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
      if (!set[i]) continue;
      optional++;
      size_t len = strlen(list);
      snprintf(list + len, sizeof(list) - len, "%s%s", len ? " " : "",
               names[i]);
    }
    result = conform_report(
        ctx, CONFORM_PASS,
        "descriptor %u bytes, device ops %u bytes (ABI 1.%u); %u optional: "
        "%s",
        d->struct_size, ops->struct_size,
        ops->struct_size > ops_1_2   ? 2u
        : ops->struct_size > ops_1_1 ? 1u
                                     : 0u,
        optional, optional ? list : "none");
  }
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
