#!/usr/bin/env bash
# Signals to `mpirun -np 2 pipewright run` (ctest, tests/exec/CMakeLists.txt; bench/mpi_signals.sh
# runs it many times). The contract under test is tools/mpi_stop.h.
#   mpi_signal_test.sh MODE <pipewright> <mpiexec> [flags...]
# MODE:
#   term-mpirun  SIGTERM to mpirun. Pass: mpirun exits 1 (Open MPI 4.1's own status after its
#                SIGTERM, whatever the ranks return), exactly one "pipewright: stopped by
#                SIGTERM after step K" line, the --json document complete (parsed, K losses),
#                the --trace file and the checkpoint of step K committed, no temporary left; and
#                --resume from that checkpoint gives the losses and final weights (stage files
#                of the final checkpoint, byte for byte) of an uninterrupted run.
#   int-mpirun   SIGINT to mpirun: as term-mpirun without the resume (mpirun turns it into
#                SIGTERM for the ranks, so the line says SIGTERM).
#   usr1-mpirun  SIGUSR1 to mpirun (forwarded, the graceful stop): as above, exit 138.
#   term-rank    SIGTERM to rank 1 only: as above, exit 143, the line says SIGTERM.
#   int-rank     SIGINT to rank 1 only: exit 130, the line says SIGINT.
#   stop-rank    SIGSTOP to rank 1, --step-deadline 2. Pass: non-zero exit, exactly one
#                "pipewright: rank 1 stopped responding" line, no output file and no temporary.
# In every mode every rank must be gone within 10 s of the signal (stop-rank: the deadline
# + 10 s); the script prints "exit time: S s" (signal to the last rank gone) before PASS.
# SIGNAL_AT=pause (default): the job waits at step 3 (PW_TEST_PAUSE_AT_STEP) and the signal is
# sent during the wait, so it stops at step 3 exactly. SIGNAL_AT=step: no pause, 300 steps, the
# signal goes out when the first step line appears (the bench's realistic form).
set -u
mode=$1 pipewright=$2
shift 2
fail() { echo "FAIL ($mode): $*"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
at=${SIGNAL_AT:-pause}
steps=6
[ "$at" = step ] && steps=300
run_args=(--model mlp --stages 2 --micro-batches 4 --threads 1 --log-every 1 --json --steps "$steps")
deadline=10
case $mode in
  term-mpirun) sig=TERM target=mpirun rc_want=1 line_sig=SIGTERM ;;
  int-mpirun) sig=INT target=mpirun rc_want=1 line_sig=SIGTERM ;;
  usr1-mpirun) sig=USR1 target=mpirun rc_want=138 line_sig=SIGUSR1 ;;
  term-rank) sig=TERM target=rank rc_want=143 line_sig=SIGTERM ;;
  int-rank) sig=INT target=rank rc_want=130 line_sig=SIGINT ;;
  stop-rank) sig=STOP target=rank rc_want=nonzero; run_args+=(--step-deadline 2); deadline=12 ;;
  *) echo "usage: $0 term-mpirun|int-mpirun|usr1-mpirun|term-rank|int-rank|stop-rank <pipewright> <mpiexec> [flags...]"; exit 2 ;;
esac
out=$dir/out
mkdir -p "$out"
pause=''
[ "$at" = pause ] && pause=3

# The stopped job: stdout and stderr are files (rank 0 may write to mpirun's own, at its offset).
PW_TEST_PAUSE_AT_STEP=$pause "$@" -np 2 "$pipewright" run "${run_args[@]}" --checkpoint "$out/ck" \
  --trace "$out/trace.json" > "$dir/stdout" 2> "$dir/stderr" &
mpirun_pid=$!
ready='^test: paused at step 3'
[ "$at" = step ] && ready='^step 1/'
for _ in $(seq 600); do
  grep -q "$ready" "$dir/stderr" && break
  kill -0 $mpirun_pid 2>/dev/null || break
  sleep 0.05
