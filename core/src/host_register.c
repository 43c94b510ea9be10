// SPDX-License-Identifier: MIT
//
// Host memory registration (<accel/interop.h>): the process-wide registry
// of host ranges the caller owns and registered with a device, so that
// overlaps and unknown pointers are refused with a clear message before a
// driver sees them, and a copy's host range can be looked up. The plugin's
// host_register entry (ABI 1.4) page-locks the memory; without it (cpu,
// opencl, older plugins) the loader's default accepts and the range is
// only recorded.
//
// Registrations are rare and slow (cuMemHostRegister takes milliseconds
// for large ranges), so the registry is a plain array under one mutex,
// held across the plugin call: the overlap check, the driver's lock and
// the insertion are one step, and an unregister cannot slip between a
// range's check and its registration.
#include <accel/interop.h>
#include <pthread.h>
#include <stdlib.h>

#include "internal.h"
#include "trace.h"

typedef struct accel__host_range {
  accel_device_t* device;  // holds a reference
  uintptr_t start;
  size_t size;
} accel__host_range_t;

static pthread_mutex_t accel__host_ranges_lock = PTHREAD_MUTEX_INITIALIZER;
static accel__host_range_t* accel__host_ranges;  // guarded
static size_t accel__host_range_count;           // guarded
static size_t accel__host_range_capacity;        // guarded

// fork(): no thread is inside the registry while the process forks, so
// the child can register and unregister (its plugin calls are stubs).
static void accel__host_ranges_lock_fn(void) {
  pthread_mutex_lock(&accel__host_ranges_lock);
}
static void accel__host_ranges_unlock_fn(void) {
  pthread_mutex_unlock(&accel__host_ranges_lock);
}
static pthread_once_t accel__host_ranges_once = PTHREAD_ONCE_INIT;
static void accel__host_ranges_atfork(void) {
  (void)pthread_atfork(accel__host_ranges_lock_fn, accel__host_ranges_unlock_fn,
                       accel__host_ranges_unlock_fn);
}

// Index of the range of `device` starting at `start`, or SIZE_MAX. Caller
// holds the lock.
static size_t accel__host_range_find(const accel_device_t* device,
                                     uintptr_t start) {
  for (size_t i = 0; i < accel__host_range_count; i++) {
    const accel__host_range_t* r = &accel__host_ranges[i];
    if (r->device == device && r->start == start) return i;
  }
  return SIZE_MAX;
}

// The first range holding byte `p` (any device), or NULL. Caller holds
// the lock.
static const accel__host_range_t* accel__host_range_at(uintptr_t p) {
  for (size_t i = 0; i < accel__host_range_count; i++) {
    const accel__host_range_t* r = &accel__host_ranges[i];
    if (p >= r->start && p - r->start < r->size) return r;
  }
  return NULL;
}

// Refuses [start, start + size) when it overlaps a range registered on a
// device of `device`'s backend. Caller holds the lock.
static accel_status_t accel__host_range_free(const char* what,
                                             const accel_device_t* device,
                                             uintptr_t start, size_t size) {
  for (size_t i = 0; i < accel__host_range_count; i++) {
    const accel__host_range_t* r = &accel__host_ranges[i];
    if (r->device->plugin != device->plugin) continue;
    if (start < r->start + r->size && r->start < start + size) {
      return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                         "%s: [%p, +%zu) on %s overlaps [%p, +%zu), "
                         "already registered on %s (a range is registered "
                         "once per backend)",
                         what, (void*)start, size, device->uri, (void*)r->start,
                         r->size, r->device->uri);
    }
  }
  return ACCEL_OK;
}

// Makes room for one more range. Caller holds the lock.
static bool accel__host_range_reserve(void) {
  if (accel__host_range_count < accel__host_range_capacity) return true;
  size_t capacity =
      accel__host_range_capacity ? accel__host_range_capacity * 2 : 8;
  accel__host_range_t* ranges =
      realloc(accel__host_ranges, capacity * sizeof(*ranges));
  if (ranges == NULL) return false;
  accel__host_ranges = ranges;
  accel__host_range_capacity = capacity;
  return true;
}

