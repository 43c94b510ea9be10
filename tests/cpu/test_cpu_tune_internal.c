// SPDX-License-Identifier: MIT
//
// The rules of the GEMM engine timing's second pass
// (plugins/cpu/engine_tune.c), given times rather than measured: only
// engines within 1.5x of the fastest first time are timed again, and only
// when there are two of them; each keeps the better of its two times, so
// a second pass can overturn the first, and an engine that fails its
// second timing keeps its first.
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cpu.h"
#include "test.h"

TEST(clear_winner_is_not_timed_again) {
  const double first[3] = {1.0, 2.0, 3.0};
  bool again[3] = {true, true, true};
  ASSERT_EQ(accel_cpu_tune_again(first, 3, again), 0);
  for (int i = 0; i < 3; i++) ASSERT_EQ(again[i], false);
}

TEST(close_engines_are_timed_again) {
  // 1.4 and 1.5 are within 1.5x of 1.0; 1.6 is not; -1 failed.
  const double first[5] = {1.0, 1.4, 1.6, -1.0, 1.5};
  bool again[5];
  ASSERT_EQ(accel_cpu_tune_again(first, 5, again), 3);
  ASSERT_EQ(again[0], true);
  ASSERT_EQ(again[1], true);
  ASSERT_EQ(again[2], false);
  ASSERT_EQ(again[3], false);
  ASSERT_EQ(again[4], true);
  // The fastest failed its first timing: the rest still compare.
  const double failed_first[3] = {-1.0, 2.0, 2.5};
  ASSERT_EQ(accel_cpu_tune_again(failed_first, 3, again), 2);
  ASSERT_EQ(again[0], false);
  // Nothing ran.
  const double none[2] = {-1.0, 0.0};
  ASSERT_EQ(accel_cpu_tune_again(none, 2, again), 0);
}

TEST(second_pass_can_overturn_the_first) {
  const double first[2] = {1.0, 1.3};
  const double again[2] = {1.2, 0.9};
  ASSERT_EQ(accel_cpu_tune_winner(first, again, 2), 1);
}

TEST(each_engine_keeps_its_better_time) {
  // Engine 0 was slower the second time; its first time still wins.
  const double first[2] = {1.0, 1.3};
  const double again[2] = {1.4, 1.2};
  ASSERT_EQ(accel_cpu_tune_winner(first, again, 2), 0);
  // A failed second timing keeps the first.
  const double failed[2] = {-1.0, 1.05};
  const double first2[2] = {1.0, 1.1};
  ASSERT_EQ(accel_cpu_tune_winner(first2, failed, 2), 0);
  // Not timed again at all: the first pass decides.
  const double untimed[3] = {-1.0, -1.0, -1.0};
  const double first3[3] = {3.0, 1.0, 2.0};
  ASSERT_EQ(accel_cpu_tune_winner(first3, untimed, 3), 1);
}

TEST(nothing_ran_no_winner) {
  const double first[2] = {-1.0, -1.0};
  const double again[2] = {-1.0, -1.0};
  ASSERT_EQ(accel_cpu_tune_winner(first, again, 2), -1);
}

int main(int argc, char** argv) { return test_main(argc, argv); }
