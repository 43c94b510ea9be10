// SPDX-License-Identifier: MIT
//
// Custom kernels: modules (a target binary loaded on one device) and the
// kernels looked up in them. The core sniffs every image and rejects one
// built for another backend or architecture itself, so the message names
// both targets the same way for every plugin.
//
// Lifetime: a kernel keeps its module alive and a module its device. A
// launch may still be queued when the last reference goes, so each module
// remembers the streams it was launched on (a weak reference each, taken
// at the first launch there), and the final release waits for each of
// them, or for its destruction, before the plugin unloads the code. The
// wait blocks the releasing thread only while work is still queued.
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "graph_internal.h"
#include "internal.h"
#include "trace.h"

// Largest file accel_module_create_from_file() reads.
#define ACCEL__MODULE_FILE_MAX ((size_t)1 << 30)

// Arguments translated on the stack up to this many; the heap beyond.
#define ACCEL__LAUNCH_STACK_ARGS 16

// Most blocks one launch may have, whatever the device says.
#define ACCEL__LAUNCH_MAX_BLOCKS ((uint64_t)1 << 63)

// A stream a module was launched on: a weak reference (the struct stays
// readable, the stream may be destroyed), so the final release of the
// module can wait for what each such stream has queued. Nothing is
// recorded per launch: an event record after every launch cost a marker
// and a flush per launch on OpenCL.
typedef struct accel__launch_mark {
  accel_stream_t* stream;
} accel__launch_mark_t;

struct accel_module {
  atomic_uint refs;
  accel_device_t* device;
  void* impl;
  pthread_mutex_t lock;  // guards the marks
  accel__launch_mark_t* marks;
  size_t mark_count;
  size_t mark_capacity;
};

struct accel_kernel {
  atomic_uint refs;
  accel_module_t* module;
  void* impl;
};

// ---------------------------------------------------------------------------
// Modules.
// ---------------------------------------------------------------------------

size_t accel__family_len(const char* target) {
  const char* dash = strchr(target, '-');
  return dash != NULL ? (size_t)(dash - target) : strlen(target);
}

// True when the space-separated `list` holds the word s[0, len).
static bool accel__listed(const char* list, const char* s, size_t len) {
  while (*list != '\0') {
    while (*list == ' ') list++;
    size_t n = strcspn(list, " ");
    if (n != 0 && n == len && memcmp(list, s, len) == 0) return true;
    list += n;
  }
  return false;
}

void accel__device_loads(const accel_device_t* device, char* out, size_t n) {
  snprintf(out, n, "%s", device->module_target);
  const char* f = device->module_formats;
  while (*f != '\0') {
    while (*f == ' ') f++;
    size_t len = strcspn(f, " ");
    size_t used = strlen(out);
    if (len != 0 && used + 1 < n) {
      snprintf(out + used, n - used, "%s%.*s", used != 0 ? ", " : "",
               (int)len, f);
    }
    f += len;
  }
}

// Decides whether `device` can be handed an image that holds `target`:
// host ELF must match exactly; for GPU formats the family must match and
// the plugin decides about the architecture (fatbins and PTX run on many).
// Since ABI 1.3 a format the device lists in `module_formats` (the whole
// target or its family) is handed over too, and an unrecognised image
// only when that list is not empty.
static accel_status_t accel__check_target(const char* what,
                                          const accel_device_t* device,
                                          const char* target,
                                          const char* description) {
  const char* want = device->module_target;
  const char* formats = device->module_formats;
  size_t fam = accel__family_len(target);
  bool ok;
  if (strcmp(target, "unknown") == 0) {
    ok = formats[0] != '\0';
  } else {
    ok = want[0] != '\0' && fam == accel__family_len(want) &&
         memcmp(target, want, fam) == 0;
    if (ok && strncmp(target, "elf", fam) == 0) ok = strcmp(target, want) == 0;
    ok = ok || accel__listed(formats, target, strlen(target)) ||
         accel__listed(formats, target, fam);
  }
  if (ok) return ACCEL_OK;
  char loads[256];
  accel__device_loads(device, loads, sizeof(loads));
  return accel__fail(ACCEL_ERROR_INCOMPATIBLE,
                     "%s: module holds %s; %s loads %s", what, description,
                     device->uri, loads);
}

