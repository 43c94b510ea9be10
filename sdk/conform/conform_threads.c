// SPDX-License-Identifier: MIT
//
// Several host threads submitting to one device at once, each on its own
// stream: copies, built-in ops (a fill, and an I32 add, which is a kernel
// on OpenCL, CUDA and ROCm) and launches of ONE kernel object with
// different arguments, many rounds, every result verified. A plugin that
// keeps per-kernel argument state (OpenCL's clSetKernelArg, for its own
// built-in kernels too) without a lock, or shares any other state between
// streams unguarded, mixes the threads' work up or crashes here.
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "conform.h"

// Launches per round: back to back, so the threads' launches of the one
// kernel object really overlap.
enum {
  CONFORM_THREADS = 4,
  CONFORM_ROUNDS = 60,
  CONFORM_LAUNCHES = 25,
  CONFORM_ELEMS = 4096
};

typedef struct conform_thread {
  conform_ctx_t* ctx;
  int index;
  accel_stream_t* stream;
  accel_buffer_t *a, *b, *c, *d;
  accel_kernel_t* kernel;  // shared by every thread, or NULL
  bool ops;                // op_fill supported
  bool adds;               // op_add on I32 supported: d = a + c
  int32_t in[CONFORM_ELEMS], out_b[CONFORM_ELEMS], out_c[CONFORM_ELEMS];
  int32_t out_d[CONFORM_ELEMS];
  char error[256];
} conform_thread_t;

// One round: write `in`, copy it a->b, add one CONFORM_LAUNCHES times to
// the first n elements of b with the shared kernel, fill c with a
// per-round value, add a and c into d, read b, c and d back, synchronise,
// compare.
static bool conform_thread_round(conform_thread_t* t, int round) {
  const size_t bytes = sizeof(t->in);
  uint32_t n = (uint32_t)(CONFORM_ELEMS - 97 * t->index - round);
  int32_t fill = t->index * 100000 + round;
  for (int i = 0; i < CONFORM_ELEMS; i++) {
    t->in[i] = t->index * 1000000 + round * 1000 + i;
  }
  accel_status_t s = accel_stream_write_buffer(t->stream, t->a, 0, t->in, bytes);
  if (s == ACCEL_OK) s = accel_stream_copy_buffer(t->stream, t->b, 0, t->a, 0, bytes);
  if (s == ACCEL_OK && t->kernel != NULL) {
    conform_add_one_t launch;
    conform_add_one_init(t->ctx, &launch, t->b, 0, n, n);
    for (int l = 0; l < CONFORM_LAUNCHES && s == ACCEL_OK; l++) {
      s = conform_add_one_launch(&launch, t->kernel, t->stream);
    }
  }
  if (s == ACCEL_OK && t->ops) {
    s = accel_op_fill(t->stream, t->c, 0, ACCEL_DTYPE_I32, CONFORM_ELEMS, fill);
  }
  if (s == ACCEL_OK && t->adds) {
    s = accel_op_add(t->stream, t->d, 0, t->a, 0, t->c, 0, ACCEL_DTYPE_I32,
                     CONFORM_ELEMS);
  }
  if (s == ACCEL_OK) s = accel_stream_read_buffer(t->stream, t->b, 0, t->out_b, bytes);
  if (s == ACCEL_OK && t->ops) {
    s = accel_stream_read_buffer(t->stream, t->c, 0, t->out_c, bytes);
  }
  if (s == ACCEL_OK && t->adds) {
    s = accel_stream_read_buffer(t->stream, t->d, 0, t->out_d, bytes);
  }
  if (s == ACCEL_OK) s = accel_stream_synchronize(t->stream);
  if (s != ACCEL_OK) {
    snprintf(t->error, sizeof(t->error), "thread %d round %d: %s: %s",
             t->index, round, accel_status_string(s), accel_last_error());
    return false;
  }
  for (int i = 0; i < CONFORM_ELEMS; i++) {
    int32_t want =
        t->in[i] + (t->kernel != NULL && (uint32_t)i < n ? CONFORM_LAUNCHES : 0);
    if (t->out_b[i] != want) {
      snprintf(t->error, sizeof(t->error),
               "thread %d round %d: copy%s element %d is %d, expected %d",
               t->index, round, t->kernel ? "+launch" : "", i, t->out_b[i],
               want);
      return false;
    }
    if (t->ops && t->out_c[i] != fill) {
      snprintf(t->error, sizeof(t->error),
               "thread %d round %d: op_fill element %d is %d, expected %d",
               t->index, round, i, t->out_c[i], fill);
      return false;
    }
    if (t->adds && t->out_d[i] != t->in[i] + fill) {
      snprintf(t->error, sizeof(t->error),
               "thread %d round %d: op_add element %d is %d, expected %d "
               "(another thread's arguments?)",
               t->index, round, i, t->out_d[i], t->in[i] + fill);
      return false;
    }
  }
  return true;
}

