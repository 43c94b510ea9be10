// SPDX-License-Identifier: MIT
//
// Custom kernel checks. A device that does not claim the kernels
// capability must refuse modules with ACCEL_ERROR_UNSUPPORTED (reported as
// UNSUPPORTED). One that claims it must load a test module, find its
// kernel, report a missing name as NOT_FOUND, and run a launch correctly.
// A device that compiles OpenCL C must report a compile error as
// INVALID_ARGUMENT with its build log.
//
// Test modules live in the kernel directory (--kernel-dir; by default
// share/accel/conform beside the binary, or conform/ next to it in a build
// tree) as files named accel_conform_<backend>* (README.md there lists
// every test kernel; conform_launch.c uses the others). Each holds a kernel
//   accel_conform_add_one(int32_t* data, uint32_t n)
// that adds 1 to data[i] for every global thread index i < n, where
// i = block_id.x * block_dim.x + thread_id.x. The check tries every such
// file and uses the first the device accepts.
#include <dirent.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

void conform_add_one_init(conform_ctx_t* ctx, conform_add_one_t* launch,
                          accel_buffer_t* buffer, size_t offset, uint32_t n,
                          uint32_t count) {
  // 64, or the device's limit where it is smaller (0 would be no limit).
  uint32_t max = ctx->info.max_threads_per_block;
  uint32_t block = max != 0 && max < 64 ? max : 64;
  launch->n = n;
  accel_launch_config_init(&launch->config);
  launch->config.block[0] = block;
  launch->config.grid[0] = (count + block - 1) / block;
  launch->args[0] = (accel_kernel_arg_t){
      .kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = buffer, .offset = offset};
  launch->args[1] = (accel_kernel_arg_t){.kind = ACCEL_KERNEL_ARG_VALUE,
                                         .size = sizeof(launch->n),
                                         .value = &launch->n};
}

accel_status_t conform_add_one_launch(const conform_add_one_t* launch,
                                      accel_kernel_t* kernel,
                                      accel_stream_t* stream) {
  return accel_kernel_launch(kernel, stream, &launch->config, 2, launch->args);
}

accel_status_t conform_launch_add_one(conform_ctx_t* ctx, accel_kernel_t* kernel,
                                      accel_stream_t* stream,
                                      accel_buffer_t* buffer, uint32_t n) {
  conform_add_one_t launch;
  conform_add_one_init(ctx, &launch, buffer, 0, n, n);
  return conform_add_one_launch(&launch, kernel, stream);
}

// Tries every file in the kernel directory whose name starts with
// `prefix` and keeps the first module the device accepts.
static accel_status_t conform_kernel_try(conform_ctx_t* ctx, const char* prefix,
                                         accel_module_t** out_module,
                                         char* path, size_t path_size) {
  DIR* dir = ctx->kernel_dir ? opendir(ctx->kernel_dir) : NULL;
  if (dir == NULL) return ACCEL_ERROR_NOT_FOUND;
  accel_status_t status = ACCEL_ERROR_NOT_FOUND;
  struct dirent* entry;
  while ((entry = readdir(dir)) != NULL) {
    if (strncmp(entry->d_name, prefix, strlen(prefix)) != 0) continue;
    snprintf(path, path_size, "%s/%s", ctx->kernel_dir, entry->d_name);
    status = accel_module_create_from_file(ctx->device, path, out_module);
    if (status == ACCEL_OK) {
      conform_track_module(ctx, *out_module);
      break;
    }
  }
  closedir(dir);
  return status;
}

// Loads the first test module the device accepts: the backend's own
// (accel_conform_<backend>*) first, then any other (accel_conform_*), so a
// plugin loading another backend's format (the template loads host ELF
// like the CPU backend) finds those; the core refuses the rest.
static accel_status_t conform_kernel_module(conform_ctx_t* ctx,
                                            accel_module_t** out_module,
                                            char* path, size_t path_size) {
  *out_module = NULL;
  path[0] = '\0';
  char prefix[64];
  snprintf(prefix, sizeof(prefix), "accel_conform_%s",
           accel_device_backend(ctx->device));
  accel_status_t status =
      conform_kernel_try(ctx, prefix, out_module, path, path_size);
  if (status == ACCEL_OK) return status;
  char first[1024];
  snprintf(first, sizeof(first), "%s", path);
  status = conform_kernel_try(ctx, "accel_conform_", out_module, path,
                              path_size);
  if (status != ACCEL_OK && first[0] != '\0') {
    snprintf(path, path_size, "%s", first);  // report the backend's own
  }
  return status;
}

