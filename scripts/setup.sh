#!/usr/bin/env bash
# Installs the Debian 12 packages aqueduct needs to build, test and benchmark, if any is missing.
# Safe to run again: it installs only what dpkg does not already have.
set -euo pipefail

packages=(
  # toolchain
  cmake ninja-build g++ pkg-config
  # library dependencies
  libboost-atomic-dev librange-v3-dev libdrm-dev
  # code objects: msgpack metadata, CCOB decompression
  libmsgpack-cxx-dev libzstd-dev zlib1g-dev
  # tests: doctest; ROCr headers (hsa.h ...) as the ABI oracle; Comgr as the ISA-selection oracle
  doctest-dev libhsa-runtime-dev libamd-comgr-dev
  # test fixtures: real AMDGPU code objects, bundles and CCOBs built at test time; fuzzers
  clang-19 lld-19 llvm-19 libclang-rt-19-dev zstd xxd
  # benchmarks
  libbenchmark-dev
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -q
"${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
