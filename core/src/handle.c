// SPDX-License-Identifier: MIT
//
// Handle records: the memory behind accel_buffer_t, accel_stream_t,
// accel_event_t and accel_device_t (architecture decision 6).
//
// A handle is a (slot, generation) pair that the core can still
// dereference as a plain pointer. The records of one size class live in an
// arena: one block of shared memory (a memfd) mapped ACCEL__GENERATIONS
// times, side by side, so that every record has that many addresses, all
// showing the same bytes. A record handed out while its slot is in
// generation g is reached through view g: handle = base + g * span +
// slot * size. Releasing the record moves the slot on to the next
// generation, so a newer record in the same slot has another address, and
// accel__handle_current() tells a stale handle from the live one by
// comparing the view a pointer falls in with its slot's generation (a
// private byte per slot). Call sites dereference handles directly and only
// the retain/release and buffer checks look at generations.
//
// A released slot waits in a FIFO until ACCEL__QUARANTINE newer slots were
// released, so a slot comes back at most once every ACCEL__QUARANTINE
// allocations of its class, and a released handle's address can come back
// only after ACCEL__GENERATIONS such returns: at least 64 * 4096 (262144)
// newer handles of its class. Before that it is always refused.
//
// Where memfds cannot be mapped (or an arena cannot get its views), the
// arena is one private mapping with a single view: released records still
// read a count of zero and wait in the FIFO, but a slot's generation does
// not change its address (the FIFO alone then guards against reuse).
//
// fork(): views of shared memory would be shared with the child, so the
// child handler (accel__handle_fork_child) gives every arena a copy of its
// own before anything else runs there.
//
// Cost per record: a spin lock and a FIFO step when it is made; a 64-byte
// memset and a lock-free push when it is released (accel__drain moves the
// pushed slots into the FIFO at the next make); an address lookup per
// check. Memory is reused, so pages are mapped once per view (in one call
// per view: accel__view_populate). An arena reserves 256 MiB of address
// space for 4 MiB of records and maps its views as slots first reach
// their generations: at most ACCEL__GENERATIONS mappings (entries in
// /proc/self/maps), one to start with.
#define _GNU_SOURCE  // memfd_create, MAP_ANONYMOUS, MAP_NORESERVE
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include "handle.h"
#include "internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define ACCEL__LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define ACCEL__LSAN 1
#endif
#endif
#if defined(ACCEL__LSAN)
#include <sanitizer/lsan_interface.h>
#endif

#define ACCEL__GENERATIONS 64u  // views per arena (a power of two)
#define ACCEL__QUARANTINE 4096u        // released slots kept back
#define ACCEL__REGION (ACCEL__GENERATIONS * ACCEL__SPAN)  // 256 MiB
_Static_assert(ACCEL__REGION == (size_t)1 << ACCEL__REGION_SHIFT,
               "an arena's views fill one region of the lookup table");
#define ACCEL__ARENAS_MAX 1024u
#define ACCEL__CLASS_COUNT 5  // 64, 128, 256, 512 and 1024 bytes
#define ACCEL__CLASS_MIN 64u

// accel__handle_new serves up to 1016 bytes (1024 with the link word); a
// handle struct that grows past that needs a larger class here.
_Static_assert(sizeof(struct accel_buffer) <= 1016, "buffer handle size");
_Static_assert(sizeof(struct accel_stream) <= 1016, "stream handle size");
_Static_assert(sizeof(struct accel_event) <= 1016, "event handle size");
_Static_assert(sizeof(struct accel_device) <= 1016, "device handle size");
_Static_assert((ACCEL__GENERATIONS & (ACCEL__GENERATIONS - 1)) == 0 &&
                   ACCEL__GENERATIONS <= 256,
               "generations are a power of two that fits a byte");

