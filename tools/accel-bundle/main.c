// SPDX-License-Identifier: MIT
//
// accel-bundle: packs the same kernels built for several targets into one
// kernel bundle that accel_module_create() picks from, and lists bundles.
//
//   accel-bundle -o kernels.accelbundle kernels.so kernels.fatbin
//   accel-bundle -o k.accelbundle k.so --target opencl-c=k.cl
//   accel-bundle --list k.accelbundle
//
// Each file's target is sniffed the way the library sees it
// (accel_image_describe); formats that cannot be sniffed, such as OpenCL C
// source, are named with --target TAG=FILE. Exit status: 0 on success, 1
// on an error (with a message on stderr), 2 on a usage error.
#include <accel/accel.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

// Largest input file read (the library refuses larger modules anyway).
#define BUNDLE_FILE_MAX ((size_t)1 << 30)

typedef struct input {
  const char* path;
  char target[64];
  void* data;
  size_t size;
} input_t;

static void usage(FILE* out) {
  fprintf(out,
          "Usage: accel-bundle -o OUT [--target TAG=FILE]... [FILE]...\n"
          "       accel-bundle --list BUNDLE\n"
          "\n"
          "Builds a kernel bundle holding one image per target, from which\n"
          "accel_module_create() loads the one that fits the device.\n"
          "\n"
          "  -o, --output OUT       write the bundle to OUT\n"
          "  -t, --target TAG=FILE  add FILE tagged TAG (for formats that\n"
          "                         cannot be sniffed: opencl-c)\n"
          "  -l, --list BUNDLE      show the images BUNDLE holds\n"
          "  -h, --help             show this help\n"
          "\n"
          "A FILE given alone is tagged with the target the library sees in\n"
          "it: elf-x86_64, elf-aarch64 (CPU kernel libraries), cuda-sm_NN,\n"
          "cuda-fatbin, cuda-ptx-sm_NN, amdgcn-gfxNNN, spirv. At most %d\n"
          "images; tags are 1 to 63 characters of [A-Za-z0-9._+-].\n",
          ACCEL_BUNDLE_MAX_ENTRIES);
}

// Reads the regular file at `path` into a new block.
static void* read_file(const char* path, size_t* out_size) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
    fprintf(stderr, "accel-bundle: '%s' is not a readable regular file\n",
            path);
    return NULL;
  }
  if ((uint64_t)st.st_size > BUNDLE_FILE_MAX || st.st_size == 0) {
    fprintf(stderr, "accel-bundle: '%s' is empty or larger than 1 GiB\n",
            path);
    return NULL;
  }
  FILE* f = fopen(path, "rb");
  void* data = f != NULL ? malloc((size_t)st.st_size) : NULL;
  size_t got = data != NULL ? fread(data, 1, (size_t)st.st_size, f) : 0;
  if (f != NULL) fclose(f);
  if (data == NULL || got != (size_t)st.st_size) {
    fprintf(stderr, "accel-bundle: cannot read '%s'\n", path);
    free(data);
    return NULL;
  }
  *out_size = got;
  return data;
}

// Loads `in->path` and settles its tag: `tag` if given, else sniffed.
static int input_load(input_t* in, const char* tag) {
  in->data = read_file(in->path, &in->size);
  if (in->data == NULL) return 1;
  char target[64], description[256];
  accel_image_describe(in->data, in->size, target, sizeof(target),
                       description, sizeof(description));
  if (strcmp(target, "accel-bundle") == 0) {
    fprintf(stderr, "accel-bundle: '%s' is itself a bundle\n", in->path);
    return 1;
  }
  if (tag == NULL && strcmp(target, "unknown") == 0) {
    fprintf(stderr,
            "accel-bundle: cannot tell the target of '%s' (%s); name it "
            "with --target TAG=%s\n",
            in->path, description, in->path);
    return 1;
  }
  snprintf(in->target, sizeof(in->target), "%s", tag != NULL ? tag : target);
  if (tag != NULL && strlen(tag) >= sizeof(in->target)) {
    fprintf(stderr, "accel-bundle: tag '%s' is longer than 63 characters\n",
            tag);
    return 1;
  }
  return 0;
}

