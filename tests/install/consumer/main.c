// SPDX-License-Identifier: MIT
//
// A program built against an installed accel (tests/install). It opens
// cpu:0, round-trips a buffer and prints which plugin file served the
// device, so the test can check that the installed plugin directory was
// searched. Output:
//   device cpu:0
//   round trip ok
//   plugin cpu /prefix/lib/accel/libaccel-cpu.so
#include <accel/accel.h>
#include <stdio.h>
#include <string.h>

static int fail(const char* call, accel_status_t status) {
  fprintf(stderr, "%s: %s: %s\n", call, accel_status_string(status),
          accel_last_error());
  return 1;
}

// Prints the load report entry of the plugin named `backend`.
static int print_plugin(const char* backend) {
  size_t count = 0;
  accel_status_t status = accel_plugin_report_count(&count);
  if (status != ACCEL_OK) return fail("accel_plugin_report_count", status);
  for (size_t i = 0; i < count; i++) {
    accel_plugin_report_t report = {.struct_size = sizeof(report)};
    status = accel_plugin_report_get(i, &report);
    if (status != ACCEL_OK) return fail("accel_plugin_report_get", status);
    if (report.status == ACCEL_OK && strcmp(report.name, backend) == 0) {
      printf("plugin %s %s\n", report.name, report.path);
      return 0;
    }
  }
  fprintf(stderr, "no usable plugin named '%s' in the load report\n", backend);
  return 1;
}

int main(void) {
  accel_device_t* device = NULL;
  accel_status_t status = accel_device_open("cpu:0", &device);
  if (status != ACCEL_OK) return fail("accel_device_open", status);
  printf("device %s\n", accel_device_uri(device));

  static const char message[] = "accel installed";
  char back[sizeof(message)] = {0};
  accel_buffer_t* buffer = NULL;
  status = accel_buffer_create(device, sizeof(message), &buffer);
  if (status == ACCEL_OK) {
    status = accel_buffer_write(buffer, 0, message, sizeof(message));
  }
  if (status == ACCEL_OK) {
    status = accel_buffer_read(buffer, 0, back, sizeof(back));
  }
  accel_buffer_release(buffer);
  int failed = status != ACCEL_OK ? fail("buffer round trip", status) : 0;
  if (!failed && memcmp(message, back, sizeof(message)) != 0) {
    fprintf(stderr, "round trip returned '%s'\n", back);
    failed = 1;
  }
  if (!failed) {
    printf("round trip ok\n");
    failed = print_plugin(accel_device_backend(device));
  }
  accel_device_release(device);
  accel_shutdown();
  return failed;
}
