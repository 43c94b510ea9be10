// SPDX-License-Identifier: MIT
//
// Human-readable output: the plugin table, the devices, then the device
// the environment selects. Columns are sized to their contents; colour is
// used only when main.c found a terminal.
#include <accel/plugin.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "info.h"

#define INFO_GREEN "\033[32m"
#define INFO_YELLOW "\033[33m"
#define INFO_RED "\033[31m"
#define INFO_BOLD "\033[1m"
#define INFO_RESET "\033[0m"

// Plugin-supplied bytes (names, messages, paths) go to a terminal, so
// anything outside printable ASCII is written as an escape (\n, \x1b)
// rather than raw: a plugin cannot move the cursor or forge lines. The
// copies live in a ring of buffers, enough for one fprintf's arguments.
#define INFO_SAFE_SLOTS 16
#define INFO_SAFE_SIZE 4096
static const char* info_safe(const char* s) {
  static char ring[INFO_SAFE_SLOTS][INFO_SAFE_SIZE];
  static unsigned next;
  if (s == NULL) return NULL;
  char* out = ring[next++ % INFO_SAFE_SLOTS];
  size_t n = 0;
  for (const unsigned char* p = (const unsigned char*)s; *p != '\0'; ++p) {
    char esc[8];
    if (*p >= 0x20 && *p < 0x7f && *p != '\\') {
      esc[0] = (char)*p, esc[1] = '\0';
    } else if (*p == '\n' || *p == '\t' || *p == '\\') {
      esc[0] = '\\', esc[1] = *p == '\n' ? 'n' : *p == '\t' ? 't' : '\\';
      esc[2] = '\0';
    } else {
      snprintf(esc, sizeof(esc), "\\x%02x", *p);
    }
    size_t len = strlen(esc);
    if (n + len >= INFO_SAFE_SIZE) break;
    memcpy(out + n, esc, len);
    n += len;
  }
  out[n] = '\0';
  return out;
}

static const char* info_or_dash(const char* s) {
  return s != NULL && s[0] != '\0' ? info_safe(s) : "-";
}

// Formats `bytes` in binary units ("15.6 GiB") into `buf`.
static const char* info_human_bytes(uint64_t bytes, char* buf, size_t size) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = (double)bytes;
  size_t u = 0;
  while (v >= 1024.0 && u + 1 < sizeof(units) / sizeof(units[0])) {
    v /= 1024.0;
    u++;
  }
  if (u == 0) {
    snprintf(buf, size, "%" PRIu64 " B", bytes);
  } else {
    snprintf(buf, size, "%.1f %s", v, units[u]);
  }
  return buf;
}

static const char* info_state_color(info_state_t state) {
  switch (state) {
    case INFO_STATE_OK:
      return INFO_GREEN;
    case INFO_STATE_UNAVAILABLE:
    case INFO_STATE_EXCLUDED:
    case INFO_STATE_SHADOWED:
      return INFO_YELLOW;
    default:
      return INFO_RED;
  }
}

static int info_max(int a, size_t b) { return (size_t)a > b ? a : (int)b; }

