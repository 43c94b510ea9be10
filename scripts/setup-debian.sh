#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what building and testing accel needs on Debian/Ubuntu.
# Idempotent: does nothing when every tool is already present.
set -euo pipefail

packages=(build-essential cmake pkg-config python3 file)
tools=(cc make cmake pkg-config python3 file readelf)

missing=()
for tool in "${tools[@]}"; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

echo "setup: missing ${missing[*]}; installing ${packages[*]}"
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "setup: not root and no sudo; install ${packages[*]} first" >&2
    exit 1
  fi
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update
"${sudo[@]}" apt-get install -y --no-install-recommends "${packages[@]}"
