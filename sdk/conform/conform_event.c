// SPDX-License-Identifier: MIT
//
// Event checks: a never-recorded event is complete; a recorded one
// completes (bounded poll) and makes earlier work visible; synchronize
// returns (bounded, on a helper thread); re-recording replaces the capture;
// timing events give non-negative, monotonic elapsed times when the device
// claims event_timing (and the negative of one backwards), and are refused
// as unsupported when it does not; a previous record that completes after
// the last one changes nothing; a timing event recorded again takes the
// time of its new record.
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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

// event.elapsed with one event pending and the other completed, in the
// order `pending_first` says: plugin.h asks for ACCEL_ERROR_NOT_READY "if
// either has not completed", so both events are the plugin's to check,
// not just the end. `done` is recorded and waited for first, then
// `pending` behind more work each try, until a try finds `pending` still
// pending after the call (a fast device may finish the work first; the
// tries then prove nothing). An answer is right only if `pending` had
// completed by then.
static conform_result_t conform_event_elapsed_pending(
    conform_ctx_t* ctx, accel_stream_t* stream, accel_event_t* done,
    accel_event_t* pending, bool pending_first) {
  const char* order = pending_first ? "from an event queued behind work to "
                                      "one completed"
                                    : "from a completed event to one queued "
                                      "behind work";
  for (int rounds = 4; rounds <= 256; rounds *= 4) {
    accel_status_t status = accel_event_record(done, stream);
    if (status == ACCEL_OK) status = conform_event_wait(ctx, done);
    if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "event");
    status = conform_heavy_work(ctx, stream, rounds);
    if (status == ACCEL_OK) status = accel_event_record(pending, stream);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "enqueue");
    float ms = 0;
    accel_status_t elapsed =
        pending_first ? accel_event_elapsed_ms(pending, done, &ms)
                      : accel_event_elapsed_ms(done, pending, &ms);
    bool finished = true;
    accel_status_t query = accel_event_query(pending, &finished);
    if (elapsed != ACCEL_OK && elapsed != ACCEL_ERROR_NOT_READY) {
      return conform_report(ctx, CONFORM_FAIL,
                            "elapsed %s gave %s (%s): expected "
                            "ACCEL_ERROR_NOT_READY while it is pending, a "
                            "time once both have completed (plugin.h)",
                            order, accel_status_string(elapsed),
                            accel_last_error());
    }
    status = conform_event_wait(ctx, pending);
    if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "event");
    if (query != ACCEL_OK || finished) continue;  // inconclusive
    if (elapsed == ACCEL_OK) {
      return conform_report(ctx, CONFORM_FAIL,
                            "elapsed %s, still pending, gave ACCEL_OK (%.4f "
                            "ms), expected ACCEL_ERROR_NOT_READY (plugin.h: "
                            "\"if either has not completed\")",
                            order, ms);
    }
    return CONFORM_PASS;
  }
  return CONFORM_PASS;  // the device always finished first: nothing shown
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
  if (conform_event_elapsed_pending(ctx, stream, e[0], e[2], false) !=
          CONFORM_PASS ||
      conform_event_elapsed_pending(ctx, stream, e[0], e[2], true) !=
          CONFORM_PASS) {
    return CONFORM_FAIL;
  }
  return conform_report(ctx, CONFORM_PASS, "e0->e1 %.3f ms <= e0->e2 %.3f ms",
                        t01, t02);
}

// A stream and two timing events on the device under test, tracked.
static accel_status_t conform_event_timing_pair(conform_ctx_t* ctx,
                                                accel_stream_t** stream,
                                                accel_event_t** start,
                                                accel_event_t** end) {
  accel_status_t status = conform_stream(ctx, ctx->device, stream);
  if (status == ACCEL_OK) {
    status = conform_event(ctx, ctx->device, ACCEL_EVENT_TIMING, start);
  }
  if (status == ACCEL_OK) {
    status = conform_event(ctx, ctx->device, ACCEL_EVENT_TIMING, end);
  }
  return status;
}

