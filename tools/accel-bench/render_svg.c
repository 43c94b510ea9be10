// SPDX-License-Identifier: MIT
//
// --plot FILE.svg: throughput against size, written as SVG by hand so the
// tool needs no plotting library. One panel each for synchronous copies,
// stream copies, GEMM and elementwise ops; in each, one colour per case,
// accel as a solid line with filled dots, the baseline dashed with open
// squares, and a vertical bar through each point for the [min, max] over
// trials. Both axes are logarithmic (log2 of the size, log10 of the
// value), so a 4 KiB copy at 1 GB/s reads as well as a 1 GiB one at 20;
// under each plot a strip shows accel / baseline per point, with 1 and
// the budget marked, which is what the verdicts judge. The launch suite
// (no size) is a bar panel: accel and baseline per case.
#include <math.h>
#include <string.h>

#include "bench.h"
#include "xml.h"

#define SVG_WIDTH 1000
#define SVG_PANEL_HEIGHT 440
#define SVG_BAR_PANEL_HEIGHT 300
#define SVG_EMPTY_HEIGHT 80
#define SVG_TOP 56  // room for the title
#define SVG_LEFT 80
#define SVG_PLOT_WIDTH 650
#define SVG_PLOT_HEIGHT 240
#define SVG_RATIO_GAP 12
#define SVG_RATIO_HEIGHT 90
#define SVG_MAX_SERIES 12

static const char* const svg_colors[SVG_MAX_SERIES] = {
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#393b79", "#637939",
};

// Which results a panel shows.
typedef struct svg_panel {
  const char* title;
  const char* suite;
  int async;  // 1: only "*_async" cases, 0: only the others, -1: all
  const char* y_label;
  const char* x_label;
  bool x_bytes;  // x is a byte count (labels "4K", "1M"), else n
  bool bars;     // cases without a size: one bar pair per case
} svg_panel_t;

static const svg_panel_t svg_panels[] = {
    {"Copies, synchronous calls", "copy", 0, "GB/s", "bytes per copy", true,
     false},
    {"Copies, stream (asynchronous) calls", "copy", 1, "GB/s", "bytes per copy",
     true, false},
    {"GEMM", "gemm", -1, "GFLOP/s", "n (m = n = k)", false, false},
    {"Elementwise ops (baseline: the C loop on the pool's threads)",
     "elementwise", -1, "GB/s", "bytes per f32 operand", true, false},
    {"Kernel launch (lower is better)", "launch", -1, "us", "", false, true},
};


static bool svg_in_panel(const svg_panel_t* p, const bench_result_t* r) {
  if (strcmp(r->suite, p->suite) != 0 || r->outcome != BENCH_OUTCOME_OK ||
      (r->size == 0) != p->bars || !(r->accel.median > 0)) {
    return false;
  }
  size_t n = strlen(r->name);
  // The one-thread elementwise rows repeat the accel side.
  if (n >= 8 && strcmp(r->name + n - 8, "_1thread") == 0) return false;
  if (p->async < 0) return true;
  bool async = n >= 6 && strcmp(r->name + n - 6, "_async") == 0;
  return async == (p->async == 1);
}

// The smallest 1, 2 or 5 times a power of ten that is >= v.
static double svg_nice_ceil(double v) {
  if (!(v > 0)) return 1.0;
  double p = pow(10.0, floor(log10(v)));
  if (v <= p) return p;
  if (v <= 2 * p) return 2 * p;
  if (v <= 5 * p) return 5 * p;
  return 10 * p;
}

// The largest 1, 2 or 5 times a power of ten that is <= v.
static double svg_nice_floor(double v) {
  if (!(v > 0)) return 1.0;
  double p = pow(10.0, floor(log10(v)));
  if (v >= 5 * p) return 5 * p;
  if (v >= 2 * p) return 2 * p;
  return p;
}

// "4K", "64M", "1G" for bytes; the number itself otherwise.
static void svg_size_label(uint64_t v, bool bytes, char* buf, size_t size) {
  static const char* const suffix[] = {"", "K", "M", "G", "T"};
  size_t u = 0;
  while (bytes && u < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    u++;
  }
  snprintf(buf, size, "%llu%s", (unsigned long long)v, suffix[u]);
}

typedef struct svg_frame {
  double x0, y0;      // top-left of the plot area
  double xmin, xmax;  // log2 sizes
  double ymin, ymax;  // ends of the (log10) y axis
  double r0;          // top of the ratio strip
  double rmax;        // top of the ratio axis (linear from 0)
} svg_frame_t;

