// SPDX-License-Identifier: MIT
//
// accel-memviz: draws a caching-allocator snapshot as an SVG picture.
//
//   accel-memviz snapshot.json -o memory.svg
//   accel-memviz --device cuda:0 > memory.svg
//
// The snapshot is the JSON accel_device_memory_snapshot() writes (an
// application saves it to a file when it wants a picture), read from a
// file or standard input ("-"), or taken live with --device from this
// process's own allocator (which holds nothing until this process
// allocates: useful to check a device and the tool). Exit status: 0 on
// success, 1 on an error (with a message on stderr), 2 on a usage error.
#include <accel/accel.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapshot.h"

// Largest snapshot read (a device with a million blocks is ~100 MiB).
#define MEMVIZ_INPUT_MAX ((size_t)1 << 30)

static void usage(FILE* out) {
  fprintf(out,
          "Usage: accel-memviz [options] SNAPSHOT.json\n"
          "       accel-memviz [options] --device URI\n"
          "\n"
          "Draws an allocator snapshot (accel_device_memory_snapshot()) as\n"
          "SVG: a bar per segment, its blocks coloured by state (allocated,\n"
          "cached, inactive), sizes and streams in labels and tooltips.\n"
          "\n"
          "  -o, --output FILE   write the SVG to FILE (default: stdout)\n"
          "  -d, --device URI    take the snapshot of URI (cpu:0, cuda:1)\n"
          "                      live, in this process\n"
          "  -w, --width PIXELS  width of the segment bars (100 to 20000,\n"
          "                      default 960)\n"
          "  -t, --title TEXT    title of the picture\n"
          "  -h, --help          show this help\n"
          "      --version       show the accel version\n"
          "\n"
          "SNAPSHOT.json may be - for standard input.\n");
}

// Reads all of `in` into a new NUL-terminated block.
static char* read_all(FILE* in, const char* name, size_t* out_size) {
  size_t size = 0, capacity = 1 << 16;
  char* text = malloc(capacity);
  while (text != NULL) {
    if (size + 1 >= capacity) {
      if (capacity >= MEMVIZ_INPUT_MAX) {
        fprintf(stderr, "accel-memviz: %s is larger than %zu MiB\n", name,
                MEMVIZ_INPUT_MAX >> 20);
        free(text);
        return NULL;
      }
      char* grown = realloc(text, capacity * 2);
      if (grown == NULL) break;
      text = grown;
      capacity *= 2;
    }
    size_t n = fread(text + size, 1, capacity - 1 - size, in);
    size += n;
    if (n == 0) {
      if (ferror(in)) {
        fprintf(stderr, "accel-memviz: cannot read %s: %s\n", name,
                strerror(errno));
        free(text);
        return NULL;
      }
      text[size] = '\0';
      *out_size = size;
      return text;
    }
  }
  free(text);
  fprintf(stderr, "accel-memviz: out of memory reading %s\n", name);
  return NULL;
}

static char* read_input(const char* path, size_t* out_size) {
  if (strcmp(path, "-") == 0)
    return read_all(stdin, "standard input", out_size);
  FILE* in = fopen(path, "rb");
  if (in == NULL) {
    fprintf(stderr, "accel-memviz: cannot open %s: %s\n", path,
            strerror(errno));
    return NULL;
  }
  char* text = read_all(in, path, out_size);
  fclose(in);
  return text;
}

// Takes the snapshot of `uri` in this process.
static char* read_device(const char* uri, size_t* out_size) {
  accel_device_t* device = NULL;
  accel_status_t status = accel_device_open(uri, &device);
  size_t length = 0;
  char* text = NULL;
  if (status == ACCEL_OK) {
    status = accel_device_memory_snapshot(device, NULL, 0, &length);
  }
  if (status == ACCEL_OK) {
    text = malloc(length + 1);
    if (text == NULL) {
      fprintf(stderr, "accel-memviz: out of memory\n");
    } else {
      status = accel_device_memory_snapshot(device, text, length + 1, &length);
    }
  }
  if (status != ACCEL_OK) {
    fprintf(stderr, "accel-memviz: %s: %s: %s\n", uri,
            accel_status_string(status), accel_last_error());
    free(text);
    text = NULL;
  }
  accel_device_release(device);
  *out_size = length;
  return text;
}

int main(int argc, char** argv) {
  static const struct option options[] = {
      {"output", required_argument, NULL, 'o'},
      {"device", required_argument, NULL, 'd'},
      {"width", required_argument, NULL, 'w'},
      {"title", required_argument, NULL, 't'},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0},
  };
  const char* out_path = NULL;
  const char* device = NULL;
  memviz_style_t style = {.width = 960, .title = NULL};
  int c;
  while ((c = getopt_long(argc, argv, "o:d:w:t:h", options, NULL)) != -1) {
    switch (c) {
      case 'o':
        out_path = optarg;
        break;
      case 'd':
        device = optarg;
        break;
      case 'w': {
        char* end = NULL;
        long width = strtol(optarg, &end, 10);
        if (end == optarg || *end != '\0' || width < 100 || width > 20000) {
          fprintf(stderr,
                  "accel-memviz: --width wants 100 to 20000 pixels, not "
                  "'%s'\n",
                  optarg);
          return 2;
        }
        style.width = (unsigned)width;
        break;
      }
      case 't':
        style.title = optarg;
        break;
      case 'h':
        usage(stdout);
        return 0;
      case 'V':
        printf("accel-memviz %d.%d.%d\n", ACCEL_VERSION_MAJOR,
               ACCEL_VERSION_MINOR, ACCEL_VERSION_PATCH);
        return 0;
      default:
        usage(stderr);
        return 2;
    }
  }
  int inputs = argc - optind;
  if ((device != NULL) == (inputs == 1) || inputs > 1) {
    fprintf(stderr,
            "accel-memviz: give one snapshot file (or -) or --device, not "
            "%s\n",
            inputs > 1    ? "several files"
            : inputs == 1 ? "both"
                          : "neither");
    usage(stderr);
    return 2;
  }
  const char* name = device != NULL ? device : argv[optind];
  size_t size = 0;
  char* text = device != NULL ? read_device(device, &size)
                              : read_input(argv[optind], &size);
  if (device != NULL) accel_shutdown();
  if (text == NULL) return 1;
  memviz_snapshot_t snapshot;
  char error[256];
  int parsed = memviz_parse(text, size, &snapshot, error, sizeof(error));
  free(text);
  if (parsed != 0) {
    fprintf(stderr, "accel-memviz: %s: %s\n",
            strcmp(name, "-") == 0 ? "standard input" : name, error);
    return 1;
  }
  FILE* out = out_path != NULL ? fopen(out_path, "w") : stdout;
  if (out == NULL) {
    fprintf(stderr, "accel-memviz: cannot write %s: %s\n", out_path,
            strerror(errno));
    memviz_free(&snapshot);
    return 1;
  }
  int status = memviz_render(&snapshot, &style, out);
  if (out == stdout) {
    if (fflush(out) != 0) status = -1;
  } else if (fclose(out) != 0) {
    status = -1;
  }
  if (status != 0) {
    fprintf(stderr, "accel-memviz: writing %s failed\n",
            out_path != NULL ? out_path : "standard output");
  }
  memviz_free(&snapshot);
  return status != 0 ? 1 : 0;
}
