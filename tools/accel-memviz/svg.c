// SPDX-License-Identifier: MIT
//
// Draws an allocator snapshot as SVG (snapshot.h). Every segment is a bar
// of the same width, so a 2 MiB segment and a 2 GiB one are both legible;
// its blocks are rects laid out in proportion to their size within it,
// coloured by state: allocated (a live buffer), cached (free, reusable) or
// inactive (freed, waiting for stream work). Each rect carries a <title>
// (a tooltip in browsers) with its offset, size, requested bytes and
// stream, and its state as a class, so scripts can read the picture back.
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "snapshot.h"
#include "xml.h"

#define MEMVIZ_MARGIN 20.0
#define MEMVIZ_ROW 54.0   // label line plus bar, per segment
#define MEMVIZ_BAR 24.0   // bar height
#define MEMVIZ_HEAD 86.0  // title, summary and legend

// How a state is drawn.
typedef struct memviz_state_style {
  const char* state;  // as in the snapshot
  const char* name;   // class and legend name
  const char* fill;
  const char* ink;  // of the size written on it
} memviz_state_style_t;

static const memviz_state_style_t memviz_states[] = {
    {"active", "allocated", "#4c78a8", "#fff"},
    {"free", "cached", "#a1d99b", "#222"},
    {"pending", "inactive", "#f58518", "#222"},
};
static const memviz_state_style_t memviz_unknown = {"", "unknown", "#bab0ac",
                                                    "#222"};

static const memviz_state_style_t* memviz_style_of(const char* state) {
  for (size_t i = 0; i < sizeof(memviz_states) / sizeof(memviz_states[0]);
       i++) {
    if (strcmp(memviz_states[i].state, state) == 0) return &memviz_states[i];
  }
  return &memviz_unknown;
}


// "512 bytes", "1.50 KiB", "2.00 MiB" (as accel's own summaries).
static void memviz_bytes(char* out, size_t n, uint64_t bytes) {
  static const char* const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  if (bytes < 1024) {
    snprintf(out, n, "%llu bytes", (unsigned long long)bytes);
    return;
  }
  double value = (double)bytes / 1024.0;
  size_t unit = 0;
  while (value >= 1024.0 && unit + 1 < sizeof(units) / sizeof(units[0])) {
    value /= 1024.0;
    unit++;
  }
  snprintf(out, n, "%.2f %s", value, units[unit]);
}

// Writes "stream <id>", or "device-wide pool" for none.
static void memviz_stream_name(FILE* out, const char* stream) {
  if (stream[0] == '\0') {
    fputs("device-wide pool", out);
    return;
  }
  fputs("stream ", out);
  xml_text(out, stream);
}

// Totals by state over every block.
typedef struct memviz_totals {
  uint64_t reserved, requested;
  uint64_t bytes[4];  // allocated, cached, inactive, unknown
  size_t blocks;
} memviz_totals_t;

static size_t memviz_state_index(const memviz_state_style_t* s) {
  return s == &memviz_unknown ? 3 : (size_t)(s - memviz_states);
}

static void memviz_sum(const memviz_snapshot_t* snap, memviz_totals_t* t) {
  memset(t, 0, sizeof(*t));
  for (size_t i = 0; i < snap->segment_count; i++) {
    const memviz_segment_t* s = &snap->segments[i];
    t->reserved += s->size;
    for (size_t j = 0; j < s->block_count; j++) {
      const memviz_block_t* b = &s->blocks[j];
      t->bytes[memviz_state_index(memviz_style_of(b->state))] += b->size;
      t->requested += b->requested;
      t->blocks++;
    }
  }
}

static void memviz_header(const memviz_snapshot_t* snap,
                          const memviz_style_t* style, const memviz_totals_t* t,
                          FILE* out) {
  fprintf(out, "<text class=\"title\" x=\"%.0f\" y=\"%.0f\" font-size=\"16\">",
          MEMVIZ_MARGIN, MEMVIZ_MARGIN + 12);
  if (style->title != NULL) {
    xml_text(out, style->title);
  } else {
    fputs("accel memory snapshot: ", out);
    xml_text(out, snap->device[0] != '\0' ? snap->device : "(no device)");
  }
  fputs("</text>\n", out);
  char reserved[32], allocated[32], requested[32], cached[32], inactive[32];
  memviz_bytes(reserved, sizeof(reserved), t->reserved);
  memviz_bytes(allocated, sizeof(allocated), t->bytes[0]);
  memviz_bytes(requested, sizeof(requested), t->requested);
  memviz_bytes(cached, sizeof(cached), t->bytes[1]);
  memviz_bytes(inactive, sizeof(inactive), t->bytes[2]);
  fprintf(out,
          "<text class=\"summary\" x=\"%.0f\" y=\"%.0f\">%zu segment%s, %s "
          "reserved; %zu block%s: %s allocated (%s requested), %s cached, "
          "%s inactive</text>\n",
          MEMVIZ_MARGIN, MEMVIZ_MARGIN + 34, snap->segment_count,
          snap->segment_count == 1 ? "" : "s", reserved, t->blocks,
          t->blocks == 1 ? "" : "s", allocated, requested, cached, inactive);
  double x = MEMVIZ_MARGIN;
  double y = MEMVIZ_MARGIN + 48;
  fputs("<g class=\"legend\">\n", out);
  for (size_t i = 0; i < sizeof(memviz_states) / sizeof(memviz_states[0]);
       i++) {
    static const char* const what[] = {"a live buffer", "free, reusable",
                                       "freed, waiting for stream work"};
    fprintf(out,
            "<rect class=\"swatch %s\" x=\"%.0f\" y=\"%.0f\" width=\"14\" "
            "height=\"14\" fill=\"%s\"/>"
            "<text x=\"%.0f\" y=\"%.0f\">%s (%s)</text>\n",
            memviz_states[i].name, x, y, memviz_states[i].fill, x + 20, y + 12,
            memviz_states[i].name, what[i]);
    x += 250;
  }
  fputs("</g>\n", out);
}