accel_status_t accel_host_register(accel_device_t* device, void* ptr,
                                   size_t size, uint32_t flags) {
  ACCEL__TRACE_API("accel_host_register");
  static const char what[] = "accel_host_register";
  uintptr_t start = (uintptr_t)ptr;
  if (device == NULL || ptr == NULL || size == 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: device, ptr and a non-zero size are required",
                       what);
  }
  if (size > UINTPTR_MAX - start) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: %zu bytes at %p wrap around the address space",
                       what, size, ptr);
  }
  if (flags != 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: flags must be 0 (got 0x%x)", what, (unsigned)flags);
  }
  pthread_once(&accel__host_ranges_once, accel__host_ranges_atfork);
  pthread_mutex_lock(&accel__host_ranges_lock);
  accel_status_t status = accel__host_range_free(what, device, start, size);
  if (status == ACCEL_OK && !accel__host_range_reserve()) {
    status = accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                         "%s: no host memory for the registry", what);
  }
  if (status == ACCEL_OK) {
    status = device->ops->host_register(device->impl, ptr, size);
    if (status != ACCEL_OK) status = accel__fail_plugin(status, what, device);
  }
  if (status == ACCEL_OK) {
    accel_device_retain(device);
    accel__host_ranges[accel__host_range_count++] =
        (accel__host_range_t){device, start, size};
  }
  pthread_mutex_unlock(&accel__host_ranges_lock);
  return status;
}

accel_status_t accel_host_unregister(accel_device_t* device, void* ptr) {
  ACCEL__TRACE_API("accel_host_unregister");
  static const char what[] = "accel_host_unregister";
  if (device == NULL || ptr == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "%s: device and ptr are required", what);
  }
  uintptr_t start = (uintptr_t)ptr;
  pthread_mutex_lock(&accel__host_ranges_lock);
  size_t i = accel__host_range_find(device, start);
  if (i == SIZE_MAX) {
    const accel__host_range_t* r = accel__host_range_at(start);
    accel_status_t status;
    if (r == NULL) {
      status =
          accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                      "%s: %p is not registered on %s", what, ptr, device->uri);
    } else if (r->device != device) {
      status = accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %p is registered on %s, not on %s", what, ptr,
                           r->device->uri, device->uri);
    } else {
      status = accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                           "%s: %p is inside the range registered at %p "
                           "(+%zu) on %s; pass the start of the range",
                           what, ptr, (void*)r->start, r->size, device->uri);
    }
    pthread_mutex_unlock(&accel__host_ranges_lock);
    return status;
  }
  device->ops->host_unregister(device->impl, ptr);
  accel__host_ranges[i] = accel__host_ranges[--accel__host_range_count];
  if (accel__host_range_count == 0) {
    // Nothing left: give the array back (leak checkers see a clean exit).
    free(accel__host_ranges);
    accel__host_ranges = NULL;
    accel__host_range_capacity = 0;
  }
  pthread_mutex_unlock(&accel__host_ranges_lock);
  accel_device_release(device);  // the registration's reference
  return ACCEL_OK;
}

accel_status_t accel_host_query_registered(accel_device_t* device,
                                           const void* ptr, size_t size,
                                           bool* out_registered) {
  if (out_registered != NULL) *out_registered = false;
  if (device == NULL || ptr == NULL || size == 0 || out_registered == NULL) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_host_query_registered: device, ptr, a "
                       "non-zero size and out_registered are required");
  }
  uintptr_t start = (uintptr_t)ptr;
  bool found = false;
  pthread_mutex_lock(&accel__host_ranges_lock);
  for (size_t i = 0; i < accel__host_range_count && !found; i++) {
    const accel__host_range_t* r = &accel__host_ranges[i];
    found = r->device == device && start >= r->start &&
            start - r->start < r->size && size <= r->size - (start - r->start);
  }
  pthread_mutex_unlock(&accel__host_ranges_lock);
  *out_registered = found;
  return ACCEL_OK;
}
