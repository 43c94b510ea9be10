// SPDX-License-Identifier: MIT
//
// fork() while other threads use the library. Handlers registered with
// pthread_atfork() take the core's locks before fork() (state lock, then
// each open device's allocator and host-pool mutex), so the child never
// inherits one held by a thread that does not exist there.
//
// In the child the plugins of the parent are left behind: their threads
// (stream workers, pools, driver threads) are gone, so no call may reach
// them. Their device tables are replaced with stubs that fail with
// ACCEL_ERROR_UNAVAILABLE and say why, so every call on a handle created
// before fork() fails at once instead of hanging, and releasing such a
// handle only frees core memory. The library itself starts afresh: the
// next call discovers and loads the plugins again, so new handles in the
// child work; a plugin file the parent had open is loaded again from the
// handle left behind (accel__fork_handle), not by dlopen(). The plugins
// left behind are never unloaded.
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ACCEL__FORKED_MESSAGE                                                \
  "accel: this handle was created before fork(); the child cannot use the " \
  "parent's devices, streams, events, buffers or modules. Create new "      \
  "handles in the child (accel_device_default() starts the library "       \
  "afresh there), or start the child with posix_spawn() or exec()"

static accel_status_t accel__forked(void) {
  return accel__fail(ACCEL_ERROR_UNAVAILABLE, "%s", ACCEL__FORKED_MESSAGE);
}

// One stub per entry, with the entry's own signature. The parameters are
// unused by design.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define ACCEL__STUB(name, params) \
  static accel_status_t accel__forked_##name params { return accel__forked(); }
#define ACCEL__VOID_STUB(name, params) \
  static void accel__forked_##name params {}

ACCEL__STUB(query_props, (void* d, accel_plugin_device_props_t* p))
ACCEL__STUB(mem_info, (void* d, uint64_t* f, uint64_t* t))
ACCEL__STUB(mem_alloc, (void* d, size_t s, void** o))
ACCEL__VOID_STUB(mem_free, (void* d, void* m))
ACCEL__STUB(host_alloc, (void* d, size_t s, void** o))
ACCEL__VOID_STUB(host_free, (void* d, void* p))
ACCEL__STUB(copy_h2d, (void* d, void* s, void* dst, size_t o, const void* src,
                       size_t n))
ACCEL__STUB(copy_d2h, (void* d, void* s, void* dst, const void* src, size_t o,
                       size_t n))
ACCEL__STUB(copy_d2d, (void* d, void* s, void* dst, size_t o, const void* src,
                       size_t so, size_t n))
ACCEL__STUB(copy_peer, (void* d, void* s, void* dst, size_t o, void* sd,
                        const void* src, size_t so, size_t n))
ACCEL__STUB(can_access_peer, (void* d, void* p, bool* o))
ACCEL__STUB(memset, (void* d, void* s, void* dst, size_t o, uint8_t v,
                     size_t n))
ACCEL__STUB(stream_create, (void* d, accel_stream_flags_t f, void** o))
ACCEL__VOID_STUB(stream_destroy, (void* s))
ACCEL__STUB(stream_synchronize, (void* s))
ACCEL__STUB(stream_query, (void* s, bool* o))
ACCEL__STUB(stream_wait_event, (void* s, void* e))
ACCEL__STUB(event_create, (void* d, accel_event_flags_t f, void** o))
ACCEL__VOID_STUB(event_destroy, (void* e))
ACCEL__STUB(event_record, (void* e, void* s))
ACCEL__STUB(event_synchronize, (void* e))
ACCEL__STUB(event_query, (void* e, bool* o))
ACCEL__STUB(event_elapsed_ms, (void* a, void* b, float* o))
ACCEL__STUB(module_load, (void* d, const void* i, size_t n, void** o))
ACCEL__VOID_STUB(module_unload, (void* m))
ACCEL__STUB(module_function, (void* m, const char* n, void** o))
ACCEL__STUB(launch, (void* f, void* s, const accel_plugin_launch_t* l))
ACCEL__STUB(op_fill, (void* d, void* s, void* x, uint64_t o, uint32_t t,
                      uint64_t n, double v))
ACCEL__STUB(op_cast, (void* d, void* s, void* x, uint64_t o, uint32_t t,
                      const void* y, uint64_t yo, uint32_t yt, uint64_t n))
