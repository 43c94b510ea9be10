// SPDX-License-Identifier: MIT
//
// op_rng (plugin.h, ABI 1.3): counter-based random fills. The element code
// is <accel/philox.h>, the same code the OpenCL, CUDA and ROCm kernels
// run, so every backend writes the same bytes. This file only splits the
// fill into chunks of whole Philox blocks for the thread pool. Built with
// -ffp-contract=off (CMakeLists.txt) so no compiler fuses the header's
// float operations.
#include <string.h>

#include "accel/philox.h"
#include "cpu.h"

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

static void accel_cpu_rng_chunk(void* ctx, uint64_t index, uint32_t worker) {
  (void)worker;
  const accel_cpu_rng_t* rng = ctx;
  uint64_t first = index * ACCEL_CPU_RNG_CHUNK;
  uint64_t n = rng->count - first;
  accel_cpu_rng_span(rng, first,
                     n < ACCEL_CPU_RNG_CHUNK ? n : ACCEL_CPU_RNG_CHUNK);
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