static void info_render_plugins(const info_report_t* r,
                                const info_text_options_t* o, FILE* out) {
  fprintf(out, "%sPlugins (%zu)%s\n", o->color ? INFO_BOLD : "",
          r->plugin_count, o->color ? INFO_RESET : "");
  if (r->plugin_count == 0) {
    fprintf(out, "  none found\n");
    return;
  }
  int wn = 4, wv = 7, ws = 5;  // widths of NAME, VERSION, STATE
  for (size_t i = 0; i < r->plugin_count; ++i) {
    const info_plugin_t* p = &r->plugins[i];
    wn = info_max(wn, strlen(info_or_dash(p->report.name)));
    wv = info_max(wv, strlen(info_or_dash(p->report.version)));
    ws = info_max(ws, strlen(info_state_name(p->state)));
  }
  fprintf(out, "  %-*s  %-*s  %-3s  %-*s  %-7s  %s\n", wn, "NAME", wv,
          "VERSION", "ABI", ws, "STATE", "DEVICES", "PATH");
  for (size_t i = 0; i < r->plugin_count; ++i) {
    const info_plugin_t* p = &r->plugins[i];
    char abi[16] = "-";
    if (p->report.abi_version != 0) {
      snprintf(abi, sizeof(abi), "%" PRIu32 ".%" PRIu32,
               p->report.abi_version, p->report.abi_minor);
    }
    char devices[16] = "-";
    if (p->state == INFO_STATE_OK || p->state == INFO_STATE_UNAVAILABLE) {
      snprintf(devices, sizeof(devices), "%" PRIu32, p->report.device_count);
    }
    fprintf(out, "  %-*s  %-*s  %-3s  %s%-*s%s  %-7s  %s\n", wn,
            info_or_dash(p->report.name), wv, info_or_dash(p->report.version),
            abi, o->color ? info_state_color(p->state) : "", ws,
            info_state_name(p->state), o->color ? INFO_RESET : "", devices,
            info_safe(p->report.path));
    if (p->state != INFO_STATE_OK) {
      fprintf(out, "      %s at stage %s: %s\n", accel_status_string(p->status),
              info_stage_name(p->stage), info_or_dash(p->message));
    }
    if (o->verbose) {
      fprintf(out, "      from %s (%s)\n", info_or_dash(p->report.source),
              info_origin_name(p->report.origin));
    }
  }
}

static void info_render_device(const info_device_t* d, FILE* out) {
  const accel_device_info_t* in = &d->info;
  char total[32], free_[32];
  fprintf(out, "  %s  %s\n", info_safe(in->uri), info_or_dash(in->name));
  fprintf(out, "      vendor %s, arch %s, %" PRIu32 " compute units",
          info_or_dash(in->vendor), info_or_dash(in->arch), in->compute_units);
  if (in->simd_width != 0) {
    fprintf(out, ", SIMD width %" PRIu32, in->simd_width);
  }
  fputc('\n', out);
  fprintf(out, "      memory %s total, %s free",
          info_human_bytes(in->total_memory, total, sizeof(total)),
          info_human_bytes(in->free_memory, free_, sizeof(free_)));
  if (in->max_alloc_size != 0) {
    char most[32];
    fprintf(out, ", largest allocation %s",
            info_human_bytes(in->max_alloc_size, most, sizeof(most)));
  }
  fputc('\n', out);
  if (in->module_target[0] != '\0' || in->module_formats[0] != '\0') {
    // Formats that only repeat the target (OpenCL: "opencl-c") add nothing.
    bool also = in->module_formats[0] != '\0' &&
                strcmp(in->module_formats, in->module_target) != 0;
    fprintf(out, "      modules %s%s%s\n", info_or_dash(in->module_target),
            also ? ", also " : "", also ? info_or_dash(in->module_formats) : "");
  }
  fprintf(out, "      capabilities:");
  bool any = false;
  for (unsigned bit = 0; bit < 32; ++bit) {
    accel_device_caps_t cap = (accel_device_caps_t)1u << bit;
    if ((in->caps & cap) == 0) continue;
    const char* name = accel_device_cap_name(cap);
    if (name != NULL) {
      fprintf(out, " %s", name);
    } else {
      fprintf(out, " bit%u", bit);
    }
    any = true;
  }
  fprintf(out, "%s\n", any ? "" : " none");
  if (in->driver_version[0] != '\0') {
    fprintf(out, "      driver %s\n", info_safe(in->driver_version));
  }
  static const uint8_t zero[16];
  if (memcmp(in->uuid, zero, sizeof(zero)) != 0) {
    const uint8_t* u = in->uuid;
    fprintf(out,
            "      uuid GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
            "%02x%02x%02x%02x%02x%02x\n",
            u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
            u[10], u[11], u[12], u[13], u[14], u[15]);
  }
  if (in->pci_bus_id[0] != '\0') {
    fprintf(out, "      pci %s\n", info_safe(in->pci_bus_id));
  }
}

