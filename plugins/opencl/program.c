// SPDX-License-Identifier: MIT
//
// Building OpenCL programs for one device: from OpenCL C source (custom
// modules and the built-in kernels) or from SPIR-V (clCreateProgramWithIL,
// only where the device takes IL). A failed compilation is
// ACCEL_ERROR_INVALID_ARGUMENT with the compiler's log in the message.
//
// The built-in kernels go through a program binary cache on disk, so a
// second process does not pay the driver's JIT again (PoCL takes seconds
// per program). A cache file is named after a 64-bit FNV-1a hash of
// everything the binary depends on: the source, the build options, the
// device's name and version, the driver version and the platform's name
// and version. It starts with a small header (magic, format version, the
// key hash, the binary's size) so that a truncated, foreign or stale file
// is recognised, ignored and rewritten; a binary the driver refuses is
// treated the same way. Files are written to a temporary name and renamed
// into place, so concurrent processes never see half a file.
//
// Directory: $ACCEL_OPENCL_CACHE_DIR, else $XDG_CACHE_HOME/accel/opencl,
// else $HOME/.cache/accel/opencl. ACCEL_OPENCL_CACHE=0 turns the cache off.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "accel_opencl.h"

// Largest cached binary read back; a larger file is ignored.
#define ACCEL_OPENCL_CACHE_MAX ((uint64_t)256 << 20)
// Characters of a long build log kept in an error message (the core's
// message buffer holds 1 KiB): its start, where the first error is, and
// its end, which says how many errors there were.
#define ACCEL_OPENCL_LOG_HEAD 560
#define ACCEL_OPENCL_LOG_TAIL 140
// Cache file header: magic, format version, key hash, binary size.
#define ACCEL_OPENCL_CACHE_MAGIC 0x4c43434fu  // "OCCL"
#define ACCEL_OPENCL_CACHE_FORMAT 1u
// Room for the cache directory, a cache file and its temporary name.
#define ACCEL_OPENCL_DIR_SIZE 1024
#define ACCEL_OPENCL_FILE_SIZE (ACCEL_OPENCL_DIR_SIZE + 32)
#define ACCEL_OPENCL_TMP_SIZE (ACCEL_OPENCL_FILE_SIZE + 32)

typedef struct accel_opencl_cache_header {
  uint32_t magic;
  uint32_t format;
  uint64_t key;
  uint64_t size;
} accel_opencl_cache_header_t;

// ---------------------------------------------------------------------------
// Build log and errors
// ---------------------------------------------------------------------------

// Fails with the device's build log of `program` (or the error's name when
// there is none): INVALID_ARGUMENT for a compile error, otherwise the
// status accel_opencl_check gives. A long log keeps its first
// ACCEL_OPENCL_LOG_HEAD and last ACCEL_OPENCL_LOG_TAIL characters.
static accel_status_t accel_opencl_build_failed(accel_opencl_device_t* device,
                                                cl_program program, cl_int err,
                                                const char* what) {
  const accel_host_t* host = device->host;
  size_t size = 0;
  char* log = NULL;
  if (device->cl->clGetProgramBuildInfo(program, device->id,
                                        CL_PROGRAM_BUILD_LOG, 0, NULL,
                                        &size) == CL_SUCCESS &&
      size > 1) {
    log = malloc(size + 1);
    if (log != NULL && device->cl->clGetProgramBuildInfo(
                           program, device->id, CL_PROGRAM_BUILD_LOG, size, log,
                           NULL) != CL_SUCCESS) {
      free(log);
      log = NULL;
    }
  }
  if (log == NULL) {
    if (err == CL_BUILD_PROGRAM_FAILURE) {
      return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                        "%s: CL_BUILD_PROGRAM_FAILURE (no build log)", what);
    }
    return accel_opencl_check(host, err, what);
  }
  log[size] = '\0';
  size_t len = strlen(log);
  while (len > 0 && (log[len - 1] == '\n' || log[len - 1] == ' ')) len--;
  log[len] = '\0';
  accel_status_t status =
      err == CL_BUILD_PROGRAM_FAILURE || err == CL_INVALID_BUILD_OPTIONS
          ? ACCEL_ERROR_INVALID_ARGUMENT
          : ACCEL_ERROR_BACKEND;
  const char* name = accel_opencl_error_name(err);
  if (len <= ACCEL_OPENCL_LOG_HEAD + ACCEL_OPENCL_LOG_TAIL + 64) {
    host->fail(host, status, "%s: %s; build log:\n%s", what, name, log);
  } else {
    host->fail(host, status,
               "%s: %s; build log:\n%.*s\n[... %zu characters ...]\n%s", what,
               name, ACCEL_OPENCL_LOG_HEAD, log,
               len - ACCEL_OPENCL_LOG_HEAD - ACCEL_OPENCL_LOG_TAIL,
               log + len - ACCEL_OPENCL_LOG_TAIL);
  }
  free(log);
  return status;
}

