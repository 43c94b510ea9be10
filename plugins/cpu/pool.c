// SPDX-License-Identifier: MIT
//
// The thread pool of the CPU plugin: one per plugin, shared by every
// stream of every device, created at the first op that needs it (never at
// load, so accel-info and programs that only query devices start no
// threads).
//
// Width: the CPUs this process may run on (its affinity mask), or
// ACCEL_CPU_THREADS. The pool starts width - 1 helper threads; the thread
// that asks for a parallel loop (a stream worker, or the caller of a
// synchronous copy) runs chunks too, so a loop never waits for an idle
// core it could have used, and a loop started from inside the pool cannot
// deadlock: its caller alone can finish it.
//
// A loop is a job: `count` chunks cut into one contiguous range per
// thread of the pool, each handed out in order by an atomic cursor. A
// participant runs its own range first (0 the caller, helper h always
// range h), then takes what is left of the others: the same thread
// touches the same part of a buffer in op after op, so on a CPU whose
// cores do not share one last-level cache the data stays in the cache
// that last held it (one shared counter interleaved the chunks: 64 MiB
// ops ran at 65-83% of a loop split in halves on a 2-vCPU Zen 5 guest),
// and a late or busy helper still leaves no chunk waiting for it. Jobs
// from several streams queue FIFO within a stream priority, the most
// urgent first (schedule.c); helpers join the job at the head, each with
// its own worker index (0 is the caller). A helper that
// joins counts itself in `active`; the caller, once every chunk is
// claimed, takes the job out of the queue and waits for `active` to drop
// to zero, so no helper touches the job (which lives on the caller's
// stack) after the caller returns.
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include "cpu.h"

// Ranges a job is cut into at most: pools wider than this share ranges
// (thread w starts on range w % ACCEL_CPU_POOL_RANGES).
#define ACCEL_CPU_POOL_RANGES 64u

typedef struct accel_cpu_job accel_cpu_job_t;

struct accel_cpu_job {
  accel_cpu_job_t* next;  // queue link, guarded by the pool mutex
  accel_cpu_pool_fn_t fn;
  void* ctx;
  uint64_t count;
  uint32_t ranges;  // contiguous ranges of chunks, one per thread (capped)
  // Next chunk to hand out of each range (runs past the range's end once
  // it is exhausted).
  _Atomic uint64_t next_index[ACCEL_CPU_POOL_RANGES];
  uint32_t joined;              // participants so far (mutex)
  uint32_t active;              // helpers running chunks (mutex)
  bool queued;                  // in the pool's queue (mutex)
  int32_t priority;             // of the stream whose work it is
};

struct accel_cpu_pool {
  pthread_mutex_t mutex;
  pthread_cond_t work_cv;  // a job was queued, or stopping
  pthread_cond_t idle_cv;  // a helper left a job
  accel_cpu_job_t* head;   // guarded by `mutex`, as are the next three
  accel_cpu_job_t* tail;
  bool stopping;
  uint32_t sleeping;  // helpers blocked in work_cv (not spinning)
  // Bumped (under `mutex`) at every queued job and at stop, so that
  // spinning helpers see new work without the mutex.
  _Atomic uint64_t generation;
  const _Atomic uint32_t* quiet;  // the plugin's engine_threads
  uint32_t width;    // helpers + 1 (the caller)
  uint32_t helpers;  // threads started
  _Atomic uint32_t next_helper;  // worker indices taken by started helpers
  size_t stream_bytes;  // copies from this size use non-temporal stores
  pthread_t threads[];
};

// First chunk of range `r` of `job` (r == job->ranges: the end).
static uint64_t accel_cpu_job_range(const accel_cpu_job_t* job, uint32_t r) {
  uint64_t share = job->count / job->ranges, extra = job->count % job->ranges;
  return share * r + (r < extra ? r : extra);  // never overflows
}

