#!/usr/bin/env bash
# `mpirun -np 2 pipewright run` faults and refusals (ctest, tests/exec/CMakeLists.txt):
#   mpi_cli_test.sh throw|kill|mismatch|replicated|nan|nan-replicated|nan-resumed|oom|compare|resume-rank0-dir|bad-flag <pipewright> <mpiexec> [flags...]
# throw: rank 1 throws at BW(1,3) (PW_TEST_INJECT_FAULT, exec/runtime/fault_injection.h);
# kill:  rank 1 SIGKILLs itself at F(1,2).
#   Pass when mpirun (hence every rank: it ends the job) exits non-zero and the output names
#   the failed rank (and, for throw, the op and the other rank's stop).
# mismatch: a 3-stage run on 2 ranks.
#   Pass when mpirun exits 2 (every rank exits 2) with exactly one error line, naming both
#   numbers.
# replicated: a plan whose one stage has 2 replicas. Pass when it runs on 2 ranks (exit 0, the
#   step line, the banner saying 2 MPI ranks) and 3 ranks are refused as in mismatch.
# nan: rank 1 (stage 1 of 2) writes a NaN into its weight gradient at BW(1,3)
#   (PW_TEST_INJECT_FAULT=1:BW(1,3):nan). Pass when mpirun (every rank) exits 4 with exactly one
#   "pipewright: numerical fault:" line naming rank 1, the op (step), step 1 and stage 1, and no
#   banner before it.
# nan-replicated: 4 ranks, 2 stages x 2 replicas (stage 1 on ranks 2, 3); rank 3's NaN reaches
#   rank 2 through the all-reduce, both find it at their step, and the job reports one of them
#   (the lower when both are seen within the agreement window): exit 4, one line naming rank 2
#   or 3, op step, step 1, stage 1.
# oom: rank 1 runs out of memory at F(1,2) (PW_TEST_INJECT_FAULT=1:F(1,2):oom, as an allocation
#   that finds none). Pass when mpirun (every rank) exits 3 with exactly one line, rank 0's
#   "pipewright: rank 1: infeasible: host: out of memory: ... (at F(1,2), iteration 0)", and
#   no MPI_Abort (it was exit 1, a line from every rank and Open MPI's abort banner).
# compare: `run --compare` on 2 ranks. Pass when mpirun exits 0 and rank 0 alone measured and
#   printed the comparison: one "compare: measuring" line, one "predicted iteration P ms,
#   measured M ms" line with P > 0, and a predicted peak memory for each of the 2 workers.
# resume-rank0-dir: rank 0 and rank 1 start in different working directories (mpirun --wdir),
#   as on two hosts without a shared file system, with the relative --checkpoint state/ck, then
#   --resume state/ck; in rank 1's directory "state" is a plain file, so the path cannot exist
#   there. Pass when both exit 0, the resumed steps 3-4 print the losses of an uninterrupted
#   4-step run, and rank 1's "state" is still the file: only rank 0 checks, writes and reads it.
# nan-resumed: SGD at lr 100 diverges to an infinite loss after a resume from step 2 with
#   --checkpoint. Pass when mpirun exits 4 with one line that names the threaded run's step
#   (counted over the whole run, not from the resume) and the last good checkpoint (step 2).
# bad-flag: an unknown flag, then an unknown command, on 4 ranks, each failing before MPI starts.
#   Pass when mpirun exits 2 and the one line that names pipewright is the whole error: rank 0
#   prints it for all (4 copies were noise, and pieces written apart interleaved into
#   "pipewright: error: pipewright: error: ...").
# ctest's TIMEOUT bounds every mode.
set -u
mode=$1 pipewright=$2
shift 2
fail() { echo "FAIL: $*"; exit 1; }
fault=''
np=2
run_args=(--model mlp --stages 2 --micro-batches 4 --steps 3 --threads 1 --log-every 1)
if [ "$mode" = bad-flag ]; then
  one_line() {  # one_line WANT ARGS...: mpirun exits 2 and WANT is the one line naming pipewright
    local want=$1 out rc
    shift
    out=$("${launcher[@]}" -np 4 "$pipewright" "$@" 2>&1)
    rc=$?
    echo "$out"; echo "exit code: $rc"
    [ "$rc" -eq 2 ] || fail "mpirun exited $rc, expected 2"
    [ "$(grep -c pipewright <<<"$out")" -eq 1 ] || fail "expected one line naming pipewright"
    grep -qxF "$want" <<<"$out" || fail "the line is not: $want"
  }
  launcher=("$@")
  one_line 'pipewright: error: The following argument was not expected: --bogus (see --help)' \
    run --model mlp --stages 2 --micro-batches 4 --bogus
  one_line "$(2>&1 "$pipewright" rnu)" rnu --model mlp
  echo PASS
  exit 0
