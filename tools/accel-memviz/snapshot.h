// SPDX-License-Identifier: MIT
//
// accel-memviz: the allocator snapshot (accel_device_memory_snapshot()'s
// JSON) read into plain structs (snapshot.c), and drawn as SVG (svg.c).
#ifndef ACCEL_TOOLS_MEMVIZ_SNAPSHOT_H_
#define ACCEL_TOOLS_MEMVIZ_SNAPSHOT_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// One block of a segment, in address order.
typedef struct memviz_block {
  uint64_t offset;
  uint64_t size;
  uint64_t requested;  // bytes the live buffer asked for, else 0
  char state[16];      // "active", "free", "pending" (or what was there)
  char stream[40];     // stream id, "" for none
} memviz_block_t;

// One segment (a plugin allocation) and its blocks.
typedef struct memviz_segment {
  uint64_t size;
  char kind[16];    // "small" or "large"
  char stream[40];  // owning stream id, "" for the device-wide pool
  memviz_block_t* blocks;
  size_t block_count;
} memviz_segment_t;

typedef struct memviz_snapshot {
  char device[64];
  memviz_segment_t* segments;
  size_t segment_count;
} memviz_snapshot_t;

// Parses the JSON `text` of `size` bytes (any JSON is read; what is not a
// snapshot is refused). Returns 0, or -1 with a reason in `error` (which
// names the byte offset of a syntax error); `*out` is then empty. Unknown
// members are ignored, so newer snapshots with more fields still draw.
int memviz_parse(const char* text, size_t size, memviz_snapshot_t* out,
                 char* error, size_t error_size);

// Frees what memviz_parse allocated.
void memviz_free(memviz_snapshot_t* snapshot);

// Options of the picture.
typedef struct memviz_style {
  unsigned width;     // of the bars, in pixels (the labels sit above them)
  const char* title;  // NULL: "accel memory snapshot: <device>"
} memviz_style_t;

// Writes `snapshot` to `out` as one standalone SVG document: a bar per
// segment, a rect per block coloured by state (allocated, cached,
// inactive), labels with sizes and streams and a <title> tooltip on every
// segment and block, and a legend. Returns 0, or -1 when writing failed.
int memviz_render(const memviz_snapshot_t* snapshot,
                  const memviz_style_t* style, FILE* out);

#endif  // ACCEL_TOOLS_MEMVIZ_SNAPSHOT_H_
