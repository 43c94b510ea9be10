// SPDX-License-Identifier: MIT
//
// A test-only NVTX v3 injection library. NVTX's header-only code in
// libaccel dlopens the file named by NVTX_INJECTION64_PATH at its first
// call and calls InitializeInjectionNvtx2 with the export-table getter;
// this library fills the core module's RangePushA and RangePop slots and
// appends "push NAME" and "pop" lines to the file named by
// ACCEL_TEST_NVTX_LOG.
#include <stdio.h>
#include <stdlib.h>

#include "nvtx.h"

static int depth;

static void note(const char* what, const char* name) {
  const char* path = getenv("ACCEL_TEST_NVTX_LOG");
  FILE* f = path != NULL ? fopen(path, "a") : NULL;
  if (f == NULL) return;
  fprintf(f, "%s%s%s\n", what, name != NULL ? " " : "",
          name != NULL ? name : "");
  fclose(f);
}

static int NVTX_API inject_push(const char* message) {
  note("push", message);
  return depth++;
}

static int NVTX_API inject_pop(void) {
  note("pop", NULL);
  return --depth;
}

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_export_table) {
  const NvtxExportTableCallbacks* callbacks =
      (const NvtxExportTableCallbacks*)get_export_table(NVTX_ETID_CALLBACKS);
  NvtxFunctionTable table = NULL;
  unsigned int size = 0;
  if (callbacks == NULL ||
      !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &table, &size) ||
      size <= NVTX_CBID_CORE_RangePop) {
    return 0;  // NVTX keeps its no-op stubs
  }
  *table[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)inject_push;
  *table[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)inject_pop;
  return 1;
}
