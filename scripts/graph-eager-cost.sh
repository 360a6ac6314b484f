#!/usr/bin/env bash
# Instructions one eager `co_await on(q).dispatch(...)` costs the host (its lowering: the submit
# included, no wait), against the runtime's typed q.try_dispatch(...) of the same kernel and
# arguments (issue 12's bound: within 10 ns of it). bench_graph's eager_dispatch and
# eager_dispatch_floor run each iteration's work in a function of its own (eager_body,
# floor_body); callgrind counts each function's instructions, callees included, over its calls,
# and the emulator's doorbell hook (queue_engine::ring_doorbell, which only the in-process device
# has, the same in both) is taken out at its mean. Unlike the two cases' wall clock, the counts do
# not depend on the machine's load (docs/benchmarks.md, session 22).
# Usage: scripts/graph-eager-cost.sh [path/to/bench_graph]  (default build/bin/bench_graph)
# programs: valgrind callgrind_annotate grep sed awk mktemp
set -euo pipefail
exe=${1:-build/bin/bench_graph}
[[ -x "$exe" ]] || { echo "no $exe: cmake --build build --target bench_graph" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind not found (Debian package valgrind)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# per_call CASE FUNCTION: prints the function's instructions per call and its call count.
per_call() {
  local case=$1 fn=$2
  valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.$case" "$exe" --benchmark_filter="^$case\$" \
    --benchmark_min_time=0.02 --benchmark_color=false >/dev/null 2>&1
  # Thousands separators out, so that the counts are plain numbers.
  callgrind_annotate --inclusive=yes --tree=calling --threshold=100 "$tmp/cg.$case" 2>/dev/null |
    sed -E ':a; s/([0-9]),([0-9])/\1\2/; ta' >"$tmp/tree.$case"
  awk -v fn="::$fn(" '
    # "N (p%)  *  file:function": the function, N its inclusive count. The listing is sorted by
    # count, so the first such line is the whole function; the later ones are the parts of it
    # inlined from other files.
    index($0, "*  ") && index($0, fn) && !incl { incl = $1 }
    # "N (p%)  >  file:callee (Kx)": a call; the one to the function gives its call count.
    index($0, ">  ") && index($0, fn) && match($0, /\(([0-9]+)x\)/) && !calls { calls = substr($0, RSTART + 1, RLENGTH - 3) }
    END {
      if (!incl || !calls) { print "no counts for " fn > "/dev/stderr"; exit 1 }
      printf "%.1f %d\n", incl / calls, calls
    }' "$tmp/tree.$case"
}
read -r eager eager_calls <<<"$(per_call eager_dispatch eager_body)"
read -r floor floor_calls <<<"$(per_call eager_dispatch_floor floor_body)"
echo "eager co_await on(q).dispatch(...): $eager instructions a dispatch ($eager_calls calls)"
echo "runtime q.try_dispatch(...):         $floor instructions a dispatch ($floor_calls calls)"
echo "difference: $(awk -v a="$eager" -v b="$floor" 'BEGIN { printf "%.1f", a - b }') instructions (real-device path: no doorbell hook in either)"
