// SPDX-License-Identifier: MIT
//
// An error in queued work: the test kernel accel_conform_fail makes its
// launch fail on the device (a trap on GPU targets, ctx->fail for CPU-ABI
// kernels; see kernels/README.md). The failure must reach
// stream_synchronize, stream_query, event_synchronize and event_query of
// an event recorded after it, and stay (sticky) on a second call. A host
// function enqueued behind the failure must not be called (controls.h,
// as cuLaunchHostFunc), and a failing kernel captured in a graph must
// fail the graph's launch at the synchronize, as the same kernel
// enqueued directly does. These checks run last: on a GPU a trapped
// kernel may leave the context unusable.
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

// A flag buffer for accel_conform_fail, made before any capture.
static accel_status_t conform_error_flag(conform_ctx_t* ctx,
                                         accel_buffer_t** out_flag) {
  accel_status_t status = conform_buffer(ctx, ctx->device, 256, out_flag);
  if (status == ACCEL_OK) status = accel_buffer_fill(*out_flag, 0, 0, 256);
  return status;
}

// Launches accel_conform_fail on `s`.
static accel_status_t conform_error_launch(accel_kernel_t* fail,
                                           accel_stream_t* s,
                                           accel_buffer_t* flag) {
  accel_launch_config_t config;
  accel_launch_config_init(&config);
  accel_kernel_arg_t a = {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = flag};
  return accel_kernel_launch(fail, s, &config, 1, &a);
}

// After a CPU-ABI kernel failed through ctx->fail on stream `s`
// (cpu_kernel.h: "work queued after the launch is skipped"): a small write
// and a small fill enqueued on `s` now must not land in `probe` (work a
// plugin runs at once on the caller's thread for an idle stream included),
// and `e`, re-recorded on a new healthy stream, must complete without the
// old error (plugin.h: re-recording replaces the previous capture).
// Reported on failure; PASS otherwise.
enum { CONFORM_PROBE_BYTES = 4096, CONFORM_PROBE_OLD = 0x11 };
static conform_result_t conform_error_after_fail(conform_ctx_t* ctx,
                                                 accel_stream_t* s,
                                                 accel_event_t* e,
                                                 accel_buffer_t* probe) {
  unsigned char bytes[CONFORM_PROBE_BYTES];
  memset(bytes, 0x22, sizeof(bytes));
  // Either may be refused at the enqueue with the sticky error, or taken
  // and skipped: both leave the buffer alone.
  (void)accel_stream_write_buffer(s, probe, 0, bytes, sizeof(bytes) / 2);
  (void)accel_stream_fill_buffer(s, probe, sizeof(bytes) / 2, 0x33,
                                 sizeof(bytes) / 2);
  accel_status_t status = conform_stream_sync(ctx, s);
  if (ctx->hung) return conform_fail_wait(ctx, status, "stream_synchronize");
  memset(bytes, CONFORM_PROBE_OLD, sizeof(bytes));
  if (!conform_verify(ctx, probe, bytes, sizeof(bytes),
                      "a write and a fill enqueued on the stream after its "
                      "kernel failed must be skipped (cpu_kernel.h)")) {
    return CONFORM_FAIL;
  }
  accel_stream_t* fresh = NULL;
  status = conform_stream(ctx, ctx->device, &fresh);
  if (status == ACCEL_OK) status = accel_event_record(e, fresh);
  if (status == ACCEL_OK) status = conform_event_sync(ctx, e);
  if (status != ACCEL_OK) {
    return conform_report(ctx, CONFORM_FAIL,
                          "an event recorded after the failure, recorded "
                          "again on a new stream with no error: %s (%s); "
                          "the new record replaces the old one (plugin.h)",
                          accel_status_string(status), accel_last_error());
  }
  bool done = false;
  status = accel_event_query(e, &done);
  if (status != ACCEL_OK || !done) {
    return conform_report(ctx, CONFORM_FAIL,
                          "event re-recorded on a healthy stream: "
                          "event_query gave %s, done %d after its "
                          "synchronize returned ACCEL_OK",
                          accel_status_string(status), (int)done);
  }
  return CONFORM_PASS;
}

