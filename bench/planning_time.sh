#!/usr/bin/env bash
# Planning time at scale, as a verdict: (1) every shared PipeDream profile on 4x4, 8x8 and 16x4 plans
# in < 1 s of process CPU with `--objective pipedream` and `async` (pw_bench_planner's "scale/"
# cases; bench/planner_bench.cc), and (2) the summed planning time over PipeDream's own reference
# runs is at least 1000x below PipeDream's optimizer (pw_bench_reference, median of REPS).
# Prints the slowest cases, the ratio and a verdict line; exits 1 when either does not hold.
# CPU time, not wall time: still, run it on a machine nobody else is using and say the load.
#   bash bench/planning_time.sh [BUILD_DIR] [REPS]
set -euo pipefail
BUILD="${1:-build}"
REPS="${2:-11}"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
"$BUILD/bench/pw_bench_planner" --benchmark_filter='^scale/.*/(4x4|8x8|16x4)/' --benchmark_format=json 2>/dev/null >"$out"
ref=$("$BUILD/bench/pw_bench_reference" "$REPS" | tail -1)
echo "$ref"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$out" "$ref" <<'PY'
import json, re, sys
scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
cases = []
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("error_occurred"):
        continue  # no plan fits: the benchmark stops at once
    cases.append((b["cpu_time"] * scale[b["time_unit"]], b["name"].split("/iterations")[0]))
cases.sort(reverse=True)
for ms, name in cases[:5]:
    print("  %9.1f ms CPU  %s" % (ms, name))
over = [c for c in cases if c[0] >= 1000]
m = re.search(r"-> ([0-9.]+)x", sys.argv[2])
ratio = float(m.group(1)) if m else 0.0
ok = len(cases) > 0 and not over and ratio >= 1000
print("verdict: %d cases, %d at or over 1 s (slowest %.0f ms); reference runs %.0fx (acceptance >= 1000x): %s"
      % (len(cases), len(over), cases[0][0] if cases else 0, ratio, "holds" if ok else "DOES NOT HOLD"))
sys.exit(0 if ok else 1)
PY
