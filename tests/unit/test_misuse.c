// SPDX-License-Identifier: MIT
//
// Misuse of every function in <accel/accel.h>: NULL handles and outputs,
// zero sizes, out-of-bounds and overflowing ranges, cross-device mixes, bad
// flags and struct sizes. Each refused call must return the documented
// status, set a fresh non-empty accel_last_error(), leave outputs NULL, and
// change no data (buffers are read back and compared afterwards).
// CTest runs this with ACCEL_CPU_DEVICES=2, so cpu:0 and cpu:1 exist.
#include <accel/accel.h>

#include "test.h"

enum { kBuf = 1000 };

static const char* const kSizeMaxText = "18446744073709551615";

// A message from an earlier, unrelated failure; every checked failure must
// replace it.
static char primed[1024];

static void prime_error(void) {
  accel_device_t* device = NULL;
  accel_device_select("PRIME_MARKER:x", &device);
  snprintf(primed, sizeof(primed), "%s", accel_last_error());
}

#define ASSERT_FRESH_ERROR()                                          \
  do {                                                                \
    const char* m_ = accel_last_error();                              \
    ASSERT_NOT_NULL(m_);                                              \
    if (m_[0] == '\0' || strcmp(m_, primed) == 0)                     \
      TEST_FAIL_AT_("empty or stale accel_last_error(): \"%s\"", m_); \
  } while (0)

// `call` fails with `status` and sets its own message.
#define EXPECT_FAIL(call, status) \
  do {                            \
    prime_error();                \
    ASSERT_STATUS(call, status);  \
    ASSERT_FRESH_ERROR();         \
  } while (0)

#define EXPECT_INVALID(call) EXPECT_FAIL(call, ACCEL_ERROR_INVALID_ARGUMENT)

// Like EXPECT_INVALID, and the message names both devices.
#define EXPECT_CROSS_DEVICE(call)                     \
  do {                                                \
    EXPECT_INVALID(call);                             \
    ASSERT_STR_CONTAINS(accel_last_error(), "cpu:0"); \
    ASSERT_STR_CONTAINS(accel_last_error(), "cpu:1"); \
  } while (0)

// Like EXPECT_INVALID, and the message names the buffer size, offset and
// size of the range.
#define EXPECT_OUT_OF_BOUNDS(call, offset_text, size_text) \
  do {                                                     \
    EXPECT_INVALID(call);                                  \
    ASSERT_STR_CONTAINS(accel_last_error(), "1000");       \
    ASSERT_STR_CONTAINS(accel_last_error(), offset_text);  \
    ASSERT_STR_CONTAINS(accel_last_error(), size_text);    \
  } while (0)

// Handles every test starts from: two devices, buffers with known
// contents, a stream and an event on each device.
typedef struct world {
  accel_device_t* d0;
  accel_device_t* d1;
  accel_buffer_t* b0;   // cpu:0, filled with 0x11
  accel_buffer_t* b0b;  // cpu:0, filled with 0x22
  accel_buffer_t* b1;   // cpu:1, filled with 0x33
  accel_stream_t* s0;
  accel_stream_t* s1;
  accel_event_t* e0;
  accel_event_t* e1;
} world_t;

static world_t w;

static accel_status_t world_setup(void) {
  memset(&w, 0, sizeof(w));
  accel_status_t s;
  if ((s = accel_device_open("cpu:0", &w.d0)) != ACCEL_OK) return s;
  if ((s = accel_device_open("cpu:1", &w.d1)) != ACCEL_OK) return s;
  if ((s = accel_buffer_create(w.d0, kBuf, &w.b0)) != ACCEL_OK) return s;
  if ((s = accel_buffer_create(w.d0, kBuf, &w.b0b)) != ACCEL_OK) return s;
  if ((s = accel_buffer_create(w.d1, kBuf, &w.b1)) != ACCEL_OK) return s;
  if ((s = accel_buffer_fill(w.b0, 0, 0x11, kBuf)) != ACCEL_OK) return s;
  if ((s = accel_buffer_fill(w.b0b, 0, 0x22, kBuf)) != ACCEL_OK) return s;
  if ((s = accel_buffer_fill(w.b1, 0, 0x33, kBuf)) != ACCEL_OK) return s;
  if ((s = accel_stream_create(w.d0, 0, &w.s0)) != ACCEL_OK) return s;
  if ((s = accel_stream_create(w.d1, 0, &w.s1)) != ACCEL_OK) return s;
  if ((s = accel_event_create(w.d0, 0, &w.e0)) != ACCEL_OK) return s;
  return accel_event_create(w.d1, 0, &w.e1);
}