static conform_result_t conform_error_sticky(conform_ctx_t* ctx,
                                             const void* arg) {
  (void)arg;
  char path[1024] = "";
  accel_kernel_t* fail = NULL;
  CONFORM_GET_KERNEL(ctx, "accel_conform_fail", fail, path);
  accel_stream_t* s = NULL;
  accel_event_t* e = NULL;
  accel_buffer_t* flag = NULL;
  accel_buffer_t* probe = NULL;  // CONFORM_PROBE_BYTES of CONFORM_PROBE_OLD
  accel_status_t status = conform_stream(ctx, ctx->device, &s);
  if (status == ACCEL_OK) status = conform_event(ctx, ctx->device, 0, &e);
  if (status == ACCEL_OK) status = conform_error_flag(ctx, &flag);
  if (status == ACCEL_OK) {
    status = conform_buffer(ctx, ctx->device, CONFORM_PROBE_BYTES, &probe);
  }
  if (status == ACCEL_OK) {
    status = accel_buffer_fill(probe, 0, CONFORM_PROBE_OLD, CONFORM_PROBE_BYTES);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  status = conform_error_launch(fail, s, flag);
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
  if (marker == 3 && conform_error_after_fail(ctx, s, e, probe) != CONFORM_PASS) {
    return CONFORM_FAIL;
  }
  return conform_report(ctx, CONFORM_PASS, "sticky %s reached every query%s",
                        accel_status_string(first),
                        recorded ? "" : " (reported from the enqueue on)");
}

// SKIP when the setup already fails with the error of an earlier check's
// failed kernel (a GPU context's sticky error): nothing is left to see.
static conform_result_t conform_error_setup(conform_ctx_t* ctx,
                                            accel_status_t status,
                                            const char* what) {
  if (status == ACCEL_ERROR_DEVICE_LOST || status == ACCEL_ERROR_BACKEND) {
    return conform_report(ctx, CONFORM_SKIP,
                          "the device still reports an earlier check's "
                          "failed kernel (%s: %s); run this check alone",
                          accel_status_string(status), accel_last_error());
  }
  return conform_fail_status(ctx, status, what);
}

// An enqueue that reports the queued failure already (CUDA and HIP fail
// every call once a kernel has faulted) is fine; one that says the
// arguments are wrong or the entry is missing is not.
static bool conform_error_early(accel_status_t status) {
  return status != ACCEL_OK && status != ACCEL_ERROR_INVALID_ARGUMENT &&
         status != ACCEL_ERROR_UNSUPPORTED;
}

static void conform_error_host_call(void* user) {
  atomic_fetch_add((atomic_int*)user, 1);
}

static conform_result_t conform_error_host_func(conform_ctx_t* ctx,
                                                const void* arg) {
  (void)arg;
  char path[1024] = "";
  accel_kernel_t* fail = NULL;
  CONFORM_GET_KERNEL(ctx, "accel_conform_fail", fail, path);
  atomic_int* calls = conform_alloc(ctx, sizeof(*calls));
  if (calls == NULL) return conform_report(ctx, CONFORM_FAIL, "host memory");
  atomic_init(calls, 0);
  accel_stream_t* s = NULL;
  accel_buffer_t* flag = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &s);
  if (status == ACCEL_OK) status = conform_error_flag(ctx, &flag);
  if (status != ACCEL_OK) return conform_error_setup(ctx, status, "setup");
  status = conform_error_launch(fail, s, flag);
  if (status != ACCEL_OK) {
    return conform_error_setup(ctx, status, "launching the failing kernel");
  }
  status = conform_heavy_work(ctx, s, 2);
  if (status == ACCEL_OK) {
    status = accel_stream_launch_host_func(s, conform_error_host_call, calls);
  }
  if (status == ACCEL_ERROR_UNSUPPORTED) {
    (void)conform_stream_sync(ctx, s);
    return conform_report(ctx, CONFORM_UNSUPPORTED, "host functions: %s",
                          accel_last_error());
  }
  if (status != ACCEL_OK && !conform_error_early(status)) {
    return conform_fail_status(ctx, status, "enqueueing after the launch");
  }
  accel_status_t sync = conform_stream_sync(ctx, s);
  if (ctx->hung) return conform_fail_wait(ctx, sync, "stream_synchronize");
  if (sync == ACCEL_OK) {
    return conform_report(ctx, CONFORM_SKIP,
                          "the failing kernel did not fail (error.sticky "
                          "says why)");
  }
  if (atomic_load(calls) != 0) {
    return conform_report(ctx, CONFORM_FAIL,
                          "a host function enqueued after a kernel that "
                          "failed was called %d time(s); controls.h: after "
                          "an asynchronous error it is not called",
                          atomic_load(calls));
  }
  return conform_report(ctx, CONFORM_PASS, "not called after %s%s",
                        accel_status_string(sync),
                        status != ACCEL_OK ? " (reported at enqueue)" : "");
}

static conform_result_t conform_error_graph(conform_ctx_t* ctx,
                                            const void* arg) {
  (void)arg;
  char path[1024] = "";
  accel_kernel_t* fail = NULL;
  CONFORM_GET_KERNEL(ctx, "accel_conform_fail", fail, path);
  accel_stream_t* s = NULL;
  accel_graph_t* graph = NULL;
  accel_buffer_t* flag = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &s);
  if (status == ACCEL_OK) status = conform_error_flag(ctx, &flag);
  if (status != ACCEL_OK) return conform_error_setup(ctx, status, "setup");
  status = accel_stream_begin_capture(s);
  if (status == ACCEL_ERROR_UNSUPPORTED) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "graphs: %s",
                          accel_last_error());
  }
  const char* what = "begin_capture";
  if (status == ACCEL_OK) {
    what = "launching the failing kernel in the capture";
    status = conform_error_launch(fail, s, flag);
    accel_status_t end = accel_stream_end_capture(s, &graph);
    if (status == ACCEL_OK) what = "end_capture", status = end;
  }
  if (status == ACCEL_OK) {
    what = "graph_launch";
    status = accel_graph_launch(graph, s);
  }
  accel_graph_release(graph);  // runs already enqueued hold it
  if (status != ACCEL_OK && !conform_error_early(status)) {
    return conform_fail_status(ctx, status, what);
  }
  accel_status_t sync = conform_stream_sync(ctx, s);
  if (ctx->hung) return conform_fail_wait(ctx, sync, "stream_synchronize");
  if (status == ACCEL_OK && sync == ACCEL_OK) {
    return conform_report(ctx, CONFORM_FAIL,
                          "a graph holding a kernel that fails on the "
                          "device ran to ACCEL_OK at stream_synchronize "
                          "(the error of a graph's node was lost)");
  }
  return conform_report(ctx, CONFORM_PASS, "%s from the graph's run%s",
                        accel_status_string(sync == ACCEL_OK ? status : sync),
                        status != ACCEL_OK ? " (reported at enqueue)" : "");
}

static const conform_check_t conform_errors[] = {
    {"error.sticky", conform_error_sticky, NULL},
    {"error.host_func", conform_error_host_func, NULL},
    {"error.graph", conform_error_graph, NULL},
};

const conform_check_t* conform_error_checks(size_t* out_count) {
  *out_count = sizeof(conform_errors) / sizeof(conform_errors[0]);
  return conform_errors;
}