fi
if [ "$mode" = nan-resumed ]; then
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
  args=(run --model mlp --stages 2 --micro-batches 4 --threads 1 --log-every 1 --optimizer sgd --lr 100)
  "$pipewright" "${args[@]}" --steps 2 --checkpoint "$dir/t" >/dev/null || fail "the threaded run failed"
  "$@" -np 2 "$pipewright" "${args[@]}" --steps 2 --checkpoint "$dir/m" >/dev/null 2>&1 || fail "the MPI run failed"
  threaded=$("$pipewright" "${args[@]}" --steps 6 --resume "$dir/t" --checkpoint "$dir/t" 2>&1 | grep pipewright)
  out=$("$@" -np 2 "$pipewright" "${args[@]}" --steps 6 --resume "$dir/m" --checkpoint "$dir/m" 2>&1)
  rc=$?
  echo "$threaded"; echo "$out"; echo "exit code: $rc"
  [ "$rc" -eq 4 ] || fail "mpirun exited $rc, expected 4"
  step=$(grep -o 'numerical fault: step [0-9]*,' <<<"$threaded" | grep -o '[0-9]*') || fail "no fault in the threaded run"
  line=$(grep 'pipewright: numerical fault:' <<<"$out")
  [ "$(grep -c pipewright <<<"$out")" -eq 1 ] || fail "expected one line naming pipewright"
  grep -q "): step $step, " <<<"$line" || fail "not the threaded run's step $step"
  grep -q "; last good checkpoint: $dir/m (step 2)\$" <<<"$line" || fail "the checkpoint is not named"
  echo PASS
  exit 0
fi
if [ "$mode" = resume-rank0-dir ]; then
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
  mkdir -p "$dir/a/state" "$dir/b"
  echo "not a directory" > "$dir/b/state"
  pipewright=$(realpath "$pipewright")  # each rank starts in its own directory
  args=(run --model mlp --stages 2 --micro-batches 4 --threads 1 --log-every 1)
  two_dirs() { "$@" -np 1 --wdir "$dir/a" "$pipewright" "${args[@]}" "${extra[@]}" : \
                    -np 1 --wdir "$dir/b" "$pipewright" "${args[@]}" "${extra[@]}" 2>&1; }
  extra=(--steps 4)
  whole=$(two_dirs "$@") || fail "the uninterrupted run failed: $whole"
  extra=(--steps 2 --checkpoint state/ck)
  first=$(two_dirs "$@") || fail "the checkpointed run failed: $first"
  extra=(--steps 4 --resume state/ck)
  rest=$(two_dirs "$@")
  rc=$?
  echo "$whole"; echo "$first"; echo "$rest"; echo "exit code: $rc"
  [ "$rc" -eq 0 ] || fail "the resumed run exited $rc, expected 0"
  [ -f "$dir/a/state/ck/manifest.json" ] || fail "rank 0 wrote no checkpoint in its directory"
  [ "$(cat "$dir/b/state")" = "not a directory" ] || fail "rank 1's file \"state\" changed"
  for k in 3 4; do
    want=$(grep -o "^step $k/4  loss [0-9.]*" <<<"$whole")
    [ -n "$want" ] || fail "no step $k in the uninterrupted run"
    grep -q "^$want " <<<"$rest" || fail "the resumed step $k differs: expected \"$want\""
  done
  echo PASS
  exit 0
fi
case $mode in
  nan) fault='1:BW(1,3):nan' ;;
  nan-replicated)
    fault='3:BW(1,3):nan'
    np=4
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
    "$pipewright" plan --model mlp --depth 4 --width 256 --device cpu-core-avx2 --devices 2 --straight \
      -o "$dir/plan.json" > /dev/null || fail "pipewright plan failed"
    python3 -c '
