// SPDX-License-Identifier: MIT
//
// Custom kernels of the OpenCL plugin on a real OpenCL runtime (PoCL in
// CI): a compile error carries the build log, SPIR-V is refused clearly
// where the device takes no IL, garbage is refused, buffer offsets must be
// aligned (aligned ones see the right data; the sub-buffer of an offset is
// kept, not made per launch, and more offsets than are kept still land
// right), value arguments of struct size, the __local argument of
// shared_mem_bytes, a wrong argument count, and four threads launching
// one kernel with different arguments on their own streams.
// Exits 77 when no opencl:0 device opens.
#include <accel/interop.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "opencl_loader.h"
#include "opencl_test.h"
#include "test.h"

static ocl_ctx_t ocl;
static bool opened, usable;

// Opens opencl:0 once per process.
static bool ctx_get(void) {
  if (!opened) {
    opened = true;
    usable = ocl_ctx_open(&ocl, "opencl:0") == ACCEL_OK;
    if (!usable) printf("  opencl:0 unusable: %s\n", accel_last_error());
  }
  return usable;
}

#define NEED_DEVICE() \
  if (!ctx_get()) SKIP("no opencl:0 device")

typedef struct params {
  int32_t a;
  int32_t pad;
  int64_t b;
  float c;
  int32_t d;
} params_t;

static const char kernel_source[] =
    "typedef struct { int a; int pad; long b; float c; int d; } params_t;\n"
    "kernel void add_value(global int* data, uint n, int value) {\n"
    "  size_t i = get_global_id(0);\n"
    "  if (i < n) data[i] += value;\n"
    "}\n"
    "kernel void use_struct(global long* out, params_t p) {\n"
    "  out[0] = p.a + p.b + (long)p.c + p.d;\n"
    "}\n"
    "kernel void reverse_block(global int* data, local int* tmp) {\n"
    "  size_t l = get_local_id(0), n = get_local_size(0);\n"
    "  size_t g = get_group_id(0) * n;\n"
    "  tmp[l] = data[g + l];\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  data[g + l] = tmp[n - 1 - l];\n"
    "}\n";

static accel_module_t* test_module;

static accel_status_t kernel_get(const char* name, accel_kernel_t** out) {
  accel_status_t s = ACCEL_OK;
  if (test_module == NULL) {
    s = accel_module_create(ocl.device, kernel_source,
                            sizeof(kernel_source) - 1, &test_module);
  }
  if (s == ACCEL_OK) s = accel_kernel_create(test_module, name, out);
  return s;
}

static accel_status_t launch_add(accel_stream_t* stream, accel_kernel_t* kernel,
                                 accel_buffer_t* b, size_t offset, uint32_t n,
                                 int32_t value) {
  accel_launch_config_t config;
  accel_launch_config_init(&config);
  config.block[0] = 64;
  config.grid[0] = (n + 63) / 64;
  accel_kernel_arg_t args[3] = {
      {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = b, .offset = offset},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = sizeof(n), .value = &n},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = sizeof(value), .value = &value},
  };
  return accel_kernel_launch(kernel, stream, &config, 3, args);
}

TEST(jit_error_carries_build_log) {
  NEED_DEVICE();
  static const char bad[] =
      "kernel void broken(global int* p) { p[0] = no_such_identifier; }\n";
  accel_module_t* module = NULL;
  ASSERT_STATUS(accel_module_create(ocl.device, bad, sizeof(bad) - 1, &module),
                ACCEL_ERROR_INVALID_ARGUMENT);
  printf("  %s\n", accel_last_error());
  ASSERT_STR_CONTAINS(accel_last_error(), "no_such_identifier");
  ASSERT_NULL(module);
  // A long log keeps its start (the first error) and its end.
  char many[4096] = "kernel void broken(global int* p) {\n";
  for (int i = 0; i < 40; i++) {
    char line[64];
    snprintf(line, sizeof(line), "  p[%d] = undeclared_number_%d;\n", i, i);
    strcat(many, line);
  }
  strcat(many, "}\n");
  ASSERT_STATUS(accel_module_create(ocl.device, many, strlen(many), &module),
                ACCEL_ERROR_INVALID_ARGUMENT);
  printf("  long log: %s\n", accel_last_error());
  ASSERT_STR_CONTAINS(accel_last_error(), "undeclared_number_0'");
  ASSERT_STR_CONTAINS(accel_last_error(), "characters ...]");
}

