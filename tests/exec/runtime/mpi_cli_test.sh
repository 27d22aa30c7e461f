#!/usr/bin/env bash
# `mpirun -np 2 pipewright run` faults and refusals (ctest, tests/exec/CMakeLists.txt):
#   mpi_cli_test.sh throw|kill|mismatch|replicated <pipewright> <mpiexec> [mpiexec flags...]
# throw: rank 1 throws at BW(1,3) (PW_TEST_INJECT_FAULT, exec/runtime/fault_injection.h);
# kill:  rank 1 SIGKILLs itself at F(1,2).
#   Pass when mpirun (hence every rank: it ends the job) exits non-zero and the output names
#   the failed rank (and, for throw, the op and the other rank's stop).
# mismatch: a 3-stage run on 2 ranks.
#   Pass when mpirun exits 2 (every rank exits 2) with exactly one error line, naming both
#   numbers.
# replicated: a plan whose one stage has 2 replicas. Pass when it runs on 2 ranks (exit 0, the
#   step line, the banner saying 2 MPI ranks) and 3 ranks are refused as in mismatch.
# ctest's TIMEOUT bounds every mode.
set -u
mode=$1 pipewright=$2
shift 2
fail() { echo "FAIL: $*"; exit 1; }
fault=''
run_args=(--model mlp --stages 2 --micro-batches 4 --steps 3 --threads 1)
case $mode in
  throw) fault='1:BW(1,3)' ;;
  kill) fault='1:F(1,2):kill' ;;
  mismatch) run_args=(--model mlp --stages 3 --micro-batches 3 --steps 1) ;;
  replicated)
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
    "$pipewright" plan --model mlp --depth 4 --width 256 --device cpu-core-avx2 --devices 2 --straight \
      -o "$dir/plan.json" > /dev/null || fail "pipewright plan failed"
    python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
last = p["stages"][-1]["end_layer"]
p["stages"] = p["stages"][:1]
p["stages"][0].update(first_layer=0, end_layer=last, devices=[0, 1])
p["stages"][0].pop("layers", None)
p["num_micro_batches"], p["micro_batch_size"] = 2, p["batch"] // 2  # one micro-batch per replica
p["batch"] = 2 * p["micro_batch_size"]
json.dump(p, open(sys.argv[1], "w"))' "$dir/plan.json" || fail "could not write the replicated plan"
    run_args=(--plan "$dir/plan.json" --model mlp --steps 1) ;;
  *) echo "usage: $0 throw|kill|mismatch|replicated <pipewright> <mpiexec> [flags...]"; exit 2 ;;
esac
out=$(PW_TEST_INJECT_FAULT=$fault "$@" -np 2 "$pipewright" run "${run_args[@]}" 2>&1)
rc=$?
echo "$out"
echo "exit code: $rc"
case $mode in
  throw)
    [ "$rc" -ne 0 ] || fail "mpirun exited 0"
    grep -q 'pipewright: rank 1 failed at BW(1,3) (iteration 0): injected fault' <<<"$out" || fail "no line naming rank 1 and BW(1,3)"
    grep -q 'pipewright: rank 0 stopping: rank 1 failed at BW(1,3)' <<<"$out" || fail "rank 0 did not report the stop"
    grep -q '^step 3/3' <<<"$out" && fail "the run went on to the end" ;;
  kill)
    [ "$rc" -ne 0 ] || fail "mpirun exited 0"
    grep -Eq 'rank 1 .*(signal 9|Killed)' <<<"$out" || fail "mpirun did not name rank 1 as killed"
    grep -q '^step 3/3' <<<"$out" && fail "the run went on to the end" ;;
  mismatch)
    [ "$rc" -eq 2 ] || fail "mpirun exited $rc, expected 2"
    [ "$(grep -c '^pipewright: error:' <<<"$out")" -eq 1 ] || fail "expected exactly one error line"
    grep -q '^pipewright: error: mpirun started 2 ranks but the plan has 3 pipeline devices' <<<"$out" || fail "no line naming 2 ranks and 3 devices" ;;
  replicated)
    [ "$rc" -eq 0 ] || fail "mpirun exited $rc, expected 0"
    grep -q '^run: .*1 stages on 2 MPI ranks, .*2 micro-batches' <<<"$out" || fail "no banner naming 2 MPI ranks and 2 micro-batches"
    grep -q '^step 1/1  loss' <<<"$out" || fail "no step line"
    out=$("$@" -np 3 "$pipewright" run "${run_args[@]}" 2>&1)
    rc=$?
    echo "$out"
    echo "exit code (3 ranks): $rc"
    [ "$rc" -eq 2 ] || fail "3 ranks: mpirun exited $rc, expected 2"
    [ "$(grep -c '^pipewright: error:' <<<"$out")" -eq 1 ] || fail "3 ranks: expected exactly one error line"
    grep -q '^pipewright: error: mpirun started 3 ranks but the plan has 2 pipeline devices' <<<"$out" || fail "3 ranks: no line naming 3 ranks and 2 devices" ;;
esac
echo PASS
