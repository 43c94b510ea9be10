// SPDX-License-Identifier: MIT
//
// The fake hiprtc of libfakehip (see fakehip.c): "compiles" a program into
// a tagged blob holding the target arch and the source, which fakehip.c's
// hipModuleLoadData accepts for that arch only, so the ROCm plugin's JIT
// path and its cache run end to end. FAKEHIP_RTC_FAIL makes compilation
// fail with a log. Left out of libfakehip-nortc.so.
#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__ 1
#endif
#include <hip/hiprtc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakehip.h"

// ---------------------------------------------------------------------------
// hiprtc: "compiles" to a tagged blob holding the arch and the source
// ---------------------------------------------------------------------------
struct _hiprtcProgram {
  char* source;
  char* code;
  size_t code_size;
  char log[256];
};

FAKEHIP_API const char* hiprtcGetErrorString(hiprtcResult result) {
  return result == HIPRTC_SUCCESS ? "HIPRTC_SUCCESS" : "HIPRTC_ERROR (fake)";
}

FAKEHIP_API hiprtcResult hiprtcCreateProgram(hiprtcProgram* out,
                                             const char* src, const char* name,
                                             int nheaders, const char** headers,
                                             const char** include_names) {
  (void)name, (void)nheaders, (void)headers, (void)include_names;
  hiprtcProgram p = calloc(1, sizeof(*p));
  if (p == NULL || (p->source = strdup(src)) == NULL) {
    free(p);
    return HIPRTC_ERROR_OUT_OF_MEMORY;
  }
  *out = p;
  return HIPRTC_SUCCESS;
}

FAKEHIP_API hiprtcResult hiprtcCompileProgram(hiprtcProgram p, int nopts,
                                              const char** opts) {
  const char* arch = NULL;
  for (int i = 0; i < nopts; i++) {
    if (strncmp(opts[i], "--gpu-architecture=", 19) == 0) arch = opts[i] + 19;
  }
  if (getenv("FAKEHIP_RTC_FAIL") != NULL || arch == NULL) {
    snprintf(p->log, sizeof(p->log), "fakehip: compilation failed on request");
    return HIPRTC_ERROR_COMPILATION;
  }
  size_t size =
      sizeof(FAKEHIP_RTC_MAGIC) - 1 + strlen(arch) + 1 + strlen(p->source) + 1;
  free(p->code);
  p->code = malloc(size);
  if (p->code == NULL) return HIPRTC_ERROR_OUT_OF_MEMORY;
  snprintf(p->code, size, "%s%s\n%s", FAKEHIP_RTC_MAGIC, arch, p->source);
  p->code_size = size;
  fprintf(stderr, "fakehip: hiprtc compiled %zu bytes for %s\n", size, arch);
  return HIPRTC_SUCCESS;
}

FAKEHIP_API hiprtcResult hiprtcGetProgramLogSize(hiprtcProgram p,
                                                 size_t* size) {
  *size = strlen(p->log) + 1;
  return HIPRTC_SUCCESS;
}

FAKEHIP_API hiprtcResult hiprtcGetProgramLog(hiprtcProgram p, char* log) {
  memcpy(log, p->log, strlen(p->log) + 1);
  return HIPRTC_SUCCESS;
}

FAKEHIP_API hiprtcResult hiprtcGetCodeSize(hiprtcProgram p, size_t* size) {
  *size = p->code_size;
  return HIPRTC_SUCCESS;
}

FAKEHIP_API hiprtcResult hiprtcGetCode(hiprtcProgram p, char* code) {
  if (p->code == NULL) return HIPRTC_ERROR_INVALID_INPUT;
  memcpy(code, p->code, p->code_size);
  return HIPRTC_SUCCESS;
}

FAKEHIP_API hiprtcResult hiprtcDestroyProgram(hiprtcProgram* p) {
  if (*p != NULL) {
    free((*p)->source);
    free((*p)->code);
    free(*p);
    *p = NULL;
  }
  return HIPRTC_SUCCESS;
}