TEST(spirv_and_garbage_images) {
  NEED_DEVICE();
  // A SPIR-V header (magic, version 1.0, generator, bound, schema): no
  // valid module, but enough to be recognised as SPIR-V.
  static const uint32_t spirv[5] = {0x07230203u, 0x00010000u, 0, 1, 0};
  accel_module_t* module = NULL;
  accel_status_t s =
      accel_module_create(ocl.device, spirv, sizeof(spirv), &module);
  printf("  SPIR-V (device formats \"%s\"): %s: %s\n", ocl.info.module_formats,
         accel_status_string(s), accel_last_error());
  if (strstr(ocl.info.module_formats, "spirv") == NULL) {
    ASSERT(s == ACCEL_ERROR_UNSUPPORTED || s == ACCEL_ERROR_INCOMPATIBLE);
    ASSERT_STR_CONTAINS(accel_last_error(), "SPIR-V");
  } else {
    ASSERT_EQ(s, ACCEL_ERROR_INVALID_ARGUMENT);  // a header, no module
  }
  ASSERT_NULL(module);
  static const unsigned char garbage[] = {0x01, 0x00, 0x02, 0xff, 0x00,
                                          0x10, 0x7f, 0x00, 0x00, 0x03};
  s = accel_module_create(ocl.device, garbage, sizeof(garbage), &module);
  printf("  garbage: %s: %s\n", accel_status_string(s), accel_last_error());
  ASSERT(s == ACCEL_ERROR_INVALID_ARGUMENT || s == ACCEL_ERROR_INCOMPATIBLE);
  ASSERT_NULL(module);
}

TEST(launch_offsets_and_missing_kernel) {
  NEED_DEVICE();
  accel_kernel_t* kernel = NULL;
  ASSERT_OK(kernel_get("add_value", &kernel));
  accel_kernel_t* missing = NULL;
  ASSERT_STATUS(kernel_get("no_such_kernel", &missing), ACCEL_ERROR_NOT_FOUND);
  enum { N = 1024 };
  int32_t data[N], out[N];
  for (int i = 0; i < N; i++) data[i] = i;
  accel_buffer_t* b = NULL;
  ASSERT_OK(ocl_buffer(&ocl, sizeof(data), data, &b));
  uint32_t align = ocl.info.buffer_offset_alignment;
  if (align < 4) align = 4;
  printf("  buffer_offset_alignment %u\n", align);
  ASSERT_LE(align * 2 + 64, sizeof(data));
  // An aligned non-zero offset: the kernel's data[0] is element align/4.
  ASSERT_OK(launch_add(ocl.stream, kernel, b, align, 16, 1000));
  ASSERT_OK(ocl_read(&ocl, b, 0, out, sizeof(out)));
  for (int i = 0; i < N; i++) {
    int first = (int)(align / 4);
    int want = i >= first && i < first + 16 ? i + 1000 : i;
    if (out[i] != want) printf("  element %d: %d, want %d\n", i, out[i], want);
    ASSERT_EQ(out[i], want);
  }
  if (ocl.info.buffer_offset_alignment > 4) {
    ASSERT_STATUS(launch_add(ocl.stream, kernel, b, 4, 16, 1),
                  ACCEL_ERROR_UNSUPPORTED);
    printf("  misaligned: %s\n", accel_last_error());
  }
  accel_buffer_release(b);
  accel_kernel_release(kernel);
}

TEST(launch_struct_local_and_bad_arg_count) {
  NEED_DEVICE();
  accel_kernel_t *ks = NULL, *kr = NULL;
  ASSERT_OK(kernel_get("use_struct", &ks));
  ASSERT_OK(kernel_get("reverse_block", &kr));
  params_t p = {.a = 5, .b = (int64_t)1 << 40, .c = 7.9f, .d = -2};
  int64_t result = 0;
  accel_buffer_t* out = NULL;
  ASSERT_OK(ocl_buffer(&ocl, sizeof(result), &result, &out));
  accel_launch_config_t config;
  accel_launch_config_init(&config);
  accel_kernel_arg_t args[2] = {
      {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = out},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = sizeof(p), .value = &p},
  };
  ASSERT_OK(accel_kernel_launch(ks, ocl.stream, &config, 2, args));
  ASSERT_OK(ocl_read(&ocl, out, 0, &result, sizeof(result)));
  ASSERT_EQ(result, 5 + ((int64_t)1 << 40) + 7 - 2);
  // One argument too many for use_struct.
  accel_kernel_arg_t three[3] = {args[0], args[1], args[1]};
  ASSERT_STATUS(accel_kernel_launch(ks, ocl.stream, &config, 3, three),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "use_struct");
  // reverse_block takes its __local array from shared_mem_bytes.
  enum { B = 32, G = 4 };
  int32_t data[B * G], back[B * G];
  for (int i = 0; i < B * G; i++) data[i] = i * 3;
  accel_buffer_t* d = NULL;
  ASSERT_OK(ocl_buffer(&ocl, sizeof(data), data, &d));
  config.block[0] = B;
  config.grid[0] = G;
  config.shared_mem_bytes = B * sizeof(int32_t);
  accel_kernel_arg_t rargs[1] = {
      {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = d}};
  ASSERT_OK(accel_kernel_launch(kr, ocl.stream, &config, 1, rargs));
  ASSERT_OK(ocl_read(&ocl, d, 0, back, sizeof(back)));
  for (int g = 0; g < G; g++) {
    for (int l = 0; l < B; l++) {
      ASSERT_EQ(back[g * B + l], data[g * B + B - 1 - l]);
    }
  }
  // Without shared memory the __local argument is missing.
  config.shared_mem_bytes = 0;
  ASSERT_STATUS(accel_kernel_launch(kr, ocl.stream, &config, 1, rargs),
                ACCEL_ERROR_INVALID_ARGUMENT);
  accel_buffer_release(out);
  accel_buffer_release(d);
  accel_kernel_release(ks);
  accel_kernel_release(kr);
}

