// SPDX-License-Identifier: MIT
//
// accel-comm-bench: bus bandwidth of accel's all-reduce and all-gather
// against MPI_Allreduce and MPI_Allgather called directly on the same
// memory, in the same run, interleaved. Launch it with mpirun, one process
// per rank:
//
//   mpirun -np 2 accel-comm-bench [--min 4K] [--max 256M] [--json FILE]
//
// Bus bandwidth follows nccl-tests: all-reduce moves 2 (n - 1) / n of the
// buffer per rank, all-gather (n - 1) / n of the gathered buffer. Each
// figure is the median over repetitions of the slowest rank's time. The
// direct call runs on the buffer's own memory when the device is
// host-accessible (cpu), so both sides move the same bytes.
#include <accel/accel.h>
#include <getopt.h>
#include <limits.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

typedef struct options {
  size_t min_bytes, max_bytes;
  const char* device;
  const char* json;
  double seconds;  // per size and side, at least
} options_t;

static int rank_, size_;

static void usage(FILE* out) {
  fprintf(out,
          "usage: mpirun -np N accel-comm-bench [options]\n"
          "  --min SIZE      smallest buffer (default 4K)\n"
          "  --max SIZE      largest buffer (default 256M)\n"
          "  --device URI    accel device (default cpu:0)\n"
          "  --seconds S     time per size and side (default 0.3)\n"
          "  --json FILE     also write the results as JSON\n"
          "  --help          this text\n");
}

// The largest --max: MPI takes an int count of floats.
#define COMM_BENCH_MAX_BYTES ((unsigned long long)INT_MAX * sizeof(float))

// Prints a usage error once (rank 0) and returns 2.
static int refuse(const char* fmt, ...) {
  if (rank_ == 0) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "accel-comm-bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    usage(stderr);
  }
  return 2;
}

