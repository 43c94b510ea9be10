// SPDX-License-Identifier: MIT
//
// tests/stand_in: one test source for both GPU stand-ins.
//
// The CUDA plugin on libfakecuda (tests/cuda/fakecuda) and the ROCm plugin
// on libfakehip (tests/rocm/fakehip) are checked by the same tests: stream
// and event controls (test_stand_in_control.c), interop
// (test_stand_in_interop.c), the BLAS workspace the core lends
// (test_stand_in_workspace.c) and device properties and a fault
// (stand_in_device_tests.h, included by each backend's own device test).
// What really differs between the two sits behind this adapter: the device
// URIs, the variable that points the plugin at its stand-in, the
// stand-in's own test-only counters and the vendor calls a test makes
// itself. Each executable links one adapter, stand_in_cuda.c or
// stand_in_rocm.c; tests/cuda/CMakeLists.txt and tests/rocm/CMakeLists.txt
// build and register them under their old CTest names. A test skips (77)
// when the variable does not name a stand-in it can open. The stand-ins
// themselves emulate two different vendor APIs and stay apart.
#ifndef ACCEL_TESTS_STAND_IN_STAND_IN_H_
#define ACCEL_TESTS_STAND_IN_STAND_IN_H_

#include <accel/accel.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// The properties the stand-in's default device reports. NULL strings and
// zero numbers are not checked.
typedef struct stand_in_props {
  const char* backend;
  const char* vendor;
  const char* name;
  const char* arch;
  const char* module_target;
  const char* driver_version;  // a part of it
  const char* features;        // a part of it
  const char* platform;
  const char* pci_bus_id;
  const char* uuid_prefix;  // the first bytes of the UUID
  uint32_t compute_units;
  uint32_t max_threads_per_block;
  uint32_t simd_width;
  uint64_t total_memory;
  uint64_t max_alloc_size;
  uint64_t max_shared_mem_bytes;
  uint32_t max_grid[3];
  accel_device_caps_t caps;  // bits that must be set
} stand_in_props_t;

// One backend's stand-in. Vendor handles travel as the uint64_t that
// accel's *_query_native calls give; vendor calls return the vendor's
// status, 0 for success in both APIs.
typedef struct stand_in {
  const char* backend;     // "cuda", "rocm": device URIs are "<backend>:N"
  const char* driver_env;  // names the stand-in the plugin loads
  const char* api;         // "CUDA", "HIP", as the plugin's messages say

  // -- devices --
  stand_in_props_t props;
  // Whether the stand-in runs its default device (no arch override).
  bool (*default_device)(void);
  const char* fault_env;    // a kernel named here faults asynchronously
  const char* fill_kernel;  // the kernel of accel_op_fill on f32
  const char* fault_error;  // the vendor's error name for the fault
  const char* fault_call;   // the call that reports it (NULL: unchecked)
  // Whether the device stays lost for later work after a fault, until its
  // last release (libfakecuda's context does; libfakehip clears it).
  bool fault_is_sticky;

  // -- stream and event controls --
  int32_t priority_least;  // the driver's range
  int32_t priority_greatest;
  unsigned event_blocking_sync;  // the driver's event flags
  unsigned event_disable_timing;
  // The priority the driver gave `stream`; false if it is not a stream.
  bool (*stream_priority)(uint64_t stream, int* out_priority);
  // The flags the driver got for `event`.
  unsigned (*event_flags)(uint64_t event);
  // Host functions the driver has been given so far.
  unsigned long (*host_func_count)(void);
  // Whether a host function behind faulting work is never called, as
  // cuLaunchHostFunc documents (libfakehip runs it: not checked there).
  bool host_funcs_stop_at_fault;

  // -- interop --
  int32_t dlpack_type;  // DL_CUDA, DL_ROCM
  // The driver's context of `device` (the primary one), or NULL where the
  // API has none; accel's ACCEL_NATIVE_CONTEXT is then UNSUPPORTED with a
  // message containing `no_context`.
  int (*primary_context)(int device, uint64_t* out_context);
  const char* no_context;
  int (*mem_alloc)(int device, size_t size, uint64_t* out_address);
  void (*mem_free)(int device, uint64_t address);
  int (*memset_async)(int device, uint64_t address, int value, size_t size,
                      uint64_t stream);
  int (*stream_query)(uint64_t stream);
  int (*event_query)(uint64_t event);
  // The device (and context, 0 where none) the driver says owns `address`.
  int (*pointer_owner)(uint64_t address, int* out_device,
                       uint64_t* out_context);
  // Whether the driver has [p, p + size) registered (page-locked).
  bool (*host_registered)(const void* p, size_t size);
  // Whether registering memory the driver allocated page-locked fails
  // (cuMemHostRegister does; libfakehip's hipHostRegister does not).
  bool pinned_register_refused;
  const char* unknown_memory;  // the wrap refusal of memory it never saw
  const char* host_memory;     // ... of registered host memory

  // -- the BLAS workspace --
  const char* blas_env;  // names the library that holds the fake BLAS
  // Its test-only entries: the last workspace a GEMM got (see
  // last_workspace_fn_t in tests/test_gemm_workspace.h), and how many
  // strided-batched calls queued their whole batch.
  const char* last_workspace_symbol;
  const char* batched_symbol;
  // GEMMs the record counts for a strided-batched call of 4.
  unsigned long batch_gemms;
  // Whether GEMMs go to the fake BLAS (else to a kernel of the plugin).
  bool (*blas_on)(void);
  // The workspace the plugin asks for on the stand-in's device.
  uint64_t (*expected_workspace)(void);
  const char* memory_env;  // caps the device memory (NULL: no such knob)
  const char* alloc_call;  // the driver's allocation, as messages name it
  // Bytes every BLAS GEMM needs beyond a lent workspace (NULL: no knob).
  const char* blas_need_env;
  // Names the plugin for tests that drive it as an ABI 1.1 core would,
  // where the plugin then allocates a workspace of its own (NULL: it
  // leaves that to the BLAS, nothing to check).
  const char* plugin_env;
} stand_in_t;

// The stand-in the plugin loads, opened by the path `driver_env` names and
// kept open for the process, with its test-only entries resolved; NULL
// (the test skips) when the variable names nothing that has them.
const stand_in_t* stand_in_open(void);

// -- the adapter's side (stand_in_cuda.c, stand_in_rocm.c) --

// The backend's stand-in; its entries are filled by stand_in_bind().
extern stand_in_t stand_in_backend;

// Resolves the vendor and test-only entries from `lib`, the library
// `driver_env` names; false if one is missing.
bool stand_in_bind(void* lib);

// `name` from `lib` into the function pointer at `fn`; false if missing.
bool stand_in_resolve(void* lib, const char* name, void* fn);

// "<backend>:<index>", in a static buffer per index (0 to 3).
static inline const char* stand_in_uri(const stand_in_t* s, int index) {
  static char uris[4][16];
  snprintf(uris[index & 3], sizeof(uris[0]), "%s:%d", s->backend, index);
  return uris[index & 3];
}

#endif  // ACCEL_TESTS_STAND_IN_STAND_IN_H_
