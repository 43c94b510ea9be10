// SPDX-License-Identifier: MIT
//
// Lazy start with the real CUDA plugin on the fake driver (ACCEL_CUDA_DRIVER
// names tests/cuda's libfakecuda): ACCEL_BACKEND=cpu never loads the
// driver library into the process; auto does.
#define _GNU_SOURCE  // RTLD_NOLOAD
#include <accel/accel.h>
#include <dlfcn.h>
#include <stdlib.h>

#include "test.h"

// Whether the driver library is mapped into this process.
static bool driver_loaded(void) {
  void* h = dlopen(getenv("ACCEL_CUDA_DRIVER"), RTLD_NOW | RTLD_NOLOAD);
  if (h == NULL) return false;
  dlclose(h);
  return true;
}

TEST(cpu_never_opens_the_cuda_driver) {
  ASSERT_NOT_NULL(getenv("ACCEL_CUDA_DRIVER"));
  setenv("ACCEL_BACKEND", "cpu", 1);
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_default(&d));
  ASSERT_STR_EQ(accel_device_uri(d), "cpu:0");
  accel_device_release(d);
  ASSERT(!driver_loaded());
  unsetenv("ACCEL_BACKEND");

  ASSERT_OK(accel_device_select("auto", &d));
  ASSERT(driver_loaded());
  ASSERT_STR_EQ(accel_device_uri(d), "cuda:0");  // the fake GPU wins
  accel_device_release(d);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
