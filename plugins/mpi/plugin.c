// SPDX-License-Identifier: MIT
//
// The MPI collectives engine: descriptor and lifetime. Loading touches
// nothing of MPI; the library is opened and MPI initialised at the first
// probe (the core probes when a communicator is first wanted), and
// finalised at unload if the engine initialised it.
#include <stdlib.h>

#include "accel_mpi.h"

static accel_status_t accel_mpi_load(const accel_host_t* host,
                                     void** out_engine) {
  accel_mpi_engine_t* e = calloc(1, sizeof(*e));
  if (e == NULL || pthread_mutex_init(&e->mutex, NULL) != 0) {
    free(e);
    return host->fail(host, ACCEL_ERROR_OUT_OF_MEMORY, "mpi engine state");
  }
  e->host = host;
  *out_engine = e;
  return ACCEL_OK;
}

static void accel_mpi_unload(void* engine) {
  accel_mpi_engine_t* e = engine;
  accel_mpi_stop(e);
  pthread_mutex_destroy(&e->mutex);
  free(e);
}

static accel_status_t accel_mpi_probe(void* engine) {
  return accel_mpi_start(engine);
}

static const accel_comm_engine_t accel_mpi_engine = {
    .abi_version = ACCEL_COMM_ENGINE_ABI_VERSION,
    .struct_size = sizeof(accel_comm_engine_t),
    .name = "mpi",
    .version = ACCEL_MPI_VERSION,
    .priority = 0,
    .device_backends = "",
    .load = accel_mpi_load,
    .unload = accel_mpi_unload,
    .probe = accel_mpi_probe,
    .comm_create = accel_mpi_comm_create,
    .comm_split = accel_mpi_comm_split,
    .comm_destroy = accel_mpi_comm_destroy,
    .all_reduce = accel_mpi_all_reduce,
    .broadcast = accel_mpi_broadcast,
    .reduce = accel_mpi_reduce,
    .all_gather = accel_mpi_all_gather,
    .reduce_scatter = accel_mpi_reduce_scatter,
    .all_to_all = accel_mpi_all_to_all,
    .send = accel_mpi_send,
    .recv = accel_mpi_recv,
    .call_start = accel_mpi_call_start,
    .request_test = accel_mpi_request_test,
    .request_abandon = accel_mpi_request_abandon,
};

ACCEL_PLUGIN_EXPORT const accel_comm_engine_t* accel_comm_engine_entry(
    uint32_t host_abi) {
  return host_abi == ACCEL_COMM_ENGINE_ABI_VERSION ? &accel_mpi_engine : NULL;
}