accel_status_t accel__module_load_image(const char* what,
                                        accel_device_t* device,
                                        const void* image, size_t size,
                                        const char* target,
                                        const char* description,
                                        void** out_impl) {
  accel_status_t status =
      accel__check_target(what, device, target, description);
  if (status != ACCEL_OK) return status;
  return device->ops->module_load(device->impl, image, size, out_impl);
}

accel_status_t accel_module_create(accel_device_t* device, const void* image,
                                   size_t size, accel_module_t** out_module) {
  ACCEL__TRACE_API("accel_module_create");
  static const char what[] = "accel_module_create";
  if (out_module != NULL) *out_module = NULL;
  if (device == NULL || image == NULL || size == 0 || out_module == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: device, a non-empty image and out_module are "
                       "required",
                       what);
  }
  if (device->module_target[0] == '\0' && device->module_formats[0] == '\0') {
    return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                       "%s: %s does not run custom kernels", what, device->uri);
  }
  accel_module_t* module = calloc(1, sizeof(*module));
  if (module == NULL) {
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "%s: module handle", what);
  }
  if (pthread_mutex_init(&module->lock, NULL) != 0) {
    free(module);
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "%s: module lock", what);
  }
  char target[64];
  char description[256];
  accel__image_describe(image, size, target, sizeof(target), description,
                        sizeof(description));
  accel_status_t status;
  if (strcmp(target, "accel-bundle") == 0) {
    status = accel__bundle_load(what, device, image, size, &module->impl);
  } else {
    status = accel__module_load_image(what, device, image, size, target,
                                      description, &module->impl);
  }
  if (status != ACCEL_OK) {
    pthread_mutex_destroy(&module->lock);
    free(module);
    return status;  // the check or the plugin recorded why
  }
  atomic_init(&module->refs, 1);
  module->device = device;
  accel_device_retain(device);
  *out_module = module;
  return ACCEL_OK;
}

// Reads all of `file` into a new heap block, up to ACCEL__MODULE_FILE_MAX.
static accel_status_t accel__read_file(const char* what, const char* path,
                                       FILE* file, void** out_data,
                                       size_t* out_size) {
  size_t capacity = 1 << 16, size = 0;
  unsigned char* data = malloc(capacity);
  while (data != NULL) {
    size += fread(data + size, 1, capacity - size, file);
    if (size < capacity) break;  // end of file or error
    if (capacity >= ACCEL__MODULE_FILE_MAX) {
      free(data);
      return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: '%s' is larger than the %zu-byte limit", what,
                         path, ACCEL__MODULE_FILE_MAX);
    }
    capacity *= 2;
    unsigned char* grown = realloc(data, capacity);
    if (grown == NULL) free(data);
    data = grown;
  }
  if (data == NULL) {
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "%s: no memory to read '%s'",
                       what, path);
  }
  if (ferror(file)) {
    int err = errno;
    free(data);
    return accel__fail(ACCEL_ERROR_NOT_FOUND, "%s: cannot read '%s': %s", what,
                       path, strerror(err));
  }
  *out_data = data;
  *out_size = size;
  return ACCEL_OK;
}

// Opens `path` for reading if it is a regular file of at most
// ACCEL__MODULE_FILE_MAX bytes. The open does not block (a FIFO without a
// writer would), and fstat() decides on the file actually opened.
static accel_status_t accel__open_regular(const char* what, const char* path,
                                          FILE** out_file) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    return accel__fail(ACCEL_ERROR_NOT_FOUND, "%s: cannot open '%s': %s", what,
                       path, strerror(errno));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return accel__fail(ACCEL_ERROR_NOT_FOUND, "%s: cannot stat '%s': %s",
                       what, path, strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    close(fd);
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: '%s' is %s; a module is read from a regular file",
                       what, path, kind);
  }
  if ((uint64_t)st.st_size > ACCEL__MODULE_FILE_MAX) {
    close(fd);
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: '%s' is larger than the %zu-byte limit", what,
                       path, ACCEL__MODULE_FILE_MAX);
  }
  int flags = fcntl(fd, F_GETFL);
  if (flags == -1 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) == -1) {
    int err = errno;
    close(fd);
    return accel__fail(ACCEL_ERROR_NOT_FOUND, "%s: cannot read '%s': %s", what,
                       path, strerror(err));
  }
  *out_file = fdopen(fd, "rb");
  if (*out_file == NULL) {
    int err = errno;
    close(fd);
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "%s: cannot read '%s': %s",
                       what, path, strerror(err));
  }
  return ACCEL_OK;
}

