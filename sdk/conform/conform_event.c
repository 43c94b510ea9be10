// SPDX-License-Identifier: MIT
//
// Event checks: a never-recorded event is complete; a recorded one
// completes (bounded poll) and makes earlier work visible; synchronize
// returns (bounded, on a helper thread); re-recording replaces the capture;
// timing events give non-negative, monotonic elapsed times when the device
// claims event_timing (and the negative of one backwards), and are refused
// as unsupported when it does not.
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

static conform_result_t conform_event_never_recorded(conform_ctx_t* ctx,
                                                     const void* arg) {
  (void)arg;
  accel_event_t* e = NULL;
  accel_status_t status = conform_event(ctx, ctx->device, 0, &e);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "create");
  bool done = false;
  status = accel_event_query(e, &done);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "query");
  if (!done) {
    return conform_report(ctx, CONFORM_FAIL,
                          "a never-recorded event is not complete");
  }
  status = conform_event_sync(ctx, e);
  if (status != ACCEL_OK) {
    return conform_fail_wait(ctx, status, "synchronize (never recorded)");
  }
  return conform_report(ctx, CONFORM_PASS, "complete at once");
}

// Heavy work, then `n` bytes of fresh data into a new buffer, then a record
// of `e`. `*out_buffer` and `in` (the data) are what a check reads back.
static accel_status_t conform_event_work(conform_ctx_t* ctx,
                                         accel_stream_t* stream,
                                         accel_event_t* e, unsigned char* in,
                                         size_t n, accel_buffer_t** out) {
  uint64_t rng = ctx->seed + 20;
  conform_rand_bytes(&rng, in, n);
  accel_status_t status = conform_buffer(ctx, ctx->device, n, out);
  if (status == ACCEL_OK) status = conform_heavy_work(ctx, stream, 12);
  if (status == ACCEL_OK) {
    status = accel_stream_write_buffer(stream, *out, 0, in, n);
  }
  if (status == ACCEL_OK) status = accel_event_record(e, stream);
  return status;
}

// Checks that `b` holds `in` with a plain synchronous read, which does not
// wait for stream work: the event must have made it visible already.
static conform_result_t conform_event_visible(conform_ctx_t* ctx,
                                              accel_buffer_t* b,
                                              const unsigned char* in,
                                              size_t n) {
  if (!conform_verify(ctx, b, in, n, "data written before the record")) {
    return CONFORM_FAIL;
  }
  return CONFORM_PASS;
}

static conform_result_t conform_event_record_query(conform_ctx_t* ctx,
                                                   const void* arg) {
  (void)arg;
  const size_t n = 65536;
  accel_stream_t* stream = NULL;
  accel_event_t* e = NULL;
  accel_buffer_t* b = NULL;
  unsigned char* in = conform_alloc(ctx, n);
  if (in == NULL) return conform_report(ctx, CONFORM_FAIL, "host OOM");
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status == ACCEL_OK) status = conform_event(ctx, ctx->device, 0, &e);
  if (status == ACCEL_OK)
    status = conform_event_work(ctx, stream, e, in, n, &b);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  status = conform_event_wait(ctx, e);
  if (status != ACCEL_OK) {
    return conform_fail_wait(ctx, status, "recorded event (polling query)");
  }
  if (conform_event_visible(ctx, b, in, n) != CONFORM_PASS) return CONFORM_FAIL;
  return conform_report(ctx, CONFORM_PASS,
                        "query reached done; earlier work visible");
}