// Whether `status` of a probe says the op is there; UNSUPPORTED clears
// `*have` and counts as success.
static accel_status_t conform_threads_probe(accel_status_t status,
                                            bool* have) {
  *have = status != ACCEL_ERROR_UNSUPPORTED;
  return *have ? status : ACCEL_OK;
}

static void* conform_thread_main(void* arg) {
  conform_thread_t* t = arg;
  for (int round = 0; round < CONFORM_ROUNDS; round++) {
    if (!conform_thread_round(t, round)) break;
  }
  return NULL;
}

static conform_result_t conform_threads_submit(conform_ctx_t* ctx,
                                               const void* arg) {
  (void)arg;
  char path[1024] = "";
  accel_kernel_t* kernel = NULL;
  if ((ctx->info.caps & ACCEL_DEVICE_CAP_KERNELS) != 0 &&
      conform_kernel_get(ctx, CONFORM_ADD_ONE, &kernel, path, sizeof(path)) !=
          ACCEL_OK) {
    kernel = NULL;
  }
  conform_thread_t* threads =
      conform_alloc(ctx, sizeof(conform_thread_t) * CONFORM_THREADS);
  if (threads == NULL) return conform_report(ctx, CONFORM_FAIL, "host memory");
  const size_t bytes = sizeof(threads[0].in);
  bool ops = true, adds = true;
  for (int i = 0; i < CONFORM_THREADS; i++) {
    conform_thread_t* t = &threads[i];
    t->ctx = ctx;
    t->index = i;
    t->kernel = kernel;
    accel_status_t s = conform_stream(ctx, ctx->device, &t->stream);
    if (s == ACCEL_OK) s = conform_buffer(ctx, ctx->device, bytes, &t->a);
    if (s == ACCEL_OK) s = conform_buffer(ctx, ctx->device, bytes, &t->b);
    if (s == ACCEL_OK) s = conform_buffer(ctx, ctx->device, bytes, &t->c);
    if (s == ACCEL_OK) s = conform_buffer(ctx, ctx->device, bytes, &t->d);
    if (s == ACCEL_OK && i == 0) {
      s = conform_threads_probe(
          accel_op_fill(t->stream, t->c, 0, ACCEL_DTYPE_I32, 1, 0.0), &ops);
      if (s == ACCEL_OK) {
        s = conform_threads_probe(accel_op_add(t->stream, t->d, 0, t->a, 0,
                                               t->c, 0, ACCEL_DTYPE_I32, 1),
                                  &adds);
      }
      if (s == ACCEL_OK) s = accel_stream_synchronize(t->stream);
    }
    if (s != ACCEL_OK) return conform_fail_status(ctx, s, "setup");
  }
  pthread_t ids[CONFORM_THREADS];
  int started = 0;
  for (int i = 0; i < CONFORM_THREADS; i++) {
    threads[i].ops = ops;
    threads[i].adds = ops && adds;
    if (pthread_create(&ids[i], NULL, conform_thread_main, &threads[i]) != 0) {
      break;
    }
    started++;
  }
  for (int i = 0; i < started; i++) pthread_join(ids[i], NULL);
  if (started != CONFORM_THREADS) {
    return conform_report(ctx, CONFORM_FAIL, "could not start the threads");
  }
  for (int i = 0; i < CONFORM_THREADS; i++) {
    if (threads[i].error[0] != '\0') {
      return conform_report(ctx, CONFORM_FAIL, "%s", threads[i].error);
    }
  }
  return conform_report(ctx, CONFORM_PASS,
                        "%d threads x %d rounds: copies%s%s%s",
                        CONFORM_THREADS, CONFORM_ROUNDS, ops ? ", op_fill" : "",
                        ops && adds ? ", op_add" : "",
                        kernel ? ", launches of one kernel" : "");
}

static const conform_check_t conform_threads[] = {
    {"threads.submit", conform_threads_submit, NULL},
};

const conform_check_t* conform_threads_checks(size_t* out_count) {
  *out_count = sizeof(conform_threads) / sizeof(conform_threads[0]);
  return conform_threads;
}
