// SPDX-License-Identifier: MIT
//
// The arenas behind handle records (handle.c owns them), shown here only so
// that accel__handle_current(), which every call taking a handle makes,
// inlines into its callers: a table load, a range check and a generation
// byte, instead of two calls across files (a few ns on every small copy).
// Nothing outside handle.c writes these.
#ifndef ACCEL_CORE_HANDLE_H
#define ACCEL_CORE_HANDLE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ACCEL__SPAN ((size_t)4 << 20)  // bytes of records per arena
#define ACCEL__REGION_SHIFT 28         // 256 MiB: every view of one arena
#define ACCEL__TABLE 4096u  // arena lookup by address, direct-mapped

typedef struct accel__arena {
  char* base;         // view 0; view g starts at base + g * ACCEL__SPAN
  uint32_t views;     // ACCEL__GENERATIONS, or 1 without shared memory
  uint32_t shift;     // log2 of the record size
  uint32_t capacity;  // records per view
  uint32_t used;      // slots handed out at least once (under the lock)
  uint32_t index;     // in accel__arenas
  uint64_t mapped;    // bit g: view g is mapped yet (under the lock)
  bool private_views;  // fork() child whose views could not be shared
  _Atomic uint8_t* generation;  // per slot: the view of its live record
} accel__arena_t;

// The first arena of each 256 MiB region of the address space (modulo the
// table's size), where lookups look first.
extern _Atomic(accel__arena_t*) accel__arena_table[ACCEL__TABLE];

static inline size_t accel__table_index(uintptr_t p) {
  return (size_t)(p >> ACCEL__REGION_SHIFT) & (ACCEL__TABLE - 1);
}

static inline bool accel__arena_has(const accel__arena_t* a, uintptr_t p) {
  uintptr_t base = (uintptr_t)a->base;
  return p >= base && p - base < (uintptr_t)a->views * ACCEL__SPAN;
}

// The arena holding `p` when the table's entry for its region is another
// one (two regions that share an entry): every arena is searched. NULL
// when `p` is in none.
accel__arena_t* accel__arena_search(uintptr_t p);

// The arena holding `handle`: the table's entry for its region, else a
// search of them all; NULL when it is in none.
static inline accel__arena_t* accel__arena_of(const void* handle) {
  uintptr_t p = (uintptr_t)handle;
  accel__arena_t* a = atomic_load_explicit(
      &accel__arena_table[accel__table_index(p)], memory_order_acquire);
  if (__builtin_expect(a == NULL || !accel__arena_has(a, p), 0)) {
    a = accel__arena_search(p);
  }
  return a;
}

// Whether `handle` names the live record of its slot (see internal.h).
static inline bool accel__handle_current(const void* handle) {
  accel__arena_t* a = accel__arena_of(handle);
  if (a == NULL || a->views == 1) return true;
  size_t offset = (size_t)((const char*)handle - a->base);
  size_t view = offset / ACCEL__SPAN;
  size_t slot = (offset % ACCEL__SPAN) >> a->shift;
  return atomic_load_explicit(&a->generation[slot], memory_order_relaxed) ==
         view;
}

#endif  // ACCEL_CORE_HANDLE_H
