// SPDX-License-Identifier: MIT
//
// Loading one plugin: dlopen, entry, validation, default filling, load(),
// device count. Each step records how far it got in the load report, so a
// broken plugin explains itself and never stops the others.
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "ops_internal.h"
#include "trace.h"

// Records the outcome of loading `plugin`. The message is formatted into
// the report (the load report outlives any thread-local message).
static void accel__plugin_set(accel__plugin_t* plugin, accel_status_t status,
                              const char* format, ...) ACCEL__PRINTF(3, 4);

static void accel__plugin_set(accel__plugin_t* plugin, accel_status_t status,
                              const char* format, ...) {
  char text[1024];
  va_list args;
  va_start(args, format);
  vsnprintf(text, sizeof(text), format, args);
  va_end(args);
  free(plugin->message);
  plugin->message = accel__strdup(text);
  plugin->status = status;
}

// ---------------------------------------------------------------------------
// Core defaults for optional entries.
// ---------------------------------------------------------------------------

static accel_status_t accel__default_host_alloc(void* device, size_t size,
                                                void** out_ptr) {
  (void)device;
  size_t rounded = (size + 63) & ~(size_t)63;
  if (rounded < size) {
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                       "host allocation of %zu bytes is too large", size);
  }
  *out_ptr = aligned_alloc(64, rounded);
  if (*out_ptr == NULL) {
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                       "host allocation of %zu bytes failed", size);
  }
  return ACCEL_OK;
}

static void accel__default_host_free(void* device, void* ptr) {
  (void)device;
  free(ptr);
}

static accel_status_t accel__default_can_access_peer(void* device,
                                                     void* peer_device,
                                                     bool* out_can) {
  (void)device;
  (void)peer_device;
  *out_can = false;
  return ACCEL_OK;
}

static accel_status_t accel__default_elapsed(void* start, void* end,
                                             float* out_ms) {
  (void)start;
  (void)end;
  *out_ms = 0.0f;
  return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                     "this backend's events cannot measure time");
}

static accel_status_t accel__default_module_load(void* device,
                                                 const void* image, size_t size,
                                                 void** out_module) {
  (void)device;
  (void)image;
  (void)size;
  *out_module = NULL;
  return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                     "this backend does not load kernel modules");
}

static void accel__default_module_unload(void* module) { (void)module; }

static accel_status_t accel__default_module_function(void* module,
                                                     const char* name,
                                                     void** out_function) {
  (void)module;
  (void)name;
  *out_function = NULL;
  return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                     "this backend does not load kernel modules");
}

static accel_status_t accel__default_launch(
    void* function, void* stream, const accel_plugin_launch_t* launch) {
  (void)function;
  (void)stream;
  (void)launch;
  return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                     "this backend does not launch kernels");
}

// Built-in ops a plugin leaves NULL. The stub cannot name the device; the
// core's op functions add it to the message on the failure path.
static accel_status_t accel__op_unsupported(const char* op) {
  return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                     "%s is not implemented by this backend", op);
}

static accel_status_t accel__default_op_fill(void* device, void* stream,
                                             void* dst, uint64_t dst_offset,
                                             uint32_t dtype, uint64_t count,
                                             double value) {
  (void)device, (void)stream, (void)dst, (void)dst_offset, (void)dtype;
  (void)count, (void)value;
  return accel__op_unsupported("fill");
}

static accel_status_t accel__default_op_cast(
    void* device, void* stream, void* dst, uint64_t dst_offset,
    uint32_t dst_dtype, const void* src, uint64_t src_offset,
    uint32_t src_dtype, uint64_t count) {
  (void)device, (void)stream, (void)dst, (void)dst_offset, (void)dst_dtype;
  (void)src, (void)src_offset, (void)src_dtype, (void)count;
  return accel__op_unsupported("cast");
}

static accel_status_t accel__default_op_scale(void* device, void* stream,
                                              void* x, uint64_t x_offset,
                                              uint32_t dtype, uint64_t count,
                                              double alpha) {
  (void)device, (void)stream, (void)x, (void)x_offset, (void)dtype;
  (void)count, (void)alpha;
  return accel__op_unsupported("scale");
}

