#!/usr/bin/env bash
# The prepared device check of the CUDA backend: one bounded run (by default it ends within 450 s)
# on an H100/H200 machine with CUDA, CMake, ninja, python3 + PyTorch, none of our Debian packages
# and no network. It builds Pipewright with the backend and runs, most telling first: the GPU
# tests (every layer against oneDNN, training and pipelines against the host, resume bitwise);
# GPT-2 small's step beside PyTorch eager and torch.compile, and the GEMMs beside torch.matmul;
# the card calibrated into a device file and GPT-2 small predicted from it; run --compare on 1
# and 4 streams; the GPU profiler and plans from it; then the CLI's own paths (train against the
# CPU, pipelines, kill -9 and resume, two MPI ranks on the one GPU, models larger than the card);
# with a minute left, the layer cases under compute-sanitizer's memcheck.
#   bash tools/gpu_check.sh OUTDIR [--no-gpu]
# OUTDIR receives summary.json (rewritten after every step), log.txt and details.tar.gz (every
# per-case file): three files, within the device tool's limit of 8, and a run stopped from
# outside still leaves what it measured. A short table is printed last.
# Dependencies: the .debs that tools/gpu_debs.sh downloaded into .debs/ (or $PW_DEBS_DIR) are
# unpacked into a prefix (dpkg -x, or ar + tar where dpkg is missing) and found through
# CMAKE_PREFIX_PATH and PKG_CONFIG_SYSROOT_DIR (hwloc.pc says prefix=/usr); the prefix's bin is
# on PATH after the system's (pkg-config where the machine has none). Without .debs the system's
# packages are used (and MPI where mpicxx is found). OpenMPI from the .debs runs from the prefix
# (OPAL_PREFIX) for the two-rank cases, without ssh (plm_rsh_agent=false: local ranks only).
# --no-gpu (automatic where nvidia-smi sees no GPU): build and run everything except the device
# parts, which must then report themselves skipped; the script checks that they do, so a broken
# script is found before GPU time is spent. Exit status: 0 when every step passed (skips expected
# in --no-gpu mode), 1 otherwise, 2 for bad usage.
# Environment: PW_GPU_WORK (build, prefix and details, default /tmp/pw-gpu-check),
# PW_GPU_BUILD_DIR (default $PW_GPU_WORK/build; one level inside a worktree shares its ccache
# hits), PW_GPU_DEADLINE (seconds after the start by which the check ends, default 450; the older
# name PW_GPU_BUDGET is read too), PW_GPU_ARCH (CUDA architectures; default: the GPU's, or 90
# without one), PW_GPU_JOBS (default: nproc), PW_GPU_BUILD_TIMEOUT (seconds for the build step,
# default 360; a shared build machine without a compiler cache needs far more).
set -uo pipefail
# A reader of the progress lines that goes away (`| head`) must not end the check: the record in
# OUTDIR is what counts, so a write to a closed pipe fails instead of killing the script.
trap '' PIPE
cd "$(dirname "$0")/.." || exit 2
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
rm -f "$out/summary.json" "$out/details.tar.gz"
work="${PW_GPU_WORK:-/tmp/pw-gpu-check}"
details="$work/details"  # per-case files; packed into OUT/details.tar.gz
rm -rf "$details" && mkdir -p "$details"
jobs="${PW_GPU_JOBS:-$(nproc)}"
t_start=$(date +%s)
deadline="${PW_GPU_DEADLINE:-${PW_GPU_BUDGET:-450}}"
gpu_name="none"
mode=gpu
arch="${PW_GPU_ARCH:-}"
# shellcheck source=tools/gpu_check_lib.sh
. "$repo/tools/gpu_check_lib.sh"

# ---------------------------------------------------------------- mode
if [ "$force_no_gpu" = 1 ] || ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  mode=no-gpu
else
  gpu_name="$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"
fi
if [ -z "$arch" ]; then
  arch=90
  if [ "$mode" = gpu ]; then
    compute_cap="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')"
    [ -n "$compute_cap" ] && arch="$compute_cap"
  fi