static double svg_x(const svg_frame_t* f, uint64_t size) {
  return f->x0 +
         (log2((double)size) - f->xmin) / (f->xmax - f->xmin) * SVG_PLOT_WIDTH;
}

static double svg_y(const svg_frame_t* f, double v) {
  if (v < f->ymin) v = f->ymin;
  double lo = log10(f->ymin), hi = log10(f->ymax);
  return f->y0 + SVG_PLOT_HEIGHT - (log10(v) - lo) / (hi - lo) * SVG_PLOT_HEIGHT;
}

static double svg_ry(const svg_frame_t* f, double ratio) {
  if (ratio > f->rmax) ratio = f->rmax;
  return f->r0 + SVG_RATIO_HEIGHT - ratio / f->rmax * SVG_RATIO_HEIGHT;
}

static void svg_hline(FILE* out, double x0, double x1, double y,
                      const char* stroke, const char* dash) {
  fprintf(out,
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
          "stroke=\"%s\"%s%s%s/>\n",
          x0, y, x1, y, stroke, dash != NULL ? " stroke-dasharray=\"" : "",
          dash != NULL ? dash : "", dash != NULL ? "\"" : "");
}

// The y grid of the log axis: every 1, 2, 5 x 10^k within [ymin, ymax]
// (only the powers of ten when that is more than a dozen lines).
static void svg_log_grid(FILE* out, const svg_frame_t* f) {
  bool dense = log10(f->ymax / f->ymin) <= 4;
  for (double p = pow(10.0, floor(log10(f->ymin))); p <= f->ymax; p *= 10) {
    static const double mult[] = {1, 2, 5};
    for (int m = 0; m < (dense ? 3 : 1); m++) {
      double v = p * mult[m];
      if (v < f->ymin * 0.999 || v > f->ymax * 1.001) continue;
      double y = svg_y(f, v);
      svg_hline(out, f->x0, f->x0 + SVG_PLOT_WIDTH, y, "#ddd", NULL);
      fprintf(out,
              "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
              f->x0 - 6, y + 4, v);
    }
  }
}

static void svg_axes(FILE* out, const svg_panel_t* p, const svg_frame_t* f,
                     double budget) {
  fprintf(out,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" "
          "fill=\"none\" stroke=\"#333\"/>\n",
          f->x0, f->y0, SVG_PLOT_WIDTH, SVG_PLOT_HEIGHT);
  svg_log_grid(out, f);
  // The ratio strip: 0 .. rmax, with 1 and the budget marked.
  fprintf(out,
          "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" "
          "fill=\"none\" stroke=\"#333\"/>\n",
          f->x0, f->r0, SVG_PLOT_WIDTH, SVG_RATIO_HEIGHT);
  for (double v = 0; v <= f->rmax + 1e-9; v += f->rmax > 2 ? 1.0 : 0.5) {
    double y = svg_ry(f, v);
    svg_hline(out, f->x0, f->x0 + SVG_PLOT_WIDTH, y, "#eee", NULL);
    fprintf(out,
            "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
            f->x0 - 6, y + 4, v);
  }
  svg_hline(out, f->x0, f->x0 + SVG_PLOT_WIDTH, svg_ry(f, 1.0), "#333", NULL);
  if (budget > 0) {
    svg_hline(out, f->x0, f->x0 + SVG_PLOT_WIDTH, svg_ry(f, budget), "#d62728",
              "3 3");
    fprintf(out,
            "<text x=\"%.1f\" y=\"%.1f\" fill=\"#d62728\">budget "
            "%g</text>\n",
            f->x0 + SVG_PLOT_WIDTH + 4, svg_ry(f, budget) + 4, budget);
  }
  int step = f->xmax - f->xmin > 12 ? 2 : 1;
  double bottom = f->r0 + SVG_RATIO_HEIGHT;
  for (int e = (int)f->xmin; e <= (int)f->xmax; e += step) {
    uint64_t size = UINT64_C(1) << e;
    double x = svg_x(f, size);
    char label[32];
    svg_size_label(size, p->x_bytes, label, sizeof(label));
    fprintf(out,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#eee\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
            "text-anchor=\"middle\">%s</text>\n",
            x, f->y0, x, bottom, x, bottom + 17, label);
  }
  fprintf(out,
          "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s "
          "(log scale)</text>\n",
          f->x0 + SVG_PLOT_WIDTH / 2.0, bottom + 36, p->x_label);
  fprintf(out,
          "<text transform=\"translate(%.1f %.1f) rotate(-90)\" "
          "text-anchor=\"middle\">%s (log)</text>\n",
          f->x0 - 52, f->y0 + SVG_PLOT_HEIGHT / 2.0, p->y_label);
  fprintf(out,
          "<text transform=\"translate(%.1f %.1f) rotate(-90)\" "
          "text-anchor=\"middle\">accel/base</text>\n",
          f->x0 - 52, f->r0 + SVG_RATIO_HEIGHT / 2.0);
}

