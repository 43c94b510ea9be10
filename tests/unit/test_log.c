// SPDX-License-Identifier: MIT
//
// accel_log_set_callback() and accel_log_set_level(): the core's and the
// cpu plugin's messages reach the application's logger, filtered by level,
// tagged once (no "cpu: cpu: ..."), and never after the callback is removed.
#include <accel/accel.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "test.h"

typedef struct seen {
  pthread_mutex_t lock;
  int total;
  int core;         // tag "accel"
  int plugin;       // tag "cpu"
  int doubled;      // message starting with "<tag>: "
  int too_verbose;  // a message above `max_level`
  int max_level;
} seen_t;

static void on_log(accel_log_level_t level, const char* tag,
                   const char* message, void* user_data) {
  seen_t* s = user_data;
  pthread_mutex_lock(&s->lock);
  s->total++;
  if (strcmp(tag, "accel") == 0) s->core++;
  if (strcmp(tag, "cpu") == 0) s->plugin++;
  size_t n = strlen(tag);
  if (strncmp(message, tag, n) == 0 && message[n] == ':') {
    fprintf(stderr, "doubled prefix: %s: %s\n", tag, message);
    s->doubled++;
  }
  if ((int)level > s->max_level) s->too_verbose++;
  pthread_mutex_unlock(&s->lock);
}

// Loads the plugins and runs a little work on cpu:0, which logs at debug.
static int exercise(void) {
  accel_device_t* dev = NULL;
  accel_buffer_t* buf = NULL;
  int ok = accel_device_open("cpu:0", &dev) == ACCEL_OK &&
           accel_buffer_create(dev, 4096, &buf) == ACCEL_OK;
  accel_buffer_release(buf);
  accel_device_release(dev);
  accel_shutdown();
  return ok;
}

TEST(set_level_rejects_bad_levels) {
  ASSERT_STATUS(accel_log_set_level(4), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_log_set_level(-2), ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "accel_log_set_level");
}

TEST(callback_gets_core_and_plugin_messages_once_tagged) {
  seen_t s = {.lock = PTHREAD_MUTEX_INITIALIZER, .max_level = 3};
  ASSERT_OK(accel_log_set_level(ACCEL_LOG_DEBUG));
  accel_log_set_callback(on_log, &s);
  ASSERT(exercise());
  accel_log_set_callback(NULL, NULL);
  ASSERT_GT(s.core, 0);
  ASSERT_GT(s.plugin, 0);
  ASSERT_EQ(s.doubled, 0);
  ASSERT_EQ(s.too_verbose, 0);
}

TEST(level_filters_before_the_callback) {
  seen_t s = {.lock = PTHREAD_MUTEX_INITIALIZER, .max_level = 1};
  ASSERT_OK(accel_log_set_level(ACCEL_LOG_WARN));
  accel_log_set_callback(on_log, &s);
  ASSERT(exercise());
  accel_log_set_callback(NULL, NULL);
  ASSERT_EQ(s.too_verbose, 0);
  ASSERT_EQ(s.core + s.plugin, 0);  // a clean run warns about nothing

  ASSERT_OK(accel_log_set_level(-1));  // nothing at all
  seen_t quiet = {.lock = PTHREAD_MUTEX_INITIALIZER, .max_level = -1};
  accel_log_set_callback(on_log, &quiet);
  ASSERT(exercise());
  accel_log_set_callback(NULL, NULL);
  ASSERT_EQ(quiet.total, 0);
}

TEST(removed_callback_is_not_called) {
  seen_t s = {.lock = PTHREAD_MUTEX_INITIALIZER, .max_level = 3};
  ASSERT_OK(accel_log_set_level(ACCEL_LOG_DEBUG));
  accel_log_set_callback(on_log, &s);
  accel_log_set_callback(NULL, NULL);
  // Quiet the stderr fallback for the rest of the run.
  ASSERT_OK(accel_log_set_level(-1));
  ASSERT(exercise());
  ASSERT_EQ(s.total, 0);
}

// Threads log (through plugin loads) while the callback is swapped.
static atomic_bool stop_swapping;
static void* swapper(void* arg) {
  while (!atomic_load(&stop_swapping)) {
    accel_log_set_callback(on_log, arg);
    accel_log_set_callback(NULL, NULL);
  }
  return NULL;
}

TEST(swapping_callbacks_while_logging) {
  seen_t s = {.lock = PTHREAD_MUTEX_INITIALIZER, .max_level = 3};
  ASSERT_OK(accel_log_set_level(ACCEL_LOG_DEBUG));
  pthread_t t;
  atomic_store(&stop_swapping, false);
  ASSERT_EQ(pthread_create(&t, NULL, swapper, &s), 0);
  accel_log_set_callback(on_log, &s);
  for (int i = 0; i < 5; i++) ASSERT(exercise());
  atomic_store(&stop_swapping, true);
  pthread_join(t, NULL);
  accel_log_set_callback(NULL, NULL);
  ASSERT_OK(accel_log_set_level(-1));
  ASSERT_EQ(s.doubled, 0);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
