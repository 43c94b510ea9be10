// SPDX-License-Identifier: MIT
//
// The layouts of the state buffers two CPU test kernels share with the
// suite: add_one_cpu.c writes them, sdk/conform/conform_launch_cpu.c
// (launch.cpu_workers, launch.shared_streams) reads them. One copy, so
// the two cannot drift apart. Word indices, uint32_t each.
#ifndef ACCEL_CONFORM_KERNELS_CONFORM_CPU_WORDS_H_
#define ACCEL_CONFORM_KERNELS_CONFORM_CPU_WORDS_H_

// State words of accel_conform_workers (uint32_t each), then the busy
// counters, one per worker index below the bound.
enum {
  CONFORM_WORKERS_RUNNING,     // blocks between their start and end marks
  CONFORM_WORKERS_COLLISIONS,  // collisions seen, all blocks together
  CONFORM_WORKERS_WORKER,      // the first collision: worker,
  CONFORM_WORKERS_BLOCK,       // block_idx[0]
  CONFORM_WORKERS_KIND,        // and what it was (1 to 4, below)
  CONFORM_WORKERS_OVERLAPPED,  // blocks that saw another one running
  CONFORM_WORKERS_CALLS,       // blocks run
  CONFORM_WORKERS_LONELY,      // blocks that waited out `wait_us` alone
  CONFORM_WORKERS_BUSY         // busy[0] starts here
};

// State words of accel_conform_shared_tag (uint32_t each), shared by every
// launch of one check.
enum {
  CONFORM_TAG_RUNNING,     // blocks between their start and end marks
  CONFORM_TAG_COLLISIONS,  // blocks whose shared memory changed under them
  CONFORM_TAG_FIRST,       // the first such block's tag, then the word
  CONFORM_TAG_WORD,        // that changed and the value found there
  CONFORM_TAG_FOUND,
  CONFORM_TAG_OVERLAPPED,  // blocks that saw another one running
  CONFORM_TAG_CALLS,       // blocks run
  CONFORM_TAG_LONELY,      // blocks that waited out `wait_us` alone
  CONFORM_TAG_WORDS
};

#endif  // ACCEL_CONFORM_KERNELS_CONFORM_CPU_WORDS_H_
