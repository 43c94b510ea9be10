// SPDX-License-Identifier: MIT
//
// Search details are logged at debug level. CTest runs this with
// ACCEL_LOG=debug.
#include <accel/accel.h>

#include "loader_util.h"
#include "test.h"

// A missing ACCEL_PLUGIN_PATH item is skipped quietly but still logged at
// debug level, so a user can see why a plugin was not found.
TEST(missing_item_logged_at_debug) {
  lu_restart("/nonexistent-accel-logdir");
  int token = lu_stderr_begin();
  uint32_t devices = 0;
  accel_status_t status = accel_device_count(&devices);
  char* text = lu_stderr_end(token);
  bool mentioned = strstr(text, "/nonexistent-accel-logdir") != NULL;
  bool cpu = strstr(text, "cpu") != NULL;
  if (!mentioned || !cpu) fprintf(stderr, "  log was:\n%s\n", text);
  free(text);
  ASSERT_OK(status);
  ASSERT(mentioned);
  ASSERT(cpu);  // discovery decisions are logged too
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
