// SPDX-License-Identifier: MIT
//
// Opening libmpi at run time and initialising MPI. Open MPI loads its own
// components with dlopen and expects libmpi's symbols to be global, so the
// library is opened RTLD_GLOBAL (a documented Open MPI requirement for
// applications that dlopen it). MPI is initialised with
// MPI_THREAD_MULTIPLE when the library offers it; otherwise every MPI call
// of the engine is serialised by the engine mutex.
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "accel_mpi.h"

static accel_status_t accel_mpi_unavailable(accel_mpi_engine_t* e,
                                            const char* format,
                                            const char* detail) {
  snprintf(e->error, sizeof(e->error), format, detail);
  e->status = ACCEL_ERROR_UNAVAILABLE;
  return e->status;
}

// Resolves every function and predefined handle; false names the missing
// symbol in e->error.
static bool accel_mpi_resolve(accel_mpi_engine_t* e) {
  void* sym = NULL;
#define ACCEL_MPI_RESOLVE(name)                                             \
  sym = dlsym(e->dl, #name);                                                \
  if (sym == NULL) {                                                        \
    accel_mpi_unavailable(e, "libmpi lacks %s (not Open MPI 4 or newer?)", \
                          #name);                                           \
    return false;                                                           \
  }                                                                         \
  memcpy(&e->mpi.name, &sym, sizeof(sym));
  ACCEL_MPI_FUNCS(ACCEL_MPI_RESOLVE)
#undef ACCEL_MPI_RESOLVE
#define ACCEL_MPI_RESOLVE_OPTIONAL(name) \
  sym = dlsym(e->dl, #name);             \
  memcpy(&e->mpi.name, &sym, sizeof(sym));
  ACCEL_MPI_OPTIONAL_FUNCS(ACCEL_MPI_RESOLVE_OPTIONAL)
#undef ACCEL_MPI_RESOLVE_OPTIONAL
  // Predefined handles are data. A program linked against libmpi that
  // uses them holds copy-relocated copies, and libmpi itself uses those
  // copies; the library's own definitions are then stale. The global
  // scope, searched from the program (dlopen(NULL)), finds the live ones
  // in either case.
  void* self = dlopen(NULL, RTLD_NOW);
#define ACCEL_MPI_HANDLE(type, field, symbol)                                \
  sym = self != NULL ? dlsym(self, symbol) : NULL;                          \
  if (sym == NULL) sym = dlsym(e->dl, symbol);                              \
  if (sym == NULL) {                                                        \
    accel_mpi_unavailable(e, "libmpi lacks %s (not Open MPI?)", symbol);    \
    if (self != NULL) dlclose(self);                                        \
    return false;                                                           \
  }                                                                         \
  e->mpi.field = (type)sym;
  ACCEL_MPI_GLOBALS(ACCEL_MPI_HANDLE)
#undef ACCEL_MPI_HANDLE
  if (self != NULL) dlclose(self);
  return true;
}

// MPI_Init_thread unless the application initialised MPI already.
static accel_status_t accel_mpi_init(accel_mpi_engine_t* e) {
  int initialised = 0, finalised = 0;
  e->mpi.MPI_Finalized(&finalised);
  if (finalised) {
    return accel_mpi_unavailable(e, "%s",
                                 "MPI was already finalised in this process");
  }
  e->mpi.MPI_Initialized(&initialised);
  int provided = 0;
  if (!initialised) {
    int rc = e->mpi.MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE,
                                    &provided);
    if (rc != MPI_SUCCESS) {
      char text[256];
      accel_mpi_error_text(e, rc, text, sizeof(text));
      return accel_mpi_unavailable(e, "MPI_Init_thread: %s", text);
    }
    e->we_initialised = true;
  } else {
    e->mpi.MPI_Query_thread(&provided);
  }
  e->multiple = provided >= MPI_THREAD_MULTIPLE;
  if (accel_mpi_half_ops_create(e) != MPI_SUCCESS) {
    return accel_mpi_unavailable(e, "%s",
                                 "cannot create the f16/bf16 reduction ops");
  }
  accel_mpi_tune_start(e);
  return ACCEL_OK;
}

void accel_mpi_tune_start(accel_mpi_engine_t* e) {
  const char* user =
      e->host->getenv(e->host, "OMPI_MCA_coll_libnbc_iallreduce_algorithm");
  accel_mpi_lib_t* m = &e->mpi;
  if ((user != NULL && user[0] != '\0') || m->MPI_T_init_thread == NULL ||
      m->MPI_T_finalize == NULL || m->MPI_T_cvar_get_index == NULL ||
      m->MPI_T_cvar_handle_alloc == NULL || m->MPI_T_cvar_handle_free == NULL ||
      m->MPI_T_cvar_read == NULL || m->MPI_T_cvar_write == NULL) {
    return;
  }
  int provided = 0, index = -1, count = 0;
  if (m->MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
    return;
  }
  if (m->MPI_T_cvar_get_index("coll_libnbc_iallreduce_algorithm", &index) ==
          MPI_SUCCESS &&
      m->MPI_T_cvar_handle_alloc(index, NULL, &e->allreduce_algorithm,
                                 &count) == MPI_SUCCESS) {
    if (count == 1 && m->MPI_T_cvar_read(e->allreduce_algorithm,
                                         &e->allreduce_default) ==
                          MPI_SUCCESS) {
      e->tune = true;
      return;
    }
    m->MPI_T_cvar_handle_free(&e->allreduce_algorithm);
  }
  m->MPI_T_finalize();
}

void accel_mpi_tune_stop(accel_mpi_engine_t* e) {
  if (!e->tune) return;
  e->tune = false;
  e->mpi.MPI_T_cvar_handle_free(&e->allreduce_algorithm);
  e->mpi.MPI_T_finalize();
}

accel_status_t accel_mpi_start(accel_mpi_engine_t* e) {
  pthread_mutex_lock(&e->mutex);
  if (!e->tried) {
    e->tried = true;
    e->status = ACCEL_OK;
    const char* name = e->host->getenv(e->host, "ACCEL_COMM_MPI_LIBRARY");
    if (name == NULL || name[0] == '\0') name = "libmpi.so.40";
    e->dl = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
    if (e->dl == NULL) {
      const char* why = dlerror();
      accel_mpi_unavailable(e, "no MPI library: %s",
                            why != NULL ? why : name);
    } else if (accel_mpi_resolve(e)) {
      accel_mpi_init(e);
    }
  }
  accel_status_t status = e->status;
  pthread_mutex_unlock(&e->mutex);
  if (status != ACCEL_OK) {
    return e->host->fail(e->host, status, "%s", e->error);
  }
  return ACCEL_OK;
}

void accel_mpi_stop(accel_mpi_engine_t* e) {
  if (e->dl == NULL) return;
  if (e->status == ACCEL_OK) {
    accel_mpi_tune_stop(e);
    accel_mpi_half_ops_free(e);
    int finalised = 1;
    e->mpi.MPI_Finalized(&finalised);
    if (e->we_initialised && !finalised && atomic_load(&e->abandoned)) {
      // MPI_Finalize synchronises with every peer, a lost one too.
      e->host->log(e->host, ACCEL_LOG_INFO,
                   "MPI left initialised: a call was abandoned after a "
                   "peer was lost, and MPI_Finalize would wait for it");
    } else if (e->we_initialised && !finalised) {
      e->mpi.MPI_Finalize();
    }
  }
  // libmpi stays mapped: Open MPI cannot be initialised twice in a process
  // and its components keep references into it, so unloading gains little
  // and risks a crash at exit.
}

void accel_mpi_error_text(accel_mpi_engine_t* e, int code, char* out,
                          size_t size) {
  char text[MPI_MAX_ERROR_STRING] = "";
  int length = 0;
  if (e->mpi.MPI_Error_string == NULL ||
      e->mpi.MPI_Error_string(code, text, &length) != MPI_SUCCESS) {
    snprintf(text, sizeof(text), "MPI error %d", code);
  }
  snprintf(out, size, "%s", text);
}
