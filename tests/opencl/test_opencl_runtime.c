// SPDX-License-Identifier: MIT
//
// The OpenCL plugin's runtime half, driven through its descriptor (the
// built libaccel-opencl.so, dlopened as the core would): lazy opening of
// the ICD loader and the reasons it reports when there is none or no
// platform; then on whatever OpenCL device is present (PoCL in CI; each
// such test skips with 77 when there is none): properties, memory
// accounting, copies, overlapping moves, pinned memory, events, and with
// two devices (POCL_DEVICES="pthread pthread") peer copies and waits
// across devices, in one context or, with ACCEL_OPENCL_CONTEXTS=device,
// two. tests/opencl/CMakeLists.txt runs each test in its own process with
// the environment it needs.
#include <stdint.h>
#include <stdlib.h>

#include "accel_opencl.h"  // ACCEL_OPENCL_FILL_NARROW_END
#include "opencl/test_opencl_plugin.h"
#include "test.h"
#include "test_host.h"

// Whether a library whose path contains `name` is mapped in this process.
static bool mapped(const char* name) {
  FILE* maps = fopen("/proc/self/maps", "r");
  char line[1024];
  bool found = false;
  while (maps != NULL && !found && fgets(line, sizeof(line), maps) != NULL) {
    found = strstr(line, name) != NULL;
  }
  if (maps != NULL) fclose(maps);
  return found;
}

TEST(icd_opened_lazily) {
  const accel_plugin_t* desc = ocl_descriptor();
  ASSERT_NOT_NULL(desc);
  ASSERT_STR_EQ(desc->name, "opencl");
  ASSERT_EQ(desc->priority, 100);
  ocl_fixture_t fx;
  OCL_ASSERT_OK(ocl_load(desc, &fx));
  ASSERT(!mapped("libOpenCL.so"));  // not at dlopen, not at load
  uint32_t count = 0;
  accel_status_t status = desc->device_count(fx.plugin, &count);
  bool loaded = mapped("libOpenCL.so");
  ocl_unload(&fx);
  if (status == ACCEL_ERROR_UNAVAILABLE &&
      strstr(test_host_message, "no OpenCL ICD loader") != NULL) {
    SKIP("%s", test_host_message);
  }
  ASSERT(loaded);  // device_count opened it
}

TEST(icd_missing) {
  setenv("ACCEL_OPENCL_ICD", "/nonexistent/libOpenCL.so.1", 1);
  ocl_fixture_t fx;
  OCL_ASSERT_OK(ocl_load(ocl_descriptor(), &fx));
  uint32_t count[2] = {7, 7};
  accel_status_t status[2];
  char message[2][sizeof(test_host_message)];
  for (int i = 0; i < 2; i++) {  // the second call gives the same reason
    status[i] = fx.desc->device_count(fx.plugin, &count[i]);
    memcpy(message[i], test_host_message, sizeof(message[i]));
  }
  unsetenv("ACCEL_OPENCL_ICD");  // the other tests in this process
  ocl_unload(&fx);
  for (int i = 0; i < 2; i++) {
    ASSERT_EQ(status[i], ACCEL_ERROR_UNAVAILABLE);
    ASSERT_EQ(count[i], 0);
    ASSERT_STR_CONTAINS(message[i],
                        "opencl: no OpenCL ICD loader (ACCEL_OPENCL_ICD="
                        "/nonexistent/libOpenCL.so.1: ");
    ASSERT_STR_CONTAINS(message[i], "No such file");
  }
}

TEST(icd_not_opencl) {
  setenv("ACCEL_OPENCL_ICD", "libm.so.6", 1);
  ocl_fixture_t fx;
  OCL_ASSERT_OK(ocl_load(ocl_descriptor(), &fx));
  uint32_t count = 0;
  accel_status_t status = fx.desc->device_count(fx.plugin, &count);
  unsetenv("ACCEL_OPENCL_ICD");
  ocl_unload(&fx);
  ASSERT_EQ(status, ACCEL_ERROR_UNAVAILABLE);
  ASSERT_STR_CONTAINS(test_host_message,
                      "libm.so.6 is not a usable OpenCL ICD loader: no "
                      "clGetPlatformIDs");
}