// 0 to run, 1 after --help, 2 for a bad command line.
static int parse(int argc, char** argv, options_t* o) {
  static const struct option longs[] = {
      {"min", required_argument, NULL, 'm'},
      {"max", required_argument, NULL, 'M'},
      {"device", required_argument, NULL, 'd'},
      {"seconds", required_argument, NULL, 's'},
      {"json", required_argument, NULL, 'j'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  *o = (options_t){4 << 10, 256u << 20, "cpu:0", NULL, 0.3};
  opterr = 0;  // refusals are worded below, once
  int c;
  while ((c = getopt_long(argc, argv, ":h", longs, NULL)) != -1) {
    unsigned long long bytes = 0;
    switch (c) {
      case 'm':
      case 'M':
        if (!tool_parse_bytes(optarg, COMM_BENCH_MAX_BYTES, &bytes) ||
            bytes < sizeof(float)) {
          return refuse("%s wants 4 to %llu bytes (K, M and G count "
                        "1024s: 4K, 256M), not '%s'",
                        c == 'm' ? "--min" : "--max", COMM_BENCH_MAX_BYTES,
                        optarg);
        }
        *(c == 'm' ? &o->min_bytes : &o->max_bytes) = (size_t)bytes;
        break;
      case 'd': o->device = optarg; break;
      case 's':
        if (!tool_parse_seconds(optarg, &o->seconds)) {
          return refuse("--seconds wants seconds above 0 and at most "
                        "86400, not '%s'",
                        optarg);
        }
        break;
      case 'j': o->json = optarg; break;
      case 'h':
        if (rank_ == 0) usage(stdout);
        return 1;
      default: {
        tool_option_error_t e;
        tool_option_error(c, argv, longs, &e);
        return refuse("%s: %s", e.problem, e.option);
      }
    }
  }
  if (optind < argc) return refuse("unexpected argument '%s'", argv[optind]);
  if (o->max_bytes < o->min_bytes) {
    return refuse("--max (%zu bytes) is below --min (%zu bytes)",
                  o->max_bytes, o->min_bytes);
  }
  return 0;
}

static int cmp_double(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

typedef struct side {
  accel_comm_t* comm;
  accel_stream_t* stream;
  accel_buffer_t *send, *recv;
  void *send_host, *recv_host;  // the same memory, for the direct call
} side_t;

// One timed call: all-reduce (`gather` false) or all-gather of `count`
// floats per rank, through accel (`direct` false) or MPI.
static double run_once(side_t* s, bool gather, bool direct, size_t count) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  int rc = 0;
  accel_status_t status = ACCEL_OK;
  if (direct && gather) {
    rc = MPI_Allgather(s->send_host, (int)count, MPI_FLOAT, s->recv_host,
                       (int)count, MPI_FLOAT, MPI_COMM_WORLD);
  } else if (direct) {
    rc = MPI_Allreduce(s->send_host, s->recv_host, (int)count, MPI_FLOAT,
                       MPI_SUM, MPI_COMM_WORLD);
  } else if (gather) {
    status = accel_comm_all_gather(s->comm, s->stream, s->send, 0, s->recv, 0,
                                   count, ACCEL_DTYPE_F32);
  } else {
    status = accel_comm_all_reduce(s->comm, s->stream, s->send, 0, s->recv, 0,
                                   count, ACCEL_DTYPE_F32, ACCEL_REDUCE_SUM);
  }
  double t = MPI_Wtime() - t0;
  if (rc != MPI_SUCCESS || status != ACCEL_OK) {
    fprintf(stderr, "accel-comm-bench: rank %d: %s\n", rank_,
            status != ACCEL_OK ? accel_last_error() : "MPI call failed");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  double slowest = t;
  MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

// Median seconds of accel and direct, interleaved, for one size.
static void measure(side_t* s, bool gather, size_t count, double seconds,
                    double* out_accel, double* out_direct) {
  enum { kMaxReps = 200 };
  double a[kMaxReps], d[kMaxReps], spent = 0;
  int reps = 0;
  run_once(s, gather, false, count);  // warm up both paths
  run_once(s, gather, true, count);
  while (reps < kMaxReps && (reps < 5 || spent < 2 * seconds)) {
    bool accel_first = reps % 2 == 0;
    double x = run_once(s, gather, !accel_first, count);
    double y = run_once(s, gather, accel_first, count);
    a[reps] = accel_first ? x : y;
    d[reps] = accel_first ? y : x;
    spent += x + y;
    reps++;
    // Every rank must agree on when to stop.
    int go = reps < kMaxReps && (reps < 5 || spent < 2 * seconds);
    MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!go) break;
  }
  qsort(a, (size_t)reps, sizeof(double), cmp_double);
  qsort(d, (size_t)reps, sizeof(double), cmp_double);
  *out_accel = a[reps / 2];
  *out_direct = d[reps / 2];
}

// This process's rank as its launcher announces it in the environment,
// before MPI_Init: 0 when run alone or by a launcher not named here.
static int launcher_rank(void) {
  static const char* const names[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                      "PMI_RANK"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    const char* v = getenv(names[i]);
    if (v != NULL && *v != '\0') return atoi(v);
  }
  return 0;
}

int main(int argc, char** argv) {
  // The command line is checked before MPI starts: a refusal or --help
  // needs no MPI, and MPI_Init alone (a singleton) can take minutes where
  // it loads the machine's topology under a sanitizer (hwloc reading the
  // PCI names, seen on a Zen 5 EPYC guest with ASan).
  rank_ = launcher_rank();  // only rank 0 prints a refusal
  options_t o;
  int rc = parse(argc, argv, &o);
  if (rc != 0) return rc == 1 ? 0 : rc;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  accel_device_t* dev = NULL;
  side_t s = {0};
  size_t max_all = o.max_bytes * (size_t)size_;
  MPI_Comm world = MPI_COMM_WORLD;
  accel_comm_options_t co;
  accel_comm_options_init(&co);
  co.native_comm = &world;  // the application's MPI, shared with accel
  uint64_t send_address = 0, recv_address = 0;
  if (accel_device_open(o.device, &dev) != ACCEL_OK ||
      accel_stream_create(dev, 0, &s.stream) != ACCEL_OK ||
      accel_buffer_create(dev, o.max_bytes, &s.send) != ACCEL_OK ||
      accel_buffer_create(dev, max_all, &s.recv) != ACCEL_OK ||
      accel_buffer_fill(s.send, 0, 0, o.max_bytes) != ACCEL_OK ||
      accel_buffer_fill(s.recv, 0, 0, max_all) != ACCEL_OK ||
      accel_comm_create(&co, &s.comm) != ACCEL_OK) {
    fprintf(stderr, "accel-comm-bench: rank %d: %s\n", rank_,
            accel_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  if (accel_buffer_query_address(s.send, 0, &send_address) == ACCEL_OK &&
      accel_buffer_query_address(s.recv, 0, &recv_address) == ACCEL_OK) {
    s.send_host = (void*)(uintptr_t)send_address;
    s.recv_host = (void*)(uintptr_t)recv_address;
  } else {
    // A device without host addresses: MPI gets its own host memory.
    s.send_host = calloc(1, o.max_bytes);
    s.recv_host = calloc(1, max_all);
  }
  FILE* json = NULL;
  if (rank_ == 0) {
    printf("accel-comm-bench: %d ranks, %s, engine %s\n", size_, o.device,
           accel_comm_engine(s.comm));
    printf("%-10s %10s %14s %14s %7s\n", "op", "bytes", "accel GB/s",
           "MPI GB/s", "ratio");
    if (o.json != NULL) json = fopen(o.json, "w");
    if (json != NULL) fprintf(json, "{\"ranks\": %d, \"results\": [", size_);
  }
  bool first = true;
  for (int g = 0; g < 2; g++) {
    for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 4) {
      size_t count = bytes / sizeof(float);
      double ta = 0, td = 0;
      measure(&s, g == 1, count, o.seconds, &ta, &td);
      double moved = g == 1 ? (double)bytes * size_ : (double)bytes;
      double factor =
          g == 1 ? (size_ - 1.0) / size_ : 2.0 * (size_ - 1.0) / size_;
      double bus_a = moved * factor / ta / 1e9, bus_d = moved * factor / td / 1e9;
      if (rank_ == 0) {
        const char* op = g == 1 ? "all_gather" : "all_reduce";
        printf("%-10s %10zu %14.3f %14.3f %7.3f\n", op, bytes, bus_a, bus_d,
               bus_a / bus_d);
        if (json != NULL) {
          fprintf(json,
                  "%s\n  {\"op\": \"%s\", \"bytes\": %zu, \"accel_busbw\": "
                  "%.6g, \"mpi_busbw\": %.6g, \"ratio\": %.4f}",
                  first ? "" : ",", op, bytes, bus_a, bus_d, bus_a / bus_d);
        }
      }
      first = false;
    }
  }
  if (json != NULL) {
    fprintf(json, "\n]}\n");
    fclose(json);
  }
  if (send_address == 0) {
    free(s.send_host);
    free(s.recv_host);
  }
  accel_comm_release(s.comm);
  accel_buffer_release(s.send);
  accel_buffer_release(s.recv);
  accel_stream_release(s.stream);
  accel_device_release(dev);
  accel_shutdown();
  MPI_Finalize();
  return 0;
}
