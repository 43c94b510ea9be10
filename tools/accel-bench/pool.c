// SPDX-License-Identifier: MIT
//
// A persistent thread pool for baselines (see bench.h). The CPU plugin
// runs ops and tiled GEMMs on a pool of `compute_units` threads that it
// keeps between calls; a baseline that created threads per call would pay
// tens of microseconds the plugin does not, so this one keeps its threads
// too, and wakes them the same way (a condition variable per run).
#include <pthread.h>
#include <stdlib.h>

#include "bench.h"

struct bench_pool {
  uint32_t width;
  pthread_t* threads;  // width - 1 of them
  uint32_t started;
  pthread_mutex_t mutex;
  pthread_cond_t work_cv;  // a new run, or stop
  pthread_cond_t done_cv;  // the last worker of a run finished
  uint64_t generation;     // incremented per run
  uint32_t pending;        // workers still running the current run
  bool stop;
  bench_pool_fn_t fn;
  void* arg;
};

typedef struct bench_pool_worker {
  bench_pool_t* pool;
  uint32_t index;
} bench_pool_worker_t;

static void* bench_pool_main(void* p) {
  bench_pool_worker_t* w = p;
  bench_pool_t* pool = w->pool;
  uint32_t index = w->index;
  free(w);
  uint64_t seen = 0;
  pthread_mutex_lock(&pool->mutex);
  while (true) {
    while (!pool->stop && pool->generation == seen) {
      pthread_cond_wait(&pool->work_cv, &pool->mutex);
    }
    if (pool->stop) break;
    seen = pool->generation;
    bench_pool_fn_t fn = pool->fn;
    void* arg = pool->arg;
    pthread_mutex_unlock(&pool->mutex);
    fn(arg, index, pool->width);
    pthread_mutex_lock(&pool->mutex);
    if (--pool->pending == 0) pthread_cond_signal(&pool->done_cv);
  }
  pthread_mutex_unlock(&pool->mutex);
  return NULL;
}

bench_pool_t* bench_pool_create(uint32_t width) {
  if (width == 0) width = 1;
  bench_pool_t* pool = calloc(1, sizeof(*pool));
  if (pool == NULL) {
    bench_fail("baseline pool: out of memory");
    return NULL;
  }
  pool->width = width;
  pthread_mutex_init(&pool->mutex, NULL);
  pthread_cond_init(&pool->work_cv, NULL);
  pthread_cond_init(&pool->done_cv, NULL);
  pool->threads = calloc(width, sizeof(*pool->threads));
  if (pool->threads == NULL) {
    bench_pool_destroy(pool);
    bench_fail("baseline pool: out of memory");
    return NULL;
  }
  for (uint32_t i = 1; i < width; ++i) {
    bench_pool_worker_t* w = malloc(sizeof(*w));
    if (w != NULL) *w = (bench_pool_worker_t){pool, i};
    if (w == NULL || pthread_create(&pool->threads[pool->started], NULL,
                                    bench_pool_main, w) != 0) {
      free(w);
      bench_pool_destroy(pool);
      bench_fail("baseline pool: cannot start %u threads", width - 1);
      return NULL;
    }
    pool->started++;
  }
  return pool;
}

void bench_pool_run(bench_pool_t* pool, bench_pool_fn_t fn, void* arg) {
  if (pool->width == 1) {
    fn(arg, 0, 1);
    return;
  }
  pthread_mutex_lock(&pool->mutex);
  pool->fn = fn;
  pool->arg = arg;
  pool->pending = pool->width - 1;
  pool->generation++;
  pthread_cond_broadcast(&pool->work_cv);
  pthread_mutex_unlock(&pool->mutex);
  fn(arg, 0, pool->width);
  pthread_mutex_lock(&pool->mutex);
  while (pool->pending != 0) pthread_cond_wait(&pool->done_cv, &pool->mutex);
  pthread_mutex_unlock(&pool->mutex);
}

uint32_t bench_pool_width(const bench_pool_t* pool) { return pool->width; }

void bench_pool_destroy(bench_pool_t* pool) {
  if (pool == NULL) return;
  pthread_mutex_lock(&pool->mutex);
  pool->stop = true;
  pthread_cond_broadcast(&pool->work_cv);
  pthread_mutex_unlock(&pool->mutex);
  for (uint32_t i = 0; i < pool->started; ++i) {
    pthread_join(pool->threads[i], NULL);
  }
  pthread_cond_destroy(&pool->done_cv);
  pthread_cond_destroy(&pool->work_cv);
  pthread_mutex_destroy(&pool->mutex);
  free(pool->threads);
  free(pool);
}