// Run with OCL_ICD_VENDORS naming an empty directory: the loader finds no
// platform.
TEST(no_platform) {
  if (getenv("OCL_ICD_VENDORS") == NULL) SKIP("needs OCL_ICD_VENDORS");
  ocl_fixture_t fx;
  OCL_ASSERT_OK(ocl_load(ocl_descriptor(), &fx));
  uint32_t count = 0;
  accel_status_t status = fx.desc->device_count(fx.plugin, &count);
  ocl_unload(&fx);
  if (strstr(test_host_message, "no OpenCL ICD loader") != NULL) {
    SKIP("%s", test_host_message);
  }
  if (status == ACCEL_OK) {
    SKIP("the ICD loader found %u device(s) with OCL_ICD_VENDORS naming an "
         "empty directory: it does not read that variable",
         (unsigned)count);
  }
  ASSERT_EQ(status, ACCEL_ERROR_UNAVAILABLE);
  ASSERT_STR_EQ(test_host_message,
                "opencl: no OpenCL platform (clGetPlatformIDs: "
                "CL_PLATFORM_NOT_FOUND_KHR)");
}

TEST(bad_contexts_variable) {
  setenv("ACCEL_OPENCL_CONTEXTS", "sometimes", 1);
  ocl_fixture_t fx;
  OCL_ASSERT_OK(ocl_load(ocl_descriptor(), &fx));
  uint32_t count = 0;
  accel_status_t status = fx.desc->device_count(fx.plugin, &count);
  unsetenv("ACCEL_OPENCL_CONTEXTS");
  ocl_unload(&fx);
  if (strstr(test_host_message, "ICD loader") != NULL) {
    SKIP("%s", test_host_message);
  }
  ASSERT_EQ(status, ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(test_host_message, "ACCEL_OPENCL_CONTEXTS=sometimes");
}

// Opens device `index` of a fresh plugin state or skips the test.
#define OPEN_OR_SKIP(fx, index)                       \
  do {                                                \
    OCL_ASSERT_OK(ocl_load(ocl_descriptor(), &(fx))); \
    if (!ocl_open_device(&(fx), (index))) {           \
      ocl_unload(&(fx));                              \
      SKIP("no OpenCL device %u", (unsigned)(index)); \
    }                                                 \
  } while (0)

TEST(props) {
  ocl_fixture_t fx;
  OPEN_OR_SKIP(fx, 0);
  accel_plugin_device_props_t p;
  memset(&p, 0, sizeof(p));
  p.struct_size = sizeof(p);
  OCL_ASSERT_OK(fx.ops->query_props(fx.device, &p));
  printf("  %s | %s | %s | %s | %s\n", p.name, p.platform, p.arch, p.features,
         p.driver_version);
  ASSERT_EQ(p.struct_size, sizeof(p));
  ASSERT(p.name[0] != '\0' && p.platform[0] != '\0');
  ASSERT(strncmp(p.arch, "opencl-", 7) == 0);
  ASSERT_STR_CONTAINS(p.features, "opencl_c_");
  ASSERT(p.total_memory > 0 && p.compute_units > 0);
  ASSERT(p.max_alloc_size > 0 && p.max_alloc_size <= p.total_memory);
  ASSERT(p.max_shared_mem_bytes > 0);
  uint32_t align = p.buffer_offset_alignment;
  ASSERT(align >= 1 && (align & (align - 1)) == 0);
  ASSERT_EQ(p.max_grid[0], 0);
  ASSERT(p.caps & ACCEL_DEVICE_CAP_EVENT_TIMING);
  ASSERT(p.caps & ACCEL_DEVICE_CAP_PINNED_MEMORY);
  ASSERT(p.caps & ACCEL_DEVICE_CAP_SEPARATE_ALLOCATIONS);
  if (strcmp(p.platform, "Portable Computing Language") == 0) {
    ASSERT_EQ(p.type, ACCEL_DEVICE_TYPE_CPU);  // so auto still picks cpu:0
  }
  // A 1.0 core's smaller struct gets only what fits.
  accel_plugin_device_props_t small;
  memset(&small, 0xab, sizeof(small));
  small.struct_size = offsetof(accel_plugin_device_props_t, module_target);
  OCL_ASSERT_OK(fx.ops->query_props(fx.device, &small));
  ASSERT_EQ(small.struct_size,
            offsetof(accel_plugin_device_props_t, module_target));
  ASSERT_EQ((unsigned char)small.module_target[0], 0xab);
  ocl_unload(&fx);
}

TEST(mem_info_tracks_allocations) {
  ocl_fixture_t fx;
  OPEN_OR_SKIP(fx, 0);
  uint64_t free0 = 0, total = 0, free1 = 0;
  OCL_ASSERT_OK(fx.ops->mem_info(fx.device, &free0, &total));
  void* mem = NULL;
  OCL_ASSERT_OK(fx.ops->mem_alloc(fx.device, 3u << 20, &mem));
  OCL_ASSERT_OK(fx.ops->mem_info(fx.device, &free1, &total));
  ASSERT_EQ(free0 - free1, 3u << 20);
  fx.ops->mem_free(fx.device, mem);
  OCL_ASSERT_OK(fx.ops->mem_info(fx.device, &free1, &total));
  ASSERT_EQ(free1, free0);
  // Beyond CL_DEVICE_MAX_MEM_ALLOC_SIZE: refused, with the limit named.
  OCL_ASSERT_STATUS(fx.ops->mem_alloc(fx.device, SIZE_MAX / 2, &mem),
                    ACCEL_ERROR_OUT_OF_DEVICE_MEMORY);
  ASSERT_STR_CONTAINS(test_host_message, "CL_DEVICE_MAX_MEM_ALLOC_SIZE");
  ocl_unload(&fx);
}

// Fills `n` bytes with a pattern that differs for every `seed`.
static void pattern(unsigned char* p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 7 + seed * 13);
}

