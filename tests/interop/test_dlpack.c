// SPDX-License-Identifier: MIT
//
// DLPack through the C API on the CPU plugin: a buffer lent as a legacy or
// versioned managed tensor, a tensor adopted as a buffer, round trips, the
// deleter called exactly once, and bad input refused. The DLPack structs
// come from dlpack_abi.h, declared again from the published layout, so the
// test checks the library's own declarations rather than sharing them.
#include <accel/accel.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dlpack_abi.h"
#include "test.h"

// A wrapped owner counts its releases, so the test sees when the last
// reference of a buffer goes.
static int owner_releases;
static void owner_release(void* user_data) {
  (void)user_data;
  owner_releases++;
}

static accel_buffer_t* wrapped(accel_device_t* d, void* data, size_t size) {
  accel_buffer_t* b = NULL;
  owner_releases = 0;
  accel_status_t status = accel_buffer_wrap(d, (uint64_t)(uintptr_t)data, size,
                                            owner_release, NULL, &b);
  return status == ACCEL_OK ? b : NULL;
}

TEST(export_legacy) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  float host[24] = {0};
  accel_buffer_t* b = wrapped(d, host, sizeof(host));
  ASSERT_NOT_NULL(b);
  int64_t shape[2] = {2, 3};
  void* out = NULL;
  ASSERT_OK(accel_buffer_to_dlpack(b, 4 * sizeof(float), ACCEL_DTYPE_F32, 2,
                                   shape, NULL, false, &out));
  dl_managed_t* m = out;
  ASSERT(m->dl_tensor.data == (void*)&host[4]);
  ASSERT_EQ(m->dl_tensor.byte_offset, 0);
  ASSERT_EQ(m->dl_tensor.device.device_type, 1);
  ASSERT_EQ(m->dl_tensor.device.device_id, 0);
  ASSERT_EQ(m->dl_tensor.ndim, 2);
  ASSERT_EQ(m->dl_tensor.dtype.code, 2);
  ASSERT_EQ(m->dl_tensor.dtype.bits, 32);
  ASSERT_EQ(m->dl_tensor.dtype.lanes, 1);
  ASSERT_EQ(m->dl_tensor.shape[0], 2);
  ASSERT_EQ(m->dl_tensor.shape[1], 3);
  ASSERT_EQ(m->dl_tensor.strides[0], 3);
  ASSERT_EQ(m->dl_tensor.strides[1], 1);
  ASSERT_NOT_NULL(m->deleter);
  // The tensor holds a reference: the buffer outlives the caller's.
  accel_buffer_release(b);
  ASSERT_EQ(owner_releases, 0);
  ((float*)m->dl_tensor.data)[5] = 9.0f;
  ASSERT(host[9] == 9.0f);
  m->deleter(m);
  ASSERT_EQ(owner_releases, 1);
  accel_device_release(d);
}

TEST(export_versioned_with_strides) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(d, 64 * sizeof(int32_t), &b));
  int64_t shape[2] = {4, 4};
  int64_t strides[2] = {1, 8};  // a column-major view inside 32 elements
  void* out = NULL;
  ASSERT_OK(accel_buffer_to_dlpack(b, 0, ACCEL_DTYPE_I32, 2, shape, strides,
                                   true, &out));
  dl_versioned_t* v = out;
  ASSERT_EQ(v->major, 1);
  ASSERT_EQ(v->flags, 0);
  ASSERT_EQ(v->dl_tensor.dtype.code, 0);
  ASSERT_EQ(v->dl_tensor.strides[0], 1);
  ASSERT_EQ(v->dl_tensor.strides[1], 8);
  uint64_t address = 0;
  ASSERT_OK(accel_buffer_query_address(b, 0, &address));
  ASSERT_EQ((uint64_t)(uintptr_t)v->dl_tensor.data, address);
  v->deleter(v);
  accel_buffer_release(b);
  // 0-d tensors and the other dtypes.
  ASSERT_OK(accel_buffer_create(d, 8, &b));
  ASSERT_OK(accel_buffer_to_dlpack(b, 6, ACCEL_DTYPE_BF16, 0, NULL, NULL,
                                   false, &out));
  dl_managed_t* m = out;
  ASSERT_EQ(m->dl_tensor.ndim, 0);
  ASSERT_EQ(m->dl_tensor.dtype.code, 4);
  ASSERT_EQ(m->dl_tensor.dtype.bits, 16);
  m->deleter(m);
  accel_buffer_release(b);
  accel_device_release(d);
}

