// SPDX-License-Identifier: MIT
//
// op_rng (plugin.h, ABI 1.3): counter-based random fills. The element code
// is <accel/philox.h>, the same code the OpenCL, CUDA and ROCm kernels
// run, so every backend writes the same bytes. The fill is split into
// chunks of whole Philox blocks for the thread pool. Built with
// -ffp-contract=off (CMakeLists.txt) so no compiler fuses the header's
// float operations.
//
// Fills run ACCEL_CPU_RNG_LANES blocks side by side (accel_cpu_rng_batch):
// the header's rounds, its uniform and normal transforms (logarithm,
// square root and trigonometry by polynomials and selects, no branches
// the compiler cannot turn into selects) and its f16/bf16 conversions, on
// arrays the compiler vectorises, built for AVX-512, AVX2 and the
// baseline and picked by the CPU at first use. Vector integer and float
// operations round exactly as scalar ones (and nothing is contracted into
// a fused multiply-add), so the bytes do not change. The last partial
// batch of a chunk takes the header's code per element.
#include <stdatomic.h>
#include <string.h>

#include "accel/philox.h"
#include "cpu.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define ACCEL_CPU_RNG_X86 1
#endif

// Blocks computed side by side by accel_cpu_rng_batch (elements: 4 per
// block); a chunk is a whole number of batches.
#define ACCEL_CPU_RNG_LANES 16u

// Elements per pool chunk: a multiple of 4, so chunks start on a block.
#define ACCEL_CPU_RNG_CHUNK ((uint64_t)1 << 16)

typedef struct accel_cpu_rng {
  unsigned char* dst;
  uint64_t count;
  uint64_t seed;
  uint64_t offset;
  uint32_t dtype;
  uint32_t distribution;
  float a, b;
} accel_cpu_rng_t;

// Writes elements [first, first + n) (first a multiple of 4).
static void accel_cpu_rng_span(const accel_cpu_rng_t* rng, uint64_t first,
                               uint64_t n) {
  size_t elem =
      rng->dtype == ACCEL_PHILOX_F16 || rng->dtype == ACCEL_PHILOX_BF16 ? 2 : 4;
  for (uint64_t i = 0; i < n; i += 4) {
    accel_philox_block_t block =
        accel_philox_at(rng->seed, rng->offset, (first + i) / 4);
    for (uint32_t j = 0; j < 4 && i + j < n; j++) {
      accel_philox_u32_t v = accel_philox_element(block, j, rng->distribution,
                                                  rng->dtype, rng->a, rng->b);
      unsigned char* at = rng->dst + (first + i + j) * elem;
      if (elem == 2) {
        uint16_t h = (uint16_t)v;
        memcpy(at, &h, 2);
      } else {
        uint32_t w = v;
        memcpy(at, &w, 4);
      }
    }
  }
}