static conform_result_t conform_event_synchronize(conform_ctx_t* ctx,
                                                  const void* arg) {
  (void)arg;
  const size_t n = 65536;
  accel_stream_t* stream = NULL;
  accel_event_t* e = NULL;
  accel_buffer_t* b = NULL;
  unsigned char* in = conform_alloc(ctx, n);
  if (in == NULL) return conform_report(ctx, CONFORM_FAIL, "host OOM");
  accel_status_t status = conform_stream(ctx, ctx->device, &stream);
  if (status == ACCEL_OK) status = conform_event(ctx, ctx->device, 0, &e);
  if (status == ACCEL_OK)
    status = conform_event_work(ctx, stream, e, in, n, &b);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  status = conform_event_sync(ctx, e);
  if (status != ACCEL_OK) {
    return conform_fail_wait(ctx, status, "accel_event_synchronize");
  }
  bool done = false;
  status = accel_event_query(e, &done);
  if (status != ACCEL_OK || !done) {
    return conform_report(ctx, CONFORM_FAIL,
                          "query after synchronize: %s, done %d",
                          accel_status_string(status), (int)done);
  }
  if (conform_event_visible(ctx, b, in, n) != CONFORM_PASS) return CONFORM_FAIL;
  return conform_report(ctx, CONFORM_PASS,
                        "synchronize returned; earlier work visible");
}

static conform_result_t conform_event_rerecord(conform_ctx_t* ctx,
                                               const void* arg) {
  (void)arg;
  accel_stream_t* s1 = NULL;
  accel_stream_t* s2 = NULL;
  accel_event_t* e = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &s1);
  if (status == ACCEL_OK) status = conform_stream(ctx, ctx->device, &s2);
  if (status == ACCEL_OK) status = conform_event(ctx, ctx->device, 0, &e);
  if (status == ACCEL_OK) status = accel_event_record(e, s1);
  if (status == ACCEL_OK) status = conform_heavy_work(ctx, s2, 8);
  if (status == ACCEL_OK) status = accel_event_record(e, s2);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  status = conform_event_wait(ctx, e);
  if (status != ACCEL_OK) {
    return conform_fail_wait(ctx, status, "re-recorded event");
  }
  bool idle = false;
  status = accel_stream_query(s2, &idle);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "query");
  // The second record was last on s2, so s2's work before it is done; only
  // the record itself may still be finishing.
  status = conform_stream_wait(ctx, s2);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
  return conform_report(ctx, CONFORM_PASS,
                        "the second record replaced the first");
}

