// SPDX-License-Identifier: MIT
//
// The NCCL collectives engine (or, built with ACCEL_NCCL_HIP, the RCCL
// one): descriptor and lifetime. Loading touches neither NCCL nor the GPU
// runtime; they are opened at the first probe (the core probes when a
// communicator on a device of the engine's backend is first wanted).
#include <stdlib.h>

#include "accel_nccl.h"

static accel_status_t accel_nccl_load(const accel_host_t* host,
                                      void** out_engine) {
  accel_nccl_engine_t* e = calloc(1, sizeof(*e));
  if (e == NULL || pthread_mutex_init(&e->mutex, NULL) != 0) {
    free(e);
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY,
                      ACCEL_NCCL_NAME " engine state");
  }
  e->host = host;
  *out_engine = e;
  return ACCEL_OK;
}

static void accel_nccl_unload(void* engine) {
  accel_nccl_engine_t* e = engine;
  accel_nccl_stop(e);
  pthread_mutex_destroy(&e->mutex);
  free(e);
}

static accel_status_t accel_nccl_probe(void* engine) {
  return accel_nccl_start(engine);
}

static const accel_comm_engine_t accel_nccl_engine = {
    .abi_version = ACCEL_COMM_ENGINE_ABI_VERSION,
    .struct_size = sizeof(accel_comm_engine_t),
    .name = ACCEL_NCCL_NAME,
    .version = ACCEL_NCCL_VERSION,
    // Preferred over MPI for its devices: it moves device memory itself.
    .priority = 10,
    .device_backends = ACCEL_NCCL_BACKEND,
    .load = accel_nccl_load,
    .unload = accel_nccl_unload,
    .probe = accel_nccl_probe,
    .comm_create = accel_nccl_comm_create,
    .comm_split = accel_nccl_comm_split,
    .comm_destroy = accel_nccl_comm_destroy,
    .all_reduce = accel_nccl_all_reduce,
    .broadcast = accel_nccl_broadcast,
    .reduce = accel_nccl_reduce,
    .all_gather = accel_nccl_all_gather,
    .reduce_scatter = accel_nccl_reduce_scatter,
    .all_to_all = accel_nccl_all_to_all,
    .send = accel_nccl_send,
    .recv = accel_nccl_recv,
    .call_start = accel_nccl_call_start,
    .request_test = accel_nccl_request_test,
    .request_abandon = accel_nccl_request_abandon,
    .group_start = accel_nccl_group_start,
    .group_end = accel_nccl_group_end,
    .comm_abort = accel_nccl_comm_abort,
};

ACCEL_PLUGIN_EXPORT const accel_comm_engine_t* accel_comm_engine_entry(
    uint32_t host_abi) {
  return host_abi == ACCEL_COMM_ENGINE_ABI_VERSION ? &accel_nccl_engine
                                                   : NULL;
}
