// SPDX-License-Identifier: MIT
//
// The CPU plugin's GEMM engines: the BLAS libraries (blas.c), oneDNN
// (onednn.c), and the choice between them per dtype and size class
// (engine.c, engine_tune.c, engine_cache.c). A part of cpu.h, which
// includes it where the types it uses are declared; include cpu.h, not
// this file.
#ifndef ACCEL_PLUGINS_CPU_ENGINE_H_
#define ACCEL_PLUGINS_CPU_ENGINE_H_

#ifndef ACCEL_PLUGINS_CPU_CPU_H_
#error "include cpu.h, which includes engine.h"
#endif

// One of the own engine's micro-kernels (an AVX-512 or an AVX2 build).
typedef struct accel_cpu_gk_isa accel_cpu_gk_isa_t;

// ---------------------------------------------------------------------------
// BLAS (blas.c)
// ---------------------------------------------------------------------------

// cblas_sgemm's signature (enums passed as int).
typedef void (*accel_cpu_sgemm_fn_t)(int order, int trans_a, int trans_b, int m,
                                     int n, int k, float alpha, const float* a,
                                     int lda, const float* b, int ldb,
                                     float beta, float* c, int ldc);

// A loaded BLAS library. Immutable once loaded.
struct accel_cpu_blas {
  void* handle;  // from dlopen
  accel_cpu_sgemm_fn_t sgemm;
  // Whether the library runs one call on several threads of its own: then
  // GEMM hands it the whole product and leaves the pool idle; otherwise
  // GEMM splits C into tiles across the pool.
  bool threaded;
  // The engine slot the library belongs in: ACCEL_CPU_ENGINE_OPENBLAS or
  // _BLIS when it identifies itself as one, else ACCEL_CPU_ENGINE_BLAS.
  int engine;
  char description[96];  // "openblas-0.3.21:Zen:threads"
};

// dlopen()s the BLAS `name` (a soname or path) and checks it has
// cblas_sgemm; OpenBLAS is limited to `width` threads. Returns NULL, with
// the reason appended to `tried`, when it cannot be used.
accel_cpu_blas_t* accel_cpu_blas_load(const char* name, uint32_t width,
                                      char* tried, size_t tried_size);

// Unloads a BLAS. NULL is ignored.
void accel_cpu_blas_destroy(accel_cpu_blas_t* blas);

// ---------------------------------------------------------------------------
// oneDNN (onednn.c)
// ---------------------------------------------------------------------------

// One product C = alpha * op(A) op(B) + beta * C, row-major, as the GEMM
// engines take it. A and B have `ab_dtype`, C `c_dtype`.
typedef struct accel_cpu_matmul {
  uint32_t ab_dtype, c_dtype;
  bool trans_a, trans_b;
  uint64_t m, n, k;
  float alpha, beta;
  const void* a;
  uint64_t lda;
  const void* b;
  uint64_t ldb;
  void* c;
  uint64_t ldc;
} accel_cpu_matmul_t;

// dlopen()s libdnnl.so.2 (oneDNN 2.x) and creates its CPU engine; its
// OpenMP threads are limited to `width` per call. With `pause_idle`, the
// OpenMP team a matmul leaves spinning is paused before the same thread
// starts other threaded work (accel_cpu_omp_quiet). Returns NULL, with the
// reason appended to `tried`, when it cannot be used.
accel_cpu_onednn_t* accel_cpu_onednn_load(uint32_t width, bool pause_idle,
                                          char* tried, size_t tried_size);

// Ends the OpenMP threads of the team the calling thread started in its
// last oneDNN matmul, if they may still spin; nothing otherwise. Called
// before the thread starts other threaded work. Cheap when nothing is
// to be done (a thread-local load).
void accel_cpu_omp_quiet(void);

// Releases the engine and unloads oneDNN. NULL is ignored.
void accel_cpu_onednn_destroy(accel_cpu_onednn_t* onednn);

// "onednn-2.6.3:omp".
const char* accel_cpu_onednn_description(const accel_cpu_onednn_t* onednn);

// Whether oneDNN multiplies `dtype` (f32, f16, bf16) with an optimised
// kernel on this CPU (f16/bf16 need AVX-512 or AMX extensions).
bool accel_cpu_onednn_native(const accel_cpu_onednn_t* onednn,
                             uint32_t dtype);