static void world_teardown(void) {
  accel_stream_synchronize(w.s0);
  accel_stream_synchronize(w.s1);
  accel_event_release(w.e0);
  accel_event_release(w.e1);
  accel_stream_release(w.s0);
  accel_stream_release(w.s1);
  accel_buffer_release(w.b0);
  accel_buffer_release(w.b0b);
  accel_buffer_release(w.b1);
  accel_device_release(w.d0);
  accel_device_release(w.d1);
  memset(&w, 0, sizeof(w));
}

#define WORLD_SETUP() ASSERT_OK(world_setup())

// True when every byte of `buffer` is `value`.
static bool buffer_is(accel_buffer_t* buffer, unsigned char value) {
  unsigned char data[kBuf];
  if (accel_buffer_read(buffer, 0, data, kBuf) != ACCEL_OK) return false;
  for (size_t i = 0; i < kBuf; i++) {
    if (data[i] != value) {
      fprintf(stderr, "  byte %zu is 0x%02x, expected 0x%02x\n", i, data[i],
              value);
      return false;
    }
  }
  return true;
}

static bool all_is(const unsigned char* data, size_t size,
                   unsigned char value) {
  for (size_t i = 0; i < size; i++) {
    if (data[i] != value) return false;
  }
  return true;
}

#define ASSERT_WORLD_UNCHANGED()               \
  do {                                         \
    ASSERT_OK(accel_stream_synchronize(w.s0)); \
    ASSERT_OK(accel_stream_synchronize(w.s1)); \
    ASSERT(buffer_is(w.b0, 0x11));             \
    ASSERT(buffer_is(w.b0b, 0x22));            \
    ASSERT(buffer_is(w.b1, 0x33));             \
  } while (0)

TEST(library_calls) {
  accel_options_init(NULL);
  accel_shutdown();
  accel_options_t options;
  accel_options_init(&options);
  options.struct_size = 0;
  EXPECT_INVALID(accel_init(&options));
  accel_options_init(&options);
  options.exclude_count = 1;  // and exclude NULL
  EXPECT_INVALID(accel_init(&options));

  ASSERT_NOT_NULL(accel_version_string());
  ASSERT_STR_EQ(accel_status_string((accel_status_t)4242),
                "ACCEL_ERROR_UNKNOWN");

  EXPECT_INVALID(accel_plugin_report_count(NULL));
  accel_plugin_report_t report;
  memset(&report, 0, sizeof(report));
  EXPECT_INVALID(accel_plugin_report_get(0, NULL));
  EXPECT_INVALID(accel_plugin_report_get(0, &report));  // struct_size 0
  report.struct_size = sizeof(report);
  EXPECT_FAIL(accel_plugin_report_get(SIZE_MAX, &report),
              ACCEL_ERROR_NOT_FOUND);
  size_t count = 0;
  ASSERT_OK(accel_plugin_report_count(&count));
  EXPECT_FAIL(accel_plugin_report_get(count, &report), ACCEL_ERROR_NOT_FOUND);

  EXPECT_INVALID(accel_search_path_count(NULL));
  const char* path = NULL;
  accel_origin_t origin;
  EXPECT_INVALID(accel_search_path_get(0, NULL, &origin));
  EXPECT_INVALID(accel_search_path_get(0, &path, NULL));
  EXPECT_FAIL(accel_search_path_get(SIZE_MAX, &path, &origin),
              ACCEL_ERROR_NOT_FOUND);
  EXPECT_INVALID(accel_plugin_load(NULL));
}