// A clock fine enough to time short work: rounds of two timing events
// around one 1 MiB fill, each timed on the host from just before the first
// record to the return of the stream's synchronize. Every elapsed time
// must be above zero: a clock whose step is coarser than the fill gives 0
// in most rounds (a clock kept as a float count of nanoseconds since boot
// steps by 2^20 ns after about 4 hours of uptime: the whole-milliseconds
// test of event.elapsed missed it). And at most CONFORM_STAMP_LAG_MS more
// than the host's time, not at most the host's time: a plugin may take a
// timestamp from a command that runs after the event's work (the OpenCL
// plugin's stamps on its timing queue), and on a loaded machine that lag
// reached 0.1 ms in a 0.06 ms round on PoCL.
enum { CONFORM_STAMP_LAG_MS = 10 };
static conform_result_t conform_event_elapsed_resolution(conform_ctx_t* ctx,
                                                         const void* arg) {
  (void)arg;
  if ((ctx->info.caps & ACCEL_DEVICE_CAP_EVENT_TIMING) == 0) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "no event_timing");
  }
  enum { ROUNDS = 8, BYTES = 1 << 20 };
  accel_stream_t* stream = NULL;
  accel_event_t* start = NULL;
  accel_event_t* end = NULL;
  accel_buffer_t* buffer = NULL;
  accel_status_t status = conform_event_timing_pair(ctx, &stream, &start, &end);
  if (status == ACCEL_OK) {
    status = conform_buffer(ctx, ctx->device, BYTES, &buffer);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  float lo = 0, hi = 0;
  for (int round = 0; round < ROUNDS; round++) {
    double t0 = conform_now();
    status = accel_event_record(start, stream);
    if (status == ACCEL_OK) {
      status = accel_stream_fill_buffer(stream, buffer, 0, (uint8_t)round,
                                        BYTES);
    }
    if (status == ACCEL_OK) status = accel_event_record(end, stream);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "enqueue");
    status = conform_stream_sync(ctx, stream);
    if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
    double host_ms = (conform_now() - t0) * 1e3;
    float ms = -1;
    status = accel_event_elapsed_ms(start, end, &ms);
    if (status != ACCEL_OK) {
      return conform_fail_status(ctx, status, "accel_event_elapsed_ms");
    }
    if (!(ms > 0.0f) || ms > host_ms + CONFORM_STAMP_LAG_MS) {
      return conform_report(ctx, CONFORM_FAIL,
                            "round %d of %d: %.6f ms between two timing "
                            "events around a %d-byte fill, which took %.6f "
                            "ms on the host from the first record to the "
                            "end of the synchronize: elapsed time must be "
                            "above 0 and at most %d ms more than that (a "
                            "clock too coarse to time short work?)",
                            round + 1, ROUNDS, ms, BYTES, host_ms,
                            CONFORM_STAMP_LAG_MS);
    }
    if (round == 0 || ms < lo) lo = ms;
    if (round == 0 || ms > hi) hi = ms;
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%d fills of %d bytes timed at %.4f-%.4f ms",
                        ROUNDS, BYTES, lo, hi);
}

// Waits `ms` milliseconds of host time.
static void conform_event_nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

// An event re-recorded on an idle stream while its previous record is
// still queued behind work on a busy one. plugin.h: re-recording replaces
// the previous capture, and query and synchronize follow the last record,
// so the previous record completing later changes nothing: the event stays
// complete, and its time (a timing event) stays that of the last record.
// The previous record must still be pending when the last one has
// completed; rounds of more work until it is (a device that finishes the
// busy stream first proves nothing, and passes).
static conform_result_t conform_event_rerecord_late(conform_ctx_t* ctx,
                                                    const void* arg) {
  (void)arg;
  bool timing = (ctx->info.caps & ACCEL_DEVICE_CAP_EVENT_TIMING) != 0;
  accel_event_flags_t flags = timing ? ACCEL_EVENT_TIMING : 0;
  accel_stream_t* busy = NULL;
  accel_stream_t* idle = NULL;
  accel_event_t* e = NULL;
  accel_event_t* start = NULL;
  accel_status_t status = conform_stream(ctx, ctx->device, &busy);
  if (status == ACCEL_OK) status = conform_stream(ctx, ctx->device, &idle);
  if (status == ACCEL_OK) status = conform_event(ctx, ctx->device, flags, &e);
  if (status == ACCEL_OK && timing) {
    status = conform_event(ctx, ctx->device, flags, &start);
  }
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  for (int rounds = 8; rounds <= 64; rounds *= 2) {
    status = conform_heavy_work(ctx, busy, rounds);
    if (status == ACCEL_OK) status = accel_event_record(e, busy);
    if (status == ACCEL_OK && timing) status = accel_event_record(start, idle);
    if (status == ACCEL_OK) status = accel_event_record(e, idle);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "record");
    status = conform_event_wait(ctx, e);
    if (status != ACCEL_OK) {
      return conform_fail_wait(ctx, status,
                               "event re-recorded on an idle stream while "
                               "its previous record is queued on a busy one");
    }
    float before = 0.0f;
    if (timing) {
      status = accel_event_elapsed_ms(start, e, &before);
      if (status != ACCEL_OK) {
        return conform_fail_status(ctx, status, "elapsed time");
      }
    }
    bool busy_done = false;
    status = accel_stream_query(busy, &busy_done);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "query");
    status = conform_stream_sync(ctx, busy);
    if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "busy stream");
    if (busy_done) continue;  // the previous record was not late: again
    // The previous record has completed now, after the last one.
    bool done = false;
    status = accel_event_query(e, &done);
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "query");
    if (!done) {
      return conform_report(ctx, CONFORM_FAIL,
                            "an event was complete, then not complete once "
                            "its previous record (on a busy stream) "
                            "completed: a record that completes late must "
                            "not replace the newer one");
    }
    status = conform_event_sync(ctx, e);
    if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "synchronize");
    if (timing) {
      float after = 0.0f;
      status = accel_event_elapsed_ms(start, e, &after);
      if (status != ACCEL_OK) {
        return conform_fail_status(ctx, status, "elapsed time");
      }
      if (after != before) {
        return conform_report(ctx, CONFORM_FAIL,
                              "elapsed time to a completed event changed "
                              "from %.4f to %.4f ms when its previous record "
                              "completed later: the time is that of the last "
                              "record",
                              before, after);
      }
    }
    return conform_report(ctx, CONFORM_PASS,
                          "a previous record completing late changes "
                          "nothing%s",
                          timing ? ", elapsed time included" : "");
  }
  return conform_report(ctx, CONFORM_PASS,
                        "the busy stream always finished first: nothing to "
                        "see");
}