// Runs `mm` as one matmul primitive on the calling thread (and oneDNN's
// own), reusing the primitive kept for its shape (onednn.c). Thread-safe:
// calls of one shape from several threads each get their own primitive's
// objects. ACCEL_ERROR_UNSUPPORTED when oneDNN has no kernel for its
// dtypes, ACCEL_ERROR_BACKEND when a oneDNN call fails; the reason in
// `message`.
accel_status_t accel_cpu_onednn_gemm(const accel_cpu_onednn_t* onednn,
                                     const accel_cpu_matmul_t* mm,
                                     char* message, size_t size);

// ---------------------------------------------------------------------------
// GEMM engines (engine.c, engine_cache.c)
// ---------------------------------------------------------------------------

// The engines a GEMM can run on. For f16/bf16 a BLAS engine means: A and
// B converted to f32 in panels, then that library's sgemm; oneDNN means
// its own f16/bf16 matmul where it has an optimised one (`native`), else
// the conversion and its f32 matmul; oneDNN-f32 always means the
// conversion and oneDNN's f32 matmul (for f32 it is oneDNN). Where oneDNN
// has a native half kernel without AMX (AVX512-BF16 alone), its f32
// matmul on converted data can be the faster of the two: 1.7x on a 2-vCPU
// Emerald Rapids guest (docs/cpu-backend.md).
typedef enum accel_cpu_engine_id {
  ACCEL_CPU_ENGINE_OPENBLAS = 0,    // libopenblas.so.0
  ACCEL_CPU_ENGINE_BLIS = 1,        // libblis.so.4
  ACCEL_CPU_ENGINE_BLAS = 2,        // another ACCEL_CPU_BLAS library, or libblas.so.3
  ACCEL_CPU_ENGINE_ONEDNN = 3,      // libdnnl.so.2
  ACCEL_CPU_ENGINE_ONEDNN_F32 = 4,  // libdnnl.so.2's f32 matmul
  ACCEL_CPU_ENGINE_ACCEL = 5,       // the plugin's own kernel (gemm_kernel.c)
  ACCEL_CPU_ENGINE_COUNT = 6,
} accel_cpu_engine_id_t;

// Index of the dtypes GEMM takes in gemm_choice[]: 0 f32, 1 f16, 2 bf16.
#define ACCEL_CPU_GEMM_DTYPES 3u

// The size classes, by work m*n*k, each with its own engine decision
// (bounds and the product each is timed on: engine_tune.c).
enum {
  ACCEL_CPU_GEMM_SMALL = 0,   // m*n*k < 2^24 (256^3)
  ACCEL_CPU_GEMM_MEDIUM = 1,  // below 2^29 (1024*1024*512)
  ACCEL_CPU_GEMM_LARGE = 2,
  ACCEL_CPU_GEMM_CLASSES = 3,
};

// What a GEMM of one dtype runs on.
typedef struct accel_cpu_gemm_engine {
  accel_cpu_engine_id_t id;
  bool native;                       // oneDNN multiplies f16/bf16 itself
  const accel_cpu_blas_t* blas;      // the library, for a BLAS engine
  const accel_cpu_onednn_t* onednn;  // for ACCEL_CPU_ENGINE_ONEDNN(_F32)
  const accel_cpu_gk_isa_t* own;     // for ACCEL_CPU_ENGINE_ACCEL
} accel_cpu_gemm_engine_t;

// The engine for `gemm` (A and B f32, f16 or bf16; its size class from m,
// n, k). At the first call it loads the engine libraries (once per
// plugin); at the first call for a dtype and class it picks one:
// ACCEL_CPU_GEMM when it names one, else a decision cached on disk for
// this CPU, thread count and library versions, else the fastest on the
// class's timed product (run on `pool`), then cached. Returns
// ACCEL_ERROR_UNSUPPORTED when no engine can be loaded (or the forced one
// cannot), ACCEL_ERROR_INVALID_ARGUMENT for a malformed ACCEL_CPU_GEMM.
// Thread-safe; a first call of a class may take a few hundred
// milliseconds.
accel_status_t accel_cpu_gemm_engine_get(accel_cpu_plugin_t* plugin,
                                         accel_cpu_pool_t* pool,
                                         const accel_plugin_gemm_t* gemm,
                                         accel_cpu_gemm_engine_t* out);

