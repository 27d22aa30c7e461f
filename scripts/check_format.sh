#!/usr/bin/env bash
# The tree follows .clang-format: every tracked C++ and CUDA source (third_party/ aside).
#   bash scripts/check_format.sh          list the files that differ (one line each), exit 1 if any
#   bash scripts/check_format.sh --fix    rewrite them in place
# Needs clang-format 14 (Debian's clang-format-14; installed when missing and this runs as root
# or with sudo, as CI does); other versions format differently, so none is used instead.
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=clang-format-14
if ! command -v "$fmt" >/dev/null; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  { $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends clang-format-14 >/dev/null; } ||
    { echo "check_format: $fmt is missing and could not be installed" >&2; exit 2; }
fi
mapfile -t files < <(git ls-files -- '*.cc' '*.h' '*.cu' '*.cuh' ':!third_party/**')
if [ "${1:-}" = --fix ]; then
  "$fmt" -i "${files[@]}"
  exit 0
fi
[ $# -eq 0 ] || { echo "usage: bash scripts/check_format.sh [--fix]" >&2; exit 2; }
# One run over every file; each finding is "FILE:LINE:COL: warning: code should be clang-formatted".
mapfile -t differ < <("$fmt" --dry-run "${files[@]}" 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: warning: code should be clang-formatted.*/\1/p' | sort -u)
for f in "${differ[@]}"; do
  echo "check_format: $f does not follow .clang-format (bash scripts/check_format.sh --fix)" >&2
done
[ "${#differ[@]}" -eq 0 ] || { echo "check_format: ${#differ[@]} of ${#files[@]} files differ" >&2; exit 1; }
echo "check_format: ${#files[@]} files follow .clang-format"