// Draws one series (one case, one side) as a polyline with markers.
static void svg_series(FILE* out, const bench_ctx_t* ctx, const svg_panel_t* p,
                       const svg_frame_t* f, const char* name,
                       const char* color, bool baseline) {
  fprintf(out,
          "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s "
          "points=\"",
          color, baseline ? "1.5" : "2",
          baseline ? " stroke-dasharray=\"6 4\"" : "");
  for (size_t i = 0; i < ctx->result_count; ++i) {
    const bench_result_t* r = &ctx->results[i];
    if (!svg_in_panel(p, r) || strcmp(r->name, name) != 0) continue;
    if (baseline && !r->has_baseline) continue;
    const bench_timing_t* t = baseline ? &r->baseline : &r->accel;
    fprintf(out, "%.1f,%.1f ", svg_x(f, r->size), svg_y(f, t->median));
  }
  fputs("\"/>\n", out);
  for (size_t i = 0; i < ctx->result_count; ++i) {
    const bench_result_t* r = &ctx->results[i];
    if (!svg_in_panel(p, r) || strcmp(r->name, name) != 0) continue;
    if (baseline && !r->has_baseline) continue;
    const bench_timing_t* t = baseline ? &r->baseline : &r->accel;
    double x = svg_x(f, r->size) + (baseline ? 3 : -3);
    fprintf(out,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"%s\" stroke-width=\"1\"/>\n",
            x, svg_y(f, t->min), x, svg_y(f, t->max), color);
    if (baseline) {
      fprintf(out,
              "<rect x=\"%.1f\" y=\"%.1f\" width=\"6\" height=\"6\" "
              "fill=\"white\" stroke=\"%s\"/>\n",
              x - 3, svg_y(f, t->median) - 3, color);
    } else {
      fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", x,
              svg_y(f, t->median), color);
    }
  }
  if (baseline) return;
  // accel / baseline in the strip below.
  fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" points=\"", color);
  for (size_t i = 0; i < ctx->result_count; ++i) {
    const bench_result_t* r = &ctx->results[i];
    double ratio = bench_result_ratio(r);
    if (!svg_in_panel(p, r) || strcmp(r->name, name) != 0 || isnan(ratio)) {
      continue;
    }
    fprintf(out, "%.1f,%.1f ", svg_x(f, r->size), svg_ry(f, ratio));
  }
  fputs("\"/>\n", out);
  for (size_t i = 0; i < ctx->result_count; ++i) {
    const bench_result_t* r = &ctx->results[i];
    double ratio = bench_result_ratio(r);
    if (!svg_in_panel(p, r) || strcmp(r->name, name) != 0 || isnan(ratio)) {
      continue;
    }
    fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
            svg_x(f, r->size), svg_ry(f, ratio), color);
  }
}

