#!/usr/bin/env bash
# Installs aqueduct from SRC into WORK/prefix and builds the consumer against the installed
# package twice: through find_package(aqueduct CONFIG) and through pkg-config.
# programs: pkg-config
set -euo pipefail
src=$1
work=$2
cmake=${CMAKE:-cmake}
cxx=${CXX:-c++}
rm -rf "$work"
mkdir -p "$work"

"$cmake" -S "$src" -B "$work/lib" -G Ninja -DAQUEDUCT_BUILD_TESTS=OFF -DAQUEDUCT_BUILD_EXAMPLES=OFF \
  -DAQUEDUCT_BUILD_BENCH=OFF -DAQUEDUCT_VERIFY_HEADERS=OFF -DCMAKE_INSTALL_PREFIX="$work/prefix" >/dev/null
"$cmake" --install "$work/lib" >/dev/null
test -f "$work/prefix/include/aqueduct/config.hpp"
test -f "$work/prefix/share/cmake/aqueduct/aqueduct-config.cmake"
test -f "$work/prefix/share/pkgconfig/aqueduct.pc"

# 1. CMake package
"$cmake" -S "$src/tests/package/consumer" -B "$work/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
"$cmake" --build "$work/consumer" >/dev/null
"$work/consumer/consumer" | tee "$work/cmake.out"
grep -qx "aqueduct 0.1.0 consumer ok" "$work/cmake.out"

# 2. pkg-config
export PKG_CONFIG_PATH="$work/prefix/share/pkgconfig"
flags=$(pkg-config --cflags --libs aqueduct)
# shellcheck disable=SC2086
"$cxx" -O1 "$src/test_package/main.cpp" -o "$work/consumer-pc" $flags
"$work/consumer-pc" | tee "$work/pc.out"
grep -qx "aqueduct 0.1.0 consumer ok" "$work/pc.out"
echo "package: installed headers consumed through CMake and pkg-config"
