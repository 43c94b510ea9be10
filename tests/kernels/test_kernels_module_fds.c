// SPDX-License-Identifier: MIT
//
// CPU modules loaded from memory keep no file descriptor open, and each
// load gets its own object: two different modules (cpu_module_tag.c built
// with KT_TAG 1 and 2, paths in KERNELS_CPU_TAG1 and KERNELS_CPU_TAG2)
// loaded one after the other, the first one's descriptor number free for
// the second, each run their own code. glibc finds an already-loaded
// object by the path it was opened with, so a plugin that closed the
// descriptor but reused a /proc/self/fd/N path would hand back the first.
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "kernels_test.h"
#include "test.h"

// Open descriptors of this process, or -1 where /proc is missing.
static int count_fds(void) {
  DIR* dir = opendir("/proc/self/fd");
  if (dir == NULL) return -1;
  int n = 0;
  struct dirent* entry;
  while ((entry = readdir(dir)) != NULL) {
    if (entry->d_name[0] != '.') n++;
  }
  closedir(dir);
  return n - 1;  // the directory stream's own
}

static unsigned char* read_file(const char* path, size_t* out_size) {
  FILE* f = path != NULL ? fopen(path, "rb") : NULL;
  if (f == NULL) return NULL;
  unsigned char* data = NULL;
  size_t size = 0, cap = 0;
  for (;;) {
    if (size == cap) {
      cap = cap ? cap * 2 : 65536;
      unsigned char* grown = realloc(data, cap);
      if (grown == NULL) break;
      data = grown;
    }
    size_t n = fread(data + size, 1, cap - size, f);
    if (n == 0) break;
    size += n;
  }
  fclose(f);
  *out_size = size;
  return data;
}

typedef struct image {
  unsigned char* data;
  size_t size;
} image_t;

// Loads `image` as a module, runs kt_tag and returns what it wrote (0 on
// failure); the module stays loaded in `*out_module`.
static uint32_t run_tag(accel_device_t* d, accel_stream_t* s,
                        accel_buffer_t* out, const image_t* image,
                        accel_module_t** out_module) {
  *out_module = NULL;
  accel_kernel_t* kernel = NULL;
  uint32_t tag = 0;
  if (accel_module_create(d, image->data, image->size, out_module) !=
          ACCEL_OK ||
      accel_kernel_create(*out_module, "kt_tag", &kernel) != ACCEL_OK) {
    fprintf(stderr, "  load: %s\n", accel_last_error());
    return 0;
  }
  accel_launch_config_t config;
  accel_launch_config_init(&config);
  accel_kernel_arg_t arg = {.kind = ACCEL_KERNEL_ARG_BUFFER, .buffer = out};
  if (accel_stream_fill_buffer(s, out, 0, 0, 4) != ACCEL_OK ||
      accel_kernel_launch(kernel, s, &config, 1, &arg) != ACCEL_OK ||
      accel_stream_read_buffer(s, out, 0, &tag, sizeof(tag)) != ACCEL_OK ||
      accel_stream_synchronize(s) != ACCEL_OK) {
    fprintf(stderr, "  launch: %s\n", accel_last_error());
    tag = 0;
  }
  accel_kernel_release(kernel);
  return tag;
}

TEST(modules_keep_no_descriptor_and_stay_apart) {
  image_t one = {0}, two = {0};
  one.data = read_file(getenv("KERNELS_CPU_TAG1"), &one.size);
  two.data = read_file(getenv("KERNELS_CPU_TAG2"), &two.size);
  ASSERT_NOT_NULL(one.data);
  ASSERT_NOT_NULL(two.data);
  accel_device_t* d = NULL;
  accel_stream_t* s = NULL;
  accel_buffer_t* out = NULL;
  ASSERT_OK(accel_device_open("cpu:0", &d));
  ASSERT_OK(accel_stream_create(d, 0, &s));
  ASSERT_OK(accel_buffer_create(d, 64, &out));
  accel_module_t* warm = NULL;  // first load: the plugin's own set-up
  ASSERT_EQ(run_tag(d, s, out, &one, &warm), 1);
  accel_module_release(warm);

  int before = count_fds();
  ASSERT_GE(before, 0);
  // Module 1 stays loaded; module 2, loaded next, gets the descriptor
  // number module 1's load used, and must still be module 2.
  accel_module_t* m1 = NULL;
  accel_module_t* m2 = NULL;
  ASSERT_EQ(run_tag(d, s, out, &one, &m1), 1);
  ASSERT_EQ(count_fds(), before);
  ASSERT_EQ(run_tag(d, s, out, &two, &m2), 2);
  ASSERT_EQ(count_fds(), before);

  // 64 more, alternating, half of them kept loaded until the end.
  enum { kLoads = 64 };
  accel_module_t* kept[kLoads] = {0};
  for (int i = 0; i < kLoads; i++) {
    accel_module_t* m = NULL;
    const image_t* image = i % 2 ? &two : &one;
    ASSERT_EQ(run_tag(d, s, out, image, &m), (uint32_t)(i % 2 + 1));
    if (i % 4 < 2) {
      kept[i] = m;
    } else {
      accel_module_release(m);
    }
  }
  ASSERT_EQ(count_fds(), before);
  for (int i = 0; i < kLoads; i++) accel_module_release(kept[i]);
  accel_module_release(m1);
  accel_module_release(m2);
  ASSERT_EQ(count_fds(), before);

  accel_buffer_release(out);
  accel_stream_release(s);
  accel_device_release(d);
  free(one.data);
  free(two.data);
}

int main(int argc, char** argv) {
  int rc = test_main(argc, argv);
  accel_shutdown();
  return rc;
}
