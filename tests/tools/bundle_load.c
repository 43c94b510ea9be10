// SPDX-License-Identifier: MIT
//
// Helper of bundle_test.sh: loads the bundle at argv[1] on cpu:0 and looks
// up kt_add_one in it. Exit 0 when both work, 1 otherwise.
#include <accel/accel.h>
#include <stdio.h>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  accel_device_t* device = NULL;
  accel_module_t* module = NULL;
  accel_kernel_t* kernel = NULL;
  int rc = 1;
  if (accel_device_open("cpu:0", &device) == ACCEL_OK &&
      accel_module_create_from_file(device, argv[1], &module) == ACCEL_OK &&
      accel_kernel_create(module, "kt_add_one", &kernel) == ACCEL_OK) {
    rc = 0;
  } else {
    fprintf(stderr, "bundle_load: %s\n", accel_last_error());
  }
  accel_kernel_release(kernel);
  accel_module_release(module);
  accel_device_release(device);
  accel_shutdown();
  return rc;
}
