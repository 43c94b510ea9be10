// SPDX-License-Identifier: MIT
//
// Custom kernels of the CPU plugin (<accel/cpu_kernel.h>): a module is a
// host shared object, loaded from memory; a kernel is a function in it; a
// launch runs every block of the grid as one task on the pool, from the
// stream's worker or, for quick launches on an idle stream, from the
// launching thread (see "Inline launches" below).
//
// Loading from bytes: the image goes into an anonymous memfd, which is
// dlopen()ed through /proc/self/fd/N and closed at once (the mapping keeps
// the file), so nothing touches the file system and no descriptor stays
// open. glibc recognises an already-loaded object by the path string it
// was opened with (and by device and inode, which a memfd has of its own),
// so a later module whose memfd got the same number N must be opened under
// another path, or dlopen() would hand back the older module. Every load
// therefore spells its own path: the load's serial number is written in
// "./" and ".//" steps, which the kernel resolves away, between
// /proc/self/ and fd/N (accel_cpu_module_path). Without memfd_create or
// /proc, the image goes to a mkstemp() file under $TMPDIR (or /tmp), named
// with the process id and the serial number too, that is unlinked as soon
// as dlopen() has mapped it.
#define _GNU_SOURCE  // memfd_create
#include <accel/cpu_kernel.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cpu.h"

typedef struct accel_cpu_module {
  accel_cpu_device_t* device;
  void* handle;
} accel_cpu_module_t;

// Serial numbers of loads in this process (a forked child goes on from
// the parent's, which is fine: its paths only need to differ from those of
// the objects it inherited).
static atomic_ullong accel_cpu_module_serial;

// Writes to `out` a path to memfd `fd` that no other load of this process
// used: "/proc/self/" then, for each bit of `serial` from the highest set
// one, "./" for 0 or ".//" for 1, then "fd/N". At most 10 + 64 * 3 + 16
// bytes. Distinct serials give distinct strings (every step starts with
// '.', so the steps can be read back), and all name the same file.
static void accel_cpu_module_path(char* out, size_t size, int fd,
                                  unsigned long long serial) {
  size_t used = (size_t)snprintf(out, size, "/proc/self/");
  int top = 63;
  while (top > 0 && !((serial >> top) & 1u)) top--;
  for (int bit = top; bit >= 0 && used + 4 < size; bit--) {
    const char* step = (serial >> bit) & 1u ? ".//" : "./";
    size_t len = strlen(step);
    memcpy(out + used, step, len);
    used += len;
  }
  if (used < size) snprintf(out + used, size - used, "fd/%d", fd);
}

// Writes all `size` bytes of `image` to `fd`.
static bool accel_cpu_write_all(int fd, const void* image, size_t size) {
  const unsigned char* p = image;
  while (size > 0) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= (size_t)n;
  }
  return true;
}

// dlopen() through a memfd, closed before returning. Returns the handle,
// or NULL with `*out_failed` false when memfds are unavailable (so the
// caller falls back) or true, with the dlerror() text in `error`, when the
// image is bad.
static void* accel_cpu_module_open_memfd(const void* image, size_t size,
                                         bool* out_failed, char* error,
                                         size_t error_size) {
  *out_failed = false;
  int fd = memfd_create("accel-cpu-module", MFD_CLOEXEC);
  if (fd < 0) return NULL;
  char path[256];
  accel_cpu_module_path(path, sizeof(path), fd,
                        atomic_fetch_add(&accel_cpu_module_serial, 1));
  if (!accel_cpu_write_all(fd, image, size) || access(path, R_OK) != 0) {
    close(fd);
    return NULL;
  }
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    snprintf(error, error_size, "%s", dlerror());
    *out_failed = true;  // a real failure: do not retry through a file
  }
  close(fd);  // the mapping keeps the file
  return handle;
}

// dlopen() through an unlinked temporary file.
static void* accel_cpu_module_open_file(const accel_host_t* host,
                                        const void* image, size_t size,
                                        char* error, size_t error_size) {
  const char* dir = host->getenv(host, "TMPDIR");
  if (dir == NULL || dir[0] == '\0') dir = "/tmp";
  char path[512];
  int len = snprintf(path, sizeof(path), "%s/accel-cpu-module-%ld-%llu-XXXXXX",
                     dir, (long)getpid(),
                     atomic_fetch_add(&accel_cpu_module_serial, 1));
  if (len < 0 || (size_t)len >= sizeof(path)) {
    snprintf(error, error_size, "TMPDIR is too long");
    return NULL;
  }
  int fd = mkstemp(path);
  if (fd < 0) {
    snprintf(error, error_size, "cannot create %.300s: %s", path,
             strerror(errno));
    return NULL;
  }
  void* handle = NULL;
  if (accel_cpu_write_all(fd, image, size)) {
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) snprintf(error, error_size, "%s", dlerror());
  } else {
    snprintf(error, error_size, "cannot write %.300s: %s", path,
             strerror(errno));
  }
  unlink(path);
  close(fd);
  return handle;
}