// The launch panel: per case, an accel and a baseline bar (linear axis
// from 0) with the [min, max] over trials as a whisker and the median
// written above.
static void svg_bars(FILE* out, const bench_ctx_t* ctx, const svg_panel_t* p,
                     double y0) {
  double ymax = 0;
  size_t count = 0;
  for (size_t i = 0; i < ctx->result_count; ++i) {
    const bench_result_t* r = &ctx->results[i];
    if (!svg_in_panel(p, r)) continue;
    count++;
    if (r->accel.max > ymax) ymax = r->accel.max;
    if (r->has_baseline && r->baseline.max > ymax) ymax = r->baseline.max;
  }
  ymax = svg_nice_ceil(ymax * 1.1);
  double h = SVG_BAR_PANEL_HEIGHT - 90;
  fprintf(out,
          "<rect x=\"%d\" y=\"%.1f\" width=\"%d\" height=\"%.1f\" "
          "fill=\"none\" stroke=\"#333\"/>\n",
          SVG_LEFT, y0, SVG_PLOT_WIDTH, h);
  for (int k = 0; k <= 4; ++k) {
    double v = ymax * k / 4.0, y = y0 + h - v / ymax * h;
    svg_hline(out, SVG_LEFT, SVG_LEFT + SVG_PLOT_WIDTH, y, "#ddd", NULL);
    fprintf(out,
            "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
            SVG_LEFT - 6, y + 4, v);
  }
  fprintf(out,
          "<text transform=\"translate(%d %.1f) rotate(-90)\" "
          "text-anchor=\"middle\">%s</text>\n",
          SVG_LEFT - 52, y0 + h / 2, p->y_label);
  double slot = (double)SVG_PLOT_WIDTH / (double)(count ? count : 1);
  size_t k = 0;
  for (size_t i = 0; i < ctx->result_count; ++i) {
    const bench_result_t* r = &ctx->results[i];
    if (!svg_in_panel(p, r)) continue;
    double cx = SVG_LEFT + slot * ((double)k + 0.5);
    for (int side = 0; side < 2; ++side) {
      if (side == 1 && !r->has_baseline) continue;
      const bench_timing_t* t = side ? &r->baseline : &r->accel;
      double x = cx + (side ? 6 : -46), top = y0 + h - t->median / ymax * h;
      fprintf(out,
              "<rect x=\"%.1f\" y=\"%.1f\" width=\"40\" height=\"%.1f\" "
              "fill=\"%s\"%s/>\n",
              x, top, y0 + h - top, side ? "white" : svg_colors[0],
              side ? " stroke=\"#1f77b4\" stroke-dasharray=\"4 3\"" : "");
      fprintf(out,
              "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
              "stroke=\"#333\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
              "text-anchor=\"middle\">%.3g</text>\n",
              x + 20, y0 + h - t->min / ymax * h, x + 20,
              y0 + h - t->max / ymax * h, x + 20, top - 6, t->median);
    }
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
            cx, y0 + h + 18);
    xml_text(out, r->name);
    fputs(" (solid: accel, dashed: ", out);
    xml_text(out, r->has_baseline ? r->baseline_name : "no baseline");
    fputs(")</text>\n", out);
    k++;
  }
}

// Height of panel `p`: a full plot, or one line saying why it is empty.
static int svg_panel_height(const bench_ctx_t* ctx, const svg_panel_t* p) {
  for (size_t i = 0; i < ctx->result_count; ++i) {
    if (svg_in_panel(p, &ctx->results[i])) {
      return p->bars ? SVG_BAR_PANEL_HEIGHT : SVG_PANEL_HEIGHT;
    }
  }
  return SVG_EMPTY_HEIGHT;
}

