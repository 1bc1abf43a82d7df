#!/usr/bin/env bash
# Installs what a fresh Debian machine lacks for building fusex (idempotent).
# The CUDA toolkit is optional; when /usr/local/cuda exists its nvcc is used.
set -euo pipefail

packages=(g++ cmake ninja-build catch2 libboost-dev libopenblas-dev libbenchmark-dev pkg-config)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "fusex setup: installing ${missing[*]}"
  sudo_cmd=""
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd="sudo"; fi
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
