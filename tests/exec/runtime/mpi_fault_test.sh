#!/usr/bin/env bash
# Fault test of `mpirun -np 2 pipewright run` (ctest, tests/exec/CMakeLists.txt):
#   mpi_fault_test.sh throw|kill <pipewright> <mpiexec> [mpiexec flags...]
# throw: rank 1 throws at BW(1,3) (PW_TEST_INJECT_FAULT, exec/runtime/fault_injection.h);
# kill:  rank 1 SIGKILLs itself at F(1,2).
# Passes when mpirun (hence every rank: it ends the job) exits non-zero and the output names
# the failed rank (and, for throw, the op and the other rank's stop). ctest's TIMEOUT bounds it.
set -u
mode=$1 pipewright=$2
shift 2
case $mode in
  throw) fault='1:BW(1,3)' ;;
  kill) fault='1:F(1,2):kill' ;;
  *) echo "usage: $0 throw|kill <pipewright> <mpiexec> [flags...]"; exit 2 ;;
esac
out=$(PW_TEST_INJECT_FAULT=$fault "$@" -np 2 "$pipewright" run --model mlp --stages 2 --micro-batches 4 \
  --steps 3 --threads 1 2>&1)
rc=$?
echo "$out"
echo "exit code: $rc"
fail() { echo "FAIL: $*"; exit 1; }
[ "$rc" -ne 0 ] || fail "mpirun exited 0"
if [ "$mode" = throw ]; then
  grep -q 'pipewright: rank 1 failed at BW(1,3) (iteration 0): injected fault' <<<"$out" || fail "no line naming rank 1 and BW(1,3)"
  grep -q 'pipewright: rank 0 stopping: rank 1 failed at BW(1,3)' <<<"$out" || fail "rank 0 did not report the stop"
else
  grep -Eq 'rank 1 .*(signal 9|Killed)' <<<"$out" || fail "mpirun did not name rank 1 as killed"
fi
grep -q '^step 3/3' <<<"$out" && fail "the run went on to the end"
echo PASS
