#!/usr/bin/env bash
# Bounded libFuzzer runs of every input reader (fuzz/readers.h).
#   bash scripts/fuzz.sh [SECONDS_PER_HARNESS]      (default 60)
# Builds build-fuzz/ with clang-14, libFuzzer, AddressSanitizer, UndefinedBehaviorSanitizer and
# LeakSanitizer, then runs each harness for SECONDS with a memory limit (-rss_limit_mb) and a
# per-input time limit (-timeout), starting from its committed corpus tests/fuzz/<reader>/
# plus the regression inputs tests/fuzz/regressions/<reader>/. New corpus entries go to
# build-fuzz/corpus/<reader>/ (not the repository). Any crash, timeout, leak, out-of-memory or
# sanitizer report fails the script; the input is left in build-fuzz/artifacts/<reader>/ -
# fix the bug, then copy the input to tests/fuzz/regressions/<reader>/ so ctest replays it.
# Prints one line per harness: executions, seconds, corpus size. The harnesses run PW_JOBS
# (default nproc) at a time. PW_FUZZ_SEED=N fixes libFuzzer's mutations (-seed=N): from the same
# corpus, a run's first executions are then those of any other run with that seed (CI sets one,
# so that its verdict is the one a local run with that seed and a fresh build-fuzz/corpus saw);
# unset, every run draws new ones.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-60}"
[[ "$secs" =~ ^[1-9][0-9]*$ ]] || { echo "usage: bash scripts/fuzz.sh [SECONDS_PER_HARNESS]" >&2; exit 2; }
jobs="${PW_JOBS:-$(nproc)}"
seed_flag=()
if [ -n "${PW_FUZZ_SEED:-}" ]; then
  [[ "$PW_FUZZ_SEED" =~ ^[1-9][0-9]{0,8}$ ]] || { echo "fuzz: PW_FUZZ_SEED: expected a number 1-999999999, got \"$PW_FUZZ_SEED\"" >&2; exit 2; }
  seed_flag=(-seed="$PW_FUZZ_SEED")
fi

need=()
command -v clang++-14 >/dev/null || need+=(clang-14)
ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 || need+=(libfuzzer-14-dev)
if [ "${#need[@]}" -gt 0 ]; then
  echo "fuzz: installing ${need[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
start=$(date +%s)
# -O2 for the executions per second, -g1 (line tables) for the compile time.
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" \
  -DCMAKE_CXX_COMPILER=clang++-14 \
  -DPW_FUZZ=ON -DPW_SANITIZE=address,undefined -DPW_WITH_DNNL=OFF -DPW_WITH_MPI=OFF -DPW_WITH_CUDA=OFF \
  -DPW_BUILD_TESTS=OFF -DPW_BUILD_BENCH=OFF -DCMAKE_UNITY_BUILD="${PW_UNITY:-ON}" "${launcher[@]}" >/dev/null
readers=(model profile cluster plan sweep trace pipedream schedule run-trace device)
cmake --build build-fuzz -j"$jobs" --target "${readers[@]/#/fuzz_}"
echo "fuzz: build took $(( $(date +%s) - start )) s"

export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# One harness: fuzzes reader $1 for $secs s, then writes its one-line summary to its .status file.
fuzz_one() {
  local r=$1 work="build-fuzz/corpus/$1" art="build-fuzz/artifacts/$1" log="build-fuzz/fuzz_$1.log"
  local seeds=("tests/fuzz/$r") status t0=$SECONDS
  mkdir -p "$work" "$art"
  [ -d "tests/fuzz/regressions/$r" ] && seeds+=("tests/fuzz/regressions/$r")
  if "build-fuzz/fuzz/fuzz_$r" -max_total_time="$secs" -rss_limit_mb=2048 -malloc_limit_mb=2048 \
       -timeout=10 -max_len=65536 -print_final_stats=1 -artifact_prefix="$art/" "${seed_flag[@]}" \
       "$work" "${seeds[@]}" >"$log" 2>&1; then
    status=ok
  else
    status=FAILED
  fi
  local execs
  execs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo "?")
  echo "$status $r: $status, $execs executions in $((SECONDS - t0)) s, corpus $(ls "$work" | wc -l) files" \
    >"build-fuzz/fuzz_$r.status"
}

# The harnesses run $jobs at a time (each is one process, one core); summaries print in order.
running=0
for r in "${readers[@]}"; do
  rm -f "build-fuzz/fuzz_$r.status"
  fuzz_one "$r" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then wait -n || true; running=$((running - 1)); fi
done
wait
failed=()
for r in "${readers[@]}"; do
  read -r status line <"build-fuzz/fuzz_$r.status" || { status=FAILED; line="$r: no summary (the harness script died)"; }
  echo "fuzz: $line"
  if [ "$status" != ok ]; then
    failed+=("$r")
    grep -E 'ERROR|SUMMARY|Test unit written|==[0-9]+==|terminate called|what\(\)|runtime error' "build-fuzz/fuzz_$r.log" | head -10 >&2 ||
      tail -20 "build-fuzz/fuzz_$r.log" >&2
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: findings in ${failed[*]}; inputs in build-fuzz/artifacts/, logs in build-fuzz/fuzz_*.log" >&2
  exit 1
fi
echo "fuzz: ${#readers[@]} harnesses, $secs s each: no crash, timeout, leak or sanitizer report"