static accel_status_t accel__default_op_axpy(void* device, void* stream,
                                             void* y, uint64_t y_offset,
                                             const void* x, uint64_t x_offset,
                                             uint32_t dtype, uint64_t count,
                                             double alpha) {
  (void)device, (void)stream, (void)y, (void)y_offset, (void)x;
  (void)x_offset, (void)dtype, (void)count, (void)alpha;
  return accel__op_unsupported("axpy");
}

static accel_status_t accel__default_op_add(void* device, void* stream, void* z,
                                            uint64_t z_offset, const void* x,
                                            uint64_t x_offset, const void* y,
                                            uint64_t y_offset, uint32_t dtype,
                                            uint64_t count) {
  (void)device, (void)stream, (void)z, (void)z_offset, (void)x;
  (void)x_offset, (void)y, (void)y_offset, (void)dtype, (void)count;
  return accel__op_unsupported("add");
}

static accel_status_t accel__default_op_mul(void* device, void* stream, void* z,
                                            uint64_t z_offset, const void* x,
                                            uint64_t x_offset, const void* y,
                                            uint64_t y_offset, uint32_t dtype,
                                            uint64_t count) {
  (void)device, (void)stream, (void)z, (void)z_offset, (void)x;
  (void)x_offset, (void)y, (void)y_offset, (void)dtype, (void)count;
  return accel__op_unsupported("mul");
}

static accel_status_t accel__default_op_sum(void* device, void* stream,
                                            void* out, uint64_t out_offset,
                                            const void* x, uint64_t x_offset,
                                            uint32_t dtype, uint64_t count) {
  (void)device, (void)stream, (void)out, (void)out_offset, (void)x;
  (void)x_offset, (void)dtype, (void)count;
  return accel__op_unsupported("sum");
}

static accel_status_t accel__default_op_gemm(void* device, void* stream,
                                             const accel_plugin_gemm_t* gemm) {
  (void)device, (void)stream, (void)gemm;
  return accel__op_unsupported("gemm");
}

// A plugin without op_gemm_workspace (or built before ABI 1.2) wants no
// GEMM workspace: 0 bytes, so accel_op_gemm never tests for NULL.
static accel_status_t accel__default_op_gemm_workspace(
    void* device, const accel_plugin_gemm_t* gemm, uint64_t* out_bytes) {
  (void)device, (void)gemm;
  *out_bytes = 0;
  return ACCEL_OK;
}

// A plugin without mem_address (or built before ABI 1.3): its memory has
// no address the core can hand out.
static accel_status_t accel__default_mem_address(void* device, void* mem,
                                                 uint64_t offset,
                                                 uint64_t* out_address) {
  (void)device, (void)mem, (void)offset;
  *out_address = 0;
  return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                     "this backend's memory has no device address");
}

// A plugin without mem_wrap (or built before it): it cannot adopt memory
// it did not allocate.
static accel_status_t accel__default_mem_wrap(void* device, uint64_t address,
                                              size_t size, void** out_mem) {
  (void)device, (void)address, (void)size;
  *out_mem = NULL;
  return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                     "this backend cannot wrap memory it did not allocate");
}

static void accel__default_mem_unwrap(void* device, void* mem) {
  (void)device, (void)mem;
}

// A plugin without native_handle (or built before ABI 1.4): it names no
// backend object.
static accel_status_t accel__default_native_handle(void* device, uint32_t kind,
                                                   void* object,
                                                   uint64_t* out_handle) {
  (void)device, (void)kind, (void)object;
  *out_handle = 0;
  return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                     "this backend does not expose its native objects "
                     "(plugin without the ABI 1.4 native_handle entry)");
}

// A plugin without host_register: nothing is page-locked, the core only
// records the range (accel_host_register), and copies run as before.
static accel_status_t accel__default_host_register(void* device, void* ptr,
                                                   size_t size) {
  (void)device, (void)ptr, (void)size;
  return ACCEL_OK;
}

static void accel__default_host_unregister(void* device, void* ptr) {
  (void)device, (void)ptr;
}

static accel_status_t accel__default_op_rng(void* device, void* stream,
                                            void* dst, uint64_t dst_offset,
                                            uint32_t dtype, uint64_t count,
                                            uint32_t distribution,
                                            uint64_t seed, uint64_t offset,
                                            double a, double b) {
  (void)device, (void)stream, (void)dst, (void)dst_offset, (void)dtype;
  (void)count, (void)distribution, (void)seed, (void)offset, (void)a;
  (void)b;
  return accel__op_unsupported("rng");
}