// Draws panel `p` with its top at `top`.
static void svg_panel(FILE* out, const bench_ctx_t* ctx, const svg_panel_t* p,
                      double top) {
  const char* names[SVG_MAX_SERIES];
  size_t count = 0;
  const char* baseline_name = NULL;
  svg_frame_t f = {.x0 = SVG_LEFT, .y0 = top + 30, .xmin = 64, .xmax = -1};
  double ymax = 0, ymin = INFINITY, rmax = 1.2, budget = 0;
  for (size_t i = 0; i < ctx->result_count; ++i) {
    const bench_result_t* r = &ctx->results[i];
    if (!svg_in_panel(p, r)) continue;
    size_t k = 0;
    while (k < count && strcmp(names[k], r->name) != 0) k++;
    if (k == count && count < SVG_MAX_SERIES) names[count++] = r->name;
    double e = log2((double)r->size);
    if (e < f.xmin) f.xmin = floor(e);
    if (e > f.xmax) f.xmax = ceil(e);
    if (r->accel.max > ymax) ymax = r->accel.max;
    if (r->has_baseline && r->baseline.max > ymax) ymax = r->baseline.max;
    if (r->accel.min > 0 && r->accel.min < ymin) ymin = r->accel.min;
    if (r->has_baseline && r->baseline.min > 0 && r->baseline.min < ymin) {
      ymin = r->baseline.min;
    }
    double ratio = bench_result_ratio(r);
    if (!isnan(ratio) && ratio * 1.1 > rmax) rmax = ratio * 1.1;
    if (r->budget == BENCH_BUDGET_MIN_RATIO) budget = r->budget_value;
    if (r->has_baseline) baseline_name = r->baseline_name;
  }
  fprintf(out,
          "<text x=\"%d\" y=\"%.1f\" font-size=\"15\" "
          "font-weight=\"bold\">",
          SVG_LEFT, top + 18);
  xml_text(out, p->title);
  fprintf(out, " (%s)</text>\n", p->y_label);
  if (count == 0) {
    fprintf(out,
            "<text x=\"%d\" y=\"%.1f\" fill=\"#666\">no results: ", SVG_LEFT,
            top + 60);
    const char* why = "the suite did not run (--filter)";
    for (size_t i = 0; bench_suites[i] != NULL; ++i) {
      if (strcmp(bench_suites[i]->name, p->suite) == 0 &&
          bench_suites[i]->pending != NULL) {
        why = bench_suites[i]->pending;
      }
    }
    xml_text(out, why);
    fputs("</text>\n", out);
    return;
  }
  if (p->bars) {
    svg_bars(out, ctx, p, f.y0);
    return;
  }
  if (f.xmax <= f.xmin) {
    f.xmin -= 1;
    f.xmax += 1;
  }
  f.ymax = svg_nice_ceil(ymax * 1.05);
  f.ymin = svg_nice_floor(ymin * 0.95);
  if (!(f.ymin < f.ymax)) f.ymin = f.ymax / 10;
  f.r0 = f.y0 + SVG_PLOT_HEIGHT + SVG_RATIO_GAP;
  f.rmax = rmax > 4 ? 4 : ceil(rmax * 2) / 2;
  svg_axes(out, p, &f, budget);
  for (size_t k = 0; k < count; ++k) {
    svg_series(out, ctx, p, &f, names[k], svg_colors[k], true);
    svg_series(out, ctx, p, &f, names[k], svg_colors[k], false);
  }
  // Legend: one colour per case, then what solid and dashed mean.
  double lx = SVG_LEFT + SVG_PLOT_WIDTH + 20, ly = f.y0 + 8;
  for (size_t k = 0; k < count; ++k, ly += 18) {
    fprintf(out,
            "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" "
            "fill=\"%s\"/>\n<text x=\"%.1f\" y=\"%.1f\">",
            lx, ly - 9, svg_colors[k], lx + 20, ly);
    xml_text(out, names[k]);
    fputs("</text>\n", out);
  }
  ly += 10;
  fprintf(out,
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
          "stroke=\"#333\" stroke-width=\"2\"/>\n"
          "<text x=\"%.1f\" y=\"%.1f\">accel</text>\n",
          lx, ly - 4, lx + 14, ly - 4, lx + 20, ly);
  ly += 18;
  fprintf(out,
          "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
          "stroke=\"#333\" stroke-dasharray=\"4 3\"/>\n"
          "<text x=\"%.1f\" y=\"%.1f\">baseline: ",
          lx, ly - 4, lx + 14, ly - 4, lx + 20, ly);
  xml_text(out, baseline_name != NULL ? baseline_name : "n/a");
  fputs("</text>\n", out);
  fprintf(out,
          "<text x=\"%.1f\" y=\"%.1f\" fill=\"#666\">bars: min..max over "
          "trials</text>\n",
          lx, ly + 18);
}

bool bench_render_svg(const bench_ctx_t* ctx, const bench_run_info_t* run,
                      const char* path) {
  FILE* out = fopen(path, "w");
  if (out == NULL) return false;
  size_t panels = sizeof(svg_panels) / sizeof(svg_panels[0]);
  int height = SVG_TOP;
  for (size_t i = 0; i < panels; ++i) {
    height += svg_panel_height(ctx, &svg_panels[i]);
  }
  fprintf(out,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
          "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" "
          "font-size=\"12\">\n"
          "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
          SVG_WIDTH, height, SVG_WIDTH, height);
  fprintf(out,
          "<text x=\"%d\" y=\"24\" font-size=\"17\" "
          "font-weight=\"bold\">accel-bench: ",
          SVG_LEFT);
  xml_text(out, ctx->info.uri);
  fputs(" (", out);
  xml_text(out, ctx->info.name);
  fputs(")</text>\n", out);
  fprintf(out, "<text x=\"%d\" y=\"42\" fill=\"#666\">", SVG_LEFT);
  xml_text(out, run->mode);
  fputs(" suite, ", out);
  xml_text(out, run->date);
  fputs("; medians of interleaved trials</text>\n", out);
  double top = SVG_TOP;
  for (size_t i = 0; i < panels; ++i) {
    svg_panel(out, ctx, &svg_panels[i], top);
    top += svg_panel_height(ctx, &svg_panels[i]);
  }
  fputs("</svg>\n", out);
  bool ok = !ferror(out);
  return fclose(out) == 0 && ok;
}