typedef struct accel__handle_class {
  accel__arena_t* current;  // where new slots come from
  // Released slots, oldest first: a ring of `capacity` (a power of two)
  // entries.
  struct accel__slot {
    accel__arena_t* arena;
    uint32_t slot;
  }* ring;
  size_t head;
  size_t count;
  size_t capacity;
  // Slots released since the last accel__handle_new, newest first, pushed
  // without the lock: (arena index + 1) << 32 | slot, 0 for none; each
  // record's last 8 bytes link to the next.
  _Atomic uint64_t pending;
} accel__handle_class_t;

// Guards the classes' arenas and FIFOs. A spin lock: it is held for a
// few dozen instructions (longer only while an arena is mapped, once per
// 65536 records), where a mutex's lock and unlock cost as much again.
static atomic_flag accel__handle_busy = ATOMIC_FLAG_INIT;

static void accel__handle_lock(void) {
  while (atomic_flag_test_and_set_explicit(&accel__handle_busy,
                                           memory_order_acquire)) {
    sched_yield();
  }
}

static void accel__handle_unlock(void) {
  atomic_flag_clear_explicit(&accel__handle_busy, memory_order_release);
}
static accel__handle_class_t accel__handle_classes[ACCEL__CLASS_COUNT];
// Every arena ever made, never unmapped, read without the lock; and the
// lookup table of handle.h.
static _Atomic(accel__arena_t*) accel__arenas[ACCEL__ARENAS_MAX];
static atomic_uint accel__arena_count;
_Atomic(accel__arena_t*) accel__arena_table[ACCEL__TABLE];

// Maps `size` bytes aligned to `size` (a power of two), or MAP_FAILED.
static void* accel__map_aligned(size_t size, int prot, int flags) {
  char* raw = mmap(NULL, 2 * size, prot, flags, -1, 0);
  if (raw == MAP_FAILED) return MAP_FAILED;
  uintptr_t start = (uintptr_t)raw;
  uintptr_t at = (start + size - 1) & ~(uintptr_t)(size - 1);
  if (at > start) munmap(raw, at - start);
  if (start + 2 * size > at + size) {
    munmap((void*)(at + size), start + 2 * size - (at + size));
  }
  return (void*)at;
}

// Maps view `g` of the views at `at` as one more mapping of view 0's
// shared memory (mremap of a shared mapping with old size 0), so no file
// descriptor is kept. Views are mapped when a slot first reaches their
// generation: an arena starts with view 0 alone.
static bool accel__view_map(char* at, uint32_t g) {
  return mremap(at, 0, ACCEL__SPAN, MREMAP_MAYMOVE | MREMAP_FIXED,
                at + (size_t)g * ACCEL__SPAN) != MAP_FAILED;
}

// Fills the page tables of a new view `at` for the records handed out so
// far (their memory exists: view 0 wrote it), in one call made under the
// lock, at most once per view. The FIFO hands those slots out again in
// this view, and each page's first touch would be a fault: 200000 buffer
// create + release pairs took 3389 page faults before, 281 after, and ran
// at 230-240 ns a pair instead of 345-360 (a 2-vCPU guest, the same
// minute; once every view was touched, 72-105 ns either way). What remains
// of that first-pass cost there is not a fault of this process's. Without
// MADV_POPULATE_WRITE (Linux 5.14) the faults happen as before.
static void accel__view_populate(const accel__arena_t* a, char* at) {
#ifdef MADV_POPULATE_WRITE
  size_t bytes = (size_t)a->used << a->shift;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  bytes = (bytes + page - 1) & ~(page - 1);
  if (bytes > 0) (void)madvise(at, bytes, MADV_POPULATE_WRITE);
#else
  (void)a;
  (void)at;
#endif
}