// A timing event re-recorded later gets the time of its new record:
// start and end recorded back to back, then end again after a nap, then
// start again after another (cudaEventRecord stamps each record).
static conform_result_t conform_event_elapsed_rerecord(conform_ctx_t* ctx,
                                                       const void* arg) {
  (void)arg;
  if ((ctx->info.caps & ACCEL_DEVICE_CAP_EVENT_TIMING) == 0) {
    return conform_report(ctx, CONFORM_UNSUPPORTED, "no event_timing");
  }
  enum { NAP_MS = 30 };
  accel_stream_t* stream = NULL;
  accel_event_t* start = NULL;
  accel_event_t* end = NULL;
  accel_status_t status = conform_event_timing_pair(ctx, &stream, &start, &end);
  if (status != ACCEL_OK) return conform_fail_status(ctx, status, "setup");
  // 0: both; 1: `end` again after a nap; 2: `start` again after another.
  accel_event_t* const again[3] = {NULL, end, start};
  float ms[3] = {0.0f, 0.0f, 0.0f};
  for (int i = 0; i < 3; i++) {
    if (i == 0) {
      status = accel_event_record(start, stream);
      if (status == ACCEL_OK) status = accel_event_record(end, stream);
    } else {
      conform_event_nap_ms(NAP_MS);
      status = accel_event_record(again[i], stream);
    }
    if (status != ACCEL_OK) return conform_fail_status(ctx, status, "record");
    status = conform_stream_sync(ctx, stream);
    if (status != ACCEL_OK) return conform_fail_wait(ctx, status, "stream");
    status = accel_event_elapsed_ms(start, end, &ms[i]);
    if (status != ACCEL_OK) {
      return conform_fail_status(ctx, status, "elapsed time");
    }
  }
  // Half a nap of slack each way, for any clock that keeps time.
  if (!(ms[1] >= ms[0] + NAP_MS / 2) || !(ms[2] <= -(float)NAP_MS / 2)) {
    return conform_report(ctx, CONFORM_FAIL,
                          "start->end %.4f ms; %.4f ms after end was "
                          "recorded again %d ms later (expected %d more); "
                          "%.4f ms after start was recorded again %d ms "
                          "later still (expected below -%d): a record "
                          "again must take a new time",
                          ms[0], ms[1], NAP_MS, NAP_MS / 2, ms[2], NAP_MS,
                          NAP_MS / 2);
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%.3f ms, %.3f ms after end again, %.3f ms after "
                        "start again",
                        ms[0], ms[1], ms[2]);
}

static const conform_check_t conform_events[] = {
    {"event.never_recorded", conform_event_never_recorded, NULL},
    {"event.record_query", conform_event_record_query, NULL},
    {"event.synchronize", conform_event_synchronize, NULL},
    {"event.rerecord", conform_event_rerecord, NULL},
    {"event.elapsed", conform_event_elapsed, NULL},
    {"event.elapsed_resolution", conform_event_elapsed_resolution, NULL},
    {"event.rerecord_late", conform_event_rerecord_late, NULL},
    {"event.elapsed_rerecord", conform_event_elapsed_rerecord, NULL},
};

const conform_check_t* conform_event_checks(size_t* out_count) {
  *out_count = sizeof(conform_events) / sizeof(conform_events[0]);
  return conform_events;
}
