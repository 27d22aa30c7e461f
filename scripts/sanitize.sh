#!/usr/bin/env bash
# Sanitizer runs of the test suite.
#   bash scripts/sanitize.sh [all|asan|tsan]
#   asan: the whole suite built with AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/;
#         the tests' own sources with AddressSanitizer alone)
#   tsan: the runtime, transport and allocator tests (the threaded code: pw_tests_exec_threads,
#         only what they need built) under ThreadSanitizer (build-tsan/)
# Any report fails the run (halt_on_error, -fno-sanitize-recover=all). Environment: PW_SANITIZE_CXX
# (default g++), PW_JOBS (default nproc), PW_UNITY (default ON: unity builds). Uses ccache when
# installed.
set -euo pipefail
cd "$(dirname "$0")/.."
mode="${1:-all}"
case "$mode" in all|asan|tsan) ;; *) echo "usage: bash scripts/sanitize.sh [all|asan|tsan]" >&2; exit 2;; esac
cxx="${PW_SANITIZE_CXX:-g++}"
jobs="${PW_JOBS:-$(nproc)}"
supp="$PWD/scripts/sanitizers"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive

# -O1 -g1: the sanitizers' usual optimization, and line tables (function, file and line in every
# report) instead of full debug information (models/profile.cc under ASan+UBSan: 16.8 s against
# 38.9 s of CPU at -O2 -g; the whole build's figures are in bench/RESULTS.md).
# Unity build (PW_UNITY, default ON): each target's sources compiled 32 to a translation unit
# (CMakeLists.txt), so the shared headers' templates are instantiated and instrumented once per
# 32 files instead of once per file (the ASan+UBSan build: 668 s of CPU against 3,187 s file by
# file; bench/RESULTS.md).
# The tests' own sources get the third argument's list (CMakeLists.txt: PW_SANITIZE_TESTS): ASan
# without UBSan for them, which compiles a test file in 8 s instead of 14; the code under test
# keeps both.
configure() {  # dir sanitizers test-sanitizers
  cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DCMAKE_CXX_COMPILER="$cxx" -DPW_SANITIZE="$2" -DPW_SANITIZE_TESTS="$3" -DPW_BUILD_BENCH=OFF -DPW_WITH_CUDA=OFF \
    -DCMAKE_UNITY_BUILD="${PW_UNITY:-ON}" "${launcher[@]}" >/dev/null
}

if [ "$mode" = all ] || [ "$mode" = asan ]; then
  start=$(date +%s)
  configure build-asan address,undefined address
  cmake --build build-asan -j"$jobs"
  echo "sanitize: asan build took $(( $(date +%s) - start )) s"
  start=$(date +%s)
  export ASAN_OPTIONS="halt_on_error=1:abort_on_error=0:detect_stack_use_after_return=0:strict_string_checks=1"
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$supp/ubsan.supp"
  ctest --test-dir build-asan -j"$jobs" --output-on-failure
  echo "sanitize: asan+ubsan suite clean in $(( $(date +%s) - start )) s"
  unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS
fi

if [ "$mode" = all ] || [ "$mode" = tsan ]; then
  start=$(date +%s)
  configure build-tsan thread thread
  cmake --build build-tsan -j"$jobs" --target pw_tests_exec_threads
  echo "sanitize: tsan build took $(( $(date +%s) - start )) s"
  start=$(date +%s)
  # libgomp is not built with TSan, so its barriers are invisible to it and every OpenMP
  # parallel region would be reported as a race. One OpenMP thread per worker keeps the
  # OpenMP runtime out of the picture; the pipeline's own std::threads, queues and transports
  # (what these tests exercise) stay fully checked. tsan.supp says what else is suppressed.
  OMP_NUM_THREADS=1 TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$supp/tsan.supp" \
    build-tsan/tests/exec/pw_tests_exec_threads
  echo "sanitize: tsan runtime tests clean in $(( $(date +%s) - start )) s"
fi
