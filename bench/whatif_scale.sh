#!/usr/bin/env bash
# What-if studies at scale: CPU time of
#  1. `whatif max-model` for GPipe's Table 1 transformer (d_model 2048, ffn 8192, 32 heads,
#     seq 1024, vocab 32000, batch 32, RMSProp, TPU-v3 cores) on 1, 8, 32, 128, 512 and 2,048
#     devices (the acceptance: under 10 s in all on a 2-core machine);
#  2. `whatif best` for a 1T-parameter GPT (SC'21 Table 1: l 128, h 25600, 160 heads, seq 2048,
#     vocab 51200, batch 3072) on 3,072 A100-80GB over the full layout space (under 10 s).
# Each command runs under /usr/bin/time: user + sys CPU seconds are the figures to compare on a
# shared machine (wall time is printed too). Exit 1 when a limit is not met. That the fast
# partitioning gives the DP's answers is tested (tests/planner/uniform_sync_test.cc,
# tests/whatif/uniform_fast_test.cc), not benchmarked here.
# Usage: bench/whatif_scale.sh [BUILD_DIR] [THREADS]
set -euo pipefail
build=${1:-build}
threads=${2:-2}
exe="$build/pipewright"
[ -x "$exe" ] || exe="$build/tools/pipewright"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
gpipe=(--family gpt --d-model 2048 --ffn 8192 --heads 32 --seq 1024 --vocab 32000 --batch 32
       --device tpu-v3-core --optimizer rmsprop --threads "$threads")
verdict=0
run() {  # label, limit_s, command...
  local label=$1 limit=$2
  shift 2
  /usr/bin/time -f '%U %S %e' -o "$out/time" "$@" >"$out/$label.out" 2>"$out/$label.err"
  read -r u s e <"$out/time"
  local cpu
  cpu=$(echo "$u + $s" | bc)
  echo "$label: cpu $cpu s (user $u, sys $s), wall $e s"
  if [ -n "$limit" ] && [ "$(echo "$cpu >= $limit" | bc)" = 1 ]; then
    echo "  FAIL: $cpu s of CPU, limit $limit s"
    verdict=1
  fi
}
run max-model 10 "$exe" whatif max-model "${gpipe[@]}" --devices 1,8,32,128,512,2048
cat "$out/max-model.out"
run best-1T-3072 10 "$exe" whatif best --layers 128 --d-model 25600 --heads 160 --seq 2048 --vocab 51200 \
  --batch 3072 --devices 3072 --device a100-80g --threads "$threads"
head -3 "$out/best-1T-3072.out"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $verdict