// Builds `program` for the device; on failure releases it.
static accel_status_t accel_opencl_program_finish(accel_opencl_device_t* device,
                                                  cl_program program,
                                                  const char* options,
                                                  const char* what,
                                                  cl_program* out_program) {
  cl_int err = device->cl->clBuildProgram(
      program, 1, &device->id, options != NULL ? options : "", NULL, NULL);
  if (err != CL_SUCCESS) {
    accel_status_t status =
        accel_opencl_build_failed(device, program, err, what);
    device->cl->clReleaseProgram(program);
    return status;
  }
  *out_program = program;
  return ACCEL_OK;
}

// ---------------------------------------------------------------------------
// The cache
// ---------------------------------------------------------------------------

static uint64_t accel_opencl_fnv(uint64_t h, const void* data, size_t size) {
  const unsigned char* p = data;
  for (size_t i = 0; i < size; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  // A separator, so "ab"+"c" and "a"+"bc" differ.
  return (h ^ 0xffu) * 0x100000001b3ull;
}

// Hashes one device or platform string into `h`.
static uint64_t accel_opencl_fnv_info(accel_opencl_device_t* device, uint64_t h,
                                      bool platform, cl_uint param) {
  char text[512] = "";
  size_t size = 0;
  cl_int err = platform
                   ? device->cl->clGetPlatformInfo(
                         device->platform, param, sizeof(text) - 1, text, &size)
                   : device->cl->clGetDeviceInfo(device->id, param,
                                                 sizeof(text) - 1, text, &size);
  if (err != CL_SUCCESS) text[0] = '\0';
  return accel_opencl_fnv(h, text, strnlen(text, sizeof(text)));
}

static uint64_t accel_opencl_cache_key(accel_opencl_device_t* device,
                                       const char* source, size_t size,
                                       const char* options) {
  uint64_t h = 0xcbf29ce484222325ull;
  h = accel_opencl_fnv(h, source, size);
  h = accel_opencl_fnv(h, options, strlen(options));
  h = accel_opencl_fnv_info(device, h, false, CL_DEVICE_NAME);
  h = accel_opencl_fnv_info(device, h, false, CL_DEVICE_VERSION);
  h = accel_opencl_fnv_info(device, h, false, CL_DRIVER_VERSION);
  h = accel_opencl_fnv_info(device, h, true, CL_PLATFORM_NAME);
  h = accel_opencl_fnv_info(device, h, true, CL_PLATFORM_VERSION);
  return h;
}

// Creates every missing directory of `path` (mkdir -p). False on failure.
static bool accel_opencl_mkdirs(char* path) {
  for (char* p = path + 1; *p != '\0'; p++) {
    if (*p != '/') continue;
    *p = '\0';
    bool ok = mkdir(path, 0700) == 0 || errno == EEXIST;
    *p = '/';
    if (!ok) return false;
  }
  return mkdir(path, 0700) == 0 || errno == EEXIST;
}

// Fills `file` with the cache file for `key`; false when the cache is off
// or no directory can be named or created.
static bool accel_opencl_cache_path(accel_opencl_device_t* device, uint64_t key,
                                    char* file, size_t file_size) {
  const accel_host_t* host = device->host;
  const char* off = host->getenv(host, "ACCEL_OPENCL_CACHE");
  if (off != NULL && strcmp(off, "0") == 0) return false;
  const char* dir = host->getenv(host, "ACCEL_OPENCL_CACHE_DIR");
  const char* xdg = host->getenv(host, "XDG_CACHE_HOME");
  const char* home = host->getenv(host, "HOME");
  char path[ACCEL_OPENCL_DIR_SIZE];
  int n;
  if (dir != NULL && dir[0] == '/') {
    n = snprintf(path, sizeof(path), "%s", dir);
  } else if (xdg != NULL && xdg[0] == '/') {
    n = snprintf(path, sizeof(path), "%s/accel/opencl", xdg);
  } else if (home != NULL && home[0] == '/') {
    n = snprintf(path, sizeof(path), "%s/.cache/accel/opencl", home);
  } else {
    return false;
  }
  if (n < 0 || (size_t)n >= sizeof(path) || !accel_opencl_mkdirs(path)) {
    return false;
  }
  n = snprintf(file, file_size, "%s/%016llx.clbin", path,
               (unsigned long long)key);
  return n >= 0 && (size_t)n < file_size;
}

// Reads the binary cached for `key`; NULL when absent, foreign, stale or
// truncated.
static unsigned char* accel_opencl_cache_read(const char* file, uint64_t key,
                                              size_t* out_size) {
  FILE* f = fopen(file, "rb");
  if (f == NULL) return NULL;
  accel_opencl_cache_header_t header;
  unsigned char* data = NULL;
  if (fread(&header, sizeof(header), 1, f) == 1 &&
      header.magic == ACCEL_OPENCL_CACHE_MAGIC &&
      header.format == ACCEL_OPENCL_CACHE_FORMAT && header.key == key &&
      header.size > 0 && header.size <= ACCEL_OPENCL_CACHE_MAX) {
    data = malloc((size_t)header.size);
    // The file must end right after the binary.
    if (data != NULL &&
        (fread(data, 1, (size_t)header.size, f) != header.size ||
         fgetc(f) != EOF)) {
      free(data);
      data = NULL;
    }
  }
  fclose(f);
  *out_size = data != NULL ? (size_t)header.size : 0;
  return data;
}

// Writes `binary` to `file` through a temporary name and rename().
static bool accel_opencl_cache_write(const char* file, uint64_t key,
                                     const void* binary, size_t size) {
  // A unique temporary name: two devices of one process (or two
  // processes) may write the same key at once.
  char tmp[ACCEL_OPENCL_TMP_SIZE];
  snprintf(tmp, sizeof(tmp), "%s.XXXXXX", file);
  int fd = mkstemp(tmp);
  if (fd < 0) return false;
  accel_opencl_cache_header_t header = {
      .magic = ACCEL_OPENCL_CACHE_MAGIC,
      .format = ACCEL_OPENCL_CACHE_FORMAT,
      .key = key,
      .size = size,
  };
  bool ok = write(fd, &header, sizeof(header)) == (ssize_t)sizeof(header) &&
            write(fd, binary, size) == (ssize_t)size;
  ok = close(fd) == 0 && ok;
  if (ok) ok = rename(tmp, file) == 0;
  if (!ok) unlink(tmp);
  return ok;
}

// The device binary of a built program (malloc'ed), or NULL.
static unsigned char* accel_opencl_program_binary(accel_opencl_device_t* device,
                                                  cl_program program,
                                                  size_t* out_size) {
  size_t size = 0;
  *out_size = 0;
  // The program has exactly one device, so one size and one pointer.
  if (device->cl->clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES,
                                   sizeof(size), &size, NULL) != CL_SUCCESS ||
      size == 0) {
    return NULL;
  }
  unsigned char* binary = malloc(size);
  if (binary == NULL) return NULL;
  if (device->cl->clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(binary),
                                   &binary, NULL) != CL_SUCCESS) {
    free(binary);
    return NULL;
  }
  *out_size = size;
  return binary;
}

