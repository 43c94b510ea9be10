// SPDX-License-Identifier: MIT
//
// The same random fills on every device of every loaded backend (cpu,
// opencl on PoCL, cuda and rocm on their stand-in drivers when the test
// environment names them) must give the same bytes: each device's output
// is compared with the host reference of <accel/philox.h>, and therefore
// with every other device's. The cases cover each distribution and dtype,
// counts that end inside a Philox block, an unaligned start, a count that
// spans several CPU chunks and GPU grid strides, and a counter that
// carries past 2^64.
//
// RNG_TEST_REQUIRE: space-separated backends that must be among the
// devices (a stand-in that failed to load must not pass silently).
#include <stdio.h>
#include <stdlib.h>

#include "rng_test.h"
#include "test.h"

static const rng_case_t cases[] = {
    {ACCEL_PHILOX_BITS, ACCEL_DTYPE_I32, 1003, 0x123456789ull, 7, 0, 0},
    {ACCEL_PHILOX_UNIFORM, ACCEL_DTYPE_F32, 1001, 42, 0, -2.5, 3.25},
    {ACCEL_PHILOX_UNIFORM, ACCEL_DTYPE_F16, 999, 42, 3, -2.5, 3.25},
    {ACCEL_PHILOX_UNIFORM, ACCEL_DTYPE_BF16, 998, 42, 3, 0, 1},
    {ACCEL_PHILOX_NORMAL, ACCEL_DTYPE_F32, 1002, 7, 11, 1.5, 0.75},
    {ACCEL_PHILOX_NORMAL, ACCEL_DTYPE_F16, 1001, 7, 11, 0, 1},
    {ACCEL_PHILOX_NORMAL, ACCEL_DTYPE_BF16, 1001, 7, 11, -4, 2},
    {ACCEL_PHILOX_NORMAL, ACCEL_DTYPE_F32, 200003, UINT64_MAX, 1, 0, 1},
    {ACCEL_PHILOX_NORMAL, ACCEL_DTYPE_F16, 70001, 3, 5, 0.25, 3},
    {ACCEL_PHILOX_NORMAL, ACCEL_DTYPE_BF16, 70003, 0xfeedull, 1u << 30, -1,
     0.5},
    {ACCEL_PHILOX_UNIFORM, ACCEL_DTYPE_F32, 101, 9, UINT64_MAX - 10, 0, 1},
};

// Runs every case on `device`; returns the number of mismatching cases.
static int run_device(accel_device_t* device) {
  accel_stream_t* stream = NULL;
  accel_buffer_t* buffer = NULL;
  const size_t max_bytes = 4 * (200003 + 8);
  unsigned char* got = malloc(max_bytes);
  unsigned char* want = malloc(max_bytes);
  int bad = 0;
  if (got == NULL || want == NULL ||
      accel_stream_create(device, 0, &stream) != ACCEL_OK ||
      accel_buffer_create(device, max_bytes, &buffer) != ACCEL_OK) {
    fprintf(stderr, "%s: setup failed: %s\n", accel_device_uri(device),
            accel_last_error());
    bad = 1;
  }
  for (size_t k = 0; bad == 0 && k < sizeof(cases) / sizeof(cases[0]); k++) {
    const rng_case_t* c = &cases[k];
    size_t elem = accel_dtype_size(c->dtype);
    size_t start = (k % 2) * 3 * elem;  // odd cases start 3 elements in
    accel_status_t st = rng_enqueue(stream, buffer, start, c);
    if (st == ACCEL_OK) st = accel_stream_synchronize(stream);
    if (st == ACCEL_OK)
      st = accel_buffer_read(buffer, start, got, c->count * elem);
    if (st != ACCEL_OK) {
      fprintf(stderr, "%s: case %zu: %s: %s\n", accel_device_uri(device), k,
              accel_status_string(st), accel_last_error());
      bad++;
      continue;
    }
    rng_reference(c, want);
    for (size_t i = 0; i < c->count * elem; i++) {
      if (got[i] != want[i]) {
        fprintf(stderr,
                "%s: case %zu: byte %zu (element %zu) is 0x%02x, "
                "want 0x%02x\n",
                accel_device_uri(device), k, i, i / elem, got[i], want[i]);
        bad++;
        break;
      }
    }
  }
  accel_buffer_release(buffer);
  accel_stream_release(stream);
  free(got);
  free(want);
  return bad;
}

TEST(every_backend_writes_the_same_bytes) {
  uint32_t count = 0;
  ASSERT_OK(accel_device_count(&count));
  char seen[256] = " ";
  int bad = 0;
  for (uint32_t i = 0; i < count; i++) {
    accel_device_t* device = NULL;
    ASSERT_OK(accel_device_get(i, &device));
    int mismatches = run_device(device);
    fprintf(stderr, "%s: %s\n", accel_device_uri(device),
            mismatches == 0 ? "identical" : "DIFFERENT");
    bad += mismatches;
    const char* backend = accel_device_backend(device);
    if (strlen(seen) + strlen(backend) + 2 < sizeof(seen)) {
      strcat(seen, backend);
      strcat(seen, " ");
    }
    accel_device_release(device);
  }
  ASSERT_EQ(bad, 0);
  const char* require = getenv("RNG_TEST_REQUIRE");
  char want[128];
  snprintf(want, sizeof(want), "%s", require != NULL ? require : "");
  for (char* name = strtok(want, " "); name != NULL; name = strtok(NULL, " ")) {
    char key[64];
    snprintf(key, sizeof(key), " %s ", name);
    if (strstr(seen, key) == NULL) {
      fprintf(stderr, "required backend %s has no device (saw:%s)\n", name,
              seen);
      ASSERT(0);
    }
  }
}

int main(int argc, char** argv) { return test_main(argc, argv); }
