// SPDX-License-Identifier: MIT
//
// Pinned host memory (accel_host_alloc/accel_host_free), pooled per device.
// Page-locking memory is slow (cudaHostAlloc takes milliseconds for large
// blocks), so freed blocks are kept in size classes and handed out again,
// as PyTorch's CachingHostAllocator does. Classes are 4 KiB and then four
// steps per power of two (5/4, 6/4, 7/4, 8/4 of it), so a block is at most
// 25% larger than asked for and a class's blocks are interchangeable.
//
// accel_host_free() gets only a pointer, so every block the pool owns sits
// in an open-addressing hash map keyed by its address (linear probing,
// backward-shift deletion); that also lets a wrong or doubled free be
// reported instead of corrupting the pool. With ACCEL_ALLOCATOR=raw nothing
// is cached: each call goes to the plugin with the exact size.
//
// Each live block holds a reference on the device, so the pool (and the
// plugin that pinned the memory) outlives every pointer handed out.
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define ACCEL__HOST_MIN_SHIFT 12u  // 4 KiB, the smallest class
#define ACCEL__HOST_MAX ((size_t)1 << 62)
#define ACCEL__HOST_CLASSES (1u + (64u - ACCEL__HOST_MIN_SHIFT) * 4u)

typedef struct accel__host_entry accel__host_entry_t;

struct accel__host_entry {
  void* ptr;
  size_t size;  // bytes the plugin allocated
  uint32_t klass;
  bool in_use;
  accel__host_entry_t* next;  // free list of its class
};

struct accel__host_pool {
  pthread_mutex_t mutex;
  accel_device_t* device;
  bool caching;
  accel__host_entry_t** table;  // NULL slots are empty
  size_t capacity;              // a power of two, or 0
  size_t count;
  accel__host_entry_t* free_lists[ACCEL__HOST_CLASSES];
  uint64_t used_count;
  uint64_t used_bytes;
  uint64_t cached_count;
  uint64_t cached_bytes;
};

// Class of a request of `size` (<= ACCEL__HOST_MAX) bytes.
static uint32_t accel__host_class(size_t size) {
  if (size <= ((size_t)1 << ACCEL__HOST_MIN_SHIFT)) return 0;
  uint32_t k = 63u - (uint32_t)__builtin_clzll((unsigned long long)size - 1);
  size_t step = (size_t)1 << (k - 2u);
  size_t j = (size - ((size_t)1 << k) + step - 1) / step;  // 1..4
  return 1u + (k - ACCEL__HOST_MIN_SHIFT) * 4u + (uint32_t)(j - 1);
}

static size_t accel__host_class_size(uint32_t klass) {
  if (klass == 0) return (size_t)1 << ACCEL__HOST_MIN_SHIFT;
  uint32_t k = (klass - 1u) / 4u + ACCEL__HOST_MIN_SHIFT;
  size_t j = (klass - 1u) % 4u + 1u;
  return ((size_t)1 << k) + j * ((size_t)1 << (k - 2u));
}

static size_t accel__host_hash(const void* ptr, size_t capacity) {
  uint64_t h = (uint64_t)(uintptr_t)ptr * 0x9e3779b97f4a7c15ull;
  return (size_t)(h >> 17) & (capacity - 1);
}

// Slot holding `ptr`, or SIZE_MAX.
static size_t accel__host_find(const accel__host_pool_t* pool,
                               const void* ptr) {
  if (pool->capacity == 0) return SIZE_MAX;
  size_t mask = pool->capacity - 1;
  for (size_t i = accel__host_hash(ptr, pool->capacity);; i = (i + 1) & mask) {
    if (pool->table[i] == NULL) return SIZE_MAX;
    if (pool->table[i]->ptr == ptr) return i;
  }
}

static void accel__host_place(accel__host_entry_t** table, size_t capacity,
                              accel__host_entry_t* e) {
  size_t i = accel__host_hash(e->ptr, capacity);
  while (table[i] != NULL) i = (i + 1) & (capacity - 1);
  table[i] = e;
}

