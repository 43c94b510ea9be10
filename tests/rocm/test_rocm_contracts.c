// SPDX-License-Identifier: MIT
//
// The HIP runtime state the ROCm plugin shares with the application, on
// libfakehip (ACCEL_ROCM_RUNTIME, two devices): the calling thread's
// current device is given back after every plugin call; failures the
// plugin expects and handles leave no last error behind (HIP 7.0 keeps it
// until hipGetLastError reads it; CMakeLists.txt runs this file at several
// reported HIP versions); can_access_peer only asks, and access is enabled
// at the first peer copy; each stream has its own rocBLAS handle. The test
// calls the same fake runtime the plugin loaded (dlopen of the same path
// gives the same library, so the same per-thread state).
#include <accel/accel.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

typedef int (*hip_int_fn_t)(int);
typedef int (*hip_ptr_fn_t)(int*);
typedef int (*hip_void_fn_t)(void);
typedef int (*hip_peer_fn_t)(int, unsigned int);

// The fake runtime's entry points (hipError_t as int; hipSuccess is 0).
static struct {
  hip_int_fn_t set_device;
  hip_ptr_fn_t get_device;
  hip_void_fn_t get_last_error;
  hip_peer_fn_t enable_peer;
  unsigned long (*blas_destroys)(void);  // fakehip_rocblas_destroy_count
} hip;

static int hip_open(void) {
  const char* path = getenv("ACCEL_ROCM_RUNTIME");
  void* lib = path != NULL ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
  if (lib == NULL) return -1;
  void* sym[4] = {dlsym(lib, "hipSetDevice"), dlsym(lib, "hipGetDevice"),
                  dlsym(lib, "hipGetLastError"),
                  dlsym(lib, "hipDeviceEnablePeerAccess")};
  for (int i = 0; i < 4; i++) {
    if (sym[i] == NULL) return -1;
  }
  // POSIX: dlsym results convert to function pointers (memcpy keeps ISO C
  // -Wpedantic quiet).
  memcpy(&hip.set_device, &sym[0], sizeof(sym[0]));
  memcpy(&hip.get_device, &sym[1], sizeof(sym[1]));
  memcpy(&hip.get_last_error, &sym[2], sizeof(sym[2]));
  memcpy(&hip.enable_peer, &sym[3], sizeof(sym[3]));
  void* count = dlsym(lib, "fakehip_rocblas_destroy_count");
  memcpy(&hip.blas_destroys, &count, sizeof(count));
  return 0;
}

static int current_device(void) {
  int device = -1;
  return hip.get_device(&device) == 0 ? device : -1;
}

#define OPEN_HIP()                                         \
  do {                                                     \
    if (hip_open() != 0) SKIP("ACCEL_ROCM_RUNTIME unset"); \
  } while (0)

// Every kind of call: allocation, copies, a fill, streams, events, GEMM.
TEST(rocm_gives_back_the_current_device) {
  OPEN_HIP();
  ASSERT_EQ(hip.set_device(1), 0);
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("rocm:0", &device));
  ASSERT_EQ(current_device(), 1);
  accel_buffer_t* buffer = NULL;
  ASSERT_OK(accel_buffer_create(device, 4096, &buffer));
  ASSERT_EQ(current_device(), 1);
  float host[16] = {0};
  ASSERT_OK(accel_buffer_write(buffer, 0, host, sizeof(host)));
  ASSERT_EQ(current_device(), 1);
  accel_stream_t* stream = NULL;
  ASSERT_OK(accel_stream_create(device, 0, &stream));
  ASSERT_EQ(current_device(), 1);
  ASSERT_OK(accel_op_fill(stream, buffer, 0, ACCEL_DTYPE_F32, 16, 2.0));
  ASSERT_EQ(current_device(), 1);
  accel_event_t* event = NULL;
  ASSERT_OK(accel_event_create(device, 0, &event));
  ASSERT_OK(accel_event_record(event, stream));
  ASSERT_EQ(current_device(), 1);
  ASSERT_OK(accel_stream_synchronize(stream));
  ASSERT_OK(accel_buffer_read(buffer, 0, host, sizeof(host)));
  ASSERT(host[15] == 2.0f);
  ASSERT_EQ(current_device(), 1);
  accel_event_release(event);
  accel_stream_release(stream);
  accel_buffer_release(buffer);
  accel_device_release(device);
  ASSERT_EQ(current_device(), 1);
  ASSERT_EQ(hip.set_device(0), 0);
}

