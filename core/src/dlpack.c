// SPDX-License-Identifier: MIT
//
// DLPack: lending a buffer to another framework as a DLPack managed tensor
// and adopting one (zero-copy, through accel_buffer_wrap). The structs are
// declared here from DLPack's published ABI (v0.x "legacy" and v1.x
// "versioned" managed tensors), so accel.h needs no DLPack header: the
// public calls take and return `void*`.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

// --- DLPack ABI (dlpack.h, v1.x) -------------------------------------------
enum {
  ACCEL__DL_CPU = 1,
  ACCEL__DL_CUDA = 2,
  ACCEL__DL_CUDA_HOST = 3,
  ACCEL__DL_OPENCL = 4,
  ACCEL__DL_ROCM = 10,
};
enum {
  ACCEL__DL_INT = 0,
  ACCEL__DL_UINT = 1,
  ACCEL__DL_FLOAT = 2,
  ACCEL__DL_BFLOAT = 4,
  ACCEL__DL_BOOL = 6,
};
#define ACCEL__DL_FLAG_READ_ONLY ((uint64_t)1)
#define ACCEL__DL_MAX_NDIM 64

typedef struct {
  int32_t device_type;
  int32_t device_id;
} accel__dl_device_t;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} accel__dl_dtype_t;

typedef struct {
  void* data;
  accel__dl_device_t device;
  int32_t ndim;
  accel__dl_dtype_t dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
} accel__dl_tensor_t;

typedef struct accel__dl_managed {
  accel__dl_tensor_t dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct accel__dl_managed* self);
} accel__dl_managed_t;

typedef struct accel__dl_versioned {
  struct {
    uint32_t major;
    uint32_t minor;
  } version;
  void* manager_ctx;
  void (*deleter)(struct accel__dl_versioned* self);
  uint64_t flags;
  accel__dl_tensor_t dl_tensor;
} accel__dl_versioned_t;

// --- Export -----------------------------------------------------------------

// One allocation: the managed tensor (either kind), then shape and strides.
// manager_ctx is the buffer, whose reference the deleter releases.
typedef struct {
  union {
    accel__dl_managed_t legacy;
    accel__dl_versioned_t versioned;
  } m;
  int64_t dims[];  // shape[ndim], then strides[ndim]
} accel__dl_export_t;

static void accel__dl_delete_legacy(accel__dl_managed_t* self) {
  if (self == NULL) return;
  accel_buffer_release(self->manager_ctx);
  free(self);  // the union is the first member of the allocation
}

static void accel__dl_delete_versioned(accel__dl_versioned_t* self) {
  if (self == NULL) return;
  accel_buffer_release(self->manager_ctx);
  free(self);
}

// The DLPack id of a GPU device: the driver's ordinal (CUdevice,
// hipDevice_t), which is what other frameworks call the device, and which
// differs from accel's index when ACCEL_VISIBLE_DEVICES reorders devices;
// accel's index for a plugin that does not say (built before ABI 1.4).
static int32_t accel__dl_ordinal(const accel_device_t* device) {
  uint64_t ordinal = 0;
  if (device->ops->native_handle(device->impl, ACCEL_PLUGIN_NATIVE_DEVICE, NULL,
                                 &ordinal) == ACCEL_OK &&
      ordinal <= INT32_MAX) {
    return (int32_t)ordinal;
  }
  return (int32_t)device->index;
}

accel_status_t accel_dlpack_device(const accel_device_t* device,
                                   int32_t* out_type, int32_t* out_id) {
  if (out_type != NULL) *out_type = 0;
  if (out_id != NULL) *out_id = 0;
  if (device == NULL || out_type == NULL || out_id == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_dlpack_device: device, out_type and out_id "
                       "are required");
  }
  const char* backend = accel_device_backend(device);
  if (strcmp(backend, "cpu") == 0) {
    *out_type = ACCEL__DL_CPU;  // one host address space: id 0 always
  } else if (strcmp(backend, "cuda") == 0) {
    *out_type = ACCEL__DL_CUDA;
    *out_id = accel__dl_ordinal(device);
  } else if (strcmp(backend, "rocm") == 0) {
    *out_type = ACCEL__DL_ROCM;
    *out_id = accel__dl_ordinal(device);
  } else {
    return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                       "accel_dlpack_device: %s has no DLPack device type "
                       "(DLPack needs a data pointer; %s memory is %s)",
                       device->uri, backend,
                       strcmp(backend, "opencl") == 0
                           ? "a cl_mem handle without an address"
                           : "not known to have one");
  }
  return ACCEL_OK;
}

