// SPDX-License-Identifier: MIT
//
// Reference counting: open/create give one reference, retain adds one,
// release drops one; a child handle keeps its device alive; and when every
// handle is released, accel_shutdown() finds nothing alive.
//
// Whether shutdown found live handles is observable: it logs a warning
// (ACCEL_LOG=warn) and keeps their plugins loaded. The last two tests run
// this binary again as a child with --child-balanced / --child-leaky and
// compare what it printed.
#include <accel/accel.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loader_util.h"
#include "test.h"

extern char** environ;

static const char* self_path;

TEST(open_returns_same_device_new_reference) {
  accel_device_t* a = NULL;
  accel_device_t* b = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &a));
  ASSERT_OK(accel_device_open("cpu", &b));
  ASSERT(a == b);  // one accel_device_t per physical device
  accel_device_release(a);
  // b's reference is still there.
  ASSERT_STR_EQ(accel_device_uri(b), "cpu:0");
  ASSERT_STR_EQ(accel_device_backend(b), "cpu");
  ASSERT_EQ(accel_device_index(b), 0);
  accel_device_retain(b);
  accel_device_release(b);
  ASSERT_STR_EQ(accel_device_uri(b), "cpu:0");
  accel_device_release(b);
}

TEST(buffer_keeps_device_alive) {
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &device));
  accel_buffer_t* buffer = NULL;
  ASSERT_OK(accel_buffer_create(device, 256, &buffer));
  accel_device_release(device);  // the buffer holds the only reference now

  ASSERT_EQ(accel_buffer_size(buffer), 256);
  accel_device_t* owner = accel_buffer_device(buffer);
  ASSERT_NOT_NULL(owner);
  ASSERT_STR_EQ(accel_device_uri(owner), "cpu:0");
  unsigned char in[256], out[256];
  for (int i = 0; i < 256; i++) in[i] = (unsigned char)(255 - i);
  ASSERT_OK(accel_buffer_write(buffer, 0, in, sizeof(in)));
  ASSERT_OK(accel_buffer_read(buffer, 0, out, sizeof(out)));
  ASSERT_MEM_EQ(in, out, sizeof(in));
  // Another buffer on the borrowed device still works.
  accel_buffer_t* other = NULL;
  ASSERT_OK(accel_buffer_create(owner, 64, &other));
  ASSERT_OK(accel_buffer_copy(other, 0, buffer, 0, 64));
  accel_buffer_release(other);

  accel_buffer_retain(buffer);
  accel_buffer_release(buffer);
  ASSERT_OK(accel_buffer_read(buffer, 0, out, sizeof(out)));
  ASSERT_MEM_EQ(in, out, sizeof(in));
  accel_buffer_release(buffer);
}

TEST(stream_and_event_keep_device_alive) {
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &device));
  accel_stream_t* stream = NULL;
  accel_event_t* event = NULL;
  accel_buffer_t* buffer = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &stream));
  ASSERT_OK(accel_event_create(device, 0, &event));
  ASSERT_OK(accel_buffer_create(device, 64, &buffer));
  accel_device_release(device);

  ASSERT_STR_EQ(accel_device_uri(accel_stream_device(stream)), "cpu:0");
  ASSERT_OK(accel_stream_fill_buffer(stream, buffer, 0, 0x5a, 64));
  ASSERT_OK(accel_event_record(event, stream));
  accel_stream_retain(stream);
  accel_stream_release(stream);
  accel_event_retain(event);
  accel_event_release(event);
  ASSERT_OK(accel_event_synchronize(event));
  ASSERT_OK(accel_stream_synchronize(stream));
  unsigned char out[64], expected[64];
  memset(expected, 0x5a, sizeof(expected));
  ASSERT_OK(accel_buffer_read(buffer, 0, out, sizeof(out)));
  ASSERT_MEM_EQ(out, expected, sizeof(out));
  // Release in an order other than creation.
  accel_stream_release(stream);
  accel_buffer_release(buffer);
  accel_event_release(event);
}