// Writes the ACCEL_CPU_RNG_LANES * 4 elements that start at element `first`
// (a multiple of 4) of a fill: accel_philox_at and accel_philox_element of
// the header, one block per lane. A normal fill takes each pair of words
// once (the header's element code evaluates the logarithm and square root
// of a pair for both of its elements, with the same result), cos for the
// even element and sin for the odd one, in the header's own functions.
#define ACCEL_CPU_RNG_BATCH(suffix, attr)                                    \
  attr static void accel_cpu_rng_batch_##suffix(const accel_cpu_rng_t* rng,  \
                                                uint64_t first) {            \
    enum { L = ACCEL_CPU_RNG_LANES };                                        \
    uint32_t c0[L], c1[L], c2[L], c3[L];                                     \
    for (uint32_t l = 0; l < L; l++) {                                       \
      uint64_t lo = rng->offset + (first / 4 + l);                           \
      c0[l] = (uint32_t)lo;                                                  \
      c1[l] = (uint32_t)(lo >> 32);                                          \
      c2[l] = lo < rng->offset ? 1u : 0u;                                    \
      c3[l] = 0u;                                                            \
    }                                                                        \
    uint32_t k0 = (uint32_t)rng->seed, k1 = (uint32_t)(rng->seed >> 32);    \
    for (int round = 0; round < 10; round++) {                               \
      if (round != 0) {                                                      \
        k0 += 0x9E3779B9u;                                                   \
        k1 += 0xBB67AE85u;                                                   \
      }                                                                      \
      for (uint32_t l = 0; l < L; l++) {                                     \
        uint64_t p0 = (uint64_t)0xD2511F53u * c0[l];                         \
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c2[l];                         \
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[l] ^ k0;                     \
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3[l] ^ k1;                     \
        c1[l] = (uint32_t)p1;                                                \
        c3[l] = (uint32_t)p0;                                                \
        c0[l] = n0;                                                          \
        c2[l] = n2;                                                          \
      }                                                                      \
    }                                                                        \
    uint32_t out[4 * L];                                                     \
    for (uint32_t l = 0; l < L; l++) {                                       \
      out[4 * l] = c0[l];                                                    \
      out[4 * l + 1] = c1[l];                                                \
      out[4 * l + 2] = c2[l];                                                \
      out[4 * l + 3] = c3[l];                                                \
    }                                                                        \
    if (rng->distribution == ACCEL_PHILOX_BITS) {                            \
      memcpy(rng->dst + first * 4, out, sizeof(out));                        \
      return;                                                                \
    }                                                                        \
    float v[4 * L];                                                          \
    if (rng->distribution == ACCEL_PHILOX_UNIFORM) {                         \
      for (uint32_t i = 0; i < 4 * L; i++) {                                 \
        v[i] = accel_philox_uniform(out[i], rng->a, rng->b);                 \
      }                                                                      \
    } else {                                                                 \
      for (uint32_t i = 0; i < 2 * L; i++) {                                 \
        float ln = accel_philox_log((out[2 * i] >> 8) + 1u);                 \
        float r = accel_philox_sqrt(ACCEL_PHILOX_MUL(-2.0f, ln));            \
        uint32_t angle = out[2 * i + 1] >> 8;                                \
        float n0 = ACCEL_PHILOX_MUL(r, accel_philox_trig(angle, 0u));        \
        float n1 = ACCEL_PHILOX_MUL(r, accel_philox_trig(angle, 1u));        \
        v[2 * i] = ACCEL_PHILOX_ADD(rng->a, ACCEL_PHILOX_MUL(rng->b, n0));   \
        v[2 * i + 1] = ACCEL_PHILOX_ADD(rng->a, ACCEL_PHILOX_MUL(rng->b, n1)); \
      }                                                                      \
    }                                                                        \
    if (rng->dtype == ACCEL_PHILOX_F32) {                                    \
      memcpy(rng->dst + first * 4, v, sizeof(v));                            \
      return;                                                                \
    }                                                                        \
    uint16_t half[4 * L];                                                    \
    if (rng->dtype == ACCEL_PHILOX_BF16) {                                   \
      for (uint32_t i = 0; i < 4 * L; i++) {                                 \
        half[i] = (uint16_t)accel_philox_f32_to_bf16(v[i]);                  \
      }                                                                      \
    } else {                                                                 \
      for (uint32_t i = 0; i < 4 * L; i++) {                                 \
        half[i] = (uint16_t)accel_philox_f32_to_f16(v[i]);                   \
      }                                                                      \
    }                                                                        \
    memcpy(rng->dst + first * 2, half, sizeof(half));                        \
  }
ACCEL_CPU_RNG_BATCH(portable, )
#if ACCEL_CPU_RNG_X86
ACCEL_CPU_RNG_BATCH(avx2, __attribute__((target("avx2"))))
ACCEL_CPU_RNG_BATCH(avx512, __attribute__((target("avx512f,avx512bw"))))
#endif

typedef void (*accel_cpu_rng_batch_fn_t)(const accel_cpu_rng_t*, uint64_t);
static _Atomic(accel_cpu_rng_batch_fn_t) accel_cpu_rng_batch;

