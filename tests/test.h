// SPDX-License-Identifier: MIT
//
// A tiny test runner in the spirit of libuv's task.h.
//
//   TEST(name) { ASSERT_EQ(1 + 1, 2); }
//   int main(int argc, char** argv) { return test_main(argc, argv); }
//
// Each TEST registers itself through a constructor. test_main() runs them in
// order (or only the one named in argv[1]), prints one line per test and
// returns 0, 1 on a failure, or 77 (CTest's SKIP_RETURN_CODE) when every
// test that ran was skipped. Assertions print file, line, expression and
// the values, then return from the test.
#ifndef ACCEL_TESTS_TEST_H_
#define ACCEL_TESTS_TEST_H_

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_EXIT_SKIP 77

typedef enum test_result { TEST_PASS, TEST_FAIL, TEST_SKIP } test_result_t;
typedef void (*test_fn_t)(test_result_t* result);

typedef struct test_entry {
  const char* name;
  test_fn_t fn;
} test_entry_t;

#define TEST_MAX 256
static test_entry_t test_registry[TEST_MAX];
static int test_count;

static inline void test_register(const char* name, test_fn_t fn) {
  if (test_count < TEST_MAX) {
    test_registry[test_count].name = name;
    test_registry[test_count].fn = fn;
    test_count++;
  }
}

#define TEST(name)                                                 \
  static void test_##name(test_result_t* test_result_);            \
  __attribute__((constructor)) static void test_reg_##name(void) { \
    test_register(#name, test_##name);                             \
  }                                                                \
  static void test_##name(test_result_t* test_result_)

// Marks the running test skipped with a reason and returns from it.
#define SKIP(...)              \
  do {                         \
    printf("  skip: ");        \
    printf(__VA_ARGS__);       \
    printf("\n");              \
    *test_result_ = TEST_SKIP; \
    return;                    \
  } while (0)

#define TEST_FAIL_AT_(...)                            \
  do {                                                \
    fprintf(stderr, "  %s:%d: ", __FILE__, __LINE__); \
    fprintf(stderr, __VA_ARGS__);                     \
    fprintf(stderr, "\n");                            \
    *test_result_ = TEST_FAIL;                        \
    return;                                           \
  } while (0)

#define ASSERT(expr)                                        \
  do {                                                      \
    if (!(expr)) TEST_FAIL_AT_("ASSERT(%s) failed", #expr); \
  } while (0)

#define ASSERT_INT_OP_(a, op, b)                                            \
  do {                                                                      \
    intmax_t a_ = (intmax_t)(a);                                            \
    intmax_t b_ = (intmax_t)(b);                                            \
    if (!(a_ op b_))                                                        \
      TEST_FAIL_AT_("ASSERT(%s %s %s) failed: %jd vs %jd", #a, #op, #b, a_, \
                    b_);                                                    \
  } while (0)

#define ASSERT_EQ(a, b) ASSERT_INT_OP_(a, ==, b)
#define ASSERT_NE(a, b) ASSERT_INT_OP_(a, !=, b)
#define ASSERT_LT(a, b) ASSERT_INT_OP_(a, <, b)
#define ASSERT_LE(a, b) ASSERT_INT_OP_(a, <=, b)
#define ASSERT_GT(a, b) ASSERT_INT_OP_(a, >, b)
#define ASSERT_GE(a, b) ASSERT_INT_OP_(a, >=, b)

#define ASSERT_NULL(p)                                               \
  do {                                                               \
    if ((p) != NULL) TEST_FAIL_AT_("ASSERT(%s == NULL) failed", #p); \
  } while (0)
#define ASSERT_NOT_NULL(p)                                           \
  do {                                                               \
    if ((p) == NULL) TEST_FAIL_AT_("ASSERT(%s != NULL) failed", #p); \
  } while (0)

#define ASSERT_STR_EQ(a, b)                                                   \
  do {                                                                        \
    const char* a_ = (a);                                                     \
    const char* b_ = (b);                                                     \
    if (a_ == NULL || b_ == NULL || strcmp(a_, b_) != 0)                      \
      TEST_FAIL_AT_("ASSERT_STR_EQ(%s, %s) failed: \"%s\" vs \"%s\"", #a, #b, \
                    a_ ? a_ : "(null)", b_ ? b_ : "(null)");                  \
  } while (0)

// Asserts that string `hay` contains `needle`.
#define ASSERT_STR_CONTAINS(hay, needle)                                       \
  do {                                                                         \
    const char* h_ = (hay);                                                    \
    const char* n_ = (needle);                                                 \
    if (h_ == NULL || strstr(h_, n_) == NULL)                                  \
      TEST_FAIL_AT_("ASSERT_STR_CONTAINS(%s, %s) failed: \"%s\" lacks \"%s\"", \
                    #hay, #needle, h_ ? h_ : "(null)", n_);                    \
  } while (0)

#define ASSERT_MEM_EQ(a, b, n)                                       \
  do {                                                               \
    if (memcmp((a), (b), (n)) != 0)                                  \
      TEST_FAIL_AT_("ASSERT_MEM_EQ(%s, %s, %s) failed", #a, #b, #n); \
  } while (0)

// Asserts a call returned ACCEL_OK, printing accel_last_error() otherwise.
// Needs <accel/accel.h> included before use.
#define ASSERT_OK(call)                                      \
  do {                                                       \
    int s_ = (int)(call);                                    \
    if (s_ != 0)                                             \
      TEST_FAIL_AT_("%s returned %s: %s", #call,             \
                    accel_status_string((accel_status_t)s_), \
                    accel_last_error());                     \
  } while (0)

// Asserts a call returned `status`.
#define ASSERT_STATUS(call, status)                                   \
  do {                                                                \
    int s_ = (int)(call);                                             \
    if (s_ != (int)(status))                                          \
      TEST_FAIL_AT_("%s returned %s, expected %s (%s)", #call,        \
                    accel_status_string((accel_status_t)s_), #status, \
                    accel_last_error());                              \
  } while (0)

static inline int test_main(int argc, char** argv) {
  int failed = 0, skipped = 0, ran = 0;
  setvbuf(stdout, NULL, _IONBF, 0);
  for (int i = 0; i < test_count; i++) {
    if (argc > 1 && strcmp(argv[1], test_registry[i].name) != 0) continue;
    test_result_t result = TEST_PASS;
    printf("[ RUN  ] %s\n", test_registry[i].name);
    test_registry[i].fn(&result);
    ran++;
    if (result == TEST_FAIL) failed++;
    if (result == TEST_SKIP) skipped++;
    printf("[ %s ] %s\n",
           result == TEST_PASS   ? " OK "
           : result == TEST_SKIP ? "SKIP"
                                 : "FAIL",
           test_registry[i].name);
  }
  printf("%d passed, %d failed, %d skipped\n", ran - failed - skipped, failed,
         skipped);
  if (ran == 0) {
    fprintf(stderr, "no test matched\n");
    return 1;
  }
  if (failed) return 1;
  return skipped == ran ? TEST_EXIT_SKIP : 0;
}

#endif  // ACCEL_TESTS_TEST_H_
