#!/usr/bin/env bash
# Runs one test command over and over while another process keeps the CPUs busy beside it, and
# keeps the output of every failing run. A race that a quiet machine never shows often shows this
# way within minutes: session 24 found graph.control_sdma's 1-in-100 failure so (docs/reliability.md,
# "Session 24"), after session 23's 75 quiet runs had missed it.
# Usage: scripts/flake-hunt.sh [-n RUNS] [-b 'BESIDE COMMAND'] [-o DIR] -- TEST COMMAND...
#   -n  runs of the test command (default 500)
#   -b  what runs beside it, restarted whenever it ends (default: the whole graph test binary)
#   -o  where failing runs' output goes, one file per failure (default: a new temporary directory)
# Example: scripts/flake-hunt.sh -n 2000 -- build/bin/tests_graph_1 --source-file='*/tests/graph/control_sdma.cpp'
# Exit status: 0 if no run failed, 1 if some did, 2 on bad usage.
# programs: mktemp kill
set -uo pipefail
runs=500
beside="build/bin/tests_graph_1 --no-intro=true"
out=""
while getopts "n:b:o:" opt; do
  case $opt in
    n) runs=$OPTARG ;;
    b) beside=$OPTARG ;;
    o) out=$OPTARG ;;
    *) echo "usage: $0 [-n RUNS] [-b 'BESIDE COMMAND'] [-o DIR] -- TEST COMMAND..." >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[[ $# -gt 0 ]] || { echo "usage: $0 [-n RUNS] [-b 'BESIDE COMMAND'] [-o DIR] -- TEST COMMAND..." >&2; exit 2; }
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "-n takes a positive count, not '$runs'" >&2; exit 2; }
[[ -x "$1" ]] || { echo "not an executable: $1 (build it first)" >&2; exit 2; }
out=${out:-$(mktemp -d /tmp/flake-hunt.XXXXXX)}
mkdir -p "$out" || exit 2

nb=""
stop_beside() { [[ -n "$nb" ]] && kill "$nb" 2>/dev/null && wait "$nb" 2>/dev/null; nb=""; }
trap 'stop_beside; exit 130' INT TERM
fails=0
for ((i = 1; i <= runs; ++i)); do
  if [[ -z "$nb" ]] || ! kill -0 "$nb" 2>/dev/null; then
    bash -c "$beside" >/dev/null 2>&1 &
    nb=$!
  fi
  if ! "$@" >"$out/run" 2>&1; then
    fails=$((fails + 1))
    mv "$out/run" "$out/fail.$i"
    first=$(grep -m1 -E 'ERROR|FATAL|error' "$out/fail.$i" | cut -c1-160)
    echo "run $i failed: $out/fail.$i (${first:-no error line; exit status only})"
  fi
  ((i % 100 == 0)) && echo "... $i of $runs runs, $fails failed"
done
stop_beside
rm -f "$out/run"
if ((fails > 0)); then echo "$runs runs, $fails failed (outputs in $out)"; else echo "$runs runs, none failed"; rmdir "$out" 2>/dev/null; fi
((fails == 0))