ACCEL__STUB(op_scale, (void* d, void* s, void* x, uint64_t o, uint32_t t,
                       uint64_t n, double a))
ACCEL__STUB(op_axpy, (void* d, void* s, void* y, uint64_t yo, const void* x,
                      uint64_t xo, uint32_t t, uint64_t n, double a))
ACCEL__STUB(op_add, (void* d, void* s, void* z, uint64_t zo, const void* x,
                     uint64_t xo, const void* y, uint64_t yo, uint32_t t,
                     uint64_t n))
ACCEL__STUB(op_mul, (void* d, void* s, void* z, uint64_t zo, const void* x,
                     uint64_t xo, const void* y, uint64_t yo, uint32_t t,
                     uint64_t n))
ACCEL__STUB(op_sum, (void* d, void* s, void* z, uint64_t zo, const void* x,
                     uint64_t xo, uint32_t t, uint64_t n))
ACCEL__STUB(op_gemm, (void* d, void* s, const accel_plugin_gemm_t* g))
ACCEL__STUB(op_gemm_workspace, (void* d, const accel_plugin_gemm_t* g,
                                uint64_t* o))
ACCEL__STUB(mem_address, (void* d, void* m, uint64_t o, uint64_t* a))
ACCEL__STUB(mem_wrap, (void* d, uint64_t a, size_t s, void** o))
ACCEL__VOID_STUB(mem_unwrap, (void* d, void* m))
ACCEL__STUB(op_rng, (void* d, void* s, void* x, uint64_t o, uint32_t t,
                     uint64_t n, uint32_t k, uint64_t seed, uint64_t off,
                     double a, double b))
ACCEL__STUB(native_handle, (void* d, uint32_t k, void* o, uint64_t* h))
ACCEL__STUB(host_register, (void* d, void* p, size_t n))
ACCEL__VOID_STUB(host_unregister, (void* d, void* p))
ACCEL__STUB(stream_begin_capture, (void* s))
ACCEL__STUB(stream_end_capture, (void* s, void** o))
ACCEL__STUB(graph_launch, (void* g, void* s))
ACCEL__VOID_STUB(graph_destroy, (void* g))
ACCEL__VOID_STUB(device_close, (void* d))
#pragma GCC diagnostic pop

#define ACCEL__SET(o, name) (o)->name = accel__forked_##name

// Points every entry of `plugin` at the stubs. A table that grows gets a
// compile error here only if an entry is renamed; a new entry the stubs
// lack stays zeroed, and the core never calls a plugin entry it did not
// fill, so add it here.
static void accel__plugin_forked(accel__plugin_t* plugin) {
  accel_device_ops_t* o = &plugin->ops;
  uint32_t size = o->struct_size;
  memset(o, 0, sizeof(*o));
  o->struct_size = size;
  ACCEL__SET(o, query_props), ACCEL__SET(o, mem_info);
  ACCEL__SET(o, mem_alloc), ACCEL__SET(o, mem_free);
  ACCEL__SET(o, host_alloc), ACCEL__SET(o, host_free);
  ACCEL__SET(o, copy_h2d), ACCEL__SET(o, copy_d2h), ACCEL__SET(o, copy_d2d);
  ACCEL__SET(o, copy_peer), ACCEL__SET(o, can_access_peer);
  ACCEL__SET(o, memset), ACCEL__SET(o, stream_create);
  ACCEL__SET(o, stream_destroy), ACCEL__SET(o, stream_synchronize);
  ACCEL__SET(o, stream_query), ACCEL__SET(o, stream_wait_event);
  ACCEL__SET(o, event_create), ACCEL__SET(o, event_destroy);
  ACCEL__SET(o, event_record), ACCEL__SET(o, event_synchronize);
  ACCEL__SET(o, event_query), ACCEL__SET(o, event_elapsed_ms);
  ACCEL__SET(o, module_load), ACCEL__SET(o, module_unload);
  ACCEL__SET(o, module_function), ACCEL__SET(o, launch);
  ACCEL__SET(o, op_fill), ACCEL__SET(o, op_cast), ACCEL__SET(o, op_scale);
  ACCEL__SET(o, op_axpy), ACCEL__SET(o, op_add), ACCEL__SET(o, op_mul);
  ACCEL__SET(o, op_sum), ACCEL__SET(o, op_gemm);
  ACCEL__SET(o, op_gemm_workspace), ACCEL__SET(o, mem_address);
  ACCEL__SET(o, mem_wrap), ACCEL__SET(o, mem_unwrap);
  ACCEL__SET(o, op_rng);
  ACCEL__SET(o, native_handle), ACCEL__SET(o, host_register);
  ACCEL__SET(o, host_unregister);
  ACCEL__SET(o, stream_begin_capture), ACCEL__SET(o, stream_end_capture);
  ACCEL__SET(o, graph_launch), ACCEL__SET(o, graph_destroy);
  ACCEL__SET(&plugin->desc, device_close);
}

