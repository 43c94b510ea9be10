// SPDX-License-Identifier: MIT
//
// Core-internal declarations of the collectives (comm.c, comm_engine.c).
#ifndef ACCEL_CORE_COMM_INTERNAL_H_
#define ACCEL_CORE_COMM_INTERNAL_H_

#include <limits.h>

#include "accel/comm_engine.h"
#include "internal.h"

// One collectives engine candidate: its report entry and, once loaded, its
// validated descriptor. Lives until accel_shutdown().
typedef struct accel__engine {
  accel__host_t host;  // lent to the engine's load()
  char path[PATH_MAX];
  char source[PATH_MAX];
  bool from_env;  // found through ACCEL_COMM_ENGINE_PATH
  accel_plugin_stage_t stage;
  accel_status_t status;  // ACCEL_OK when usable
  char message[512];
  char name[32];
  char version[32];
  uint32_t abi_version;
  bool shadowed;  // an earlier engine has the same name
  void* dl;
  accel_comm_engine_t desc;  // zero-extended copy
  void* state;               // from load()
  bool loaded;               // load() succeeded; unload() owed
  bool probed;               // probe() ran (the engine's library opened)
  atomic_uint comms;         // live communicators
} accel__engine_t;

// Finds the engines (once) and picks `wanted` ("mpi", or NULL/"auto" for
// ACCEL_COMM_ENGINE, then the usable one of highest priority). Fails with
// a message that gives each candidate's reason.
accel_status_t accel__engine_pick(const char* wanted,
                                  accel__engine_t** out_engine);

#endif  // ACCEL_CORE_COMM_INTERNAL_H_
