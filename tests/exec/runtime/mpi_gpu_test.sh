#!/usr/bin/env bash
# `mpirun -np 2 pipewright run --device cuda` against the threaded GPU run of the same plan
# (ctest, tests/exec/CMakeLists.txt; needs a GPU, two ranks share it):
#   mpi_gpu_test.sh pipeline|replicated|resume <pipewright> <mpiexec> [flags...]
# pipeline: GPT 4 blocks of d_model 256, 2 stages (one per rank), 1f1b, 8 micro-batches, 10
#   Adam steps. Pass when both exit 0 and every step's loss is the same double (the ranks run
#   the same kernels in the same order as the threaded run; only the hand-offs between the
#   stages go through the host instead of between streams, which moves bits without changing
#   them).
# replicated: the same model as one stage on 2 replicas (one per rank), gpipe: the replicas'
#   gradient ring all-reduce runs on host copies in both runs. Pass as pipeline.
# resume: the pipeline run under mpirun for 5 steps with --checkpoint, then resumed under
#   mpirun to step 10. Pass when the resumed run's losses equal steps 6-10 of the threaded
#   GPU run bit for bit.
# Where no GPU is usable, `pipewright run --device cuda` exits 2 with one line: the test then
#   prints that line and exits 77 (ctest: SKIPPED). ctest's TIMEOUT bounds every mode.
# PW_TEST_DEVICE=cpu runs the same comparison on the host (the script's own check where no GPU
#   is: the MPI and threaded host runs are bitwise equal too).
set -u
mode=$1 pipewright=$2
shift 2
fail() { echo "FAIL: $*"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
model_args=(--model gpt --layers 4 --d-model 256 --heads 4 --seq 32 --vocab 256)
device=${PW_TEST_DEVICE:-cuda}
common=(--optimizer adam --seed 11 --threads 1 --prefetch 0 --json --device "$device")
case $mode in
  pipeline|resume) run_args=("${model_args[@]}" --stages 2 --micro-batches 8 --micro-batch 2 --schedule 1f1b) ;;
  replicated)
    "$pipewright" plan "${model_args[@]}" --batch 16 --device cpu-core-avx2 --devices 2 --straight \
      -o "$dir/plan.json" > /dev/null || fail "pipewright plan failed"
    python3 "$(dirname "$0")/replicate_plan.py" "$dir/plan.json" 8 gpipe || fail "could not write the replicated plan"
    run_args=(--plan "$dir/plan.json" "${model_args[@]}") ;;
  *) echo "usage: $0 pipeline|replicated|resume <pipewright> <mpiexec> [flags...]"; exit 2 ;;
esac

# The losses of a run's JSON report (the first JSON object on stdout), one per line, as the
# shortest text that reads back as the same double.
losses() {
  python3 -c '
import json, sys
text = sys.stdin.read()
start = text.find("{")
if start < 0:
    sys.exit("no JSON report in the output")
report, _ = json.JSONDecoder().raw_decode(text[start:])
for x in report["losses"]:
    print(repr(float(x)))'
}

threaded=$("$pipewright" run "${run_args[@]}" "${common[@]}" --steps 10 2> "$dir/threaded.err")
rc=$?
cat "$dir/threaded.err"
if [ "$rc" -eq 2 ] && [ "$(wc -l < "$dir/threaded.err")" -eq 1 ] &&
   grep -q '^pipewright: error: --device cuda' "$dir/threaded.err"; then
  echo "SKIPPED: no usable GPU: $(cat "$dir/threaded.err")"
  exit 77
fi
[ "$rc" -eq 0 ] || fail "the threaded GPU run exited $rc"
want=$(losses <<<"$threaded") || fail "no losses in the threaded run's report"
[ "$(wc -l <<<"$want")" -eq 10 ] || fail "the threaded run reported $(wc -l <<<"$want") losses, expected 10"
echo "threaded $device losses:"
echo "$want"

if [ "$mode" = resume ]; then
  "$@" -np 2 "$pipewright" run "${run_args[@]}" "${common[@]}" --steps 5 --checkpoint "$dir/ckpt" > "$dir/first.out" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || { cat "$dir/first.out"; fail "the first 5 steps under mpirun exited $rc"; }
  out=$("$@" -np 2 "$pipewright" run "${run_args[@]}" "${common[@]}" --steps 10 --resume "$dir/ckpt" 2> "$dir/ranks.err")
  rc=$?
  want=$(tail -n 5 <<<"$want")
else
  out=$("$@" -np 2 "$pipewright" run "${run_args[@]}" "${common[@]}" --steps 10 2> "$dir/ranks.err")
  rc=$?
fi
cat "$dir/ranks.err"
[ "$rc" -eq 0 ] || fail "mpirun exited $rc"
got=$(losses <<<"$out") || fail "no losses in the MPI run's report"
echo "MPI $device losses:"
echo "$got"
[ "$got" = "$want" ] || fail "the MPI run's losses differ from the threaded GPU run's"
echo PASS