accel_status_t accel_cpu_module_load(void* device_ptr, const void* image,
                                     size_t size, void** out_module) {
  accel_cpu_device_t* device = device_ptr;
  const accel_host_t* host = device->host;
  *out_module = NULL;
  accel_cpu_module_t* module = calloc(1, sizeof(*module));
  if (module == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "cpu:%u: module",
                      device->index);
  }
  char error[ACCEL_CPU_MESSAGE_SIZE - 64] = "";
  bool failed = false;
  void* handle =
      accel_cpu_module_open_memfd(image, size, &failed, error, sizeof(error));
  if (handle == NULL && !failed) {
    handle =
        accel_cpu_module_open_file(host, image, size, error, sizeof(error));
  }
  if (handle == NULL) {
    free(module);
    return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                      "cpu:%u: cannot load the module: %s", device->index,
                      error);
  }
  module->device = device;
  module->handle = handle;
  *out_module = module;
  return ACCEL_OK;
}

void accel_cpu_module_unload(void* module_ptr) {
  accel_cpu_module_t* module = module_ptr;
  if (module == NULL) return;
  dlclose(module->handle);
  free(module);
}

accel_status_t accel_cpu_module_function(void* module_ptr, const char* name,
                                         void** out_function) {
  accel_cpu_module_t* module = module_ptr;
  const accel_host_t* host = module->device->host;
  *out_function = NULL;
  dlerror();  // clear a stale message
  void* sym = dlsym(module->handle, name);
  if (sym == NULL) {
    return host->fail(host, ACCEL_ERROR_NOT_FOUND,
                      "cpu:%u: the module has no function '%s' (is it "
                      "declared with ACCEL_CPU_KERNEL?)",
                      module->device->index, name);
  }
  // The function handle is the kernel's code address itself: it needs no
  // state and nothing to free.
  *out_function = sym;
  return ACCEL_OK;
}

// A queued launch. The argument values follow it in the task's memory.
typedef struct accel_cpu_launch_task {
  accel_cpu_kernel_fn_t fn;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t shared_mem_bytes;
  uint32_t num_args;
  void** argv;  // num_args pointers into `values`
  unsigned char* values;
  size_t shared_stride;   // per-worker scratch size, 64-byte multiple
  unsigned char* shared;  // width * shared_stride bytes, during the run
  // A kernel's ctx->fail: the first caller claims the slot, writes its
  // status and message, then publishes the status.
  atomic_int fail_claimed;
  _Atomic int32_t fail_status;
  char fail_message[256];
} accel_cpu_launch_task_t;

// accel_cpu_kernel_ctx_t.fail: the launch fails with `status` (the first
// failure wins), as a fault does on a GPU.
static void accel_cpu_kernel_fail(const accel_cpu_kernel_ctx_t* ctx,
                                  int32_t status, const char* message) {
  accel_cpu_launch_task_t* t = ctx->fail_state;
  int expected = 0;
  if (status == 0 ||
      !atomic_compare_exchange_strong(&t->fail_claimed, &expected, 1)) {
    return;
  }
  snprintf(t->fail_message, sizeof(t->fail_message), "%s",
           message != NULL ? message : "the kernel failed");
  atomic_store_explicit(&t->fail_status, status, memory_order_release);
}

static void accel_cpu_launch_block(void* ctx, uint64_t index, uint32_t worker) {
  const accel_cpu_launch_task_t* t = ctx;
  accel_cpu_kernel_ctx_t k = {.struct_size = sizeof(k), .worker = worker};
  uint64_t gx = t->grid[0], gy = t->grid[1];
  k.block_idx[0] = (uint32_t)(index % gx);
  k.block_idx[1] = (uint32_t)(index / gx % gy);
  k.block_idx[2] = (uint32_t)(index / (gx * gy));
  memcpy(k.grid_dim, t->grid, sizeof(k.grid_dim));
  memcpy(k.block_dim, t->block, sizeof(k.block_dim));
  if (t->shared_mem_bytes != 0) {
    k.shared_mem = t->shared + (size_t)worker * t->shared_stride;
    k.shared_mem_bytes = t->shared_mem_bytes;
  }
  k.fail = accel_cpu_kernel_fail;
  k.fail_state = (void*)t;  // the task is the launch's, writable
  t->fn(&k, (void* const*)t->argv);
}

