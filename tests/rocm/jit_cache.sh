#!/bin/sh
# SPDX-License-Identifier: MIT
# jit_cache.sh <work dir> <accel-conform> <plugin> <libfakehip> <nortc>
# On a fake GPU whose arch has no embedded code object (gfx1100):
#   1. the first run JIT-compiles the built-in kernels with hiprtc, says so
#      at info level and writes the cache file;
#   2. the second run loads that file and does not compile;
#   3. a runtime without hiprtc fails the ops with the embedded arch list.
set -u
work=$1 conform=$2 plugin=$3 fake=$4 nortc=$5
rm -rf "$work"
mkdir -p "$work"
fail() { echo "jit_cache.sh: $*" >&2; exit 1; }
run() {  # run <log> <runtime> [env...]
  log=$1 runtime=$2
  shift 2
  env ACCEL_LOG=info ACCEL_ROCM_RUNTIME="$runtime" FAKEHIP_ARCH=gfx1100 \
    XDG_CACHE_HOME="$work/cache" "$@" \
    "$conform" --plugin "$plugin" --require-ops --filter ops.add. \
    >"$work/$log" 2>&1
}

run first.log "$fake" || { cat "$work/first.log"; fail "first run failed"; }
grep -q "JIT-compiled the built-in kernels for gfx1100 with hiprtc" \
  "$work/first.log" || { cat "$work/first.log"; fail "no JIT log line"; }
grep -q "fakehip: hiprtc compiled" "$work/first.log" || fail "hiprtc not called"
files=$(ls "$work/cache/accel/rocm/"ops-gfx1100-*.co 2>/dev/null)
[ -n "$files" ] || fail "no cache file under $work/cache/accel/rocm"
echo "cache file: $files"

run second.log "$fake" || { cat "$work/second.log"; fail "second run failed"; }
grep -q "built-in kernels for gfx1100 from the JIT cache" "$work/second.log" ||
  { cat "$work/second.log"; fail "second run did not use the cache"; }
if grep -q "fakehip: hiprtc compiled" "$work/second.log"; then
  fail "second run compiled again"
fi

# A failing compiler with an empty cache: the ops fail with the log.
run rtcfail.log "$fake" XDG_CACHE_HOME="$work/empty" FAKEHIP_RTC_FAIL=1 &&
  fail "ops passed although hiprtc failed"
grep -q "hiprtc could not compile the built-in kernels for gfx1100" \
  "$work/rtcfail.log" || { cat "$work/rtcfail.log"; fail "no hiprtc error"; }

run nortc.log "$nortc" && fail "ops passed without embedded code or hiprtc"
grep -Eq "embeds code objects for (gfx[0-9a-f]+ )*gfx90a( gfx[0-9a-f]+)* only" \
  "$work/nortc.log" || { cat "$work/nortc.log"; fail "no arch list"; }
echo "jit_cache.sh: compiled once, reused, failures reported"
