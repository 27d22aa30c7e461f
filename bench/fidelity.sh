#!/usr/bin/env bash
# Fidelity benchmark: predicted vs measured vs replayed iteration time over a grid.
# Not a test: the numbers depend on the machine and on its load, printed before and after.
#
#   bench/fidelity.sh [BUILD_DIR]            the whole grid (slow: 3 models x 4 schedules x 4 M + 1-stage runs)
#   FIDELITY_SUBSET=1 bench/fidelity.sh      a small subset (default gpt and the 8x1024 mlp, 1f1b/gpipe, M 2 and 8)
#   FIDELITY_STEPS=N, FIDELITY_WARMUP=N      measured and warm-up steps per run (default 10 and 5)
#   FIDELITY_MODELS="gpt-default mlp-4x4096-b64"   only these models of the grid (names as printed)
#   FIDELITY_ROUNDS=R                        times the whole grid is run (default 3)
#   FIDELITY_SCHEDULES="zb-h1", FIDELITY_MS="4 8"   only these schedules / micro-batch counts
#   FIDELITY_ROWS=FILE                       keep every run's raw row (tab-separated) in FILE
#
# Grid: models {default gpt, mlp 8x1024 batch 256, mlp 4x4096 batch 64} x schedules {gpipe, 1f1b,
# zb-h1, interleaved-1f1b} x M {2, 4, 8, 16} x 2 stages (one pinned core each), plus 1 stage on
# 2 threads (M = 1). Each run is `pipewright run --compare --json --run-trace F` (the prediction:
# a profile measured in context and co-run, simulated) followed by `pipewright simulate --replay F`
# (the measured op durations through the same schedule).
#
# Rounds: the whole grid runs R times in a row, so a point's R runs are minutes apart. On a VM
# the same run's op speeds move 25-70% from one minute to the next (a core's memory-bound ops,
# RESULTS.md), in the profile and in the run alike; one run per point measures that
# state as much as the cost model. Per point, over the rounds: predicted = median of the runs'
# predictions, measured = median of the runs' iteration times (each the median of its steps),
# spread = slowest / fastest measured - 1 (the machine's noise at that point), error =
# predicted / measured - 1, replay = median over the runs of (replayed / measured of the
# replayed iterations - 1), replay-max = the largest of those in one run, mem-err = peak memory
# predicted / measured of worker 0 - 1. The summary gives the median and maximum |error| and
# how many points replay within 2%. FIDELITY_ROUNDS=1 is the single-run table of before.
# run-err = the median over the rounds of each run's own predicted / measured - 1: a run's
# prediction comes from a profile measured seconds before it, in the machine's state of that
# minute, so this pairs each prediction with the run it was made for; the summary gives both.
set -euo pipefail
BUILD=${1:-build}
PW=$BUILD/pipewright
STEPS=${FIDELITY_STEPS:-10}
WARMUP=${FIDELITY_WARMUP:-5}
ROUNDS=${FIDELITY_ROUNDS:-3}
# OpenMP waits as a user gets them: the tool chooses its spin count from the machine's load at
# start (exec/machine_load.h). Forcing OMP_WAIT_POLICY=passive here (as an earlier version did)
# measured a configuration no user runs: a 2-thread worker's many small parallel regions then
# sleep and wake on every op.
unset OMP_WAIT_POLICY GOMP_SPINCOUNT
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$PW" model mlp --depth 8 --width 1024 --batch 256 -o "$work/mlp8x1024.json" > /dev/null
"$PW" model mlp --depth 4 --width 4096 --batch 64 -o "$work/mlp4x4096.json" > /dev/null
models=("default" "$work/mlp8x1024.json" "$work/mlp4x4096.json")
names=("gpt-default" "mlp-8x1024-b256" "mlp-4x4096-b64")
schedules=(gpipe 1f1b zb-h1 interleaved-1f1b)
ms=(2 4 8 16)
if [[ "${FIDELITY_SUBSET:-0}" == 1 ]]; then
  models=("default" "$work/mlp8x1024.json"); names=("gpt-default" "mlp-8x1024-b256")
  schedules=(gpipe 1f1b); ms=(2 8)
