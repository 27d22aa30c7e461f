#!/usr/bin/env bash
# 3D layout search speed: `pipewright whatif best` for GPT-3 175B (l 96, h 12288, 96 heads,
# s 2048, V 51200, batch 1536) on 4,096 A100s in nodes of 8, every layout of every axis
# (t x p x d, micro-batch 1/2/4/8, v 1/2/4, recompute, sequence parallelism, ZeRO-1), each
# simulated. Usage: bench/whatif_3d_bench.sh [BUILD_DIR] [THREADS]
# Prints the candidate count, wall-clock and CPU time, and the best layout.
set -euo pipefail
build=${1:-build}
threads=${2:-0}
exe="$build/pipewright"
[ -x "$exe" ] || exe="$build/tools/pipewright"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
TIMEFORMAT='%R %U %S'
t=$( { time "$exe" whatif best --layers 96 --d-model 12288 --heads 96 --seq 2048 --vocab 51200 --batch 1536 \
        --devices 4096 --device a100-80g --threads "$threads" --json >"$out/best.json"; } 2>&1 )
read -r wall user sys <<<"$t"
python3 - "$out/best.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
b = r["best"]
print("candidates", r["candidates"], "best: t %d p %d d %d b %d v %d recompute %s sp %s zero1 %s, %.1f TFLOP/s per device"
      % (b["tp"], b["pp"], b["dp"], b["micro_batch"], b["chunks"], b["recompute"], b["sequence_parallel"], b["zero1"],
         b["tflops_per_device"]))
PY
echo "threads ${threads/#0/all} wall ${wall}s cpu $(echo "$user + $sys" | bc)s"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