TEST(copies_and_memset) {
  ocl_fixture_t fx;
  OPEN_OR_SKIP(fx, 0);
  enum { N = 1 << 16 };
  static unsigned char in[N], out[N], want[N];
  void *a = NULL, *b = NULL, *stream = NULL;
  OCL_ASSERT_OK(fx.ops->mem_alloc(fx.device, N, &a));
  OCL_ASSERT_OK(fx.ops->mem_alloc(fx.device, N, &b));
  OCL_ASSERT_OK(fx.ops->stream_create(fx.device, 0, &stream));
  for (int s = 0; s < 2; s++) {  // blocking (no stream), then on a stream
    void* st = s ? stream : NULL;
    pattern(in, N, (unsigned)s + 1);
    memcpy(want, in, N);
    OCL_ASSERT_OK(fx.ops->copy_h2d(fx.device, st, a, 0, in, N));
    OCL_ASSERT_OK(fx.ops->copy_d2d(fx.device, st, b, 100, a, 50, 1000));
    memcpy(want + 100, in + 50, 1000);
    OCL_ASSERT_OK(fx.ops->copy_d2d(fx.device, st, b, 0, a, 0, 100));
    OCL_ASSERT_OK(fx.ops->copy_d2d(fx.device, st, b, 1100, a, 1100, N - 1100));
    OCL_ASSERT_OK(fx.ops->memset(fx.device, st, b, 7, 0x5a, 33));
    memset(want + 7, 0x5a, 33);
    memset(out, 0, N);
    OCL_ASSERT_OK(fx.ops->copy_d2h(fx.device, st, out, b, 0, N));
    if (st != NULL) OCL_ASSERT_OK(fx.ops->stream_synchronize(st));
    ASSERT_MEM_EQ(out, want, N);
  }
  fx.ops->stream_destroy(stream);
  fx.ops->mem_free(fx.device, a);
  fx.ops->mem_free(fx.device, b);
  ocl_unload(&fx);
}

