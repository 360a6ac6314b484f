#!/usr/bin/env bash
# The README's quick start. `demo`: install what is missing, build, run the main demo on the
# emulated device. `test`: install what is missing, build, run the whole default test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-demo}
jobs=${AQUEDUCT_JOBS:-$(nproc)}

bash scripts/setup.sh
cmake --preset default
case "$mode" in
  demo)
    cmake --build --preset default -j "$jobs"
    ./build/bin/hello_dispatch
    ;;
  test)
    cmake --build --preset default -j "$jobs"
    # Long stress and fuzz runs carry the labels `long` / `fuzz` and run only on request:
    #   ctest --preset default -L long
    ctest --preset default -j "$jobs" --label-exclude 'long|fuzz'
    ;;
  *)
    echo "usage: $0 [demo|test]" >&2
    exit 2
    ;;
esac