accel_status_t accel_module_create_from_file(accel_device_t* device,
                                             const char* path,
                                             accel_module_t** out_module) {
  ACCEL__TRACE_API("accel_module_create_from_file");
  static const char what[] = "accel_module_create_from_file";
  if (out_module != NULL) *out_module = NULL;
  if (device == NULL || path == NULL || out_module == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: device, path and out_module are required", what);
  }
  FILE* file = NULL;
  accel_status_t status = accel__open_regular(what, path, &file);
  if (status != ACCEL_OK) return status;
  void* data = NULL;
  size_t size = 0;
  status = accel__read_file(what, path, file, &data, &size);
  fclose(file);
  if (status != ACCEL_OK) return status;
  if (size == 0) {
    free(data);
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: '%s' is empty", what,
                       path);
  }
  status = accel_module_create(device, data, size, out_module);
  free(data);
  return status;
}

void accel_module_retain(accel_module_t* module) {
  if (module != NULL) atomic_fetch_add(&module->refs, 1);
}

void accel_module_release(accel_module_t* module) {
  if (module == NULL || atomic_fetch_sub(&module->refs, 1) != 1) return;
  accel_device_t* device = module->device;
  // Nobody else can launch it now; wait for what is still queued.
  for (size_t i = 0; i < module->mark_count; i++) {
    accel__stream_drain_weak(module->marks[i].stream);
    accel__stream_weak_release(module->marks[i].stream);
  }
  device->ops->module_unload(module->impl);
  free(module->marks);
  pthread_mutex_destroy(&module->lock);
  free(module);
  accel_device_release(device);
}

// Records that `module` was just launched on `stream`, so that its final
// release waits for the stream. If that cannot be recorded, waits for the
// stream now instead, so a later release never unloads code that is still
// queued.
static accel_status_t accel__module_mark(accel_module_t* module,
                                         accel_stream_t* stream) {
  accel_status_t status = ACCEL_OK;
  pthread_mutex_lock(&module->lock);
  bool marked = false;
  for (size_t i = 0; i < module->mark_count && !marked; i++) {
    marked = module->marks[i].stream == stream;
  }
  if (!marked && module->mark_count == module->mark_capacity) {
    // Streams destroyed since: their work is done, so forget them.
    size_t kept = 0;
    for (size_t i = 0; i < module->mark_count; i++) {
      accel_stream_t* s = module->marks[i].stream;
      if (accel__stream_gone(s)) {
        accel__stream_weak_release(s);
      } else {
        module->marks[kept++].stream = s;
      }
    }
    module->mark_count = kept;
  }
  if (!marked && module->mark_count == module->mark_capacity) {
    size_t capacity = module->mark_capacity ? 2 * module->mark_capacity : 4;
    accel__launch_mark_t* grown =
        realloc(module->marks, capacity * sizeof(*grown));
    if (grown != NULL) {
      module->marks = grown;
      module->mark_capacity = capacity;
    }
  }
  if (!marked && module->mark_count < module->mark_capacity) {
    accel__stream_weak_retain(stream);
    module->marks[module->mark_count++].stream = stream;
    marked = true;
  }
  if (!marked) status = module->device->ops->stream_synchronize(stream->impl);
  pthread_mutex_unlock(&module->lock);
  return status;
}

// ---------------------------------------------------------------------------
// Kernels.
// ---------------------------------------------------------------------------

accel_status_t accel_kernel_create(accel_module_t* module, const char* name,
                                   accel_kernel_t** out_kernel) {
  static const char what[] = "accel_kernel_create";
  if (out_kernel != NULL) *out_kernel = NULL;
  if (module == NULL || name == NULL || name[0] == '\0' || out_kernel == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: module, a non-empty name and out_kernel are "
                       "required",
                       what);
  }
  accel_kernel_t* kernel = calloc(1, sizeof(*kernel));
  if (kernel == NULL) {
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "%s: kernel handle", what);
  }
  accel_device_t* device = module->device;
  accel_status_t status =
      device->ops->module_function(module->impl, name, &kernel->impl);
  if (status != ACCEL_OK) {
    free(kernel);
    if (status == ACCEL_ERROR_NOT_FOUND) {
      // Name the function whatever the plugin said.
      char reason[512];
      snprintf(reason, sizeof(reason), "%s", accel_last_error());
      return accel__fail(status,
                         "%s: no kernel named '%.200s' in the module "
                         "on %s%s%s",
                         what, name, device->uri, reason[0] ? ": " : "",
                         reason);
    }
    return status;
  }
  atomic_init(&kernel->refs, 1);
  kernel->module = module;
  accel_module_retain(module);
  *out_kernel = kernel;
  return ACCEL_OK;
}

