// SPDX-License-Identifier: MIT
//
// Opening the stand-in for tests/stand_in (see stand_in.h), the same for
// both backends: the library the plugin is pointed at, once per process.
#include "stand_in/stand_in.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

bool stand_in_resolve(void* lib, const char* name, void* fn) {
  void* sym = dlsym(lib, name);
  memcpy(fn, &sym, sizeof(sym));
  return sym != NULL;
}

const stand_in_t* stand_in_open(void) {
  static int opened;  // 0 not tried, 1 open, -1 failed
  if (opened == 0) {
    const char* path = getenv(stand_in_backend.driver_env);
    // Kept open: the plugin loads the same object, and the tests read its
    // counters until the process ends.
    void* lib = path != NULL ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    opened = lib != NULL && stand_in_bind(lib) ? 1 : -1;
  }
  return opened > 0 ? &stand_in_backend : NULL;
}