// Adds `e`, growing the table to keep it at most half full.
static bool accel__host_insert(accel__host_pool_t* pool,
                               accel__host_entry_t* e) {
  if ((pool->count + 1) * 2 > pool->capacity) {
    size_t capacity = pool->capacity ? pool->capacity * 2 : 64;
    accel__host_entry_t** table = calloc(capacity, sizeof(*table));
    if (table == NULL) return false;
    for (size_t i = 0; i < pool->capacity; i++) {
      if (pool->table[i] != NULL) {
        accel__host_place(table, capacity, pool->table[i]);
      }
    }
    free(pool->table);
    pool->table = table;
    pool->capacity = capacity;
  }
  accel__host_place(pool->table, pool->capacity, e);
  pool->count++;
  return true;
}

// Empties slot `i`, shifting later entries of its probe run back.
static void accel__host_remove_at(accel__host_pool_t* pool, size_t i) {
  size_t mask = pool->capacity - 1;
  pool->table[i] = NULL;
  pool->count--;
  for (size_t j = (i + 1) & mask; pool->table[j] != NULL; j = (j + 1) & mask) {
    size_t home = accel__host_hash(pool->table[j]->ptr, pool->capacity);
    // Move the entry to the hole unless its home lies in (i, j].
    bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (!stays) {
      pool->table[i] = pool->table[j];
      pool->table[j] = NULL;
      i = j;
    }
  }
}

accel_status_t accel__host_pool_create(accel_device_t* device) {
  accel__host_pool_t* pool = calloc(1, sizeof(*pool));
  if (pool == NULL) {
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY, "%s: host pool state",
                       device->uri);
  }
  pthread_mutex_init(&pool->mutex, NULL);
  pool->device = device;
  pool->caching = accel__allocator_caching(device);
  device->host_pool = pool;
  return ACCEL_OK;
}

// Frees every cached block. Caller holds the mutex.
static void accel__host_trim_locked(accel__host_pool_t* pool) {
  accel_device_t* d = pool->device;
  for (uint32_t c = 0; c < ACCEL__HOST_CLASSES; c++) {
    while (pool->free_lists[c] != NULL) {
      accel__host_entry_t* e = pool->free_lists[c];
      pool->free_lists[c] = e->next;
      size_t i = accel__host_find(pool, e->ptr);
      if (i != SIZE_MAX) accel__host_remove_at(pool, i);
      pool->cached_count--;
      pool->cached_bytes -= e->size;
      d->ops->host_free(d->impl, e->ptr);
      free(e);
    }
  }
}

void accel__host_pool_trim(accel_device_t* device) {
  accel__host_pool_t* pool = device->host_pool;
  pthread_mutex_lock(&pool->mutex);
  accel__host_trim_locked(pool);
  pthread_mutex_unlock(&pool->mutex);
}

void accel__host_pool_destroy(accel_device_t* device) {
  accel__host_pool_t* pool = device->host_pool;
  if (pool == NULL) return;
  // Blocks in use hold device references, so only cached ones are left.
  for (size_t i = 0; i < pool->capacity; i++) {
    accel__host_entry_t* e = pool->table[i];
    if (e != NULL) {
      device->ops->host_free(device->impl, e->ptr);
      free(e);
    }
  }
  free(pool->table);
  pthread_mutex_destroy(&pool->mutex);
  free(pool);
  device->host_pool = NULL;
}

void accel__host_pool_counts(accel_device_t* device, uint64_t* out_used_count,
                             uint64_t* out_used_bytes,
                             uint64_t* out_cached_count,
                             uint64_t* out_cached_bytes) {
  accel__host_pool_t* pool = device->host_pool;
  pthread_mutex_lock(&pool->mutex);
  *out_used_count = pool->used_count;
  *out_used_bytes = pool->used_bytes;
  *out_cached_count = pool->cached_count;
  *out_cached_bytes = pool->cached_bytes;
  pthread_mutex_unlock(&pool->mutex);
}

