// SPDX-License-Identifier: MIT
//
// The source the ROCm plugin embeds for its JIT fallback (ops_impl.h then
// ops.hip, as builtin.c hands it to hiprtc) must compile with the real
// hiprtc of this machine's HIP runtime, with the plugin's options. hiprtc
// needs no GPU, so this runs in CI where libamdhip64 is installed and
// skips (77) where it is not. gfx906 stands for a GPU without an embedded
// code object; gfx90a with features checks the full gcnArchName form.
// (Debian's HIP 5.2.3 hiprtc crashes on gfx1100, which it predates.)
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

typedef int (*create_fn_t)(void**, const char*, const char*, int, const char**,
                           const char**);
typedef int (*compile_fn_t)(void*, int, const char**);
typedef int (*size_fn_t)(void*, size_t*);
typedef int (*get_fn_t)(void*, char*);
typedef int (*destroy_fn_t)(void**);

// Appends the file at `path` to the heap string `*text`.
static int append_file(char** text, const char* path) {
  FILE* f = fopen(path, "rb");
  if (f == NULL) return -1;
  size_t used = *text != NULL ? strlen(*text) : 0;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char* grown = realloc(*text, used + (size_t)n + 2);
  if (grown == NULL || fread(grown + used, 1, (size_t)n, f) != (size_t)n) {
    fclose(f);
    free(grown != NULL ? grown : *text);
    *text = NULL;
    return -1;
  }
  fclose(f);
  grown[used + (size_t)n] = '\n';
  grown[used + (size_t)n + 1] = '\0';
  *text = grown;
  return 0;
}

#define SYM(h, name, type) ((type)(uintptr_t)dlsym((h), (name)))

static void compile_for(test_result_t* test_result_, const char* arch) {
  void* h = dlopen("libamdhip64.so", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) h = dlopen("libhiprtc.so", RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) SKIP("no HIP runtime with hiprtc here");
  create_fn_t create = SYM(h, "hiprtcCreateProgram", create_fn_t);
  compile_fn_t compile = SYM(h, "hiprtcCompileProgram", compile_fn_t);
  size_fn_t log_size = SYM(h, "hiprtcGetProgramLogSize", size_fn_t);
  get_fn_t get_log = SYM(h, "hiprtcGetProgramLog", get_fn_t);
  size_fn_t code_size = SYM(h, "hiprtcGetCodeSize", size_fn_t);
  get_fn_t get_code = SYM(h, "hiprtcGetCode", get_fn_t);
  destroy_fn_t destroy = SYM(h, "hiprtcDestroyProgram", destroy_fn_t);
  if (create == NULL || compile == NULL || destroy == NULL) {
    dlclose(h);
    SKIP("the HIP runtime has no hiprtc");
  }
  char* source = NULL;
  ASSERT_EQ(append_file(&source, ACCEL_SDK_INCLUDE_DIR "/accel/philox.h"), 0);
  ASSERT_EQ(append_file(&source, ACCEL_ROCM_KERNEL_DIR "/ops_impl.h"), 0);
  ASSERT_EQ(append_file(&source, ACCEL_ROCM_KERNEL_DIR "/ops.hip"), 0);
  void* prog = NULL;
  ASSERT_EQ(create(&prog, source, "accel_rocm_ops.hip", 0, NULL, NULL), 0);
  char opt[96];
  snprintf(opt, sizeof(opt), "--gpu-architecture=%s", arch);
  const char* opts[] = {opt, "-O3", "-ffp-contract=off"};  // as builtin.c
  int rc = compile(prog, 3, opts);
  size_t n = 0;
  log_size(prog, &n);
  char* log = calloc(1, n + 1);
  ASSERT_NOT_NULL(log);
  get_log(prog, log);
  if (rc != 0) fprintf(stderr, "hiprtc log for %s:\n%s\n", arch, log);
  ASSERT_EQ(rc, 0);
  size_t size = 0;
  ASSERT_EQ(code_size(prog, &size), 0);
  ASSERT_GT(size, 64);
  char* code = malloc(size);
  ASSERT_NOT_NULL(code);
  ASSERT_EQ(get_code(prog, code), 0);
  // A code object (ELF) or an offload bundle, holding every kernel name.
  ASSERT(memcmp(code, "\177ELF", 4) == 0 ||
         memcmp(code, "__CLANG_OFFLOAD_BUNDLE__", 24) == 0);
  printf("hiprtc: %zu bytes of code for %s\n", size, arch);
  destroy(&prog);
  free(code);
  free(log);
  free(source);
  dlclose(h);
}

TEST(hiprtc_gfx906) { compile_for(test_result_, "gfx906"); }
TEST(hiprtc_gfx90a_features) {
  compile_for(test_result_, "gfx90a:sramecc+:xnack-");
}

int main(int argc, char** argv) { return test_main(argc, argv); }
