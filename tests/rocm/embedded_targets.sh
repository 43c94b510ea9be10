#!/bin/sh
# SPDX-License-Identifier: MIT
# Checks what the ROCm plugin's embedded offload bundle holds.
# Usage: embedded_targets.sh BUNDLE "EMBEDDED" "DROPPED" "WANTED"
#   EMBEDDED: targets the build compiled (each must be in the bundle);
#   DROPPED:  targets asked for that this hipcc cannot compile;
#   WANTED:   targets every build must either embed or report as dropped
#             (gfx942 is MI300X/MI300A; gfx940 is not a stand-in for it).
# Exits 1 on a missing or unaccounted target, 77 (skip, loudly) when a
# wanted target had to be dropped, 0 otherwise.
bundle=$1 embedded=$2 dropped=$3 wanted=$4
status=0
for arch in $embedded; do
  if ! grep -aq "amdgcn-amd-amdhsa--$arch" "$bundle"; then
    echo "missing: $bundle has no code object for $arch"
    status=1
  fi
done
for arch in $wanted; do
  case " $embedded $dropped " in
    *" $arch "*) ;;
    *) echo "not built and not reported: $arch"; status=1 ;;
  esac
done
[ $status -ne 0 ] && exit $status
echo "embedded: $embedded"
if [ -n "$dropped" ]; then
  echo "NOT EMBEDDED (this hipcc cannot compile them; these GPUs use the"
  echo "hiprtc JIT at their first op): $dropped"
  exit 77
fi
exit 0
