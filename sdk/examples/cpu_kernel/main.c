// SPDX-License-Identifier: MIT
//
// Loads the saxpy kernel module built beside this program, launches it on
// the CPU device over a grid of 256-element blocks and checks the result.
//
//   ./saxpy_host ./saxpy_kernel.so
#include <accel/accel.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                   \
  do {                                                                \
    accel_status_t s_ = (call);                                       \
    if (s_ != ACCEL_OK) {                                             \
      fprintf(stderr, "%s: %s: %s\n", #call, accel_status_string(s_), \
              accel_last_error());                                    \
      exit(1);                                                        \
    }                                                                 \
  } while (0)

int main(int argc, char** argv) {
  const char* path = argc > 1 ? argv[1] : "./saxpy_kernel.so";
  enum { N = 1000003, BLOCK = 256 };
  float* x = malloc(N * sizeof(float));
  float* y = malloc(N * sizeof(float));
  if (x == NULL || y == NULL) return 1;
  for (uint32_t i = 0; i < N; i++) {
    x[i] = (float)i;
    y[i] = 1.0f;
  }

  accel_device_t* device = NULL;
  accel_stream_t* stream = NULL;
  accel_module_t* module = NULL;
  accel_kernel_t* kernel = NULL;
  accel_buffer_t *bx = NULL, *by = NULL;
  CHECK(accel_device_open("cpu:0", &device));
  CHECK(accel_stream_create(device, 0, &stream));
  CHECK(accel_module_create_from_file(device, path, &module));
  CHECK(accel_kernel_create(module, "saxpy", &kernel));
  CHECK(accel_buffer_create(device, N * sizeof(float), &bx));
  CHECK(accel_buffer_create(device, N * sizeof(float), &by));
  CHECK(accel_buffer_write(bx, 0, x, N * sizeof(float)));
  CHECK(accel_buffer_write(by, 0, y, N * sizeof(float)));

  float a = 2.0f;
  uint32_t n = N;
  accel_kernel_arg_t args[4] = {
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = sizeof(a), .value = &a},
      {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = bx},
      {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = by},
      {.kind = ACCEL_KERNEL_ARG_VALUE, .size = sizeof(n), .value = &n},
  };
  accel_launch_config_t config;
  accel_launch_config_init(&config);
  config.grid[0] = (N + BLOCK - 1) / BLOCK;
  config.block[0] = BLOCK;
  CHECK(accel_kernel_launch(kernel, stream, &config, 4, args));
  CHECK(accel_stream_read_buffer(stream, by, 0, y, N * sizeof(float)));
  CHECK(accel_stream_synchronize(stream));

  int bad = 0;
  for (uint32_t i = 0; i < N; i++) {
    if (y[i] != 2.0f * (float)i + 1.0f) bad++;
  }
  printf("saxpy over %d elements in %u blocks: %s\n", N, config.grid[0],
         bad == 0 ? "ok" : "WRONG");

  accel_buffer_release(by);
  accel_buffer_release(bx);
  accel_kernel_release(kernel);
  accel_module_release(module);
  accel_stream_release(stream);
  accel_device_release(device);
  accel_shutdown();
  free(y);
  free(x);
  return bad == 0 ? 0 : 1;
}