TEST(export_bad_input) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_create(d, 100, &b));
  int64_t shape[2] = {5, 6};
  void* out = (void*)1;
  ASSERT_STATUS(accel_buffer_to_dlpack(b, 0, ACCEL_DTYPE_F32, 2, shape, NULL,
                                       false, &out),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_NULL(out);
  ASSERT_STR_CONTAINS(accel_last_error(), "outside the 100-byte buffer");
  int64_t small[1] = {4};
  ASSERT_STATUS(accel_buffer_to_dlpack(b, 2, ACCEL_DTYPE_F32, 1, small, NULL,
                                       false, &out),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STR_CONTAINS(accel_last_error(), "not a multiple");
  ASSERT_OK(accel_buffer_to_dlpack(b, 84, ACCEL_DTYPE_F32, 1, small, NULL,
                                   false, &out));
  ((dl_managed_t*)out)->deleter(out);
  int64_t negative[1] = {-1};
  ASSERT_STATUS(accel_buffer_to_dlpack(b, 0, ACCEL_DTYPE_F32, 1, negative,
                                       NULL, false, &out),
                ACCEL_ERROR_INVALID_ARGUMENT);
  int64_t back[1] = {-1};
  ASSERT_STATUS(accel_buffer_to_dlpack(b, 0, ACCEL_DTYPE_F32, 1, small, back,
                                       false, &out),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_buffer_to_dlpack(b, 0, (accel_dtype_t)99, 1, small,
                                       NULL, false, &out),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_buffer_to_dlpack(b, 0, ACCEL_DTYPE_F32, -1, small, NULL,
                                       false, &out),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_buffer_to_dlpack(b, 0, ACCEL_DTYPE_F32, 1, NULL, NULL,
                                       false, &out),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_buffer_to_dlpack(NULL, 0, ACCEL_DTYPE_F32, 1, small,
                                       NULL, false, &out),
                ACCEL_ERROR_INVALID_ARGUMENT);
  accel_buffer_release(b);
  accel_device_release(d);
}

TEST(dlpack_device) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  int32_t type = -1, id = -1;
  ASSERT_OK(accel_dlpack_device(d, &type, &id));
  ASSERT_EQ(type, 1);
  ASSERT_EQ(id, 0);
  ASSERT_STATUS(accel_dlpack_device(NULL, &type, &id),
                ACCEL_ERROR_INVALID_ARGUMENT);
  ASSERT_STATUS(accel_dlpack_device(d, NULL, &id),
                ACCEL_ERROR_INVALID_ARGUMENT);
  accel_device_release(d);
}

// A tensor made by "another framework": it counts its deleter calls.
typedef struct {
  dl_managed_t m;
  dl_versioned_t v;
  int64_t shape[2];
  int64_t strides[2];
  float data[64];
  int deletes;
} producer_t;

static void producer_delete(dl_managed_t* m) {
  ((producer_t*)m)->deletes++;  // m is the first member
}
static void producer_delete_v(dl_versioned_t* v) {
  producer_t* p = (producer_t*)((char*)v - offsetof(producer_t, v));
  p->deletes++;
}

static void producer_init(producer_t* p) {
  memset(p, 0, sizeof(*p));
  p->shape[0] = 4;
  p->shape[1] = 8;
  dl_tensor_t t = {.data = p->data,
                   .device = {1, 0},
                   .ndim = 2,
                   .dtype = {2, 32, 1},
                   .shape = p->shape,
                   .strides = NULL};
  p->m.dl_tensor = t;
  p->m.deleter = producer_delete;
  p->v.major = 1;
  p->v.minor = 1;
  p->v.dl_tensor = t;
  p->v.deleter = producer_delete_v;
}

TEST(import_deleter_once_after_last_reference) {
  for (int versioned = 0; versioned < 2; versioned++) {
    producer_t p;
    producer_init(&p);
    void* managed = versioned ? (void*)&p.v : (void*)&p.m;
    accel_buffer_t* b = NULL;
    ASSERT_OK(accel_buffer_from_dlpack(managed, versioned, NULL, &b));
    ASSERT_EQ(accel_buffer_size(b), 32 * sizeof(float));
    ASSERT_STR_EQ(accel_device_uri(accel_buffer_device(b)), "cpu:0");
    accel_stream_t* s = NULL;
    ASSERT_OK(accel_stream_create(accel_buffer_device(b), 0, &s));
    ASSERT_OK(accel_op_fill(s, b, 0, ACCEL_DTYPE_F32, 32, 3.0));
    accel_buffer_retain(b);
    accel_buffer_release(b);
    ASSERT_EQ(p.deletes, 0);
    accel_buffer_release(b);  // waits for the fill, then deletes
    ASSERT_EQ(p.deletes, 1);
    ASSERT(p.data[0] == 3.0f && p.data[31] == 3.0f && p.data[32] == 0.0f);
    accel_stream_release(s);
    ASSERT_EQ(p.deletes, 1);
  }
}

