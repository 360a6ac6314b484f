#!/usr/bin/env bash
# The README's quick start.
#   demo: install what is missing, configure, build ONLY the demo program (hello_dispatch), run it
#         on the emulated device (the library is header-only: one translation unit to compile).
#   test: install what is missing, configure, build everything, run the default test suite.
# Each step says what it does and how long it took.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-demo}
jobs=${AQUEDUCT_JOBS:-$(nproc)}
case "$mode" in demo | test) ;; *)
  echo "usage: $0 [demo|test]" >&2
  exit 2
  ;;
esac

t_all=$SECONDS
step() { echo; echo "==> quickstart $mode: $*"; t_step=$SECONDS; }
done_step() { echo "==> ... $1 in $((SECONDS - t_step)) s"; }

step "checking the Debian packages in scripts/debian-packages.txt (installs the missing ones)"
bash scripts/setup.sh
done_step "packages ready"

step "configuring (cmake --preset default -> build/)"
cmake --preset default
done_step "configured"

case "$mode" in
  demo)
    step "building the demo only (target hello_dispatch, -j $jobs)"
    cmake --build --preset default -j "$jobs" --target hello_dispatch
    done_step "built build/bin/hello_dispatch"
    step "running build/bin/hello_dispatch on the emulated device"
    ./build/bin/hello_dispatch
    done_step "demo finished"
    ;;
  test)
    step "building everything: library checks, tests, examples, benchmarks (-j $jobs)"
    cmake --build --preset default -j "$jobs"
    done_step "built"
    # Long stress and fuzz runs carry the labels `long` / `fuzz` and run only on request:
    #   ctest --preset default -L long
    step "running the default test suite (ctest, without labels long|fuzz)"
    ctest --preset default -j "$jobs" --label-exclude 'long|fuzz'
    done_step "tests finished"
    ;;
esac
echo "==> quickstart $mode: done in $((SECONDS - t_all)) s"
