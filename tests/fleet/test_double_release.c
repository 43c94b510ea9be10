// SPDX-License-Identifier: MIT
//
// Released handles (the generation check of core/src/handle.c): releasing
// or retaining a released buffer, stream, event or device handle again is
// ignored with a message, and buffer calls on a released buffer fail with
// INVALID_ARGUMENT, even after newer handles of the same kind took its
// memory: a stale handle never names, frees or touches a newer object.
#include <accel/accel.h>
#include <stdio.h>
#include <string.h>

#include "test.h"

static accel_device_t* open_cpu(void) {
  accel_device_t* d = NULL;
  if (accel_device_open("cpu:0", &d) != ACCEL_OK) return NULL;
  return d;
}

static size_t active_blocks(accel_device_t* d) {
  accel_memory_stats_t s = {.struct_size = sizeof(s)};
  if (accel_device_query_memory_stats(d, &s) != ACCEL_OK) return 999;
  return (size_t)s.active_blocks;
}

// Leaves a message in accel_last_error() that says nothing of a release,
// so that the next check sees only what the call it checks said.
static void reset_error(void) {
  accel_buffer_t* none = NULL;
  (void)accel_buffer_create(NULL, 0, &none);
}

// Runs `call` (a retain or release) and checks that it was refused.
#define ASSERT_REFUSED(call)                                   \
  do {                                                         \
    reset_error();                                             \
    call;                                                      \
    ASSERT_STR_CONTAINS(accel_last_error(), "already released"); \
  } while (0)

// Sanitizers keep shadow memory per address, and handle records have an
// address per generation: their resident memory says nothing there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif

// Proportional resident memory of this process in KiB (shared pages
// counted once however often they are mapped), or 0 where unknown or
// sanitized.
static long pss_kib(void) {
#if defined(SANITIZED)
  return 0;
#endif
  FILE* f = fopen("/proc/self/smaps_rollup", "r");
  if (f == NULL) return 0;
  char line[256];
  long kib = 0;
  while (fgets(line, sizeof(line), f) != NULL) {
    if (sscanf(line, "Pss: %ld kB", &kib) == 1) break;
  }
  fclose(f);
  return kib;
}

TEST(released_handle_is_refused) {
  accel_device_t* d = open_cpu();
  ASSERT_NOT_NULL(d);
  accel_buffer_t* a = NULL;
  ASSERT_OK(accel_buffer_create(d, 4096, &a));
  accel_buffer_release(a);

  ASSERT_REFUSED(accel_buffer_release(a));  // double release: ignored
  ASSERT_REFUSED(accel_buffer_retain(a));  // retain after release: ignored
  accel_buffer_release(a);  // would drop the reference the retain "took"

  char byte = 1;
  ASSERT_STATUS(accel_buffer_write(a, 0, &byte, 1),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "already released");
  ASSERT_STATUS(accel_buffer_read(a, 0, &byte, 1),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(accel_buffer_size(a), 0);
  ASSERT_NULL(accel_buffer_device(a));

  // The allocator's books are intact: one new buffer, one active block.
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(d, 4096, &b));
  ASSERT_EQ(active_blocks(d), 1);
  ASSERT_OK(accel_buffer_write(b, 0, &byte, 1));
  accel_buffer_release(b);
  accel_device_release(d);
}

// The bug the generation check exists for: `b` takes the memory `a` had
// (same size, the cache hands the block back), then the program releases
// `a` again. Before, `a` and `b` were the same handle and that release
// freed `b`, whose memory then went to `c`.
TEST(double_release_after_reuse_spares_the_new_buffer) {
  accel_device_t* d = open_cpu();
  ASSERT_NOT_NULL(d);
  accel_buffer_t* a = NULL;
  ASSERT_OK(accel_buffer_create(d, 4096, &a));
  accel_buffer_release(a);
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(d, 4096, &b));
  ASSERT(a != b);  // a new handle, though the memory is the same block
  ASSERT_OK(accel_buffer_fill(b, 0, 0xbb, 4096));

  ASSERT_REFUSED(accel_buffer_release(a));  // stale: must not touch `b`
  ASSERT_REFUSED(accel_buffer_retain(a));
  ASSERT_STATUS(accel_buffer_fill(a, 0, 0xaa, 4096),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "already released");
  ASSERT_EQ(active_blocks(d), 1);  // `b` is still allocated
  ASSERT_EQ(accel_buffer_size(b), 4096);

  // A third buffer must get other memory than the live `b`.
  accel_buffer_t* c = NULL;
  ASSERT_OK(accel_buffer_create(d, 4096, &c));
  ASSERT_OK(accel_buffer_fill(c, 0, 0xcc, 4096));
  unsigned char got[4096];
  ASSERT_OK(accel_buffer_read(b, 0, got, sizeof(got)));
  for (size_t i = 0; i < sizeof(got); i++) ASSERT_EQ(got[i], 0xbb);
  ASSERT_EQ(active_blocks(d), 2);

  // Ops and stream calls refuse the stale handle too.
  accel_stream_t* s = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_STATUS(accel_op_fill(s, a, 0, ACCEL_DTYPE_F32, 4, 1.0),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "already released");
  ASSERT_STATUS(accel_stream_fill_buffer(s, a, 0, 0, 16),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_buffer_copy(c, 0, a, 0, 16),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_buffer_record_stream(a, s),
                ACCEL_ERROR_INVALID_ARGUMENT);
  uint64_t address = 1;
  ASSERT_STATUS(accel_buffer_query_address(a, 0, &address),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_OK(accel_stream_synchronize(s));
  accel_stream_release(s);

  ASSERT_OK(accel_buffer_read(b, 0, got, sizeof(got)));
  for (size_t i = 0; i < sizeof(got); i++) ASSERT_EQ(got[i], 0xbb);
  accel_buffer_release(b);
  accel_buffer_release(c);
  ASSERT_EQ(active_blocks(d), 0);
  accel_device_release(d);
}

