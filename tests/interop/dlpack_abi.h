// SPDX-License-Identifier: MIT
//
// The DLPack structs (dlpack.h v1.x: the legacy DLManagedTensor and the
// versioned DLManagedTensorVersioned), declared again from the published
// layout for tests, so they check the library's own declarations rather
// than share them.
#ifndef ACCEL_TESTS_INTEROP_DLPACK_ABI_H_
#define ACCEL_TESTS_INTEROP_DLPACK_ABI_H_

#include <stddef.h>
#include <stdint.h>

enum { DL_CPU = 1, DL_CUDA = 2, DL_ROCM = 10 };
enum { DL_INT = 0, DL_FLOAT = 2 };

typedef struct {
  int32_t device_type, device_id;
} dl_device_t;
typedef struct {
  uint8_t code, bits;
  uint16_t lanes;
} dl_dtype_t;
typedef struct {
  void* data;
  dl_device_t device;
  int32_t ndim;
  dl_dtype_t dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} dl_tensor_t;
typedef struct dl_managed {
  dl_tensor_t dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct dl_managed*);
} dl_managed_t;
typedef struct dl_versioned {
  uint32_t major, minor;
  void* manager_ctx;
  void (*deleter)(struct dl_versioned*);
  uint64_t flags;
  dl_tensor_t dl_tensor;
} dl_versioned_t;

_Static_assert(sizeof(dl_tensor_t) == 48, "DLTensor is 48 bytes on LP64");
_Static_assert(offsetof(dl_versioned_t, dl_tensor) == 32, "layout");

#endif  // ACCEL_TESTS_INTEROP_DLPACK_ABI_H_