// Inline launches. A launch on an idle stream may run on the calling
// thread (see stream.c) like a small copy, but a kernel's running time is
// unknown: one block can run for seconds, or wait for something the host
// does after the launch returns. So a launch runs inline only when the
// same kernel with the same grid size last ran (queued or inline) in under
// ACCEL_CPU_QUICK_NS, which bounds what the caller can lose to about what
// queueing costs it anyway (waking the stream worker, then being woken by
// it: 15 to 130 us of launch + synchronize on the 2-vCPU development VM,
// against 0.2 to 0.3 us inline, accel-bench `--filter launch`). The first
// launch of each (kernel, grid) is always queued; one that turns slow
// inline is queued from then on. Grids above ACCEL_CPU_INLINE_BLOCKS
// blocks are always queued.
#define ACCEL_CPU_QUICK_NS 20000u
#define ACCEL_CPU_INLINE_BLOCKS 64u

// The cache tag of (kernel, grid size): the code address shifted left by
// 8 bits with the block count (at most ACCEL_CPU_INLINE_BLOCKS) in the low
// byte, so distinct pairs get distinct tags. User-space addresses are
// below 2^56 on x86-64 (even with 5-level paging) and aarch64; a kernel
// above that gets tag 0, which marks an empty slot: never inline.
_Static_assert(ACCEL_CPU_INLINE_BLOCKS < 256, "the block count is one byte");

static uint64_t accel_cpu_quick_tag(const accel_cpu_launch_task_t* t,
                                    uint64_t blocks) {
  uintptr_t address = 0;
  _Static_assert(sizeof(t->fn) == sizeof(address), "code address size");
  memcpy(&address, &t->fn, sizeof(address));
  if ((uint64_t)address >> 56 != 0) return 0;
  return (uint64_t)address << 8 | blocks;
}

static _Atomic uint64_t* accel_cpu_quick_slot(accel_cpu_plugin_t* plugin,
                                              uint64_t tag) {
  uint64_t h = tag * 0x9E3779B97F4A7C15u;  // Fibonacci hashing
  return &plugin->quick_kernels[h >> 58 & (ACCEL_CPU_QUICK_KERNELS - 1)];
}

// Records how long (kernel, grid) took: a quick run marks it for inline
// launches, a slow one unmarks it.
static void accel_cpu_quick_note(accel_cpu_plugin_t* plugin,
                                 const accel_cpu_launch_task_t* t,
                                 uint64_t blocks, uint64_t ns) {
  uint64_t tag = accel_cpu_quick_tag(t, blocks);
  if (tag == 0) return;
  _Atomic uint64_t* slot = accel_cpu_quick_slot(plugin, tag);
  if (ns < ACCEL_CPU_QUICK_NS) {
    atomic_store_explicit(slot, tag, memory_order_relaxed);
  } else {
    atomic_compare_exchange_strong_explicit(slot, &tag, 0, memory_order_relaxed,
                                            memory_order_relaxed);
  }
}

static bool accel_cpu_quick_known(accel_cpu_plugin_t* plugin,
                                  const accel_cpu_launch_task_t* t,
                                  uint64_t blocks) {
  uint64_t tag = accel_cpu_quick_tag(t, blocks);
  return tag != 0 && atomic_load_explicit(accel_cpu_quick_slot(plugin, tag),
                                          memory_order_relaxed) == tag;
}

static accel_status_t accel_cpu_launch_call(accel_cpu_device_t* device,
                                            void* arg, char* message,
                                            size_t size) {
  accel_cpu_launch_task_t* t = arg;
  accel_cpu_pool_t* pool = atomic_load(&device->plugin->pool);
  uint32_t width = accel_cpu_pool_width(pool);
  // A captured launch runs once per graph launch (graph.c): each run
  // starts without the failure of the one before.
  atomic_store_explicit(&t->fail_claimed, 0, memory_order_relaxed);
  atomic_store_explicit(&t->fail_status, 0, memory_order_relaxed);
  t->fail_message[0] = '\0';
  if (t->shared_mem_bytes != 0) {
    t->shared_stride = ((size_t)t->shared_mem_bytes + ACCEL_CPU_ALIGNMENT - 1) &
                       ~(size_t)(ACCEL_CPU_ALIGNMENT - 1);
    t->shared = aligned_alloc(ACCEL_CPU_ALIGNMENT, t->shared_stride * width);
    if (t->shared == NULL) {
      snprintf(message, size,
               "launch: out of host memory for %u x %u bytes "
               "of shared memory",
               width, t->shared_mem_bytes);
      return ACCEL_ERROR_OUT_OF_MEMORY;
    }
  }
  uint64_t blocks = (uint64_t)t->grid[0] * t->grid[1] * t->grid[2];
  uint64_t start = blocks <= ACCEL_CPU_INLINE_BLOCKS ? accel_cpu_now_ns() : 0;
  accel_cpu_pool_run(pool, blocks, accel_cpu_launch_block, t);
  if (blocks <= ACCEL_CPU_INLINE_BLOCKS) {
    accel_cpu_quick_note(device->plugin, t, blocks, accel_cpu_now_ns() - start);
  }
  free(t->shared);
  t->shared = NULL;
  int32_t failed = atomic_load_explicit(&t->fail_status, memory_order_acquire);
  if (failed != 0) {
    snprintf(message, size, "launch: the kernel failed: %s", t->fail_message);
    return (accel_status_t)failed;
  }
  return ACCEL_OK;
}