// CL_MEM_REFERENCE_COUNT of the cl_mem behind `b`, or 0.
static uint32_t mem_references(const ocl_loader_t* l, accel_buffer_t* b) {
  uint64_t handle = 0;
  size_t offset = 0;
  cl_uint count = 0;
  if (accel_buffer_query_native(b, &handle, &offset) != ACCEL_OK ||
      l->mem_info((cl_mem)(uintptr_t)handle, CL_MEM_REFERENCE_COUNT,
                  sizeof(count), &count, NULL) != CL_SUCCESS) {
    return 0;
  }
  return count;
}

// mem_references once it has stopped moving. PoCL wakes a clFinish
// waiter before it drops the references its last command held on the
// buffers it used (pocl_update_event_finished: broadcast, then
// pocl_free_event_memobjs), so right after a synchronize the count can
// still include one; read until five reads 2 ms apart agree (2 s at most).
static uint32_t settled_references(const ocl_loader_t* l, accel_buffer_t* b) {
  const struct timespec pause = {0, 2000000};
  uint32_t count = mem_references(l, b);
  for (int same = 0, tries = 0; same < 5 && tries < 1000; tries++) {
    nanosleep(&pause, NULL);
    uint32_t now = mem_references(l, b);
    same = now == count ? same + 1 : 0;
    count = now;
  }
  return count;
}

// Whether opencl:0 is a PoCL device, whose sub-buffers each hold a
// reference on their parent buffer (clCreateSubBuffer retains it).
static bool device_is_pocl(const ocl_loader_t* l) {
  uint64_t id = 0;
  cl_platform_id platform = NULL;
  char name[256] = "";
  if (accel_device_query_native(ocl.device, ACCEL_NATIVE_DEVICE, &id) != ACCEL_OK ||
      l->device_info((cl_device_id)(uintptr_t)id, CL_DEVICE_PLATFORM,
                     sizeof(platform), &platform, NULL) != CL_SUCCESS ||
      l->platform_info(platform, CL_PLATFORM_NAME, sizeof(name) - 1, name,
                       NULL) != CL_SUCCESS) {
    return false;
  }
  return strstr(name, "Portable Computing Language") != NULL;
}

// A launch at an offset uses a sub-buffer that the plugin keeps for that
// offset: 40 launches at one offset add one reference to the buffer's
// cl_mem on PoCL (one kept sub-buffer), not none (a sub-buffer made and
// dropped per launch) or one per launch; and launches at more offsets
// than the plugin keeps still land where they should.
TEST(launch_offset_views_kept) {
  NEED_DEVICE();
  ocl_loader_t loader;
  if (!ocl_loader_open(&loader)) SKIP("no libOpenCL.so.1 to look with");
  accel_kernel_t* kernel = NULL;
  ASSERT_OK(kernel_get("add_value", &kernel));
  size_t align = ocl.info.buffer_offset_alignment < 4
                     ? 4
                     : ocl.info.buffer_offset_alignment;
  enum { OFFSETS = 40 };
  const size_t bytes = align * (OFFSETS + 1);
  const uint32_t elems = (uint32_t)(bytes / 4);
  int32_t* out = calloc(elems, sizeof(int32_t));
  ASSERT(out != NULL);
  accel_buffer_t* b = NULL;
  ASSERT_OK(ocl_buffer(&ocl, bytes, out, &b));
  ASSERT_OK(accel_stream_synchronize(ocl.stream));
  uint32_t before = settled_references(&loader, b);
  for (int i = 0; i < 40; i++) {
    ASSERT_OK(launch_add(ocl.stream, kernel, b, align, 1, 1));
  }
  ASSERT_OK(accel_stream_synchronize(ocl.stream));
  uint32_t after = settled_references(&loader, b);
  printf("  cl_mem references: %u before, %u after 40 launches at offset "
         "%zu\n",
         before, after, align);
  if (device_is_pocl(&loader)) ASSERT_EQ(after, before + 1);
  // Every offset once: element j is below OFFSETS + 1 launch starts.
  for (uint32_t o = 1; o <= OFFSETS; o++) {
    ASSERT_OK(launch_add(ocl.stream, kernel, b, o * align,
                         elems - (uint32_t)(o * align / 4), 1));
  }
  ASSERT_OK(ocl_read(&ocl, b, 0, out, bytes));
  for (uint32_t j = 0; j < elems; j++) {
    int32_t want = (int32_t)(j * 4 / align);  // launch starts at or below j
    if (j == align / 4) want += 40;
    if (out[j] != want) printf("  element %u: %d, want %d\n", j, out[j], want);
    ASSERT_EQ(out[j], want);
  }
  free(out);
  accel_buffer_release(b);
  accel_kernel_release(kernel);
}