static bool accel__dl_dtype_of(accel_dtype_t dtype, accel__dl_dtype_t* out) {
  switch (dtype) {
    case ACCEL_DTYPE_F32:
      *out = (accel__dl_dtype_t){ACCEL__DL_FLOAT, 32, 1};
      return true;
    case ACCEL_DTYPE_F16:
      *out = (accel__dl_dtype_t){ACCEL__DL_FLOAT, 16, 1};
      return true;
    case ACCEL_DTYPE_BF16:
      *out = (accel__dl_dtype_t){ACCEL__DL_BFLOAT, 16, 1};
      return true;
    case ACCEL_DTYPE_I32:
      *out = (accel__dl_dtype_t){ACCEL__DL_INT, 32, 1};
      return true;
    default:
      return false;
  }
}

// Checks shape and strides (in elements, non-negative) against the
// `avail` bytes from the tensor's start and sets `*out_bytes` to the
// extent the view reaches (0 for an empty tensor).
static accel_status_t accel__dl_extent(const char* what, int32_t ndim,
                                       const int64_t* shape,
                                       const int64_t* strides, size_t elem,
                                       uint64_t* out_bytes) {
  uint64_t last = 0;  // index of the last element reached
  bool empty = false;
  for (int32_t i = 0; i < ndim; i++) {
    if (shape[i] < 0 || (strides != NULL && strides[i] < 0)) {
      return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: dimension %d has shape %lld and stride %lld; "
                         "negative values are not supported",
                         what, (int)i, (long long)shape[i],
                         (long long)(strides != NULL ? strides[i] : 0));
    }
    if (shape[i] == 0) empty = true;
    if (shape[i] > 1 && strides != NULL) {
      uint64_t step = (uint64_t)(shape[i] - 1);
      if ((uint64_t)strides[i] != 0 &&
          step > (UINT64_MAX / 2 - last) / (uint64_t)strides[i]) {
        return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: the shape and strides overflow", what);
      }
      last += step * (uint64_t)strides[i];
    }
  }
  if (strides == NULL) {  // row-major: the element count
    uint64_t count = 1;
    for (int32_t i = 0; i < ndim; i++) {
      if (shape[i] != 0 && count > UINT64_MAX / 2 / (uint64_t)shape[i]) {
        return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: the shape overflows", what);
      }
      count *= (uint64_t)shape[i];
    }
    last = count == 0 ? 0 : count - 1;
  }
  if (last + 1 > UINT64_MAX / elem) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: the shape overflows", what);
  }
  *out_bytes = empty ? 0 : (last + 1) * elem;
  return ACCEL_OK;
}

accel_status_t accel_buffer_to_dlpack(accel_buffer_t* buffer, size_t offset,
                                      accel_dtype_t dtype, int32_t ndim,
                                      const int64_t* shape,
                                      const int64_t* strides, bool versioned,
                                      void** out_managed) {
  const char* what = "accel_buffer_to_dlpack";
  if (out_managed != NULL) *out_managed = NULL;
  accel__dl_dtype_t dl_dtype;
  if (buffer == NULL || out_managed == NULL || ndim < 0 ||
      ndim > ACCEL__DL_MAX_NDIM || (ndim > 0 && shape == NULL)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: buffer, out_managed, 0 <= ndim <= %d and a "
                       "shape for ndim > 0 are required",
                       what, ACCEL__DL_MAX_NDIM);
  }
  if (!accel__dl_dtype_of(dtype, &dl_dtype)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT, "%s: unknown dtype %d",
                       what, (int)dtype);
  }
  if (accel__buffer_released(buffer)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: the buffer was already released", what);
  }
  uint64_t bytes = 0;
  size_t elem = dl_dtype.bits / 8u;
  accel_status_t status =
      accel__dl_extent(what, ndim, shape, strides, elem, &bytes);
  if (status != ACCEL_OK) return status;
  if (offset > buffer->size || bytes > buffer->size - offset) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: a view of %llu bytes at offset %zu is outside "
                       "the %zu-byte buffer on %s",
                       what, (unsigned long long)bytes, offset, buffer->size,
                       buffer->device->uri);
  }
  if (offset % elem != 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: offset %zu is not a multiple of the %zu-byte "
                       "element",
                       what, offset, elem);
  }
  accel__dl_device_t dl_device;
  status = accel_dlpack_device(buffer->device, &dl_device.device_type,
                               &dl_device.device_id);
  uint64_t address = 0;
  if (status == ACCEL_OK) {
    status = accel_buffer_query_address(buffer, offset, &address);
  }
  if (status != ACCEL_OK) return status;

  size_t n = (size_t)ndim;
  accel__dl_export_t* e = calloc(1, sizeof(*e) + 2 * n * sizeof(int64_t) + 1);
  if (e == NULL) {
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                       "%s: no host memory for the managed tensor", what);
  }
  int64_t* dl_shape = e->dims;
  int64_t* dl_strides = e->dims + n;
  int64_t stride = 1;
  for (size_t i = n; i-- > 0;) {
    dl_shape[i] = shape[i];
    dl_strides[i] = strides != NULL ? strides[i] : stride;
    stride *= shape[i] > 0 ? shape[i] : 1;
  }
  accel__dl_tensor_t t = {
      .data = (void*)(uintptr_t)address,
      .device = dl_device,
      .ndim = ndim,
      .dtype = dl_dtype,
      .shape = n > 0 ? dl_shape : NULL,
      .strides = n > 0 ? dl_strides : NULL,
      .byte_offset = 0,
  };
  accel_buffer_retain(buffer);
  if (versioned) {
    e->m.versioned.version.major = 1;
    e->m.versioned.version.minor = 0;
    e->m.versioned.manager_ctx = buffer;
    e->m.versioned.deleter = accel__dl_delete_versioned;
    e->m.versioned.flags = 0;
    e->m.versioned.dl_tensor = t;
  } else {
    e->m.legacy.dl_tensor = t;
    e->m.legacy.manager_ctx = buffer;
    e->m.legacy.deleter = accel__dl_delete_legacy;
  }
  *out_managed = e;
  return ACCEL_OK;
}

