#!/usr/bin/env bash
# `mpirun -np 2 pipewright run --schedule-csv F` (an imported PyTorch CSV schedule runs
# on ranks too): a V-shaped placement (stages 0 and 3 on rank 0, 1 and 2 on rank 1) trains with
# the same losses, to the last digit, as the threaded run of the same CSV; 3 ranks are refused
# (exit 2, one line naming both counts). ctest's TIMEOUT bounds it.
#   mpi_csv_test.sh <pipewright> <mpiexec> [flags...]
set -u
pipewright=$1
shift
fail() { echo "FAIL: $*"; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf '0F0,0F1,3F0,3B0,3F1,3B1,0B0,0B1\n1F0,1F1,2F0,2F1,2B0,1B0,2B1,1B1\n' > "$dir/v.csv"
args=(run --model gpt --layers 2 --d-model 16 --heads 2 --ffn 32 --seq 8 --schedule-csv "$dir/v.csv" --steps 3
      --threads 1 --json)
"$pipewright" "${args[@]}" > "$dir/threads.json" 2> "$dir/threads.err" || { cat "$dir/threads.err"; fail "threaded run failed"; }
"$@" -np 2 "$pipewright" "${args[@]}" > "$dir/ranks.json" 2> "$dir/ranks.err" || { cat "$dir/ranks.err"; fail "mpirun -np 2 failed"; }
python3 - "$dir/threads.json" "$dir/ranks.json" <<'PY' || fail "losses differ"
import json, sys
t, r = (json.load(open(f)) for f in sys.argv[1:3])
print("threads", t["losses"], "ranks", r["losses"])
assert len(t["losses"]) == 3 and t["losses"] == r["losses"], "losses differ"
assert r["workers"] == 2 and r["stages"] == 4, (r["workers"], r["stages"])
PY
out=$("$@" -np 3 "$pipewright" "${args[@]}" 2>&1)
rc=$?
echo "$out"
[ "$rc" -eq 2 ] || fail "3 ranks: exit $rc, expected 2"
[ "$(grep -c 'pipewright: error:' <<< "$out")" -eq 1 ] || fail "3 ranks: expected exactly one error line"
grep -q 'mpirun started 3 ranks but the plan has 2' <<< "$out" || fail "3 ranks: the line does not name both counts"
echo PASS