static int list(const char* path) {
  size_t size = 0;
  unsigned char* data = read_file(path, &size);
  if (data == NULL) return 1;
  accel_bundle_entry_t entries[ACCEL_BUNDLE_MAX_ENTRIES];
  size_t count = 0;
  if (accel_bundle_parse(data, size, ACCEL_BUNDLE_MAX_ENTRIES, entries,
                         &count) != ACCEL_OK) {
    fprintf(stderr, "accel-bundle: %s: %s\n", path, accel_last_error());
    free(data);
    return 1;
  }
  printf("%s: kernel bundle, %zu image%s\n", path, count,
         count == 1 ? "" : "s");
  for (size_t i = 0; i < count; i++) {
    char target[64], description[256];
    accel_image_describe(data + entries[i].offset, (size_t)entries[i].size,
                         target, sizeof(target), description,
                         sizeof(description));
    printf("  %-20s %10llu bytes at %-8llu %s\n", entries[i].target,
           (unsigned long long)entries[i].size,
           (unsigned long long)entries[i].offset, description);
  }
  free(data);
  return 0;
}

static int build(const char* out_path, input_t* inputs, size_t n) {
  const char* tags[ACCEL_BUNDLE_MAX_ENTRIES];
  const void* images[ACCEL_BUNDLE_MAX_ENTRIES];
  size_t sizes[ACCEL_BUNDLE_MAX_ENTRIES];
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < i; j++) {
      if (strcmp(inputs[i].target, inputs[j].target) == 0) {
        fprintf(stderr, "accel-bundle: '%s' and '%s' are both %s\n",
                inputs[j].path, inputs[i].path, inputs[i].target);
        return 1;
      }
    }
    tags[i] = inputs[i].target;
    images[i] = inputs[i].data;
    sizes[i] = inputs[i].size;
  }
  size_t size = 0;
  void* bundle = NULL;
  if (accel_bundle_write(n, tags, images, sizes, NULL, 0, &size) != ACCEL_OK ||
      (bundle = malloc(size)) == NULL ||
      accel_bundle_write(n, tags, images, sizes, bundle, size, &size) !=
          ACCEL_OK) {
    fprintf(stderr, "accel-bundle: %s\n",
            bundle == NULL && size != 0 ? "out of memory" : accel_last_error());
    free(bundle);
    return 1;
  }
  FILE* f = fopen(out_path, "wb");
  bool ok = f != NULL && fwrite(bundle, 1, size, f) == size;
  if (f != NULL && fclose(f) != 0) ok = false;
  free(bundle);
  if (!ok) {
    fprintf(stderr, "accel-bundle: cannot write '%s'\n", out_path);
    remove(out_path);
    return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  static const struct option options[] = {
      {"output", required_argument, NULL, 'o'},
      {"target", required_argument, NULL, 't'},
      {"list", required_argument, NULL, 'l'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char* out_path = NULL;
  const char* list_path = NULL;
  input_t inputs[ACCEL_BUNDLE_MAX_ENTRIES];
  const char* forced[ACCEL_BUNDLE_MAX_ENTRIES];
  size_t n = 0;
  int status = 0;
  memset(inputs, 0, sizeof(inputs));
  int c;
  while ((c = getopt_long(argc, argv, "o:t:l:h", options, NULL)) != -1) {
    switch (c) {
      case 'o':
        out_path = optarg;
        break;
      case 'l':
        list_path = optarg;
        break;
      case 't': {
        char* eq = strchr(optarg, '=');
        if (eq == NULL || eq == optarg || eq[1] == '\0') {
          fprintf(stderr, "accel-bundle: --target wants TAG=FILE, not '%s'\n",
                  optarg);
          return 2;
        }
        if (n == ACCEL_BUNDLE_MAX_ENTRIES) {
          fprintf(stderr, "accel-bundle: more than %d images\n",
                  ACCEL_BUNDLE_MAX_ENTRIES);
          return 2;
        }
        *eq = '\0';
        forced[n] = optarg;
        inputs[n++].path = eq + 1;
        break;
      }
      case 'h':
        usage(stdout);
        return 0;
      default:
        usage(stderr);
        return 2;
    }
  }
  for (int i = optind; i < argc; i++) {
    if (n == ACCEL_BUNDLE_MAX_ENTRIES) {
      fprintf(stderr, "accel-bundle: more than %d images\n",
              ACCEL_BUNDLE_MAX_ENTRIES);
      return 2;
    }
    forced[n] = NULL;
    inputs[n++].path = argv[i];
  }
  if (list_path != NULL) {
    if (out_path != NULL || n != 0) {
      fprintf(stderr, "accel-bundle: --list takes no other arguments\n");
      return 2;
    }
    return list(list_path);
  }
  if (out_path == NULL || n == 0) {
    usage(stderr);
    return 2;
  }
  for (size_t i = 0; i < n && status == 0; i++) {
    status = input_load(&inputs[i], forced[i]);
  }
  if (status == 0) status = build(out_path, inputs, n);
  for (size_t i = 0; i < n; i++) free(inputs[i].data);
  return status;
}