TEST(device_lookup) {
  EXPECT_INVALID(accel_device_count(NULL));
  accel_device_t* device = (accel_device_t*)&device;
  EXPECT_INVALID(accel_device_get(0, NULL));
  EXPECT_FAIL(accel_device_get(UINT32_MAX, &device), ACCEL_ERROR_NOT_FOUND);
  ASSERT_NULL(device);
  uint32_t devices = 0;
  ASSERT_OK(accel_device_count(&devices));
  ASSERT_GE(devices, 2);
  device = (accel_device_t*)&device;
  EXPECT_FAIL(accel_device_get(devices, &device), ACCEL_ERROR_NOT_FOUND);
  ASSERT_NULL(device);
  ASSERT_OK(accel_device_get(0, &device));
  ASSERT(accel_device_uri(device)[0] != '\0');
  accel_device_release(device);

  device = (accel_device_t*)&device;
  EXPECT_INVALID(accel_device_open(NULL, &device));
  ASSERT_NULL(device);
  EXPECT_INVALID(accel_device_open("cpu", NULL));
  EXPECT_INVALID(accel_device_default(NULL));
  EXPECT_INVALID(accel_device_select("cpu", NULL));
  EXPECT_INVALID(accel_device_select(NULL, NULL));

  // NULL handles: no-ops and neutral values, never a crash.
  accel_device_retain(NULL);
  accel_device_release(NULL);
  accel_buffer_retain(NULL);
  accel_buffer_release(NULL);
  accel_stream_retain(NULL);
  accel_stream_release(NULL);
  accel_event_retain(NULL);
  accel_event_release(NULL);
  ASSERT_STR_EQ(accel_device_uri(NULL), "");
  (void)accel_device_backend(NULL);
  (void)accel_device_index(NULL);
  ASSERT_EQ(accel_buffer_size(NULL), 0);
  ASSERT_NULL(accel_buffer_device(NULL));
  ASSERT_NULL(accel_stream_device(NULL));
}

TEST(device_queries) {
  WORLD_SETUP();
  accel_device_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  EXPECT_INVALID(accel_device_query_info(NULL, &info));
  EXPECT_INVALID(accel_device_query_info(w.d0, NULL));
  info.struct_size = 0;
  EXPECT_INVALID(accel_device_query_info(w.d0, &info));
  info.struct_size = 4;
  EXPECT_INVALID(accel_device_query_info(w.d0, &info));
  info.struct_size = sizeof(info);
  ASSERT_OK(accel_device_query_info(w.d1, &info));
  ASSERT_STR_EQ(info.uri, "cpu:1");
  ASSERT_STR_EQ(info.backend, "cpu");
  ASSERT_EQ(info.index, 1);
  ASSERT_EQ(info.type, ACCEL_DEVICE_TYPE_CPU);
  ASSERT_GT(info.total_memory, 0);

  uint64_t free_bytes = 0, total = 0;
  EXPECT_INVALID(accel_device_query_memory(NULL, &free_bytes, &total));
  EXPECT_INVALID(accel_device_query_memory(w.d0, NULL, &total));
  EXPECT_INVALID(accel_device_query_memory(w.d0, &free_bytes, NULL));
  ASSERT_OK(accel_device_query_memory(w.d0, &free_bytes, &total));
  ASSERT_LE(free_bytes, total);

  bool can = true;
  EXPECT_INVALID(accel_device_can_access_peer(NULL, w.d1, &can));
  EXPECT_INVALID(accel_device_can_access_peer(w.d0, NULL, &can));
  EXPECT_INVALID(accel_device_can_access_peer(w.d0, w.d1, NULL));
  ASSERT_OK(accel_device_can_access_peer(w.d0, w.d0, &can));
  ASSERT(!can);  // never with itself

  ASSERT_NULL(accel_device_cap_name(0));
  ASSERT_NULL(
      accel_device_cap_name(ACCEL_DEVICE_CAP_F16 | ACCEL_DEVICE_CAP_BF16));
  ASSERT_NULL(accel_device_cap_name(1u << 30));
  ASSERT_STR_EQ(accel_device_cap_name(ACCEL_DEVICE_CAP_F16), "f16");
  ASSERT_STR_EQ(accel_device_cap_name(ACCEL_DEVICE_CAP_EVENT_TIMING),
                "event_timing");
  world_teardown();
}