// Two small buffers are two cl_mem objects, each used from offset 0: the
// caching allocator never places buffers in one cl_mem on OpenCL
// (ACCEL_DEVICE_CAP_SEPARATE_ALLOCATIONS), so launches on different
// buffers never meet on one parent buffer and its sub-buffers, whose
// concurrent use the specification leaves undefined.
TEST(buffers_own_cl_mem) {
  NEED_DEVICE();
  ASSERT(ocl.info.caps & ACCEL_DEVICE_CAP_SEPARATE_ALLOCATIONS);
  accel_buffer_t* a = NULL;
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(ocl.device, 1000, &a));
  ASSERT_OK(accel_buffer_create(ocl.device, 1000, &b));
  uint64_t ha = 0, hb = 0;
  size_t oa = 1, ob = 1;
  ASSERT_OK(accel_buffer_query_native(a, &ha, &oa));
  ASSERT_OK(accel_buffer_query_native(b, &hb, &ob));
  ASSERT(ha != hb);
  ASSERT_EQ(oa, 0);
  ASSERT_EQ(ob, 0);
  accel_buffer_release(a);
  accel_buffer_release(b);
}

// Four threads launch one kernel object with their own arguments on their
// own streams; arguments mixed between threads would show in the sums.
enum { THREADS = 4, LAUNCHES = 60, TN = 2048 };

typedef struct worker {
  accel_kernel_t* kernel;
  int index;
  accel_status_t status;
  int wrong;
} worker_t;

static void* worker_main(void* arg) {
  worker_t* w = arg;
  accel_stream_t* stream = NULL;
  accel_buffer_t* b = NULL;
  static const int32_t zeros[TN];
  w->status = accel_stream_create(ocl.device, 0, &stream);
  if (w->status == ACCEL_OK) {
    w->status = accel_buffer_create(ocl.device, sizeof(zeros), &b);
  }
  if (w->status == ACCEL_OK) {
    w->status = accel_buffer_write(b, 0, zeros, sizeof(zeros));
  }
  for (int i = 0; w->status == ACCEL_OK && i < LAUNCHES; i++) {
    w->status = launch_add(stream, w->kernel, b, 0, TN, w->index + 1);
  }
  if (w->status == ACCEL_OK) w->status = accel_stream_synchronize(stream);
  int32_t* out = malloc(sizeof(zeros));
  if (w->status == ACCEL_OK && out != NULL) {
    w->status = accel_buffer_read(b, 0, out, sizeof(zeros));
    for (int i = 0; w->status == ACCEL_OK && i < TN; i++) {
      if (out[i] != LAUNCHES * (w->index + 1)) w->wrong++;
    }
  }
  free(out);
  accel_buffer_release(b);
  accel_stream_release(stream);
  return NULL;
}

TEST(four_threads_launch_one_kernel) {
  NEED_DEVICE();
  accel_kernel_t* kernel = NULL;
  ASSERT_OK(kernel_get("add_value", &kernel));
  pthread_t threads[THREADS];
  worker_t workers[THREADS];
  for (int i = 0; i < THREADS; i++) {
    workers[i] = (worker_t){.kernel = kernel, .index = i};
    ASSERT_EQ(pthread_create(&threads[i], NULL, worker_main, &workers[i]), 0);
  }
  for (int i = 0; i < THREADS; i++) pthread_join(threads[i], NULL);
  for (int i = 0; i < THREADS; i++) {
    if (workers[i].status != ACCEL_OK) printf("  %s\n", accel_last_error());
    ASSERT_OK(workers[i].status);
    ASSERT_EQ(workers[i].wrong, 0);
  }
  accel_kernel_release(kernel);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  if (test_module != NULL) accel_module_release(test_module);
  if (usable) ocl_ctx_close(&ocl);
  accel_shutdown();
  return rc;
}