// --- Import -----------------------------------------------------------------

// What the import's release calls: the producer's deleter, once.
typedef struct {
  void* managed;
  bool versioned;
} accel__dl_import_t;

static void accel__dl_import_release(void* user_data) {
  accel__dl_import_t* imp = user_data;
  if (imp->versioned) {
    accel__dl_versioned_t* m = imp->managed;
    if (m->deleter != NULL) m->deleter(m);
  } else {
    accel__dl_managed_t* m = imp->managed;
    if (m->deleter != NULL) m->deleter(m);
  }
  free(imp);
}

static bool accel__dl_dtype_ok(accel__dl_dtype_t d) {
  bool code = d.code == ACCEL__DL_INT || d.code == ACCEL__DL_UINT ||
              d.code == ACCEL__DL_FLOAT || d.code == ACCEL__DL_BFLOAT ||
              d.code == ACCEL__DL_BOOL;
  return code && d.lanes == 1 && d.bits >= 8 && d.bits % 8 == 0;
}

// Whether the strides (NULL: row-major) describe a compact row-major
// tensor; dimensions of size 1 may have any stride.
static bool accel__dl_compact(const accel__dl_tensor_t* t) {
  if (t->strides == NULL) return true;
  int64_t expect = 1;
  for (int32_t i = t->ndim; i-- > 0;) {
    if (t->shape[i] != 1 && t->strides[i] != expect) return false;
    expect *= t->shape[i];
  }
  return true;
}

// Whether `device` is DLPack device `d` (a GPU's type and ordinal).
static bool accel__dl_is(accel_device_t* device, accel__dl_device_t d) {
  int32_t type = 0, id = 0;
  return accel_dlpack_device(device, &type, &id) == ACCEL_OK &&
         type == d.device_type && id == d.device_id;
}

// When ACCEL_VISIBLE_DEVICES reorders a backend's devices, "cuda:N" is not
// the driver's ordinal N: the device among `backend`'s that is, opened, or
// NULL.
static accel_device_t* accel__dl_find(const char* backend,
                                      accel__dl_device_t d) {
  for (uint32_t i = 0; i < ACCEL__MAX_PLUGIN_DEVICES; i++) {
    char uri[64];
    accel_device_t* device = NULL;
    snprintf(uri, sizeof(uri), "%s:%u", backend, (unsigned)i);
    if (accel_device_open(uri, &device) != ACCEL_OK) return NULL;
    if (accel__dl_is(device, d)) return device;
    accel_device_release(device);
  }
  return NULL;
}

// The accel device that holds memory of DLPack device `d`, opened.
static accel_status_t accel__dl_open(const char* what, accel__dl_device_t d,
                                     accel_device_t** out_device) {
  char uri[64];
  const char* backend = NULL;
  switch (d.device_type) {
    case ACCEL__DL_CPU:
    case ACCEL__DL_CUDA_HOST:
      snprintf(uri, sizeof(uri), "cpu:0");
      break;
    case ACCEL__DL_CUDA:
      backend = "cuda";
      break;
    case ACCEL__DL_ROCM:
      backend = "rocm";
      break;
    default:
      return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                         "%s: DLPack device type %d (id %d) is not one accel "
                         "can address (cpu 1, cuda 2, cuda-host 3, rocm 10)",
                         what, (int)d.device_type, (int)d.device_id);
  }
  if (backend != NULL) {
    snprintf(uri, sizeof(uri), "%s:%d", backend, (int)d.device_id);
  }
  accel_status_t status = accel_device_open(uri, out_device);
  char reason[512];
  snprintf(reason, sizeof(reason), "%s", accel_last_error());
  if (backend != NULL &&
      (status != ACCEL_OK || !accel__dl_is(*out_device, d))) {
    accel_device_t* found = accel__dl_find(backend, d);
    if (found != NULL) {
      accel_device_release(*out_device);
      *out_device = found;
      return ACCEL_OK;
    }
  }
  if (status != ACCEL_OK) {
    return accel__fail(status, "%s: DLPack device %s: %s", what, uri, reason);
  }
  return ACCEL_OK;
}