// Fills that reach past ACCEL_OPENCL_FILL_NARROW_END (2 GiB - 1 MiB): the
// plugin fills them in pieces (a 4-byte pattern for the aligned middle,
// copies from a buffer of the pattern for the ends), since NVIDIA's driver
// misplaces 1-byte fills that reach 4 GiB. Every byte of the top window
// must hold what one fill after another put there, synchronous and on a
// stream, for memset and for op_fill of 2- and 4-byte elements, with ends
// at every alignment; and the bytes below the window stay untouched.
// Needs a device that allocates one buffer of 2 GiB - 1 MiB + 192 KiB
// (PoCL gives 2 GiB); skips elsewhere.
TEST(fills_past_the_narrow_pattern_bound) {
  ocl_fixture_t fx;
  OPEN_OR_SKIP(fx, 0);
  enum { W = 192 << 10 };  // the window checked, below the buffer's end
  accel_plugin_device_props_t p;
  memset(&p, 0, sizeof(p));
  p.struct_size = sizeof(p);
  OCL_ASSERT_OK(fx.ops->query_props(fx.device, &p));
  uint64_t size = p.max_alloc_size < ((uint64_t)2 << 30)
                      ? p.max_alloc_size
                      : ((uint64_t)2 << 30);
  uint64_t base = ACCEL_OPENCL_FILL_NARROW_END - (64 << 10);
  if (size < base + W) {
    ocl_unload(&fx);
    SKIP("largest allocation %llu bytes",
         (unsigned long long)p.max_alloc_size);
  }
  static unsigned char want[W], got[W], below[4096], below_got[4096];
  void *mem = NULL, *stream = NULL;
  OCL_ASSERT_OK(fx.ops->mem_alloc(fx.device, (size_t)base + W, &mem));
  OCL_ASSERT_OK(fx.ops->stream_create(fx.device, 0, &stream));
  pattern(want, W, 3);
  pattern(below, sizeof(below), 4);
  OCL_ASSERT_OK(fx.ops->copy_h2d(fx.device, NULL, mem, base, want, W));
  OCL_ASSERT_OK(fx.ops->copy_h2d(fx.device, NULL, mem, base - sizeof(below),
                                 below, sizeof(below)));
  // {offset from base, bytes}: across the bound, wholly past it, odd
  // starts and ends, under 4 bytes, and up to the buffer's end.
  static const uint64_t kFills[][2] = {
      {(64 << 10) - 5, 11},  {(64 << 10) - 4096 + 1, 8190},
      {(64 << 10) + 1, 2},   {(64 << 10) + 7, 1},
      {(96 << 10) + 3, 4097}, {(100 << 10), 4096},
      {W - 4099, 4099},      {(64 << 10) - 2, 6},
  };
  for (size_t f = 0; f < sizeof(kFills) / sizeof(kFills[0]); f++) {
    for (int s = 0; s < 2; s++) {
      void* st = s ? stream : NULL;
      uint64_t off = kFills[f][0], bytes = kFills[f][1];
      uint8_t value = (uint8_t)(0x81 + 2 * f + (size_t)s);
      OCL_ASSERT_OK(fx.ops->memset(fx.device, st, mem, (size_t)(base + off),
                                   value, (size_t)bytes));
      memset(want + off, value, (size_t)bytes);
      if (st == NULL) continue;
      // op_fill over the range's first half in f16 (2-byte elements) and
      // its second half in i32 (4-byte), the elements that fit in each.
      uint64_t half = off + bytes / 2;
      uint64_t off2 = (off + 1) & ~(uint64_t)1;
      uint64_t count2 = off2 < half ? (half - off2) / 2 : 0;
      if (count2 > 0) {
        OCL_ASSERT_OK(fx.ops->op_fill(fx.device, st, mem, base + off2,
                                      ACCEL_DTYPE_F16, count2, 1.5));
        for (uint64_t i = 0; i < count2; i++) {
          want[off2 + 2 * i] = 0x00;  // 1.5 in f16 is 0x3e00
          want[off2 + 2 * i + 1] = 0x3e;
        }
      }
      uint64_t off4 = (half + 3) & ~(uint64_t)3;
      uint64_t count4 = off4 < off + bytes ? (off + bytes - off4) / 4 : 0;
      if (count4 > 0) {
        OCL_ASSERT_OK(fx.ops->op_fill(fx.device, st, mem, base + off4,
                                      ACCEL_DTYPE_I32, count4, -2.0));
        memset(want + off4, 0xff, (size_t)(4 * count4));
        for (uint64_t i = 0; i < count4; i++) want[off4 + 4 * i] = 0xfe;
      }
      OCL_ASSERT_OK(fx.ops->stream_synchronize(st));
    }
    OCL_ASSERT_OK(fx.ops->copy_d2h(fx.device, NULL, got, mem, base, W));
    for (size_t i = 0; i < W; i++) {
      if (got[i] != want[i]) {
        TEST_FAIL_AT_("after fill %zu (offset %llu + %llu, %llu bytes): "
                      "byte %zu is 0x%02x, expected 0x%02x",
                      f, (unsigned long long)base,
                      (unsigned long long)kFills[f][0],
                      (unsigned long long)kFills[f][1], i, got[i], want[i]);
      }
    }
  }
  OCL_ASSERT_OK(fx.ops->copy_d2h(fx.device, NULL, below_got, mem,
                                 base - sizeof(below), sizeof(below)));
  ASSERT_MEM_EQ(below_got, below, sizeof(below));
  fx.ops->stream_destroy(stream);
  fx.ops->mem_free(fx.device, mem);
  ocl_unload(&fx);
}

