#!/bin/sh
# SPDX-License-Identifier: MIT
#
# Mutation test of accel-conform: plants each bug of mutants.txt, one at a
# time, in a COPY of the template, CPU, OpenCL, CUDA or ROCm plugin sources
# (the real sources are never touched), builds that mutant plugin and runs
# accel-conform on it; every mutant must make accel-conform fail (exit 1,
# or die).
#
#   run_mutants.sh SOURCE_DIR WORK_DIR ACCEL_CONFORM KERNEL_DIR CC [ID...]
#
# CUDA mutants run only where CTest describes the stand-in driver
# (tests/cuda/fakecuda) in ACCEL_MUTATION_CUDA_DRIVER and _CUBLAS, with
# the toolkit's headers (_INCLUDE), the plugin's embedded kernels as built
# (_FATBIN_C, the stand-in runs host versions of them) and the suite's
# CUDA test kernels (_KERNELS); otherwise each is listed as skipped.
# ROCm mutants likewise on the stand-in HIP runtime (tests/rocm/fakehip):
# ACCEL_MUTATION_ROCM_RUNTIME, _INCLUDE (HIP headers), _GEN (the build
# directory holding accel_rocm_embedded.c and accel_rocm_source.c) and
# _ARCHES (the embedded code objects' targets).
#
# OpenCL mutants run only with ACCEL_MUTATION_OPENCL=1 in the environment
# (CTest sets it where the OpenCL plugin is built, so the headers are
# there, and an OpenCL runtime such as PoCL must be installed); otherwise
# each is listed as skipped and not counted. A mutant of the OpenCL
# plugin may change one of its kernels/*.cl files: the embedded kernel
# source is then generated again (cmake -P cmake/AccelEmbed.cmake).
#
# With IDs (each an id or a shell glob, 'gemm_*' quoted), only the mutants
# whose id matches one of them run; CTest passes none and runs them all.
#
# Unmutated objects are compiled once per plugin and shared; a mutant
# recompiles only the file it changes (all files when it changes a header).
# Prints one line per mutant and "mutation score: N of M caught"; writes
# the same to WORK_DIR/report.txt. Exit 0 only when every mutant was
# caught. A mutant whose sed script changes nothing, that does not build,
# or that accel-conform cannot load (exit 2 or 77) is an error, not a catch.
set -u
src=$1 work=$2 conform=$3 kernels=$4 cc=$5
shift 5
only="$*"
table="$src/tests/mutation/mutants.txt"
flags="-std=c11 -O2 -fPIC -fvisibility=hidden -pthread -w -D_POSIX_C_SOURCE=200809L -I$src/sdk/include"
mkdir -p "$work"
rm -rf "$work/base-template" "$work/base-cpu" "$work/base-opencl" \
  "$work/src-opencl" "$work/base-cuda" "$work/src-cuda" "$work/base-rocm" \
  "$work/src-rocm" \
  "$work/m"  # sources may change
report="$work/report.txt"
: > "$report"

say() { echo "$*"; echo "$*" >> "$report"; }

# The sources a plugin is built from. OpenCL's, CUDA's and ROCm's are
# staged in WORK_DIR with their embedded kernels beside them (stage_opencl
# generates OpenCL's; stage_cuda and stage_rocm copy the build tree's).
plugin_dir() {
  case $1 in
    template) echo "$src/sdk/template" ;;
    cpu) echo "$src/plugins/cpu" ;;
    opencl) echo "$work/src-opencl" ;;
    cuda) echo "$work/src-cuda" ;;
    rocm) echo "$work/src-rocm" ;;
  esac
}

plugin_flags() {
  case $1 in
    template) echo "-DTEMPLATE_VERSION=\"mutant\"" ;;
    cpu) echo "-DACCEL_CPU_VERSION=\"mutant\"" ;;
    opencl) echo "-DACCEL_OPENCL_VERSION=\"mutant\"" ;;
    cuda) echo "-DACCEL_CUDA_VERSION=\"mutant\" $(system_include "${ACCEL_MUTATION_CUDA_INCLUDE:-}")" ;;
    rocm) echo "-D__HIP_PLATFORM_AMD__=1 -DACCEL_ROCM_VERSION=\"mutant\" -include $work/src-rocm/arches.h $(system_include "${ACCEL_MUTATION_ROCM_INCLUDE:-}")" ;;
  esac
}

