// SPDX-License-Identifier: MIT
//
// The ACCEL_SHARED_TYPES block is duplicated in <accel/plugin.h> and
// <accel/accel.h>. A file that includes only one of them must see the same
// values and type sizes as a file that includes only the other; otherwise
// a plugin and the core would disagree on what a status code means. The
// tables come from header_plugin_only.c and header_accel_only.c, each built
// with just its own header. (check_shared_block.cmake compares the text.)
#include <accel/accel.h>

#include "shared_types_list.h"
#include "test.h"

TEST(same_constants_in_both_headers) {
  ASSERT_EQ(abi_shared_from_plugin_h_count, abi_shared_from_accel_h_count);
  int mismatches = 0;
  for (size_t i = 0; i < abi_shared_from_plugin_h_count; i++) {
    const abi_shared_value_t* p = &abi_shared_from_plugin_h[i];
    const abi_shared_value_t* a = &abi_shared_from_accel_h[i];
    if (strcmp(p->name, a->name) != 0 || p->value != a->value) {
      fprintf(stderr, "  plugin.h %s = %lld, accel.h %s = %lld\n", p->name,
              p->value, a->name, a->value);
      mismatches++;
    }
  }
  ASSERT_EQ(mismatches, 0);
}

// The tables themselves hold the documented values, so a change made to
// both copies at once (renumbering a code) is caught too.
TEST(documented_values) {
  static const struct {
    const char* name;
    long long value;
  } expected[] = {
      {"ACCEL_OK", 0},
      {"ACCEL_ERROR_INVALID_ARGUMENT", 1},
      {"ACCEL_ERROR_OUT_OF_MEMORY", 2},
      {"ACCEL_ERROR_OUT_OF_DEVICE_MEMORY", 3},
      {"ACCEL_ERROR_NOT_FOUND", 4},
      {"ACCEL_ERROR_UNSUPPORTED", 5},
      {"ACCEL_ERROR_UNAVAILABLE", 6},
      {"ACCEL_ERROR_INCOMPATIBLE", 7},
      {"ACCEL_ERROR_DEVICE_LOST", 8},
      {"ACCEL_ERROR_BACKEND", 9},
      {"ACCEL_ERROR_INTERNAL", 10},
      {"ACCEL_ERROR_NOT_READY", 11},
      {"ACCEL_ERROR_TIMEOUT", 12},
      {"ACCEL_STATUS_MAX_ENUM", 0x7fffffff},
      {"ACCEL_LOG_ERROR", 0},
      {"ACCEL_LOG_WARN", 1},
      {"ACCEL_LOG_INFO", 2},
      {"ACCEL_LOG_DEBUG", 3},
      {"ACCEL_LOG_LEVEL_MAX_ENUM", 0x7fffffff},
      {"ACCEL_DEVICE_TYPE_OTHER", 0},
      {"ACCEL_DEVICE_TYPE_CPU", 1},
      {"ACCEL_DEVICE_TYPE_GPU", 2},
      {"ACCEL_DEVICE_TYPE_MAX_ENUM", 0x7fffffff},
      {"ACCEL_DEVICE_CAP_F16", 1},
      {"ACCEL_DEVICE_CAP_BF16", 2},
      {"ACCEL_DEVICE_CAP_TF32", 4},
      {"ACCEL_DEVICE_CAP_PINNED_MEMORY", 8},
      {"ACCEL_DEVICE_CAP_PEER_ACCESS", 16},
      {"ACCEL_DEVICE_CAP_EVENT_TIMING", 32},
      {"ACCEL_DEVICE_CAP_KERNELS", 64},
      {"ACCEL_DEVICE_CAP_GRAPHS", 128},
      {"ACCEL_DEVICE_CAP_HOST_ACCESSIBLE", 256},
      {"ACCEL_DEVICE_CAP_SEPARATE_ALLOCATIONS", 512},
      {"ACCEL_DEVICE_CAP_MAX_ENUM", 0x7fffffff},
      {"ACCEL_EVENT_TIMING", 1},
      {"ACCEL_EVENT_FLAG_MAX_ENUM", 0x7fffffff},
      {"ACCEL_DTYPE_F32", 0},
      {"ACCEL_DTYPE_F16", 1},
      {"ACCEL_DTYPE_BF16", 2},
      {"ACCEL_DTYPE_I32", 3},
      {"ACCEL_DTYPE_MAX_ENUM", 0x7fffffff},
      {"ACCEL_GEMM_ALLOW_TF32", 1},
      {"ACCEL_GEMM_FLAG_MAX_ENUM", 0x7fffffff},
      {"sizeof(accel_status_t)", 4},
      {"sizeof(accel_log_level_t)", 4},
      {"sizeof(accel_device_type_t)", 4},
      {"sizeof(accel_device_caps_t)", 4},
      {"sizeof(accel_stream_flags_t)", 4},
      {"sizeof(accel_event_flags_t)", 4},
      {"sizeof(accel_dtype_t)", 4},
      {"sizeof(accel_gemm_flags_t)", 4},
  };
  size_t n = sizeof(expected) / sizeof(expected[0]);
  ASSERT_EQ(abi_shared_from_plugin_h_count, n);
  int mismatches = 0;
  for (size_t i = 0; i < n; i++) {
    const abi_shared_value_t* p = &abi_shared_from_plugin_h[i];
    if (strcmp(p->name, expected[i].name) != 0 ||
        p->value != expected[i].value) {
      fprintf(stderr, "  %s = %lld, expected %s = %lld\n", p->name, p->value,
              expected[i].name, expected[i].value);
      mismatches++;
    }
  }
  ASSERT_EQ(mismatches, 0);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
