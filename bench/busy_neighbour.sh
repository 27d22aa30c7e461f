#!/usr/bin/env bash
# How much a busy neighbour slows the executor down. Runs
#   pipewright train --model gpt --steps 200
# REPS times alone and REPS times beside one busy loop (a shell spinning on a core), with the
# tool's own OpenMP wait choice (no OMP_* / GOMP_* set), and prints each wall time, the
# medians and their ratio (acceptance: busy <= 3x quiet). The machine should otherwise be idle:
# the script prints the load average before it starts.
#   bash bench/busy_neighbour.sh [build/pipewright] [REPS]
set -euo pipefail
PW="${1:-build/pipewright}"
REPS="${2:-3}"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
run() {
  local t0 t1
  t0=$(date +%s.%N)
  env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT "$PW" train --model gpt --steps 200 >/dev/null
  t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f\n", b - a}'
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
quiet=(); busy=()
for _ in $(seq "$REPS"); do quiet+=("$(run)"); done
( while :; do :; done ) & spinner=$!
trap 'kill $spinner 2>/dev/null || true' EXIT
sleep 1
for _ in $(seq "$REPS"); do busy+=("$(run)"); done
kill $spinner; trap - EXIT
q=$(printf '%s\n' "${quiet[@]}" | median); b=$(printf '%s\n' "${busy[@]}" | median)
echo "quiet: ${quiet[*]} s (median $q)"
echo "busy:  ${busy[*]} s (median $b)"
echo "ratio busy/quiet: $(awk -v b="$b" -v q="$q" 'BEGIN {printf "%.2f", b / q}')"