# -isystem DIR, or nothing for the compiler's own /usr/include (naming it
# again would reorder the system headers).
system_include() {
  case $1 in ''|/usr/include|/usr/include/) ;; *) echo "-isystem $1" ;; esac
}

# Whether the mutants of plugin $1 can run in this build and environment.
plugin_enabled() {
  case $1 in
    opencl) [ "${ACCEL_MUTATION_OPENCL:-0}" = 1 ] ;;
    cuda) [ -n "${ACCEL_MUTATION_CUDA_DRIVER:-}" ] &&
            [ -d "${ACCEL_MUTATION_CUDA_INCLUDE:-}" ] &&
            [ -f "${ACCEL_MUTATION_CUDA_FATBIN_C:-}" ] ;;
    rocm) [ -n "${ACCEL_MUTATION_ROCM_RUNTIME:-}" ] &&
            [ -d "${ACCEL_MUTATION_ROCM_INCLUDE:-}" ] &&
            [ -f "${ACCEL_MUTATION_ROCM_GEN:-}/accel_rocm_source.c" ] ;;
    *) true ;;
  esac
}

stage_cuda() {
  [ -d "$work/src-cuda" ] && return 0
  mkdir -p "$work/src-cuda" &&
    cp "$src/plugins/cuda"/*.c "$src/plugins/cuda"/*.h "$work/src-cuda/" &&
    cp "$ACCEL_MUTATION_CUDA_FATBIN_C" "$work/src-cuda/ops_fatbin.c"
}

# The embedded arches go in a forced include: a -D with spaces would be
# split by the unquoted $(plugin_flags) of compile().
stage_rocm() {
  [ -d "$work/src-rocm" ] && return 0
  mkdir -p "$work/src-rocm" &&
    cp "$src/plugins/rocm"/*.c "$src/plugins/rocm"/*.h "$work/src-rocm/" &&
    cp -r "$src/plugins/rocm/kernels" "$work/src-rocm/" &&
    cp "$ACCEL_MUTATION_ROCM_GEN/accel_rocm_embedded.c" \
      "$ACCEL_MUTATION_ROCM_GEN/accel_rocm_source.c" "$work/src-rocm/" &&
    printf '#define ACCEL_ROCM_EMBEDDED_ARCHES "%s"\n' \
      "${ACCEL_MUTATION_ROCM_ARCHES:-}" > "$work/src-rocm/arches.h"
}

# embed_opencl DIR: DIR/accel_opencl_ops_source.c from DIR/kernels, as
# plugins/opencl/CMakeLists.txt builds it.
embed_opencl() {
  k=$1/kernels
  cmake "-DINPUT=$k/ops.cl;$k/gemm.cl;$src/sdk/include/accel/philox.h;$k/rng.cl" \
    "-DOUTPUT=$1/accel_opencl_ops_source.c" -DNAME=accel_opencl_ops_source \
    -P "$src/cmake/AccelEmbed.cmake" > /dev/null
}

stage_opencl() {
  [ -d "$work/src-opencl" ] && return 0
  mkdir -p "$work/src-opencl" &&
    cp "$src/plugins/opencl"/*.c "$src/plugins/opencl"/*.h "$work/src-opencl/" &&
    cp -r "$src/plugins/opencl/kernels" "$work/src-opencl/" &&
    embed_opencl "$work/src-opencl"
}

# compile PLUGIN SRCDIR OUTDIR FILE...: objects of FILE... into OUTDIR.
compile() {
  p=$1 dir=$2 out=$3
  shift 3
  mkdir -p "$out"
  for f in "$@"; do
    opt=""
    case $p/$f in cpu/kernels.c|cpu/convert.c) opt="-O3" ;; esac
    $cc $flags $opt $(plugin_flags "$p") -I"$dir" -c "$dir/$f" \
      -o "$out/${f%.c}.o" 2>> "$out/build.log" || return 1
  done
}

# run_conform SO FILTER LOG [ENV]: accel-conform on one plugin file, with
# the mutant's NAME=VALUE words ENV added to its environment; returns
# its exit status. ACCEL_CPU_STREAM_BYTES=1M puts the CPU plugin's split
# copies in copy.large on its non-temporal path, otherwise reached only
# from 3/4 of the L3 cache (192 MiB on the development VM). Two devices
# each, so the peer checks run.
# OpenCL (PoCL) gets two devices, its program caches in WORK_DIR, and
# waits long enough for PoCL to compile a changed kernel.
run_conform() {
  # (sh has no local variables: these names must not be the main loop's,
  # or the control run of base() would clear the first mutant's ENV.)
  wait_s=3 kdir=$kernels conform_env=${4:-}
  case $1 in
    *libaccel-opencl.so) wait_s=120 ;;
    *libaccel-cuda.so) kdir=${ACCEL_MUTATION_CUDA_KERNELS:-$kernels} ;;
  esac
  ACCEL_PLUGIN_PATH= ACCEL_BACKEND= ACCEL_LOG= ACCEL_CPU_MEMORY_LIMIT=8G \
    ACCEL_CPU_STREAM_BYTES=1M ACCEL_CPU_DEVICES=2 ACCEL_TEMPLATE_DEVICES=2 \
    POCL_DEVICES="pthread pthread" POCL_CACHE_DIR="$work/pocl-cache" \
    ACCEL_OPENCL_CACHE_DIR="$work/opencl-cache" FAKECUDA_DEVICES=2 \
    ACCEL_CUDA_DRIVER="${ACCEL_MUTATION_CUDA_DRIVER:-}" \
    ACCEL_CUDA_CUBLAS="${ACCEL_MUTATION_CUDA_CUBLAS:-}" \
    ACCEL_ROCM_RUNTIME="${ACCEL_MUTATION_ROCM_RUNTIME:-}" FAKEHIP_DEVICES=2 \
    env $conform_env timeout 300 "$conform" --plugin "$1" --kernel-dir "$kdir" \
    --timeout $wait_s --require-ops --no-known-failures --filter "$2" > "$3" 2>&1
}

# The unmutated objects of a plugin, built once, and the control: the
# unmutated plugin linked from them must pass the whole suite, or no
# mutant result would mean anything.
base() {
  p=$1
  if [ ! -f "$work/base-$p/.done" ]; then
    rm -rf "$work/base-$p"
    if [ "$p" = opencl ]; then stage_opencl || return 1; fi
    if [ "$p" = cuda ]; then stage_cuda || return 1; fi
    if [ "$p" = rocm ]; then stage_rocm || return 1; fi
    (cd "$(plugin_dir "$p")" && ls *.c) > "$work/sources-$p"
    compile "$p" "$(plugin_dir "$p")" "$work/base-$p" \
      $(cat "$work/sources-$p") || return 1
    objs=""
    for f in $(cat "$work/sources-$p"); do objs="$objs $work/base-$p/${f%.c}.o"; done
    $cc -shared -pthread -o "$work/base-$p/libaccel-$p.so" $objs -ldl -lm \
      2>> "$work/base-$p/build.log" || return 1
    run_conform "$work/base-$p/libaccel-$p.so" '*' "$work/base-$p/conform.log"
    rc=$?
    if [ $rc -eq 77 ]; then  # no device (no OpenCL runtime installed)
      say "SKIP   control: no $p device here: $(tail -1 "$work/base-$p/conform.log")"
      touch "$work/base-$p/.unavailable" "$work/base-$p/.done"
      return 0
    fi
    if [ $rc -ne 0 ]; then
      say "ERROR  control: the unmutated $p plugin fails accel-conform:"
      grep -E '^FAIL' "$work/base-$p/conform.log" | head -5 | tee -a "$report"
      return 1
    fi
    say "PASS   control: the unmutated $p plugin passes accel-conform"
    touch "$work/base-$p/.done"
  fi
}

total=0 caught=0 errors=0
tab=$(printf '\t')
while IFS="$tab" read -r id p file filter script extra; do
  case $id in ''|'#'*) continue ;; esac
  if [ -n "$only" ]; then
    hit=""
    set -f  # the patterns are matched against ids, not expanded as files
    for pat in $only; do
      case $id in $pat) hit=1 ;; esac
    done
    set +f
    [ -n "$hit" ] || continue
  fi
  if ! plugin_enabled "$p"; then
    say "SKIP   $id: no $p plugin or stand-in in this build (ACCEL_MUTATION_*)"
    continue
  fi
  if ! base "$p"; then
    total=$((total + 1))
    say "ERROR  $id: the unmutated $p plugin does not build or pass (see $work/base-$p)"
    errors=$((errors + 1))
    continue
  fi
  if [ -f "$work/base-$p/.unavailable" ]; then
    say "SKIP   $id: no $p device here"
    continue
  fi
  total=$((total + 1))
  m="$work/m/$id"
  rm -rf "$m"
  mkdir -p "$m/src" "$m/obj"
  cp -r "$(plugin_dir "$p")"/. "$m/src/"
  sed -e "$script" "$(plugin_dir "$p")/$file" > "$m/src/$file"
  if cmp -s "$(plugin_dir "$p")/$file" "$m/src/$file"; then
    say "ERROR  $id: the sed script does not change $p/$file"
    errors=$((errors + 1))
    continue
  fi
  objs=""
  case $file in
    *.cl)  # a kernel: the embedded source is built again
      embed_opencl "$m/src" || objs=FAIL
      compile "$p" "$m/src" "$m/obj" accel_opencl_ops_source.c || objs=FAIL
      for f in $(cat "$work/sources-$p"); do
        if [ "$f" = accel_opencl_ops_source.c ]; then objs="$objs $m/obj/${f%.c}.o"
        else objs="$objs $work/base-$p/${f%.c}.o"; fi
      done
      ;;
    *.h)
      compile "$p" "$m/src" "$m/obj" $(cat "$work/sources-$p") || objs=FAIL
      for f in $(cat "$work/sources-$p"); do objs="$objs $m/obj/${f%.c}.o"; done
      ;;
    *)
      compile "$p" "$m/src" "$m/obj" "$file" || objs=FAIL
      for f in $(cat "$work/sources-$p"); do
        if [ "$f" = "$file" ]; then objs="$objs $m/obj/${f%.c}.o"
        else objs="$objs $work/base-$p/${f%.c}.o"; fi
      done
      ;;
  esac
  so="$m/libaccel-$p.so"
  case $objs in FAIL*) false ;; *) $cc -shared -pthread -o "$so" $objs -ldl -lm 2>> "$m/obj/build.log" ;; esac
  if [ $? -ne 0 ]; then
    say "ERROR  $id: the mutant does not build (see $m/obj/build.log)"
    errors=$((errors + 1))
    continue
  fi
  start=$(date +%s)
  run_conform "$so" "$filter" "$m/conform.log" "$extra"
  rc=$?
  secs=$(( $(date +%s) - start ))
  failed=$(grep -E '^(FAIL|XPASS) ' "$m/conform.log" | head -1 | cut -c1-110)
  # A mutant that passes is missed, unless the checks it is aimed at run
  # nothing here on the unmutated plugin either (copy.above_2gib where the
  # device's largest allocation is 2 GiB): it cannot be judged on this
  # machine, and counts neither way.
  if [ $rc -eq 0 ]; then
    run_conform "$work/base-$p/libaccel-$p.so" "$filter" "$m/base.log" "$extra"
    if [ $? -eq 0 ] && grep -q '^0 passed, 0 failed' "$m/base.log"; then
      total=$((total - 1))
      say "SKIP   $id: --filter '$filter' runs nothing here, unmutated too: $(grep -E '^(SKIP|UNSUPPORTED) ' "$m/base.log" | head -1 | cut -c1-110)"
      continue
    fi
  fi
  case $rc in
    0) say "MISSED $id ($p/$file, --filter '$filter', ${secs}s)" ;;
    1) caught=$((caught + 1)); say "CAUGHT $id (${secs}s): $failed" ;;
    2|77|126|127) errors=$((errors + 1))
          say "ERROR  $id: accel-conform could not run it (exit $rc): $(tail -1 "$m/conform.log")" ;;
    124) caught=$((caught + 1)); say "CAUGHT $id (${secs}s): hung past 300 s" ;;
    *) caught=$((caught + 1))
       # accel-conform's crash guard names the check, or the phase outside
       # the checks (crash.c); the log's last line is only the shell's word
       # for the signal.
       crash=$(grep -m1 '^accel-conform: crashed ' "$m/conform.log" | cut -c16-110)
       say "CAUGHT $id (${secs}s): accel-conform died (exit $rc): ${crash:-no check named, last line: $(tail -1 "$m/conform.log" | cut -c1-80)}" ;;
  esac
done < "$table"
say "mutation score: $caught of $total caught ($errors errors)"
[ "$total" -gt 0 ] && [ "$caught" -eq "$total" ]