// Takes a cached block of class `klass`, or returns NULL.
static accel__host_entry_t* accel__host_take(accel__host_pool_t* pool,
                                             uint32_t klass) {
  pthread_mutex_lock(&pool->mutex);
  accel__host_entry_t* e = pool->free_lists[klass];
  if (e != NULL) {
    pool->free_lists[klass] = e->next;
    e->next = NULL;
    e->in_use = true;
    pool->cached_count--;
    pool->cached_bytes -= e->size;
    pool->used_count++;
    pool->used_bytes += e->size;
  }
  pthread_mutex_unlock(&pool->mutex);
  return e;
}

accel_status_t accel_host_alloc(accel_device_t* device, size_t size,
                                void** out_ptr) {
  if (out_ptr != NULL) *out_ptr = NULL;
  if (device == NULL || out_ptr == NULL || size == 0) {
    return accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
                       "accel_host_alloc: device, a non-zero size and "
                       "out_ptr are required");
  }
  if (size > ACCEL__HOST_MAX) {
    return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                       "accel_host_alloc: %zu bytes is more than any host "
                       "holds",
                       size);
  }
  accel__host_pool_t* pool = device->host_pool;
  uint32_t klass = pool->caching ? accel__host_class(size) : 0;
  size_t want = pool->caching ? accel__host_class_size(klass) : size;
  accel__host_entry_t* e = pool->caching ? accel__host_take(pool, klass) : NULL;
  if (e == NULL) {
    e = calloc(1, sizeof(*e));
    if (e == NULL) {
      return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                         "accel_host_alloc: no memory for the pool entry");
    }
    // Pinning runs outside the mutex: it is the slow part.
    const accel_device_ops_t* ops = device->ops;
    accel_status_t status = ops->host_alloc(device->impl, want, &e->ptr);
    if (status == ACCEL_ERROR_OUT_OF_MEMORY ||
        status == ACCEL_ERROR_OUT_OF_DEVICE_MEMORY) {
      accel__host_pool_trim(device);  // give the cache back, try once more
      status = ops->host_alloc(device->impl, want, &e->ptr);
    }
    if (status != ACCEL_OK) {
      free(e);
      return status;  // the plugin recorded why
    }
    e->size = want;
    e->klass = klass;
    e->in_use = true;
    pthread_mutex_lock(&pool->mutex);
    bool stored = accel__host_insert(pool, e);
    if (stored) {
      pool->used_count++;
      pool->used_bytes += e->size;
    }
    pthread_mutex_unlock(&pool->mutex);
    if (!stored) {
      ops->host_free(device->impl, e->ptr);
      free(e);
      return accel__fail(ACCEL_ERROR_OUT_OF_MEMORY,
                         "accel_host_alloc: no memory for the pool's map");
    }
  }
  accel_device_retain(device);
  *out_ptr = e->ptr;
  return ACCEL_OK;
}

void accel_host_free(accel_device_t* device, void* ptr) {
  if (device == NULL || ptr == NULL) return;
  accel__host_pool_t* pool = device->host_pool;
  pthread_mutex_lock(&pool->mutex);
  size_t i = accel__host_find(pool, ptr);
  accel__host_entry_t* e = i != SIZE_MAX ? pool->table[i] : NULL;
  if (e == NULL || !e->in_use) {
    pthread_mutex_unlock(&pool->mutex);
    accel__log(ACCEL_LOG_WARN,
               "accel_host_free: %p is not memory from accel_host_alloc() "
               "on %s that is still allocated; ignored",
               ptr, device->uri);
    return;
  }
  e->in_use = false;
  pool->used_count--;
  pool->used_bytes -= e->size;
  if (pool->caching) {
    e->next = pool->free_lists[e->klass];
    pool->free_lists[e->klass] = e;
    pool->cached_count++;
    pool->cached_bytes += e->size;
    e = NULL;
  } else {
    accel__host_remove_at(pool, i);
  }
  pthread_mutex_unlock(&pool->mutex);
  if (e != NULL) {
    device->ops->host_free(device->impl, e->ptr);
    free(e);
  }
  accel_device_release(device);  // may close the device and this pool
}

void accel__host_pool_fork_lock(accel_device_t* device, bool lock) {
  accel__host_pool_t* pool = device->host_pool;
  if (pool == NULL) return;
  if (lock) {
    pthread_mutex_lock(&pool->mutex);
  } else {
    pthread_mutex_unlock(&pool->mutex);
  }
}