// Bytes reserved for one argument value: its size rounded up to 16, so
// every value is aligned for any scalar or vector type a kernel reads.
static size_t accel_cpu_arg_slot(const accel_plugin_arg_t* arg) {
  size_t size =
      arg->kind == ACCEL_PLUGIN_ARG_BUFFER ? sizeof(void*) : (size_t)arg->size;
  return (size + 15) & ~(size_t)15;
}

accel_status_t accel_cpu_launch(void* function, void* stream_ptr,
                                const accel_plugin_launch_t* launch) {
  accel_cpu_stream_t* stream = stream_ptr;
  accel_cpu_device_t* device = accel_cpu_stream_device(stream);
  const accel_host_t* host = device->host;
  accel_cpu_pool_t* pool = NULL;
  accel_status_t status = accel_cpu_pool_get(device->plugin, &pool);
  if (status != ACCEL_OK) return status;
  size_t head = (sizeof(accel_cpu_launch_task_t) + 15) & ~(size_t)15;
  size_t argv_bytes =
      ((size_t)launch->num_args * sizeof(void*) + 15) & ~(size_t)15;
  size_t values_bytes = 0;
  for (uint32_t i = 0; i < launch->num_args; i++) {
    values_bytes += accel_cpu_arg_slot(&launch->args[i]);
  }
  accel_cpu_task_t* task = accel_cpu_task_create_call(
      accel_cpu_launch_call, head + argv_bytes + values_bytes);
  if (task == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      "cpu:%u: cannot queue a launch with %u arguments",
                      device->index, launch->num_args);
  }
  accel_cpu_launch_task_t* t = task->u.call.arg;
  memcpy(&t->fn, &function, sizeof(t->fn));  // a code address (dlsym)
  memcpy(t->grid, launch->grid, sizeof(t->grid));
  memcpy(t->block, launch->block, sizeof(t->block));
  t->shared_mem_bytes = launch->shared_mem_bytes;
  t->num_args = launch->num_args;
  atomic_init(&t->fail_claimed, 0);
  atomic_init(&t->fail_status, 0);
  t->fail_message[0] = '\0';
  t->argv = (void**)((unsigned char*)t + head);
  t->values = (unsigned char*)t + head + argv_bytes;
  unsigned char* slot = t->values;
  for (uint32_t i = 0; i < launch->num_args; i++) {
    const accel_plugin_arg_t* arg = &launch->args[i];
    if (arg->kind == ACCEL_PLUGIN_ARG_BUFFER) {
      // The memory handle is the host address (memory.c).
      void* address = (unsigned char*)arg->mem + arg->offset;
      memcpy(slot, &address, sizeof(address));
    } else if (arg->size != 0) {
      memcpy(slot, arg->value, arg->size);
    }
    t->argv[i] = slot;
    slot += accel_cpu_arg_slot(arg);
  }
  uint64_t blocks = (uint64_t)t->grid[0] * t->grid[1] * t->grid[2];
  if (blocks <= ACCEL_CPU_INLINE_BLOCKS &&
      accel_cpu_quick_known(device->plugin, t, blocks) &&
      accel_cpu_stream_inline_begin(stream, false)) {
    // The mutex is released while the kernel runs: it may call accel.
    char reason[ACCEL_CPU_MESSAGE_SIZE] = "queued work failed";
    status = accel_cpu_launch_call(device, t, reason, sizeof(reason));
    accel_cpu_stream_inline_end(stream, false, status, reason);
    free(task);
    return ACCEL_OK;
  }
  accel_cpu_stream_submit(stream, task);
  return ACCEL_OK;
}