TEST(import_byte_offset_and_size_one_strides) {
  producer_t p;
  producer_init(&p);
  p.m.dl_tensor.byte_offset = 8 * sizeof(float);
  p.shape[0] = 1;
  p.strides[0] = 12345;  // any stride for a dimension of size 1
  p.strides[1] = 1;
  p.m.dl_tensor.strides = p.strides;
  accel_buffer_t* b = NULL;
  ASSERT_OK(accel_buffer_from_dlpack(&p.m, false, NULL, &b));
  ASSERT_EQ(accel_buffer_size(b), 8 * sizeof(float));
  uint64_t address = 0;
  ASSERT_OK(accel_buffer_query_address(b, 0, &address));
  ASSERT_EQ(address, (uint64_t)(uintptr_t)&p.data[8]);
  accel_buffer_release(b);
  ASSERT_EQ(p.deletes, 1);
}

TEST(import_refuses_bad_tensors) {
  producer_t p;
  accel_buffer_t* b = NULL;
  producer_init(&p);
  p.strides[0] = 1;
  p.strides[1] = 4;  // column-major: not compact row-major
  p.m.dl_tensor.strides = p.strides;
  ASSERT_STATUS(accel_buffer_from_dlpack(&p.m, false, NULL, &b),
                ACCEL_ERROR_UNSUPPORTED);
  ASSERT_STR_CONTAINS(accel_last_error(), "not compact");
  ASSERT_NULL(b);
  producer_init(&p);
  p.m.dl_tensor.dtype.lanes = 4;
  ASSERT_STATUS(accel_buffer_from_dlpack(&p.m, false, NULL, &b),
                ACCEL_ERROR_UNSUPPORTED);
  ASSERT_STR_CONTAINS(accel_last_error(), "unsupported dtype");
  producer_init(&p);
  p.m.dl_tensor.dtype.code = 5;  // complex
  ASSERT_STATUS(accel_buffer_from_dlpack(&p.m, false, NULL, &b),
                ACCEL_ERROR_UNSUPPORTED);
  producer_init(&p);
  p.m.dl_tensor.device.device_type = 4;  // OpenCL
  ASSERT_STATUS(accel_buffer_from_dlpack(&p.m, false, NULL, &b),
                ACCEL_ERROR_UNSUPPORTED);
  ASSERT_STR_CONTAINS(accel_last_error(), "DLPack device type 4");
  producer_init(&p);
  p.shape[1] = 0;
  ASSERT_STATUS(accel_buffer_from_dlpack(&p.m, false, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  producer_init(&p);
  p.m.dl_tensor.data = NULL;
  ASSERT_STATUS(accel_buffer_from_dlpack(&p.m, false, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  producer_init(&p);
  p.v.major = 2;
  ASSERT_STATUS(accel_buffer_from_dlpack(&p.v, true, NULL, &b),
                ACCEL_ERROR_INCOMPATIBLE);
  producer_init(&p);
  p.v.flags = 1;  // read-only
  ASSERT_STATUS(accel_buffer_from_dlpack(&p.v, true, NULL, &b),
                ACCEL_ERROR_UNSUPPORTED);
  ASSERT_STR_CONTAINS(accel_last_error(), "read-only");
  ASSERT_STATUS(accel_buffer_from_dlpack(NULL, false, NULL, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  // A CUDA tensor given an explicit CPU device is a mismatch.
  producer_init(&p);
  p.m.dl_tensor.device.device_type = 2;
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  ASSERT_STATUS(accel_buffer_from_dlpack(&p.m, false, d, &b),
                ACCEL_ERROR_INVALID_ARGUMENT);
  // No CUDA device here: the open fails with its status, nothing kept.
  ASSERT(accel_buffer_from_dlpack(&p.m, false, NULL, &b) != ACCEL_OK);
  ASSERT_NULL(b);
  ASSERT_EQ(p.deletes, 0);  // a failed import never calls the deleter
  accel_device_release(d);
}

TEST(round_trip) {
  accel_device_t* d = NULL;
  ASSERT_OK(accel_device_open("cpu:1", &d));
  float host[16] = {0};
  accel_buffer_t* a = wrapped(d, host, sizeof(host));
  ASSERT_NOT_NULL(a);
  int64_t shape[1] = {16};
  for (int versioned = 0; versioned < 2; versioned++) {
    void* m = NULL;
    ASSERT_OK(accel_buffer_to_dlpack(a, 0, ACCEL_DTYPE_F32, 1, shape, NULL,
                                     versioned, &m));
    accel_buffer_t* b = NULL;
    ASSERT_OK(accel_buffer_from_dlpack(m, versioned, d, &b));
    ASSERT(accel_buffer_device(b) == d);
    ASSERT_OK(accel_buffer_fill(b, 0, 0, sizeof(host)));
    float one = 1.0f + (float)versioned;
    ASSERT_OK(accel_buffer_write(b, 4 * sizeof(float), &one, sizeof(one)));
    ASSERT(host[4] == one);
    accel_buffer_release(b);  // runs the tensor's deleter: a's ref goes
  }
  ASSERT_EQ(owner_releases, 0);
  accel_buffer_release(a);
  ASSERT_EQ(owner_releases, 1);
  accel_device_release(d);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
