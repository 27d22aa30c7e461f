#!/usr/bin/env bash
# What-if sweep speed: a 1,000-point GPT sweep (5 layer counts x 4 widths x 5 device counts up
# to 512 x 5 micro-batch settings x 2 schedules; planner + 2-iteration simulation per point) on
# the available cores. Usage: bench/whatif_bench.sh [BUILD_DIR] [THREADS]
# Prints the wall-clock time, CPU time, points per second and the feasible count.
set -euo pipefail
build=${1:-build}
threads=${2:-0}
here=$(cd "$(dirname "$0")" && pwd)
exe="$build/pipewright"
[ -x "$exe" ] || exe="$build/tools/pipewright"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
TIMEFORMAT='%R %U %S'
t=$( { time "$exe" whatif sweep --spec "$here/whatif_sweep_1000.json" -o "$out/sweep" --threads "$threads" \
        --no-progress 2>"$out/err" >/dev/null; } 2>&1 )
read -r wall user sys <<<"$t"
points=$(($(wc -l <"$out/sweep.csv") - 1))
feasible=$(grep -c ',true,' "$out/sweep.csv" || true)
echo "points $points feasible $feasible threads ${threads/#0/all} wall ${wall}s cpu $(echo "$user + $sys" | bc)s" \
     "points/s $(echo "scale=1; $points / $wall" | bc)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
