// SPDX-License-Identifier: MIT
//
// The constants and types of the ACCEL_SHARED_TYPES block that both
// <accel/plugin.h> and <accel/accel.h> carry. Each header_*_only.c includes
// one of those headers, then this list, and exports a table of the values
// it sees; test_shared_types compares the tables. Includes no accel header
// itself.
#ifndef ACCEL_TESTS_ABI_SHARED_TYPES_LIST_H_
#define ACCEL_TESTS_ABI_SHARED_TYPES_LIST_H_

#include <stddef.h>

#define ABI_SHARED_CONSTANTS(X)       \
  X(ACCEL_OK)                         \
  X(ACCEL_ERROR_INVALID_ARGUMENT)     \
  X(ACCEL_ERROR_OUT_OF_MEMORY)        \
  X(ACCEL_ERROR_OUT_OF_DEVICE_MEMORY) \
  X(ACCEL_ERROR_NOT_FOUND)            \
  X(ACCEL_ERROR_UNSUPPORTED)          \
  X(ACCEL_ERROR_UNAVAILABLE)          \
  X(ACCEL_ERROR_INCOMPATIBLE)         \
  X(ACCEL_ERROR_DEVICE_LOST)          \
  X(ACCEL_ERROR_BACKEND)              \
  X(ACCEL_ERROR_INTERNAL)             \
  X(ACCEL_ERROR_NOT_READY)            \
  X(ACCEL_ERROR_TIMEOUT)              \
  X(ACCEL_STATUS_MAX_ENUM)            \
  X(ACCEL_LOG_ERROR)                  \
  X(ACCEL_LOG_WARN)                   \
  X(ACCEL_LOG_INFO)                   \
  X(ACCEL_LOG_DEBUG)                  \
  X(ACCEL_LOG_LEVEL_MAX_ENUM)         \
  X(ACCEL_DEVICE_TYPE_OTHER)          \
  X(ACCEL_DEVICE_TYPE_CPU)            \
  X(ACCEL_DEVICE_TYPE_GPU)            \
  X(ACCEL_DEVICE_TYPE_MAX_ENUM)       \
  X(ACCEL_DEVICE_CAP_F16)             \
  X(ACCEL_DEVICE_CAP_BF16)            \
  X(ACCEL_DEVICE_CAP_TF32)            \
  X(ACCEL_DEVICE_CAP_PINNED_MEMORY)   \
  X(ACCEL_DEVICE_CAP_PEER_ACCESS)     \
  X(ACCEL_DEVICE_CAP_EVENT_TIMING)    \
  X(ACCEL_DEVICE_CAP_KERNELS)         \
  X(ACCEL_DEVICE_CAP_GRAPHS)          \
  X(ACCEL_DEVICE_CAP_HOST_ACCESSIBLE) \
  X(ACCEL_DEVICE_CAP_SEPARATE_ALLOCATIONS) \
  X(ACCEL_DEVICE_CAP_MAX_ENUM)        \
  X(ACCEL_EVENT_TIMING)               \
  X(ACCEL_EVENT_FLAG_MAX_ENUM)        \
  X(ACCEL_DTYPE_F32)                  \
  X(ACCEL_DTYPE_F16)                  \
  X(ACCEL_DTYPE_BF16)                 \
  X(ACCEL_DTYPE_I32)                  \
  X(ACCEL_DTYPE_MAX_ENUM)             \
  X(ACCEL_GEMM_ALLOW_TF32)            \
  X(ACCEL_GEMM_FLAG_MAX_ENUM)

#define ABI_SHARED_TYPES(X) \
  X(accel_status_t)         \
  X(accel_log_level_t)      \
  X(accel_device_type_t)    \
  X(accel_device_caps_t)    \
  X(accel_stream_flags_t)   \
  X(accel_event_flags_t)    \
  X(accel_dtype_t)          \
  X(accel_gemm_flags_t)

typedef struct abi_shared_value {
  const char* name;
  long long value;
} abi_shared_value_t;

#define ABI_SHARED_VALUE_(name) {#name, (long long)(name)},
#define ABI_SHARED_SIZE_(type) {"sizeof(" #type ")", (long long)sizeof(type)},

// Defines `const abi_shared_value_t table[]` and `table_count` from the
// header the including file saw.
#define ABI_SHARED_TABLE(table)                                                \
  const abi_shared_value_t table[] = {ABI_SHARED_CONSTANTS(ABI_SHARED_VALUE_)  \
                                          ABI_SHARED_TYPES(ABI_SHARED_SIZE_)}; \
  const size_t table##_count = sizeof(table) / sizeof(table[0])

extern const abi_shared_value_t abi_shared_from_plugin_h[];
extern const size_t abi_shared_from_plugin_h_count;
extern const abi_shared_value_t abi_shared_from_accel_h[];
extern const size_t abi_shared_from_accel_h_count;

#endif  // ACCEL_TESTS_ABI_SHARED_TYPES_LIST_H_
