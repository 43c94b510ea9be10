#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sets up a Debian machine, builds accel in build/ and runs every test.
# Extra arguments go to ctest (e.g. -R cpu).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-debian.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "$(nproc)"
cd build
exec ctest --output-on-failure --no-tests=error -j 2 "$@"
