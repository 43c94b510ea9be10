#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sets up a Debian machine, builds accel in build/ and runs accel-info,
# which lists the plugins it found and the devices they expose.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup-debian.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "$(nproc)"
exec build/bin/accel-info "$@"