// Claims and runs chunks of `job` until none is left: the worker's own
// range first, then the others in turn.
static void accel_cpu_job_work(accel_cpu_job_t* job, uint32_t worker) {
  uint32_t home = worker % job->ranges;
  for (uint32_t k = 0; k < job->ranges; k++) {
    uint32_t r = home + k < job->ranges ? home + k : home + k - job->ranges;
    uint64_t end = accel_cpu_job_range(job, r + 1);
    for (;;) {
      uint64_t i = atomic_fetch_add(&job->next_index[r], 1);
      if (i >= end) break;
      job->fn(job->ctx, i, worker);
    }
  }
}

// Unlinks `job` from the queue. Mutex held; `job` is queued.
static void accel_cpu_pool_dequeue(accel_cpu_pool_t* pool,
                                   accel_cpu_job_t* job) {
  accel_cpu_job_t* prev = NULL;
  for (accel_cpu_job_t* j = pool->head; j != NULL; prev = j, j = j->next) {
    if (j != job) continue;
    if (prev == NULL) {
      pool->head = j->next;
    } else {
      prev->next = j->next;
    }
    if (pool->tail == j) pool->tail = prev;
    break;
  }
  job->next = NULL;
  job->queued = false;
}

bool accel_cpu_spin_while(const _Atomic uint64_t* word, uint64_t value,
                          uint64_t budget_ns, const _Atomic uint32_t* quiet) {
  uint64_t start = accel_cpu_now_ns();
  for (;;) {
    if (!accel_cpu_may_spin(quiet)) {
      return atomic_load_explicit(word, memory_order_acquire) != value;
    }
    for (int i = 0; i < 64; i++) {
      if (atomic_load_explicit(word, memory_order_acquire) != value) {
        return true;
      }
#if defined(__x86_64__)
      _mm_pause();
#endif
    }
    if (accel_cpu_now_ns() - start >= budget_ns) return false;
    // Let a runnable thread (the one doing the work we wait for, on a
    // machine with more threads than CPUs) have the CPU.
    sched_yield();
  }
}

// Waits for a job or stop (mutex held): spins first for
// ACCEL_CPU_SPIN_NS with the mutex released, then sleeps on work_cv.
static void accel_cpu_pool_idle(accel_cpu_pool_t* pool) {
  while (pool->head == NULL && !pool->stopping) {
    uint64_t gen = atomic_load_explicit(&pool->generation,
                                        memory_order_relaxed);
    pthread_mutex_unlock(&pool->mutex);
    bool woken = accel_cpu_spin_while(&pool->generation, gen,
                                      ACCEL_CPU_SPIN_NS, pool->quiet);
    pthread_mutex_lock(&pool->mutex);
    if (woken || pool->head != NULL || pool->stopping) continue;
    pool->sleeping++;
    pthread_cond_wait(&pool->work_cv, &pool->mutex);
    pool->sleeping--;
  }
}

static void* accel_cpu_pool_helper(void* arg) {
  accel_cpu_pool_t* pool = arg;
  accel_cpu_thread_name("accel-pool");
  // 1 .. helpers: a helper that started has its index whatever the others
  // did, and keeps it (its range) for every job.
  uint32_t worker = atomic_fetch_add(&pool->next_helper, 1) + 1;
  pthread_mutex_lock(&pool->mutex);
  for (;;) {
    accel_cpu_pool_idle(pool);
    accel_cpu_job_t* job = pool->head;
    if (job == NULL) break;  // stopping, and no job left to help with
    job->joined++;
    job->active++;
    // Nobody else may join once every thread has: worker ids stay unique.
    if (job->joined >= pool->width) accel_cpu_pool_dequeue(pool, job);
    pthread_mutex_unlock(&pool->mutex);
    accel_cpu_job_work(job, worker);
    pthread_mutex_lock(&pool->mutex);
    // Every chunk is claimed now: nothing left for late helpers.
    if (job->queued) accel_cpu_pool_dequeue(pool, job);
    if (--job->active == 0) pthread_cond_broadcast(&pool->idle_cv);
  }
  pthread_mutex_unlock(&pool->mutex);
  return NULL;
}

