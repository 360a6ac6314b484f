#!/usr/bin/env bash
# Instructions the emulated AQL processor's thread retires per empty dispatch (grid 1, block 1, a
# host kernel that does nothing), counted by callgrind: bench/dispatch/emu_processor_cost runs
# 1000 and then 2000 pipelined dispatches; the difference of the processor thread's totals over
# 1000 is the cost of one dispatch (start-up, warm-up and the final idle cancel out). Unlike
# wall-clock figures, it does not depend on the machine's load (docs/benchmarks.md, session 12).
# Usage: scripts/emu-dispatch-cost.sh [path/to/emu_processor_cost]  (default build/bin/...)
# programs: valgrind grep awk sort mktemp
set -euo pipefail
exe=${1:-build/bin/emu_processor_cost}
[[ -x "$exe" ]] || { echo "no $exe: cmake --build build --target emu_processor_cost" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "valgrind not found (Debian package valgrind)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for n in 1000 2000; do
  valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$tmp/cg.$n.%p" "$exe" "$n" >/dev/null 2>&1
done
# The processor thread's file is the one that ran aql_processor::run() (workers run worker_loop).
thread_total() {
  for f in "$tmp"/cg."$1".*-*; do
    if grep -q 'aql_processor::run()' "$f"; then awk '/^summary:/ { print $2 }' "$f"; fi
  done | sort -n | tail -1
}
a=$(thread_total 1000)
b=$(thread_total 2000)
echo "emulated AQL processor thread: $(((b - a) / 1000)) instructions per empty dispatch (callgrind; $a for 1000+64, $b for 2000+64)"
