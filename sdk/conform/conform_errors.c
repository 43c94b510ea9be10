// SPDX-License-Identifier: MIT
//
// An error in queued work: the test kernel accel_conform_fail makes its
// launch fail on the device (a trap on GPU targets, ctx->fail for CPU-ABI
// kernels; see kernels/README.md). The failure must reach
// stream_synchronize, stream_query, event_synchronize and event_query of
// an event recorded after it, and stay (sticky) on a second call. These
// checks run last: on a GPU a trapped kernel may leave the context
// unusable.
#include <stdio.h>
#include <string.h>

#include "conform.h"

static conform_result_t conform_error_sticky(conform_ctx_t* ctx,
                                             const void* arg) {
  (void)arg;
  char path[1024] = "";
  accel_kernel_t* fail = NULL;
  CONFORM_GET_KERNEL(ctx, "accel_conform_fail", fail, path);
  accel_stream_t* s = NULL;
  accel_event_t* e = NULL;
  accel_buffer_t* flag = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &s);
  if (status == ACCEL_OK) status = conform_event(ctx, ctx->device, 0, &e);
  if (status == ACCEL_OK) status = conform_buffer(ctx, ctx->device, 256, &flag);
  if (status == ACCEL_OK) status = accel_buffer_fill(flag, 0, 0, 256);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  accel_launch_config_t config;
  accel_launch_config_init(&config);
  accel_kernel_arg_t a = {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = flag};
  status = accel_kernel_launch(fail, s, &config, 1, &a);
  if (status != ACCEL_OK) {
    return conform_fail_status(ctx, status, "launching the failing kernel");
  }
  // A driver may report the failure already when later work is enqueued:
  // CUDA and HIP fail every call with a context's sticky error once a
  // kernel has faulted. Then the event may not be recorded, and only the
  // stream has to keep reporting it.
  bool recorded = false;
  status = conform_heavy_work(ctx, s, 2);
  if (status == ACCEL_OK) {
    status = accel_event_record(e, s);
    recorded = status == ACCEL_OK;
  }
  if (status == ACCEL_ERROR_INVALID_ARGUMENT ||
      status == ACCEL_ERROR_UNSUPPORTED) {
    return conform_fail_status(ctx, status, "enqueueing after the launch");
  }
  accel_status_t early = status;
  status = conform_stream_sync(ctx, s);
  if (ctx->hung) return conform_fail_wait(ctx, status, "stream_synchronize");
  if (status == ACCEL_OK && early != ACCEL_OK) {
    return conform_report(ctx, CONFORM_FAIL,
                          "stream_synchronize returned ACCEL_OK after "
                          "enqueueing reported the failure (%s)",
                          accel_status_string(early));
  }
  if (status == ACCEL_OK) {
    int32_t value = 0;
    accel_buffer_read(flag, 0, &value, sizeof(value));
    if (value == 2) {
      return conform_report(ctx, CONFORM_SKIP,
                            "%s: the plugin's kernel context has no fail "
                            "entry (accel_cpu_kernel_ctx_t.fail)",
                            path);
    }
    return conform_report(ctx, CONFORM_FAIL,
                          "stream_synchronize after a failed kernel returned "
                          "ACCEL_OK (flag %d)",
                          (int)value);
  }
  accel_status_t first = status;
  bool done = false;
  const char* what = NULL;
  if ((status = accel_stream_query(s, &done)) == ACCEL_OK) {
    what = "stream_query";
  } else if ((status = conform_stream_sync(ctx, s)) == ACCEL_OK) {
    what = "a second stream_synchronize";
  } else if (recorded && (status = accel_event_query(e, &done)) == ACCEL_OK) {
    what = "event_query of an event recorded after the failure";
  } else if (recorded && (status = conform_event_sync(ctx, e)) == ACCEL_OK) {
    what = "event_synchronize of an event recorded after the failure";
  }
  if (what != NULL) {
    return conform_report(ctx, CONFORM_FAIL,
                          "%s returned ACCEL_OK after queued work failed "
                          "(stream_synchronize said %s)",
                          what, accel_status_string(first));
  }
  if (ctx->hung) return conform_fail_wait(ctx, status, "after the failure");
  // A CPU-ABI kernel (flag 3) chose its status, ACCEL_ERROR_DEVICE_LOST,
  // and cpu_kernel.h says the stream reports that status: one replaced by
  // a generic code loses what the kernel said. (After a GPU trap the flag
  // may not be readable; the status is then the plugin's to choose.)
  int32_t marker = 0;
  if (accel_buffer_read(flag, 0, &marker, sizeof(marker)) == ACCEL_OK &&
      marker == 3 && first != ACCEL_ERROR_DEVICE_LOST) {
    return conform_report(ctx, CONFORM_FAIL,
                          "the kernel failed through ctx->fail with "
                          "ACCEL_ERROR_DEVICE_LOST, but stream_synchronize "
                          "reported %s",
                          accel_status_string(first));
  }
  return conform_report(ctx, CONFORM_PASS, "sticky %s reached every query%s",
                        accel_status_string(first),
                        recorded ? "" : " (reported from the enqueue on)");
}

static const conform_check_t conform_errors[] = {
    {"error.sticky", conform_error_sticky, NULL},
};

const conform_check_t* conform_error_checks(size_t* out_count) {
  *out_count = sizeof(conform_errors) / sizeof(conform_errors[0]);
  return conform_errors;
}