void accel_kernel_retain(accel_kernel_t* kernel) {
  if (kernel != NULL) atomic_fetch_add(&kernel->refs, 1);
}

void accel_kernel_release(accel_kernel_t* kernel) {
  if (kernel == NULL || atomic_fetch_sub(&kernel->refs, 1) != 1) return;
  accel_module_t* module = kernel->module;
  free(kernel);  // plugin functions live as long as their module
  accel_module_release(module);
}

void accel_launch_config_init(accel_launch_config_t* config) {
  if (config == NULL) return;
  memset(config, 0, sizeof(*config));
  config->struct_size = sizeof(*config);
  for (int i = 0; i < 3; i++) {
    config->grid[i] = 1;
    config->block[i] = 1;
  }
}

// Checks the geometry of `config` against `device`.
accel_status_t accel__kernel_check_config(const char* what,
                                          const accel_device_t* device,
                                          const accel_launch_config_t* c) {
  if (c->struct_size < sizeof(accel_launch_config_t)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: config->struct_size is %u, expected %zu; "
                       "initialise it with accel_launch_config_init()",
                       what, c->struct_size, sizeof(accel_launch_config_t));
  }
  if (c->grid[0] == 0 || c->grid[1] == 0 || c->grid[2] == 0 ||
      c->block[0] == 0 || c->block[1] == 0 || c->block[2] == 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: grid %u x %u x %u, block %u x %u x %u: every "
                       "dimension must be at least 1",
                       what, c->grid[0], c->grid[1], c->grid[2], c->block[0],
                       c->block[1], c->block[2]);
  }
  static const char axis[3] = {'x', 'y', 'z'};
  for (int i = 0; i < 3; i++) {
    uint32_t most = device->max_grid[i];
    if (most != 0 && c->grid[i] > most) {
      return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: grid %u x %u x %u: %s allows at most %u blocks "
                         "in %c (max_grid %u x %u x %u)",
                         what, c->grid[0], c->grid[1], c->grid[2], device->uri,
                         most, axis[i], device->max_grid[0],
                         device->max_grid[1], device->max_grid[2]);
    }
  }
  // Two factors below 2^32 cannot overflow 64 bits; the third is checked
  // by division.
  uint64_t blocks = (uint64_t)c->grid[0] * c->grid[1];
  if (blocks > ACCEL__LAUNCH_MAX_BLOCKS / c->grid[2]) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: grid %u x %u x %u is more than 2^63 blocks", what,
                       c->grid[0], c->grid[1], c->grid[2]);
  }
  if (device->max_shared_mem_bytes != 0 &&
      c->shared_mem_bytes > device->max_shared_mem_bytes) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: shared_mem_bytes is %u; %s allows at most %llu "
                       "bytes of dynamic shared memory per launch",
                       what, c->shared_mem_bytes, device->uri,
                       (unsigned long long)device->max_shared_mem_bytes);
  }
  uint64_t threads = (uint64_t)c->block[0] * c->block[1] * c->block[2];
  uint32_t limit = device->max_threads_per_block;
  if (limit != 0 && threads > limit) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: block %u x %u x %u is %llu threads; %s allows %u "
                       "per block",
                       what, c->block[0], c->block[1], c->block[2],
                       (unsigned long long)threads, device->uri, limit);
  }
  return ACCEL_OK;
}