fi
say "mode $mode, GPU: $gpu_name, architectures $arch, $jobs jobs, work in $work, deadline $deadline s"

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
  pass_if_ok
  note "$(ls "$debs"/*.deb | wc -l) packages from $debs"
  multiarch="$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)"
  export PKG_CONFIG_SYSROOT_DIR="$prefix"
  export PKG_CONFIG_PATH="$prefix/usr/lib/$multiarch/pkgconfig:$prefix/usr/share/pkgconfig"
  export LD_LIBRARY_PATH="$prefix/usr/lib/$multiarch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # Debian keeps architecture-specific headers (hwloc's autogen/config.h) in the multiarch
  # include folder, which the compiler searches under /usr but not under a prefix; and
  # doctest's CMake package names /usr/include outright. Both folders of the prefix are searched
  # after the build's own -I/-isystem folders and before the system's.
  inc="$prefix/usr/include/$multiarch:$prefix/usr/include"
  export CPLUS_INCLUDE_PATH="$inc${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}"
  export C_INCLUDE_PATH="$inc${C_INCLUDE_PATH:+:$C_INCLUDE_PATH}"
  export PATH="$PATH:$prefix/usr/bin"  # pkg-config (pkgconf) where the machine has none
  cmake_deps=(-DCMAKE_PREFIX_PATH="$prefix/usr")
  # OpenMPI from the prefix (tools/gpu_debs.sh takes it along), relocated through OPAL_PREFIX:
  # its compiler wrapper and mpirun then read their data and plugins under the prefix.
  if [ -x "$prefix/usr/bin/mpicxx.openmpi" ]; then
    # No ssh there: mpirun then refuses even local ranks unless told to start no remote agent.
    export OPAL_PREFIX="$prefix/usr" PATH="$prefix/usr/bin:$PATH" OMPI_MCA_plm_rsh_agent=false
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
pass_if_ok
cuda_on=0
step_log | grep -q "CUDA backend: on" && cuda_on=1
note "CUDA backend $([ $cuda_on = 1 ] && echo on || echo off)"

# On the GPU the host-side CUDA tests are CI's (every CI machine has nvcc): not built there.
targets=(pipewright)
[ $cuda_on = 1 ] && targets+=(pw_tests_exec_cuda_gpu pw_bench_gpu_gemm)
[ $cuda_on = 1 ] && [ "$mode" = no-gpu ] && targets+=(pw_tests_exec_cuda)
step build "${PW_GPU_BUILD_TIMEOUT:-360}" cmake --build "$build" -j"$jobs" --target "${targets[@]}"
pass_if_ok
built=$([ "${step_status[-1]}" = 0 ] && echo 1 || echo 0)
pw="$build/pipewright"
gpu=0  # the device parts run
[ "$built" = 1 ] && [ "$mode" = gpu ] && [ $cuda_on = 1 ] && gpu=1
pdev=cpu
[ $gpu = 1 ] && pdev=cuda

# ---------------------------------------------------------------- GPU tests
if [ "$built" = 1 ] && [ $cuda_on = 1 ]; then
  if [ "$mode" = no-gpu ]; then
    step "host tests (CUDA backend)" 120 ctest --test-dir "$build" -R "^pw_tests_exec_cuda:" --output-on-failure
    pass_if_ok
    note_from '[0-9]+ tests? passed|tests passed, [0-9]+ tests failed'
  fi
  # In two parts, each with its own verdict: the kernels' cases first (every layer against
  # oneDNN, the GEMMs, the optimizer kernels, calibration), then training, pipelines, replicas
  # and the profiler, which run the CPU side too and take longer.
  kernel_files="*device_test.cc,*gemm_test.cc,*layers_test.cc,*optimizer_kernels_test.cc,*calibrate_test.cc"
  for part in "layers, GEMMs, kernels|120|--source-file=$kernel_files" \
              "training, pipelines, profiler|240|--source-file-exclude=$kernel_files"; do
    IFS='|' read -r what limit filter <<<"$part"
    step "GPU tests ($what)" "$limit" "$build/tests/exec/cuda/pw_tests_exec_cuda_gpu" "$filter"
    rc="${step_status[-1]}"
    if [ "$rc" = 0 ] && [ "$mode" = gpu ]; then verdict pass
    elif [ "$rc" = 77 ] && [ "$mode" = no-gpu ]; then verdict "skipped (expected)"
    elif [ "$rc" = 77 ]; then verdict "skipped-unexpected"
    else verdict fail; fi
    note_from '^\[doctest\] test cases|^SKIPPED'
  done
fi