// Every handle released: shutdown, then the library works again.
TEST(shutdown_with_no_handles_then_reuse) {
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &device));
  accel_buffer_t* buffer = NULL;
  ASSERT_OK(accel_buffer_create(device, 16, &buffer));
  accel_buffer_release(buffer);
  accel_device_release(device);
  accel_shutdown();
  ASSERT(lu_roundtrip("cpu:0"));
  accel_shutdown();
  ASSERT(lu_roundtrip("cpu:0"));
}

// Runs this binary with `mode` under ACCEL_LOG=warn; returns its exit code
// and what it wrote to stderr (malloc'd) in `*out_text`.
static int run_child(const char* mode, char** out_text) {
  *out_text = NULL;
  char* dir = lu_tempdir();
  if (dir == NULL) return -1;
  char* log = lu_join(dir, "stderr.txt");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, log,
                                   O_WRONLY | O_CREAT | O_TRUNC, 0644);
  setenv("ACCEL_LOG", "warn", 1);
  // The leaky child leaks on purpose; do not let LeakSanitizer fail it.
  setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
  char* argv[] = {(char*)self_path, (char*)mode, NULL};
  pid_t pid = 0;
  int rc = posix_spawn(&pid, self_path, &actions, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  unsetenv("ASAN_OPTIONS");
  setenv("ACCEL_LOG", "", 1);
  int status = 0;
  if (rc == 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status)) {
    rc = WEXITSTATUS(status);
  } else {
    rc = -1;
  }
  FILE* f = fopen(log, "r");
  if (f != NULL) {
    char* text = calloc(1, 65536);
    size_t n = fread(text, 1, 65535, f);
    text[n] = '\0';
    fclose(f);
    *out_text = text;
  }
  lu_rmtree(dir);
  free(log);
  free(dir);
  return rc;
}

TEST(shutdown_finds_no_live_handles) {
  char* balanced = NULL;
  char* leaky = NULL;
  int balanced_rc = run_child("--child-balanced", &balanced);
  int leaky_rc = run_child("--child-leaky", &leaky);
  if (balanced && balanced[0]) {
    fprintf(stderr, "  balanced child printed:\n%s\n", balanced);
  }
  bool balanced_quiet = balanced != NULL && balanced[0] == '\0';
  bool leaky_warned = leaky != NULL && leaky[0] != '\0';
  free(balanced);
  free(leaky);
  ASSERT_EQ(balanced_rc, 0);
  ASSERT_EQ(leaky_rc, 0);
  // Every reference was dropped: shutdown had nothing to warn about.
  ASSERT(balanced_quiet);
  // The control: a leaked buffer does make shutdown warn, so the quiet run
  // above means something.
  ASSERT(leaky_warned);
}

// Child: create and release a bit of everything, then shut down.
static int child_run(bool leak) {
  accel_device_t* device = NULL;
  accel_buffer_t* buffer = NULL;
  accel_stream_t* stream = NULL;
  accel_event_t* event = NULL;
  if (accel_device_open("cpu:0", &device) != ACCEL_OK ||
      accel_buffer_create(device, 1024, &buffer) != ACCEL_OK ||
      accel_stream_create(device, 0, &stream) != ACCEL_OK ||
      accel_event_create(device, 0, &event) != ACCEL_OK ||
      accel_stream_fill_buffer(stream, buffer, 0, 1, 1024) != ACCEL_OK ||
      accel_event_record(event, stream) != ACCEL_OK ||
      accel_event_synchronize(event) != ACCEL_OK) {
    printf("child setup failed: %s\n", accel_last_error());
    return 2;
  }
  accel_buffer_retain(buffer);
  accel_device_retain(device);
  accel_device_release(device);
  accel_device_release(device);
  accel_event_release(event);
  accel_stream_release(stream);
  accel_buffer_release(buffer);
  if (!leak) accel_buffer_release(buffer);
  accel_shutdown();
  return 0;
}

int main(int argc, char** argv) {
  self_path = argv[0];
  if (argc > 1 && strcmp(argv[1], "--child-balanced") == 0) {
    _exit(child_run(false));
  }
  if (argc > 1 && strcmp(argv[1], "--child-leaky") == 0) {
    _exit(child_run(true));
  }
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