// Device OOM and a refused code object are reported through the status;
// peer access the application already enabled is fine. None of them may
// stay behind as the thread's last error.
TEST(rocm_leaves_no_last_error) {
  OPEN_HIP();
  accel_device_t* dev0 = NULL;
  accel_device_t* dev1 = NULL;
  ASSERT_OK(accel_device_open("rocm:0", &dev0));
  ASSERT_OK(accel_device_open("rocm:1", &dev1));
  (void)hip.get_last_error();
  // 5 GiB twice on an 8 GiB device: the second hipMalloc fails (each is
  // below the device's largest allocation, so the core asks the plugin).
  accel_buffer_t* big = NULL;
  accel_buffer_t* huge = NULL;
  ASSERT_OK(accel_buffer_create(dev0, (size_t)5 << 30, &big));
  ASSERT_EQ(accel_buffer_create(dev0, (size_t)5 << 30, &huge),
            ACCEL_ERROR_OUT_OF_DEVICE_MEMORY);
  accel_buffer_release(big);
  ASSERT_EQ(hip.get_last_error(), 0);
  static const unsigned char junk[64] = {1, 2, 3};
  accel_module_t* module = NULL;
  ASSERT(accel_module_create(dev0, junk, sizeof(junk), &module) != ACCEL_OK);
  ASSERT_EQ(hip.get_last_error(), 0);
  // The application enables 0 -> 1 itself; the plugin's own attempt at the
  // first copy then gets hipErrorPeerAccessAlreadyEnabled.
  ASSERT_EQ(hip.set_device(0), 0);
  ASSERT_EQ(hip.enable_peer(1, 0), 0);
  accel_buffer_t* a = NULL;
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(dev0, 4096, &a));
  ASSERT_OK(accel_buffer_create(dev1, 4096, &b));
  ASSERT_OK(accel_buffer_copy(a, 0, b, 0, 4096));
  ASSERT_EQ(hip.get_last_error(), 0);
  accel_buffer_release(a);
  accel_buffer_release(b);
  accel_device_release(dev1);
  accel_device_release(dev0);
}

// can_access_peer asks and changes nothing: the application can still
// enable access itself afterwards without "already enabled".
TEST(rocm_can_access_peer_is_a_query) {
  OPEN_HIP();
  accel_device_t* dev0 = NULL;
  accel_device_t* dev1 = NULL;
  ASSERT_OK(accel_device_open("rocm:0", &dev0));
  ASSERT_OK(accel_device_open("rocm:1", &dev1));
  bool can = false;
  ASSERT_OK(accel_device_can_access_peer(dev1, dev0, &can));
  ASSERT(can);
  accel_device_info_t info;
  memset(&info, 0, sizeof(info));
  info.struct_size = sizeof(info);
  ASSERT_OK(accel_device_query_info(dev1, &info));
  ASSERT(info.caps & ACCEL_DEVICE_CAP_PEER_ACCESS);
  ASSERT_EQ(hip.set_device(1), 0);
  ASSERT_EQ(hip.enable_peer(0, 0), 0);  // not hipErrorPeerAccessAlreadyEnabled
  ASSERT_EQ(hip.set_device(0), 0);
  accel_device_release(dev1);
  accel_device_release(dev0);
}

// Two streams, each with a GEMM that runs on rocBLAS-managed memory (the
// lent workspace is too small: FAKEHIP_ROCBLAS_NEED) and takes a while
// (FAKEHIP_BLAS_DELAY_MS): with one handle for both streams the second
// GEMM would use the handle's scratch while the first still runs, which
// the fake refuses. Streams going away keep their handles for the next
// streams (rocblas_destroy_handle would synchronise the device): a second
// round creates none and destroys none.
TEST(rocm_gemm_two_streams_own_handles) {
  OPEN_HIP();
  if (getenv("FAKEHIP_BLAS_DELAY_MS") == NULL) {
    SKIP("needs FAKEHIP_BLAS_DELAY_MS and ACCEL_ROCM_BLAS");
  }
  ASSERT_NOT_NULL(hip.blas_destroys);
  unsigned long destroys0 = hip.blas_destroys();
  accel_device_t* device = NULL;
  ASSERT_OK(accel_device_open("rocm:0", &device));
  enum { N = 8 };
  float ones[N * N];
  for (int i = 0; i < N * N; i++) ones[i] = 1.0f;
  accel_buffer_t* ab = NULL;
  ASSERT_OK(accel_buffer_create(device, sizeof(ones), &ab));
  ASSERT_OK(accel_buffer_write(ab, 0, ones, sizeof(ones)));
  for (int round = 0; round < 2; round++) {
    accel_stream_t* streams[2] = {NULL, NULL};
    accel_buffer_t* c[2] = {NULL, NULL};
    for (int s = 0; s < 2; s++) {
      ASSERT_OK(accel_stream_create(device, 0, &streams[s]));
      ASSERT_OK(accel_buffer_create(device, sizeof(ones), &c[s]));
    }
    for (int s = 0; s < 2; s++) {
      accel_gemm_t g;
      accel_gemm_init(&g);
      g.m = g.n = g.k = N;
      g.a = g.b = ab;
      g.c = c[s];
      ASSERT_OK(accel_op_gemm(streams[s], &g));
    }
    for (int s = 0; s < 2; s++) {
      ASSERT_OK(accel_stream_synchronize(streams[s]));
      float out[N * N];
      ASSERT_OK(accel_buffer_read(c[s], 0, out, sizeof(out)));
      ASSERT(out[0] == (float)N && out[N * N - 1] == (float)N);
      accel_buffer_release(c[s]);
      accel_stream_release(streams[s]);
    }
    ASSERT_EQ(hip.blas_destroys(), destroys0);
  }
  accel_buffer_release(ab);
  accel_device_release(device);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