// Loads a cached binary; false (and nothing to release) when the driver
// refuses it.
static bool accel_opencl_cache_load(accel_opencl_device_t* device,
                                    const unsigned char* binary, size_t size,
                                    const char* options,
                                    cl_program* out_program) {
  cl_int err = CL_SUCCESS, binary_status = CL_SUCCESS;
  cl_program program = device->cl->clCreateProgramWithBinary(
      device->context, 1, &device->id, &size, &binary, &binary_status, &err);
  if (err != CL_SUCCESS || binary_status != CL_SUCCESS) {
    if (program != NULL) device->cl->clReleaseProgram(program);
    return false;
  }
  if (device->cl->clBuildProgram(program, 1, &device->id, options, NULL,
                                 NULL) != CL_SUCCESS) {
    device->cl->clReleaseProgram(program);
    return false;
  }
  *out_program = program;
  return true;
}

// ---------------------------------------------------------------------------
// Entry points
// ---------------------------------------------------------------------------

accel_status_t accel_opencl_program_build(accel_opencl_device_t* device,
                                          const char* source, size_t size,
                                          const char* options, bool cache,
                                          const char* what,
                                          cl_program* out_program) {
  const accel_host_t* host = device->host;
  *out_program = NULL;
  if (options == NULL) options = "";
  char file[ACCEL_OPENCL_FILE_SIZE];
  uint64_t key = 0;
  bool cacheable = false;
  if (cache) {
    key = accel_opencl_cache_key(device, source, size, options);
    cacheable = accel_opencl_cache_path(device, key, file, sizeof(file));
  }
  if (cacheable) {
    size_t binary_size = 0;
    unsigned char* binary = accel_opencl_cache_read(file, key, &binary_size);
    if (binary != NULL) {
      bool ok = accel_opencl_cache_load(device, binary, binary_size, options,
                                        out_program);
      free(binary);
      if (ok) {
        host->log(host, ACCEL_LOG_DEBUG, "%s: program binary from cache %s",
                  what, file);
        return ACCEL_OK;
      }
    }
    if (access(file, F_OK) == 0) {
      host->log(host, ACCEL_LOG_WARN,
                "%s: ignoring unusable program cache file %s", what, file);
    }
  }
  cl_int err = CL_SUCCESS;
  cl_program program = device->cl->clCreateProgramWithSource(
      device->context, 1, &source, &size, &err);
  if (err != CL_SUCCESS) return accel_opencl_check(host, err, what);
  accel_status_t status =
      accel_opencl_program_finish(device, program, options, what, &program);
  if (status != ACCEL_OK) return status;
  if (!cacheable) {
    *out_program = program;
    return ACCEL_OK;
  }
  size_t binary_size = 0;
  unsigned char* binary =
      accel_opencl_program_binary(device, program, &binary_size);
  bool written = binary != NULL &&
                 accel_opencl_cache_write(file, key, binary, binary_size);
  free(binary);
  host->log(host, ACCEL_LOG_DEBUG, "%s: compiled; %s %s", what,
            written ? "program binary cached at" : "could not cache it at",
            file);
  *out_program = program;
  return ACCEL_OK;
}

accel_status_t accel_opencl_program_build_il(accel_opencl_device_t* device,
                                             const void* il, size_t size,
                                             const char* what,
                                             cl_program* out_program) {
  const accel_host_t* host = device->host;
  *out_program = NULL;
  if (!device->has_il || device->cl->clCreateProgramWithIL == NULL) {
    return host->fail(host, ACCEL_ERROR_UNSUPPORTED,
                      "%s: %s takes no SPIR-V (no CL_DEVICE_IL_VERSION, or an "
                      "ICD loader older than OpenCL 2.1); load OpenCL C "
                      "source instead",
                      what, device->props.name);
  }
  cl_int err = CL_SUCCESS;
  cl_program program =
      device->cl->clCreateProgramWithIL(device->context, il, size, &err);
  if (err != CL_SUCCESS) {
    if (err == CL_INVALID_VALUE || err == CL_INVALID_BINARY) {
      return host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                        "%s: the driver refused the SPIR-V module: %s", what,
                        accel_opencl_error_name(err));
    }
    return accel_opencl_check(host, err, what);
  }
  return accel_opencl_program_finish(device, program, "", what, out_program);
}