TEST(buffer_create_and_host_alloc) {
  WORLD_SETUP();
  accel_buffer_t* buffer = (accel_buffer_t*)&buffer;
  EXPECT_INVALID(accel_buffer_create(NULL, 16, &buffer));
  ASSERT_NULL(buffer);
  buffer = (accel_buffer_t*)&buffer;
  EXPECT_INVALID(accel_buffer_create(w.d0, 0, &buffer));
  ASSERT_NULL(buffer);
  EXPECT_INVALID(accel_buffer_create(w.d0, 16, NULL));
  // An impossible size fails cleanly (no overflow in size rounding).
  buffer = (accel_buffer_t*)&buffer;
  prime_error();
  accel_status_t status = accel_buffer_create(w.d0, SIZE_MAX, &buffer);
  ASSERT(status == ACCEL_ERROR_OUT_OF_DEVICE_MEMORY ||
         status == ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_FRESH_ERROR();
  ASSERT_NULL(buffer);

  void* ptr = &ptr;
  EXPECT_INVALID(accel_host_alloc(NULL, 16, &ptr));
  ASSERT_NULL(ptr);
  ptr = &ptr;
  EXPECT_INVALID(accel_host_alloc(w.d0, 0, &ptr));
  ASSERT_NULL(ptr);
  EXPECT_INVALID(accel_host_alloc(w.d0, 16, NULL));
  accel_host_free(w.d0, NULL);
  accel_host_free(NULL, NULL);
  world_teardown();
}

TEST(buffer_write_read) {
  WORLD_SETUP();
  unsigned char src[kBuf], dst[kBuf];
  memset(src, 0x77, sizeof(src));
  memset(dst, 0xee, sizeof(dst));

  EXPECT_INVALID(accel_buffer_write(NULL, 0, src, 8));
  EXPECT_INVALID(accel_buffer_write(w.b0, 0, NULL, 8));
  EXPECT_INVALID(accel_buffer_write(w.b0, 0, src, 0));
  EXPECT_OUT_OF_BOUNDS(accel_buffer_write(w.b0, 997, src, 5), "997", "5");
  EXPECT_OUT_OF_BOUNDS(accel_buffer_write(w.b0, 1000, src, 1), "1000", "1");
  EXPECT_OUT_OF_BOUNDS(accel_buffer_write(w.b0, 0, src, 1001), "0", "1001");
  EXPECT_OUT_OF_BOUNDS(accel_buffer_write(w.b0, SIZE_MAX, src, 2), kSizeMaxText,
                       "2");
  EXPECT_OUT_OF_BOUNDS(accel_buffer_write(w.b0, 2, src, SIZE_MAX), "2",
                       kSizeMaxText);

  EXPECT_INVALID(accel_buffer_read(NULL, 0, dst, 8));
  EXPECT_INVALID(accel_buffer_read(w.b0, 0, NULL, 8));
  EXPECT_INVALID(accel_buffer_read(w.b0, 0, dst, 0));
  EXPECT_OUT_OF_BOUNDS(accel_buffer_read(w.b0, 997, dst, 5), "997", "5");
  EXPECT_OUT_OF_BOUNDS(accel_buffer_read(w.b0, SIZE_MAX, dst, 2), kSizeMaxText,
                       "2");
  EXPECT_OUT_OF_BOUNDS(accel_buffer_read(w.b0, 2, dst, SIZE_MAX), "2",
                       kSizeMaxText);
  ASSERT(all_is(dst, sizeof(dst), 0xee));
  ASSERT_WORLD_UNCHANGED();

  // The edges themselves are fine.
  ASSERT_OK(accel_buffer_write(w.b0b, 999, src, 1));
  ASSERT_OK(accel_buffer_read(w.b0b, 999, dst, 1));
  ASSERT_EQ(dst[0], 0x77);
  world_teardown();
}

TEST(buffer_copy_fill) {
  WORLD_SETUP();
  EXPECT_INVALID(accel_buffer_copy(NULL, 0, w.b0, 0, 8));
  EXPECT_INVALID(accel_buffer_copy(w.b0b, 0, NULL, 0, 8));
  EXPECT_INVALID(accel_buffer_copy(w.b0b, 0, w.b0, 0, 0));
  EXPECT_OUT_OF_BOUNDS(accel_buffer_copy(w.b0b, 997, w.b0, 0, 5), "997", "5");
  EXPECT_OUT_OF_BOUNDS(accel_buffer_copy(w.b0b, 0, w.b0, 997, 5), "997", "5");
  EXPECT_OUT_OF_BOUNDS(accel_buffer_copy(w.b0b, SIZE_MAX, w.b0, 0, 2),
                       kSizeMaxText, "2");
  EXPECT_OUT_OF_BOUNDS(accel_buffer_copy(w.b0b, 0, w.b0, SIZE_MAX, 2),
                       kSizeMaxText, "2");
  EXPECT_OUT_OF_BOUNDS(accel_buffer_copy(w.b0b, 0, w.b0, 4, SIZE_MAX), "4",
                       kSizeMaxText);
  // Across devices: the range is still checked on both sides.
  EXPECT_OUT_OF_BOUNDS(accel_buffer_copy(w.b1, 999, w.b0, 0, 2), "999", "2");

  EXPECT_INVALID(accel_buffer_fill(NULL, 0, 0xff, 8));
  EXPECT_INVALID(accel_buffer_fill(w.b0, 0, 0xff, 0));
  EXPECT_OUT_OF_BOUNDS(accel_buffer_fill(w.b0, 997, 0xff, 5), "997", "5");
  EXPECT_OUT_OF_BOUNDS(accel_buffer_fill(w.b0, SIZE_MAX, 0xff, 2), kSizeMaxText,
                       "2");
  EXPECT_OUT_OF_BOUNDS(accel_buffer_fill(w.b0, 3, 0xff, SIZE_MAX), "3",
                       kSizeMaxText);
  ASSERT_WORLD_UNCHANGED();
  world_teardown();
}

// Copies across devices of one backend are allowed (peer copy).
TEST(buffer_copy_across_devices_is_allowed) {
  WORLD_SETUP();
  ASSERT_OK(accel_buffer_copy(w.b1, 0, w.b0, 0, kBuf));
  ASSERT(buffer_is(w.b1, 0x11));
  ASSERT_OK(accel_buffer_fill(w.b1, 0, 0x44, kBuf));
  ASSERT_OK(accel_buffer_copy(w.b0b, 0, w.b1, 0, kBuf));
  ASSERT(buffer_is(w.b0b, 0x44));
  world_teardown();
}

TEST(streams) {
  WORLD_SETUP();
  accel_stream_t* stream = (accel_stream_t*)&stream;
  EXPECT_INVALID(accel_stream_create(NULL, 0, &stream));
  ASSERT_NULL(stream);
  stream = (accel_stream_t*)&stream;
  EXPECT_INVALID(accel_stream_create(w.d0, 1, &stream));
  ASSERT_NULL(stream);
  EXPECT_INVALID(accel_stream_create(w.d0, 0x80000000u, &stream));
  EXPECT_INVALID(accel_stream_create(w.d0, 0, NULL));

  bool done = false;
  EXPECT_INVALID(accel_stream_synchronize(NULL));
  EXPECT_INVALID(accel_stream_query(NULL, &done));
  EXPECT_INVALID(accel_stream_query(w.s0, NULL));
  EXPECT_INVALID(accel_stream_wait_event(NULL, w.e0));
  EXPECT_INVALID(accel_stream_wait_event(w.s0, NULL));
  // Waiting on another device of the same backend is allowed.
  ASSERT_OK(accel_event_record(w.e1, w.s1));
  ASSERT_OK(accel_stream_wait_event(w.s0, w.e1));
  ASSERT_OK(accel_stream_synchronize(w.s0));
  world_teardown();
}

TEST(stream_transfers) {
  WORLD_SETUP();
  unsigned char src[kBuf], dst[kBuf];
  memset(src, 0x77, sizeof(src));
  memset(dst, 0xee, sizeof(dst));

  EXPECT_INVALID(accel_stream_write_buffer(NULL, w.b0, 0, src, 8));
  EXPECT_INVALID(accel_stream_write_buffer(w.s0, NULL, 0, src, 8));
  EXPECT_INVALID(accel_stream_write_buffer(w.s0, w.b0, 0, NULL, 8));
  EXPECT_INVALID(accel_stream_write_buffer(w.s0, w.b0, 0, src, 0));
  EXPECT_OUT_OF_BOUNDS(accel_stream_write_buffer(w.s0, w.b0, 997, src, 5),
                       "997", "5");
  EXPECT_OUT_OF_BOUNDS(accel_stream_write_buffer(w.s0, w.b0, SIZE_MAX, src, 2),
                       kSizeMaxText, "2");
  EXPECT_OUT_OF_BOUNDS(accel_stream_write_buffer(w.s0, w.b0, 2, src, SIZE_MAX),
                       "2", kSizeMaxText);
  EXPECT_CROSS_DEVICE(accel_stream_write_buffer(w.s0, w.b1, 0, src, 8));

  EXPECT_INVALID(accel_stream_read_buffer(NULL, w.b0, 0, dst, 8));
  EXPECT_INVALID(accel_stream_read_buffer(w.s0, NULL, 0, dst, 8));
  EXPECT_INVALID(accel_stream_read_buffer(w.s0, w.b0, 0, NULL, 8));
  EXPECT_INVALID(accel_stream_read_buffer(w.s0, w.b0, 0, dst, 0));
  EXPECT_OUT_OF_BOUNDS(accel_stream_read_buffer(w.s0, w.b0, 997, dst, 5), "997",
                       "5");
  EXPECT_OUT_OF_BOUNDS(accel_stream_read_buffer(w.s0, w.b0, SIZE_MAX, dst, 2),
                       kSizeMaxText, "2");
  EXPECT_CROSS_DEVICE(accel_stream_read_buffer(w.s0, w.b1, 0, dst, 8));

  EXPECT_INVALID(accel_stream_copy_buffer(NULL, w.b0b, 0, w.b0, 0, 8));
  EXPECT_INVALID(accel_stream_copy_buffer(w.s0, NULL, 0, w.b0, 0, 8));
  EXPECT_INVALID(accel_stream_copy_buffer(w.s0, w.b0b, 0, NULL, 0, 8));
  EXPECT_INVALID(accel_stream_copy_buffer(w.s0, w.b0b, 0, w.b0, 0, 0));
  EXPECT_OUT_OF_BOUNDS(accel_stream_copy_buffer(w.s0, w.b0b, 997, w.b0, 0, 5),
                       "997", "5");
  EXPECT_OUT_OF_BOUNDS(accel_stream_copy_buffer(w.s0, w.b0b, 0, w.b0, 997, 5),
                       "997", "5");
  EXPECT_OUT_OF_BOUNDS(
      accel_stream_copy_buffer(w.s0, w.b0b, SIZE_MAX, w.b0, 0, 2), kSizeMaxText,
      "2");
  EXPECT_OUT_OF_BOUNDS(
      accel_stream_copy_buffer(w.s0, w.b0b, 0, w.b0, 4, SIZE_MAX), "4",
      kSizeMaxText);
  EXPECT_CROSS_DEVICE(accel_stream_copy_buffer(w.s0, w.b1, 0, w.b0, 0, 8));

  EXPECT_INVALID(accel_stream_fill_buffer(NULL, w.b0, 0, 0xff, 8));
  EXPECT_INVALID(accel_stream_fill_buffer(w.s0, NULL, 0, 0xff, 8));
  EXPECT_INVALID(accel_stream_fill_buffer(w.s0, w.b0, 0, 0xff, 0));
  EXPECT_OUT_OF_BOUNDS(accel_stream_fill_buffer(w.s0, w.b0, 997, 0xff, 5),
                       "997", "5");
  EXPECT_OUT_OF_BOUNDS(accel_stream_fill_buffer(w.s0, w.b0, SIZE_MAX, 0xff, 2),
                       kSizeMaxText, "2");
  EXPECT_OUT_OF_BOUNDS(accel_stream_fill_buffer(w.s0, w.b0, 3, 0xff, SIZE_MAX),
                       "3", kSizeMaxText);
  EXPECT_CROSS_DEVICE(accel_stream_fill_buffer(w.s0, w.b1, 0, 0xff, 8));

  ASSERT_WORLD_UNCHANGED();
  ASSERT(all_is(dst, sizeof(dst), 0xee));
  world_teardown();
}

// A stream copy may read from a peer device of the same backend.
TEST(stream_copy_from_peer_is_allowed) {
  WORLD_SETUP();
  ASSERT_OK(accel_stream_copy_buffer(w.s0, w.b0b, 0, w.b1, 0, kBuf));
  ASSERT_OK(accel_stream_synchronize(w.s0));
  ASSERT(buffer_is(w.b0b, 0x33));
  world_teardown();
}

TEST(events) {
  WORLD_SETUP();
  accel_event_t* event = (accel_event_t*)&event;
  EXPECT_INVALID(accel_event_create(NULL, 0, &event));
  ASSERT_NULL(event);
  event = (accel_event_t*)&event;
  EXPECT_INVALID(accel_event_create(w.d0, 4, &event));  // unknown flag
  ASSERT_NULL(event);
  EXPECT_INVALID(accel_event_create(w.d0, 0x80000000u, &event));
  EXPECT_INVALID(accel_event_create(w.d0, 0, NULL));

  EXPECT_INVALID(accel_event_record(NULL, w.s0));
  EXPECT_INVALID(accel_event_record(w.e0, NULL));
  EXPECT_CROSS_DEVICE(accel_event_record(w.e1, w.s0));
  bool done = false;
  EXPECT_INVALID(accel_event_synchronize(NULL));
  EXPECT_INVALID(accel_event_query(NULL, &done));
  EXPECT_INVALID(accel_event_query(w.e0, NULL));
  // Never recorded: complete.
  ASSERT_OK(accel_event_query(w.e0, &done));
  ASSERT(done);
  ASSERT_OK(accel_event_synchronize(w.e0));
  world_teardown();
}

TEST(event_elapsed) {
  WORLD_SETUP();
  float ms = -1.0f;
  // Events without timing, recorded and complete, cannot be timed.
  ASSERT_OK(accel_event_record(w.e0, w.s0));
  accel_event_t* plain = NULL;
  ASSERT_OK(accel_event_create(w.d0, 0, &plain));
  ASSERT_OK(accel_event_record(plain, w.s0));
  ASSERT_OK(accel_stream_synchronize(w.s0));
  EXPECT_INVALID(accel_event_elapsed_ms(w.e0, plain, &ms));

  accel_event_t* t0 = NULL;
  accel_event_t* t1 = NULL;
  accel_event_t* u1 = NULL;  // timing, on cpu:1
  accel_status_t status = accel_event_create(w.d0, ACCEL_EVENT_TIMING, &t0);
  if (status == ACCEL_ERROR_UNSUPPORTED) {
    accel_event_release(plain);
    world_teardown();
    SKIP("cpu events cannot time");
  }
  ASSERT_OK(status);
  ASSERT_OK(accel_event_create(w.d0, ACCEL_EVENT_TIMING, &t1));
  ASSERT_OK(accel_event_create(w.d1, ACCEL_EVENT_TIMING, &u1));
  EXPECT_INVALID(accel_event_elapsed_ms(NULL, t1, &ms));
  EXPECT_INVALID(accel_event_elapsed_ms(t0, NULL, &ms));
  EXPECT_INVALID(accel_event_elapsed_ms(t0, t1, NULL));
  // Timing events never recorded.
  EXPECT_INVALID(accel_event_elapsed_ms(t0, t1, &ms));
  ASSERT_OK(accel_event_record(t0, w.s0));
  EXPECT_INVALID(accel_event_elapsed_ms(t0, t1, &ms));  // t1 not recorded
  // One side without timing.
  EXPECT_INVALID(accel_event_elapsed_ms(t0, plain, &ms));
  ASSERT_OK(accel_event_record(t1, w.s0));
  ASSERT_OK(accel_event_record(u1, w.s1));
  ASSERT_OK(accel_stream_synchronize(w.s0));
  ASSERT_OK(accel_stream_synchronize(w.s1));
  // Different devices.
  EXPECT_INVALID(accel_event_elapsed_ms(t0, u1, &ms));
  ASSERT_OK(accel_event_elapsed_ms(t0, t1, &ms));
  ASSERT(ms >= 0.0f);
  accel_event_release(t0);
  accel_event_release(t1);
  accel_event_release(u1);
  accel_event_release(plain);
  world_teardown();
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