void accel_cpu_pool_run(accel_cpu_pool_t* pool, uint64_t count,
                        accel_cpu_pool_fn_t fn, void* ctx) {
  if (count == 0) return;
  if (pool == NULL || pool->helpers == 0 || count == 1) {
    for (uint64_t i = 0; i < count; i++) fn(ctx, i, 0);
    return;
  }
  accel_cpu_omp_quiet();  // no OpenMP threads spinning beside the helpers
  accel_cpu_job_t job = {.fn = fn,
                         .ctx = ctx,
                         .count = count,
                         .ranges = pool->width < ACCEL_CPU_POOL_RANGES
                                       ? pool->width
                                       : ACCEL_CPU_POOL_RANGES,
                         .joined = 1,
                         .priority = accel_cpu_thread_priority};
  for (uint32_t r = 0; r < job.ranges; r++) {
    atomic_init(&job.next_index[r], accel_cpu_job_range(&job, r));
  }
  pthread_mutex_lock(&pool->mutex);
  job.queued = true;
  // Behind every job at least as urgent (stream priorities, schedule.c):
  // helpers join the head, so the most urgent stream's job gets them
  // first, the oldest among equals.
  accel_cpu_job_t* prev = NULL;
  accel_cpu_job_t* at = pool->head;
  while (at != NULL && at->priority <= job.priority) {
    prev = at;
    at = at->next;
  }
  job.next = at;
  if (prev != NULL) {
    prev->next = &job;
  } else {
    pool->head = &job;
  }
  if (at == NULL) pool->tail = &job;
  atomic_fetch_add_explicit(&pool->generation, 1, memory_order_release);
  // Spinning helpers see the generation; wake only as many sleeping ones
  // as there are chunks beyond the caller's.
  if (count - 1 >= pool->sleeping) {
    if (pool->sleeping != 0) pthread_cond_broadcast(&pool->work_cv);
  } else {
    for (uint64_t i = 0; i + 1 < count; i++) {
      pthread_cond_signal(&pool->work_cv);
    }
  }
  pthread_mutex_unlock(&pool->mutex);

  accel_cpu_job_work(&job, 0);

  pthread_mutex_lock(&pool->mutex);
  if (job.queued) accel_cpu_pool_dequeue(pool, &job);
  while (job.active != 0) pthread_cond_wait(&pool->idle_cv, &pool->mutex);
  pthread_mutex_unlock(&pool->mutex);
}

uint32_t accel_cpu_pool_width(const accel_cpu_pool_t* pool) {
  return pool == NULL ? 1u : pool->width;
}

// Reads ACCEL_CPU_THREADS: true with `*out_width` set (0 when unset or
// empty), false when malformed.
static bool accel_cpu_pool_parse(const accel_host_t* host, uint32_t* out_width,
                                 const char** out_text) {
  const char* text = host->getenv(host, "ACCEL_CPU_THREADS");
  *out_text = text;
  *out_width = 0;
  if (text == NULL || text[0] == '\0') return true;
  return accel_cpu_parse_count(text, 4, ACCEL_CPU_THREADS_MAX, out_width);
}

uint32_t accel_cpu_pool_configured_width(accel_cpu_plugin_t* plugin) {
  accel_cpu_pool_t* pool = atomic_load(&plugin->pool);
  if (pool != NULL) return pool->width;
  uint32_t width = 0;
  const char* text = NULL;
  if (!accel_cpu_pool_parse(plugin->host, &width, &text) || width == 0) {
    width = accel_cpu_sysinfo_usable_cpus();
  }
  return width;
}

// Size from which a split copy uses non-temporal stores: where glibc's
// memcpy switches to them for one call, 3/4 of the shared (last-level)
// cache as sysconf reports it (glibc 2.36's __x86_shared_non_temporal_
// threshold, from the same CPUID leaves: 192 MiB on the development VM).
// Split into pieces below that size, each memcpy would use ordinary
// stores, which read every destination line first and evict the cache,
// and the whole copy would lose against one memcpy. Without cache sizes
// (not x86-64, or no sysconf answer): never. ACCEL_CPU_STREAM_BYTES
// (`configured`, 0 when unset) sets it instead, as glibc's
// x86_non_temporal_threshold tunable does for memcpy, so tests reach this
// path on any machine.
static size_t accel_cpu_stream_threshold(uint64_t configured) {
  if (configured != 0) {
    return configured < SIZE_MAX ? (size_t)configured : SIZE_MAX;
  }
#if defined(__x86_64__) && defined(_SC_LEVEL3_CACHE_SIZE)
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) return (size_t)l3 / 4 * 3;
#endif
  return SIZE_MAX;
}