static conform_result_t conform_event_elapsed(conform_ctx_t* ctx,
                                              const void* arg) {
  (void)arg;
  bool claimed = (ctx->info.caps & ACCEL_DEVICE_CAP_EVENT_TIMING) != 0;
  accel_event_t* e[3] = {NULL, NULL, NULL};
  accel_status_t status =
      conform_event(ctx, ctx->device, ACCEL_EVENT_TIMING, &e[0]);
  if (!claimed) {
    if (status == ACCEL_ERROR_UNSUPPORTED) {
      return conform_report(ctx, CONFORM_UNSUPPORTED, "no event_timing: %s",
                            accel_last_error());
    }
    return conform_report(ctx, CONFORM_FAIL,
                          "no event_timing claimed, but a timing event gave "
                          "%s (expected ACCEL_ERROR_UNSUPPORTED)",
                          accel_status_string(status));
  }
  if (status != ACCEL_OK) {
    return conform_fail_status(ctx, status,
                               "timing event (event_timing "
                               "claimed)");
  }
  accel_stream_t* stream = NULL;
  accel_event_t* plain = NULL;
  status = conform_event(ctx, ctx->device, ACCEL_EVENT_TIMING, &e[1]);
  if (status == ACCEL_OK) {
    status = conform_event(ctx, ctx->device, ACCEL_EVENT_TIMING, &e[2]);
  }
  if (status == ACCEL_OK) status = conform_event(ctx, ctx->device, 0, &plain);
  if (status == ACCEL_OK) status = conform_stream(ctx, ctx->device, &stream);
  if (status == ACCEL_OK) status = accel_event_record(e[0], stream);
  if (status == ACCEL_OK) status = conform_heavy_work(ctx, stream, 4);
  if (status == ACCEL_OK) status = accel_event_record(e[1], stream);
  if (status == ACCEL_OK) status = conform_heavy_work(ctx, stream, 4);
  if (status == ACCEL_OK) status = accel_event_record(e[2], stream);
  if (status == ACCEL_OK) status = accel_event_record(plain, stream);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  // e2 is still queued behind the work: an error (NOT_READY), not a time
  // read before the event completed (an answer is right only if e2 was
  // done by then).
  float early = 0;
  status = accel_event_elapsed_ms(e[0], e[2], &early);
  bool done = false;
  accel_status_t query = accel_event_query(e[2], &done);
  if (status == ACCEL_OK && query == ACCEL_OK && !done) {
    return conform_report(ctx, CONFORM_FAIL,
                          "elapsed to an event still pending gave ACCEL_OK "
                          "(%.4f ms), expected ACCEL_ERROR_NOT_READY",
                          early);
  }
  // plugin.h asks for NOT_READY; any error is taken (a time is not).
  status = conform_event_wait(ctx, e[2]);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "timing event");
  status = conform_event_wait(ctx, plain);
  if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "event");
  float t01 = -1, t02 = -1, t00 = -1;
  status = accel_event_elapsed_ms(e[0], e[1], &t01);
  if (status == ACCEL_OK) status = accel_event_elapsed_ms(e[0], e[2], &t02);
  if (status == ACCEL_OK) status = accel_event_elapsed_ms(e[0], e[0], &t00);
  if (status != ACCEL_OK) {
    return conform_fail_status(ctx, status, "accel_event_elapsed_ms");
  }
  if (!(t01 >= 0.0f) || !(t02 >= t01) || t00 != 0.0f) {
    return conform_report(ctx, CONFORM_FAIL,
                          "e0->e1 %.4f ms, e0->e2 %.4f ms, e0->e0 %.4f ms: "
                          "need 0 <= e0->e1 <= e0->e2 and e0->e0 == 0",
                          t01, t02, t00);
  }
  // A clock of a millisecond or coarser (elapsed time in whole ms) cannot
  // time a kernel; CUDA's resolves about 0.5 us. With a fine clock both
  // intervals come out whole by chance about once in 10^12.
  if (t01 == floorf(t01) && t02 == floorf(t02)) {
    return conform_report(ctx, CONFORM_FAIL,
                          "e0->e1 %.4f ms and e0->e2 %.4f ms are whole "
                          "milliseconds: elapsed time needs a finer clock",
                          t01, t02);
  }
  // Backwards is the same interval, negative (cudaEventElapsedTime): not
  // its absolute value, not the order the events were passed in swapped.
  float t10 = 0;
  status = accel_event_elapsed_ms(e[1], e[0], &t10);
  if (status != ACCEL_OK) {
    return conform_fail_status(ctx, status, "accel_event_elapsed_ms(e1, e0)");
  }
  if (!(fabsf(t10 + t01) <= 1e-3f * t01 + 1e-6f) || (t01 > 0 && !(t10 < 0))) {
    return conform_report(ctx, CONFORM_FAIL,
                          "e1->e0 %.4f ms, e0->e1 %.4f ms: backwards must be "
                          "the negative of forwards",
                          t10, t01);
  }
  float t = 0;
  status = accel_event_elapsed_ms(e[0], plain, &t);
  if (status != ACCEL_ERROR_INVALID_ARGUMENT) {
    return conform_report(ctx, CONFORM_FAIL,
                          "elapsed to an event without ACCEL_EVENT_TIMING: "
                          "%s, expected ACCEL_ERROR_INVALID_ARGUMENT",
                          accel_status_string(status));
  }
  return conform_report(ctx, CONFORM_PASS, "e0->e1 %.3f ms <= e0->e2 %.3f ms",
                        t01, t02);
}

static const conform_check_t conform_events[] = {
    {"event.never_recorded", conform_event_never_recorded, NULL},
    {"event.record_query", conform_event_record_query, NULL},
    {"event.synchronize", conform_event_synchronize, NULL},
    {"event.rerecord", conform_event_rerecord, NULL},
    {"event.elapsed", conform_event_elapsed, NULL},
};

const conform_check_t* conform_event_checks(size_t* out_count) {
  *out_count = sizeof(conform_events) / sizeof(conform_events[0]);
  return conform_events;
}