// The batch function for this CPU, chosen at first use (a race picks the
// same one twice).
static accel_cpu_rng_batch_fn_t accel_cpu_rng_batch_get(void) {
  accel_cpu_rng_batch_fn_t fn =
      atomic_load_explicit(&accel_cpu_rng_batch, memory_order_relaxed);
  if (fn != NULL) return fn;
  fn = accel_cpu_rng_batch_portable;
#if ACCEL_CPU_RNG_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")) {
    fn = accel_cpu_rng_batch_avx512;
  } else if (__builtin_cpu_supports("avx2")) {
    fn = accel_cpu_rng_batch_avx2;
  }
#endif
  atomic_store_explicit(&accel_cpu_rng_batch, fn, memory_order_relaxed);
  return fn;
}

static void accel_cpu_rng_chunk(void* ctx, uint64_t index, uint32_t worker) {
  (void)worker;
  const accel_cpu_rng_t* rng = ctx;
  uint64_t first = index * ACCEL_CPU_RNG_CHUNK;
  uint64_t n = rng->count - first;
  if (n > ACCEL_CPU_RNG_CHUNK) n = ACCEL_CPU_RNG_CHUNK;
  uint64_t batched = 0;
  const uint64_t step = 4u * ACCEL_CPU_RNG_LANES;
  accel_cpu_rng_batch_fn_t batch = accel_cpu_rng_batch_get();
  for (; batched + step <= n; batched += step) batch(rng, first + batched);
  if (batched < n) accel_cpu_rng_span(rng, first + batched, n - batched);
}

static accel_status_t accel_cpu_rng_call(accel_cpu_device_t* device, void* arg,
                                         char* message, size_t message_size) {
  (void)message, (void)message_size;
  accel_cpu_pool_t* pool = atomic_load(&device->plugin->pool);
  accel_cpu_rng_t* rng = arg;
  uint64_t chunks =
      (rng->count + ACCEL_CPU_RNG_CHUNK - 1) / ACCEL_CPU_RNG_CHUNK;
  accel_cpu_pool_run(pool, chunks, accel_cpu_rng_chunk, rng);
  return ACCEL_OK;
}

accel_status_t accel_cpu_op_rng(void* device_ptr, void* stream, void* dst,
                                uint64_t dst_offset, uint32_t dtype,
                                uint64_t count, uint32_t distribution,
                                uint64_t seed, uint64_t offset, double a,
                                double b) {
  accel_cpu_device_t* device = device_ptr;
  const accel_host_t* host = device->host;
  bool bits = distribution == ACCEL_PHILOX_BITS;
  if (distribution > ACCEL_PHILOX_NORMAL ||
      accel_plugin_dtype_size(dtype) == 0 ||
      bits != (dtype == ACCEL_PHILOX_I32)) {
    // The core checks these; this guards a core older than the plugin.
    return host->fail(host, ACCEL_ERROR_UNSUPPORTED,
                      "cpu:%u: rng: distribution %u with dtype %u",
                      device->index, (unsigned)distribution, (unsigned)dtype);
  }
  accel_cpu_pool_t* pool = NULL;
  accel_status_t status = accel_cpu_pool_get(device->plugin, &pool);
  if (status != ACCEL_OK) return status;
  accel_cpu_task_t* task =
      accel_cpu_task_create_call(accel_cpu_rng_call, sizeof(accel_cpu_rng_t));
  if (task == NULL) {
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      "cpu:%u: cannot queue rng", device->index);
  }
  accel_cpu_rng_t rng = {.dst = (unsigned char*)dst + dst_offset,
                         .count = count,
                         .seed = seed,
                         .offset = offset,
                         .dtype = dtype,
                         .distribution = distribution,
                         .a = (float)a,
                         .b = (float)b};
  memcpy(task->u.call.arg, &rng, sizeof(rng));
  accel_cpu_stream_submit(stream, task);
  return ACCEL_OK;
}