// Fills every built-in op the plugin left NULL (or predates) with a stub.
static void accel__fill_op_defaults(accel_device_ops_t* o) {
  if (o->op_fill == NULL) o->op_fill = accel__default_op_fill;
  if (o->op_cast == NULL) o->op_cast = accel__default_op_cast;
  if (o->op_scale == NULL) o->op_scale = accel__default_op_scale;
  if (o->op_axpy == NULL) o->op_axpy = accel__default_op_axpy;
  if (o->op_add == NULL) o->op_add = accel__default_op_add;
  if (o->op_mul == NULL) o->op_mul = accel__default_op_mul;
  if (o->op_sum == NULL) o->op_sum = accel__default_op_sum;
  if (o->op_gemm == NULL) o->op_gemm = accel__default_op_gemm;
  if (o->op_gemm_workspace == NULL) {
    o->op_gemm_workspace = accel__default_op_gemm_workspace;
  }
  if (o->mem_address == NULL) o->mem_address = accel__default_mem_address;
  if (o->mem_wrap == NULL) o->mem_wrap = accel__default_mem_wrap;
  if (o->mem_unwrap == NULL) o->mem_unwrap = accel__default_mem_unwrap;
  if (o->op_rng == NULL) o->op_rng = accel__default_op_rng;
  if (o->native_handle == NULL) {
    o->native_handle = accel__default_native_handle;
  }
  if (o->host_register == NULL) {
    o->host_register = accel__default_host_register;
    o->host_unregister = accel__default_host_unregister;
  }
}

static accel_status_t accel__copy_peer_native(accel__plugin_t* plugin,
                                              void* dst_device, void* stream,
                                              void* dst, size_t dst_offset,
                                              void* src_device, const void* src,
                                              size_t src_offset, size_t size) {
  return plugin->ops.copy_peer(dst_device, stream, dst, dst_offset, src_device,
                               src, src_offset, size);
}

// Peer copy for plugins without one: wait for the destination stream (so
// the copy runs in stream order: behind the stream's earlier work and its
// waits for events, such as the one a producer on the source device
// recorded after writing the source), read the source synchronously into
// a bounce buffer, then write it on the destination stream and wait, so
// the bounce buffer can be freed. Reading at enqueue without the first
// wait read a source the stream had not yet been allowed to see
// (accel-conform's copy.peer_stream_order).
static accel_status_t accel__copy_peer_staged(accel__plugin_t* plugin,
                                              void* dst_device, void* stream,
                                              void* dst, size_t dst_offset,
                                              void* src_device, const void* src,
                                              size_t src_offset, size_t size) {
  if (stream != NULL) {
    accel_status_t status = plugin->ops.stream_synchronize(stream);
    if (status != ACCEL_OK) return status;
  }
  void* bounce = malloc(size);
  if (bounce == NULL) {
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                       "peer copy: no host memory for a %zu-byte bounce buffer",
                       size);
  }
  accel_status_t status =
      plugin->ops.copy_d2h(src_device, NULL, bounce, src, src_offset, size);
  if (status == ACCEL_OK) {
    status =
        plugin->ops.copy_h2d(dst_device, stream, dst, dst_offset, bounce, size);
  }
  if (status == ACCEL_OK && stream != NULL) {
    status = plugin->ops.stream_synchronize(stream);
  }
  free(bounce);
  return status;
}

// ---------------------------------------------------------------------------
// Validation.
// ---------------------------------------------------------------------------

typedef struct accel__required {
  size_t offset;
  const char* name;
} accel__required_t;