import copy, json, sys
p = json.load(open(sys.argv[1]))
whole = p["stages"][0]
whole.pop("layers", None)
last, cut = p["stages"][-1]["end_layer"], 5  # input fc0 relu0 fc1 relu1 | fc2 relu2 fc3 loss
second = copy.deepcopy(whole)
whole.update(first_layer=0, end_layer=cut, devices=[0, 1], replicas=2)
second.update(first_layer=cut, end_layer=last, devices=[2, 3], replicas=2)
p["stages"] = [whole, second]
p["num_devices_used"] = 4
p.get("inputs", {}).pop("cluster", None)  # planned on 2 devices: its cluster does not hold these 4
p["schedule"] = "1f1b"
p["num_micro_batches"], p["micro_batch_size"] = 4, p["batch"] // 4
p["batch"] = 4 * p["micro_batch_size"]
json.dump(p, open(sys.argv[1], "w"))' "$dir/plan.json" || fail "could not write the 2 x 2 plan"
    run_args=(--plan "$dir/plan.json" --model mlp --steps 3 --threads 1 --log-every 1) ;;
  throw) fault='1:BW(1,3)' ;;
  kill) fault='1:F(1,2):kill' ;;
  oom) fault='1:F(1,2):oom' ;;
  mismatch) run_args=(--model mlp --stages 3 --micro-batches 3 --steps 1) ;;
  compare) run_args=(--model mlp --stages 2 --micro-batches 4 --steps 2 --warmup-steps 1 --threads 1 --compare) ;;
  replicated)
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
    "$pipewright" plan --model mlp --depth 4 --width 256 --device cpu-core-avx2 --devices 2 --straight \
      -o "$dir/plan.json" > /dev/null || fail "pipewright plan failed"
    # one micro-batch per replica
    python3 "$(dirname "$0")/replicate_plan.py" "$dir/plan.json" 2 || fail "could not write the replicated plan"
    run_args=(--plan "$dir/plan.json" --model mlp --steps 1 --log-every 1) ;;
  *) echo "usage: $0 throw|kill|mismatch|replicated|nan|nan-replicated|nan-resumed|oom|compare|resume-rank0-dir|bad-flag <pipewright> <mpiexec> [flags...]"; exit 2 ;;
esac
out=$(PW_TEST_INJECT_FAULT=$fault "$@" -np $np "$pipewright" run "${run_args[@]}" 2>&1)
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
  nan|nan-replicated)
    [ "$rc" -eq 4 ] || fail "mpirun exited $rc, expected 4"
    [ "$(grep -c '^pipewright: numerical fault:' <<<"$out")" -eq 1 ] || fail "expected exactly one numerical-fault line"
    rank=1
    # Rank 3 made the NaN and the all-reduce hands it to rank 2; which of the two the ranks
    # agree on depends on which found it first within the agreement window, so either is right.
    [ "$mode" = nan-replicated ] && rank='[23]'

    grep -Eq "^pipewright: numerical fault: rank $rank, op step: step 1, stage 1, layer \".+\": weight gradient is NaN; no checkpoint\$" <<<"$out" ||
      fail "no line naming rank $rank, op step, step 1 and stage 1"
    grep -q '^step 1/3' <<<"$out" && fail "a step was reported after the fault"
    # The banner goes out with the first step's line: a fault in step 1 is the only line.
    grep -q '^run: ' <<<"$out" && fail "the banner was printed before the fault line" ;;
  oom)
    [ "$rc" -eq 3 ] || fail "mpirun exited $rc, expected 3"
    [ "$(grep -c pipewright <<<"$out")" -eq 1 ] || fail "expected exactly one line naming pipewright"
    grep -qxF 'pipewright: rank 1: infeasible: host: out of memory: injected at F(1,2) (PW_TEST_INJECT_FAULT) (at F(1,2), iteration 0)' <<<"$out" ||
      fail "no line naming rank 1, the op and the iteration"
    grep -q 'MPI_ABORT' <<<"$out" && fail "the job was aborted"
    grep -q '^step 1/3' <<<"$out" && fail "a step was reported after the fault" ;;
  compare)
    [ "$rc" -eq 0 ] || fail "mpirun exited $rc, expected 0"
    [ "$(grep -c '^compare: measuring a profile of ' <<<"$out")" -eq 1 ] || fail "expected exactly one measurement (rank 0's)"
    [ "$(grep -c '^predicted iteration ' <<<"$out")" -eq 1 ] || fail "expected exactly one comparison line"
    predicted=$(sed -n 's/^predicted iteration \([0-9.]*\) ms, measured [0-9.]* ms (.*%)$/\1/p' <<<"$out")
    awk -v p="$predicted" 'BEGIN { exit !(p > 0) }' || fail "no positive prediction beside the measurement"
    [ "$(grep -Ec '^worker [01] \(.*\): peak memory .*, predicted ' <<<"$out")" -eq 2 ] || fail "no predicted peak memory for both workers" ;;
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
