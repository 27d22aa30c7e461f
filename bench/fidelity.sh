#!/usr/bin/env bash
# Fidelity benchmark (issue 12): predicted vs measured vs replayed iteration time over a grid.
# Not a test: the numbers depend on the machine and on its load, printed before and after.
#
#   bench/fidelity.sh [BUILD_DIR]            the whole grid (slow: 3 models x 4 schedules x 4 M + 1-stage runs)
#   FIDELITY_SUBSET=1 bench/fidelity.sh      a small subset (default gpt and the 8x1024 mlp, 1f1b/gpipe, M 2 and 8)
#   FIDELITY_STEPS=N, FIDELITY_WARMUP=N      measured and warm-up steps per run (default 10 and 5)
#   FIDELITY_MODELS="gpt-default mlp-4x4096-b64"   only these models of the grid (names as printed)
#
# Grid: models {default gpt, mlp 8x1024 batch 256, mlp 4x4096 batch 64} x schedules {gpipe, 1f1b,
# zb-h1, interleaved-1f1b} x M {2, 4, 8, 16} x 2 stages (one pinned core each), plus 1 stage on
# 2 threads (M = 1). Each run is `pipewright run --compare --json --run-trace F` (the prediction:
# a profile measured in context and co-run, simulated) followed by `pipewright simulate --replay F`
# (the measured op durations through the same schedule). Columns: predicted, measured (median
# iteration of the run), replayed (mean over the replayed iterations), error = predicted /
# measured - 1, replay error = replayed / measured of the replayed iterations - 1, peak memory
# predicted / measured of worker 0. The summary gives the median and maximum |error|.
set -euo pipefail
BUILD=${1:-build}
PW=$BUILD/pipewright
STEPS=${FIDELITY_STEPS:-10}
WARMUP=${FIDELITY_WARMUP:-5}
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

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) CPUs"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-16s %-17s %3s %3s %11s %11s %11s %8s %8s %10s\n' model schedule S M predicted measured replayed error replay mem-err
errs=()
run_one() {  # name model schedule stages M threads
  local name=$1 model=$2 sched=$3 stages=$4 m=$5 threads=$6 f="$work/run.json" t="$work/run.trace.json"
  if ! "$PW" run --model "$model" --stages "$stages" --micro-batches "$m" --schedule "$sched" --threads "$threads" \
      --steps "$STEPS" --warmup-steps "$WARMUP" --compare --json --run-trace "$t" > "$f" 2> "$work/err"; then
    printf '%-16s %-17s %3s %3s  failed: %s\n' "$name" "$sched" "$stages" "$m" "$(tail -1 "$work/err")"
    return
  fi
  local pred meas mp mm rep
  pred=$(jq '.predicted_iteration_ms' "$f"); meas=$(jq '.iteration_ms' "$f")
  mp=$(jq '.predicted_peak_memory_bytes[0]' "$f"); mm=$(jq '.peak_memory_bytes[0]' "$f")
  rep=$("$PW" simulate --replay "$t" --json)
  local rms rmeas
  rms=$(jq '.replayed_ns / 1e6' <<< "$rep"); rmeas=$(jq '.measured_ns / 1e6' <<< "$rep")
  local e
  e=$(awk -v p="$pred" -v m="$meas" 'BEGIN{printf "%+.1f%%", 100*(p/m-1)}')
  errs+=("$(awk -v p="$pred" -v m="$meas" 'BEGIN{x=100*(p/m-1); if(x<0)x=-x; printf "%.2f", x}')")
  printf '%-16s %-17s %3s %3s %11.3f %11.3f %11.3f %8s %8s %10s\n' "$name" "$sched" "$stages" "$m" "$pred" "$meas" "$rms" "$e" \
    "$(awk -v r="$rms" -v m="$rmeas" 'BEGIN{printf "%+.1f%%", 100*(r/m-1)}')" \
    "$(awk -v p="$mp" -v m="$mm" 'BEGIN{printf "%+.1f%%", 100*(p/m-1)}')"
}
for i in "${!models[@]}"; do
  if [[ -n "${FIDELITY_MODELS:-}" && " $FIDELITY_MODELS " != *" ${names[$i]} "* ]]; then continue; fi
  for s in "${schedules[@]}"; do
    for m in "${ms[@]}"; do run_one "${names[$i]}" "${models[$i]}" "$s" 2 "$m" 1; done
  done
  run_one "${names[$i]}" "${models[$i]}" 1f1b 1 1 2
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%s\n' "${errs[@]}" | sort -g | awk '{a[NR]=$1} END{if(NR){printf "runs %d, median |error| %.1f%%, max |error| %.1f%%\n", NR, (NR%2?a[(NR+1)/2]:(a[NR/2]+a[NR/2+1])/2), a[NR]}}'