static void info_render_devices(const info_report_t* r,
                                const info_text_options_t* o, FILE* out) {
  fprintf(out, "\n%sDevices (%zu)%s\n", o->color ? INFO_BOLD : "",
          r->device_count, o->color ? INFO_RESET : "");
  if (r->device_count == 0) fprintf(out, "  none usable\n");
  for (size_t i = 0; i < r->device_count; ++i) {
    info_render_device(&r->devices[i], out);
  }
  if (r->hidden_count == 0) return;
  fprintf(out, "\n%sHidden devices (%zu)%s\n", o->color ? INFO_BOLD : "",
          r->hidden_count, o->color ? INFO_RESET : "");
  for (size_t i = 0; i < r->hidden_count; ++i) {
    const info_hidden_t* h = &r->hidden[i];
    fprintf(out, "  %s device %" PRIu32 ": %s\n", info_safe(h->backend),
            h->index, info_safe(h->reason));
  }
}

static void info_render_engines(const info_report_t* r,
                                const info_text_options_t* o, FILE* out) {
  if (r->engine_count == 0) return;
  fprintf(out, "\n%sCollectives engines (%zu)%s\n", o->color ? INFO_BOLD : "",
          r->engine_count, o->color ? INFO_RESET : "");
  for (size_t i = 0; i < r->engine_count; ++i) {
    const accel_plugin_report_t* e = &r->engines[i];
    const char* name = e->name != NULL && e->name[0] != '\0' ? e->name : "?";
    fprintf(out, "  %-8s %-12s %s", info_safe(name),
            e->status == ACCEL_OK ? "ok" : accel_status_string(e->status),
            info_safe(e->path));
    if (e->message != NULL && e->message[0] != '\0') {
      fprintf(out, "\n           %s", info_safe(e->message));
    }
    fputc('\n', out);
  }
}

static void info_render_selection(const info_report_t* r,
                                  const info_text_options_t* o, FILE* out) {
  const char* env = r->backend_env;
  char env_desc[256];
  if (env == NULL || env[0] == '\0') {
    snprintf(env_desc, sizeof(env_desc), "ACCEL_BACKEND %s, so auto",
             env == NULL ? "unset" : "empty");
  } else {
    snprintf(env_desc, sizeof(env_desc), "ACCEL_BACKEND=%s", env);
  }
  fputc('\n', out);
  if (r->selected) {
    fprintf(out, "Selected device: %s%s%s (%s)\n", o->color ? INFO_GREEN : "",
            info_safe(r->selected_uri), o->color ? INFO_RESET : "",
            info_safe(env_desc));
  } else if (r->select_error != NULL) {
    fprintf(out, "Selected device: %snone%s (%s): %s: %s\n",
            o->color ? INFO_RED : "", o->color ? INFO_RESET : "",
            info_safe(env_desc), accel_status_string(r->select_status),
            info_safe(r->select_error));
  } else {
    fprintf(out, "Selected device: none (not queried)\n");
  }
}

void info_render_text(const info_report_t* r, const info_text_options_t* o,
                      FILE* out) {
  fprintf(out, "accel %s, plugin ABI %u\n\n", accel_version_string(),
          (unsigned)ACCEL_PLUGIN_ABI_VERSION);
  info_render_plugins(r, o, out);
  info_render_devices(r, o, out);
  info_render_engines(r, o, out);
  info_render_selection(r, o, out);
  if (o->verbose) {
    fprintf(out, "\nSearch path (%zu), in order\n", r->search_count);
    for (size_t i = 0; i < r->search_count; ++i) {
      fprintf(out, "  %-11s  %s\n", info_origin_name(r->search_origins[i]),
              info_safe(r->search_paths[i]));
    }
  }
  bool header = false;
  for (size_t i = 0; i < r->error_count; ++i) {
    const info_error_t* e = &r->errors[i];
    if (e->from_table) continue;  // already shown under its plugin
    if (!header) fprintf(out, "\nErrors\n");
    header = true;
    if (e->plugin != NULL) {
      fprintf(out, "  %s: %s\n", info_safe(e->plugin), info_safe(e->message));
    } else {
      fprintf(out, "  %s\n", info_safe(e->message));
    }
  }
}