# ---------------------------------------------------------------- speed
# GPT-2 small (12 x 768, ffn 3072, seq 1024, vocab 50257, batch 8, Adam): PyTorch eager fp32,
# TF32 and torch.compile (bench/gpu/torch_gpt.py, with torch.matmul at the GEMM shapes), then
# Pipewright's step (train --device cuda: the median of 13; --tf32) and its GEMMs
# (pw_bench_gpu_gemm). train fills unset sizes with the zoo's small ones, so every size is given.
have_torch=0
"${plain_env[@]}" python3 -c "import torch" >/dev/null 2>&1 && have_torch=1
step "torch script parses" 30 python3 -c "import ast,sys; ast.parse(open(sys.argv[1]).read())" "$repo/bench/gpu/torch_gpt.py"
pass_if_ok
torch_run() {  # the benchmark's JSON into details, written only when it finished
  timeout "$(cap "$1")" "${plain_env[@]}" python3 "$repo/bench/gpu/torch_gpt.py" "${@:2}" \
    --json "$details/torch_gpt.json.tmp" && mv "$details/torch_gpt.json.tmp" "$details/torch_gpt.json"
}
if [ $gpu = 1 ] && [ $have_torch = 1 ]; then
  step "PyTorch GPT-2 small (eager fp32, tf32, compile)" 240 torch_run 240
  pass_if_ok
elif [ $have_torch = 1 ]; then
  step "PyTorch script, dry run on the CPU" 120 torch_run 120 --dry-run
  pass_if_ok
else
  step_names+=("PyTorch benchmark"); step_status+=("-"); step_secs+=(0); step_notes+=("python3 has no torch")
  if [ "$mode" = gpu ]; then verdict fail; else verdict "skipped (expected)"; fi
fi
gpt2=(--model gpt --layers 12 --d-model 768 --heads 12 --ffn 3072 --seq 1024 --vocab 50257)
pw_gpt_step() {  # NAME FLAGS...: train's JSON into details/NAME.json
  local name="$1"
  shift
  write_to "$details/$name.json" timeout "$(cap 120)" "$pw" train "${gpt2[@]}" --batch 8 --optimizer adam \
    --lr 3e-4 --steps 13 --device cuda --json "$@"
}
if [ $gpu = 1 ]; then
  step "Pipewright GPT-2 small step (train --device cuda)" 120 pw_gpt_step pipewright_gpt
  pass_if_ok
  step "Pipewright GPT-2 small step, TF32 (train --tf32)" 120 pw_gpt_step pipewright_gpt_tf32 --tf32
  pass_if_ok
fi
if [ "$built" = 1 ] && [ $cuda_on = 1 ]; then
  step "GEMM benchmark (Pipewright)" 120 write_to "$details/gemm_pipewright.json" timeout "$(cap 120)" \
    "$build/bench/gpu/pw_bench_gpu_gemm"
  rc="${step_status[-1]}"
  if [ "$rc" = 0 ] && [ "$mode" = gpu ]; then verdict pass
  elif [ "$rc" = 77 ] && [ "$mode" = no-gpu ]; then verdict "skipped (expected)"
  else verdict fail; fi
fi

# ---------------------------------------------------------------- the cost model on the card
# The card measured into a device file (pipewright calibrate), and GPT-2 small's step predicted
# from it alone (profile --device FILE: no measured profile), per layer kind beside calibrate's
# own timings of those layers and in total beside the measured step above. Without a GPU the
# same path on the CPU at toy sizes.
if [ "$built" = 1 ]; then
  if [ $gpu = 1 ]; then
    step "calibrate the GPU (device file)" 150 "$pw" calibrate --device cuda --repeats 3 -o "$details/device.json"
    shape=("${gpt2[@]}")
  else
    step "calibrate the CPU (toy grid, no-GPU mode)" 120 "$pw" calibrate --device cpu --sizes 16,32 --repeats 1 \
      --copy-bytes 1MiB --memory 1GiB --layers 1 --d-model 64 --heads 4 --ffn 256 --seq 32 --vocab 256 \
      --layer-batch 8 -o "$details/device.json"
    shape=(--model gpt --layers 1 --d-model 64 --heads 4 --ffn 256 --seq 32 --vocab 256)
  fi
  pass_if_ok
  step "GPT-2 small step predicted from the device file" 60 write_to "$details/predicted_gpt.json" \
    timeout "$(cap 60)" "$pw" profile "${shape[@]}" --device "$details/device.json" --dtype fp32 --micro-batch 8 --json
  pass_if_ok
fi

