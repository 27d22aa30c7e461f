#!/usr/bin/env bash
# A 3x3 conv layer's F + B + W (exec conv2d layer) reaches >= 70% of the
# same oneDNN convolution primitives timed bare in the same run (BM_Conv3x3LayerFwdBwd vs
# BM_BareConv3x3FwdBwd in bench/exec_bench.cc: 64 -> 64 channels, 32x32 maps, batch 32, one
# thread). Prints both medians, the layer's rate as a share of the bare one and a verdict line;
# exits 1 when the share is below 70%. Timing: say the load with any figure quoted.
#   bash bench/conv_efficiency.sh [build] [REPETITIONS]
set -euo pipefail
BUILD="${1:-build}"
REPS="${2:-5}"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
OMP_NUM_THREADS=1 "$BUILD/bench/pw_bench_exec" --benchmark_filter='Conv3x3' --benchmark_repetitions="$REPS" \
  --benchmark_report_aggregates_only=true --benchmark_format=json >"$out"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" <<'EOF'
import json, sys
rows = {b["run_name"].split("/")[0]: b["real_time"] for b in json.load(open(sys.argv[1]))["benchmarks"]
        if b.get("aggregate_name") == "median"}
bare = rows["BM_BareConv3x3FwdBwd"]
layer = rows["BM_Conv3x3LayerFwdBwd"]
share = bare / layer
print("median real time: bare primitives %.2f ms, conv layer %.2f ms" % (bare, layer))
ok = share >= 0.70
print("verdict: the layer runs at %.1f%% of the bare primitives (acceptance >= 70%%): %s" % (100 * share, "holds" if ok else "DOES NOT HOLD"))
sys.exit(0 if ok else 1)
EOF
