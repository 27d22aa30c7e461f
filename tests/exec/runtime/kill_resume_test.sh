#!/usr/bin/env bash
# SIGKILL in the middle of a run, then --resume, bitwise: the device check's (tools/gpu_check.sh)
# "kill -9 and resume on the GPU" for a single device and for a pipeline on 4 streams of one card;
# on the host in its no-GPU mode.
#   kill_resume_test.sh train|run <pipewright> <device>
# train: GPT (4 blocks, d 256) on <device>; run: the same model as 4 stages (1f1b; on cuda, 4
# streams of one card). N steps each way (N = $PW_KILL_RESUME_STEPS, default 60): the
# uninterrupted run, checkpointed at its end; the same run with a checkpoint every 10 steps,
# killed with SIGKILL once it has printed step 25; that run resumed from its last checkpoint.
# A fast device needs a larger N (the check polls every 50 ms, and a GPU's small steps take a few
# ms: 60 could end before the kill). Pass when the checkpoint resumed from is at step 20 or
# later, the resumed steps' losses equal the uninterrupted run's bit for bit (--json: doubles
# written to round-trip) and both runs' final stage files are byte-identical.
set -u
mode=${1:-} pw=${2:-} device=${3:-}
steps=${PW_KILL_RESUME_STEPS:-60}
fail() { echo "FAIL: $*"; exit 1; }
[ -x "$pw" ] && [ -n "$device" ] && [ "$steps" -ge 40 ] 2> /dev/null || { echo "usage: $0 train|run <pipewright> <device> (PW_KILL_RESUME_STEPS >= 40)"; exit 2; }
model=(--model gpt --layers 4 --d-model 256 --device "$device" --steps "$steps" --log-every 1)
case $mode in
  train) args=(train "${model[@]}") ;;
  run) args=(run "${model[@]}" --stages 4 --micro-batches 4 --schedule 1f1b) ;;
  *) echo "usage: $0 train|run <pipewright> <device>"; exit 2 ;;
esac
dir=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$dir"' EXIT

"$pw" "${args[@]}" --checkpoint "$dir/whole" --json > "$dir/whole.json" 2> "$dir/whole.err" ||
  fail "the uninterrupted run failed: $(tail -1 "$dir/whole.err")"

"$pw" "${args[@]}" --checkpoint "$dir/killed" --checkpoint-every 10 > "$dir/killed.out" 2>&1 &
pid=$!
for _ in $(seq 1200); do  # at most 60 s
  grep -q "^step 25/$steps " "$dir/killed.out" && break
  kill -0 "$pid" 2> /dev/null || break
  sleep 0.05
done
grep -q "^step 25/$steps " "$dir/killed.out" || fail "no step 25 within 60 s: $(tail -1 "$dir/killed.out")"
kill -9 "$pid" 2> /dev/null
wait "$pid"
rc=$?
pid=
[ "$rc" -eq 137 ] || fail "the run was not killed mid-way (exit $rc: it ended before the SIGKILL)"
step=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["step"])' "$dir/killed/manifest.json") ||
  fail "no checkpoint left by the killed run"
[ "$step" -ge 20 ] && [ "$step" -lt "$steps" ] || fail "the killed run's checkpoint is at step $step, expected 20 to $((steps - 10))"

"$pw" "${args[@]}" --checkpoint "$dir/killed" --checkpoint-every 10 --resume "$dir/killed" --json \
  > "$dir/rest.json" 2> "$dir/rest.err" || fail "the resumed run failed: $(tail -1 "$dir/rest.err")"
python3 - "$dir/whole.json" "$dir/rest.json" "$step" "$steps" << 'PY' || fail "the resumed losses differ"
import json, sys
whole, rest, step, n = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3]), int(sys.argv[4])
assert rest["first_step"] == step, f"resumed at step {rest['first_step']}, the checkpoint is at {step}"
tail = whole["losses"][step:]
assert len(tail) == len(rest["losses"]) == n - step, (len(tail), len(rest["losses"]))
for i, (a, b) in enumerate(zip(tail, rest["losses"])):
    assert a == b, f"step {step + i + 1}: uninterrupted {a!r}, resumed {b!r}"
print(f"resumed at step {step}: {len(tail)} losses bit for bit")
PY
files=$(cd "$dir/whole" && ls stage-*.step-"$steps".bin 2> /dev/null)
[ -n "$files" ] || fail "no final stage files in the uninterrupted run's checkpoint"
for f in $files; do
  cmp -s "$dir/whole/$f" "$dir/killed/$f" || fail "final $f differs between the uninterrupted and the resumed run"
done
echo "PASS: $mode on $device, killed after step 25, resumed at step $step, final stage files identical"
