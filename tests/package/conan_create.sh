#!/usr/bin/env bash
# conan_create.sh SRC WORK VERSION — `conan create` of aqueduct with the offline profile
# conan/system.profile, in a temporary CONAN_HOME (WORK/conan-home) on a copy of the recipe (Conan
# writes test_package's build tree next to it), then checks that test_package ran and verified.
# Conan: AQUEDUCT_CONAN, else `conan` on PATH; with neither, exit 77 (ctest: Skipped).
set -euo pipefail
src=$1
work=$2
version=$3
conan=${AQUEDUCT_CONAN:-$(command -v conan || true)}
if [[ -z $conan || ! -x $conan ]]; then
  echo "SKIP: no Conan 2 (put conan on PATH or set AQUEDUCT_CONAN; .ci/run uses ../shared/tools/conan)"
  exit 77
fi
rm -rf "$work"
mkdir -p "$work/recipe"
export CONAN_HOME="$work/conan-home"
cp -r "$src"/conanfile.py "$src"/CMakeLists.txt "$src"/include "$src"/cmake "$src"/test_package "$src"/conan "$work/recipe/"
"$conan" --version
"$conan" profile detect >"$work/detect.log" 2>&1 || { cat "$work/detect.log"; exit 1; }
set +e
"$conan" create "$work/recipe" -pr:a "$work/recipe/conan/system.profile" 2>&1 | tee "$work/create.log"
rc=${PIPESTATUS[0]}
set -e
if ((rc != 0)); then
  echo "conan create failed ($rc)"
  exit 1
fi
grep -qx "vector addition of [0-9]* floats on the emulated [a-z0-9]*: verified" "$work/create.log"
grep -qx "aqueduct $version consumer ok" "$work/create.log"
echo "package.conan_create: aqueduct/$version created offline and consumed by test_package (verified)"