// Calls `fn` on every open device, in report order.
static void accel__each_device(void (*fn)(accel_device_t*, bool), bool lock) {
  for (size_t i = 0; i < accel__state.plugin_count; i++) {
    accel__plugin_t* p = accel__state.plugins[i];
    for (uint32_t j = 0; j < p->device_count; j++) {
      if (p->devices != NULL && p->devices[j] != NULL) fn(p->devices[j], lock);
    }
  }
}

static void accel__fork_prepare(void) {
  pthread_mutex_lock(&accel__state.lock);
  accel__each_device(accel__allocator_fork_lock, true);
  accel__each_device(accel__host_pool_fork_lock, true);
  accel__handle_fork_lock(true);
}

static void accel__fork_parent(void) {
  accel__handle_fork_lock(false);
  accel__each_device(accel__host_pool_fork_lock, false);
  accel__each_device(accel__allocator_fork_lock, false);
  pthread_mutex_unlock(&accel__state.lock);
}

// The plugin tables left behind by each fork, kept reachable (never
// unloaded). Touched by the child handler, in one thread, and by the
// loader under the state lock.
typedef struct accel__left_behind {
  accel__plugin_t** plugins;
  size_t count;
} accel__left_behind_t;
static accel__left_behind_t* accel__left_behind;
static size_t accel__left_behind_count;

static void accel__fork_child(void) {
  accel__state_t* st = &accel__state;
  accel__handle_fork_child();
  accel__each_device(accel__host_pool_fork_lock, false);
  accel__each_device(accel__allocator_fork_lock, false);
  for (size_t i = 0; i < st->plugin_count; i++) {
    accel__plugin_forked(st->plugins[i]);
  }
  accel__left_behind_t* grown =
      realloc(accel__left_behind,
              (accel__left_behind_count + 1) * sizeof(*accel__left_behind));
  if (grown != NULL) {  // otherwise the table is leaked, which is harmless
    accel__left_behind = grown;
    accel__left_behind[accel__left_behind_count++] =
        (accel__left_behind_t){st->plugins, st->plugin_count};
  }
  st->plugins = NULL;
  st->plugin_count = st->plugin_capacity = 0;
  for (size_t i = 0; i < st->search_count; i++) free(st->search[i].path);
  free(st->search);
  st->search = NULL;
  st->search_count = 0;
  accel__visible_reset();
  st->custom_options = false;
  atomic_store(&st->initialised, false);
  pthread_mutex_unlock(&st->lock);
}

// A child reloads the plugins the parent had from the handles they left
// behind instead of calling dlopen() again: dlopen() there can wait for a
// lock that a thread of the parent held at fork() and that no handler
// releases. ThreadSanitizer's dlopen interceptor did (its module list,
// walked with dl_iterate_phdr): the first child of tests/fleet/test_fork.c
// hung in about one run of twenty under TSan, and once under ASan.
void* accel__fork_handle(const char* path) {
  for (size_t i = 0; i < accel__left_behind_count; i++) {
    accel__left_behind_t* left = &accel__left_behind[i];
    for (size_t j = 0; j < left->count; j++) {
      accel__plugin_t* p = left->plugins[j];
      if (p != NULL && p->dl != NULL && p->path != NULL &&
          strcmp(p->path, path) == 0) {
        return p->dl;
      }
    }
  }
  return NULL;
}

static void accel__fork_once(void) {
  (void)pthread_atfork(accel__fork_prepare, accel__fork_parent,
                       accel__fork_child);
}

void accel__fork_register(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, accel__fork_once);
}