// Frees what the engines loaded. NULL is ignored. Called by unload.
void accel_cpu_engines_destroy(accel_cpu_engines_t* engines);

// Writes the GEMM part of a device's features into `out`: per dtype and
// class the engine ACCEL_CPU_GEMM forces, else the one this process
// decided, else the one cached on disk for this CPU model (`cpu_name`) and
// thread count; then per dtype the engine when all classes agree
// ("gemm-f32=openblas"), "auto" when none is known, else the classes in
// order ("gemm-f32=openblas/openblas/onednn", small/medium/large, "auto"
// where not known). Reads one small file and loads no library, so
// device_open stays cheap; the string does not change for the device's
// lifetime.
void accel_cpu_gemm_features(accel_cpu_plugin_t* plugin, const char* cpu_name,
                             char* out, size_t size);

// Name of engine `id` ("openblas", "blis", "blas", "onednn", "onednn-f32").
const char* accel_cpu_engine_name(accel_cpu_engine_id_t id);

// The engine id the `len` characters at `text` name, or -1.
int accel_cpu_engine_id(const char* text, size_t len);

// Name of dtype index `dt` ("f32", "f16", "bf16").
const char* accel_cpu_gemm_dtype_name(int dt);

// Whether the `len` characters at `text` spell `name` (never when `name`
// is NULL): the comparison every name lookup of the engine files makes.
bool accel_cpu_name_is(const char* text, size_t len, const char* name);

// Parses ACCEL_CPU_GEMM: `text` is one engine name for every dtype and
// class, or comma-separated `dtype=engine` (every class) and
// `dtype@class=engine` items (dtype f32, f16 or bf16; class small, medium
// or large; a class item wins over its dtype's, in any order). Fills
// `forced[dtype index][class]` with the engine id, or -1 where none is
// forced. Returns false for a malformed value.
bool accel_cpu_gemm_parse(
    const char* text,
    int forced[ACCEL_CPU_GEMM_DTYPES][ACCEL_CPU_GEMM_CLASSES]);

// The size class of an m x n x k product (ACCEL_CPU_GEMM_SMALL...).
int accel_cpu_gemm_class(uint64_t m, uint64_t n, uint64_t k);

// Name of class `cls` ("small", "medium", "large").
const char* accel_cpu_gemm_class_name(int cls);

// Times the `count` engines in `candidates` (in that order) on class
// `cls`'s product in dtype index `dt`, run on `pool`, and logs the result
// at info level (engine_tune.c). Returns the index of the fastest in
// `candidates`, or -1 when none ran (or its operands could not be
// allocated).
int accel_cpu_engine_tune(accel_cpu_plugin_t* plugin, accel_cpu_pool_t* pool,
                          int dt, int cls,
                          const accel_cpu_gemm_engine_t* candidates, int count);

// The second pass of a timing, as pure rules (engine_tune.c, so that a
// test can give them times). accel_cpu_tune_again sets again[i] for each
// engine whose first time (seconds a product; <= 0: it failed) is within
// 1.5x of the fastest, when there are two or more such engines, and
// returns how many it set (0: a clear winner, no second pass).
// accel_cpu_tune_winner returns the index with the smallest time over
// both passes (again[i] <= 0: not timed again, or failed), or -1 when
// none ran.
int accel_cpu_tune_again(const double* first, int count, bool* again);
int accel_cpu_tune_winner(const double* first, const double* again,
                          int count);

// How many other runnable threads make a timing too noisy to cache:
// ACCEL_CPU_TUNE_BUSY, else a quarter of the usable CPUs, at least 1.
uint32_t accel_cpu_tune_busy_threshold(const accel_host_t* host);

// The disk cache of decisions (engine_cache.c): the file
// $XDG_CACHE_HOME/accel/cpu-gemm.txt (else $HOME/.cache/accel/...), one
// line per decision: `key<TAB>dtype@class<TAB>engine` (lines from before
// the classes name the dtype alone). Writes `path` (empty
// when neither variable is set).
void accel_cpu_gemm_cache_path(const accel_host_t* host, char* path,
                               size_t size);

// The contents of the cache file at `path` (NUL-terminated, malloc'd: the
// caller frees it), or NULL when `path` is empty, the file cannot be read
// or is larger than 1 MiB. Read once for all the lookups of one decision
// or one device's features.
char* accel_cpu_gemm_cache_read(const char* path);

