// SPDX-License-Identifier: MIT
//
// Error reporting: accel_status_string for every code, and thread-local
// accel_last_error() messages.
#include <accel/accel.h>
#include <pthread.h>

#include "test.h"

TEST(status_string_every_code) {
  static const struct {
    accel_status_t status;
    const char* name;
  } codes[] = {
      {ACCEL_OK, "ACCEL_OK"},
      {ACCEL_ERROR_INVALID_ARGUMENT, "ACCEL_ERROR_INVALID_ARGUMENT"},
      {ACCEL_ERROR_OUT_OF_MEMORY, "ACCEL_ERROR_OUT_OF_MEMORY"},
      {ACCEL_ERROR_OUT_OF_DEVICE_MEMORY, "ACCEL_ERROR_OUT_OF_DEVICE_MEMORY"},
      {ACCEL_ERROR_NOT_FOUND, "ACCEL_ERROR_NOT_FOUND"},
      {ACCEL_ERROR_UNSUPPORTED, "ACCEL_ERROR_UNSUPPORTED"},
      {ACCEL_ERROR_UNAVAILABLE, "ACCEL_ERROR_UNAVAILABLE"},
      {ACCEL_ERROR_INCOMPATIBLE, "ACCEL_ERROR_INCOMPATIBLE"},
      {ACCEL_ERROR_DEVICE_LOST, "ACCEL_ERROR_DEVICE_LOST"},
      {ACCEL_ERROR_BACKEND, "ACCEL_ERROR_BACKEND"},
      {ACCEL_ERROR_INTERNAL, "ACCEL_ERROR_INTERNAL"},
      {ACCEL_ERROR_NOT_READY, "ACCEL_ERROR_NOT_READY"},
      {ACCEL_ERROR_TIMEOUT, "ACCEL_ERROR_TIMEOUT"},
  };
  for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++) {
    ASSERT_STR_EQ(accel_status_string(codes[i].status), codes[i].name);
  }
}

// Unknown codes (including ones a newer library might add) get a fixed
// name, never NULL.
TEST(status_string_unknown_codes) {
  const int unknown[] = {13, 14, 100, 0x7ffffffe, 0x7fffffff, -1, -13};
  for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
    ASSERT_STR_EQ(accel_status_string((accel_status_t)unknown[i]),
                  "ACCEL_ERROR_UNKNOWN");
  }
}

// One failing call per thread; each thread must read back its own message.
typedef struct worker {
  const char* spec;   // selection string that fails
  const char* own;    // substring of this thread's message
  const char* other;  // substring of the other thread's message
  pthread_barrier_t* barrier;
  int failures;
} worker_t;

static void* worker_main(void* arg) {
  worker_t* w = arg;
  for (int round = 0; round < 200; round++) {
    accel_device_t* device = NULL;
    accel_status_t status = accel_device_select(w->spec, &device);
    // Both threads have failed before either reads its message.
    pthread_barrier_wait(w->barrier);
    const char* message = accel_last_error();
    if (status == ACCEL_OK || device != NULL ||
        strstr(message, w->own) == NULL || strstr(message, w->other) != NULL) {
      if (w->failures++ == 0) {
        fprintf(stderr, "  %s: status %s, message \"%s\"\n", w->spec,
                accel_status_string(status), message);
      }
    }
    pthread_barrier_wait(w->barrier);
  }
  return NULL;
}

TEST(last_error_is_thread_local) {
  uint32_t devices = 0;
  ASSERT_OK(accel_device_count(&devices));  // initialise up front
  pthread_barrier_t barrier;
  ASSERT_EQ(pthread_barrier_init(&barrier, NULL, 2), 0);
  worker_t a = {"cpu:5", "cpu:5", "zzbogus", &barrier, 0};
  worker_t b = {"zzbogus", "zzbogus", "cpu:5", &barrier, 0};
  pthread_t ta, tb;
  ASSERT_EQ(pthread_create(&ta, NULL, worker_main, &a), 0);
  ASSERT_EQ(pthread_create(&tb, NULL, worker_main, &b), 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  pthread_barrier_destroy(&barrier);
  ASSERT_EQ(a.failures, 0);
  ASSERT_EQ(b.failures, 0);
}

static void* fresh_thread_main(void* arg) {
  const char** out = arg;
  // Successful calls only: there is no failure to describe.
  accel_device_t* device = NULL;
  if (accel_device_open("cpu:0", &device) == ACCEL_OK) {
    accel_device_release(device);
  }
  out[0] = accel_last_error();
  return NULL;
}

// A thread that never failed sees "" even while another thread has a
// message.
TEST(last_error_empty_in_fresh_thread) {
  accel_device_t* device = NULL;
  ASSERT_STATUS(accel_device_select("zzbogus", &device),
                ACCEL_ERROR_INVALID_ARGUMENT);
  const char* seen[1] = {NULL};
  pthread_t t;
  ASSERT_EQ(pthread_create(&t, NULL, fresh_thread_main, seen), 0);
  pthread_join(t, NULL);
  ASSERT_NOT_NULL(seen[0]);
  ASSERT_STR_EQ(seen[0], "");
  // This thread's own message survived the other thread's calls.
  ASSERT_STR_CONTAINS(accel_last_error(), "zzbogus");
}

// The message never is NULL and describes the latest failure.
TEST(last_error_tracks_latest_failure) {
  ASSERT_NOT_NULL(accel_last_error());
  accel_device_t* device = NULL;
  ASSERT_STATUS(accel_device_select("zzfirst", &device),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "zzfirst");
  ASSERT_STATUS(accel_device_select("zzsecond", &device),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "zzsecond");
  ASSERT(strstr(accel_last_error(), "zzfirst") == NULL);
  ASSERT_STATUS(accel_device_select("cpu:5", &device), ACCEL_ERROR_NOT_FOUND);
  ASSERT_STR_CONTAINS(accel_last_error(), "cpu:5");
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
