#!/usr/bin/env bash
# `mpirun -np 4 pipewright run` under a data limit (ulimit -d, inherited by every rank): each
# rank checks what its own process will hold (tools/training_flags.h, check_run_fits_in_memory
# with a RankPlace), not the whole model. GPT 8 x 1024 with Adam on 4 stages holds at most about
# 0.5 GB per rank (peak RSS), the whole model with every micro-batch in flight about 0.7 GiB.
#   mpi_memory_test.sh <pipewright> <mpiexec> [flags...]
# Pass when, under ulimit -d 650000 (KiB), the run trains (exit 0, its step line), where the
# whole-model check refused it ("needs at least 0.7 GiB"); and under ulimit -d 150000 it is
# refused before training: exit 2, exactly one error line naming a rank and the limit; and at
# 280000 KiB, between the two, no rank dies of a signal and the job is not aborted (below).
# Not registered in sanitized builds (a sanitizer's shadow memory cannot start under a data limit).
set -u
pipewright=$1
shift
fail() { echo "FAIL: $*"; exit 1; }
args=(run --model gpt --d-model 1024 --ffn 256 --layers 8 --seq 64 --stages 4 --micro-batches 4 --micro-batch 1
      --schedule 1f1b --steps 1 --threads 1 --optimizer adam --log-every 1)
out=$(ulimit -d 650000 && "$@" -np 4 "$pipewright" "${args[@]}" 2>&1)
rc=$?
echo "$out"
echo "exit code (ulimit -d 650000): $rc"
[ "$rc" -eq 0 ] || fail "650000 KiB: mpirun exited $rc, expected 0"
grep -q '^step 1/1  loss' <<<"$out" || fail "650000 KiB: no step line"
# 150000 KiB: rank 1 needs 0.2 GiB, twice what the limit leaves it (at 100000 even rank 0 is
# refused; at 250000 its margin was 4%).
out=$(ulimit -d 150000 && "$@" -np 4 "$pipewright" "${args[@]}" 2>&1)
rc=$?
echo "$out"
echo "exit code (ulimit -d 150000): $rc"
[ "$rc" -eq 2 ] || fail "150000 KiB: mpirun exited $rc, expected 2"
[ "$(grep -c '^pipewright: error:' <<<"$out")" -eq 1 ] || fail "150000 KiB: expected exactly one error line"
grep -Eq '^pipewright: error: (rank [1-3]: )?--micro-batch and the model.s sizes: running gpt-l8-d1024 as planned needs [0-9.]+ GiB \(rank [0-3]\), more than the [0-9.]+ GiB this process may still map under ulimit -d$' <<<"$out" ||
  fail "150000 KiB: no line naming a rank and the limit"
grep -q '^step ' <<<"$out" && fail "150000 KiB: a step ran"
# Between the two, the check passes and the run runs out: with this build on the machine this was
# written on, at 270000-290000 KiB rank 1's allocator found no memory in F(1,0)-F(1,2) (the job
# then ended with MPI_Abort, exit 1 and a line from every rank), at 300000 oneDNN crashed on an
# allocation it did not check (exec/machine/memory_crash.h), from 310000 it trains. Whatever
# happens there, no rank may die of a signal or abort the job: the run trains, or the job exits
# 3 with out-of-memory lines only (rank 0's for a run-time one, each crashed rank's own), each
# naming its rank (rank 0 by none).
out=$(ulimit -d 280000 && "$@" -np 4 "$pipewright" "${args[@]}" 2>&1)
rc=$?
echo "$out"
echo "exit code (ulimit -d 280000): $rc"
grep -Eq 'Segmentation fault|signal 11|Process received signal' <<<"$out" && fail "280000 KiB: a rank crashed"
grep -q 'MPI_ABORT' <<<"$out" && fail "280000 KiB: the job was aborted"
case $rc in
  0) grep -q '^step 1/1  loss' <<<"$out" || fail "280000 KiB: exit 0 without a step line" ;;
  2) ;;  # a footprint grown past this limit is refused up front, as at 150000
  3) grep -Eq '^pipewright: (rank [1-3]: )?infeasible: host: out of memory: ' <<<"$out" || fail "280000 KiB: exit 3 without an out-of-memory line"
     grep '^pipewright: ' <<<"$out" | grep -Ev '^pipewright: (rank [1-3]: )?infeasible: host: out of memory: ' &&
       fail "280000 KiB: a line other than out of memory" ;;
  *) fail "280000 KiB: mpirun exited $rc, expected 0, 2 or 3" ;;
esac
echo PASS
