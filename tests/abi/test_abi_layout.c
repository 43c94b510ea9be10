// SPDX-License-Identifier: MIT
//
// Pins the LP64 layout of every struct in <accel/plugin.h> and of the
// public structs in <accel/accel.h>. The numbers were computed once and are
// written out here on purpose: a plugin built against an older header must
// find every existing field where it was, so a moved or resized field is an
// ABI break and fails this test. Appending a field changes a sizeof: add
// the new field's line below (that is the review point).
#include <accel/accel.h>
#include <accel/plugin.h>

#include "test.h"

static int layout_errors;

static void layout_check(const char* what, size_t got, size_t expected) {
  if (got != expected) {
    fprintf(stderr, "  %s is %zu, expected %zu\n", what, got, expected);
    layout_errors++;
  }
}

#define SIZE(type, size) layout_check("sizeof(" #type ")", sizeof(type), size)
#define FIELD(type, field, offset, size)                                    \
  do {                                                                      \
    layout_check("offsetof(" #type ", " #field ")", offsetof(type, field),  \
                 offset);                                                   \
    layout_check("sizeof(" #type "." #field ")", sizeof(((type*)0)->field), \
                 size);                                                     \
  } while (0)
#define VALUE(constant, value) \
  layout_check(#constant, (size_t)(constant), value)

#define REQUIRE_LP64()                                                  \
  do {                                                                  \
    if (sizeof(void*) != 8 || sizeof(long) != 8 || sizeof(size_t) != 8) \
      SKIP("the pinned numbers are for LP64 targets");                  \
  } while (0)

#define LAYOUT_BEGIN() layout_errors = 0
#define LAYOUT_END() ASSERT_EQ(layout_errors, 0)

TEST(host_layout) {
  REQUIRE_LP64();
  LAYOUT_BEGIN();
  SIZE(accel_host_t, 40);
  FIELD(accel_host_t, struct_size, 0, 4);
  FIELD(accel_host_t, abi_version, 4, 4);
  FIELD(accel_host_t, fail, 8, 8);
  FIELD(accel_host_t, log, 16, 8);
  FIELD(accel_host_t, getenv, 24, 8);
  // -- since ABI 1.3 --
  FIELD(accel_host_t, abi_minor, 32, 4);
  LAYOUT_END();
}

TEST(device_props_layout) {
  REQUIRE_LP64();
  LAYOUT_BEGIN();
  SIZE(accel_plugin_device_props_t, 1072);
  FIELD(accel_plugin_device_props_t, struct_size, 0, 4);
  FIELD(accel_plugin_device_props_t, type, 4, 4);
  FIELD(accel_plugin_device_props_t, name, 8, 256);
  FIELD(accel_plugin_device_props_t, vendor, 264, 64);
  FIELD(accel_plugin_device_props_t, arch, 328, 64);
  FIELD(accel_plugin_device_props_t, total_memory, 392, 8);
  FIELD(accel_plugin_device_props_t, compute_units, 400, 4);
  FIELD(accel_plugin_device_props_t, max_threads_per_block, 404, 4);
  FIELD(accel_plugin_device_props_t, simd_width, 408, 4);
  FIELD(accel_plugin_device_props_t, caps, 412, 4);
  FIELD(accel_plugin_device_props_t, uuid, 416, 16);
  FIELD(accel_plugin_device_props_t, pci_bus_id, 432, 32);
  FIELD(accel_plugin_device_props_t, features, 464, 256);
  FIELD(accel_plugin_device_props_t, driver_version, 720, 64);
  // -- since ABI 1.1 --
  FIELD(accel_plugin_device_props_t, module_target, 784, 64);
  // -- since ABI 1.3 --
  FIELD(accel_plugin_device_props_t, max_alloc_size, 848, 8);
  FIELD(accel_plugin_device_props_t, max_shared_mem_bytes, 856, 8);
  FIELD(accel_plugin_device_props_t, buffer_offset_alignment, 864, 4);
  FIELD(accel_plugin_device_props_t, max_grid, 868, 12);
  FIELD(accel_plugin_device_props_t, module_formats, 880, 128);
  FIELD(accel_plugin_device_props_t, platform, 1008, 64);
  LAYOUT_END();
}

TEST(launch_layout) {
  REQUIRE_LP64();
  LAYOUT_BEGIN();
  SIZE(accel_plugin_arg_t, 32);
  FIELD(accel_plugin_arg_t, kind, 0, 4);
  FIELD(accel_plugin_arg_t, size, 4, 4);
  FIELD(accel_plugin_arg_t, value, 8, 8);
  FIELD(accel_plugin_arg_t, mem, 16, 8);
  FIELD(accel_plugin_arg_t, offset, 24, 8);
  SIZE(accel_plugin_launch_t, 48);
  FIELD(accel_plugin_launch_t, struct_size, 0, 4);
  FIELD(accel_plugin_launch_t, grid, 4, 12);
  FIELD(accel_plugin_launch_t, block, 16, 12);
  FIELD(accel_plugin_launch_t, shared_mem_bytes, 28, 4);
  FIELD(accel_plugin_launch_t, num_args, 32, 4);
  FIELD(accel_plugin_launch_t, args, 40, 8);
  LAYOUT_END();
}

TEST(device_ops_layout) {
  REQUIRE_LP64();
  LAYOUT_BEGIN();
  SIZE(accel_device_ops_t, 432);
  FIELD(accel_device_ops_t, struct_size, 0, 4);
  FIELD(accel_device_ops_t, query_props, 8, 8);
  FIELD(accel_device_ops_t, mem_info, 16, 8);
  FIELD(accel_device_ops_t, mem_alloc, 24, 8);
  FIELD(accel_device_ops_t, mem_free, 32, 8);
  FIELD(accel_device_ops_t, host_alloc, 40, 8);
  FIELD(accel_device_ops_t, host_free, 48, 8);
  FIELD(accel_device_ops_t, copy_h2d, 56, 8);
  FIELD(accel_device_ops_t, copy_d2h, 64, 8);
  FIELD(accel_device_ops_t, copy_d2d, 72, 8);
  FIELD(accel_device_ops_t, copy_peer, 80, 8);
  FIELD(accel_device_ops_t, can_access_peer, 88, 8);
  FIELD(accel_device_ops_t, memset, 96, 8);
  FIELD(accel_device_ops_t, stream_create, 104, 8);
  FIELD(accel_device_ops_t, stream_destroy, 112, 8);
  FIELD(accel_device_ops_t, stream_synchronize, 120, 8);
  FIELD(accel_device_ops_t, stream_query, 128, 8);
  FIELD(accel_device_ops_t, stream_wait_event, 136, 8);
  FIELD(accel_device_ops_t, event_create, 144, 8);
  FIELD(accel_device_ops_t, event_destroy, 152, 8);
  FIELD(accel_device_ops_t, event_record, 160, 8);
  FIELD(accel_device_ops_t, event_synchronize, 168, 8);
  FIELD(accel_device_ops_t, event_query, 176, 8);
  FIELD(accel_device_ops_t, event_elapsed_ms, 184, 8);
  FIELD(accel_device_ops_t, module_load, 192, 8);
  FIELD(accel_device_ops_t, module_unload, 200, 8);
  FIELD(accel_device_ops_t, module_function, 208, 8);
  FIELD(accel_device_ops_t, launch, 216, 8);
  // -- since ABI 1.1 --
  FIELD(accel_device_ops_t, op_fill, 224, 8);
  FIELD(accel_device_ops_t, op_cast, 232, 8);
  FIELD(accel_device_ops_t, op_scale, 240, 8);
  FIELD(accel_device_ops_t, op_axpy, 248, 8);
  FIELD(accel_device_ops_t, op_add, 256, 8);
  FIELD(accel_device_ops_t, op_mul, 264, 8);
  FIELD(accel_device_ops_t, op_sum, 272, 8);
  FIELD(accel_device_ops_t, op_gemm, 280, 8);
  // -- since ABI 1.2 --
  FIELD(accel_device_ops_t, op_gemm_workspace, 288, 8);
  // -- since ABI 1.3 --
  FIELD(accel_device_ops_t, mem_address, 296, 8);
  FIELD(accel_device_ops_t, mem_wrap, 304, 8);
  FIELD(accel_device_ops_t, mem_unwrap, 312, 8);
  FIELD(accel_device_ops_t, op_rng, 320, 8);
  // -- since ABI 1.4 --
  FIELD(accel_device_ops_t, native_handle, 328, 8);
  FIELD(accel_device_ops_t, host_register, 336, 8);
  FIELD(accel_device_ops_t, host_unregister, 344, 8);
  FIELD(accel_device_ops_t, launch_host_func, 352, 8);
  FIELD(accel_device_ops_t, stream_priority_range, 360, 8);
  FIELD(accel_device_ops_t, stream_create_priority, 368, 8);
  FIELD(accel_device_ops_t, stream_begin_capture, 376, 8);
  FIELD(accel_device_ops_t, stream_end_capture, 384, 8);
  FIELD(accel_device_ops_t, graph_launch, 392, 8);
  FIELD(accel_device_ops_t, graph_destroy, 400, 8);
  FIELD(accel_device_ops_t, op_unary, 408, 8);
  FIELD(accel_device_ops_t, op_bias_add, 416, 8);
  FIELD(accel_device_ops_t, op_gemm_batched, 424, 8);
  LAYOUT_END();
}

// Since ABI 1.1 (144 bytes); the workspace fields since ABI 1.2.
TEST(gemm_layout) {
  REQUIRE_LP64();
  LAYOUT_BEGIN();
  SIZE(accel_plugin_gemm_t, 168);
  FIELD(accel_plugin_gemm_t, struct_size, 0, 4);
  FIELD(accel_plugin_gemm_t, a_dtype, 4, 4);
  FIELD(accel_plugin_gemm_t, b_dtype, 8, 4);
  FIELD(accel_plugin_gemm_t, c_dtype, 12, 4);
  FIELD(accel_plugin_gemm_t, trans_a, 16, 4);
  FIELD(accel_plugin_gemm_t, trans_b, 20, 4);
  FIELD(accel_plugin_gemm_t, flags, 24, 4);
  FIELD(accel_plugin_gemm_t, reserved0, 28, 4);
  FIELD(accel_plugin_gemm_t, m, 32, 8);
  FIELD(accel_plugin_gemm_t, n, 40, 8);
  FIELD(accel_plugin_gemm_t, k, 48, 8);
  FIELD(accel_plugin_gemm_t, alpha, 56, 8);
  FIELD(accel_plugin_gemm_t, beta, 64, 8);
  FIELD(accel_plugin_gemm_t, a, 72, 8);
  FIELD(accel_plugin_gemm_t, a_offset, 80, 8);
  FIELD(accel_plugin_gemm_t, lda, 88, 8);
  FIELD(accel_plugin_gemm_t, b, 96, 8);
  FIELD(accel_plugin_gemm_t, b_offset, 104, 8);
  FIELD(accel_plugin_gemm_t, ldb, 112, 8);
  FIELD(accel_plugin_gemm_t, c, 120, 8);
  FIELD(accel_plugin_gemm_t, c_offset, 128, 8);
  FIELD(accel_plugin_gemm_t, ldc, 136, 8);
  // -- since ABI 1.2 --
  FIELD(accel_plugin_gemm_t, workspace, 144, 8);
  FIELD(accel_plugin_gemm_t, workspace_offset, 152, 8);
  FIELD(accel_plugin_gemm_t, workspace_size, 160, 8);
  LAYOUT_END();
  // A plugin handed a 1.1 struct (from an ABI 1.1 core) sees no workspace.
  accel_plugin_gemm_t g;
  memset(&g, 0, sizeof(g));
  g.struct_size = 144;
  ASSERT(ACCEL_PLUGIN_HAS_FIELD(&g, accel_plugin_gemm_t, ldc));
  ASSERT(!ACCEL_PLUGIN_HAS_FIELD(&g, accel_plugin_gemm_t, workspace));
  ASSERT(!ACCEL_PLUGIN_HAS_FIELD(&g, accel_plugin_gemm_t, workspace_size));
  g.struct_size = (uint32_t)sizeof(g);
  ASSERT(ACCEL_PLUGIN_HAS_FIELD(&g, accel_plugin_gemm_t, workspace_size));
}

// The batch of op_gemm_batched (ABI 1.4) and the activation codes of
// op_unary, which <accel/ops_nn.h>'s accel_activation_t repeats.
TEST(gemm_batch_layout) {
  REQUIRE_LP64();
  LAYOUT_BEGIN();
  SIZE(accel_plugin_gemm_batch_t, 40);
  FIELD(accel_plugin_gemm_batch_t, struct_size, 0, 4);
  FIELD(accel_plugin_gemm_batch_t, reserved0, 4, 4);
  FIELD(accel_plugin_gemm_batch_t, count, 8, 8);
  FIELD(accel_plugin_gemm_batch_t, stride_a, 16, 8);
  FIELD(accel_plugin_gemm_batch_t, stride_b, 24, 8);
  FIELD(accel_plugin_gemm_batch_t, stride_c, 32, 8);
  VALUE(ACCEL_PLUGIN_UNARY_RELU, 0);
  VALUE(ACCEL_PLUGIN_UNARY_GELU, 1);
  VALUE(ACCEL_PLUGIN_UNARY_SILU, 2);
  LAYOUT_END();
}

TEST(plugin_layout) {
  REQUIRE_LP64();
  LAYOUT_BEGIN();
  SIZE(accel_plugin_t, 80);
  FIELD(accel_plugin_t, abi_version, 0, 4);
  FIELD(accel_plugin_t, struct_size, 4, 4);
  FIELD(accel_plugin_t, name, 8, 8);
  FIELD(accel_plugin_t, version, 16, 8);
  FIELD(accel_plugin_t, priority, 24, 4);
  FIELD(accel_plugin_t, load, 32, 8);
  FIELD(accel_plugin_t, unload, 40, 8);
  FIELD(accel_plugin_t, device_count, 48, 8);
  FIELD(accel_plugin_t, device_open, 56, 8);
  FIELD(accel_plugin_t, device_close, 64, 8);
  FIELD(accel_plugin_t, device_ops, 72, 8);
  LAYOUT_END();
}

// The ABI 1.0 minimums never change: every ABI 1.x core accepts a plugin
// built with the 1.0 header.
TEST(abi_constants) {
  REQUIRE_LP64();
  LAYOUT_BEGIN();
  VALUE(ACCEL_PLUGIN_ABI_VERSION, 1);
  VALUE(ACCEL_PLUGIN_ABI_MINOR, 4);
  VALUE(ACCEL_DEVICE_OPS_MIN_SIZE, 184);
  VALUE(ACCEL_PLUGIN_MIN_SIZE, 80);
  LAYOUT_END();
  ASSERT_STR_EQ(ACCEL_PLUGIN_ENTRY_NAME, "accel_plugin_entry");
  // ACCEL_PLUGIN_HAS_FIELD: a table cut just after `caps` has caps, not
  // uuid.
  accel_plugin_device_props_t props;
  memset(&props, 0, sizeof(props));
  props.struct_size =
      (uint32_t)(offsetof(accel_plugin_device_props_t, caps) + 4);
  ASSERT(ACCEL_PLUGIN_HAS_FIELD(&props, accel_plugin_device_props_t, caps));
  ASSERT(!ACCEL_PLUGIN_HAS_FIELD(&props, accel_plugin_device_props_t, uuid));
}

TEST(enum_values) {
  LAYOUT_BEGIN();
  VALUE(ACCEL_PLUGIN_ARG_VALUE, 0);
  VALUE(ACCEL_PLUGIN_ARG_BUFFER, 1);
  VALUE(ACCEL_PLUGIN_ARG_KIND_MAX_ENUM, 0x7fffffff);
  VALUE(ACCEL_ORIGIN_API, 0);
  VALUE(ACCEL_ORIGIN_ENV, 1);
  VALUE(ACCEL_ORIGIN_INSTALL_DIR, 2);
  VALUE(ACCEL_ORIGIN_MAX_ENUM, 0x7fffffff);
  VALUE(ACCEL_PLUGIN_STAGE_FOUND, 0);
  VALUE(ACCEL_PLUGIN_STAGE_OPENED, 1);
  VALUE(ACCEL_PLUGIN_STAGE_ENTRY, 2);
  VALUE(ACCEL_PLUGIN_STAGE_NEGOTIATED, 3);
  VALUE(ACCEL_PLUGIN_STAGE_INITIALISED, 4);
  VALUE(ACCEL_PLUGIN_STAGE_MAX_ENUM, 0x7fffffff);
  SIZE(accel_plugin_arg_kind_t, 4);
  SIZE(accel_origin_t, 4);
  SIZE(accel_plugin_stage_t, 4);
  LAYOUT_END();
  // The shared enums are pinned in test_shared_types.c.
}

TEST(public_device_info_layout) {
  REQUIRE_LP64();
  LAYOUT_BEGIN();
  SIZE(accel_device_info_t, 1168);
  FIELD(accel_device_info_t, struct_size, 0, 4);
  FIELD(accel_device_info_t, type, 4, 4);
  FIELD(accel_device_info_t, uri, 8, 48);
  FIELD(accel_device_info_t, backend, 56, 32);
  FIELD(accel_device_info_t, index, 88, 4);
  FIELD(accel_device_info_t, name, 92, 256);
  FIELD(accel_device_info_t, vendor, 348, 64);
  FIELD(accel_device_info_t, arch, 412, 64);
  FIELD(accel_device_info_t, total_memory, 480, 8);
  FIELD(accel_device_info_t, free_memory, 488, 8);
  FIELD(accel_device_info_t, compute_units, 496, 4);
  FIELD(accel_device_info_t, max_threads_per_block, 500, 4);
  FIELD(accel_device_info_t, simd_width, 504, 4);
  FIELD(accel_device_info_t, caps, 508, 4);
  FIELD(accel_device_info_t, uuid, 512, 16);
  FIELD(accel_device_info_t, pci_bus_id, 528, 32);
  FIELD(accel_device_info_t, features, 560, 256);
  FIELD(accel_device_info_t, driver_version, 816, 64);
  // -- since accel 0.2 -- (callers built with the 880-byte struct still
  // work: accel_device_query_info fills what fits)
  FIELD(accel_device_info_t, module_target, 880, 64);
  // ABI 1.3 properties, appended in the same 0.2 section (callers built
  // with the 944-byte struct get the fields that fit).
  FIELD(accel_device_info_t, max_alloc_size, 944, 8);
  FIELD(accel_device_info_t, max_shared_mem_bytes, 952, 8);
  FIELD(accel_device_info_t, buffer_offset_alignment, 960, 4);
  FIELD(accel_device_info_t, max_grid, 964, 12);
  FIELD(accel_device_info_t, module_formats, 976, 128);
  FIELD(accel_device_info_t, platform, 1104, 64);
  LAYOUT_END();
}

TEST(public_gemm_layout) {
  REQUIRE_LP64();
  LAYOUT_BEGIN();
  SIZE(accel_gemm_t, 136);
  FIELD(accel_gemm_t, struct_size, 0, 4);
  FIELD(accel_gemm_t, a_dtype, 4, 4);
  FIELD(accel_gemm_t, b_dtype, 8, 4);
  FIELD(accel_gemm_t, c_dtype, 12, 4);
  FIELD(accel_gemm_t, trans_a, 16, 1);
  FIELD(accel_gemm_t, trans_b, 17, 1);
  FIELD(accel_gemm_t, flags, 20, 4);
  FIELD(accel_gemm_t, m, 24, 8);
  FIELD(accel_gemm_t, n, 32, 8);
  FIELD(accel_gemm_t, k, 40, 8);
  FIELD(accel_gemm_t, alpha, 48, 8);
  FIELD(accel_gemm_t, beta, 56, 8);
  FIELD(accel_gemm_t, a, 64, 8);
  FIELD(accel_gemm_t, a_offset, 72, 8);
  FIELD(accel_gemm_t, lda, 80, 8);
  FIELD(accel_gemm_t, b, 88, 8);
  FIELD(accel_gemm_t, b_offset, 96, 8);
  FIELD(accel_gemm_t, ldb, 104, 8);
  FIELD(accel_gemm_t, c, 112, 8);
  FIELD(accel_gemm_t, c_offset, 120, 8);
  FIELD(accel_gemm_t, ldc, 128, 8);
  LAYOUT_END();
}

TEST(public_kernel_layout) {
  REQUIRE_LP64();
  LAYOUT_BEGIN();
  SIZE(accel_kernel_arg_t, 32);
  FIELD(accel_kernel_arg_t, kind, 0, 4);
  FIELD(accel_kernel_arg_t, size, 4, 4);
  FIELD(accel_kernel_arg_t, value, 8, 8);
  FIELD(accel_kernel_arg_t, buffer, 16, 8);
  FIELD(accel_kernel_arg_t, offset, 24, 8);
  SIZE(accel_launch_config_t, 32);
  FIELD(accel_launch_config_t, struct_size, 0, 4);
  FIELD(accel_launch_config_t, grid, 4, 12);
  FIELD(accel_launch_config_t, block, 16, 12);
  FIELD(accel_launch_config_t, shared_mem_bytes, 28, 4);
  SIZE(accel_kernel_arg_kind_t, 4);
  VALUE(ACCEL_KERNEL_ARG_VALUE, 0);
  VALUE(ACCEL_KERNEL_ARG_BUFFER, 1);
  VALUE(ACCEL_KERNEL_ARG_KIND_MAX_ENUM, 0x7fffffff);
  LAYOUT_END();
}

TEST(public_plugin_report_layout) {
  REQUIRE_LP64();
  LAYOUT_BEGIN();
  SIZE(accel_plugin_report_t, 80);
  FIELD(accel_plugin_report_t, struct_size, 0, 4);
  FIELD(accel_plugin_report_t, path, 8, 8);
  FIELD(accel_plugin_report_t, source, 16, 8);
  FIELD(accel_plugin_report_t, origin, 24, 4);
  FIELD(accel_plugin_report_t, stage, 28, 4);
  FIELD(accel_plugin_report_t, status, 32, 4);
  FIELD(accel_plugin_report_t, message, 40, 8);
  FIELD(accel_plugin_report_t, name, 48, 8);
  FIELD(accel_plugin_report_t, version, 56, 8);
  FIELD(accel_plugin_report_t, abi_version, 64, 4);
  FIELD(accel_plugin_report_t, device_count, 68, 4);
  FIELD(accel_plugin_report_t, priority, 72, 4);
  // -- since accel 0.2 -- (fills the former tail padding)
  FIELD(accel_plugin_report_t, abi_minor, 76, 4);
  LAYOUT_END();
}

TEST(public_options_layout) {
  REQUIRE_LP64();
  LAYOUT_BEGIN();
  SIZE(accel_options_t, 56);
  FIELD(accel_options_t, struct_size, 0, 4);
  FIELD(accel_options_t, plugin_path, 8, 8);
  FIELD(accel_options_t, ignore_env_path, 16, 1);
  FIELD(accel_options_t, ignore_install_dir, 17, 1);
  FIELD(accel_options_t, exclude, 24, 8);
  FIELD(accel_options_t, exclude_count, 32, 8);
  FIELD(accel_options_t, probe, 40, 8);
  FIELD(accel_options_t, probe_user_data, 48, 8);
  LAYOUT_END();
}

int main(int argc, char** argv) { return test_main(argc, argv); }
