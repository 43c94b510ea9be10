// SPDX-License-Identifier: MIT
//
// A stand-in for CLBlast (libclblast.so.1) whose GEMMs always fail with
// CLBlastUnexpectedError (-2039), so tests can check that the OpenCL
// plugin falls back to its own GEMM kernel at run time. Each call appends
// a line to the file named by FAKE_CLBLAST_MARK, when set, so the test
// can tell that CLBlast was really tried. The parameters follow
// CLBlastSgemm/CLBlastHgemm of CLBlast's C API (handles as void*).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FAKE_CLBLAST_UNEXPECTED_ERROR (-2039)

static int fake_clblast_fail(const char* name) {
  const char* mark = getenv("FAKE_CLBLAST_MARK");
  FILE* f = mark != NULL ? fopen(mark, "a") : NULL;
  if (f != NULL) {
    fprintf(f, "%s\n", name);
    fclose(f);
  }
  return FAKE_CLBLAST_UNEXPECTED_ERROR;
}

__attribute__((visibility("default"))) int CLBlastSgemm(
    int layout, int ta, int tb, size_t m, size_t n, size_t k, float alpha,
    void* a, size_t a_off, size_t lda, void* b, size_t b_off, size_t ldb,
    float beta, void* c, size_t c_off, size_t ldc, void** queue, void** event) {
  (void)layout, (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha;
  (void)a, (void)a_off, (void)lda, (void)b, (void)b_off, (void)ldb;
  (void)beta, (void)c, (void)c_off, (void)ldc, (void)queue, (void)event;
  return fake_clblast_fail("CLBlastSgemm");
}

__attribute__((visibility("default"))) int CLBlastHgemm(
    int layout, int ta, int tb, size_t m, size_t n, size_t k, uint16_t alpha,
    void* a, size_t a_off, size_t lda, void* b, size_t b_off, size_t ldb,
    uint16_t beta, void* c, size_t c_off, size_t ldc, void** queue,
    void** event) {
  (void)layout, (void)ta, (void)tb, (void)m, (void)n, (void)k, (void)alpha;
  (void)a, (void)a_off, (void)lda, (void)b, (void)b_off, (void)ldb;
  (void)beta, (void)c, (void)c_off, (void)ldc, (void)queue, (void)event;
  return fake_clblast_fail("CLBlastHgemm");
}