fi
if [[ -n "${FIDELITY_SCHEDULES:-}" ]]; then read -r -a schedules <<< "$FIDELITY_SCHEDULES"; fi
if [[ -n "${FIDELITY_MS:-}" ]]; then read -r -a ms <<< "$FIDELITY_MS"; fi

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "rounds: $ROUNDS (the whole grid once per round; per point: medians over the rounds)"
rows="$work/rows.tsv"
: > "$rows"
run_one() {  # round name model schedule stages M threads
  local round=$1 name=$2 model=$3 sched=$4 stages=$5 m=$6 threads=$7 f="$work/run.json" t="$work/run.trace.json"
  if ! "$PW" run --model "$model" --stages "$stages" --micro-batches "$m" --schedule "$sched" --threads "$threads" \
      --steps "$STEPS" --warmup-steps "$WARMUP" --compare --json --run-trace "$t" > "$f" 2> "$work/err"; then
    echo "round $round: $name $sched S=$stages M=$m failed: $(tail -1 "$work/err")" >&2
    printf '%s\t%s\t%s\t%s\t%s\tfailed\n' "$round" "$name" "$sched" "$stages" "$m" >> "$rows"
    return
  fi
  local rep
  rep=$("$PW" simulate --replay "$t" --json)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$name" "$sched" "$stages" "$m" \
    "$(jq '.predicted_iteration_ms' "$f")" "$(jq '.iteration_ms' "$f")" \
    "$(jq '.replayed_ns / 1e6' <<< "$rep")" "$(jq '.measured_ns / 1e6' <<< "$rep")" \
    "$(jq '.predicted_peak_memory_bytes[0]' "$f")" "$(jq '.peak_memory_bytes[0]' "$f")" >> "$rows"
}
for round in $(seq "$ROUNDS"); do
  for i in "${!models[@]}"; do
    if [[ -n "${FIDELITY_MODELS:-}" && " $FIDELITY_MODELS " != *" ${names[$i]} "* ]]; then continue; fi
    for s in "${schedules[@]}"; do
      for m in "${ms[@]}"; do run_one "$round" "${names[$i]}" "${models[$i]}" "$s" 2 "$m" 1; done
    done
    run_one "$round" "${names[$i]}" "${models[$i]}" 1f1b 1 1 2
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
if [[ -n "${FIDELITY_ROWS:-}" ]]; then cp "$rows" "$FIDELITY_ROWS"; fi
python3 - "$rows" <<'PYEOF'
import statistics, sys
points, order = {}, []
for line in open(sys.argv[1]):
    f = line.rstrip("\n").split("\t")
    key = tuple(f[1:5])
    if key not in points:
        points[key] = []
        order.append(key)
    if f[5] != "failed":
        points[key].append([float(x) for x in f[5:11]])
def med(v): return statistics.median(v)
print("%-16s %-17s %3s %3s %11s %11s %8s %8s %8s %8s %9s %8s" % (
    "model", "schedule", "S", "M", "predicted", "measured", "spread", "error", "run-err", "replay", "replay-max",
    "mem-err"))
errs, run_errs, replays, failed = [], [], [], 0
for key in order:
    runs = points[key]
    if not runs:
        failed += 1
        print("%-16s %-17s %3s %3s  failed in every round" % key)
        continue
    pred, meas = med([r[0] for r in runs]), med([r[1] for r in runs])
    spread = max(r[1] for r in runs) / min(r[1] for r in runs) - 1
    err = pred / meas - 1
    run_err = med([r[0] / r[1] - 1 for r in runs])
    rep = [r[2] / r[3] - 1 for r in runs]
    rep_med, rep_max = med(rep), max(rep, key=abs)
    mem = med([r[4] / r[5] - 1 for r in runs])
    errs.append(abs(err)); run_errs.append(abs(run_err)); replays.append(abs(rep_med))
    print("%-16s %-17s %3s %3s %11.3f %11.3f %7.1f%% %+7.1f%% %+7.1f%% %+7.1f%% %+8.1f%% %+7.1f%%" % (
        *key, pred, meas, 100 * spread, 100 * err, 100 * run_err, 100 * rep_med, 100 * rep_max, 100 * mem))
if errs:
    print("points %d (%d failed), rounds per point %s: median |error| %.1f%%, max |error| %.1f%%; "
          "run-err: median %.1f%%, max %.1f%%; replay: max |median error| %.1f%%, points within 2%%: %d of %d" % (
              len(errs), failed, "/".join(sorted({str(len(points[k])) for k in order})), 100 * med(errs),
              100 * max(errs), 100 * med(run_errs), 100 * max(run_errs), 100 * max(replays),
              sum(r <= 0.02 for r in replays), len(replays)))
PYEOF
