#!/usr/bin/env bash
# Is data loading off the critical path? For the mlp 8x1024, batch 256 run
#   OMP_NUM_THREADS=1 pipewright run --model m.json --stages 2 --micro-batches 8 --schedule 1f1b
#       --steps 20 --json [--prefetch N] [--warmup-steps W]
# it prints, per repetition and prefetch setting, from the run's JSON:
#   wall_s      wall clock of the 20 timed steps, data included (start-up excluded: model build,
#               weight init, thread start, the warm-up steps)
#   20 x median 20 times the reported (median) step time       -> ratio wall_s / (20 x median)
#   sum         the 20 measured step times                      -> ratio wall_s / sum
#   data_wait_s time the driver waited for mini-batches (with --prefetch 0: all the drawing)
# and the process's wall and CPU time (/usr/bin/time). Acceptance (quiet machine): wall_s within
# 10% of 20 x median. The load average is printed before and after: a busy machine skews the
# step times themselves, so say the load with any figure. The last line is the verdict for the
# default loader (--prefetch 2): the worst wall_s / (20 x median) over the repetitions, and the
# script exits 1 when it is above 1.10.
#   bash bench/data_loader.sh [build/pipewright] [REPS] [WARMUP_STEPS]
set -euo pipefail
PW="${1:-build/pipewright}"
REPS="${2:-3}"
WARMUP="${3:-0}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$PW" model mlp --depth 8 --width 1024 --batch 256 -o "$dir/m.json" >/dev/null
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-9s %-4s %9s %11s %9s %8s %8s %11s %9s %9s\n' prefetch rep wall_s "20xmedian" sum "w/20xm" "w/sum" data_wait_s proc_wall proc_cpu
for prefetch in 2 0; do
  for rep in $(seq "$REPS"); do
    /usr/bin/time -f "%e %U %S" -o "$dir/time" env OMP_NUM_THREADS=1 "$PW" run --model "$dir/m.json" --stages 2 \
      --micro-batches 8 --schedule 1f1b --steps 20 --warmup-steps "$WARMUP" --prefetch "$prefetch" --json \
      >"$dir/out.json" 2>/dev/null
    python3 - "$dir/out.json" "$dir/time" "$prefetch" "$rep" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
wall, cpu_u, cpu_s = (float(x) for x in open(sys.argv[2]).read().split()[-3:])
med = 20 * j["iteration_ms"] / 1e3
s = sum(j["iteration_ms_per_step"]) / 1e3
if sys.argv[3] == "2":
    with open(sys.argv[1] + ".ratios", "a") as f:
        f.write("%.6f\n" % (j["wall_s"] / med))
print("%-9s %-4s %9.3f %11.3f %9.3f %8.3f %8.3f %11.3f %9.2f %9.2f" % (
    sys.argv[3], sys.argv[4], j["wall_s"], med, s, j["wall_s"] / med, j["wall_s"] / s, j["data_wait_s"], wall,
    cpu_u + cpu_s))
EOF
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$dir/out.json.ratios" <<'EOF'
import sys
worst = max(float(x) for x in open(sys.argv[1]))
ok = worst <= 1.10
print("verdict: --prefetch 2, worst wall_s / (20 x median) = %.3f (acceptance <= 1.10): %s" % (worst, "holds" if ok else "DOES NOT HOLD"))
sys.exit(0 if ok else 1)
EOF
