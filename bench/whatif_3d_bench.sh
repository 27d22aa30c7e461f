#!/usr/bin/env bash
# 3D layout search speed: `pipewright whatif best` over every layout (t x p x d, micro-batch
# 1/2/4/8, v 1/2/4, recompute, sequence parallelism, ZeRO-1; each simulated) for GPT models
# of SC'21's Table 1 on A100-80GB nodes of 8, up to 4,096 devices:
#   GPT-3 175B (l 96, h 12288, 96 heads, batch 1536) on 512, 1024, 2048, 4096 devices;
#   530B (l 105, h 20480, 128 heads, batch 2520) on 2240 and 4096... (only shapes that divide);
#   1T (l 128, h 25600, 160 heads, batch 3072) on 3072 and 4096 devices.
# Usage: bench/whatif_3d_bench.sh [BUILD_DIR] [THREADS]
# Prints per study the candidate count and best layout, then the total points, wall-clock and
# CPU time (of the whole script, children included), and a verdict line (exit 1 when it fails).
set -euo pipefail
build=${1:-build}
threads=${2:-0}
exe="$build/pipewright"
[ -x "$exe" ] || exe="$build/tools/pipewright"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
studies=(
  "96 12288 96 1536 512" "96 12288 96 1536 1024" "96 12288 96 1536 2048" "96 12288 96 1536 4096"
  "105 20480 128 2520 2240" "128 25600 160 3072 3072" "128 25600 160 3072 4096"
)
start=$(date +%s.%N)
cpu0=$(awk '{print $14+$15+$16+$17}' /proc/$$/stat)
n=0
for s in "${studies[@]}"; do
  read -r l h a b d <<<"$s"
  "$exe" whatif best --layers "$l" --d-model "$h" --heads "$a" --seq 2048 --vocab 51200 --batch "$b" \
    --devices "$d" --device a100-80g --threads "$threads" --json >"$out/$n.json" || true
  python3 - "$out/$n.json" "$s" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except ValueError:
    print(sys.argv[2], ": nothing fits"); sys.exit()
b = r["best"]
print("l h heads batch devices", sys.argv[2], "| candidates", r["candidates"],
      "| best t %d p %d d %d b %d v %d rc %s sp %s z1 %s: %.1f TFLOP/s per device"
      % (b["tp"], b["pp"], b["dp"], b["micro_batch"], b["chunks"], b["recompute"], b["sequence_parallel"],
         b["zero1"], b["tflops_per_device"]))
PY
  n=$((n + 1))
done
end=$(date +%s.%N)
total=$(cat "$out"/*.json | python3 -c "
import sys, json
text = sys.stdin.read()
dec = json.JSONDecoder(); i = 0; t = 0
while i < len(text):
    while i < len(text) and text[i].isspace(): i += 1
    if i >= len(text): break
    o, i = dec.raw_decode(text, i); t += o['candidates']
print(t)")
ticks=$(getconf CLK_TCK)
cpu1=$(awk '{print $14+$15+$16+$17}' /proc/$$/stat)
echo "points $total threads ${threads/#0/all} wall $(echo "$end - $start" | bc)s cpu $(echo "scale=2; ($cpu1 - $cpu0) / $ticks" | bc)s"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
# The target "a 1,000-point 3D sweep on up to 4,096 devices in under 60 s on 2 cores", as a
# verdict on the wall time per 1,000 points of this run (exit 1 when it is 60 s or more).
wall=$(echo "$end - $start" | bc)
python3 - "$total" "$wall" <<'PY'
import sys
points, wall = int(sys.argv[1]), float(sys.argv[2])
per = 1000 * wall / points if points else float("inf")
ok = per < 60
print("verdict: %.1f s of wall time per 1,000 points (acceptance < 60 s): %s" % (per, "holds" if ok else "DOES NOT HOLD"))
sys.exit(0 if ok else 1)
PY