accel_status_t conform_kernel_get(conform_ctx_t* ctx, const char* name,
                                  accel_kernel_t** out_kernel, char* path,
                                  size_t path_size) {
  *out_kernel = NULL;
  accel_module_t* module = NULL;
  accel_status_t status =
      conform_kernel_module(ctx, &module, path, path_size);
  if (status != ACCEL_OK) return status;
  status = accel_kernel_create(module, name, out_kernel);
  if (status == ACCEL_OK) conform_track_kernel(ctx, *out_kernel);
  return status;
}

conform_result_t conform_kernel_missing(conform_ctx_t* ctx,
                                        accel_status_t status,
                                        const char* name, const char* path) {
  if ((ctx->info.caps & ACCEL_DEVICE_CAP_KERNELS) == 0) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "no custom kernels");
  }
  if (status == ACCEL_ERROR_NOT_FOUND && path[0] == '\0') {
    return conform_report(ctx, CONFORM_SKIP,
                          "no test module for %s in %s",
                          accel_device_backend(ctx->device),
                          ctx->kernel_dir ? ctx->kernel_dir : "(none)");
  }
  if (status == ACCEL_ERROR_NOT_FOUND) {
    return conform_report(ctx, CONFORM_SKIP, "%s has no kernel %s", path,
                          name);
  }
  return conform_fail_status(ctx, status, name);
}

static conform_result_t conform_kernel_launch_check(conform_ctx_t* ctx,
                                                    const void* arg) {
  (void)arg;
  bool claimed = (ctx->info.caps & ACCEL_DEVICE_CAP_KERNELS) != 0;
  if (!claimed) {
    // The real test modules first: the core refuses the probe image below
    // (a bare ELF header) before a plugin sees it, so a plugin that loads
    // modules without claiming kernels passed on the probe alone.
    char found[1024] = "";
    accel_module_t* module = NULL;
    if (conform_kernel_module(ctx, &module, found, sizeof(found)) ==
        ACCEL_OK) {
      return conform_report(ctx, CONFORM_FAIL,
                            "the test module %s loaded, but kernels are not "
                            "claimed (ACCEL_DEVICE_CAP_KERNELS): a device "
                            "without them must refuse modules",
                            found);
    }
    static const unsigned char image[64] = {0x7f, 'E', 'L', 'F'};
    accel_status_t status =
        accel_module_create(ctx->device, image, sizeof(image), &module);
    if (status == ACCEL_OK) {
      conform_track_module(ctx, module);
      return conform_report(ctx, CONFORM_FAIL,
                            "a module loaded, but kernels are not claimed");
    }
    if (status != ACCEL_ERROR_UNSUPPORTED &&
        status != ACCEL_ERROR_INCOMPATIBLE) {
      return conform_fail_status(ctx, status,
                                 "module without kernels: expected "
                                 "UNSUPPORTED");
    }
    return conform_report(ctx, CONFORM_UNSUPPORTED, "no custom kernels: %s",
                          accel_last_error());
  }
  char path[1024] = "";
  accel_module_t* module = NULL;
  accel_status_t status =
      conform_kernel_module(ctx, &module, path, sizeof(path));
  if (status == ACCEL_ERROR_NOT_FOUND && path[0] == '\0') {
    return conform_report(ctx, CONFORM_SKIP,
                          "kernels claimed, but no accel_conform_%s* test "
                          "module in %s",
                          accel_device_backend(ctx->device),
                          ctx->kernel_dir ? ctx->kernel_dir : "(none)");
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, path);
  accel_kernel_t* missing = NULL;
  status =
      accel_kernel_create(module, "accel_conform_no_such_kernel", &missing);
  if (status != ACCEL_ERROR_NOT_FOUND) {
    if (status == ACCEL_OK) conform_track_kernel(ctx, missing);
    return conform_report(ctx, CONFORM_FAIL,
                          "a missing kernel gave %s, expected NOT_FOUND",
                          accel_status_string(status));
  }
  accel_kernel_t* kernel = NULL;
  status = accel_kernel_create(module, CONFORM_ADD_ONE, &kernel);
  if (status != ACCEL_OK) {
    return conform_fail_status(ctx, status, CONFORM_ADD_ONE);
  }
  conform_track_kernel(ctx, kernel);
  enum { N = 1000 };
  int32_t data[N], want[N];
  for (int i = 0; i < N; i++) data[i] = want[i] = i * 7 - 300;
  for (int i = 0; i < N - 3; i++) want[i] += 1;  // n = N - 3
  accel_buffer_t* buffer = NULL;
  accel_stream_t* stream = NULL;
  status = conform_buffer(ctx, ctx->device, sizeof(data), &buffer);
  if (status == ACCEL_OK)
    status = accel_buffer_write(buffer, 0, data, sizeof(data));
  if (status == ACCEL_OK) status = conform_stream(ctx, ctx->device, &stream);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  conform_add_one_t launch;
  conform_add_one_init(ctx, &launch, buffer, 0, N - 3, N - 3);
  status = conform_add_one_launch(&launch, kernel, stream);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "launch");
  status = conform_stream_wait(ctx, stream);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "launch");
  if (!conform_verify(ctx, buffer, (const unsigned char*)want, sizeof(want),
                      "kernel result")) {
    return CONFORM_FAIL;
  }
  return conform_report(ctx, CONFORM_PASS, "%s from %s: %u blocks of %u",
                        CONFORM_ADD_ONE, path, launch.config.grid[0],
                        launch.config.block[0]);
}