done
grep -q "$ready" "$dir/stderr" || { cat "$dir/stderr"; fail "the job never reached its first step"; }
# The ranks: mpirun's children, told apart by the rank Open MPI gives them.
ranks=() rank1=''
for p in $(pgrep -P $mpirun_pid); do
  r=$(tr '\0' '\n' < /proc/$p/environ 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
  [ -n "$r" ] || continue
  ranks+=("$p")
  [ "$r" = 1 ] && rank1=$p
done
[ "${#ranks[@]}" -eq 2 ] && [ -n "$rank1" ] || fail "could not find the 2 ranks under mpirun $mpirun_pid"
t0=$(date +%s.%N)
if [ "$target" = mpirun ]; then kill -$sig $mpirun_pid; else kill -$sig "$rank1"; fi
wait $mpirun_pid
rc=$?
# Every rank gone (a zombie counts: it has exited and waits to be reaped).
gone=0
for _ in $(seq $((deadline * 20))); do
  alive=0
  for p in "${ranks[@]}"; do
    st=$(ps -o stat= -p "$p" 2>/dev/null)
    [ -n "$st" ] && [ "${st:0:1}" != Z ] && alive=1
  done
  [ $alive -eq 0 ] && { gone=1; break; }
  sleep 0.05
done
t1=$(date +%s.%N)
[ "$sig" = STOP ] && kill -KILL "$rank1" 2>/dev/null  # never leave a stopped rank behind
echo "--- stderr"
cat "$dir/stderr"
echo "--- exit code: $rc"
[ $gone -eq 1 ] || fail "a rank was still running $deadline s after the signal"
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "exit time: %.2f s\n", b - a }'
if [ "$rc_want" = nonzero ]; then
  [ "$rc" -ne 0 ] || fail "mpirun exited 0"
else
  [ "$rc" -eq "$rc_want" ] || fail "mpirun exited $rc, expected $rc_want"
fi
leftover=$(find "$out" -name '.*.tmp*' | head -3)
[ -z "$leftover" ] || fail "temporary files left: $leftover"

if [ "$mode" = stop-rank ]; then
  [ "$(grep -c '^pipewright: ' "$dir/stderr")" -eq 1 ] || fail "expected exactly one pipewright: line"
  grep -q '^pipewright: rank 1 stopped responding: no answer within the step deadline (2 s' "$dir/stderr" ||
    fail "no line naming rank 1 as the rank that stopped responding"
  [ ! -e "$out/trace.json" ] || fail "a failed job committed its --trace file"
  echo PASS
  exit 0
fi

[ "$(grep -c '^pipewright: ' "$dir/stderr")" -eq 1 ] || fail "expected exactly one pipewright: line"
[ "$(grep -c 'stopped by' "$dir/stderr")" -eq 1 ] || fail "expected exactly one stopped-by line"
stopped_at=$(sed -n "s/^pipewright: stopped by $line_sig after step \([0-9]*\) of $steps; checkpoint: .*ck (step \1; continue with --resume .*)\$/\1/p" "$dir/stderr")
[ -n "$stopped_at" ] || fail "no 'stopped by $line_sig after step K of $steps; checkpoint: ...' line"
[ "$at" = pause ] && { [ "$stopped_at" -eq 3 ] || fail "stopped after step $stopped_at, not at the pause (3)"; }
[ "$stopped_at" -lt "$steps" ] || fail "the run was not stopped"
python3 - "$dir/stdout" "$stopped_at" <<'EOF' || fail "the --json summary is not a complete document with one loss per step done"
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["losses"]) == int(sys.argv[2]), (len(d["losses"]), sys.argv[2])
EOF
[ -s "$out/trace.json" ] || fail "no --trace file committed"
[ -s "$out/ck/manifest.json" ] && [ -s "$out/ck/stage-1.step-$stopped_at.bin" ] || fail "no checkpoint of step $stopped_at"

if [ "$mode" = term-mpirun ]; then
  # --resume from the stopped job's checkpoint equals an uninterrupted run, bitwise.
  "$@" -np 2 "$pipewright" run "${run_args[@]}" --checkpoint "$dir/full" > "$dir/full.json" 2> "$dir/full.err" ||
    { cat "$dir/full.err"; fail "the uninterrupted run failed"; }
  "$@" -np 2 "$pipewright" run "${run_args[@]}" --resume "$out/ck" --checkpoint "$dir/resumed" \
    > "$dir/resumed.json" 2> "$dir/resumed.err" || { cat "$dir/resumed.err"; fail "the resumed run failed"; }
  python3 - "$dir/full.json" "$dir/stdout" "$dir/resumed.json" <<'EOF' || fail "the losses of stopped + resumed differ from the uninterrupted run's"
import json, sys
full, first, rest = (json.load(open(p))["losses"] for p in sys.argv[1:])
assert first + rest == full, (first, rest, full)
EOF
  for s in 0 1; do
    cmp -s "$dir/full/stage-$s.step-$steps.bin" "$dir/resumed/stage-$s.step-$steps.bin" ||
      fail "stage $s's final weights differ from the uninterrupted run's"
  done
  echo "resume: bitwise equal (losses and final weights of both stages)"
fi
echo PASS
