#!/usr/bin/env bash
# The sanitizer and fuzz passes CI runs after `quickstart.sh test` (.ci/run), each step timed:
#   asan  build the `asan` preset (ASan + UBSan, Debug) and run the default suite under it
#         (everything but the labels long|fuzz|bench|package, as the preset says);
#   tsan  build the `tsan` preset and run the concurrent tests (label `concurrent`) with the
#         adversarial AQL processor (AQUEDUCT_EMU_ADVERSARIAL=1, from the preset);
#   fuzz  build the libFuzzer targets with clang-19 (build-fuzz/) and run each for
#         AQUEDUCT_FUZZ_SECONDS (default 20) from its regression inputs (and, for the code parsers,
#         the code fixtures).
# Usage: scripts/sanitizers.sh [asan|tsan|fuzz|all]... (default all; the steps named run in the order
# above, e.g. `scripts/sanitizers.sh tsan fuzz`, which is what .ci/run runs).
# programs: cmake ctest clang++-19 ninja getconf awk sed
set -euo pipefail
cd "$(dirname "$0")/.."

steps=("${@:-all}")
jobs=${AQUEDUCT_JOBS:-$(nproc)}
fuzz_seconds=${AQUEDUCT_FUZZ_SECONDS:-20}
for s in "${steps[@]}"; do
  case "$s" in asan | tsan | fuzz | all) ;; *)
    echo "usage: $0 [asan|tsan|fuzz|all]... (unknown step '$s')" >&2
    exit 2
    ;;
  esac
done
wants() { [[ " ${steps[*]} " == *" $1 "* || " ${steps[*]} " == *" all "* ]]; }
what="${steps[*]}"
t_all=$SECONDS
# CPU seconds (user + sys) of every finished child process so far: with the wall time it tells
# a slow step from a loaded machine (on an idle 2-core machine, wall ~ CPU / 2 for a -j2 build).
tck=$(getconf CLK_TCK)
cpu_children() { awk -v t="$tck" '{ printf "%d", ($16 + $17) / t }' "/proc/$$/stat"; }
step() { echo; echo "==> sanitizers: $*"; t_step=$SECONDS; c_step=$(cpu_children); }
done_step() { echo "==> ... $1 in $((SECONDS - t_step)) s (CPU $(($(cpu_children) - c_step)) s, load $(cut -d' ' -f1-3 /proc/loadavg))"; }

if wants asan; then
  step "ASan + UBSan: configure and build (cmake --preset asan -> build-asan/, -j $jobs)"
  cmake --preset asan >/dev/null
  cmake --build --preset asan -j "$jobs"
  done_step "built"
  step "ASan + UBSan: the default suite (ctest --preset asan)"
  ctest --preset asan -j "$jobs"
  done_step "passed"
fi

if wants tsan; then
  step "TSan: configure and build the concurrent tests (cmake --preset tsan -> build-tsan/)"
  cmake --preset tsan >/dev/null
  # Only the executables of the tests labelled `concurrent`: tests/CMakeLists.txt batches those
  # files, and only those, into tests_<layer>_concurrent_<n>.
  mapfile -t targets < <(ninja -C build-tsan -t targets all | sed -n 's/^\(tests_[a-z0-9]*_concurrent_[0-9]*\): phony$/\1/p')
  ((${#targets[@]})) || { echo "sanitizers: no tests_<layer>_concurrent_<n> target in build-tsan/" >&2; exit 1; }
  cmake --build --preset tsan -j "$jobs" --target "${targets[@]}"
  done_step "built ${#targets[@]} test programs (${targets[*]})"
  step "TSan: the concurrent tests, adversarial AQL processor (ctest --preset tsan -L concurrent)"
  ctest --preset tsan -j "$jobs" -L concurrent
  done_step "passed"
fi

if wants fuzz; then
  step "fuzz: configure and build the libFuzzer targets with clang-19 (build-fuzz/)"
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++-19 \
    -DAQUEDUCT_BUILD_FUZZERS=ON -DAQUEDUCT_BUILD_EXAMPLES=OFF -DAQUEDUCT_BUILD_BENCH=OFF \
    -DAQUEDUCT_VERIFY_HEADERS=OFF -DAQUEDUCT_FUZZ_SECONDS="$fuzz_seconds" >/dev/null
  mapfile -t fuzzers < <(ctest --test-dir build-fuzz -N -L fuzz | sed -n 's/^ *Test *#[0-9]*: //p')
  cmake --build build-fuzz -j "$jobs" --target $(ninja -C build-fuzz -t targets all | sed -n 's/^\(fuzz_[a-z0-9_]*\): phony$/\1/p')
  done_step "built ${#fuzzers[@]} fuzz targets"
  step "fuzz: each target for ${fuzz_seconds} s (${fuzzers[*]})"
  ctest --test-dir build-fuzz -L fuzz --output-on-failure
  done_step "no crash"
fi
echo "==> sanitizers $what: done in $((SECONDS - t_all)) s"
