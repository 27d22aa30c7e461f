#!/usr/bin/env bash
# The prepared device check of the CUDA backend: one bounded run (at most 8 minutes on an
# H100/H200 machine with CUDA, CMake, ninja, python3 + PyTorch, none of our Debian packages and
# no network) that builds Pipewright with the backend, runs its GPU tests, trains mlp on the
# GPU against the CPU (train --device cuda), kills runs with SIGKILL and resumes them bitwise
# (train, and a 4-stream pipeline) and runs the benchmarks,
# and writes OUTDIR/summary.json and OUTDIR/log.txt; a short table is printed last.
#   bash tools/gpu_check.sh OUTDIR [--no-gpu]
# Dependencies: the .debs that tools/gpu_debs.sh downloaded into .debs/ (or $PW_DEBS_DIR) are
# unpacked into a prefix (dpkg -x, or ar + tar where dpkg is missing) and found through
# CMAKE_PREFIX_PATH and PKG_CONFIG_SYSROOT_DIR (hwloc.pc says prefix=/usr). Without .debs the
# system's packages are used (and MPI where mpicxx is found). OpenMPI from the .debs runs from
# the prefix (OPAL_PREFIX) for the two-rank case.
# --no-gpu (automatic where nvidia-smi sees no GPU): build and run everything except the
# device parts, which must then report themselves skipped; the script checks that they do, so
# a broken script is found before GPU time is spent. Exit status: 0 when every step passed
# (skips expected in --no-gpu mode), 1 otherwise, 2 for bad usage.
# Environment: PW_GPU_WORK (build and prefix, default /tmp/pw-gpu-check), PW_GPU_BUILD_DIR
# (default $PW_GPU_WORK/build; one level inside a worktree shares its ccache hits), PW_GPU_BUDGET
# (seconds after which no step starts, default 450), PW_GPU_ARCH (CUDA
# architectures; default: the GPU's, or 90 without one), PW_GPU_JOBS (default: nproc),
# PW_GPU_BUILD_TIMEOUT (seconds for the build step, default 360; a shared build machine without
# a compiler cache needs far more).
set -uo pipefail
cd "$(dirname "$0")/.."
repo="$PWD"

usage() { echo "usage: bash tools/gpu_check.sh OUTDIR [--no-gpu]" >&2; exit 2; }
[ $# -ge 1 ] && [ $# -le 2 ] || usage
out="$1"
force_no_gpu=0
case "${2:-}" in
  "") ;;
  --no-gpu) force_no_gpu=1 ;;
  *) echo "gpu_check: unknown argument '$2' (expected --no-gpu)" >&2; exit 2 ;;
esac
mkdir -p "$out" && out="$(cd "$out" && pwd)"
log="$out/log.txt"
: > "$log"
work="${PW_GPU_WORK:-/tmp/pw-gpu-check}"
jobs="${PW_GPU_JOBS:-$(nproc)}"
t_start=$(date +%s)
# Steps that would start after this many seconds are not run (reported "skipped (budget)", which
# fails the check): the device's time is bounded, the record of what ran is not lost.
budget="${PW_GPU_BUDGET:-450}"