// Creates a pool of `width` threads in all (helpers plus the caller) whose
// split copies stream from `stream_bytes` and whose idle helpers spin only
// while `*quiet` is 0.
static accel_status_t accel_cpu_pool_create(const accel_host_t* host,
                                            uint32_t width, size_t stream_bytes,
                                            const _Atomic uint32_t* quiet,
                                            accel_cpu_pool_t** out_pool) {
  accel_cpu_pool_t* pool =
      calloc(1, sizeof(*pool) + (size_t)(width - 1) * sizeof(pthread_t));
  if (pool == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "cpu: thread pool");
  }
  if (pthread_mutex_init(&pool->mutex, NULL) != 0 ||
      pthread_cond_init(&pool->work_cv, NULL) != 0 ||
      pthread_cond_init(&pool->idle_cv, NULL) != 0) {
    // Linux pthread init calls cannot fail with default attributes.
    free(pool);
    return host->fail(host, ACCEL_ERROR_INTERNAL, "cpu: thread pool init");
  }
  pool->width = width;
  pool->quiet = quiet;
  for (uint32_t i = 0; i + 1 < width; i++) {
    int rc =
        pthread_create(&pool->threads[i], NULL, accel_cpu_pool_helper, pool);
    if (rc != 0) {
      // Run narrower rather than fail: every op still works on fewer
      // threads, down to the caller alone.
      host->log(host, ACCEL_LOG_WARN,
                "started %u of %u pool threads (pthread error %d)", i,
                width - 1, rc);
      break;
    }
    pool->helpers++;
  }
  pool->width = pool->helpers + 1;
  pool->stream_bytes = stream_bytes;
  *out_pool = pool;
  return ACCEL_OK;
}

accel_status_t accel_cpu_pool_get(accel_cpu_plugin_t* plugin,
                                  accel_cpu_pool_t** out_pool) {
  accel_cpu_pool_t* pool = atomic_load(&plugin->pool);
  if (pool != NULL) {
    *out_pool = pool;
    return ACCEL_OK;
  }
  const accel_host_t* host = plugin->host;
  accel_status_t status = ACCEL_OK;
  *out_pool = NULL;
  pthread_mutex_lock(&plugin->mutex);
  pool = atomic_load(&plugin->pool);
  if (pool == NULL) {
    uint32_t width = 0;
    const char* text = NULL;
    if (!accel_cpu_pool_parse(host, &width, &text)) {
      status = host->fail(host, ACCEL_ERROR_INVALID_ARGUMENT,
                          "ACCEL_CPU_THREADS='%s' is not a number between 1 "
                          "and %u",
                          text, ACCEL_CPU_THREADS_MAX);
    } else {
      if (width == 0) width = accel_cpu_sysinfo_usable_cpus();
      status = accel_cpu_pool_create(
          host, width, accel_cpu_stream_threshold(plugin->stream_bytes),
          &plugin->engine_threads, &pool);
      if (status == ACCEL_OK) {
        host->log(host, ACCEL_LOG_DEBUG, "thread pool of %u threads",
                  pool->width);
        atomic_store(&plugin->pool, pool);
      }
    }
  }
  pthread_mutex_unlock(&plugin->mutex);
  *out_pool = pool;
  return status;
}

void accel_cpu_pool_destroy(accel_cpu_pool_t* pool) {
  if (pool == NULL) return;
  pthread_mutex_lock(&pool->mutex);
  pool->stopping = true;
  atomic_fetch_add(&pool->generation, 1);
  pthread_cond_broadcast(&pool->work_cv);
  pthread_mutex_unlock(&pool->mutex);
  for (uint32_t i = 0; i < pool->helpers; i++) {
    pthread_join(pool->threads[i], NULL);
  }
  pthread_cond_destroy(&pool->idle_cv);
  pthread_cond_destroy(&pool->work_cv);
  pthread_mutex_destroy(&pool->mutex);
  free(pool);
}

// ---------------------------------------------------------------------------
// Parallel copies and fills (the ABI 1.0 copy and memset entries use them).
// ---------------------------------------------------------------------------