// A stale handle stays recognisable while many newer handles of its kind
// come and go (200000, below the 64 x 4096 that handle.c guarantees), a
// long-lived buffer made in between keeps working, and the records are
// reused rather than piled up.
TEST(stale_handle_survives_many_newer_handles) {
  accel_device_t* d = open_cpu();
  ASSERT_NOT_NULL(d);
  accel_buffer_t* stale = NULL;
  ASSERT_OK(accel_buffer_create(d, 512, &stale));
  accel_buffer_release(stale);
  accel_buffer_t* keep = NULL;
  ASSERT_OK(accel_buffer_create(d, 512, &keep));
  ASSERT_OK(accel_buffer_fill(keep, 0, 0x5a, 512));
  long before = pss_kib();
  for (int i = 0; i < 200000; i++) {
    accel_buffer_t* t = NULL;
    ASSERT_OK(accel_buffer_create(d, 512, &t));
    ASSERT(t != stale);
    accel_buffer_release(t);
  }
  long after = pss_kib();
  // 200000 handle records would be 12.5 MiB.
  if (before > 0 && after > 0) ASSERT_LT(after - before, 4096);
  ASSERT_REFUSED(accel_buffer_release(stale));
  unsigned char got[512];
  ASSERT_OK(accel_buffer_read(keep, 0, got, sizeof(got)));
  for (size_t i = 0; i < sizeof(got); i++) ASSERT_EQ(got[i], 0x5a);
  ASSERT_EQ(active_blocks(d), 1);

  // Live handles in every slot the loop went through, `stale`'s among
  // them: its address then shows a live record (count 1), so only the
  // slot's generation tells it apart. handle.c hands out the oldest
  // released slot only while more than its quarantine of 4096 wait, so
  // each step holds one handle and releases one more to move the queue on.
  enum { LIVE = 8192 };
  static accel_buffer_t* live[LIVE];
  for (int i = 0; i < LIVE; i++) {
    ASSERT_OK(accel_buffer_create(d, 512, &live[i]));
    ASSERT(live[i] != stale);
    accel_buffer_t* t = NULL;
    ASSERT_OK(accel_buffer_create(d, 512, &t));
    accel_buffer_release(t);
  }
  ASSERT_REFUSED(accel_buffer_release(stale));
  ASSERT_REFUSED(accel_buffer_retain(stale));
  ASSERT_EQ(accel_buffer_size(stale), 0);
  ASSERT_STATUS(accel_buffer_write(stale, 0, got, sizeof(got)),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "already released");
  ASSERT_EQ(active_blocks(d), 1 + LIVE);
  for (int i = 0; i < LIVE; i++) accel_buffer_release(live[i]);
  accel_buffer_release(keep);
  accel_device_release(d);
}

TEST(stale_stream_and_event_releases_are_refused) {
  accel_device_t* d = open_cpu();
  ASSERT_NOT_NULL(d);
  accel_stream_t* s1 = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s1));
  accel_stream_release(s1);
  accel_stream_t* s2 = NULL;
  ASSERT_OK(accel_stream_create(d, 0, &s2));
  ASSERT(s1 != s2);
  ASSERT_REFUSED(accel_stream_release(s1));  // stale: must not destroy `s2`
  ASSERT_REFUSED(accel_stream_retain(s1));

  accel_event_t* e1 = NULL;
  ASSERT_OK(accel_event_create(d, 0, &e1));
  accel_event_release(e1);
  accel_event_t* e2 = NULL;
  ASSERT_OK(accel_event_create(d, 0, &e2));
  ASSERT(e1 != e2);
  ASSERT_REFUSED(accel_event_release(e1));  // stale: must not destroy `e2`
  ASSERT_REFUSED(accel_event_retain(e1));

  // `s2` and `e2` still work.
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(d, 256, &b));
  ASSERT_OK(accel_stream_fill_buffer(s2, b, 0, 7, 256));
  ASSERT_OK(accel_event_record(e2, s2));
  ASSERT_OK(accel_event_synchronize(e2));
  ASSERT_OK(accel_stream_synchronize(s2));
  unsigned char got[256];
  ASSERT_OK(accel_buffer_read(b, 0, got, sizeof(got)));
  ASSERT_EQ(got[255], 7);
  accel_buffer_release(b);
  accel_event_release(e2);
  accel_stream_release(s2);
  accel_device_release(d);
}

TEST(stale_device_release_is_refused) {
  accel_device_t* d1 = open_cpu();
  ASSERT_NOT_NULL(d1);
  accel_device_release(d1);  // the last reference: the device closes
  accel_device_t* d2 = open_cpu();
  ASSERT_NOT_NULL(d2);
  ASSERT(d1 != d2);
  ASSERT_REFUSED(accel_device_release(d1));  // stale: must not close `d2`
  ASSERT_REFUSED(accel_device_retain(d1));
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(d2, 256, &b));
  ASSERT_OK(accel_buffer_fill(b, 0, 3, 256));
  accel_buffer_release(b);
  accel_device_release(d2);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