say() { echo "gpu_check: $*" | tee -a "$log" >&2; }
# step NAME TIMEOUT_S CMD...: runs CMD with its output in the log; records status and seconds.
declare -a step_names=() step_status=() step_secs=() step_notes=()
step() {
  local name="$1" limit="$2"
  shift 2
  local t0 rc
  if [ $(( $(date +%s) - t_start )) -ge "$budget" ]; then  # the run's time is spent: say so, run nothing
    step_names+=("$name"); step_status+=("-"); step_secs+=(0); step_notes+=("not run: the ${budget} s budget is spent")
    step_verdict[$(( ${#step_names[@]} - 1 ))]="skipped (budget)"
    echo "===== $name: not run (budget of $budget s spent)" >> "$log"
    return 1
  fi
  t0=$(date +%s)
  echo "===== $name: $*" >> "$log"
  if declare -F "$1" >/dev/null; then
    "$@" >> "$log" 2>&1  # a function of this script (timeout runs programs only)
  else
    timeout "$limit" "$@" >> "$log" 2>&1
  fi
  rc=$?
  step_names+=("$name")
  step_secs+=("$(( $(date +%s) - t0 ))")
  step_status+=("$rc")
  step_notes+=("")
  echo "===== $name: exit $rc after $(( $(date +%s) - t0 )) s" >> "$log"
  return $rc
}
note() { step_notes[$(( ${#step_notes[@]} - 1 ))]="$1"; }
# Marks the last step: pass | fail | skipped (expected) | skipped-unexpected.
declare -a step_verdict=()
verdict() {
  local i=$(( ${#step_names[@]} - 1 ))
  [ "${step_verdict[$i]:-}" = "skipped (budget)" ] || step_verdict[$i]="$1"
}

# ---------------------------------------------------------------- mode
gpu_name="none"
mode=gpu
if [ "$force_no_gpu" = 1 ] || ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  mode=no-gpu
else
  gpu_name="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
fi
arch="${PW_GPU_ARCH:-}"
if [ -z "$arch" ]; then
  arch=90
  if [ "$mode" = gpu ]; then
    cap="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')"
    [ -n "$cap" ] && arch="$cap"
  fi
fi
say "mode $mode, GPU: $gpu_name, architectures $arch, $jobs jobs, work in $work"

# ---------------------------------------------------------------- dependencies
debs="${PW_DEBS_DIR:-$repo/.debs}"
prefix=""
cmake_deps=()
if ls "$debs"/*.deb >/dev/null 2>&1; then
  prefix="$work/prefix"
  rm -rf "$prefix" && mkdir -p "$prefix"
  unpack() {
    for d in "$debs"/*.deb; do
      if command -v dpkg >/dev/null; then
        dpkg -x "$d" "$prefix" || return 1
      else
        local tmp
        tmp="$(mktemp -d)"
        (cd "$tmp" && ar x "$d" && tar -xf data.tar.* -C "$prefix") || return 1
        rm -rf "$tmp"
      fi
    done
  }
  step "unpack .debs" 120 unpack
  if [ "${step_status[-1]}" = 0 ]; then verdict pass; else verdict fail; fi
  note "$(ls "$debs"/*.deb | wc -l) packages from $debs"
  multiarch="$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)"
  export PKG_CONFIG_SYSROOT_DIR="$prefix"
  export PKG_CONFIG_PATH="$prefix/usr/lib/$multiarch/pkgconfig:$prefix/usr/share/pkgconfig"
  export LD_LIBRARY_PATH="$prefix/usr/lib/$multiarch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  cmake_deps=(-DCMAKE_PREFIX_PATH="$prefix/usr")
  # OpenMPI from the prefix (tools/gpu_debs.sh takes it along), relocated through OPAL_PREFIX:
  # its compiler wrapper and mpirun then read their data and plugins under the prefix.
  if [ -x "$prefix/usr/bin/mpicxx.openmpi" ]; then
    export OPAL_PREFIX="$prefix/usr" PATH="$prefix/usr/bin:$PATH"
    cmake_deps+=(-DMPI_CXX_COMPILER="$prefix/usr/bin/mpicxx.openmpi"
                 -DMPIEXEC_EXECUTABLE="$prefix/usr/bin/mpirun.openmpi")
  fi
else
  say "no .debs in $debs: using the system's packages"
fi

# ---------------------------------------------------------------- build
build="${PW_GPU_BUILD_DIR:-$work/build}"
cuda_opt=AUTO
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] && cuda_opt=ON
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
# MPI where the prefix brought OpenMPI, or (no prefix) where the system has it.
mpi=OFF
if [ -n "$prefix" ]; then [ -n "${OPAL_PREFIX:-}" ] && mpi=ON
elif command -v mpicxx >/dev/null; then mpi=ON; fi
step configure 120 cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPW_WITH_CUDA=$cuda_opt \
  -DPW_WITH_MPI=$mpi -DPW_BUILD_BENCH=OFF -DCMAKE_UNITY_BUILD=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" "${cmake_deps[@]}" "${launcher[@]}"
if [ "${step_status[-1]}" = 0 ]; then verdict pass; else verdict fail; fi
cuda_on=0
grep -q "CUDA backend: on" "$log" && cuda_on=1
note "CUDA backend $([ $cuda_on = 1 ] && echo on || echo off)"

targets=(pipewright)
[ $cuda_on = 1 ] && targets+=(pw_tests_exec_cuda pw_tests_exec_cuda_gpu pw_bench_gpu_gemm)
step build "${PW_GPU_BUILD_TIMEOUT:-360}" cmake --build "$build" -j"$jobs" --target "${targets[@]}"
if [ "${step_status[-1]}" = 0 ]; then verdict pass; else verdict fail; fi
built=$([ "${step_status[-1]}" = 0 ] && echo 1 || echo 0)

# ---------------------------------------------------------------- tests
if [ "$built" = 1 ] && [ $cuda_on = 1 ]; then
  step "host tests (CUDA backend)" 120 ctest --test-dir "$build" -R "^pw_tests_exec_cuda:" --output-on-failure
  if [ "${step_status[-1]}" = 0 ]; then verdict pass; else verdict fail; fi
  note "$(grep -Eo '[0-9]+ tests? passed|[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' "$log" | tail -1)"

  step "GPU tests (layers, GEMM, training, pipelines)" 300 "$build/tests/exec/cuda/pw_tests_exec_cuda_gpu"
  rc="${step_status[-1]}"
  if [ "$rc" = 0 ] && [ "$mode" = gpu ]; then verdict pass
  elif [ "$rc" = 77 ] && [ "$mode" = no-gpu ]; then verdict "skipped (expected)"
  elif [ "$rc" = 77 ]; then verdict "skipped-unexpected"
  else verdict fail; fi
  note "$(grep -E '^\[doctest\] test cases|^SKIPPED' "$log" | tail -1)"
fi

# train --device cuda: on a GPU, 10 steps of mlp, GPT (4 blocks, d 256), resnet50 (small) and a
# GPT with a tied head whose losses are the CPU run's within 1e-4; without one (or without the backend), one error line and exit 2.
# train_gpu_vs_cpu NAME MODEL-FLAGS...
train_gpu_vs_cpu() {
  local name="$1"
  shift
  timeout 120 "$build/pipewright" train "$@" --steps 10 --json > "$out/train_${name}_cpu.json" || return 1
  timeout 120 "$build/pipewright" train "$@" --steps 10 --json --device cuda > "$out/train_${name}_gpu.json" ||
    return 1
  python3 - "$out/train_${name}_cpu.json" "$out/train_${name}_gpu.json" <<'PY'
import json, math, sys
c, g = (json.load(open(p)) for p in sys.argv[1:3])
assert g["device"] == "cuda:0", g["device"]
assert len(g["losses"]) == len(c["losses"]) == 10
for i, (a, b) in enumerate(zip(c["losses"], g["losses"])):
    assert math.isfinite(b) and abs(a - b) <= 1e-4 * abs(a), f"step {i + 1}: cpu {a}, gpu {b}"
print(f"gpu losses within 1e-4 of the cpu's; step {g['step_ms']:.2f} ms (cpu {c['step_ms']:.2f} ms)")
PY
}
if [ "$built" = 1 ] && [ "$mode" = gpu ] && [ $cuda_on = 1 ]; then
  # NAME|what|flags: the zoo's small sizes unless the flags say otherwise.
  for c in "mlp|mlp|--model mlp" "gpt|gpt 4 x 256|--model gpt --layers 4 --d-model 256" \
           "resnet50|resnet50 small|--model resnet50" "gpt_tied|gpt, tied head|--model gpt --layers 2 --tied-embeddings"; do
    IFS='|' read -r name what flags <<<"$c"
    # shellcheck disable=SC2086  # the flags are words
    step "train --device cuda ($what vs the CPU)" 300 train_gpu_vs_cpu "$name" $flags
    if [ "${step_status[-1]}" = 0 ]; then verdict pass; else verdict fail; fi
    note "$(grep -E '^gpu losses within|AssertionError' "$log" | tail -1)"
  done
  # A model far larger than the card (GPT 48 x 8192 with Adam: ~600 GB) is refused before anything
  # is allocated, naming the card's memory.
  step "train --device cuda: a model larger than the card" 60 "$build/pipewright" train --model gpt --layers 48 \
    --d-model 8192 --steps 1 --device cuda
  rc="${step_status[-1]}"
  msg="$(grep -E '^pipewright: error: ' "$log" | tail -1)"
  if [ "$rc" = 2 ] && grep -q "cuda:0's" <<<"$msg"; then verdict "refused (expected)"; else verdict fail; fi
  note "${msg#pipewright: error: }"
  # The same model as a 4-stage pipeline on four streams of the card: the schedule's predicted
  # peak of the four workers together (exec/runtime/run_memory.h) against the card's memory.
  step "run --device cuda: 4 streams larger than the card" 60 "$build/pipewright" run --model gpt --layers 48 \
    --d-model 8192 --stages 4 --micro-batches 4 --steps 1 --device cuda
  rc="${step_status[-1]}"
  msg="$(grep -E '^pipewright: error: ' "$log" | tail -1)"
  if [ "$rc" = 2 ] && grep -q "on cuda:0 (workers 0-3)" <<<"$msg"; then verdict "refused (expected)"; else verdict fail; fi
  note "${msg#pipewright: error: }"
elif [ "$built" = 1 ]; then
  step "train --device cuda" 120 "$build/pipewright" train --model mlp --steps 2 --device cuda
  rc="${step_status[-1]}"
  msg="$(grep -E '^pipewright: error: ' "$log" | tail -1)"
  if [ "$rc" = 2 ] && [ "$(grep -c '' <<<"$msg")" = 1 ]; then verdict "refused (expected)"; else verdict fail; fi
  note "${msg#pipewright: error: }"
fi

# ---------------------------------------------------------------- benchmarks
gemm_json="$out/gemm_pipewright.json"
torch_json="$out/torch_gpt.json"
if [ "$built" = 1 ] && [ $cuda_on = 1 ]; then
  step "GEMM benchmark (Pipewright)" 120 sh -c "\"$build/bench/gpu/pw_bench_gpu_gemm\" > \"$gemm_json.tmp\""
  rc="${step_status[-1]}"
  if [ "$rc" = 0 ]; then mv "$gemm_json.tmp" "$gemm_json"; verdict pass
  elif [ "$rc" = 77 ] && [ "$mode" = no-gpu ]; then verdict "skipped (expected)"; cat "$gemm_json.tmp" >> "$log"
  else verdict fail; fi
  rm -f "$gemm_json.tmp"
fi
have_torch=0
python3 -c "import torch" >/dev/null 2>&1 && have_torch=1
step "torch script parses" 30 python3 -c "import ast,sys; ast.parse(open(sys.argv[1]).read())" "$repo/bench/gpu/torch_gpt.py"
if [ "${step_status[-1]}" = 0 ]; then verdict pass; else verdict fail; fi
if [ "$mode" = gpu ] && [ $have_torch = 1 ]; then
  step "PyTorch GPT-2 small (eager fp32, tf32, compile)" 300 python3 "$repo/bench/gpu/torch_gpt.py" --json "$torch_json"
  if [ "${step_status[-1]}" = 0 ]; then verdict pass; else verdict fail; fi
elif [ $have_torch = 1 ]; then
  step "PyTorch script, dry run on the CPU" 120 python3 "$repo/bench/gpu/torch_gpt.py" --dry-run --json "$torch_json"
  if [ "${step_status[-1]}" = 0 ]; then verdict pass; else verdict fail; fi
else
  step_names+=("PyTorch benchmark"); step_status+=("-"); step_secs+=(0); step_notes+=("python3 has no torch")
  if [ "$mode" = gpu ]; then verdict fail; else verdict "skipped (expected)"; fi
fi
# Pipewright's GPT-2 small step on the GPU, the shape and optimizer of torch_gpt.py, fp32 with
# TF32 off and on (--tf32): the median step of 13 (train's step_ms).
gpt_json="$out/pipewright_gpt.json"
if [ "$built" = 1 ] && [ "$mode" = gpu ] && [ $cuda_on = 1 ]; then
  step "Pipewright GPT-2 small step (train --device cuda)" 300 sh -c "\"$build/pipewright\" train --model gpt \
    --layers 12 --d-model 768 --heads 12 --seq 1024 --vocab 50257 --batch 8 --optimizer adam --lr 3e-4 --steps 13 \
    --device cuda --json > \"$gpt_json.tmp\" && mv \"$gpt_json.tmp\" \"$gpt_json\""
  if [ "${step_status[-1]}" = 0 ]; then verdict pass; else verdict fail; fi
  step "Pipewright GPT-2 small step, TF32 (train --tf32)" 300 sh -c "\"$build/pipewright\" train --model gpt \
    --layers 12 --d-model 768 --heads 12 --seq 1024 --vocab 50257 --batch 8 --optimizer adam --lr 3e-4 --steps 13 \
    --device cuda --tf32 --json > \"$out/pipewright_gpt_tf32.json.tmp\" && \
    mv \"$out/pipewright_gpt_tf32.json.tmp\" \"$out/pipewright_gpt_tf32.json\""
  if [ "${step_status[-1]}" = 0 ]; then verdict pass; else verdict fail; fi
fi

# Pipelines on the GPU (run --device cuda): GPT (4 blocks, d 256) 10 Adam steps, S stages on S
# streams of the one GPU. gpipe, 1f1b and zb-h1 on 4 streams give the 1-stream run's losses bit
# for bit (interleaved: 1f1b's on one stream, its per-stage order); pipedream-async, 2bw and
# zb-h2 the CPU runtime's within 1e-4. Then the GPU profiler: GPT-2 small's layers measured in
# context (profile --measure --device cuda) and plans for 8 and 64 GPUs from it.
pipe_flags=(--model gpt --layers 4 --d-model 256 --micro-batches 8 --optimizer adam --steps 10 --json)
# same_losses A.json B.json TOLERANCE (0: bitwise)
same_losses() {
  python3 - "$@" <<'PY'
import json, sys
a, b = (json.load(open(p))["losses"] for p in sys.argv[1:3])
tol = float(sys.argv[3])
assert len(a) == len(b) == 10, (len(a), len(b))
for i, (x, y) in enumerate(zip(a, b)):
    assert (x == y) if tol == 0 else abs(x - y) <= tol * abs(x), f"step {i + 1}: {x} vs {y}"
print(f"losses {'identical' if tol == 0 else f'within {tol}'}: {sys.argv[1]} {sys.argv[2]}")
PY
}
# pipeline_case NAME REFERENCE-FLAGS | CASE-FLAGS | TOLERANCE
pipeline_case() {
  local name="$1" ref="$2" case_flags="$3" tol="$4"
  # shellcheck disable=SC2086  # the flags are words
  timeout 150 "$build/pipewright" run "${pipe_flags[@]}" $ref > "$out/run_${name}_ref.json" || return 1
  # shellcheck disable=SC2086
  timeout 150 "$build/pipewright" run "${pipe_flags[@]}" $case_flags > "$out/run_${name}.json" || return 1
  same_losses "$out/run_${name}_ref.json" "$out/run_${name}.json" "$tol"
}
# Without a GPU the same cases run on the CPU (--device cpu), the profile at toy sizes: the script
# is checked before GPU time is spent.
if [ "$built" = 1 ]; then
  pdev=cpu
  profile_shape=(--layers 1 --d-model 64 --heads 4 --seq 32 --vocab 256)
  if [ "$mode" = gpu ] && [ $cuda_on = 1 ]; then pdev=cuda; profile_shape=(); fi
  for c in "gpipe|--stages 1 --schedule gpipe --device cuda|--stages 4 --schedule gpipe --device cuda|0" \
           "1f1b|--stages 1 --schedule 1f1b --device cuda|--stages 4 --schedule 1f1b --device cuda|0" \
           "zb-h1|--stages 1 --schedule zb-h1 --device cuda|--stages 4 --schedule zb-h1 --device cuda|0" \
           "interleaved|--stages 1 --schedule 1f1b --device cuda|--stages 4 --schedule interleaved-1f1b --device cuda|0" \
           "pipedream-async|--stages 4 --schedule pipedream-async|--stages 4 --schedule pipedream-async --device cuda|1e-4" \
           "2bw|--stages 4 --schedule 2bw|--stages 4 --schedule 2bw --device cuda|1e-4" \
           "zb-h2|--stages 4 --schedule zb-h2|--stages 4 --schedule zb-h2 --device cuda|1e-4"; do
    IFS='|' read -r name ref case_flags tol <<<"$c"
    ref="${ref//--device cuda/--device $pdev}" case_flags="${case_flags//--device cuda/--device $pdev}"
    step "run --device $pdev ($name, 4 stages)" 300 pipeline_case "$name" "$ref" "$case_flags" "$tol"
    if [ "${step_status[-1]}" = 0 ]; then verdict pass; else verdict fail; fi
    note "$(grep -E '^losses |AssertionError' "$log" | tail -1 | cut -c1-70)"
  done
  gpu_profile="$out/gpt2_gpu.profile.json"
  step "profile --measure --device $pdev (gpt, 1,2,4,8)" 300 "$build/pipewright" profile --model gpt --measure \
    "${profile_shape[@]}" --device "$pdev" --micro-batch 1,2,4,8 -o "$gpu_profile"
  if [ "${step_status[-1]}" = 0 ]; then verdict pass; else verdict fail; fi
  for n in 8 64; do
    step "plan --profile (measured profile) for $n devices" 120 "$build/pipewright" plan --profile "$gpu_profile" \
      --devices "$n" -o "$out/plan_gpt2_${n}gpu.json"
    if [ "${step_status[-1]}" = 0 ]; then verdict pass; else verdict fail; fi
  done
fi

# SIGKILL mid-run and --resume, bitwise (tests/exec/runtime/kill_resume_test.sh): GPT (4 blocks,
# d 256) with train on the device, and as 4 stages on 4 streams of it; on the host without a GPU.
if [ "$built" = 1 ]; then
  for m in train run; do
    step "kill -9 and resume: $m --device $pdev" 180 bash "$repo/tests/exec/runtime/kill_resume_test.sh" "$m" \
      "$build/pipewright" "$pdev"
    if [ "${step_status[-1]}" = 0 ]; then verdict pass; else verdict fail; fi
    note "$(grep -E '^PASS|^FAIL' "$log" | tail -1 | cut -c1-70)"
  done
fi

# run --compare on the GPU (exec/runtime/device_compare.h): GPT (4 blocks, d 256) on one stream,
# predicted within 5% of measured (the gate, GPU mode only), and 4 stages on 4 streams of the one
# card, printed with its note that the streams share the card (not gated); simulate --replay
# splits each error by stage and op. Without a GPU the same runs on the CPU, printed only.
compare_case() {  # STAGES GATE(1|0)
  local s="$1" gate="$2"
  timeout 200 "$build/pipewright" run --model gpt --layers 4 --d-model 256 --heads 4 --ffn 1024 --seq 32 \
    --vocab 256 --stages "$s" --schedule 1f1b --micro-batches 8 --device "$pdev" --steps 20 --compare --json \
    --run-trace "$out/compare_${s}.run.json" > "$out/compare_${s}.json" || return 1
  timeout 60 "$build/pipewright" simulate --replay "$out/compare_${s}.run.json" || return 1
  python3 - "$out/compare_${s}.json" "$s" "$gate" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
stages, gate = int(sys.argv[2]), sys.argv[3] == "1"
pred, meas = j["predicted_iteration_ms"], j["iteration_ms"]
err = pred / meas - 1
shared = j.get("predicted_shared_iteration_ms")
print(f"compare {stages} stage(s): predicted {pred:.2f} ms, measured {meas:.2f} ms ({100 * err:+.1f}%)"
      + (f", shared-card bound {shared:.2f} ms" if shared is not None else ""))
for k in ("compare_note", "device_memory"):
    if k in j:
        print(f"{k}: {json.dumps(j[k])}")
if gate and stages > 1:
    assert "compare_note" in j, "no note that the streams share one card"
if gate and stages == 1:
    assert abs(err) <= 0.05, f"predicted {pred:.2f} ms vs measured {meas:.2f} ms: {100 * err:+.1f}%, over 5%"
PY
}
if [ "$built" = 1 ]; then
  gate=0
  [ "$mode" = gpu ] && [ $cuda_on = 1 ] && gate=1
  for s in 1 4; do
    step "run --compare --device $pdev ($s stage(s))" 300 compare_case "$s" "$gate"
    if [ "${step_status[-1]}" = 0 ]; then verdict pass; else verdict fail; fi
    note "$(grep -E '^compare [0-9]|AssertionError' "$log" | tail -1 | cut -c1-70)"
  done
fi

# MPI (OpenMPI from the prefix, or the system's): two ranks on the one GPU against the threaded
# GPU run, losses bit for bit: a 2-stage pipeline, one stage on 2 replicas, and a checkpoint
# resumed under mpirun (tests/exec/runtime/mpi_gpu_test.sh). Without a GPU the pipeline mode on
# the host.
if [ "$built" = 1 ] && [ "$mpi" = ON ]; then
  mpirun_cmd="$(command -v mpirun || true)"
  [ -n "${OPAL_PREFIX:-}" ] && mpirun_cmd="$OPAL_PREFIX/bin/mpirun.openmpi"
  mpi_modes=(pipeline)
  [ "$mode" = gpu ] && [ $cuda_on = 1 ] && mpi_modes=(pipeline replicated resume)
  for m in "${mpi_modes[@]}"; do
    step "mpirun -np 2 run --device $pdev ($m) vs threads" 180 env PW_TEST_DEVICE="$pdev" OMPI_ALLOW_RUN_AS_ROOT=1 \
      OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive bash "$repo/tests/exec/runtime/mpi_gpu_test.sh" "$m" \
      "$build/pipewright" "$mpirun_cmd" --allow-run-as-root --oversubscribe
    if [ "${step_status[-1]}" = 0 ]; then verdict pass; else verdict fail; fi
    note "$(grep -E '^PASS|^FAIL' "$log" | tail -1 | cut -c1-70)"
  done
fi

# The card measured into a device file (pipewright calibrate), and GPT-2 small's step predicted
# from it alone (profile --device FILE: no measured profile), per layer kind beside calibrate's
# own timings of those layers (GPT-2 small at micro-batch 8) and in total beside the measured
# step above. Without a GPU the same path runs on the CPU at toy sizes.
device_json="$out/device.json"
predicted_json="$out/predicted_gpt.json"
if [ "$built" = 1 ]; then
  if [ "$mode" = gpu ] && [ $cuda_on = 1 ]; then
    step "calibrate the GPU (device file)" 300 "$build/pipewright" calibrate --device cuda --repeats 3 -o "$device_json"
    gpt_shape=(--layers 12 --d-model 768 --heads 12 --seq 1024 --vocab 50257)
  else
    step "calibrate the CPU (toy grid, no-GPU mode)" 120 "$build/pipewright" calibrate --device cpu --sizes 16,32 \
      --repeats 1 --copy-bytes 1MiB --memory 1GiB --layers 1 --d-model 64 --heads 4 --ffn 256 --seq 32 --vocab 256 \
      --layer-batch 8 -o "$device_json"
    gpt_shape=(--layers 1 --d-model 64 --heads 4 --ffn 256 --seq 32 --vocab 256)
  fi
  if [ "${step_status[-1]}" = 0 ]; then verdict pass; else verdict fail; fi
  step "GPT-2 small step predicted from the device file" 60 sh -c "\"$build/pipewright\" profile --model gpt \
    ${gpt_shape[*]} --device \"$device_json\" --dtype fp32 --micro-batch 8 --json > \"$predicted_json.tmp\" && \
    mv \"$predicted_json.tmp\" \"$predicted_json\""
  if [ "${step_status[-1]}" = 0 ]; then verdict pass; else verdict fail; fi
fi

# ---------------------------------------------------------------- summary
total=$(( $(date +%s) - t_start ))
steps_file="$work/steps.tsv"
mkdir -p "$work"
: > "$steps_file"
for i in "${!step_names[@]}"; do
  printf '%s\t%s\t%s\t%s\t%s\n' "${step_names[$i]}" "${step_status[$i]}" "${step_secs[$i]}" \
    "${step_verdict[$i]:-fail}" "${step_notes[$i]}" >> "$steps_file"
done
python3 - "$steps_file" "$out" "$mode" "$gpu_name" "$arch" "$total" <<'PY'
import json, os, sys
steps_file, out, mode, gpu, arch, total = sys.argv[1:]
steps = []
for line in open(steps_file):
    name, status, secs, verdict, note = line.rstrip("\n").split("\t")
    steps.append({"step": name, "exit": status, "seconds": int(secs), "verdict": verdict, "note": note})
def load(name):
    p = os.path.join(out, name)
    return json.load(open(p)) if os.path.exists(p) else None
summary = {"format": "pipewright.gpu-check/1", "mode": mode, "gpu": gpu, "cuda_architectures": arch,
           "seconds": int(total), "steps": steps, "gemm_pipewright": load("gemm_pipewright.json"),
           "torch_gpt": load("torch_gpt.json"),
           "pipewright_gpt": load("pipewright_gpt.json"), "pipewright_gpt_tf32": load("pipewright_gpt_tf32.json"),
           "device": load("device.json"),
           "predicted_gpt": load("predicted_gpt.json")}
# The prediction from the device file: per layer kind (summed over the model's layers of that
# kind, F + B + W) and in total, beside calibrate's timing of one layer of each kind times
# the model's count of that kind, and the measured step.
pred, dev = summary["predicted_gpt"], summary["device"]
fidelity = None
if pred and dev:
    kinds = {}
    for l in pred["layers"]:
        k = kinds.setdefault(l["kind"], {"count": 0, "predicted_ms": 0.0})
        k["count"] += 1
        k["predicted_ms"] += (l["forward_ns"] + l["backward_input_ns"] + l["backward_weight_ns"]) / 1e6
    for m in dev.get("layers", []):
        if m["kind"] in kinds:
            k = kinds[m["kind"]]
            k["measured_ms"] = k["count"] * (m["forward_s"] + m["backward_input_s"] + m["backward_weight_s"]) * 1e3
    layers_ms = sum(k["predicted_ms"] for k in kinds.values())
    fidelity = {"kinds": kinds, "predicted_step_ms": layers_ms}
summary["fidelity"] = fidelity
# run --compare: predicted beside measured per iteration, on 1 stream and on 4 streams of one card.
compare = {}
for n in (1, 4):
    c = load(f"compare_{n}.json")
    if c:
        compare[str(n)] = {k: c.get(k) for k in ("predicted_iteration_ms", "iteration_ms", "predicted_shared_iteration_ms",
                                                 "compare_note", "device_memory", "profile_device")}
summary["compare"] = compare
gpt = summary["pipewright_gpt"]
summary["pipewright_gpt_step_ms"] = gpt["step_ms"] if gpt else None
ok = all(s["verdict"] in ("pass", "skipped (expected)", "refused (expected)") for s in steps)
summary["ok"] = ok
tmp = os.path.join(out, "summary.json.tmp")
with open(tmp, "w") as f:
    json.dump(summary, f, indent=1)
os.replace(tmp, os.path.join(out, "summary.json"))
# The table, last.
print(f"\n{'step':<48} {'verdict':<20} {'s':>4}  note")
for s in steps:
    print(f"{s['step']:<48} {s['verdict']:<20} {s['seconds']:>4}  {s['note'][:70]}")
g, t = summary["gemm_pipewright"], summary["torch_gpt"]
if g and t and t.get("gemm"):
    tm = {(x["name"], x["tf32"]): x for x in t["gemm"]}
    print(f"\n{'GEMM':<10} {'tf32':<5} {'ours ms':>8} {'torch ms':>9} {'ratio':>6}")
    for x in g["gemm"]:
        y = tm.get((x["name"], x["tf32"]))
        if y:
            print(f"{x['name']:<10} {str(x['tf32']):<5} {x['ms']:>8.3f} {y['ms']:>9.3f} {y['ms'] / x['ms']:>6.2f}")
if t:
    for m in t["modes"]:
        print(f"torch {m['mode']:<8} {m['step_ms']:9.1f} ms/step")
if summary["pipewright_gpt_step_ms"] is not None:
    print(f"pipewright fp32  {summary['pipewright_gpt_step_ms']:9.1f} ms/step (train --device cuda, median of 13)")
if gpt and gpt.get("predicted_peak_memory_bytes"):
    m, pm = gpt["peak_memory_bytes"], gpt["predicted_peak_memory_bytes"]
    print(f"pipewright peak device memory {m / 2**30:.2f} GiB, memory model {pm / 2**30:.2f} GiB ({m / pm:.3f}x)")
for n, c in summary["compare"].items():
    if c["predicted_iteration_ms"] and c["iteration_ms"]:
        e = c["predicted_iteration_ms"] / c["iteration_ms"] - 1
        print(f"run --compare {n} stream(s): predicted {c['predicted_iteration_ms']:.2f} ms, measured "
              f"{c['iteration_ms']:.2f} ms ({100 * e:+.1f}%)")
if summary["pipewright_gpt_tf32"]:
    print(f"pipewright tf32  {summary['pipewright_gpt_tf32']['step_ms']:9.1f} ms/step (train --device cuda --tf32)")
if fidelity:
    print(f"\n{'layer kind':<18} {'n':>3} {'predicted ms':>13} {'measured ms':>12}")
    for name, k in fidelity["kinds"].items():
        meas = f"{k['measured_ms']:12.2f}" if "measured_ms" in k else f"{'-':>12}"
        print(f"{name:<18} {k['count']:>3} {k['predicted_ms']:13.2f} {meas}")
    line = f"predicted step (layers, no optimizer) {fidelity['predicted_step_ms']:.1f} ms"
    if summary["pipewright_gpt_step_ms"] is not None:
        line += f"; measured {summary['pipewright_gpt_step_ms']:.1f} ms"
    print(line)
print(f"\n{mode} run, {total} s, {'OK' if ok else 'FAILED'}; summary.json and log.txt in {out}")
sys.exit(0 if ok else 1)
PY