#define ACCEL__REQ(type, field) \
  { offsetof(type, field), #field }

static const accel__required_t accel__plugin_required[] = {
    ACCEL__REQ(accel_plugin_t, load),
    ACCEL__REQ(accel_plugin_t, unload),
    ACCEL__REQ(accel_plugin_t, device_count),
    ACCEL__REQ(accel_plugin_t, device_open),
    ACCEL__REQ(accel_plugin_t, device_close),
};

static const accel__required_t accel__ops_required[] = {
    ACCEL__REQ(accel_device_ops_t, query_props),
    ACCEL__REQ(accel_device_ops_t, mem_info),
    ACCEL__REQ(accel_device_ops_t, mem_alloc),
    ACCEL__REQ(accel_device_ops_t, mem_free),
    ACCEL__REQ(accel_device_ops_t, copy_h2d),
    ACCEL__REQ(accel_device_ops_t, copy_d2h),
    ACCEL__REQ(accel_device_ops_t, copy_d2d),
    ACCEL__REQ(accel_device_ops_t, memset),
    ACCEL__REQ(accel_device_ops_t, stream_create),
    ACCEL__REQ(accel_device_ops_t, stream_destroy),
    ACCEL__REQ(accel_device_ops_t, stream_synchronize),
    ACCEL__REQ(accel_device_ops_t, stream_query),
    ACCEL__REQ(accel_device_ops_t, stream_wait_event),
    ACCEL__REQ(accel_device_ops_t, event_create),
    ACCEL__REQ(accel_device_ops_t, event_destroy),
    ACCEL__REQ(accel_device_ops_t, event_record),
    ACCEL__REQ(accel_device_ops_t, event_synchronize),
    ACCEL__REQ(accel_device_ops_t, event_query),
};

// Returns the name of the first required entry of `table` that is NULL.
static const char* accel__missing(const void* table,
                                  const accel__required_t* required,
                                  size_t count) {
  for (size_t i = 0; i < count; i++) {
    void (*fn)(void);
    memcpy(&fn, (const char*)table + required[i].offset, sizeof(fn));
    if (fn == NULL) return required[i].name;
  }
  return NULL;
}

static bool accel__name_valid(const char* name) {
  if (name == NULL || name[0] == '\0') return false;
  size_t n = 0;
  for (const char* p = name; *p != '\0'; p++, n++) {
    bool ok = (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_';
    if (!ok || n >= 31) return false;
  }
  return strcmp(name, "auto") != 0;
}

// Copies a plugin table of `src_size` bytes into the core's zeroed,
// full-size `dst` (entries the plugin predates stay NULL for the defaults),
// or records why it is too small. Every table starts with struct_size,
// which the copy sets to the core's size.
static bool accel__table_copy(accel__plugin_t* plugin, const char* what,
                              void* dst, size_t dst_size, const void* src,
                              uint32_t src_size, size_t min_size) {
  if (src_size < min_size) {
    accel__plugin_set(plugin, ACCEL_ERROR_INCOMPATIBLE,
                      "%s is %u bytes, below the ABI 1.0 minimum of %zu", what,
                      src_size, min_size);
    return false;
  }
  memset(dst, 0, dst_size);
  memcpy(dst, src, src_size < dst_size ? src_size : dst_size);
  uint32_t size = (uint32_t)dst_size;
  memcpy(dst, &size, sizeof(size));
  return true;
}

// Checks the descriptor and copies it and its ops into `plugin`, filling
// optional entries with core defaults, so call sites never test for NULL
// or versions.
static bool accel__plugin_bind(accel__plugin_t* plugin,
                               const accel_plugin_t* desc) {
  if (desc == NULL) {
    accel__plugin_set(plugin, ACCEL_ERROR_INCOMPATIBLE,
                      "accel_plugin_entry(%u) returned NULL: the plugin "
                      "cannot serve plugin ABI %u",
                      ACCEL_PLUGIN_ABI_VERSION, ACCEL_PLUGIN_ABI_VERSION);
    return false;
  }
  plugin->abi_version = desc->abi_version;
  if (desc->abi_version != ACCEL_PLUGIN_ABI_VERSION) {
    accel__plugin_set(plugin, ACCEL_ERROR_INCOMPATIBLE,
                      "plugin ABI %u, core ABI %u (major versions must "
                      "match; rebuild the plugin against this SDK)",
                      desc->abi_version, ACCEL_PLUGIN_ABI_VERSION);
    return false;
  }
  if (!accel__table_copy(plugin, "accel_plugin_t", &plugin->desc,
                         sizeof(plugin->desc), desc, desc->struct_size,
                         ACCEL_PLUGIN_MIN_SIZE)) {
    return false;
  }
  desc = &plugin->desc;

  if (!accel__name_valid(desc->name)) {
    accel__plugin_set(plugin, ACCEL_ERROR_INCOMPATIBLE,
                      "invalid plugin name '%.40s': want 1 to 31 characters "
                      "of [a-z0-9_], not 'auto'",
                      desc->name != NULL ? desc->name : "(null)");
    return false;
  }
  free(plugin->name);
  free(plugin->version);
  plugin->name = accel__strdup(desc->name);
  plugin->version = accel__strdup(desc->version != NULL ? desc->version : "");
  plugin->priority = desc->priority;
  if (plugin->name == NULL || plugin->version == NULL) {
    accel__plugin_set(plugin, ACCEL_ERROR_OUT_OF_MEMORY, "out of memory");
    return false;
  }

  const char* missing = accel__missing(
      desc, accel__plugin_required,
      sizeof(accel__plugin_required) / sizeof(accel__plugin_required[0]));
  if (missing != NULL || desc->device_ops == NULL) {
    accel__plugin_set(plugin, ACCEL_ERROR_INCOMPATIBLE,
                      "required entry plugin.%s is NULL",
                      missing != NULL ? missing : "device_ops");
    return false;
  }
  const accel_device_ops_t* ops = desc->device_ops;
  if (!accel__table_copy(plugin, "device_ops", &plugin->ops,
                         sizeof(plugin->ops), ops, ops->struct_size,
                         ACCEL_DEVICE_OPS_MIN_SIZE)) {
    return false;
  }
  plugin->abi_minor = accel__plugin_abi_minor(ops->struct_size);
  accel_device_ops_t* o = &plugin->ops;

  missing = accel__missing(
      o, accel__ops_required,
      sizeof(accel__ops_required) / sizeof(accel__ops_required[0]));
  if (missing != NULL) {
    accel__plugin_set(plugin, ACCEL_ERROR_INCOMPATIBLE,
                      "required entry device_ops.%s is NULL", missing);
    return false;
  }
  if ((o->host_alloc == NULL) != (o->host_free == NULL)) {
    accel__plugin_set(plugin, ACCEL_ERROR_INCOMPATIBLE,
                      "device_ops.host_alloc and host_free must be set "
                      "together");
    return false;
  }
  if ((o->host_register == NULL) != (o->host_unregister == NULL)) {
    accel__plugin_set(plugin, ACCEL_ERROR_INCOMPATIBLE,
                      "device_ops.host_register and host_unregister must be "
                      "set together");
    return false;
  }
  int module_entries = (o->module_load != NULL) + (o->module_unload != NULL) +
                       (o->module_function != NULL) + (o->launch != NULL);
  if (module_entries != 0 && module_entries != 4) {
    accel__plugin_set(plugin, ACCEL_ERROR_INCOMPATIBLE,
                      "device_ops.module_load, module_unload, "
                      "module_function and launch must be set together");
    return false;
  }

  plugin->has_pinned = o->host_alloc != NULL;
  plugin->has_timing = o->event_elapsed_ms != NULL;
  plugin->has_kernels = module_entries == 4;
  if (o->host_alloc == NULL) {
    o->host_alloc = accel__default_host_alloc;
    o->host_free = accel__default_host_free;
  }
  if (o->can_access_peer == NULL) {
    o->can_access_peer = accel__default_can_access_peer;
  }
  if (o->event_elapsed_ms == NULL) o->event_elapsed_ms = accel__default_elapsed;
  if (!plugin->has_kernels) {
    o->module_load = accel__default_module_load;
    o->module_unload = accel__default_module_unload;
    o->module_function = accel__default_module_function;
    o->launch = accel__default_launch;
  }
  const char* control = accel__control_bind(o);
  if (control != NULL) {
    accel__plugin_set(plugin, ACCEL_ERROR_INCOMPATIBLE, "%s", control);
    return false;
  }
  accel__fill_op_defaults(o);
  accel__ops_nn_bind(plugin, o);
  plugin->copy_peer =
      o->copy_peer != NULL ? accel__copy_peer_native : accel__copy_peer_staged;
  return true;
}

// ---------------------------------------------------------------------------
// Stages.
// ---------------------------------------------------------------------------

// Returns the first plugin before `plugin` in the report that owns `name`.
static accel__plugin_t* accel__name_owner(const accel__plugin_t* plugin,
                                          const char* name) {
  for (size_t i = 0; i < accel__state.plugin_count; i++) {
    accel__plugin_t* other = accel__state.plugins[i];
    if (other == plugin) break;
    // Negotiated plugins own their name even if load() failed later, so a
    // named backend always resolves to the first file that claimed it.
    if (other->stage >= ACCEL_PLUGIN_STAGE_NEGOTIATED && other->name != NULL &&
        strcmp(other->name, name) == 0) {
      return other;
    }
  }
  return NULL;
}

static void accel__plugin_close(accel__plugin_t* plugin) {
  if (plugin->loaded) {
    plugin->desc.unload(plugin->state);
    plugin->loaded = false;
    plugin->state = NULL;
  }
  if (plugin->dl != NULL) {
    if (!plugin->dl_borrowed) dlclose(plugin->dl);
    plugin->dl = NULL;
    plugin->dl_borrowed = false;
  }
}

static void accel__plugin_log_outcome(const accel__plugin_t* plugin) {
  if (plugin->status == ACCEL_OK && !plugin->probed) {
    accel__log(ACCEL_LOG_DEBUG,
               "%s: loaded plugin '%s' %s; its devices are counted on "
               "first use",
               plugin->path, plugin->name, plugin->version);
  } else if (plugin->status == ACCEL_OK) {
    accel__log(ACCEL_LOG_DEBUG, "%s: plugin '%s' %s has %u device(s)",
               plugin->path, plugin->name, plugin->version,
               plugin->device_count);
  } else if (plugin->status == ACCEL_ERROR_UNAVAILABLE) {
    accel__log(ACCEL_LOG_INFO, "%s: plugin '%s' unavailable: %s", plugin->path,
               plugin->name != NULL ? plugin->name : "?", plugin->message);
  } else if (plugin->status == ACCEL_ERROR_NOT_FOUND) {
    accel__log(ACCEL_LOG_DEBUG, "%s: skipped: %s", plugin->path,
               plugin->message);
  } else {
    accel__log(ACCEL_LOG_WARN, "%s: plugin rejected (%s): %s", plugin->path,
               accel_status_string(plugin->status), plugin->message);
  }
}

// Runs the stages after dlopen. Returns with the report filled in.
static void accel__plugin_stages(accel__plugin_t* plugin) {
  void* sym = dlsym(plugin->dl, ACCEL_PLUGIN_ENTRY_NAME);
  if (sym == NULL) {
    accel__plugin_set(plugin, ACCEL_ERROR_INCOMPATIBLE,
                      "not an accel plugin: no " ACCEL_PLUGIN_ENTRY_NAME
                      " symbol");
    return;
  }
  accel_plugin_entry_fn_t entry;
  memcpy(&entry, &sym, sizeof(entry));  // POSIX: dlsym gives code addresses
  const accel_plugin_t* desc = entry(ACCEL_PLUGIN_ABI_VERSION);
  plugin->stage = ACCEL_PLUGIN_STAGE_ENTRY;
  if (!accel__plugin_bind(plugin, desc)) return;

  accel__plugin_t* owner = accel__name_owner(plugin, plugin->name);
  if (owner != NULL) {
    accel__plugin_set(plugin, ACCEL_ERROR_NOT_FOUND,
                      "shadowed: a plugin named '%s' is already loaded from "
                      "%s",
                      plugin->name, owner->path);
    return;
  }
  plugin->stage = ACCEL_PLUGIN_STAGE_NEGOTIATED;

  accel__host_init(&plugin->host, plugin);
  accel__fail(ACCEL_OK, "%s", "");
  accel_status_t status = plugin->desc.load(&plugin->host.host, &plugin->state);
  if (status != ACCEL_OK) {
    plugin->state = NULL;
    accel__plugin_set(
        plugin, status, "load failed: %s",
        accel_last_error()[0] != '\0' ? accel_last_error() : "no reason given");
    return;
  }
  plugin->loaded = true;
  accel__trace_instant("plugin load", plugin->path);
  // Lazy start: device_count, which starts the vendor driver, runs when
  // selection or the caller first needs this plugin's devices
  // (accel__plugin_probe).
}

// Clamps a plugin's device count to what the core manages.
static uint32_t accel__count_cap(accel__plugin_t* plugin, uint32_t count) {
  if (count <= ACCEL__MAX_PLUGIN_DEVICES) return count;
  accel__log(ACCEL_LOG_WARN,
             "%s: plugin '%s' reports %u devices; only the first %u are "
             "used",
             plugin->path, plugin->name, count, ACCEL__MAX_PLUGIN_DEVICES);
  return ACCEL__MAX_PLUGIN_DEVICES;
}

void accel__plugin_probe(accel__plugin_t* plugin) {
  if (plugin->probed || plugin->status != ACCEL_OK || !plugin->loaded) return;
  plugin->probed = true;
  char saved[1024];
  snprintf(saved, sizeof(saved), "%s", accel_last_error());
  uint32_t count = 0;
  accel__fail(ACCEL_OK, "%s", "");
  accel_status_t status = plugin->desc.device_count(plugin->state, &count);
  plugin->stage = ACCEL_PLUGIN_STAGE_INITIALISED;
  if (status != ACCEL_OK) {
    accel__plugin_set(plugin, status, "%s",
                      accel_last_error()[0] != '\0' ? accel_last_error()
                                                    : "device_count failed");
  } else {
    plugin->reported_count = count;
    count = accel__count_cap(plugin, count);
    if (count > 0) {
      plugin->devices = calloc(count, sizeof(*plugin->devices));
      if (plugin->devices == NULL) {
        accel__plugin_set(plugin, ACCEL_ERROR_OUT_OF_MEMORY,
                          "out of memory for %u devices", count);
        count = 0;
      }
    }
    plugin->device_count = count;
    if (plugin->status == ACCEL_OK) accel__visible_apply(plugin);
    if (plugin->status == ACCEL_OK && plugin->reported_count > count) {
      accel__plugin_set(plugin, ACCEL_OK,
                        "the plugin reports %u devices; only the first %u "
                        "are used",
                        plugin->reported_count, count);
    }
  }
  // A plugin whose driver turned out missing keeps its report entry but
  // is unloaded, as one that failed load() is.
  if (plugin->status != ACCEL_OK) {
    plugin->device_count = 0;
    accel__plugin_close(plugin);
  }
  accel__plugin_log_outcome(plugin);
  accel__fail(ACCEL_OK, "%s", saved);
}

void accel__plugin_probe_all(void) {
  for (size_t i = 0; i < accel__state.plugin_count; i++) {
    accel__plugin_probe(accel__state.plugins[i]);
  }
}

void accel__plugin_load(accel__plugin_t* plugin) {
  // Loading must not disturb the caller's last error.
  char saved[1024];
  snprintf(saved, sizeof(saved), "%s", accel_last_error());

  plugin->stage = ACCEL_PLUGIN_STAGE_FOUND;
  char why[512];
  bool file_ok = accel__plugin_file_check(plugin->path, why, sizeof(why));
  if (file_ok) {
    dlerror();
    plugin->dl = accel__fork_handle(plugin->path);  // after fork()
    plugin->dl_borrowed = plugin->dl != NULL;
    if (plugin->dl == NULL) {
      plugin->dl = dlopen(plugin->path, RTLD_NOW | RTLD_LOCAL);
    }
  }
  if (!file_ok) {
    accel__plugin_set(plugin, ACCEL_ERROR_INCOMPATIBLE, "%s", why);
  } else if (plugin->dl == NULL) {
    const char* err = dlerror();
    accel__plugin_set(plugin, ACCEL_ERROR_INCOMPATIBLE, "dlopen failed: %s",
                      err != NULL ? err : "unknown error");
  } else {
    plugin->stage = ACCEL_PLUGIN_STAGE_OPENED;
    accel__plugin_stages(plugin);
    // Only a usable plugin stays open; the report keeps what the others
    // said about themselves.
    if (plugin->status != ACCEL_OK) accel__plugin_close(plugin);
  }
  if (plugin->message == NULL) plugin->message = accel__strdup("");
  accel__plugin_log_outcome(plugin);
  accel__fail(ACCEL_OK, "%s", saved);
}

void accel__plugin_destroy(accel__plugin_t* plugin) {
  if (plugin == NULL) return;
  accel__plugin_close(plugin);
  free(plugin->devices);
  free(plugin->physical);
  free(plugin->path);
  free(plugin->source);
  free(plugin->message);
  free(plugin->name);
  free(plugin->version);
  free(plugin);
}