// Maps a fresh memfd at `at` as view 0, and the views of the bits of
// `views` (bit 0 always) as more views of it; false if any fails.
static bool accel__arena_views(char* at, uint64_t views) {
  int fd = memfd_create("accel-handles", MFD_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ftruncate(fd, (off_t)ACCEL__SPAN) == 0 &&
            mmap(at, ACCEL__SPAN, PROT_READ | PROT_WRITE,
                 MAP_SHARED | MAP_FIXED, fd, 0) != MAP_FAILED;
  close(fd);  // the views keep the memory
  for (uint32_t g = 1; ok && g < ACCEL__GENERATIONS; g++) {
    if ((views >> g) & 1u) ok = accel__view_map(at, g);
  }
  return ok;
}

// A new arena of records of 2^`shift` bytes, registered for lookups, or
// NULL. Caller holds the lock.
static accel__arena_t* accel__arena_new(uint32_t shift) {
  unsigned index = atomic_load_explicit(&accel__arena_count,
                                        memory_order_relaxed);
  if (index == ACCEL__ARENAS_MAX) return NULL;
  accel__arena_t* a = calloc(1, sizeof(*a));
  if (a == NULL) return NULL;
  a->shift = shift;
  a->index = index;
  a->capacity = (uint32_t)(ACCEL__SPAN >> shift);
  a->generation = calloc(a->capacity, sizeof(*a->generation));
  void* at = a->generation == NULL
                 ? MAP_FAILED
                 : accel__map_aligned(ACCEL__REGION, PROT_NONE,
                                      MAP_PRIVATE | MAP_ANONYMOUS |
                                          MAP_NORESERVE);
  if (at != MAP_FAILED && accel__arena_views(at, 1)) {
    a->base = at;
    a->views = ACCEL__GENERATIONS;
    a->mapped = 1;
  } else {
    if (at != MAP_FAILED) munmap(at, ACCEL__REGION);
    at = a->generation == NULL
             ? MAP_FAILED
             : accel__map_aligned(ACCEL__SPAN, PROT_READ | PROT_WRITE,
                                  MAP_PRIVATE | MAP_ANONYMOUS);
    if (at == MAP_FAILED) {
      free(a->generation);
      free(a);
      return NULL;
    }
    a->base = at;
    a->views = 1;
    a->mapped = 1;
  }
#if defined(ACCEL__LSAN)
  // Records point at heap memory (plugin handles, allocator blocks) that
  // LeakSanitizer must see as reachable; view 0 shows every record.
  __lsan_register_root_region(a->base, ACCEL__SPAN);
#endif
  atomic_store_explicit(&accel__arenas[index], a, memory_order_relaxed);
  atomic_store_explicit(&accel__arena_count, index + 1, memory_order_release);
  _Atomic(accel__arena_t*)* entry =
      &accel__arena_table[accel__table_index((uintptr_t)a->base)];
  if (atomic_load_explicit(entry, memory_order_relaxed) == NULL) {
    atomic_store_explicit(entry, a, memory_order_release);
  }
  return a;
}

// Zeroes a record of 2^`shift` bytes (at least 64, 64-aligned) with
// fixed-size stores, which beat a variable-length memset here.
static void accel__record_zero(void* record, uint32_t shift) {
  char* p = record;
  for (size_t i = 0; i < ((size_t)1 << shift) / 64; i++) {
    memset(p + 64 * i, 0, 64);
  }
}

accel__arena_t* accel__arena_search(uintptr_t p) {
  unsigned n = atomic_load_explicit(&accel__arena_count, memory_order_acquire);
  for (unsigned i = 0; i < n; i++) {
    accel__arena_t* a = atomic_load_explicit(&accel__arenas[i],
                                             memory_order_relaxed);
    if (accel__arena_has(a, p)) return a;
  }
  return NULL;
}

// The link word at the end of `slot`'s record (past every handle struct:
// accel__handle_new adds 8 bytes to the size it is asked for).
static _Atomic uint64_t* accel__link(const accel__arena_t* a, uint32_t slot) {
  return (_Atomic uint64_t*)(a->base + ((size_t)(slot + 1) << a->shift) -
                             sizeof(uint64_t));
}

// Appends a released slot to the FIFO; false when out of memory. Caller
// holds the lock.
static bool accel__ring_push(accel__handle_class_t* k, accel__arena_t* a,
                             uint32_t slot) {
  if (k->count == k->capacity) {
    size_t capacity = k->capacity ? k->capacity * 2 : 1024;
    struct accel__slot* ring = malloc(capacity * sizeof(*ring));
    if (ring == NULL) return false;
    for (size_t i = 0; i < k->count; i++) {
      ring[i] = k->ring[(k->head + i) & (k->capacity - 1)];
    }
    free(k->ring);
    k->ring = ring;
    k->head = 0;
    k->capacity = capacity;
  }
  k->ring[(k->head + k->count) & (k->capacity - 1)] =
      (struct accel__slot){.arena = a, .slot = slot};
  k->count++;
  return true;
}

// Moves the slots released since the last call into the FIFO, oldest
// first. Caller holds the lock.
static void accel__drain(accel__handle_class_t* k) {
  uint64_t node = atomic_exchange_explicit(&k->pending, 0,
                                           memory_order_acquire);
  uint64_t reversed = 0;  // oldest first
  while (node != 0) {
    accel__arena_t* a = atomic_load_explicit(
        &accel__arenas[(node >> 32) - 1], memory_order_relaxed);
    _Atomic uint64_t* link = accel__link(a, (uint32_t)node);
    uint64_t next = atomic_load_explicit(link, memory_order_relaxed);
    atomic_store_explicit(link, reversed, memory_order_relaxed);
    reversed = node;
    node = next;
  }
  while (reversed != 0) {
    accel__arena_t* a = atomic_load_explicit(
        &accel__arenas[(reversed >> 32) - 1], memory_order_relaxed);
    _Atomic uint64_t* link = accel__link(a, (uint32_t)reversed);
    uint64_t next = atomic_load_explicit(link, memory_order_relaxed);
    atomic_store_explicit(link, 0, memory_order_relaxed);
    // Out of memory for the FIFO: the slot is never reused (lost).
    (void)accel__ring_push(k, a, (uint32_t)reversed);
    reversed = next;
  }
}

void* accel__handle_new(size_t size) {
  uint32_t index = 0;
  size += sizeof(uint64_t);  // the link word (accel__link)
  while (index < ACCEL__CLASS_COUNT && (ACCEL__CLASS_MIN << index) < size) {
    index++;
  }
  if (index == ACCEL__CLASS_COUNT) return NULL;  // see the static asserts
  accel__handle_class_t* k = &accel__handle_classes[index];
  uint32_t shift = 6 + index;  // log2(ACCEL__CLASS_MIN) + index
  accel__arena_t* a = NULL;
  uint32_t slot = 0;
  accel__handle_lock();
  if (atomic_load_explicit(&k->pending, memory_order_relaxed) != 0) {
    accel__drain(k);
  }
  if (k->count <= ACCEL__QUARANTINE &&
      (k->current == NULL || k->current->used == k->current->capacity)) {
    accel__arena_t* fresh = accel__arena_new(shift);
    if (fresh != NULL) k->current = fresh;
  }
  if (k->count > ACCEL__QUARANTINE || k->current == NULL ||
      k->current->used == k->current->capacity) {
    if (k->count > 0) {  // the oldest released slot
      a = k->ring[k->head].arena;
      slot = k->ring[k->head].slot;
      k->head = (k->head + 1) & (k->capacity - 1);
      k->count--;
    }
  } else {
    a = k->current;
    slot = a->used++;
  }
  uint8_t view = 0;
  if (a != NULL) {
    view = atomic_load_explicit(&a->generation[slot], memory_order_relaxed);
    if (!((a->mapped >> view) & 1u)) {
      char* at = a->base + (size_t)view * ACCEL__SPAN;
      bool ok = a->private_views
                    ? mmap(at, ACCEL__SPAN, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
                           0) != MAP_FAILED
                    : accel__view_map(a->base, view);
      if (ok) {
        a->mapped |= (uint64_t)1 << view;
        if (!a->private_views) accel__view_populate(a, at);
      } else {
        // No mapping left for this generation: the slot waits for a
        // later attempt at the back of the FIFO, and this call fails.
        (void)accel__ring_push(k, a, slot);
        a = NULL;
      }
    }
  }
  accel__handle_unlock();
  if (a == NULL) return NULL;
  char* record = a->base + (size_t)view * ACCEL__SPAN + ((size_t)slot << shift);
  // Released records were zeroed in every view, unless the views are
  // copies of their own.
  if (a->private_views) accel__record_zero(record, shift);
  return record;
}

void accel__handle_free(void* record) {
  if (record == NULL) return;
  accel__arena_t* a = accel__arena_of(record);
  if (a == NULL) return;  // not a handle record: a caller bug
  size_t offset = (size_t)((char*)record - a->base);
  uint32_t slot = (uint32_t)((offset % ACCEL__SPAN) >> a->shift);
  // What a stale handle reads in any view until the slot is reused: a
  // count of zero, no device.
  accel__record_zero(record, a->shift);
  // Only this thread touches the slot until it is pushed below.
  uint8_t view = atomic_load_explicit(&a->generation[slot],
                                      memory_order_relaxed);
  atomic_store_explicit(&a->generation[slot],
                        (uint8_t)((view + 1u) & (a->views - 1)),
                        memory_order_relaxed);
  accel__handle_class_t* k = &accel__handle_classes[a->shift - 6];
  uint64_t node = ((uint64_t)(a->index + 1) << 32) | slot;
  _Atomic uint64_t* link = accel__link(a, slot);
  uint64_t head = atomic_load_explicit(&k->pending, memory_order_relaxed);
  do {
    atomic_store_explicit(link, head, memory_order_relaxed);
  } while (!atomic_compare_exchange_weak_explicit(
      &k->pending, &head, node, memory_order_release, memory_order_relaxed));
}

void accel__handle_dead(const char* what, const char* kind,
                        const void* handle) {
  accel__fail(ACCEL_ERROR_INVALID_ARGUMENT,
              "%s: %s %p was already released; ignored (a double release: "
              "the program releases a reference it no longer holds)",
              what, kind, handle);
  accel__log(ACCEL_LOG_ERROR, "%s", accel_last_error());
}

// In a fork() child: replaces the shared views of every arena by views of
// a private copy, so that parent and child stop writing each other's
// records. If that fails for an arena, each of its views becomes a private
// copy of its own: still correct, because a record is only ever reached
// through its handle's view, zeroed when made and when released, and the
// generations are private anyway.
static void accel__handle_unshare(void) {
  unsigned n = atomic_load_explicit(&accel__arena_count, memory_order_relaxed);
  for (unsigned i = 0; i < n; i++) {
    accel__arena_t* a =
        atomic_load_explicit(&accel__arenas[i], memory_order_relaxed);
    if (a->views == 1) continue;
    size_t bytes = (size_t)a->used << a->shift;
    void* copy = malloc(bytes > 0 ? bytes : 1);
    if (copy == NULL) continue;  // nothing better to do in a child
    memcpy(copy, a->base, bytes);
    if (accel__arena_views(a->base, a->mapped)) {
      memcpy(a->base, copy, bytes);
    } else {
      a->private_views = true;
      for (uint32_t g = 0; g < a->views; g++) {
        if (!((a->mapped >> g) & 1u)) continue;
        char* view = a->base + (size_t)g * ACCEL__SPAN;
        if (mmap(view, ACCEL__SPAN, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
                 0) != MAP_FAILED) {
          memcpy(view, copy, bytes);
        }
      }
    }
    free(copy);
  }
}

void accel__handle_fork_lock(bool lock) {
  if (lock) {
    accel__handle_lock();
  } else {
    accel__handle_unlock();
  }
}

void accel__handle_fork_child(void) {
  accel__handle_unshare();
  accel__handle_unlock();
}