static void memviz_segment(const memviz_segment_t* s, size_t index, double y,
                           double width, FILE* out) {
  char size[32];
  memviz_bytes(size, sizeof(size), s->size);
  fprintf(out, "<g class=\"segment-row\" data-index=\"%zu\">\n", index);
  fprintf(out, "<text class=\"label\" x=\"%.0f\" y=\"%.1f\">segment %zu: ",
          MEMVIZ_MARGIN, y + 12, index);
  xml_text(out, size);
  fputc(' ', out);
  xml_text(out, s->kind[0] != '\0' ? s->kind : "?");
  fputs(", ", out);
  memviz_stream_name(out, s->stream);
  fprintf(out, ", %zu block%s</text>\n", s->block_count,
          s->block_count == 1 ? "" : "s");
  double top = y + 18;
  fprintf(out,
          "<rect class=\"segment\" x=\"%.0f\" y=\"%.1f\" width=\"%.0f\" "
          "height=\"%.0f\" fill=\"#f0f0f0\" stroke=\"#555\" "
          "stroke-width=\"1\"><title>segment %zu: %llu bytes (",
          MEMVIZ_MARGIN, top, width, MEMVIZ_BAR, index,
          (unsigned long long)s->size);
  xml_text(out, size);
  fputs("), ", out);
  xml_text(out, s->kind);
  fputs(", ", out);
  memviz_stream_name(out, s->stream);
  fputs("</title></rect>\n", out);
  double scale = s->size != 0 ? width / (double)s->size : 0;
  for (size_t j = 0; j < s->block_count; j++) {
    const memviz_block_t* b = &s->blocks[j];
    const memviz_state_style_t* st = memviz_style_of(b->state);
    double x = MEMVIZ_MARGIN + (double)b->offset * scale;
    double w = (double)b->size * scale;
    if (x > MEMVIZ_MARGIN + width) x = MEMVIZ_MARGIN + width;
    if (x + w > MEMVIZ_MARGIN + width) w = MEMVIZ_MARGIN + width - x;
    char bytes[32], requested[32];
    memviz_bytes(bytes, sizeof(bytes), b->size);
    memviz_bytes(requested, sizeof(requested), b->requested);
    fprintf(out,
            "<rect class=\"block %s\" x=\"%.3f\" y=\"%.1f\" width=\"%.3f\" "
            "height=\"%.0f\" fill=\"%s\" stroke=\"#fff\" "
            "stroke-width=\"0.5\"><title>%s block at offset %llu: %llu "
            "bytes (%s)",
            st->name, x, top, w, MEMVIZ_BAR, st->fill, st->name,
            (unsigned long long)b->offset, (unsigned long long)b->size, bytes);
    if (b->requested != 0) fprintf(out, ", %s requested", requested);
    if (b->stream[0] != '\0') {
      fputs(", stream ", out);
      xml_text(out, b->stream);
    }
    fputs("</title></rect>\n", out);
    if (w >= 70) {  // room for its size
      fprintf(out,
              "<text class=\"size\" x=\"%.1f\" y=\"%.1f\" font-size=\"10\" "
              "fill=\"%s\">%s</text>\n",
              x + 4, top + 15, st->ink, bytes);
    }
  }
  fputs("</g>\n", out);
}

int memviz_render(const memviz_snapshot_t* snap, const memviz_style_t* style,
                  FILE* out) {
  double width = style->width != 0 ? style->width : 960;
  memviz_totals_t t;
  memviz_sum(snap, &t);
  double total_w = width + 2 * MEMVIZ_MARGIN;
  if (total_w < 800) total_w = 800;  // the legend's width
  double total_h =
      MEMVIZ_HEAD + MEMVIZ_ROW * (double)snap->segment_count + MEMVIZ_MARGIN;
  fprintf(out,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
          "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
          "font-family=\"sans-serif\" font-size=\"12\">\n",
          total_w, total_h, total_w, total_h);
  fputs(
      "<rect class=\"background\" width=\"100%\" height=\"100%\" "
      "fill=\"#fff\"/>\n",
      out);
  memviz_header(snap, style, &t, out);
  for (size_t i = 0; i < snap->segment_count; i++) {
    memviz_segment(&snap->segments[i], i, MEMVIZ_HEAD + MEMVIZ_ROW * (double)i,
                   width, out);
  }
  if (snap->segment_count == 0) {
    fprintf(out,
            "<text class=\"empty\" x=\"%.0f\" y=\"%.0f\">no segments: "
            "the allocator holds no memory</text>\n",
            MEMVIZ_MARGIN, MEMVIZ_HEAD + 12);
  }
  fputs("</svg>\n", out);
  return ferror(out) ? -1 : 0;
}