TEST(overlapping_moves) {
  ocl_fixture_t fx;
  OPEN_OR_SKIP(fx, 0);
  enum { N = 8192 };
  static unsigned char host[N], out[N];
  // {dst, src, size}: far apart (a few pieces) and close (a temporary),
  // both directions, unaligned sizes.
  static const size_t kCases[][3] = {
      {0, 300, 1000}, {300, 0, 1000}, {0, 1, 5000},    {1, 0, 5000},
      {17, 5, 4099},  {5, 17, 4099},  {0, 4000, 4192}, {4000, 0, 4192},
  };
  void *mem = NULL, *stream = NULL;
  OCL_ASSERT_OK(fx.ops->mem_alloc(fx.device, N, &mem));
  OCL_ASSERT_OK(fx.ops->stream_create(fx.device, 0, &stream));
  for (size_t c = 0; c < sizeof(kCases) / sizeof(kCases[0]); c++) {
    for (int s = 0; s < 2; s++) {
      void* st = s ? stream : NULL;
      pattern(host, N, (unsigned)c);
      OCL_ASSERT_OK(fx.ops->copy_h2d(fx.device, NULL, mem, 0, host, N));
      OCL_ASSERT_OK(fx.ops->copy_d2d(fx.device, st, mem, kCases[c][0], mem,
                                     kCases[c][1], kCases[c][2]));
      if (st != NULL) OCL_ASSERT_OK(fx.ops->stream_synchronize(st));
      memmove(host + kCases[c][0], host + kCases[c][1], kCases[c][2]);
      OCL_ASSERT_OK(fx.ops->copy_d2h(fx.device, NULL, out, mem, 0, N));
      if (memcmp(out, host, N) != 0) {
        TEST_FAIL_AT_("move dst %zu src %zu size %zu (%s) is wrong",
                      kCases[c][0], kCases[c][1], kCases[c][2],
                      s ? "stream" : "blocking");
      }
    }
  }
  fx.ops->stream_destroy(stream);
  fx.ops->mem_free(fx.device, mem);
  ocl_unload(&fx);
}

TEST(pinned_memory) {
  ocl_fixture_t fx;
  OPEN_OR_SKIP(fx, 0);
  enum { N = 1 << 20 };
  unsigned char *pinned = NULL, *back = NULL;
  void *mem = NULL, *stream = NULL;
  OCL_ASSERT_OK(fx.ops->host_alloc(fx.device, N, (void**)&pinned));
  OCL_ASSERT_OK(fx.ops->host_alloc(fx.device, N, (void**)&back));
  ASSERT(pinned != back);
  pattern(pinned, N, 3);
  memset(back, 0, N);
  OCL_ASSERT_OK(fx.ops->mem_alloc(fx.device, N, &mem));
  OCL_ASSERT_OK(fx.ops->stream_create(fx.device, 0, &stream));
  OCL_ASSERT_OK(fx.ops->copy_h2d(fx.device, stream, mem, 0, pinned, N));
  OCL_ASSERT_OK(fx.ops->copy_d2h(fx.device, stream, back, mem, 0, N));
  OCL_ASSERT_OK(fx.ops->stream_synchronize(stream));
  ASSERT_MEM_EQ(back, pinned, N);
  // Freed in either order; the plugin unmaps each block.
  fx.ops->host_free(fx.device, pinned);
  fx.ops->host_free(fx.device, back);
  fx.ops->stream_destroy(stream);
  fx.ops->mem_free(fx.device, mem);
  ocl_unload(&fx);
}

