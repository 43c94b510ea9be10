// SPDX-License-Identifier: MIT
//
// CPU kernels for test_cpu_inline.c, built as a shared object and loaded as
// an accel module on cpu:0. They let the test hold a stream busy for as
// long as it likes: a kernel waits until the test opens a gate.
#include <accel/cpu_kernel.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

// Shared with test_cpu_inline.c: the host memory a gate kernel watches.
// Fields are accessed with __atomic builtins on both sides.
typedef struct inline_gate {
  int open;         // the test sets it to let the kernel finish
  int entered;      // the kernel sets it once running
  uint64_t thread;  // the kernel's pthread_self(), as an integer
} inline_gate_t;

// args: [0] uint64_t host address of an inline_gate_t (a value argument);
// [1] uint32_t* out (a buffer); [2] uint32_t value; [3] uint32_t count.
// Marks the gate entered, waits until it is open, then writes `value` to
// out[0 .. count). One block.
static void inline_gate_body(void* const* args) {
  uint64_t address;
  uint32_t value, count;
  memcpy(&address, args[0], sizeof(address));
  uint32_t* out = *(uint32_t* const*)args[1];
  memcpy(&value, args[2], sizeof(value));
  memcpy(&count, args[3], sizeof(count));
  inline_gate_t* gate = (inline_gate_t*)(uintptr_t)address;
  uint64_t self = 0;
  pthread_t me = pthread_self();
  memcpy(&self, &me, sizeof(me) < sizeof(self) ? sizeof(me) : sizeof(self));
  __atomic_store_n(&gate->thread, self, __ATOMIC_RELAXED);
  __atomic_store_n(&gate->entered, 1, __ATOMIC_RELEASE);
  while (!__atomic_load_n(&gate->open, __ATOMIC_ACQUIRE)) {
    struct timespec pause = {0, 50000};  // 50 us
    nanosleep(&pause, NULL);
  }
  for (uint32_t i = 0; i < count; i++) out[i] = value;
}

// Two names for the same body, so that the plugin's per-kernel record of
// quick launches keeps them apart: `inline_gate_queued` only ever runs
// with its gate closed (slow, so never run inline), `inline_gate_inline`
// is first run with its gate open (quick) so that later launches of it on
// an idle stream run on the launching thread.
ACCEL_CPU_KERNEL(inline_gate_queued) {
  (void)ctx;
  inline_gate_body(args);
}

ACCEL_CPU_KERNEL(inline_gate_inline) {
  (void)ctx;
  inline_gate_body(args);
}