# ---------------------------------------------------------------- run --compare
# GPT (4 blocks, d 256) on one stream: predicted within 5% of measured (the gate, GPU mode only);
# 4 stages on 4 streams of the one card: printed with the note that the streams share the card
# (not gated); simulate --replay splits each error by stage and op. Without a GPU the same runs
# on the CPU, printed only.
compare_case() {  # STAGES GATE(1|0)
  local s="$1" gate="$2" j="$details/compare_$1.json"
  write_to "$j" timeout "$(cap 150)" "$pw" run --model gpt --layers 4 --d-model 256 --heads 4 --ffn 1024 --seq 32 \
    --vocab 256 --stages "$s" --schedule 1f1b --micro-batches 8 --device "$pdev" --steps 20 --compare --json \
    --run-trace "$details/compare_${s}.run.json" || return 1
  timeout "$(cap 60)" "$pw" simulate --replay "$details/compare_${s}.run.json" || return 1
  python3 - "$j" "$s" "$gate" <<'PY'
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
  for s in 1 4; do
    step "run --compare --device $pdev ($s stage(s))" 150 compare_case "$s" "$gpu"
    pass_if_ok
    note_from '^compare [0-9]|AssertionError|Error'
  done
fi

# ---------------------------------------------------------------- the GPU profiler into the planner
# GPT-2 small's layers measured in context (profile --measure --device cuda, micro-batches 1-8)
# and plans for 8 and 64 GPUs from that profile. Without a GPU on the CPU at toy sizes.
if [ "$built" = 1 ]; then
  profile_shape=(--layers 1 --d-model 64 --heads 4 --seq 32 --vocab 256)
  [ $gpu = 1 ] && profile_shape=("${gpt2[@]:2}")
  step "profile --measure --device $pdev (gpt, 1,2,4,8)" 150 "$pw" profile --model gpt --measure \
    "${profile_shape[@]}" --device "$pdev" --micro-batch 1,2,4,8 -o "$details/gpt2_gpu.profile.json"
  pass_if_ok
  for n in 8 64; do
    step "plan --profile (measured profile) for $n devices" 60 "$pw" plan --profile "$details/gpt2_gpu.profile.json" \
      --devices "$n" -o "$details/plan_gpt2_${n}gpu.json"
    pass_if_ok
  done
fi

# ---------------------------------------------------------------- the CLI's own paths
# The GPU tests above cover every layer, training and pipelines through the libraries; these run
# the same through the command line once each. train: GPT (4 blocks, d 256) 10 steps on the GPU,
# losses within 1e-4 of the CPU's. run: 4 stages on 4 streams, gpipe bitwise as 1 stream and
# pipedream-async within 1e-4 of the CPU runtime.
# same_losses A.json B.json TOLERANCE (0: bitwise)
same_losses() {
  python3 - "$@" <<'PY'
import json, sys
a, b = (json.load(open(p))["losses"] for p in sys.argv[1:3])
tol = float(sys.argv[3])
assert len(a) == len(b) == 10, (len(a), len(b))
for i, (x, y) in enumerate(zip(a, b)):
    assert (x == y) if tol == 0 else abs(x - y) <= tol * abs(x), f"step {i + 1}: {x} vs {y}"
print(f"losses {'identical' if tol == 0 else f'within {tol}'} over {len(a)} steps")
PY
}
# cli_case NAME COMMAND | REFERENCE-FLAGS | CASE-FLAGS | TOLERANCE: COMMAND (train or run) with
# the shared flags and each set, the second's losses against the first's.
shared_flags=(--model gpt --layers 4 --d-model 256 --optimizer adam --steps 10 --json)
cli_case() {
  local name="$1" cmd="$2" ref="$3" case_flags="$4" tol="$5"
  # shellcheck disable=SC2086  # the flags are words
  timeout "$(cap 120)" "$pw" "$cmd" "${shared_flags[@]}" $ref > "$details/${name}_ref.json" || return 1
  # shellcheck disable=SC2086
  timeout "$(cap 120)" "$pw" "$cmd" "${shared_flags[@]}" $case_flags > "$details/${name}.json" || return 1
  same_losses "$details/${name}_ref.json" "$details/${name}.json" "$tol"
}
if [ "$built" = 1 ]; then
  for c in "train_gpt|train|--device cpu|--device $pdev|1e-4" \
           "run_gpipe|run|--stages 1 --schedule gpipe --micro-batches 8 --device $pdev|--stages 4 --schedule gpipe --micro-batches 8 --device $pdev|0" \
           "run_async|run|--stages 4 --schedule pipedream-async --micro-batches 8 --device cpu|--stages 4 --schedule pipedream-async --micro-batches 8 --device $pdev|1e-4"; do
    IFS='|' read -r name cmd ref case_flags tol <<<"$c"
    step "$cmd --device $pdev ($name)" 240 cli_case "$name" "$cmd" "$ref" "$case_flags" "$tol"
    pass_if_ok
    note_from '^losses |AssertionError|error'
  done
fi
# SIGKILL mid-run and --resume, bitwise (tests/exec/runtime/kill_resume_test.sh): train on the
# device, and 4 stages on 4 streams of it. A GPU's small steps take a few ms: 400 steps there,
# so that the kill lands mid-run.
if [ "$built" = 1 ]; then
  kill_steps=60
  [ $gpu = 1 ] && kill_steps=400
  for m in train run; do
    step "kill -9 and resume: $m --device $pdev" 180 env PW_KILL_RESUME_STEPS=$kill_steps \
      bash "$repo/tests/exec/runtime/kill_resume_test.sh" "$m" "$pw" "$pdev"
    pass_if_ok
    note_from '^PASS|^FAIL'
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
  [ $gpu = 1 ] && mpi_modes=(pipeline replicated resume)
  for m in "${mpi_modes[@]}"; do
    step "mpirun -np 2 run --device $pdev ($m) vs threads" 150 env PW_TEST_DEVICE="$pdev" OMPI_ALLOW_RUN_AS_ROOT=1 \
      OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive bash "$repo/tests/exec/runtime/mpi_gpu_test.sh" "$m" \
      "$pw" "$mpirun_cmd" --allow-run-as-root --oversubscribe
    pass_if_ok
    note_from '^PASS|^FAIL'
  done
fi
# Models larger than the card are refused before anything is allocated, naming the card's
# memory: GPT 48 x 8192 with Adam (~600 GB) trained on it, and as 4 stages on 4 streams of it
# (the four workers' predicted peaks together, exec/runtime/run_memory.h). Without a GPU, train
# --device cuda is one line and exit 2.
refused() {  # PATTERN: the last step exited 2 with one error line containing PATTERN
  local msg
  msg="$(step_log | grep -E '^pipewright: error: ' | tail -1)"
  if [ "${step_status[-1]}" = 2 ] && grep -q "$1" <<<"$msg" && [ "$(step_log | grep -c '^pipewright: error: ')" = 1 ]
  then verdict "refused (expected)"; else verdict fail; fi
  note "${msg#pipewright: error: }"
}
if [ $gpu = 1 ]; then
  step "train --device cuda: a model larger than the card" 60 "$pw" train --model gpt --layers 48 --d-model 8192 \
    --steps 1 --device cuda
  refused "cuda:0's"
  step "run --device cuda: 4 streams larger than the card" 60 "$pw" run --model gpt --layers 48 --d-model 8192 \
    --stages 4 --micro-batches 4 --steps 1 --device cuda
  refused "on cuda:0 (workers 0-3)"
elif [ "$built" = 1 ]; then
  step "train --device cuda" 60 "$pw" train --model mlp --steps 2 --device cuda
  refused "cuda"
fi

# ---------------------------------------------------------------- memcheck, with the time left
# The kernels' GPU cases under compute-sanitizer's memcheck (out-of-bounds and misaligned
# accesses, leaks of device memory), where the machine has it and at least a minute is left.
# Optional: stopped by the deadline it is "stopped (optional)", which does not fail the check.
sanitizer="$(command -v compute-sanitizer || true)"
[ -z "$sanitizer" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] && sanitizer=/usr/local/cuda/bin/compute-sanitizer
if [ $gpu = 1 ] && [ -n "$sanitizer" ] && [ "$(left)" -ge 60 ]; then
  step "compute-sanitizer memcheck (layer cases)" 300 "$sanitizer" --tool memcheck --error-exitcode 3 \
    "$build/tests/exec/cuda/pw_tests_exec_cuda_gpu" "--source-file=*layers_test.cc"
  case "${step_status[-1]}" in
    0) verdict pass ;;
    124) verdict "stopped (optional)" ;;
    *) verdict fail ;;
  esac
  note_from 'ERROR SUMMARY|^\[doctest\] test cases'
fi

# ---------------------------------------------------------------- summary
write_summary --table