// Whether the space-separated list `formats` holds `name`.
static bool conform_has_format(const char* formats, const char* name) {
  size_t n = strlen(name);
  for (const char* p = formats; (p = strstr(p, name)) != NULL; p += n) {
    bool starts = p == formats || p[-1] == ' ';
    if (starts && (p[n] == '\0' || p[n] == ' ')) return true;
  }
  return false;
}

// kernel.build_error: a device that compiles OpenCL C (module_formats
// lists "opencl-c") must report a compile error as INVALID_ARGUMENT with
// its build log in the message (plugin.h, module_load; accel.h,
// accel_module_create), and an image it cannot load at all must fail,
// not load. The source uses an undeclared name, which every OpenCL C
// compiler names in its log.
static conform_result_t conform_kernel_build_error(conform_ctx_t* ctx,
                                                   const void* arg) {
  (void)arg;
  if (!conform_has_format(ctx->info.module_formats, "opencl-c")) {
    return conform_report(ctx, CONFORM_UNSUPPORTED,
                          "the device compiles no OpenCL C (module formats "
                          "'%s')",
                          ctx->info.module_formats);
  }
  static const char source[] =
      "__kernel void accel_conform_broken(__global int* x) {\n"
      "  x[0] = accel_conform_undeclared_name;\n"
      "}\n";
  accel_module_t* module = NULL;
  accel_status_t status =
      accel_module_create(ctx->device, source, sizeof(source) - 1, &module);
  if (status == ACCEL_OK) {
    conform_track_module(ctx, module);
    return conform_report(ctx, CONFORM_FAIL,
                          "OpenCL C using an undeclared name compiled");
  }
  char message[512];
  snprintf(message, sizeof(message), "%s", accel_last_error());
  if (status != ACCEL_ERROR_INVALID_ARGUMENT) {
    return conform_report(ctx, CONFORM_FAIL,
                          "a compile error gave %s, not INVALID_ARGUMENT: %s",
                          accel_status_string(status), message);
  }
  if (strstr(message, "accel_conform_undeclared_name") == NULL) {
    return conform_report(ctx, CONFORM_FAIL,
                          "the compile error's message has no build log (it "
                          "does not name accel_conform_undeclared_name): %s",
                          message);
  }
  // Bytes that are neither text nor a format the core knows: the core
  // hands them over because the device lists formats; the plugin must
  // refuse them.
  unsigned char junk[256];
  for (size_t i = 0; i < sizeof(junk); i++)
    junk[i] = (unsigned char)(i * 37 + 1);
  status = accel_module_create(ctx->device, junk, sizeof(junk), &module);
  if (status == ACCEL_OK) {
    conform_track_module(ctx, module);
    return conform_report(ctx, CONFORM_FAIL,
                          "256 bytes of binary junk loaded as a module");
  }
  return conform_report(ctx, CONFORM_PASS,
                        "a compile error is INVALID_ARGUMENT with its log; "
                        "junk is %s",
                        accel_status_string(status));
}

static const conform_check_t conform_kernels[] = {
    {"kernel.launch", conform_kernel_launch_check, NULL},
    {"kernel.build_error", conform_kernel_build_error, NULL},
};

const conform_check_t* conform_kernel_checks(size_t* out_count) {
  *out_count = sizeof(conform_kernels) / sizeof(conform_kernels[0]);
  return conform_kernels;
}