// Checks that `device` can hold memory of DLPack device `d`.
static accel_status_t accel__dl_match(const char* what, accel__dl_device_t d,
                                      accel_device_t* device) {
  int32_t type = 0, id = 0;
  accel_status_t status = accel_dlpack_device(device, &type, &id);
  if (status != ACCEL_OK) return status;
  bool host = d.device_type == ACCEL__DL_CPU ||
              d.device_type == ACCEL__DL_CUDA_HOST;
  if (host ? type == ACCEL__DL_CPU
           : (type == d.device_type && id == d.device_id)) {
    return ACCEL_OK;
  }
  return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                     "%s: the tensor is on DLPack device (%d, %d) but %s is "
                     "(%d, %d)",
                     what, (int)d.device_type, (int)d.device_id, device->uri,
                     (int)type, (int)id);
}

static accel_status_t accel__dl_check(const char* what,
                                      const accel__dl_tensor_t* t,
                                      uint64_t* out_bytes) {
  if (t->data == NULL || t->ndim < 0 || t->ndim > ACCEL__DL_MAX_NDIM ||
      (t->ndim > 0 && t->shape == NULL)) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: malformed tensor (data %p, ndim %d)", what,
                       t->data, (int)t->ndim);
  }
  if (!accel__dl_dtype_ok(t->dtype)) {
    return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                       "%s: unsupported dtype (code %u, %u bits, %u lanes); "
                       "accel takes int, uint, float, bfloat and bool of "
                       "whole bytes with one lane",
                       what, t->dtype.code, t->dtype.bits, t->dtype.lanes);
  }
  if (!accel__dl_compact(t)) {
    return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                       "%s: the tensor is not compact row-major (a strided "
                       "view); make it contiguous first",
                       what);
  }
  accel_status_t status = accel__dl_extent(what, t->ndim, t->shape, NULL,
                                           t->dtype.bits / 8u, out_bytes);
  if (status == ACCEL_OK && *out_bytes == 0) {
    status = accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: the tensor is empty; a buffer has at least "
                         "one byte",
                         what);
  }
  return status;
}

accel_status_t accel_buffer_from_dlpack(void* managed, bool versioned,
                                        accel_device_t* device,
                                        accel_buffer_t** out_buffer) {
  const char* what = "accel_buffer_from_dlpack";
  if (out_buffer != NULL) *out_buffer = NULL;
  if (managed == NULL || out_buffer == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: managed and out_buffer are required", what);
  }
  const accel__dl_tensor_t* t;
  if (versioned) {
    const accel__dl_versioned_t* v = managed;
    if (v->version.major != 1) {
      return accel__fail(ACCEL_ERROR_INCOMPATIBLE,
                         "%s: DLPack version %u.%u; accel reads 1.x", what,
                         v->version.major, v->version.minor);
    }
    if (v->flags & ACCEL__DL_FLAG_READ_ONLY) {
      return accel__fail(ACCEL_ERROR_UNSUPPORTED,
                         "%s: the tensor is read-only and accel buffers are "
                         "writable",
                         what);
    }
    t = &v->dl_tensor;
  } else {
    t = &((const accel__dl_managed_t*)managed)->dl_tensor;
  }
  uint64_t bytes = 0;
  accel_status_t status = accel__dl_check(what, t, &bytes);
  if (status != ACCEL_OK) return status;
  if (device != NULL) {
    status = accel__dl_match(what, t->device, device);
    if (status != ACCEL_OK) return status;
    accel_device_retain(device);
  } else {
    status = accel__dl_open(what, t->device, &device);
    if (status != ACCEL_OK) return status;
  }
  accel__dl_import_t* imp = malloc(sizeof(*imp));
  if (imp == NULL) {
    accel_device_release(device);
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                       "%s: no host memory for the import", what);
  }
  imp->managed = managed;
  imp->versioned = versioned;
  uint64_t address = (uint64_t)(uintptr_t)t->data + t->byte_offset;
  status = bytes > SIZE_MAX
               ? accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                             "%s: the tensor is too large", what)
               : accel_buffer_wrap(device, address, (size_t)bytes,
                                   accel__dl_import_release, imp, out_buffer);
  if (status != ACCEL_OK) free(imp);
  accel_device_release(device);  // the buffer holds its own reference
  return status;
}