// The engine id of the last line of `text` (from accel_cpu_gemm_cache_read,
// may be NULL) whose second field is `field` (or `legacy`, when not NULL)
// and whose key equals `key`; -1 when none. With `prefix_only`, the keys
// that start with `key` are compared: their decisions (the last line of
// each) when they all agree, else -1.
int accel_cpu_gemm_cache_find(const char* text, const char* key,
                              bool prefix_only, const char* field,
                              const char* legacy);

// Appends a decision to `path`, creating its directory. Best effort:
// returns false when it cannot be written.
bool accel_cpu_gemm_cache_store(const char* path, const char* key,
                                const char* field, accel_cpu_engine_id_t id);

// The GEMM scratch block (gemm.c): f32 panels of the conversion path and
// the packed panels of the own kernel. Fresh memory costs a page fault per
// 4 KiB on first touch, so the plugin keeps the last block given back.
struct accel_cpu_scratch {
  size_t size;  // usable bytes after the header
  _Alignas(ACCEL_CPU_ALIGNMENT) unsigned char data[];
};

// Takes the kept block if it holds `size` bytes, else allocates one (the
// data aligned to ACCEL_CPU_ALIGNMENT). NULL when out of host memory.
// Thread-safe: concurrent GEMMs that find the slot empty allocate their
// own.
accel_cpu_scratch_t* accel_cpu_scratch_take(accel_cpu_plugin_t* plugin,
                                            size_t size);

// Keeps `s` for the next GEMM (freeing a block kept meanwhile), or frees it
// when it is too large to keep.
void accel_cpu_scratch_give(accel_cpu_plugin_t* plugin, accel_cpu_scratch_t* s);

// Bytes of f32 scratch for `elems` elements, rounded to whole cache lines
// (ACCEL_CPU_ALIGNMENT), so that the next part of a block stays aligned.
static inline size_t accel_cpu_f32_bytes(uint64_t elems) {
  return ((size_t)elems * sizeof(float) + ACCEL_CPU_ALIGNMENT - 1) &
         ~(size_t)(ACCEL_CPU_ALIGNMENT - 1);
}

// ---------------------------------------------------------------------------
// The own engine (gemm_kernel.c)
// ---------------------------------------------------------------------------

// The kernel the own engine runs here: the widest this CPU has (CPUID:
// AVX-512 F/BW/VL, else AVX2 with FMA and F16C), at most `limit` ("avx512", "avx2"; NULL
// or empty: no limit; ACCEL_CPU_GEMM_ISA). NULL, with the reason in
// `why`, when the CPU has none of them or `limit` is not a kernel name.
// Thread-safe.
const accel_cpu_gk_isa_t* accel_cpu_gk_choose(const char* limit, char* why,
                                              size_t size);

// "avx512-12x32", "avx2-6x16-k512" or "avx2-6x16": in the engine cache
// key and the log.
const char* accel_cpu_gk_name(const accel_cpu_gk_isa_t* isa);

// Runs the GEMM `g` (pointers already offset, k > 0, A and B f32, f16 or
// bf16, C of A's dtype or f32) on the own kernel `isa`, split across
// `pool` (NULL: the calling thread). ACCEL_ERROR_OUT_OF_MEMORY when the
// packed panels cannot be allocated, the reason in `message`.
// Thread-safe.
accel_status_t accel_cpu_gk_gemm(accel_cpu_plugin_t* plugin,
                                 accel_cpu_pool_t* pool,
                                 const accel_cpu_gk_isa_t* isa,
                                 const accel_plugin_gemm_t* g, char* message,
                                 size_t size);

// Multiply-adds below which a GEMM is not split across the pool.
#define ACCEL_CPU_GEMM_SPLIT_FLOPS ((uint64_t)1 << 21)

// Runs the GEMM `g` (pointers already offset) on `engine` (gemm.c); used by
// the stream task and by the engine timing. The reason in `message` on
// failure.
accel_status_t accel_cpu_gemm_execute(accel_cpu_plugin_t* plugin,
                                      accel_cpu_pool_t* pool,
                                      const accel_cpu_gemm_engine_t* engine,
                                      const accel_plugin_gemm_t* g,
                                      char* message, size_t size);

#endif  // ACCEL_PLUGINS_CPU_ENGINE_H_