// Checks argument `i` and translates it for the plugin.
accel_status_t accel__kernel_translate_arg(const char* what,
                                           const accel_device_t* device,
                                           size_t i,
                                           const accel_kernel_arg_t* arg,
                                           accel_plugin_arg_t* out) {
  memset(out, 0, sizeof(*out));
  if (arg->kind == ACCEL_KERNEL_ARG_VALUE) {
    if (arg->size > ACCEL_KERNEL_ARG_VALUE_MAX) {
      return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: args[%zu] is a value argument of %u bytes; "
                         "the limit is %d bytes per value (pass larger data "
                         "in a buffer)",
                         what, i, arg->size, ACCEL_KERNEL_ARG_VALUE_MAX);
    }
    if (arg->value == NULL || arg->size == 0) {
      return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: args[%zu] is a value argument of %u bytes "
                         "with a %s value; it needs a non-NULL value and a "
                         "size > 0",
                         what, i, arg->size,
                         arg->value != NULL ? "non-NULL" : "NULL");
    }
    out->kind = ACCEL_PLUGIN_ARG_VALUE;
    out->size = arg->size;
    out->value = arg->value;
    return ACCEL_OK;
  }
  if (arg->kind != ACCEL_KERNEL_ARG_BUFFER) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: args[%zu] has unknown kind %d", what, i,
                       (int)arg->kind);
  }
  const accel_buffer_t* buffer = arg->buffer;
  if (buffer == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: args[%zu] is a NULL buffer", what, i);
  }
  if (accel__buffer_released(buffer)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: args[%zu] buffer was already released", what, i);
  }
  if (buffer->device != device) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: args[%zu] buffer is on %s but the stream is on %s",
                       what, i, buffer->device->uri, device->uri);
  }
  if (arg->offset >= buffer->size) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: args[%zu] offset %zu is outside the %zu-byte "
                       "buffer",
                       what, i, arg->offset, buffer->size);
  }
  out->kind = ACCEL_PLUGIN_ARG_BUFFER;
  out->mem = accel__buffer_mem(buffer);
  out->offset = accel__buffer_offset(buffer, arg->offset);
  // Handle-based memory (ABI 1.3): a plugin offset becomes a sub-buffer
  // origin, which the device may require to be aligned.
  uint32_t align = device->buffer_offset_alignment;
  if (align > 1 && out->offset % align != 0) {
    return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                       "%s: args[%zu] is at offset %llu of its device "
                       "allocation (buffer offset %zu), not a multiple of "
                       "%s's buffer_offset_alignment of %u bytes",
                       what, i, (unsigned long long)out->offset, arg->offset,
                       device->uri, align);
  }
  return ACCEL_OK;
}

accel_status_t accel_kernel_launch(accel_kernel_t* kernel,
                                   accel_stream_t* stream,
                                   const accel_launch_config_t* config,
                                   size_t num_args,
                                   const accel_kernel_arg_t* args) {
  ACCEL__TRACE_STREAM_API("accel_kernel_launch", stream);
  static const char what[] = "accel_kernel_launch";
  if (kernel == NULL || stream == NULL || config == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: kernel, stream and config are required", what);
  }
  accel_device_t* device = kernel->module->device;
  if (device != stream->device) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: the kernel is on %s but the stream is on %s", what,
                       device->uri, stream->device->uri);
  }
  accel_status_t status = accel__kernel_check_config(what, device, config);
  if (status != ACCEL_OK) return status;
  if (num_args > 0 && args == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: args is NULL but num_args is %zu", what, num_args);
  }
  if (num_args > UINT32_MAX) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %zu arguments is too many", what, num_args);
  }
  accel_plugin_arg_t stack_args[ACCEL__LAUNCH_STACK_ARGS];
  accel_plugin_arg_t* translated = stack_args;
  if (num_args > ACCEL__LAUNCH_STACK_ARGS) {
    translated = malloc(num_args * sizeof(*translated));
    if (translated == NULL) {
      return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                         "%s: no memory for %zu arguments", what, num_args);
    }
  }
  for (size_t i = 0; i < num_args && status == ACCEL_OK; i++) {
    status = accel__kernel_translate_arg(what, stream->device, i, &args[i],
                                         &translated[i]);
  }
  // Only once every argument is valid: tell the allocator which buffers
  // this stream is about to use.
  for (size_t i = 0; i < num_args && status == ACCEL_OK; i++) {
    if (args[i].kind == ACCEL_KERNEL_ARG_BUFFER) {
      status = accel__buffer_use(args[i].buffer, stream);
    }
  }
  if (status == ACCEL_OK) {
    accel_plugin_launch_t launch;
    memset(&launch, 0, sizeof(launch));
    launch.struct_size = sizeof(launch);
    memcpy(launch.grid, config->grid, sizeof(launch.grid));
    memcpy(launch.block, config->block, sizeof(launch.block));
    launch.shared_mem_bytes = config->shared_mem_bytes;
    launch.num_args = (uint32_t)num_args;
    launch.args = translated;
    status = accel__capturing(stream)
                 ? accel__graph_launch_kernel(stream, kernel, kernel->impl,
                                              &launch, args)
                 : device->ops->launch(kernel->impl, stream->impl, &launch);
  }
  if (translated != stack_args) free(translated);
  if (status != ACCEL_OK) return status;
  return accel__module_mark(kernel->module, stream);
}
