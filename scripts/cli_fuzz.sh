#!/usr/bin/env bash
# The command line's input files, mutated: a hostile user's pass (fuzz/cli_pass.cc).
#   bash scripts/cli_fuzz.sh [RUNS] [BUILD_DIR]        (default 5000 runs, build/)
# Writes valid seeds with the tool itself (a model, its analytic profile, a cluster, a plan, a
# sweep, a measured run's trace and checkpoint, a schedule CSV; a device file and a PipeDream
# graph from the fuzz corpus) into a temporary folder, then runs BUILD_DIR/fuzz/pw_cli_fuzz over them: every mutant
# through the command that reads it,
# checking for crashes, exit 70, hangs, multi-line errors, files left behind a failure and exit 0
# on values beyond every limit. Findings (and their inputs) go to build-cli-fuzz/; exit 1 when
# there is any. PW_CLI_FUZZ_SEED picks the mutations (default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-5000}"
build="${2:-${PW_BUILD_DIR:-build}}"
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "usage: bash scripts/cli_fuzz.sh [RUNS] [BUILD_DIR]" >&2; exit 2; }
pw="$PWD/$build/pipewright"
fuzz="$PWD/$build/fuzz/pw_cli_fuzz"
[ -x "$pw" ] && [ -x "$fuzz" ] || { echo "cli_fuzz: build $build first (pipewright, pw_cli_fuzz)" >&2; exit 2; }
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=passive

seeds="$(mktemp -d "${TMPDIR:-/tmp}/pw_cli_seeds.XXXXXX")"
bin="$(mktemp -d "${TMPDIR:-/tmp}/pw_cli_bin.XXXXXX")"
trap 'rm -rf "$seeds" "$bin"' EXIT
# The pass runs copies: a rebuild of BUILD_DIR while it runs (minutes) would otherwise show up as
# findings (exit 127 while the binary is relinked).
cp "$pw" "$bin/pipewright"
cp "$fuzz" "$bin/pw_cli_fuzz"
pw="$bin/pipewright" fuzz="$bin/pw_cli_fuzz"
(
  cd "$seeds"
  "$pw" model gpt --layers 2 --d-model 64 --heads 2 --seq 16 --vocab 64 -o model.json >/dev/null
  "$pw" profile --model model.json --device a100-80g --micro-batch 4 -o profile.json >/dev/null
  "$pw" cluster --devices 4 --device a100-80g -o cluster.json >/dev/null
  "$pw" plan --profile profile.json --cluster cluster.json -o plan.json >/dev/null
  "$pw" schedule export --stages 3 --micro-batches 6 --schedule zb-h1 -o schedule.csv
  cp "$OLDPWD/tests/fuzz/sweep/small.json" sweep.json
  cp "$OLDPWD/tests/fuzz/device/h100_base.json" device.json  # a device file as `calibrate -o` writes
  cp "$OLDPWD/tests/fuzz/pipedream/vgg16_partitioned.txt" graph.txt  # PipeDream's, with stage ids
  "$pw" plan --model mlp --depth 4 --width 512 --batch 64 --micro-batches 4 --device cpu-core-avx2 --devices 2 \
    -o run_plan.json >/dev/null
  "$pw" run --plan run_plan.json --steps 3 --compare --run-trace run_trace.json --trace-keep 2 --checkpoint checkpoint \
    >/dev/null 2>&1
)
out=build-cli-fuzz
rm -rf "$out"
mkdir -p "$out"
echo "cli_fuzz: $runs runs over the seeds in $seeds (findings: $out/)"
"$fuzz" --pipewright "$pw" --seeds "$seeds" --runs "$runs" --seed "${PW_CLI_FUZZ_SEED:-1}" --keep "$out/findings" \
  | tee "$out/report.txt"
