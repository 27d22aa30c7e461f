#!/usr/bin/env bash
# Repeated-run checks of the test suite.
#   bash scripts/check.sh flakes N [BUILD_DIR]
#     Runs the whole ctest suite N times with -j2 while a CPU-bound busy loop runs beside it
#     (the load of a shared 2-core machine), stops at the first failing run, names the failing
#     tests and exits 1. BUILD_DIR defaults to $PW_BUILD_DIR or build/ (built beforehand).
set -euo pipefail
cd "$(dirname "$0")/.."
usage() { echo "usage: bash scripts/check.sh flakes N [BUILD_DIR]" >&2; exit 2; }
[ "${1:-}" = flakes ] || usage
n="${2:-}"
[[ "$n" =~ ^[1-9][0-9]*$ ]] || usage
build="${3:-${PW_BUILD_DIR:-build}}"
[ -f "$build/CTestTestfile.cmake" ] || { echo "check: $build is not a configured build directory" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# The busy loop: one process spinning for the whole check, stopped by its pid on exit.
( while :; do :; done ) &
busy=$!
trap 'kill "$busy" 2>/dev/null || true' EXIT

log="$(mktemp "${TMPDIR:-/tmp}/pw_check_flakes.XXXXXX")"
for ((i = 1; i <= n; i++)); do
  start=$(date +%s)
  if ctest --test-dir "$build" -j2 --output-on-failure >"$log" 2>&1; then
    echo "check: run $i/$n passed ($(grep -Eo 'out of [0-9]+' "$log" | tail -1 | cut -d' ' -f3) tests, $(( $(date +%s) - start )) s, busy loop beside it)"
  else
    echo "check: run $i/$n FAILED after $(( $(date +%s) - start )) s; failing tests:" >&2
    sed -n '/The following tests FAILED:/,$p' "$log" | grep -E '^\s+[0-9]+ - ' >&2 || tail -20 "$log" >&2
    echo "check: full ctest output in $log" >&2
    exit 1
  fi
done
rm -f "$log"
echo "check: $n/$n consecutive runs passed with a busy loop on the other core"