TEST(event_timing) {
  ocl_fixture_t fx;
  OPEN_OR_SKIP(fx, 0);
  enum { N = 32 << 20 };
  void *mem = NULL, *stream = NULL, *start = NULL, *end = NULL, *plain = NULL;
  OCL_ASSERT_OK(fx.ops->mem_alloc(fx.device, N, &mem));
  OCL_ASSERT_OK(fx.ops->stream_create(fx.device, 0, &stream));
  OCL_ASSERT_OK(fx.ops->event_create(fx.device, ACCEL_EVENT_TIMING, &start));
  OCL_ASSERT_OK(fx.ops->event_create(fx.device, ACCEL_EVENT_TIMING, &end));
  OCL_ASSERT_OK(fx.ops->event_create(fx.device, 0, &plain));
  // Never recorded: complete, and not timeable.
  bool done = false;
  OCL_ASSERT_OK(fx.ops->event_query(start, &done));
  ASSERT(done);
  OCL_ASSERT_OK(fx.ops->event_synchronize(start));
  float ms = -1;
  OCL_ASSERT_STATUS(fx.ops->event_elapsed_ms(start, end, &ms),
                    ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(test_host_message, "never recorded");
  OCL_ASSERT_OK(fx.ops->event_record(start, stream));
  for (int i = 0; i < 8; i++) {
    OCL_ASSERT_OK(fx.ops->memset(fx.device, stream, mem, 0, (uint8_t)i, N));
  }
  OCL_ASSERT_OK(fx.ops->event_record(end, stream));
  OCL_ASSERT_OK(fx.ops->event_record(plain, stream));
  OCL_ASSERT_OK(fx.ops->event_synchronize(end));
  OCL_ASSERT_OK(fx.ops->event_query(end, &done));
  ASSERT(done);
  OCL_ASSERT_OK(fx.ops->event_elapsed_ms(start, end, &ms));
  printf("  8 memsets of 32 MiB: %.3f ms\n", (double)ms);
  ASSERT(ms > 0 && ms < 60000);  // 256 MiB written takes some time
  float back = 0;
  OCL_ASSERT_OK(fx.ops->event_elapsed_ms(end, start, &back));
  ASSERT(back == -ms);
  OCL_ASSERT_STATUS(fx.ops->event_elapsed_ms(start, plain, &ms),
                    ACCEL_ERROR_INVALID_ARGUMENT);
  // Re-recording replaces the capture: start and end now bracket nothing.
  OCL_ASSERT_OK(fx.ops->event_record(start, stream));
  OCL_ASSERT_OK(fx.ops->event_record(end, stream));
  OCL_ASSERT_OK(fx.ops->stream_synchronize(stream));
  OCL_ASSERT_OK(fx.ops->event_elapsed_ms(start, end, &ms));
  ASSERT(ms >= 0 && ms < 1000);
  OCL_ASSERT_OK(fx.ops->stream_query(stream, &done));
  ASSERT(done);
  fx.ops->event_destroy(start);
  fx.ops->event_destroy(end);
  fx.ops->event_destroy(plain);
  fx.ops->stream_destroy(stream);
  fx.ops->mem_free(fx.device, mem);
  ocl_unload(&fx);
}

// Two devices: run with POCL_DEVICES="pthread pthread" (one context), and
// also with ACCEL_OPENCL_CONTEXTS=device (two contexts).
TEST(two_devices) {
  ocl_fixture_t fx;
  OPEN_OR_SKIP(fx, 1);
  void* dev1 = fx.device;
  void* dev0 = NULL;
  OCL_ASSERT_OK(fx.desc->device_open(fx.plugin, 0, &dev0));
  // Two PoCL devices are wanted; on a GPU node devices 0 and 1 may belong
  // to two platforms (vendor and driver tell them apart).
  accel_plugin_device_props_t p0, p1;
  memset(&p0, 0, sizeof(p0));
  memset(&p1, 0, sizeof(p1));
  p0.struct_size = p1.struct_size = sizeof(p0);
  OCL_ASSERT_OK(fx.ops->query_props(dev0, &p0));
  OCL_ASSERT_OK(fx.ops->query_props(dev1, &p1));
  if (strcmp(p0.vendor, p1.vendor) != 0 ||
      strcmp(p0.driver_version, p1.driver_version) != 0) {
    fx.desc->device_close(dev0);
    ocl_unload(&fx);
    SKIP("devices 0 and 1 are of two platforms (%s %s, %s %s)", p0.vendor,
         p0.driver_version, p1.vendor, p1.driver_version);
  }
  const char* mode = getenv("ACCEL_OPENCL_CONTEXTS");
  bool one_context = mode == NULL || strcmp(mode, "device") != 0;
  bool can = !one_context;
  OCL_ASSERT_OK(fx.ops->can_access_peer(dev0, dev1, &can));
  ASSERT_EQ(can, one_context);
  accel_plugin_device_props_t p;
  memset(&p, 0, sizeof(p));
  p.struct_size = sizeof(p);
  OCL_ASSERT_OK(fx.ops->query_props(dev1, &p));
  ASSERT_EQ((p.caps & ACCEL_DEVICE_CAP_PEER_ACCESS) != 0, one_context);

  enum { N = 16 << 20 };
  unsigned char* host = malloc(N);
  unsigned char* out = malloc(N);
  ASSERT(host != NULL && out != NULL);
  void *a = NULL, *b = NULL, *s0 = NULL, *s1 = NULL, *ev = NULL;
  OCL_ASSERT_OK(fx.ops->mem_alloc(dev0, N, &a));
  OCL_ASSERT_OK(fx.ops->mem_alloc(dev1, N, &b));
  OCL_ASSERT_OK(fx.ops->stream_create(dev0, 0, &s0));
  OCL_ASSERT_OK(fx.ops->stream_create(dev1, 0, &s1));
  OCL_ASSERT_OK(fx.ops->event_create(dev0, 0, &ev));
  // Blocking peer copy.
  pattern(host, N, 9);
  OCL_ASSERT_OK(fx.ops->copy_h2d(dev0, NULL, a, 0, host, N));
  OCL_ASSERT_OK(fx.ops->copy_peer(dev1, NULL, b, 0, dev0, a, 0, N));
  OCL_ASSERT_OK(fx.ops->copy_d2h(dev1, NULL, out, b, 0, N));
  ASSERT_MEM_EQ(out, host, N);
  // Device 0 writes on its stream; device 1's stream waits for that work
  // through the event, then copies it over: it must see the new bytes.
  for (int round = 0; round < 3; round++) {
    OCL_ASSERT_OK(fx.ops->memset(dev0, s0, a, 0, (uint8_t)(0x10 + round), N));
    OCL_ASSERT_OK(fx.ops->copy_h2d(dev0, s0, a, 4096, host, 4096));
    OCL_ASSERT_OK(fx.ops->event_record(ev, s0));
    OCL_ASSERT_OK(fx.ops->stream_wait_event(s1, ev));
    OCL_ASSERT_OK(fx.ops->copy_peer(dev1, s1, b, 0, dev0, a, 0, N));
    OCL_ASSERT_OK(fx.ops->copy_d2h(dev1, s1, out, b, 0, N));
    OCL_ASSERT_OK(fx.ops->stream_synchronize(s1));
    ASSERT_EQ(out[0], 0x10 + round);
    ASSERT_EQ(out[N - 1], 0x10 + round);
    ASSERT_MEM_EQ(out + 4096, host, 4096);
  }
  OCL_ASSERT_OK(fx.ops->stream_synchronize(s0));
  fx.ops->event_destroy(ev);
  fx.ops->stream_destroy(s0);
  fx.ops->stream_destroy(s1);
  fx.ops->mem_free(dev0, a);
  fx.ops->mem_free(dev1, b);
  fx.desc->device_close(dev0);
  free(host);
  free(out);
  ocl_unload(&fx);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
