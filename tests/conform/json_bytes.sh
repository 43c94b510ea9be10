#!/bin/sh
# SPDX-License-Identifier: MIT
#
# accel-conform --json stays one valid JSON document in valid UTF-8 when a
# check's detail carries bytes of the plugin's or the user's that are not:
# the reason of a known failure (quoted in the XFAIL detail) here holds a
# stray byte, a truncated UTF-8 sequence, a control character and a quote.
#
#   json_bytes.sh ACCEL_CONFORM PLUGIN KERNEL_DIR PYTHON WORK_DIR
set -u
conform=$1 plugin=$2 kernels=$3 python=$4 work=$5
mkdir -p "$work"
known="$work/json_bytes.conform-known"
printf 'copy.h2d_d2h   off by one\377 \342\202 tab\there "quoted"\n' > "$known"
"$conform" --plugin "$plugin" --timeout 1 --kernel-dir "$kernels" \
  --filter copy.h2d_d2h --known-failures "$known" --json > "$work/json_bytes.out"
rc=$?
cat "$work/json_bytes.out"
echo "exit status $rc"
[ "$rc" -eq 0 ] || exit 1
"$python" - "$work/json_bytes.out" <<'PY' || exit 1
import json, sys
text = open(sys.argv[1], "rb").read().decode("utf-8")  # strict: fails on bad bytes
doc = json.loads(text)
[check] = [c for c in doc["checks"] if c["name"] == "copy.h2d_d2h"]
assert check["result"] == "XFAIL", check
want = 'off by one\ufffd \ufffd\ufffd tab\there "quoted"'
assert want in check["detail"], check["detail"]
assert doc["expected_failures"] == 1 and doc["failed"] == 0, doc
PY
echo "json_bytes: ok"
