#!/usr/bin/env bash
# Signals to an MPI job, many times: bench/mpi_signals.sh <pipewright> [trials=10] [mpiexec]
# Runs each case of tests/exec/runtime/mpi_signal_test.sh `trials` times in its realistic form
# (SIGNAL_AT=step: 300 steps, the signal sent when the first step line appears, so the stop
# lands wherever the job is) and prints per case how many trials passed (every rank gone within
# 10 s of the signal, or the step deadline + 10 s for SIGSTOP; the exit code; exactly one line;
# the --json document complete; outputs committed and no temporary left; for term-mpirun
# --resume equal bitwise to an uninterrupted run) and the largest time from the signal to the
# last rank gone. The cases: SIGTERM / SIGINT / SIGUSR1 to mpirun, SIGTERM / SIGINT to rank 1,
# SIGSTOP to rank 1 with --step-deadline 2. A failed trial's log is kept in $PW_BENCH_LOGS
# (default /tmp/pw_mpi_signals).
set -u
pipewright=${1:?usage: bench/mpi_signals.sh <pipewright> [trials=10] [mpiexec]}
trials=${2:-10}
mpiexec=${3:-mpirun}
here=$(cd "$(dirname "$0")/.." && pwd)
logs=${PW_BENCH_LOGS:-/tmp/pw_mpi_signals}
mkdir -p "$logs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive
printf '%-12s %7s %14s  %s\n' case passed "max exit (s)" "stop steps seen"
for mode in term-mpirun int-mpirun usr1-mpirun term-rank int-rank stop-rank; do
  passed=0 worst=0 steps=''
  for t in $(seq "$trials"); do
    log="$logs/$mode.$t.log"
    if SIGNAL_AT=step bash "$here/tests/exec/runtime/mpi_signal_test.sh" "$mode" "$pipewright" "$mpiexec" \
         --allow-run-as-root --oversubscribe > "$log" 2>&1; then
      passed=$((passed + 1))
    fi
    s=$(sed -n 's/^exit time: \([0-9.]*\) s$/\1/p' "$log")
    [ -n "$s" ] && worst=$(awk -v a="$worst" -v b="$s" 'BEGIN { print (b > a ? b : a) }')
    k=$(sed -n 's/^pipewright: stopped by [A-Z0-9]* after step \([0-9]*\) of .*/\1/p' "$log")
    steps+="${k:--} "
    grep -q '^PASS$' "$log" && rm -f "$log"
  done
  printf '%-12s %4d/%-2d %14s  %s\n' "$mode" "$passed" "$trials" "$worst" "$steps"
done