typedef struct accel_cpu_bytes_job {
  unsigned char* dst;
  const unsigned char* src;  // NULL for a fill
  size_t size;
  size_t chunk;
  uint8_t value;
  bool stream;  // non-temporal stores (see accel_cpu_stream_threshold)
} accel_cpu_bytes_job_t;

// memcpy with non-temporal stores for the 64-byte-aligned body of `dst`.
static void accel_cpu_copy_nt(unsigned char* dst, const unsigned char* src,
                              size_t size) {
#if defined(__x86_64__)
  size_t head = (64 - ((uintptr_t)dst & 63)) & 63;
  if (head > size) head = size;
  memcpy(dst, src, head);
  dst += head, src += head, size -= head;
  size_t body = size & ~(size_t)63;
  for (size_t i = 0; i < body; i += 64) {
    __m128i a = _mm_loadu_si128((const __m128i*)(src + i));
    __m128i b = _mm_loadu_si128((const __m128i*)(src + i + 16));
    __m128i c = _mm_loadu_si128((const __m128i*)(src + i + 32));
    __m128i d = _mm_loadu_si128((const __m128i*)(src + i + 48));
    _mm_stream_si128((__m128i*)(dst + i), a);
    _mm_stream_si128((__m128i*)(dst + i + 16), b);
    _mm_stream_si128((__m128i*)(dst + i + 32), c);
    _mm_stream_si128((__m128i*)(dst + i + 48), d);
  }
  // Order the streaming stores before whatever signals completion.
  _mm_sfence();
  memcpy(dst + body, src + body, size - body);
#else
  memcpy(dst, src, size);
#endif
}

static void accel_cpu_bytes_chunk(void* ctx, uint64_t index, uint32_t worker) {
  (void)worker;
  const accel_cpu_bytes_job_t* job = ctx;
  size_t begin = (size_t)index * job->chunk;
  size_t n = job->size - begin < job->chunk ? job->size - begin : job->chunk;
  if (job->src != NULL && job->stream) {
    accel_cpu_copy_nt(job->dst + begin, job->src + begin, n);
  } else if (job->src != NULL) {
    memcpy(job->dst + begin, job->src + begin, n);
  } else {
    memset(job->dst + begin, job->value, n);
  }
}

// Splits a copy or fill of at least ACCEL_CPU_PARALLEL_BYTES across the
// pool; false when the pool cannot be had (a bad ACCEL_CPU_THREADS is
// reported by the ops, not by copies, which worked before the pool
// existed) or has one thread, and the caller runs it alone.
static bool accel_cpu_bytes_parallel(accel_cpu_plugin_t* plugin,
                                     accel_cpu_bytes_job_t* job) {
  accel_cpu_pool_t* pool = atomic_load(&plugin->pool);
  if (pool == NULL && accel_cpu_pool_get(plugin, &pool) != ACCEL_OK) {
    return false;
  }
  if (pool->width == 1) return false;
  // About four chunks per thread for balance, whole cache lines each.
  size_t chunk = job->size / ((size_t)pool->width * 4);
  chunk = (chunk + 4095) & ~(size_t)4095;
  if (chunk < ((size_t)256 << 10)) chunk = (size_t)256 << 10;
  job->chunk = chunk;
  job->stream = job->size >= pool->stream_bytes;
  accel_cpu_pool_run(pool, (job->size + chunk - 1) / chunk,
                     accel_cpu_bytes_chunk, job);
  return true;
}

void accel_cpu_copy_large(accel_cpu_plugin_t* plugin, void* dst,
                          const void* src, size_t size) {
  accel_cpu_bytes_job_t job = {.dst = dst, .src = src, .size = size};
  if (!accel_cpu_bytes_parallel(plugin, &job)) memcpy(dst, src, size);
}

void accel_cpu_fill_large(accel_cpu_plugin_t* plugin, void* dst,
                          uint8_t value, size_t size) {
  accel_cpu_bytes_job_t job = {.dst = dst, .size = size, .value = value};
  if (!accel_cpu_bytes_parallel(plugin, &job)) memset(dst, value, size);
}
